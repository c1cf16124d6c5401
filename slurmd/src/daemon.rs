//! The slurmd daemon: command line, registration with the controller, and
//! the SlurmNode service.
//!
//! ```text
//! start -> load slurm.conf, pick the node (-N or host name; every node of
//! --emulate) -> listen on NodeAddr:Port -> start-up health check (if
//! HealthCheckProgram) -> register (each SlurmctldHost in order, retried
//! with backoff; again when the controller has been silent for
//! SlurmdTimeout) -> periodic health checks
//! Reconfigure, SIGHUP -> re-read slurm.conf, take what may change while
//!                 running (a broken file: log, keep it all) -> register
//! LaunchBatch  -> verify (credential, user, not a repeat) -> reply; then,
//!                 in the background: Prolog, once per job (a failure is
//!                 reported with PrologComplete, ESLURMD_PROLOG_FAILED) ->
//!                 spool/jobNNNNN/launch.pb -> spawn slurmstepd (new
//!                 session, stdio detached) -> it says "started" (or
//!                 "failed": it reports JobComplete itself); a failure of
//!                 slurmd's own is reported with JobComplete.launch_error
//! LaunchProlog -> (PrologFlags=Alloc, through the tree) reply; Prolog once
//!                 per job -> PrologComplete, success or failure
//! SignalJob    -> "signal N" on the job's control socket
//! TerminateJob -> "terminate ..." on the socket; when it says "done" (or
//!                 there is no slurmstepd) and the job's Prolog is over ->
//!                 Epilog -> EpilogComplete with the Epilog's result, retried
//! ```
//!
//! Every report of a launch that failed after its answer (PrologComplete,
//! JobComplete) is retried until the controller acknowledges it, and the
//! job counts as launching here until then: the controller must never find
//! a job it believes started simply missing, nor wait for one forever.
//!
//! A request for a job whose launch is still in progress waits in
//! [`crate::jobs::JobTable`] and is delivered once slurmstepd has said
//! "started" (its socket is bound by then); one for a slurmstepd that is
//! alive but not listening is retried until it listens, exits, or a
//! deadline passes; a terminate that finds nothing is remembered for a
//! launch still on its way. So no terminate is lost to a race with a launch.
//!
//! Per-node state is a [`Node`] value (configuration, job table, last
//! contact) over a [`Host`] that the process's nodes share (credentials,
//! one controller connection, the registration bound, health checks), so
//! the same code serves one node or thousands ([`crate::emulate`]).
//!
//! Reconfigure (and SIGHUP) re-reads slurm.conf; what may change while
//! slurmd runs ([`crate::reconfig`]) is swapped in whole, as one [`Live`]
//! value per node that every request loads once, so nothing ever sees half
//! of an old configuration and half of a new one; then the node registers
//! again. The host reads the file once for all of its nodes: a request
//! that arrived before a read began is served by that read.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use slurm_common::auth::Claims;
use slurm_proto::v1::{
    ActiveStep, DaemonStatusReply, DaemonStatusRequest, EpilogCompleteRequest, ForwardReply,
    ForwardRequest, JobCompleteRequest, LaunchBatchReply, LaunchBatchRequest, LaunchPrologReply,
    LaunchPrologRequest, NodeSignalJobReply, NodeSignalJobRequest, NodeTerminateJobReply,
    NodeTerminateJobRequest, PingNodeReply, PingNodeRequest, PrologCompleteRequest,
    ReconfigureNodeReply, ReconfigureNodeRequest, RegisterNodeRequest, RunningJob,
};
use slurm_proto::{ErrorCode, SlurmNode, SlurmNodeServer, SlurmdInfo, SlurmdInfoServer};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{watch, Notify};
use tonic::{Request, Response, Status};

use crate::client::retry;
use crate::config::NodeSetup;
use crate::control::{self, EndReason};
use crate::health::HealthChecker;
pub use crate::host::{Host, Shared, CONCURRENT_REGISTRATIONS};
use crate::hw::{HwInfo, HwProbe};
use crate::jobs::{JobTable, LaunchGate};
use crate::logging::LogControl;
use crate::prolog::{
    self, JobFacts, Kind, NodeFacts, PrologOutcome, PrologRuns, ScriptConfig, ScriptError,
};
use crate::reconfig::{reload_node, ReconfigOutcome};
use crate::spool;
use crate::Error;

/// Version slurmd reports and prints.
pub const VERSION: &str = "22.05.8";

/// The batch step's number in Slurm's step ids (`SLURM_BATCH_SCRIPT`), as
/// registrations, pings and [`DaemonStatusReply`] carry it.
pub const SLURM_BATCH_SCRIPT: u32 = 0xffff_fffb;

/// How long slurmstepd may take to say whether the script started.
const STEPD_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long past KillWait a terminate (and a signal) waits for a live
/// slurmstepd that does not listen yet.
const LISTEN_GRACE: Duration = Duration::from_secs(5);

/// How long a report of a launch failure waits between tries, at most.
const REPORT_PAUSE: Duration = Duration::from_secs(10);

/// Why a launch that slurmd accepted did not start the batch script.
#[derive(Debug, thiserror::Error)]
enum LaunchFailure {
    /// The node's Prolog failed; PrologComplete has reported it.
    #[error("prolog failed")]
    Prolog,
    /// slurmd could not start slurmstepd (or slurmstepd did not say it
    /// started): reported with JobComplete.launch_error.
    #[error("{detail} ({code})")]
    Start { code: ErrorCode, detail: String },
}

impl LaunchFailure {
    fn start(code: ErrorCode, detail: String) -> Self {
        LaunchFailure::Start { code, detail }
    }
}

/// Where a request for a job's slurmstepd went.
#[derive(Debug)]
enum Delivery {
    /// slurmstepd accepted it.
    Accepted(control::Pending),
    /// The job's launch is in progress and delivers it afterwards.
    Held,
    /// Nothing runs the job here (or its slurmstepd never listened).
    NoStepd,
    /// slurmstepd refused it.
    Refused(control::SendError),
}

/// The jobs a node has, as it reports them to the controller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobsHere {
    /// Jobs with a live slurmstepd, in id order.
    pub running: Vec<u32>,
    /// Jobs whose launch is in progress, in id order (a job can be in both
    /// lists for a moment).
    pub launching: Vec<u32>,
}

impl JobsHere {
    /// Both lists in one, in id order, without repeats.
    pub fn all(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .running
            .iter()
            .chain(&self.launching)
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// The command line of slurmd.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    pub foreground: bool,
    pub node: Option<String>,
    pub conf: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub verbose: u8,
    pub print_hw: bool,
    pub version: bool,
    pub help: bool,
    /// `--emulate NODELIST`: serve every node of the list from this process.
    pub emulate: Option<String>,
}

/// What to do instead of running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

pub const USAGE: &str = "\
Usage: slurmd [OPTIONS]
  -C            print the node's detected hardware configuration and exit
  -D            run in the foreground, log to stderr unless -L is given
  -f file       read configuration from file (default $SLURM_CONF or /etc/slurm/slurm.conf)
  -h            print this help and exit
  -L logfile    log to logfile
  -N nodename   run as the node called nodename
  -v            verbose; repeat for more
  -V            print version and exit
      --emulate nodelist
                serve every node of nodelist (a hostlist expression such as
                n[1-1000], or ALL) from this one process, each on its own
                NodeAddr:Port from slurm.conf, reporting the configured
                hardware; for testing the controller at scale
";

/// Parses slurmd's options (Slurm's letters; `-vvv` and `-fFILE` work).
pub fn parse_args(args: &[String]) -> Result<Args, UsageError> {
    let mut a = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return Err(UsageError(format!("slurmd: unexpected argument {arg:?}")));
        };
        match flags {
            "-help" => {
                a.help = true;
                continue;
            }
            "-version" => {
                a.version = true;
                continue;
            }
            "-emulate" => {
                let value = it.next().ok_or_else(|| {
                    UsageError("slurmd: option '--emulate' requires an argument".into())
                })?;
                a.emulate = Some(value.clone());
                continue;
            }
            _ => {}
        }
        if let Some(value) = flags.strip_prefix("-emulate=") {
            a.emulate = Some(value.to_string());
            continue;
        }
        if flags.starts_with('-') {
            return Err(UsageError(format!("slurmd: unrecognized option '{arg}'")));
        }
        for (i, c) in flags.char_indices() {
            match c {
                'C' => a.print_hw = true,
                'D' => a.foreground = true,
                'h' => a.help = true,
                'v' => a.verbose = a.verbose.saturating_add(1),
                'V' => a.version = true,
                'f' | 'L' | 'N' => {
                    let rest = &flags[i + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        it.next().cloned().ok_or_else(|| {
                            UsageError(format!("slurmd: option requires an argument -- '{c}'"))
                        })?
                    } else {
                        rest.to_string()
                    };
                    match c {
                        'f' => a.conf = Some(PathBuf::from(value)),
                        'L' => a.log_file = Some(PathBuf::from(value)),
                        _ => a.node = Some(value),
                    }
                    break;
                }
                other => {
                    return Err(UsageError(format!("slurmd: invalid option -- '{other}'")));
                }
            }
        }
    }
    if a.emulate.is_some() && a.node.is_some() {
        return Err(UsageError(
            "slurmd: -N and --emulate cannot be used together".into(),
        ));
    }
    Ok(a)
}

/// The configuration path: `-f`, else `$SLURM_CONF`, else the default.
pub fn conf_path(args: &Args) -> PathBuf {
    args.conf
        .clone()
        .or_else(|| std::env::var_os("SLURM_CONF").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"))
}

/// What a node runs with: its setup and the process-wide settings, from
/// one read of slurm.conf. Loaded once per request, swapped whole.
#[derive(Debug)]
pub struct Live {
    pub setup: NodeSetup,
    pub shared: Arc<Shared>,
}

/// Where the hardware a node reports comes from.
#[derive(Debug, Clone)]
pub enum Hardware {
    /// What the probe finds (slurm.conf's figures when it fails).
    Detected(Arc<dyn HwProbe>),
    /// slurm.conf's figures, as they are after the latest reconfiguration
    /// (emulated nodes).
    Configured,
}

/// One node this process serves: its configuration, the jobs it runs, and
/// its registration state. A value per node name, so one process can serve
/// many (see [`crate::emulate`]).
pub struct Node {
    /// NodeName and the spool directory: fixed for the process's lifetime.
    name: String,
    spool_dir: PathBuf,
    pub host: Arc<Host>,
    hardware: Hardware,
    /// The configuration in force; its receivers (the health checks) hear
    /// of reconfigurations.
    live: watch::Sender<Arc<Live>>,
    /// Wakes the registration task to register again.
    pub reregister: Notify,
    last_contact: Mutex<Instant>,
    /// When the controller last sent a request or answered a registration,
    /// unix seconds; 0 before it first did (`scontrol show slurmd`).
    last_controller_message: AtomicI64,
    /// Launches in progress and the requests waiting for them.
    jobs: Mutex<JobTable>,
    /// Each job's Prolog here, run once per job.
    prologs: PrologRuns,
    /// Held while a Prolog or Epilog runs, with PrologFlags=Serial.
    script_turn: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("node", &self.name).finish()
    }
}

impl Node {
    /// A node with a [`Host`] of its own (one slurmd, one node).
    pub fn new(
        setup: NodeSetup,
        probe: Arc<dyn HwProbe>,
        stepd_path: PathBuf,
    ) -> Result<Self, Error> {
        let host = Arc::new(Host::new(&setup, stepd_path)?);
        Ok(Self::with_host(setup, host, Hardware::Detected(probe)))
    }

