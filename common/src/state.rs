//! Job and node states: the words users see and the transitions the
//! controller may make.
//!
//! Slurm keeps a *base* state plus a set of *flags* for both jobs and nodes
//! (a cancelled job that is still running its epilog is `CANCELLED` with the
//! `COMPLETING` flag; a drained idle node is `IDLE` with `DRAIN`). We keep the
//! same split because every output format derives its word from both, and the
//! wire (`slurm.v1.JobState`/`JobStateFlag`, `NodeState`/`NodeStateFlag`)
//! carries them the same way. The word a command prints is then a pure
//! function of the pair:
//!
//! * jobs: [`JobStatus::code`] gives the [`JobStateCode`] that `squeue` shows
//!   (`CG` while completing, otherwise the flag or the base state);
//! * nodes: [`NodeState::display_long`] is `scontrol show node`'s `State=`
//!   (`IDLE+DRAIN`, `DOWN+NOT_RESPONDING`), [`NodeState::sinfo_long`] and
//!   [`NodeState::sinfo_short`] are sinfo's `%T` and `%t` (`drained`,
//!   `drng`, `down*`, `idle~`).
//!
//! # Job state machine
//!
//! Every allowed change of base state is listed once, in
//! [`JOB_TRANSITIONS`]; [`transition`] checks a pair against it and
//! [`JobStatus::apply`] also maintains the flags.
//!
//! ```text
//!                       submit
//!                         |
//!                         v
//!   requeue       +---------------+   cancel / launch failure / deadline
//!  +------------> |    PENDING    | --------------------------------------+
//!  |              +---------------+                                       |
//!  |                      | start                                         |
//!  |                      v                                               |
//!  |   requeue    +---------------+  suspend  +-----------+               |
//!  +------------- |    RUNNING    | --------> | SUSPENDED |               |
//!  |              |               | <-------- |           |               |
//!  |              +---------------+  resume   +-----------+               |
//!  |                      | ends (COMPLETING    | cancel, node failure,   |
//!  |                      |  until epilogs end) | preemption, failure     |
//!  |                      v                     v                         v
//!  |   COMPLETED CANCELLED FAILED TIMEOUT NODE_FAIL PREEMPTED BOOT_FAIL
//!  |   DEADLINE OUT_OF_MEMORY                                  (finished)
//!  |                      |
//!  +----------------------+  scontrol requeue of a finished batch job
//! ```
//!
//! A job leaving RUNNING or SUSPENDED keeps the `COMPLETING` flag until the
//! controller calls [`JobStatus::completing_done`]; no other change is
//! accepted meanwhile, which is how Slurm refuses to requeue or cancel a job
//! twice while its nodes are still cleaning up.
//!
//! # Node words
//!
//! `scontrol` (Slurm 21.08 and later, so 22.05) prints the base state and then
//! every flag as `+NAME` in a fixed order, with no symbols: a node that stopped
//! answering is `DOWN+NOT_RESPONDING`, not `DOWN*`. `sinfo` prints one word,
//! lower case, chosen from the flags with the most telling first (drain over
//! fail over the base state), followed by at most one suffix:
//! `$` maintenance, `^` reboot issued, `@` reboot requested, `#` powering up,
//! `%` powering down, `~` powered down, `!` power down pending,
//! `*` not responding (checked in that order), `+` completing (allocated
//! only), `-` planned by backfill (mixed only).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

// ---------------------------------------------------------------------------
// Jobs
// ---------------------------------------------------------------------------

/// Base state of a job (Slurm's `JOB_STATE_BASE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    Pending,
    Running,
    Suspended,
    Completed,
    Cancelled,
    Failed,
    Timeout,
    NodeFail,
    Preempted,
    BootFail,
    Deadline,
    OutOfMemory,
}

impl JobState {
    /// Every base state, in Slurm's numeric order.
    pub const ALL: [JobState; 12] = [
        JobState::Pending,
        JobState::Running,
        JobState::Suspended,
        JobState::Completed,
        JobState::Cancelled,
        JobState::Failed,
        JobState::Timeout,
        JobState::NodeFail,
        JobState::Preempted,
        JobState::BootFail,
        JobState::Deadline,
        JobState::OutOfMemory,
    ];

    /// The word `squeue -o %T`, `scontrol show job` and `sacct` print.
    pub const fn long_name(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Suspended => "SUSPENDED",
            JobState::Completed => "COMPLETED",
            JobState::Cancelled => "CANCELLED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Preempted => "PREEMPTED",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
        }
    }

    /// The code of squeue's default `ST` column.
    pub const fn short_code(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Suspended => "S",
            JobState::Completed => "CD",
            JobState::Cancelled => "CA",
            JobState::Failed => "F",
            JobState::Timeout => "TO",
            JobState::NodeFail => "NF",
            JobState::Preempted => "PR",
            JobState::BootFail => "BF",
            JobState::Deadline => "DL",
            JobState::OutOfMemory => "OOM",
        }
    }

    /// True once the job has ended for good (until a requeue): every state but
    /// PENDING, RUNNING and SUSPENDED.
    pub const fn is_finished(self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Suspended
        )
    }

    /// True while the job holds an allocation (RUNNING or SUSPENDED).
    pub const fn holds_resources(self) -> bool {
        matches!(self, JobState::Running | JobState::Suspended)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.long_name())
    }
}

/// A state name that is neither a known long name nor a known short code.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid job state specified: {input:?}")]
pub struct ParseJobStateError {
    pub input: String,
}

impl FromStr for JobState {
    type Err = ParseJobStateError;

    /// Accepts the long name or the short code, in any case (`running`,
    /// `R`, `node_fail`, `nf`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        JobState::ALL
            .into_iter()
            .find(|st| {
                t.eq_ignore_ascii_case(st.long_name()) || t.eq_ignore_ascii_case(st.short_code())
            })
            .ok_or_else(|| ParseJobStateError {
                input: s.to_string(),
            })
    }
}

/// One flag Slurm keeps on top of a job's base state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobFlag {
    /// Resources are being released: epilogs still run on some nodes.
    Completing,
    /// Nodes are booting or the prolog runs; the job does not execute yet.
    Configuring,
    /// Being requeued; returns to PENDING once completing ends.
    Requeued,
    /// Requeued and held (`scontrol requeuehold`).
    RequeueHold,
    /// Requeued with a special exit status.
    SpecialExit,
    /// The allocation is changing size.
    Resizing,
    /// Burst-buffer stage-out after the job ended.
    StageOut,
    /// Stopped with SIGSTOP; resources stay allocated.
    Stopped,
    /// Being sent a signal.
    Signaling,
    /// A federation sibling started first; this copy was revoked.
    Revoked,
    /// Held because its reservation was deleted.
    ResvDelHold,
    /// The launch on the batch host failed; about to be requeued or failed.
    LaunchFailed,
}

