//! One scheduling pass: [`schedule`] turns a view and a queue into a
//! [`Plan`].
//!
//! The pass is Slurm's main scheduler without backfill:
//!
//! 1. Order the queue: partition `PriorityTier` (high first), job priority
//!    (high first), submit time, job id.
//! 2. For each job, the gates that do not depend on free resources, in
//!    Slurm's order: holds, outside blockers (dependencies, limits),
//!    `--begin`, partition state, partition time and node-count limits, a
//!    node count the partition cannot have. A job stopped here blocks nobody.
//! 3. If an earlier job of the same partition could not start, the job waits
//!    with `Priority` (strict order within a partition). As in Slurm, that
//!    replaces only no reason or `Resources`: a job that waited for down
//!    nodes or licenses keeps that reason and its text, and a job no pass
//!    has seen yet gets what Slurm gives at submission (`ReqNodeNotAvail`
//!    naming the unavailable nodes when only those would do). A job whose
//!    `--licenses` are not all free waits with `Licenses` and, as in Slurm,
//!    holds back nobody.
//! 4. A job with fewer usable nodes left in its partition than it needs
//!    (down, drained, or kept back for jobs ahead) waits with `Resources`
//!    and Slurm's description "Nodes required for job are DOWN, DRAINED or
//!    reserved for jobs in higher priority partitions", and blocks the
//!    partition.
//! 5. Otherwise it is placed on what is free ([`crate::fit`]) and started, or
//!    the failure is explained: `Resources` if it would fit an empty cluster,
//!    `ReqNodeNotAvail` (described as `ReqNodeNotAvail,
//!    UnavailableNodes:...`) if only nodes that are down or drained stand in
//!    the way, `BadConstraints`/`PartitionConfig` if it can never fit. A
//!    `Resources` job blocks its partition (step 3) and reserves the
//!    partition's nodes: later jobs of other partitions may not use them
//!    (they get `Priority` if that is all that stops them), so no job ever
//!    takes resources a job ahead of it is waiting for. A job that names
//!    (`-w`) all the nodes it needs reserves only those and blocks nobody
//!    else, as in Slurm.
//!
//! The description (Slurm's `state_desc`) is what squeue `%r` and
//! `scontrol show job` print in place of the reason when there is one;
//! [`Plan::descriptions`] carries it. Because Slurm keeps some reasons from
//! one pass to the next, the pass reads the one each job had
//! ([`JobRequest::prior_reason`]).
//!
//! Backfill will be a second pass over the jobs this one leaves with
//! `Resources` or `Priority`, with the same [`crate::fit::select`] applied to
//! a free-resources-over-time profile; nothing here needs to change for it.

use slurm_common::hostlist;
use slurm_common::ids::JobId;
use slurm_common::reason::{
    req_node_not_avail_text, PendingReason, NODES_DOWN_DRAINED_OR_RESERVED,
};
use slurm_common::time::TimeLimit;

use crate::fit::{self, Pool, Shape};
use crate::request::{Hold, JobRequest, MemReq};
use crate::view::{ClusterView, PartitionState, PartitionView};
use slurm_common::counts::compress_counts;

/// What one node gives a started job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeAlloc {
    /// Index into [`ClusterView::nodes`].
    pub node_index: usize,
    pub cpus: u32,
    /// 0 unless memory is a consumable resource.
    pub mem_mb: u64,
    /// Tasks laid out on this node (block distribution).
    pub tasks: u32,
}

/// A job to start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub job: JobId,
    /// Index into [`ClusterView::partitions`]: the one it starts in, of
    /// those it asked for.
    pub partition: usize,
    /// In node order; the first one is the batch host.
    pub nodes: Vec<NodeAlloc>,
    /// The job's limit, or the partition's default where it gave none.
    pub time_limit: TimeLimit,
    /// The job holds its nodes whole (`--exclusive` or
    /// `OverSubscribe=EXCLUSIVE`): set `exclusive_owner` on them.
    pub exclusive: bool,
}

impl Start {
    pub fn total_cpus(&self) -> u64 {
        self.nodes.iter().map(|a| u64::from(a.cpus)).sum()
    }

