//! A controller killed with SIGKILL while jobs are being submitted loses no
//! job that sbatch reported as submitted: the reply is sent only after the
//! journal is on disk.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use slurm_testkit::local_cluster::{job_states, parse_submitted};
use slurm_testkit::{wait_until, LocalCluster};

const SUBMITTERS: usize = 4;

#[test]
fn sigkill_of_slurmctld_under_load_loses_no_acknowledged_job() {
    let mut c =
        LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster did not start: {e:#}"));
    let acked: Arc<Mutex<Vec<u32>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..SUBMITTERS {
        let mut cmd = c.command("sbatch").expect("sbatch");
        // Held jobs stay queued: the test is about the queue, not the nodes.
        cmd.args(["--hold", "--parsable", "--wrap", "true"]);
        let (acked, stop) = (acked.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // A failed submission (controller down) was not acknowledged.
                let Ok(o) = cmd.output() else { continue };
                if o.status.success() {
                    if let Some(id) = parse_submitted(&String::from_utf8_lossy(&o.stdout)) {
                        acked.lock().unwrap_or_else(|e| e.into_inner()).push(id);
                    }
                }
            }
        }));
    }
    let count = || acked.lock().unwrap_or_else(|e| e.into_inner()).len();
    let under_load = wait_until(
        "100 acknowledged submissions",
        Duration::from_secs(30),
        || (count() >= 100).then_some(()),
    );
    if under_load.is_err() {
        stop.store(true, Ordering::Relaxed);
    }
    under_load.unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));

    c.kill_controller().expect("kill");
    let at_kill = count();
    c.start_controller().expect("restart");
    // Keep submitting against the restarted controller for a while.
    let more = wait_until(
        "submissions after the restart",
        Duration::from_secs(30),
        || (count() >= at_kill + 50).then_some(()),
    );
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("submitter");
    }
    more.unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));

    let acked = acked.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut unique = acked.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), acked.len(), "a job id was handed out twice");

    let known: std::collections::HashSet<u32> = job_states(&c.conf_path(), &[])
        .expect("GetJobs")
        .into_iter()
        .map(|j| j.id)
        .collect();
    let lost: Vec<u32> = acked
        .iter()
        .copied()
        .filter(|id| !known.contains(id))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged jobs lost: {lost:?}\n{}",
        c.logs()
    );

    // squeue agrees with the API.
    let o = c
        .run("squeue", &["-t", "all", "-h", "-o", "%i"])
        .expect("squeue");
    assert!(o.status.success(), "{o:?}");
    let listed: std::collections::HashSet<u32> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let missing: Vec<u32> = acked
        .iter()
        .copied()
        .filter(|id| !listed.contains(id))
        .collect();
    assert!(missing.is_empty(), "squeue misses {missing:?}");
}

/// `scontrol abort` stops the controller at once (without the shutdown
/// path that writes a snapshot); started again, it has every job it had
/// acknowledged.
#[test]
fn scontrol_abort_stops_the_controller_and_loses_nothing() {
    let mut c =
        LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster did not start: {e:#}"));
    let ids: Vec<u32> = (0..5)
        .map(|_| c.sbatch(&["--hold", "--wrap", "true"]).expect("sbatch"))
        .collect();
    let pid = c.controller_pid().expect("controller pid");
    let o = c.run("scontrol", &["abort"]).expect("scontrol abort");
    assert!(o.status.success(), "{o:?}");
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
    // Gone, or a zombie waiting for its parent (this test).
    let stopped = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        matches!(state, None | Some('Z' | 'X')).then_some(())
    };
    wait_until("slurmctld to abort", Duration::from_secs(10), stopped)
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    c.kill_controller().expect("reap");
    c.start_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}\n{}", c.logs()));
    let known: Vec<u32> = job_states(&c.conf_path(), &ids)
        .expect("GetJobs")
        .into_iter()
        .map(|j| j.id)
        .collect();
    for id in &ids {
        assert!(known.contains(id), "job {id} lost: {known:?}");
    }
}
