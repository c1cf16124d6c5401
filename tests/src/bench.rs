//! `slurm-bench`: the performance figures the project promises, measured on
//! a [`LocalCluster`] of the real binaries and printed next to their targets.
//!
//! Each figure is measured on its own terms: command throughput runs the
//! real `sbatch` processes (their start-up cost is part of what users
//! feel); API throughput keeps many gRPC requests in flight on one
//! connection; queue sizes are reached through the API with held jobs, so
//! they stay queued. A figure that cannot be measured (a daemon refuses, a
//! wait times out) is reported with its error and the rest go on.
//!
//! Waiting here polls tightly on purpose: the figures are tens of
//! milliseconds, and a coarse poll would be measured instead of the system.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use slurm_client_tools::client::{current_gid, current_uid, short_hostname, ControllerClient};
use slurm_proto::v1::{
    GetJobsRequest, JobDescription, JobFilter, JobState, PingRequest, SubmitJobRequest,
};

use crate::cluster_dir::ClusterSpec;
use crate::local_cluster::{all_job_states, controller_up, parse_submitted, JobStatus};
use crate::LocalCluster;

/// Sizes of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    pub sequential: usize,
    pub parallel_submitters: usize,
    pub parallel_jobs: usize,
    pub api_jobs: usize,
    pub api_in_flight: usize,
    pub small_queue: usize,
    pub big_queue: usize,
    pub latency_samples: usize,
    pub trivial_jobs: usize,
}

impl Sizes {
    /// The sizes the targets are stated for.
    pub fn full() -> Self {
        Self {
            sequential: 1_000,
            parallel_submitters: 8,
            parallel_jobs: 2_000,
            api_jobs: 20_000,
            api_in_flight: 256,
            small_queue: 1_000,
            big_queue: 10_000,
            latency_samples: 20,
            trivial_jobs: 500,
        }
    }

    /// A reduced run (a minute or less on a laptop).
    pub fn quick() -> Self {
        Self {
            sequential: 100,
            parallel_submitters: 8,
            parallel_jobs: 200,
            api_jobs: 2_000,
            api_in_flight: 64,
            small_queue: 1_000,
            big_queue: 2_000,
            latency_samples: 5,
            trivial_jobs: 100,
        }
    }
}

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    AtLeast(f64),
    AtMost(f64),
    /// No target: a figure printed to judge others by (what this machine
    /// allows at best).
    Reference,
}

/// One measured figure.
#[derive(Debug, Clone)]
pub struct Figure {
    pub name: String,
    pub unit: &'static str,
    pub value: Option<f64>,
    pub goal: Goal,
    /// Why there is no value, or what to know about it.
    pub note: String,
}

impl Figure {
    pub fn met(&self) -> Option<bool> {
        match self.goal {
            Goal::AtLeast(t) => self.value.map(|v| v >= t),
            Goal::AtMost(t) => self.value.map(|v| v <= t),
            Goal::Reference => None,
        }
    }

    fn target_text(&self) -> String {
        match self.goal {
            Goal::AtLeast(t) => format!(">= {t} {}", self.unit),
            Goal::AtMost(t) => format!("<= {t} {}", self.unit),
            Goal::Reference => "-".to_string(),
        }
    }
}

/// The figures as a table, one line each.
pub fn render_table(figs: &[Figure]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<44} {:>14} {:>18}  result",
        "figure", "measured", "target"
    );
    for f in figs {
        let v = f.value.map_or_else(
            || "-".to_string(),
            |v| format!("{} {}", format_value(v), f.unit),
        );
        let r = match (f.met(), f.value) {
            (Some(true), _) => "ok".to_string(),
            (Some(false), _) => "MISSED".to_string(),
            (None, Some(_)) => "reference".to_string(),
            (None, None) => format!("not measured: {}", f.note),
        };
        let _ = writeln!(s, "{:<44} {:>14} {:>18}  {}", f.name, v, f.target_text(), r);
    }
    s
}

