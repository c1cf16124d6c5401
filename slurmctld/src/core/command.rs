//! What goes into the core (commands) and what comes out (events, actions,
//! a reply). Effects are data: the shell journals the events, then sends the
//! reply and performs the actions.

use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::event::Event;
use super::node::NodeLoadReport;
use crate::persist::{JobFiles, ScriptRef};

/// Who asks, as proven by the credential (never by the request body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
}

impl Caller {
    pub const ROOT: Caller = Caller { uid: 0, gid: 0 };
}

/// `scancel -s`: a signal and which processes of the job get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignalRequest {
    pub signal: u32,
    pub scope: SignalScope,
}

/// Whom `scancel -s` reaches, as in Slurm: by default the job's steps but
/// not its batch shell; `-b` the batch shell alone (not its children);
/// `-f` the batch shell, its children and every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalScope {
    Steps,
    BatchShell,
    Full,
}

impl SignalRequest {
    /// From the flags of a SignalJob request (with both, `-f` wins, as in
    /// Slurm's scancel).
    pub fn new(signal: u32, batch_only: bool, full: bool) -> Self {
        let scope = if full {
            SignalScope::Full
        } else if batch_only {
            SignalScope::BatchShell
        } else {
            SignalScope::Steps
        };
        SignalRequest { signal, scope }
    }
}

/// One request for the controller, from an RPC, the agent or a timer.
#[derive(Debug, Clone)]
pub enum Command {
    Submit {
        caller: Caller,
        desc: Box<v1::JobDescription>,
    },
    /// scancel: without `signal` cancel; with it only signal.
    Cancel {
        caller: Caller,
        filter: v1::JobFilter,
        signal: Option<SignalRequest>,
    },
    Hold {
        caller: Caller,
        filter: v1::JobFilter,
        user_hold: bool,
    },
    Release {
        caller: Caller,
        filter: v1::JobFilter,
    },
    Requeue {
        caller: Caller,
        filter: v1::JobFilter,
        hold: bool,
    },
    /// scontrol suspend, or with `resume` scontrol resume
    /// (`core::suspend`).
    Suspend {
        caller: Caller,
        filter: v1::JobFilter,
        resume: bool,
    },
    /// scontrol top: the jobs named, in the filter's order, first among
    /// their owner's pending jobs (`core::suspend`).
    Top {
        caller: Caller,
        filter: v1::JobFilter,
    },
    UpdateJob {
        caller: Caller,
        request: Box<v1::UpdateJobRequest>,
    },
    UpdateNode {
        caller: Caller,
        request: v1::UpdateNodeRequest,
    },
    UpdatePartition {
        caller: Caller,
        request: v1::UpdatePartitionRequest,
    },
    CreatePartition {
        caller: Caller,
        request: v1::CreatePartitionRequest,
    },
    DeletePartition {
        caller: Caller,
        request: v1::DeletePartitionRequest,
    },
    RegisterNode {
        caller: Caller,
        request: Box<v1::RegisterNodeRequest>,
    },
    JobComplete {
        caller: Caller,
        request: v1::JobCompleteRequest,
    },
    /// A node finished with a job it was told to end (its processes are
    /// gone, its epilog ran): the node's share of the job is free.
    EpilogComplete {
        caller: Caller,
        request: v1::EpilogCompleteRequest,
    },
    /// scontrol reconfigure: slurm.conf as the shell re-read and parsed it.
    Reconfigure {
        caller: Caller,
        conf: Box<slurm_common::conf::SlurmConf>,
    },
    /// A node's Prolog for a job ended (PrologComplete): a failure is
    /// handled as [`Command::PrologFailed`]; a success changes nothing.
    PrologComplete {
        caller: Caller,
        request: v1::PrologCompleteRequest,
    },
    /// The agent could not launch the batch script (from the agent).
    /// `detail` is for the log only.
    LaunchFailed { job_id: u32, detail: String },
    /// The Prolog failed on `node` (from the agent, for a slurmd that
    /// refuses the launch with ESLURMD_PROLOG_FAILED; today's slurmd
    /// answers first and sends PrologComplete): the node is drained
    /// ("Prolog error") and the job goes back to the queue, whatever its
    /// --requeue setting: held, unless SchedulerParameters has
    /// nohold_on_prolog_fail. `detail` is for the log only.
    PrologFailed {
        job_id: u32,
        node: String,
        detail: String,
    },
    /// Time limits, stuck cleanups and MinJobAge purge (from the timer).
    Tick,
    /// Who answered a message sent to nodes (a ping round, a registration
    /// request, a terminate) and who did not, by controller node index
    /// (from the ping task and the agent). Drives node liveness:
    /// NOT_RESPONDING, DOWN after SlurmdTimeout of silence.
    NodeResponses {
        answered: Vec<usize>,
        silent: Vec<usize>,
    },
    /// The jobs nodes reported in answer to a ping (from the ping task):
    /// the core compares them with its own view (`core::liveness`). Only
    /// nodes that answered with a complete list are in `reports`; a node
    /// that did not answer is not judged by it.
    NodeJobs {
        /// When the ping went out, unix seconds: every list is at least
        /// this recent, so a job started later may simply not be in it.
        asked_at: i64,
        reports: Vec<NodeJobReport>,
    },
    /// The load and free memory nodes measured, from their answers to a
    /// ping (from the ping task). Figures of the moment, kept in memory and
    /// never journaled (`core::node`).
    NodeLoads { reports: Vec<NodeLoadReport> },
}

