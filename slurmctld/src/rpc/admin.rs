//! The administrators' calls that change no job or node: the batch script
//! of a job (`scontrol write batch_script`), the log level and DebugFlags
//! (`scontrol setdebug`, `setdebugflags`), and telling every slurmd to stop
//! (`scontrol shutdown`).
//!
//! None of them goes through the owner task: a script is read from its
//! segment with the published snapshot saying where it is, and the log
//! level and flags are the daemon's, not the cluster's state, so nothing
//! here is journaled. As in Slurm, a level or flags set here last until
//! the controller next reads slurm.conf (a restart, a reconfigure, taking
//! control), which also rewrites what `scontrol show config` shows.
//!
//! Refusals carry Slurm's codes: a job that is not the caller's gives
//! ESLURM_USER_ID_MISSING, a non-operator changing the log gets EACCES.

use std::sync::Arc;
use std::time::Duration;

use slurm_common::conf::{LogLevel, SlurmConf};
use slurm_proto::ErrorCode;
use tonic::Status;

use super::Shared;
use crate::agent::{Agent, Identity};
use crate::core::Caller;
use crate::persist::scripts;

/// The batch script of `job_id` for `caller`: the job's owner or an
/// operator. An array task's script is its array's.
pub(super) async fn batch_script(
    shared: &Shared,
    caller: Caller,
    job_id: u32,
) -> Result<String, Status> {
    let (owner, files) = {
        let snap = shared.snapshot();
        let job = snap
            .jobs
            .get(&job_id)
            .ok_or_else(|| ErrorCode::InvalidJobId.to_status(""))?;
        if job.uid != caller.uid && !shared.is_operator(caller.uid) {
            return Err(ErrorCode::InvalidUserId.to_status(""));
        }
        let owner = job.array.as_ref().map_or(job_id, |a| a.array_job_id);
        (owner, job.spec.files)
    };
    if files.script_len == 0 {
        return Err(ErrorCode::JobScriptMissing.to_status(""));
    }
    let dir = shared.state_dir.clone();
    let read = tokio::task::spawn_blocking(move || scripts::read(&dir, owner, files))
        .await
        .map_err(|e| ErrorCode::Internal.to_status(format!("script reader failed: {e}")))?;
    match read {
        Ok((script, _environment)) => Ok(script),
        // Purged between the snapshot and the read, or damaged: there is
        // no script to give.
        Err(e) => Err(ErrorCode::JobScriptMissing.to_status(e.to_string())),
    }
}

/// Refuses a caller who may not change the daemon's log, as Slurm does.
fn require_operator(shared: &Shared, caller: Caller) -> Result<(), Status> {
    if shared.is_operator(caller.uid) {
        Ok(())
    } else {
        Err(ErrorCode::PermissionDenied.to_status(""))
    }
}

/// The SlurmctldDebug level for a requested number, brought into 0-9 as
/// Slurm does.
pub fn level_for(number: i32) -> LogLevel {
    let index = usize::try_from(number.clamp(0, 9)).unwrap_or(0);
    LogLevel::ALL.get(index).copied().unwrap_or(LogLevel::Info)
}

/// `scontrol setdebug`: the log level from now on.
pub(super) fn set_debug_level(shared: &Shared, caller: Caller, number: i32) -> Result<(), Status> {
    require_operator(shared, caller)?;
    let level = level_for(number);
    crate::logging::set_level(level).map_err(|e| ErrorCode::Disabled.to_status(e.to_string()))?;
    replace_entry(shared, "SlurmctldDebug", level.as_str().to_string());
    tracing::info!("set debug level to '{}'", level.as_str());
    Ok(())
}

/// The DebugFlags of `current` (as `show config` prints them) with
/// `remove` taken out and `add` put in, in Slurm's spelling whatever case
/// they came in; an error names the first word that is no DebugFlags name.
pub fn change_flags(
    current: &str,
    add: &[String],
    remove: &[String],
) -> Result<Vec<String>, String> {
    let named = |list: &[String]| -> Result<Vec<&'static str>, String> {
        list.iter()
            .map(|n| slurm_common::conf::debug_flag(n).ok_or_else(|| n.clone()))
            .collect()
    };
    let (add, remove) = (named(add)?, named(remove)?);
    let mut flags: Vec<String> = if current == "(null)" {
        Vec::new()
    } else {
        current
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect()
    };
    flags.retain(|f| !remove.iter().any(|r| r.eq_ignore_ascii_case(f)));
    for name in add {
        if !flags.iter().any(|f| f.eq_ignore_ascii_case(name)) {
            flags.push(name.to_string());
        }
    }
    Ok(flags)
}

