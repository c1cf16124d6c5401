//! Slurm hostlist expressions: `n[1-3,5]`, `gpu[01-02]`, `rack[1-2]-n[01-04]`.
//!
//! Node lists cross every interface of the system in this compact form:
//! `slurm.conf`, `squeue`'s NODELIST column, `SLURM_JOB_NODELIST`, `-w`,
//! `scontrol show hostnames`. Users and scripts depend on the exact spelling,
//! so the rules here are those of Slurm 22.05, checked against its `scontrol`:
//!
//! * Expansion keeps the written order and duplicates. Zero padding comes
//!   from the lower bound (`n[01-3]` is `n01 n02 n03`); several bracket
//!   groups multiply out (`rack[1-2]-n[1-2]` is `rack1-n1 rack1-n2 rack2-n1
//!   rack2-n2`); nothing may follow the last `]`.
//! * Compression keeps the order and merges a name into the previous run
//!   only when it has the same prefix, the next number, and a compatible
//!   width (`n9,n10` is `n[9-10]`, `n1,n01` stays `n[1,01]`).
//! * Sorted compression orders prefixes naturally (`rack2` before `rack10`),
//!   and keeps duplicates, as `scontrol show hostlistsorted` does;
//!   [`compress_unique`] drops them as well.
//! * A single range holds at most [`MAX_RANGE_HOSTS`] hosts (Slurm's limit);
//!   an expression at most [`MAX_HOSTS`] hosts, so that a short string can
//!   never make a daemon allocate without bound.
//!
//! Where Slurm 22.05 misreads input, this module refuses it instead:
//! an unclosed `[` (Slurm turns `n[1-3` into the host `n]`), a stray `]`,
//! signs or spaces inside a range (Slurm turns `n[ 1-3]` into `n01..n03`),
//! and numbers beyond 64 bits (Slurm clamps them or crashes). A name whose
//! numeric suffix does not fit in 64 bits is kept whole, never clamped. A
//! bad range anywhere in a name is an error (Slurm silently drops names
//! with three or more groups whose first group is bad), and sorting never
//! loses hosts (Slurm's can, for overlapping ranges of mixed widths).
//!
//! `compress*` take names; `compress_expr*` take an expression and keep the
//! grouping written in it, which is what `scontrol show hostlist` prints.

mod natural;
mod parse;
mod run;

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use run::Run;

/// Most hosts one bracket range may name (Slurm refuses `n[0-65536]`).
pub const MAX_RANGE_HOSTS: u64 = 65_536;

/// Most hosts one expression may name.
pub const MAX_HOSTS: usize = 1_000_000;

/// Most bytes of host names one expression may expand to.
pub const MAX_EXPANDED_BYTES: usize = 256 * 1024 * 1024;

/// Why a hostlist expression was refused. Every variant names the whole
/// expression; `scontrol` reports it as `Invalid hostlist: <expr>`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostlistError {
    /// A bracket item is not `N`, `N-M` or `N-`, or runs backwards.
    #[error("invalid range {range:?} in hostlist {expr:?}")]
    InvalidRange { expr: String, range: String },
    /// A bracket item names more than [`MAX_RANGE_HOSTS`] hosts.
    #[error("too many hosts in range {range:?} of hostlist {expr:?} (at most {limit})")]
    RangeTooLarge {
        expr: String,
        range: String,
        limit: u64,
    },
    /// A `[` without its `]`, a `]` without its `[`, or nested brackets.
    #[error("unbalanced brackets in {name:?} of hostlist {expr:?}")]
    UnbalancedBrackets { expr: String, name: String },
    /// Text after the last `]` of a name, as in `a-[1-2]b`.
    #[error("text after the last ']' in {name:?} of hostlist {expr:?}")]
    TextAfterBracket { expr: String, name: String },
    /// The expression names more than [`MAX_HOSTS`] hosts.
    #[error("hostlist {expr:?} names more than {limit} hosts")]
    TooManyHosts { expr: String, limit: usize },
    /// The host names would take more than [`MAX_EXPANDED_BYTES`] bytes.
    #[error("hostlist {expr:?} expands to more than {limit} bytes of host names")]
    TooLong { expr: String, limit: usize },
}

impl HostlistError {
    /// The expression that was refused.
    pub fn expr(&self) -> &str {
        match self {
            Self::InvalidRange { expr, .. }
            | Self::RangeTooLarge { expr, .. }
            | Self::UnbalancedBrackets { expr, .. }
            | Self::TextAfterBracket { expr, .. }
            | Self::TooManyHosts { expr, .. }
            | Self::TooLong { expr, .. } => expr,
        }
    }
}