    pub fn node_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().map(|a| a.node_index)
    }

    /// `SLURM_JOB_CPUS_PER_NODE`, e.g. `2(x2)`.
    pub fn cpus_per_node(&self) -> String {
        compress_counts(&self.nodes.iter().map(|a| a.cpus).collect::<Vec<_>>())
    }

    /// `SLURM_TASKS_PER_NODE`, e.g. `2,1`.
    pub fn tasks_per_node(&self) -> String {
        compress_counts(&self.nodes.iter().map(|a| a.tasks).collect::<Vec<_>>())
    }
}

/// The outcome of a pass: jobs to start, and a reason for every other job of
/// the queue, in scheduling order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub starts: Vec<Start>,
    pub pending: Vec<(JobId, PendingReason)>,
    /// The description (Slurm's `state_desc`) of each pending job whose
    /// reason this pass decided: squeue `%r` and `scontrol show job` print
    /// it in place of the reason's name when it is not empty. A job not
    /// listed keeps the description it had (a hold keeps "launch failed
    /// requeued held"; a reason kept from an earlier pass keeps its text).
    pub descriptions: Vec<(JobId, String)>,
}

impl Plan {
    /// The reason given to `job`, if it stays pending.
    pub fn reason_of(&self, job: JobId) -> Option<PendingReason> {
        self.pending
            .iter()
            .find(|(id, _)| *id == job)
            .map(|&(_, r)| r)
    }

    /// The description this pass gives `job`: `None` when it keeps the
    /// one it had, `Some("")` when it has none.
    pub fn description_of(&self, job: JobId) -> Option<&str> {
        self.descriptions
            .iter()
            .find(|(id, _)| *id == job)
            .map(|(_, d)| d.as_str())
    }

    /// The start planned for `job`, if any.
    pub fn start_of(&self, job: JobId) -> Option<&Start> {
        self.starts.iter().find(|s| s.job == job)
    }
}

/// The order jobs are considered in: one entry `(queue position,
/// partition)` per partition a job may run in, each keyed by that
/// partition's tier. Equal keys cannot happen for distinct ids; the queue
/// position and then the job's own order of partitions break ties among
/// duplicates, so the order is total and the plan deterministic.
pub(crate) fn queue_order(view: &ClusterView, queue: &[JobRequest]) -> Vec<(usize, usize)> {
    let mut keyed = Vec::with_capacity(queue.len());
    for (pos, j) in queue.iter().enumerate() {
        let parts = std::iter::once(j.partition).chain(j.other_partitions.iter().copied());
        for (rank, part) in parts.enumerate() {
            let tier = view.partitions.get(part).map_or(0, |p| p.priority_tier);
            keyed.push((
                (
                    std::cmp::Reverse(tier),
                    std::cmp::Reverse(j.priority),
                    j.submit_time,
                    j.id,
                    pos,
                    rank,
                ),
                part,
            ));
        }
    }
    keyed.sort_unstable();
    keyed.into_iter().map(|(k, part)| (k.4, part)).collect()
}

/// The job's time limit, resolved against its partition.
pub(crate) fn effective_time_limit(job: &JobRequest, part: &PartitionView) -> TimeLimit {
    job.time_limit.unwrap_or_else(|| {
        part.default_time
            .unwrap_or(part.max_time)
            .min(part.max_time)
    })
}

/// The gates of step 2 that depend only on the job and its partition.
pub(crate) fn partition_gate(
    view: &ClusterView,
    job: &JobRequest,
    part: &PartitionView,
    shape: &Shape,
) -> Option<PendingReason> {
    match part.state {
        PartitionState::Down => return Some(PendingReason::PartitionDown),
        PartitionState::Inactive => return Some(PendingReason::PartitionInactive),
        PartitionState::Up | PartitionState::Drain => {}
    }
    if effective_time_limit(job, part) > part.max_time {
        return Some(PendingReason::PartitionTimeLimit);
    }
    if let Some(MemReq::PerNode(limit)) = part.max_mem {
        if over_mem_limit(view, part, shape, limit) {
            return Some(PendingReason::MaxMemPerLimit);
        }
    }
    let below_min = job.max_nodes.is_some_and(|m| m < part.min_nodes);
    let above_max = part.max_nodes.is_some_and(|m| shape.min_nodes > m);
    if below_min || above_max {
        return Some(PendingReason::PartitionNodeLimit);
    }
    if shape.min_nodes as usize > part.nodes.len() {
        // Slurm says PartitionConfig when the job is submitted, and
        // PartitionNodeLimit from its first scheduling pass on; a
        // partition without any node stays PartitionConfig.
        return Some(if job.prior_reason.is_some() && !part.nodes.is_empty() {
            PendingReason::PartitionNodeLimit
        } else {
            PendingReason::PartitionConfig
        });
    }
    None
}

