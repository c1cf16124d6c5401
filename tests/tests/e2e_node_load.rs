//! A node's live figures end to end: slurmd measures its load (five-minute
//! average) and free memory at registration and in every ping answer, the
//! controller keeps the latest in memory and `scontrol show node`, `sinfo
//! -o %O/%e` and `sinfo --json` show them; LastBusyTime is the node's
//! registration, then the end of its last job. Real daemons on loopback;
//! needs the workspace binaries.

use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::cluster_dir::ClusterSpec;
use slurm_testkit::golden::{is_slurm_date, json_numbers, show_field};
use slurm_testkit::{wait_until, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn show(c: &LocalCluster, what: &str, name: &str) -> String {
    let o = c
        .run("scontrol", &["show", what, name])
        .expect("scontrol show");
    text(&o)
}

/// `2.26`: digits, a dot, two digits.
fn is_load(v: &str) -> bool {
    v.split_once('.').is_some_and(|(whole, frac)| {
        !whole.is_empty()
            && frac.len() == 2
            && whole
                .bytes()
                .chain(frac.bytes())
                .all(|b| b.is_ascii_digit())
    })
}

fn is_number(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())
}

/// Waits until `scontrol show node` shows numbers for CPULoad and FreeMem
/// and a date for LastBusyTime; returns what it showed.
fn wait_live_figures(c: &LocalCluster, node: &str) -> String {
    wait_until(
        &format!("{node} to show CPULoad, FreeMem and LastBusyTime"),
        WAIT,
        || {
            let shown = show(c, "node", node);
            let ok = show_field(&shown, "CPULoad").is_some_and(is_load)
                && show_field(&shown, "FreeMem").is_some_and(is_number)
                && show_field(&shown, "LastBusyTime").is_some_and(is_slurm_date);
            ok.then_some(shown)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", show(c, "node", node), c.logs()))
}

#[test]
fn nodes_show_their_load_free_memory_and_last_busy_time() {
    // SlurmdTimeout stays at its default (300 s): no slurmd registers again
    // on its own while the test runs, so the figures seen after the
    // controller's restart below can only come from its pings.
    let spec = ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    };
    let mut c = LocalCluster::start(spec).unwrap_or_else(|e| panic!("cluster: {e:#}"));
    let n1 = wait_live_figures(&c, "n1");
    wait_live_figures(&c, "n2");
    // Idle since it registered: busy until then, which is no earlier than
    // its slurmd's start (ISO dates compare as text).
    let busy = show_field(&n1, "LastBusyTime").expect("LastBusyTime");
    let started = show_field(&n1, "SlurmdStartTime").expect("SlurmdStartTime");
    assert!(is_slurm_date(started) && busy >= started, "{n1}");
    let free: u64 = show_field(&n1, "FreeMem")
        .and_then(|v| v.parse().ok())
        .expect("FreeMem");
    assert!(free > 0, "{n1}");

    // sinfo's CPU_LOAD and FREE_MEM columns.
    let o = c.run("sinfo", &["-N", "-o", "%N %O %e"]).expect("sinfo -N");
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("NODELIST CPU_LOAD FREE_MEM"), "{out}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 2, "{out}");
    for (row, name) in rows.iter().zip(["n1", "n2"]) {
        assert_eq!(row.len(), 3, "{out}");
        assert_eq!(row[0], name, "{out}");
        assert!(is_load(row[1]) && is_number(row[2]), "{out}");
    }

    // sinfo --json carries them as numbers, one of each per node.
    let o = c.run("sinfo", &["--json"]).expect("sinfo --json");
    assert!(o.status.success(), "{}", text(&o));
    let json = String::from_utf8_lossy(&o.stdout).to_string();
    for (key, positive) in [
        ("cpu_load", false),
        ("free_memory", true),
        ("last_busy", true),
    ] {
        let values = json_numbers::<u64>(&json, key);
        assert_eq!(values.len(), 2, "{key} in {json}");
        assert!(
            values.iter().all(|v| v.is_some_and(|v| v > 0 || !positive)),
            "{key} in {json}"
        );
    }

    // A job on n1: the node was busy until the job's end (its cleanup
    // done), n2 stays as it was.
    let n2_before = show_field(&show(&c, "node", "n2"), "LastBusyTime").map(str::to_string);
    let id = c
        .sbatch(&["-w", "n1", "--wrap", "sleep 2"])
        .expect("sbatch");
    let state = c.wait_job_finished(id, WAIT).expect("job ends");
    assert_eq!(state, JobState::Completed);
    let job = show(&c, "job", &id.to_string());
    let end = show_field(&job, "EndTime").expect("EndTime").to_string();
    assert!(is_slurm_date(&end), "{job}");
    wait_until("n1's LastBusyTime to reach the job's end", WAIT, || {
        let shown = show(&c, "node", "n1");
        show_field(&shown, "LastBusyTime")
            .is_some_and(|t| is_slurm_date(t) && t >= end.as_str())
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{job}\n{}\n{}", show(&c, "node", "n1"), c.logs()));
    assert_eq!(
        show_field(&show(&c, "node", "n2"), "LastBusyTime").map(str::to_string),
        n2_before
    );

    // The figures are not saved: a restarted controller has none until
    // its first ping round, which goes out as soon as it is in control.
    // LastBusyTime is state and comes back with it; that it did not move
    // also shows that no node registered again (which would have set it).
    let busy = show_field(&show(&c, "node", "n1"), "LastBusyTime").map(str::to_string);
    c.restart_controller().expect("restart slurmctld");
    let again = wait_live_figures(&c, "n1");
    assert_eq!(show_field(&again, "LastBusyTime").map(str::to_string), busy);
    c.stop().expect("stop");
}
