//! Child processes that never outlive the test that started them, and the
//! sweep that ends what they started on their own (slurmstepd and job
//! scripts detach into sessions of their own, so killing slurmd does not
//! reach them).

use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::wait::wait_until;

/// Kills (SIGKILL) and reaps its child when dropped, so a failing test leaves
/// no daemon behind.
#[derive(Debug)]
pub struct ChildGuard {
    name: String,
    child: Option<Child>,
}

impl ChildGuard {
    pub fn spawn(name: &str, cmd: &mut Command) -> Result<Self> {
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name} ({cmd:?})"))?;
        Ok(Self {
            name: name.to_string(),
            child: Some(child),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process has exited, without blocking.
    pub fn try_status(&mut self) -> Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c
                .try_wait()
                .with_context(|| format!("cannot poll {}", self.name)),
            None => Ok(None),
        }
    }

    /// Asks the process to stop (SIGTERM), waits up to `grace` for it, and
    /// kills it if it is still there. Returns its exit status.
    pub fn terminate(&mut self, grace: Duration) -> Result<Option<ExitStatus>> {
        let Some(pid) = self.pid() else {
            return Ok(None);
        };
        if self.try_status()?.is_none() {
            send_signal(pid, libc::SIGTERM);
            let name = self.name.clone();
            let exited = wait_until(&format!("{name} to exit"), grace, || {
                self.try_status().ok().flatten()
            });
            if exited.is_ok() {
                return self.kill();
            }
        }
        self.kill()
    }

    /// Sends SIGKILL and reaps the process: a crash, as far as it can tell.
    pub fn kill(&mut self) -> Result<Option<ExitStatus>> {
        let Some(mut child) = self.child.take() else {
            return Ok(None);
        };
        // An already exited child makes kill fail with InvalidInput; wait still reaps it.
        let _ = child.kill();
        let status = child
            .wait()
            .with_context(|| format!("cannot reap {}", self.name))?;
        Ok(Some(status))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Sends `signal` to `pid`; false when the process does not exist (or is
/// not ours).
pub fn send_signal(pid: u32, signal: i32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill has no memory preconditions; a positive pid names one process.
    unsafe { libc::kill(pid, signal) == 0 }
}

/// Pids of the processes (other than this one) whose environment holds
/// exactly `entry` (`NAME=value`). Processes of other users, whose environ
/// cannot be read, are skipped.
pub fn pids_with_env(entry: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let wanted = entry.as_bytes();
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|v| v == wanted))
                .unwrap_or(false)
        })
        .collect()
}

/// SIGKILLs every process whose environment holds `entry`: the daemons,
/// slurmstepd and job scripts of one cluster all carry its `SLURM_CONF`.
/// Returns how many were signalled.
pub fn kill_processes_with_env(entry: &str) -> usize {
    pids_with_env(entry)
        .into_iter()
        .filter(|&pid| send_signal(pid, libc::SIGKILL))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wait::wait_until;
    use std::time::Duration;

    #[test]
    fn a_dropped_guard_kills_its_child() {
        let guard = ChildGuard::spawn("sleep", Command::new("sleep").arg("600")).expect("spawn");
        let pid = guard.pid().expect("pid");
        drop(guard);
        // The child was reaped, so /proc/<pid> is gone (or reused by an unrelated
        // process, which cannot be a zombie `sleep` of ours).
        let gone = wait_until("child gone", Duration::from_secs(5), || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            (!stat.contains("(sleep)")).then_some(())
        });
        assert!(gone.is_ok(), "{gone:?}");
    }

    #[test]
    fn kill_reports_the_signal() {
        use std::os::unix::process::ExitStatusExt;
        let mut guard =
            ChildGuard::spawn("sleep", Command::new("sleep").arg("600")).expect("spawn");
        let status = guard.kill().expect("kill").expect("status");
        assert_eq!(status.signal(), Some(9));
        assert!(guard.kill().expect("second kill").is_none());
    }

    #[test]
    fn terminate_stops_a_process_that_honours_sigterm() {
        use std::os::unix::process::ExitStatusExt;
        let mut guard =
            ChildGuard::spawn("sleep", Command::new("sleep").arg("600")).expect("spawn");
        let status = guard
            .terminate(Duration::from_secs(10))
            .expect("terminate")
            .expect("status");
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn processes_are_found_and_killed_by_environment() {
        let entry = format!("SLURM_TESTKIT_MARK=sweep-{}", std::process::id());
        let (k, v) = entry.split_once('=').expect("entry");
        let mut marked =
            ChildGuard::spawn("sleep", Command::new("sleep").arg("600").env(k, v)).expect("spawn");
        let mut other =
            ChildGuard::spawn("sleep", Command::new("sleep").arg("600")).expect("spawn");
        let pid = marked.pid().expect("pid");
        // The environ file is readable as soon as exec completed.
        let found = wait_until("marked child visible", Duration::from_secs(5), || {
            pids_with_env(&entry).contains(&pid).then_some(())
        });
        assert!(found.is_ok());
        assert!(!pids_with_env(&entry).contains(&other.pid().expect("pid")));
        assert_eq!(kill_processes_with_env(&entry), 1);
        let gone = wait_until("marked child killed", Duration::from_secs(5), || {
            marked.try_status().ok().flatten()
        });
        assert!(gone.is_ok());
        assert!(other.try_status().expect("poll").is_none());
    }
}