/// Why no job may use `part`, in Slurm's words, when it names the
/// accounts allowed in it (`AllowAccounts=`): a job's account is known
/// only through its association, and without one no account is allowed.
pub fn account_refusal(part: &PartitionView) -> Option<String> {
    part.allow_accounts.as_ref().map(|allowed| {
        format!(
            "Job's account not known, so it can't use this partition ({} allows {})",
            part.name,
            allowed.join(",")
        )
    })
}

/// Whether the memory a job needs on each node (`shape`) goes over the
/// partition's MaxMemPerNode (`limit`, MB). All of a node's memory (no
/// request and no default, or `--mem=0`) is over when some node of the
/// partition has more. MaxMemPerCPU is not checked: Slurm gives the job
/// more CPUs per task instead.
fn over_mem_limit(view: &ClusterView, part: &PartitionView, shape: &Shape, limit: u64) -> bool {
    match shape.mem {
        fit::MemNeed::Nothing => false,
        fit::MemNeed::PerNode(m) => m > limit,
        fit::MemNeed::PerCpu(m) => m.saturating_mul(u64::from(shape.cpus_per_task)) > limit,
        fit::MemNeed::WholeNode => part
            .nodes
            .iter()
            .filter_map(|&i| view.nodes.get(i))
            .any(|n| n.real_memory_mb > limit),
    }
}

/// Why a job that does not fit now cannot start, given that nodes in
/// `blocked` were reserved for jobs ahead of it.
struct Diagnosis<'a> {
    view: &'a ClusterView,
    empty_usable: Option<Pool>,
    empty_all: Option<Pool>,
}

impl<'a> Diagnosis<'a> {
    fn new(view: &'a ClusterView) -> Self {
        Diagnosis {
            view,
            empty_usable: None,
            empty_all: None,
        }
    }

    /// How the job fits a cluster with nothing running: on its usable
    /// nodes, only if nodes that are down or drained take part, or never.
    /// A job that requires an unusable node never fits the usable ones.
    fn empty_fit(
        &mut self,
        job: &JobRequest,
        shape: &Shape,
        part: &PartitionView,
        order: &[usize],
    ) -> EmptyFit {
        let view = self.view;
        let required_down = job
            .required_nodes
            .iter()
            .any(|&i| view.nodes.get(i).is_some_and(|n| !n.usable));
        if !required_down {
            let empty = self
                .empty_usable
                .get_or_insert_with(|| Pool::empty(view, false))
                .for_partition(view, part, &[]);
            if fit::select(view, job, shape, &empty, order, None).is_some() {
                return EmptyFit::Usable;
            }
        }
        let all = self
            .empty_all
            .get_or_insert_with(|| Pool::empty(view, true))
            .for_partition(view, part, &[]);
        if fit::select(view, job, shape, &all, order, None).is_some() {
            EmptyFit::WithUnusable
        } else {
            EmptyFit::Never
        }
    }

    /// Whether the job fits an empty cluster only if nodes that are down
    /// or drained take part (what `ReqNodeNotAvail` means).
    fn needs_unusable_nodes(
        &mut self,
        job: &JobRequest,
        shape: &Shape,
        part: &PartitionView,
        order: &[usize],
    ) -> bool {
        self.empty_fit(job, shape, part, order) == EmptyFit::WithUnusable
    }

    fn explain(
        &mut self,
        job: &JobRequest,
        shape: &Shape,
        part: &PartitionView,
        order: &[usize],
        pool: &Pool,
        blocked_any: bool,
    ) -> PendingReason {
        let view = self.view;
        if blocked_any && fit::select(view, job, shape, pool, order, None).is_some() {
            return PendingReason::Priority;
        }
        match self.empty_fit(job, shape, part, order) {
            EmptyFit::Usable => PendingReason::Resources,
            EmptyFit::WithUnusable => PendingReason::ReqNodeNotAvail,
            EmptyFit::Never => never_fits(view, job, order),
        }
    }
}

