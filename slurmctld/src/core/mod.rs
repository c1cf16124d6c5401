//! The deterministic heart of the controller.
//!
//! [`Controller`] owns every job, node and partition. Two entry points change
//! it, and only [`Controller::apply`] writes:
//!
//! * [`Controller::handle`] validates a [`Command`] against the current
//!   state and produces an [`Outcome`]: the events to journal (already
//!   applied), the actions for the shell, and the reply;
//! * [`Controller::apply`] performs one [`Event`]; replaying the journal
//!   calls it alone and rebuilds the same state.
//!
//! Scheduling ([`Controller::schedule`]) is a command-like pass the shell runs
//! after each batch that changed something: it builds a `slurm_sched`
//! view, asks for a plan and commits the starts as `JobStarted` events. The
//! pending reasons it records are derived data and are not journaled; the
//! first pass after a restart recomputes them.
//!
//! No clock is read here: `now` comes from the caller and travels in events.

pub mod array;
mod codec;
pub mod command;
mod deadline;
pub mod depend;
mod epilog;
pub mod estimate;
pub mod event;
pub mod extras;
pub mod filter;
pub mod gres;
mod handle;
pub mod job;
pub mod licenses;
mod liveness;
mod node;
pub mod node_attrs;
mod partition;
mod prolog;
pub mod reconfig;
pub mod signal;
pub mod snapshot;
pub mod suspend;
mod table;

#[cfg(test)]
pub(crate) mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use slurm_common::conf::{NodeConfState, ReturnToService, SlurmConf};
use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason;
use slurm_common::state::{JobFlag, JobState, JobStatus, NodeBaseState, NodeFlag, NodeState};
use slurm_common::time::TimeLimit;
use slurm_sched::{ClusterView, MemReq, NodeAlloc, NodeView, SchedConfig};
use thiserror::Error;

use crate::persist::ScriptSpace;

pub use command::{
    Action, Caller, Command, NodeJobReport, Outcome, Reply, SignalRequest, SignalScope,
};
pub use event::{AllocRecord, Event, JobChange, SpecText};
pub use job::{Job, JobShape, JobSpec, SharedSpec, SpecCache};
pub use liveness::{
    missing_job_grace_secs, ping_targets, recheck_due, PingTargets, NOT_RESPONDING_REASON,
};
pub use node::{NodeBoot, NodeLoad, NodeLoadReport, NodeRec, PartRec};
pub use table::JobTable;

/// Priority of the first job under priority/basic; each later submission
/// gets one less (Slurm shows 4294901759 for job 1).
pub const TOP_PRIORITY: u32 = 0xFFFF_0000 - 1;

/// Settings the core needs, resolved from slurm.conf by the shell.
#[derive(Debug, Clone)]
pub struct CtlConfig {
    pub cluster_name: String,
    pub first_job_id: u32,
    pub max_job_id: u32,
    /// MaxJobCount: jobs the controller holds at most, each array task
    /// counting as one whether or not it has a record of its own yet
    /// (`array::counted`); a submission that would go beyond it gets EAGAIN.
    pub max_job_count: u32,
    pub min_job_age_secs: i64,
    pub kill_wait_secs: u32,
    /// OverTimeLimit: how long a job may run past its time limit before it
    /// is ended (a partition's own wins).
    pub over_time_limit: TimeLimit,
    /// SelectTypeParameters=CR_LLN: every partition places jobs on the
    /// least loaded nodes.
    pub lln: bool,
    /// JobRequeue: the default of `--requeue`.
    pub job_requeue: bool,
    /// Root, SlurmUser (and the controller's own uid): operators.
    pub operators: Vec<u32>,
    pub sched: SchedConfig,
    /// A job whose nodes never confirm cleanup is released after this.
    pub completing_timeout_secs: i64,
    /// How long a requeued job waits before it may start again: AuthInfo's
    /// `cred_expire` (default 120 s) plus one second, as in Slurm, whose
    /// new launch credential must be later than the old one's revocation.
    pub requeue_delay_secs: i64,
    /// SlurmdTimeout: a node silent this long is set DOWN (0: never).
    pub slurmd_timeout_secs: i64,
    /// A job started less than this long ago is never taken as missing
    /// from its batch host: its launch may still be on its way
    /// (max(2 * MessageTimeout, 10 s); see `core::liveness`).
    pub missing_job_grace_secs: i64,
    /// ReturnToService: which DOWN nodes come back when they register.
    pub return_to_service: ReturnToService,
    /// Recorded as the author of the states the controller sets itself
    /// (`Reason=Not responding [slurm@...]`). From a numeric SlurmUser or
    /// root; the shell sets the looked-up uid of a named one.
    pub slurm_user_uid: u32,
    /// SlurmdParameters=config_overrides: the figures of slurm.conf stand
    /// whatever a node reports, so a registration is never found short
    /// (see [`NodeRec::short_of_config`]).
    pub config_overrides: bool,
    /// SlurmctldParameters=node_reg_mem_percent: how much of its configured
    /// RealMemory a node must report, in percent; `None` takes Slurm's
    /// default (100, 90 for CLOUD nodes).
    pub node_reg_mem_percent: Option<f64>,
    /// SchedulerParameters=nohold_on_prolog_fail: a job whose Prolog failed
    /// is requeued without the admin hold, free to start on another node.
    /// (PrologFlags=NoHold is another thing: an allocation that does not
    /// wait for the Prolog.)
    pub nohold_on_prolog_fail: bool,
    /// PrologFlags=Alloc (or Contain, X11, which imply it): every node of a
    /// job runs the Prolog when the job starts ([`Action::LaunchProlog`]),
    /// not only the batch host at the launch.
    pub prolog_alloc: bool,
    /// GresTypes: the GRES names jobs may ask for (with those on node lines).
    pub gres_types: Vec<String>,
    /// The hash of the slurm.conf read ([`slurm_common::conf::conf_hash`]),
    /// compared with each registering node's; empty when unknown.
    pub conf_hash: String,
    /// Whether a node whose slurm.conf hash differs is reported (not with
    /// DebugFlags=NO_CONF_HASH). See `core::node`.
    pub check_conf_hash: bool,
    /// Licenses=: the cluster's licenses (`core::licenses`).
    pub licenses: Arc<[slurm_common::conf::License]>,
    /// kill_invalid_depend (SchedulerParameters or DependencyParameters):
    /// a job whose dependency can never hold is cancelled (`core::depend`).
    pub kill_invalid_depend: bool,
    /// MaxArraySize: array task ids must be below it (`core::array`).
    pub max_array_size: u32,
    /// MaxSwitchWait, seconds: the most a `--switches` job is granted to
    /// wait (kept and shown; there is no topology to wait for).
    pub max_switch_wait_secs: u32,
    /// max_depend_depth: jobs looked at for a circular dependency (`core::depend`).
    pub max_depend_depth: u32,
    /// SchedulerParameters=enable_user_top: users may `scontrol top`
    /// their own jobs (`core::suspend`).
    pub enable_user_top: bool,
    /// AccountingStorageType is set: without it there are no QOS, and
    /// Slurm keeps none a job asks for (`QOS=(null)`).
    pub accounting: bool,
    /// DisableRootJobs=YES: root may submit to no partition.
    pub disable_root_jobs: bool,
    /// SchedulerParameters=sched_interval, in seconds: while jobs wait, a
    /// pass runs at least this often even when no event asks for one, as
    /// Slurm's main loop does (a `-N` over the partition turns from
    /// PartitionConfig to PartitionNodeLimit there). 0: no such pass.
    pub sched_interval_secs: i64,
    /// Bounds of the planned starts of pending jobs, from
    /// SchedulerParameters bf_resolution, bf_window and bf_max_job_test
    /// (`core::estimate`).
    pub backfill: slurm_sched::EstimateConfig,
    /// SchedulerParameters=bf_interval, in seconds: pending jobs' starts
    /// are planned at most this often, as Slurm's backfill cycle runs (at
    /// the first pass after it: an event's, or the periodic pass).
    pub bf_interval_secs: i64,
}

