//! Typed reading of `slurm.conf`, `gres.conf` and `cgroup.conf`.
//!
//! Every daemon and command reads the same files, so the parsing lives here,
//! once, and hands out plain typed values: durations as [`Duration`], memory in
//! MB, plugin choices as enums, node lines expanded to one [`NodeConf`] per
//! node. Nobody downstream should ever look at a config string again, except
//! `scontrol show config`, which gets the raw ordered entries as written.
//!
//! The work is split in two layers:
//!
//! * [`lexer`] turns text into logical lines of `Key=Value` pairs (comments,
//!   quotes, continuation lines, `Include`). It knows nothing about keys.
//! * [`slurm`], [`gres`] and [`cgroup`] give the pairs meaning, apply Slurm
//!   22.05's documented defaults and check values.
//!
//! Parsing is pure: `parse(text, origin)` never touches the filesystem, and an
//! `Include` inside it is an error. `parse_with(text, origin, &mut source)`
//! resolves includes through an [`IncludeSource`] (an in-memory map in tests),
//! and `load(path)` is the thin wrapper over the real filesystem.
//!
//! Diagnostics follow one rule: anything that would make the daemons behave
//! differently from what the administrator wrote is a [`ConfError`] (the first
//! one stops parsing, as Slurm's fatal errors do); anything that can be ignored
//! safely, such as a key we do not know, is a [`ConfWarning`] returned to the
//! caller, which decides whether and how to log it.
//!
//! [`Duration`]: std::time::Duration

use std::fmt;
use std::io;
use std::sync::Arc;

pub mod cgroup;
pub mod debug_flags;
pub mod gres;
mod keys;
pub mod lexer;
pub mod node;
pub mod options;
pub mod partition;
pub mod plugins;
pub mod slurm;
mod value;

pub use cgroup::{CgroupConf, CgroupPlugin};
pub use debug_flags::{debug_flag, DEBUG_FLAGS};
pub use gres::{GresAutoDetect, GresConf, GresFlags, GresRecord, GresSpec, NodeAutoDetect};
pub use lexer::{FsIncludes, IncludeSource, Line, MemoryIncludes, Pair};
pub use node::{DownNodes, NodeConf, NodeConfState, NodeSet};
pub use options::{
    AccountingEnforce, AcctGatherFrequency, HealthCheckNodeState, License, OptionList, PrivateData,
    PrologFlags, PropagateLimits, Rlimit, SchedulerParameters, TresWeight,
};
pub use partition::{
    MemPer, OverSubscribe, PartitionConf, PartitionState, PartitionUpdate, PartitionUpdateError,
};
pub use plugins::{
    AccountingStorageType, AuthPlugin, CrResource, CredType, EnforcePartLimits, JobAcctGatherType,
    LogLevel, MpiPlugin, PreemptMode, PreemptModeKind, PreemptType, PriorityFlag, PriorityType,
    ProctrackType, ReturnToService, SchedulerType, SelectType, SelectTypeParameters, TaskPlugin,
    TopologyPlugin,
};
pub use slurm::{conf_hash, ControllerHost, PortRange, RawEntry, SlurmConf, ALWAYS_TRACKED_TRES};

/// Expands a per-node path of slurm.conf (SlurmdSpoolDir, SlurmdLogFile,
/// TmpFS, ...): `%n` is the node name, `%h` its host name and `%%` a
/// percent sign; any other `%` is kept as written.
pub fn expand_node_path(template: &str, node: &str, host: &str) -> String {
    let mut out = String::with_capacity(template.len() + node.len());
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push_str(node),
            Some('h') => out.push_str(host),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Where a key was written: the file (as it was named to the parser) and the
/// 1-based line number of the start of the logical line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceLoc {
    pub file: Arc<str>,
    pub line: u32,
}

impl SourceLoc {
    pub fn new(file: impl Into<Arc<str>>, line: u32) -> Self {
        Self {
            file: file.into(),
            line,
        }
    }
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A parsed configuration together with the warnings met on the way.
#[derive(Debug, Clone)]
pub struct Parsed<T> {
    pub conf: T,
    pub warnings: Vec<ConfWarning>,
}

/// Something in a config file that was ignored; the configuration is still
/// usable. Returned, never logged, by the parsers.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfWarning {
    pub loc: SourceLoc,
    pub kind: WarningKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WarningKind {
    /// A key this implementation does not know (a typo or a newer Slurm's key).
    UnknownKey { key: String },
    /// A known key given where it has no effect, or overridden by another one.
    Ignored { key: String, reason: &'static str },
    /// A node's CPUs= disagrees with its topology; the topology wins, as in Slurm.
    CpusMismatch {
        node: String,
        configured: u32,
        computed: u32,
    },
    /// More than one partition has Default=YES; the last one wins.
    MultipleDefaultPartitions { first: String, last: String },
    /// A partition's DefaultTime is larger than its MaxTime; DefaultTime is dropped.
    DefaultTimeExceedsMaxTime { partition: String },
}

impl fmt::Display for ConfWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.loc)?;
        match &self.kind {
            WarningKind::UnknownKey { key } => write!(f, "unknown parameter {key:?} ignored"),
            WarningKind::Ignored { key, reason } => write!(f, "{key} ignored: {reason}"),
            WarningKind::CpusMismatch {
                node,
                configured,
                computed,
            } => write!(
                f,
                "NodeName={node} CPUs={configured} does not match \
                 Boards*Sockets*CoresPerSocket*ThreadsPerCore ({computed}), using {computed}"
            ),
            WarningKind::MultipleDefaultPartitions { first, last } => write!(
                f,
                "partitions {first} and {last} both have Default=YES, using {last}"
            ),
            WarningKind::DefaultTimeExceedsMaxTime { partition } => write!(
                f,
                "partition {partition}: DefaultTime exceeds MaxTime, DefaultTime ignored"
            ),
        }
    }
}

