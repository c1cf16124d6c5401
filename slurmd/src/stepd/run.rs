//! The slurmstepd process from start to exit.
//!
//! ```text
//! read launch.pb -> plan -> bind control socket -> write script, open files,
//! fork+exec  (single-threaded up to here)
//!   -> tell slurmd "started <pid>" (or "failed ...") on stdout, then detach
//!   -> runtime: wait for the script | serve signal/terminate requests
//!   -> kill leftovers in the process group -> JobComplete (retried until
//!      acknowledged) -> "done" to terminate waiters -> remove the job dir
//! ```
//!
//! A launch that fails after slurmstepd started is reported through
//! JobComplete with `launch_error` set, so every accepted launch ends in
//! exactly one JobComplete.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use slurm_common::auth::unix_now;
use slurm_proto::v1::{ExitCode, JobCompleteRequest, LaunchBatchRequest, ResourceUsage};
use slurm_proto::ErrorCode;
use thiserror::Error;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::sync::watch;

use super::env::NodeContext;
use super::exec::{self, ExecError, Exit, RealSyscalls, Syscalls, Usage, TERMINATE_SIGNALS};
use super::plan::{self, PlanError, StepdContext};
use super::prio::PrioPropagation;
use super::user_env;
use crate::client::{retry, ControllerClient};
use crate::config::{select_plugin_id, NodeSetup};
use crate::control::{EndReason, Request, MAX_LINE};
use crate::spool::{parse_job_dir_name, SOCKET_FILE, SPEC_FILE};

/// Command line of slurmstepd (given by slurmd only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepdArgs {
    pub conf: PathBuf,
    pub node: String,
    pub job_dir: PathBuf,
    pub log_file: Option<PathBuf>,
}

/// `slurmstepd -f CONF -N NODE -J JOB_DIR [-L LOGFILE]`.
pub fn parse_args(args: &[String]) -> Result<StepdArgs, String> {
    let (mut conf, mut node, mut job_dir, mut log_file) = (None, None, None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("option {name} needs a value"))
        };
        match a.as_str() {
            "-f" => conf = Some(PathBuf::from(value("-f")?)),
            "-N" => node = Some(value("-N")?),
            "-J" => job_dir = Some(PathBuf::from(value("-J")?)),
            "-L" => log_file = Some(PathBuf::from(value("-L")?)),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(StepdArgs {
        conf: conf.ok_or("missing -f CONF")?,
        node: node.ok_or("missing -N NODE")?,
        job_dir: job_dir.ok_or("missing -J JOB_DIR")?,
        log_file,
    })
}