    /// A node sharing `host` with the other nodes of this process.
    pub fn with_host(setup: NodeSetup, host: Arc<Host>, hardware: Hardware) -> Self {
        let live = Live {
            shared: host.shared(),
            setup,
        };
        Self {
            name: live.setup.node.name.clone(),
            spool_dir: live.setup.spool_dir.clone(),
            host,
            hardware,
            live: watch::Sender::new(Arc::new(live)),
            reregister: Notify::new(),
            last_contact: Mutex::new(Instant::now()),
            last_controller_message: AtomicI64::new(0),
            jobs: Mutex::new(JobTable::default()),
            prologs: PrologRuns::default(),
            script_turn: tokio::sync::Mutex::new(()),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn spool(&self) -> &Path {
        &self.spool_dir
    }

    /// The configuration in force. Load it once per request and use that
    /// value throughout.
    pub fn live(&self) -> Arc<Live> {
        self.live.borrow().clone()
    }

    /// Re-reads slurm.conf (for a Reconfigure or SIGHUP that arrived at
    /// `asked_at`), takes what may change while slurmd runs, and registers
    /// again. Never fails: a file that cannot be used is logged and the
    /// running configuration stays.
    pub async fn reconfigure(&self, asked_at: Instant) -> ReconfigOutcome {
        let outcome = match self.host.reload(asked_at).await {
            Some(shared) => self.take(shared),
            None => ReconfigOutcome::Refused,
        };
        self.reregister.notify_one();
        outcome
    }

    /// Takes `shared` (read by the host) unless the node has it, or a newer
    /// one, already.
    fn take(&self, shared: Arc<Shared>) -> ReconfigOutcome {
        let mut outcome = ReconfigOutcome::Current;
        let mut refused = None;
        self.live.send_if_modified(|live| {
            if live.shared.generation >= shared.generation {
                return false;
            }
            match reload_node(&live.setup, shared.conf.clone()) {
                Ok(r) => {
                    outcome = ReconfigOutcome::Taken {
                        changed: r.changed,
                        kept: r.kept,
                    };
                    *live = Arc::new(Live {
                        setup: r.setup,
                        shared: shared.clone(),
                    });
                    true
                }
                Err(e) => {
                    refused = Some(e);
                    false
                }
            }
        });
        if let Some(e) = refused {
            tracing::error!(node = %self.name, error = %e, "reconfigure refused");
            return ReconfigOutcome::Refused;
        }
        if let ReconfigOutcome::Taken { changed, kept } = &outcome {
            for k in kept {
                tracing::warn!(
                    node = %self.name,
                    key = k.key,
                    running = %k.running,
                    file = %k.file,
                    "{} changed in slurm.conf; slurmd keeps the running value until it restarts",
                    k.key
                );
            }
            if changed.is_empty() {
                tracing::debug!(node = %self.name, "node configuration unchanged");
            } else {
                tracing::info!(node = %self.name, changed = %changed.join(","), "node configuration reloaded");
            }
        }
        outcome
    }

    /// Checks the caller's credential: root, SlurmUser or slurmd's own user.
    fn authorize<T>(&self, req: &Request<T>) -> Result<Claims, Status> {
        let token = slurm_proto::auth_credential(req.metadata()).ok_or_else(|| {
            ErrorCode::ProtocolAuthentication.to_status("missing x-slurm-auth credential")
        })?;
        let claims = self
            .host
            .signing
            .auth
            .verify_now(token)
            .map_err(|e| ErrorCode::AuthCredentialInvalid.to_status(e.to_string()))?;
        if !self
            .live
            .borrow()
            .shared
            .privileged
            .contains(&claims.uid.get())
        {
            return Err(ErrorCode::AccessDenied.to_status(format!(
                "uid {} may not send requests to slurmd",
                claims.uid.get()
            )));
        }
        self.heard_from_controller();
        Ok(claims)
    }

    /// Notes a word from the controller: the registration timer starts
    /// again, and `scontrol show slurmd` has the time.
    fn heard_from_controller(&self) {
        if let Ok(mut t) = self.last_contact.lock() {
            *t = Instant::now();
        }
        self.last_controller_message
            .store(slurm_common::auth::unix_now(), Ordering::Relaxed);
    }

    /// Checks a credential from anyone (a user's `scontrol show slurmd`):
    /// it must be valid, whoever signed it. Not a word from the controller.
    fn authenticate<T>(&self, req: &Request<T>) -> Result<Claims, Status> {
        let token = slurm_proto::auth_credential(req.metadata()).ok_or_else(|| {
            ErrorCode::ProtocolAuthentication.to_status("missing x-slurm-auth credential")
        })?;
        self.host
            .signing
            .auth
            .verify_now(token)
            .map_err(|e| ErrorCode::AuthCredentialInvalid.to_status(e.to_string()))
    }

    /// What this slurmd tells about itself (`scontrol show slurmd`): the
    /// hardware it finds now (not slurm.conf's figures, even with
    /// SlurmdParameters=config_overrides, as Slurm's "Actual" lines), the
    /// steps running here, and the daemon's own facts.
    pub fn daemon_status(&self) -> DaemonStatusReply {
        let live = self.live();
        let setup = &live.setup;
        let (hw, tmp_disk_mb) = match &self.hardware {
            Hardware::Configured => (configured_hw(setup), setup.node.tmp_disk),
            Hardware::Detected(probe) => {
                let hw = probe.probe().unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "hardware probe failed; reporting the configuration");
                    configured_hw(setup)
                });
                let path = crate::config::expand_node_path(
                    &setup.conf.tmp_fs,
                    &setup.node.name,
                    &crate::hw::short_host_name(),
                );
                let tmp = crate::hw::tmp_disk_mb(Path::new(&path)).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot size TmpFS");
                    0
                });
                (hw, tmp)
            }
        };
        let mut jobs = spool::running_jobs(self.spool());
        jobs.sort_unstable();
        DaemonStatusReply {
            node_name: self.name.clone(),
            active_steps: jobs
                .into_iter()
                .map(|job_id| ActiveStep {
                    job_id,
                    step_id: SLURM_BATCH_SCRIPT,
                })
                .collect(),
            cpus: hw.cpus,
            boards: hw.boards,
            sockets: hw.boards.saturating_mul(hw.sockets_per_board),
            cores_per_socket: hw.cores_per_socket,
            threads_per_core: hw.threads_per_core,
            real_memory_mb: hw.real_memory_mb,
            tmp_disk_mb,
            slurmd_start_time: self.host.start_time,
            last_controller_message: self.last_controller_message.load(Ordering::Relaxed),
            pid: std::process::id(),
            debug_level: self.host.debug_level(),
            log_file: self
                .host
                .log_file()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            version: VERSION.to_string(),
        }
    }

    /// Verifies the job credential when the controller sent one: a token
    /// from a privileged uid whose payload, when present, is `job_id=<id>`
    /// or `job=<id>` (further `;key=value` items are ignored). Returns when
    /// the credential was issued.
    fn check_job_credential(&self, req: &LaunchBatchRequest) -> Result<Option<i64>, Status> {
        if req.credential.is_empty() {
            return Ok(None);
        }
        let bad = |detail: String| ErrorCode::InvalidJobCredential.to_status(detail);
        let token = std::str::from_utf8(&req.credential)
            .map_err(|_| bad(format!("job {}: credential is not text", req.job_id)))?;
        let claims = self
            .host
            .signing
            .auth
            .verify_now(token)
            .map_err(|e| bad(format!("job {}: {e}", req.job_id)))?;
        if !self
            .live
            .borrow()
            .shared
            .privileged
            .contains(&claims.uid.get())
        {
            return Err(bad(format!(
                "job {}: credential issued by unprivileged uid {}",
                req.job_id,
                claims.uid.get()
            )));
        }
        if let Some(bound) = credential_job_id(&claims.payload) {
            if bound != req.job_id {
                return Err(bad(format!(
                    "credential is for job {bound}, not job {}",
                    req.job_id
                )));
            }
        }
        Ok(Some(claims.issued_at))
    }

    /// The hardware to report, and whether its live figures (load, free
    /// memory) were measured: not for an emulated node, nor when the probe
    /// failed and slurm.conf's figures stand in.
    fn hw(&self, setup: &NodeSetup) -> (HwInfo, bool) {
        match &self.hardware {
            Hardware::Configured => (configured_hw(setup), false),
            Hardware::Detected(probe) => match probe.probe() {
                Ok(hw) => (hw, true),
                Err(e) => {
                    tracing::warn!(error = %e, "hardware probe failed; reporting the configuration");
                    (configured_hw(setup), false)
                }
            },
        }
    }

    /// TmpDisk to report: the size of TmpFS (`%n` and `%h` expanded, as for
    /// slurmd's other per-node paths), or slurm.conf's figure for an
    /// emulated node and with SlurmdParameters=config_overrides. 0 (not
    /// reported) when the file system cannot be looked at.
    fn tmp_disk(&self, setup: &NodeSetup, short_host: &str) -> u64 {
        if setup.config_overrides() || matches!(self.hardware, Hardware::Configured) {
            return setup.node.tmp_disk;
        }
        let path =
            crate::config::expand_node_path(&setup.conf.tmp_fs, &setup.node.name, short_host);
        crate::hw::tmp_disk_mb(Path::new(&path)).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot size TmpFS; reporting no TmpDisk");
            0
        })
    }

    /// The registration message: detected hardware (or the configured one
    /// with SlurmdParameters=config_overrides) and the running jobs.
    pub fn registration(&self) -> RegisterNodeRequest {
        let live = self.live();
        let setup = &live.setup;
        let (detected, measured) = self.hw(setup);
        let reported = if setup.config_overrides() {
            HwInfo {
                free_memory_mb: detected.free_memory_mb,
                boot_time: detected.boot_time,
                uptime_secs: detected.uptime_secs,
                cpu_load_hundredths: detected.cpu_load_hundredths,
                ..configured_hw(setup)
            }
        } else {
            detected
        };
        let (arch, os) = crate::hw::uname();
        let node = &setup.node;
        let hostname = crate::hw::short_host_name();
        RegisterNodeRequest {
            node_name: node.name.clone(),
            tmp_disk_mb: self.tmp_disk(setup, &hostname),
            hostname,
            version: VERSION.to_string(),
            arch,
            os,
            port: u32::from(node.port),
            cpus: reported.cpus,
            boards: reported.boards,
            sockets: reported.boards.saturating_mul(reported.sockets_per_board),
            cores_per_socket: reported.cores_per_socket,
            threads_per_core: reported.threads_per_core,
            real_memory_mb: reported.real_memory_mb,
            boot_time: reported.boot_time,
            slurmd_start_time: self.host.start_time,
            running_jobs: self
                .jobs_here()
                .all()
                .into_iter()
                .map(|job_id| RunningJob {
                    job_id,
                    step_ids: vec![SLURM_BATCH_SCRIPT],
                })
                .collect(),
            free_memory_mb: reported.free_memory_mb,
            cpu_load_hundredths: reported.cpu_load_hundredths,
            reports_load: measured,
            config_hash: config_hash(&setup.conf_path),
            ..Default::default()
        }
    }

    /// The jobs this node has, for the controller to reconcile with its
    /// own view. Launches in progress are read before the spool: a launch
    /// that ends between the two reads has recorded its slurmstepd's pid by
    /// then, so no job falls between the lists.
    pub fn jobs_here(&self) -> JobsHere {
        let launching = self.lock_jobs().launching_ids();
        let running = spool::running_jobs(self.spool());
        JobsHere { running, launching }
    }

    fn lock_jobs(&self) -> std::sync::MutexGuard<'_, JobTable> {
        // The table stays consistent even if a holder panicked mid-way:
        // every method leaves it valid.
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands `req` to the job's slurmstepd. Waits for one that is alive
    /// but not listening yet (starting) or any more (ending) until it
    /// listens, exits, or `deadline` passes.
    async fn deliver(&self, job_id: u32, req: control::Request, deadline: Instant) -> Delivery {
        let dir = spool::job_dir(self.spool(), job_id);
        let mut pause = Duration::from_millis(5);
        loop {
            {
                // Decided under the lock, so a launch starting meanwhile
                // either sees the remembered terminate or holds the request.
                let mut jobs = self.lock_jobs();
                if jobs.hold(job_id, req) {
                    return Delivery::Held;
                }
                if !spool::read_pid(&dir).is_some_and(spool::stepd_alive) {
                    jobs.remember_ended(job_id, req, Instant::now());
                    return Delivery::NoStepd;
                }
            }
            match control::send(&dir, req).await {
                Ok(p) => return Delivery::Accepted(p),
                Err(e @ control::SendError::Refused { .. }) if !e.is_eof() => {
                    return Delivery::Refused(e)
                }
                Err(e) => {
                    if Instant::now() >= deadline {
                        tracing::warn!(job_id, error = %e, "slurmstepd is alive but takes no requests; giving up");
                        return Delivery::NoStepd;
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
            }
        }
    }

    /// Ends a job's processes here (in the background); the Epilog and
    /// EpilogComplete once they are gone, or at once when nothing runs the
    /// job here.
    async fn terminate(
        self: &Arc<Self>,
        job_id: u32,
        kill_wait_secs: u32,
        reason: EndReason,
        time: i64,
    ) {
        let req = control::Request::Terminate {
            kill_wait_secs,
            reason,
            time,
        };
        tokio::spawn(self.clone().end_job(job_id, req));
    }

    async fn end_job(self: Arc<Self>, job_id: u32, req: control::Request) {
        let kill_wait = match req {
            control::Request::Terminate { kill_wait_secs, .. } => {
                Duration::from_secs(u64::from(kill_wait_secs))
            }
            control::Request::Signal { .. } | control::Request::SignalBatch { .. } => {
                Duration::ZERO
            }
        };
        let deadline = Instant::now() + kill_wait + LISTEN_GRACE;
        match self.deliver(job_id, req, deadline).await {
            // The launch in progress delivers it and comes back here.
            Delivery::Held => {
                tracing::info!(job_id, "terminate waits for the launch in progress");
                return;
            }
            Delivery::Accepted(p) => p.finished().await,
            Delivery::NoStepd => {}
            Delivery::Refused(e) => tracing::warn!(job_id, error = %e, "terminate refused"),
        }
        if !self.lock_jobs().begin_epilog(job_id) {
            // Another terminate of the job runs the Epilog and reports.
            tracing::debug!(job_id, "epilog already running");
            return;
        }
        // A Prolog still preparing the node for the job (PrologFlags=Alloc)
        // finishes first: the Epilog cleans up after it, never beside it.
        self.prologs.wait_idle(job_id).await;
        let (error_code, error_detail) = self.epilog(job_id).await;
        // The job is over here: a later run of it (requeued) runs the
        // Prolog again.
        self.prologs.forget(job_id);
        let body = EpilogCompleteRequest {
            job_id,
            node_name: self.name.clone(),
            error_code,
            error_detail,
        };
        // The client in force at each try: the controllers may change.
        if let Err(e) = retry("EpilogComplete", Duration::from_secs(10), || {
            let client = self.live().shared.client.clone();
            let body = body.clone();
            async move { client.epilog_complete(body).await }
        })
        .await
        {
            tracing::warn!(job_id, error = %e, "controller refused EpilogComplete");
        }
        self.lock_jobs().finish_epilog(job_id);
    }

    /// Where this node's Prolog and Epilog run.
    fn script_node<'a>(&'a self, live: &'a Live) -> NodeFacts<'a> {
        NodeFacts {
            name: &self.name,
            cluster_name: &live.setup.conf.cluster_name,
            conf_path: &live.setup.conf_path,
        }
    }

    /// Runs the Epilog (when one is configured) for a job that has ended
    /// here; EpilogComplete's error code and detail: 0 and nothing when it
    /// succeeded, ESLURMD_EPILOG_FAILED and how it failed otherwise.
    async fn epilog(&self, job_id: u32) -> (i32, String) {
        let facts = self
            .lock_jobs()
            .take_note(job_id)
            .unwrap_or_else(|| JobFacts::new(job_id));
        match self.run_script(Kind::Epilog, &facts).await {
            Ok(()) => (0, String::new()),
            Err(e) => {
                tracing::error!(job_id, node = %self.name, error = %e, "epilog failed; the controller drains the node");
                (ErrorCode::EpilogFailed.number(), e.to_string())
            }
        }
    }

    /// Runs the node's `kind` (when one is configured) for the job of
    /// `facts`, with the settings in force; with PrologFlags=Serial one at
    /// a time on this node.
    async fn run_script(&self, kind: Kind, facts: &JobFacts) -> Result<(), ScriptError> {
        let live = self.live();
        let scripts = ScriptConfig::from_conf(&live.setup.conf);
        let _turn = if scripts.serial && scripts.program(kind).is_some() {
            Some(self.script_turn.lock().await)
        } else {
            None
        };
        prolog::run(kind, &scripts, facts, &self.script_node(&live)).await
    }

    /// The outcome of the job's Prolog here, running it when it has not
    /// run here yet ([`PrologRuns`]). The run that fails reports it with
    /// PrologComplete (ESLURMD_PROLOG_FAILED), retried until the controller
    /// has it, before anyone learns the outcome: the controller drains the
    /// node, requeues the job and ends it on its nodes, whose Epilogs run
    /// as after any job (the job's facts stay noted for it). With
    /// PrologFlags=Alloc a success is reported too, in the background.
    async fn prolog_once(self: &Arc<Self>, facts: JobFacts) -> PrologOutcome {
        let job_id = facts.job_id;
        self.prologs
            .once(job_id, || async {
                let outcome = match self.run_script(Kind::Prolog, &facts).await {
                    Ok(()) => PrologOutcome::Succeeded,
                    Err(e) => {
                        tracing::error!(job_id, node = %self.name, error = %e, "prolog failed; the job does not start here");
                        PrologOutcome::Failed {
                            detail: e.to_string(),
                        }
                    }
                };
                match &outcome {
                    PrologOutcome::Failed { detail } => {
                        self.report_prolog(job_id, ErrorCode::PrologFailed.number(), detail)
                            .await;
                    }
                    PrologOutcome::Succeeded
                        if ScriptConfig::from_conf(&self.live().setup.conf).alloc =>
                    {
                        let node = self.clone();
                        tokio::spawn(async move { node.report_prolog(job_id, 0, "").await });
                    }
                    PrologOutcome::Succeeded => {}
                }
                outcome
            })
            .await
    }

    /// PrologComplete for `job_id`, retried until the controller answers.
    async fn report_prolog(&self, job_id: u32, error_code: i32, error_detail: &str) {
        let body = PrologCompleteRequest {
            job_id,
            node_name: self.name.clone(),
            error_code,
            error_detail: error_detail.to_string(),
        };
        // The client in force at each try: the controllers may change.
        if let Err(e) = retry("PrologComplete", REPORT_PAUSE, || {
            let client = self.live().shared.client.clone();
            let body = body.clone();
            async move { client.prolog_complete(body).await }
        })
        .await
        {
            tracing::warn!(job_id, error = %e, "controller refused PrologComplete");
        }
    }

    /// JobComplete with `launch_error` for a launch slurmd accepted and
    /// could not carry out, retried until the controller answers.
    async fn report_launch_failure(&self, job_id: u32, code: ErrorCode, detail: &str) {
        tracing::error!(job_id, node = %self.name, error = detail, "batch launch failed");
        let body = JobCompleteRequest {
            job_id,
            node_name: self.name.clone(),
            launch_error: code.number(),
            end_time: slurm_common::auth::unix_now(),
            ..Default::default()
        };
        if let Err(e) = retry("JobComplete", REPORT_PAUSE, || {
            let client = self.live().shared.client.clone();
            let body = body.clone();
            async move { client.job_complete(body).await }
        })
        .await
        {
            tracing::warn!(job_id, error = %e, "controller refused JobComplete");
        }
    }

    /// LaunchProlog (PrologFlags=Alloc): runs the job's Prolog here in the
    /// background, once per job, and reports it with PrologComplete. A
    /// request for a job ended here meanwhile (its terminate overtook it)
    /// runs nothing.
    pub fn launch_prolog(self: &Arc<Self>, req: LaunchPrologRequest) -> LaunchPrologReply {
        let job_id = req.job_id;
        if self.lock_jobs().ended_recently(job_id, Instant::now()) {
            tracing::info!(job_id, "job already ended here; its prolog does not run");
            return LaunchPrologReply {};
        }
        let facts = JobFacts::from_prolog(&req);
        // For the Epilog, as a launch's facts are.
        self.lock_jobs().note_launch(facts.clone());
        let node = self.clone();
        tokio::spawn(async move {
            node.prolog_once(facts).await;
        });
        LaunchPrologReply {}
    }

    /// Delivers a request that waited for the job's launch.
    fn deliver_later(self: &Arc<Self>, job_id: u32, req: control::Request) {
        let node = self.clone();
        match req {
            control::Request::Terminate { .. } => {
                tokio::spawn(node.end_job(job_id, req));
            }
            control::Request::Signal { .. } | control::Request::SignalBatch { .. } => {
                tokio::spawn(async move {
                    let deadline = Instant::now() + LISTEN_GRACE;
                    if let Delivery::Refused(e) = node.deliver(job_id, req, deadline).await {
                        tracing::warn!(job_id, error = %e, "signal refused");
                    }
                });
            }
        }
    }

    /// Writes the job's spool directory and starts its slurmstepd. `None`
    /// when the job already runs here. Blocking: file writes and fork.
    fn start_stepd(
        &self,
        req: &LaunchBatchRequest,
    ) -> Result<Option<(tokio::process::Child, PathBuf)>, LaunchFailure> {
        let job_id = req.job_id;
        let dir = spool::job_dir(self.spool(), job_id);
        if spool::read_pid(&dir).is_some_and(spool::stepd_alive) {
            // A repeated launch of a job already running here.
            tracing::info!(job_id, "job already running; launch ignored");
            return Ok(None);
        }
        let io_err = |what: &str, path: &Path, e: std::io::Error| {
            LaunchFailure::start(
                ErrorCode::CreateBatchDir,
                format!("job {job_id}: cannot {what} {}: {e}", path.display()),
            )
        };
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(self.spool()).map_err(|e| io_err("create", self.spool(), e))?;
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o711)
                .create(&dir)
                .map_err(|e| io_err("create", &dir, e))?;
        }
        let spec = dir.join(spool::SPEC_FILE);
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&spec)
                .map_err(|e| io_err("create", &spec, e))?;
            f.write_all(&req.encode_to_vec())
                .map_err(|e| io_err("write", &spec, e))?;
        }

        let live = self.live();
        let mut cmd = tokio::process::Command::new(&self.host.stepd_path);
        cmd.arg("-f")
            .arg(&live.setup.conf_path)
            .arg("-N")
            .arg(&self.name)
            .arg("-J")
            .arg(&dir);
        if let Some(log) = &live.setup.log_file {
            cmd.arg("-L").arg(log);
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(false);
        crate::health::in_new_session(cmd.as_std_mut());
        let child = cmd.spawn().map_err(|e| {
            LaunchFailure::start(
                ErrorCode::ExecveFailed,
                format!(
                    "job {job_id}: cannot start {}: {e}",
                    self.host.stepd_path.display()
                ),
            )
        })?;
        if let Some(pid) = child.id() {
            let pid_file = dir.join(spool::PID_FILE);
            if let Err(e) = std::fs::write(&pid_file, format!("{pid}\n")) {
                tracing::warn!(job_id, error = %e, "cannot record the slurmstepd pid");
            }
        }
        Ok(Some((child, dir)))
    }

    /// Whether this slurmd may start a job of `req`'s user: as root it
    /// starts any user's, otherwise only its own user's.
    fn check_user(&self, req: &LaunchBatchRequest) -> Result<(), Status> {
        let own = crate::users::euid();
        if own != 0 && req.user_id != own {
            return Err(ErrorCode::SetUidOrGid.to_status(format!(
                "slurmd on node {} runs as uid {own}, not root, and cannot start job {} of uid {}",
                self.name, req.user_id, req.job_id
            )));
        }
        Ok(())
    }

    /// Accepts a verified launch: marks the job launching (a repeat of a
    /// launch in progress is accepted and ignored) and carries it out in a
    /// task of its own, so the controller has its answer before the Prolog
    /// runs. That task reports a failure itself, then delivers what
    /// arrived for the job meanwhile.
    async fn launch(
        self: &Arc<Self>,
        req: LaunchBatchRequest,
        issued_at: i64,
    ) -> Result<(), Status> {
        let job_id = req.job_id;
        self.check_user(&req)?;
        match self
            .lock_jobs()
            .begin_launch(job_id, issued_at, Instant::now())
        {
            LaunchGate::Duplicate => {
                tracing::info!(job_id, "launch already in progress; repeat ignored");
                return Ok(());
            }
            LaunchGate::StartTerminated => {
                tracing::info!(
                    job_id,
                    "job was ended before its launch arrived; it ends once started"
                );
            }
            LaunchGate::Start => {}
        }
        let node = self.clone();
        tokio::spawn(async move {
            match node.start_job(req).await {
                Ok(()) | Err(LaunchFailure::Prolog) => {}
                Err(LaunchFailure::Start { code, detail }) => {
                    node.report_launch_failure(job_id, code, &detail).await;
                }
            }
            // Reported: the job is no longer launching here.
            for r in node.lock_jobs().finish_launch(job_id) {
                node.deliver_later(job_id, r);
            }
        });
        Ok(())
    }

    /// The job's Prolog (once per job: with PrologFlags=Alloc it may have
    /// run, or be running, already), then its slurmstepd.
    async fn start_job(self: &Arc<Self>, req: LaunchBatchRequest) -> Result<(), LaunchFailure> {
        let job_id = req.job_id;
        let facts = JobFacts::from_launch(&req);
        self.lock_jobs().note_launch(facts.clone());
        if spool::read_pid(&spool::job_dir(self.spool(), job_id)).is_some_and(spool::stepd_alive) {
            tracing::info!(job_id, "job already running; launch ignored");
            return Ok(());
        }
        if let PrologOutcome::Failed { .. } = self.prolog_once(facts).await {
            return Err(LaunchFailure::Prolog);
        }
        let node = self.clone();
        let started = tokio::task::spawn_blocking(move || node.start_stepd(&req))
            .await
            .map_err(|e| {
                LaunchFailure::start(
                    ErrorCode::Internal,
                    format!("job {job_id}: launch task: {e}"),
                )
            })??;
        let Some((mut child, dir)) = started else {
            return Ok(());
        };
        let stdout = child.stdout.take();
        // Reap slurmstepd whenever it ends; a restarted slurmd leaves this
        // to init.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        let mut line = String::new();
        if let Some(out) = stdout {
            let mut reader = BufReader::new(out);
            let read = tokio::time::timeout(STEPD_START_TIMEOUT, reader.read_line(&mut line)).await;
            if read.is_err() {
                return Err(LaunchFailure::start(
                    ErrorCode::SocketTimeout,
                    format!(
                        "job {job_id}: slurmstepd did not report within {}s",
                        STEPD_START_TIMEOUT.as_secs()
                    ),
                ));
            }
        }
        let line = line.trim_end();
        if line.starts_with("started ") {
            tracing::info!(job_id, "batch script started");
            return Ok(());
        }
        if let Some(msg) = line.strip_prefix("failed ") {
            // slurmstepd reports this launch failure through JobComplete.
            tracing::warn!(job_id, error = msg, "batch launch failed");
            return Ok(());
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(LaunchFailure::start(
            ErrorCode::ExecveFailed,
            format!(
                "job {job_id}: slurmstepd failed before launching: {}",
                if line.is_empty() { "no report" } else { line }
            ),
        ))
    }
}