/// Expands an expression into host names, in Slurm's order, keeping
/// duplicates: `n[1-2],gpu[01-02]` is `n1 n2 gpu01 gpu02`.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let parsed = parse::parse(expr)?;
    let mut names = Vec::with_capacity(usize::try_from(parsed.hosts).unwrap_or(0));
    for run in parsed.runs() {
        run.push_names(&mut names);
    }
    Ok(names)
}

/// Counts the hosts of an expression without building their names.
pub fn count(expr: &str) -> Result<usize, HostlistError> {
    let parsed = parse::parse(expr)?;
    // parse() refuses more than MAX_HOSTS, so the count fits.
    Ok(usize::try_from(parsed.hosts).unwrap_or(MAX_HOSTS))
}

/// Compresses host names in the given order, as `scontrol show hostlist`
/// prints them: `n1,n2,n3,n5` is `n[1-3,5]`.
///
/// Names are taken as they are; one holding a separator or a bracket cannot
/// be expanded back.
pub fn compress<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    let mut runs = Vec::new();
    for name in names {
        run::push(&mut runs, Run::from_name(name.as_ref()));
    }
    run::format(&runs)
}

/// Re-spells an expression compactly, as `scontrol show hostlist` does.
///
/// Unlike `compress(expand(expr))` this keeps the structure written in the
/// expression: `n[1-2][3-4]` gives `n1[3-4],n2[3-4]` as in Slurm, where
/// compressing the names would give `n[13-14,23-24]`.
pub fn compress_expr(expr: &str) -> Result<String, HostlistError> {
    let mut runs = Vec::new();
    for r in parse::parse(expr)?.runs() {
        run::push(&mut runs, r);
    }
    Ok(run::format(&runs))
}

/// Sorts and re-spells an expression, as `scontrol show hostlistsorted`
/// does; duplicates are kept. See [`compress_expr`] for how this differs
/// from compressing the expanded names.
pub fn compress_expr_sorted(expr: &str) -> Result<String, HostlistError> {
    let mut runs = Vec::new();
    for r in parse::parse(expr)?.runs() {
        run::push(&mut runs, r);
    }
    Ok(run::format(&run::sorted(runs)))
}

/// Sorts, then compresses, as `scontrol show hostlistsorted` prints: prefixes
/// in natural order, then numbers. Duplicates are kept (`n[1,1-3]`).
pub fn compress_sorted<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    let mut runs = Vec::new();
    for name in names {
        run::push(&mut runs, Run::from_name(name.as_ref()));
    }
    run::format(&run::sorted(runs))
}

/// Sorts, drops duplicate names, then compresses: the canonical spelling of
/// a set of nodes.
pub fn compress_unique<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    let mut seen = HashSet::new();
    let singles: Vec<Run> = names
        .into_iter()
        .filter(|n| seen.insert(n.as_ref().to_owned()))
        .map(|n| Run::from_name(n.as_ref()))
        .collect();
    run::format(&run::collapse(run::sort(singles)))
}

/// An ordered list of host names; prints as its compressed expression.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct HostList {
    names: Vec<String>,
}

impl HostList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Expands an expression (see [`expand`]).
    pub fn parse(expr: &str) -> Result<Self, HostlistError> {
        expand(expr).map(|names| Self { names })
    }

    /// A list of the given names, in order.
    pub fn from_names<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self {
            names: names.into_iter().map(Into::into).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.names.iter()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    pub fn push(&mut self, name: impl Into<String>) {
        self.names.push(name.into());
    }

    pub fn as_slice(&self) -> &[String] {
        &self.names
    }

    pub fn into_vec(self) -> Vec<String> {
        self.names
    }

    /// Sorts in Slurm's host order (natural prefix order, then number).
    pub fn sort(&mut self) {
        let singles: Vec<Run> = self.names.iter().map(|n| Run::from_name(n)).collect();
        self.names.clear();
        for r in run::sort(singles) {
            r.push_names(&mut self.names);
        }
    }

    /// Sorts and drops duplicates.
    pub fn uniq(&mut self) {
        let mut seen = HashSet::new();
        self.names.retain(|n| seen.insert(n.clone()));
        self.sort();
    }

    /// The sorted compressed expression (see [`compress_sorted`]).
    pub fn to_sorted_string(&self) -> String {
        compress_sorted(&self.names)
    }
}

/// The compressed expression, in list order (see [`compress`]).
impl fmt::Display for HostList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&compress(&self.names))
    }
}

impl FromStr for HostList {
    type Err = HostlistError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl<S: Into<String>> FromIterator<S> for HostList {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Self::from_names(iter)
    }
}

impl IntoIterator for HostList {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;

    fn into_iter(self) -> Self::IntoIter {
        self.names.into_iter()
    }
}

impl<'a> IntoIterator for &'a HostList {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.names.iter()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
