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
//!    with `Priority` (strict order within a partition). A job whose
//!    `--licenses` are not all free waits with `Licenses` and, as in Slurm,
//!    holds back nobody.
//! 4. Otherwise it is placed on what is free ([`crate::fit`]) and started, or
//!    the failure is explained: `Resources` if it would fit an empty cluster,
//!    `ReqNodeNotAvail` if only nodes that are down or drained stand in the
//!    way, `BadConstraints`/`PartitionConfig` if it can never fit. A
//!    `Resources` job blocks its partition (step 3) and reserves the
//!    partition's nodes: later jobs of other partitions may not use them
//!    (they get `Priority` if that is all that stops them), so no job ever
//!    takes resources a job ahead of it is waiting for.
//!
//! Backfill will be a second pass over the jobs this one leaves with
//! `Resources` or `Priority`, with the same [`crate::fit::select`] applied to
//! a free-resources-over-time profile; nothing here needs to change for it.

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason;
use slurm_common::time::TimeLimit;

use crate::fit::{self, Pool, Shape};
use crate::layout::compress_counts;
use crate::request::{Hold, JobRequest};
use crate::view::{ClusterView, PartitionState, PartitionView};

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
}

impl Plan {
    /// The reason given to `job`, if it stays pending.
    pub fn reason_of(&self, job: JobId) -> Option<PendingReason> {
        self.pending
            .iter()
            .find(|(id, _)| *id == job)
            .map(|&(_, r)| r)
    }

    /// The start planned for `job`, if any.
    pub fn start_of(&self, job: JobId) -> Option<&Start> {
        self.starts.iter().find(|s| s.job == job)
    }
}

/// The order jobs are considered in. Equal keys cannot happen for distinct
/// ids; the queue position breaks ties among duplicate ids, so the order is
/// total and the plan deterministic.
fn queue_order(view: &ClusterView, queue: &[JobRequest]) -> Vec<usize> {
    let mut keyed: Vec<_> = queue
        .iter()
        .enumerate()
        .map(|(pos, j)| {
            let tier = view
                .partitions
                .get(j.partition)
                .map_or(0, |p| p.priority_tier);
            (
                std::cmp::Reverse(tier),
                std::cmp::Reverse(j.priority),
                j.submit_time,
                j.id,
                pos,
            )
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|k| k.4).collect()
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
    let below_min = job.max_nodes.is_some_and(|m| m < part.min_nodes);
    let above_max = part.max_nodes.is_some_and(|m| shape.min_nodes > m);
    if below_min || above_max {
        return Some(PendingReason::PartitionNodeLimit);
    }
    if shape.min_nodes as usize > part.nodes.len() {
        return Some(PendingReason::PartitionConfig);
    }
    None
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

    fn explain(
        &mut self,
        job: &JobRequest,
        shape: &Shape,
        order: &[usize],
        pool: &Pool,
        blocked_any: bool,
    ) -> PendingReason {
        let view = self.view;
        if blocked_any && fit::select(view, job, shape, pool, order, None).is_some() {
            return PendingReason::Priority;
        }
        let required_down = job
            .required_nodes
            .iter()
            .any(|&i| view.nodes.get(i).is_some_and(|n| !n.usable));
        if !required_down {
            let empty = self
                .empty_usable
                .get_or_insert_with(|| Pool::empty(view, false));
            if fit::select(view, job, shape, empty, order, None).is_some() {
                return PendingReason::Resources;
            }
        }
        let all = self
            .empty_all
            .get_or_insert_with(|| Pool::empty(view, true));
        if fit::select(view, job, shape, all, order, None).is_some() {
            return PendingReason::ReqNodeNotAvail;
        }
        let feature_exists = order.iter().any(|&i| fit::features_allowed(view, job, i));
        if job.constraint.is_some() && !feature_exists {
            PendingReason::BadConstraints
        } else {
            PendingReason::PartitionConfig
        }
    }
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

/// One scheduling pass over `queue` (pending jobs, any order) at time `now`
/// (Unix seconds). Pure: the same arguments always give the same plan.
pub fn schedule(view: &ClusterView, queue: &[JobRequest], now: i64) -> Plan {
    let mut plan = Plan::default();
    let mut pool = Pool::current(view);
    let orders: Vec<Vec<usize>> = view
        .partitions
        .iter()
        .map(|p| view.preference_order(p))
        .collect();
    // Partitions with a job that could not start, and the nodes reserved
    // for such jobs.
    // Licenses still free; starts in this pass take theirs.
    let mut licenses_free: Vec<u32> = view.licenses.iter().map(|l| l.free()).collect();
    let mut part_failed = vec![false; view.partitions.len()];
    let mut node_blocked = vec![false; view.nodes.len()];
    let mut any_blocked = false;
    let mut diagnosis = Diagnosis::new(view);

    for pos in queue_order(view, queue) {
        let job = &queue[pos];
        let mut pending = |reason| plan.pending.push((job.id, reason));

        if let Some(hold) = job.hold {
            pending(match hold {
                Hold::User => PendingReason::JobHeldUser,
                Hold::Admin => PendingReason::JobHeldAdmin,
            });
            continue;
        }
        if let Some(reason) = job.blocked_by {
            pending(reason);
            continue;
        }
        if job.begin_time.is_some_and(|t| t > now) {
            pending(PendingReason::BeginTime);
            continue;
        }
        let (Some(part), Some(order)) = (
            view.partitions.get(job.partition),
            orders.get(job.partition),
        ) else {
            pending(PendingReason::PartitionConfig);
            continue;
        };
        let shape = Shape::new(view, job, part);
        if let Some(reason) = partition_gate(job, part, &shape) {
            pending(reason);
            continue;
        }
        if part_failed[job.partition] {
            pending(PendingReason::Priority);
            continue;
        }
        if !licenses_available(job, &licenses_free) {
            // As in Slurm, waiting for licenses holds nothing back.
            pending(PendingReason::Licenses);
            continue;
        }

        let blocked = any_blocked.then_some(node_blocked.as_slice());
        if let Some(nodes) = fit::select(view, job, &shape, &pool, order, blocked) {
            pool.take(&nodes, shape.exclusive);
            for need in &job.licenses {
                if let Some(free) = licenses_free.get_mut(need.index) {
                    *free = free.saturating_sub(need.count);
                }
            }
            plan.starts.push(Start {
                job: job.id,
                nodes,
                time_limit: deadline_limit(effective_time_limit(job, part), job.deadline, now),
                exclusive: shape.exclusive,
            });
            continue;
        }

        let reason = diagnosis.explain(job, &shape, order, &pool, any_blocked);
        pending(reason);
        if matches!(reason, PendingReason::Resources | PendingReason::Priority) {
            part_failed[job.partition] = true;
            for &i in &part.nodes {
                if let Some(b) = node_blocked.get_mut(i) {
                    *b = true;
                    any_blocked = true;
                }
            }
        }
    }
    plan
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