/// The reason of a job its partition can never run, even emptied. As in
/// Slurm 22.05, where the partition's CPU limits are a gate of their own
/// and the node configuration is found wanting only when the job is
/// tried: a feature no node has, or a node configuration no node offers
/// (more memory, `--tmp` or `--mincpus` than any node has: a job
/// submitted held and released, or one the nodes shrank under) is
/// `BadConstraints`; anything else, too many CPUs or nodes for the
/// partition, is `PartitionConfig`.
fn never_fits(view: &ClusterView, job: &JobRequest, order: &[usize]) -> PendingReason {
    let feature_exists = order.iter().any(|&i| fit::features_allowed(view, job, i));
    if job.constraint.is_some() && !feature_exists {
        return PendingReason::BadConstraints;
    }
    match crate::submit::check_submit(view, job) {
        Err(
            crate::submit::SubmitRejection::NodeConfigUnavailable { .. }
            | crate::submit::SubmitRejection::InvalidFeature { .. },
        ) => PendingReason::BadConstraints,
        _ => PendingReason::PartitionConfig,
    }
}

/// How a job fits a cluster with nothing running ([`Diagnosis::empty_fit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EmptyFit {
    Usable,
    WithUnusable,
    Never,
}

/// Whether every license the job asks for is free in that number (a
/// license named twice counts twice). A license the view does not have is
/// never free.
fn licenses_available(job: &JobRequest, free: &[u32]) -> bool {
    job.licenses.iter().all(|need| {
        let wanted: u64 = job
            .licenses
            .iter()
            .filter(|n| n.index == need.index)
            .map(|n| u64::from(n.count))
            .sum();
        free.get(need.index)
            .is_some_and(|&f| u64::from(f) >= wanted)
    })
}

/// The limit of a job starting at `now` with `--deadline` `deadline`: no
/// later than the deadline, in whole minutes (rounded down), as Slurm
/// shortens it.
pub(crate) fn deadline_limit(limit: TimeLimit, deadline: Option<i64>, now: i64) -> TimeLimit {
    let Some(deadline) = deadline else {
        return limit;
    };
    let minutes = deadline.saturating_sub(now).max(0) / 60;
    limit.min(TimeLimit::Minutes(
        u32::try_from(minutes).unwrap_or(u32::MAX),
    ))
}

/// Nodes kept back for jobs that are waiting for resources: later jobs may
/// not use them. A job listed in several partitions may still use what only
/// it keeps back.
struct Blocked {
    /// How many waiting jobs keep each node back.
    count: Vec<u32>,
    /// `count > 0`, the mask [`fit::select`] takes.
    mask: Vec<bool>,
    any: bool,
    /// Per queue position of a job listed in several partitions: the nodes
    /// it keeps back itself.
    own: Vec<(usize, Vec<usize>)>,
}

impl Blocked {
    fn new(nodes: usize) -> Self {
        Blocked {
            count: vec![0; nodes],
            mask: vec![false; nodes],
            any: false,
            own: Vec::new(),
        }
    }

    /// `pos` waits for `nodes` (those of its partition, or the ones it
    /// names with `-w`).
    fn keep_back(&mut self, pos: usize, multi: bool, nodes: &[usize]) {
        let own = if multi {
            if let Some(k) = self.own.iter().position(|(p, _)| *p == pos) {
                Some(k)
            } else {
                self.own.push((pos, Vec::new()));
                Some(self.own.len() - 1)
            }
        } else {
            None
        };
        for &i in nodes {
            if let Some(k) = own {
                let list = &mut self.own[k].1;
                if list.contains(&i) {
                    continue;
                }
                list.push(i);
            }
            if let (Some(c), Some(m)) = (self.count.get_mut(i), self.mask.get_mut(i)) {
                *c += 1;
                *m = true;
                self.any = true;
            }
        }
    }

