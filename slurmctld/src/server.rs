//! The imperative shell: startup, control changes, shutdown.
//!
//! ```text
//!  RPC handlers ──(Command, reply tx)──> mpsc ──> owner task (crate::owner)
//!  agent (launch failed) ───────────────────────┘     handle, schedule, group commit,
//!  timer (next deadline) ── Tick ── inside the owner   then publish, reply, act
//! ```
//!
//! The owner task exists only while this controller is in control
//! ([`crate::ha`]): in standby the commands are refused
//! (ESLURM_IN_STANDBY_MODE) and nothing is recovered; on taking control
//! the state is recovered and the owner started; on giving control up (or
//! losing the epoch) the owner drains, flushes and stops, and the daemon
//! goes back to standby. Every batch is written between two epoch checks.
//!
//! Shutdown (SIGTERM, SIGINT, scontrol shutdown): the gRPC server stops
//! accepting and finishes in-flight calls, the owner drains what is queued,
//! makes it durable and exits; the process exits 0.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use slurm_common::auth::{authenticator_for, unix_now, AuthInfo, AuthType, Authenticator};
use slurm_common::conf::{AuthPlugin, SlurmConf};
use slurm_proto::v1;
use tokio::sync::{mpsc, watch};

use crate::agent::{Agent, Identity};
use crate::core::{Controller, CtlConfig, NodeRec};
use crate::persist::{RecoverOptions, Recovered, SnapshotPolicy, StateStore};
use crate::rpc::{Envelope, Service, Shared};

/// Largest request the controller decodes (a job script plus its
/// environment and options).
const MAX_REQUEST_BYTES: usize = 64 << 20;

/// Everything `run` needs, resolved by the binary.
#[derive(Debug, Clone)]
pub struct Settings {
    pub conf_path: PathBuf,
    pub conf: SlurmConf,
    pub ignore_state_errors: bool,
}

/// Where the configuration comes from: `-f`, else `$SLURM_CONF`, else
/// `/etc/slurm/slurm.conf`.
pub fn conf_path(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    match std::env::var_os("SLURM_CONF") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from("/etc/slurm/slurm.conf"),
    }
}

/// The authenticator slurm.conf asks for.
pub fn authenticator(conf: &SlurmConf, conf_path: &Path) -> Result<Arc<dyn Authenticator>> {
    let auth_type = match conf.auth_type {
        AuthPlugin::Slurm => AuthType::Slurm,
        AuthPlugin::Munge => AuthType::Munge,
        other => bail!("AuthType={} is not supported by slurmctld", other.as_str()),
    };
    let info_text = conf
        .auth_info
        .0
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k}={v}"),
            None => k.clone(),
        })
        .collect::<Vec<_>>()
        .join(",");
    let info = AuthInfo::parse(&info_text).context("invalid AuthInfo")?;
    let key = info.key_path(conf_path);
    let auth = authenticator_for(auth_type, &key, &info)
        .with_context(|| format!("cannot set up {}", auth_type.as_str()))?;
    Ok(Arc::from(auth))
}

/// cgroup.conf beside slurm.conf, for `scontrol show config`; Slurm's
/// defaults when it is missing or does not parse (slurmd is the one that
/// acts on it and reports its errors).
fn cgroup_conf(conf_path: &Path) -> slurm_common::conf::CgroupConf {
    let path = conf_path.with_file_name("cgroup.conf");
    if !path.exists() {
        return slurm_common::conf::CgroupConf::default();
    }
    match slurm_common::conf::CgroupConf::load(&path.to_string_lossy()) {
        Ok(parsed) => parsed.conf,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read cgroup.conf");
            slurm_common::conf::CgroupConf::default()
        }
    }
}

