//! Why a job is not running: Slurm's job reason codes.
//!
//! Every pending job carries one of these, and `squeue` prints it in
//! parentheses in the `NODELIST(REASON)` column (`(Resources)`, `(Priority)`,
//! `(JobHeldUser)`); `scontrol show job` prints it as `Reason=`. The words
//! are part of the interface (scripts grep for them), so [`PendingReason`]'s
//! `Display` is exactly Slurm's spelling, including its irregular cases
//! (`DeadLine`, `QOSGrpCpuLimit` next to `QOSGrpCPUMinutesLimit`).
//!
//! Slurm uses the same vocabulary for why a job *ended* (`NonZeroExitCode`,
//! `TimeLimit`, ...), which `scontrol show job` shows for finished jobs, so
//! those are here too. A job that is running, or was never held up, shows
//! [`PendingReason::None`] (`Reason=None`, or `(None)` in squeue for a job
//! the scheduler has not looked at yet).
//!
//! Some reasons come with extra text that squeue prints instead of the bare
//! word (`ReqNodeNotAvail, UnavailableNodes:n3`, or `launch failed requeued
//! held` for a JobHeldAdmin job); that description belongs to the job record,
//! not to this enum.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

macro_rules! reasons {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )+) => {
        /// A job reason code, spelled as Slurm spells it (see the module docs).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub enum PendingReason {
            /// No reason: running, or not yet looked at by the scheduler.
            #[default]
            None,
            $( $(#[$doc])* $variant, )+
        }

        impl PendingReason {
            /// Every reason, `None` first.
            pub const ALL: &'static [PendingReason] = &[
                PendingReason::None,
                $( PendingReason::$variant, )+
            ];

            /// Slurm's spelling, as squeue `%r` and `scontrol show job` print it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    PendingReason::None => "None",
                    $( PendingReason::$variant => $name, )+
                }
            }
        }
    };
}