/// `scontrol setdebugflags`: the DebugFlags from now on, each a name of
/// Slurm's list. This controller acts on none of them yet: it keeps and
/// shows the list.
pub(super) fn set_debug_flags(
    shared: &Shared,
    caller: Caller,
    add: &[String],
    remove: &[String],
) -> Result<Vec<String>, Status> {
    require_operator(shared, caller)?;
    let current = shared
        .config()
        .into_iter()
        .find(|e| e.key == "DebugFlags")
        .map_or_else(|| "(null)".to_string(), |e| e.value);
    let flags = change_flags(&current, add, remove).map_err(|name| {
        ErrorCode::MalformedRequest.to_status(format!("invalid DebugFlag: {name:?}"))
    })?;
    let shown = if flags.is_empty() {
        "(null)".to_string()
    } else {
        flags.join(",")
    };
    tracing::info!("set DebugFlags to {shown}");
    replace_entry(shared, "DebugFlags", shown);
    Ok(flags)
}

/// Sets one `scontrol show config` value.
fn replace_entry(shared: &Shared, key: &str, value: String) {
    let mut entries = shared.config();
    if let Some(e) = entries.iter_mut().find(|e| e.key == key) {
        e.value = value;
        shared.set_config(entries);
    }
}

/// Stops the controller, after telling every slurmd to stop when
/// `nodes_too` (`scontrol shutdown` without an argument). Runs on its own
/// so the caller gets its answer at once, as from Slurm; the server stops
/// once the nodes have been told (or could not be, within the time a
/// broadcast of that size may take).
/// `scontrol abort`: the process aborts (a core file where the limits
/// allow one) once the reply has had a moment to leave. Nothing is lost:
/// every change acknowledged is in the journal already.
pub(super) fn abort_soon() {
    tokio::spawn(async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::process::abort();
    });
}

pub(super) fn begin_shutdown(shared: Arc<Shared>, nodes_too: bool) {
    tokio::spawn(async move {
        if nodes_too {
            stop_nodes(&shared).await;
        }
        let _ = shared.shutdown.send(true);
    });
}

