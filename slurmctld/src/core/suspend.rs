//! `scontrol suspend`, `scontrol resume` and `scontrol top`.
//!
//! Suspending stops a running job where it stands, so that an operator can
//! make room for other work without losing what the job has done. The rules
//! are Slurm 22.05's for a suspension asked for by an operator (not gang
//! scheduling) under select/cons_tres:
//!
//! * only operators (root, SlurmUser) may suspend or resume
//!   (ESLURM_ACCESS_DENIED for anyone else, whoever owns the job);
//! * every process of the job gets SIGSTOP on every node it has, SIGCONT on
//!   resume, through the same path as `scancel -f --signal`;
//! * the job's CPUs go back to its nodes for other jobs while its memory
//!   stays allocated (cons_tres removes a suspended job's cores only): a
//!   node whose only job is suspended shows IDLE, with its AllocMem;
//! * the time suspended does not count: the time limit runs from
//!   [`Job::clock_start`], which every suspension moves later, and RunTime
//!   (squeue TIME) stands still while suspended. Slurm's two fields keep the
//!   account: SuspendTime, the last suspend or resume, and SecsPreSuspend,
//!   the seconds run before the last suspension;
//! * while suspended the job's priority shows 0, as in Slurm;
//! * suspending a suspended job is no error; resuming a running one is
//!   ESLURM_JOB_NOT_SUSPENDED, a pending one ESLURM_JOB_PENDING, a finished
//!   one ESLURM_ALREADY_DONE.
//!
//! ```text
//!              suspend: SIGSTOP, CPUs given back
//!   RUNNING ──────────────────────────────────────> SUSPENDED
//!      ^                                               │
//!      └───────────────────────────────────────────────┤
//!              resume: CPUs taken again, SIGCONT       │ cancel (SIGTERM and SIGCONT)
//!                                                      │ requeue (held), node failure
//!                                                      v
//!                                  CANCELLED | PENDING | NODE_FAIL (+COMPLETING)
//! ```
//!
//! A job that ends while suspended keeps its [`Suspension`]: its shares
//! still count no CPUs on their nodes while it completes
//! ([`Job::counted_share`]), and its RunTime is what it ran before.
//!
//! As Slurm does, a job is resumed even when other jobs took its CPUs
//! meanwhile: it takes back the same CPU ids (`Job::cpu_ids`), which the
//! jobs then share, and the node counts each of them once (CPUAlloc never
//! passes CPUTot). Only an exclusive job finding its node in use, or a node
//! another job holds exclusively, is refused with ESLURM_NODES_BUSY.
//!
//! `scontrol top` moves pending jobs to the top of their owner's queue: of
//! the owner's pending, unheld jobs with the same partition, account and
//! QOS as the first job listed, the listed ones come first (in the order
//! given), the others after them in their present order. As Slurm does, only
//! nice values change, so the owner gains nothing over other users: the
//! jobs swap the priorities they had among themselves. Operators may use
//! it on any job; other users on their own jobs, and only with
//! SchedulerParameters=enable_user_top.

use slurm_common::state::{transition, IllegalTransition, JobState, JobStatus, NodeBaseState};
use slurm_proto::v1;
use slurm_proto::ErrorCode;
use slurm_sched::NodeAlloc;

use super::codec::{Reader, Writer};
use super::event::DecodeError;
use super::{Action, ApplyError, Caller, Controller, Event, Job, JobChange, Outcome, Reply};

/// Linux's SIGCONT and SIGSTOP (signals travel as numbers; the core has
/// no libc).
const SIGCONT: u32 = 18;
const SIGSTOP: u32 = 19;

/// One job's per-operation result.
type JobResult = Result<(), (ErrorCode, String)>;

/// The suspension bookkeeping of a job's current run; `Job::suspend` is
/// `None` for a run never suspended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suspension {
    /// When the job was last suspended or resumed (SuspendTime).
    pub time: i64,
    /// Seconds it ran before its last suspension, every stretch between
    /// suspensions summed (SecsPreSuspend).
    pub pre_suspend_secs: i64,
    /// Suspended now, or when it ended: its CPUs are not counted on its
    /// nodes, only its memory.
    pub suspended: bool,
    /// It had its nodes to itself before the suspension; given up with the
    /// CPUs, taken again on resume.
    pub exclusive: bool,
}

/// The CPUs of share `a` alone: what a suspension gives back.
fn cores_of(a: &NodeAlloc) -> NodeAlloc {
    NodeAlloc { mem_mb: 0, ..*a }
}

impl Job {
    /// Whether the job's CPUs are given back to its nodes (suspended, or
    /// ended while suspended).
    pub fn cores_released(&self) -> bool {
        self.suspend.as_deref().is_some_and(|s| s.suspended)
    }

    /// What node `a.node_index` counts of this job's share `a`: all of it,
    /// or its memory alone while the CPUs are given back.
    pub fn counted_share(&self, a: &NodeAlloc) -> NodeAlloc {
        if self.cores_released() {
            NodeAlloc { cpus: 0, ..*a }
        } else {
            *a
        }
    }

    /// When the job would have started had it never been suspended: its
    /// time limit (and RunTime) count from here.
    pub fn clock_start(&self) -> i64 {
        match self.suspend.as_deref() {
            Some(s) => s.time.saturating_sub(s.pre_suspend_secs),
            None => self.start_time,
        }
    }

