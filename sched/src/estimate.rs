//! Start estimates: when and where a job that cannot start now would start.
//!
//! Users read them in three places, all fed by [`estimate_starts`]:
//! `sbatch --test-only` (`Job 15 to start at ...`), and the StartTime,
//! EndTime and SchedNodeList of a pending job (`squeue --start`, `%S`,
//! `%e`, `scontrol show job`).
//!
//! The model is Slurm 22.05's with `sched/backfill`, as a user sees it:
//!
//! * a running job gives its resources back at its expected end (start
//!   plus time limit; the controller passes a year for an unlimited one,
//!   as Slurm sets it);
//! * the jobs ahead in the queue (held, blocked and not yet eligible jobs
//!   aside) take their turn in queue order; each is planned at the first
//!   moment it fits and then keeps its nodes *whole* until its own limit
//!   runs out, however little of them it uses (Slurm's backfill plans on
//!   whole nodes). An unlimited job ahead keeps them for 2^31-1 minutes,
//!   which is what Slurm's arithmetic gives;
//! * the planned end of a job ahead is rounded down to `resolution_secs`
//!   (backfill's `bf_resolution`, a minute; one second for `--test-only`,
//!   whose answers Slurm does not round);
//! * a start beyond `window_secs` (backfill's `bf_window`, a day) is not
//!   known: the job gets no estimate and plans nothing for the jobs behind.
//!
//! Cost is bounded: at most `max_jobs` jobs are planned (backfill's
//! `bf_max_job_test`), and each tries at most `max_steps` moments, so a
//! pass over a queue of 10,000 jobs costs no more than one over the first
//! few hundred.

use slurm_common::ids::JobId;
use slurm_common::time::TimeLimit;

use crate::fit::{self, Pool, Shape};
use crate::plan::{effective_time_limit, partition_gate, queue_order, NodeAlloc};
use crate::request::JobRequest;
use crate::view::{ClusterView, PartitionView};

/// What an unlimited job ahead is planned to hold its nodes for, in
/// minutes: Slurm 22.05 plans it with 2^31-1 minutes.
pub const UNLIMITED_PLAN_MINUTES: i64 = 0x7fff_ffff;

/// How long a running job without a time limit is expected to run: Slurm
/// sets its end a year after its start.
pub const UNLIMITED_RUN_SECS: i64 = 365 * 24 * 3600;

/// Resources a running (or suspended, or completing) job holds until
/// `end_time`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    pub nodes: Vec<NodeAlloc>,
    /// It holds its nodes whole.
    pub exclusive: bool,
    /// Unix seconds; a time already past means "any moment now".
    pub end_time: i64,
    /// Index into [`ClusterView::partitions`] of the partition it runs
    /// in: its end gives CPUs back to that partition's MaxCPUsPerNode.
    pub partition: Option<usize>,
}

/// Bounds of one estimate pass (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EstimateConfig {
    /// Planned ends of jobs ahead are rounded down to this many seconds.
    pub resolution_secs: i64,
    /// Starts later than this many seconds after `now` are not estimated;
    /// `None` for no limit.
    pub window_secs: Option<i64>,
    /// At most this many jobs are planned.
    pub max_jobs: usize,
    /// At most this many moments are tried for one job.
    pub max_steps: usize,
}

impl EstimateConfig {
    /// Slurm's backfill defaults: a minute's resolution, a day's window,
    /// the first 100 jobs.
    pub const BACKFILL: EstimateConfig = EstimateConfig {
        resolution_secs: 60,
        window_secs: Some(24 * 3600),
        max_jobs: 100,
        max_steps: 1000,
    };

    /// `sbatch --test-only`: exact times, no window.
    pub const TEST_ONLY: EstimateConfig = EstimateConfig {
        resolution_secs: 1,
        window_secs: None,
        max_jobs: 500,
        max_steps: 1000,
    };
}

/// When and where one pending job is expected to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    pub job: JobId,
    /// Index into [`ClusterView::partitions`].
    pub partition: usize,
    pub start_time: i64,
    /// Start plus the time limit; `None` for an unlimited job.
    pub end_time: Option<i64>,
    /// In node order, as a start would have them.
    pub nodes: Vec<NodeAlloc>,
}

