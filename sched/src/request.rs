//! What a pending job asks for, already resolved by the controller.
//!
//! The controller turns the submitted options into a [`JobRequest`] once
//! (partition name to index, node names to indices, `--constraint` parsed,
//! `--ntasks` defaulted), so every pass works on plain numbers.

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason;
use slurm_common::time::TimeLimit;

use crate::constraint::Constraint;

/// A memory request, in MB. Zero means "all the memory of each node", as
/// `--mem=0` does in Slurm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemReq {
    /// `--mem`, `DefMemPerNode`.
    PerNode(u64),
    /// `--mem-per-cpu`, `DefMemPerCPU`.
    PerCpu(u64),
}

/// Who holds a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hold {
    /// `--hold`, or `scontrol hold`/`uhold` by the owner: `JobHeldUser`.
    User,
    /// `scontrol hold` by an operator or administrator: `JobHeldAdmin`.
    Admin,
}

/// Part of a job's `--licenses`: `count` of license `index` (into
/// [`crate::ClusterView::licenses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LicenseNeed {
    pub index: usize,
    pub count: u32,
}

/// One pending job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    pub id: JobId,
    /// Higher runs first (within a partition priority tier).
    pub priority: u32,
    /// Unix seconds; earlier runs first among equal priorities, then lower id.
    pub submit_time: i64,
    /// Index into [`crate::ClusterView::partitions`].
    pub partition: usize,
    /// `-p a,b`: the partitions after the first that the job may also run
    /// in, in the order given. Each is tried in its own place in the queue
    /// (its own `PriorityTier`); the job starts in the first that has room.
    pub other_partitions: Vec<usize>,
    /// `-N min[-max]`. At least the number of `required_nodes`.
    pub min_nodes: u32,
    /// `None` when `-N` gave no maximum: as many nodes as the tasks need.
    pub max_nodes: Option<u32>,
    /// `-n`. The controller fills it in when the user did not (Slurm uses one
    /// task per node, or nodes x `--ntasks-per-node`). A value below the node
    /// count is raised to it: every allocated node runs at least one task.
    pub ntasks: u32,
    /// Whether the user gave the task count (`-n`, `--ntasks-per-node`):
    /// only then does it bound the nodes a node range takes.
    pub ntasks_given: bool,
    /// `--ntasks-per-node`: the most tasks placed on one node.
    pub ntasks_per_node: Option<u32>,
    /// `-c`; 0 is read as 1.
    pub cpus_per_task: u32,
    /// `--mem`/`--mem-per-cpu`; `None` takes the partition or cluster default.
    pub mem: Option<MemReq>,
    /// `--exclusive`: whole nodes, all their CPUs.
    pub exclusive: bool,
    /// `--overcommit`: allocate `-c` CPUs per node however many tasks run.
    pub overcommit: bool,
    /// `--spread-job`: on as many nodes as it may have (up to its maximum
    /// node count and one task each), not as few as will do.
    pub spread: bool,
    /// The job's user, and `--exclusive=user`: its nodes may hold no other
    /// user's jobs.
    pub uid: u32,
    pub exclusive_user: bool,
    /// `-w`: every one of these nodes must be in the allocation.
    pub required_nodes: Vec<usize>,
    /// `-x`: none of these may be.
    pub excluded_nodes: Vec<usize>,
    /// `-C`; every allocated node must satisfy it.
    pub constraint: Option<Constraint>,
    /// `--prefer`: tried with the constraint first; when the job cannot
    /// start that way, it starts without.
    pub prefer: Option<Constraint>,
    /// `--batch`: what the first node (the batch host) must have.
    pub batch_features: Option<Constraint>,
    /// `-t`; `None` takes the partition's DefaultTime, else its MaxTime.
    pub time_limit: Option<TimeLimit>,
    /// `--begin`, Unix seconds.
    pub begin_time: Option<i64>,
    pub hold: Option<Hold>,
    /// `--tmp`, MB of TmpDisk each node must have; 0 for none.
    pub tmp_disk_mb: u64,
    /// `--mincpus`: a node must have at least this many CPUs (0: no such
    /// floor).
    pub min_cpus_per_node: u32,
    /// `-B S:C:T`: the sockets per node, cores per socket and threads per
    /// core a node must have; 0 for any.
    pub layout: [u32; 3],
    /// `--licenses`: held from start to end, cluster-wide. A job that
    /// cannot have them all now waits with `Licenses` and blocks nobody.
    pub licenses: Vec<LicenseNeed>,
    /// `--deadline`, Unix seconds: a start shortens the time limit so
    /// that the job ends by then, as Slurm does. (Ending a job that can no
    /// longer make it is the controller's business.)
    pub deadline: Option<i64>,
    /// The job can no longer end by its `--deadline` (the controller
    /// judges that, from its `--time-min` or time limit). As Slurm, the
    /// plan looks at that only for a job that got past every gate (hold,
    /// dependency, begin time, partition limits) and could run on its
    /// partition emptied: such a job is not started and is given
    /// `DeadLine`, for the controller to end it; any other keeps waiting
    /// with its own reason.
    pub deadline_missed: bool,
    /// A reason decided outside the scheduler that keeps the job out of this
    /// pass (`Dependency`, `DependencyNeverSatisfied`, QOS or association
    /// limits, `JobArrayTaskLimit`, ...). The plan reports it unchanged and the
    /// job blocks nobody.
    pub blocked_by: Option<PendingReason>,
    /// The reason the job was left with by the previous pass; `None` for a
    /// job no pass has looked at yet. Slurm keeps some reasons from pass to
    /// pass (a job behind a blocked partition that waits with
    /// `ReqNodeNotAvail` keeps it, and its text, rather than turning to
    /// `Priority`), so the plan depends on it.
    pub prior_reason: Option<PendingReason>,
}

impl JobRequest {
    /// One task on one node with one CPU in `partition`, submitted at time 0
    /// with priority 1: what a bare `sbatch script` asks for.
    pub fn new(id: JobId, partition: usize) -> JobRequest {
        JobRequest {
            id,
            priority: 1,
            submit_time: 0,
            partition,
            other_partitions: Vec::new(),
            min_nodes: 1,
            max_nodes: None,
            ntasks: 1,
            ntasks_given: false,
            ntasks_per_node: None,
            cpus_per_task: 1,
            mem: None,
            exclusive: false,
            overcommit: false,
            spread: false,
            uid: 0,
            exclusive_user: false,
            required_nodes: Vec::new(),
            excluded_nodes: Vec::new(),
            constraint: None,
            prefer: None,
            batch_features: None,
            time_limit: None,
            begin_time: None,
            hold: None,
            tmp_disk_mb: 0,
            min_cpus_per_node: 0,
            layout: [0; 3],
            licenses: Vec::new(),
            deadline: None,
            deadline_missed: false,
            blocked_by: None,
            prior_reason: None,
        }
    }
}