/// Why the script did not start.
#[derive(Debug, Error)]
pub enum LaunchError {
    #[error("cannot read launch request {}: {source}", path.display())]
    ReadSpec {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot decode launch request {}: {source}", path.display())]
    DecodeSpec {
        path: PathBuf,
        source: prost::DecodeError,
    },
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error("cannot listen on {}: {source}", path.display())]
    Socket {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot load {}: {source}", path.display())]
    Config {
        path: PathBuf,
        source: slurm_common::conf::ConfError,
    },
}

impl LaunchError {
    /// The Slurm error number reported to the controller.
    pub fn code(&self) -> ErrorCode {
        match self {
            LaunchError::ReadSpec { .. } | LaunchError::DecodeSpec { .. } => {
                ErrorCode::CreateBatchDir
            }
            LaunchError::Plan(PlanError::WrongUser { .. }) => ErrorCode::SetUidOrGid,
            LaunchError::Plan(_) => ErrorCode::SetupEnvironment,
            LaunchError::Exec(ExecError::Identity { .. }) => ErrorCode::SetUidOrGid,
            LaunchError::Exec(ExecError::Stdio { .. }) => ErrorCode::IoError,
            LaunchError::Exec(ExecError::Script { .. }) => ErrorCode::CreateBatchDir,
            LaunchError::Exec(ExecError::Nul { .. }) => ErrorCode::SetupEnvironment,
            LaunchError::Exec(ExecError::Fork { .. } | ExecError::Exec { .. }) => {
                ErrorCode::ExecveFailed
            }
            LaunchError::Socket { .. } => ErrorCode::CreateBatchDir,
            LaunchError::Config { .. } => ErrorCode::SetupEnvironment,
        }
    }
}

/// The running script.
struct Started {
    pid: i32,
    stdio: exec::Stdio,
    listener: std::os::unix::net::UnixListener,
}

fn read_spec(job_dir: &Path) -> Result<LaunchBatchRequest, LaunchError> {
    let path = job_dir.join(SPEC_FILE);
    let bytes = std::fs::read(&path).map_err(|source| LaunchError::ReadSpec {
        path: path.clone(),
        source,
    })?;
    LaunchBatchRequest::decode(bytes.as_slice())
        .map_err(|source| LaunchError::DecodeSpec { path, source })
}

/// The stepd context for `setup`'s node; `own_uid` and `own_nice` are
/// slurmstepd's effective uid and nice value.
pub fn context(
    setup: &NodeSetup,
    job_dir: &Path,
    own_uid: u32,
    own_nice: Option<i32>,
) -> Result<StepdContext, LaunchError> {
    let conf = &setup.conf;
    let propagate_prio =
        PrioPropagation::from_conf(conf).map_err(|source| LaunchError::Config {
            path: setup.conf_path.clone(),
            source,
        })?;
    let (addr, port) = match conf.slurmctld_hosts.first() {
        Some(h) => (h.contact().to_string(), conf.slurmctld_port.first),
        None => (String::new(), conf.slurmctld_port.first),
    };
    Ok(StepdContext {
        node: NodeContext {
            node_name: setup.node.name.clone(),
            host_name: crate::hw::short_host_name(),
            conf_path: setup.conf_path.display().to_string(),
            tmp_fs: conf.tmp_fs.clone(),
            controller_addr: addr,
            controller_port: port,
            select_plugin_id: select_plugin_id(conf.select_type),
        },
        job_dir: job_dir.to_path_buf(),
        own_uid,
        append_by_default: false,
        propagate_prio,
        own_nice,
        user_env: None,
    })
}

/// Everything up to the exec, while single-threaded.
fn start(
    req: &mut LaunchBatchRequest,
    setup: &NodeSetup,
    job_dir: &Path,
) -> Result<Started, LaunchError> {
    if req.user_name.is_empty() {
        req.user_name =
            crate::users::name_of(req.user_id).unwrap_or_else(|| req.user_id.to_string());
    }
    let own_uid = crate::users::euid();
    if own_uid == 0 && req.extra_group_ids.is_empty() {
        // What initgroups(3) gives the user: its groups around its passwd
        // group, whatever group the job runs as (root's `--uid=nobody`
        // runs with gid root and nobody's groups, as in Slurm).
        req.extra_group_ids = crate::users::login_groups(&req.user_name, req.user_id, req.group_id);
    }
    let own_nice = super::prio::own_nice()
        .map_err(|e| tracing::debug!(error = %e, "cannot read slurmstepd's nice value"))
        .ok();
    let mut ctx = context(setup, job_dir, own_uid, own_nice)?;
    // A slurmstepd of another user is refused by the plan; no login then.
    let may_login = own_uid == 0 || own_uid == req.user_id;
    if may_login && user_env::requested(&req.environment) {
        let timeout =
            user_env::timeout_from_conf(&setup.conf).map_err(|source| LaunchError::Config {
                path: setup.conf_path.clone(),
                source,
            })?;
        // An unknown user fails the launch below, when the identity is
        // switched; there is no login to load meanwhile.
        ctx.user_env = match crate::users::entry_of(req.user_id) {
            Some(pw) => Some(user_env::load(&pw, own_uid, timeout)),
            None => {
                tracing::warn!(
                    uid = req.user_id,
                    "no passwd entry; the login environment is not loaded"
                );
                None
            }
        };
    }
    let plan = plan::plan(req, &ctx)?;
    let sock = job_dir.join(SOCKET_FILE);
    let _ = std::fs::remove_file(&sock);
    let listener =
        std::os::unix::net::UnixListener::bind(&sock).map_err(|source| LaunchError::Socket {
            path: sock.clone(),
            source,
        })?;
    let (pid, stdio) = exec::launch_on(&plan, &mut RealSyscalls, Some(&setup.node.name))?;
    Ok(Started {
        pid,
        stdio,
        listener,
    })
}

/// Points standard input, output and error at /dev/null, so slurmstepd
/// holds nothing of slurmd's once it has said whether the launch worked.
fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors, which we own.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// Runs slurmstepd; the process exit status.
pub fn run(args: StepdArgs) -> i32 {
    // slurm.conf is read below, after logging starts: info until then.
    crate::logging::init(
        args.log_file.as_deref(),
        0,
        slurm_common::conf::LogLevel::default(),
    );
    let host = crate::hw::short_host_name();
    let setup = match NodeSetup::load(&args.conf, Some(&args.node), &host) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(std::io::stdout(), "failed {e}");
            tracing::error!(error = %e, "slurmstepd cannot load its configuration");
            return 1;
        }
    };
    let job_id = args
        .job_dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_job_dir_name)
        .unwrap_or(0);
    let span = tracing::info_span!("slurmstepd", job_id, node = %setup.node.name);
    let _enter = span.enter();
    let started =
        read_spec(&args.job_dir).and_then(|mut req| start(&mut req, &setup, &args.job_dir));
    {
        let mut out = std::io::stdout();
        let _ = match &started {
            Ok(s) => writeln!(out, "started {}", s.pid),
            Err(e) => writeln!(out, "failed {e}"),
        };
        let _ = out.flush();
    }
    detach_stdio();

    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return 1;
        }
    };
    let node_name = setup.node.name.clone();
    let job_dir = args.job_dir.clone();
    let outcome = runtime.block_on(async move {
        let client = match make_client(&setup) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "cannot reach the controller; job completion is lost");
                return 1;
            }
        };
        match started {
            Ok(s) => {
                let kill_wait = setup.conf.kill_wait;
                supervise(s, job_id, &node_name, kill_wait, &client).await;
            }
            Err(LaunchError::Exec(ExecError::Exec { path, source })) => {
                // As Slurm: a script that cannot be executed is the job's
                // failure (its line is in the job's error file), not the
                // node's; the exit code is the error number.
                tracing::info!(script = %path.display(), error = %source, "cannot execute the batch script");
                let report = JobCompleteRequest {
                    job_id,
                    node_name: node_name.clone(),
                    exit_code: Some(ExitCode {
                        status: source.raw_os_error().map_or(1, |e| u32::try_from(e).unwrap_or(1)),
                        signal: 0,
                        core_dumped: false,
                    }),
                    end_time: unix_now(),
                    ..Default::default()
                };
                report_complete(&client, report).await;
            }
            Err(e) => {
                tracing::error!(error = %e, "launch failed");
                let report = JobCompleteRequest {
                    job_id,
                    node_name: node_name.clone(),
                    launch_error: e.code().number(),
                    end_time: unix_now(),
                    ..Default::default()
                };
                report_complete(&client, report).await;
            }
        }
        0
    });
    if let Err(e) = std::fs::remove_dir_all(&job_dir) {
        tracing::warn!(dir = %job_dir.display(), error = %e, "cannot remove the job directory");
    }
    outcome
}

