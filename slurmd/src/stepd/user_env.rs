//! The job user's login environment, for jobs that ask for it.
//!
//! sbatch puts `SLURM_GET_USER_ENV=1` in the job's environment for
//! `--get-user-env` and for every `--export` other than plain `ALL` (so
//! `--export=NONE` jobs too). Slurm 22.05's slurmd then runs
//! `su - USER -c CMD` as root, where CMD prints a start mark followed by the
//! environment, reads the variables after the mark, and puts the job's own
//! variables on top. Only a real login gives what users expect there: PAM
//! (pam_env, pam_mail), /etc/profile and the user's dotfiles all add to it.
//! The login may take at most GetEnvTimeout (slurm.conf, default 2 seconds).
//!
//! ```text
//! passwd entry --(root)-----> su - USER -c CMD ----\
//!              \-(the user)-> -SHELL -c CMD  ------+--> marks + env -0 --> Env
//!                                                   \-- fails / too slow --> passwd_env
//! ```
//!
//! Decisions of our own, where Slurm is silent or less helpful:
//! - CMD prints the variables with `env -0`, so a value holding a newline
//!   comes through whole.
//! - A slurmstepd that does not run as root (an unprivileged test cluster,
//!   where the job user is slurmstepd's own) cannot use su without a
//!   password; it starts the user's shell itself as a login shell (argv[0]
//!   `-sh`), with the variables login(1) would set.
//! - When the login fails or takes too long, Slurm runs the job with only
//!   the submitted variables, which leaves a `--export=NONE` job without
//!   PATH. We start from the environment login(1) builds from the passwd
//!   entry instead (HOME, LOGNAME, MAIL, PATH, SHELL, USER), and log why.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use slurm_common::conf::{ConfError, SlurmConf};
use thiserror::Error;

use super::env::Env;
use crate::users::Passwd;

/// The variable that asks for the user's environment, and its one value
/// that does.
pub const REQUEST_VAR: &str = "SLURM_GET_USER_ENV";
const REQUEST_ENTRY: &str = "SLURM_GET_USER_ENV=1";

/// slurm.conf key bounding the login, in seconds.
const TIMEOUT_KEY: &str = "GetEnvTimeout";
const TIMEOUT_EXPECTED: &str = "a number of seconds";
/// GetEnvTimeout's default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Marks around the environment in the login's output; profiles may print
/// anything before them.
const START_MARK: &str = "XXXXSLURMSTARTPARSINGHEREXXXX";
const STOP_MARK: &str = "XXXXSLURMSTOPPARSINGHEREXXXXX";

/// More output than any environment needs: the login is cut off there.
const MAX_OUTPUT: usize = 16 << 20;

const SU: &str = "/bin/su";
const ENV_PROGRAM: &str = "/usr/bin/env";
const LOGIN_DEFS: &str = "/etc/login.defs";
const MAIL_DIR: &str = "/var/mail";
const DEFAULT_SHELL: &str = "/bin/sh";
/// login(1)'s PATH when login.defs sets none.
const DEFAULT_ROOT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const DEFAULT_USER_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Why the login environment could not be read.
#[derive(Debug, Error)]
pub enum UserEnvError {
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot read the output of {program}: {source}")]
    Read {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} wrote more than {limit} bytes")]
    TooLarge { program: String, limit: usize },
    #[error("{program} did not print the environment within {}s", timeout.as_secs_f64())]
    TimedOut { program: String, timeout: Duration },
    #[error("the output of the login shell has no environment between the marks")]
    NoEnvironment,
}

/// Whether the job's `NAME=value` entries ask for the user's environment.
pub fn requested<S: AsRef<str>>(environment: &[S]) -> bool {
    environment.iter().any(|e| e.as_ref() == REQUEST_ENTRY)
}