    /// RunTime at `now`: still while suspended, and for a job that ended
    /// while suspended what it ran before.
    pub fn run_secs(&self, now: i64) -> i64 {
        let secs = match self.status.state {
            JobState::Running => now.saturating_sub(self.clock_start()),
            JobState::Suspended => self.suspend.as_deref().map_or(0, |s| s.pre_suspend_secs),
            s if s.is_finished() && self.start_time > 0 => match self.suspend.as_deref() {
                Some(s) if s.suspended => s.pre_suspend_secs,
                _ => self.end_time.saturating_sub(self.clock_start()),
            },
            _ => 0,
        };
        secs.max(0)
    }

    /// SuspendTime and SecsPreSuspend as shown: none for a run never
    /// suspended and for a pending job (a requeued one starts afresh).
    pub fn suspend_shown(&self) -> (i64, u64) {
        match self.suspend.as_deref() {
            Some(s) if self.status.state != JobState::Pending => (
                s.time,
                u64::try_from(s.pre_suspend_secs.max(0)).unwrap_or(0),
            ),
            _ => (0, 0),
        }
    }
}

/// The status of a job reported ended in state `to`. A suspended job's
/// report that crossed its suspension (the script ended just before its
/// SIGSTOP) may say COMPLETED, which only a running job reaches: it passes
/// through RUNNING.
pub(super) fn ended_status(
    status: JobStatus,
    to: JobState,
) -> Result<JobStatus, IllegalTransition> {
    if status.state == JobState::Suspended
        && !status.is_completing()
        && transition(JobState::Suspended, to).is_err()
    {
        return status.apply(JobState::Running)?.apply(to);
    }
    status.apply(to)
}

impl Controller {
    /// `scontrol suspend` (or with `resume`, `scontrol resume`) of the
    /// jobs `filter` names: one result per job.
    pub(super) fn suspend_jobs(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        filter: &v1::JobFilter,
        resume: bool,
        now: i64,
    ) -> Reply {
        if !self.is_operator(caller) {
            // Slurm refuses before it looks for the jobs.
            let denied = |job_id, array_task_id| v1::JobActionResult {
                job_id,
                array_task_id,
                error_code: ErrorCode::AccessDenied.number(),
                error_detail: String::new(),
            };
            let mut results: Vec<_> = filter.job_ids.iter().map(|&id| denied(id, None)).collect();
            results.extend(
                filter
                    .array_tasks
                    .iter()
                    .map(|t| denied(t.array_job_id, t.task_spec.parse().ok())),
            );
            if results.is_empty() {
                return Reply::error(ErrorCode::AccessDenied, "");
            }
            return Reply::JobResults(results);
        }
        let reply = self.for_each_job(out, caller, filter, now, |c, out, id| {
            if resume {
                c.resume_job(out, id, now)
            } else {
                c.suspend_job(out, id, now)
            }
        });
        // A job id (or array) that names no record at all is answered as
        // Slurm 22.05 answers it, "Unexpected message received"; a missing
        // task of an array that exists stays an invalid job id.
        match reply {
            Reply::JobResults(mut results) => {
                for r in &mut results {
                    if r.error_code == ErrorCode::InvalidJobId.number()
                        && r.array_task_id.is_none()
                        && !self.names_a_record(r.job_id)
                    {
                        r.error_code = ErrorCode::UnexpectedMessage.number();
                    }
                }
                Reply::JobResults(results)
            }
            other => other,
        }
    }

    /// Whether `id` is the id of a job record or of an array with records.
    fn names_a_record(&self, id: u32) -> bool {
        self.jobs.contains_key(&id)
            || self
                .jobs
                .values()
                .any(|j| super::array::is_member(j, id, None))
    }

