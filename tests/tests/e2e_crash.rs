//! Crash safety of the controller under load: 8 clients submit short jobs
//! and cancel some while jobs run and complete, and slurmctld is killed with
//! SIGKILL at random moments (50 times, seeded: the seed is printed, and
//! `CRASH_SEED=<n>` replays a run) and started again each time. Snapshots
//! are taken every few events (`SLURMCTLD_SNAPSHOT_EVERY`), so kills also
//! land while a snapshot is being written.
//!
//! After every restart: every job a client saw acknowledged exists, no id
//! was handed out twice, a job whose cancel was acknowledged is CANCELLED,
//! no job started twice (each job appends its id to a shared file when it
//! starts) and a COMPLETED one started exactly once. At the end, with the
//! clients stopped, every job finishes: COMPLETED (started once) or
//! CANCELLED (started at most once).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use slurm_client_tools::client::{current_gid, current_uid, ClientConfig, Controller};
use slurm_proto::v1::{CancelJobRequest, JobDescription, JobFilter, JobState, SubmitJobRequest};
use slurm_testkit::local_cluster::{job_states, JobStatus};
use slurm_testkit::{wait_until, LocalCluster};

const CLIENTS: usize = 8;
const KILLS: usize = 50;
/// Jobs acknowledged and not yet started or cancelled, at most: keeps the
/// queue short enough that the 8 CPUs of the cluster drain it quickly.
const MAX_OUTSTANDING: usize = 24;
/// Events between snapshots in the controller under test.
const SNAPSHOT_EVERY: &str = "20";
const WAIT: Duration = Duration::from_secs(60);
/// AuthInfo cred_expire of the cluster: how long a requeued job waits.
const REQUEUE_WAIT_SECS: u32 = 2;

/// SplitMix64: small, seeded, good enough to pick moments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What the clients and the killer share.
#[derive(Default)]
struct Book {
    /// Ids of acknowledged submissions, in order of acknowledgement.
    acked: Vec<u32>,
    /// Ids whose cancel was acknowledged as done.
    cancelled: BTreeSet<u32>,
    /// Bumped after every restart, so that a client whose call failed
    /// waits for the controller to be back rather than spinning.
    restarts: u64,
    /// Jobs started so far (lines of the runs file), as last counted.
    started: usize,
}

struct Shared {
    book: Mutex<Book>,
    changed: Condvar,
    stop: AtomicBool,
}