impl Estimate {
    pub fn total_cpus(&self) -> u64 {
        self.nodes.iter().map(|a| u64::from(a.cpus)).sum()
    }
}

/// Nodes a job ahead is planned to keep whole over `[start, end)`.
struct Planned {
    nodes: Vec<usize>,
    start: i64,
    end: i64,
}

/// Plans `queue` (pending jobs, any order) after `holding` ends, from
/// `now`, and returns an estimate for each job planned, in queue order.
/// A job that never fits, or only beyond the window, is left out. Pure.
pub fn estimate_starts(
    view: &ClusterView,
    holding: &[Holding],
    queue: &[JobRequest],
    now: i64,
    cfg: EstimateConfig,
) -> Vec<Estimate> {
    let mut ends: Vec<&Holding> = holding.iter().collect();
    ends.sort_by_key(|h| h.end_time);
    let orders: Vec<Vec<usize>> = view
        .partitions
        .iter()
        .map(|p| view.preference_order(p))
        .collect();
    let resolution = cfg.resolution_secs.max(1);
    let horizon = cfg.window_secs.map(|w| now.saturating_add(w));
    let mut planned: Vec<Planned> = Vec::new();
    let mut out = Vec::new();
    let mut done = vec![false; queue.len()];
    let mut tried = 0usize;
    for (pos, _) in queue_order(view, queue) {
        if done[pos] || tried >= cfg.max_jobs {
            continue;
        }
        done[pos] = true;
        let job = &queue[pos];
        if job.hold.is_some() || job.blocked_by.is_some() || job.deadline_missed {
            continue;
        }
        tried += 1;
        let earliest = job.begin_time.map_or(now, |b| b.max(now));
        let parts = std::iter::once(job.partition).chain(job.other_partitions.iter().copied());
        let mut best: Option<(Estimate, i64)> = None;
        for part_index in parts {
            let (Some(part), Some(order)) =
                (view.partitions.get(part_index), orders.get(part_index))
            else {
                continue;
            };
            let shape = Shape::new(view, job, part);
            if partition_gate(view, job, part, &shape).is_some() {
                continue;
            }
            let limit = effective_time_limit(job, part);
            let found = first_fit(
                view,
                &ends,
                &planned,
                job,
                &shape,
                (part_index, part),
                order,
                earliest,
                limit,
                cfg.max_steps,
            );
            if let Some((start, nodes)) = found {
                if best.as_ref().is_none_or(|(b, _)| start < b.start_time) {
                    let run = limit.as_secs().and_then(|s| i64::try_from(s).ok());
                    let held = run.unwrap_or(UNLIMITED_PLAN_MINUTES * 60);
                    best = Some((
                        Estimate {
                            job: job.id,
                            partition: part_index,
                            start_time: start,
                            end_time: run.map(|r| start.saturating_add(r)),
                            nodes,
                        },
                        held,
                    ));
                }
            }
        }
        let Some((estimate, held)) = best else {
            continue;
        };
        if horizon.is_some_and(|h| estimate.start_time > h) {
            continue;
        }
        let end = estimate.start_time.saturating_add(held);
        planned.push(Planned {
            nodes: estimate.nodes.iter().map(|a| a.node_index).collect(),
            start: estimate.start_time,
            end: end - end.rem_euclid(resolution),
        });
        out.push(estimate);
    }
    out
}

