//! Carrying a [`LaunchPlan`] out: the script file, the standard streams, the
//! fork and exec, and signals to the job's process group.
//!
//! Every privileged or process-level call goes through the [`Syscalls`]
//! trait. [`RealSyscalls`] is the one implementation that talks to the
//! kernel; [`RecordingSyscalls`] records the calls so the order of
//! operations and the handling of failures are tested without root.
//!
//! The fork happens while slurmstepd is still single-threaded (before its
//! async runtime starts), and the child only makes async-signal-safe calls
//! between fork and exec: everything it needs (argv, environment, groups) is
//! allocated beforehand. The child becomes a session and process-group
//! leader, so signalling `-pid` reaches the script and everything it
//! started that did not leave the group.
//!
//! The child cannot log, so it reports through a close-on-exec pipe in
//! 8-byte records (kind, errno): a failed step before exec ends the launch,
//! a refused scheduling priority (PropagatePrioProcess) is only noted, and
//! the parent logs it.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::env::TASK_PID_VAR;
use super::plan::{Identity, LaunchPlan, StderrTarget};

/// A step of the launch that failed, with the file or call involved.
#[derive(Debug, Error)]
pub enum ExecError {
    #[error("cannot write batch script {}: {source}", path.display())]
    Script {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open {what} file {}: {source}", path.display())]
    Stdio {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot switch to uid {uid} gid {gid}: {source}")]
    Identity {
        uid: u32,
        gid: u32,
        source: std::io::Error,
    },
    #[error("cannot fork for job {job_id}: {source}")]
    Fork { job_id: u32, source: std::io::Error },
    #[error("cannot execute {}: {source}", path.display())]
    Exec {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} contains a NUL byte")]
    Nul { what: &'static str },
}

/// The three standard streams of the script, opened.
#[derive(Debug)]
pub struct Stdio {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    /// `None`: standard error shares standard output.
    pub stderr: Option<OwnedFd>,
}

/// The process-level operations of a launch.
pub trait Syscalls {
    /// Writes the script: mode 0700, owned by the job's user.
    fn write_script(&mut self, plan: &LaunchPlan) -> Result<(), ExecError>;
    /// Opens (creating as needed) the streams with the job user's rights.
    fn open_stdio(&mut self, plan: &LaunchPlan) -> Result<Stdio, ExecError>;
    /// Starts the script in a new session; returns its pid, which is also
    /// its process group id.
    fn spawn(&mut self, plan: &LaunchPlan, stdio: &Stdio) -> Result<i32, ExecError>;
    /// Sends `signal` to process group `pgid`; a group that is gone is fine.
    fn kill_group(&mut self, pgid: i32, signal: i32) -> Result<(), std::io::Error>;
}

/// Writes the script, opens the streams and starts the script, in that
/// order. Returns the script's pid and the streams (the caller keeps them to
/// add its own lines to the job's error file).
pub fn launch(plan: &LaunchPlan, sys: &mut dyn Syscalls) -> Result<(i32, Stdio), ExecError> {
    launch_on(plan, sys, None)
}

/// [`launch`] on node `node`: a script that cannot be executed leaves
/// Slurm's `slurmstepd-NODE: error: execve(): ...` line in the job's
/// error file.
pub fn launch_on(
    plan: &LaunchPlan,
    sys: &mut dyn Syscalls,
    node: Option<&str>,
) -> Result<(i32, Stdio), ExecError> {
    sys.write_script(plan)?;
    let stdio = sys.open_stdio(plan)?;
    match sys.spawn(plan, &stdio) {
        Ok(pid) => Ok((pid, stdio)),
        Err(e) => {
            if let (ExecError::Exec { source, .. }, Some(node)) = (&e, node) {
                let fd = stdio.stderr.as_ref().unwrap_or(&stdio.stdout);
                if let Ok(copy) = fd.try_clone() {
                    let line = exec_failure_line(plan, node, source);
                    let _ = File::from(copy).write_all(line.as_bytes());
                }
            }
            Err(e)
        }
    }
}

/// What Slurm writes when the script cannot be executed: the interpreter
/// named for a missing one, else the script's path, and the system's text
/// for the error.
pub fn exec_failure_line(plan: &LaunchPlan, node: &str, source: &std::io::Error) -> String {
    let text = slurm_common::os_error_text(source);
    let interpreter = plan
        .script
        .strip_prefix("#!")
        .and_then(|rest| rest.lines().next())
        .and_then(|line| line.split_whitespace().next());
    match interpreter {
        Some(i) if source.raw_os_error() == Some(libc::ENOENT) => {
            format!("slurmstepd-{node}: error: execve(): bad interpreter({i}): {text}\n")
        }
        _ => format!(
            "slurmstepd-{node}: error: execve(): {}: {text}\n",
            plan.script_path.display()
        ),
    }
}

/// Signals sent to end a job: SIGTERM, then SIGCONT, so that processes
/// stopped (a suspended job, `scontrol suspend`) wake up to the SIGTERM
/// waiting for them, as in Slurm, before running any more of their own
/// code; SIGKILL follows after KillWait.
pub const TERMINATE_SIGNALS: [i32; 2] = [libc::SIGTERM, libc::SIGCONT];

/// One recorded call of [`RecordingSyscalls`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    WriteScript(PathBuf),
    OpenStdio {
        stdout: PathBuf,
        stderr: Option<PathBuf>,
    },
    Spawn(Vec<String>),
    KillGroup(i32, i32),
}

/// Records calls; fails the named call when asked to.
#[derive(Debug, Default)]
pub struct RecordingSyscalls {
    pub calls: Vec<Call>,
    pub fail_open: bool,
    pub pid: i32,
}

impl Syscalls for RecordingSyscalls {
    fn write_script(&mut self, plan: &LaunchPlan) -> Result<(), ExecError> {
        self.calls.push(Call::WriteScript(plan.script_path.clone()));
        Ok(())
    }

    fn open_stdio(&mut self, plan: &LaunchPlan) -> Result<Stdio, ExecError> {
        self.calls.push(Call::OpenStdio {
            stdout: plan.stdout.path.clone(),
            stderr: match &plan.stderr {
                StderrTarget::Stdout => None,
                StderrTarget::File(f) => Some(f.path.clone()),
            },
        });
        if self.fail_open {
            return Err(ExecError::Stdio {
                what: "output",
                path: plan.stdout.path.clone(),
                source: std::io::Error::from_raw_os_error(libc::EACCES),
            });
        }
        let null = |what| {
            File::open("/dev/null")
                .map(OwnedFd::from)
                .map_err(|source| ExecError::Stdio {
                    what,
                    path: "/dev/null".into(),
                    source,
                })
        };
        Ok(Stdio {
            stdin: null("input")?,
            stdout: null("output")?,
            stderr: None,
        })
    }

    fn spawn(&mut self, plan: &LaunchPlan, _stdio: &Stdio) -> Result<i32, ExecError> {
        self.calls.push(Call::Spawn(plan.argv.clone()));
        Ok(self.pid)
    }

    fn kill_group(&mut self, pgid: i32, signal: i32) -> Result<(), std::io::Error> {
        self.calls.push(Call::KillGroup(pgid, signal));
        Ok(())
    }
}

/// The kernel.
#[derive(Debug, Default)]
pub struct RealSyscalls;

fn cstring(s: &str, what: &'static str) -> Result<CString, ExecError> {
    CString::new(s).map_err(|_| ExecError::Nul { what })
}

fn path_cstring(p: &Path, what: &'static str) -> Result<CString, ExecError> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).map_err(|_| ExecError::Nul { what })
}

fn last_os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Runs `f` with the effective uid/gid/groups of the job's user, when the
/// plan switches identity. Only sound while the process is single-threaded
/// (glibc applies set*id to every thread, but the saved ids must be ours).
fn as_user<T>(plan: &LaunchPlan, f: impl FnOnce() -> Result<T, ExecError>) -> Result<T, ExecError> {
    if plan.identity == Identity::Keep {
        return f();
    }
    let ident_err = |source| ExecError::Identity {
        uid: plan.uid,
        gid: plan.gid,
        source,
    };
    let groups: Vec<libc::gid_t> = plan.extra_gids.clone();
    // SAFETY: plain syscalls on valid arguments; `groups` outlives the call.
    unsafe {
        if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
            return Err(ident_err(last_os_error()));
        }
        if libc::setegid(plan.gid) != 0 {
            return Err(ident_err(last_os_error()));
        }
        if libc::seteuid(plan.uid) != 0 {
            let e = last_os_error();
            libc::setegid(0);
            return Err(ident_err(e));
        }
    }
    let result = f();
    // SAFETY: returning to root, which the saved set-user-id still is.
    unsafe {
        libc::seteuid(0);
        libc::setegid(0);
        let root_groups: [libc::gid_t; 1] = [0];
        libc::setgroups(1, root_groups.as_ptr());
    }
    result
}

/// Sets the process's umask and puts the old one back when dropped.
struct UmaskGuard(libc::mode_t);

impl UmaskGuard {
    fn set(mask: u32) -> Self {
        // SAFETY: umask cannot fail.
        UmaskGuard(unsafe { libc::umask(mask) })
    }
}

impl Drop for UmaskGuard {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::umask(self.0) };
    }
}

