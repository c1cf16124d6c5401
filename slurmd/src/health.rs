//! Node health checks: HealthCheckProgram, run by slurmd.
//!
//! A site's health program (NHC or a script of its own) knows whether the
//! node can take jobs: a full file system, a lost network link, a dead GPU.
//! slurmd runs it once at start-up, before it registers, so a sick node
//! never looks healthy to the scheduler, and then every
//! HealthCheckInterval while the node's state is one HealthCheckNodeState
//! names. A non-zero exit drains the node: slurmd asks the controller with
//! UpdateNode (State=DRAIN) under its own credential, with the program's
//! first line of output as the Reason that `sinfo -R` shows. Running jobs
//! keep running; `scontrol update NodeName=... State=RESUME` brings the node
//! back. A node that is already drained keeps the reason it has: an
//! administrator's note is not overwritten by every later failing run.
//!
//! ```text
//! start ── run ──(fails)── drain ──┐
//!                                  ├─ register ─ sleep to the next slot ─┐
//!          (passes) ───────────────┘        ^                            │
//!                                           │   state matches? ── run ───┤
//!                                           └──── (fails: drain) ────────┘
//! ```
//!
//! When runs fall ([`Schedule`]) and on which states they happen
//! ([`state_matches`]) are pure functions. Without CYCLE every node runs at
//! the same wall-clock moments (multiples of the interval), so the jitter
//! hits parallel jobs once rather than at a random time on each node; with
//! CYCLE the nodes of slurm.conf take turns spread evenly over the interval.
//! The node's state comes from the controller (GetNodes for this one node,
//! read from its published snapshot) right before a run that depends on it,
//! so it is never staler than the check itself.
//!
//! The program runs off the async runtime, as slurmd's user (root on a real
//! node), in a session of its own, with a clean environment (PATH,
//! SLURMD_NODENAME, SLURM_CONF), from `/`, and is killed with its whole
//! process group after [`PROGRAM_TIMEOUT`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use slurm_common::conf::{HealthCheckNodeState, SlurmConf};
use slurm_proto::v1::{
    GetNodesRequest, NodeInfo, NodeState, NodeStateFlag, NodeStateUpdate, UpdateNodeRequest,
};
use slurm_proto::{ErrorCode, SlurmControllerClient};
use thiserror::Error;
use tokio::sync::Semaphore;
use tonic::transport::Channel;

use crate::client::{Backoff, ClientError, ControllerClient};

/// How long the program may run before it is killed (Slurm's limit).
pub const PROGRAM_TIMEOUT: Duration = Duration::from_secs(60);

/// PATH of the program's environment.
pub const CLEAN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Programs one slurmd process runs at once (an emulating slurmd serves
/// many nodes; their start-up checks must not fork a thousand at once).
pub const CONCURRENT_RUNS: usize = 8;

/// Longest Reason taken from the program's output, in bytes.
pub const MAX_REASON_BYTES: usize = 256;

/// Output kept from each of the program's stdout and stderr.
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// How long to wait for the output pipes to close once the program has
/// exited (a descendant in a session of its own may keep them open).
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// What slurm.conf says about health checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthConfig {
    pub program: PathBuf,
    /// Zero: only at start-up.
    pub interval: Duration,
    pub states: HealthCheckNodeState,
}

impl HealthConfig {
    /// `None` when no HealthCheckProgram is configured.
    pub fn from_conf(conf: &SlurmConf) -> Option<Self> {
        let program = conf.health_check_program.as_deref()?.trim();
        if program.is_empty() {
            return None;
        }
        Some(Self {
            program: PathBuf::from(program),
            interval: conf.health_check_interval,
            states: conf.health_check_node_state,
        })
    }
}

/// When one node's periodic runs fall: every `period` seconds, at `offset`
/// seconds past each multiple of `period` since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    period: u64,
    offset: u64,
}