/// Runs the controller until a shutdown signal. It listens at once, in
/// standby, and then alternates between standby and control as
/// [`crate::ha`] decides (a lone or primary controller takes control right
/// away).
pub async fn run(settings: Settings) -> Result<()> {
    let conf = &settings.conf;
    let auth = authenticator(conf, &settings.conf_path)?;
    let my_uid = current_uid();
    let mut operators = vec![0, my_uid];
    if let Some(uid) = uid_of(&conf.slurm_user) {
        operators.push(uid);
    }
    operators.sort_unstable();
    operators.dedup();

    // Role: which SlurmctldHost entry this host is.
    let host = crate::ha::local_name(
        std::env::var(crate::ha::HOSTNAME_ENV).ok().as_deref(),
        &short_hostname(),
    );
    let index = crate::ha::controller_index(&conf.slurmctld_hosts, &host).unwrap_or_else(|| {
        tracing::warn!(%host, "this host is not a SlurmctldHost entry; acting as primary");
        0
    });
    let me = conf
        .slurmctld_hosts
        .get(index)
        .context("slurm.conf has no SlurmctldHost")?;
    tracing::info!(
        %host,
        index,
        role = if index == 0 { "primary" } else { "backup" },
        "controller role"
    );

    // Shared parts; standby (nothing recovered yet) until control is taken.
    let (tx, rx) = mpsc::channel::<Envelope>(crate::owner::MAX_BATCH);
    let (shutdown_tx, mut shutdown_rx) = watch::channel(false);
    let start_time = unix_now();
    let (link, ha_requests) = crate::ha::Link::new(index);
    let blank = Controller::new(conf, CtlConfig::from_conf(conf, operators.clone()));
    // Every slurmd can vouch that this controller is not the one cut off.
    let witnesses = node_endpoints(blank.nodes(), conf)
        .into_iter()
        .map(|(node, host, port)| crate::ha::shell::Witness { node, host, port })
        .collect();
    let shared = Arc::new(Shared {
        snapshot: RwLock::new(Arc::new(blank.snapshot())),
        commands: tx,
        auth: Arc::clone(&auth),
        config: RwLock::new(config_entries(&settings, start_time, 0)),
        start_time,
        ping: v1::PingReply {
            role: if index == 0 {
                v1::ControllerRole::Primary as i32
            } else {
                v1::ControllerRole::Backup as i32
            },
            index: u32::try_from(index).unwrap_or(u32::MAX),
            in_control: false,
            epoch: 0,
            hostname: me.name.clone(),
            version: crate::VERSION.to_string(),
            start_time,
        },
        ha: Arc::clone(&link),
        shutdown: shutdown_tx,
        operators,
        conf_path: settings.conf_path.clone(),
        state_dir: PathBuf::from(&settings.conf.state_save_location),
        controllers: settings.conf.slurmctld_hosts.len(),
    });

    // Listen.
    let port = conf.slurmctld_port.first;
    let addr = resolve(me.contact(), port).await;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("listener address")?;
    tracing::info!(%local, cluster = %conf.cluster_name, "slurmctld version {} started", crate::VERSION);
    if !conf.slurmctld_pid_file.is_empty() {
        let pid = std::process::id();
        if let Err(e) = std::fs::write(&conf.slurmctld_pid_file, format!("{pid}\n")) {
            tracing::error!(path = %conf.slurmctld_pid_file, error = %e, "cannot write pid file");
        }
    }

    // Signals.
    {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot watch SIGTERM");
                        return;
                    }
                };
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received, shutting down"),
            }
            let _ = shared.shutdown.send(true);
        });
    }

    let service = Service::new(Arc::clone(&shared));
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let serve = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        // A submission carries its script and environment: Slurm accepts
        // scripts up to 4 MB by default, so the 4 MB gRPC default is too low.
        // GetJobs is answered by encoding records straight from the jobs
        // (crate::rpc::jobs); every other call goes to the generated server.
        .add_service(
            crate::rpc::jobs::JobsRoute::new(
                slurm_proto::SlurmControllerServer::new(service.clone())
                    .max_decoding_message_size(MAX_REQUEST_BYTES),
                service.clone(),
            )
            .max_decoding_message_size(MAX_REQUEST_BYTES),
        )
        .add_service(slurm_proto::SlurmNodeReportsServer::new(service.clone()))
        .add_service(v1::slurm_controller_peer_server::SlurmControllerPeerServer::new(service))
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = shutdown_rx.wait_for(|v| *v).await;
        });

    // Standby and control, in turn, beside the server.
    let shell = crate::ha::Shell::new(
        crate::ha::ShellConfig {
            me: index,
            hosts: conf.slurmctld_hosts.clone(),
            port,
            state_dir: PathBuf::from(&conf.state_save_location),
            slurmctld_timeout: conf.slurmctld_timeout,
            message_timeout: conf.message_timeout,
            auth: Arc::clone(&auth),
            uid: my_uid,
            gid: current_gid(),
            host: host.clone(),
            witnesses,
        },
        link,
        ha_requests,
    );
    let (done_tx, done_rx) = watch::channel(false);
    let (ready_tx, mut ready_rx) = watch::channel(index != 0);
    let control = tokio::spawn(control_loop(
        settings.clone(),
        Arc::clone(&shared),
        rx,
        shell,
        done_rx,
        host,
        ready_tx,
    ));
    // A backup answers at once (in standby). A primary that can take
    // control right away does so before it answers anything, so that a
    // Ping answer means "ready" as it does for a lone controller; one that
    // must wait for a backup serves in standby after a beat.
    tokio::select! {
        _ = ready_rx.wait_for(|v| *v) => {}
        _ = tokio::time::sleep(crate::ha::shell::startup_wait(conf.slurmctld_timeout)) => {}
    }
    // On the runtime's workers, not in the main thread's block_on: there,
    // every connection accepted would first wake the main thread and then
    // a worker (two thread switches per command).
    let served = match tokio::spawn(serve).await {
        Ok(r) => r,
        Err(e) => bail!("gRPC server task failed: {e}"),
    };
    // No call is in flight any more: let the owner drain what is queued,
    // make it durable and stop.
    let _ = done_tx.send(true);
    let controlled = control.await;
    drop(shared);
    match controlled {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(e) => bail!("owner task failed: {e}"),
    }
    served.context("gRPC server failed")?;
    if !settings.conf.slurmctld_pid_file.is_empty() {
        let _ = std::fs::remove_file(&settings.conf.slurmctld_pid_file);
    }
    tracing::info!("slurmctld shut down");
    Ok(())
}