/// The jobs one node has, as it reported them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeJobReport {
    /// Controller node index.
    pub node: usize,
    /// Jobs running there and jobs whose launch is in progress.
    pub job_ids: Vec<u32>,
}

/// The answer to a command.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Internal commands answer nobody.
    None,
    Ok,
    Submitted {
        job_id: u32,
        estimate: Option<v1::StartEstimate>,
    },
    /// One result per selected job.
    JobResults(Vec<v1::JobActionResult>),
    Registered {
        abort_job_ids: Vec<u32>,
        /// Why the node's report falls short of slurm.conf, when it does:
        /// the node was marked INVALID_REG (and drained).
        invalid: Option<String>,
    },
    Error {
        code: ErrorCode,
        /// Extra line for the user (e.g. "invalid partition specified: x");
        /// empty when Slurm prints only the code's text.
        detail: String,
    },
}

impl Reply {
    pub fn error(code: ErrorCode, detail: impl Into<String>) -> Reply {
        Reply::Error {
            code,
            detail: detail.into(),
        }
    }
}

/// Something the shell must do after the events are durable.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Start the batch script on the job's first node (node index). The
    /// request's script and environment are empty: the agent reads them
    /// from the job's files, checked against `files`.
    LaunchBatch {
        job_id: u32,
        node: usize,
        request: Box<v1::LaunchBatchRequest>,
        files: ScriptRef,
    },
    /// Run the Prolog for a job just started on every node it has
    /// (PrologFlags=Alloc); each node reports with PrologComplete.
    LaunchProlog {
        job_id: u32,
        nodes: Vec<usize>,
        request: v1::LaunchPrologRequest,
    },
    /// Kill the job on every node it has.
    TerminateJob {
        job_id: u32,
        nodes: Vec<usize>,
        request: v1::NodeTerminateJobRequest,
    },
    /// Deliver a signal to the job on every node it has.
    SignalJob {
        job_id: u32,
        nodes: Vec<usize>,
        request: v1::NodeSignalJobRequest,
    },
    /// Tell these nodes' slurmd to re-read slurm.conf and register again
    /// (after `scontrol reconfigure`).
    ReconfigureNodes { nodes: Vec<usize> },
}

/// Everything one command produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub events: Vec<Event>,
    pub actions: Vec<Action>,
    pub reply: Reply,
    /// Scripts and environments of submitted jobs: the shell makes them
    /// durable before the events that refer to them.
    pub job_files: Vec<JobFiles>,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome {
            events: Vec::new(),
            actions: Vec::new(),
            reply: Reply::None,
            job_files: Vec::new(),
        }
    }
}
