//! Start estimates of pending jobs and of `sbatch --test-only`.
//!
//! The simulation is `slurm_sched::estimate` (pure); this module feeds it
//! the controller's running jobs and queue and keeps what it says:
//!
//! * after a scheduling pass, at most once per `bf_interval`, the jobs
//!   left waiting with `Resources` or `Priority` get a planned start and nodes (squeue `%S`, `%e`, `%Y`,
//!   `--start`; `scontrol show job` StartTime, EndTime, SchedNodeList), as
//!   Slurm's backfill scheduler gives them. Only the first
//!   `bf_max_job_test` jobs in queue order are planned (500 by default),
//!   so that a pass over a long queue stays cheap; the rest show `N/A`, as
//!   in Slurm;
//! * `--test-only` plans the would-be job behind every job already
//!   waiting, with exact times and no window, as Slurm answers it.
//!
//! A plan is derived state: it is not journaled, and a replayed
//! controller has none until its first pass.

use slurm_common::reason::PendingReason;
use slurm_common::time::TimeLimit;
use slurm_sched::estimate::UNLIMITED_RUN_SECS;
use slurm_sched::{ClusterView, Estimate, EstimateConfig, Holding, JobRequest};
use std::sync::Arc;

use super::Controller;

/// Planned starts by job id.
pub type PlannedStarts = std::collections::HashMap<u32, PlannedStart>;

/// Where and when a pending job is planned to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStart {
    /// Unix seconds.
    pub start_time: i64,
    /// The nodes it is planned on (hostlist), Slurm's SchedNodeList.
    pub nodes: String,
}

impl Controller {
    /// The scheduler's view with what every job holding resources holds
    /// ([`Controller::note_holder`]), and those holdings with when each is
    /// expected to end: its start plus its limit (a year when it has none,
    /// as Slurm sets it); a completing job any moment now. One walk over
    /// the jobs.
    pub(super) fn holdings(&self, now: i64) -> (ClusterView, Vec<Holding>) {
        let mut view = self.cluster_view();
        let mut holdings = Vec::new();
        for j in self.jobs.values().filter(|j| !j.alloc.is_empty()) {
            self.note_holder(&mut view, j);
            let end = if j.status.is_completing() || j.status.state.is_finished() {
                now
            } else {
                let run = match j.run_limit.unwrap_or(TimeLimit::Infinite).as_secs() {
                    Some(secs) => i64::try_from(secs).unwrap_or(i64::MAX),
                    None => UNLIMITED_RUN_SECS,
                };
                j.clock_start().saturating_add(run).max(now)
            };
            holdings.push(Holding {
                nodes: j.alloc.to_vec(),
                exclusive: j.exclusive_alloc,
                end_time: end,
                partition: j.partition,
            });
        }
        (view, holdings)
    }

    /// After a pass: plans the jobs `queue` left waiting with `Resources`
    /// or `Priority` in `pending`, and records (or clears) each pending
    /// job's planned start.
    pub(super) fn refresh_planned_starts(
        &mut self,
        queue: &[JobRequest],
        pending: &[(slurm_common::ids::JobId, PendingReason)],
        now: i64,
    ) {
        // A plan costs a simulation of the first waiting jobs: made at most
        // once per bf_interval, as Slurm's backfill cycle (a pass follows
        // every submission). What it planned for jobs that started since
        // is never shown (only pending jobs show a plan).
        if self
            .planned_at
            .is_some_and(|at| now < at.saturating_add(self.cfg.bf_interval_secs))
        {
            return;
        }
        self.planned_at = Some(now);
        let waiting: std::collections::HashSet<u32> = pending
            .iter()
            .filter(|(_, r)| matches!(r, PendingReason::Resources | PendingReason::Priority))
            .map(|(id, _)| id.get())
            .collect();
        let planned_queue: Vec<JobRequest> = queue
            .iter()
            .filter(|r| waiting.contains(&r.id.get()))
            .cloned()
            .collect();
        let estimates = if planned_queue.is_empty() {
            Vec::new()
        } else {
            let (view, holdings) = self.holdings(now);
            slurm_sched::estimate_starts(&view, &holdings, &planned_queue, now, self.cfg.backfill)
        };
        let mut plans = PlannedStarts::with_capacity(estimates.len());
        for e in &estimates {
            plans
                .entry(e.job.get())
                .or_insert_with(|| self.planned_start(e));
        }
        if *self.planned != plans {
            self.planned = Arc::new(plans);
        }
    }

    fn planned_start(&self, e: &Estimate) -> PlannedStart {
        PlannedStart {
            start_time: e.start_time,
            nodes: slurm_common::hostlist::compress(
                e.nodes
                    .iter()
                    .filter_map(|a| self.nodes.get(a.node_index))
                    .map(|n| n.name.as_str()),
            ),
        }
    }

    /// `--test-only`: when and where `probe` would start if submitted
    /// now, behind every job already waiting. `None` when it would never
    /// start, or not among the first jobs planned.
    pub(super) fn test_only_estimate(&self, probe: JobRequest, now: i64) -> Option<Estimate> {
        let mut queue: Vec<JobRequest> = self
            .jobs
            .values()
            .filter(|j| j.is_schedulable())
            .map(|j| self.job_request(j))
            .collect();
        let id = probe.id;
        queue.push(probe.clone());
        let (view, holdings) = self.holdings(now);
        let find = |queue: &[JobRequest]| {
            slurm_sched::estimate_starts(&view, &holdings, queue, now, EstimateConfig::TEST_ONLY)
                .into_iter()
                .find(|e| e.job == id)
        };
        // Behind more waiting jobs than the plan covers, the probe gets no
        // place in it; it is then placed after the running jobs alone (an
        // early bound), and refused only when it could never run.
        find(&queue).or_else(|| find(std::slice::from_ref(&probe)))
    }
}
