//! Pending reasons end to end, as squeue `%r` and `scontrol show job` print
//! them, against what Slurm 22.05 printed for the same steps on a one-node
//! cluster: the text Slurm puts in place of a reason when nodes are down or
//! drained, the reasons it keeps from one pass to the next, and a job that
//! names a busy node. Needs the workspace binaries
//! (`cargo build --workspace --bins`, or `cargo test --workspace`).

use std::time::Duration;

use slurm_testkit::e2e::{cluster, run_ok, scontrol_show};
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

const DOWN_TEXT: &str =
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions";

fn one_node() -> LocalCluster {
    cluster(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    })
}

/// Submits a job taking the whole node (`-c 2`) and its extra `args`; its id.
fn submit(c: &LocalCluster, args: &[&str]) -> String {
    let mut all = vec!["--parsable", "-c", "2", "--wrap", "sleep 300"];
    all.extend_from_slice(args);
    run_ok(c, "sbatch", &all).trim().to_string()
}

/// `squeue -h -o "%i %t %r"` lines with the ids in `ids` written J1, J2, ...
fn rows(c: &LocalCluster, ids: &[&str]) -> Vec<String> {
    let out = run_ok(c, "squeue", &["-h", "-o", "%i %t %r"]);
    let mut rows: Vec<String> = out
        .lines()
        .map(|l| {
            let (id, rest) = l.split_once(' ').unwrap_or((l, ""));
            match ids.iter().position(|i| *i == id) {
                Some(k) => format!("J{} {rest}", k + 1),
                None => l.to_string(),
            }
        })
        .collect();
    rows.sort();
    rows
}

/// Polls squeue until it shows `want`; panics with what it showed last.
fn wait_rows(c: &LocalCluster, ids: &[&str], want: &[&str]) {
    let got = wait_until("squeue rows", WAIT, || {
        let r = rows(c, ids);
        (r == want).then_some(r)
    });
    if got.is_err() {
        panic!(
            "squeue never showed {want:#?}\nlast: {:#?}\n{}",
            rows(c, ids),
            c.logs()
        );
    }
}

fn reason_field(c: &LocalCluster, id: &str) -> String {
    let shown = scontrol_show(c, "job", id);
    shown
        .split_whitespace()
        .find_map(|w| w.strip_prefix("Reason="))
        .unwrap_or_default()
        .to_string()
}

/// Slurm 22.05 with its node drained: the first job waits with Resources
/// described as nodes down or drained, the later ones with
/// `ReqNodeNotAvail, UnavailableNodes:<node>`, which they keep after the
/// node is resumed while the job ahead of them waits for the busy node.
#[test]
fn drained_node_reasons_as_slurm_prints_them() {
    let c = one_node();
    run_ok(
        &c,
        "scontrol",
        &["update", "NodeName=n1", "State=DRAIN", "Reason=maint"],
    );
    let j1 = submit(&c, &[]);
    let j2 = submit(&c, &[]);
    let j3 = submit(&c, &[]);
    let ids = [j1.as_str(), j2.as_str(), j3.as_str()];
    let unavailable = "ReqNodeNotAvail, UnavailableNodes:n1";
    wait_rows(
        &c,
        &ids,
        &[
            &format!("J1 PD {DOWN_TEXT}"),
            &format!("J2 PD {unavailable}"),
            &format!("J3 PD {unavailable}"),
        ],
    );
    // scontrol writes the description with `_` for each space.
    assert_eq!(reason_field(&c, &j1), DOWN_TEXT.replace(' ', "_"));
    assert_eq!(
        reason_field(&c, &j2),
        "ReqNodeNotAvail,_UnavailableNodes:n1"
    );

    run_ok(&c, "scontrol", &["update", "NodeName=n1", "State=RESUME"]);
    wait_rows(
        &c,
        &ids,
        &[
            "J1 R None",
            "J2 PD Resources",
            &format!("J3 PD {unavailable}"),
        ],
    );
    assert_eq!(reason_field(&c, &j2), "Resources");
}

/// Slurm 22.05 with its one node busy: `-w n1` waits with Resources and
/// keeps n1 back, so the next job finds no node left (the nodes-down text)
/// and the one after it waits with Priority.
#[test]
fn a_job_naming_a_busy_node_leaves_none_for_the_next() {
    let c = one_node();
    let running = submit(&c, &[]);
    wait_rows(&c, &[running.as_str()], &["J1 R None"]);
    let named = submit(&c, &["-w", "n1"]);
    let next = submit(&c, &[]);
    let last = submit(&c, &[]);
    wait_rows(
        &c,
        &[
            running.as_str(),
            named.as_str(),
            next.as_str(),
            last.as_str(),
        ],
        &[
            "J1 R None",
            "J2 PD Resources",
            &format!("J3 PD {DOWN_TEXT}"),
            "J4 PD Priority",
        ],
    );
}

/// Slurm 22.05 shows `-N 2` on a one-node partition as PartitionConfig at
/// submission and PartitionNodeLimit a second or so later, when its
/// scheduler looks at the new job again; not only at the periodic pass a
/// minute on (WAIT is shorter than that).
#[test]
fn a_node_count_over_the_partition_turns_to_partition_node_limit_soon() {
    let c = one_node();
    let id = run_ok(&c, "sbatch", &["--parsable", "-N", "2", "--wrap", "true"])
        .trim()
        .to_string();
    wait_rows(&c, &[&id], &["J1 PD PartitionNodeLimit"]);
}
