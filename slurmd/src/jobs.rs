//! Requests for jobs whose slurmstepd cannot take them yet.
//!
//! The controller counts a job as running as soon as it sends LaunchBatch,
//! so a TerminateJob or SignalJob can reach slurmd before that launch, or
//! while slurmstepd is still starting and has no control socket. Dropping
//! such a request is not harmless: a script started after its cancel runs
//! with nobody to stop it, and the controller waits for its JobComplete
//! forever. This table keeps those requests until they can be delivered.
//!
//! ```text
//!                 begin_launch                      finish_launch
//!  (idle) ───────────────────────▶ Launching(queue) ──────────────▶ queue handed
//!    │ terminate, nothing runs          ▲   │ hold(request)          back to be
//!    ▼                                  │   └──▶ appended            delivered
//!  Ended(terminate, when) ──────────────┘
//!        (a launch issued no later than the terminate, and arriving
//!         within REMEMBER, starts with that terminate queued)
//! ```
//!
//! A remembered terminate only stops a launch that is older than it (its
//! credential was issued at or before the terminate's time): a job
//! requeued and started again later runs normally. The table is plain data:
//! the caller passes the clock in.
//!
//! The table also keeps what the Epilog is told about each job
//! ([`JobFacts`]): the launch knows the account and the owner's name, the
//! terminate only the owner's ids, nodes and partition, and the Epilog runs
//! long after slurmstepd removed the job's spool directory. The notes live
//! in memory (a restarted slurmd runs the Epilog with what the terminate
//! says), at most [`MAX_NOTES`] of them; and one Epilog runs per job at a
//! time, so a repeated terminate does not run it twice at once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::control::Request;
use crate::prolog::JobFacts;

/// How long a terminate for a job that ran nothing here is remembered.
pub const REMEMBER: Duration = Duration::from_secs(120);

/// Most signals queued for one starting job; later ones are dropped.
pub const MAX_QUEUED: usize = 16;

/// Most jobs whose facts are kept for their Epilog; beyond it the lowest
/// job ids (the oldest, as ids grow) are forgotten.
pub const MAX_NOTES: usize = 4096;

/// What [`JobTable::begin_launch`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchGate {
    /// Go ahead.
    Start,
    /// Go ahead; the job was already terminated, so it is ended as soon as
    /// its slurmstepd listens (the terminate is queued).
    StartTerminated,
    /// Another launch of this job is in progress.
    Duplicate,
}

#[derive(Debug, Clone)]
struct Ended {
    request: Request,
    at: Instant,
}

/// Jobs being launched and jobs terminated before their launch arrived.
#[derive(Debug, Default)]
pub struct JobTable {
    launching: HashMap<u32, Vec<Request>>,
    ended: HashMap<u32, Ended>,
    notes: BTreeMap<u32, JobFacts>,
    in_epilog: HashSet<u32>,
}

impl JobTable {
    /// Marks `job_id` as launching. `issued_at` is when the controller
    /// issued the launch (its credential's time), unix seconds.
    pub fn begin_launch(&mut self, job_id: u32, issued_at: i64, now: Instant) -> LaunchGate {
        if self.launching.contains_key(&job_id) {
            return LaunchGate::Duplicate;
        }
        self.prune(now);
        let mut queue = Vec::new();
        let mut gate = LaunchGate::Start;
        if let Some(e) = self.ended.remove(&job_id) {
            match e.request {
                Request::Terminate { time, .. } if issued_at <= time => {
                    queue.push(e.request);
                    gate = LaunchGate::StartTerminated;
                }
                _ => {}
            }
        }
        self.launching.insert(job_id, queue);
        gate
    }

    /// Queues `request` when `job_id` is launching; false otherwise (the
    /// caller delivers it itself). A second terminate is not queued twice.
    pub fn hold(&mut self, job_id: u32, request: Request) -> bool {
        let Some(queue) = self.launching.get_mut(&job_id) else {
            return false;
        };
        let is_terminate = |r: &Request| matches!(r, Request::Terminate { .. });
        let duplicate = is_terminate(&request) && queue.iter().any(is_terminate);
        if !duplicate && (is_terminate(&request) || queue.len() < MAX_QUEUED) {
            queue.push(request);
        }
        true
    }

    /// Ends the launch of `job_id`; the requests that arrived meanwhile, in
    /// order of arrival.
    pub fn finish_launch(&mut self, job_id: u32) -> Vec<Request> {
        self.launching.remove(&job_id).unwrap_or_default()
    }

    /// Whether a launch of `job_id` is in progress.
    pub fn is_launching(&self, job_id: u32) -> bool {
        self.launching.contains_key(&job_id)
    }