/// `(node, address, slurmd port)` of every node: NodeAddr (else the node
/// name) and the node's Port (else SlurmdPort).
pub(crate) fn node_endpoints(nodes: &[NodeRec], conf: &SlurmConf) -> Vec<(String, String, u16)> {
    nodes
        .iter()
        .map(|n| {
            let host = if n.addr.is_empty() {
                n.name.clone()
            } else {
                n.addr.clone()
            };
            let port = if n.port == 0 {
                conf.slurmd_port
            } else {
                n.port
            };
            (n.name.clone(), host, port)
        })
        .collect()
}

/// `scontrol show config` entries; `next_job_id` is 0 in standby.
fn config_entries(settings: &Settings, start_time: i64, next_job_id: u32) -> Vec<v1::ConfigEntry> {
    config_entries_for(&settings.conf, &settings.conf_path, start_time, next_job_id)
}

/// `scontrol show config` entries of `conf`, read from `conf_path`.
pub fn config_entries_for(
    conf: &SlurmConf,
    conf_path: &Path,
    start_time: i64,
    next_job_id: u32,
) -> Vec<v1::ConfigEntry> {
    let runtime = crate::config::Runtime {
        conf_path: conf_path.display().to_string(),
        boot_time: format_iso(start_time),
        next_job_id,
        slurm_user: format!(
            "{}({})",
            conf.slurm_user,
            uid_of(&conf.slurm_user).map_or_else(|| "?".to_string(), |u| u.to_string())
        ),
        process_user: user_name_of(current_uid()).unwrap_or_else(|| current_uid().to_string()),
    };
    let mut entries = crate::config::entries(conf, &runtime);
    if crate::config::shows_cgroup(conf) {
        entries.extend(crate::config::cgroup_entries(&cgroup_conf(conf_path)));
    }
    entries
}