    /// The mask the job at `pos` sees: `None` when nothing is kept back
    /// from it.
    fn for_job(&self, pos: usize) -> Option<std::borrow::Cow<'_, [bool]>> {
        if !self.any {
            return None;
        }
        match self.own.iter().find(|(p, _)| *p == pos) {
            None => Some(std::borrow::Cow::Borrowed(&self.mask)),
            Some((_, mine)) => {
                let mut mask = self.mask.clone();
                for &i in mine {
                    if self.count.get(i) == Some(&1) {
                        mask[i] = false;
                    }
                }
                Some(std::borrow::Cow::Owned(mask))
            }
        }
    }
}

/// Whether `reason`, from one partition of a job listed in several, may
/// replace what an earlier one said. The later one wins unless it says
/// less about when the job may start: a reason about the partition itself
/// (its state or limits, or a request it can never fit) never hides that
/// nodes are down or busy, and down nodes never hide busy ones.
fn replaces(reason: PendingReason, earlier: Option<PendingReason>) -> bool {
    let rank = |r: PendingReason| match r {
        PendingReason::PartitionDown
        | PendingReason::PartitionInactive
        | PendingReason::PartitionTimeLimit
        | PendingReason::PartitionNodeLimit
        | PendingReason::PartitionConfig
        | PendingReason::MaxMemPerLimit
        | PendingReason::BadConstraints => 0,
        PendingReason::ReqNodeNotAvail => 1,
        _ => 2,
    };
    earlier.is_none_or(|e| rank(reason) >= rank(e))
}

/// `order` (weight, then slurm.conf order) with the nodes of each weight
/// taken most idle CPUs first, as LLN places jobs.
fn least_loaded_first(view: &ClusterView, order: &[usize], pool: &Pool) -> Vec<usize> {
    let mut sorted = order.to_vec();
    sorted.sort_by_key(|&i| {
        let weight = view.nodes.get(i).map_or(u32::MAX, |n| n.weight);
        let idle = pool.nodes.get(i).map_or(0, |f| f.cpus);
        (weight, std::cmp::Reverse(idle))
    });
    sorted
}

/// Whether the job names (`-w`) at least as many nodes as it needs: then,
/// as in Slurm, its wait holds back only those nodes.
fn names_its_nodes(job: &JobRequest, shape: &Shape) -> bool {
    let mut named = job.required_nodes.clone();
    named.sort_unstable();
    named.dedup();
    !named.is_empty() && named.len() >= shape.min_nodes as usize
}

/// `ReqNodeNotAvail, UnavailableNodes:...`: the partition's nodes that may
/// not take work, narrowed to the ones the job names when it names any of
/// them, in slurm.conf order.
fn unavailable_text(view: &ClusterView, job: &JobRequest, part: &PartitionView) -> String {
    let down: Vec<usize> = part
        .nodes
        .iter()
        .copied()
        .filter(|&i| view.nodes.get(i).is_some_and(|n| !n.usable))
        .collect();
    let named: Vec<usize> = down
        .iter()
        .copied()
        .filter(|i| job.required_nodes.contains(i))
        .collect();
    let mut shown = if named.is_empty() { down } else { named };
    shown.sort_unstable();
    shown.dedup();
    let names = shown
        .iter()
        .filter_map(|&i| view.nodes.get(i))
        .map(|n| n.name.as_str());
    req_node_not_avail_text(&hostlist::compress(names))
}