    fn suspend_job(&mut self, out: &mut Outcome, id: u32, now: i64) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        match job.status.state {
            JobState::Pending => Err((ErrorCode::JobPending, String::new())),
            // Slurm answers success and changes nothing.
            JobState::Suspended => Ok(()),
            JobState::Running => {
                let event = Event::JobSuspended {
                    job_id: id,
                    time: now,
                };
                self.switch(out, id, event, SIGSTOP)
            }
            _ => Err((ErrorCode::AlreadyDone, String::new())),
        }
    }

    fn resume_job(&mut self, out: &mut Outcome, id: u32, now: i64) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        match job.status.state {
            JobState::Pending => Err((ErrorCode::JobPending, String::new())),
            JobState::Running => Err((ErrorCode::JobNotSuspended, String::new())),
            JobState::Suspended => {
                self.resume_blocker(job)?;
                let event = Event::JobResumed {
                    job_id: id,
                    time: now,
                };
                self.switch(out, id, event, SIGCONT)
            }
            _ => Err((ErrorCode::AlreadyDone, String::new())),
        }
    }

    /// Records a suspension or resumption of job `id` (`event`) and sends
    /// `signal` to the job's processes on every node.
    fn switch(&mut self, out: &mut Outcome, id: u32, event: Event, signal: u32) -> JobResult {
        let done = if matches!(event, Event::JobSuspended { .. }) {
            "suspended"
        } else {
            "resumed"
        };
        if !self.emit(out, event) {
            return Err((ErrorCode::Internal, format!("job {id} cannot be {done}")));
        }
        self.signal_everywhere(out, id, signal);
        Ok(())
    }

    /// Why suspended `job` cannot take its CPUs back now: a node DOWN
    /// (Slurm's plain SLURM_ERROR), or a whole node taken by an exclusive
    /// job, or taken at all for an exclusive one (ESLURM_NODES_BUSY). CPUs
    /// other jobs took meanwhile are taken again all the same, as Slurm
    /// 22.05 resumes onto them (they count once on the node).
    fn resume_blocker(&self, job: &Job) -> JobResult {
        let exclusive = job.suspend.as_deref().is_some_and(|s| s.exclusive);
        for a in job.alloc.iter() {
            let Some(n) = self.nodes.get(a.node_index) else {
                continue;
            };
            if n.state.base == NodeBaseState::Down {
                return Err((ErrorCode::Unspecified, format!("node {} is down", n.name)));
            }
            let taken = n.exclusive_owner.is_some() || (exclusive && n.alloc_cpus > 0);
            if taken {
                return Err((
                    ErrorCode::NodesBusy,
                    format!(
                        "node {}: {} of {} CPUs are allocated to other jobs",
                        n.name, n.alloc_cpus, n.cpus
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `signal` to every process of the job on every node it has.
    fn signal_everywhere(&self, out: &mut Outcome, job_id: u32, signal: u32) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        out.actions.push(Action::SignalJob {
            job_id,
            nodes: job.alloc.iter().map(|a| a.node_index).collect(),
            request: v1::NodeSignalJobRequest {
                job_id,
                step_id: None,
                signal,
                batch_only: false,
                full: true,
            },
        });
    }

    /// [`Event::JobSuspended`]: RUNNING to SUSPENDED; the CPUs (and an
    /// exclusive hold) go back to the nodes, the memory stays.
    pub(super) fn apply_suspended(&mut self, job_id: u32, time: i64) -> Result<(), ApplyError> {
        let job = self.job_mut(job_id)?;
        job.status = job
            .status
            .apply(JobState::Suspended)
            .map_err(|e| super::illegal(job_id, e))?;
        let (ran_from, before) = match job.suspend.as_deref() {
            Some(s) => (s.time, s.pre_suspend_secs),
            None => (job.start_time, 0),
        };
        let exclusive = std::mem::replace(&mut job.exclusive_alloc, false);
        job.suspend = Some(Box::new(Suspension {
            time,
            pre_suspend_secs: before.saturating_add(time.saturating_sub(ran_from).max(0)),
            suspended: true,
            exclusive,
        }));
        let id = job.id;
        let alloc = job.alloc.clone();
        let cpu_ids = job.cpu_ids.clone();
        for (i, a) in alloc.iter().enumerate() {
            if let Some(n) = self.nodes.get_mut(a.node_index) {
                n.give_back(
                    &cores_of(a),
                    cpu_ids.get(i).map_or(&[], |ids| ids),
                    exclusive,
                    id,
                    time,
                );
            }
        }
        self.last_update = time;
        Ok(())
    }

    /// [`Event::JobResumed`]: SUSPENDED to RUNNING; the CPUs (and an
    /// exclusive hold) are taken again.
    pub(super) fn apply_resumed(&mut self, job_id: u32, time: i64) -> Result<(), ApplyError> {
        let job = self.job_mut(job_id)?;
        let Some(mut s) = job.suspend.as_deref().copied().filter(|s| s.suspended) else {
            return Err(ApplyError::IllegalTransition {
                job_id,
                detail: "resumed without a suspension".into(),
            });
        };
        job.status = job
            .status
            .apply(JobState::Running)
            .map_err(|e| super::illegal(job_id, e))?;
        s.time = time;
        s.suspended = false;
        job.suspend = Some(Box::new(s));
        job.exclusive_alloc = s.exclusive;
        // As Slurm 22.05: a new priority, the next number down, as a
        // release gives one.
        let next = self.next_priority;
        let job = self.job_mut(job_id)?;
        job.base_priority = next;
        self.take_priority(next);
        let job = self.job_mut(job_id)?;
        let id = job.id;
        let alloc = job.alloc.clone();
        let cpu_ids = job.cpu_ids.clone();
        for (i, a) in alloc.iter().enumerate() {
            if let Some(n) = self.nodes.get_mut(a.node_index) {
                // The same CPUs again, even where another job took them
                // meanwhile.
                n.take(
                    &cores_of(a),
                    cpu_ids.get(i).map_or(&[], |ids| ids),
                    s.exclusive,
                    id,
                );
            }
        }
        self.last_update = time;
        Ok(())
    }

    /// `scontrol top`: see the module docs. Jobs that cannot be moved are
    /// left alone and the request answers with the first refusal (unknown
    /// id, not pending, held, another user's); the others move anyway.
    pub(super) fn top_jobs(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        filter: &v1::JobFilter,
        now: i64,
    ) -> Reply {
        let operator = self.is_operator(caller);
        if !operator && !self.cfg.enable_user_top {
            return Reply::error(ErrorCode::AccessDenied, "");
        }
        let (listed, mut refusal) = self.top_listed(out, filter, now);
        let mut chosen: Vec<u32> = Vec::new();
        for id in listed {
            if chosen.contains(&id) {
                continue;
            }
            let code = match self.jobs.get(&id) {
                None => Some(ErrorCode::InvalidJobId),
                Some(j) if !j.is_schedulable() => Some(ErrorCode::JobNotPending),
                Some(j) if j.hold.is_some() => Some(ErrorCode::JobHeld),
                Some(j) if !operator && j.uid != caller.uid => Some(ErrorCode::AccessDenied),
                Some(_) => None,
            };
            match code {
                Some(code) => {
                    refusal.get_or_insert(code);
                }
                None => chosen.push(id),
            }
        }
        if let Some(key) = chosen
            .first()
            .and_then(|id| self.jobs.get(id))
            .map(|j| top_key(j))
        {
            chosen.retain(|id| self.jobs.get(id).is_some_and(|j| in_top_group(j, &key)));
            for (job_id, nice) in self.top_nice_values(&chosen, &key) {
                let changes = vec![JobChange::Nice(nice)];
                self.emit(out, Event::JobUpdated { job_id, changes });
            }
        }
        match refusal {
            Some(code) => Reply::error(code, ""),
            None => Reply::Ok,
        }
    }

    /// The records `filter` names, in its order (ids first, then array
    /// tasks), and the first id that names nothing.
    fn top_listed(
        &mut self,
        out: &mut Outcome,
        filter: &v1::JobFilter,
        now: i64,
    ) -> (Vec<u32>, Option<ErrorCode>) {
        let mut listed = Vec::new();
        let mut refusal = None;
        for &id in &filter.job_ids {
            if self.jobs.contains_key(&id) {
                listed.push(id);
                continue;
            }
            // An array whose meta record is gone: its task records.
            let records = self.array_records(out, id, None, now);
            if records.is_empty() {
                refusal.get_or_insert(ErrorCode::InvalidJobId);
            }
            listed.extend(records);
        }
        for sel in &filter.array_tasks {
            let tasks = match super::array::parse_ranges(&sel.task_spec) {
                Ok(ranges) => self.array_task_ids(sel.array_job_id, |t| ranges.contains(t)),
                Err(_) => Vec::new(),
            };
            let before = listed.len();
            for t in tasks {
                listed.extend(self.array_records(out, sel.array_job_id, Some(t), now));
            }
            if listed.len() == before {
                refusal.get_or_insert(ErrorCode::InvalidJobId);
            }
        }
        (listed, refusal)
    }

    /// The nice values that put `chosen` (in that order) above the other
    /// pending, unheld jobs of `key`: the jobs trade the priorities they
    /// have among themselves, so the sum stays. Only changed jobs are
    /// returned.
    fn top_nice_values(&self, chosen: &[u32], key: &TopKey) -> Vec<(u32, i32)> {
        let mut others: Vec<&Job> = self
            .jobs()
            .filter(|j| {
                j.is_schedulable()
                    && j.hold.is_none()
                    && !chosen.contains(&j.id.get())
                    && in_top_group(j, key)
            })
            .collect();
        others.sort_by_key(|j| (std::cmp::Reverse(j.priority()), j.submit_time, j.id.get()));
        let order: Vec<&Job> = chosen
            .iter()
            .filter_map(|id| self.job(*id))
            .chain(others)
            .collect();
        let mut slots: Vec<u32> = order.iter().map(|j| j.priority()).collect();
        slots.sort_unstable_by(|a, b| b.cmp(a));
        order
            .iter()
            .zip(slots)
            .filter(|(j, slot)| j.priority() != *slot)
            .map(|(j, slot)| {
                let nice = i64::from(j.base_priority) - i64::from(slot);
                let nice =
                    i32::try_from(nice).unwrap_or(if nice < 0 { i32::MIN } else { i32::MAX });
                (j.id.get(), nice)
            })
            .collect()
    }
}

/// What the jobs `scontrol top` reorders have in common with the first
/// one listed: owner, partition, account and QOS.
type TopKey = (u32, String, String, String);

fn top_key(j: &Job) -> TopKey {
    (
        j.uid,
        j.partition_name.clone(),
        j.spec.account.to_string(),
        j.spec.qos.to_string(),
    )
}

/// Whether `j` is of the group `key` names; compared in place, since it is
/// asked of every pending job.
fn in_top_group(j: &Job, key: &TopKey) -> bool {
    j.uid == key.0
        && j.partition_name == key.1
        && *j.spec.account == *key.2
        && *j.spec.qos == *key.3
}

/// Writes a snapshot SUSPEND record: job id, SuspendTime (i64),
/// SecsPreSuspend (i64), suspended and exclusive (u8 each).
pub(super) fn write_record(w: &mut Writer<'_>, job_id: u32, s: &Suspension) {
    w.u32(job_id);
    w.i64(s.time);
    w.i64(s.pre_suspend_secs);
    w.bool(s.suspended);
    w.bool(s.exclusive);
}

/// Reads a snapshot SUSPEND record: the job id and its suspension.
pub(super) fn read_record(r: &mut Reader<'_>) -> Result<(u32, Suspension), DecodeError> {
    let job_id = r.u32("job id")?;
    Ok((
        job_id,
        Suspension {
            time: r.i64("suspend time")?,
            pre_suspend_secs: r.i64("seconds before suspension")?,
            suspended: r.bool("suspended")?,
            exclusive: r.bool("exclusive before suspension")?,
        },
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use slurm_common::reason::PendingReason;
    use slurm_common::state::JobFlag;
    use slurm_sched::Hold;

    use super::super::tests::{replay_encoded, script, Env, ALICE, BOB};
    use super::super::{snapshot, Command, CtlConfig};
    use super::*;

    /// Two nodes whose memory is a consumable resource.
    const CONF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
MinJobAge=300
KillWait=30
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
NodeName=n[1-2] CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=other Nodes=ALL MaxTime=INFINITE State=UP
";

    fn env() -> Env {
        let mut env = Env::with_conf(CONF);
        for n in ["n1", "n2"] {
            env.run(Command::RegisterNode {
                caller: Caller::ROOT,
                request: Box::new(v1::RegisterNodeRequest {
                    node_name: n.into(),
                    ..Default::default()
                }),
            });
        }
        env
    }

    /// A job of Alice's for the whole of one node: 2 CPUs, 1000 MB, 10
    /// minutes.
    fn whole_node() -> v1::JobDescription {
        v1::JobDescription {
            ntasks: Some(2),
            memory: Some(v1::job_description::Memory::MemPerNodeMb(1000)),
            time_limit: Some(v1::TimeLimit {
                limit: Some(v1::time_limit::Limit::Minutes(10)),
            }),
            ..script()
        }
    }

    /// [`whole_node`] on n1.
    fn on_n1() -> v1::JobDescription {
        v1::JobDescription {
            required_nodes: "n1".into(),
            ..whole_node()
        }
    }

    fn ids(ids: &[u32]) -> v1::JobFilter {
        v1::JobFilter {
            job_ids: ids.to_vec(),
            ..Default::default()
        }
    }

    fn suspend_as(env: &mut Env, caller: Caller, job_ids: &[u32], resume: bool) -> Vec<(u32, i32)> {
        let r = env.run(Command::Suspend {
            caller,
            filter: ids(job_ids),
            resume,
        });
        match r {
            Reply::JobResults(v) => v.iter().map(|r| (r.job_id, r.error_code)).collect(),
            other => panic!("not job results: {other:?}"),
        }
    }

    fn suspend(env: &mut Env, id: u32) -> Vec<(u32, i32)> {
        suspend_as(env, Caller::ROOT, &[id], false)
    }

    fn resume(env: &mut Env, id: u32) -> Vec<(u32, i32)> {
        suspend_as(env, Caller::ROOT, &[id], true)
    }

    fn signal(job_id: u32, nodes: Vec<usize>, signal: u32) -> Action {
        Action::SignalJob {
            job_id,
            nodes,
            request: v1::NodeSignalJobRequest {
                job_id,
                step_id: None,
                signal,
                batch_only: false,
                full: true,
            },
        }
    }

    fn n1(env: &Env) -> (u32, u64, String) {
        let n = &env.ctl.nodes()[0];
        (n.alloc_cpus, n.alloc_mem_mb, n.state.display_long())
    }

    #[test]
    fn a_suspended_job_is_stopped_and_gives_its_cpus_but_not_its_memory() {
        let mut env = env();
        let a = env.submit(whole_node());
        env.take_actions();
        assert_eq!(n1(&env), (2, 1000, "ALLOCATED".into()));
        let before = env.events.len();
        env.now += 10;
        assert_eq!(suspend(&mut env, a), vec![(a, 0)]);
        assert_eq!(
            env.events[before..],
            [Event::JobSuspended {
                job_id: a,
                time: env.now
            }]
        );
        assert_eq!(env.take_actions(), vec![signal(a, vec![0], SIGSTOP)]);
        let job = env.job(a);
        assert_eq!(job.state(), JobState::Suspended);
        assert_eq!(job.priority(), 0);
        assert_eq!(job.reason, PendingReason::None);
        // sinfo shows the node idle; its memory stays with the job.
        assert_eq!(n1(&env), (0, 1000, "IDLE".into()));

        // Another job takes the CPUs; with the memory left, it fits.
        let b = env.submit(on_n1());
        assert_eq!(env.job(b).state(), JobState::Running);
        assert_eq!(env.job(b).alloc[0].node_index, 0);
        assert_eq!(n1(&env), (2, 2000, "ALLOCATED".into()));
        env.take_actions();

        // A takes its CPUs back while B holds them, as Slurm 22.05
        // resumes it: they count once on the node (CPUAlloc=2).
        env.now += 5;
        assert_eq!(resume(&mut env, a), vec![(a, 0)]);
        assert_eq!(
            env.events[env.events.len() - 1..],
            [Event::JobResumed {
                job_id: a,
                time: env.now
            }]
        );
        assert_eq!(env.take_actions(), vec![signal(a, vec![0], SIGCONT)]);
        assert_eq!(env.job(a).state(), JobState::Running);
        // A new priority, the next number down: below B's.
        assert!(env.job(a).priority() < env.job(b).priority());
        assert_eq!(n1(&env), (2, 2000, "ALLOCATED".into()));
        env.now += 5;
        env.finish(b, 0, 0);
        env.take_actions();
        assert_eq!(n1(&env), (2, 1000, "ALLOCATED".into()));
    }

    #[test]
    fn time_suspended_does_not_count_against_the_time_limit() {
        let mut env = env();
        let t0 = env.now;
        let a = env.submit(whole_node());
        assert_eq!(env.job(a).deadline(), Some(t0 + 600));
        env.now = t0 + 100;
        suspend(&mut env, a);
        // Nothing runs out while suspended, and RunTime stands still.
        assert_eq!(env.job(a).deadline(), None);
        env.now = t0 + 5000;
        env.run(Command::Tick);
        assert_eq!(env.job(a).state(), JobState::Suspended);
        assert_eq!(env.job(a).run_secs(env.now), 100);
        assert_eq!(env.job(a).suspend_shown(), (t0 + 100, 100));
        // Resumed: the 4900 seconds suspended are added to the end.
        resume(&mut env, a);
        let job = env.job(a);
        assert_eq!(job.suspend_shown(), (t0 + 5000, 100));
        assert_eq!(job.deadline(), Some(t0 + 600 + 4900));
        assert_eq!(job.run_secs(t0 + 5050), 150);
        // A second suspension adds up.
        env.now = t0 + 5200;
        suspend(&mut env, a);
        assert_eq!(env.job(a).suspend_shown(), (t0 + 5200, 300));
        env.now = t0 + 6200;
        resume(&mut env, a);
        assert_eq!(env.job(a).deadline(), Some(t0 + 600 + 4900 + 1000));
        env.now = t0 + 6499;
        env.run(Command::Tick);
        assert_eq!(env.job(a).state(), JobState::Running);
        env.now = t0 + 6500;
        env.run(Command::Tick);
        let job = env.job(a);
        assert_eq!(job.state(), JobState::Timeout);
        assert_eq!(job.run_secs(env.now + 99), 600);
    }

    #[test]
    fn refusals_are_slurms() {
        let mut env = env();
        let a = env.submit(whole_node());
        let b = env.submit(whole_node());
        let pending = env.submit(v1::JobDescription {
            hold: true,
            ..whole_node()
        });
        assert_eq!(env.job(pending).state(), JobState::Pending);
        env.finish(b, 0, 0);
        env.take_actions();
        let before = env.events.len();
        let code = |e: ErrorCode| e.number();
        // Only operators, whoever owns the job; Slurm does not even look
        // for the job first.
        for caller in [ALICE, BOB] {
            assert_eq!(
                suspend_as(&mut env, caller, &[a, 999_999], false),
                vec![
                    (a, code(ErrorCode::AccessDenied)),
                    (999_999, code(ErrorCode::AccessDenied))
                ]
            );
            assert_eq!(
                suspend_as(&mut env, caller, &[a], true),
                vec![(a, code(ErrorCode::AccessDenied))]
            );
        }
        assert_eq!(
            suspend_as(&mut env, Caller::ROOT, &[pending, b, 999_999], false),
            vec![
                (pending, code(ErrorCode::JobPending)),
                (b, code(ErrorCode::AlreadyDone)),
                // What Slurm 22.05 answers for a job that does not exist.
                (999_999, code(ErrorCode::UnexpectedMessage)),
            ]
        );
        assert_eq!(
            suspend_as(&mut env, Caller::ROOT, &[a, pending, b], true),
            vec![
                (a, code(ErrorCode::JobNotSuspended)),
                (pending, code(ErrorCode::JobPending)),
                (b, code(ErrorCode::AlreadyDone)),
            ]
        );
        assert_eq!(env.events.len(), before);
        assert!(env.take_actions().is_empty());
        // Suspending a suspended job is a success that changes nothing.
        suspend(&mut env, a);
        env.take_actions();
        let before = env.events.len();
        assert_eq!(suspend(&mut env, a), vec![(a, 0)]);
        assert_eq!(env.events.len(), before);
        assert!(env.take_actions().is_empty());
        assert_eq!(
            suspend_as(&mut env, ALICE, &[a], true),
            vec![(a, code(ErrorCode::AccessDenied))]
        );
        assert_eq!(env.job(a).state(), JobState::Suspended);
    }

    #[test]
    fn a_suspended_job_cancelled_ends_and_gives_back_only_its_memory() {
        let mut env = env();
        let a = env.submit(whole_node());
        env.now += 30;
        suspend(&mut env, a);
        let b = env.submit(on_n1());
        assert_eq!(env.job(b).alloc[0].node_index, 0);
        env.take_actions();
        env.now += 100;
        env.run(Command::Cancel {
            caller: ALICE,
            filter: ids(&[a]),
            signal: None,
        });
        let job = env.job(a);
        assert_eq!(job.state(), JobState::Cancelled);
        assert!(job.status.flags.contains(JobFlag::Completing));
        assert_eq!(job.run_secs(env.now), 30);
        let actions = env.take_actions();
        assert!(
            matches!(&actions[..], [Action::TerminateJob { job_id, nodes, .. }]
                if *job_id == a && nodes == &vec![0]),
            "{actions:?}"
        );
        // Completing, it counts its memory and no CPU of B's.
        let n = &env.ctl.nodes()[0];
        assert_eq!(
            (n.alloc_cpus, n.alloc_mem_mb, n.completing_cpus),
            (2, 2000, 0)
        );
        assert_eq!(n.state.display_long(), "ALLOCATED+COMPLETING");
        env.epilogs(a);
        assert_eq!(n1(&env), (2, 1000, "ALLOCATED".into()));
        assert_eq!(env.job(a).run_secs(env.now), 30);
        env.finish(b, 0, 0);
        assert_eq!(n1(&env), (0, 0, "IDLE".into()));
    }

    #[test]
    fn a_report_that_crossed_the_suspension_ends_the_job_as_it_says() {
        for (status, want) in [(0, JobState::Completed), (3, JobState::Failed)] {
            let mut env = env();
            let a = env.submit(whole_node());
            suspend(&mut env, a);
            env.take_actions();
            env.now += 7;
            assert_eq!(env.complete(a, status, 0), Reply::Ok);
            assert_eq!(env.job(a).state(), want);
            env.epilogs(a);
            assert_eq!(n1(&env), (0, 0, "IDLE".into()));
        }
    }

    #[test]
    fn a_suspended_job_requeued_is_held_and_starts_afresh() {
        let mut env = env();
        let a = env.submit(whole_node());
        env.now += 20;
        suspend(&mut env, a);
        env.take_actions();
        assert_eq!(
            env.run(Command::Requeue {
                caller: Caller::ROOT,
                filter: ids(&[a]),
                hold: false,
            }),
            Reply::JobResults(vec![v1::JobActionResult {
                job_id: a,
                array_task_id: None,
                error_code: 0,
                error_detail: String::new(),
            }])
        );
        let job = env.job(a);
        assert_eq!(job.state(), JobState::Pending);
        assert_eq!(job.hold, Some(Hold::Admin));
        assert_eq!(job.reason, PendingReason::JobHeldAdmin);
        assert_eq!(job.suspend_shown(), (0, 0));
        env.epilogs(a);
        assert_eq!(n1(&env), (0, 0, "IDLE".into()));
        env.run(Command::Release {
            caller: Caller::ROOT,
            filter: ids(&[a]),
        });
        env.now += 1000;
        env.run(Command::Tick);
        let job = env.job(a);
        assert_eq!(job.state(), JobState::Running);
        assert!(job.suspend.is_none());
        assert_eq!(job.deadline(), Some(env.now + 600));
    }

    #[test]
    fn an_exclusive_job_gives_up_its_nodes_while_suspended() {
        let mut env = env();
        let a = env.submit(v1::JobDescription {
            sharing: v1::NodeSharing::Exclusive as i32,
            ntasks: Some(1),
            ..on_n1()
        });
        let owner = |env: &Env| env.ctl.nodes()[0].exclusive_owner.map(|j| j.get());
        assert_eq!(owner(&env), Some(a));
        suspend(&mut env, a);
        assert_eq!(owner(&env), None);
        assert!(!env.job(a).exclusive_alloc);
        // Another job on n1 keeps the node from it.
        let b = env.submit(v1::JobDescription {
            ntasks: Some(1),
            ..on_n1()
        });
        assert_eq!(env.job(b).state(), JobState::Running);
        assert_eq!(
            resume(&mut env, a),
            vec![(a, ErrorCode::NodesBusy.number())]
        );
        env.finish(b, 0, 0);
        assert_eq!(resume(&mut env, a), vec![(a, 0)]);
        assert_eq!(owner(&env), Some(a));
        assert!(env.job(a).exclusive_alloc);
    }

    fn reloaded(ctl: &Controller) -> Controller {
        let loaded =
            snapshot::decode(&snapshot::encode(ctl, 1), Env::with_conf(CONF).ctl, false).unwrap();
        assert!(loaded.damage.is_none(), "{:?}", loaded.damage);
        loaded.controller
    }

    fn same(a: &Controller, b: &Controller) {
        a.sanity_check().unwrap();
        b.sanity_check().unwrap();
        for (x, y) in a.jobs().zip(b.jobs()) {
            assert_eq!(
                (
                    x.id,
                    x.status,
                    x.suspend.as_deref(),
                    x.exclusive_alloc,
                    x.nice,
                    x.priority()
                ),
                (
                    y.id,
                    y.status,
                    y.suspend.as_deref(),
                    y.exclusive_alloc,
                    y.nice,
                    y.priority()
                )
            );
        }
        assert_eq!(a.jobs().count(), b.jobs().count());
        for (x, y) in a.nodes().iter().zip(b.nodes()) {
            assert_eq!(
                (x.alloc_cpus, x.alloc_mem_mb, x.state, x.exclusive_owner),
                (y.alloc_cpus, y.alloc_mem_mb, y.state, y.exclusive_owner)
            );
        }
    }

    #[test]
    fn a_restart_keeps_the_suspension_from_the_journal_or_a_snapshot() {
        let mut env = env();
        let a = env.submit(whole_node());
        let c = env.submit(whole_node());
        env.now += 40;
        suspend(&mut env, a);
        suspend(&mut env, c);
        env.now += 10;
        resume(&mut env, c);
        let b = env.submit(whole_node());
        assert_eq!(env.job(b).state(), JobState::Running);
        env.now += 10;
        // One more that ended while suspended and still completes.
        suspend(&mut env, b);
        env.run(Command::Cancel {
            caller: ALICE,
            filter: ids(&[b]),
            signal: None,
        });
        for restored in [replay_encoded(CONF, &env.events), reloaded(&env.ctl)] {
            same(&env.ctl, &restored);
            let job = restored.job(a).unwrap();
            assert_eq!(job.state(), JobState::Suspended);
            assert_eq!(job.suspend_shown(), (env.now - 20, 40));
            let mut env2 = Env {
                ctl: restored,
                now: env.now + 100,
                events: Vec::new(),
                actions: Vec::new(),
            };
            env2.epilogs(b);
            assert_eq!(resume(&mut env2, a), vec![(a, 0)]);
            assert_eq!(env2.job(a).deadline(), Some(env.now - 60 + 600 + 120));
        }
    }

    #[test]
    fn suspension_records_keep_their_tags() {
        let mut buf = Vec::new();
        Event::JobSuspended { job_id: 1, time: 2 }.encode(&mut buf);
        Event::JobResumed { job_id: 1, time: 2 }.encode(&mut buf);
        let record = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(buf[0], 27);
        assert_eq!(buf[1..13], record);
        assert_eq!(buf[13], 28);
        assert_eq!(buf[14..], record);
    }

    fn pending_jobs(env: &mut Env, n: usize) -> Vec<u32> {
        (0..n).map(|_| env.submit(script())).collect()
    }

    fn priorities(env: &Env, jobs: &[u32]) -> Vec<u32> {
        jobs.iter().map(|&id| env.job(id).priority()).collect()
    }

    fn top(env: &mut Env, caller: Caller, job_ids: &[u32]) -> Reply {
        env.run(Command::Top {
            caller,
            filter: ids(job_ids),
        })
    }

    #[test]
    fn top_puts_the_listed_jobs_first_by_trading_priorities() {
        // No node: every job waits.
        let mut env = Env::with_conf(CONF);
        let jobs = pending_jobs(&mut env, 4);
        let before = priorities(&env, &jobs);
        let sum: u64 = before.iter().map(|&p| u64::from(p)).sum();
        assert_eq!(top(&mut env, Caller::ROOT, &[jobs[3], jobs[2]]), Reply::Ok);
        // 4, 3, then 1 and 2 as they were.
        assert_eq!(
            priorities(&env, &jobs),
            vec![before[2], before[3], before[1], before[0]]
        );
        let after: u64 = priorities(&env, &jobs).iter().map(|&p| u64::from(p)).sum();
        assert_eq!(after, sum);
        assert_eq!(
            env.events[env.events.len() - 4..],
            [
                Event::JobUpdated {
                    job_id: jobs[3],
                    changes: vec![JobChange::Nice(-3)]
                },
                Event::JobUpdated {
                    job_id: jobs[2],
                    changes: vec![JobChange::Nice(-1)]
                },
                Event::JobUpdated {
                    job_id: jobs[0],
                    changes: vec![JobChange::Nice(2)]
                },
                Event::JobUpdated {
                    job_id: jobs[1],
                    changes: vec![JobChange::Nice(2)]
                },
            ]
        );
        // Asking again changes nothing.
        let n = env.events.len();
        assert_eq!(top(&mut env, Caller::ROOT, &[jobs[3], jobs[2]]), Reply::Ok);
        assert_eq!(env.events.len(), n);
        same(&env.ctl, &replay_encoded(CONF, &env.events));
    }

    #[test]
    fn top_is_for_operators_unless_enable_user_top() {
        let mut env = Env::with_conf(CONF);
        let jobs = pending_jobs(&mut env, 2);
        let before = priorities(&env, &jobs);
        assert_eq!(
            top(&mut env, ALICE, &[jobs[1]]),
            Reply::error(ErrorCode::AccessDenied, "")
        );
        assert_eq!(priorities(&env, &jobs), before);

        let conf = format!("{CONF}SchedulerParameters=enable_user_top\n");
        let mut env = Env::with_conf(&conf);
        assert!(env.ctl.config().enable_user_top);
        let jobs = pending_jobs(&mut env, 3);
        let bobs = match env.submit_as(
            BOB,
            v1::JobDescription {
                user_id: BOB.uid,
                group_id: BOB.gid,
                ..script()
            },
        ) {
            Reply::Submitted { job_id, .. } => job_id,
            other => panic!("{other:?}"),
        };
        let before = priorities(&env, &jobs);
        // Bob's job is not Alice's to move; hers move anyway.
        assert_eq!(
            top(&mut env, ALICE, &[bobs, jobs[2]]),
            Reply::error(ErrorCode::AccessDenied, "")
        );
        assert_eq!(
            priorities(&env, &jobs),
            vec![before[1], before[2], before[0]]
        );
        assert_eq!(env.job(bobs).nice, 0);
    }

    #[test]
    fn top_leaves_jobs_it_cannot_move() {
        let mut env = env();
        // Two running (both nodes full), then pending ones.
        let running = env.submit(whole_node());
        env.submit(whole_node());
        let jobs = pending_jobs(&mut env, 3);
        let held = env.submit(script());
        env.run(Command::Hold {
            caller: ALICE,
            filter: ids(&[held]),
            user_hold: true,
        });
        let elsewhere = env.submit(v1::JobDescription {
            partitions: vec!["other".into()],
            ..script()
        });
        let before = priorities(&env, &jobs);
        let n = env.events.len();
        for (listed, code) in [
            (running, ErrorCode::JobNotPending),
            (held, ErrorCode::JobHeld),
            (999_999, ErrorCode::InvalidJobId),
        ] {
            assert_eq!(
                top(&mut env, Caller::ROOT, &[listed]),
                Reply::error(code, "")
            );
        }
        assert_eq!(env.events.len(), n);
        // A job of another partition than the first listed stays where it
        // is; the held one is not part of the reordering.
        assert_eq!(
            top(&mut env, Caller::ROOT, &[jobs[2], elsewhere]),
            Reply::Ok
        );
        assert_eq!(env.job(elsewhere).nice, 0);
        assert_eq!(env.job(held).nice, 0);
        assert_eq!(
            priorities(&env, &jobs),
            vec![before[1], before[2], before[0]]
        );
    }

    #[test]
    fn ctl_config_reads_enable_user_top() {
        let conf = slurm_common::conf::SlurmConf::parse(CONF, "slurm.conf")
            .unwrap()
            .conf;
        assert!(!CtlConfig::from_conf(&conf, vec![]).enable_user_top);
    }
}
