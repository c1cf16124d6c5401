//! Child processes that never outlive the test that started them.

use std::process::{Child, Command, ExitStatus};

use anyhow::{Context, Result};

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
        let mut guard = ChildGuard::spawn("sleep", Command::new("sleep").arg("600")).expect("spawn");
        let status = guard.kill().expect("kill").expect("status");
        assert_eq!(status.signal(), Some(9));
        assert!(guard.kill().expect("second kill").is_none());
    }
}