impl JobFlag {
    /// Every flag, in the order Slurm consults them to pick the one word a
    /// job in several flagged conditions shows.
    pub const DISPLAY_ORDER: [JobFlag; 12] = [
        JobFlag::Completing,
        JobFlag::StageOut,
        JobFlag::Configuring,
        JobFlag::Resizing,
        JobFlag::Requeued,
        JobFlag::RequeueHold,
        JobFlag::SpecialExit,
        JobFlag::Stopped,
        JobFlag::Revoked,
        JobFlag::ResvDelHold,
        JobFlag::Signaling,
        JobFlag::LaunchFailed,
    ];

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// The state word shown for a job carrying this flag, or `None` for a
    /// flag that never replaces the base word.
    pub const fn code(self) -> Option<JobStateCode> {
        match self {
            JobFlag::Completing => Some(JobStateCode::Completing),
            JobFlag::StageOut => Some(JobStateCode::StageOut),
            JobFlag::Configuring => Some(JobStateCode::Configuring),
            JobFlag::Resizing => Some(JobStateCode::Resizing),
            JobFlag::Requeued => Some(JobStateCode::Requeued),
            JobFlag::RequeueHold => Some(JobStateCode::RequeueHold),
            JobFlag::SpecialExit => Some(JobStateCode::SpecialExit),
            JobFlag::Stopped => Some(JobStateCode::Stopped),
            JobFlag::Revoked => Some(JobStateCode::Revoked),
            JobFlag::ResvDelHold => Some(JobStateCode::ResvDelHold),
            JobFlag::Signaling => Some(JobStateCode::Signaling),
            JobFlag::LaunchFailed => None,
        }
    }
}

/// A set of [`JobFlag`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct JobFlags(u16);

impl JobFlags {
    pub const EMPTY: JobFlags = JobFlags(0);

    pub const fn contains(self, flag: JobFlag) -> bool {
        self.0 & flag.bit() != 0
    }

    #[must_use]
    pub const fn with(self, flag: JobFlag) -> JobFlags {
        JobFlags(self.0 | flag.bit())
    }

    #[must_use]
    pub const fn without(self, flag: JobFlag) -> JobFlags {
        JobFlags(self.0 & !flag.bit())
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The flags present, in [`JobFlag::DISPLAY_ORDER`].
    pub fn iter(self) -> impl Iterator<Item = JobFlag> {
        JobFlag::DISPLAY_ORDER
            .into_iter()
            .filter(move |f| self.contains(*f))
    }
}

impl FromIterator<JobFlag> for JobFlags {
    fn from_iter<I: IntoIterator<Item = JobFlag>>(iter: I) -> Self {
        iter.into_iter().fold(JobFlags::EMPTY, JobFlags::with)
    }
}

/// The one state word a job shows: its base state, or the flag that takes
/// precedence over it. `squeue -t` filters on these, and accepts each in its
/// long or short form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobStateCode {
    Base(JobState),
    Completing,
    Configuring,
    Requeued,
    RequeueHold,
    SpecialExit,
    Resizing,
    StageOut,
    Stopped,
    Signaling,
    Revoked,
    ResvDelHold,
}

impl JobStateCode {
    /// Every code, base states first.
    pub const ALL: [JobStateCode; 23] = [
        JobStateCode::Base(JobState::Pending),
        JobStateCode::Base(JobState::Running),
        JobStateCode::Base(JobState::Suspended),
        JobStateCode::Base(JobState::Completed),
        JobStateCode::Base(JobState::Cancelled),
        JobStateCode::Base(JobState::Failed),
        JobStateCode::Base(JobState::Timeout),
        JobStateCode::Base(JobState::NodeFail),
        JobStateCode::Base(JobState::Preempted),
        JobStateCode::Base(JobState::BootFail),
        JobStateCode::Base(JobState::Deadline),
        JobStateCode::Base(JobState::OutOfMemory),
        JobStateCode::Completing,
        JobStateCode::Configuring,
        JobStateCode::Requeued,
        JobStateCode::RequeueHold,
        JobStateCode::SpecialExit,
        JobStateCode::Resizing,
        JobStateCode::StageOut,
        JobStateCode::Stopped,
        JobStateCode::Signaling,
        JobStateCode::Revoked,
        JobStateCode::ResvDelHold,
    ];

    pub const fn long_name(self) -> &'static str {
        match self {
            JobStateCode::Base(s) => s.long_name(),
            JobStateCode::Completing => "COMPLETING",
            JobStateCode::Configuring => "CONFIGURING",
            JobStateCode::Requeued => "REQUEUED",
            JobStateCode::RequeueHold => "REQUEUE_HOLD",
            JobStateCode::SpecialExit => "SPECIAL_EXIT",
            JobStateCode::Resizing => "RESIZING",
            JobStateCode::StageOut => "STAGE_OUT",
            JobStateCode::Stopped => "STOPPED",
            JobStateCode::Signaling => "SIGNALING",
            JobStateCode::Revoked => "REVOKED",
            JobStateCode::ResvDelHold => "RESV_DEL_HOLD",
        }
    }

    pub const fn short_code(self) -> &'static str {
        match self {
            JobStateCode::Base(s) => s.short_code(),
            JobStateCode::Completing => "CG",
            JobStateCode::Configuring => "CF",
            JobStateCode::Requeued => "RQ",
            JobStateCode::RequeueHold => "RH",
            JobStateCode::SpecialExit => "SE",
            JobStateCode::Resizing => "RS",
            JobStateCode::StageOut => "SO",
            JobStateCode::Stopped => "ST",
            JobStateCode::Signaling => "SI",
            JobStateCode::Revoked => "RV",
            JobStateCode::ResvDelHold => "RD",
        }
    }

    /// Whether a job in `status` is shown with this code (what `squeue -t`
    /// matches on).
    pub fn matches(self, status: JobStatus) -> bool {
        status.code() == self
    }
}

impl fmt::Display for JobStateCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.long_name())
    }
}

impl FromStr for JobStateCode {
    type Err = ParseJobStateError;

    /// Long or short form, any case: `PD`, `pending`, `CG`, `completing`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        JobStateCode::ALL
            .into_iter()
            .find(|c| {
                t.eq_ignore_ascii_case(c.long_name()) || t.eq_ignore_ascii_case(c.short_code())
            })
            .ok_or_else(|| ParseJobStateError {
                input: s.to_string(),
            })
    }
}