fn make_client(setup: &NodeSetup) -> Result<ControllerClient, crate::Error> {
    let auth = setup.authenticator()?;
    let ttl = setup.auth_info()?.credential_ttl();
    let endpoints = setup.controller_endpoints()?;
    Ok(ControllerClient::new(
        &endpoints,
        auth,
        crate::hw::short_host_name(),
        ttl,
        setup.conf.message_timeout,
    )?)
}

async fn report_complete(client: &ControllerClient, report: JobCompleteRequest) {
    let job_id = report.job_id;
    match retry("JobComplete", Duration::from_secs(10), || {
        client.job_complete(report.clone())
    })
    .await
    {
        Ok(_) => tracing::debug!(job_id, "controller has the job's completion"),
        Err(e) => tracing::error!(job_id, error = %e, "controller refused the job's completion"),
    }
}

/// Shared by the request handlers.
struct Shared {
    pid: i32,
    job_id: u32,
    node_name: String,
    kill_wait: Duration,
    terminating: AtomicBool,
    /// The job's error stream (its output when joined).
    err_file: Option<std::fs::File>,
    ended: watch::Receiver<bool>,
}

async fn supervise(
    s: Started,
    job_id: u32,
    node_name: &str,
    kill_wait: Duration,
    client: &ControllerClient,
) {
    let pid = s.pid;
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = exit_tx.send(exec::wait_with_usage(pid));
    });
    let err_fd = s.stdio.stderr.as_ref().unwrap_or(&s.stdio.stdout);
    let err_file = err_fd.try_clone().ok().map(std::fs::File::from);
    drop(s.stdio);
    let (ended_tx, ended_rx) = watch::channel(false);
    let shared = Arc::new(Shared {
        pid,
        job_id,
        node_name: node_name.to_string(),
        kill_wait,
        terminating: AtomicBool::new(false),
        err_file,
        ended: ended_rx,
    });
    let (alive_tx, mut alive_rx) = tokio::sync::mpsc::channel::<()>(1);
    let accept = match s
        .listener
        .set_nonblocking(true)
        .and_then(|()| UnixListener::from_std(s.listener))
    {
        Ok(listener) => {
            let shared = shared.clone();
            Some(tokio::spawn(async move {
                loop {
                    let stream = match listener.accept().await {
                        Ok((stream, _)) => stream,
                        Err(e) => {
                            // Out of descriptors or similar: do not spin.
                            tracing::warn!(error = %e, "control socket accept failed");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    };
                    let shared = shared.clone();
                    let alive = alive_tx.clone();
                    tokio::spawn(async move {
                        handle_conn(stream, &shared).await;
                        drop(alive);
                    });
                }
            }))
        }
        Err(e) => {
            tracing::error!(error = %e, "control socket unusable; signals cannot reach the job");
            drop(alive_tx);
            None
        }
    };

    let (exit, usage) = match exit_rx.await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "cannot wait for the batch script");
            (Exit::default(), Usage::default())
        }
        Err(_) => (Exit::default(), Usage::default()),
    };
    tracing::info!(
        job_id,
        status = exit.status,
        signal = exit.signal,
        "batch script ended"
    );
    // Whatever the script left behind in its process group goes too.
    let _ = RealSyscalls.kill_group(pid, libc::SIGKILL);

    let report = JobCompleteRequest {
        job_id,
        node_name: node_name.to_string(),
        exit_code: Some(ExitCode {
            status: exit.status,
            signal: exit.signal,
            core_dumped: exit.core_dumped,
        }),
        launch_error: 0,
        usage: Some(ResourceUsage {
            user_cpu_usec: usage.user_cpu_usec,
            system_cpu_usec: usage.system_cpu_usec,
            max_rss_kib: usage.max_rss_kib,
            ..Default::default()
        }),
        oom_killed: false,
        end_time: unix_now(),
    };
    report_complete(client, report).await;
    let _ = ended_tx.send(true);
    if let Some(task) = accept {
        task.abort();
        let _ = task.await;
    }
    // Let handlers tell their callers "done" before the process exits.
    let _ = tokio::time::timeout(Duration::from_secs(2), alive_rx.recv()).await;
}

