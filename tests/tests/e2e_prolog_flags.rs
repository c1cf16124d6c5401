//! The Prolog's place in a job's launch, end to end: slurmd answers the
//! launch before its Prolog runs (a slow Prolog neither times the launch
//! out nor makes the job fail and start again); PrologFlags=Alloc runs the
//! Prolog on every node of a job, and a failure on a node other than the
//! batch host drains that node and requeues the job held
//! (`Reason=launch_failed_requeued_held`); PrologFlags=Serial runs a
//! node's Prologs one at a time.
//!
//! The programs record what they were told in a file the test reads; every
//! wait polls with a deadline.

use std::path::PathBuf;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{self, output_text, scontrol_show};
use slurm_testkit::scripts::ScriptDir;
use slurm_testkit::{ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(90);

/// A Prolog that appends "start $SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID
/// $SLURMD_NODENAME", runs `body`, appends the same line with "end",
/// and exits with `body`'s status.
fn prolog(s: &ScriptDir, body: &str) -> PathBuf {
    let line = "$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURMD_NODENAME";
    let record = s.record();
    let record = record.display();
    let text = format!(
        "#!/bin/sh\necho \"start {line}\" >> {record}\n{body}\nrc=$?\n\
         echo \"end {line}\" >> {record}\nexit $rc\n"
    );
    s.executable("prolog.sh", &text)
}

fn cluster(nodes: usize, extra: Vec<String>) -> LocalCluster {
    e2e::cluster(ClusterSpec {
        nodes,
        extra_lines: extra,
        ..ClusterSpec::default()
    })
}

/// A job on `nodes` (one task per node) that appends "job $SLURM_JOB_ID
/// $SLURMD_NODENAME" to the record.
fn submit(c: &LocalCluster, s: &ScriptDir, nodes: &str, count: &str) -> u32 {
    let wrap = format!(
        "echo \"job $SLURM_JOB_ID $SLURMD_NODENAME\" >> {}",
        s.record().display()
    );
    c.sbatch(&["-N", count, "-w", nodes, "-t", "5", "--wrap", &wrap])
        .unwrap_or_else(|e| panic!("sbatch: {e:#}"))
}

fn finished(c: &mut LocalCluster, id: u32) -> JobState {
    c.wait_job_finished(id, WAIT)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs()))
}

/// A Prolog that takes twice MessageTimeout: slurmd answers the launch
/// before it runs, so the controller neither times the launch out nor
/// requeues the job (with a slurmd that answered after its Prolog, the
/// launch would fail after MessageTimeout and the job start again with
/// Restarts=1). The job is RUNNING while its Prolog runs.
#[test]
fn a_slow_prolog_does_not_hold_up_the_launch() {
    let s = ScriptDir::new("prolog-flags-");
    let prolog = prolog(&s, "sleep 6");
    let mut c = cluster(
        2,
        vec![
            format!("Prolog={}", prolog.display()),
            "MessageTimeout=3".into(),
        ],
    );
    let id = submit(&c, &s, "n1", "1");
    s.wait_lines(&c, 1, WAIT);
    let shown = scontrol_show(&c, "job", &id.to_string());
    assert!(shown.contains("JobState=RUNNING"), "{shown}");
    assert_eq!(finished(&mut c, id), JobState::Completed);
    let shown = scontrol_show(&c, "job", &id.to_string());
    assert!(shown.contains("Restarts=0"), "{shown}\n{}", c.logs());
    assert_eq!(
        s.lines(),
        vec![
            format!("start prolog_slurmd {id} n1"),
            format!("end prolog_slurmd {id} n1"),
            format!("job {id} n1"),
        ],
        "{}",
        c.logs()
    );
    let log = std::fs::read_to_string(c.dir().log_dir().join("slurmctld.log")).unwrap_or_default();
    assert!(!log.contains("launch failed"), "{log}");
}