/// Three decimals below 10 (restart times in seconds), one above.
fn format_value(v: f64) -> String {
    if v.abs() < 10.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.1}")
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".to_string()
    }
}

/// The figures as JSON: `{"quick": bool, "figures": [{name, unit, value,
/// target, goal, met, note}]}`.
pub fn render_json(figs: &[Figure], quick: bool) -> String {
    let mut s = format!("{{\n  \"quick\": {quick},\n  \"figures\": [\n");
    for (i, f) in figs.iter().enumerate() {
        let (goal, target) = match f.goal {
            Goal::AtLeast(t) => ("at_least", t),
            Goal::AtMost(t) => ("at_most", t),
            Goal::Reference => ("reference", f64::NAN),
        };
        let _ = writeln!(
            s,
            "    {{\"name\": {}, \"unit\": {}, \"value\": {}, \"goal\": \"{goal}\", \"target\": {}, \"met\": {}, \"note\": {}}}{}",
            json_str(&f.name),
            json_str(f.unit),
            f.value.map_or_else(|| "null".to_string(), json_num),
            json_num(target),
            f.met().map_or_else(|| "null".to_string(), |m| m.to_string()),
            json_str(&f.note),
            if i + 1 < figs.len() { "," } else { "" }
        );
    }
    s.push_str("  ]\n}\n");
    s
}

fn figure(name: impl Into<String>, unit: &'static str, goal: Goal, r: Result<f64>) -> Figure {
    let (value, note) = match r {
        Ok(v) => (Some(v), String::new()),
        Err(e) => (
            None,
            format!("{e:#}").lines().next().unwrap_or("").to_string(),
        ),
    };
    Figure {
        name: name.into(),
        unit,
        value,
        goal,
        note,
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v[v.len() / 2])
}

/// A held batch job for queue figures; `hold` false for jobs that run.
fn description(workdir: &Path, hold: bool) -> JobDescription {
    JobDescription {
        user_id: current_uid(),
        group_id: current_gid(),
        user_name: std::env::var("USER").unwrap_or_else(|_| "root".into()),
        submit_host: short_hostname(),
        script: "#!/bin/sh\ntrue\n".to_string(),
        environment: vec!["PATH=/usr/bin:/bin".to_string()],
        work_dir: workdir.display().to_string(),
        name: "bench".to_string(),
        hold,
        ..JobDescription::default()
    }
}

/// Submits `n` jobs through the API with `in_flight` requests outstanding;
/// returns (ids, elapsed).
pub fn api_submit(
    cluster: &LocalCluster,
    n: usize,
    in_flight: usize,
    hold: bool,
) -> Result<(Vec<u32>, Duration)> {
    with_api_client(cluster, hold, move |client, job| {
        submit_concurrently(client, job, n, in_flight)
    })
}

/// Runs `submit` with a client connected to `cluster`'s controller and the
/// job to submit. One client thread: the requests share one HTTP/2
/// connection (one task) anyway, and the controller runs on the same
/// cores, so a second client thread only adds hand-offs between threads.
fn with_api_client<F, Fut>(
    cluster: &LocalCluster,
    hold: bool,
    submit: F,
) -> Result<(Vec<u32>, Duration)>
where
    F: FnOnce(ControllerClient, JobDescription) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<u32>, Duration)>>,
{
    let ctl = cluster.client()?;
    let workdir = cluster.dir().root().join("bench");
    std::fs::create_dir_all(&workdir).context("bench work dir")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    rt.block_on(async move {
        let addr = ctl
            .controllers()
            .first()
            .cloned()
            .context("no controller configured")?;
        let client = ctl
            .connect_to(&addr)
            .await
            .map_err(|e| anyhow::anyhow!("connect: {e:?}"))?;
        submit(client, description(&workdir, hold)).await
    })
}

