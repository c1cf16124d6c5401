//! A node an operator sets DOWN under running batch jobs, end to end,
//! against what Slurm 22.05 printed for the same steps on a one-node
//! cluster with ReturnToService=2: the job that may be requeued waits
//! again (BeginTime, Restarts=1, ExitCode=0:0), a `--no-requeue` one ends
//! NODE_FAIL with Reason=NodeDown and ExitCode=0:15, and the node is back
//! in service with its slurmd's next message, so that `State=RESUME` is
//! refused. Also `--no-kill` on two nodes, a running job shrinking itself
//! (`NumNodes=`), and the priority a held job gets at its release. Needs the workspace binaries (`cargo build
//! --workspace --bins`, or `cargo test --workspace`).

use std::time::Duration;

use slurm_testkit::e2e::{cluster, run, run_ok, scontrol_show};
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

fn one_node() -> LocalCluster {
    cluster(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    })
}

fn sbatch(c: &LocalCluster, args: &[&str]) -> String {
    let mut all = vec!["--parsable"];
    all.extend_from_slice(args);
    run_ok(c, "sbatch", &all).trim().to_string()
}

/// `Key=value` of `scontrol show job id`.
fn field(c: &LocalCluster, id: &str, key: &str) -> String {
    let shown = scontrol_show(c, "job", id);
    let prefix = format!("{key}=");
    shown
        .split_whitespace()
        .find_map(|w| w.strip_prefix(prefix.as_str()))
        .unwrap_or_default()
        .to_string()
}

fn wait_field(c: &LocalCluster, id: &str, key: &str, want: &str) {
    let got = wait_until(key, WAIT, || (field(c, id, key) == want).then_some(()));
    if got.is_err() {
        panic!(
            "job {id} never showed {key}={want}\nlast: {}\n{}",
            scontrol_show(c, "job", id),
            c.logs()
        );
    }
}

#[test]
fn a_node_set_down_requeues_fails_and_comes_back_as_slurm_does() {
    let c = one_node();
    let node = c.dir().node_names()[0].clone();
    let kept = sbatch(&c, &["--wrap", "sleep 300"]);
    let lost = sbatch(&c, &["--no-requeue", "--wrap", "sleep 300"]);
    wait_field(&c, &kept, "JobState", "RUNNING");
    wait_field(&c, &lost, "JobState", "RUNNING");
    let nodes = format!("NodeName={node}");
    run_ok(
        &c,
        "scontrol",
        &["update", &nodes, "State=DOWN", "Reason=x"],
    );

    assert_eq!(field(&c, &kept, "JobState"), "PENDING");
    assert_eq!(field(&c, &kept, "Reason"), "BeginTime");
    assert_eq!(field(&c, &kept, "Restarts"), "1");
    assert_eq!(field(&c, &kept, "ExitCode"), "0:0");
    assert_eq!(field(&c, &lost, "JobState"), "NODE_FAIL");
    assert_eq!(field(&c, &lost, "Reason"), "NodeDown");
    assert_eq!(field(&c, &lost, "ExitCode"), "0:15");

    // Back in service with the node's next message: RESUME is refused.
    let back = wait_until("node back", WAIT, || {
        let o = run_ok(&c, "sinfo", &["-h", "-o", "%t"]);
        (o.trim() == "idle").then_some(())
    });
    assert!(back.is_ok(), "{}\n{}", run_ok(&c, "sinfo", &[]), c.logs());
    let o = run(&c, "scontrol", &["update", &nodes, "State=RESUME"]);
    assert!(!o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "slurm_update error: Invalid node state specified\n"
    );
    run_ok(&c, "scancel", &[&kept]);
}

