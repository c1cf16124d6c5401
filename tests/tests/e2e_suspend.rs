//! `scontrol suspend` and `scontrol resume` end to end: real slurmctld,
//! slurmd, slurmstepd and commands on loopback. Needs the workspace
//! binaries (`cargo build --workspace --bins`).
//!
//! The job counts in a file ten times a second. A suspension must stop the
//! count (the test fails if the count moves during a watch window, so it
//! cannot pass unless SIGSTOP reaches the job's processes), a resume must
//! start it again, and the time suspended must be added to the job's end.

use std::path::Path;
use std::time::{Duration, Instant};

use slurm_client_tools::client::block_on;
use slurm_proto::v1::{self, JobState};
use slurm_testkit::e2e::{cluster, run, run_ok, text, work_dir};
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);
/// How long the count must stand still before the job counts as stopped.
const STILL: Duration = Duration::from_millis(1500);
/// How long a stopped job is then watched: the count must not move.
const WINDOW: Duration = Duration::from_secs(3);

/// Counts up, ten times a second; each value replaces the file whole.
const COUNTER: &str = "#!/bin/sh\n\
i=0\n\
while true; do\n\
  i=$((i+1))\n\
  echo $i > counter.tmp && mv counter.tmp counter\n\
  sleep 0.1\n\
done\n";

fn count(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The job as the controller reports it.
fn info(c: &LocalCluster, id: u32) -> v1::JobInfo {
    let mut ctl = c.client().expect("client");
    let reply = block_on(ctl.call(|mut cl| async move {
        cl.get_jobs(v1::GetJobsRequest {
            filter: Some(v1::JobFilter {
                job_ids: vec![id],
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
    }))
    .unwrap_or_else(|e| panic!("get job {id}: {e}"));
    reply
        .jobs
        .into_iter()
        .find(|j| j.job_id == id)
        .unwrap_or_else(|| panic!("job {id} not found"))
}

fn squeue(c: &LocalCluster, id: u32, format: &str) -> String {
    run_ok(c, "squeue", &["-h", "-j", &id.to_string(), "-o", format])
        .trim()
        .to_string()
}

/// Waits until the count moves past `than`; the new value.
fn advances(c: &LocalCluster, counter: &Path, than: u64) -> u64 {
    wait_until(&format!("the count to pass {than}"), WAIT, || {
        count(counter).filter(|v| *v > than)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()))
}

/// Waits until the count has stood still for [`STILL`], then checks that
/// it does not move for [`WINDOW`]; the value it stopped at.
fn stops(c: &LocalCluster, counter: &Path) -> u64 {
    let mut last = (count(counter), Instant::now());
    let held = wait_until("the count to stand still", WAIT, || {
        let now = count(counter);
        if now != last.0 {
            last = (now, Instant::now());
        }
        (last.1.elapsed() >= STILL).then_some(now).flatten()
    })
    .unwrap_or_else(|e| panic!("{e}: the job was not stopped\n{}", c.logs()));
    let watched = Instant::now();
    let moved = wait_until("the count to move while suspended", WINDOW, || {
        count(counter).filter(|v| *v != held)
    });
    assert!(
        moved.is_err(),
        "the count moved from {held} to {:?} {:?} into the watch: the job runs while suspended",
        moved.ok(),
        watched.elapsed()
    );
    held
}

#[test]
fn a_suspended_job_stops_keeps_its_time_and_survives_a_restart() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    std::fs::write(dir.join("count.sh"), COUNTER).expect("script");
    let id = c.sbatch_in(&dir, &["-t", "5", "count.sh"]).expect("sbatch");
    let ids = id.to_string();
    let counter = dir.join("counter");
    let first = advances(&c, &counter, 0);
    advances(&c, &counter, first);
    let running = info(&c, id);
    assert_eq!(running.suspend_time, 0);
    assert_eq!(running.end_time, running.start_time + 300);

    // Only a suspended job can be resumed.
    let o = run(&c, "scontrol", &["resume", &ids]);
    assert_eq!(
        (text(&o.stderr), o.status.code()),
        (format!("Job is not suspended for job {id}\n"), Some(1))
    );

    assert_eq!(run_ok(&c, "scontrol", &["suspend", &ids]), "");
    assert_eq!(squeue(&c, id, "%t"), "S");
    let held = stops(&c, &counter);
    let suspended = info(&c, id);
    assert_eq!(suspended.state, JobState::Suspended as i32);
    assert!(suspended.suspend_time >= running.start_time);
    assert_eq!(
        suspended.pre_suspend_secs,
        u64::try_from(suspended.suspend_time - running.start_time).unwrap_or(0)
    );
    // RunTime stands still; the job's CPUs are free: its node is idle.
    assert_eq!(info(&c, id).run_time_secs, suspended.pre_suspend_secs);
    let node = squeue(&c, id, "%N");
    assert_eq!(
        run_ok(&c, "sinfo", &["-h", "-n", &node, "-o", "%t"]).trim(),
        "idle"
    );
    let shown = run_ok(&c, "scontrol", &["show", "job", &ids]);
    assert!(shown.contains("JobState=SUSPENDED "), "{shown}");
    assert!(!shown.contains("SuspendTime=None"), "{shown}");

    // A restart keeps it suspended, with its bookkeeping.
    c.restart_controller().expect("restart");
    c.wait_controller_up(WAIT).expect("controller up");
    let restored = info(&c, id);
    assert_eq!(
        (
            restored.state,
            restored.suspend_time,
            restored.pre_suspend_secs,
            restored.end_time
        ),
        (
            suspended.state,
            suspended.suspend_time,
            suspended.pre_suspend_secs,
            suspended.end_time
        )
    );
    assert_eq!(count(&counter), Some(held));

    assert_eq!(run_ok(&c, "scontrol", &["resume", &ids]), "");
    advances(&c, &counter, held);
    assert_eq!(squeue(&c, id, "%t"), "R");
    let resumed = info(&c, id);
    assert_eq!(resumed.state, JobState::Running as i32);
    // The end moved by exactly the time suspended.
    let suspended_secs = resumed.suspend_time - suspended.suspend_time;
    assert!(
        suspended_secs >= WINDOW.as_secs() as i64,
        "{suspended_secs}"
    );
    assert_eq!(resumed.end_time, running.end_time + suspended_secs);

    // Cancelled while suspended, it ends without waiting out KillWait (30 s):
    // the kill signal reaches stopped processes.
    assert_eq!(run_ok(&c, "scontrol", &["suspend", &ids]), "");
    stops(&c, &counter);
    run_ok(&c, "scancel", &[&ids]);
    let state = c
        .wait_job_finished(id, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(state, JobState::Cancelled);
}
