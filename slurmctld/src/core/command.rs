//! What goes into the core (commands) and what comes out (events, actions,
//! a reply). Effects are data: the shell journals the events, then sends the
//! reply and performs the actions.

use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::event::Event;
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
        signal: Option<u32>,
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
    UpdateJob {
        caller: Caller,
        request: Box<v1::UpdateJobRequest>,
    },
    UpdateNode {
        caller: Caller,
        request: v1::UpdateNodeRequest,
    },
    RegisterNode {
        caller: Caller,
        request: Box<v1::RegisterNodeRequest>,
    },
    JobComplete {
        caller: Caller,
        request: v1::JobCompleteRequest,
    },
    /// The agent could not launch the batch script (from the agent).
    LaunchFailed { job_id: u32, detail: String },
    /// Time limits, stuck cleanups and MinJobAge purge (from the timer).
    Tick,
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