impl CtlConfig {
    /// Reads the settings of `conf`; `operators` are uids that act as
    /// administrators besides root.
    pub fn from_conf(conf: &SlurmConf, operators: Vec<u32>) -> CtlConfig {
        let secs = |d: std::time::Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        let track_memory = conf
            .select_type_parameters
            .resource
            .is_some_and(|r| r.tracks_memory());
        let def_mem = conf.def_mem.map(|m| match m {
            slurm_common::conf::MemPer::Cpu(mb) => MemReq::PerCpu(mb),
            slurm_common::conf::MemPer::Node(mb) => MemReq::PerNode(mb),
        });
        CtlConfig {
            cluster_name: conf.cluster_name.clone(),
            first_job_id: conf.first_job_id.max(1),
            max_job_id: conf.max_job_id.max(conf.first_job_id.max(1)),
            max_job_count: conf.max_job_count.max(1),
            min_job_age_secs: secs(conf.min_job_age),
            over_time_limit: conf.over_time_limit,
            lln: conf.select_type_parameters.lln,
            kill_wait_secs: u32::try_from(conf.kill_wait.as_secs()).unwrap_or(u32::MAX),
            job_requeue: conf.job_requeue,
            operators,
            sched: SchedConfig {
                track_memory,
                enforce_part_limits: !matches!(
                    conf.enforce_part_limits,
                    slurm_common::conf::EnforcePartLimits::No
                ),
                def_mem,
            },
            completing_timeout_secs: secs(conf.kill_wait)
                .saturating_add(secs(conf.message_timeout).saturating_mul(2))
                .saturating_add(60),
            requeue_delay_secs: requeue_delay_secs(conf),
            slurmd_timeout_secs: secs(conf.slurmd_timeout),
            missing_job_grace_secs: missing_job_grace_secs(conf.message_timeout),
            return_to_service: conf.return_to_service,
            slurm_user_uid: conf.slurm_user.parse().unwrap_or(0),
            config_overrides: conf.slurmd_parameters.has("config_overrides"),
            node_reg_mem_percent: node_reg_mem_percent(conf),
            nohold_on_prolog_fail: conf
                .scheduler_parameters
                .options
                .has("nohold_on_prolog_fail"),
            prolog_alloc: conf.prolog_flags.alloc,
            sched_interval_secs: secs(conf.scheduler_parameters.sched_interval),
            gres_types: conf.gres_types.clone(),
            conf_hash: conf.file_hash.clone(),
            check_conf_hash: !conf
                .debug_flags
                .iter()
                .any(|f| f.eq_ignore_ascii_case("NO_CONF_HASH")),
            licenses: conf.licenses.clone().into(),
            accounting: conf.accounting_storage_type
                != slurm_common::conf::AccountingStorageType::None,
            disable_root_jobs: conf.disable_root_jobs,
            kill_invalid_depend: conf.scheduler_parameters.kill_invalid_depend
                || conf.dependency_parameters.has("kill_invalid_depend"),
            max_array_size: conf.max_array_size,
            max_switch_wait_secs: conf
                .raw_entry("MaxSwitchWait")
                .and_then(|e| e.value.trim().parse().ok())
                .unwrap_or(DEFAULT_MAX_SWITCH_WAIT_SECS),
            max_depend_depth: depend::max_depend_depth(conf),
            enable_user_top: conf.scheduler_parameters.options.has("enable_user_top"),
            backfill: slurm_sched::EstimateConfig {
                resolution_secs: secs(conf.scheduler_parameters.bf_resolution).max(1),
                window_secs: Some(secs(conf.scheduler_parameters.bf_window)),
                max_jobs: usize::try_from(conf.scheduler_parameters.bf_max_job_test)
                    .unwrap_or(usize::MAX),
                ..slurm_sched::EstimateConfig::BACKFILL
            },
            bf_interval_secs: secs(conf.scheduler_parameters.bf_interval).max(1),
        }
    }
}

/// MaxSwitchWait when slurm.conf does not set it (Slurm's default).
pub const DEFAULT_MAX_SWITCH_WAIT_SECS: u32 = 300;

/// SlurmctldParameters=node_reg_mem_percent=N. A value that is not a
/// finite, non-negative number is ignored: Slurm's default applies.
fn node_reg_mem_percent(conf: &SlurmConf) -> Option<f64> {
    conf.slurmctld_parameters
        .get("node_reg_mem_percent")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|p| p.is_finite() && *p >= 0.0)
}

/// Seconds from a requeue until the job is eligible again (see
/// [`CtlConfig::requeue_delay_secs`]). An AuthInfo that does not parse
/// leaves the default; slurmd and the commands report it.
fn requeue_delay_secs(conf: &SlurmConf) -> i64 {
    let cred_expire = slurm_common::auth::AuthInfo::parse(&conf.auth_info.to_string())
        .ok()
        .and_then(|a| a.cred_expire)
        .unwrap_or(DEFAULT_CRED_EXPIRE_SECS);
    i64::from(cred_expire).saturating_add(1)
}

/// AuthInfo `cred_expire` when not set (slurm.conf(5)).
pub const DEFAULT_CRED_EXPIRE_SECS: u32 = 120;

/// An event that does not fit the current state (replay of a damaged or
/// foreign journal). The core never emits such events itself.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ApplyError {
    #[error("event refers to unknown job {job_id}")]
    UnknownJob { job_id: u32 },
    #[error("event refers to unknown node {node}")]
    UnknownNode { node: String },
    #[error("job {job_id}: {detail}")]
    IllegalTransition { job_id: u32, detail: String },
    #[error("job {job_id} already exists")]
    DuplicateJob { job_id: u32 },
}

/// A broken invariant found by [`Controller::sanity_check`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("controller invariant violated: {0}")]
pub struct SanityError(pub String);

/// The controller state.
#[derive(Debug, Clone)]
pub struct Controller {
    pub(crate) cfg: CtlConfig,
    pub(crate) nodes: Vec<NodeRec>,
    pub(crate) node_index: HashMap<String, usize>,
    pub(crate) partitions: Vec<PartRec>,
    pub(crate) part_index: HashMap<String, usize>,
    pub(crate) default_part: Option<usize>,
    /// slurm.conf's partition lines, NodeSets and partition defaults
    /// (`core::partition`).
    pub(crate) part_conf: partition::PartConfig,
    pub(crate) jobs: JobTable,
    /// Jobs as MaxJobCount counts them: every record, plus each task an
    /// array's meta record still holds beyond its own record
    /// ([`array::counted`]). Kept by `apply`, so that a submission's check
    /// costs nothing with a long queue. Derived: not journaled, rebuilt
    /// by replay and counted again when a snapshot is loaded.
    pub(crate) job_count: usize,
    pub(crate) next_job_id: u32,
    pub(crate) next_priority: u32,
    /// Time of the last applied event that carried one.
    pub(crate) last_update: i64,
    /// Something changed that could let a pending job start or change its
    /// reason; a scheduling pass without it would find nothing new.
    pub(crate) sched_dirty: bool,
    /// When the last scheduling pass ran (memory only: the periodic pass
    /// of [`CtlConfig::sched_interval_secs`] counts from it).
    pub(crate) last_pass: i64,
    /// A pass a second after one that saw a job for the first time and
    /// found it waiting with PartitionConfig (memory only): Slurm's
    /// scheduler looks at a new job again right after its submission,
    /// which turns a `-N` over the partition into PartitionNodeLimit.
    pub(crate) second_look: Option<i64>,
    /// Planned starts of pending jobs (`core::estimate`). Derived by each
    /// scheduling pass, never journaled: after a restart the first pass
    /// plans them again.
    pub(crate) planned: Arc<estimate::PlannedStarts>,
    /// When the starts were last planned (memory only; `None`: not yet).
    pub(crate) planned_at: Option<i64>,
    /// Where job scripts go (see `persist::scripts`).
    pub(crate) scripts: ScriptSpace,
    /// Script segments whose last job was purged, for the shell to remove.
    pub(crate) freed_segments: Vec<u32>,
    /// Recent job specs, shared by equal submissions (memory only: not
    /// state, never journaled).
    pub(crate) spec_cache: SpecCache,
    /// When each node (by index) last answered: a registration or a reply
    /// to a message. Liveness bookkeeping, not journaled: after a restart
    /// every node starts again at 0 ("not heard from yet") and gets a
    /// full SlurmdTimeout from its first miss (see `core::liveness`).
    pub(crate) last_response: Vec<i64>,
}

/// What queries read: an immutable copy, cheap to make because job records
/// are shared (`Arc`) and copied only when they change.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub jobs: JobTable,
    pub nodes: Arc<Vec<NodeRec>>,
    pub partitions: Arc<Vec<PartRec>>,
    pub last_update: i64,
    pub cluster_name: String,
    /// The id the next submission gets (`scontrol show config`).
    pub next_job_id: u32,
    /// Licenses= (`scontrol show licenses`, with the jobs' use).
    pub licenses: Arc<[slurm_common::conf::License]>,
    /// Planned starts of pending jobs, by job id (`core::estimate`).
    pub planned: Arc<estimate::PlannedStarts>,
}

impl Controller {
    /// A controller with the nodes and partitions of `conf` and no jobs.
    pub fn new(conf: &SlurmConf, cfg: CtlConfig) -> Controller {
        let mut nodes: Vec<NodeRec> = conf.nodes.iter().map(NodeRec::from_conf).collect();
        let node_index: HashMap<String, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        let mut partitions = Vec::new();
        let mut part_index = HashMap::new();
        let mut default_part = None;
        for p in &conf.partitions {
            let idx = partitions.len();
            let members: Vec<usize> = p
                .nodes
                .iter()
                .filter_map(|n| node_index.get(n).copied())
                .collect();
            for &m in &members {
                if let Some(n) = nodes.get_mut(m) {
                    n.partitions.push(idx);
                }
            }
            if p.default && default_part.is_none() {
                default_part = Some(idx);
            }
            part_index.insert(p.name.clone(), idx);
            partitions.push(PartRec::from_conf(p, members));
        }
        for n in &mut nodes {
            if matches!(n.conf_state, NodeConfState::Idle) {
                n.state = NodeState::new(NodeBaseState::Idle);
            }
        }
        let nodes_len = nodes.len();
        Controller {
            next_job_id: cfg.first_job_id,
            next_priority: TOP_PRIORITY,
            planned: Arc::default(),
            planned_at: None,
            cfg,
            nodes,
            node_index,
            partitions,
            part_index,
            default_part,
            part_conf: partition::PartConfig::from_conf(conf),
            jobs: JobTable::new(),
            job_count: 0,
            last_update: 0,
            sched_dirty: true,
            last_pass: 0,
            second_look: None,
            scripts: ScriptSpace::default(),
            freed_segments: Vec::new(),
            spec_cache: SpecCache::default(),
            last_response: vec![0; nodes_len],
        }
    }

    pub fn config(&self) -> &CtlConfig {
        &self.cfg
    }

    pub fn job(&self, id: u32) -> Option<&Job> {
        self.jobs.get(&id).map(Arc::as_ref)
    }

    pub fn jobs(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values().map(Arc::as_ref)
    }

    pub fn nodes(&self) -> &[NodeRec] {
        &self.nodes
    }

    pub fn partitions(&self) -> &[PartRec] {
        &self.partitions
    }

    /// Jobs counted against MaxJobCount (see [`array::counted`]).
    pub fn job_count(&self) -> usize {
        self.job_count
    }