/// The job id a job credential's payload binds (`job=42` or `job_id=42`,
/// possibly followed by `;key=value` items).
pub fn credential_job_id(payload: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(payload).ok()?;
    text.split(';')
        .find_map(|item| {
            let item = item.trim();
            item.strip_prefix("job_id=")
                .or_else(|| item.strip_prefix("job="))
        })
        .and_then(|v| v.trim().parse().ok())
}

/// The node's sizes as slurm.conf states them.
pub fn configured_hw(setup: &NodeSetup) -> HwInfo {
    let n = &setup.node;
    HwInfo {
        cpus: n.cpus,
        boards: u32::from(n.boards),
        sockets_per_board: u32::from(n.sockets_per_board),
        cores_per_socket: u32::from(n.cores_per_socket),
        threads_per_core: u32::from(n.threads_per_core),
        real_memory_mb: n.real_memory,
        free_memory_mb: 0,
        boot_time: 0,
        uptime_secs: 0,
        cpu_load_hundredths: 0,
    }
}

/// FNV-1a of slurm.conf, hex: lets the controller spot a node whose
/// configuration differs from its own.
pub fn config_hash(path: &Path) -> String {
    // The controller hashes its own file with the same function.
    std::fs::read(path)
        .map(|bytes| slurm_common::conf::conf_hash(&bytes))
        .unwrap_or_default()
}