/// Every allowed change of base state, `(from, to)`. Anything else is an
/// [`IllegalTransition`]. See the diagram in the module docs.
pub const JOB_TRANSITIONS: &[(JobState, JobState)] = &[
    // A queued job starts, is cancelled, cannot be launched at all, or misses
    // its --deadline before it could start.
    (JobState::Pending, JobState::Running),
    (JobState::Pending, JobState::Cancelled),
    (JobState::Pending, JobState::Failed),
    (JobState::Pending, JobState::Deadline),
    // A running job is suspended, requeued, or ends in any of the ways Slurm
    // records.
    (JobState::Running, JobState::Suspended),
    (JobState::Running, JobState::Pending),
    (JobState::Running, JobState::Completed),
    (JobState::Running, JobState::Cancelled),
    (JobState::Running, JobState::Failed),
    (JobState::Running, JobState::Timeout),
    (JobState::Running, JobState::NodeFail),
    (JobState::Running, JobState::Preempted),
    (JobState::Running, JobState::BootFail),
    (JobState::Running, JobState::Deadline),
    (JobState::Running, JobState::OutOfMemory),
    // A suspended job resumes, is requeued, or is ended from outside (its time
    // does not run while suspended, so no TIMEOUT).
    (JobState::Suspended, JobState::Running),
    (JobState::Suspended, JobState::Pending),
    (JobState::Suspended, JobState::Cancelled),
    (JobState::Suspended, JobState::Failed),
    (JobState::Suspended, JobState::NodeFail),
    (JobState::Suspended, JobState::Preempted),
    // scontrol requeue of a finished batch job.
    (JobState::Completed, JobState::Pending),
    (JobState::Cancelled, JobState::Pending),
    (JobState::Failed, JobState::Pending),
    (JobState::Timeout, JobState::Pending),
    (JobState::NodeFail, JobState::Pending),
    (JobState::Preempted, JobState::Pending),
    (JobState::BootFail, JobState::Pending),
    (JobState::Deadline, JobState::Pending),
    (JobState::OutOfMemory, JobState::Pending),
];

/// A change of job state that the state machine does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum IllegalTransition {
    #[error("job state cannot change from {from} to {to}")]
    NotAllowed { from: JobState, to: JobState },
    #[error("job is still completing; state cannot change from {from} to {to}")]
    StillCompleting { from: JobState, to: JobState },
}

/// Checks one change of base state against [`JOB_TRANSITIONS`].
pub fn transition(from: JobState, to: JobState) -> Result<(), IllegalTransition> {
    if JOB_TRANSITIONS.contains(&(from, to)) {
        Ok(())
    } else {
        Err(IllegalTransition::NotAllowed { from, to })
    }
}

/// A job's full state: base state plus flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobStatus {
    pub state: JobState,
    pub flags: JobFlags,
}

impl JobStatus {
    pub const fn new(state: JobState) -> JobStatus {
        JobStatus {
            state,
            flags: JobFlags::EMPTY,
        }
    }

    /// A freshly submitted job.
    pub const fn pending() -> JobStatus {
        JobStatus::new(JobState::Pending)
    }

    pub const fn is_completing(self) -> bool {
        self.flags.contains(JobFlag::Completing)
    }

    /// The word shown for this job: the first flag in display order that has
    /// a word of its own, else the base state.
    pub fn code(self) -> JobStateCode {
        self.flags
            .iter()
            .find_map(JobFlag::code)
            .unwrap_or(JobStateCode::Base(self.state))
    }

    /// Moves to base state `to`, keeping the flags consistent:
    ///
    /// * leaving RUNNING or SUSPENDED sets `COMPLETING` (the nodes must still
    ///   run epilogs), and going back to PENDING from there also sets
    ///   `REQUEUED`; `CONFIGURING`, `STOPPED` and `SIGNALING` end with the run;
    /// * nothing but [`JobStatus::completing_done`] is accepted while
    ///   `COMPLETING` is set.
    pub fn apply(self, to: JobState) -> Result<JobStatus, IllegalTransition> {
        let from = self.state;
        if self.is_completing() {
            return Err(IllegalTransition::StillCompleting { from, to });
        }
        transition(from, to)?;
        let mut flags = self.flags;
        if from.holds_resources() && !to.holds_resources() {
            flags = flags
                .with(JobFlag::Completing)
                .without(JobFlag::Configuring)
                .without(JobFlag::Stopped)
                .without(JobFlag::Signaling);
            if to == JobState::Pending {
                flags = flags.with(JobFlag::Requeued);
            }
        }
        if to == JobState::Running {
            flags = flags.without(JobFlag::LaunchFailed);
        }
        Ok(JobStatus { state: to, flags })
    }

    /// The epilogs have finished everywhere: clears `COMPLETING` (and
    /// `REQUEUED`, whose job is done once the job is back in the queue).
    #[must_use]
    pub const fn completing_done(self) -> JobStatus {
        JobStatus {
            state: self.state,
            flags: self
                .flags
                .without(JobFlag::Completing)
                .without(JobFlag::Requeued),
        }
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code().long_name())
    }
}

// ---------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------

/// Base state of a node (Slurm's `NODE_STATE_BASE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeBaseState {
    /// Not heard from since the controller started.
    Unknown,
    Down,
    Idle,
    Allocated,
    Mixed,
    Future,
    /// Reported by a plugin; Slurm 22.05 itself never sets it.
    Error,
}

impl NodeBaseState {
    /// The word `scontrol show node` starts `State=` with.
    pub const fn name(self) -> &'static str {
        match self {
            NodeBaseState::Unknown => "UNKNOWN",
            NodeBaseState::Down => "DOWN",
            NodeBaseState::Idle => "IDLE",
            NodeBaseState::Allocated => "ALLOCATED",
            NodeBaseState::Mixed => "MIXED",
            NodeBaseState::Future => "FUTURE",
            NodeBaseState::Error => "ERROR",
        }
    }

    /// IDLE, MIXED or ALLOCATED from how many of `total` CPUs are allocated.
    pub const fn from_alloc(alloc_cpus: u32, total_cpus: u32) -> NodeBaseState {
        if alloc_cpus == 0 {
            NodeBaseState::Idle
        } else if alloc_cpus >= total_cpus {
            NodeBaseState::Allocated
        } else {
            NodeBaseState::Mixed
        }
    }
}

/// One flag Slurm keeps on top of a node's base state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeFlag {
    Cloud,
    Completing,
    Drain,
    DynamicFuture,
    DynamicNorm,
    InvalidReg,
    Fail,
    Maint,
    /// Power down requested, not started yet (sinfo `!`).
    PowerDown,
    PoweredDown,
    RebootRequested,
    RebootIssued,
    Reserved,
    NotResponding,
    Planned,
    PoweringUp,
    PoweringDown,
}