/// Standby, then control, then standby again when control is given up or
/// lost, until shutdown. A failure stops the server too: nothing more can
/// be acknowledged.
async fn control_loop(
    settings: Settings,
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Envelope>,
    mut shell: crate::ha::Shell,
    mut done: watch::Receiver<bool>,
    host: String,
    ready: watch::Sender<bool>,
) -> Result<()> {
    let ctx = ControlCtx {
        settings,
        shared: Arc::clone(&shared),
        host,
        ready,
    };
    let result = async {
        loop {
            let Some(fence) = shell.standby(&mut rx, &mut done).await else {
                return Ok(());
            };
            let demoted = serve_control(&ctx, &mut rx, &mut shell, fence, &done).await?;
            if !demoted {
                return Ok(());
            }
        }
    }
    .await;
    if result.is_err() {
        let _ = shared.shutdown.send(true);
    }
    result
}

/// What every period of control needs.
struct ControlCtx {
    settings: Settings,
    shared: Arc<Shared>,
    /// This host's name (credentials).
    host: String,
    /// Set once this controller has been in control (the server starts).
    ready: watch::Sender<bool>,
}

/// Recovers the state (the epoch in `fence` is already ours) and acts
/// until shutdown (`false`) or until control is given up or lost (`true`).
async fn serve_control(
    ctx: &ControlCtx,
    rx: &mut mpsc::Receiver<Envelope>,
    shell: &mut crate::ha::Shell,
    fence: Arc<crate::ha::Fence>,
    done: &watch::Receiver<bool>,
) -> Result<bool> {
    let (settings, shared, host, ready) = (&ctx.settings, &ctx.shared, &ctx.host, &ctx.ready);
    let conf = &settings.conf;
    let operators = shared.operators.clone();
    tracing::info!(
        epoch = fence.epoch(),
        "recovering the state to take control"
    );

    // State: the snapshot and the journal generations after it.
    let state_dir = PathBuf::from(&conf.state_save_location);
    let Recovered {
        store,
        controller: ctl,
        report,
    } = {
        let options = RecoverOptions {
            ignore_damage: settings.ignore_state_errors,
            policy: SnapshotPolicy::from_env()?,
        };
        let (dir, conf, cfg) = (
            state_dir.clone(),
            conf.clone(),
            CtlConfig::from_conf(conf, operators.clone()),
        );
        tokio::task::spawn_blocking(move || StateStore::recover(&dir, &conf, cfg, &options))
            .await
            .context("recovery task failed")?
            .map_err(|e| {
                if e.is_damage() {
                    anyhow::anyhow!(
                        "{e}; to start anyway from what is valid, run slurmctld -i (the damaged file is set aside)"
                    )
                } else {
                    e.into()
                }
            })?
    };
    if report.dropped_tail > 0 {
        tracing::warn!(
            bytes = report.dropped_tail,
            "dropped a torn record at the end of the journal"
        );
    }
    if report.scripts_repaired > 0 {
        tracing::warn!(
            records = report.scripts_repaired,
            "job scripts lost from their segments were put back from the journal"
        );
    }
    tracing::info!(
        snapshot_generation = report.snapshot.map(|(g, _)| g),
        snapshot_jobs = report.snapshot.map(|(_, n)| n),
        generations = ?report.generations,
        events = report.events,
        jobs = ctl.jobs().count(),
        skipped = report.skipped,
        set_aside = report.set_aside.len(),
        elapsed_ms = report.elapsed.as_millis() as u64,
        "state recovered"
    );
    if let Err(e) = ctl.sanity_check() {
        tracing::error!(error = %e, "recovered state is inconsistent");
    }

    // Taking over from another controller: late writes of a controller
    // deposed without its consent can then only reach the journal
    // generations this snapshot replaces (see crate::ha). Not needed when
    // the epoch was this controller's own (a restart).
    let store = if fence
        .previous_owner()
        .is_some_and(|o| o != fence.record().owner)
    {
        let f = Arc::clone(&fence);
        let state = ctl.clone();
        let mut store = store;
        let (store, written) = tokio::task::spawn_blocking(move || {
            let r = f
                .check()
                .map_err(|e| e.to_string())
                .and_then(|()| store.begin_snapshot(state).map_err(|e| e.to_string()))
                .and_then(|p| p.write_checked(|| f.check()).map_err(|e| e.to_string()));
            (store, r)
        })
        .await
        .context("snapshot task failed")?;
        match written {
            Ok(w) => tracing::info!(generation = w.generation, "takeover snapshot written"),
            Err(e) if fence.is_lost() => {
                tracing::warn!(error = %e, "control lost while recovering");
                shell.owner_stopped(true);
                return Ok(true);
            }
            // The journal still has everything.
            Err(e) => tracing::error!(error = %e, "cannot write the takeover snapshot"),
        }
        store
    } else {
        store
    };

    // Acting from here on.
    shared.publish(ctl.snapshot());
    shared.set_config(config_entries(
        settings,
        shared.start_time,
        ctl.next_job_id(),
    ));
    let timeout = conf.message_timeout.max(Duration::from_secs(1));
    let agent = Agent::new(
        &node_endpoints(ctl.nodes(), conf),
        Arc::clone(&shared.auth),
        Identity {
            uid: current_uid(),
            gid: current_gid(),
            host: host.to_string(),
            ttl_secs: 300,
        },
        shared.commands.clone(),
        timeout,
        state_dir.clone(),
        slurm_common::tree::TreeWidth::new(u32::from(conf.tree_width)),
    );
    let _ping = crate::ping::spawn(&agent, shared, conf);
    // The owner stops on shutdown, or when control is given up.
    let (stop_tx, stop_rx) = watch::channel(false);
    let forward = {
        let (mut done, stop_tx) = (done.clone(), stop_tx.clone());
        tokio::spawn(async move {
            let _ = done.wait_for(|v| *v).await;
            let _ = stop_tx.send(true);
        })
    };
    // Taken without the previous owner's consent: give it time to meet
    // the new epoch at a fence check, so two controllers never both
    // answer as in control.
    shell.settle().await;
    shared.ha.set_epoch(fence.epoch());
    shared.ha.set_in_control(true);
    ready.send_replace(true);
    tracing::info!(epoch = fence.epoch(), "in control");
    let owner = crate::owner::owner_loop(
        ctl,
        store,
        state_dir.clone(),
        rx,
        Arc::clone(shared),
        agent,
        stop_rx,
        Arc::clone(&fence),
    );
    tokio::pin!(owner);
    let ended = tokio::select! {
        r = &mut owner => r,
        () = shell.active(Arc::clone(&fence)) => {
            // Asked to relinquish, or the fence failed: the owner drains
            // and flushes (writes fail the fence if it is lost).
            let _ = stop_tx.send(true);
            owner.await
        }
    };
    forward.abort();
    shared.ha.set_in_control(false);
    ended?;
    if *done.borrow() && !fence.is_lost() {
        return Ok(false);
    }
    tracing::info!(
        epoch = fence.epoch(),
        lost = fence.is_lost(),
        "no longer in control; standby"
    );
    shell.owner_stopped(fence.is_lost());
    Ok(true)
}