impl Shared {
    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks until `ready` holds (re-checked on every notification) or
    /// the test stops.
    fn wait_for(&self, mut ready: impl FnMut(&Book) -> bool) {
        let mut book = self.book();
        while !ready(&book) && !self.stop.load(Ordering::Relaxed) {
            book = self
                .changed
                .wait_timeout(book, Duration::from_millis(200))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// How many times each job id appears in the runs file.
fn starts(runs: &Path) -> BTreeMap<u32, usize> {
    let mut m = BTreeMap::new();
    for line in std::fs::read_to_string(runs).unwrap_or_default().lines() {
        if let Ok(id) = line.trim().parse::<u32>() {
            *m.entry(id).or_insert(0) += 1;
        }
    }
    m
}

fn client(conf: PathBuf, runs: PathBuf, workdir: PathBuf, shared: Arc<Shared>, seed: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = ClientConfig::load_path(&conf).expect("client config");
    let mut ctl = Controller::new(&config).expect("client");
    let mut rng = Rng(seed);
    let job = |short: bool| JobDescription {
        user_id: current_uid(),
        group_id: current_gid(),
        user_name: std::env::var("USER").unwrap_or_else(|_| "root".into()),
        script: format!(
            "#!/bin/sh\necho \"$SLURM_JOB_ID\" >> {}\n{}\n",
            runs.display(),
            if short { "true" } else { "sleep 0.1" }
        ),
        environment: vec!["PATH=/usr/bin:/bin".into()],
        work_dir: workdir.display().to_string(),
        stdout_path: "/dev/null".into(),
        name: "crash".into(),
        ..JobDescription::default()
    };
    while !shared.stop.load(Ordering::Relaxed) {
        let restarts = shared.book().restarts;
        let victim = {
            let book = shared.book();
            (!book.acked.is_empty() && rng.below(4) == 0)
                .then(|| book.acked[rng.below(book.acked.len() as u64) as usize])
        };
        let ok = if let Some(id) = victim {
            let reply = rt.block_on(ctl.call(|mut c| async move {
                c.cancel_job(CancelJobRequest {
                    filter: Some(JobFilter {
                        job_ids: vec![id],
                        ..JobFilter::default()
                    }),
                    ..CancelJobRequest::default()
                })
                .await
            }));
            match reply {
                Ok(r) => {
                    if r.results
                        .iter()
                        .any(|x| x.job_id == id && x.error_code == 0)
                    {
                        shared.book().cancelled.insert(id);
                    }
                    true
                }
                Err(_) => false,
            }
        } else {
            // Keep the queue short: wait for jobs to start.
            shared.wait_for(|b| b.acked.len() < b.started + b.cancelled.len() + MAX_OUTSTANDING);
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            let desc = job(rng.below(2) == 0);
            let reply = rt.block_on(ctl.call(|mut c| {
                let desc = desc.clone();
                async move { c.submit_job(SubmitJobRequest { job: Some(desc) }).await }
            }));
            match reply {
                Ok(r) => {
                    shared.book().acked.push(r.job_id);
                    true
                }
                Err(_) => false,
            }
        };
        if !ok {
            // The controller is down (or going down): wait for the restart.
            shared.wait_for(|b| b.restarts > restarts);
        }
    }
}

/// The checks after a restart; `Err` says what is wrong.
fn check(conf: &Path, runs: &Path, book: &Book, final_round: bool) -> Result<(), String> {
    let mut unique = book.acked.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != book.acked.len() {
        return Err("a job id was acknowledged twice".into());
    }
    let states: Vec<JobStatus> =
        job_states(conf, &[]).ok_or("the controller does not answer GetJobs")?;
    let by_id: BTreeMap<u32, JobStatus> = states.iter().map(|j| (j.id, *j)).collect();
    if by_id.len() != states.len() {
        return Err("GetJobs lists a job id twice".into());
    }
    let started = starts(runs);
    if let Some((id, n)) = started.iter().find(|(_, n)| **n > 1) {
        return Err(format!("job {id} started {n} times"));
    }
    for id in &book.acked {
        let Some(j) = by_id.get(id) else {
            return Err(format!("acknowledged job {id} is lost"));
        };
        let n = started.get(id).copied().unwrap_or(0);
        match j.state {
            JobState::Completed if n != 1 => {
                return Err(format!("job {id} is COMPLETED but started {n} times"))
            }
            JobState::Completed | JobState::Cancelled => {}
            JobState::Pending | JobState::Running if !final_round => {}
            other => return Err(format!("job {id} is {other:?} (started {n} times)")),
        }
        if book.cancelled.contains(id) && j.state != JobState::Cancelled {
            return Err(format!(
                "job {id} was cancelled (acknowledged) but is {:?}",
                j.state
            ));
        }
        if final_round && j.completing {
            return Err(format!("job {id} is still completing"));
        }
    }
    Ok(())
}

#[test]
fn fifty_sigkills_under_load_lose_nothing_and_run_nothing_twice() {
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("e2e_crash seed: {seed} (CRASH_SEED={seed} replays it)");
    // Set before any thread exists; the controller inherits it.
    std::env::set_var("SLURMCTLD_SNAPSHOT_EVERY", SNAPSHOT_EVERY);
    let began = Instant::now();
    // A launch lost with a killed controller is requeued, and a requeued
    // job waits AuthInfo's cred_expire (+1 s) before it may start again:
    // 120 s by default. A short one lets every job finish within WAIT.
    let spec = slurm_testkit::ClusterSpec {
        extra_lines: vec![format!("AuthInfo=cred_expire={REQUEUE_WAIT_SECS}")],
        ..Default::default()
    };
    let mut c =
        LocalCluster::start(spec).unwrap_or_else(|e| panic!("cluster did not start: {e:#}"));
    let conf = c.conf_path();
    let runs = c.dir().root().join("runs");
    let workdir = c.dir().root().join("work");
    std::fs::create_dir_all(&workdir).expect("work dir");
    let shared = Arc::new(Shared {
        book: Mutex::new(Book::default()),
        changed: Condvar::new(),
        stop: AtomicBool::new(false),
    });
    let mut rng = Rng(seed);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (conf, runs, workdir, shared) =
                (conf.clone(), runs.clone(), workdir.clone(), shared.clone());
            let seed = rng.next() ^ i as u64;
            std::thread::spawn(move || client(conf, runs, workdir, shared, seed))
        })
        .collect();
    let fail = |c: &LocalCluster, shared: &Shared, msg: String| -> ! {
        shared.stop.store(true, Ordering::Relaxed);
        shared.changed.notify_all();
        let (acked, started, cancelled) = {
            let b = shared.book();
            (b.acked.len(), b.started, b.cancelled.len())
        };
        let mut summary: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for j in job_states(&c.conf_path(), &[]).unwrap_or_default() {
            let key = format!("{:?}{}", j.state, if j.completing { "+CG" } else { "" });
            summary.entry(key).or_default().push(j.id);
        }
        panic!(
            "seed {seed}: {msg}\n{acked} acknowledged, {started} started, {cancelled} cancelled; jobs: {summary:?}\n{}",
            c.logs()
        );
    };
    // Counts starts and wakes clients waiting for room in the queue.
    let refresh = |shared: &Shared| {
        let n = starts(&runs).values().sum();
        let mut book = shared.book();
        book.started = n;
        drop(book);
        shared.changed.notify_all();
    };

    for kill in 0..KILLS {
        // A moment: after a few more acknowledgements or job starts (none:
        // right after the restart), or after a random fraction of a second,
        // whichever comes first (the queue may have drained, or be stuck).
        let k = rng.below(6) as usize;
        let within = Duration::from_millis(20 + rng.below(400));
        let (acks0, starts0) = {
            let b = shared.book();
            (b.acked.len(), b.started)
        };
        let _ = wait_until("a moment to kill", within, || {
            refresh(&shared);
            let b = shared.book();
            (b.acked.len() >= acks0 + k || b.started >= starts0 + k).then_some(())
        });
        c.kill_controller().expect("kill");
        if let Err(e) = c.start_controller() {
            fail(&c, &shared, format!("restart {kill}: {e:#}"));
        }
        {
            let mut b = shared.book();
            b.restarts += 1;
        }
        shared.changed.notify_all();
        let book = shared.book();
        let checked = check(&conf, &runs, &book, false);
        drop(book);
        if let Err(e) = checked {
            fail(&c, &shared, format!("after restart {}: {e}", kill + 1));
        }
    }

    shared.stop.store(true, Ordering::Relaxed);
    shared.changed.notify_all();
    for t in clients {
        t.join().expect("client thread");
    }
    let book = std::mem::take(&mut *shared.book());
    // Every job ends: running ones complete, queued ones start and complete.
    let ids = book.acked.clone();
    let finished = c.wait_for("every acknowledged job to finish", WAIT, |_| {
        let states = job_states(&conf, &ids)?;
        (states.len() == ids.len() && states.iter().all(JobStatus::done)).then_some(())
    });
    if let Err(e) = finished {
        let started = starts(&runs);
        let states = job_states(&conf, &ids).unwrap_or_default();
        let stuck: Vec<String> = states
            .iter()
            .filter(|j| !j.done())
            .map(|j| {
                let n = started.get(&j.id).copied().unwrap_or(0);
                let cg = if j.completing { "+COMPLETING" } else { "" };
                format!("{} {:?}{cg} (started on a node {n} times)", j.id, j.state)
            })
            .collect();
        let show = |cmd: &str, args: &[&str]| {
            c.run(cmd, args)
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_else(|e| format!("{cmd}: {e:#}"))
        };
        eprintln!(
            "{}{}",
            show("sinfo", &["-N", "-l"]),
            show("squeue", &["-t", "all", "-o", "%i %T %r %N"])
        );
        let never_started = states
            .iter()
            .filter(|j| {
                !started.contains_key(&j.id) && (j.state == JobState::Running || j.completing)
            })
            .count();
        panic!(
            "seed {seed}: {e:#}\nnot finished: {stuck:?}\n{never_started} of them hold \
             nodes (RUNNING, or COMPLETING after a cancel) but never started on a node: their \
             launch was lost with a killed controller (journaled as started, the LaunchBatch \
             never reached slurmd), and nothing reconciles running jobs with their batch host \
             after a restart; the pending ones wait for those nodes"
        );
    }
    if let Err(e) = check(&conf, &runs, &book, true) {
        panic!("seed {seed}: at the end: {e}\n{}", c.logs());
    }
    let completed = job_states(&conf, &ids)
        .unwrap_or_default()
        .iter()
        .filter(|j| j.state == JobState::Completed)
        .count();
    let log = slurm_testkit::bench_recovery::controller_log(&c.dir().log_dir());
    let snapshots = log.matches("snapshot written").count();
    println!(
        "{KILLS} kills, {} jobs acknowledged ({completed} completed, {} cancels acknowledged), {snapshots} snapshots, {:.1} s",
        ids.len(),
        book.cancelled.len(),
        began.elapsed().as_secs_f64()
    );
    assert!(completed > 0, "no job completed");
    // Several snapshots, so that kills also landed around them; how many
    // depends on how fast the clients got through (a loaded machine
    // acknowledges fewer jobs in the same number of kills).
    assert!(
        snapshots >= 2,
        "only {snapshots} snapshots were written: {SNAPSHOT_EVERY} events apart expected"
    );
    c.stop().expect("stop");
}