/// The gRPC face of [`Node`].
#[derive(Debug, Clone)]
pub struct NodeService(pub Arc<Node>);

#[tonic::async_trait]
impl SlurmNode for NodeService {
    async fn launch_batch(
        &self,
        request: Request<LaunchBatchRequest>,
    ) -> Result<Response<LaunchBatchReply>, Status> {
        self.0.authorize(&request)?;
        let req = request.into_inner();
        let span = tracing::info_span!("launch_batch", job_id = req.job_id, node = %self.0.name);
        let _e = span.enter();
        let issued_at = self
            .0
            .check_job_credential(&req)?
            .unwrap_or_else(slurm_common::auth::unix_now);
        drop(_e);
        self.0.launch(req, issued_at).await?;
        Ok(Response::new(LaunchBatchReply {}))
    }

    async fn signal_job(
        &self,
        request: Request<NodeSignalJobRequest>,
    ) -> Result<Response<NodeSignalJobReply>, Status> {
        self.0.authorize(&request)?;
        self.0.signal(request.into_inner()).await.map(Response::new)
    }

    async fn terminate_job(
        &self,
        request: Request<NodeTerminateJobRequest>,
    ) -> Result<Response<NodeTerminateJobReply>, Status> {
        self.0.authorize(&request)?;
        Ok(Response::new(
            self.0.terminate_request(request.into_inner()).await,
        ))
    }

    async fn ping_node(
        &self,
        request: Request<PingNodeRequest>,
    ) -> Result<Response<PingNodeReply>, Status> {
        self.0.authorize(&request)?;
        Ok(Response::new(self.0.ping()))
    }

    async fn reconfigure(
        &self,
        request: Request<ReconfigureNodeRequest>,
    ) -> Result<Response<ReconfigureNodeReply>, Status> {
        self.0.authorize(&request)?;
        // Answered whatever the file holds: a broken one is logged and the
        // running configuration stays.
        self.0.reconfigure(Instant::now()).await;
        Ok(Response::new(ReconfigureNodeReply {}))
    }

    async fn forward(
        &self,
        request: Request<ForwardRequest>,
    ) -> Result<Response<ForwardReply>, Status> {
        self.0.authorize(&request)?;
        let token = slurm_proto::auth_credential(request.metadata())
            .unwrap_or_default()
            .to_string();
        let req = request.into_inner();
        let shutdown = matches!(
            req.message.as_ref().and_then(|m| m.body.as_ref()),
            Some(slurm_proto::v1::node_message::Body::Shutdown(_))
        );
        let results = crate::forward::relay(&self.0, req, &token).await?;
        if shutdown {
            // Only now: the subtree has had the message, and the server
            // finishes this call (the answer) before it stops.
            tracing::info!("shutdown requested by the controller; running jobs keep running");
            self.0.host.request_stop();
        }
        Ok(Response::new(ForwardReply { results }))
    }
}

/// The gRPC face of [`Node::daemon_status`]: any user may ask.
#[derive(Debug, Clone)]
pub struct SlurmdInfoService(pub Arc<Node>);

#[tonic::async_trait]
impl SlurmdInfo for SlurmdInfoService {
    async fn get_daemon_status(
        &self,
        request: Request<DaemonStatusRequest>,
    ) -> Result<Response<DaemonStatusReply>, Status> {
        self.0.authenticate(&request)?;
        let node = self.0.clone();
        // The probe reads /proc and statvfs: off the async threads.
        tokio::task::spawn_blocking(move || node.daemon_status())
            .await
            .map(Response::new)
            .map_err(|e| ErrorCode::Internal.to_status(e.to_string()))
    }
}

impl Node {
    /// SignalJob, through the job's slurmstepd (after the launch, when
    /// one is in progress); a job without one here has nothing to signal.
    /// As in Slurm, which processes get it depends on the flags:
    /// `batch_only` (`scancel -b`, `--signal=B:`) the batch shell alone;
    /// `full` (`scancel -f`), or SIGKILL, the shell's whole process group;
    /// neither, the job's steps but not its batch shell. A batch job has no
    /// step besides the batch shell, so that is nothing here.
    pub async fn signal(&self, req: NodeSignalJobRequest) -> Result<NodeSignalJobReply, Status> {
        // A number no signal has (`scancel -s 99`) reaches no process, as
        // kill(2) refuses it in Slurm's slurmd; the node answers all the
        // same (an error here would read as a node that did not answer).
        let Some(signal) = i32::try_from(req.signal)
            .ok()
            .filter(|s| (1..=64).contains(s))
        else {
            tracing::warn!(
                job_id = req.job_id,
                signal = req.signal,
                "not a signal number: nothing sent"
            );
            return Ok(NodeSignalJobReply {});
        };
        let deadline = Instant::now() + LISTEN_GRACE;
        let request = if req.batch_only {
            control::Request::SignalBatch { signal }
        } else if req.full || signal == libc::SIGKILL {
            control::Request::Signal { signal }
        } else {
            tracing::debug!(
                job_id = req.job_id,
                signal,
                "signal for the job's steps: none runs here besides the batch shell"
            );
            return Ok(NodeSignalJobReply {});
        };
        match self.deliver(req.job_id, request, deadline).await {
            Delivery::Accepted(_) | Delivery::Held | Delivery::NoStepd => Ok(NodeSignalJobReply {}),
            Delivery::Refused(e) => {
                Err(ErrorCode::KillTaskFailed.to_status(format!("job {}: {e}", req.job_id)))
            }
        }
    }

