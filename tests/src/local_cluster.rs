//! A whole cluster on loopback: one slurmctld and N slurmd, the real
//! binaries, each slurmd serving one node on a port of its own.
//!
//! End-to-end tests and the benchmark drive it through the real commands
//! (`run`) or straight through gRPC (`client`). Everything it starts dies
//! with it: the daemons are [`ChildGuard`]s, and what they started on their
//! own (slurmstepd and job scripts, which detach into sessions of their own
//! so that a slurmd restart does not kill jobs) is found by the cluster's
//! `SLURM_CONF` in its environment and killed too.
//!
//! Readiness is asked of the controller itself over gRPC (Ping, GetNodes)
//! rather than parsed from command output, so a cluster comes up even while
//! a command's formatting is wrong, and the test that checks that formatting
//! is the one that fails. A wait that times out returns the tails of the
//! daemons' logs in its error, so a failing test shows why.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use slurm_client_tools::client::{block_on, ClientConfig, Controller};
use slurm_proto::v1::{
    GetJobsRequest, GetNodesRequest, JobFilter, JobInfo, JobState, JobStateFlag, NodeState,
    NodeStateFlag, PingRequest,
};

use crate::bins::{bin_dir, commands_dir};
use crate::cluster_dir::{ClusterDir, ClusterSpec};
use crate::process::{kill_processes_with_env, ChildGuard};
use crate::wait::wait_until;

/// Binaries a cluster needs to start.
pub const DAEMON_BINS: &[&str] = &["slurmctld", "slurmd", "slurmstepd"];

/// How long a cluster may take to come up (or a controller to come back).
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Lines of each log kept in error messages.
const LOG_TAIL_LINES: usize = 40;

/// One daemon process of a cluster and how to start it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Daemon {
    Controller,
    Node(String),
}

impl Daemon {
    /// A short name: `slurmctld` or `slurmd.<node>`.
    pub fn name(&self) -> String {
        match self {
            Daemon::Controller => "slurmctld".to_string(),
            Daemon::Node(n) => format!("slurmd.{n}"),
        }
    }

    /// The command line that starts it in the foreground (`-D`), stdin
    /// closed, stdout and stderr appended to `<log_dir>/<name>.out`, and
    /// `SLURM_CONF` in its environment (inherited by slurmstepd and jobs,
    /// which is how [`kill_cluster_processes`] finds them).
    pub fn command(&self, bins: &Path, conf: &Path, log_dir: &Path) -> Result<Command> {
        let (bin, args): (&str, Vec<String>) = match self {
            Daemon::Controller => ("slurmctld", vec!["-D".into(), "-f".into(), path_arg(conf)]),
            Daemon::Node(n) => (
                "slurmd",
                vec![
                    "-D".into(),
                    "-N".into(),
                    n.clone(),
                    "-f".into(),
                    path_arg(conf),
                ],
            ),
        };
        let exe = require_bin(bins, bin)?;
        let log = log_dir.join(format!("{}.out", self.name()));
        let out = append(&log)?;
        let err = out
            .try_clone()
            .with_context(|| format!("cannot duplicate {}", log.display()))?;
        let mut cmd = Command::new(exe);
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
        clean_slurm_env(&mut cmd);
        cmd.env("SLURM_CONF", conf);
        Ok(cmd)
    }
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open log {}", path.display()))
}

/// Removes the caller's own `SLURM_*`/`SBATCH_*`/... variables so a test
/// run from inside a real allocation cannot leak them into the cluster.
pub fn clean_slurm_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if [
            "SLURM_",
            "SBATCH_",
            "SQUEUE_",
            "SINFO_",
            "SCONTROL_",
            "SRUN_",
            "SALLOC_",
        ]
        .iter()
        .any(|p| k.starts_with(p))
        {
            cmd.env_remove(&*k);
        }
    }
}

/// `bins/name`, or an error that says how to build it.
pub fn require_bin(bins: &Path, name: &str) -> Result<PathBuf> {
    let p = bins.join(name);
    if p.is_file() {
        Ok(p)
    } else {
        bail!(
            "binary {name} not found in {}: build the workspace binaries first \
             (`cargo build --workspace --bins`, or run `cargo test --workspace`), \
             or point SLURM_BIN_DIR at them",
            bins.display()
        )
    }
}