impl NodeFlag {
    /// Every flag, in the order `scontrol show node` lists them.
    pub const DISPLAY_ORDER: [NodeFlag; 17] = [
        NodeFlag::Cloud,
        NodeFlag::Completing,
        NodeFlag::Drain,
        NodeFlag::DynamicFuture,
        NodeFlag::DynamicNorm,
        NodeFlag::InvalidReg,
        NodeFlag::Fail,
        NodeFlag::Maint,
        NodeFlag::PowerDown,
        NodeFlag::PoweredDown,
        NodeFlag::RebootRequested,
        NodeFlag::RebootIssued,
        NodeFlag::Reserved,
        NodeFlag::NotResponding,
        NodeFlag::Planned,
        NodeFlag::PoweringUp,
        NodeFlag::PoweringDown,
    ];

    const fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// The name after `+` in scontrol's `State=`, and in the REST API's
    /// `state_flags`.
    pub const fn name(self) -> &'static str {
        match self {
            NodeFlag::Cloud => "CLOUD",
            NodeFlag::Completing => "COMPLETING",
            NodeFlag::Drain => "DRAIN",
            NodeFlag::DynamicFuture => "DYNAMIC_FUTURE",
            NodeFlag::DynamicNorm => "DYNAMIC_NORM",
            NodeFlag::InvalidReg => "INVALID_REG",
            NodeFlag::Fail => "FAIL",
            NodeFlag::Maint => "MAINTENANCE",
            NodeFlag::PowerDown => "POWER_DOWN",
            NodeFlag::PoweredDown => "POWERED_DOWN",
            NodeFlag::RebootRequested => "REBOOT_REQUESTED",
            NodeFlag::RebootIssued => "REBOOT_ISSUED",
            NodeFlag::Reserved => "RESERVED",
            NodeFlag::NotResponding => "NOT_RESPONDING",
            NodeFlag::Planned => "PLANNED",
            NodeFlag::PoweringUp => "POWERING_UP",
            NodeFlag::PoweringDown => "POWERING_DOWN",
        }
    }
}

/// A set of [`NodeFlag`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeFlags(u32);

impl NodeFlags {
    pub const EMPTY: NodeFlags = NodeFlags(0);

    pub const fn contains(self, flag: NodeFlag) -> bool {
        self.0 & flag.bit() != 0
    }

    #[must_use]
    pub const fn with(self, flag: NodeFlag) -> NodeFlags {
        NodeFlags(self.0 | flag.bit())
    }

    #[must_use]
    pub const fn without(self, flag: NodeFlag) -> NodeFlags {
        NodeFlags(self.0 & !flag.bit())
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The flags present, in [`NodeFlag::DISPLAY_ORDER`].
    pub fn iter(self) -> impl Iterator<Item = NodeFlag> {
        NodeFlag::DISPLAY_ORDER
            .into_iter()
            .filter(move |f| self.contains(*f))
    }
}

impl FromIterator<NodeFlag> for NodeFlags {
    fn from_iter<I: IntoIterator<Item = NodeFlag>>(iter: I) -> Self {
        iter.into_iter().fold(NodeFlags::EMPTY, NodeFlags::with)
    }
}

/// A node's full state: base state plus flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeState {
    pub base: NodeBaseState,
    pub flags: NodeFlags,
}

/// The two spellings of each sinfo word: `(long, compact)`.
type Word = (&'static str, &'static str);

impl NodeState {
    pub const fn new(base: NodeBaseState) -> NodeState {
        NodeState {
            base,
            flags: NodeFlags::EMPTY,
        }
    }

    #[must_use]
    pub const fn with(self, flag: NodeFlag) -> NodeState {
        NodeState {
            base: self.base,
            flags: self.flags.with(flag),
        }
    }

    #[must_use]
    pub const fn without(self, flag: NodeFlag) -> NodeState {
        NodeState {
            base: self.base,
            flags: self.flags.without(flag),
        }
    }

    pub const fn has(self, flag: NodeFlag) -> bool {
        self.flags.contains(flag)
    }

    /// Whether the scheduler may start new work here: registered and up
    /// (IDLE, MIXED or ALLOCATED), answering, and not drained, failing, being
    /// rebooted, powered down or badly registered.
    pub const fn is_schedulable(self) -> bool {
        matches!(
            self.base,
            NodeBaseState::Idle | NodeBaseState::Mixed | NodeBaseState::Allocated
        ) && !self.has(NodeFlag::Drain)
            && !self.has(NodeFlag::Fail)
            && !self.has(NodeFlag::NotResponding)
            && !self.has(NodeFlag::InvalidReg)
            && !self.has(NodeFlag::RebootRequested)
            && !self.has(NodeFlag::RebootIssued)
            && !self.has(NodeFlag::PowerDown)
            && !self.has(NodeFlag::PoweredDown)
            && !self.has(NodeFlag::PoweringDown)
    }

    /// `State=` as `scontrol show node` prints it: the base word and then
    /// `+FLAG` for every flag (`IDLE+DRAIN`, `DOWN+DRAIN+NOT_RESPONDING`).
    pub fn display_long(self) -> String {
        let mut out = String::from(self.base.name());
        for flag in self.flags.iter() {
            out.push('+');
            out.push_str(flag.name());
        }
        out
    }

    /// sinfo's `%T` / `-l` word (`idle`, `allocated`, `draining`, `down*`).
    pub fn sinfo_long(self) -> String {
        self.sinfo_word().0
    }

    /// sinfo's default `%t` word (`idle`, `alloc`, `drng`, `down*`).
    pub fn sinfo_short(self) -> String {
        self.sinfo_word().1
    }

    /// The first suffix that applies, in sinfo's order of precedence.
    fn suffix(self) -> Option<char> {
        const LADDER: [(NodeFlag, char); 8] = [
            (NodeFlag::Maint, '$'),
            (NodeFlag::RebootIssued, '^'),
            (NodeFlag::RebootRequested, '@'),
            (NodeFlag::PoweringUp, '#'),
            (NodeFlag::PoweringDown, '%'),
            (NodeFlag::PoweredDown, '~'),
            (NodeFlag::PowerDown, '!'),
            (NodeFlag::NotResponding, '*'),
        ];
        LADDER
            .into_iter()
            .find(|(flag, _)| self.has(*flag))
            .map(|(_, c)| c)
    }

    /// The sinfo word in both spellings, lower case, suffix included.
    fn sinfo_word(self) -> (String, String) {
        let (word, suffix) = self.sinfo_parts();
        let mut long = word.0.to_ascii_lowercase();
        let mut short = word.1.to_ascii_lowercase();
        if let Some(c) = suffix {
            long.push(c);
            short.push(c);
        }
        (long, short)
    }