    /// Jobs whose launch is in progress, in id order. The controller is
    /// told about them with the running jobs: a job it started whose
    /// launch is still under way must not look lost (and be started again
    /// elsewhere).
    pub fn launching_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.launching.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Records a terminate that found nothing running, for a launch that
    /// may still be on its way. Signals are not remembered.
    pub fn remember_ended(&mut self, job_id: u32, request: Request, now: Instant) {
        if !matches!(request, Request::Terminate { .. }) {
            return;
        }
        self.prune(now);
        self.ended.insert(job_id, Ended { request, at: now });
    }

    /// Whether a terminate of `job_id` found nothing here less than
    /// [`REMEMBER`] ago: a Prolog launch for the job that arrives now was
    /// overtaken by its end (a requeued job starts again later than that).
    pub fn ended_recently(&mut self, job_id: u32, now: Instant) -> bool {
        self.prune(now);
        self.ended.contains_key(&job_id)
    }

    /// Number of remembered terminates (for tests and logs).
    pub fn remembered(&self) -> usize {
        self.ended.len()
    }

    /// Keeps what a launch says about its job: it replaces what an
    /// earlier run of the job left, and is completed by what a terminate
    /// that came first said.
    pub fn note_launch(&mut self, mut facts: JobFacts) {
        if let Some(earlier) = self.notes.remove(&facts.job_id) {
            facts.merge(earlier);
        }
        self.insert_note(facts);
    }

    /// Adds what a terminate says about its job to what is known.
    pub fn note_end(&mut self, facts: JobFacts) {
        match self.notes.get_mut(&facts.job_id) {
            Some(known) => known.merge(facts),
            None => self.insert_note(facts),
        }
    }

    /// What is known about `job_id`, forgotten here.
    pub fn take_note(&mut self, job_id: u32) -> Option<JobFacts> {
        self.notes.remove(&job_id)
    }

    /// Number of jobs with notes (for tests and logs).
    pub fn notes(&self) -> usize {
        self.notes.len()
    }

    fn insert_note(&mut self, facts: JobFacts) {
        self.notes.insert(facts.job_id, facts);
        while self.notes.len() > MAX_NOTES {
            self.notes.pop_first();
        }
    }

    /// Marks the Epilog of `job_id` as running; false when it already is.
    pub fn begin_epilog(&mut self, job_id: u32) -> bool {
        self.in_epilog.insert(job_id)
    }

    /// The Epilog of `job_id` is over (and reported).
    pub fn finish_epilog(&mut self, job_id: u32) {
        self.in_epilog.remove(&job_id);
    }

