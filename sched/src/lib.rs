//! slurm-sched: scheduling as pure functions.
//!
//! `schedule(view, queue, now) -> Plan`: the controller hands in an immutable
//! view of nodes and partitions plus the pending queue, and gets back the jobs
//! to start, where, and a pending Reason (Slurm's names) for every job left
//! waiting. No clock reads, no randomness, no I/O: the same inputs always give
//! the same plan, which is what makes journal replay and property tests work.
//!
//! * [`view`]: the cluster snapshot ([`ClusterView`]).
//! * [`request`]: what a pending job asks for ([`JobRequest`]).
//! * [`constraint`]: `--constraint` expressions.
//! * [`plan`]: the pass itself ([`schedule`]) and its result ([`Plan`]).
//! * [`estimate`]: when a job that cannot start now would start
//!   ([`estimate_starts`]).
//! * [`submit`]: admission at submission time ([`check_submit`]).
//! * [`layout`]: the `2(x3),1` form of `SLURM_JOB_CPUS_PER_NODE` and
//!   `SLURM_TASKS_PER_NODE`.
//!
//! See `README.md` beside this crate for the pipeline and its vocabulary.

// Tests may unwrap: a panic is how they fail.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod constraint;
pub mod estimate;
mod fit;
pub mod plan;
pub mod request;
pub mod submit;
pub mod view;

#[cfg(test)]
mod props;
#[cfg(test)]
mod testkit;

pub use constraint::{Constraint, ConstraintError};
pub use estimate::{estimate_starts, Estimate, EstimateConfig, Holding};
pub use plan::{account_refusal, schedule, NodeAlloc, Plan, Start};
pub use request::{Hold, JobRequest, LicenseNeed, MemReq};
pub use slurm_common::counts::{compress_counts, expand_counts, LayoutError};
pub use submit::{check_submit, min_cpus_per_node, partition_cpus, SubmitRejection, Unsatisfiable};
pub use view::{
    ClusterView, LicenseView, NodeUsers, NodeView, OverSubscribe, PartitionState, PartitionView,
    SchedConfig,
};
