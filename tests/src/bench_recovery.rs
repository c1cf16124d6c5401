//! Controller recovery figures on the real binaries: how long slurmctld
//! takes from its start to answering Ping when its state holds many jobs,
//! after a clean shutdown (it writes a snapshot: recovery reads that alone)
//! and after SIGKILL (the snapshot and a journal tail).
//!
//! The state is made the way users make it: submissions through the API
//! with many requests in flight, on a [`LocalCluster`] whose nodes run a
//! few jobs, so the mix holds pending (`--begin` tomorrow), held, running,
//! completed and cancelled jobs. The recovery time the controller itself
//! measured is read from its log (`state recovered ... elapsed_ms=`).

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use slurm_client_tools::client::{current_gid, current_uid, short_hostname, ControllerClient};
use slurm_proto::v1::{CancelJobRequest, JobDescription, JobFilter};

use crate::local_cluster::{controller_up, job_states, JobStatus};
use crate::process::send_signal;
use crate::{wait_until, LocalCluster};

/// Sizes of one measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoverySizes {
    /// Jobs in the state before the clean restart.
    pub jobs: usize,
    /// Submissions in flight at once.
    pub in_flight: usize,
    /// Held jobs submitted after the clean restart, so that the SIGKILL
    /// restart replays a journal tail of this many events.
    pub tail: usize,
}

impl RecoverySizes {
    /// The size the target (1 s) is stated for.
    pub fn full() -> Self {
        Self {
            jobs: 100_000,
            in_flight: 256,
            tail: 10_000,
        }
    }

    /// A reduced run.
    pub fn quick() -> Self {
        Self {
            jobs: 10_000,
            in_flight: 64,
            tail: 1_000,
        }
    }
}

/// What one measurement found. `Display` writes it as one JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryFigures {
    /// Jobs in the state at the clean restart, and how many in each state.
    pub jobs: usize,
    pub mix: Vec<(String, usize)>,
    /// Seconds the submissions took.
    pub build_s: f64,
    /// Size of the snapshot written at the clean shutdown.
    pub snapshot_bytes: u64,
    /// Start to first answered Ping after a clean shutdown.
    pub clean_restart_s: f64,
    /// Recovery as slurmctld logged it after the clean shutdown.
    pub clean_recovery_ms: Option<u64>,
    /// Events replayed after the snapshot at the SIGKILL restart.
    pub tail_events: Option<u64>,
    /// Start to first answered Ping after SIGKILL.
    pub crash_restart_s: f64,
    pub crash_recovery_ms: Option<u64>,
    /// The target for `clean_restart_s` and `crash_restart_s`.
    pub target_s: f64,
}

impl RecoveryFigures {
    /// Both restarts within the target.
    pub fn met(&self) -> bool {
        self.clean_restart_s <= self.target_s && self.crash_restart_s <= self.target_s
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "null".to_string(), |v| v.to_string())
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4}")
    } else {
        "null".to_string()
    }
}

impl fmt::Display for RecoveryFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mix: Vec<String> = self
            .mix
            .iter()
            .map(|(k, v)| format!("{:?}: {v}", k.replace(['"', '\\'], "")))
            .collect();
        write!(
            f,
            "{{\"jobs\": {}, \"mix\": {{{}}}, \"build_s\": {}, \"snapshot_bytes\": {}, \
             \"clean_restart_s\": {}, \"clean_recovery_ms\": {}, \"tail_events\": {}, \
             \"crash_restart_s\": {}, \"crash_recovery_ms\": {}, \"target_s\": {}, \"met\": {}}}",
            self.jobs,
            mix.join(", "),
            num(self.build_s),
            self.snapshot_bytes,
            num(self.clean_restart_s),
            opt(self.clean_recovery_ms),
            opt(self.tail_events),
            num(self.crash_restart_s),
            opt(self.crash_recovery_ms),
            num(self.target_s),
            self.met()
        )
    }
}

/// `text` without ANSI escape sequences (a daemon logging to a terminal
/// colours its fields).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte (0x40..=0x7e).
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// What slurmctld logged in `log_dir` (its log file and its captured
/// output), escapes removed.
pub fn controller_log(log_dir: &Path) -> String {
    let mut text = String::new();
    for name in ["slurmctld.log", "slurmctld.out"] {
        text.push_str(&std::fs::read_to_string(log_dir.join(name)).unwrap_or_default());
    }
    strip_ansi(&text)
}