impl Schedule {
    /// The runs of node `index` of `count` (its place in slurm.conf). `None`
    /// when `interval` is zero (no periodic runs). Without `cycle` every
    /// node shares offset 0; with it node i starts `interval * i / count`
    /// into each interval. Intervals under a second count as one second.
    pub fn new(interval: Duration, cycle: bool, index: usize, count: usize) -> Option<Self> {
        if interval.is_zero() {
            return None;
        }
        let period = interval.as_secs().max(1);
        let offset = if cycle && count > 1 {
            let i = u128::try_from(index.min(count - 1)).unwrap_or(0);
            let n = u128::try_from(count).unwrap_or(1);
            // i < n, so the quotient is below period and fits.
            u64::try_from(u128::from(period) * i / n).unwrap_or(0)
        } else {
            0
        };
        Some(Self { period, offset })
    }

    pub fn period(&self) -> u64 {
        self.period
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The first run strictly after `now` (Unix seconds).
    pub fn next_after(&self, now: i64) -> i64 {
        let period = i128::from(self.period);
        let now = i128::from(now);
        let since = (now - i128::from(self.offset)).rem_euclid(period);
        let next = now - since + period;
        i64::try_from(next).unwrap_or(i64::MAX)
    }
}

/// A node's state as far as HealthCheckNodeState cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeCondition {
    pub base: BaseState,
    /// DRAIN flag set (draining or drained).
    pub drain: bool,
}

/// The base states the filter distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseState {
    /// No CPU allocated.
    Idle,
    /// Some CPUs allocated.
    Mixed,
    /// Every CPU allocated.
    Allocated,
    /// DOWN, UNKNOWN, FUTURE, ERROR: not a state any filter but ANY runs on.
    Other,
}

impl NodeCondition {
    pub fn from_info(info: &NodeInfo) -> Self {
        let base = match NodeState::try_from(info.state) {
            Ok(NodeState::Idle) => BaseState::Idle,
            Ok(NodeState::Mixed) => BaseState::Mixed,
            Ok(NodeState::Allocated) => BaseState::Allocated,
            _ => BaseState::Other,
        };
        Self {
            base,
            drain: info.state_flags.contains(&(NodeStateFlag::Drain as i32)),
        }
    }
}

/// Whether a periodic run needs the node's state at all.
pub fn needs_state(states: &HealthCheckNodeState) -> bool {
    !states.any
}

/// Whether a node in `c` gets a periodic run: ANY always; IDLE on idle
/// nodes (drained or not); NONDRAINED_IDLE on idle nodes without DRAIN;
/// MIXED on partly and ALLOC on fully allocated nodes. Several may be
/// combined; CYCLE changes only when runs happen.
pub fn state_matches(states: &HealthCheckNodeState, c: &NodeCondition) -> bool {
    if states.any {
        return true;
    }
    match c.base {
        BaseState::Idle => states.idle || (states.nondrained_idle && !c.drain),
        BaseState::Mixed => states.mixed,
        BaseState::Allocated => states.alloc,
        BaseState::Other => false,
    }
}

/// How the program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// Killed after running this long.
    TimedOut(Duration),
    /// It could not be started.
    SpawnFailed(String),
}

impl Exit {
    pub fn success(&self) -> bool {
        matches!(self, Exit::Code(0))
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit status {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
            Exit::TimedOut(d) => write!(f, "timed out after {} ms", d.as_millis()),
            Exit::SpawnFailed(e) => write!(f, "cannot run: {e}"),
        }
    }
}

/// One run of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunResult {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// What a run says about the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Healthy,
    /// Drain the node with this Reason.
    Sick {
        reason: String,
    },
}

