//! End to end: a job keeps its node until that node's slurmd reports its
//! cleanup (EpilogComplete), and a requeued job waits out the requeue delay
//! (AuthInfo cred_expire + 1 s, 121 s by default) with Reason=BeginTime.
//!
//! The batch script's own end (JobComplete) no longer frees the node: that a
//! requeued or finished job lets go of its node at all shows that the
//! controller took the slurmd's EpilogComplete.

use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::run_ok as run;
use slurm_testkit::golden::require_field;
use slurm_testkit::local_cluster::job_states;
use slurm_testkit::LocalCluster;

const JOB_WAIT: Duration = Duration::from_secs(30);

fn cluster() -> LocalCluster {
    LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster did not start: {e:#}"))
}

fn unix_now() -> i64 {
    slurm_common::auth::unix_now()
}

/// Waits until job `id` is PENDING and no longer COMPLETING.
fn wait_back_in_queue(c: &mut LocalCluster, id: u32) {
    let conf = c.conf_path();
    c.wait_for(&format!("job {id} back in the queue"), JOB_WAIT, |_| {
        let j = job_states(&conf, &[id])?.into_iter().find(|j| j.id == id)?;
        (j.state == JobState::Pending && !j.completing).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
}

#[test]
fn a_requeued_running_job_frees_its_node_and_waits_its_begin_time() {
    let mut c = cluster();
    let id = c
        .sbatch(&["-w", "n2", "--wrap", "sleep 300"])
        .expect("sbatch");
    c.wait_job_state(id, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let requeued_at = unix_now();
    run(&c, "scontrol", &["requeue", &id.to_string()]);
    wait_back_in_queue(&mut c, id);
    let show = run(&c, "scontrol", &["show", "job", &id.to_string()]);
    assert!(show.contains("JobState=PENDING Reason=BeginTime"), "{show}");
    assert_eq!(require_field(&show, "Restarts"), "1", "{show}");
    let eligible =
        slurm_common::time::parse_timestamp(&require_field(&show, "EligibleTime"), unix_now())
            .unwrap_or_else(|e| panic!("EligibleTime: {e}\n{show}"));
    let delay = eligible - requeued_at;
    assert!(
        (119..=125).contains(&delay),
        "eligible {delay} s after the requeue\n{show}"
    );
    let q = run(&c, "squeue", &["-h", "-j", &id.to_string(), "-o", "%T %r"]);
    assert_eq!(q, "PENDING BeginTime\n");
    // n2's slurmd reported its cleanup: the node is free for other jobs,
    // while the requeued job does not start on it.
    let s = run(&c, "sinfo", &["-h", "-n", "n2", "-o", "%t"]);
    assert_eq!(s, "idle\n", "{}", c.logs());
    let other = c.sbatch(&["-w", "n2", "--wrap", "true"]).expect("sbatch");
    assert_eq!(
        c.wait_job_finished(other, JOB_WAIT)
            .unwrap_or_else(|e| panic!("{e:#}")),
        JobState::Completed
    );
    assert_eq!(c.job_state(id), Some(JobState::Pending));
}

#[test]
fn a_finished_job_releases_its_node_through_the_epilog_and_requeues_with_a_delay() {
    let mut c = cluster();
    let id = c.sbatch(&["--wrap", "true"]).expect("sbatch");
    assert_eq!(
        c.wait_job_finished(id, JOB_WAIT)
            .unwrap_or_else(|e| panic!("{e:#}")),
        JobState::Completed
    );
    // Released everywhere (the nodes' EpilogComplete): every node idle.
    let s = run(&c, "sinfo", &["-h", "-o", "%t %D"]);
    assert_eq!(s, "idle 4\n", "{}", c.logs());
    let requeued_at = unix_now();
    run(&c, "scontrol", &["requeue", &id.to_string()]);
    wait_back_in_queue(&mut c, id);
    let show = run(&c, "scontrol", &["show", "job", &id.to_string()]);
    assert!(show.contains("JobState=PENDING Reason=BeginTime"), "{show}");
    let eligible =
        slurm_common::time::parse_timestamp(&require_field(&show, "EligibleTime"), unix_now())
            .unwrap_or_else(|e| panic!("EligibleTime: {e}\n{show}"));
    assert!(
        (119..=125).contains(&(eligible - requeued_at)),
        "eligible {} s after the requeue\n{show}",
        eligible - requeued_at
    );
}