    pub fn next_job_id(&self) -> u32 {
        self.next_job_id
    }

    /// An immutable copy for readers.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            jobs: self.jobs.clone(),
            nodes: Arc::new(self.nodes.clone()),
            partitions: Arc::new(self.partitions.clone()),
            last_update: self.last_update,
            cluster_name: self.cfg.cluster_name.clone(),
            next_job_id: self.next_job_id,
            licenses: Arc::clone(&self.cfg.licenses),
            planned: Arc::clone(&self.planned),
        }
    }

    pub(crate) fn is_operator(&self, caller: Caller) -> bool {
        caller.uid == 0 || self.cfg.operators.contains(&caller.uid)
    }

    /// Priority `base` was given to a job: the next one gets a lower one.
    pub(crate) fn take_priority(&mut self, base: u32) {
        self.next_priority = self.next_priority.min(base.saturating_sub(1)).max(1);
    }

    fn job_mut(&mut self, job_id: u32) -> Result<&mut Job, ApplyError> {
        self.jobs
            .get_mut(&job_id)
            .map(Arc::make_mut)
            .ok_or(ApplyError::UnknownJob { job_id })
    }

    /// Performs one event. The only function that changes the state.
    pub fn apply(&mut self, event: &Event) -> Result<(), ApplyError> {
        // Nodes count the shares of completing jobs (`NodeRec::completing_*`).
        // Whatever an event does to one job's COMPLETING and allocation,
        // the counts follow from the job's shares before and after it.
        let job_id = event.job_id();
        let before = job_id.and_then(|id| self.completing_shares(id));
        let result = self.apply_event(event);
        let after = job_id.and_then(|id| self.completing_shares(id));
        if before != after {
            self.recount_shares(
                before.as_deref().unwrap_or_default(),
                after.as_deref().unwrap_or_default(),
            );
        }
        result
    }

    /// The shares a job holds while it is COMPLETING.
    fn completing_shares(&self, job_id: u32) -> Option<Box<[NodeAlloc]>> {
        self.jobs
            .get(&job_id)
            .filter(|j| j.status.is_completing() && !j.alloc.is_empty())
            // Without their CPUs when it ended suspended (`core::suspend`).
            .map(|j| j.alloc.iter().map(|a| j.counted_share(a)).collect())
    }

    /// Moves the completing counts of the nodes from `before` to `after`
    /// (one job's completing shares). Shares in both are left alone; the
    /// walk is linear because a release keeps the order of the rest.
    fn recount_shares(&mut self, before: &[NodeAlloc], after: &[NodeAlloc]) {
        let mut kept = 0;
        for a in before {
            if after.get(kept) == Some(a) {
                kept += 1;
            } else if let Some(n) = self.nodes.get_mut(a.node_index) {
                n.completing_ended(a);
            }
        }
        for a in after.get(kept..).unwrap_or_default() {
            if let Some(n) = self.nodes.get_mut(a.node_index) {
                n.completing_started(a);
            }
        }
    }

    /// Counts the completing shares of every node again from the jobs (a
    /// loaded snapshot, whose node records do not carry them). Nodes
    /// without completing shares and without the flag are not touched.
    pub(crate) fn recount_completing(&mut self) {
        for n in &mut self.nodes {
            n.completing_jobs = 0;
            n.completing_cpus = 0;
        }
        for job in self.jobs.values() {
            if !job.status.is_completing() {
                continue;
            }
            for a in job.alloc.iter() {
                if let Some(n) = self.nodes.get_mut(a.node_index) {
                    n.completing_jobs = n.completing_jobs.saturating_add(1);
                    let cpus = job.counted_share(a).cpus;
                    n.completing_cpus = n.completing_cpus.saturating_add(cpus);
                }
            }
        }
        for n in &mut self.nodes {
            if n.completing_jobs > 0 || n.state.has(NodeFlag::Completing) {
                n.refresh();
            }
        }
    }

    /// Counts again which CPUs of each node the jobs hold (`NodeRec::
    /// cpu_use`), after a load. A job whose shares have no ids (a file
    /// written before they were kept) is given some, in id order, after
    /// those of the others are counted.
    pub(crate) fn recount_cpu_use(&mut self) {
        for n in &mut self.nodes {
            n.cpu_use.iter_mut().for_each(|u| *u = 0);
        }
        let mut missing = Vec::new();
        for job in self.jobs.values() {
            if job.alloc.is_empty() {
                continue;
            }
            if job.cpu_ids.len() != job.alloc.len() {
                missing.push(job.id.get());
                continue;
            }
            if job.cores_released() {
                continue;
            }
            for (a, ids) in job.alloc.iter().zip(job.cpu_ids.iter()) {
                if let Some(n) = self.nodes.get_mut(a.node_index) {
                    n.count_cpus(ids, true);
                }
            }
        }
        for id in missing {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            let released = job.cores_released();
            let alloc = job.alloc.clone();
            let mut cpu_ids = Vec::with_capacity(alloc.len());
            for a in alloc.iter() {
                let ids = match self.nodes.get_mut(a.node_index) {
                    Some(n) => {
                        let ids = n.pick_cpus(a.cpus);
                        if !released {
                            n.count_cpus(&ids, true);
                        }
                        ids
                    }
                    None => Box::default(),
                };
                cpu_ids.push(ids);
            }
            if let Some(job) = self.jobs.get_mut(&id) {
                Arc::make_mut(job).cpu_ids = cpu_ids.into_boxed_slice();
            }
        }
        for n in &mut self.nodes {
            n.recount_alloc_cpus();
            n.refresh();
        }
    }

    fn apply_event(&mut self, event: &Event) -> Result<(), ApplyError> {
        // Starts are the scheduler's own output and purges touch finished
        // jobs only; a held submission cannot start. Everything else may
        // free resources, add a runnable job or change an order.
        match event {
            Event::JobStarted { .. } | Event::JobsPurged { .. } | Event::JobSignalSent { .. } => {}
            Event::JobSubmitted { desc, .. } if desc.hold => {}
            _ => self.sched_dirty = true,
        }
        match event {
            Event::JobSubmitted {
                job_id,
                time,
                uid,
                gid,
                partition,
                priority,
                desc,
                files,
            } => {
                if self.jobs.contains_key(job_id) {
                    return Err(ApplyError::DuplicateJob { job_id: *job_id });
                }
                let shape = JobShape::from_desc(desc);
                let hold = desc.hold.then_some(slurm_sched::Hold::User);
                let dependency =
                    depend::from_submission(*job_id, &desc.dependency, desc.kill_on_invalid_dep);
                // Unknown while a dependency waits (`core::depend`).
                let waits = dependency.as_ref().is_some_and(|d| d.is_active());
                self.scripts.taken(files);
                let job = Job {
                    id: JobId::new(*job_id),
                    uid: *uid,
                    gid: *gid,
                    name: desc.name.clone(),
                    partition: job::first_partition(partition, &self.part_index),
                    partition_name: partition.clone(),
                    status: slurm_common::state::JobStatus::pending(),
                    reason: if hold.is_some() {
                        PendingReason::JobHeldUser
                    } else {
                        PendingReason::None
                    },
                    // As Slurm, a held job says at once why its account
                    // may not use the partition.
                    reason_detail: hold
                        .and_then(|_| job::first_partition(partition, &self.part_index))
                        .and_then(|i| self.partitions.get(i))
                        .and_then(|p| slurm_sched::account_refusal(&p.view))
                        .unwrap_or_default(),
                    base_priority: *priority,
                    nice: desc.nice.unwrap_or(0),
                    hold,
                    requeue: desc.requeue.unwrap_or(self.cfg.job_requeue),
                    restart_count: 0,
                    launch_failures: 0,
                    comment: desc.comment.clone(),
                    submit_time: *time,
                    // Unknown while a dependency waits, or while held
                    // (until released) unless a begin time is to come.
                    eligible_time: if waits {
                        0
                    } else if hold.is_some() {
                        shape.begin_time.filter(|b| b > time).unwrap_or(0)
                    } else {
                        shape.begin_time.unwrap_or(*time).max(*time)
                    },
                    start_time: 0,
                    end_time: 0,
                    // A held job is not looked at again until released:
                    // its evaluation is now.
                    last_sched_eval: if hold.is_some() { *time } else { 0 },
                    run_limit: None,
                    exit_status: 0,
                    exit_signal: 0,
                    alloc: Box::default(),
                    exclusive_alloc: false,
                    last_alloc: Box::default(),
                    cpu_ids: Box::default(),
                    last_cpu_ids: Box::default(),
                    signal_sent: false,
                    suspend: None,
                    resize: None,
                    dependency,
                    // Checked at submission; replay parses the same text.
                    array: (!desc.array_spec.is_empty())
                        .then(|| array::parse(&desc.array_spec, u32::MAX).ok())
                        .flatten()
                        .map(|spec| Box::new(array::ArrayState::submitted(*job_id, &spec))),
                    shape,
                    spec: SharedSpec::new(self.spec_cache.share(JobSpec::from_desc(desc)), *files),
                };
                self.job_count = self.job_count.saturating_add(array::counted(&job));
                self.jobs.insert(*job_id, Arc::new(job));
                self.next_job_id = self.id_after(*job_id);
                // As Slurm's priority/basic: a job submitted held gets its
                // priority only at its release, so it takes no number now.
                if desc.priority.is_none() && !desc.hold {
                    self.take_priority(*priority);
                }
                self.last_update = *time;
            }
            Event::JobStarted {
                job_id,
                time,
                time_limit,
                exclusive,
                allocs,
                partition,
            } => {
                // Of a job listed in several partitions: the one it got.
                let chosen = partition
                    .as_ref()
                    .map(|p| (self.part_index.get(p).copied(), p));
                let mut alloc = Vec::with_capacity(allocs.len());
                for a in allocs {
                    let Some(&i) = self.node_index.get(&a.node) else {
                        return Err(ApplyError::UnknownNode {
                            node: a.node.clone(),
                        });
                    };
                    alloc.push(NodeAlloc {
                        node_index: i,
                        cpus: a.cpus,
                        mem_mb: a.mem_mb,
                        tasks: a.tasks,
                    });
                }
                let job = self.job_mut(*job_id)?;
                if let Some(a) = job.array.as_deref_mut().filter(|a| a.is_meta()) {
                    // The last task keeps the meta record's id; others are
                    // split off first (`core::array`).
                    let [task] = a.pending[..] else {
                        return Err(ApplyError::IllegalTransition {
                            job_id: *job_id,
                            detail: format!("{} array tasks left to start", a.pending.len()),
                        });
                    };
                    // One task, one record, before and after: the job
                    // count stays.
                    a.task = Some(task);
                    a.pending.clear();
                }
                job.status = job
                    .status
                    .apply(JobState::Running)
                    .map_err(|e| illegal(*job_id, e))?;
                job.start_time = *time;
                job.last_sched_eval = *time;
                job.run_limit = Some(*time_limit);
                job.signal_sent = false;
                job.suspend = None;
                job.resize = None;
                job.reason = PendingReason::None;
                job.reason_detail.clear();
                job.alloc = alloc.as_slice().into();
                job.exclusive_alloc = *exclusive;
                if let Some((index, name)) = chosen {
                    job.partition = index;
                    job.partition_name.clone_from(name);
                }
                let id = job.id;
                let mut cpu_ids = Vec::with_capacity(alloc.len());
                for a in &alloc {
                    let n = &mut self.nodes[a.node_index];
                    let ids = n.pick_cpus(a.cpus);
                    n.take(a, &ids, *exclusive, id);
                    cpu_ids.push(ids);
                }
                self.job_mut(*job_id)?.cpu_ids = cpu_ids.into_boxed_slice();
                self.last_update = *time;
            }
            Event::JobEnded {
                job_id,
                time,
                state,
                exit_status,
                exit_signal,
                reason,
                detail,
                release,
            } => {
                let job = self.job_mut(*job_id)?;
                if job.status.state == JobState::Pending && job.status.is_completing() {
                    // A requeued job whose nodes still clean up, cancelled:
                    // no longer requeued but still COMPLETING on the nodes
                    // that have not reported (Slurm's CANCELLED+COMPLETING).
                    // Its run's end and allocation stay what they were.
                    slurm_common::state::transition(JobState::Pending, *state)
                        .map_err(|e| illegal(*job_id, e))?;
                    job.status = JobStatus {
                        state: *state,
                        flags: job.status.flags.without(JobFlag::Requeued),
                    };
                } else {
                    job.status = suspend::ended_status(job.status, *state)
                        .map_err(|e| illegal(*job_id, e))?;
                    if job.status.is_completing() {
                        // The allocation shown once every share is released.
                        job.keep_last_alloc();
                    }
                    job.end_time = *time;
                }
                job.exit_status = *exit_status;
                job.exit_signal = *exit_signal;
                // A job that ends before any pass looked at it (one refused
                // at submission) shows its end as its last evaluation.
                if job.last_sched_eval == 0 && job.start_time == 0 {
                    job.last_sched_eval = *time;
                }
                job.reason = reason.parse().unwrap_or(PendingReason::None);
                job.reason_detail.clone_from(detail);
                if job.start_time == 0 {
                    job.start_time = job.end_time;
                }
                self.last_update = *time;
                if *release {
                    self.release(*job_id, *time)?;
                }
            }
            Event::JobReleased { job_id, time } => {
                let requeued = self.is_requeue_completing(*job_id);
                self.release(*job_id, *time)?;
                if requeued {
                    self.back_in_queue(*job_id, *time);
                }
                self.last_update = *time;
            }
            Event::JobNodeExcised { job_id, node, time } => {
                let i = self.node_idx(node)?;
                self.excise_node(*job_id, i, *time)?;
                self.last_update = *time;
            }
            Event::JobNodeReleased { job_id, node, time } => {
                let i = self.node_idx(node)?;
                let requeued = self.is_requeue_completing(*job_id);
                self.release_share(*job_id, i, *time)?;
                if requeued {
                    self.back_in_queue(*job_id, *time);
                }
                self.last_update = *time;
            }
            Event::JobHoldChanged { job_id, hold, time } => {
                // As Slurm's priority/basic: a release gives the job a new
                // priority, the next number down, as if it were submitted
                // then (an operator's Priority= goes too).
                let next = self.next_priority;
                let job = self.job_mut(*job_id)?;
                // Also a release of a waiting job that was not held.
                let was_held = job.hold.is_some();
                let waits = job.status.state == JobState::Pending;
                let renumber = hold.is_none() && (was_held || waits);
                if renumber {
                    job.base_priority = next;
                }
                job.hold = *hold;
                if renumber {
                    self.take_priority(next);
                }
                let job = self.job_mut(*job_id)?;
                // As in Slurm: EligibleTime=Unknown from a hold on (also
                // for a job that runs, and after its release while it
                // does); a waiting job released is eligible from then,
                // unless a dependency or its begin time still holds it.
                // A release journaled without its time (tag 5) is eligible
                // from its submission, as such records were shown then.
                let waits_dependency = job.dependency.as_ref().is_some_and(|d| d.is_active());
                let pending = job.status.state == JobState::Pending;
                match (hold, time) {
                    // A begin time still to come stays shown.
                    (Some(_), Some(t)) => {
                        job.eligible_time = job.shape.begin_time.filter(|b| b > t).unwrap_or(0);
                    }
                    (None, Some(t)) if pending && !waits_dependency && was_held => {
                        job.eligible_time = job.shape.begin_time.unwrap_or(*t).max(*t);
                    }
                    (None, None) if pending && !waits_dependency && job.eligible_time == 0 => {
                        let t = job.submit_time;
                        job.eligible_time = job.shape.begin_time.unwrap_or(t).max(t);
                    }
                    _ => {}
                }
                // As in Slurm, a hold or release replaces the reason and
                // its text ("job requeued in held state" goes with it).
                job.reason_detail.clear();
                job.reason = match hold {
                    Some(slurm_sched::Hold::User) => PendingReason::JobHeldUser,
                    Some(slurm_sched::Hold::Admin) => PendingReason::JobHeldAdmin,
                    None => PendingReason::None,
                };
            }
            Event::JobRequeued {
                job_id,
                time,
                hold,
                launch_failed,
                detail,
                begin_time,
            } => {
                let job = self.job_mut(*job_id)?;
                let was_running = job.status.state.holds_resources();
                let was_completing = job.status.is_completing();
                if was_running {
                    job.keep_last_alloc();
                }
                job.status = if was_completing {
                    // A job that ended and whose nodes still clean up is
                    // PENDING at once, as in Slurm; it keeps COMPLETING and
                    // its shares until the last node reports (`core::epilog`).
                    slurm_common::state::transition(job.status.state, JobState::Pending)
                        .map_err(|e| illegal(*job_id, e))?;
                    JobStatus {
                        state: JobState::Pending,
                        flags: job.status.flags.with(JobFlag::Requeued),
                    }
                } else {
                    let status = job
                        .status
                        .apply(JobState::Pending)
                        .map_err(|e| illegal(*job_id, e))?;
                    if was_running {
                        status
                    } else {
                        status.completing_done()
                    }
                };
                job.restart_count = job.restart_count.saturating_add(1);
                if *launch_failed {
                    job.launch_failures = job.launch_failures.saturating_add(1);
                }
                job.hold = *hold;
                job.reason = match (hold, begin_time) {
                    (Some(slurm_sched::Hold::Admin), _) => PendingReason::JobHeldAdmin,
                    (Some(slurm_sched::Hold::User), _) => PendingReason::JobHeldUser,
                    (None, Some(b)) if *b > *time => PendingReason::BeginTime,
                    (None, _) => PendingReason::None,
                };
                job.reason_detail.clone_from(detail);
                if !was_completing {
                    // A completing job keeps the end of its run: the
                    // cleanup it waits for started then.
                    job.end_time = *time;
                }
                job.start_time = 0;
                job.exit_status = 0;
                job.exit_signal = 0;
                job.eligible_time = *time;
                if let Some(b) = begin_time {
                    job.shape.begin_time = Some(*b);
                    job.eligible_time = (*b).max(*time);
                }
                // Back in the queue now, unless its nodes still clean up
                // (then when the last one is done, see `JobNodeReleased`).
                self.back_in_queue(*job_id, *time);
                self.last_update = *time;
            }
            Event::JobUpdated { job_id, changes } => {
                // Borrowed field by field: the partition names are read
                // while the job is changed, without copying the index.
                let job = self
                    .jobs
                    .get_mut(job_id)
                    .map(Arc::make_mut)
                    .ok_or(ApplyError::UnknownJob { job_id: *job_id })?;
                for c in changes {
                    apply_job_change(job, c, &self.part_index);
                }
            }
            Event::PartitionUpdated {
                partition,
                attributes,
                uid: _,
                time,
            } => {
                self.apply_partition_update(partition, attributes);
                self.last_update = *time;
            }
            Event::PartitionUpdatesReset { keep } => self.reset_partition_updates(keep),
            Event::PartitionCreated {
                partition,
                attributes,
                uid: _,
                time,
            } => {
                self.apply_partition_create(partition, attributes);
                self.last_update = *time;
            }
            Event::PartitionDeleted {
                partition,
                uid: _,
                time,
            } => {
                self.apply_partition_delete(partition);
                self.last_update = *time;
            }
            Event::PartitionTableReset { keep_created } => {
                self.reset_partition_table(*keep_created)
            }
            Event::NodeAttrsUpdated {
                node,
                attrs,
                uid: _,
                time,
            } => {
                let i = self.node_idx(node)?;
                self.apply_node_attrs(i, attrs);
                self.last_update = *time;
            }
            Event::NodeAttrsReset => self.reset_node_attrs(),
            Event::JobSuspended { job_id, time } => self.apply_suspended(*job_id, *time)?,
            Event::JobResumed { job_id, time } => self.apply_resumed(*job_id, *time)?,
            Event::JobIdTaken { job_id, priority } => {
                self.next_job_id = self.id_after(*job_id);
                if let Some(p) = priority {
                    self.take_priority(*p);
                }
            }
            Event::ArrayTaskSplit {
                array_job_id,
                task,
                job_id,
                time,
            } => {
                if self.jobs.contains_key(job_id) {
                    return Err(ApplyError::DuplicateJob { job_id: *job_id });
                }
                let meta = self.job_mut(*array_job_id)?;
                let taken = meta.array.as_deref_mut().is_some_and(|a| {
                    let found = a.is_meta() && a.pending.len() > 1;
                    match a.pending.binary_search(task) {
                        Ok(pos) if found => {
                            a.pending.remove(pos);
                            true
                        }
                        _ => false,
                    }
                });
                if !taken {
                    return Err(ApplyError::IllegalTransition {
                        job_id: *array_job_id,
                        detail: format!("array task {task} cannot be split off"),
                    });
                }
                // The task moves from the meta record's set (which keeps
                // one at least) to a record of its own: the job count
                // stays.
                let mut split = meta.clone();
                split.id = JobId::new(*job_id);
                if let Some(a) = split.array.as_deref_mut() {
                    a.task = Some(*task);
                    a.pending = Vec::new();
                }
                self.scripts.taken(&split.spec.files);
                self.jobs.insert(*job_id, Arc::new(split));
                self.next_job_id = self.id_after(*job_id);
                self.last_update = *time;
            }
            Event::ArrayTaskDropped {
                array_job_id,
                task,
                time,
            } => {
                let meta = self.job_mut(*array_job_id)?;
                let before = array::counted(meta);
                // The last task leaves only a record already cancelled.
                let ended = meta.status.state.is_finished();
                let dropped = meta.array.as_deref_mut().is_some_and(|a| {
                    let others = a.is_meta() && (a.pending.len() > 1 || ended);
                    match a.pending.binary_search(task) {
                        Ok(pos) if others => {
                            a.pending.remove(pos);
                            true
                        }
                        _ => false,
                    }
                });
                if !dropped {
                    return Err(ApplyError::IllegalTransition {
                        job_id: *array_job_id,
                        detail: format!("array task {task} cannot be dropped"),
                    });
                }
                let after = array::counted(meta);
                self.job_count = self.job_count.saturating_sub(before.saturating_sub(after));
                self.last_update = *time;
            }
            Event::JobSignalSent { job_id, time } => {
                self.job_mut(*job_id)?.signal_sent = true;
                self.last_update = *time;
            }
            Event::JobDependencyChanged {
                job_id,
                time,
                dependency,
            } => {
                let job = self.job_mut(*job_id)?;
                depend::apply_change(job, dependency, *time).map_err(|e| {
                    ApplyError::IllegalTransition {
                        job_id: *job_id,
                        detail: e.to_string(),
                    }
                })?;
                self.last_update = *time;
            }
            Event::NodeRegistered {
                node,
                time,
                arch,
                os,
                invalid,
            } => {
                let i = self.node_idx(node)?;
                if invalid.is_some() {
                    self.nodes[i].registered_short(*time);
                } else {
                    self.nodes[i].registered(*time);
                }
                self.nodes[i].arch.clone_from(arch);
                self.nodes[i].os.clone_from(os);
                self.heard_from(i, *time);
                self.last_update = *time;
            }
            Event::NodeUpdated {
                node,
                update,
                reason,
                uid,
                time,
            } => {
                let i = self.node_idx(node)?;
                self.nodes[i].admin_update(*update, reason.as_deref(), *uid, *time);
                self.last_update = *time;
            }
            Event::JobsPurged { job_ids } => {
                for id in job_ids {
                    if let Some(job) = self.jobs.remove(id) {
                        // A meta record takes the tasks it still holds
                        // (a cancelled array's) with it.
                        self.job_count = self.job_count.saturating_sub(array::counted(&job));
                        if let Some(seg) = self.scripts.released(&job.spec.files) {
                            self.freed_segments.push(seg);
                        }
                    }
                }
            }
            Event::NodesNotResponding { nodes, time } => {
                for node in nodes {
                    let i = self.node_idx(node)?;
                    self.nodes[i].set_responding(false);
                }
                self.last_update = *time;
            }
            Event::NodesResponding { nodes, time } => {
                for node in nodes {
                    let i = self.node_idx(node)?;
                    self.nodes[i].set_responding(true);
                    self.heard_from(i, *time);
                }
                self.last_update = *time;
            }
            Event::NodeReturned { node, time } => {
                let i = self.node_idx(node)?;
                self.nodes[i].returned();
                self.heard_from(i, *time);
                self.last_update = *time;
            }
        }
        Ok(())
    }

    /// Whether job `job_id` was requeued and still waits for its nodes'
    /// cleanup (PENDING+COMPLETING).
    fn is_requeue_completing(&self, job_id: u32) -> bool {
        self.jobs
            .get(&job_id)
            .is_some_and(|j| j.status.state == JobState::Pending && j.status.is_completing())
    }

    /// A requeued job that is now in the queue (PENDING, done with its
    /// nodes) at `time` counts as submitted then, as in Slurm, which
    /// records each run of a requeued job as a new submission: SubmitTime
    /// is `time`, one second later when that is the previous SubmitTime
    /// (a launch that failed at once), so that the two runs' accounting
    /// records stay apart. Nothing happens to a job still completing.
    fn back_in_queue(&mut self, job_id: u32, time: i64) {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return;
        };
        if job.status.state != JobState::Pending || job.status.is_completing() {
            return;
        }
        let job = Arc::make_mut(job);
        job.submit_time = if time == job.submit_time {
            time.saturating_add(1)
        } else {
            time
        };
    }

    fn node_idx(&self, node: &str) -> Result<usize, ApplyError> {
        self.node_index
            .get(node)
            .copied()
            .ok_or_else(|| ApplyError::UnknownNode {
                node: node.to_string(),
            })
    }

    /// Frees the job's nodes and ends COMPLETING, at `time`.
    fn release(&mut self, job_id: u32, time: i64) -> Result<(), ApplyError> {
        let job = self.job_mut(job_id)?;
        // Set when the job left RUNNING; a state from before that was
        // recorded (a snapshot of an older build) gets it here.
        let recorded = job
            .alloc
            .iter()
            .all(|a| job.last_alloc.iter().any(|l| l.node_index == a.node_index));
        if job.alloc.is_empty() || !recorded {
            job.keep_last_alloc();
        }
        let alloc = std::mem::take(&mut job.alloc);
        let exclusive = std::mem::replace(&mut job.exclusive_alloc, false);
        job.status = job.status.completing_done();
        let id = job.id;
        let cpu_ids = std::mem::take(&mut job.cpu_ids);
        // Without their CPUs when it ended suspended (`core::suspend`).
        let shares: Vec<NodeAlloc> = alloc.iter().map(|a| job.counted_share(a)).collect();
        for (i, a) in shares.iter().enumerate() {
            if let Some(n) = self.nodes.get_mut(a.node_index) {
                let ids = match cpu_ids.get(i) {
                    Some(ids) if a.cpus > 0 => &ids[..],
                    _ => &[],
                };
                n.give_back(a, ids, exclusive, id, time);
            }
        }
        Ok(())
    }

    /// Frees a completing job's share of node `node`; the last share ends
    /// its COMPLETING.
    fn release_share(&mut self, job_id: u32, node: usize, time: i64) -> Result<(), ApplyError> {
        let pos = self.share_at(
            job_id,
            node,
            |j| j.status.is_completing(),
            ("completing", "release"),
        )?;
        let job = self.job_mut(job_id)?;
        let (share, ids) = take_share(job, pos);
        let exclusive = job.exclusive_alloc;
        if job.alloc.is_empty() {
            job.exclusive_alloc = false;
            job.status = job.status.completing_done();
        }
        let id = job.id;
        if let Some(n) = self.nodes.get_mut(node) {
            let held = if share.cpus > 0 { &ids[..] } else { &[] };
            n.give_back(&share, held, exclusive, id, time);
        }
        Ok(())
    }

    /// Where node `node` is in job `job_id`'s allocation, when `may(job)`
    /// says the job may give that share up; otherwise an error that says
    /// which share (`what.0`) it lacks for what (`what.1`).
    fn share_at(
        &self,
        job_id: u32,
        node: usize,
        may: impl Fn(&Job) -> bool,
        what: (&str, &str),
    ) -> Result<usize, ApplyError> {
        let job = self
            .jobs
            .get(&job_id)
            .ok_or(ApplyError::UnknownJob { job_id })?;
        match job.alloc.iter().position(|a| a.node_index == node) {
            Some(pos) if may(job) => Ok(pos),
            _ => {
                let name = self.nodes.get(node).map_or("?", |n| n.name.as_str());
                Err(ApplyError::IllegalTransition {
                    job_id,
                    detail: format!("no {} share on node {name} to {}", what.0, what.1),
                })
            }
        }
    }

    /// Takes node `node` out of running job `job_id`, which goes on with
    /// its other nodes (a failed node of a `--no-kill` job, see
    /// `core::liveness`, or `scontrol update NumNodes=`): the node's share
    /// is freed.
    fn excise_node(&mut self, job_id: u32, node: usize, time: i64) -> Result<(), ApplyError> {
        let running = |j: &Job| {
            j.status.state.holds_resources() && !j.status.is_completing() && j.alloc.len() > 1
        };
        let pos = self.share_at(job_id, node, running, ("running", "take out"))?;
        let job = self.job_mut(job_id)?;
        let (share, ids) = take_share(job, pos);
        let batch_host = match job.resize.as_deref() {
            Some(r) if r.batch_host.is_some() => r.batch_host,
            _ => (pos == 0).then_some(node),
        };
        job.resize = Some(Box::new(job::Resize { time, batch_host }));
        let (exclusive, id) = (job.exclusive_alloc, job.id);
        if let Some(n) = self.nodes.get_mut(node) {
            let held = if share.cpus > 0 { &ids[..] } else { &[] };
            n.give_back(&share, held, exclusive, id, time);
        }
        Ok(())
    }

    fn id_after(&self, id: u32) -> u32 {
        if id >= self.cfg.max_job_id {
            self.cfg.first_job_id
        } else {
            id + 1
        }
    }

    /// The scheduler's view of the cluster now.
    pub fn cluster_view(&self) -> ClusterView {
        ClusterView {
            nodes: self
                .nodes
                .iter()
                .map(|n| NodeView {
                    name: n.name.clone(),
                    cpus: n.cpus,
                    real_memory_mb: n.real_memory_mb,
                    features: n.active_features().to_vec(),
                    weight: n.weight_now(),
                    usable: n.state.is_schedulable(),
                    alloc_cpus: n.alloc_cpus,
                    alloc_mem_mb: if self.cfg.sched.track_memory {
                        n.alloc_mem_mb
                    } else {
                        0
                    },
                    exclusive_owner: n.exclusive_owner,
                    tmp_disk_mb: n.tmp_disk_mb,
                    sockets: u32::from(n.sockets),
                    cores_per_socket: u32::from(n.cores_per_socket),
                    threads_per_core: u32::from(n.threads_per_core),
                    users: slurm_sched::NodeUsers::Nobody,
                    user_exclusive: None,
                })
                .collect(),
            partitions: self.partition_views(),
            config: self.cfg.sched,
            licenses: self.license_views(),
        }
    }

    /// The partitions as the scheduler sees them (what their jobs hold
    /// is [`Controller::note_holder`]'s).
    fn partition_views(&self) -> Vec<slurm_sched::PartitionView> {
        let mut views: Vec<slurm_sched::PartitionView> =
            self.partitions.iter().map(|p| p.view.clone()).collect();
        if self.cfg.lln {
            for v in &mut views {
                v.lln = true;
            }
        }
        views
    }

    /// What job `job`, which holds nodes, adds to `view`: whose jobs hold
    /// each of its nodes and whose `--exclusive=user` job (or job of an
    /// ExclusiveUser=YES partition) does, and the CPUs its partition holds
    /// there when the partition has a MaxCPUsPerNode, counted as the nodes
    /// count them (a completing job's share until its node is done, none
    /// for a suspended one). Applied by the walks over the jobs that
    /// scheduling and start estimates make anyway; a view made for
    /// admission alone does without.
    pub(crate) fn note_holder(&self, view: &mut ClusterView, job: &Job) {
        let ClusterView {
            nodes, partitions, ..
        } = view;
        let part = job.partition.and_then(|p| partitions.get_mut(p));
        let exclusive_user =
            job.spec.exclusive_user() || part.as_ref().is_some_and(|p| p.exclusive_user);
        let mut capped = part.filter(|p| p.max_cpus_per_node.is_some());
        if let Some(p) = capped.as_mut() {
            p.used_cpus.resize(nodes.len(), 0);
        }
        for a in job.alloc.iter() {
            if let Some(n) = nodes.get_mut(a.node_index) {
                n.users = n.users.with(job.uid);
                if exclusive_user {
                    n.user_exclusive = Some(job.uid);
                }
            }
            if let Some(c) = capped
                .as_mut()
                .and_then(|p| p.used_cpus.get_mut(a.node_index))
            {
                *c = c.saturating_add(job.counted_share(a).cpus);
            }
        }
    }

    /// When the time limit ends running job `job`: the end of its limit
    /// plus OverTimeLimit (its partition's, else slurm.conf's); never
    /// under an unlimited one.
    pub(crate) fn kill_time(&self, job: &Job) -> Option<i64> {
        let end = job.deadline()?;
        let over = job
            .partition
            .and_then(|p| self.partitions.get(p))
            .and_then(|p| p.conf.over_time_limit)
            .unwrap_or(self.cfg.over_time_limit);
        let secs = i64::try_from(over.as_secs()?).unwrap_or(i64::MAX);
        Some(end.saturating_add(secs))
    }

    /// The scheduler's request for a pending job.
    pub(crate) fn job_request(&self, job: &Job) -> slurm_sched::JobRequest {
        let mut r = slurm_sched::JobRequest::new(job.id, job.partition.unwrap_or(usize::MAX));
        if job.partition_name.contains(',') {
            r.other_partitions = job::partition_names(&job.partition_name)
                .filter_map(|n| self.part_index.get(n).copied())
                .filter(|&i| Some(i) != job.partition)
                .collect();
        }
        r.priority = job.priority();
        r.submit_time = job.submit_time;
        r.min_nodes = job.shape.min_nodes;
        r.max_nodes = job.shape.max_nodes;
        r.ntasks = job.shape.ntasks;
        r.ntasks_given = job.shape.ntasks_given;
        r.ntasks_per_node = job.shape.ntasks_per_node;
        r.cpus_per_task = job.shape.cpus_per_task;
        r.mem = job.shape.mem;
        r.exclusive = job.shape.exclusive;
        r.overcommit = job.shape.overcommit;
        r.spread = job.spec.shown().spread_job;
        r.uid = job.uid;
        r.exclusive_user = job.spec.exclusive_user();
        r.required_nodes = self.node_list(&job.spec.required_nodes).unwrap_or_default();
        r.excluded_nodes = self.node_list(&job.spec.excluded_nodes).unwrap_or_default();
        if !job.spec.gres.is_empty() {
            // No GRES scheduling yet: a --gres job is kept off the nodes
            // whose Gres= lacks it, as a required feature would keep it
            // (`core::gres`).
            r.excluded_nodes.extend(self.gres_excluded(&job.spec.gres));
        }
        r.constraint = if job.spec.constraint.is_empty() {
            None
        } else {
            slurm_sched::Constraint::parse(&job.spec.constraint).ok()
        };
        let parsed = |text: &str| {
            (!text.is_empty())
                .then(|| slurm_sched::Constraint::parse(text).ok())
                .flatten()
        };
        r.prefer = parsed(&job.spec.shown().prefer);
        r.batch_features = parsed(&job.spec.shown().batch_features);
        r.time_limit = job.shape.time_limit;
        r.begin_time = job.shape.begin_time;
        r.hold = job.hold;
        // --tmp, --licenses, --deadline, --gpus (`core::extras`).
        let extras = job.spec.extras();
        r.tmp_disk_mb = extras.tmp_disk_mb;
        r.min_cpus_per_node = job.spec.min_cpus_per_node.unwrap_or(0);
        // A CPU count set above what the tasks take (`scontrol update
        // NumCPUs=`): a job given no task count takes it as tasks, on as
        // many nodes as they need (Slurm runs `NumCPUs=3` on two nodes of
        // 2 CPUs, 2 and 1); one given a task count spreads it over the
        // nodes it asks for.
        if let Some(cpus) = job.spec.shown().num_cpus {
            if cpus > job.task_cpus() {
                if job.shape.ntasks_given {
                    let per_node = cpus.div_ceil(job.shape.min_nodes.max(1));
                    r.min_cpus_per_node = r.min_cpus_per_node.max(per_node);
                } else {
                    let tasks = cpus.div_ceil(job.shape.cpus_per_task.max(1));
                    r.ntasks = r.ntasks.max(tasks);
                }
            }
        }
        if let Some(shown) = &job.spec.shown {
            r.layout = [
                shown.sockets_per_node.unwrap_or(0),
                shown.cores_per_socket.unwrap_or(0),
                shown.threads_per_core.unwrap_or(0),
            ];
        }
        r.licenses = self.license_needs(job);
        r.deadline = (extras.deadline > 0).then_some(extras.deadline);
        if !extras.node_gres.is_empty() {
            r.excluded_nodes
                .extend(self.gres_excluded(&extras.node_gres));
        }
        r.blocked_by = depend::blocker(job);
        // Slurm keeps some reasons from pass to pass (`slurm_sched::plan`).
        r.prior_reason = (job.last_sched_eval != 0).then_some(job.reason);
        r
    }

    /// Node indices of a hostlist expression; `Err` names the first unknown
    /// node (or the expression when it does not parse).
    pub(crate) fn node_list(&self, expr: &str) -> Result<Vec<usize>, String> {
        if expr.trim().is_empty() {
            return Ok(Vec::new());
        }
        let names = slurm_common::hostlist::expand(expr).map_err(|_| expr.to_string())?;
        names
            .iter()
            .map(|n| self.node_index.get(n).copied().ok_or_else(|| n.clone()))
            .collect()
    }

    /// One scheduling pass: starts what fits, records why the rest waits.
    ///
    /// Does nothing unless something changed since the last pass (see
    /// [`Controller::needs_schedule`]): with a long queue that nothing can
    /// change, rebuilding it after every batch would be pure cost.
    pub fn schedule(&mut self, now: i64) -> Outcome {
        let mut out = Outcome::default();
        if !std::mem::replace(&mut self.sched_dirty, false) {
            return out;
        }
        self.last_pass = now;
        self.second_look = None;
        // Dependencies are tested first; what starts may satisfy more
        // (`after`): then another round (`core::depend`).
        while self.schedule_round(&mut out, now) {}
        self.sched_dirty = false;
        out
    }

    /// One round of [`Controller::schedule`]; true when its starts changed
    /// a dependency, so that another round may start more, or split tasks
    /// off an array that has more left (the next round starts them or
    /// says why not).
    fn schedule_round(&mut self, out: &mut Outcome, now: i64) -> bool {
        self.refresh_dependencies(out, now);
        let mut view = self.cluster_view();
        let mut running = None;
        let free_cpus = view
            .nodes
            .iter()
            .filter(|n| n.usable)
            .map(|n| n.cpus.saturating_sub(n.alloc_cpus))
            .fold(0u32, u32::saturating_add);
        let mut queue: Vec<slurm_sched::JobRequest> = Vec::new();
        for j in self.jobs.values() {
            // One walk: what the running jobs hold, and the queue.
            if !j.alloc.is_empty() {
                self.note_holder(&mut view, j);
            }
            if !j.is_schedulable() {
                continue;
            }
            let at = queue.len();
            self.queue_job(j, &mut running, free_cpus, &mut queue);
            // Jobs that can no longer end by their --deadline are not
            // started (`core::deadline`).
            if self.misses_deadline(j, now) {
                for r in &mut queue[at..] {
                    r.deadline_missed = true;
                }
            }
        }
        if queue.is_empty() {
            return false;
        }
        let plan = slurm_sched::schedule(&view, &queue, now);
        let mut tasks_left = false;
        for start in &plan.starts {
            // A meta record's start is its next task's (`core::array`).
            let Some(job_id) = self.array_start_id(out, start.job.get(), now) else {
                continue;
            };
            // Tasks left: another round gives them their reason.
            tasks_left |= job_id != start.job.get();
            let allocs = start
                .nodes
                .iter()
                .filter_map(|a| {
                    self.nodes.get(a.node_index).map(|n| AllocRecord {
                        node: n.name.clone(),
                        cpus: a.cpus,
                        mem_mb: a.mem_mb,
                        tasks: a.tasks,
                    })
                })
                .collect();
            // A job listed in several partitions records the one it got.
            let partition = self
                .jobs
                .get(&job_id)
                .filter(|j| j.partition_name.contains(','))
                .and_then(|_| self.partitions.get(start.partition))
                .map(|p| p.name().to_string());
            let event = Event::JobStarted {
                job_id,
                time: now,
                time_limit: start.time_limit,
                exclusive: start.exclusive,
                allocs,
                partition,
            };
            if self.emit(out, event) {
                // The Prologs first: the batch host's waits for its own.
                if let Some(action) = self.prolog_action(job_id) {
                    out.actions.push(action);
                }
                if let Some(action) = self.launch_action(job_id) {
                    out.actions.push(action);
                }
            }
        }
        // An array's copies after its first pending one get `Priority`
        // behind it: the first one's reason is the array's.
        let mut arrays_seen = Vec::new();
        let mut missed = Vec::new();
        for &(id, reason) in &plan.pending {
            if reason == PendingReason::DeadLine {
                missed.push(id.get());
                continue;
            }
            let meta = self.jobs.get(&id.get()).is_some_and(|j| j.array.is_some());
            if meta {
                if arrays_seen.contains(&id) {
                    continue;
                }
                arrays_seen.push(id);
            }
            if let Some(job) = self.jobs.get_mut(&id.get()) {
                let desc = plan.description_of(id).filter(|d| *d != job.reason_detail);
                if job.last_sched_eval == 0 && reason == PendingReason::PartitionConfig {
                    self.second_look = Some(now.saturating_add(1));
                }
                if job.reason != reason || job.last_sched_eval == 0 || desc.is_some() {
                    let job = Arc::make_mut(job);
                    job.reason = reason;
                    job.last_sched_eval = now;
                    if let Some(d) = desc {
                        job.reason_detail = d.to_string();
                    }
                }
            }
        }
        for id in missed {
            self.end_deadline_job(out, id, now);
        }
        // Planned starts of the jobs left waiting (`core::estimate`).
        self.refresh_planned_starts(&queue, &plan.pending, now);
        let changed = !plan.starts.is_empty() && self.refresh_dependencies(out, now);
        changed || tasks_left
    }

    /// Script segments no job uses any more; the shell removes them once
    /// the purge that freed them is durable.
    pub fn take_freed_segments(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.freed_segments)
    }

    /// Script space bookkeeping (the shell checks the segment files
    /// against it at startup).
    pub fn script_space(&self) -> &ScriptSpace {
        &self.scripts
    }

    /// Whether the next [`Controller::schedule`] would do a pass.
    pub fn needs_schedule(&self) -> bool {
        self.sched_dirty
    }

    /// Asks for a pass even though no event changed anything (the timer:
    /// a `--begin` time may have come).
    pub fn request_schedule(&mut self) {
        self.sched_dirty = true;
    }

    /// Applies `event` and records it in `out`; false (and nothing
    /// recorded) when it does not fit, which is a bug in `handle`.
    pub(crate) fn emit(&mut self, out: &mut Outcome, event: Event) -> bool {
        match self.apply(&event) {
            Ok(()) => {
                out.events.push(event);
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "internal: refused own event");
                false
            }
        }
    }

    /// The earliest time the timer must look at: a time limit, a stuck
    /// cleanup, a MinJobAge purge (these may be due already: the next
    /// [`Command::Tick`] handles them), a `--begin` later than `now`
    /// (one already reached is the scheduler's business, not the timer's),
    /// the end of SlurmdTimeout for a node that stopped answering, a
    /// `--signal` due (`core::signal`), or the moment a pending job can no
    /// longer end by its `--deadline` (`core::deadline`).
    pub fn next_deadline(&self, now: i64) -> Option<i64> {
        let jobs = self
            .jobs
            .values()
            .filter_map(|j| {
                if j.deadline().is_some() {
                    return self.kill_time(j);
                }
                if j.status.is_completing() {
                    return Some(j.end_time.saturating_add(self.cfg.completing_timeout_secs));
                }
                if j.status.state == JobState::Pending {
                    let begin = j.shape.begin_time.filter(|&b| b > now);
                    return begin.or_else(|| self.dependency_deadline(j, now));
                }
                if j.status.state.is_finished() {
                    return Some(j.end_time.saturating_add(self.cfg.min_job_age_secs));
                }
                None
            })
            .min();
        // --signal sends and --deadline misses (`core::signal`, `core::deadline`).
        [
            jobs,
            self.next_node_deadline(),
            self.next_signal_due(),
            self.next_deadline_miss(),
            self.next_periodic_pass(),
            self.second_look,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// When the periodic pass is due: sched_interval after the last pass,
    /// while some job waits; `None` with nothing waiting, so that an idle
    /// controller sleeps.
    fn next_periodic_pass(&self) -> Option<i64> {
        let every = self.cfg.sched_interval_secs;
        if every <= 0 || !self.jobs.values().any(|j| j.is_schedulable()) {
            return None;
        }
        Some(self.last_pass.saturating_add(every))
    }

    /// Checks cross-table invariants: node counters equal the sum of the
    /// allocations of the jobs holding them, no node is oversubscribed, and
    /// the MaxJobCount count equals a count of the records.
    pub fn sanity_check(&self) -> Result<(), SanityError> {
        let counted = self.count_jobs();
        if self.job_count != counted {
            return Err(SanityError(format!(
                "{} jobs counted against MaxJobCount, the records hold {counted}",
                self.job_count
            )));
        }
        let mut cpus = vec![0u64; self.nodes.len()];
        let mut mem = vec![0u64; self.nodes.len()];
        for job in self.jobs.values() {
            let holds = job.status.state.holds_resources() || job.status.is_completing();
            if !holds && !job.alloc.is_empty() {
                return Err(SanityError(format!(
                    "job {} in state {} still holds nodes",
                    job.id, job.status
                )));
            }
            if job.status.state == JobState::Running && job.alloc.is_empty() {
                return Err(SanityError(format!("running job {} has no nodes", job.id)));
            }
            // A suspended job's CPUs, and only its, are given back.
            let suspended = job.status.state == JobState::Suspended;
            if job.status.state.holds_resources() && job.cores_released() != suspended {
                return Err(SanityError(format!(
                    "job {} in state {} counts its CPUs {}",
                    job.id,
                    job.status,
                    if suspended { "held" } else { "released" }
                )));
            }
            for a in job.alloc.iter().map(|a| job.counted_share(a)) {
                let Some(c) = cpus.get_mut(a.node_index) else {
                    return Err(SanityError(format!(
                        "job {} uses node index {}",
                        job.id, a.node_index
                    )));
                };
                *c += u64::from(a.cpus);
                mem[a.node_index] += a.mem_mb;
            }
        }
        // The CPU ids the jobs hold, as their nodes count them.
        let mut use_of: Vec<Vec<u16>> = self
            .nodes
            .iter()
            .map(|n| vec![0; n.cpu_use.len()])
            .collect();
        for job in self.jobs.values() {
            if job.alloc.is_empty() {
                if !job.cpu_ids.is_empty() {
                    return Err(SanityError(format!(
                        "job {} holds cpu ids without nodes",
                        job.id
                    )));
                }
                continue;
            }
            if job.cpu_ids.len() != job.alloc.len() {
                return Err(SanityError(format!(
                    "job {} has cpu ids for {} of its {} shares",
                    job.id,
                    job.cpu_ids.len(),
                    job.alloc.len()
                )));
            }
            if job.cores_released() {
                continue;
            }
            for (a, ids) in job.alloc.iter().zip(job.cpu_ids.iter()) {
                for &i in ids.iter() {
                    if let Some(u) = use_of[a.node_index].get_mut(i as usize) {
                        *u += 1;
                    }
                }
            }
        }
        for (n, counted) in self.nodes.iter().zip(&use_of) {
            if n.cpu_use != *counted {
                return Err(SanityError(format!(
                    "node {} counts cpu use {:?}, jobs hold {:?}",
                    n.name, n.cpu_use, counted
                )));
            }
        }
        let mut comp_jobs = vec![0u32; self.nodes.len()];
        let mut comp_cpus = vec![0u32; self.nodes.len()];
        for job in self.jobs.values().filter(|j| j.status.is_completing()) {
            for a in &job.alloc {
                comp_jobs[a.node_index] += 1;
                comp_cpus[a.node_index] += job.counted_share(a).cpus;
            }
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if (n.completing_jobs, n.completing_cpus) != (comp_jobs[i], comp_cpus[i]) {
                return Err(SanityError(format!(
                    "node {} counts {} completing jobs/{} cpus, jobs hold {}/{}",
                    n.name, n.completing_jobs, n.completing_cpus, comp_jobs[i], comp_cpus[i]
                )));
            }
            if n.state.has(NodeFlag::Completing) != (comp_jobs[i] > 0) {
                return Err(SanityError(format!(
                    "node {} is {} with {} completing jobs",
                    n.name,
                    n.state.display_long(),
                    comp_jobs[i]
                )));
            }
            // CPUs held by several shares (a job resumed onto CPUs taken
            // meanwhile) count once.
            let held = use_of[i].iter().filter(|&&u| u > 0).count() as u64;
            if u64::from(n.alloc_cpus) != held || n.alloc_mem_mb != mem[i] {
                return Err(SanityError(format!(
                    "node {} counts {} cpus/{} MB, jobs hold {}/{} (shares of {} cpus)",
                    n.name, n.alloc_cpus, n.alloc_mem_mb, held, mem[i], cpus[i]
                )));
            }
            if n.alloc_cpus > n.cpus {
                return Err(SanityError(format!(
                    "node {} oversubscribed: {} of {} cpus",
                    n.name, n.alloc_cpus, n.cpus
                )));
            }
            if n.exclusive_owner.is_some() && n.alloc_cpus == 0 {
                return Err(SanityError(format!(
                    "node {} has an exclusive owner and no allocation",
                    n.name
                )));
            }
        }
        Ok(())
    }
}

fn illegal(job_id: u32, e: slurm_common::state::IllegalTransition) -> ApplyError {
    ApplyError::IllegalTransition {
        job_id,
        detail: e.to_string(),
    }
}

/// The state a node has once registered, from its allocation.
pub(crate) fn up_state(flags: NodeState, alloc_cpus: u32, cpus: u32) -> NodeState {
    NodeState {
        base: NodeBaseState::from_alloc(alloc_cpus, cpus),
        flags: flags.flags,
    }
    .without(NodeFlag::NotResponding)
}

/// One `scontrol update` change applied to `job` (also to a copy, to check
/// what the job would become).
pub(crate) fn apply_job_change(job: &mut Job, c: &JobChange, part_index: &HashMap<String, usize>) {
    match c {
        JobChange::TimeLimit(l) => {
            job.shape.time_limit = Some(*l);
            if job.status.state.holds_resources() {
                job.run_limit = Some(*l);
            }
        }
        JobChange::Partition(p) => {
            job.partition = job::first_partition(p, part_index);
            job.partition_name.clone_from(p);
        }
        JobChange::MinNodes(n) => {
            job.shape.min_nodes = (*n).max(1);
            job.shape.ntasks = job.shape.ntasks.max(job.shape.min_nodes);
            // A CPU count kept from before grows with the tasks, and with
            // a MinCPUsNode set on every node, as Slurm's does.
            if let Some(kept) = job.spec.shown().num_cpus {
                let per_node = job.spec.shown().min_cpus_per_node.unwrap_or(0);
                let wanted = job
                    .task_cpus()
                    .max(per_node.saturating_mul(job.shape.min_nodes));
                if wanted > kept {
                    job.spec.make_mut().shown_mut().num_cpus = Some(wanted);
                }
            }
        }
        JobChange::MaxNodes(n) => job.shape.max_nodes = *n,
        JobChange::Name(s) => job.name.clone_from(s),
        JobChange::Comment(s) => job.comment.clone_from(s),
        JobChange::Priority(p) => {
            job.base_priority = *p;
            job.nice = 0;
            job.spec.make_mut().shown_mut().priority_set = true;
        }
        JobChange::Nice(n) => job.nice = *n,
        JobChange::NicePriority { priority, nice } => {
            // Shown as `priority` (base less nice).
            let base = i64::from(*priority) + i64::from(*nice);
            job.base_priority = u32::try_from(base.clamp(0, i64::from(u32::MAX))).unwrap_or(0);
            job.nice = *nice;
            job.hold = None;
        }
        JobChange::BeginTime(t) => {
            job.shape.begin_time = (*t > 0).then_some(*t);
            job.eligible_time = (*t).max(job.submit_time);
        }
        JobChange::Text(field, text) => {
            let spec = job.spec.make_mut();
            let slot = match field {
                SpecText::Account => &mut spec.account,
                SpecText::Qos => &mut spec.qos,
                SpecText::RequiredNodes => &mut spec.required_nodes,
                SpecText::ExcludedNodes => &mut spec.excluded_nodes,
                SpecText::Features => &mut spec.constraint,
                SpecText::WorkDir => &mut spec.work_dir,
                SpecText::StdOut => &mut spec.stdout_path,
                SpecText::StdErr => &mut spec.stderr_path,
                SpecText::MailType => &mut spec.mail_type,
                SpecText::MailUser => &mut spec.mail_user,
                SpecText::Gres => &mut spec.gres,
                SpecText::WcKey => &mut spec.wckey,
            };
            *slot = text.as_str().into();
        }
        JobChange::Requeue(on) => job.requeue = *on,
        JobChange::ArrayThrottle(n) => {
            if let Some(a) = job.array.as_mut() {
                a.throttle = *n;
            }
        }
        JobChange::NumTasks(n) => {
            keep_cpu_counts(job);
            job.shape.ntasks = (*n).max(1);
            job.shape.ntasks_given = true;
        }
        JobChange::CpusPerTask(n) => {
            keep_cpu_counts(job);
            job.shape.cpus_per_task = (*n).max(1);
            job.spec.make_mut().cpus_per_task = Some((*n).max(1));
        }
        JobChange::Cpus { min, max } => {
            let shown = job.spec.make_mut().shown_mut();
            shown.num_cpus = Some((*min).max(1));
            shown.max_cpus = *max;
        }
        JobChange::MinCpusPerNode(n) => {
            // On each of its nodes: NumCPUs counts them all, as Slurm's.
            let nodes = job.shape.min_nodes.max(1);
            let spec = job.spec.make_mut();
            spec.min_cpus_per_node = Some(*n);
            let shown = spec.shown_mut();
            shown.min_cpus_per_node = Some(*n);
            shown.num_cpus = Some((*n).max(1).saturating_mul(nodes));
        }
        JobChange::Contiguous(on) => job.spec.make_mut().contiguous = *on,
        JobChange::Sharing(sharing) => {
            job.spec.make_mut().sharing = *sharing;
            job.shape.exclusive = *sharing == slurm_proto::v1::NodeSharing::Exclusive as i32;
        }
        JobChange::Reboot(on) => job.spec.make_mut().shown_mut().reboot = *on,
        JobChange::AdminComment(text) => {
            job.spec.make_mut().shown_mut().admin_comment = Some(text.as_str().into());
        }
        JobChange::Prefer(text) => job.spec.make_mut().shown_mut().prefer = text.as_str().into(),
        JobChange::Memory(m) => job.shape.mem = Some(*m),
        JobChange::Deadline(t) => {
            extras::update(job.spec.make_mut(), |x| x.deadline = (*t).max(0));
        }
        JobChange::TimeMin(m) => {
            extras::update(job.spec.make_mut(), |x| {
                x.time_min_minutes = (*m > 0).then_some(*m);
            });
        }
        JobChange::Licenses(asks) => {
            extras::update(job.spec.make_mut(), |x| {
                x.licenses = asks.clone().into_boxed_slice();
            });
        }
    }
}

/// Removes the share at `pos` of `job`'s allocation; returns it as counted
/// on its node (`Job::counted_share`) with its CPU ids, for the node to get
/// back.
fn take_share(job: &mut Job, pos: usize) -> (NodeAlloc, Box<[u32]>) {
    let mut rest = job.alloc.to_vec();
    let share = job.counted_share(&rest.remove(pos));
    job.alloc = rest.into_boxed_slice();
    let mut ids = job.cpu_ids.to_vec();
    let held = if pos < ids.len() {
        ids.remove(pos)
    } else {
        Box::default()
    };
    job.cpu_ids = ids.into_boxed_slice();
    (share, held)
}

/// Before a pending job's tasks or CPUs per task change: its CPU count and
/// MinCPUsNode stay what they were, as Slurm keeps the counts it computed
/// at submission.
fn keep_cpu_counts(job: &mut Job) {
    let cpus = job.pending_cpus();
    let per_node = job.min_cpus_per_node();
    let shown = job.spec.make_mut().shown_mut();
    shown.min_cpus_per_node.get_or_insert(per_node);
    shown.num_cpus.get_or_insert(cpus);
}

/// Limit shown for a job: its own or the partition default.
pub fn effective_limit(job: &Job, part: Option<&PartRec>) -> TimeLimit {
    if let Some(l) = job.run_limit {
        return l;
    }
    job.shape.time_limit.unwrap_or_else(|| {
        part.map_or(TimeLimit::Infinite, |p| {
            p.view.default_time.unwrap_or(p.view.max_time)
        })
    })
}