    /// TerminateJob with KillWait defaulting to slurm.conf's.
    pub async fn terminate_request(
        self: &Arc<Self>,
        req: NodeTerminateJobRequest,
    ) -> NodeTerminateJobReply {
        let kill_wait = if req.kill_wait_secs > 0 {
            req.kill_wait_secs
        } else {
            u32::try_from(self.live().setup.conf.kill_wait.as_secs()).unwrap_or(u32::MAX)
        };
        // For the Epilog, which may run after the launch in progress.
        self.lock_jobs().note_end(JobFacts::from_terminate(&req));
        self.terminate(
            req.job_id,
            kill_wait,
            EndReason::from_job_state(req.reason),
            req.time,
        )
        .await;
        NodeTerminateJobReply {}
    }

    /// The answer to a ping: health figures and every job here, launches
    /// in progress included, so the controller can find jobs it believes
    /// run here that do not (and jobs here it does not know).
    pub fn ping(&self) -> PingNodeReply {
        let (hw, measured) = self.hw(&self.live().setup);
        let jobs = self.jobs_here();
        PingNodeReply {
            node_name: self.name.clone(),
            cpu_load_hundredths: hw.cpu_load_hundredths,
            free_memory_mb: hw.free_memory_mb,
            boot_time: hw.boot_time,
            running_job_ids: jobs.running,
            launching_job_ids: jobs.launching,
            reports_jobs: true,
            reports_load: measured,
            slurmd_start_time: self.host.start_time,
        }
    }
}

/// Registers, then again whenever asked or when the controller has not
/// been heard from for SlurmdTimeout. Runs for the daemon's lifetime.
pub async fn registration_loop(node: Arc<Node>) {
    loop {
        let reply = retry("RegisterNode", Duration::from_secs(5), || async {
            // A closed semaphore (never closed) would only mean no bound.
            let _permit = node.host.registrations.acquire().await;
            // The client in force at each try: the controllers may change.
            let client = node.live().shared.client.clone();
            client.register_node(node.registration()).await
        })
        .await;
        let live = node.live();
        match reply {
            Ok(r) => {
                node.heard_from_controller();
                if r.invalid {
                    tracing::warn!(node = %node.name(), reason = %r.invalid_reason, "controller marked this node invalid");
                } else {
                    tracing::info!(node = %node.name(), "registered with the controller");
                }
                let kill_wait =
                    u32::try_from(live.setup.conf.kill_wait.as_secs()).unwrap_or(u32::MAX);
                for job_id in r.abort_job_ids {
                    tracing::info!(job_id, "controller does not know this job; ending it");
                    node.terminate(
                        job_id,
                        kill_wait,
                        EndReason::Other,
                        slurm_common::auth::unix_now(),
                    )
                    .await;
                }
            }
            Err(e) => {
                tracing::error!(node = %node.name(), error = %e, "controller refused the registration")
            }
        }
        let silence = live.setup.conf.slurmd_timeout;
        if silence.is_zero() {
            node.reregister.notified().await;
            continue;
        }
        loop {
            let since = node
                .last_contact
                .lock()
                .map(|t| t.elapsed())
                .unwrap_or_default();
            let left = silence.saturating_sub(since);
            if left.is_zero() {
                tracing::info!("no word from the controller for SlurmdTimeout; registering again");
                break;
            }
            tokio::select! {
                () = node.reregister.notified() => break,
                () = tokio::time::sleep(left) => {}
            }
        }
    }
}

/// What a node does for the daemon's lifetime besides answering RPCs:
/// the start-up health check, then registration and the periodic checks.
pub async fn node_lifecycle(node: Arc<Node>) {
    let live = node.live();
    if let Some(health) = &live.shared.health {
        health.startup(node.name(), &live.setup.conf_path).await;
    }
    drop(live);
    // Aborting the lifecycle (shutdown) stops the registration loop too.
    let reg = AbortOnDrop(tokio::spawn(registration_loop(node.clone())));
    tokio::select! {
        () = health_checks(&node) => {}
        _ = reg.wait() => {}
    }
}

/// The periodic health checks, for the daemon's lifetime, with the
/// settings in force: a reconfiguration that changes the health check (or
/// the controllers it reports to) restarts them with the new ones.
async fn health_checks(node: &Node) {
    let mut updates = node.live.subscribe();
    loop {
        let live = updates.borrow_and_update().clone();
        let checker = live.shared.health.clone();
        let checks = async {
            if let Some(health) = &checker {
                health
                    .periodic(node.name(), &live.setup.conf_path, live.setup.node_slot())
                    .await;
            }
            // No periodic runs: wait for a reconfiguration.
            std::future::pending::<()>().await;
        };
        tokio::select! {
            () = checks => {}
            () = health_changed(&mut updates, checker.as_ref()) => {}
        }
    }
}

/// Resolves once the configuration in force has a health checker other
/// than `running`.
async fn health_changed(
    updates: &mut watch::Receiver<Arc<Live>>,
    running: Option<&Arc<HealthChecker>>,
) {
    loop {
        if updates.changed().await.is_err() {
            // The node is gone: nothing will change any more.
            return std::future::pending().await;
        }
        let same = match (&updates.borrow_and_update().shared.health, running) {
            (Some(now), Some(was)) => Arc::ptr_eq(now, was),
            (None, None) => true,
            _ => false,
        };
        if !same {
            return;
        }
    }
}

/// Aborts the task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    async fn wait(mut self) -> Result<(), tokio::task::JoinError> {
        (&mut self.0).await
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Binds `node`'s NodeAddr:Port.
pub async fn bind(node: &Node) -> Result<tokio::net::TcpListener, Error> {
    let addr = node.live().setup.listen_addr();
    tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| Error::Listen {
            addr,
            detail: e.to_string(),
        })
}

/// Resolves once SIGTERM or SIGINT arrives.
pub async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
    tracing::info!("shutting down; running jobs keep running");
}

/// The SIGHUP stream; `None` (logged) when it cannot be had.
fn hangup_signal() -> Option<tokio::signal::unix::Signal> {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot handle SIGHUP; only Reconfigure re-reads slurm.conf");
            None
        }
    }
}

/// SIGHUP does what Reconfigure does, for every node of the process.
async fn reconfigure_on_hangup(signal: Option<tokio::signal::unix::Signal>, nodes: Vec<Arc<Node>>) {
    let Some(mut signal) = signal else {
        return;
    };
    while signal.recv().await.is_some() {
        let asked_at = Instant::now();
        tracing::info!("SIGHUP: re-reading slurm.conf");
        for node in &nodes {
            node.reconfigure(asked_at).await;
        }
    }
}

/// Binds the listener, serves SlurmNode and registers; returns when the
/// server stops (SIGTERM or SIGINT).
pub async fn serve(node: Arc<Node>) -> Result<(), Error> {
    serve_all(vec![node]).await
}

/// Serves every node on its own listener (all bound before anything else
/// starts, so a taken port fails the start), runs their lifecycles, and
/// returns when SIGTERM or SIGINT arrives or a server fails.
pub async fn serve_all(nodes: Vec<Arc<Node>>) -> Result<(), Error> {
    let mut listeners = Vec::with_capacity(nodes.len());
    for node in &nodes {
        listeners.push(bind(node).await?);
    }
    // Installed before anything can register, so a SIGHUP from then on
    // never takes the default action (ending the process).
    let hangups = AbortOnDrop(tokio::spawn(reconfigure_on_hangup(
        hangup_signal(),
        nodes.clone(),
    )));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut servers = tokio::task::JoinSet::new();
    let mut lifecycles = tokio::task::JoinSet::new();
    for (node, listener) in nodes.iter().zip(listeners) {
        let addr = node.live().setup.listen_addr();
        if nodes.len() == 1 {
            tracing::info!(node = %node.name(), %addr, "slurmd listening");
        } else {
            tracing::debug!(node = %node.name(), %addr, "slurmd listening");
        }
        let incoming =
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        let mut stop = stop_rx.clone();
        // A launch carries the job's script and environment (Slurm allows
        // 4 MB scripts): above the 4 MB gRPC default.
        let service =
            SlurmNodeServer::new(NodeService(node.clone())).max_decoding_message_size(64 << 20);
        let info = SlurmdInfoServer::new(SlurmdInfoService(node.clone()));
        servers.spawn(async move {
            tonic::transport::Server::builder()
                .add_service(service)
                .add_service(info)
                .serve_with_incoming_shutdown(incoming, async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await
                .map_err(|e| Error::Listen {
                    addr,
                    detail: e.to_string(),
                })
        });
        lifecycles.spawn(node_lifecycle(node.clone()));
    }
    if nodes.len() > 1 {
        tracing::info!(nodes = nodes.len(), "slurmd listening for every node");
    }
    // The local credential service (auth/slurm), for users without the key.
    let _sack = nodes
        .first()
        .and_then(|n| n.host.sack_setup())
        .map(|setup| AbortOnDrop(tokio::spawn(crate::sack::serve(setup))));
    let mut result = Ok(());
    // The controller's shutdown request (every node of a process shares
    // its host, so any of them stops the process).
    let mut stops = tokio::task::JoinSet::new();
    for node in &nodes {
        let node = node.clone();
        stops.spawn(async move { node.host.stop_requested().await });
    }
    tokio::select! {
        () = shutdown_signal() => {}
        Some(_) = stops.join_next() => {}
        Some(done) = servers.join_next() => {
            result = match done {
                Ok(r) => r,
                Err(e) => Err(Error::Listen { addr: "server task".into(), detail: e.to_string() }),
            };
        }
    }
    let _ = stop_tx.send(true);
    drop(hangups);
    lifecycles.abort_all();
    while let Some(done) = servers.join_next().await {
        if let (Ok(Err(e)), Ok(())) = (done, &result) {
            result = Err(e);
        }
    }
    result
}

/// Raises the soft limit on open files to the hard limit: a node keeps a
/// connection per peer, and an emulating slurmd a listener per node on top.
/// Returns the soft limit in force afterwards.
pub fn raise_nofile_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim = raised;
        } else {
            tracing::warn!(error = %std::io::Error::last_os_error(), "cannot raise the open files limit");
        }
    }
    lim.rlim_cur
}

/// Detaches from the terminal (no -D): fork, the parent exits, the child
/// starts a new session. Must run before any thread is started.
pub fn daemonize() -> std::io::Result<()> {
    // SAFETY: called while single-threaded; the child only continues normal
    // Rust execution, the parent exits immediately.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: plain syscall.
            unsafe { libc::setsid() };
            if let Ok(null) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
            {
                use std::os::fd::AsRawFd;
                for fd in 0..3 {
                    // SAFETY: dup2 onto the standard descriptors.
                    unsafe { libc::dup2(null.as_raw_fd(), fd) };
                }
            }
            Ok(())
        }
        // SAFETY: the parent leaves without running destructors or atexit
        // handlers that belong to the child now.
        _ => unsafe { libc::_exit(0) },
    }
}

