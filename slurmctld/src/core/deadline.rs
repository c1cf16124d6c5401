//! `--deadline`: the time by which a job must have ended, or be removed.
//!
//! Slurm's rules, followed here:
//! * at submission, a deadline already past (or before `--begin`) is
//!   refused with "Requested time limit is invalid", and a `--time-min`
//!   that could not end by it, or over the time limit, with "Invalid
//!   time-min specification" ([`submission_refusal`]); a time limit past
//!   the deadline is accepted;
//! * a pending job that can no longer end by it (now + its `--time-min`, or
//!   else its time limit, is later) is ended when a scheduling pass would
//!   try to start it: state DEADLINE, Reason DeadLine, exit code 1, never
//!   having run. A job that waits for something else (a hold, a
//!   dependency, its begin time, a partition limit, a request its
//!   partition can never fit) keeps waiting with that reason, as in Slurm
//!   22.05, where only jobs in the scheduler's queue are checked; the plan
//!   makes that call (`slurm_sched::JobRequest::deadline_missed`) and
//!   [`Controller::end_deadline_job`] ends the job;
//! * a job that starts gets a time limit that ends at the deadline at the
//!   latest (`slurm_sched::plan`), so it never runs past it.
//!
//! The moment a pending job misses its deadline is known in advance (the
//! deadline less the time it needs), so it is one of the timer's deadlines
//! ([`Controller::next_deadline_miss`]) and no pass polls for it. A job
//! whose time limit is infinite needs no time that can be counted: it waits
//! and, when it starts, runs until its deadline.

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;
use slurm_proto::ErrorCode;

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

/// Why a submission with `deadline` (Unix seconds, 0 for none) that can
/// start at `earliest`, needs `time_min_minutes` at least and asks for
/// `limit` is refused, as Slurm refuses it: a `--time-min` over the time
/// limit is "Invalid time-min specification"; a deadline already past is
/// "Requested time limit is invalid"; a `--time-min` that cannot end by
/// the deadline is the time-min error again. A time limit that runs past
/// the deadline is no reason: such a job is ended as DEADLINE when a pass
/// finds it (or, started, has its limit cut to the deadline).
pub fn submission_refusal(
    deadline: i64,
    earliest: i64,
    time_min_minutes: Option<u32>,
    limit: TimeLimit,
) -> Option<ErrorCode> {
    let time_min = time_min_minutes.filter(|m| *m > 0);
    if let (Some(m), Some(l)) = (time_min, limit.as_secs()) {
        if u64::from(m).saturating_mul(60) > l {
            return Some(ErrorCode::InvalidTimeMin);
        }
    }
    if deadline <= 0 {
        return None;
    }
    // One equal to the begin time is taken, as Slurm takes it.
    if deadline < earliest {
        return Some(ErrorCode::InvalidTimeLimit);
    }
    let need = i64::from(time_min?).saturating_mul(60);
    (earliest.saturating_add(need) > deadline).then_some(ErrorCode::InvalidTimeMin)
}

impl Controller {
    /// The time limit a pending job is judged by (as `effective_limit`).
    fn judged_limit(&self, job: &Job) -> TimeLimit {
        super::effective_limit(job, job.partition.and_then(|p| self.partitions.get(p)))
    }

    /// From when a pending job can no longer end by its deadline; `None`
    /// for a job without one, not pending, without a countable need, or
    /// waiting for something the deadline does not look past: a hold, a
    /// dependency, or a reason the last pass gave it from a gate before
    /// the deadline's ([`kept_out_of_queue`]). A `--begin` time later than the miss moves it there.
    fn deadline_miss_at(&self, job: &Job) -> Option<i64> {
        let extras = job.spec.extras();
        if extras.deadline <= 0 || !job.is_schedulable() || job.hold.is_some() {
            return None;
        }
        if super::depend::blocker(job).is_some()
            || (job.last_sched_eval != 0 && kept_out_of_queue(job.reason))
        {
            return None;
        }
        let need = needed_secs(extras.time_min_minutes, self.judged_limit(job))?;
        // Missed once now + need > deadline.
        let miss = extras.deadline.saturating_sub(need).saturating_add(1);
        Some(job.shape.begin_time.map_or(miss, |b| b.max(miss)))
    }