/// A config file that cannot be used as written.
#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{loc}: unterminated quote")]
    UnterminatedQuote { loc: SourceLoc },
    #[error("{loc}: expected Key=Value, found {token:?}")]
    ExpectedKeyValue { loc: SourceLoc, token: String },
    #[error("{loc}: invalid value {value:?} for {key}: expected {expected}")]
    InvalidValue {
        loc: SourceLoc,
        key: String,
        value: String,
        expected: &'static str,
    },
    #[error(
        "{loc}: Include {pattern:?} cannot be resolved when parsing text without a file loader"
    )]
    IncludeUnavailable { loc: SourceLoc, pattern: String },
    #[error("{loc}: Include {pattern:?} matches no file")]
    IncludeNotFound { loc: SourceLoc, pattern: String },
    #[error("{loc}: Include of {path} would include it again (cycle)")]
    IncludeCycle { loc: SourceLoc, path: String },
    #[error("{loc}: Include nested deeper than {max} files")]
    IncludeTooDeep { loc: SourceLoc, max: usize },
    #[error("{loc}: cannot read included file {path}: {source}")]
    IncludeRead {
        loc: SourceLoc,
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{file}: {key} needs to be specified")]
    MissingKey { file: String, key: &'static str },
    #[error("{loc}: {key} cannot be combined with {other}")]
    Conflict {
        loc: SourceLoc,
        key: &'static str,
        other: &'static str,
    },
    #[error("{loc}: {line_key} line without a name")]
    MissingName {
        loc: SourceLoc,
        line_key: &'static str,
    },
    #[error("{loc}: duplicate NodeName {node}")]
    DuplicateNode { loc: SourceLoc, node: String },
    #[error("{loc}: duplicate PartitionName {partition}")]
    DuplicatePartition { loc: SourceLoc, partition: String },
    #[error("{loc}: duplicate NodeSet {nodeset}")]
    DuplicateNodeSet { loc: SourceLoc, nodeset: String },
    #[error("{loc}: {what} {owner} names unknown node {node}")]
    UnknownNode {
        loc: SourceLoc,
        what: &'static str,
        owner: String,
        node: String,
    },
    #[error("{loc}: {key} has {count} values for {names} NodeName entries (need 1 or {names})")]
    CountMismatch {
        loc: SourceLoc,
        key: &'static str,
        count: usize,
        names: usize,
    },
    #[error("{loc}: gres {name}: Count={count} does not match the {files} device files")]
    GresCountMismatch {
        loc: SourceLoc,
        name: String,
        count: u64,
        files: usize,
    },
}

impl ConfError {
    /// Where the error was found, when it points at a line.
    pub fn loc(&self) -> Option<&SourceLoc> {
        match self {
            ConfError::Io { .. } | ConfError::MissingKey { .. } => None,
            ConfError::UnterminatedQuote { loc }
            | ConfError::ExpectedKeyValue { loc, .. }
            | ConfError::InvalidValue { loc, .. }
            | ConfError::IncludeUnavailable { loc, .. }
            | ConfError::IncludeNotFound { loc, .. }
            | ConfError::IncludeCycle { loc, .. }
            | ConfError::IncludeTooDeep { loc, .. }
            | ConfError::IncludeRead { loc, .. }
            | ConfError::Conflict { loc, .. }
            | ConfError::MissingName { loc, .. }
            | ConfError::DuplicateNode { loc, .. }
            | ConfError::DuplicatePartition { loc, .. }
            | ConfError::DuplicateNodeSet { loc, .. }
            | ConfError::UnknownNode { loc, .. }
            | ConfError::CountMismatch { loc, .. }
            | ConfError::GresCountMismatch { loc, .. } => Some(loc),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod display_tests {
    use super::*;

    #[test]
    fn invalid_value_display_names_file_line_key_value_and_form() {
        let e = ConfError::InvalidValue {
            loc: SourceLoc::new("/etc/slurm/slurm.conf", 12),
            key: "MaxTime".into(),
            value: "abc".into(),
            expected: value::EXPECT_TIME_LIMIT,
        };
        assert_eq!(
            e.to_string(),
            "/etc/slurm/slurm.conf:12: invalid value \"abc\" for MaxTime: expected a time limit \
             (minutes, [days-]hours:minutes:seconds, UNLIMITED)"
        );
    }

    #[test]
    fn warning_display_names_location() {
        let w = ConfWarning {
            loc: SourceLoc::new("a.conf", 3),
            kind: WarningKind::UnknownKey {
                key: "Bogus".into(),
            },
        };
        assert_eq!(
            w.to_string(),
            "a.conf:3: unknown parameter \"Bogus\" ignored"
        );
    }
}
