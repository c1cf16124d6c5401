//! What the nodes of one slurmd process share ([`Host`]), and the part of
//! it slurm.conf decides ([`Shared`]), which a reconfiguration replaces.
//!
//! The host reads slurm.conf again for a Reconfigure or SIGHUP, one read
//! at a time, and lets every request that arrived before a read began be
//! served by it: nodes told together (SIGHUP, or a thousand emulated nodes
//! reached by one fan-out) share reads. It builds a new [`Shared`] from the read,
//! keeping what did not change (the controller client and its connections,
//! the health checker), and logs the keys that wait for a restart. Each
//! node then takes the new settings for itself
//! ([`crate::daemon::Node::reconfigure`]). The process's log follows each
//! read too: its level (SlurmdDebug) and its file, reopened or moved to a
//! new SlurmdLogFile (`crate::logging`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use slurm_common::auth::Authenticator;
use slurm_common::conf::SlurmConf;
use tokio::sync::Semaphore;

use crate::client::ControllerClient;
use crate::config::{controller_endpoints, expand_node_path, load_conf, NodeSetup};
use crate::health::{ControllerAdmin, HealthChecker, HealthConfig};
use crate::logging::LogControl;
use crate::reconfig::process_changes;
use crate::Error;

/// How this process signs its calls to the controllers (fixed at start:
/// AuthType and AuthInfo need a restart).
#[derive(Clone)]
pub(crate) struct Signing {
    pub(crate) auth: Arc<dyn Authenticator>,
    host_name: String,
    ttl: u32,
}

/// What every node of the process takes from slurm.conf and may change on
/// reconfiguration: the configuration itself, the controller client, the
/// health checker, the uids allowed to make requests. Replaced whole,
/// never changed in place.
#[derive(Debug)]
pub struct Shared {
    pub conf: Arc<SlurmConf>,
    pub client: ControllerClient,
    pub health: Option<Arc<HealthChecker>>,
    /// Where `client` goes, and its timeout: a reconfiguration that changes
    /// neither keeps the client (and its connections).
    pub(crate) endpoints: Vec<String>,
    timeout: Duration,
    pub(crate) privileged: HashSet<u32>,
    /// Counts the reads of slurm.conf, so a node never takes an older one
    /// after a newer.
    pub(crate) generation: u64,
}

impl Shared {
    /// Must run inside a runtime (the client's channels belong to it).
    /// Looks SlurmUser up in the user database: blocking.
    fn build(
        conf: Arc<SlurmConf>,
        conf_path: &Path,
        signing: &Signing,
        health_runs: &Arc<Semaphore>,
        previous: Option<&Shared>,
    ) -> Result<Self, Error> {
        let endpoints = controller_endpoints(&conf, conf_path)?;
        let timeout = conf.message_timeout;
        let same_client = previous.filter(|p| p.endpoints == endpoints && p.timeout == timeout);
        let client = match same_client {
            Some(p) => p.client.clone(),
            None => ControllerClient::new(
                &endpoints,
                signing.auth.clone(),
                signing.host_name.clone(),
                signing.ttl,
                timeout,
            )?,
        };
        let health = HealthConfig::from_conf(&conf).map(|config| {
            match same_client.and_then(|p| p.health.as_ref()) {
                Some(h) if h.config == config => h.clone(),
                _ => Arc::new(HealthChecker::sharing(
                    config,
                    ControllerAdmin::new(client.clone()),
                    health_runs.clone(),
                )),
            }
        });
        let mut privileged = HashSet::from([0, crate::users::euid()]);
        if let Some((uid, _)) = crate::users::uid_of(&conf.slurm_user) {
            privileged.insert(uid);
        }
        Ok(Self {
            conf,
            client,
            health,
            endpoints,
            timeout,
            privileged,
            generation: previous.map_or(0, |p| p.generation.saturating_add(1)),
        })
    }
}

/// The last read of slurm.conf: when it began, and what it gave (`None`:
/// the file could not be used).
struct LastRead {
    began: Instant,
    shared: Option<Arc<Shared>>,
}