/// The value of `key=<digits>` in the last line of `log` that contains
/// `marker`.
pub fn last_logged(log: &str, marker: &str, key: &str) -> Option<u64> {
    let line = log.lines().rev().find(|l| l.contains(marker))?;
    let pat = format!("{key}=");
    let at = line.find(&pat)? + pat.len();
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn description(workdir: &Path, script: &str) -> JobDescription {
    JobDescription {
        user_id: current_uid(),
        group_id: current_gid(),
        user_name: std::env::var("USER").unwrap_or_else(|_| "root".into()),
        submit_host: short_hostname(),
        script: format!("#!/bin/sh\n{script}\n"),
        environment: (0..20)
            .map(|i| format!("BENCH_VAR_{i}=value_{i}"))
            .collect(),
        work_dir: workdir.display().to_string(),
        stdout_path: "/dev/null".into(),
        name: "recovery".to_string(),
        ..JobDescription::default()
    }
}

/// A runtime and one connection to the controller.
struct Api {
    rt: tokio::runtime::Runtime,
    client: ControllerClient,
}

impl Api {
    fn new(cluster: &LocalCluster) -> Result<Self> {
        let ctl = cluster.client()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("tokio runtime")?;
        let addr = ctl
            .controllers()
            .first()
            .cloned()
            .context("no controller configured")?;
        let client = rt
            .block_on(ctl.connect_to(&addr))
            .map_err(|e| anyhow::anyhow!("connect: {e:?}"))?;
        Ok(Self { rt, client })
    }

    /// Submits `n` copies of `job` with `in_flight` requests outstanding.
    fn submit(&self, job: &JobDescription, n: usize, in_flight: usize) -> Result<Vec<u32>> {
        let client = self.client.clone();
        let job = job.clone();
        self.rt
            .block_on(crate::bench::submit_concurrently(client, job, n, in_flight))
            .map(|(ids, _)| ids)
    }

    fn cancel(&self, ids: &[u32]) -> Result<()> {
        for chunk in ids.chunks(1_000) {
            let mut client = self.client.clone();
            self.rt
                .block_on(client.cancel_job(CancelJobRequest {
                    filter: Some(JobFilter {
                        job_ids: chunk.to_vec(),
                        ..JobFilter::default()
                    }),
                    ..CancelJobRequest::default()
                }))
                .map_err(|s| anyhow::anyhow!("CancelJob: {}", s.message()))?;
        }
        Ok(())
    }
}

/// Whether process `pid` has exited (gone, or a zombie not yet reaped).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|s| s == "Z" || s == "X"),
    }
}

