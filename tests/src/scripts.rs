//! Executable scripts for Prolog/Epilog-style tests, in a temporary
//! directory outside the cluster's, with one "record" file every script
//! and job appends its lines to, so a test can read back what ran, where
//! and in which order.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::{wait_until, LocalCluster};

/// A temporary directory of scripts and their shared record file.
pub struct ScriptDir {
    dir: tempfile::TempDir,
}

impl ScriptDir {
    /// A fresh directory whose name starts with `prefix`.
    pub fn new(prefix: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("tempdir");
        Self { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The file every script and job appends its line to.
    pub fn record(&self) -> PathBuf {
        self.path("record")
    }

    /// Writes `text` as executable script `name`; its path.
    pub fn executable(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// The record's lines so far (none before anything wrote).
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.record())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Waits up to `timeout` until the record holds `want` lines; returns
    /// them. On failure, panics with the record and `c`'s logs.
    pub fn wait_lines(&self, c: &LocalCluster, want: usize, timeout: Duration) -> Vec<String> {
        wait_until(&format!("{want} lines in the record"), timeout, || {
            let l = self.lines();
            (l.len() >= want).then_some(l)
        })
        .unwrap_or_else(|e| panic!("{e}\nrecord: {:?}\n{}", self.lines(), c.logs()))
    }
}