/// Submits `n` jobs through the API's `SubmitJobs` stream, sending ahead
/// freely (the controller bounds what it works on); returns (ids,
/// elapsed). Every id is of a durable job, as with [`api_submit`].
pub fn api_stream_submit(
    cluster: &LocalCluster,
    n: usize,
    hold: bool,
) -> Result<(Vec<u32>, Duration)> {
    with_api_client(cluster, hold, move |client, job| {
        submit_streamed(client, job, n)
    })
}

/// Submits `n` copies of `job` over one `SubmitJobs` stream; the
/// acknowledged ids and the time from the first request to the last
/// answer. A refused job is an error.
pub async fn submit_streamed(
    mut client: ControllerClient,
    job: JobDescription,
    n: usize,
) -> Result<(Vec<u32>, Duration)> {
    let start = Instant::now();
    let requests = tonic::codegen::tokio_stream::iter((0..n).map(move |_| SubmitJobRequest {
        job: Some(job.clone()),
    }));
    let mut answers = client
        .submit_jobs(requests)
        .await
        .map_err(|s| anyhow::anyhow!("SubmitJobs: {}", s.message()))?
        .into_inner();
    let mut ids = Vec::with_capacity(n);
    while let Some(answer) = answers
        .message()
        .await
        .map_err(|s| anyhow::anyhow!("SubmitJobs: {}", s.message()))?
    {
        match answer.submitted {
            Some(reply) if answer.error_code == 0 => ids.push(reply.job_id),
            _ => anyhow::bail!(
                "SubmitJobs refused job {}: {} (error {})",
                ids.len() + 1,
                answer.error_message,
                answer.error_code
            ),
        }
    }
    anyhow::ensure!(ids.len() == n, "{} answers for {n} jobs", ids.len());
    Ok((ids, start.elapsed()))
}

/// Submits `n` copies of `job` over one client connection with `in_flight`
/// requests outstanding at once; the acknowledged ids and the time from the
/// first request to the last answer.
pub async fn submit_concurrently(
    client: ControllerClient,
    job: JobDescription,
    n: usize,
    in_flight: usize,
) -> Result<(Vec<u32>, Duration)> {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..in_flight.max(1) {
        let (mut client, next, job) = (client.clone(), Arc::clone(&next), job.clone());
        set.spawn(async move {
            let mut ids = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < n {
                let reply = client
                    .submit_job(SubmitJobRequest {
                        job: Some(job.clone()),
                    })
                    .await
                    .map_err(|s| anyhow::anyhow!("SubmitJob: {}", s.message()))?;
                ids.push(reply.into_inner().job_id);
            }
            Ok::<_, anyhow::Error>(ids)
        });
    }
    let mut ids = Vec::with_capacity(n);
    while let Some(r) = set.join_next().await {
        ids.extend(r.context("submitter task")??);
    }
    Ok((ids, start.elapsed()))
}

/// One connection to the controller and the runtime it lives on: a
/// channel is bound to the runtime that made it, so both are kept together
/// for a whole measurement.
struct Api {
    rt: tokio::runtime::Runtime,
    client: ControllerClient,
}