/// SIGKILLs every process of the cluster whose slurm.conf is `conf`: the
/// daemons, slurmstepd and the jobs (all carry `SLURM_CONF=<conf>`).
pub fn kill_cluster_processes(conf: &Path) -> usize {
    kill_processes_with_env(&format!("SLURM_CONF={}", conf.display()))
}

/// Whether the controller of `conf` answers Ping and is in control.
pub fn controller_up(conf: &Path) -> bool {
    let Ok(config) = ClientConfig::load_path(conf) else {
        return false;
    };
    let Ok(mut ctl) = Controller::new(&config) else {
        return false;
    };
    block_on(ctl.call(|mut c| async move { c.ping(PingRequest {}).await }))
        .map(|r| r.in_control)
        .unwrap_or(false)
}

/// How many nodes the controller of `conf` reports IDLE and responding.
pub fn idle_nodes(conf: &Path) -> Option<usize> {
    let config = ClientConfig::load_path(conf).ok()?;
    let mut ctl = Controller::new(&config).ok()?;
    let reply =
        block_on(ctl.call(|mut c| async move { c.get_nodes(GetNodesRequest::default()).await }))
            .ok()?;
    let bad_flags = [
        NodeStateFlag::NotResponding as i32,
        NodeStateFlag::Drain as i32,
        NodeStateFlag::Fail as i32,
    ];
    Some(
        reply
            .nodes
            .iter()
            .filter(|n| n.state == NodeState::Idle as i32)
            .filter(|n| !n.state_flags.iter().any(|f| bad_flags.contains(f)))
            .count(),
    )
}

/// Every base state, for queries that must see finished jobs too (an empty
/// state filter means squeue's default of active jobs only).
pub fn all_job_states() -> Vec<i32> {
    (JobState::Pending as i32..=JobState::OutOfMemory as i32).collect()
}

/// Whether a job in `state` has ended (its resources may still be being
/// released; see [`JobStatus::done`]).
pub fn is_finished(state: JobState) -> bool {
    !matches!(
        state,
        JobState::Unspecified | JobState::Pending | JobState::Running | JobState::Suspended
    )
}

/// A job's state as the controller reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobStatus {
    pub id: u32,
    pub state: JobState,
    /// Resources still being released (Slurm's COMPLETING flag, `CG`).
    pub completing: bool,
}

impl JobStatus {
    pub fn from_info(j: &JobInfo) -> Self {
        Self {
            id: j.job_id,
            state: JobState::try_from(j.state).unwrap_or(JobState::Unspecified),
            completing: j.state_flags.contains(&(JobStateFlag::Completing as i32)),
        }
    }

    /// Ended and its resources released.
    pub fn done(&self) -> bool {
        is_finished(self.state) && !self.completing
    }
}

/// The state of each of `ids` (every job when empty) that the controller of
/// `conf` knows, finished jobs included; `None` when it does not answer.
pub fn job_states(conf: &Path, ids: &[u32]) -> Option<Vec<JobStatus>> {
    let config = ClientConfig::load_path(conf).ok()?;
    let mut ctl = Controller::new(&config).ok()?;
    let filter = JobFilter {
        job_ids: ids.to_vec(),
        states: all_job_states(),
        ..JobFilter::default()
    };
    let reply = block_on(ctl.call(|mut c| {
        let filter = filter.clone();
        async move {
            c.get_jobs(GetJobsRequest {
                filter: Some(filter),
                // The id, state and flags: what JobStatus holds.
                fields: vec![1, 20, 21],
                ..GetJobsRequest::default()
            })
            .await
        }
    }))
    .ok()?;
    Some(reply.jobs.iter().map(JobStatus::from_info).collect())
}

/// The job id in sbatch's output: `Submitted batch job N` or (`--parsable`)
/// `N` or `N;cluster`.
pub fn parse_submitted(stdout: &str) -> Option<u32> {
    let line = stdout.lines().next()?.trim();
    let id = line.strip_prefix("Submitted batch job ").unwrap_or(line);
    id.split(';').next()?.parse().ok()
}