/// GetEnvTimeout from `conf` (the last one written; the default when
/// absent). slurm.conf keeps the key untyped, so it is checked here.
pub fn timeout_from_conf(conf: &SlurmConf) -> Result<Duration, ConfError> {
    let Some(entry) = conf.raw_entry(TIMEOUT_KEY) else {
        return Ok(DEFAULT_TIMEOUT);
    };
    entry
        .value
        .trim()
        .parse::<u32>()
        .map(|s| Duration::from_secs(u64::from(s)))
        .map_err(|_| ConfError::InvalidValue {
            loc: entry.loc.clone(),
            key: TIMEOUT_KEY.to_string(),
            value: entry.value.clone(),
            expected: TIMEOUT_EXPECTED,
        })
}

/// The shell command that prints the environment between the marks. The
/// first `echo` puts the start mark on a line of its own whatever a
/// profile printed before.
pub fn capture_command() -> String {
    format!("echo; echo {START_MARK}; {ENV_PROGRAM} -0; echo; echo {STOP_MARK}")
}

/// The variables between the marks of a login's output.
pub fn parse_capture(out: &[u8]) -> Result<Env, UserEnvError> {
    let start_mark = format!("\n{START_MARK}\n");
    let start = find(out, start_mark.as_bytes()).ok_or(UserEnvError::NoEnvironment)?;
    let body = &out[start + start_mark.len()..];
    let stop_mark = format!("\n{STOP_MARK}\n");
    // `env -0` ends every entry with a NUL, so the stop mark follows one,
    // unless the environment is empty.
    let end = if body.starts_with(stop_mark.as_bytes()) {
        0
    } else {
        let terminated = [b"\0".as_slice(), stop_mark.as_bytes()].concat();
        find(body, &terminated).ok_or(UserEnvError::NoEnvironment)? + 1
    };
    let entries = body[..end]
        .split(|b| *b == 0)
        .filter_map(|e| std::str::from_utf8(e).ok());
    Ok(Env::from_entries(entries))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// PATH for a login of root (`ENV_SUPATH`) or of another user
/// (`ENV_PATH`) from login.defs text; `None` when it sets none.
pub fn login_defs_path(text: &str, root: bool) -> Option<String> {
    let key = if root { "ENV_SUPATH" } else { "ENV_PATH" };
    text.lines()
        .rev()
        .find_map(|l| {
            let l = l.trim();
            let (k, v) = l.split_once(char::is_whitespace)?;
            (k == key).then(|| v.trim().trim_matches('"'))
        })
        .map(|v| v.strip_prefix("PATH=").unwrap_or(v).to_string())
        .filter(|v| !v.is_empty())
}

fn shell_of(pw: &Passwd) -> &str {
    if pw.shell.is_empty() {
        DEFAULT_SHELL
    } else {
        &pw.shell
    }
}

/// The environment login(1) gives `pw` before any profile runs, with PATH
/// from login.defs (`login_defs`, its text) or login's defaults.
pub fn passwd_env(pw: &Passwd, login_defs: Option<&str>) -> Env {
    let root = pw.uid == 0;
    let path = login_defs
        .and_then(|t| login_defs_path(t, root))
        .unwrap_or_else(|| {
            if root {
                DEFAULT_ROOT_PATH
            } else {
                DEFAULT_USER_PATH
            }
            .to_string()
        });
    let mut env = Env::default();
    env.set("HOME", &pw.dir);
    env.set("LOGNAME", &pw.name);
    env.set("MAIL", format!("{MAIL_DIR}/{}", pw.name));
    env.set("PATH", path);
    env.set("SHELL", shell_of(pw));
    env.set("USER", &pw.name);
    env
}

/// How to log the user in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginMethod {
    /// `su - USER`, as Slurm does; needs root.
    Su,
    /// Start the user's shell as a login shell; only for the user
    /// slurmstepd already runs as.
    OwnShell,
}

impl LoginMethod {
    /// The method open to a slurmstepd running as `own_uid`.
    pub fn for_uid(own_uid: u32) -> Self {
        if own_uid == 0 {
            LoginMethod::Su
        } else {
            LoginMethod::OwnShell
        }
    }
}