async fn handle_conn(stream: tokio::net::UnixStream, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let read = (&mut reader)
        .take(MAX_LINE as u64)
        .read_line(&mut line)
        .await;
    if read.is_err() {
        return;
    }
    match Request::parse(&line) {
        Err(e) => {
            let _ = reader
                .get_mut()
                .write_all(format!("error {e}\n").as_bytes())
                .await;
        }
        Ok(Request::Signal { signal }) => {
            let text = match RealSyscalls.kill_group(shared.pid, signal) {
                Ok(()) => "ok\n".to_string(),
                Err(e) => format!("error {e}\n"),
            };
            let _ = reader.get_mut().write_all(text.as_bytes()).await;
        }
        Ok(Request::SignalBatch { signal }) => {
            // As Slurm's slurmstepd: SIGTERM or SIGKILL sent to the batch
            // shell alone (`scancel -b`) is a cancellation, said in the
            // job's error stream; other signals are not.
            if matches!(signal, libc::SIGTERM | libc::SIGKILL) {
                let line = end_banner(
                    shared.job_id,
                    &shared.node_name,
                    EndReason::Cancelled,
                    unix_now(),
                );
                if let (Some(line), Some(mut f)) = (line, shared.err_file.as_ref()) {
                    let _ = f.write_all(line.as_bytes());
                }
            }
            let text = match exec::kill_process(shared.pid, signal) {
                Ok(()) => "ok\n".to_string(),
                Err(e) => format!("error {e}\n"),
            };
            let _ = reader.get_mut().write_all(text.as_bytes()).await;
        }
        Ok(Request::Terminate {
            kill_wait_secs,
            reason,
            time,
        }) => {
            let _ = reader.get_mut().write_all(b"ok\n").await;
            if !shared.terminating.swap(true, Ordering::SeqCst) && !*shared.ended.borrow() {
                begin_termination(shared, kill_wait_secs, reason, time);
            }
            let mut ended = shared.ended.clone();
            let _ = ended.wait_for(|e| *e).await;
            let _ = reader.get_mut().write_all(b"done\n").await;
        }
    }
}

/// The `*** JOB ... ***` line Slurm writes to a job's error stream, from
/// `slurmstepd-NODE` as Slurm 22.05 names itself there.
pub fn end_banner(job_id: u32, node: &str, reason: EndReason, time: i64) -> Option<String> {
    let suffix = reason.suffix()?;
    Some(format!(
        "slurmstepd-{node}: error: *** JOB {job_id} ON {node} CANCELLED AT {}{suffix} ***\n",
        slurm_common::time::format_timestamp(time)
    ))
}