/// The last lines of every file in `log_dir`, headed by their names.
pub fn log_tails(log_dir: &Path) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(log_dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    let mut out = String::new();
    for f in files {
        let text = std::fs::read(&f).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(LOG_TAIL_LINES);
        out.push_str(&format!(
            "----- {} (last {} lines) -----\n",
            f.display(),
            lines.len() - from
        ));
        for l in &lines[from..] {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// A running cluster; dropping it kills every process it started.
#[derive(Debug)]
pub struct LocalCluster {
    dir: ClusterDir,
    bins: PathBuf,
    controller: Option<ChildGuard>,
    slurmds: Vec<ChildGuard>,
}

impl LocalCluster {
    /// The reference shape (4 nodes n[1-4], 2 CPUs and 4000 MB each).
    pub fn start_default() -> Result<Self> {
        Self::start(ClusterSpec::default())
    }

    /// Writes the cluster's files, starts slurmctld and one slurmd per node
    /// from [`bin_dir`], and waits until the controller answers and every
    /// node is IDLE.
    pub fn start(spec: ClusterSpec) -> Result<Self> {
        let bins = bin_dir()?;
        for b in DAEMON_BINS {
            require_bin(&bins, b)?;
        }
        let dir = ClusterDir::create(spec)?;
        let mut cluster = Self {
            dir,
            bins,
            controller: None,
            slurmds: Vec::new(),
        };
        cluster.start_controller()?;
        for node in cluster.dir.node_names() {
            let d = Daemon::Node(node);
            let mut cmd = d.command(&cluster.bins, &cluster.conf_path(), &cluster.dir.log_dir())?;
            cluster
                .slurmds
                .push(ChildGuard::spawn(&d.name(), &mut cmd)?);
        }
        cluster.wait_nodes_idle(START_TIMEOUT)?;
        Ok(cluster)
    }

    pub fn dir(&self) -> &ClusterDir {
        &self.dir
    }

    pub fn conf_path(&self) -> PathBuf {
        self.dir.conf_path()
    }

    pub fn bin_dir(&self) -> &Path {
        &self.bins
    }

    /// A command of the cluster (`sbatch`, `squeue`, ...) ready to run:
    /// `SLURM_CONF` set, the commands' directory ([`commands_dir`]) and the
    /// binary directory first in `PATH`, the working directory the
    /// cluster's root.
    pub fn command(&self, name: &str) -> Result<Command> {
        let commands = commands_dir()?;
        let from = if DAEMON_BINS.contains(&name) {
            &self.bins
        } else {
            &commands
        };
        let exe = require_bin(from, name)?;
        let mut cmd = Command::new(exe);
        clean_slurm_env(&mut cmd);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![commands.clone(), self.bins.clone()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("SLURM_CONF", self.conf_path())
            .env("PATH", std::env::join_paths(dirs).context("PATH")?)
            .current_dir(self.dir.root())
            .stdin(Stdio::null());
        Ok(cmd)
    }

    /// Runs a command to completion in the cluster's root directory.
    pub fn run(&self, name: &str, args: &[&str]) -> Result<Output> {
        self.run_in(self.dir.root(), name, args)
    }

    /// Runs a command to completion in `cwd`.
    pub fn run_in(&self, cwd: &Path, name: &str, args: &[&str]) -> Result<Output> {
        let mut cmd = self.command(name)?;
        cmd.current_dir(cwd).args(args);
        cmd.output()
            .with_context(|| format!("cannot run {name} {args:?}"))
    }

    /// Runs `sbatch args` in `cwd` and returns the id it printed
    /// (`Submitted batch job N`, or `N` with --parsable).
    pub fn sbatch_in(&self, cwd: &Path, args: &[&str]) -> Result<u32> {
        let o = self.run_in(cwd, "sbatch", args)?;
        let stdout = String::from_utf8_lossy(&o.stdout);
        if !o.status.success() {
            bail!(
                "sbatch {args:?} failed ({}): {}{}",
                o.status,
                stdout,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        parse_submitted(&stdout)
            .with_context(|| format!("sbatch {args:?} printed no job id: {stdout:?}"))
    }

    /// [`sbatch_in`](Self::sbatch_in) in the cluster's root directory.
    pub fn sbatch(&self, args: &[&str]) -> Result<u32> {
        self.sbatch_in(self.dir.root(), args)
    }

    pub fn controller_pid(&self) -> Option<u32> {
        self.controller.as_ref().and_then(ChildGuard::pid)
    }

    /// SIGKILLs slurmctld: a crash, with no chance to flush anything.
    pub fn kill_controller(&mut self) -> Result<()> {
        if let Some(mut c) = self.controller.take() {
            c.kill()?;
        }
        Ok(())
    }

    /// Starts slurmctld if it is not running, without waiting for it.
    pub fn spawn_controller(&mut self) -> Result<()> {
        if self.controller.is_none() {
            let d = Daemon::Controller;
            let mut cmd = d.command(&self.bins, &self.conf_path(), &self.dir.log_dir())?;
            self.controller = Some(ChildGuard::spawn(&d.name(), &mut cmd)?);
        }
        Ok(())
    }

    /// Starts slurmctld (if it is not running) and waits until it answers.
    pub fn start_controller(&mut self) -> Result<()> {
        self.spawn_controller()?;
        self.wait_controller_up(START_TIMEOUT)
    }

    /// SIGKILLs slurmctld, starts it again and waits until it answers;
    /// returns the time from the new start to the first answer.
    pub fn restart_controller(&mut self) -> Result<Duration> {
        self.kill_controller()?;
        let start = Instant::now();
        self.start_controller()?;
        Ok(start.elapsed())
    }

    /// Waits until the controller answers Ping and is in control.
    pub fn wait_controller_up(&mut self, timeout: Duration) -> Result<()> {
        let conf = self.conf_path();
        self.wait_for("slurmctld to answer ping", timeout, |_| {
            controller_up(&conf).then_some(())
        })
    }

    /// Waits until every node is IDLE (registered, responding, no job).
    pub fn wait_nodes_idle(&mut self, timeout: Duration) -> Result<()> {
        let conf = self.conf_path();
        let want = self.dir.spec.nodes;
        self.wait_for(&format!("all {want} nodes to be idle"), timeout, |_| {
            (idle_nodes(&conf)? == want).then_some(())
        })
    }

    /// Polls `probe` until it answers, failing early when a daemon exits.
    /// Errors carry the daemons' log tails.
    pub fn wait_for<T>(
        &mut self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut(&Path) -> Option<T>,
    ) -> Result<T> {
        let root = self.dir.root().to_path_buf();
        let mut died: Option<String> = None;
        let daemons = self.controller.iter_mut().chain(self.slurmds.iter_mut());
        let mut daemons: Vec<&mut ChildGuard> = daemons.collect();
        let outcome = wait_until(what, timeout, || {
            for d in daemons.iter_mut() {
                if let Ok(Some(status)) = d.try_status() {
                    died = Some(format!("{} exited ({status})", d.name()));
                    return Some(None);
                }
            }
            probe(&root).map(Some)
        });
        match outcome {
            Ok(Some(v)) => Ok(v),
            Ok(None) => bail!(
                "while waiting for {what}: {}\n{}",
                died.unwrap_or_default(),
                self.logs()
            ),
            Err(e) => bail!("{e}\n{}", self.logs()),
        }
    }

    /// The state of job `id`, if the controller knows it.
    pub fn job_status(&self, id: u32) -> Option<JobStatus> {
        job_states(&self.conf_path(), &[id])?
            .into_iter()
            .find(|j| j.id == id)
    }

    /// The base state of job `id`, if the controller knows it.
    pub fn job_state(&self, id: u32) -> Option<JobState> {
        self.job_status(id).map(|j| j.state)
    }

    /// Waits until job `id` has ended and released its resources; returns
    /// its final state.
    pub fn wait_job_finished(&mut self, id: u32, timeout: Duration) -> Result<JobState> {
        let conf = self.conf_path();
        self.wait_for(&format!("job {id} to finish"), timeout, |_| {
            let j = job_states(&conf, &[id])?.into_iter().find(|j| j.id == id)?;
            j.done().then_some(j.state)
        })
    }

    /// Waits until job `id` is in `state`.
    pub fn wait_job_state(&mut self, id: u32, state: JobState, timeout: Duration) -> Result<()> {
        let conf = self.conf_path();
        self.wait_for(&format!("job {id} to be {state:?}"), timeout, |_| {
            job_states(&conf, &[id])?
                .into_iter()
                .any(|j| j.id == id && j.state == state)
                .then_some(())
        })
    }

    /// The tails of every daemon log of this cluster.
    pub fn logs(&self) -> String {
        log_tails(&self.dir.log_dir())
    }

    /// A gRPC client of the controller, as the commands make it.
    pub fn client(&self) -> Result<Controller> {
        let config = ClientConfig::load_path(&self.conf_path())
            .with_context(|| format!("cannot load {}", self.conf_path().display()))?;
        Controller::new(&config).context("cannot set up a controller client")
    }

    /// Stops the daemons in order (nodes, then the controller: SIGTERM, then
    /// SIGKILL after a grace period) and kills whatever jobs are left.
    pub fn stop(mut self) -> Result<()> {
        self.shutdown(Duration::from_secs(5))
    }

    fn shutdown(&mut self, grace: Duration) -> Result<()> {
        let mut first_err = None;
        for mut d in self.slurmds.drain(..) {
            if let Err(e) = d.terminate(grace) {
                first_err.get_or_insert(e);
            }
        }
        if let Some(mut c) = self.controller.take() {
            if let Err(e) = c.terminate(grace) {
                first_err.get_or_insert(e);
            }
        }
        kill_cluster_processes(&self.conf_path());
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        // A test that failed wants no daemons left behind, and no grace.
        for mut d in self.slurmds.drain(..) {
            let _ = d.kill();
        }
        if let Some(mut c) = self.controller.take() {
            let _ = c.kill();
        }
        kill_cluster_processes(&self.conf_path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_command_lines_are_slurms() {
        let tmp = tempfile::tempdir().expect("tmp");
        for b in ["slurmctld", "slurmd"] {
            std::fs::write(tmp.path().join(b), "").expect("fake bin");
        }
        let conf = tmp.path().join("slurm.conf");
        let cmd = Daemon::Node("n2".into())
            .command(tmp.path(), &conf, tmp.path())
            .expect("command");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args, ["-D", "-N", "n2", "-f", &path_arg(&conf)]);
        let env: Vec<_> = cmd.get_envs().filter(|(k, _)| *k == "SLURM_CONF").collect();
        assert_eq!(env.len(), 1);
        assert_eq!(env[0].1, Some(conf.as_os_str()));
        let cmd = Daemon::Controller
            .command(tmp.path(), &conf, tmp.path())
            .expect("command");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args, ["-D", "-f", &path_arg(&conf)]);
    }

    #[test]
    fn submitted_ids_are_read_in_every_form() {
        assert_eq!(parse_submitted("Submitted batch job 25\n"), Some(25));
        assert_eq!(parse_submitted("3\n"), Some(3));
        assert_eq!(parse_submitted("3;ref\n"), Some(3));
        assert_eq!(parse_submitted(""), None);
        assert_eq!(parse_submitted("Submitted batch job x"), None);
        assert_eq!(parse_submitted("99999999999"), None);
    }

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let tmp = tempfile::tempdir().expect("tmp");
        let err = require_bin(tmp.path(), "slurmctld").expect_err("missing");
        assert!(
            err.to_string().contains("cargo build --workspace --bins"),
            "{err}"
        );
    }

    #[test]
    fn log_tails_keep_the_last_lines_of_each_file() {
        let tmp = tempfile::tempdir().expect("tmp");
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(tmp.path().join("slurmctld.out"), text).expect("write");
        let tails = log_tails(tmp.path());
        assert!(tails.contains("slurmctld.out"));
        assert!(tails.contains("line 99\n"));
        assert!(!tails.contains("line 59\n"));
        assert!(tails.contains("line 60\n"));
    }

    #[test]
    fn nothing_answers_for_a_cluster_that_is_not_running() {
        let dir = ClusterDir::create(ClusterSpec::default()).expect("dir");
        assert!(!controller_up(&dir.conf_path()));
        assert_eq!(idle_nodes(&dir.conf_path()), None);
    }
}