/// The verdict of a run: healthy on exit 0; otherwise sick, with the first
/// non-blank line of stdout (else of stderr), trimmed and cut to
/// [`MAX_REASON_BYTES`], or a line that says how the program ended.
pub fn verdict(r: &RunResult) -> Verdict {
    let fallback = match &r.exit {
        Exit::Code(0) => return Verdict::Healthy,
        Exit::Code(n) => format!("HealthCheck exited {n}"),
        Exit::Signal(s) => format!("HealthCheck killed by signal {s}"),
        Exit::TimedOut(d) => {
            return Verdict::Sick {
                reason: format!("HealthCheck timed out after {}s", d.as_secs()),
            }
        }
        Exit::SpawnFailed(e) => {
            return Verdict::Sick {
                reason: cut(&format!("HealthCheck cannot run: {e}")),
            }
        }
    };
    let reason = first_line(&r.stdout)
        .or_else(|| first_line(&r.stderr))
        .unwrap_or(fallback);
    Verdict::Sick { reason }
}

fn first_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines().map(cut).find(|l| !l.is_empty())
}

/// `s` as one trimmed line (control characters turned into spaces) of at
/// most [`MAX_REASON_BYTES`], cut on a character boundary.
fn cut(s: &str) -> String {
    let line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out = String::with_capacity(line.len().min(MAX_REASON_BYTES));
    for c in line.trim().chars() {
        if out.len() + c.len_utf8() > MAX_REASON_BYTES {
            break;
        }
        out.push(c);
    }
    out.trim_end().to_string()
}

/// The program and what it is run for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramRun {
    pub program: PathBuf,
    pub node_name: String,
    pub conf_path: PathBuf,
    pub timeout: Duration,
}

/// Runs the program to its end or its timeout. Blocking: call it from a
/// blocking thread.
pub fn run_program(run: &ProgramRun) -> RunResult {
    let mut cmd = Command::new(&run.program);
    cmd.env_clear()
        .env("PATH", CLEAN_PATH)
        .env("SLURMD_NODENAME", &run.node_name)
        .env("SLURM_CONF", &run.conf_path)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A session of its own lets a timeout kill the whole process group.
    in_new_session(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return RunResult {
                exit: Exit::SpawnFailed(format!("{}: {e}", run.program.display())),
                stdout: Vec::new(),
                stderr: Vec::new(),
            }
        }
    };
    let pgid = i32::try_from(child.id()).unwrap_or(0);
    let stdout = child.stdout.take().map(spawn_reader);
    let stderr = child.stderr.take().map(spawn_reader);
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    let exit = loop {
        match child.try_wait() {
            Ok(Some(status)) => break exit_of(status),
            Ok(None) => {}
            Err(e) => break Exit::SpawnFailed(format!("cannot wait for the program: {e}")),
        }
        let ran = started.elapsed();
        if ran >= run.timeout {
            kill_group(pgid);
            let _ = child.wait();
            break Exit::TimedOut(ran);
        }
        std::thread::sleep(pause.min(run.timeout - ran));
        pause = (pause * 2).min(Duration::from_millis(50));
    };
    // Whatever the program left behind in its session goes with it.
    kill_group(pgid);
    RunResult {
        exit,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}

/// Makes the program `cmd` starts lead a session (and process group) of
/// its own, so that everything it starts can be signalled at once and
/// nothing of it shares slurmd's terminal or group.
pub(crate) fn in_new_session(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and the closure touches nothing
    // else between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

pub(crate) fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: plain syscall on the program's own process group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

pub(crate) fn exit_of(status: ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(s)) => Exit::Signal(s),
        (None, None) => Exit::Code(-1),
    }
}

/// Reads a pipe to its end on a thread of its own, keeping the first
/// [`MAX_OUTPUT_BYTES`] (the rest is read and dropped, so the program
/// never blocks on a full pipe).
fn spawn_reader<R: Read + Send + 'static>(mut pipe: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("health-output".into())
        .spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(kept);
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start a thread to read the health program's output");
    }
    rx
}

fn collect(rx: Option<mpsc::Receiver<Vec<u8>>>) -> Vec<u8> {
    rx.and_then(|rx| rx.recv_timeout(OUTPUT_GRACE).ok())
        .unwrap_or_default()
}