impl Syscalls for RealSyscalls {
    fn write_script(&mut self, plan: &LaunchPlan) -> Result<(), ExecError> {
        let err = |source| ExecError::Script {
            path: plan.script_path.clone(),
            source,
        };
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o700)
            .open(&plan.script_path)
            .map_err(err)?;
        f.write_all(plan.script.as_bytes()).map_err(err)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(err)?;
        if plan.identity == Identity::SwitchTo {
            std::os::unix::fs::fchown(&f, Some(plan.uid), Some(plan.gid)).map_err(err)?;
        }
        Ok(())
    }

    fn open_stdio(&mut self, plan: &LaunchPlan) -> Result<Stdio, ExecError> {
        // slurmstepd is single-threaded here, so the process-wide mask
        // can be lent to the job for the opens and put back.
        let _mask = plan.umask.map(UmaskGuard::set);
        as_user(plan, || {
            let stdin = File::open(&plan.stdin).map_err(|source| ExecError::Stdio {
                what: "input",
                path: plan.stdin.clone(),
                source,
            })?;
            let open_out = |what, f: &super::plan::OutputFile| {
                let mut o = OpenOptions::new();
                // With the submitter's mask the files are made as the
                // submitting shell would make them.
                o.write(true)
                    .create(true)
                    .mode(if plan.umask.is_some() { 0o666 } else { 0o644 });
                if f.append {
                    o.append(true);
                } else {
                    o.truncate(true);
                }
                o.open(&f.path).map_err(|source| ExecError::Stdio {
                    what,
                    path: f.path.clone(),
                    source,
                })
            };
            let stdout = open_out("output", &plan.stdout)?;
            let stderr = match &plan.stderr {
                StderrTarget::Stdout => None,
                StderrTarget::File(f) => Some(OwnedFd::from(open_out("error", f)?)),
            };
            Ok(Stdio {
                stdin: stdin.into(),
                stdout: stdout.into(),
                stderr,
            })
        })
    }

    fn spawn(&mut self, plan: &LaunchPlan, stdio: &Stdio) -> Result<i32, ExecError> {
        // Everything the child needs is allocated here, before fork.
        let path = path_cstring(&plan.script_path, "the script path")?;
        let argv: Vec<CString> = plan
            .argv
            .iter()
            .map(|a| cstring(a, "an argument"))
            .collect::<Result<_, _>>()?;
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());

        let mut env: Vec<Vec<u8>> = Vec::with_capacity(plan.env.vars().len());
        let mut pid_slot: Option<(usize, usize)> = None;
        for (k, v) in plan.env.vars() {
            if k == TASK_PID_VAR {
                // Room for any pid, filled in by the child.
                let mut buf = format!("{k}=").into_bytes();
                let start = buf.len();
                buf.extend_from_slice(&[0u8; 12]);
                pid_slot = Some((env.len(), start));
                env.push(buf);
                continue;
            }
            let entry = format!("{k}={v}");
            if entry.contains('\0') {
                return Err(ExecError::Nul {
                    what: "an environment variable",
                });
            }
            let mut b = entry.into_bytes();
            b.push(0);
            env.push(b);
        }
        let mut env_ptrs: Vec<*const libc::c_char> =
            env.iter().map(|e| e.as_ptr().cast()).collect();
        env_ptrs.push(std::ptr::null());
        let pid_buf: *mut u8 = match pid_slot {
            Some((i, start)) => env[i][start..].as_mut_ptr(),
            None => std::ptr::null_mut(),
        };

        let work_dir = path_cstring(&plan.work_dir, "the working directory")?;
        let tmp = c"/tmp";
        let groups: Vec<libc::gid_t> = plan.extra_gids.clone();
        let rlimits: Vec<(slurm_common::rlimit::Resource, libc::rlim_t)> = plan
            .rlimits
            .iter()
            .map(|p| (slurm_common::rlimit::resource(p.limit), p.value))
            .collect();
        let switch = plan.identity == Identity::SwitchTo;
        let (uid, gid) = (plan.uid, plan.gid);
        let stdin_fd = stdio.stdin.as_raw_fd();
        let stdout_fd = stdio.stdout.as_raw_fd();
        let stderr_fd = stdio.stderr.as_ref().map_or(stdout_fd, |fd| fd.as_raw_fd());

        // Reports travel back through a close-on-exec pipe (see the module
        // docs); EOF without a FAILED record means the exec happened.
        let mut pipe_fds = [0 as libc::c_int; 2];
        // SAFETY: pipe_fds has room for two descriptors.
        if unsafe { libc::pipe2(pipe_fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(ExecError::Fork {
                job_id: plan.job_id,
                source: last_os_error(),
            });
        }
        // SAFETY: both descriptors were just created and are owned here.
        let (read_end, write_end) = unsafe {
            (
                File::from_raw_fd(pipe_fds[0]),
                OwnedFd::from_raw_fd(pipe_fds[1]),
            )
        };
        let err_fd = write_end.as_raw_fd();

        // SAFETY: the process is single-threaded here (slurmstepd forks
        // before starting its runtime), and the child below only calls
        // async-signal-safe functions on memory allocated before fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(ExecError::Fork {
                job_id: plan.job_id,
                source: last_os_error(),
            });
        }
        if pid == 0 {
            // SAFETY: child side; see above. Never returns.
            unsafe {
                child_exec(ChildArgs {
                    path: path.as_ptr(),
                    argv: argv_ptrs.as_ptr(),
                    envp: env_ptrs.as_ptr(),
                    pid_buf,
                    work_dir: work_dir.as_ptr(),
                    tmp: tmp.as_ptr(),
                    groups: &groups,
                    rlimits: &rlimits,
                    umask: plan.umask,
                    nice: plan.nice,
                    switch,
                    uid,
                    gid,
                    stdio: [stdin_fd, stdout_fd, stderr_fd],
                    err_fd,
                })
            }
        }
        drop(write_end);
        // The child writes at most one record of each kind.
        let mut buf = [0u8; 2 * REPORT_LEN];
        let mut read_end = read_end;
        let mut got = 0;
        while got < buf.len() {
            match read_end.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let mut failed = None;
        for (kind, errno) in buf[..got].chunks_exact(REPORT_LEN).filter_map(parse_report) {
            match kind {
                REPORT_FAILED => failed = Some(errno),
                REPORT_NICE => tracing::debug!(
                    job_id = plan.job_id,
                    nice = plan.nice,
                    error = %std::io::Error::from_raw_os_error(errno),
                    "the job keeps slurmstepd's scheduling priority"
                ),
                _ => {}
            }
        }
        if let Some(errno) = failed {
            let mut status = 0;
            // SAFETY: reaping the child that failed to exec.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            let source = std::io::Error::from_raw_os_error(errno);
            return Err(if errno == libc::EPERM && switch {
                ExecError::Identity { uid, gid, source }
            } else {
                ExecError::Exec {
                    path: plan.script_path.clone(),
                    source,
                }
            });
        }
        Ok(pid)
    }

    fn kill_group(&mut self, pgid: i32, signal: i32) -> Result<(), std::io::Error> {
        if pgid <= 1 {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: kill has no memory-safety preconditions.
        if unsafe { libc::kill(-pgid, signal) } != 0 {
            let e = last_os_error();
            if e.raw_os_error() != Some(libc::ESRCH) {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Sends `signal` to process `pid` alone (the batch shell, without its
/// children); one already gone is not an error.
pub fn kill_process(pid: i32, signal: i32) -> Result<(), std::io::Error> {
    if pid <= 1 {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, signal) } != 0 {
        let e = last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(e);
        }
    }
    Ok(())
}

struct ChildArgs<'a> {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    pid_buf: *mut u8,
    work_dir: *const libc::c_char,
    tmp: *const libc::c_char,
    groups: &'a [libc::gid_t],
    rlimits: &'a [(slurm_common::rlimit::Resource, libc::rlim_t)],
    umask: Option<u32>,
    nice: Option<i32>,
    switch: bool,
    uid: u32,
    gid: u32,
    stdio: [libc::c_int; 3],
    err_fd: libc::c_int,
}

/// Length of one record on the report pipe: kind and errno.
const REPORT_LEN: usize = 8;
/// A step before exec failed; the child exits.
const REPORT_FAILED: i32 = 1;
/// setpriority was refused; the child goes on at the priority it has.
const REPORT_NICE: i32 = 2;

/// Kind and errno of one record.
fn parse_report(record: &[u8]) -> Option<(i32, i32)> {
    let kind = i32::from_ne_bytes(record.get(..4)?.try_into().ok()?);
    let errno = i32::from_ne_bytes(record.get(4..8)?.try_into().ok()?);
    Some((kind, errno))
}

/// Writes a record of `kind` with the current errno to `fd`.
///
/// # Safety
/// Async-signal-safe; `fd` may be any descriptor (a bad one just fails).
unsafe fn report(fd: libc::c_int, kind: i32) {
    // SAFETY: errno location and write are async-signal-safe; `record`
    // outlives the call.
    unsafe {
        let errno = *libc::__errno_location();
        let mut record = [0u8; REPORT_LEN];
        record[..4].copy_from_slice(&kind.to_ne_bytes());
        record[4..].copy_from_slice(&errno.to_ne_bytes());
        libc::write(fd, record.as_ptr().cast(), record.len());
    }
}

/// The child between fork and exec. Async-signal-safe calls only.
///
/// # Safety
/// Must only run in a freshly forked child; every pointer in `a` must be
/// valid (they point into the parent's memory, copied by fork).
unsafe fn child_exec(a: ChildArgs<'_>) -> ! {
    let fail = |err_fd: libc::c_int| -> ! {
        // SAFETY: report and _exit are async-signal-safe.
        unsafe {
            report(err_fd, REPORT_FAILED);
            libc::_exit(127)
        }
    };
    // SAFETY: each call is async-signal-safe and given valid arguments.
    unsafe {
        libc::setsid();
        for (target, fd) in a.stdio.iter().enumerate() {
            let target = target as libc::c_int;
            if *fd != target && libc::dup2(*fd, target) < 0 {
                fail(a.err_fd);
            }
        }
        // While still root: the submit host's soft limits, raising the
        // hard limit where it is lower (which only root can do); where
        // that fails, the soft limit goes as high as the hard one allows.
        for &(resource, value) in a.rlimits {
            let mut now = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(resource, &mut now) != 0 {
                continue;
            }
            let wanted = libc::rlimit {
                rlim_cur: value,
                rlim_max: now.rlim_max.max(value),
            };
            if libc::setrlimit(resource, &wanted) != 0 {
                let capped = libc::rlimit {
                    rlim_cur: value.min(now.rlim_max),
                    rlim_max: now.rlim_max,
                };
                libc::setrlimit(resource, &capped);
            }
        }
        if a.switch
            && (libc::setgroups(a.groups.len(), a.groups.as_ptr()) != 0
                || libc::setgid(a.gid) != 0
                || libc::setuid(a.uid) != 0)
        {
            fail(a.err_fd);
        }
        // As the job's user, so that the kernel refuses a better priority
        // than an unprivileged user may take; the job then keeps the one
        // it inherited.
        if let Some(nice) = a.nice {
            if libc::setpriority(libc::PRIO_PROCESS, 0, nice) != 0 {
                report(a.err_fd, REPORT_NICE);
            }
        }
        if let Some(mask) = a.umask {
            libc::umask(mask);
        }
        if libc::chdir(a.work_dir) != 0 && libc::chdir(a.tmp) != 0 {
            fail(a.err_fd);
        }
        // Rust ignores SIGPIPE and the runtime may block signals; the script
        // must start with default dispositions and an empty mask.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        if !a.pid_buf.is_null() {
            write_decimal(a.pid_buf, libc::getpid());
        }
        libc::execve(a.path, a.argv, a.envp);
        fail(a.err_fd)
    }
}

/// Writes `n` in decimal at `buf` (which has room for 11 digits and a NUL).
///
/// # Safety
/// `buf` must be valid for 12 bytes of writes.
unsafe fn write_decimal(buf: *mut u8, n: libc::pid_t) {
    let mut digits = [0u8; 11];
    let mut len = 0;
    let mut v = n.unsigned_abs();
    loop {
        digits[len] = b'0' + (v % 10) as u8;
        len += 1;
        v /= 10;
        if v == 0 || len == digits.len() {
            break;
        }
    }
    for i in 0..len {
        // SAFETY: i < len <= 11 < 12.
        unsafe { *buf.add(i) = digits[len - 1 - i] };
    }
    // SAFETY: len <= 11 < 12.
    unsafe { *buf.add(len) = 0 };
}

/// How a waited-for process ended, as Slurm's ExitCode=status:signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exit {
    pub status: u32,
    pub signal: u32,
    pub core_dumped: bool,
}