/// The verdict for a job behind one that could not start in the same
/// partition. A job no pass has seen yet gets what Slurm gives it at
/// submission: `ReqNodeNotAvail` with the nodes it lacks when only nodes
/// that are down or drained would do, else `Priority`. A job seen before
/// turns to `Priority` from no reason or `Resources`, and keeps any other
/// reason it had (with its text): Slurm does not look at it again until
/// the jobs ahead start.
fn behind_failed(
    view: &ClusterView,
    job: &JobRequest,
    shape: &Shape,
    part: &PartitionView,
    order: &[usize],
    diagnosis: &mut Diagnosis<'_>,
) -> (PendingReason, Option<String>) {
    // As Slurm 22.05 (`-c 3` on 2-CPU nodes behind a job waiting for
    // resources): a job its partition can never run says so, not Priority.
    // Only a new job, or one that said so before, is measured again: one
    // that fitted once still does unless the nodes changed, and a long
    // queue behind a blocked partition should not cost a fit each.
    let measure = matches!(
        job.prior_reason,
        None | Some(PendingReason::PartitionConfig | PendingReason::BadConstraints)
    );
    if measure && diagnosis.empty_fit(job, shape, part, order) == EmptyFit::Never {
        // A node configuration no node offers is found only when the job
        // is tried: behind the blocked partition it waits with Priority.
        let reason = never_fits(view, job, order);
        if reason == PendingReason::PartitionConfig {
            return (reason, Some(String::new()));
        }
    }
    match job.prior_reason {
        None => {
            if diagnosis.needs_unusable_nodes(job, shape, part, order) {
                (
                    PendingReason::ReqNodeNotAvail,
                    Some(unavailable_text(view, job, part)),
                )
            } else {
                (PendingReason::Priority, Some(String::new()))
            }
        }
        Some(PendingReason::None | PendingReason::Resources | PendingReason::Priority) => {
            (PendingReason::Priority, Some(String::new()))
        }
        Some(kept @ (PendingReason::ReqNodeNotAvail | PendingReason::Licenses)) => (kept, None),
        Some(_) => (PendingReason::Priority, Some(String::new())),
    }
}