/// A call to the controller that failed.
#[derive(Debug, Error)]
pub enum HealthError {
    #[error("invalid controller address {endpoint}: {detail}")]
    BadEndpoint { endpoint: String, detail: String },
    #[error("cannot sign the request: {detail}")]
    Credential { detail: String },
    #[error("no controller answered {rpc} for node {node}: {last}")]
    Unreachable {
        rpc: &'static str,
        node: String,
        last: String,
    },
    #[error("controller refused {rpc} for node {node}: {code}: {detail}")]
    Refused {
        rpc: &'static str,
        node: String,
        code: ErrorCode,
        detail: String,
    },
    #[error("controller does not report node {node}")]
    NoSuchNode { node: String },
}

impl HealthError {
    /// Whether trying again later can help.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            HealthError::Unreachable { .. } | HealthError::Credential { .. }
        )
    }
}

/// The controller calls a health check needs (SlurmController service):
/// the node's state, and the drain. Made over the daemon's own controller
/// client (its channels, credentials and failover order).
#[derive(Debug, Clone)]
pub struct ControllerAdmin {
    client: ControllerClient,
}

impl ControllerAdmin {
    pub fn new(client: ControllerClient) -> Self {
        Self { client }
    }

    /// Tries each controller until one in control answers.
    async fn call<T, R, F, Fut>(
        &self,
        rpc: &'static str,
        node: &str,
        body: T,
        f: F,
    ) -> Result<R, HealthError>
    where
        T: Clone,
        F: Fn(SlurmControllerClient<Channel>, tonic::Request<T>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        let node = node.to_string();
        self.client
            .call_channel(rpc, body, |ch, r| f(SlurmControllerClient::new(ch), r))
            .await
            .map_err(|e| match e {
                ClientError::BadEndpoint { endpoint, detail } => {
                    HealthError::BadEndpoint { endpoint, detail }
                }
                ClientError::Credential { detail } => HealthError::Credential { detail },
                ClientError::Unreachable { rpc, last } => {
                    HealthError::Unreachable { rpc, node, last }
                }
                ClientError::Refused { rpc, code, detail } => HealthError::Refused {
                    rpc,
                    node,
                    code,
                    detail,
                },
            })
    }

    /// The state of `node` as the controller reports it.
    pub async fn condition(&self, node: &str) -> Result<NodeCondition, HealthError> {
        let body = GetNodesRequest {
            names: vec![node.to_string()],
            ..Default::default()
        };
        let reply = self
            .call("GetNodes", node, body, |mut c, r| async move {
                c.get_nodes(r).await
            })
            .await?;
        reply
            .nodes
            .iter()
            .find(|n| n.name == node)
            .map(NodeCondition::from_info)
            .ok_or_else(|| HealthError::NoSuchNode {
                node: node.to_string(),
            })
    }

    /// `scontrol update NodeName=<node> State=DRAIN Reason=<reason>`.
    pub async fn drain(&self, node: &str, reason: &str) -> Result<(), HealthError> {
        let body = UpdateNodeRequest {
            nodes: node.to_string(),
            state: NodeStateUpdate::Drain as i32,
            reason: Some(reason.to_string()),
            ..Default::default()
        };
        self.call("UpdateNode", node, body, |mut c, r| async move {
            c.update_node(r).await
        })
        .await
        .map(|_| ())
    }
}

/// The health checks of every node this process serves: the program, the
/// controller client, and the bound on programs running at once.
#[derive(Debug)]
pub struct HealthChecker {
    pub config: HealthConfig,
    admin: ControllerAdmin,
    runs: Arc<Semaphore>,
    timeout: Duration,
}

impl HealthChecker {
    pub fn new(config: HealthConfig, admin: ControllerAdmin) -> Self {
        Self::sharing(config, admin, Arc::new(Semaphore::new(CONCURRENT_RUNS)))
    }

    /// A checker bounded by `runs`, shared with the checkers it replaces
    /// (a reconfiguration builds a new one while programs may still run).
    pub fn sharing(config: HealthConfig, admin: ControllerAdmin, runs: Arc<Semaphore>) -> Self {
        Self {
            config,
            admin,
            runs,
            timeout: PROGRAM_TIMEOUT,
        }
    }

