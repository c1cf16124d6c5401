//! A primary and a backup slurmctld on one host ([`HaPair`]), and the
//! failover figures measured on them ([`measure`]).
//!
//! Both controllers run the real binary with one slurm.conf listing
//! `SlurmctldHost=ha-a(127.0.0.1)` and `SlurmctldHost=ha-b(127.0.0.2)`;
//! each learns which one it is from `SLURMCTLD_HOSTNAME`, since on one host
//! the host name cannot tell them apart. They share StateSaveLocation.
//! Clients are the commands' own [`Controller`], which tries the
//! controllers in order and waits out a takeover.
//!
//! Figures:
//! - *takeover*: from the SIGKILL of the primary, under a steady stream of
//!   submissions, to the first submission the backup acknowledges (the
//!   SlurmctldTimeout the backup must wait is most of it);
//! - *durable submissions per second* with the backup configured and in
//!   standby (each acknowledged only once journaled and fsynced);
//! - *failback*: from the primary's restart to it being in control again;
//! - and the check that matters most: every acknowledged job is still
//!   there after each change of hands.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use slurm_client_tools::client::{
    current_gid, current_uid, short_hostname, ClientConfig, Controller, ControllerAddr,
};
use slurm_proto::v1::{
    GetJobsRequest, JobDescription, PingReply, PingRequest, ShutdownRequest, ShutdownScope,
    SubmitJobRequest, TakeoverRequest,
};

use crate::cluster_dir::{ClusterDir, ClusterSpec};
use crate::process::ChildGuard;
use crate::wait::wait_until;

/// SlurmctldHost names of the pair, primary first.
pub const HOST_NAMES: [&str; 2] = ["ha-a", "ha-b"];
/// Their loopback addresses.
pub const HOST_ADDRS: [&str; 2] = ["127.0.0.1", "127.0.0.2"];