/// Runs slurmd with parsed arguments; the process exit status.
pub fn run(args: Args) -> i32 {
    let print = |text: &str| {
        use std::io::Write;
        let mut out = std::io::stdout();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    };
    if args.help {
        print(USAGE);
        return 0;
    }
    if args.version {
        print(&format!("slurm-wlm {VERSION}\n"));
        return 0;
    }
    let probe: Arc<dyn HwProbe> = Arc::new(crate::hw::ProcProbe::default());
    if args.print_hw {
        return match probe.probe() {
            Ok(hw) => {
                let name = args.node.clone().unwrap_or_else(crate::hw::short_host_name);
                print(&crate::hw::format_node_line(&name, &hw));
                0
            }
            Err(e) => {
                eprintln!("slurmd: error: {e}");
                1
            }
        };
    }
    let conf = conf_path(&args);
    let host = crate::hw::short_host_name();
    let setups = match &args.emulate {
        Some(expr) => crate::emulate::load(&conf, expr, &host),
        None => NodeSetup::load(&conf, args.node.as_deref(), &host)
            .map(|s| vec![s])
            .map_err(Error::from),
    };
    let setups = match setups {
        Ok(s) => s,
        Err(e) => {
            eprintln!("slurmd: fatal: {e}");
            return 1;
        }
    };
    if !args.foreground {
        if let Err(e) = daemonize() {
            eprintln!("slurmd: fatal: cannot daemonize: {e}");
            return 1;
        }
    }
    let log_file = args
        .log_file
        .clone()
        .or_else(|| setups.first().and_then(|s| s.log_file.clone()));
    let level = setups
        .first()
        .map(|s| s.conf.slurmd_debug)
        .unwrap_or_default();
    let log = crate::logging::init(log_file.as_deref(), args.verbose, level);
    let hardware = if args.emulate.is_some() {
        Hardware::Configured
    } else {
        Hardware::Detected(probe)
    };
    match run_daemon(setups, hardware, log, args.verbose) {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!(error = %e, "slurmd stopped");
            eprintln!("slurmd: fatal: {e}");
            1
        }
    }
}