    /// Picks the word (most telling condition first) and its suffix.
    fn sinfo_parts(self) -> (Word, Option<char>) {
        let busy = matches!(self.base, NodeBaseState::Allocated | NodeBaseState::Mixed);
        let no_resp = self.has(NodeFlag::NotResponding).then_some('*');
        if self.has(NodeFlag::InvalidReg) {
            return (("INVAL", "INVAL"), None);
        }
        if self.has(NodeFlag::Maint)
            && !self.has(NodeFlag::Drain)
            && !busy
            && self.base != NodeBaseState::Down
        {
            return (("MAINT", "MAINT"), no_resp);
        }
        let reboot_issued = self.has(NodeFlag::RebootIssued);
        if (reboot_issued || self.has(NodeFlag::RebootRequested)) && !busy {
            if reboot_issued {
                return (("REBOOT", "BOOT"), Some('^'));
            }
            return (("REBOOT", "BOOT"), no_resp);
        }
        if self.has(NodeFlag::Drain) {
            if self.has(NodeFlag::Completing) || busy {
                return (("DRAINING", "DRNG"), self.suffix());
            }
            return (("DRAINED", "DRAIN"), self.suffix());
        }
        if self.has(NodeFlag::Fail) {
            if self.has(NodeFlag::Completing) || self.base == NodeBaseState::Allocated {
                return (("FAILING", "FAILG"), no_resp);
            }
            return (("FAIL", "FAIL"), no_resp);
        }
        // A node known only through one power or cloud flag shows that flag.
        if self.base == NodeBaseState::Unknown {
            let mut flags = self.flags.iter();
            if let (Some(only), None) = (flags.next(), flags.next()) {
                let word = match only {
                    NodeFlag::RebootIssued => Some(("REBOOT_ISSUED", "BOOT^")),
                    NodeFlag::Cloud => Some(("CLOUD", "CLOUD")),
                    NodeFlag::PowerDown => Some(("POWER_DOWN", "POW_DN")),
                    NodeFlag::PoweringDown => Some(("POWERING_DOWN", "POWRING_DN")),
                    NodeFlag::PoweredDown => Some(("POWERED_DOWN", "POWERED_DN")),
                    NodeFlag::PoweringUp => Some(("POWERING_UP", "POWERING_UP")),
                    _ => None,
                };
                if let Some(w) = word {
                    return (w, None);
                }
            }
        }
        match self.base {
            NodeBaseState::Down => (("DOWN", "DOWN"), self.suffix()),
            NodeBaseState::Allocated => {
                let suffix = self
                    .suffix()
                    .or(self.has(NodeFlag::Completing).then_some('+'));
                (("ALLOCATED", "ALLOC"), suffix)
            }
            _ if self.has(NodeFlag::Completing) => (("COMPLETING", "COMP"), self.suffix()),
            NodeBaseState::Idle => match self.suffix() {
                Some(c) => (("IDLE", "IDLE"), Some(c)),
                None if self.has(NodeFlag::Reserved) => (("RESERVED", "RESV"), None),
                None if self.has(NodeFlag::Planned) => (("PLANNED", "PLND"), None),
                None => (("IDLE", "IDLE"), None),
            },
            NodeBaseState::Mixed => {
                let suffix = self.suffix().or(self.has(NodeFlag::Planned).then_some('-'));
                (("MIXED", "MIX"), suffix)
            }
            NodeBaseState::Future => (("FUTURE", "FUTR"), self.suffix()),
            NodeBaseState::Unknown => (("UNKNOWN", "UNK"), no_resp),
            NodeBaseState::Error => (("ERROR", "ERR"), no_resp),
        }
    }

    /// Applies an administrator's `scontrol update NodeName=... State=`.
    ///
    /// Only the state itself changes here; the controller recomputes IDLE,
    /// MIXED or ALLOCATED from the allocations afterwards (see
    /// [`NodeBaseState::from_alloc`]) and kills jobs on a node set DOWN.
    pub fn apply_update(self, update: NodeUpdateState) -> Result<NodeState, NodeUpdateError> {
        let s = self;
        Ok(match update {
            NodeUpdateState::Drain => s.with(NodeFlag::Drain),
            NodeUpdateState::Fail => s.with(NodeFlag::Fail),
            // FAIL is a kind of drain: UNDRAIN clears it too, as in Slurm.
            NodeUpdateState::Undrain => s.without(NodeFlag::Drain).without(NodeFlag::Fail),
            NodeUpdateState::Down => NodeState {
                base: NodeBaseState::Down,
                flags: s.flags,
            },
            // A FUTURE node comes into the cluster, not responding until
            // its slurmd registers, as in Slurm.
            NodeUpdateState::Resume if s.base == NodeBaseState::Future => NodeState {
                base: NodeBaseState::Idle,
                flags: s.flags,
            }
            .with(NodeFlag::NotResponding),
            NodeUpdateState::Resume => {
                let resumable = s.has(NodeFlag::Drain)
                    || s.has(NodeFlag::Fail)
                    || matches!(s.base, NodeBaseState::Down | NodeBaseState::Unknown);
                if !resumable {
                    return Err(NodeUpdateError::NotResumable {
                        state: s.display_long(),
                    });
                }
                let base = match s.base {
                    NodeBaseState::Down | NodeBaseState::Unknown => NodeBaseState::Idle,
                    other => other,
                };
                NodeState {
                    base,
                    flags: s.flags,
                }
                .without(NodeFlag::Drain)
                .without(NodeFlag::Fail)
            }
            NodeUpdateState::Idle => NodeState {
                base: NodeBaseState::Idle,
                flags: s.flags,
            }
            .without(NodeFlag::NotResponding),
            NodeUpdateState::Future => NodeState {
                base: NodeBaseState::Future,
                flags: s.flags,
            },
            NodeUpdateState::NoResp => s.with(NodeFlag::NotResponding),
            NodeUpdateState::PowerDown => s.with(NodeFlag::PowerDown),
            NodeUpdateState::PowerUp => s
                .without(NodeFlag::PowerDown)
                .without(NodeFlag::PoweredDown)
                .with(NodeFlag::PoweringUp),
            NodeUpdateState::CancelReboot => {
                if !s.has(NodeFlag::RebootRequested) {
                    return Err(NodeUpdateError::NoRebootPending {
                        state: s.display_long(),
                    });
                }
                s.without(NodeFlag::RebootRequested)
            }
        })
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_long())
    }
}

/// A state change an administrator asks for with
/// `scontrol update NodeName=... State=VALUE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeUpdateState {
    /// Finish running jobs, start no new ones (needs a reason).
    Drain,
    /// Undo DRAIN/FAIL and return a DOWN node to service.
    Resume,
    /// Clear DRAIN only, leaving a DOWN node down.
    Undrain,
    /// Down now, killing its jobs (needs a reason).
    Down,
    /// Mark failing (needs a reason).
    Fail,
    /// Idle, as after a registration.
    Idle,
    PowerDown,
    PowerUp,
    CancelReboot,
    Future,
    /// Flag NOT_RESPONDING, until the node next answers.
    NoResp,
}