/// Tells every node's slurmd to stop, through the TreeWidth tree. The
/// node addresses are the controller's; the tree's width and timeout come
/// from slurm.conf, read again as `scontrol reconfigure` reads it.
async fn stop_nodes(shared: &Shared) {
    let path = shared.conf_path.clone();
    let loaded = tokio::task::spawn_blocking(move || SlurmConf::load(&path.to_string_lossy()))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    let conf = match loaded {
        Ok(parsed) => parsed.conf,
        Err(e) => {
            tracing::error!(error = %e, "shutdown: cannot read slurm.conf; the nodes are not told to stop");
            return;
        }
    };
    let snap = shared.snapshot();
    let endpoints = crate::server::node_endpoints(&snap.nodes, &conf);
    if endpoints.is_empty() {
        return;
    }
    let timeout = conf.message_timeout.max(Duration::from_secs(1));
    let agent = Agent::new(
        &endpoints,
        Arc::clone(&shared.auth),
        Identity {
            uid: crate::server::current_uid(),
            gid: crate::server::current_gid(),
            host: shared.ping.hostname.clone(),
            ttl_secs: 300,
        },
        shared.commands.clone(),
        timeout,
        shared.state_dir.clone(),
        slurm_common::tree::TreeWidth::new(u32::from(conf.tree_width)),
    );
    let all: Vec<usize> = (0..endpoints.len()).collect();
    let budget = agent.broadcast_budget(all.len(), timeout);
    let outcomes = agent.shutdown_nodes(&all, budget).await;
    let silent: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.result.is_err())
        .filter_map(|o| agent.node_name(o.node))
        .collect();
    let told = outcomes.len() - silent.len();
    if silent.is_empty() {
        tracing::info!(nodes = told, "every slurmd told to stop");
    } else {
        // A node already down has nothing to stop.
        tracing::info!(
            nodes = told,
            ?silent,
            "slurmd told to stop, except on nodes that did not answer"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::RwLock;

    use slurm_common::auth::{unix_now, Authenticator, Claims, SlurmKeyAuth};
    use slurm_common::ids::{Gid, Uid};
    use slurm_proto::v1;
    use slurm_proto::SlurmController;
    use tokio::sync::{mpsc, watch};
    use tonic::Request;

    use super::*;
    use crate::core::tests::{script, Env, ALICE, BOB};
    use crate::core::{Command, Snapshot};
    use crate::persist::ScriptLog;
    use crate::rpc::Service;

    /// What the handlers share, over `snap`, with scripts in `state_dir`
    /// and root and uid 1002 as operators.
    fn shared(snap: Snapshot, state_dir: &Path, auth: Arc<dyn Authenticator>) -> Arc<Shared> {
        let (commands, _) = mpsc::channel(1);
        let (link, _) = crate::ha::Link::new(0);
        link.set_in_control(true);
        let (shutdown, _) = watch::channel(false);
        Arc::new(Shared {
            snapshot: RwLock::new(Arc::new(snap)),
            commands,
            auth,
            config: RwLock::new(vec![
                v1::ConfigEntry {
                    key: "DebugFlags".into(),
                    value: "(null)".into(),
                },
                v1::ConfigEntry {
                    key: "SlurmctldDebug".into(),
                    value: "info".into(),
                },
            ]),
            start_time: 0,
            ping: v1::PingReply::default(),
            ha: link,
            shutdown,
            operators: vec![0, 1002],
            conf_path: "/nonexistent/slurm.conf".into(),
            state_dir: state_dir.to_path_buf(),
            controllers: 1,
        })
    }

    fn key_auth() -> Arc<SlurmKeyAuth> {
        Arc::new(SlurmKeyAuth::from_key(&[5u8; 32]).unwrap())
    }

    const OPERATOR: Caller = Caller {
        uid: 1002,
        gid: 1002,
    };

    /// A controller with one job of ALICE whose script is on disk in `dir`.
    fn one_job(dir: &Path, body: &str) -> (Snapshot, u32) {
        let mut env = Env::new();
        let mut d = script();
        d.script = body.to_string();
        let out = env.ctl.handle(
            Command::Submit {
                caller: ALICE,
                desc: Box::new(d),
            },
            env.now,
        );
        ScriptLog::new(dir).write_batch(&out.job_files).unwrap();
        let id = out.job_files[0].job_id;
        (env.ctl.snapshot(), id)
    }

    fn code(s: &Status) -> ErrorCode {
        ErrorCode::from_status(s).0
    }

    #[tokio::test]
    async fn a_batch_script_goes_to_its_owner_and_operators_only() {
        let dir = tempfile::tempdir().unwrap();
        let body = "#!/bin/sh\n# \u{e9}\tx  \necho hi\n\n";
        let (snap, id) = one_job(dir.path(), body);
        let shared = shared(snap, dir.path(), key_auth());
        assert_eq!(batch_script(&shared, ALICE, id).await.unwrap(), body);
        assert_eq!(batch_script(&shared, OPERATOR, id).await.unwrap(), body);
        assert_eq!(batch_script(&shared, Caller::ROOT, id).await.unwrap(), body);
        let e = batch_script(&shared, BOB, id).await.unwrap_err();
        assert_eq!(code(&e), ErrorCode::InvalidUserId);
        let e = batch_script(&shared, ALICE, id + 1).await.unwrap_err();
        assert_eq!(code(&e), ErrorCode::InvalidJobId);
        // The segment gone (the job purged meanwhile): no script to give.
        std::fs::remove_dir_all(dir.path().join(scripts::SCRIPTS_DIR)).unwrap();
        let e = batch_script(&shared, ALICE, id).await.unwrap_err();
        assert_eq!(code(&e), ErrorCode::JobScriptMissing);
    }

    #[test]
    fn only_operators_change_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(Env::new().ctl.snapshot(), dir.path(), key_auth());
        let e = set_debug_level(&shared, BOB, 7).unwrap_err();
        assert_eq!(code(&e), ErrorCode::PermissionDenied);
        let e = set_debug_flags(&shared, BOB, &names(&["Backfill"]), &[]).unwrap_err();
        assert_eq!(code(&e), ErrorCode::PermissionDenied);
        let flags = set_debug_flags(&shared, OPERATOR, &names(&["Backfill", "Gres"]), &[]).unwrap();
        assert_eq!(flags, names(&["Backfill", "Gres"]));
        let flags = set_debug_flags(&shared, OPERATOR, &[], &names(&["backfill"])).unwrap();
        assert_eq!(flags, names(&["Gres"]));
        let shown = |key: &str| {
            shared
                .config()
                .into_iter()
                .find(|e| e.key == key)
                .map(|e| e.value)
        };
        assert_eq!(shown("DebugFlags").as_deref(), Some("Gres"));
        let e = set_debug_flags(&shared, OPERATOR, &names(&["a b"]), &[]).unwrap_err();
        assert_eq!(code(&e), ErrorCode::MalformedRequest);
        // A library without the daemon's log cannot change its level, and
        // says so rather than pretend.
        let e = set_debug_level(&shared, OPERATOR, 7).unwrap_err();
        assert_eq!(code(&e), ErrorCode::Disabled);
        assert_eq!(shown("SlurmctldDebug").as_deref(), Some("info"));
    }

    #[tokio::test]
    async fn shutdown_by_a_non_operator_is_refused_as_slurm_refuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let auth = key_auth();
        let shared = shared(Env::new().ctl.snapshot(), dir.path(), auth.clone());
        let service = Service::new(Arc::clone(&shared));
        let signed = |uid: u32| {
            let claims = Claims::new(Uid::new(uid), Gid::new(uid), "login", unix_now(), 600);
            let mut req = Request::new(v1::ShutdownRequest {
                scope: v1::ShutdownScope::Controller as i32,
            });
            slurm_proto::set_auth_credential(req.metadata_mut(), &auth.create(&claims).unwrap())
                .unwrap();
            req
        };
        let e = service.shutdown(signed(1001)).await.unwrap_err();
        assert_eq!(code(&e), ErrorCode::InvalidUserId);
        assert!(!*shared.shutdown.borrow());
        let mut stopped = shared.shutdown.subscribe();
        service.shutdown(signed(1002)).await.unwrap();
        // The stop comes from a task; wait for it, bounded.
        tokio::time::timeout(Duration::from_secs(10), stopped.wait_for(|v| *v))
            .await
            .unwrap()
            .unwrap();
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn levels_are_brought_into_slurms_range() {
        assert_eq!(level_for(0), LogLevel::Quiet);
        assert_eq!(level_for(3), LogLevel::Info);
        assert_eq!(level_for(6), LogLevel::Debug2);
        assert_eq!(level_for(9), LogLevel::Debug5);
        assert_eq!(level_for(42), LogLevel::Debug5);
        assert_eq!(level_for(-5), LogLevel::Quiet);
    }

    #[test]
    fn flags_are_added_and_removed_without_regard_to_case() {
        let f = change_flags("(null)", &names(&["Backfill", "Gres"]), &[]).unwrap();
        assert_eq!(f, names(&["Backfill", "Gres"]));
        let f = change_flags("Backfill,Gres", &names(&["backfill"]), &names(&["GRES"])).unwrap();
        assert_eq!(f, names(&["Backfill"]));
        // Stored in Slurm's spelling, however typed.
        let f = change_flags("(null)", &names(&["BACKFILLMAP"]), &[]).unwrap();
        assert_eq!(f, names(&["BackfillMap"]));
        let f = change_flags("Backfill", &[], &names(&["Backfill"])).unwrap();
        assert!(f.is_empty());
        assert_eq!(
            change_flags("(null)", &names(&["Back fill"]), &[]),
            Err("Back fill".to_string())
        );
        assert_eq!(
            change_flags("(null)", &[], &names(&[""])),
            Err(String::new())
        );
        // A plain word that is no flag.
        assert_eq!(
            change_flags("(null)", &names(&["Backfil"]), &[]),
            Err("Backfil".to_string())
        );
        let long = "x".repeat(100);
        assert!(change_flags("(null)", &[long], &[]).is_err());
    }
}