impl Exit {
    /// From a raw `waitpid` status.
    pub fn from_wait_status(status: i32) -> Self {
        if libc::WIFEXITED(status) {
            Exit {
                status: u32::try_from(libc::WEXITSTATUS(status)).unwrap_or(0),
                signal: 0,
                core_dumped: false,
            }
        } else if libc::WIFSIGNALED(status) {
            Exit {
                status: 0,
                signal: u32::try_from(libc::WTERMSIG(status)).unwrap_or(0),
                core_dumped: libc::WCOREDUMP(status),
            }
        } else {
            Exit::default()
        }
    }
}

/// CPU time and peak memory of a waited-for process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub user_cpu_usec: u64,
    pub system_cpu_usec: u64,
    pub max_rss_kib: u64,
}

fn timeval_usec(t: libc::timeval) -> u64 {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let usec = u64::try_from(t.tv_usec).unwrap_or(0);
    secs.saturating_mul(1_000_000).saturating_add(usec)
}

/// Blocks until process `pid` ends; its exit.
pub fn wait_for(pid: i32) -> Result<Exit, std::io::Error> {
    wait_with_usage(pid).map(|(exit, _)| exit)
}

/// Blocks until process `pid` ends; its exit and resource usage.
pub fn wait_with_usage(pid: i32) -> Result<(Exit, Usage), std::io::Error> {
    let mut status = 0;
    loop {
        // SAFETY: rusage is plain old data filled by wait4.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: status and ru are valid out pointers.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if rc == pid {
            let usage = Usage {
                user_cpu_usec: timeval_usec(ru.ru_utime),
                system_cpu_usec: timeval_usec(ru.ru_stime),
                max_rss_kib: u64::try_from(ru.ru_maxrss).unwrap_or(0),
            };
            return Ok((Exit::from_wait_status(status), usage));
        }
        let e = last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stepd::env::Env;
    use crate::stepd::plan::OutputFile;

    /// A script whose interpreter is missing: the launch fails, and the
    /// job's output file (standard error shares it) holds Slurm's line.
    #[test]
    fn a_failed_exec_leaves_its_line_in_the_error_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        p.script = "#!/nonexistent/sh\necho hi\n".into();
        let err = launch_on(&p, &mut RealSyscalls, Some("n1")).unwrap_err();
        assert!(matches!(err, ExecError::Exec { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
            "slurmstepd-n1: error: execve(): bad interpreter(/nonexistent/sh): \
             No such file or directory\n"
        );
    }

    /// Slurm's line for a script that cannot be executed: the missing
    /// interpreter by name, else the script's path; the system's text.
    #[test]
    fn exec_failure_lines_as_slurm_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        p.script = "#!/nonexistent/sh -e\necho hi\n".into();
        let enoent = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            exec_failure_line(&p, "n1", &enoent),
            "slurmstepd-n1: error: execve(): bad interpreter(/nonexistent/sh): \
             No such file or directory\n"
        );
        let eacces = std::io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            exec_failure_line(&p, "n1", &eacces),
            format!(
                "slurmstepd-n1: error: execve(): {}: Permission denied\n",
                p.script_path.display()
            )
        );
    }

    fn plan(dir: &Path) -> LaunchPlan {
        let mut env = Env::from_entries(["PATH=/usr/bin:/bin"]);
        env.set(TASK_PID_VAR, "");
        env.set("SLURM_JOB_ID", "7");
        LaunchPlan {
            job_id: 7,
            uid: 0,
            gid: 0,
            extra_gids: vec![],
            identity: Identity::Keep,
            work_dir: dir.to_path_buf(),
            script_path: dir.join("slurm_script"),
            script: "#!/bin/sh\necho \"out $1 $SLURM_JOB_ID $SLURM_TASK_PID $$ $(pwd)\"\necho err >&2\nexit 3\n".into(),
            argv: vec![dir.join("slurm_script").display().to_string(), "arg1".into()],
            env,
            stdin: "/dev/null".into(),
            stdout: OutputFile { path: dir.join("out.txt"), append: false },
            stderr: StderrTarget::Stdout,
            rlimits: vec![],
            umask: None,
            nice: None,
        }
    }

    #[test]
    fn launch_order_and_failure_stop() {
        let dir = tempfile::tempdir().unwrap();
        let p = plan(dir.path());
        let mut sys = RecordingSyscalls {
            pid: 42,
            ..Default::default()
        };
        assert_eq!(launch(&p, &mut sys).unwrap().0, 42);
        assert_eq!(
            sys.calls,
            vec![
                Call::WriteScript(p.script_path.clone()),
                Call::OpenStdio {
                    stdout: p.stdout.path.clone(),
                    stderr: None
                },
                Call::Spawn(p.argv.clone()),
            ]
        );
        let mut sys = RecordingSyscalls {
            fail_open: true,
            ..Default::default()
        };
        assert!(matches!(launch(&p, &mut sys), Err(ExecError::Stdio { .. })));
        assert!(!sys.calls.iter().any(|c| matches!(c, Call::Spawn(_))));
    }

    #[test]
    fn real_launch_runs_the_script_with_env_and_pid() {
        let dir = tempfile::tempdir().unwrap();
        let p = plan(dir.path());
        let mut sys = RealSyscalls;
        let (pid, _stdio) = launch(&p, &mut sys).unwrap();
        let exit = wait_for(pid).unwrap();
        assert_eq!(
            exit,
            Exit {
                status: 3,
                signal: 0,
                core_dumped: false
            }
        );
        let out = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
        let want = format!("out arg1 7 {pid} {pid} {}\nerr\n", dir.path().display());
        assert_eq!(out, want);
        let mode = std::fs::metadata(&p.script_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    /// The submitter's umask makes the output file and is the script's;
    /// slurmstepd's own is back afterwards.
    #[test]
    fn real_launch_uses_the_submitters_umask() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        p.script = "#!/bin/sh\numask\n".into();
        p.umask = Some(0o27);
        // SAFETY: umask cannot fail; read and put back.
        let before = unsafe {
            let m = libc::umask(0o22);
            libc::umask(m);
            m
        };
        let (pid, _stdio) = launch(&p, &mut RealSyscalls).unwrap();
        assert_eq!(wait_for(pid).unwrap().status, 0);
        let out = dir.path().join("out.txt");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "0027\n");
        let mode = std::fs::metadata(&out).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        // SAFETY: as above.
        let after = unsafe {
            let m = libc::umask(0o22);
            libc::umask(m);
            m
        };
        assert_eq!(after, before);
    }

    /// The submit host's limits reach the script: lowered ones always,
    /// and one above the hard limit is capped at it (or, for root, raises
    /// it).
    #[test]
    fn real_launch_sets_the_propagated_limits() {
        use slurm_common::conf::Rlimit;
        use slurm_common::rlimit::Propagated;
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        p.script = "#!/bin/sh\necho \"$(ulimit -c) $(ulimit -n) $(ulimit -Hn)\"\n".into();
        let mut hard = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut hard) },
            0
        );
        let above = hard.rlim_max + 100;
        p.rlimits = vec![
            Propagated {
                limit: Rlimit::Core,
                value: 0,
                asked: false,
            },
            Propagated {
                limit: Rlimit::Nofile,
                value: above,
                asked: true,
            },
        ];
        let (pid, _stdio) = launch(&p, &mut RealSyscalls).unwrap();
        assert_eq!(wait_for(pid).unwrap().status, 0);
        let out = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
        // Raising a hard limit takes CAP_SYS_RESOURCE (bit 24), which root
        // lacks in some containers, and stays under the kernel's own
        // ceiling (fs.nr_open).
        let root = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|t| {
                let hex = t
                    .lines()
                    .find_map(|l| l.strip_prefix("CapEff:"))?
                    .trim()
                    .to_owned();
                u64::from_str_radix(&hex, 16).ok()
            })
            .is_some_and(|caps| caps & (1 << 24) != 0);
        let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        let want = if root && above <= nr_open {
            format!("0 {above} {above}\n")
        } else {
            format!("0 {0} {0}\n", hard.rlim_max)
        };
        assert_eq!(out, want);
    }

    #[test]
    fn real_launch_reports_exec_failure_and_separate_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        p.script = "no shebang line\n".into();
        let err = launch(&p, &mut RealSyscalls).unwrap_err();
        assert!(matches!(err, ExecError::Exec { .. }), "{err}");

        let mut p = plan(dir.path());
        p.stderr = StderrTarget::File(OutputFile {
            path: dir.path().join("err.txt"),
            append: true,
        });
        std::fs::write(dir.path().join("err.txt"), "old\n").unwrap();
        let (pid, _stdio) = launch(&p, &mut RealSyscalls).unwrap();
        wait_for(pid).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("err.txt")).unwrap(),
            "old\nerr\n"
        );
    }

    #[test]
    fn kill_group_terminates_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        p.script = "#!/bin/sh\nsleep 600 &\nwait\n".into();
        let mut sys = RealSyscalls;
        let (pid, _stdio) = launch(&p, &mut sys).unwrap();
        for sig in TERMINATE_SIGNALS {
            sys.kill_group(pid, sig).unwrap();
        }
        let exit = wait_for(pid).unwrap();
        assert_eq!(exit.signal, libc::SIGTERM as u32);
        // The group is gone or going; a second signal is not an error.
        sys.kill_group(pid, libc::SIGKILL).unwrap();
        assert!(sys.kill_group(0, libc::SIGKILL).is_err());
    }

    /// A suspended job (its group stopped) ends on the terminate signals
    /// alone, without waiting for KillWait's SIGKILL.
    #[test]
    fn a_stopped_group_ends_on_the_terminate_signals() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        p.script = "#!/bin/sh\nsleep 600 &\nwait\n".into();
        let mut sys = RealSyscalls;
        let (pid, _stdio) = launch(&p, &mut sys).unwrap();
        sys.kill_group(pid, libc::SIGSTOP).unwrap();
        let mut status = 0;
        // SAFETY: waitpid on our own child, with a valid status pointer;
        // it returns once the SIGSTOP (which cannot be caught) took hold.
        let stopped = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        assert_eq!(stopped, pid);
        assert!(libc::WIFSTOPPED(status), "{status:#x}");
        for sig in TERMINATE_SIGNALS {
            sys.kill_group(pid, sig).unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let ended = loop {
            // SAFETY: as above; WNOHANG returns at once.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        if !ended {
            let _ = sys.kill_group(pid, libc::SIGKILL);
        }
        assert!(ended, "the stopped job did not end");
        assert!(libc::WIFSIGNALED(status), "{status:#x}");
        assert_eq!(libc::WTERMSIG(status), libc::SIGTERM);
    }

    /// Field 19 of `/proc/<pid>/stat`: the nice value (the fields after
    /// the command name, which may hold blanks, are counted from its `)`).
    fn nice_of_stat(stat: &str) -> i32 {
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        after.split_whitespace().nth(16).unwrap().parse().unwrap()
    }

    /// A script line printing its own nice value from /proc.
    const PRINT_NICE: &str = "#!/bin/sh\ncat /proc/$$/stat\n";

    /// A priority the kernel refuses (better than an unprivileged job may
    /// take) leaves the job at the one it inherited, and the job runs.
    #[test]
    fn real_launch_keeps_the_inherited_priority_when_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(dir.path());
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // Root runs the job as an unprivileged user, who needs to
            // write in the directory.
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
            p.identity = Identity::SwitchTo;
            p.uid = 65534;
            p.gid = 65534;
        }
        let own = crate::stepd::prio::own_nice().unwrap();
        assert!(own > -20, "the test needs room below nice {own}");
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut limit) }, 0);
        // RLIMIT_NICE lets an unprivileged process go down to 20 - limit.
        let floor = 20 - i32::try_from(limit.rlim_cur.min(40)).unwrap();
        let wanted = (own - 1).min(floor - 1);
        assert!(wanted >= -20 && wanted < own, "own {own}, floor {floor}");
        p.nice = Some(wanted);
        p.script = PRINT_NICE.into();
        let (pid, _stdio) = launch(&p, &mut RealSyscalls).unwrap();
        assert_eq!(wait_for(pid).unwrap().status, 0);
        let out = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
        assert_eq!(nice_of_stat(&out), own, "{out}");
    }

    #[test]
    fn stat_field_19_is_the_nice_value() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 7 1 0";
        assert_eq!(nice_of_stat(stat), 7);
        let mut record = 1i32.to_ne_bytes().to_vec();
        record.extend_from_slice(&13i32.to_ne_bytes());
        assert_eq!(parse_report(&record), Some((1, 13)));
        assert_eq!(parse_report(&[1, 0, 0]), None);
    }

    #[test]
    fn decimal_writer() {
        let mut buf = [0xffu8; 12];
        // SAFETY: 12-byte buffer.
        unsafe { write_decimal(buf.as_mut_ptr(), 1234567) };
        assert_eq!(&buf[..8], b"1234567\0");
    }
}