/// One scheduling pass over `queue` (pending jobs, any order) at time `now`
/// (Unix seconds). Pure: the same arguments always give the same plan.
///
/// A job listed in several partitions is tried in each, in queue order,
/// until one starts it; if none does, it keeps the reason of the last one
/// tried ([`replaces`] aside).
pub fn schedule(view: &ClusterView, queue: &[JobRequest], now: i64) -> Plan {
    let mut plan = Plan::default();
    let mut pool = Pool::current(view);
    let orders: Vec<Vec<usize>> = view
        .partitions
        .iter()
        .map(|p| view.preference_order(p))
        .collect();
    // Licenses still free; starts in this pass take theirs.
    let mut licenses_free: Vec<u32> = view.licenses.iter().map(|l| l.free()).collect();
    // Partitions with a job that could not start, and the nodes reserved
    // for such jobs.
    let mut part_failed = vec![false; view.partitions.len()];
    // The CPUs each partition's jobs hold on each node, the starts of
    // this pass included; kept for partitions with a MaxCPUsPerNode.
    let mut part_held: Vec<Vec<u32>> = view
        .partitions
        .iter()
        .map(|p| {
            if p.max_cpus_per_node.is_some() {
                let mut held = p.used_cpus.clone();
                held.resize(view.nodes.len(), 0);
                held
            } else {
                Vec::new()
            }
        })
        .collect();
    let mut blocked = Blocked::new(view.nodes.len());
    let mut diagnosis = Diagnosis::new(view);
    // Per queue position: started, or the reason it waits so far and the
    // description that goes with it (`None`: keep the one it has).
    let mut started = vec![false; queue.len()];
    let mut reasons: Vec<Option<(PendingReason, Option<String>)>> = vec![None; queue.len()];
    // Queue positions in the order first seen, for the pending list.
    let mut seen = Vec::with_capacity(queue.len());

    'entries: for (pos, part_index) in queue_order(view, queue) {
        let job = &queue[pos];
        if started[pos] {
            continue;
        }
        let multi = !job.other_partitions.is_empty();
        if reasons[pos].is_none() {
            seen.push(pos);
        }
        let clear = |r: PendingReason| (r, Some(String::new()));
        let verdict: (PendingReason, Option<String>) = 'reason: {
            let refused_account = view.partitions.get(part_index).and_then(account_refusal);
            if let Some(hold) = job.hold {
                // As Slurm, a held job shows why its account may not use
                // the partition already.
                break 'reason match hold {
                    Hold::User => (PendingReason::JobHeldUser, refused_account),
                    Hold::Admin => (PendingReason::JobHeldAdmin, refused_account),
                };
            }
            if let Some(reason) = job.blocked_by {
                break 'reason clear(reason);
            }
            if job.begin_time.is_some_and(|t| t > now) {
                break 'reason clear(PendingReason::BeginTime);
            }
            let (Some(part), Some(order)) =
                (view.partitions.get(part_index), orders.get(part_index))
            else {
                break 'reason clear(PendingReason::PartitionConfig);
            };
            let shape = Shape::new(view, job, part);
            if let Some(reason) = partition_gate(view, job, part, &shape) {
                break 'reason clear(reason);
            }
            if let Some(text) = refused_account {
                break 'reason (PendingReason::AccountNotAllowed, Some(text));
            }
            if job.deadline_missed
                && diagnosis.empty_fit(job, &shape, part, order) != EmptyFit::Never
            {
                break 'reason clear(PendingReason::DeadLine);
            }
            if part_failed[part_index] {
                break 'reason behind_failed(view, job, &shape, part, order, &mut diagnosis);
            }
            let named_down = job
                .required_nodes
                .iter()
                .any(|&i| view.nodes.get(i).is_none_or(|n| !n.usable));
            if named_down
                && matches!(
                    job.prior_reason,
                    None | Some(PendingReason::ReqNodeNotAvail)
                )
            {
                // Waiting for a node it names that is down or drained: it
                // gets (at submission) or keeps ReqNodeNotAvail and its
                // text, and holds nothing back.
                let desc = job
                    .prior_reason
                    .is_none()
                    .then(|| unavailable_text(view, job, part));
                break 'reason (PendingReason::ReqNodeNotAvail, desc);
            }
            let mask = blocked.for_job(pos);
            let open_nodes = part
                .nodes
                .iter()
                .filter(|&&i| {
                    view.nodes.get(i).is_some_and(|n| n.usable)
                        && mask
                            .as_deref()
                            .is_none_or(|m| !m.get(i).copied().unwrap_or(false))
                })
                .count();
            if open_nodes < shape.min_nodes as usize {
                // Too few nodes up, or left to this partition: the job
                // waits for them and holds the partition, in Slurm's words.
                part_failed[part_index] = true;
                blocked.keep_back(pos, multi, &part.nodes);
                break 'reason (
                    PendingReason::Resources,
                    Some(NODES_DOWN_DRAINED_OR_RESERVED.to_string()),
                );
            }
            if !licenses_available(job, &licenses_free) {
                // As in Slurm, waiting for licenses holds nothing back.
                break 'reason clear(PendingReason::Licenses);
            }

            let usable = pool.for_partition(view, part, &part_held[part_index]);
            let least_loaded;
            let order = if part.lln {
                least_loaded = least_loaded_first(view, order, &usable);
                &least_loaded
            } else {
                order
            };
            let placed = fit::select(view, job, &shape, &usable, order, mask.as_deref());
            if let Some(nodes) = placed {
                drop(usable);
                pool.take(&nodes, &shape);
                for a in &nodes {
                    if let Some(c) = part_held[part_index].get_mut(a.node_index) {
                        *c = c.saturating_add(a.cpus);
                    }
                }
                for need in &job.licenses {
                    if let Some(free) = licenses_free.get_mut(need.index) {
                        *free = free.saturating_sub(need.count);
                    }
                }
                plan.starts.push(Start {
                    job: job.id,
                    partition: part_index,
                    nodes,
                    time_limit: deadline_limit(effective_time_limit(job, part), job.deadline, now),
                    exclusive: shape.exclusive,
                });
                started[pos] = true;
                continue 'entries;
            }

            let reason = diagnosis.explain(job, &shape, part, order, &usable, mask.is_some());
            if matches!(reason, PendingReason::Resources | PendingReason::Priority) {
                if names_its_nodes(job, &shape) {
                    // Waiting for the nodes it names holds back those
                    // nodes only, not the whole partition.
                    blocked.keep_back(pos, multi, &job.required_nodes);
                } else {
                    part_failed[part_index] = true;
                    blocked.keep_back(pos, multi, &part.nodes);
                }
            }
            if reason == PendingReason::ReqNodeNotAvail {
                break 'reason (reason, Some(unavailable_text(view, job, part)));
            }
            clear(reason)
        };
        if replaces(verdict.0, reasons[pos].as_ref().map(|(r, _)| *r)) {
            reasons[pos] = Some(verdict);
        }
    }
    for pos in seen {
        if started[pos] {
            continue;
        }
        if let Some((reason, desc)) = reasons[pos].take() {
            let id = queue[pos].id;
            plan.pending.push((id, reason));
            if let Some(desc) = desc {
                plan.descriptions.push((id, desc));
            }
        }
    }
    plan
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