impl NodeUpdateState {
    /// Every value; append only (the journal keeps the index).
    pub const ALL: [NodeUpdateState; 11] = [
        NodeUpdateState::Drain,
        NodeUpdateState::Resume,
        NodeUpdateState::Undrain,
        NodeUpdateState::Down,
        NodeUpdateState::Fail,
        NodeUpdateState::Idle,
        NodeUpdateState::PowerDown,
        NodeUpdateState::PowerUp,
        NodeUpdateState::CancelReboot,
        NodeUpdateState::Future,
        NodeUpdateState::NoResp,
    ];

    /// The value as scontrol's documentation spells it.
    pub const fn name(self) -> &'static str {
        match self {
            NodeUpdateState::Drain => "DRAIN",
            NodeUpdateState::Resume => "RESUME",
            NodeUpdateState::Undrain => "UNDRAIN",
            NodeUpdateState::Down => "DOWN",
            NodeUpdateState::Fail => "FAIL",
            NodeUpdateState::Idle => "IDLE",
            NodeUpdateState::PowerDown => "POWER_DOWN",
            NodeUpdateState::PowerUp => "POWER_UP",
            NodeUpdateState::CancelReboot => "CANCEL_REBOOT",
            NodeUpdateState::Future => "FUTURE",
            NodeUpdateState::NoResp => "NoResp",
        }
    }

    /// Whether Slurm insists on a `Reason=` with this change.
    pub const fn needs_reason(self) -> bool {
        matches!(
            self,
            NodeUpdateState::Drain | NodeUpdateState::Down | NodeUpdateState::Fail
        )
    }
}

impl fmt::Display for NodeUpdateState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors from reading or applying a node state change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NodeUpdateError {
    #[error("invalid node state specified: {input:?}")]
    Invalid { input: String },
    #[error("node in state {state} is not down, drained or failing and cannot be resumed")]
    NotResumable { state: String },
    #[error("node in state {state} has no reboot pending to cancel")]
    NoRebootPending { state: String },
}

impl FromStr for NodeUpdateState {
    type Err = NodeUpdateError;