/// The first moment from `earliest` at which `job` fits: what the running
/// jobs ended by then gave back, minus the nodes planned for jobs ahead
/// over the whole of its run.
#[allow(clippy::too_many_arguments)]
fn first_fit(
    view: &ClusterView,
    ends: &[&Holding],
    planned: &[Planned],
    job: &JobRequest,
    shape: &Shape,
    (part_index, part): (usize, &PartitionView),
    order: &[usize],
    earliest: i64,
    limit: TimeLimit,
    max_steps: usize,
) -> Option<(i64, Vec<NodeAlloc>)> {
    let run = limit
        .as_secs()
        .and_then(|s| i64::try_from(s).ok())
        .unwrap_or(UNLIMITED_PLAN_MINUTES * 60);
    // The moments anything is given back, after the earliest start.
    let mut moments: Vec<i64> = ends
        .iter()
        .map(|h| h.end_time)
        .chain(planned.iter().map(|p| p.end))
        .filter(|&t| t > earliest)
        .collect();
    moments.push(earliest);
    moments.sort_unstable();
    moments.dedup();
    let mut pool = Pool::current(view);
    // What the partition's jobs hold, for its MaxCPUsPerNode.
    let capped = part.max_cpus_per_node.is_some();
    let mut held = if capped {
        part.used_cpus.clone()
    } else {
        Vec::new()
    };
    let mut released = 0usize;
    let mut mask = vec![false; view.nodes.len()];
    for &t in moments.iter().take(max_steps.max(1)) {
        while let Some(h) = ends.get(released).filter(|h| h.end_time <= t) {
            pool.release(view, &h.nodes, h.exclusive);
            if capped && h.partition == Some(part_index) {
                for a in &h.nodes {
                    if let Some(c) = held.get_mut(a.node_index) {
                        *c = c.saturating_sub(a.cpus);
                    }
                }
            }
            released += 1;
        }
        let until = t.saturating_add(run);
        mask.iter_mut().for_each(|m| *m = false);
        for p in planned.iter().filter(|p| p.start < until && t < p.end) {
            for &i in &p.nodes {
                if let Some(m) = mask.get_mut(i) {
                    *m = true;
                }
            }
        }
        let usable = pool.for_partition(view, part, &held);
        if let Some(nodes) = fit::select(view, job, shape, &usable, order, Some(&mask)) {
            return Some((t, nodes));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Hold, MemReq};
    use crate::testkit::{cluster, job};

    const NOW: i64 = 1_000_000_020;

    fn holding(node: usize, cpus: u32, mem: u64, end: i64) -> Holding {
        Holding {
            nodes: vec![NodeAlloc {
                node_index: node,
                cpus,
                mem_mb: mem,
                tasks: 1,
            }],
            exclusive: false,
            end_time: end,
            partition: Some(0),
        }
    }

    /// The reference cluster: one 2-CPU node, memory consumable, busy
    /// with a 1-CPU job holding all the memory until `NOW + 300`.
    fn busy() -> (ClusterView, Vec<Holding>) {
        let mut view = cluster(1, 2, 4000);
        view.config.track_memory = true;
        view.nodes[0].alloc_cpus = 1;
        view.nodes[0].alloc_mem_mb = 4000;
        (view, vec![holding(0, 1, 4000, NOW + 300)])
    }

    fn limited(id: u32, minutes: u32) -> JobRequest {
        let mut j = job(id);
        j.time_limit = Some(TimeLimit::Minutes(minutes));
        j
    }

    fn start_of(est: &[Estimate], id: u32) -> Option<i64> {
        est.iter()
            .find(|e| e.job == JobId(id))
            .map(|e| e.start_time)
    }

    #[test]
    fn a_job_that_fits_now_starts_now() {
        let view = cluster(1, 2, 4000);
        let est = estimate_starts(&view, &[], &[job(1)], NOW, EstimateConfig::TEST_ONLY);
        assert_eq!(start_of(&est, 1), Some(NOW));
        assert_eq!(est[0].total_cpus(), 1);
        assert_eq!(est[0].end_time, None);
    }

    #[test]
    fn a_busy_node_frees_at_the_running_jobs_end() {
        let (view, holding) = busy();
        let est = estimate_starts(
            &view,
            &holding,
            &[limited(9, 1)],
            NOW,
            EstimateConfig::TEST_ONLY,
        );
        assert_eq!(start_of(&est, 9), Some(NOW + 300));
        assert_eq!(est[0].end_time, Some(NOW + 360));
    }

    #[test]
    fn jobs_ahead_take_their_turn_on_whole_nodes() {
        // As Slurm 22.05: -t 10, then -t 7 --mem 100, then the probe
        // (--mem 10, -t 1) starts when both are done although it would
        // fit beside the second.
        let (view, holding) = busy();
        let mut second = limited(2, 7);
        second.mem = Some(MemReq::PerNode(100));
        let mut probe = limited(3, 1);
        probe.mem = Some(MemReq::PerNode(10));
        let queue = [limited(1, 10), second, probe];
        let est = estimate_starts(&view, &holding, &queue, NOW, EstimateConfig::TEST_ONLY);
        assert_eq!(start_of(&est, 1), Some(NOW + 300));
        assert_eq!(start_of(&est, 2), Some(NOW + 900));
        assert_eq!(start_of(&est, 3), Some(NOW + 1320));
    }

    #[test]
    fn backfill_rounds_planned_ends_down_to_the_minute() {
        // 82 at 07:27:22 until 07:37:22, planned until 07:37:00.
        let (view, holding) = busy();
        let queue = [limited(1, 10), limited(2, 7)];
        let est = estimate_starts(&view, &holding, &queue, NOW, EstimateConfig::BACKFILL);
        assert_eq!(start_of(&est, 1), Some(NOW + 300));
        let end = NOW + 900;
        assert_eq!(start_of(&est, 2), Some(end - end % 60));
    }

    #[test]
    fn an_unlimited_job_ahead_holds_its_nodes_for_2_31_minutes() {
        let (view, holding) = busy();
        let queue = [job(1), limited(2, 1)];
        let est = estimate_starts(&view, &holding, &queue, NOW, EstimateConfig::TEST_ONLY);
        assert_eq!(start_of(&est, 1), Some(NOW + 300));
        assert_eq!(
            start_of(&est, 2),
            Some(NOW + 300 + UNLIMITED_PLAN_MINUTES * 60)
        );
        // Backfill does not know a start that far: no estimate.
        let est = estimate_starts(&view, &holding, &queue, NOW, EstimateConfig::BACKFILL);
        assert_eq!(start_of(&est, 1), Some(NOW + 300));
        assert_eq!(start_of(&est, 2), None);
    }

    #[test]
    fn held_and_blocked_jobs_ahead_take_no_turn() {
        let (view, holding) = busy();
        let mut held = limited(1, 10);
        held.hold = Some(Hold::User);
        let mut blocked = limited(2, 10);
        blocked.blocked_by = Some(slurm_common::reason::PendingReason::Dependency);
        let queue = [held, blocked, limited(3, 1)];
        let est = estimate_starts(&view, &holding, &queue, NOW, EstimateConfig::TEST_ONLY);
        assert_eq!(est.len(), 1);
        assert_eq!(start_of(&est, 3), Some(NOW + 300));
    }

    #[test]
    fn a_job_that_never_fits_has_no_estimate() {
        let (view, holding) = busy();
        let mut two = limited(1, 1);
        two.min_nodes = 2;
        let mut three = limited(2, 1);
        three.cpus_per_task = 3;
        let est = estimate_starts(
            &view,
            &holding,
            &[two, three],
            NOW,
            EstimateConfig::TEST_ONLY,
        );
        assert!(est.is_empty());
    }

    #[test]
    fn exclusive_and_whole_node_requests_wait_for_the_node_to_empty() {
        let mut view = cluster(1, 2, 4000);
        view.nodes[0].alloc_cpus = 1;
        let holding = vec![holding(0, 1, 0, NOW + 600)];
        let mut excl = limited(1, 5);
        excl.exclusive = true;
        let est = estimate_starts(&view, &holding, &[excl], NOW, EstimateConfig::TEST_ONLY);
        assert_eq!(start_of(&est, 1), Some(NOW + 600));
        assert_eq!(est[0].total_cpus(), 2);
        // One CPU fits beside the running job at once.
        let est = estimate_starts(
            &view,
            &holding,
            &[limited(2, 5)],
            NOW,
            EstimateConfig::TEST_ONLY,
        );
        assert_eq!(start_of(&est, 2), Some(NOW));
    }

    #[test]
    fn max_jobs_bounds_the_pass() {
        let (view, holding) = busy();
        let queue: Vec<JobRequest> = (1..=50).map(|i| limited(i, 1)).collect();
        let cfg = EstimateConfig {
            max_jobs: 3,
            ..EstimateConfig::BACKFILL
        };
        let est = estimate_starts(&view, &holding, &queue, NOW, cfg);
        assert_eq!(est.len(), 3);
    }

    #[test]
    fn begin_time_is_the_earliest_start() {
        let view = cluster(1, 2, 4000);
        let mut j = limited(1, 5);
        j.begin_time = Some(NOW + 1000);
        let est = estimate_starts(&view, &[], &[j], NOW, EstimateConfig::TEST_ONLY);
        assert_eq!(start_of(&est, 1), Some(NOW + 1000));
    }
}