/// What every node served by one slurmd process shares: the credentials,
/// the controller clients (one connection for all nodes), slurmstepd's
/// path, and the bound on registrations in flight.
pub struct Host {
    pub(crate) signing: Signing,
    /// slurm.conf as named at start (re-read on reconfiguration).
    conf_path: PathBuf,
    pub(crate) stepd_path: PathBuf,
    pub(crate) start_time: i64,
    /// Registrations in flight at once, so that thousands of emulated
    /// nodes starting together queue here rather than at the controller.
    pub(crate) registrations: Semaphore,
    /// Health programs running at once, across reconfigurations.
    health_runs: Arc<Semaphore>,
    /// Follows SlurmdDebug and SlurmdLogFile on reconfiguration.
    log: Option<LogControl>,
    /// `-v` flags given at start: they fix the log level above info.
    verbosity: u8,
    /// The node whose name `%n` in SlurmdLogFile stands for: the first one
    /// of the process, whose log file the process writes.
    log_node: String,
    /// The settings of the latest good read (nodes take them in turn).
    shared: RwLock<Arc<Shared>>,
    /// One read at a time, and the last one.
    reads: tokio::sync::Mutex<Option<LastRead>>,
    /// Set when the controller asks the daemon to stop (scontrol
    /// shutdown); the servers of every node of the process watch it.
    stop: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("conf_path", &self.conf_path)
            .field("stepd_path", &self.stepd_path)
            .finish()
    }
}

/// What the local credential service needs of the host: the socket
/// beside slurm.conf, the signer, this host's name and the longest ttl.
#[derive(Debug, Clone)]
pub struct SackSetup {
    pub socket: PathBuf,
    pub auth: Arc<dyn Authenticator>,
    pub host_name: String,
    pub max_ttl: u32,
}

/// Registrations one process has in flight at most.
pub const CONCURRENT_REGISTRATIONS: usize = 32;

impl Host {
    /// The local credential service's setup, when AuthType is auth/slurm
    /// (with MUNGE every user can make credentials without help).
    pub fn sack_setup(&self) -> Option<SackSetup> {
        (self.signing.auth.name() == "auth/slurm").then(|| SackSetup {
            socket: slurm_common::auth::sack::default_socket_path(&self.conf_path),
            auth: self.signing.auth.clone(),
            host_name: self.signing.host_name.clone(),
            max_ttl: self.signing.ttl,
        })
    }

    /// Credentials and controller clients from `setup` (any node of the
    /// process: they share slurm.conf). Must be called inside a runtime.
    pub fn new(setup: &NodeSetup, stepd_path: PathBuf) -> Result<Self, Error> {
        let signing = Signing {
            auth: setup.authenticator()?,
            host_name: crate::hw::short_host_name(),
            ttl: setup.auth_info()?.credential_ttl(),
        };
        let health_runs = Arc::new(Semaphore::new(crate::health::CONCURRENT_RUNS));
        let shared = Shared::build(
            setup.conf.clone(),
            &setup.conf_path,
            &signing,
            &health_runs,
            None,
        )?;
        Ok(Self {
            signing,
            conf_path: setup.conf_path.clone(),
            stepd_path,
            start_time: slurm_common::auth::unix_now(),
            registrations: Semaphore::new(CONCURRENT_REGISTRATIONS),
            health_runs,
            log: None,
            verbosity: 0,
            log_node: setup.node.name.clone(),
            shared: RwLock::new(Arc::new(shared)),
            reads: tokio::sync::Mutex::new(None),
            stop: tokio::sync::watch::Sender::new(false),
        })
    }

    /// Asks the process to stop, as `scontrol shutdown` does through the
    /// controller: the servers stop accepting calls, finish the ones in
    /// flight (so this request is answered) and the daemon exits. Jobs keep
    /// running.
    pub fn request_stop(&self) {
        self.stop.send_replace(true);
    }