reasons! {
    // --- the scheduler's own verdicts --------------------------------------
    /// Higher priority jobs in the partition wait for resources first.
    Priority => "Priority",
    /// The requested resources are in use by other jobs.
    Resources => "Resources",
    /// Waiting on another job (`--dependency`).
    Dependency => "Dependency",
    /// A dependency can never be satisfied (the job it waits on failed).
    DependencyNeverSatisfied => "DependencyNeverSatisfied",
    /// Held by its owner (`--hold`, `scontrol hold` by the user, `uhold`).
    JobHeldUser => "JobHeldUser",
    /// Held by an administrator.
    JobHeldAdmin => "JobHeldAdmin",
    /// `--begin` is in the future.
    BeginTime => "BeginTime",
    /// Violates some partition limit (fallback, e.g. more nodes than exist).
    PartitionConfig => "PartitionConfig",
    /// The time limit exceeds the partition's MaxTime.
    PartitionTimeLimit => "PartitionTimeLimit",
    /// The node count is outside the partition's MinNodes/MaxNodes.
    PartitionNodeLimit => "PartitionNodeLimit",
    /// The partition is State=DOWN.
    PartitionDown => "PartitionDown",
    /// The partition is State=INACTIVE.
    PartitionInactive => "PartitionInactive",
    /// A node the job needs is down, drained or not responding.
    ReqNodeNotAvail => "ReqNodeNotAvail",
    /// A node required by the job is down.
    NodeDown => "NodeDown",
    /// The job's requirements can never be satisfied.
    BadConstraints => "BadConstraints",
    /// The job's constraints cannot be satisfied at this time.
    Constraints => "Constraints",
    /// Waiting for licenses.
    Licenses => "Licenses",
    /// Waiting for its advanced reservation.
    Reservation => "Reservation",
    /// The reservation it asked for was deleted.
    ReservationDeleted => "ReservationDeleted",
    /// The array's `%N` limit on simultaneously running tasks is reached.
    JobArrayTaskLimit => "JobArrayTaskLimit",
    /// The prolog is still running.
    Prolog => "Prolog",
    /// Requeued and still cleaning up from the previous run.
    Cleaning => "Cleaning",
    /// The job cannot meet its `--deadline`.
    DeadLine => "DeadLine",
    /// `--immediate` with SchedulerParameters=defer.
    SchedDefer => "SchedDefer",
    /// Violates MaxMemPerCPU/MaxMemPerNode.
    MaxMemPerLimit => "MaxMemPerLimit",
    /// Fallback for accounting policy limits.
    AccountingPolicy => "AccountingPolicy",
    /// The account is not allowed in the partition.
    AccountNotAllowed => "AccountNotAllowed",
    /// The QOS is not allowed by the association or partition.
    QOSNotAllowed => "QOSNotAllowed",
    /// Waiting for the federation to sync.
    FedJobLock => "FedJobLock",
    /// The job was requeued too many times (MAX_BATCH_REQUEUE).
    JobHoldMaxRequeue => "JobHoldMaxRequeue",
    /// The frontend node is down.
    FrontEndDown => "FrontEndDown",
    /// Not enough burst buffer space.
    BurstBufferResources => "BurstBufferResources",
    /// Burst buffer stage-in in progress.
    BurstBufferStageIn => "BurstBufferStageIn",
    /// A burst buffer operation failed.
    BurstBufferOperation => "BurstBufferOperation",

    // --- why a job ended ----------------------------------------------------
    /// Terminated with a non-zero exit code.
    NonZeroExitCode => "NonZeroExitCode",
    /// Terminated by a signal.
    RaisedSignal => "RaisedSignal",
    /// Reached its time limit.
    TimeLimit => "TimeLimit",
    /// Reached the system InactiveLimit.
    InactiveLimit => "InactiveLimit",
    /// Could not be launched (file system problem, bad program, ...).
    JobLaunchFailure => "JobLaunchFailure",
    /// Failure of Slurm, a file system, the network, ...
    SystemFailure => "SystemFailure",
    /// Killed by the out-of-memory handler.
    OutOfMemory => "OutOfMemory",
    /// The account is invalid.
    InvalidAccount => "InvalidAccount",
    /// The QOS is invalid.
    InvalidQOS => "InvalidQOS",

    // --- association limits -------------------------------------------------
    AssociationJobLimit => "AssociationJobLimit",
    AssociationResourceLimit => "AssociationResourceLimit",
    AssociationTimeLimit => "AssociationTimeLimit",
    AssocGrpBilling => "AssocGrpBilling",
    AssocGrpBillingMinutes => "AssocGrpBillingMinutes",
    AssocGrpBillingRunMinutes => "AssocGrpBillingRunMinutes",
    AssocGrpCpuLimit => "AssocGrpCpuLimit",
    AssocGrpCPUMinutesLimit => "AssocGrpCPUMinutesLimit",
    AssocGrpCPURunMinutesLimit => "AssocGrpCPURunMinutesLimit",
    AssocGrpGRES => "AssocGrpGRES",
    AssocGrpGRESMinutes => "AssocGrpGRESMinutes",
    AssocGrpGRESRunMinutes => "AssocGrpGRESRunMinutes",
    AssocGrpJobsLimit => "AssocGrpJobsLimit",
    AssocGrpLicense => "AssocGrpLicense",
    AssocGrpMemLimit => "AssocGrpMemLimit",
    AssocGrpMemMinutes => "AssocGrpMemMinutes",
    AssocGrpMemRunMinutes => "AssocGrpMemRunMinutes",
    AssocGrpNodeLimit => "AssocGrpNodeLimit",
    AssocGrpNodeMinutes => "AssocGrpNodeMinutes",
    AssocGrpNodeRunMinutes => "AssocGrpNodeRunMinutes",
    AssocGrpSubmitJobsLimit => "AssocGrpSubmitJobsLimit",
    AssocGrpWallLimit => "AssocGrpWallLimit",
    AssocMaxBillingPerJob => "AssocMaxBillingPerJob",
    AssocMaxCpuMinutesPerJobLimit => "AssocMaxCpuMinutesPerJobLimit",
    AssocMaxCpuPerJobLimit => "AssocMaxCpuPerJobLimit",
    AssocMaxCpuPerNode => "AssocMaxCpuPerNode",
    AssocMaxGRESPerJob => "AssocMaxGRESPerJob",
    AssocMaxGRESPerNode => "AssocMaxGRESPerNode",
    AssocMaxJobsLimit => "AssocMaxJobsLimit",
    AssocMaxMemPerJob => "AssocMaxMemPerJob",
    AssocMaxMemPerNode => "AssocMaxMemPerNode",
    AssocMaxNodePerJobLimit => "AssocMaxNodePerJobLimit",
    AssocMaxSubmitJobLimit => "AssocMaxSubmitJobLimit",
    AssocMaxWallDurationPerJobLimit => "AssocMaxWallDurationPerJobLimit",

    // --- QOS limits -----------------------------------------------------------
    QOSJobLimit => "QOSJobLimit",
    QOSResourceLimit => "QOSResourceLimit",
    QOSTimeLimit => "QOSTimeLimit",
    QOSUsageThreshold => "QOSUsageThreshold",
    QOSGrpBilling => "QOSGrpBilling",
    QOSGrpBillingMinutes => "QOSGrpBillingMinutes",
    QOSGrpBillingRunMinutes => "QOSGrpBillingRunMinutes",
    QOSGrpCpuLimit => "QOSGrpCpuLimit",
    QOSGrpCPUMinutesLimit => "QOSGrpCPUMinutesLimit",
    QOSGrpCPURunMinutesLimit => "QOSGrpCPURunMinutesLimit",
    QOSGrpGRES => "QOSGrpGRES",
    QOSGrpGRESMinutes => "QOSGrpGRESMinutes",
    QOSGrpGRESRunMinutes => "QOSGrpGRESRunMinutes",
    QOSGrpJobsLimit => "QOSGrpJobsLimit",
    QOSGrpLicense => "QOSGrpLicense",
    QOSGrpMemLimit => "QOSGrpMemLimit",
    QOSGrpMemoryMinutes => "QOSGrpMemoryMinutes",
    QOSGrpMemoryRunMinutes => "QOSGrpMemoryRunMinutes",
    QOSGrpNodeLimit => "QOSGrpNodeLimit",
    QOSGrpNodeMinutes => "QOSGrpNodeMinutes",
    QOSGrpNodeRunMinutes => "QOSGrpNodeRunMinutes",
    QOSGrpSubmitJobsLimit => "QOSGrpSubmitJobsLimit",
    QOSGrpWallLimit => "QOSGrpWallLimit",
    QOSMaxBillingPerJob => "QOSMaxBillingPerJob",
    QOSMaxBillingPerUser => "QOSMaxBillingPerUser",
    QOSMaxCpuMinutesPerJobLimit => "QOSMaxCpuMinutesPerJobLimit",
    QOSMaxCpuPerJobLimit => "QOSMaxCpuPerJobLimit",
    QOSMaxCpuPerNode => "QOSMaxCpuPerNode",
    QOSMaxCpuPerUserLimit => "QOSMaxCpuPerUserLimit",
    QOSMaxGRESPerJob => "QOSMaxGRESPerJob",
    QOSMaxGRESPerNode => "QOSMaxGRESPerNode",
    QOSMaxGRESPerUser => "QOSMaxGRESPerUser",
    QOSMaxJobsPerUserLimit => "QOSMaxJobsPerUserLimit",
    QOSMaxMemoryPerJob => "QOSMaxMemoryPerJob",
    QOSMaxMemoryPerNode => "QOSMaxMemoryPerNode",
    QOSMaxMemoryPerUser => "QOSMaxMemoryPerUser",
    QOSMaxNodePerJobLimit => "QOSMaxNodePerJobLimit",
    QOSMaxNodePerUserLimit => "QOSMaxNodePerUserLimit",
    QOSMaxSubmitJobPerUserLimit => "QOSMaxSubmitJobPerUserLimit",
    QOSMaxWallDurationPerJobLimit => "QOSMaxWallDurationPerJobLimit",
    QOSMinCpuNotSatisfied => "QOSMinCpuNotSatisfied",
    QOSMinGRES => "QOSMinGRES",
    QOSMinMemory => "QOSMinMemory",
    QOSMinNode => "QOSMinNode",
    MaxCpuPerAccount => "MaxCpuPerAccount",
    MaxGRESPerAccount => "MaxGRESPerAccount",
    MaxJobsPerAccount => "MaxJobsPerAccount",
    MaxMemoryPerAccount => "MaxMemoryPerAccount",
    MaxNodePerAccount => "MaxNodePerAccount",
    MaxSubmitJobsPerAccount => "MaxSubmitJobsPerAccount",
}

