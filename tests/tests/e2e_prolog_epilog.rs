//! slurm.conf's Prolog and Epilog end to end: slurmd runs the Prolog on
//! the batch node before the script starts and the Epilog on the job's
//! node once it has ended, each with the job's `SLURM_*` variables; a
//! failing Epilog drains the node ("Epilog error"), a failing Prolog drains
//! it ("Prolog error") and sends the job back to the queue held, shown as
//! Slurm shows it (`Reason=launch_failed_requeued_held`), instead of
//! running it (the node's Epilog runs all the same); a reconfigured Prolog
//! applies to the next job. PrologFlags are in `e2e_prolog_flags`.
//!
//! The programs record what they were told in a file the test reads; every
//! wait polls with a deadline.

use std::path::{Path, PathBuf};
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{self, output_text, scontrol_show};
use slurm_testkit::scripts::ScriptDir;
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(60);

/// A script that appends "$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID
/// $SLURMD_NODENAME" (prefixed by `tag` when given) to the record and
/// exits `exit`.
fn write(s: &ScriptDir, name: &str, tag: &str, exit: i32) -> PathBuf {
    let body = format!(
        "#!/bin/sh\necho \"{tag}$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURMD_NODENAME\" >> {}\nexit {exit}\n",
        s.record().display()
    );
    s.executable(name, &body)
}

fn cluster(extra: Vec<String>) -> LocalCluster {
    e2e::cluster(ClusterSpec {
        nodes: 2,
        extra_lines: extra,
        ..ClusterSpec::default()
    })
}

/// A job on `node` that appends "job $SLURM_JOB_ID" to the record.
fn submit(c: &LocalCluster, s: &ScriptDir, node: &str) -> u32 {
    let wrap = format!("echo \"job $SLURM_JOB_ID\" >> {}", s.record().display());
    c.sbatch(&["-w", node, "-t", "5", "--wrap", &wrap])
        .unwrap_or_else(|e| panic!("sbatch: {e:#}"))
}

/// Waits until `scontrol show node` of `node` holds every one of `words`.
fn wait_node(c: &LocalCluster, node: &str, words: &[&str]) -> String {
    wait_until(&format!("node {node} to show {words:?}"), WAIT, || {
        let shown = scontrol_show(c, "node", node);
        words.iter().all(|w| shown.contains(w)).then_some(shown)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", scontrol_show(c, "node", node), c.logs()))
}

fn conf_line(key: &str, path: &Path) -> String {
    format!("{key}={}", path.display())
}

#[test]
fn prolog_and_epilog_run_around_a_job_and_a_reconfigured_prolog_applies_next() {
    let s = ScriptDir::new("prolog-epilog-");
    let prolog = write(&s, "prolog.sh", "", 0);
    let epilog = write(&s, "epilog.sh", "", 0);
    let mut c = cluster(vec![
        conf_line("Prolog", &prolog),
        conf_line("Epilog", &epilog),
        "PrologEpilogTimeout=30".into(),
    ]);

    let id = submit(&c, &s, "n2");
    assert_eq!(
        c.wait_job_finished(id, WAIT)
            .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs())),
        JobState::Completed
    );
    // The Epilog runs once the job has ended, before the node is free.
    let lines = s.wait_lines(&c, 3, WAIT);
    assert_eq!(
        lines,
        vec![
            format!("prolog_slurmd {id} n2"),
            format!("job {id}"),
            format!("epilog_slurmd {id} n2"),
        ],
        "{}",
        c.logs()
    );
    c.wait_nodes_idle(WAIT)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs()));

    // Another Prolog in slurm.conf, then reconfigure: slurmd takes it
    // without a restart and the next job runs it.
    let newer = write(&s, "prolog2.sh", "new ", 0);
    let conf = c.conf_path();
    let text_before = std::fs::read_to_string(&conf).expect("read slurm.conf");
    let old_line = conf_line("Prolog", &prolog);
    assert!(text_before.contains(&old_line), "{text_before}");
    std::fs::write(
        &conf,
        text_before.replace(&old_line, &conf_line("Prolog", &newer)),
    )
    .expect("write slurm.conf");
    let log = c.dir().log_dir().join("slurmd.n2.log");
    let seen = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();
    let o = c.run("scontrol", &["reconfigure"]).expect("reconfigure");
    assert!(o.status.success(), "{}", output_text(&o));
    wait_until("slurmd n2 to take the new Prolog", WAIT, || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .skip(seen)
            .any(|l| l.contains("re-read slurm.conf") && l.contains("Prolog"))
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));

    let id2 = submit(&c, &s, "n2");
    assert_eq!(
        c.wait_job_finished(id2, WAIT)
            .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs())),
        JobState::Completed
    );
    let lines = s.wait_lines(&c, 6, WAIT);
    assert_eq!(
        lines[3..],
        [
            format!("new prolog_slurmd {id2} n2"),
            format!("job {id2}"),
            format!("epilog_slurmd {id2} n2"),
        ],
        "{}",
        c.logs()
    );
}

#[test]
fn a_failing_epilog_drains_the_node() {
    let s = ScriptDir::new("prolog-epilog-");
    let epilog = write(&s, "epilog.sh", "", 3);
    let c = cluster(vec![conf_line("Epilog", &epilog)]);
    let id = submit(&c, &s, "n1");
    let shown = wait_node(&c, "n1", &["Reason=Epilog error"]);
    assert!(shown.contains("DRAIN"), "{shown}");
    // The job itself ran and completed.
    let lines = s.lines();
    assert_eq!(
        lines,
        vec![format!("job {id}"), format!("epilog_slurmd {id} n1")]
    );
    let job = scontrol_show(&c, "job", &id.to_string());
    assert!(job.contains("JobState=COMPLETED"), "{job}");
    // The other node is untouched.
    let other = scontrol_show(&c, "node", "n2");
    assert!(!other.contains("DRAIN"), "{other}");
}

#[test]
fn a_failing_prolog_drains_the_node_and_holds_the_job() {
    let s = ScriptDir::new("prolog-epilog-");
    let prolog = write(&s, "prolog.sh", "", 1);
    let epilog = write(&s, "epilog.sh", "", 0);
    let c = cluster(vec![
        conf_line("Prolog", &prolog),
        conf_line("Epilog", &epilog),
    ]);
    let id = submit(&c, &s, "n1");
    let shown = wait_node(&c, "n1", &["Reason=Prolog error"]);
    assert!(shown.contains("DRAIN"), "{shown}");
    let job = e2e::wait_shown(
        &c,
        "job",
        &id.to_string(),
        "JobState=PENDING Reason=launch_failed_requeued_held Dependency=(null)",
        WAIT,
    );
    assert!(job.contains("Restarts=1"), "{job}");
    // The node's error text (program, exit status) is in the log only.
    assert!(!job.contains("exit status"), "{job}");
    // The script never ran; the node was told to end the job, so its
    // Epilog ran after the failed Prolog.
    assert_eq!(
        s.wait_lines(&c, 2, WAIT),
        vec![
            format!("prolog_slurmd {id} n1"),
            format!("epilog_slurmd {id} n1")
        ]
    );
    let q = c
        .run("squeue", &["-h", "-j", &id.to_string(), "-o", "%T %R"])
        .expect("squeue");
    // squeue shows the description as it is.
    assert_eq!(output_text(&q), "PENDING (launch failed requeued held)\n");
}