    /// The bound on programs running at once.
    pub fn runs(&self) -> Arc<Semaphore> {
        self.runs.clone()
    }

    /// Runs the program for `node` on a blocking thread.
    pub async fn run(&self, node: &str, conf_path: &Path) -> Verdict {
        let _permit = self.runs.acquire().await;
        let run = ProgramRun {
            program: self.config.program.clone(),
            node_name: node.to_string(),
            conf_path: conf_path.to_path_buf(),
            timeout: self.timeout,
        };
        let result = tokio::task::spawn_blocking(move || run_program(&run)).await;
        match result {
            Ok(r) => {
                tracing::debug!(node, exit = ?r.exit, "health check ran");
                verdict(&r)
            }
            Err(e) => Verdict::Sick {
                reason: cut(&format!("HealthCheck cannot run: {e}")),
            },
        }
    }

    /// Drains `node` with `reason` unless it is drained already, retrying
    /// while no controller answers.
    pub async fn report_sick(&self, node: &str, reason: &str) {
        let mut backoff = Backoff::new(Duration::from_secs(5));
        loop {
            let outcome = match self.admin.condition(node).await {
                Ok(c) if c.drain => {
                    tracing::info!(node, reason, "health check failed; node already drained");
                    return;
                }
                // Unknown state (old controller, refused query): drain anyway.
                Ok(_) | Err(HealthError::Refused { .. } | HealthError::NoSuchNode { .. }) => {
                    self.admin.drain(node, reason).await
                }
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => {
                    tracing::warn!(node, reason, "health check failed; node drained");
                    return;
                }
                Err(e) if e.is_transient() => {
                    tracing::debug!(node, error = %e, "cannot drain yet; will retry");
                    tokio::time::sleep(backoff.next_pause()).await;
                }
                Err(e) => {
                    tracing::error!(node, reason, error = %e, "health check failed and the node cannot be drained");
                    return;
                }
            }
        }
    }

    /// The start-up run: before registration, whatever the node's state.
    pub async fn startup(&self, node: &str, conf_path: &Path) {
        if let Verdict::Sick { reason } = self.run(node, conf_path).await {
            self.report_sick(node, &reason).await;
        }
    }

    /// The periodic runs of `node` (`slot`: its index in slurm.conf and the
    /// number of nodes there); returns at once when HealthCheckInterval is
    /// zero, else runs for the daemon's lifetime.
    pub async fn periodic(&self, node: &str, conf_path: &Path, slot: (usize, usize)) {
        let Some(schedule) = Schedule::new(
            self.config.interval,
            self.config.states.cycle,
            slot.0,
            slot.1,
        ) else {
            return;
        };
        loop {
            let now_ms = unix_now_ms();
            let now = now_ms.div_euclid(1000);
            let at = schedule.next_after(now);
            let wait_ms = at.saturating_mul(1000).saturating_sub(now_ms).max(0);
            tokio::time::sleep(Duration::from_millis(
                u64::try_from(wait_ms).unwrap_or(u64::MAX),
            ))
            .await;
            if needs_state(&self.config.states) {
                match self.admin.condition(node).await {
                    Ok(c) if state_matches(&self.config.states, &c) => {}
                    Ok(c) => {
                        tracing::debug!(node, condition = ?c, "health check skipped in this state");
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!(node, error = %e, "node state unknown; health check skipped");
                        continue;
                    }
                }
            }
            if let Verdict::Sick { reason } = self.run(node, conf_path).await {
                self.report_sick(node, &reason).await;
            }
        }
    }
}

