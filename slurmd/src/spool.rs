//! The spool directory: one sub-directory per job this node runs.
//!
//! ```text
//! SlurmdSpoolDir/            (%n expanded: one per slurmd)
//!   job00042/                mode 0711, owned by slurmd's user
//!     launch.pb              the LaunchBatchRequest (prost), mode 0600
//!     slurmstepd.pid         pid of the job's slurmstepd
//!     slurmstepd.sock        control socket of that slurmstepd
//!     slurm_script           the batch script, mode 0700, owned by the job user
//! ```
//!
//! The directory outlives slurmd: a restarted slurmd finds its running jobs
//! here (a live slurmstepd pid) and reports them at registration.
//! slurmstepd removes the directory once the controller has the job's
//! completion.

use std::path::{Path, PathBuf};

/// The LaunchBatchRequest, prost-encoded.
pub const SPEC_FILE: &str = "launch.pb";
/// Decimal pid of the job's slurmstepd.
pub const PID_FILE: &str = "slurmstepd.pid";
/// Unix socket slurmstepd listens on (see [`crate::control`]).
pub const SOCKET_FILE: &str = "slurmstepd.sock";

/// The directory of job `job_id`.
pub fn job_dir(spool: &Path, job_id: u32) -> PathBuf {
    spool.join(format!("job{job_id:05}"))
}

/// The job id a directory name stands for (`job00042` -> 42).
pub fn parse_job_dir_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("job")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Every job directory under `spool`, by job id.
pub fn list_jobs(spool: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let id = parse_job_dir_name(e.file_name().to_str()?)?;
            Some((id, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// The pid recorded in `dir`, if any.
pub fn read_pid(dir: &Path) -> Option<i32> {
    std::fs::read_to_string(dir.join(PID_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|p: &i32| *p > 1)
}

/// Whether `pid` is a live slurmstepd (not just a recycled pid).
pub fn stepd_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let exists = unsafe { libc::kill(pid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => {
            let argv0 = cmd.split(|b| *b == 0).next().unwrap_or(&[]);
            String::from_utf8_lossy(argv0).contains("slurmstepd")
        }
        // Without /proc, trust the pid.
        Err(_) => true,
    }
}

/// Jobs with a live slurmstepd.
pub fn running_jobs(spool: &Path) -> Vec<u32> {
    list_jobs(spool)
        .into_iter()
        .filter(|(_, dir)| read_pid(dir).is_some_and(stepd_alive))
        .map(|(id, _)| id)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(job_dir(Path::new("/s"), 42), PathBuf::from("/s/job00042"));
        assert_eq!(
            job_dir(Path::new("/s"), 1234567),
            PathBuf::from("/s/job1234567")
        );
        assert_eq!(parse_job_dir_name("job00042"), Some(42));
        assert_eq!(parse_job_dir_name("job"), None);
        assert_eq!(parse_job_dir_name("job-1"), None);
        assert_eq!(parse_job_dir_name("job99999999999"), None);
        assert_eq!(parse_job_dir_name("cred_state"), None);
    }

    #[test]
    fn running_needs_a_live_stepd() {
        let dir = tempfile::tempdir().unwrap();
        let a = job_dir(dir.path(), 1);
        let b = job_dir(dir.path(), 2);
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        // Our own pid is alive but is not a slurmstepd.
        std::fs::write(a.join(PID_FILE), std::process::id().to_string()).unwrap();
        std::fs::write(b.join(PID_FILE), "garbage").unwrap();
        assert_eq!(list_jobs(dir.path()).len(), 2);
        assert_eq!(read_pid(&a), Some(std::process::id() as i32));
        assert_eq!(read_pid(&b), None);
        assert!(running_jobs(dir.path()).is_empty());
        assert!(list_jobs(Path::new("/nonexistent")).is_empty());
    }
}