impl PendingReason {
    /// A hold that only `scontrol release` (or the owner, for a user hold)
    /// lifts.
    pub const fn is_hold(self) -> bool {
        matches!(
            self,
            PendingReason::JobHeldUser | PendingReason::JobHeldAdmin
        )
    }

    /// Reasons that describe how a job ended rather than why it waits.
    pub const fn is_end_reason(self) -> bool {
        matches!(
            self,
            PendingReason::NonZeroExitCode
                | PendingReason::RaisedSignal
                | PendingReason::TimeLimit
                | PendingReason::InactiveLimit
                | PendingReason::JobLaunchFailure
                | PendingReason::SystemFailure
                | PendingReason::OutOfMemory
        )
    }
}

/// The description Slurm's main scheduler gives the first job of a
/// partition that has fewer usable nodes than the job needs (drained, down,
/// or kept back for jobs of other partitions). The reason stays
/// `Resources`; squeue `%r` and `scontrol show job` print this text instead.
pub const NODES_DOWN_DRAINED_OR_RESERVED: &str =
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions";

/// The description of a `ReqNodeNotAvail` job: the unusable nodes it would
/// need (`nodes`, a compressed hostlist), or, when none is named, the
/// words Slurm uses for nodes held by someone else.
pub fn req_node_not_avail_text(nodes: &str) -> String {
    if nodes.is_empty() {
        "ReqNodeNotAvail, May be reserved for other job".to_string()
    } else {
        format!("ReqNodeNotAvail, UnavailableNodes:{nodes}")
    }
}