    fn prune(&mut self, now: Instant) {
        self.ended
            .retain(|_, e| now.saturating_duration_since(e.at) < REMEMBER);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::control::EndReason;
    use proptest::prelude::*;

    fn term(time: i64) -> Request {
        Request::Terminate {
            kill_wait_secs: 5,
            reason: EndReason::Cancelled,
            time,
        }
    }

    #[test]
    fn requests_during_a_launch_are_queued_in_order() {
        let now = Instant::now();
        let mut t = JobTable::default();
        assert!(!t.hold(7, term(1)), "nothing launching yet");
        assert_eq!(t.begin_launch(7, 100, now), LaunchGate::Start);
        assert_eq!(t.begin_launch(7, 100, now), LaunchGate::Duplicate);
        assert!(t.is_launching(7));
        assert!(t.hold(7, Request::Signal { signal: 10 }));
        assert!(t.hold(7, term(101)));
        assert!(t.hold(7, term(102)));
        assert!(!t.hold(8, term(1)));
        assert_eq!(
            t.finish_launch(7),
            vec![Request::Signal { signal: 10 }, term(101)]
        );
        assert!(!t.is_launching(7));
        assert!(t.finish_launch(7).is_empty());
        assert!(!t.hold(7, term(1)));
    }

    #[test]
    fn launches_in_progress_are_listed_until_finished() {
        let now = Instant::now();
        let mut t = JobTable::default();
        assert!(t.launching_ids().is_empty());
        t.begin_launch(9, 0, now);
        t.begin_launch(3, 0, now);
        assert_eq!(t.begin_launch(9, 0, now), LaunchGate::Duplicate);
        assert_eq!(t.launching_ids(), vec![3, 9]);
        t.finish_launch(9);
        assert_eq!(t.launching_ids(), vec![3]);
        // A remembered terminate is not a launch.
        t.remember_ended(5, term(1), now);
        assert_eq!(t.launching_ids(), vec![3]);
        t.finish_launch(3);
        assert!(t.launching_ids().is_empty());
    }

    #[test]
    fn signals_are_bounded_but_a_terminate_always_fits() {
        let mut t = JobTable::default();
        t.begin_launch(1, 0, Instant::now());
        for _ in 0..MAX_QUEUED + 5 {
            assert!(t.hold(1, Request::Signal { signal: 10 }));
        }
        assert!(t.hold(1, term(0)));
        let q = t.finish_launch(1);
        assert_eq!(q.len(), MAX_QUEUED + 1);
        assert_eq!(q.last(), Some(&term(0)));
    }

    #[test]
    fn an_early_terminate_ends_an_older_launch_only() {
        let now = Instant::now();
        let mut t = JobTable::default();
        t.remember_ended(3, term(100), now);
        t.remember_ended(3, Request::Signal { signal: 9 }, now);
        assert_eq!(t.remembered(), 1);
        assert_eq!(t.begin_launch(3, 100, now), LaunchGate::StartTerminated);
        assert_eq!(t.finish_launch(3), vec![term(100)]);
        assert_eq!(t.remembered(), 0, "used once");

        // A launch issued after the terminate (a requeued job) runs.
        t.remember_ended(4, term(100), now);
        assert_eq!(t.begin_launch(4, 101, now), LaunchGate::Start);
        assert!(t.finish_launch(4).is_empty());
    }

    #[test]
    fn remembered_terminates_expire() {
        let now = Instant::now();
        let mut t = JobTable::default();
        t.remember_ended(5, term(100), now);
        let later = now + REMEMBER;
        assert_eq!(t.begin_launch(5, 0, later), LaunchGate::Start);
        assert_eq!(t.remembered(), 0);
    }

    #[test]
    fn a_prolog_launch_overtaken_by_the_jobs_end_is_recognised() {
        let now = Instant::now();
        let mut t = JobTable::default();
        assert!(!t.ended_recently(6, now));
        t.remember_ended(6, term(100), now);
        assert!(t.ended_recently(6, now + Duration::from_secs(1)));
        assert!(!t.ended_recently(7, now));
        // Asking does not use the memory up: the batch launch still sees it.
        assert_eq!(t.begin_launch(6, 99, now), LaunchGate::StartTerminated);
        t.remember_ended(8, term(100), now);
        assert!(!t.ended_recently(8, now + REMEMBER), "forgotten in time");
    }

    fn facts(job_id: u32, account: Option<&str>, nodes: Option<&str>) -> JobFacts {
        JobFacts {
            account: account.map(str::to_string),
            nodes: nodes.map(str::to_string),
            ..JobFacts::new(job_id)
        }
    }

    #[test]
    fn notes_combine_launch_and_terminate() {
        let mut t = JobTable::default();
        // A terminate held during the launch, then the launch.
        t.note_end(facts(3, None, Some("n[1-2]")));
        t.note_launch(facts(3, Some("phys"), Some("n1")));
        let f = t.take_note(3).unwrap();
        assert_eq!(f.account.as_deref(), Some("phys"));
        assert_eq!(f.nodes.as_deref(), Some("n1"), "the launch wins");
        assert!(t.take_note(3).is_none(), "taken once");

        // The launch, then the terminate: gaps filled, nothing replaced.
        t.note_launch(facts(4, Some("phys"), None));
        t.note_end(facts(4, Some("other"), Some("n2")));
        let f = t.take_note(4).unwrap();
        assert_eq!(
            (f.account.as_deref(), f.nodes.as_deref()),
            (Some("phys"), Some("n2"))
        );
    }

    #[test]
    fn notes_are_bounded_and_forget_the_oldest_ids() {
        let mut t = JobTable::default();
        for id in 1..=u32::try_from(MAX_NOTES).unwrap() + 10 {
            t.note_launch(JobFacts::new(id));
        }
        assert_eq!(t.notes(), MAX_NOTES);
        assert!(t.take_note(10).is_none());
        assert!(t.take_note(11).is_some());
    }

    #[test]
    fn one_epilog_per_job_at_a_time() {
        let mut t = JobTable::default();
        assert!(t.begin_epilog(5));
        assert!(!t.begin_epilog(5));
        assert!(t.begin_epilog(6));
        t.finish_epilog(5);
        assert!(t.begin_epilog(5));
    }

    proptest! {
        /// Whatever the interleaving, a terminate held during a launch
        /// comes back exactly once from finish_launch.
        #[test]
        fn a_held_terminate_is_never_lost(ops in proptest::collection::vec(0u8..4, 0..40)) {
            let now = Instant::now();
            let mut t = JobTable::default();
            let mut held_terminate = false;
            let mut launching = false;
            for op in ops {
                match op {
                    0 => {
                        if t.begin_launch(1, 0, now) == LaunchGate::Start {
                            prop_assert!(!launching);
                            launching = true;
                        }
                    }
                    1 => {
                        let queued = t.hold(1, term(0));
                        prop_assert_eq!(queued, launching);
                        held_terminate |= queued;
                    }
                    2 => { t.hold(1, Request::Signal { signal: 2 }); }
                    _ => {
                        let q = t.finish_launch(1);
                        let terms = q.iter().filter(|r| matches!(r, Request::Terminate { .. })).count();
                        prop_assert_eq!(terms, usize::from(held_terminate));
                        held_terminate = false;
                        launching = false;
                    }
                }
            }
        }
    }
}