    /// Resolves once [`Host::request_stop`] was called.
    pub async fn stop_requested(&self) {
        let mut rx = self.stop.subscribe();
        // The sender lives as long as self, so the wait only ends when set.
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Lets reconfiguration change the log's level and file through `log`,
    /// and has SIGUSR2 reopen its file from now on (a task for the rest of
    /// the process's life, when called inside a runtime, as a daemon does).
    pub fn with_log(mut self, log: Option<LogControl>) -> Self {
        if let (Some(log), Ok(runtime)) = (&log, tokio::runtime::Handle::try_current()) {
            runtime.spawn(crate::logging::reopen_on_sigusr2(log.clone()));
        }
        self.log = log;
        self
    }

    /// Records the `-v` flags slurmd was started with, for
    /// [`Host::debug_level`].
    pub fn with_verbosity(mut self, verbosity: u8) -> Self {
        self.verbosity = verbosity;
        self
    }

    /// The log level as Slurm numbers it (0 quiet ... 9 debug5): each `-v`
    /// adds one to info, else SlurmdDebug of the configuration in force.
    pub fn debug_level(&self) -> u32 {
        debug_level(self.verbosity, self.shared().conf.slurmd_debug)
    }

    /// The file this process logs to: the one the log writes, else
    /// SlurmdLogFile of the configuration in force; `None` for standard
    /// error.
    pub fn log_file(&self) -> Option<PathBuf> {
        match &self.log {
            Some(log) => log.file(),
            None => self.log_file_of(&self.shared().conf),
        }
    }

    /// SlurmdLogFile of `conf` as this process's log file would be named
    /// (`%n` and `%h` expanded for the first node).
    fn log_file_of(&self, conf: &SlurmConf) -> Option<PathBuf> {
        conf.slurmd_log_file
            .as_deref()
            .map(|t| PathBuf::from(expand_node_path(t, &self.log_node, &self.signing.host_name)))
    }

    /// The settings of the latest good read of slurm.conf.
    pub fn shared(&self) -> Arc<Shared> {
        self.shared
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Re-reads slurm.conf for a request that arrived at `asked_at`. Reads
    /// run one at a time; a read that began after the request arrived
    /// serves it, so nodes told together (SIGHUP, a fan-out reaching a
    /// thousand emulated nodes) share a few reads rather than making one
    /// each. `None` when the file cannot be used: logged here, once, and
    /// the running settings stay.
    pub async fn reload(&self, asked_at: Instant) -> Option<Arc<Shared>> {
        let mut last = self.reads.lock().await;
        if let Some(read) = last.as_ref().filter(|r| r.began > asked_at) {
            return read.shared.clone();
        }
        let began = Instant::now();
        let shared = self.read_conf().await;
        *last = Some(LastRead {
            began,
            shared: shared.clone(),
        });
        shared
    }

    async fn read_conf(&self) -> Option<Arc<Shared>> {
        let previous = self.shared();
        let path = self.conf_path.clone();
        let signing = self.signing.clone();
        let runs = self.health_runs.clone();
        let prev = previous.clone();
        let built = tokio::task::spawn_blocking(move || {
            let (conf, _) = load_conf(&path)?;
            Shared::build(conf, &path, &signing, &runs, Some(&prev))
        })
        .await;
        let shared = match built {
            Ok(Ok(s)) => Arc::new(s),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "reconfigure: slurm.conf not taken; keeping the running configuration");
                return None;
            }
            Err(e) => {
                tracing::error!(error = %e, path = %self.conf_path.display(), "reconfigure: reading slurm.conf failed; keeping the running configuration");
                return None;
            }
        };
        let (changed, kept) = process_changes(&previous.conf, &shared.conf);
        for k in &kept {
            tracing::warn!(
                key = k.key,
                running = %k.running,
                file = %k.file,
                "{} changed in slurm.conf; slurmd keeps the running value until it restarts",
                k.key
            );
        }
        tracing::info!(
            path = %self.conf_path.display(),
            changed = %changed.join(","),
            "re-read slurm.conf"
        );
        if let Some(log) = &self.log {
            log.set_level(shared.conf.slurmd_debug);
            log.reconfigure(
                self.log_file_of(&previous.conf).as_deref(),
                self.log_file_of(&shared.conf).as_deref(),
            );
        }
        *self.shared.write().unwrap_or_else(|p| p.into_inner()) = shared.clone();
        Some(shared)
    }
}

/// Slurm's number for the log level of a slurmd started with `verbosity`
/// `-v` flags and SlurmdDebug `level`: the flags count up from info (3).
pub fn debug_level(verbosity: u8, level: slurm_common::conf::LogLevel) -> u32 {
    use slurm_common::conf::LogLevel;
    const MAX: u32 = 9;
    if verbosity > 0 {
        return (3 + u32::from(verbosity)).min(MAX);
    }
    LogLevel::ALL
        .iter()
        .position(|l| *l == level)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurm_common::conf::LogLevel;

    #[test]
    fn debug_level_counts_as_slurm_does() {
        assert_eq!(debug_level(0, LogLevel::Info), 3);
        assert_eq!(debug_level(0, LogLevel::Quiet), 0);
        assert_eq!(debug_level(0, LogLevel::Debug2), 6);
        assert_eq!(debug_level(0, LogLevel::Debug5), 9);
        assert_eq!(debug_level(2, LogLevel::Error), 5);
        assert_eq!(debug_level(200, LogLevel::Info), 9);
    }
}