/// The login command for `pw`: a clean environment (su keeps nothing of
/// ours but TERM either), no input, output to a pipe, in a process group of
/// its own so that a slow login can be ended whole.
pub fn login_command(pw: &Passwd, method: LoginMethod, login_defs: Option<&str>) -> Command {
    let mut cmd = match method {
        LoginMethod::Su => {
            let mut c = Command::new(SU);
            c.args(["-", &pw.name, "-c", &capture_command()]);
            c.current_dir("/");
            c
        }
        LoginMethod::OwnShell => {
            let shell = shell_of(pw);
            let base = shell.rsplit('/').next().unwrap_or(shell);
            let mut c = Command::new(shell);
            c.arg0(format!("-{base}")).args(["-c", &capture_command()]);
            c.current_dir(if pw.dir.is_empty() { "/" } else { &pw.dir });
            c
        }
    };
    // env_clear drops what was set before it, so it comes first.
    cmd.env_clear();
    if method == LoginMethod::OwnShell {
        cmd.envs(passwd_env(pw, login_defs).vars().iter().cloned());
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    cmd
}

/// Runs `cmd` and returns its standard output once it closes, or what came
/// before `timeout` if the output is complete by then (a profile may leave
/// a daemon holding it open). The process group is killed at the deadline
/// and the child always reaped.
pub fn run_capture(cmd: &mut Command, timeout: Duration) -> Result<Vec<u8>, UserEnvError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let deadline = Instant::now() + timeout;
    let mut child = cmd.spawn().map_err(|source| UserEnvError::Spawn {
        program: program.clone(),
        source,
    })?;
    let mut out = Vec::new();
    let read = read_until_eof(&mut child, deadline, &mut out, &program);
    match read {
        Ok(true) => {
            let _ = child.wait();
        }
        Ok(false) | Err(_) => end(&mut child),
    }
    match read? {
        true => Ok(out),
        false if parse_capture(&out).is_ok() => Ok(out),
        false => Err(UserEnvError::TimedOut { program, timeout }),
    }
}