async fn resolve(host: &str, port: u16) -> std::net::SocketAddr {
    match tokio::net::lookup_host((host, port)).await {
        Ok(mut addrs) => {
            if let Some(a) = addrs.next() {
                return a;
            }
        }
        Err(e) => {
            tracing::warn!(%host, error = %e, "cannot resolve the controller address; listening on all")
        }
    }
    std::net::SocketAddr::from(([0, 0, 0, 0], port))
}

fn format_iso(unix: i64) -> String {
    slurm_common::time::format_timestamp(unix)
}

pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

pub fn current_gid() -> u32 {
    // SAFETY: getgid has no preconditions and cannot fail.
    unsafe { libc::getgid() }
}

/// The uid of user `name` (or `name` itself when it is a number), if the
/// passwd database knows it.
pub fn uid_of(name: &str) -> Option<u32> {
    if let Ok(uid) = name.parse::<u32>() {
        return Some(uid);
    }
    slurm_common::users::ids_of(name).map(|(uid, _)| uid)
}

pub use slurm_common::users::group_names_of;

/// The login name of `uid`, if the passwd database knows it.
pub fn user_name_of(uid: u32) -> Option<String> {
    slurm_common::users::login_of(uid).map(|(name, _)| name)
}

pub use slurm_common::host::short_hostname;