    /// Any case: `drain`, `RESUME`, `Power_Down`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        NodeUpdateState::ALL
            .into_iter()
            .find(|u| t.eq_ignore_ascii_case(u.name()))
            .ok_or_else(|| NodeUpdateError::Invalid {
                input: s.to_string(),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // ---- jobs -------------------------------------------------------------

    #[test]
    fn job_state_names_match_slurm() {
        let expected = [
            ("PENDING", "PD"),
            ("RUNNING", "R"),
            ("SUSPENDED", "S"),
            ("COMPLETED", "CD"),
            ("CANCELLED", "CA"),
            ("FAILED", "F"),
            ("TIMEOUT", "TO"),
            ("NODE_FAIL", "NF"),
            ("PREEMPTED", "PR"),
            ("BOOT_FAIL", "BF"),
            ("DEADLINE", "DL"),
            ("OUT_OF_MEMORY", "OOM"),
        ];
        for (st, (long, short)) in JobState::ALL.iter().zip(expected) {
            assert_eq!(st.long_name(), long);
            assert_eq!(st.short_code(), short);
            assert_eq!(st.to_string(), long);
        }
    }

    #[test]
    fn job_state_parses_long_and_short_in_any_case() {
        assert_eq!("PD".parse::<JobState>(), Ok(JobState::Pending));
        assert_eq!("pending".parse::<JobState>(), Ok(JobState::Pending));
        assert_eq!("r".parse::<JobState>(), Ok(JobState::Running));
        assert_eq!("Node_Fail".parse::<JobState>(), Ok(JobState::NodeFail));
        assert_eq!("oom".parse::<JobState>(), Ok(JobState::OutOfMemory));
        assert_eq!(" CD ".parse::<JobState>(), Ok(JobState::Completed));
        for bad in ["", "CG", "RUN", "PENDINGX", "ПД", "\u{0}"] {
            assert!(bad.parse::<JobState>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn job_state_code_parses_flags_too() {
        assert_eq!("CG".parse::<JobStateCode>(), Ok(JobStateCode::Completing));
        assert_eq!(
            "completing".parse::<JobStateCode>(),
            Ok(JobStateCode::Completing)
        );
        assert_eq!("rq".parse::<JobStateCode>(), Ok(JobStateCode::Requeued));
        assert_eq!(
            "PD".parse::<JobStateCode>(),
            Ok(JobStateCode::Base(JobState::Pending))
        );
        assert!("XX".parse::<JobStateCode>().is_err());
    }

    #[test]
    fn codes_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in JobStateCode::ALL {
            assert!(seen.insert(c.long_name()), "{c:?}");
            assert!(seen.insert(c.short_code()), "{c:?}");
        }
    }

    #[test]
    fn finished_states() {
        let active = [JobState::Pending, JobState::Running, JobState::Suspended];
        for st in JobState::ALL {
            assert_eq!(st.is_finished(), !active.contains(&st), "{st}");
        }
    }

    #[test]
    fn transition_table_is_checked() {
        assert!(transition(JobState::Pending, JobState::Running).is_ok());
        assert!(transition(JobState::Running, JobState::Timeout).is_ok());
        assert_eq!(
            transition(JobState::Pending, JobState::Timeout),
            Err(IllegalTransition::NotAllowed {
                from: JobState::Pending,
                to: JobState::Timeout
            })
        );
        assert!(transition(JobState::Completed, JobState::Running).is_err());
        assert!(transition(JobState::Suspended, JobState::Timeout).is_err());
        // No self loops: a no-op is a bug in the caller.
        for st in JobState::ALL {
            assert!(transition(st, st).is_err(), "{st}");
        }
        // Finished jobs only ever go back to the queue.
        for &(from, to) in JOB_TRANSITIONS {
            if from.is_finished() {
                assert_eq!(to, JobState::Pending);
            }
        }
    }

    #[test]
    fn ending_a_running_job_sets_completing_until_done() {
        let running = JobStatus::pending().apply(JobState::Running).unwrap();
        assert_eq!(running.code().short_code(), "R");
        let cancelled = running.apply(JobState::Cancelled).unwrap();
        assert_eq!(cancelled.state, JobState::Cancelled);
        assert_eq!(cancelled.code(), JobStateCode::Completing);
        assert_eq!(cancelled.code().short_code(), "CG");
        assert_eq!(
            cancelled.apply(JobState::Pending),
            Err(IllegalTransition::StillCompleting {
                from: JobState::Cancelled,
                to: JobState::Pending
            })
        );
        let done = cancelled.completing_done();
        assert_eq!(done.code().short_code(), "CA");
        assert!(done.flags.is_empty());
    }

    #[test]
    fn cancelling_a_pending_job_does_not_complete() {
        let st = JobStatus::pending().apply(JobState::Cancelled).unwrap();
        assert!(!st.is_completing());
        assert_eq!(st.to_string(), "CANCELLED");
    }

    #[test]
    fn requeue_of_running_job_goes_through_completing() {
        let running = JobStatus::new(JobState::Running).with_flag(JobFlag::Configuring);
        let requeued = running.apply(JobState::Pending).unwrap();
        assert!(requeued.flags.contains(JobFlag::Requeued));
        assert!(!requeued.flags.contains(JobFlag::Configuring));
        assert_eq!(requeued.code(), JobStateCode::Completing);
        let back = requeued.completing_done();
        assert_eq!(back, JobStatus::pending());
    }

    impl JobStatus {
        fn with_flag(self, f: JobFlag) -> JobStatus {
            JobStatus {
                state: self.state,
                flags: self.flags.with(f),
            }
        }
    }

    #[test]
    fn flag_precedence_follows_slurm() {
        let st = JobStatus::new(JobState::Running)
            .with_flag(JobFlag::Configuring)
            .with_flag(JobFlag::Completing);
        assert_eq!(st.code(), JobStateCode::Completing);
        let st = JobStatus::new(JobState::Running).with_flag(JobFlag::Configuring);
        assert_eq!(st.code().short_code(), "CF");
        let st = JobStatus::new(JobState::Running).with_flag(JobFlag::LaunchFailed);
        assert_eq!(st.code().short_code(), "R");
        assert!(JobStateCode::Base(JobState::Running).matches(st));
    }

    fn any_job_state() -> impl Strategy<Value = JobState> {
        proptest::sample::select(JobState::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn job_state_round_trips(st in any_job_state()) {
            prop_assert_eq!(st.long_name().parse::<JobState>(), Ok(st));
            prop_assert_eq!(st.short_code().to_lowercase().parse::<JobState>(), Ok(st));
        }

        #[test]
        fn job_state_parse_never_panics(s in ".*") {
            let _ = s.parse::<JobState>();
            let _ = s.parse::<JobStateCode>();
        }

        #[test]
        fn apply_agrees_with_table(from in any_job_state(), to in any_job_state()) {
            let r = JobStatus::new(from).apply(to);
            prop_assert_eq!(r.is_ok(), transition(from, to).is_ok());
            if let Ok(next) = r {
                prop_assert_eq!(next.state, to);
                prop_assert_eq!(next.is_completing(), from.holds_resources() && !to.holds_resources());
            }
        }
    }

    // ---- nodes ------------------------------------------------------------

    fn node(base: NodeBaseState, flags: &[NodeFlag]) -> NodeState {
        NodeState {
            base,
            flags: flags.iter().copied().collect(),
        }
    }

    use NodeBaseState as B;
    use NodeFlag as F;

    #[test]
    fn scontrol_words_from_goldens() {
        // scontrol_show_node.out / scontrol_show_node_n1_alloc.out
        assert_eq!(node(B::Idle, &[]).display_long(), "IDLE");
        assert_eq!(node(B::Allocated, &[]).display_long(), "ALLOCATED");
        assert_eq!(node(B::Mixed, &[]).display_long(), "MIXED");
    }

    #[test]
    fn scontrol_lists_flags_in_slurm_order() {
        assert_eq!(node(B::Idle, &[F::Drain]).display_long(), "IDLE+DRAIN");
        assert_eq!(node(B::Down, &[F::Drain]).display_long(), "DOWN+DRAIN");
        assert_eq!(
            node(B::Down, &[F::NotResponding]).display_long(),
            "DOWN+NOT_RESPONDING"
        );
        assert_eq!(
            node(B::Idle, &[F::NotResponding, F::Drain]).display_long(),
            "IDLE+DRAIN+NOT_RESPONDING"
        );
        assert_eq!(
            node(B::Down, &[F::NotResponding, F::PoweredDown, F::Cloud]).display_long(),
            "DOWN+CLOUD+POWERED_DOWN+NOT_RESPONDING"
        );
        assert_eq!(
            node(B::Mixed, &[F::PoweringUp, F::NotResponding, F::Cloud]).display_long(),
            "MIXED+CLOUD+NOT_RESPONDING+POWERING_UP"
        );
        assert_eq!(
            node(B::Mixed, &[F::Reserved, F::Drain]).display_long(),
            "MIXED+DRAIN+RESERVED"
        );
    }

    #[test]
    fn sinfo_words_from_goldens() {
        // sinfo.out, sinfo_busy.out, sinfo_N_l_busy.out
        let cases = [
            (node(B::Idle, &[]), "idle", "idle"),
            (node(B::Allocated, &[]), "allocated", "alloc"),
            (node(B::Mixed, &[]), "mixed", "mix"),
        ];
        for (st, long, short) in cases {
            assert_eq!(st.sinfo_long(), long);
            assert_eq!(st.sinfo_short(), short);
        }
    }

    #[test]
    fn sinfo_drain_words() {
        let cases = [
            (node(B::Idle, &[F::Drain]), "drained", "drain"),
            (node(B::Allocated, &[F::Drain]), "draining", "drng"),
            (node(B::Mixed, &[F::Drain]), "draining", "drng"),
            (
                node(B::Idle, &[F::Drain, F::Completing]),
                "draining",
                "drng",
            ),
            (node(B::Down, &[F::Drain]), "drained", "drain"),
            (
                node(B::Down, &[F::Drain, F::NotResponding]),
                "drained*",
                "drain*",
            ),
            (node(B::Idle, &[F::Drain, F::Maint]), "drained$", "drain$"),
        ];
        for (st, long, short) in cases {
            assert_eq!(
                (st.sinfo_long().as_str(), st.sinfo_short().as_str()),
                (long, short),
                "{st}"
            );
        }
    }

    #[test]
    fn sinfo_suffixes() {
        let cases = [
            (node(B::Down, &[F::NotResponding]), "down*", "down*"),
            (node(B::Idle, &[F::NotResponding]), "idle*", "idle*"),
            (node(B::Idle, &[F::PoweredDown]), "idle~", "idle~"),
            (node(B::Idle, &[F::PoweringUp]), "idle#", "idle#"),
            (node(B::Idle, &[F::PoweringDown]), "idle%", "idle%"),
            (node(B::Idle, &[F::PowerDown]), "idle!", "idle!"),
            (node(B::Mixed, &[F::RebootRequested]), "mixed@", "mix@"),
            (
                node(B::Allocated, &[F::RebootIssued]),
                "allocated^",
                "alloc^",
            ),
            (node(B::Allocated, &[F::Completing]), "allocated+", "alloc+"),
            (node(B::Mixed, &[F::Planned]), "mixed-", "mix-"),
            (node(B::Idle, &[F::Planned]), "planned", "plnd"),
            (node(B::Idle, &[F::Reserved]), "reserved", "resv"),
            (node(B::Idle, &[F::Completing]), "completing", "comp"),
            (node(B::Unknown, &[]), "unknown", "unk"),
            (node(B::Unknown, &[F::NotResponding]), "unknown*", "unk*"),
            (node(B::Future, &[]), "future", "futr"),
            (node(B::Idle, &[F::Fail]), "fail", "fail"),
            (node(B::Allocated, &[F::Fail]), "failing", "failg"),
            (node(B::Idle, &[F::Maint]), "maint", "maint"),
            (node(B::Idle, &[F::RebootRequested]), "reboot", "boot"),
            (node(B::Idle, &[F::RebootIssued]), "reboot^", "boot^"),
            (node(B::Idle, &[F::InvalidReg, F::Drain]), "inval", "inval"),
            (node(B::Unknown, &[F::Cloud]), "cloud", "cloud"),
            (
                node(B::Unknown, &[F::PoweredDown]),
                "powered_down",
                "powered_dn",
            ),
        ];
        for (st, long, short) in cases {
            assert_eq!(
                (st.sinfo_long().as_str(), st.sinfo_short().as_str()),
                (long, short),
                "{st}"
            );
        }
    }

    #[test]
    fn schedulable_nodes() {
        assert!(node(B::Idle, &[]).is_schedulable());
        assert!(node(B::Mixed, &[F::Completing]).is_schedulable());
        assert!(!node(B::Idle, &[F::Drain]).is_schedulable());
        assert!(!node(B::Down, &[]).is_schedulable());
        assert!(!node(B::Idle, &[F::NotResponding]).is_schedulable());
        assert!(!node(B::Unknown, &[]).is_schedulable());
        assert!(!node(B::Future, &[]).is_schedulable());
    }

    #[test]
    fn base_from_alloc() {
        assert_eq!(NodeBaseState::from_alloc(0, 2), B::Idle);
        assert_eq!(NodeBaseState::from_alloc(1, 2), B::Mixed);
        assert_eq!(NodeBaseState::from_alloc(2, 2), B::Allocated);
        assert_eq!(NodeBaseState::from_alloc(0, 0), B::Idle);
    }

    #[test]
    fn update_values_parse() {
        assert_eq!("drain".parse(), Ok(NodeUpdateState::Drain));
        assert_eq!("RESUME".parse(), Ok(NodeUpdateState::Resume));
        assert_eq!("UnDrain".parse(), Ok(NodeUpdateState::Undrain));
        assert_eq!("power_down".parse(), Ok(NodeUpdateState::PowerDown));
        assert_eq!(
            "bogus".parse::<NodeUpdateState>(),
            Err(NodeUpdateError::Invalid {
                input: "bogus".into()
            })
        );
        assert!("".parse::<NodeUpdateState>().is_err());
        assert!(NodeUpdateState::Drain.needs_reason());
        assert!(!NodeUpdateState::Resume.needs_reason());
    }

    #[test]
    fn drain_then_resume() {
        let idle = node(B::Idle, &[]);
        let drained = idle.apply_update(NodeUpdateState::Drain).unwrap();
        assert_eq!(drained.display_long(), "IDLE+DRAIN");
        assert!(!drained.is_schedulable());
        let back = drained.apply_update(NodeUpdateState::Resume).unwrap();
        assert_eq!(back, idle);
    }

    #[test]
    fn resume_brings_down_node_back_but_undrain_does_not() {
        let down = node(B::Down, &[F::Drain]);
        assert_eq!(
            down.apply_update(NodeUpdateState::Undrain).unwrap(),
            node(B::Down, &[])
        );
        assert_eq!(
            down.apply_update(NodeUpdateState::Resume).unwrap(),
            node(B::Idle, &[])
        );
    }

    #[test]
    fn resume_of_healthy_node_is_rejected() {
        let err = node(B::Idle, &[])
            .apply_update(NodeUpdateState::Resume)
            .unwrap_err();
        assert_eq!(
            err,
            NodeUpdateError::NotResumable {
                state: "IDLE".into()
            }
        );
    }

    #[test]
    fn cancel_reboot_needs_a_reboot() {
        assert!(node(B::Idle, &[])
            .apply_update(NodeUpdateState::CancelReboot)
            .is_err());
        assert_eq!(
            node(B::Idle, &[F::RebootRequested])
                .apply_update(NodeUpdateState::CancelReboot)
                .unwrap(),
            node(B::Idle, &[])
        );
    }

    fn any_node_state() -> impl Strategy<Value = NodeState> {
        let base = proptest::sample::select(vec![
            B::Unknown,
            B::Down,
            B::Idle,
            B::Allocated,
            B::Mixed,
            B::Future,
            B::Error,
        ]);
        let flags = proptest::sample::subsequence(NodeFlag::DISPLAY_ORDER.to_vec(), 0..=4);
        (base, flags).prop_map(|(base, flags)| NodeState {
            base,
            flags: flags.into_iter().collect(),
        })
    }

    proptest! {
        #[test]
        fn node_words_are_well_formed(st in any_node_state()) {
            let long = st.sinfo_long();
            let short = st.sinfo_short();
            prop_assert!(!long.is_empty() && !short.is_empty());
            prop_assert!(short.len() <= long.len() || long == "inval");
            prop_assert_eq!(long.to_lowercase(), long.clone());
            // At most one suffix character, always last.
            let sym = |s: &str| s.chars().filter(|c| "$^@#%~!*+-".contains(*c)).count();
            prop_assert!(sym(&long) <= 1 && sym(&short) <= 1);
            prop_assert_eq!(long.chars().last().filter(|c| "$^@#%~!*+-".contains(*c)),
                            short.chars().last().filter(|c| "$^@#%~!*+-".contains(*c)));
            let full = st.display_long();
            prop_assert!(full.starts_with(st.base.name()));
            prop_assert_eq!(full.matches('+').count(), st.flags.iter().count());
        }

        #[test]
        fn drained_nodes_never_schedulable(st in any_node_state()) {
            if st.has(NodeFlag::Drain) || st.has(NodeFlag::NotResponding) {
                prop_assert!(!st.is_schedulable());
            }
        }

        #[test]
        fn undrain_only_touches_drain_and_fail(st in any_node_state()) {
            let after = st.apply_update(NodeUpdateState::Undrain).unwrap();
            prop_assert_eq!(after.base, st.base);
            prop_assert_eq!(
                after.flags,
                st.flags.without(NodeFlag::Drain).without(NodeFlag::Fail)
            );
        }

        #[test]
        fn no_resp_only_flags_not_responding(st in any_node_state()) {
            let after = st.apply_update(NodeUpdateState::NoResp).unwrap();
            prop_assert_eq!(after.base, st.base);
            prop_assert!(after.has(NodeFlag::NotResponding));
        }
    }
}