    /// The earliest time a pending job misses its deadline.
    pub(super) fn next_deadline_miss(&self) -> Option<i64> {
        self.jobs().filter_map(|j| self.deadline_miss_at(j)).min()
    }

    /// Whether pending job `job` can no longer end by its deadline at
    /// `now` (for the plan to judge, see the module docs).
    pub(super) fn misses_deadline(&self, job: &Job, now: i64) -> bool {
        let extras = job.spec.extras();
        if extras.deadline <= 0 {
            return false;
        }
        needed_secs(extras.time_min_minutes, self.judged_limit(job))
            .is_some_and(|need| now.saturating_add(need) > extras.deadline)
    }

    /// Ends pending job `id`, which the plan found can no longer end by
    /// its deadline.
    pub(super) fn end_deadline_job(&mut self, out: &mut Outcome, id: u32, now: i64) {
        tracing::info!(
            job_id = id,
            "job can no longer end by its deadline; removed"
        );
        // Slurm records exit code 1 (a raw status: signal 1) and the
        // reason FAIL_DEADLINE ("DeadLine").
        self.end_job(out, id, now, JobState::Deadline, (0, 1), "DeadLine", true);
    }
}

/// Reasons of the scheduler's gates that come before the deadline's (its
/// partition's state and limits, a request it can never fit, an array's
/// task limit): a job waiting with one is not in Slurm's queue, so its
/// deadline is not checked until something changes.
fn kept_out_of_queue(reason: PendingReason) -> bool {
    matches!(
        reason,
        PendingReason::JobArrayTaskLimit
            | PendingReason::PartitionDown
            | PendingReason::PartitionInactive
            | PendingReason::PartitionTimeLimit
            | PendingReason::PartitionNodeLimit
            | PendingReason::PartitionConfig
            | PendingReason::MaxMemPerLimit
            | PendingReason::BadConstraints
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submission_rules() {
        let hour = TimeLimit::Minutes(60);
        let limit_error = Some(ErrorCode::InvalidTimeLimit);
        let min_error = Some(ErrorCode::InvalidTimeMin);
        // No deadline.
        assert_eq!(submission_refusal(0, 100, None, hour), None);
        assert_eq!(submission_refusal(-5, 100, None, hour), None);
        // Past; equal to the earliest start is taken.
        assert_eq!(
            submission_refusal(99, 100, None, TimeLimit::Infinite),
            limit_error
        );
        assert_eq!(
            submission_refusal(100, 100, None, TimeLimit::Infinite),
            None
        );
        // A limit past the deadline is no reason (Slurm 22.05).
        assert_eq!(submission_refusal(3699, 100, None, hour), None);
        // --time-min must end by it.
        let two_hours = TimeLimit::Minutes(120);
        assert_eq!(submission_refusal(3700, 100, Some(20), two_hours), None);
        assert_eq!(submission_refusal(3700, 100, Some(60), two_hours), None);
        assert_eq!(
            submission_refusal(3699, 100, Some(60), two_hours),
            min_error
        );
        // --time-min over the limit, with or without a deadline.
        assert_eq!(
            submission_refusal(0, 100, Some(90), TimeLimit::Minutes(20)),
            min_error
        );
        assert_eq!(
            submission_refusal(0, 100, Some(90), TimeLimit::Infinite),
            None
        );
        // Extremes do not overflow.
        assert_eq!(
            submission_refusal(i64::MAX, i64::MAX - 1, None, TimeLimit::Minutes(u32::MAX)),
            None
        );
        assert_eq!(
            submission_refusal(1, i64::MAX, Some(u32::MAX), hour),
            min_error
        );
        assert_eq!(
            submission_refusal(i64::MAX, 0, Some(u32::MAX), TimeLimit::Infinite),
            None
        );
    }
}