impl fmt::Display for PendingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reason name Slurm does not have.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown job reason: {input:?}")]
pub struct ParseReasonError {
    pub input: String,
}

impl FromStr for PendingReason {
    type Err = ParseReasonError;

    /// Slurm's spelling, compared without regard to case (`resources` and
    /// `Resources` both work; the names never differ only by case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        PendingReason::ALL
            .iter()
            .copied()
            .find(|r| t.eq_ignore_ascii_case(r.as_str()))
            .ok_or_else(|| ParseReasonError {
                input: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_reasons_print_as_slurm() {
        // squeue_jobs.out, squeue_after_cancel.out, squeue_too_many_nodes.out,
        // squeue_dependency_never.out, squeue_array.out
        let cases = [
            (PendingReason::Resources, "Resources"),
            (PendingReason::Priority, "Priority"),
            (PendingReason::Dependency, "Dependency"),
            (PendingReason::JobHeldUser, "JobHeldUser"),
            (PendingReason::JobHeldAdmin, "JobHeldAdmin"),
            (PendingReason::PartitionConfig, "PartitionConfig"),
            (
                PendingReason::DependencyNeverSatisfied,
                "DependencyNeverSatisfied",
            ),
            (PendingReason::None, "None"),
        ];
        for (r, s) in cases {
            assert_eq!(r.to_string(), s);
            assert_eq!(format!("({r})"), format!("({s})"));
        }
    }

    #[test]
    fn irregular_spellings_are_kept() {
        assert_eq!(PendingReason::DeadLine.as_str(), "DeadLine");
        assert_eq!(PendingReason::QOSGrpCpuLimit.as_str(), "QOSGrpCpuLimit");
        assert_eq!(
            PendingReason::QOSGrpCPUMinutesLimit.as_str(),
            "QOSGrpCPUMinutesLimit"
        );
        assert_eq!(PendingReason::InvalidQOS.as_str(), "InvalidQOS");
    }

    #[test]
    fn default_is_none() {
        assert_eq!(PendingReason::default(), PendingReason::None);
    }

    #[test]
    fn names_are_unique_even_ignoring_case() {
        let mut seen = std::collections::HashSet::new();
        for r in PendingReason::ALL {
            assert!(seen.insert(r.as_str().to_ascii_lowercase()), "{r:?}");
        }
    }

    #[test]
    fn names_match_variant_names() {
        // The spelling is the variant name everywhere: a typo in either shows.
        for r in PendingReason::ALL {
            assert_eq!(format!("{r:?}"), r.as_str());
        }
    }

    #[test]
    fn parse_accepts_any_case_and_rejects_unknown() {
        assert_eq!("Resources".parse(), Ok(PendingReason::Resources));
        assert_eq!("resources".parse(), Ok(PendingReason::Resources));
        assert_eq!(" None ".parse(), Ok(PendingReason::None));
        for bad in [
            "",
            "(Resources)",
            "Resource",
            "ReqNodeNotAvail, UnavailableNodes:n3",
        ] {
            assert!(bad.parse::<PendingReason>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn descriptions_are_slurms_words() {
        assert_eq!(
            req_node_not_avail_text("vm"),
            "ReqNodeNotAvail, UnavailableNodes:vm"
        );
        assert_eq!(
            req_node_not_avail_text("n[1-3]"),
            "ReqNodeNotAvail, UnavailableNodes:n[1-3]"
        );
        assert_eq!(
            req_node_not_avail_text(""),
            "ReqNodeNotAvail, May be reserved for other job"
        );
        assert!(NODES_DOWN_DRAINED_OR_RESERVED.starts_with("Nodes required for job are DOWN"));
    }

    #[test]
    fn classification() {
        assert!(PendingReason::JobHeldUser.is_hold());
        assert!(!PendingReason::Resources.is_hold());
        assert!(PendingReason::NonZeroExitCode.is_end_reason());
        assert!(!PendingReason::Priority.is_end_reason());
    }

    proptest! {
        #[test]
        fn round_trip(i in 0..PendingReason::ALL.len()) {
            let r = PendingReason::ALL[i];
            prop_assert_eq!(r.as_str().parse::<PendingReason>(), Ok(r));
            prop_assert_eq!(r.as_str().to_uppercase().parse::<PendingReason>(), Ok(r));
        }

        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = s.parse::<PendingReason>();
        }
    }
}