fn unix_now_ms() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn states(v: &str) -> HealthCheckNodeState {
        HealthCheckNodeState::parse(v).unwrap()
    }

    fn cond(base: BaseState, drain: bool) -> NodeCondition {
        NodeCondition { base, drain }
    }

    #[test]
    fn config_needs_a_program() {
        let base = "ClusterName=x\nSlurmctldHost=c\n";
        let c = SlurmConf::parse(base, "slurm.conf").unwrap().conf;
        assert_eq!(HealthConfig::from_conf(&c), None);
        let c = SlurmConf::parse(
            &format!(
                "{base}HealthCheckProgram=/usr/sbin/nhc\nHealthCheckInterval=300\n\
                 HealthCheckNodeState=IDLE,CYCLE\n"
            ),
            "slurm.conf",
        )
        .unwrap()
        .conf;
        let h = HealthConfig::from_conf(&c).unwrap();
        assert_eq!(h.program, PathBuf::from("/usr/sbin/nhc"));
        assert_eq!(h.interval, Duration::from_secs(300));
        assert!(h.states.idle && h.states.cycle && !h.states.any);
    }

    #[test]
    fn zero_interval_means_start_up_only() {
        assert_eq!(Schedule::new(Duration::ZERO, false, 0, 1), None);
        assert_eq!(Schedule::new(Duration::ZERO, true, 3, 10), None);
    }

    #[test]
    fn without_cycle_every_node_runs_on_the_multiples() {
        for i in 0..5 {
            let s = Schedule::new(Duration::from_secs(60), false, i, 5).unwrap();
            assert_eq!(s.offset(), 0);
            assert_eq!(s.next_after(0), 60);
            assert_eq!(s.next_after(59), 60);
            assert_eq!(s.next_after(60), 120);
            assert_eq!(s.next_after(1_000_000_019), 1_000_000_020);
        }
    }

    #[test]
    fn cycle_spreads_nodes_over_the_interval() {
        let offsets: Vec<u64> = (0..4)
            .map(|i| {
                Schedule::new(Duration::from_secs(100), true, i, 4)
                    .unwrap()
                    .offset()
            })
            .collect();
        assert_eq!(offsets, vec![0, 25, 50, 75]);
        let s = Schedule::new(Duration::from_secs(100), true, 2, 4).unwrap();
        assert_eq!(s.next_after(0), 50);
        assert_eq!(s.next_after(50), 150);
        assert_eq!(s.next_after(149), 150);
        // One node alone, or a bad index, stays inside the interval.
        assert_eq!(
            Schedule::new(Duration::from_secs(100), true, 0, 1)
                .unwrap()
                .offset(),
            0
        );
        assert_eq!(
            Schedule::new(Duration::from_secs(100), true, 99, 4)
                .unwrap()
                .offset(),
            75
        );
        // Sub-second intervals run every second.
        assert_eq!(
            Schedule::new(Duration::from_millis(10), true, 1, 2)
                .unwrap()
                .period(),
            1
        );
    }

    #[test]
    fn extreme_times_do_not_overflow() {
        let s = Schedule::new(Duration::from_secs(u64::MAX), true, 5, 7).unwrap();
        assert_eq!(s.next_after(i64::MAX), i64::MAX);
        assert!(s.next_after(i64::MIN) > i64::MIN);
        let s = Schedule::new(Duration::from_secs(7), false, 0, 0).unwrap();
        assert_eq!(s.next_after(-1), 0);
        assert_eq!(s.next_after(-8), -7);
    }

    proptest! {
        #[test]
        fn next_run_is_the_first_slot_after_now(
            period in 1u64..100_000,
            count in 1usize..5000,
            index in 0usize..5000,
            cycle: bool,
            now in -1_000_000_000i64..4_000_000_000,
        ) {
            let s = Schedule::new(Duration::from_secs(period), cycle, index, count).unwrap();
            prop_assert!(s.offset() < period);
            let next = s.next_after(now);
            prop_assert!(next > now);
            prop_assert!(next - now <= i64::try_from(period).unwrap());
            prop_assert_eq!((next - i64::try_from(s.offset()).unwrap()).rem_euclid(i64::try_from(period).unwrap()), 0);
        }

        #[test]
        fn cycle_offsets_are_spread_evenly(period in 1u64..10_000, count in 1usize..3000) {
            let offs: Vec<u64> = (0..count)
                .map(|i| Schedule::new(Duration::from_secs(period), true, i, count).unwrap().offset())
                .collect();
            // Non-decreasing, inside the interval, and no gap wider than
            // an even share (rounded up).
            let share = period.div_ceil(u64::try_from(count).unwrap());
            for w in offs.windows(2) {
                prop_assert!(w[0] <= w[1]);
                prop_assert!(w[1] - w[0] <= share);
            }
            prop_assert!(offs.iter().all(|o| *o < period));
        }
    }

    #[test]
    fn node_state_filter() {
        use BaseState::*;
        let any = states("ANY");
        for b in [Idle, Mixed, Allocated, Other] {
            assert!(state_matches(&any, &cond(b, true)));
        }
        assert!(!needs_state(&any));
        assert!(!needs_state(&states("CYCLE")));
        let idle = states("IDLE");
        assert!(needs_state(&idle));
        assert!(state_matches(&idle, &cond(Idle, false)));
        assert!(state_matches(&idle, &cond(Idle, true)));
        assert!(!state_matches(&idle, &cond(Mixed, false)));
        assert!(!state_matches(&idle, &cond(Other, false)));
        let nd = states("NONDRAINED_IDLE");
        assert!(state_matches(&nd, &cond(Idle, false)));
        assert!(!state_matches(&nd, &cond(Idle, true)));
        let busy = states("ALLOC,MIXED");
        assert!(state_matches(&busy, &cond(Allocated, true)));
        assert!(state_matches(&busy, &cond(Mixed, false)));
        assert!(!state_matches(&busy, &cond(Idle, false)));
        assert!(state_matches(&states("ALLOC"), &cond(Allocated, false)));
        assert!(!state_matches(&states("ALLOC"), &cond(Mixed, false)));
        assert!(state_matches(&states("MIXED,CYCLE"), &cond(Mixed, false)));
    }

    #[test]
    fn condition_from_node_info() {
        let info = NodeInfo {
            state: NodeState::Mixed as i32,
            state_flags: vec![NodeStateFlag::Drain as i32],
            ..Default::default()
        };
        assert_eq!(
            NodeCondition::from_info(&info),
            cond(BaseState::Mixed, true)
        );
        let info = NodeInfo {
            state: NodeState::Down as i32,
            ..Default::default()
        };
        assert_eq!(
            NodeCondition::from_info(&info),
            cond(BaseState::Other, false)
        );
        let info = NodeInfo {
            state: 999,
            ..Default::default()
        };
        assert_eq!(NodeCondition::from_info(&info).base, BaseState::Other);
    }

    fn result(exit: Exit, out: &str, err: &str) -> RunResult {
        RunResult {
            exit,
            stdout: out.as_bytes().to_vec(),
            stderr: err.as_bytes().to_vec(),
        }
    }

    fn reason(r: &RunResult) -> String {
        match verdict(r) {
            Verdict::Sick { reason } => reason,
            Verdict::Healthy => panic!("healthy: {r:?}"),
        }
    }

    #[test]
    fn verdicts() {
        assert_eq!(
            verdict(&result(Exit::Code(0), "noise", "")),
            Verdict::Healthy
        );
        assert_eq!(
            reason(&result(Exit::Code(1), "\n  disk /tmp full  \nmore\n", "x")),
            "disk /tmp full"
        );
        assert_eq!(
            reason(&result(Exit::Code(2), " \n", "gpu 3 lost\n")),
            "gpu 3 lost"
        );
        assert_eq!(
            reason(&result(Exit::Code(3), "", "")),
            "HealthCheck exited 3"
        );
        assert_eq!(
            reason(&result(Exit::Code(-1), "", "")),
            "HealthCheck exited -1"
        );
        assert_eq!(
            reason(&result(Exit::Signal(9), "", "")),
            "HealthCheck killed by signal 9"
        );
        assert_eq!(
            reason(&result(
                Exit::TimedOut(Duration::from_secs(60)),
                "partial",
                ""
            )),
            "HealthCheck timed out after 60s"
        );
        assert_eq!(
            reason(&result(
                Exit::SpawnFailed("/x: No such file".into()),
                "",
                ""
            )),
            "HealthCheck cannot run: /x: No such file"
        );
    }

    #[test]
    fn reasons_are_one_bounded_line() {
        let long = "é".repeat(1000);
        let r = reason(&result(Exit::Code(1), &long, ""));
        assert!(r.len() <= MAX_REASON_BYTES);
        assert!(r.chars().all(|c| c == 'é'));
        let r = reason(&result(Exit::Code(1), "a\tb\u{7}c", ""));
        assert_eq!(r, "a b c");
        let bytes = RunResult {
            exit: Exit::Code(1),
            stdout: vec![0xff, b'o', b'k'],
            stderr: Vec::new(),
        };
        assert_eq!(reason(&bytes), "\u{fffd}ok");
    }

    proptest! {
        #[test]
        fn any_output_gives_a_short_single_line_reason(out in ".{0,600}", code in 1i32..256) {
            let r = reason(&result(Exit::Code(code), &out, ""));
            prop_assert!(!r.is_empty());
            prop_assert!(r.len() <= MAX_REASON_BYTES);
            prop_assert!(!r.contains('\n'));
            prop_assert_eq!(r.trim(), r.as_str());
        }
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn run_of(program: PathBuf, timeout: Duration) -> ProgramRun {
        ProgramRun {
            program,
            node_name: "n7".into(),
            conf_path: PathBuf::from("/etc/slurm/slurm.conf"),
            timeout,
        }
    }

    #[test]
    fn program_runs_with_a_clean_environment() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(
            dir.path(),
            "hc",
            "#!/bin/sh\necho \"$SLURMD_NODENAME|$SLURM_CONF|$PATH|$HOME|$(pwd)\"\nexit 4\n",
        );
        let r = run_program(&run_of(p, Duration::from_secs(30)));
        assert_eq!(r.exit, Exit::Code(4));
        let out = String::from_utf8_lossy(&r.stdout);
        assert_eq!(
            out.trim_end(),
            format!("n7|/etc/slurm/slurm.conf|{CLEAN_PATH}||/")
        );
    }

    #[test]
    fn program_that_hangs_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(
            dir.path(),
            "hang",
            "#!/bin/sh\necho started\nsleep 300 &\nsleep 300\n",
        );
        let started = Instant::now();
        let r = run_program(&run_of(p, Duration::from_millis(300)));
        assert!(matches!(r.exit, Exit::TimedOut(_)), "{r:?}");
        // The backgrounded sleep held the pipe too: it was killed with the
        // group, or the output would still be awaited.
        assert!(started.elapsed() < Duration::from_secs(2) + OUTPUT_GRACE);
        assert_eq!(String::from_utf8_lossy(&r.stdout), "started\n");
    }

    #[test]
    fn missing_program_is_a_spawn_failure() {
        let r = run_program(&run_of(
            PathBuf::from("/nonexistent/health"),
            Duration::from_secs(1),
        ));
        assert!(matches!(r.exit, Exit::SpawnFailed(ref e) if e.contains("/nonexistent/health")));
        assert!(matches!(verdict(&r), Verdict::Sick { .. }));
    }

    #[test]
    fn big_output_does_not_block_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(
            dir.path(),
            "chatty",
            "#!/bin/sh\necho first\nhead -c 400000 /dev/zero | tr '\\0' 'x'\nexit 0\n",
        );
        let r = run_program(&run_of(p, Duration::from_secs(30)));
        assert_eq!(r.exit, Exit::Code(0));
        assert_eq!(r.stdout.len(), MAX_OUTPUT_BYTES);
        assert!(r.stdout.starts_with(b"first\n"));
    }
}