fn begin_termination(shared: &Shared, kill_wait_secs: u32, reason: EndReason, time: i64) {
    if let (Some(line), Some(mut f)) = (
        end_banner(shared.job_id, &shared.node_name, reason, time),
        shared.err_file.as_ref(),
    ) {
        let _ = f.write_all(line.as_bytes());
    }
    for sig in TERMINATE_SIGNALS {
        if let Err(e) = RealSyscalls.kill_group(shared.pid, sig) {
            tracing::warn!(signal = sig, error = %e, "cannot signal the job");
        }
    }
    let wait = if kill_wait_secs > 0 {
        Duration::from_secs(u64::from(kill_wait_secs))
    } else {
        shared.kill_wait
    };
    let pid = shared.pid;
    let mut ended = shared.ended.clone();
    tokio::spawn(async move {
        if tokio::time::timeout(wait, ended.wait_for(|e| *e))
            .await
            .is_err()
        {
            tracing::info!(pid, "job still running after KillWait; sending SIGKILL");
            let _ = RealSyscalls.kill_group(pid, libc::SIGKILL);
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn args() {
        let a: Vec<String> = ["-f", "/c", "-N", "n1", "-J", "/s/job00001", "-L", "/l"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let p = parse_args(&a).unwrap();
        assert_eq!(p.node, "n1");
        assert_eq!(p.log_file, Some(PathBuf::from("/l")));
        assert!(parse_args(&a[..4]).unwrap_err().contains("-J"));
        assert!(parse_args(&["-x".to_string()]).is_err());
        assert!(parse_args(&["-f".to_string()]).is_err());
    }

    /// The job's nice value, read back from `/proc` by the script that
    /// slurmstepd's own launch path (`start`) ran with
    /// PropagatePrioProcess=`mode` and `SLURM_PRIO_PROCESS=requested`.
    fn launched_nice(mode: &str, requested: &str) -> i32 {
        let dir = tempfile::tempdir().unwrap();
        let conf = format!(
            "ClusterName=t\nSlurmctldHost=ctl(127.0.0.1)\nPropagatePrioProcess={mode}\n\
             NodeName=n1 NodeHostname=vm NodeAddr=127.0.0.1 CPUs=1\n\
             PartitionName=debug Nodes=ALL Default=YES\n"
        );
        let conf_path = dir.path().join("slurm.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let setup = NodeSetup::load(&conf_path, Some("n1"), "vm").unwrap();
        let out = dir.path().join("out.txt");
        // SAFETY: getegid cannot fail.
        let gid = unsafe { libc::getegid() };
        let mut req = LaunchBatchRequest {
            job_id: 31,
            name: "nice.sh".into(),
            user_id: crate::users::euid(),
            group_id: gid,
            script: "#!/bin/sh\ncat /proc/$$/stat\n".into(),
            work_dir: dir.path().display().to_string(),
            stdout_path: out.display().to_string(),
            environment: vec![format!("SLURM_PRIO_PROCESS={requested}")],
            nodes: "n1".into(),
            cpus_per_node: vec![1],
            ..Default::default()
        };
        let started = start(&mut req, &setup, dir.path()).unwrap();
        assert_eq!(exec::wait_for(started.pid).unwrap().status, 0);
        let stat = std::fs::read_to_string(&out).unwrap();
        // Field 19; the command name (field 2) is in parentheses.
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        after.split_whitespace().nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn the_submitters_nice_value_reaches_the_job() {
        let own = super::super::prio::own_nice().unwrap();
        let root = crate::users::euid() == 0;
        // Mode 1: the submitter's 7, unless that is better than ours and
        // the job is not root's.
        let want = if root { 7 } else { own.max(7) };
        assert_eq!(launched_nice("1", "7"), want);
        // Mode 2: one worse than slurmstepd at least.
        assert_eq!(launched_nice("2", "0"), (own + 1).min(19));
        // Mode 0, or a value that is not a number: the job keeps ours.
        assert_eq!(launched_nice("0", "7"), own);
        assert_eq!(launched_nice("1", "seven"), own);
    }

    #[test]
    fn banners() {
        assert_eq!(end_banner(1, "n1", EndReason::Other, 0), None);
        let b = end_banner(14, "n1", EndReason::Timeout, 0).unwrap();
        assert!(
            b.starts_with("slurmstepd-n1: error: *** JOB 14 ON n1 CANCELLED AT "),
            "{b}"
        );
        assert!(b.ends_with(" DUE TO TIME LIMIT ***\n"), "{b}");
    }

    #[test]
    fn error_codes() {
        let e = LaunchError::Plan(PlanError::WrongUser {
            job_id: 1,
            own_uid: 1,
            job_uid: 2,
        });
        assert_eq!(e.code(), ErrorCode::SetUidOrGid);
        let e = LaunchError::Exec(ExecError::Exec {
            path: "/x".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOEXEC),
        });
        assert_eq!(e.code(), ErrorCode::ExecveFailed);
    }
}
