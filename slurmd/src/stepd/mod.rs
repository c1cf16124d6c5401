//! slurmstepd: runs one batch script and reports how it ended.
//!
//! Split in a pure planning layer ([`plan`], [`env`], [`pattern`], [`prio`]) and a
//! thin layer that carries the plan out through the [`exec::Syscalls`] seam.

pub mod env;
pub mod exec;
pub mod pattern;
pub mod plan;
pub mod prio;
pub mod run;
pub mod user_env;
