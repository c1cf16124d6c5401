//! Checked conversions from wire values to domain types, used at the proto
//! boundary so that no raw `u32` job id or unchecked enum number travels
//! further into a daemon.
//!
//! Ids and time limits map to `slurm_common::{ids, time}`; job and node
//! states map to the base-state-plus-flags types of `slurm_common::state`,
//! which the wire mirrors one to one. Every match below is exhaustive, so a
//! state added on either side fails to compile until it is mapped here.

use slurm_common::ids::{Gid, JobId, StepId, Uid};
use slurm_common::state::{
    JobFlag, JobFlags, JobState, JobStatus, NodeBaseState, NodeFlag, NodeFlags, NodeState,
};
use slurm_common::time::{TimeLimit, MAX_LIMIT_MINUTES};

use crate::error::ErrorCode;
use crate::v1;

/// A wire value that does not fit its domain type. Each variant names the
/// message field involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("field {field}: {value} is not a known enum value")]
    UnknownEnumValue { field: &'static str, value: i32 },
    #[error("field {field}: the value is unspecified")]
    Unspecified { field: &'static str },
    #[error("field {field}: 0 is not a valid job id")]
    ZeroJobId { field: &'static str },
    #[error("field {field}: {value} is not a valid user or group id")]
    InvalidUnixId { field: &'static str, value: u32 },
    #[error("field {field}: time limit of {minutes} minutes exceeds the largest finite limit")]
    TimeLimitTooLarge { field: &'static str, minutes: u32 },
    #[error("field {field}: time limit is neither a number of minutes nor unlimited")]
    EmptyTimeLimit { field: &'static str },
    #[error("field {field}: timestamp {value} is before 1970")]
    NegativeTimestamp { field: &'static str, value: i64 },
}

impl ConvertError {
    /// Every conversion failure is a malformed request from the peer.
    pub const fn error_code(&self) -> ErrorCode {
        ErrorCode::MalformedRequest
    }
}

impl From<ConvertError> for tonic::Status {
    fn from(err: ConvertError) -> Self {
        err.error_code().to_status(err.to_string())
    }
}

/// The uid/gid `(uid_t)-1`, which POSIX reserves to mean "no id".
const NO_UNIX_ID: u32 = u32::MAX;

/// A job id from the wire; 0 is never a job.
pub fn job_id(field: &'static str, raw: u32) -> Result<JobId, ConvertError> {
    if raw == 0 {
        return Err(ConvertError::ZeroJobId { field });
    }
    Ok(JobId::new(raw))
}

/// A step id from the wire. Every value is valid: the top ones name the
/// batch, extern and interactive steps.
pub const fn step_id(raw: u32) -> StepId {
    StepId::new(raw)
}

/// A user id from the wire; `(uid_t)-1` is rejected.
pub fn uid(field: &'static str, raw: u32) -> Result<Uid, ConvertError> {
    if raw == NO_UNIX_ID {
        return Err(ConvertError::InvalidUnixId { field, value: raw });
    }
    Ok(Uid::new(raw))
}

/// A group id from the wire; `(gid_t)-1` is rejected.
pub fn gid(field: &'static str, raw: u32) -> Result<Gid, ConvertError> {
    if raw == NO_UNIX_ID {
        return Err(ConvertError::InvalidUnixId { field, value: raw });
    }
    Ok(Gid::new(raw))
}

/// A generated enum from its wire number, rejecting numbers this build does
/// not know and the `*_UNSPECIFIED` zero value.
pub fn enum_from_wire<E>(field: &'static str, raw: i32) -> Result<E, ConvertError>
where
    E: TryFrom<i32, Error = prost::UnknownEnumValue> + Default + PartialEq,
{
    let value =
        E::try_from(raw).map_err(|_| ConvertError::UnknownEnumValue { field, value: raw })?;
    if value == E::default() {
        return Err(ConvertError::Unspecified { field });
    }
    Ok(value)
}

/// A timestamp from the wire: 0 means unset.
pub fn timestamp(field: &'static str, raw: i64) -> Result<Option<i64>, ConvertError> {
    match raw {
        0 => Ok(None),
        r if r < 0 => Err(ConvertError::NegativeTimestamp { field, value: r }),
        r => Ok(Some(r)),
    }
}

/// A timestamp for the wire: unset becomes 0.
pub fn timestamp_to_wire(value: Option<i64>) -> i64 {
    value.unwrap_or(0)
}

/// An optional time limit field: absent means "not given".
pub fn time_limit(
    field: &'static str,
    raw: Option<&v1::TimeLimit>,
) -> Result<Option<TimeLimit>, ConvertError> {
    raw.map(|limit| time_limit_required(field, limit))
        .transpose()
}

fn time_limit_required(
    field: &'static str,
    raw: &v1::TimeLimit,
) -> Result<TimeLimit, ConvertError> {
    match raw.limit {
        Some(v1::time_limit::Limit::Minutes(minutes)) if minutes > MAX_LIMIT_MINUTES => {
            Err(ConvertError::TimeLimitTooLarge { field, minutes })
        }
        Some(v1::time_limit::Limit::Minutes(minutes)) => Ok(TimeLimit::Minutes(minutes)),
        Some(v1::time_limit::Limit::Unlimited(true)) => Ok(TimeLimit::Infinite),
        Some(v1::time_limit::Limit::Unlimited(false)) | None => {
            Err(ConvertError::EmptyTimeLimit { field })
        }
    }
}

impl TryFrom<&v1::TimeLimit> for TimeLimit {
    type Error = ConvertError;

    fn try_from(raw: &v1::TimeLimit) -> Result<Self, Self::Error> {
        time_limit_required("time_limit", raw)
    }
}

impl From<TimeLimit> for v1::TimeLimit {
    fn from(limit: TimeLimit) -> Self {
        let limit = match limit {
            TimeLimit::Minutes(minutes) => v1::time_limit::Limit::Minutes(minutes),
            TimeLimit::Infinite => v1::time_limit::Limit::Unlimited(true),
        };
        v1::TimeLimit { limit: Some(limit) }
    }
}

// ---------------------------------------------------------------------------
// Job and node states
// ---------------------------------------------------------------------------

/// A job's base state from the wire.
pub fn job_state(field: &'static str, raw: i32) -> Result<JobState, ConvertError> {
    Ok(match enum_from_wire::<v1::JobState>(field, raw)? {
        v1::JobState::Unspecified => return Err(ConvertError::Unspecified { field }),
        v1::JobState::Pending => JobState::Pending,
        v1::JobState::Running => JobState::Running,
        v1::JobState::Suspended => JobState::Suspended,
        v1::JobState::Completed => JobState::Completed,
        v1::JobState::Cancelled => JobState::Cancelled,
        v1::JobState::Failed => JobState::Failed,
        v1::JobState::Timeout => JobState::Timeout,
        v1::JobState::NodeFail => JobState::NodeFail,
        v1::JobState::Preempted => JobState::Preempted,
        v1::JobState::BootFail => JobState::BootFail,
        v1::JobState::Deadline => JobState::Deadline,
        v1::JobState::OutOfMemory => JobState::OutOfMemory,
    })
}

impl From<JobState> for v1::JobState {
    fn from(state: JobState) -> Self {
        match state {
            JobState::Pending => v1::JobState::Pending,
            JobState::Running => v1::JobState::Running,
            JobState::Suspended => v1::JobState::Suspended,
            JobState::Completed => v1::JobState::Completed,
            JobState::Cancelled => v1::JobState::Cancelled,
            JobState::Failed => v1::JobState::Failed,
            JobState::Timeout => v1::JobState::Timeout,
            JobState::NodeFail => v1::JobState::NodeFail,
            JobState::Preempted => v1::JobState::Preempted,
            JobState::BootFail => v1::JobState::BootFail,
            JobState::Deadline => v1::JobState::Deadline,
            JobState::OutOfMemory => v1::JobState::OutOfMemory,
        }
    }
}

/// One job flag from the wire.
pub fn job_flag(field: &'static str, raw: i32) -> Result<JobFlag, ConvertError> {
    Ok(match enum_from_wire::<v1::JobStateFlag>(field, raw)? {
        v1::JobStateFlag::Unspecified => return Err(ConvertError::Unspecified { field }),
        v1::JobStateFlag::Completing => JobFlag::Completing,
        v1::JobStateFlag::Configuring => JobFlag::Configuring,
        v1::JobStateFlag::Requeued => JobFlag::Requeued,
        v1::JobStateFlag::RequeueHold => JobFlag::RequeueHold,
        v1::JobStateFlag::SpecialExit => JobFlag::SpecialExit,
        v1::JobStateFlag::Resizing => JobFlag::Resizing,
        v1::JobStateFlag::StageOut => JobFlag::StageOut,
        v1::JobStateFlag::Stopped => JobFlag::Stopped,
        v1::JobStateFlag::Signaling => JobFlag::Signaling,
        v1::JobStateFlag::Revoked => JobFlag::Revoked,
        v1::JobStateFlag::ResvDelHold => JobFlag::ResvDelHold,
        v1::JobStateFlag::LaunchFailed => JobFlag::LaunchFailed,
    })
}

impl From<JobFlag> for v1::JobStateFlag {
    fn from(flag: JobFlag) -> Self {
        match flag {
            JobFlag::Completing => v1::JobStateFlag::Completing,
            JobFlag::Configuring => v1::JobStateFlag::Configuring,
            JobFlag::Requeued => v1::JobStateFlag::Requeued,
            JobFlag::RequeueHold => v1::JobStateFlag::RequeueHold,
            JobFlag::SpecialExit => v1::JobStateFlag::SpecialExit,
            JobFlag::Resizing => v1::JobStateFlag::Resizing,
            JobFlag::StageOut => v1::JobStateFlag::StageOut,
            JobFlag::Stopped => v1::JobStateFlag::Stopped,
            JobFlag::Signaling => v1::JobStateFlag::Signaling,
            JobFlag::Revoked => v1::JobStateFlag::Revoked,
            JobFlag::ResvDelHold => v1::JobStateFlag::ResvDelHold,
            JobFlag::LaunchFailed => v1::JobStateFlag::LaunchFailed,
        }
    }
}

/// A job's full state from its `state` and `state_flags` wire fields.
/// Repeated flags are harmless.
pub fn job_status(
    state_field: &'static str,
    raw_state: i32,
    flags_field: &'static str,
    raw_flags: &[i32],
) -> Result<JobStatus, ConvertError> {
    let state = job_state(state_field, raw_state)?;
    let flags = raw_flags
        .iter()
        .map(|&raw| job_flag(flags_field, raw))
        .collect::<Result<JobFlags, _>>()?;
    Ok(JobStatus { state, flags })
}

/// The `state_flags` wire field for a set of job flags, in display order.
pub fn job_flags_to_wire(flags: JobFlags) -> Vec<i32> {
    flags
        .iter()
        .map(|f| v1::JobStateFlag::from(f) as i32)
        .collect()
}

/// A node's base state from the wire.
pub fn node_base_state(field: &'static str, raw: i32) -> Result<NodeBaseState, ConvertError> {
    Ok(match enum_from_wire::<v1::NodeState>(field, raw)? {
        v1::NodeState::Unspecified => return Err(ConvertError::Unspecified { field }),
        v1::NodeState::Unknown => NodeBaseState::Unknown,
        v1::NodeState::Down => NodeBaseState::Down,
        v1::NodeState::Idle => NodeBaseState::Idle,
        v1::NodeState::Allocated => NodeBaseState::Allocated,
        v1::NodeState::Mixed => NodeBaseState::Mixed,
        v1::NodeState::Future => NodeBaseState::Future,
        v1::NodeState::Error => NodeBaseState::Error,
    })
}

impl From<NodeBaseState> for v1::NodeState {
    fn from(state: NodeBaseState) -> Self {
        match state {
            NodeBaseState::Unknown => v1::NodeState::Unknown,
            NodeBaseState::Down => v1::NodeState::Down,
            NodeBaseState::Idle => v1::NodeState::Idle,
            NodeBaseState::Allocated => v1::NodeState::Allocated,
            NodeBaseState::Mixed => v1::NodeState::Mixed,
            NodeBaseState::Future => v1::NodeState::Future,
            NodeBaseState::Error => v1::NodeState::Error,
        }
    }
}

/// One node flag from the wire.
pub fn node_flag(field: &'static str, raw: i32) -> Result<NodeFlag, ConvertError> {
    Ok(match enum_from_wire::<v1::NodeStateFlag>(field, raw)? {
        v1::NodeStateFlag::Unspecified => return Err(ConvertError::Unspecified { field }),
        v1::NodeStateFlag::Drain => NodeFlag::Drain,
        v1::NodeStateFlag::Completing => NodeFlag::Completing,
        v1::NodeStateFlag::NotResponding => NodeFlag::NotResponding,
        v1::NodeStateFlag::Fail => NodeFlag::Fail,
        v1::NodeStateFlag::Maint => NodeFlag::Maint,
        v1::NodeStateFlag::Reserved => NodeFlag::Reserved,
        v1::NodeStateFlag::PoweredDown => NodeFlag::PoweredDown,
        v1::NodeStateFlag::PoweringUp => NodeFlag::PoweringUp,
        v1::NodeStateFlag::PoweringDown => NodeFlag::PoweringDown,
        v1::NodeStateFlag::RebootRequested => NodeFlag::RebootRequested,
        v1::NodeStateFlag::RebootIssued => NodeFlag::RebootIssued,
        v1::NodeStateFlag::Cloud => NodeFlag::Cloud,
        v1::NodeStateFlag::InvalidReg => NodeFlag::InvalidReg,
        v1::NodeStateFlag::Planned => NodeFlag::Planned,
        v1::NodeStateFlag::DynamicFuture => NodeFlag::DynamicFuture,
        v1::NodeStateFlag::DynamicNorm => NodeFlag::DynamicNorm,
        v1::NodeStateFlag::PowerDown => NodeFlag::PowerDown,
    })
}

impl From<NodeFlag> for v1::NodeStateFlag {
    fn from(flag: NodeFlag) -> Self {
        match flag {
            NodeFlag::Drain => v1::NodeStateFlag::Drain,
            NodeFlag::Completing => v1::NodeStateFlag::Completing,
            NodeFlag::NotResponding => v1::NodeStateFlag::NotResponding,
            NodeFlag::Fail => v1::NodeStateFlag::Fail,
            NodeFlag::Maint => v1::NodeStateFlag::Maint,
            NodeFlag::Reserved => v1::NodeStateFlag::Reserved,
            NodeFlag::PoweredDown => v1::NodeStateFlag::PoweredDown,
            NodeFlag::PoweringUp => v1::NodeStateFlag::PoweringUp,
            NodeFlag::PoweringDown => v1::NodeStateFlag::PoweringDown,
            NodeFlag::RebootRequested => v1::NodeStateFlag::RebootRequested,
            NodeFlag::RebootIssued => v1::NodeStateFlag::RebootIssued,
            NodeFlag::Cloud => v1::NodeStateFlag::Cloud,
            NodeFlag::InvalidReg => v1::NodeStateFlag::InvalidReg,
            NodeFlag::Planned => v1::NodeStateFlag::Planned,
            NodeFlag::DynamicFuture => v1::NodeStateFlag::DynamicFuture,
            NodeFlag::DynamicNorm => v1::NodeStateFlag::DynamicNorm,
            NodeFlag::PowerDown => v1::NodeStateFlag::PowerDown,
        }
    }
}

/// A node's full state from its `state` and `state_flags` wire fields.
pub fn node_state(
    state_field: &'static str,
    raw_state: i32,
    flags_field: &'static str,
    raw_flags: &[i32],
) -> Result<NodeState, ConvertError> {
    let base = node_base_state(state_field, raw_state)?;
    let flags = raw_flags
        .iter()
        .map(|&raw| node_flag(flags_field, raw))
        .collect::<Result<NodeFlags, _>>()?;
    Ok(NodeState { base, flags })
}

/// The `state_flags` wire field for a set of node flags, in display order.
pub fn node_flags_to_wire(flags: NodeFlags) -> Vec<i32> {
    flags
        .iter()
        .map(|f| v1::NodeStateFlag::from(f) as i32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_id_rejects_zero_only() {
        assert_eq!(
            job_id("job_id", 0),
            Err(ConvertError::ZeroJobId { field: "job_id" })
        );
        assert_eq!(job_id("job_id", 1), Ok(JobId::new(1)));
        assert_eq!(job_id("job_id", u32::MAX), Ok(JobId::new(u32::MAX)));
    }

    #[test]
    fn unix_ids_reject_minus_one() {
        assert_eq!(uid("user_id", 0), Ok(Uid::new(0)));
        assert!(matches!(
            uid("user_id", u32::MAX),
            Err(ConvertError::InvalidUnixId { .. })
        ));
        assert_eq!(gid("group_id", 1000), Ok(Gid::new(1000)));
        assert!(matches!(
            gid("group_id", u32::MAX),
            Err(ConvertError::InvalidUnixId { .. })
        ));
        assert_eq!(step_id(4_294_967_294), StepId::new(4_294_967_294));
    }

    #[test]
    fn enums_reject_unspecified_and_unknown() {
        assert_eq!(
            enum_from_wire::<v1::JobState>("state", v1::JobState::Running as i32),
            Ok(v1::JobState::Running)
        );
        assert_eq!(
            enum_from_wire::<v1::JobState>("state", 0),
            Err(ConvertError::Unspecified { field: "state" })
        );
        assert_eq!(
            enum_from_wire::<v1::NodeState>("state", 9999),
            Err(ConvertError::UnknownEnumValue {
                field: "state",
                value: 9999
            })
        );
        assert_eq!(
            enum_from_wire::<v1::NodeStateFlag>("flags", -1),
            Err(ConvertError::UnknownEnumValue {
                field: "flags",
                value: -1
            })
        );
    }

    #[test]
    fn timestamps_zero_is_unset() {
        assert_eq!(timestamp("t", 0), Ok(None));
        assert_eq!(timestamp("t", 1_700_000_000), Ok(Some(1_700_000_000)));
        assert!(timestamp("t", -5).is_err());
        assert_eq!(timestamp_to_wire(None), 0);
        assert_eq!(timestamp_to_wire(Some(42)), 42);
    }

    #[test]
    fn time_limits_round_trip() {
        for limit in [
            TimeLimit::Minutes(0),
            TimeLimit::Minutes(90),
            TimeLimit::Minutes(MAX_LIMIT_MINUTES),
            TimeLimit::Infinite,
        ] {
            let wire = v1::TimeLimit::from(limit);
            assert_eq!(TimeLimit::try_from(&wire), Ok(limit));
        }
        assert_eq!(time_limit("time_limit", None), Ok(None));
    }

    #[test]
    fn time_limits_reject_bad_wire_values() {
        let too_big = v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(u32::MAX)),
        };
        assert!(matches!(
            time_limit("time_limit", Some(&too_big)),
            Err(ConvertError::TimeLimitTooLarge { .. })
        ));
        let empty = v1::TimeLimit { limit: None };
        assert!(matches!(
            TimeLimit::try_from(&empty),
            Err(ConvertError::EmptyTimeLimit { .. })
        ));
        let not_unlimited = v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Unlimited(false)),
        };
        assert!(matches!(
            TimeLimit::try_from(&not_unlimited),
            Err(ConvertError::EmptyTimeLimit { .. })
        ));
    }

    #[test]
    fn conversion_errors_become_malformed_request_statuses() {
        let status = tonic::Status::from(ConvertError::ZeroJobId { field: "job_id" });
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        let (code, detail) = ErrorCode::from_status(&status);
        assert_eq!(code, ErrorCode::MalformedRequest);
        assert_eq!(detail, "field job_id: 0 is not a valid job id");
    }
    const NODE_BASE_STATES: [NodeBaseState; 7] = [
        NodeBaseState::Unknown,
        NodeBaseState::Down,
        NodeBaseState::Idle,
        NodeBaseState::Allocated,
        NodeBaseState::Mixed,
        NodeBaseState::Future,
        NodeBaseState::Error,
    ];

    #[test]
    fn job_states_round_trip_and_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for state in JobState::ALL {
            let wire = v1::JobState::from(state) as i32;
            assert!(seen.insert(wire), "{state:?} shares a wire number");
            assert_eq!(job_state("state", wire), Ok(state));
        }
        assert_eq!(
            job_state("state", 0),
            Err(ConvertError::Unspecified { field: "state" })
        );
    }

    #[test]
    fn job_flags_round_trip() {
        let all: JobFlags = JobFlag::DISPLAY_ORDER.into_iter().collect();
        let wire = job_flags_to_wire(all);
        assert_eq!(wire.len(), JobFlag::DISPLAY_ORDER.len());
        let status = job_status(
            "state",
            v1::JobState::Cancelled as i32,
            "state_flags",
            &wire,
        );
        assert_eq!(
            status,
            Ok(JobStatus {
                state: JobState::Cancelled,
                flags: all
            })
        );
        let completing = v1::JobStateFlag::Completing as i32;
        let status = job_status(
            "state",
            v1::JobState::Cancelled as i32,
            "state_flags",
            &[completing, completing],
        )
        .expect("valid");
        assert!(status.is_completing());
        assert_eq!(
            job_status("state", 1, "state_flags", &[0]),
            Err(ConvertError::Unspecified {
                field: "state_flags"
            })
        );
    }

    #[test]
    fn node_states_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for base in NODE_BASE_STATES {
            let wire = v1::NodeState::from(base) as i32;
            assert!(seen.insert(wire), "{base:?} shares a wire number");
            assert_eq!(node_base_state("state", wire), Ok(base));
        }
        let all: NodeFlags = NodeFlag::DISPLAY_ORDER.into_iter().collect();
        let wire = node_flags_to_wire(all);
        assert_eq!(wire.len(), NodeFlag::DISPLAY_ORDER.len());
        let state = node_state("state", v1::NodeState::Idle as i32, "state_flags", &wire);
        assert_eq!(
            state,
            Ok(NodeState {
                base: NodeBaseState::Idle,
                flags: all
            })
        );
        assert!(matches!(
            node_state("state", v1::NodeState::Idle as i32, "state_flags", &[99]),
            Err(ConvertError::UnknownEnumValue { value: 99, .. })
        ));
    }
}