/// Writes the pid files, makes the spool directories and runs the nodes
/// until a signal stops them. Emulated nodes report their configured
/// hardware (`Hardware::Configured`); a real one what its probe finds.
fn run_daemon(
    setups: Vec<NodeSetup>,
    hardware: Hardware,
    log: Option<LogControl>,
    verbosity: u8,
) -> Result<(), Error> {
    let emulated = matches!(hardware, Hardware::Configured);
    let nofile = raise_nofile_limit();
    if emulated {
        let needed = crate::emulate::fds_needed(setups.len());
        if nofile < needed {
            tracing::warn!(
                limit = nofile,
                needed,
                nodes = setups.len(),
                "the open files limit is low for this many nodes; raise the hard limit (ulimit -Hn)"
            );
        }
    }
    for pid_file in crate::emulate::pid_files(&setups) {
        std::fs::write(&pid_file, format!("{}\n", std::process::id())).map_err(|source| {
            Error::PidFile {
                path: pid_file.clone(),
                source,
            }
        })?;
    }
    for setup in &setups {
        std::fs::create_dir_all(&setup.spool_dir).map_err(|source| Error::CreateDir {
            path: setup.spool_dir.clone(),
            source,
        })?;
    }
    if setups.is_empty() {
        return Ok(());
    }
    let stepd_path = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("slurmstepd")))
        .unwrap_or_else(|| PathBuf::from("slurmstepd"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| Error::Runtime { source })?;
    let started = Instant::now();
    runtime.block_on(async move {
        let Some(first) = setups.first() else {
            return Ok(());
        };
        let host = Arc::new(Host::new(first, stepd_path)?
                .with_log(log)
                .with_verbosity(verbosity));
        let nodes: Vec<Arc<Node>> = setups
            .into_iter()
            .map(|setup| Arc::new(Node::with_host(setup, host.clone(), hardware.clone())))
            .collect();
        for node in &nodes {
            let running = spool::running_jobs(node.spool());
            if !running.is_empty() {
                tracing::info!(node = %node.name(), ?running, "found running jobs from an earlier slurmd");
            }
        }
        if emulated {
            tracing::info!(
                nodes = nodes.len(),
                open_files_limit = nofile,
                setup_ms = started.elapsed().as_millis(),
                "emulating nodes"
            );
        }
        serve_all(nodes).await
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Result<Args, UsageError> {
        parse_args(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn options() {
        let a = args(&["-D", "-N", "n1", "-f", "/c", "-vvv", "-L/log"]).unwrap();
        assert!(a.foreground);
        assert_eq!(a.node.as_deref(), Some("n1"));
        assert_eq!(a.conf, Some(PathBuf::from("/c")));
        assert_eq!(a.log_file, Some(PathBuf::from("/log")));
        assert_eq!(a.verbose, 3);
        assert!(args(&["-C"]).unwrap().print_hw);
        assert!(args(&["-V"]).unwrap().version);
        assert!(args(&["--version"]).unwrap().version);
        assert!(args(&["-DNn2"]).unwrap().node.as_deref() == Some("n2"));
        assert_eq!(
            args(&["-x"]).unwrap_err().0,
            "slurmd: invalid option -- 'x'"
        );
        assert!(args(&["-N"]).is_err());
        assert!(args(&["stray"]).is_err());
    }

    #[test]
    fn emulate_option() {
        let a = args(&["-D", "--emulate", "n[1-1000]"]).unwrap();
        assert_eq!(a.emulate.as_deref(), Some("n[1-1000]"));
        assert!(a.foreground);
        let a = args(&["--emulate=ALL", "-v"]).unwrap();
        assert_eq!(a.emulate.as_deref(), Some("ALL"));
        assert_eq!(
            args(&["--emulate"]).unwrap_err().0,
            "slurmd: option '--emulate' requires an argument"
        );
        assert!(args(&["--emulate", "n1", "-N", "n1"]).is_err());
        assert_eq!(
            args(&["--bogus"]).unwrap_err().0,
            "slurmd: unrecognized option '--bogus'"
        );
        assert!(USAGE.contains("--emulate nodelist"));
    }

    #[test]
    fn nofile_limit_is_raised_to_the_hard_limit() {
        let soft = raise_nofile_limit();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(soft, lim.rlim_cur);
        // An unlimited hard limit cannot be the soft one for open files.
        assert!(lim.rlim_cur == lim.rlim_max || lim.rlim_max == libc::RLIM_INFINITY);
    }

    #[test]
    fn conf_path_default() {
        let a = Args {
            conf: Some("/x".into()),
            ..Default::default()
        };
        assert_eq!(conf_path(&a), PathBuf::from("/x"));
    }

    #[tokio::test]
    async fn a_shutdown_message_is_answered_and_the_host_stops_when_told() {
        use crate::forward::Local;
        let dir = tempfile::tempdir().unwrap();
        let node = Arc::new(test_node(dir.path()));
        let message = slurm_proto::v1::NodeMessage {
            body: Some(slurm_proto::v1::node_message::Body::Shutdown(
                Default::default(),
            )),
        };
        let r = node.clone().handle(message).await;
        assert_eq!(r.error_code, 0, "{}", r.error_detail);
        assert!(matches!(
            r.reply.and_then(|b| b.body),
            Some(slurm_proto::v1::node_reply::Body::Shutdown(_))
        ));
        // Answering alone stops nothing: the relay still serves its subtree.
        let early = tokio::time::timeout(Duration::ZERO, node.host.stop_requested()).await;
        assert!(early.is_err());
        node.host.request_stop();
        tokio::time::timeout(Duration::from_secs(10), node.host.stop_requested())
            .await
            .unwrap();
    }

    /// A node of a one-node slurm.conf in `dir` (spool under it), with
    /// fixed hardware and no slurmstepd.
    fn test_node(dir: &Path) -> Node {
        write_conf(
            dir,
            "SlurmdParameters=config_overrides\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory=100\n",
        );
        slurm_common::auth::generate_key(&dir.join("slurm.key")).unwrap();
        let setup = NodeSetup::load(&dir.join("slurm.conf"), Some("n1"), "vm").unwrap();
        let hw = configured_hw(&setup);
        Node::new(
            setup,
            Arc::new(crate::hw::FakeProbe(hw)),
            dir.join("no-slurmstepd"),
        )
        .unwrap()
    }

    /// Writes `dir`/slurm.conf: a controller, auth, a spool under `dir`,
    /// then `rest` (settings and node lines).
    fn write_conf(dir: &Path, rest: &str) {
        std::fs::write(
            dir.join("slurm.conf"),
            format!(
                "ClusterName=t\nSlurmctldHost=localhost(127.0.0.1)\nAuthType=auth/slurm\n\
                 SlurmdSpoolDir={}/spool/%n\n{rest}",
                dir.display()
            ),
        )
        .unwrap();
    }

    const OVERRIDES: &str = "SlurmdParameters=config_overrides\n";

    /// Resolves once the node was told to register again; fails after a
    /// deadline otherwise.
    async fn told_to_register(node: &Node) {
        tokio::time::timeout(Duration::from_secs(10), node.reregister.notified())
            .await
            .expect("the node is told to register again");
    }

    #[tokio::test]
    async fn reconfigure_takes_the_new_node_definition_and_settings() {
        let dir = tempfile::tempdir().unwrap();
        let node = test_node(dir.path());
        let reg = node.registration();
        assert_eq!((reg.cpus, reg.real_memory_mb), (2, 100));
        write_conf(
            dir.path(),
            &format!(
                "{OVERRIDES}KillWait=7\nSlurmctldPort=7001\nSlurmdTimeout=0\n\
                 NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=4 RealMemory=200 Feature=fast\n"
            ),
        );
        let outcome = node.reconfigure(Instant::now()).await;
        assert_eq!(
            outcome,
            ReconfigOutcome::Taken {
                changed: vec!["CPUs", "SocketsPerBoard", "RealMemory", "Feature"],
                kept: vec![]
            }
        );
        told_to_register(&node).await;
        let reg = node.registration();
        assert_eq!((reg.cpus, reg.real_memory_mb, reg.port), (4, 200, 1));
        let live = node.live();
        assert_eq!(live.setup.node.features, vec!["fast".to_string()]);
        assert_eq!(live.setup.conf.kill_wait, Duration::from_secs(7));
        assert!(live.setup.conf.slurmd_timeout.is_zero());
        assert_eq!(live.shared.endpoints, vec!["http://127.0.0.1:7001"]);
        assert!(format!("{:?}", live.shared.client).contains(":7001"));
        // Asked again with the same file: a new read, nothing new.
        assert_eq!(
            node.reconfigure(Instant::now()).await,
            ReconfigOutcome::Taken {
                changed: vec![],
                kept: vec![]
            }
        );
    }

    #[tokio::test]
    async fn a_broken_slurm_conf_keeps_the_running_configuration_and_is_answered() {
        let dir = tempfile::tempdir().unwrap();
        let node = Arc::new(test_node(dir.path()));
        let before = node.live();
        write_conf(
            dir.path(),
            &format!("{OVERRIDES}NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory=lots\n"),
        );
        assert_eq!(
            node.reconfigure(Instant::now()).await,
            ReconfigOutcome::Refused
        );
        assert!(Arc::ptr_eq(&before, &node.live()));
        assert_eq!(node.registration().real_memory_mb, 100);
        // It registers again all the same (with what it runs with).
        told_to_register(&node).await;

        // The RPC is answered (with success) while the file is broken.
        // SAFETY: geteuid/getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let claims = Claims::new(
            slurm_common::ids::Uid::new(uid),
            slurm_common::ids::Gid::new(gid),
            "vm",
            slurm_common::auth::unix_now(),
            60,
        );
        let token = node.host.signing.auth.create(&claims).unwrap();
        let mut req = Request::new(ReconfigureNodeRequest {});
        slurm_proto::set_auth_credential(req.metadata_mut(), &token).unwrap();
        NodeService(node.clone()).reconfigure(req).await.unwrap();
        assert!(Arc::ptr_eq(&before, &node.live()));

        // A node no longer defined is refused the same way.
        write_conf(
            dir.path(),
            &format!("{OVERRIDES}NodeName=n2 NodeAddr=127.0.0.1 Port=1 CPUs=2\n"),
        );
        assert_eq!(
            node.reconfigure(Instant::now()).await,
            ReconfigOutcome::Refused
        );
        assert!(Arc::ptr_eq(&before, &node.live()));

        // Mended, it is taken.
        write_conf(
            dir.path(),
            &format!("{OVERRIDES}NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory=300\n"),
        );
        assert!(matches!(
            node.reconfigure(Instant::now()).await,
            ReconfigOutcome::Taken { .. }
        ));
        assert_eq!(node.registration().real_memory_mb, 300);
    }

    #[tokio::test]
    async fn where_the_node_listens_waits_for_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let node = test_node(dir.path());
        write_conf(
            dir.path(),
            &format!("{OVERRIDES}NodeName=n1 NodeAddr=127.0.0.2 Port=2 CPUs=2 RealMemory=100\n"),
        );
        let ReconfigOutcome::Taken { changed, kept } = node.reconfigure(Instant::now()).await
        else {
            panic!("not taken")
        };
        assert!(changed.is_empty());
        let keys: Vec<&str> = kept.iter().map(|k| k.key).collect();
        assert_eq!(keys, vec!["NodeAddr", "Port"]);
        assert_eq!(node.live().setup.listen_addr(), "127.0.0.1:1");
        assert_eq!(node.registration().port, 1);
    }

    #[tokio::test]
    async fn one_read_serves_every_request_that_arrived_before_it_began() {
        let dir = tempfile::tempdir().unwrap();
        write_conf(
            dir.path(),
            "NodeName=n[1-2] NodeAddr=127.0.0.1 Port=[1-2] CPUs=2 RealMemory=100\n",
        );
        slurm_common::auth::generate_key(&dir.path().join("slurm.key")).unwrap();
        let conf = dir.path().join("slurm.conf");
        let setups = crate::emulate::load(&conf, "n[1-2]", "vm").unwrap();
        let host = Arc::new(Host::new(&setups[0], dir.path().join("none")).unwrap());
        let nodes: Vec<Node> = setups
            .into_iter()
            .map(|s| Node::with_host(s, host.clone(), Hardware::Configured))
            .collect();

        let asked = Instant::now();
        write_conf(
            dir.path(),
            "NodeName=n[1-2] NodeAddr=127.0.0.1 Port=[1-2] CPUs=2 RealMemory=200\n",
        );
        assert!(matches!(
            nodes[0].reconfigure(asked).await,
            ReconfigOutcome::Taken { .. }
        ));
        // Changed after that read began: a request from before it is served
        // by it, for this node (already has it) and the other.
        write_conf(
            dir.path(),
            "NodeName=n[1-2] NodeAddr=127.0.0.1 Port=[1-2] CPUs=2 RealMemory=300\n",
        );
        assert_eq!(nodes[0].reconfigure(asked).await, ReconfigOutcome::Current);
        assert!(matches!(
            nodes[1].reconfigure(asked).await,
            ReconfigOutcome::Taken { .. }
        ));
        assert!(Arc::ptr_eq(
            &nodes[0].live().setup.conf,
            &nodes[1].live().setup.conf
        ));
        // Emulated nodes report the configured figures, as reloaded.
        assert_eq!(nodes[1].registration().real_memory_mb, 200);
        // A later request reads the file again.
        nodes[1].reconfigure(Instant::now()).await;
        assert_eq!(nodes[1].registration().real_memory_mb, 300);
        assert_eq!(nodes[0].registration().real_memory_mb, 200);
        assert_eq!(nodes[1].ping().node_name, "n2");
    }

    #[tokio::test]
    async fn the_health_checker_is_kept_unless_its_settings_change() {
        let dir = tempfile::tempdir().unwrap();
        let node = test_node(dir.path());
        assert!(node.live().shared.health.is_none());
        let with = |interval: u32, memory: u32| {
            format!(
                "HealthCheckProgram=/bin/true\nHealthCheckInterval={interval}\n\
                 NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory={memory}\n"
            )
        };
        write_conf(dir.path(), &with(60, 100));
        node.reconfigure(Instant::now()).await;
        let first = node.live().shared.health.clone().expect("a checker");
        assert_eq!(first.config.interval, Duration::from_secs(60));
        write_conf(dir.path(), &with(60, 200));
        node.reconfigure(Instant::now()).await;
        let same = node.live().shared.health.clone().expect("a checker");
        assert!(Arc::ptr_eq(&first, &same));
        write_conf(dir.path(), &with(120, 200));
        node.reconfigure(Instant::now()).await;
        let other = node.live().shared.health.clone().expect("a checker");
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.config.interval, Duration::from_secs(120));
    }

    #[tokio::test]
    async fn a_reconfigured_prolog_and_epilog_apply_to_later_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let node = test_node(dir.path());
        assert_eq!(
            ScriptConfig::from_conf(&node.live().setup.conf),
            ScriptConfig::default()
        );
        write_conf(
            dir.path(),
            &format!(
                "{OVERRIDES}Prolog=/etc/slurm/prolog.d/*\nEpilog=/e.sh\nPrologEpilogTimeout=20\n\
                 NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory=100\n"
            ),
        );
        let before = node.live();
        let ReconfigOutcome::Taken { kept, .. } = node.reconfigure(Instant::now()).await else {
            panic!("not taken")
        };
        assert!(kept.is_empty(), "{kept:?}");
        let (changed, kept) =
            crate::reconfig::process_changes(&before.setup.conf, &node.live().setup.conf);
        assert!(kept.is_empty(), "taken while running: {kept:?}");
        for key in ["Prolog", "Epilog", "PrologEpilogTimeout"] {
            assert!(changed.contains(&key), "{key} in {changed:?}");
        }
        // What the next launch and terminate read.
        let scripts = ScriptConfig::from_conf(&node.live().setup.conf);
        assert_eq!(scripts.program(Kind::Prolog), Some("/etc/slurm/prolog.d/*"));
        assert_eq!(scripts.program(Kind::Epilog), Some("/e.sh"));
        assert_eq!(scripts.timeout, Some(Duration::from_secs(20)));
    }

    /// A script that notes "overlap" in `dir`/out when another run of it
    /// (a Prolog or an Epilog) is under way, and takes half a second.
    fn overlap_probe(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("probe.sh");
        let d = dir.display();
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\n\
                 if mkdir {d}/busy 2>/dev/null; then sleep 0.5; rmdir {d}/busy\n\
                 else echo overlap >> {d}/out; sleep 0.5; fi\n\
                 echo \"$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID\" >> {d}/runs\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Two Prologs and an Epilog of three jobs at once; whether any ran
    /// beside another, and how many ran.
    async fn three_scripts_at_once(flags: &str) -> (bool, usize) {
        let dir = tempfile::tempdir().unwrap();
        let probe = overlap_probe(dir.path());
        write_conf(
            dir.path(),
            &format!(
                "{OVERRIDES}Prolog={p}\nEpilog={p}\n{flags}\
                 NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory=100\n",
                p = probe.display()
            ),
        );
        slurm_common::auth::generate_key(&dir.path().join("slurm.key")).unwrap();
        let setup = NodeSetup::load(&dir.path().join("slurm.conf"), Some("n1"), "vm").unwrap();
        let hw = configured_hw(&setup);
        let node = Node::new(
            setup,
            Arc::new(crate::hw::FakeProbe(hw)),
            dir.path().join("no-slurmstepd"),
        )
        .unwrap();
        let facts: Vec<JobFacts> = (1..=3).map(JobFacts::new).collect();
        let (a, b, c) = tokio::join!(
            node.run_script(Kind::Prolog, &facts[0]),
            node.run_script(Kind::Prolog, &facts[1]),
            node.run_script(Kind::Epilog, &facts[2]),
        );
        for r in [a, b, c] {
            r.unwrap();
        }
        let overlap = dir.path().join("out").exists();
        let runs = std::fs::read_to_string(dir.path().join("runs"))
            .unwrap_or_default()
            .lines()
            .count();
        (overlap, runs)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn prolog_flags_serial_runs_prologs_and_epilogs_one_at_a_time() {
        assert_eq!(
            three_scripts_at_once("PrologFlags=Serial\n").await,
            (false, 3)
        );
        // Without the flag they run side by side (which the probe sees).
        assert_eq!(three_scripts_at_once("").await, (true, 3));
    }

    /// A controller that records the launch reports it is sent.
    #[derive(Clone)]
    struct Reports {
        completes: tokio::sync::mpsc::UnboundedSender<JobCompleteRequest>,
        prologs: tokio::sync::mpsc::UnboundedSender<PrologCompleteRequest>,
    }

    #[tonic::async_trait]
    impl slurm_proto::SlurmNodeReports for Reports {
        async fn register_node(
            &self,
            _: Request<RegisterNodeRequest>,
        ) -> Result<Response<slurm_proto::v1::RegisterNodeReply>, Status> {
            Ok(Response::new(Default::default()))
        }
        async fn job_complete(
            &self,
            r: Request<JobCompleteRequest>,
        ) -> Result<Response<slurm_proto::v1::JobCompleteReply>, Status> {
            let _ = self.completes.send(r.into_inner());
            Ok(Response::new(Default::default()))
        }
        async fn epilog_complete(
            &self,
            _: Request<EpilogCompleteRequest>,
        ) -> Result<Response<slurm_proto::v1::EpilogCompleteReply>, Status> {
            Ok(Response::new(Default::default()))
        }
        async fn prolog_complete(
            &self,
            r: Request<PrologCompleteRequest>,
        ) -> Result<Response<slurm_proto::v1::PrologCompleteReply>, Status> {
            let _ = self.prologs.send(r.into_inner());
            Ok(Response::new(Default::default()))
        }
    }

    async fn next<T>(rx: &mut tokio::sync::mpsc::UnboundedReceiver<T>, what: &str) -> T {
        tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no {what} in time"))
            .unwrap_or_else(|| panic!("no {what}: channel closed"))
    }

    /// slurmd answers a launch before carrying it out, so what goes wrong
    /// afterwards is reported: a Prolog failure with PrologComplete, a
    /// slurmstepd that cannot be started with JobComplete.launch_error;
    /// the job is launching until then.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failures_after_the_answer_are_reported_to_the_controller() {
        use std::os::unix::fs::PermissionsExt;
        let (completes, mut completed) = tokio::sync::mpsc::unbounded_channel();
        let (prologs, mut prologged) = tokio::sync::mpsc::unbounded_channel();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let service = slurm_proto::SlurmNodeReportsServer::new(Reports { completes, prologs });
        tokio::spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        let dir = tempfile::tempdir().unwrap();
        let prolog = dir.path().join("prolog.sh");
        std::fs::write(&prolog, "#!/bin/sh\n[ \"$SLURM_JOB_ID\" != 2 ]\n").unwrap();
        std::fs::set_permissions(&prolog, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_conf(
            dir.path(),
            &format!(
                "{OVERRIDES}SlurmctldPort={port}\nProlog={}\n\
                 NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory=100\n",
                prolog.display()
            ),
        );
        slurm_common::auth::generate_key(&dir.path().join("slurm.key")).unwrap();
        let setup = NodeSetup::load(&dir.path().join("slurm.conf"), Some("n1"), "vm").unwrap();
        let hw = configured_hw(&setup);
        // No slurmstepd where slurmd looks for it.
        let node = Arc::new(
            Node::new(
                setup,
                Arc::new(crate::hw::FakeProbe(hw)),
                dir.path().join("no-slurmstepd"),
            )
            .unwrap(),
        );
        let launch = |job_id: u32| LaunchBatchRequest {
            job_id,
            user_id: crate::users::euid(),
            script: "#!/bin/sh\ntrue\n".into(),
            ..Default::default()
        };

        node.launch(launch(1), slurm_common::auth::unix_now())
            .await
            .expect("answered");
        let done = next(&mut completed, "JobComplete").await;
        assert_eq!((done.job_id, done.node_name.as_str()), (1, "n1"));
        assert_eq!(done.launch_error, ErrorCode::ExecveFailed.number());
        let deadline = Instant::now() + Duration::from_secs(30);
        while !node.jobs_here().launching.is_empty() {
            assert!(Instant::now() < deadline, "still launching");
            tokio::task::yield_now().await;
        }

        node.launch(launch(2), slurm_common::auth::unix_now())
            .await
            .expect("answered before the prolog runs");
        let failed = next(&mut prologged, "PrologComplete").await;
        assert_eq!((failed.job_id, failed.node_name.as_str()), (2, "n1"));
        assert_eq!(failed.error_code, ErrorCode::PrologFailed.number());
        assert!(
            failed.error_detail.contains("failed for job 2"),
            "{failed:?}"
        );
        // No script started, so nothing else is reported.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !node.jobs_here().launching.is_empty() {
            assert!(Instant::now() < deadline, "still launching");
            tokio::task::yield_now().await;
        }
        assert!(completed.try_recv().is_err());
        assert!(prologged.try_recv().is_err(), "one report");

        // Another user's job, from a slurmd that is not root: refused in the
        // answer itself.
        if crate::users::euid() != 0 {
            let mut other = launch(3);
            other.user_id = crate::users::euid() + 1;
            let err = node
                .launch(other, slurm_common::auth::unix_now())
                .await
                .expect_err("refused");
            assert_eq!(ErrorCode::from_status(&err).0, ErrorCode::SetUidOrGid);
        }
    }

    #[tokio::test]
    async fn ping_and_registration_report_launches_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let node = test_node(dir.path());
        let empty = node.ping();
        assert!(empty.reports_jobs);
        assert!(empty.running_job_ids.is_empty() && empty.launching_job_ids.is_empty());
        assert!(node.registration().running_jobs.is_empty());

        // Launches of 12 and 4 accepted, their slurmstepd not started yet:
        // both count as here, so the controller never takes them as lost.
        let now = Instant::now();
        node.lock_jobs().begin_launch(12, 0, now);
        node.lock_jobs().begin_launch(4, 0, now);
        let ping = node.ping();
        assert!(ping.reports_jobs);
        assert_eq!(ping.launching_job_ids, vec![4, 12]);
        assert!(ping.running_job_ids.is_empty());
        let reg = node.registration();
        let ids: Vec<(u32, Vec<u32>)> = reg
            .running_jobs
            .iter()
            .map(|j| (j.job_id, j.step_ids.clone()))
            .collect();
        assert_eq!(
            ids,
            vec![
                (4, vec![SLURM_BATCH_SCRIPT]),
                (12, vec![SLURM_BATCH_SCRIPT])
            ]
        );

        node.lock_jobs().finish_launch(12);
        assert_eq!(node.ping().launching_job_ids, vec![4]);
    }

    /// A node of `rest` (slurm.conf lines) whose probe finds 4 CPUs, a
    /// five-minute load of 2.26 and 22719 MiB free.
    fn probed_node(dir: &Path, rest: &str) -> Node {
        write_conf(dir, rest);
        slurm_common::auth::generate_key(&dir.join("slurm.key")).unwrap();
        let setup = NodeSetup::load(&dir.join("slurm.conf"), Some("n1"), "vm").unwrap();
        let hw = HwInfo {
            cpus: 4,
            cores_per_socket: 4,
            real_memory_mb: 32011,
            free_memory_mb: 22719,
            cpu_load_hundredths: 226,
            ..configured_hw(&setup)
        };
        Node::new(
            setup,
            Arc::new(crate::hw::FakeProbe(hw)),
            dir.join("no-slurmstepd"),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn registration_and_ping_carry_load_free_memory_and_the_size_of_tmpfs() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp-n1");
        std::fs::create_dir(&tmp).unwrap();
        let node = probed_node(
            dir.path(),
            &format!(
                "TmpFS={}/tmp-%n\nNodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=4 TmpDisk=7\n",
                dir.path().display()
            ),
        );
        let reg = node.registration();
        assert!(reg.reports_load);
        assert_eq!((reg.cpu_load_hundredths, reg.free_memory_mb), (226, 22719));
        let size = crate::hw::tmp_disk_mb(&tmp).unwrap();
        assert!(size > 0);
        assert_eq!(reg.tmp_disk_mb, size);
        let ping = node.ping();
        assert!(ping.reports_load);
        assert_eq!(
            (ping.cpu_load_hundredths, ping.free_memory_mb),
            (226, 22719)
        );

        // A TmpFS that does not exist is no TmpDisk, as in Slurm.
        std::fs::remove_dir(&tmp).unwrap();
        assert_eq!(node.registration().tmp_disk_mb, 0);
    }

    /// A request carrying a fresh credential of `uid` signed by `node`'s key.
    fn signed<T>(node: &Node, uid: u32, body: T) -> Request<T> {
        let claims = Claims::new(
            slurm_common::ids::Uid::new(uid),
            slurm_common::ids::Gid::new(uid),
            "vm",
            slurm_common::auth::unix_now(),
            60,
        );
        let token = node.host.signing.auth.create(&claims).unwrap();
        let mut req = Request::new(body);
        slurm_proto::set_auth_credential(req.metadata_mut(), &token).unwrap();
        req
    }

    #[tokio::test]
    async fn daemon_status_reports_the_hardware_found_and_the_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp-n1");
        std::fs::create_dir(&tmp).unwrap();
        let node = Arc::new(probed_node(
            dir.path(),
            &format!(
                "SlurmdParameters=config_overrides\nSlurmdDebug=debug2\n\
                 SlurmdLogFile={}/log-%n\nTmpFS={}/tmp-%n\n\
                 NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 RealMemory=100 TmpDisk=7\n",
                dir.path().display(),
                dir.path().display()
            ),
        ));
        let status = node.daemon_status();
        // "Actual" figures: the probe's, whatever config_overrides says.
        assert_eq!(
            (status.cpus, status.cores_per_socket, status.real_memory_mb),
            (4, 4, 32011)
        );
        // Sockets in all: boards times sockets per board (2 here, from
        // CPUs=2 of the node line the fake probe copies).
        assert_eq!(
            (status.boards, status.sockets, status.threads_per_core),
            (1, 2, 1)
        );
        assert_eq!(status.tmp_disk_mb, crate::hw::tmp_disk_mb(&tmp).unwrap());
        assert_eq!(status.node_name, "n1");
        assert_eq!(status.pid, std::process::id());
        assert_eq!(status.debug_level, 6);
        assert_eq!(status.log_file, format!("{}/log-n1", dir.path().display()));
        assert_eq!(status.version, VERSION);
        assert_eq!(status.slurmd_start_time, node.host.start_time);
        assert!(status.active_steps.is_empty());
        assert_eq!(status.last_controller_message, 0);

        // Anyone may ask, and asking is not a word from the controller.
        let nobody = 65_534;
        let reply = SlurmdInfoService(node.clone())
            .get_daemon_status(signed(&node, nobody, DaemonStatusRequest {}))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(reply.node_name, "n1");
        assert_eq!(reply.last_controller_message, 0);
        // A request without a credential is refused.
        assert!(SlurmdInfoService(node.clone())
            .get_daemon_status(Request::new(DaemonStatusRequest {}))
            .await
            .is_err());
        // The controller's ping is.
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        let before = slurm_common::auth::unix_now();
        NodeService(node.clone())
            .ping_node(signed(&node, uid, PingNodeRequest {}))
            .await
            .unwrap();
        assert!(node.daemon_status().last_controller_message >= before);
    }

    #[tokio::test]
    async fn config_overrides_report_the_configured_tmp_disk_and_measured_load() {
        let dir = tempfile::tempdir().unwrap();
        let node = probed_node(
            dir.path(),
            &format!("{OVERRIDES}NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 TmpDisk=7\n"),
        );
        let reg = node.registration();
        assert_eq!((reg.cpus, reg.tmp_disk_mb), (2, 7));
        assert!(reg.reports_load);
        assert_eq!((reg.cpu_load_hundredths, reg.free_memory_mb), (226, 22719));
    }

    #[tokio::test]
    async fn emulated_nodes_report_no_load() {
        let dir = tempfile::tempdir().unwrap();
        write_conf(
            dir.path(),
            "NodeName=n1 NodeAddr=127.0.0.1 Port=1 CPUs=2 TmpDisk=9\n",
        );
        slurm_common::auth::generate_key(&dir.path().join("slurm.key")).unwrap();
        let setup = NodeSetup::load(&dir.path().join("slurm.conf"), Some("n1"), "vm").unwrap();
        let host = Arc::new(Host::new(&setup, dir.path().join("no-slurmstepd")).unwrap());
        let node = Node::with_host(setup, host, Hardware::Configured);
        let reg = node.registration();
        assert!(!reg.reports_load);
        assert_eq!(reg.tmp_disk_mb, 9);
        assert!(!node.ping().reports_load);
    }

    #[test]
    fn jobs_here_merges_both_lists() {
        let j = JobsHere {
            running: vec![3, 8],
            launching: vec![1, 8],
        };
        assert_eq!(j.all(), vec![1, 3, 8]);
        assert!(JobsHere::default().all().is_empty());
    }

    #[test]
    fn credential_payload() {
        assert_eq!(credential_job_id(b"job_id=42"), Some(42));
        assert_eq!(credential_job_id(b"job=43"), Some(43));
        assert_eq!(credential_job_id(b"uid=1; job_id=7 ;x"), Some(7));
        assert_eq!(credential_job_id(b"job_id=x"), None);
        assert_eq!(credential_job_id(b""), None);
        assert_eq!(credential_job_id(&[0xff, 0xfe]), None);
    }

    #[test]
    fn hash_is_stable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c");
        std::fs::write(&p, "a").unwrap();
        assert_eq!(config_hash(&p), "af63dc4c8601ec8c");
        assert_eq!(config_hash(&dir.path().join("none")), "");
    }
}