/// PrologFlags=Alloc: both nodes of a two-node job run the Prolog, once
/// each, and the batch script starts after its node's Prolog.
#[test]
fn prolog_flags_alloc_runs_the_prolog_on_every_node() {
    let s = ScriptDir::new("prolog-flags-");
    let prolog = prolog(&s, "true");
    let mut c = cluster(
        2,
        vec![
            format!("Prolog={}", prolog.display()),
            "PrologFlags=Alloc".into(),
        ],
    );
    let id = submit(&c, &s, "n[1-2]", "2");
    assert_eq!(finished(&mut c, id), JobState::Completed);
    let lines = s.wait_lines(&c, 5, WAIT);
    let mut prologs: Vec<&String> = lines.iter().filter(|l| l.contains("prolog")).collect();
    prologs.sort();
    assert_eq!(
        prologs,
        [
            &format!("end prolog_slurmd {id} n1"),
            &format!("end prolog_slurmd {id} n2"),
            &format!("start prolog_slurmd {id} n1"),
            &format!("start prolog_slurmd {id} n2"),
        ],
        "{lines:?}"
    );
    let at = |l: &str| lines.iter().position(|x| x == l).expect(l);
    assert!(
        at(&format!("end prolog_slurmd {id} n1")) < at(&format!("job {id} n1")),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 5, "{lines:?}");
}

/// PrologFlags=Alloc, and the Prolog fails on n2 only, the node that does
/// not run the batch script: n2 is drained ("Prolog error"), n1 is not,
/// and the job goes back to the queue held, shown as Slurm shows it.
/// Without DeferBatch the batch script starts on n1 once n1's Prolog is
/// done, so it runs long enough for n2's failure to find it running.
#[test]
fn a_prolog_failing_on_the_other_node_drains_it_and_holds_the_job() {
    let s = ScriptDir::new("prolog-flags-");
    let prolog = prolog(&s, "[ \"$SLURMD_NODENAME\" != n2 ]");
    let c = cluster(
        2,
        vec![
            format!("Prolog={}", prolog.display()),
            "PrologFlags=Alloc".into(),
        ],
    );
    let id = c
        .sbatch(&["-N", "2", "-w", "n[1-2]", "-t", "5", "--wrap", "sleep 120"])
        .unwrap_or_else(|e| panic!("sbatch: {e:#}"));
    let node = e2e::wait_shown(&c, "node", "n2", "Reason=Prolog error", WAIT);
    assert!(node.contains("DRAIN"), "{node}");
    let job = e2e::wait_shown(
        &c,
        "job",
        &id.to_string(),
        "JobState=PENDING Reason=launch_failed_requeued_held Dependency=(null)",
        WAIT,
    );
    assert!(job.contains("Restarts=1"), "{job}");
    let n1 = scontrol_show(&c, "node", "n1");
    assert!(!n1.contains("DRAIN"), "{n1}");
    let q = c
        .run("squeue", &["-h", "-j", &id.to_string(), "-o", "%T %R"])
        .expect("squeue");
    assert_eq!(output_text(&q), "PENDING (launch failed requeued held)\n");
    // Both nodes ran their Prolog once.
    let ran: Vec<String> = s
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("start prolog_slurmd"))
        .collect();
    assert_eq!(ran.len(), 2, "{ran:?}");
}

/// PrologFlags=Serial: two jobs start on one node at once, and their
/// Prologs run one after the other (the second starts after the first
/// ended, though its job was launched while the first ran).
#[test]
fn prolog_flags_serial_runs_one_prolog_at_a_time() {
    let s = ScriptDir::new("prolog-flags-");
    let prolog = prolog(&s, "sleep 3");
    let mut c = cluster(
        1,
        vec![
            format!("Prolog={}", prolog.display()),
            "PrologFlags=Serial".into(),
        ],
    );
    let a = submit(&c, &s, "n1", "1");
    let b = submit(&c, &s, "n1", "1");
    // Both jobs were launched while the first Prolog ran: without Serial
    // the second Prolog would have started beside it.
    s.wait_lines(&c, 1, WAIT);
    c.wait_job_state(b, JobState::Running, WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let now = s.lines();
    assert!(
        !now.iter().any(|l| l.starts_with("end ")),
        "the first Prolog ended before the second job was launched: {now:?}"
    );
    assert_eq!(finished(&mut c, a), JobState::Completed);
    assert_eq!(finished(&mut c, b), JobState::Completed);
    let lines = s.wait_lines(&c, 6, WAIT);
    let prologs: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("prolog_slurmd"))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(
        prologs,
        ["start", "end", "start", "end"],
        "the Prologs overlapped: {lines:?}"
    );
}