/// Kills the child's process group and reaps the child.
fn end(child: &mut Child) {
    if let Ok(pgid) = i32::try_from(child.id()) {
        // SAFETY: kill has no memory effects; the group is the child's own.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    let _ = child.wait();
}

/// Reads the child's output into `out` until it closes (`true`) or the
/// deadline passes (`false`).
fn read_until_eof(
    child: &mut Child,
    deadline: Instant,
    out: &mut Vec<u8>,
    program: &str,
) -> Result<bool, UserEnvError> {
    let read_err = |source| UserEnvError::Read {
        program: program.to_string(),
        source,
    };
    let Some(stdout) = child.stdout.as_mut() else {
        return Err(read_err(std::io::Error::other("no output pipe")));
    };
    let mut buf = [0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        let mut pfd = libc::pollfd {
            fd: stdout.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
        // SAFETY: pfd is one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(read_err(e));
        }
        if rc == 0 {
            continue;
        }
        // Readable or hung up: a read returns at once either way.
        let n = match stdout.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_err(e)),
        };
        if n == 0 {
            return Ok(true);
        }
        if out.len() + n > MAX_OUTPUT {
            return Err(UserEnvError::TooLarge {
                program: program.to_string(),
                limit: MAX_OUTPUT,
            });
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// The login environment of `pw` for a slurmstepd running as `own_uid`,
/// or, when the login fails, the one built from the passwd entry.
pub fn load(pw: &Passwd, own_uid: u32, timeout: Duration) -> Env {
    let defs = std::fs::read_to_string(LOGIN_DEFS).ok();
    let method = LoginMethod::for_uid(own_uid);
    let mut cmd = login_command(pw, method, defs.as_deref());
    match run_capture(&mut cmd, timeout).and_then(|out| parse_capture(&out)) {
        Ok(env) => {
            tracing::debug!(user = %pw.name, vars = env.vars().len(), "loaded the login environment");
            env
        }
        Err(e) => {
            tracing::warn!(
                user = %pw.name,
                error = %e,
                "cannot load the user's login environment; using the one login(1) builds from passwd"
            );
            passwd_env(pw, defs.as_deref())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn alice() -> Passwd {
        Passwd {
            name: "alice".into(),
            uid: 1000,
            gid: 1000,
            dir: "/home/alice".into(),
            shell: String::new(),
        }
    }

    fn capture(entries: &[&str]) -> Vec<u8> {
        let mut out = b"profile noise".to_vec();
        out.extend_from_slice(format!("\n{START_MARK}\n").as_bytes());
        for e in entries {
            out.extend_from_slice(e.as_bytes());
            out.push(0);
        }
        out.extend_from_slice(format!("\n{STOP_MARK}\nlogout noise\n").as_bytes());
        out
    }

    #[test]
    fn requested_only_by_the_exact_entry() {
        assert!(requested(&["A=1", "SLURM_GET_USER_ENV=1"]));
        assert!(!requested(&["SLURM_GET_USER_ENV=0"]));
        assert!(!requested(&["SLURM_GET_USER_ENV=1 "]));
        assert!(!requested::<&str>(&[]));
    }

    #[test]
    fn timeout_from_slurm_conf() {
        let conf = |extra: &str| {
            let text = format!("ClusterName=c\nSlurmctldHost=ctl\n{extra}");
            SlurmConf::parse(&text, "slurm.conf").unwrap().conf
        };
        assert_eq!(timeout_from_conf(&conf("")).unwrap(), DEFAULT_TIMEOUT);
        assert_eq!(
            timeout_from_conf(&conf("GetEnvTimeout=3\ngetenvtimeout=7\n")).unwrap(),
            Duration::from_secs(7)
        );
        let e = timeout_from_conf(&conf("GetEnvTimeout=soon\n")).unwrap_err();
        assert!(e.to_string().contains("soon"), "{e}");
    }

    #[test]
    fn parses_the_variables_between_the_marks() {
        let env =
            parse_capture(&capture(&["HOME=/root", "MULTI=a\nb", "PATH=/bin", "bad"])).unwrap();
        assert_eq!(env.get("HOME"), Some("/root"));
        assert_eq!(env.get("MULTI"), Some("a\nb"));
        assert_eq!(env.get("PATH"), Some("/bin"));
        assert_eq!(env.vars().len(), 3);
        assert_eq!(parse_capture(&capture(&[])).unwrap(), Env::default());
    }

    #[test]
    fn output_without_both_marks_is_refused() {
        assert!(parse_capture(b"").is_err());
        assert!(parse_capture(b"Password: su: Authentication failure\n").is_err());
        let mut cut = capture(&["HOME=/root"]);
        cut.truncate(cut.len() - 20);
        assert!(matches!(
            parse_capture(&cut),
            Err(UserEnvError::NoEnvironment)
        ));
    }

    #[test]
    fn path_from_login_defs() {
        let defs = "# comment\nMAIL_DIR /var/mail\nENV_SUPATH\tPATH=/sbin:/bin\n\
                    ENV_PATH  \"PATH=/usr/bin:/bin\"\n";
        assert_eq!(login_defs_path(defs, true).as_deref(), Some("/sbin:/bin"));
        assert_eq!(
            login_defs_path(defs, false).as_deref(),
            Some("/usr/bin:/bin")
        );
        assert_eq!(
            login_defs_path("ENV_PATH /opt/bin\n", false).as_deref(),
            Some("/opt/bin")
        );
        assert_eq!(login_defs_path("#ENV_PATH PATH=/x\n", false), None);
    }

    #[test]
    fn passwd_environment_is_what_login_sets() {
        let env = passwd_env(&alice(), None);
        let want = [
            ("HOME", "/home/alice"),
            ("LOGNAME", "alice"),
            ("MAIL", "/var/mail/alice"),
            ("PATH", DEFAULT_USER_PATH),
            ("SHELL", "/bin/sh"),
            ("USER", "alice"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(env.vars(), want.as_slice());
        let root = Passwd {
            name: "root".into(),
            uid: 0,
            gid: 0,
            dir: "/root".into(),
            shell: "/bin/bash".into(),
        };
        let env = passwd_env(&root, Some("ENV_SUPATH PATH=/only/root\n"));
        assert_eq!(env.get("PATH"), Some("/only/root"));
        assert_eq!(env.get("SHELL"), Some("/bin/bash"));
    }

    #[test]
    fn su_command_logs_the_user_in() {
        let cmd = login_command(&alice(), LoginMethod::Su, None);
        assert_eq!(cmd.get_program(), SU);
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
        assert_eq!(args, ["-", "alice", "-c", capture_command().as_str()]);
        assert_eq!(cmd.get_envs().count(), 0);
        assert_eq!(LoginMethod::for_uid(0), LoginMethod::Su);
        assert_eq!(LoginMethod::for_uid(1000), LoginMethod::OwnShell);
    }

    #[test]
    fn own_shell_login_sees_only_the_login_variables() {
        let me = crate::users::entry_of(crate::users::euid()).unwrap();
        let pw = Passwd {
            dir: std::env::temp_dir().display().to_string(),
            ..me
        };
        let mut cmd = login_command(&pw, LoginMethod::OwnShell, None);
        std::env::set_var("USER_ENV_TEST_LEAK", "1");
        let env = parse_capture(&run_capture(&mut cmd, Duration::from_secs(20)).unwrap()).unwrap();
        assert_eq!(env.get("HOME"), Some(pw.dir.as_str()));
        assert_eq!(env.get("USER"), Some(pw.name.as_str()));
        assert!(env.get("PATH").is_some_and(|p| !p.is_empty()));
        assert_eq!(env.get("USER_ENV_TEST_LEAK"), None);
    }

    /// As root (CI): `su -` gives root's login environment.
    #[test]
    fn su_login_of_root() {
        if crate::users::euid() != 0 {
            eprintln!("not root; skipped");
            return;
        }
        let root = crate::users::entry_of(0).unwrap();
        let mut cmd = login_command(&root, LoginMethod::Su, None);
        std::env::set_var("USER_ENV_TEST_LEAK_SU", "1");
        let env = parse_capture(&run_capture(&mut cmd, Duration::from_secs(20)).unwrap()).unwrap();
        assert_eq!(env.get("HOME"), Some(root.dir.as_str()));
        assert_eq!(env.get("LOGNAME"), Some("root"));
        assert!(env.get("PATH").is_some());
        assert_eq!(env.get("USER_ENV_TEST_LEAK_SU"), None);
    }

    #[test]
    fn slow_login_is_ended_at_the_timeout() {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "sleep 30 & wait"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0);
        let started = Instant::now();
        let e = run_capture(&mut cmd, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, UserEnvError::TimedOut { .. }), "{e}");
        // The whole group went: the background sleep no longer holds the
        // pipe, or the call would not have returned.
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn complete_output_is_kept_when_a_daemon_holds_the_pipe() {
        let script = format!("{}; sleep 30 &", capture_command());
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", &script])
            .env_clear()
            .env("K", "v")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0);
        let out = run_capture(&mut cmd, Duration::from_millis(500)).unwrap();
        assert_eq!(parse_capture(&out).unwrap().get("K"), Some("v"));
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let mut cmd = Command::new("/nonexistent/shell");
        cmd.stdout(Stdio::piped());
        let e = run_capture(&mut cmd, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, UserEnvError::Spawn { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/shell"), "{e}");
    }

    #[test]
    fn failed_login_falls_back_to_passwd() {
        let pw = Passwd {
            shell: "/nonexistent/shell".into(),
            dir: "/".into(),
            ..alice()
        };
        let env = load(&pw, 1000, Duration::from_secs(1));
        assert_eq!(
            env,
            passwd_env(&pw, std::fs::read_to_string(LOGIN_DEFS).ok().as_deref())
        );
    }
}