/// Starts the stopped controller and measures the time to its first
/// answered Ping (polled tightly: the figure is a fraction of a second).
fn timed_start(cluster: &mut LocalCluster) -> Result<f64> {
    let conf = cluster.conf_path();
    let start = Instant::now();
    cluster.spawn_controller()?;
    loop {
        if controller_up(&conf) {
            let t = start.elapsed().as_secs_f64();
            cluster.wait_controller_up(Duration::from_secs(5))?;
            return Ok(t);
        }
        if start.elapsed() > Duration::from_secs(120) {
            bail!("slurmctld did not answer within 120 s");
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Builds the state, then measures a clean restart and a SIGKILL restart.
/// `progress` gets a line before each step.
pub fn measure_recovery(
    sizes: &RecoverySizes,
    progress: &mut dyn FnMut(&str),
) -> Result<RecoveryFigures> {
    progress("recovery: starting a cluster");
    // Room for every job of the run: the ones cancelled or ended stay in
    // memory (MinJobAge) and count against MaxJobCount until purged.
    let spec = crate::cluster_dir::ClusterSpec {
        extra_lines: vec![format!(
            "MaxJobCount={}",
            sizes.jobs.saturating_add(sizes.tail).saturating_mul(2)
        )],
        ..crate::cluster_dir::ClusterSpec::default()
    };
    let mut cluster = LocalCluster::start(spec)?;
    let workdir = cluster.dir().root().join("recovery");
    std::fs::create_dir_all(&workdir).context("work dir")?;
    let api = Api::new(&cluster)?;
    let n = sizes.jobs;
    let in_flight = sizes.in_flight;

    progress(&format!("recovery: submitting {n} jobs"));
    let built = Instant::now();
    // Completed: short jobs first, while the CPUs are free.
    let short = (n / 100).clamp(1, 200);
    let completed = api.submit(&description(&workdir, "true"), short, in_flight.min(16))?;
    let conf = cluster.conf_path();
    cluster.wait_for(
        "the short jobs to complete",
        Duration::from_secs(120),
        |_| {
            let states = job_states(&conf, &completed)?;
            (states.len() == completed.len() && states.iter().all(JobStatus::done)).then_some(())
        },
    )?;
    // Running: one per CPU, for the rest of the run.
    let cpus = cluster.dir().spec.nodes * cluster.dir().spec.cpus_per_node as usize;
    api.submit(&description(&workdir, "sleep 3600"), cpus, cpus)?;
    let rest = n.saturating_sub(short + cpus);
    let mut pending = description(&workdir, "true");
    pending.begin_time = slurm_common::auth::unix_now() + 86_400;
    api.submit(&pending, rest * 4 / 10, in_flight)?;
    let mut held = description(&workdir, "true");
    held.hold = true;
    api.submit(&held, rest * 3 / 10, in_flight)?;
    let doomed = api.submit(&held, rest - rest * 4 / 10 - rest * 3 / 10, in_flight)?;
    api.cancel(&doomed)?;
    let build_s = built.elapsed().as_secs_f64();
    let states = job_states(&conf, &[]).context("GetJobs")?;
    let mut mix = std::collections::BTreeMap::new();
    for j in &states {
        *mix.entry(format!("{:?}", j.state)).or_insert(0usize) += 1;
    }
    let jobs = states.len();
    drop(api);

    // Clean shutdown: the controller writes a snapshot of everything.
    progress("recovery: clean restart");
    let pid = cluster.controller_pid().context("no controller process")?;
    send_signal(pid, libc::SIGTERM);
    wait_until(
        "slurmctld to exit after SIGTERM",
        Duration::from_secs(120),
        || exited(pid).then_some(()),
    )?;
    cluster.kill_controller()?;
    let snapshot_bytes = std::fs::metadata(cluster.dir().state_dir().join("snapshot"))
        .map(|m| m.len())
        .context("no snapshot after a clean shutdown")?;
    let log_dir = cluster.dir().log_dir();
    let clean_restart_s = timed_start(&mut cluster)?;
    let log = controller_log(&log_dir);
    let clean_recovery_ms = last_logged(&log, "state recovered", "elapsed_ms");

    // A journal tail, then SIGKILL.
    progress(&format!("recovery: {} more jobs, then SIGKILL", sizes.tail));
    let api = Api::new(&cluster)?;
    api.submit(&held, sizes.tail, in_flight)?;
    drop(api);
    let crash_restart_s = {
        cluster.kill_controller()?;
        timed_start(&mut cluster)?
    };
    let log = controller_log(&log_dir);
    let crash_recovery_ms = last_logged(&log, "state recovered", "elapsed_ms");
    let tail_events = last_logged(&log, "state recovered", "events");
    cluster.stop()?;
    Ok(RecoveryFigures {
        jobs,
        mix: mix.into_iter().collect(),
        build_s,
        snapshot_bytes,
        clean_restart_s,
        clean_recovery_ms,
        tail_events,
        crash_restart_s,
        crash_recovery_ms,
        target_s: 1.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_print_as_one_json_object() {
        let f = RecoveryFigures {
            jobs: 3,
            mix: vec![("Pending".into(), 2), ("Running".into(), 1)],
            build_s: 1.5,
            snapshot_bytes: 1000,
            clean_restart_s: 0.25,
            clean_recovery_ms: Some(120),
            tail_events: None,
            crash_restart_s: f64::NAN,
            crash_recovery_ms: None,
            target_s: 1.0,
        };
        let text = f.to_string();
        assert_eq!(
            text,
            "{\"jobs\": 3, \"mix\": {\"Pending\": 2, \"Running\": 1}, \"build_s\": 1.5000, \
             \"snapshot_bytes\": 1000, \"clean_restart_s\": 0.2500, \"clean_recovery_ms\": 120, \
             \"tail_events\": null, \"crash_restart_s\": null, \"crash_recovery_ms\": null, \
             \"target_s\": 1.0000, \"met\": false}"
        );
        assert!(!f.met());
    }

    #[test]
    fn escapes_are_removed() {
        let coloured = "\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m state recovered \u{1b}[3melapsed_ms\u{1b}[0m\u{1b}[2m=\u{1b}[0m251";
        let plain = strip_ansi(coloured);
        assert_eq!(plain, "2026  INFO state recovered elapsed_ms=251");
        assert_eq!(
            last_logged(&plain, "state recovered", "elapsed_ms"),
            Some(251)
        );
        assert_eq!(strip_ansi("a\u{1b}"), "a");
        assert_eq!(strip_ansi("é\u{1b}[1;31"), "é");
    }

    #[test]
    fn logged_values_are_read_from_the_last_matching_line() {
        let log = "x state recovered events=5 elapsed_ms=10\n\
                   y state recovered snapshot_generation=3 events=12 jobs=4 elapsed_ms=250\n\
                   z snapshot written elapsed_ms=7\n";
        assert_eq!(last_logged(log, "state recovered", "elapsed_ms"), Some(250));
        assert_eq!(last_logged(log, "state recovered", "events"), Some(12));
        assert_eq!(last_logged(log, "nothing", "events"), None);
        assert_eq!(
            last_logged("state recovered elapsed_ms=", "state", "elapsed_ms"),
            None
        );
        assert_eq!(
            last_logged(
                "state recovered elapsed_ms=99999999999999999999999",
                "state",
                "elapsed_ms"
            ),
            None
        );
    }

    /// `cargo test -p slurm-testkit --lib bench_recovery -- --ignored --nocapture`
    /// (binaries built first; `--release` for figures worth comparing).
    #[test]
    #[ignore = "starts a cluster and submits thousands of jobs"]
    fn quick_measurement() {
        let f = measure_recovery(&RecoverySizes::quick(), &mut |s| eprintln!("{s}"))
            .expect("measurement");
        println!("{f}");
        assert!(f.jobs >= RecoverySizes::quick().jobs);
        assert!(f.snapshot_bytes > 0);
        assert!(f.clean_recovery_ms.is_some() && f.crash_recovery_ms.is_some());
    }

    #[test]
    fn quick_is_smaller_than_full() {
        let (q, f) = (RecoverySizes::quick(), RecoverySizes::full());
        assert!(q.jobs < f.jobs && q.tail < f.tail);
        assert_eq!(f.jobs, 100_000);
    }
}