/// `--no-kill`, as Slurm 22.05 showed it on two nodes: a node set DOWN
/// under the job leaves its allocation (NodeList, NumNodes, NumCPUs and
/// TRES shrink, ResizeTime appears) and the script runs on to COMPLETED;
/// when the node set DOWN is the batch host, the job ends FAILED with
/// Reason=JobLaunchFailure and ExitCode=0:9 although it may be requeued.
#[test]
fn a_no_kill_job_loses_only_the_node_set_down() {
    let c = cluster(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let names = c.dir().node_names().to_vec();
    let work = slurm_testkit::e2e::work_dir(&c);
    let go = work.join("go");
    let script = format!(
        "while [ ! -e {} ]; do sleep 0.1; done; echo done",
        go.display()
    );
    let out = work.join("nk-%j.out");
    let out_arg = out.to_string_lossy().to_string();
    let id = sbatch(&c, &["--no-kill", "-N2", "-o", &out_arg, "--wrap", &script]);
    wait_field(&c, &id, "JobState", "RUNNING");
    assert_eq!(field(&c, &id, "NumNodes"), "2");
    let down = format!("NodeName={}", names[1]);
    run_ok(&c, "scontrol", &["update", &down, "State=DOWN", "Reason=x"]);
    assert_eq!(field(&c, &id, "JobState"), "RUNNING");
    assert_eq!(field(&c, &id, "NodeList"), names[0]);
    assert_eq!(field(&c, &id, "BatchHost"), names[0]);
    assert_eq!(field(&c, &id, "NumNodes"), "1");
    assert_eq!(field(&c, &id, "NumTasks"), "1");
    assert!(field(&c, &id, "TRES").starts_with("cpu=1,"));
    assert!(!field(&c, &id, "ResizeTime").is_empty());
    std::fs::write(&go, "").expect("go file");
    wait_field(&c, &id, "JobState", "COMPLETED");
    let written = out.to_string_lossy().replace("%j", &id);
    assert_eq!(
        std::fs::read_to_string(&written).unwrap_or_default(),
        "done\n"
    );

    // The batch host itself.
    let back = wait_until("node back", WAIT, || {
        let o = run_ok(&c, "sinfo", &["-h", "-o", "%t"]);
        (o.trim() == "idle").then_some(())
    });
    assert!(back.is_ok(), "{}\n{}", run_ok(&c, "sinfo", &[]), c.logs());
    let id = sbatch(&c, &["--no-kill", "-N2", "--wrap", "sleep 300"]);
    wait_field(&c, &id, "JobState", "RUNNING");
    let batch = format!("NodeName={}", field(&c, &id, "BatchHost"));
    run_ok(
        &c,
        "scontrol",
        &["update", &batch, "State=DOWN", "Reason=x"],
    );
    wait_field(&c, &id, "JobState", "FAILED");
    assert_eq!(field(&c, &id, "Reason"), "JobLaunchFailure");
    assert_eq!(field(&c, &id, "ExitCode"), "0:9");
    assert_eq!(field(&c, &id, "Restarts"), "0");
    assert_eq!(field(&c, &id, "NodeList"), names[1]);
}

/// A running job shrinking itself, as Slurm 22.05's resize workflow goes:
/// `scontrol update JobId=$SLURM_JOB_ID NumNodes=1` inside the job frees
/// the second node at once, prints how to reset the environment and
/// writes the two files; sourcing the `.sh` one gives the new size.
#[test]
fn a_job_shrinks_itself_and_gets_its_environment_files() {
    let c = cluster(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let names = c.dir().node_names().to_vec();
    let work = slurm_testkit::e2e::work_dir(&c);
    let script = "scontrol update JobId=$SLURM_JOB_ID NumNodes=1; echo rc=$?; \
                  . ./slurm_job_${SLURM_JOB_ID}_resize.sh; \
                  echo $SLURM_JOB_NODELIST $SLURM_NNODES ${SLURM_NTASKS-unset}; \
                  sinfo -h -N -o '%N %t'";
    let id = c
        .sbatch_in(&work, &["-N2", "-o", "out-%j", "--wrap", script])
        .expect("sbatch")
        .to_string();
    wait_field(&c, &id, "JobState", "COMPLETED");
    let out = std::fs::read_to_string(work.join(format!("out-{id}"))).unwrap_or_default();
    let want = format!(
        "To reset Slurm environment variables, execute\n  \
         For bash or sh shells:  . ./slurm_job_{id}_resize.sh\n  \
         For csh shells:         source ./slurm_job_{id}_resize.csh\n\
         rc=0\n{} 1 unset\n{} mix\n{} idle\n",
        names[0], names[0], names[1]
    );
    assert_eq!(out, want, "{}", c.logs());
    assert_eq!(field(&c, &id, "NodeList"), names[0]);
    assert_eq!(field(&c, &id, "NumNodes"), "1");
    assert!(!field(&c, &id, "ResizeTime").is_empty());
    assert!(work.join(format!("slurm_job_{id}_resize.csh")).is_file());
}

/// Slurm 22.05 (priority/basic): held jobs take no priority until their
/// release, which gives the next one down; released 1, 3, 2 they show
/// 4294901759, 4294901757, 4294901758.
#[test]
fn released_jobs_are_numbered_in_release_order() {
    let c = one_node();
    let ids: Vec<String> = (0..3)
        .map(|_| sbatch(&c, &["-H", "-c", "2", "--wrap", "sleep 300"]))
        .collect();
    for id in &ids {
        assert_eq!(field(&c, id, "Priority"), "0");
    }
    for k in [0, 2, 1] {
        run_ok(&c, "scontrol", &["release", &ids[k]]);
    }
    assert_eq!(field(&c, &ids[0], "Priority"), "4294901759");
    assert_eq!(field(&c, &ids[2], "Priority"), "4294901758");
    assert_eq!(field(&c, &ids[1], "Priority"), "4294901757");
    let all = ids.join(",");
    run_ok(&c, "scancel", &[&all]);
}
