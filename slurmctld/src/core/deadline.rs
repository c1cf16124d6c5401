//! `--deadline`: the time by which a job must have ended, or be removed.
//!
//! Slurm's rules, followed here:
//! * at submission, a job that could not end by its deadline even if it
//!   started now (or at its `--begin`) is refused with "Requested time
//!   limit is invalid" ([`refused_at_submission`]);
//! * a pending job that can no longer end by it (now + its `--time-min`, or
//!   else its time limit, is later) is ended: state DEADLINE, Reason
//!   DeadLine, exit code 1, never having run ([`Controller::end_missed_deadlines`]);
//! * a job that starts gets a time limit that ends at the deadline at the
//!   latest (`slurm_sched::plan`), so it never runs past it.
//!
//! The moment a pending job misses its deadline is known in advance (the
//! deadline less the time it needs), so it is one of the timer's deadlines
//! ([`Controller::next_deadline_miss`]) and no pass polls for it. A job
//! whose time limit is infinite needs no time that can be counted: it waits
//! and, when it starts, runs until its deadline.

use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;

use super::{Controller, Job, Outcome};

/// Seconds a job needs at least: its `--time-min`, else its time limit
/// (its own, or the partition's DefaultTime, else MaxTime); `None` when
/// that is infinite.
fn needed_secs(time_min_minutes: Option<u32>, limit: TimeLimit) -> Option<i64> {
    let limit = match time_min_minutes.filter(|m| *m > 0) {
        Some(m) => TimeLimit::Minutes(m),
        None => limit,
    };
    limit
        .as_secs()
        .map(|s| i64::try_from(s).unwrap_or(i64::MAX))
}

/// Whether a submission with `deadline` (Unix seconds, 0 for none) that can
/// start at `earliest` and needs `time_min_minutes` / `limit` can never end
/// in time: a deadline already past, or not enough time before it.
pub fn refused_at_submission(
    deadline: i64,
    earliest: i64,
    time_min_minutes: Option<u32>,
    limit: TimeLimit,
) -> bool {
    if deadline <= 0 {
        return false;
    }
    if deadline <= earliest {
        return true;
    }
    needed_secs(time_min_minutes, limit).is_some_and(|n| earliest.saturating_add(n) > deadline)
}

impl Controller {
    /// The time limit a pending job is judged by (as `effective_limit`).
    fn judged_limit(&self, job: &Job) -> TimeLimit {
        super::effective_limit(job, job.partition.and_then(|p| self.partitions.get(p)))
    }

    /// From when a pending job can no longer end by its deadline; `None`
    /// for a job without one, not pending, or without a countable need.
    fn deadline_miss_at(&self, job: &Job) -> Option<i64> {
        let extras = job.spec.extras();
        if extras.deadline <= 0 || !job.is_schedulable() {
            return None;
        }
        let need = needed_secs(extras.time_min_minutes, self.judged_limit(job))?;
        // Missed once now + need > deadline.
        Some(extras.deadline.saturating_sub(need).saturating_add(1))
    }

    /// The earliest time a pending job misses its deadline.
    pub(super) fn next_deadline_miss(&self) -> Option<i64> {
        self.jobs().filter_map(|j| self.deadline_miss_at(j)).min()
    }

    /// Ends every pending job that can no longer end by its deadline.
    pub(super) fn end_missed_deadlines(&mut self, out: &mut Outcome, now: i64) {
        let missed: Vec<u32> = self
            .jobs()
            .filter(|j| self.deadline_miss_at(j).is_some_and(|t| t <= now))
            .map(|j| j.id.get())
            .collect();
        for id in missed {
            tracing::info!(
                job_id = id,
                "job can no longer end by its deadline; removed"
            );
            // Slurm records exit code 1 (a raw status: signal 1) and
            // the reason FAIL_DEADLINE ("DeadLine").
            self.end_job(out, id, now, JobState::Deadline, (0, 1), "DeadLine", true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submission_rules() {
        let hour = TimeLimit::Minutes(60);
        // No deadline.
        assert!(!refused_at_submission(0, 100, None, hour));
        // Past or now.
        assert!(refused_at_submission(100, 100, None, TimeLimit::Infinite));
        assert!(!refused_at_submission(-5, 100, None, hour));
        // One hour needed, 3600 s left: fine; 3599: refused.
        assert!(!refused_at_submission(3700, 100, None, hour));
        assert!(refused_at_submission(3699, 100, None, hour));
        // --time-min counts instead of the limit (test17.57/17.58).
        assert!(!refused_at_submission(
            3700,
            100,
            Some(20),
            TimeLimit::Minutes(120)
        ));
        assert!(refused_at_submission(
            3700,
            100,
            Some(120),
            TimeLimit::Minutes(120)
        ));
        // An infinite limit needs nothing countable.
        assert!(!refused_at_submission(700, 100, None, TimeLimit::Infinite));
        // Extremes do not overflow.
        assert!(!refused_at_submission(
            i64::MAX,
            i64::MAX - 1,
            None,
            TimeLimit::Minutes(u32::MAX)
        ));
        assert!(refused_at_submission(1, i64::MAX, Some(u32::MAX), hour));
    }
}