/// The slurm.conf of `dir` with the single controller line replaced by the
/// pair and the timeouts added.
pub fn pair_conf(text: &str, slurmctld_timeout_s: u32, message_timeout_s: u32) -> String {
    let hosts = format!(
        "SlurmctldHost={}({})\nSlurmctldHost={}({})",
        HOST_NAMES[0], HOST_ADDRS[0], HOST_NAMES[1], HOST_ADDRS[1]
    );
    let mut out: String = text
        .lines()
        .map(|l| {
            if l.starts_with("SlurmctldHost=") {
                hosts.clone()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    out.push_str(&format!(
        "\nSlurmctldTimeout={slurmctld_timeout_s}\nMessageTimeout={message_timeout_s}\n"
    ));
    out
}

/// A job that stays pending (held), so the figures measure the controller
/// alone.
pub fn held_job(work_dir: &Path) -> JobDescription {
    JobDescription {
        user_id: current_uid(),
        group_id: current_gid(),
        user_name: std::env::var("USER").unwrap_or_else(|_| "root".into()),
        submit_host: short_hostname(),
        script: "#!/bin/sh\ntrue\n".to_string(),
        environment: vec!["PATH=/usr/bin:/bin".to_string()],
        work_dir: work_dir.display().to_string(),
        name: "ha".to_string(),
        hold: true,
        ..JobDescription::default()
    }
}

/// Two controllers sharing one state directory.
#[derive(Debug)]
pub struct HaPair {
    pub dir: ClusterDir,
    pub rt: tokio::runtime::Runtime,
    bin: PathBuf,
    children: [Option<ChildGuard>; 2],
    config: ClientConfig,
    starts: [usize; 2],
}

impl HaPair {
    /// Writes the cluster (nodes as in `spec`, no slurmd started) with the
    /// pair as controllers; starts nothing. `bin` is the slurmctld binary.
    pub fn create(
        bin: &Path,
        spec: ClusterSpec,
        slurmctld_timeout_s: u32,
        message_timeout_s: u32,
    ) -> Result<HaPair> {
        let dir = ClusterDir::create(spec)?;
        let text = std::fs::read_to_string(dir.conf_path())
            .with_context(|| format!("cannot read {}", dir.conf_path().display()))?;
        std::fs::write(
            dir.conf_path(),
            pair_conf(&text, slurmctld_timeout_s, message_timeout_s),
        )
        .with_context(|| format!("cannot write {}", dir.conf_path().display()))?;
        let config = ClientConfig::load_path(&dir.conf_path())
            .with_context(|| format!("cannot load {}", dir.conf_path().display()))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start a runtime")?;
        Ok(HaPair {
            dir,
            rt,
            bin: bin.to_path_buf(),
            children: [None, None],
            config,
            starts: [0, 0],
        })
    }

    pub fn log_path(&self, i: usize) -> PathBuf {
        self.dir.log_dir().join(format!(
            "slurmctld.{}.{}.log",
            HOST_NAMES[i], self.starts[i]
        ))
    }

    /// The log of the last start of controller `i`.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.log_path(i)).unwrap_or_default()
    }

    /// Starts controller `i` (0 primary, 1 backup) and waits until it
    /// answers Ping (in any role).
    pub fn start(&mut self, i: usize) -> Result<()> {
        self.starts[i] += 1;
        let log = self.log_path(i);
        let child = ChildGuard::spawn(
            HOST_NAMES[i],
            Command::new(&self.bin)
                .arg("-D")
                .arg("-f")
                .arg(self.dir.conf_path())
                .arg("-L")
                .arg(&log)
                .env("SLURMCTLD_HOSTNAME", HOST_NAMES[i])
                .env("SLURM_CONF", self.dir.conf_path()),
        )?;
        self.children[i] = Some(child);
        let r = wait_until(
            &format!("{} to answer ping", HOST_NAMES[i]),
            Duration::from_secs(60),
            || {
                if let Some(c) = self.children[i].as_mut() {
                    if let Ok(Some(status)) = c.try_status() {
                        return Some(Err(anyhow::anyhow!(
                            "{} exited with {status}: {}",
                            HOST_NAMES[i],
                            self.log(i)
                        )));
                    }
                }
                self.ping(i).map(|_| Ok(()))
            },
        );
        r.map_err(anyhow::Error::from).and_then(|r| r)
    }

    /// SIGKILLs controller `i`.
    pub fn kill(&mut self, i: usize) -> Result<()> {
        if let Some(mut c) = self.children[i].take() {
            c.kill()?;
        }
        Ok(())
    }

    /// `scontrol shutdown` sent to controller `i`.
    pub fn shutdown(&self, i: usize) -> Result<()> {
        let addr = self.addr(i)?;
        let c = self.client()?;
        self.rt
            .block_on(c.call_one(&addr, |mut cl| async move {
                cl.shutdown(ShutdownRequest {
                    scope: ShutdownScope::Controller as i32,
                })
                .await
            }))
            .map_err(|e| anyhow::anyhow!("shutdown refused: {e} {}", e.detail))?;
        Ok(())
    }

    /// Waits until controller `i` has exited; its exit status.
    pub fn wait_exit(&mut self, i: usize, timeout: Duration) -> Result<std::process::ExitStatus> {
        let name = HOST_NAMES[i];
        let child = self.children[i].as_mut().context("not started")?;
        let status = wait_until(&format!("{name} to exit"), timeout, || {
            child.try_status().ok().flatten()
        })?;
        self.children[i] = None;
        Ok(status)
    }

    /// Stops controller `i` with SIGTERM.
    pub fn stop(&mut self, i: usize) -> Result<()> {
        if let Some(mut c) = self.children[i].take() {
            c.terminate(Duration::from_secs(20))?;
        }
        Ok(())
    }

    fn addr(&self, i: usize) -> Result<ControllerAddr> {
        self.config
            .controllers()
            .get(i)
            .cloned()
            .context("no such controller")
    }

    /// A client as the commands make it (controllers in order, standby
    /// waits).
    pub fn client(&self) -> Result<Controller> {
        Controller::new(&self.config).context("cannot set up a controller client")
    }

    /// Controller `i`'s Ping answer; `None` when it does not answer.
    pub fn ping(&self, i: usize) -> Option<PingReply> {
        let addr = self.addr(i).ok()?;
        let c = self.client().ok()?;
        self.rt
            .block_on(c.call_one(&addr, |mut cl| async move { cl.ping(PingRequest {}).await }))
            .ok()
    }

    /// The controllers whose Ping says they are in control.
    pub fn in_control(&self) -> Vec<usize> {
        (0..2)
            .filter(|&i| self.ping(i).is_some_and(|p| p.in_control))
            .collect()
    }

    /// Waits until controller `i`, and only it, is in control; returns how
    /// long that took.
    pub fn wait_in_control(&self, i: usize, timeout: Duration) -> Result<Duration> {
        let began = Instant::now();
        wait_until(
            &format!("{} alone in control", HOST_NAMES[i]),
            timeout,
            || (self.in_control() == vec![i]).then_some(()),
        )
        .with_context(|| format!("logs:\n{}\n---\n{}", self.log(0), self.log(1)))?;
        Ok(began.elapsed())
    }

    /// Asks controller `i` to take control (`scontrol takeover`).
    pub fn takeover(&self, i: usize) -> Result<()> {
        let addr = self.addr(i)?;
        let c = self.client()?;
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        self.rt
            .block_on(c.call_one(&addr, |mut cl| async move {
                cl.takeover(TakeoverRequest {
                    backup_index: Some(index),
                })
                .await
            }))
            .map_err(|e| anyhow::anyhow!("takeover refused: {e} {}", e.detail))?;
        Ok(())
    }

    /// Submits one held job through whichever controller is in charge.
    pub fn submit(&self) -> Result<u32> {
        let mut c = self.client()?;
        let job = held_job(self.dir.root());
        self.rt
            .block_on(c.call(|mut cl| {
                let job = job.clone();
                async move { cl.submit_job(SubmitJobRequest { job: Some(job) }).await }
            }))
            .map(|r| r.job_id)
            .map_err(|e| anyhow::anyhow!("submission failed: {e} {}", e.detail))
    }

    /// Every job id the controller in charge knows.
    pub fn job_ids(&self) -> Result<BTreeSet<u32>> {
        let mut c = self.client()?;
        let reply = self
            .rt
            .block_on(c.call(|mut cl| async move { cl.get_jobs(GetJobsRequest::default()).await }))
            .map_err(|e| anyhow::anyhow!("cannot list jobs: {e} {}", e.detail))?;
        Ok(reply.jobs.iter().map(|j| j.job_id).collect())
    }

    /// Durable submissions through controller `i` as the single-controller
    /// API figure measures them: one client connection, `in_flight`
    /// requests outstanding at once, `n` in all. Returns the acknowledged
    /// ids and the time from the first request to the last answer.
    pub fn submit_burst(
        &self,
        i: usize,
        n: usize,
        in_flight: usize,
    ) -> Result<(Vec<u32>, Duration)> {
        let addr = self.addr(i)?;
        let ctl = self.client()?;
        let job = held_job(self.dir.root());
        self.rt.block_on(async move {
            let client = ctl
                .connect_to(&addr)
                .await
                .map_err(|e| anyhow::anyhow!("connect: {e} {}", e.detail))?;
            crate::bench::submit_concurrently(client, job, n, in_flight).await
        })
    }

    /// Runs `submitters` clients submitting held jobs without pause until
    /// `stop` is set; returns the handle of the load.
    pub fn start_load(&self, submitters: usize) -> Load {
        let load = Load {
            acked: Arc::new(Mutex::new(Vec::new())),
            errors: Arc::new(AtomicUsize::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            tasks: Vec::new(),
        };
        let mut tasks = Vec::new();
        for _ in 0..submitters {
            let Ok(mut c) = self.client() else {
                load.errors.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let job = held_job(self.dir.root());
            let acked = Arc::clone(&load.acked);
            let errors = Arc::clone(&load.errors);
            let stop = Arc::clone(&load.stop);
            tasks.push(self.rt.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let r = c
                        .call(|mut cl| {
                            let job = job.clone();
                            async move { cl.submit_job(SubmitJobRequest { job: Some(job) }).await }
                        })
                        .await;
                    match r {
                        Ok(reply) => {
                            if let Ok(mut a) = acked.lock() {
                                a.push(Ack {
                                    job_id: reply.job_id,
                                    sent,
                                    acked: Instant::now(),
                                });
                            }
                        }
                        // In flight when the primary died (outcome unknown),
                        // or no controller took over in time.
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
        Load { tasks, ..load }
    }
}

/// One acknowledged submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub job_id: u32,
    /// When the client sent it (the first try).
    pub sent: Instant,
    /// When the acknowledgement arrived.
    pub acked: Instant,
}

/// Submissions running in the background.
#[derive(Debug)]
pub struct Load {
    acked: Arc<Mutex<Vec<Ack>>>,
    errors: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// Acknowledged submissions so far.
    pub fn acked(&self) -> Vec<Ack> {
        self.acked.lock().map(|a| a.clone()).unwrap_or_default()
    }

    pub fn errors(&self) -> usize {
        self.errors.load(Ordering::Relaxed)
    }

    /// Stops the submitters and waits for them.
    pub fn stop(self, rt: &tokio::runtime::Runtime) -> (Vec<Ack>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = rt.block_on(t);
        }
        let acked = self.acked.lock().map(|a| a.clone()).unwrap_or_default();
        (acked, self.errors.load(Ordering::Relaxed))
    }
}

/// When the first submission sent after `at` was acknowledged.
pub fn first_ack_sent_after(acked: &[Ack], at: Instant) -> Option<Instant> {
    acked.iter().filter(|a| a.sent > at).map(|a| a.acked).min()
}

/// Sizes of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaSizes {
    pub slurmctld_timeout_s: u32,
    pub message_timeout_s: u32,
    /// Concurrent clients.
    pub submitters: usize,
    /// Jobs for the throughput figure.
    pub throughput_jobs: usize,
    /// Submissions in flight at once for the throughput figure, over one
    /// connection, as the single-controller API figure measures.
    pub throughput_in_flight: usize,
    /// Acknowledged submissions before the kill.
    pub before_kill: usize,
    /// Acknowledged submissions by the backup before the load stops.
    pub after_kill: usize,
}

impl Default for HaSizes {
    fn default() -> Self {
        HaSizes {
            slurmctld_timeout_s: 5,
            message_timeout_s: 2,
            submitters: 8,
            throughput_jobs: 20_000,
            throughput_in_flight: 256,
            before_kill: 200,
            after_kill: 200,
        }
    }
}

/// What [`measure`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct HaFigures {
    /// SIGKILL of the primary to the first submission the backup
    /// acknowledged.
    pub takeover: Duration,
    /// Acknowledged submissions per second with the backup in standby.
    pub durable_submissions_per_s: f64,
    /// Restart of the primary to it alone being in control.
    pub failback: Duration,
    pub acked_before_kill: usize,
    pub acked_after_kill: usize,
    /// Acknowledged jobs missing afterwards (must be 0).
    pub lost: usize,
    /// Calls that failed during the takeover (the client gave up).
    pub failed_calls: usize,
}

/// Measures takeover, throughput and failback on a new pair (`bin`: the
/// slurmctld binary).
pub fn measure(bin: &Path, sizes: &HaSizes) -> Result<HaFigures> {
    let mut pair = HaPair::create(
        bin,
        ClusterSpec {
            nodes: 1,
            ..ClusterSpec::default()
        },
        sizes.slurmctld_timeout_s,
        sizes.message_timeout_s,
    )?;
    // A real slurmd for the one node: a controller proves it is not the
    // one cut off by reaching a node, and a returning primary asks for
    // control back only then.
    let _slurmd = ChildGuard::spawn(
        "slurmd.n1",
        Command::new(bin.with_file_name("slurmd"))
            .args(["-D", "-N", "n1", "-f"])
            .arg(pair.dir.conf_path())
            .env("SLURM_CONF", pair.dir.conf_path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    )?;
    pair.start(0)?;
    pair.start(1)?;
    pair.wait_in_control(0, Duration::from_secs(30))?;

    // Durable throughput, backup in standby.
    let (ids, took) = pair.submit_burst(0, sizes.throughput_jobs, sizes.throughput_in_flight)?;
    let throughput = ids.len() as f64 / took.as_secs_f64().max(1e-9);
    let mut all: BTreeSet<u32> = ids.into_iter().collect();

    // Takeover under load.
    let load = pair.start_load(sizes.submitters);
    wait_until(
        "submissions before the kill",
        Duration::from_secs(120),
        || (load.acked().len() >= sizes.before_kill).then_some(()),
    )?;
    let killed_at = Instant::now();
    pair.kill(0)?;
    let timeout = Duration::from_secs(u64::from(sizes.slurmctld_timeout_s) * 4 + 60);
    // Only a submission sent after the kill is surely answered by the
    // backup.
    let first_after = wait_until("the backup to acknowledge a submission", timeout, || {
        first_ack_sent_after(&load.acked(), killed_at)
    })
    .with_context(|| format!("backup log:\n{}", pair.log(1)))?;
    let acked_before = load.acked().iter().filter(|a| a.sent <= killed_at).count();
    wait_until(
        "submissions after the kill",
        Duration::from_secs(120),
        || {
            (load.acked().iter().filter(|a| a.sent > killed_at).count() >= sizes.after_kill)
                .then_some(())
        },
    )?;
    let (acked, failed) = load.stop(&pair.rt);
    let acked_after = acked.iter().filter(|a| a.sent > killed_at).count();
    all.extend(acked.iter().map(|a| a.job_id));
    let known = pair.job_ids()?;
    let mut lost = all.difference(&known).count();

    // Failback: the primary returns and takes control back.
    let restarted = Instant::now();
    pair.start(0)?;
    pair.wait_in_control(0, Duration::from_secs(60))?;
    let failback = restarted.elapsed();
    let known = pair.job_ids()?;
    lost = lost.max(all.difference(&known).count());
    let _ = pair.stop(0);
    let _ = pair.stop(1);
    Ok(HaFigures {
        takeover: first_after.saturating_duration_since(killed_at),
        durable_submissions_per_s: throughput,
        failback,
        acked_before_kill: acked_before,
        acked_after_kill: acked_after,
        lost,
        failed_calls: failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_replaces_the_single_controller() {
        let text = "ClusterName=c\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=7\n";
        let out = pair_conf(text, 5, 2);
        assert_eq!(
            out,
            "ClusterName=c\nSlurmctldHost=ha-a(127.0.0.1)\nSlurmctldHost=ha-b(127.0.0.2)\n\
             SlurmctldPort=7\nSlurmctldTimeout=5\nMessageTimeout=2\n"
        );
        let parsed = slurm_common::conf::SlurmConf::parse(&out, "slurm.conf").expect("parse");
        assert_eq!(parsed.conf.slurmctld_hosts.len(), 2);
        assert_eq!(parsed.conf.slurmctld_timeout, Duration::from_secs(5));
    }
}
