//! End to end, through the real commands: what a job waiting for its begin
//! time shows as StartTime (scontrol, squeue `%S` and `--start`, `--json`),
//! and `scontrol requeue` of a job whose node is still cleaning up
//! (COMPLETING): accepted at once, back in the queue once the node reports,
//! with the requeue delay counted from then.

use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster_with as cluster, run_ok as run, text};
use slurm_testkit::golden::require_field;
use slurm_testkit::local_cluster::job_states;
use slurm_testkit::{wait_until, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

/// KillWait of the requeue test: how long a job that ignores SIGTERM stays
/// COMPLETING after it is cancelled (the window the requeue must hit).
const KILL_WAIT_SECS: i64 = 20;

/// AuthInfo cred_expire (120 s by default) + 1 s.
const REQUEUE_DELAY_SECS: i64 = 121;

fn unix_now() -> i64 {
    slurm_common::auth::unix_now()
}

fn time_of(show: &str, key: &str) -> i64 {
    slurm_common::time::parse_timestamp(&require_field(show, key), unix_now())
        .unwrap_or_else(|e| panic!("{key}: {e}\n{show}"))
}

fn show_job(c: &LocalCluster, id: u32) -> String {
    run(c, "scontrol", &["show", "job", &id.to_string()])
}

#[test]
fn a_job_waiting_for_its_begin_time_shows_it_as_start_time() {
    let c = cluster(&[]);
    let submitted_at = unix_now();
    let id = c
        .sbatch(&["--begin=now+3600", "-t", "30", "--wrap", "true"])
        .expect("sbatch");
    let show = show_job(&c, id);
    assert!(show.contains("JobState=PENDING Reason=BeginTime"), "{show}");
    let start = time_of(&show, "StartTime");
    assert!(
        (submitted_at + 3600..=unix_now() + 3600).contains(&start),
        "StartTime {start} is not the begin time\n{show}"
    );
    assert_eq!(time_of(&show, "EligibleTime"), start, "{show}");
    assert_eq!(time_of(&show, "EndTime"), start + 30 * 60, "{show}");
    // squeue shows the same time, in the same words.
    let shown = require_field(&show, "StartTime");
    let s = run(&c, "squeue", &["-h", "-j", &id.to_string(), "-o", "%S %r"]);
    assert_eq!(s, format!("{shown} BeginTime\n"));
    let s = run(&c, "squeue", &["--start", "-h", "-j", &id.to_string()]);
    assert!(s.contains(&shown), "squeue --start: {s}");
    let json = run(&c, "squeue", &["--json"]);
    assert!(json.contains(&format!("\"start_time\": {start}")), "{json}");

    // Held and with no begin time: nothing predicts its start.
    let held = c.sbatch(&["-H", "--wrap", "true"]).expect("sbatch");
    let show = show_job(&c, held);
    assert!(
        show.contains("JobState=PENDING Reason=JobHeldUser"),
        "{show}"
    );
    assert_eq!(require_field(&show, "StartTime"), "Unknown", "{show}");
    assert_eq!(require_field(&show, "EndTime"), "Unknown", "{show}");
    let s = run(&c, "squeue", &["-h", "-j", &held.to_string(), "-o", "%S"]);
    assert_eq!(s, "N/A\n");
}

#[test]
fn a_completing_job_is_requeued_and_waits_its_delay_from_the_end_of_its_cleanup() {
    let kill_wait = format!("KillWait={KILL_WAIT_SECS}");
    let mut c = cluster(&[&kill_wait]);
    let work = tempfile::tempdir().expect("temp dir");
    let ready = work.path().join("ready");
    // Ignores SIGTERM (and so does its sleep): once cancelled it stays
    // COMPLETING until slurmd kills it after KillWait.
    let script = format!("trap '' TERM; touch {}; sleep 300", ready.display());
    let id = c.sbatch(&["-w", "n1", "--wrap", &script]).expect("sbatch");
    c.wait_job_state(id, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    wait_until("the job script to ignore SIGTERM", JOB_WAIT, || {
        ready.exists().then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    run(&c, "scancel", &[&id.to_string()]);
    let conf = c.conf_path();
    c.wait_for(
        &format!("job {id} cancelled and completing"),
        JOB_WAIT,
        |_| {
            let j = job_states(&conf, &[id])?.into_iter().find(|j| j.id == id)?;
            (j.state == JobState::Cancelled && j.completing).then_some(())
        },
    )
    .unwrap_or_else(|e| panic!("{e:#}"));

    let requeued_at = unix_now();
    run(&c, "scontrol", &["requeue", &id.to_string()]);
    // Pending at once, still completing on n1.
    let j = c.job_status(id).expect("job known");
    assert!(
        j.state == JobState::Pending && j.completing,
        "{j:?}\n{}",
        c.logs()
    );
    let s = run(&c, "squeue", &["-h", "-j", &id.to_string(), "-o", "%t %r"]);
    assert_eq!(s, "CG BeginTime\n");
    let s = run(&c, "sinfo", &["-h", "-n", "n1", "-o", "%t"]);
    assert!(s.starts_with("comp") || s.starts_with("mix"), "n1: {s}");
    // Requeued already.
    let o = c
        .run("scontrol", &["requeue", &id.to_string()])
        .expect("scontrol");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(
        text(&o.stderr),
        format!("Job is pending execution for job {id}\n")
    );

    // n1 kills it after KillWait and reports: back in the queue, waiting
    // the requeue delay from then.
    let wait = JOB_WAIT + Duration::from_secs(KILL_WAIT_SECS as u64);
    c.wait_for(&format!("job {id} back in the queue"), wait, |_| {
        let j = job_states(&conf, &[id])?.into_iter().find(|j| j.id == id)?;
        (j.state == JobState::Pending && !j.completing).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    let back_at = unix_now();
    let show = show_job(&c, id);
    assert!(show.contains("JobState=PENDING Reason=BeginTime"), "{show}");
    assert_eq!(require_field(&show, "Restarts"), "1", "{show}");
    let eligible = time_of(&show, "EligibleTime");
    assert!(
        (back_at - 5 + REQUEUE_DELAY_SECS..=back_at + REQUEUE_DELAY_SECS).contains(&eligible),
        "eligible at {eligible}, back in the queue at {back_at}\n{show}"
    );
    assert!(
        eligible >= requeued_at + REQUEUE_DELAY_SECS + KILL_WAIT_SECS - 5,
        "the delay runs from the end of the cleanup\n{show}"
    );
    assert_eq!(time_of(&show, "StartTime"), eligible, "{show}");
    let s = run(&c, "sinfo", &["-h", "-n", "n1", "-o", "%t"]);
    assert_eq!(s, "idle\n", "{}", c.logs());
}

#[test]
fn requeue_of_a_job_that_may_not_be_requeued_is_refused_in_slurms_words() {
    let mut c = cluster(&[]);
    let id = c
        .sbatch(&["--no-requeue", "--wrap", "true"])
        .expect("sbatch");
    assert_eq!(
        c.wait_job_finished(id, JOB_WAIT)
            .unwrap_or_else(|e| panic!("{e:#}")),
        JobState::Completed
    );
    for verb in ["requeue", "requeuehold"] {
        let o = c
            .run("scontrol", &[verb, &id.to_string()])
            .expect("scontrol");
        assert_eq!(o.status.code(), Some(1), "{verb}: {o:?}");
        assert_eq!(
            text(&o.stderr),
            format!("Requested operation is presently disabled for job {id}\n"),
            "{verb}"
        );
    }
    assert_eq!(c.job_state(id), Some(JobState::Completed));
    // A finished job that may be requeued: requeuehold puts it back held.
    let other = c.sbatch(&["--wrap", "true"]).expect("sbatch");
    c.wait_job_finished(other, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    run(&c, "scontrol", &["requeuehold", &other.to_string()]);
    let s = run(
        &c,
        "squeue",
        &["-h", "-j", &other.to_string(), "-o", "%T %R"],
    );
    assert_eq!(s, "PENDING (job requeued in held state)\n");
}