impl Api {
    fn new(cluster: &LocalCluster) -> Result<Self> {
        let ctl = cluster.client()?;
        let rt = tokio::runtime::Builder::new_current_thread()
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

    /// The statuses of `ids`, finished jobs included.
    fn jobs(&mut self, ids: &[u32]) -> Result<Vec<JobStatus>> {
        let filter = JobFilter {
            job_ids: ids.to_vec(),
            states: all_job_states(),
            ..JobFilter::default()
        };
        let reply = self
            .rt
            .block_on(self.client.get_jobs(GetJobsRequest {
                filter: Some(filter),
                ..GetJobsRequest::default()
            }))
            .map_err(|s| anyhow::anyhow!("GetJobs: {}", s.message()))?;
        Ok(reply
            .into_inner()
            .jobs
            .iter()
            .map(JobStatus::from_info)
            .collect())
    }

    /// How many of `ids` have ended and released their resources.
    fn done_count(&mut self, ids: &[u32]) -> Result<usize> {
        Ok(self.jobs(ids)?.iter().filter(|j| j.done()).count())
    }

    fn ping(&mut self) -> Result<()> {
        self.rt
            .block_on(self.client.ping(PingRequest {}))
            .map(|_| ())
            .map_err(|s| anyhow::anyhow!("Ping: {}", s.message()))
    }
}

/// A program that does nothing, run the way sbatch is: what starting a
/// process costs on this machine, the ceiling of any command's rate.
fn null_program() -> Command {
    let mut cmd = Command::new("true");
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn sbatch_held(cluster: &LocalCluster) -> Result<Command> {
    let mut cmd = cluster.command("sbatch")?;
    cmd.args(["--hold", "--parsable", "--wrap", "true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(cmd)
}

fn sequential_sbatch(cluster: &LocalCluster, n: usize) -> Result<f64> {
    sequential_runs(sbatch_held(cluster)?, n, printed_job_id)
}

fn parallel_sbatch(cluster: &LocalCluster, submitters: usize, n: usize) -> Result<f64> {
    parallel_runs(|| sbatch_held(cluster), submitters, n, printed_job_id)
}

/// What a submission prints: `sbatch --parsable`'s job id.
fn printed_job_id(stdout: &str) -> Result<()> {
    if parse_submitted(stdout).is_none() {
        bail!("sbatch printed no job id: {stdout:?}");
    }
    Ok(())
}

/// Runs `cmd` once: it must exit 0 and its stdout pass `check`.
fn run_checked(cmd: &mut Command, check: fn(&str) -> Result<()>) -> Result<()> {
    let o = cmd.output().with_context(|| format!("{cmd:?}"))?;
    if !o.status.success() {
        bail!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    check(&String::from_utf8_lossy(&o.stdout))
}

/// Runs `cmd` `n` times one after the other, each checked by `check`;
/// runs per second.
fn sequential_runs(mut cmd: Command, n: usize, check: fn(&str) -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    for _ in 0..n {
        run_checked(&mut cmd, check)?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// Runs `n` commands made by `make` from `submitters` threads, each
/// checked by `check`; runs per second.
fn parallel_runs(
    make: impl Fn() -> Result<Command>,
    submitters: usize,
    n: usize,
    check: fn(&str) -> Result<()>,
) -> Result<f64> {
    let per = n.div_ceil(submitters.max(1));
    let cmds: Vec<Command> = (0..submitters).map(|_| make()).collect::<Result<_>>()?;
    let start = Instant::now();
    let handles: Vec<_> = cmds
        .into_iter()
        .map(|mut cmd| {
            std::thread::spawn(move || -> Result<()> {
                for _ in 0..per {
                    run_checked(&mut cmd, check)?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| anyhow::anyhow!("submitter panicked"))??;
    }
    Ok((per * submitters) as f64 / start.elapsed().as_secs_f64())
}

/// Median wall time of `squeue` (output discarded), in ms.
fn squeue_ms(cluster: &LocalCluster, runs: usize) -> Result<f64> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let mut cmd = cluster.command("squeue")?;
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let start = Instant::now();
        let o = cmd.output().context("squeue")?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        if !o.status.success() {
            bail!(
                "squeue failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
        }
    }
    median(times).context("no runs")
}

/// Resident size once the controller is idle: the lowest reading over a
/// second of polling, stopping early once it has held for 300 ms. Right
/// after a query burst the size still holds the replies being freed.
fn settled_rss_mb(pid: u32) -> Result<f64> {
    let start = Instant::now();
    let mut low = rss_mb(pid)?;
    let mut since = Instant::now();
    while start.elapsed() < Duration::from_secs(1) && since.elapsed() < Duration::from_millis(300) {
        std::thread::sleep(Duration::from_millis(20));
        let now = rss_mb(pid)?;
        if now < low {
            low = now;
            since = Instant::now();
        }
    }
    Ok(low)
}

fn rss_mb(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("cannot read /proc/{pid}/status"))?;
    parse_vm_rss_kb(&status)
        .map(|kb| kb as f64 / 1024.0)
        .context("no VmRSS line")
}

/// `VmRSS` of a /proc/<pid>/status text, in kB.
pub fn parse_vm_rss_kb(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Median time from running sbatch to the job being seen started, in ms.
fn submit_to_start_ms(cluster: &LocalCluster, samples: usize) -> Result<f64> {
    let mut api = Api::new(cluster)?;
    let mut times = Vec::new();
    for _ in 0..samples {
        let mut cmd = cluster.command("sbatch")?;
        cmd.args(["--parsable", "--wrap", "true"]);
        let start = Instant::now();
        let o = cmd.output().context("sbatch")?;
        let id = parse_submitted(&String::from_utf8_lossy(&o.stdout)).with_context(|| {
            format!(
                "sbatch failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )
        })?;
        loop {
            let started = api
                .jobs(&[id])?
                .iter()
                .any(|j| j.state != JobState::Pending && j.state != JobState::Unspecified);
            if started {
                times.push(start.elapsed().as_secs_f64() * 1000.0);
                break;
            }
            if start.elapsed() > Duration::from_secs(10) {
                bail!("job {id} did not start within 10 s");
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        // Let it finish so the next sample starts on an idle cluster.
        let deadline = Instant::now() + Duration::from_secs(10);
        while api.done_count(&[id])? < 1 {
            if Instant::now() > deadline {
                bail!("job {id} did not finish within 10 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    median(times).context("no samples")
}

/// Seconds from the first submission until all `n` trivial jobs ended.
fn trivial_jobs_s(cluster: &LocalCluster, n: usize) -> Result<f64> {
    let start = Instant::now();
    let (ids, _) = api_submit(cluster, n, 32, false)?;
    let mut api = Api::new(cluster)?;
    let deadline = Duration::from_secs(300);
    loop {
        if api.done_count(&ids)? == ids.len() {
            return Ok(start.elapsed().as_secs_f64());
        }
        if start.elapsed() > deadline {
            bail!("not all {n} jobs ended within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Seconds from starting a SIGKILLed slurmctld until it answers Ping.
fn restart_s(cluster: &mut LocalCluster) -> Result<f64> {
    cluster.kill_controller()?;
    let conf = cluster.conf_path();
    let start = Instant::now();
    cluster.spawn_controller()?;
    loop {
        if controller_up(&conf) {
            let t = start.elapsed().as_secs_f64();
            cluster.wait_controller_up(Duration::from_secs(5))?;
            return Ok(t);
        }
        if start.elapsed() > Duration::from_secs(60) {
            bail!("slurmctld did not answer within 60 s");
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

fn ping_ok(cluster: &LocalCluster) -> Result<()> {
    Api::new(cluster)?.ping()
}

/// Runs every measurement; `progress` gets a line before each.
/// Recovery with a large state (see [`crate::bench_recovery`]).
pub fn run_recovery(quick: bool, progress: &mut dyn FnMut(&str)) -> Vec<Figure> {
    let sizes = if quick {
        crate::bench_recovery::RecoverySizes::quick()
    } else {
        crate::bench_recovery::RecoverySizes::full()
    };
    let jobs = sizes.jobs;
    let r = crate::bench_recovery::measure_recovery(&sizes, progress);
    let (clean, crash) = match &r {
        Ok(f) => (Ok(f.clean_restart_s), Ok(f.crash_restart_s)),
        Err(e) => (Err(anyhow::anyhow!("{e:#}")), Err(anyhow::anyhow!("{e:#}"))),
    };
    vec![
        figure(
            format!("restart with {jobs} jobs (clean, snapshot)"),
            "s",
            Goal::AtMost(1.0),
            clean,
        ),
        figure(
            format!("restart with {jobs} jobs (kill -9, snapshot + tail)"),
            "s",
            Goal::AtMost(1.0),
            crash,
        ),
    ]
}

/// Takeover and throughput with a backup controller (see
/// [`crate::bench_ha`]).
pub fn run_ha(quick: bool, progress: &mut dyn FnMut(&str)) -> Vec<Figure> {
    let mut sizes = crate::bench_ha::HaSizes::default();
    if quick {
        sizes.throughput_jobs = 2_000;
    }
    progress("failover: a primary and a backup, SlurmctldTimeout=5");
    let r =
        crate::bins::bin_path("slurmctld").and_then(|bin| crate::bench_ha::measure(&bin, &sizes));
    let part = |f: fn(&crate::bench_ha::HaFigures) -> f64| match &r {
        Ok(h) => Ok(f(h)),
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    vec![
        figure(
            "takeover (kill -9 of primary to first accepted submission)",
            "s",
            Goal::AtMost(7.0),
            part(|h| h.takeover.as_secs_f64()),
        ),
        figure(
            "acknowledged jobs lost in the takeover",
            "jobs",
            Goal::AtMost(0.0),
            part(|h| h.lost as f64),
        ),
        figure(
            format!(
                "durable submissions with a backup ({} in flight)",
                sizes.throughput_in_flight
            ),
            "jobs/s",
            Goal::AtLeast(20_000.0),
            part(|h| h.durable_submissions_per_s),
        ),
        figure(
            "failback (primary restart to primary alone in control)",
            "s",
            Goal::AtMost(7.0),
            part(|h| h.failback.as_secs_f64()),
        ),
    ]
}

pub fn run_all(sizes: &Sizes, progress: &mut dyn FnMut(&str)) -> Result<Vec<Figure>> {
    let mut figs = Vec::new();
    let spec = ClusterSpec::default(); // 4 nodes x 2 CPUs, as the targets state

    // An idle cluster for the job figures.
    progress("starting a cluster (4 nodes x 2 CPUs) for job figures");
    let jobs = LocalCluster::start(spec.clone())?;
    progress("submit-to-start latency on an idle cluster");
    figs.push(figure(
        "submit-to-start latency (median, idle)",
        "ms",
        Goal::AtMost(50.0),
        submit_to_start_ms(&jobs, sizes.latency_samples),
    ));
    progress(&format!(
        "{} one-CPU trivial jobs on 4 nodes x 2 CPUs",
        sizes.trivial_jobs
    ));
    figs.push(figure(
        format!("{} trivial jobs, submit to all done", sizes.trivial_jobs),
        "s",
        Goal::AtMost(5.0),
        trivial_jobs_s(&jobs, sizes.trivial_jobs),
    ));
    drop(jobs);
    figs.extend(run_submit(sizes, progress)?);
    figs.extend(run_queue(sizes, progress)?);
    Ok(figs)
}

/// Submission throughput: sequential and parallel sbatch, and the API.
pub fn run_submit(sizes: &Sizes, progress: &mut dyn FnMut(&str)) -> Result<Vec<Figure>> {
    let mut figs = Vec::new();
    let spec = ClusterSpec::default();
    // Held jobs, so only the controller works.
    progress("starting a cluster for submission figures");
    let subs = LocalCluster::start(spec.clone())?;
    progress(&format!("{} sequential sbatch", sizes.sequential));
    figs.push(figure(
        format!("sbatch sequential ({} jobs)", sizes.sequential),
        "jobs/s",
        Goal::AtLeast(800.0),
        sequential_sbatch(&subs, sizes.sequential),
    ));
    progress(&format!(
        "{} sbatch from {} parallel submitters",
        sizes.parallel_jobs, sizes.parallel_submitters
    ));
    figs.push(figure(
        format!(
            "sbatch, {} submitters ({} jobs)",
            sizes.parallel_submitters, sizes.parallel_jobs
        ),
        "jobs/s",
        Goal::AtLeast(1600.0),
        parallel_sbatch(&subs, sizes.parallel_submitters, sizes.parallel_jobs),
    ));
    progress("the same runs of a program that does nothing (true)");
    figs.push(figure(
        format!("`true` sequential ({} runs)", sizes.sequential),
        "runs/s",
        Goal::Reference,
        sequential_runs(null_program(), sizes.sequential, |_| Ok(())),
    ));
    figs.push(figure(
        format!(
            "`true`, {} submitters ({} runs)",
            sizes.parallel_submitters, sizes.parallel_jobs
        ),
        "runs/s",
        Goal::Reference,
        parallel_runs(
            || Ok(null_program()),
            sizes.parallel_submitters,
            sizes.parallel_jobs,
            |_| Ok(()),
        ),
    ));
    figs.extend(api_figures(&subs, sizes, progress));
    drop(subs);
    Ok(figs)
}

/// Durable API submissions alone, on a cluster of their own.
pub fn run_api(sizes: &Sizes, progress: &mut dyn FnMut(&str)) -> Result<Vec<Figure>> {
    progress("starting a cluster for API submissions");
    let subs = LocalCluster::start(ClusterSpec::default())?;
    Ok(api_figures(&subs, sizes, progress))
}

/// Durable submissions through the API two ways: unary `SubmitJob` calls
/// with many in flight, and one `SubmitJobs` stream.
fn api_figures(subs: &LocalCluster, sizes: &Sizes, progress: &mut dyn FnMut(&str)) -> Vec<Figure> {
    progress(&format!(
        "{} API submissions, {} in flight",
        sizes.api_jobs, sizes.api_in_flight
    ));
    let unary = figure(
        format!("API submissions ({} in flight)", sizes.api_in_flight),
        "jobs/s",
        Goal::AtLeast(20_000.0),
        api_submit(subs, sizes.api_jobs, sizes.api_in_flight, true)
            .map(|(ids, t)| ids.len() as f64 / t.as_secs_f64()),
    );
    progress(&format!(
        "{} API submissions over one SubmitJobs stream",
        sizes.api_jobs
    ));
    let streamed = figure(
        "API submissions (one SubmitJobs stream)".to_string(),
        "jobs/s",
        Goal::AtLeast(20_000.0),
        api_stream_submit(subs, sizes.api_jobs, true)
            .map(|(ids, t)| ids.len() as f64 / t.as_secs_f64()),
    );
    vec![unary, streamed]
}

/// squeue times at two queue sizes, the controller's memory with the
/// larger queue, and a restart with it.
pub fn run_queue(sizes: &Sizes, progress: &mut dyn FnMut(&str)) -> Result<Vec<Figure>> {
    let mut figs = Vec::new();
    let spec = ClusterSpec::default();
    // Queue size figures on a fresh cluster with exactly the stated counts.
    progress("starting a cluster for queue figures");
    let mut q = LocalCluster::start(spec)?;
    let small = api_submit(&q, sizes.small_queue, 64, true);
    figs.push(figure(
        format!("squeue with {} queued jobs", sizes.small_queue),
        "ms",
        Goal::AtMost(5.0),
        small.and_then(|_| squeue_ms(&q, 5)),
    ));
    progress(&format!("filling the queue to {} jobs", sizes.big_queue));
    let big = api_submit(
        &q,
        sizes.big_queue.saturating_sub(sizes.small_queue),
        64,
        true,
    );
    let big_ok = big.is_ok();
    figs.push(figure(
        format!("squeue with {} queued jobs", sizes.big_queue),
        "ms",
        Goal::AtMost(20.0),
        big.and_then(|_| squeue_ms(&q, 5)),
    ));
    let pid = q.controller_pid();
    figs.push(figure(
        format!("slurmctld RSS with {} jobs (idle)", sizes.big_queue),
        "MB",
        Goal::AtMost(25.0),
        if big_ok {
            pid.context("no controller pid").and_then(settled_rss_mb)
        } else {
            Err(anyhow::anyhow!("queue not filled"))
        },
    ));
    progress(&format!("restart with {} jobs", sizes.big_queue));
    figs.push(figure(
        format!("restart with {} jobs (kill -9 to ping)", sizes.big_queue),
        "s",
        Goal::AtMost(0.2),
        restart_s(&mut q).and_then(|t| ping_ok(&q).map(|()| t)),
    ));
    Ok(figs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(value: Option<f64>, goal: Goal) -> Figure {
        Figure {
            name: "x \"y\"".into(),
            unit: "ms",
            value,
            goal,
            note: "why\nnot".into(),
        }
    }

    #[test]
    fn targets_are_judged_in_the_right_direction() {
        assert_eq!(fig(Some(4.0), Goal::AtMost(5.0)).met(), Some(true));
        assert_eq!(fig(Some(6.0), Goal::AtMost(5.0)).met(), Some(false));
        assert_eq!(fig(Some(900.0), Goal::AtLeast(800.0)).met(), Some(true));
        assert_eq!(fig(Some(700.0), Goal::AtLeast(800.0)).met(), Some(false));
        assert_eq!(fig(None, Goal::AtLeast(800.0)).met(), None);
    }

    #[test]
    fn json_escapes_and_marks_missing_values() {
        let j = render_json(
            &[
                fig(None, Goal::AtMost(5.0)),
                fig(Some(1.5), Goal::AtLeast(2.0)),
            ],
            true,
        );
        assert!(j.contains("\"name\": \"x \\\"y\\\"\""), "{j}");
        assert!(j.contains("\"value\": null"), "{j}");
        assert!(j.contains("\"note\": \"why\\u000anot\""), "{j}");
        assert!(
            j.contains("\"value\": 1.5, \"goal\": \"at_least\", \"target\": 2, \"met\": false"),
            "{j}"
        );
        assert!(j.starts_with("{\n  \"quick\": true,"));
    }

    #[test]
    fn table_shows_value_target_and_result() {
        let t = render_table(&[
            fig(Some(4.0), Goal::AtMost(5.0)),
            fig(None, Goal::AtMost(5.0)),
        ]);
        assert!(
            t.contains("4.000 ms") && t.contains("<= 5 ms") && t.contains("ok"),
            "{t}"
        );
        assert!(t.contains("not measured: why"), "{t}");
    }

    #[test]
    fn a_reference_figure_has_no_target_and_is_neither_met_nor_missed() {
        let f = fig(Some(1296.0), Goal::Reference);
        assert_eq!(f.met(), None);
        let t = render_table(std::slice::from_ref(&f));
        assert!(t.contains("1296.0 ms") && t.contains("reference"), "{t}");
        assert!(!t.contains("MISSED") && !t.contains("not measured"), "{t}");
        let j = render_json(&[f], false);
        assert!(
            j.contains("\"goal\": \"reference\", \"target\": null, \"met\": null"),
            "{j}"
        );
    }

    #[test]
    fn vm_rss_is_read_in_kb() {
        assert_eq!(
            parse_vm_rss_kb("Name: x\nVmRSS:\t   12345 kB\n"),
            Some(12345)
        );
        assert_eq!(parse_vm_rss_kb("Name: x\n"), None);
    }

    #[test]
    fn median_of_samples() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn quick_is_smaller_than_full() {
        let (q, f) = (Sizes::quick(), Sizes::full());
        assert!(q.sequential < f.sequential && q.api_jobs < f.api_jobs);
        assert_eq!(f.big_queue, 10_000);
        assert_eq!(f.trivial_jobs, 500);
    }
}
