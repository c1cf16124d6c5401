//! Job arrays (`--array`).
//!
//! As in Slurm, a submission with `--array=0-3%2` makes one record, the
//! array's meta record, whose id is the ArrayJobId and which holds the task
//! ids not started yet. A scheduling pass that starts a task while others
//! still wait splits it off into a record of its own with the next free job
//! id ([`Event::ArrayTaskSplit`]); the last task to start keeps the meta
//! record's id. So with 4 tasks submitted as job 15, tasks 0-2 run as
//! jobs 16-18 and task 3 as job 15, which is what `SLURM_JOB_ID` shows in
//! each and what squeue, sacct and the output file names
//! (`slurm-%A_%a.out`) are built from.
//!
//! The split copies the meta record (it shares its spec and script file);
//! only the id and the task differ. Holding or signalling one pending task
//! (`scontrol hold 15_2`) splits it the same way first, so the rest of the
//! array is unchanged. So does an `aftercorr` dependency that lets some
//! tasks go before the others (`core::depend`). Cancelling pending tasks
//! (`scancel 15_2`) takes them out of the meta record without a record of
//! their own, as Slurm does ([`Event::ArrayTaskDropped`]); once the last
//! is cancelled, the cancelled meta record holds no task and shows as the
//! plain array id.
//!
//! `%N` limits how many tasks of the array run at once: a pass starts no
//! more than the limit leaves room for, and the rest waits with
//! `JobArrayTaskLimit`. Tasks split off before they started take the room
//! first, in id order, then the meta record's. Task ids must be below
//! MaxArraySize.

use std::collections::HashMap;

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_proto::v1;
use thiserror::Error;

use super::codec::{Reader, Writer};
use super::event::DecodeError;
use super::{Controller, Event, Job, Outcome};

/// Why an `--array` text is refused (the submission is answered with
/// "Invalid job array specification").
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArrayError {
    #[error("empty job array specification")]
    Empty,
    #[error("invalid job array element {part:?}")]
    Syntax { part: String },
    #[error("job array index {index} is not below MaxArraySize={max}")]
    TooBig { index: u64, max: u32 },
    #[error("invalid job array throttle {text:?}")]
    Throttle { text: String },
}

/// A parsed `--array`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    /// Task ids, ascending, without duplicates.
    pub tasks: Vec<u32>,
    /// `%N`; 0 for no limit.
    pub throttle: u32,
    /// SLURM_ARRAY_TASK_STEP: the first step written (`0-9:3,20` is 3),
    /// else 1, as Slurm sets it.
    pub step: u32,
}

/// Task ids as written (`1,4-9:2`), not expanded, so that a selector
/// such as `scancel 15_[0-4000000000]` costs nothing to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRanges {
    /// (first, last, step), each as written; first <= last, step >= 1.
    ranges: Vec<(u64, u64, u64)>,
    /// The first step written (`:S`), if any.
    first_step: Option<u64>,
    /// `%N`; 0 for no limit.
    pub throttle: u32,
}

impl TaskRanges {
    /// Whether task `t` is among these.
    pub fn contains(&self, t: u32) -> bool {
        let t = u64::from(t);
        self.ranges
            .iter()
            .any(|&(lo, hi, step)| t >= lo && t <= hi && (t - lo) % step == 0)
    }
}

/// Reads task ids: comma-separated `N`, `N-M` or `N-M:S`, optionally in
/// brackets, optionally followed by `%T`. Syntax only: no limit on ids.
/// Read as Slurm 22.05 reads them: leading blanks and empty items are
/// skipped, an empty list is task 0, and the limit after `%` counts its
/// leading digits only (none, or a sign, is no limit).
pub fn parse_ranges(text: &str) -> Result<TaskRanges, ArrayError> {
    let text = text.trim_start();
    let (list, throttle) = match text.split_once('%') {
        Some((list, t)) => {
            let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let throttle = match &t[..digits] {
                "" => 0,
                d => d.parse::<u32>().map_err(|_| ArrayError::Throttle {
                    text: t.to_string(),
                })?,
            };
            (list, throttle)
        }
        None => (text, 0),
    };
    // Brackets around the list are accepted, as Slurm does.
    let list = list
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .unwrap_or(list);
    if list.is_empty() {
        return Ok(TaskRanges {
            ranges: vec![(0, 0, 1)],
            first_step: None,
            throttle,
        });
    }
    let mut ranges = Vec::new();
    let mut first_step = None;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let bad = || ArrayError::Syntax {
            part: part.to_string(),
        };
        let num = |s: &str| -> Result<u64, ArrayError> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            // Too many digits is simply too big.
            Ok(s.parse::<u64>().unwrap_or(u64::MAX))
        };
        let (range, step) = match part.split_once(':') {
            // A step belongs to a range.
            Some((r, s)) if r.contains('-') => {
                let step = num(s)?;
                first_step.get_or_insert(step);
                (r, step)
            }
            Some(_) => return Err(bad()),
            None => (part, 1),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(range)?;
                (n, n)
            }
        };
        if hi < lo || step == 0 {
            return Err(bad());
        }
        ranges.push((lo, hi, step));
    }
    if ranges.is_empty() {
        return Err(ArrayError::Empty);
    }
    Ok(TaskRanges {
        ranges,
        first_step,
        throttle,
    })
}

/// Parses `--array` ([`parse_ranges`]); every id must be below
/// `max_array_size`.
pub fn parse(text: &str, max_array_size: u32) -> Result<ArraySpec, ArrayError> {
    let written = parse_ranges(text)?;
    let max = u64::from(max_array_size);
    if let Some(&(_, hi, _)) = written.ranges.iter().find(|r| r.1 >= max) {
        return Err(ArrayError::TooBig {
            index: hi,
            max: max_array_size,
        });
    }
    let mut tasks = Vec::new();
    for &(lo, hi, step) in &written.ranges {
        let mut i = lo;
        while i <= hi {
            // Below max_array_size, so it fits.
            tasks.extend(u32::try_from(i).ok());
            i = i.saturating_add(step);
        }
    }
    tasks.sort_unstable();
    tasks.dedup();
    let step = written
        .first_step
        .map_or(1, |s| u32::try_from(s).unwrap_or(u32::MAX));
    Ok(ArraySpec {
        tasks,
        throttle: written.throttle,
        step,
    })
}

/// The array part of a job record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayState {
    /// ArrayJobId: the id of the meta record.
    pub array_job_id: u32,
    /// The task this record runs; `None` for a meta record that still
    /// holds tasks not started.
    pub task: Option<u32>,
    /// Tasks not split off yet (meta record only), ascending.
    pub pending: Vec<u32>,
    /// `%N`; 0 for no limit.
    pub throttle: u32,
    /// SLURM_ARRAY_TASK_COUNT, _MIN, _MAX and _STEP, from the submission.
    pub count: u32,
    pub min: u32,
    pub max: u32,
    pub step: u32,
}

impl ArrayState {
    /// The meta record's array part for a submission as job `job_id`.
    pub fn submitted(job_id: u32, spec: &ArraySpec) -> ArrayState {
        let tasks = &spec.tasks;
        let min = tasks.first().copied().unwrap_or(0);
        let max = tasks.last().copied().unwrap_or(0);
        let step = spec.step;
        ArrayState {
            array_job_id: job_id,
            task: None,
            pending: tasks.clone(),
            throttle: spec.throttle,
            count: u32::try_from(tasks.len()).unwrap_or(u32::MAX),
            min,
            max,
            step,
        }
    }

    /// Still holds tasks that have not started.
    pub fn is_meta(&self) -> bool {
        self.task.is_none()
    }

    /// The task ids left as `scontrol show job` shows them in ArrayTaskId
    /// (`1-3,5%2`, `0-98:2`), and squeue inside brackets. A single task
    /// is shown without the limit (`5`), as Slurm shows it.
    pub fn pending_text(&self) -> String {
        let mut s = slurm_common::tasklist::format(&self.pending);
        if self.throttle > 0 && self.pending.len() > 1 {
            s.push('%');
            s.push_str(&self.throttle.to_string());
        }
        s
    }

    /// SLURM_ARRAY_* for a task's launch.
    pub fn launch_info(&self, task: u32) -> v1::ArrayInfo {
        v1::ArrayInfo {
            array_job_id: self.array_job_id,
            array_task_id: task,
            task_count: self.count,
            task_min: self.min,
            task_max: self.max,
            task_step: self.step,
        }
    }
}

/// Whether `job` is the record of array `array_job_id`'s task `task`, or
/// (with `task` `None`) any record of that array.
pub fn is_member(job: &Job, array_job_id: u32, task: Option<u32>) -> bool {
    job.array.as_ref().is_some_and(|a| {
        a.array_job_id == array_job_id
            && match task {
                None => true,
                Some(t) => a.task == Some(t),
            }
    })
}

/// How many jobs `job`'s record counts for under MaxJobCount. As in
/// Slurm, every task of an array counts as a job, though the tasks still
/// waiting share one record (the meta record) until they are split off:
/// a meta record counts once per task it holds; any other record once.
/// A split moves one task from the meta record to its own record, and
/// the last task's start makes the meta record that task's, so the count
/// changes only when records are submitted or purged.
pub fn counted(job: &Job) -> usize {
    job.array
        .as_deref()
        .filter(|a| a.is_meta())
        .map_or(1, |a| a.pending.len().max(1))
}

/// Per array with a `%N` limit that has tasks waiting: what takes its
/// room. Made by [`Controller::queue_job`] only when a pass meets such an
/// array.
pub(super) type Running = HashMap<u32, Slots>;

/// The tasks of one array that use or claim its `%N` room in a pass.
#[derive(Debug, Default)]
pub(super) struct Slots {
    /// Tasks running (or suspended).
    running: u32,
    /// Records of tasks split off before they started that could start
    /// now (pending, not held, nothing to wait for), in id order: released
    /// on their own (`scontrol release 15_5`) or let go by an `aftercorr`
    /// dependency (`core::depend`). They come before the tasks still in
    /// the meta record, which gets the room they leave.
    ready: Vec<u32>,
}

impl Controller {
    /// The jobs MaxJobCount counts, recounted from every record: for a
    /// loaded snapshot, and for [`Controller::sanity_check`] to compare
    /// with the count `apply` keeps.
    pub(crate) fn count_jobs(&self) -> usize {
        self.jobs
            .values()
            .map(|j| counted(j))
            .fold(0, usize::saturating_add)
    }

    /// What uses the `%N` room of every array with a limit that still has
    /// tasks to start: one pass over the jobs.
    fn running_array_tasks(&self) -> Running {
        let mut arrays = Running::new();
        for j in self.jobs.values() {
            if let Some(a) = j.array.as_ref().filter(|a| a.throttle > 0) {
                if j.is_schedulable() {
                    arrays.entry(a.array_job_id).or_default();
                }
            }
        }
        for j in self.jobs.values() {
            let Some(a) = j.array.as_ref() else { continue };
            let Some(slots) = arrays.get_mut(&a.array_job_id) else {
                continue;
            };
            if matches!(j.status.state, JobState::Running | JobState::Suspended) {
                slots.running += 1;
            } else if !a.is_meta()
                && j.is_schedulable()
                && j.hold.is_none()
                && super::depend::blocker(j).is_none()
            {
                slots.ready.push(j.id.get());
            }
        }
        arrays
    }

    /// Puts a pending job in a pass's queue: an ordinary job (or array
    /// task) once; a meta record once per task the pass might start, up to
    /// `free_cpus + 1` (each task needs a CPU; the one more gets the
    /// reason) and what its `%N` limit leaves room for. The copies share the
    /// id; the plan keeps their order (queue position) and
    /// [`Controller::array_start_id`] maps each start to a task. A task
    /// split off before it started waits with `JobArrayTaskLimit` while
    /// the limit leaves no room for it.
    pub(super) fn queue_job(
        &self,
        job: &Job,
        running: &mut Option<Running>,
        free_cpus: u32,
        queue: &mut Vec<slurm_sched::JobRequest>,
    ) {
        let mut request = self.job_request(job);
        let Some(a) = job.array.as_ref().filter(|a| a.is_meta() || a.throttle > 0) else {
            queue.push(request);
            return;
        };
        let room = if a.throttle == 0 {
            u32::MAX
        } else {
            let running = running.get_or_insert_with(|| self.running_array_tasks());
            let slots = running.get(&a.array_job_id);
            let busy = slots.map_or(0, |s| s.running);
            let room = a.throttle.saturating_sub(busy);
            let ready = slots.map_or(&[][..], |s| s.ready.as_slice());
            if a.is_meta() {
                let claimed = u32::try_from(ready.len()).unwrap_or(u32::MAX);
                room.saturating_sub(claimed)
            } else {
                // Its place among the ready ones; one held or waiting has
                // its own reason already.
                let place = ready.iter().position(|&id| id == job.id.get());
                match place.map(|p| u32::try_from(p).unwrap_or(u32::MAX)) {
                    Some(p) if p >= room => 0,
                    _ => 1,
                }
            }
        };
        if room == 0 {
            if request.blocked_by.is_none() {
                request.blocked_by = Some(PendingReason::JobArrayTaskLimit);
            }
            queue.push(request);
            return;
        }
        if !a.is_meta() {
            queue.push(request);
            return;
        }
        let copies = u32::try_from(a.pending.len())
            .unwrap_or(u32::MAX)
            .min(room)
            .min(free_cpus.saturating_add(1))
            .max(1);
        for _ in 1..copies {
            queue.push(request.clone());
        }
        queue.push(request);
    }

    /// The id to start for a start the plan gave `job_id`: the job itself,
    /// or, for a meta record with more than one task left, a new record
    /// for its first task, split off now.
    pub(super) fn array_start_id(
        &mut self,
        out: &mut Outcome,
        job_id: u32,
        now: i64,
    ) -> Option<u32> {
        let first = match self.jobs.get(&job_id)?.array.as_deref() {
            Some(a) if a.is_meta() && a.pending.len() > 1 => a.pending[0],
            _ => return Some(job_id),
        };
        self.split_task(out, job_id, first, now)
    }

    /// Splits pending task `task` off array `array_job_id`'s meta record;
    /// the new record's id. With no other task left the meta record is the
    /// task's own: its id.
    pub(super) fn split_task(
        &mut self,
        out: &mut Outcome,
        array_job_id: u32,
        task: u32,
        now: i64,
    ) -> Option<u32> {
        let a = self.jobs.get(&array_job_id)?.array.as_deref()?;
        if !a.is_meta() || a.pending.binary_search(&task).is_err() {
            return None;
        }
        if a.pending.len() == 1 {
            return Some(array_job_id);
        }
        let job_id = self.free_job_id()?;
        let event = Event::ArrayTaskSplit {
            array_job_id,
            task,
            job_id,
            time: now,
        };
        self.emit(out, event).then_some(job_id)
    }

    /// Cancels, out of their meta records, the pending tasks that `filter`
    /// names by `ArrayJobId_TaskId` (`scancel 15_2`): as in Slurm they
    /// leave the array without a record of their own, so `squeue -t all`
    /// shows no cancelled task and the set shrinks. One task always stays
    /// in a meta record (it is the array's record: cancelling it cancels
    /// the record). Only a plain selection is handled here, for callers who
    /// may act on the array; the tasks handled are taken out of `filter`,
    /// and what is left goes the usual way.
    pub(super) fn drop_pending_tasks(
        &mut self,
        out: &mut Outcome,
        caller: super::Caller,
        filter: &mut v1::JobFilter,
        now: i64,
    ) -> (Vec<v1::JobActionResult>, Vec<(u32, u32)>) {
        let mut done = Vec::new();
        // Meta records whose every pending task was picked: the last one
        // cancels the record, and then leaves it too (`clear_last_tasks`).
        let mut last = Vec::new();
        if super::filter::has_criteria(filter) {
            return (done, last);
        }
        let operator = self.is_operator(caller);
        // Selections whose every task was dropped (an empty text would
        // name the whole array).
        let mut spent = vec![false; filter.array_tasks.len()];
        for (k, sel) in filter.array_tasks.iter_mut().enumerate() {
            if sel.task_spec.is_empty() {
                continue;
            }
            let Ok(ranges) = parse_ranges(&sel.task_spec) else {
                continue;
            };
            let id = sel.array_job_id;
            let Some(meta) = self.jobs.get(&id) else {
                continue;
            };
            let Some(a) = meta.array.as_deref().filter(|a| a.is_meta()) else {
                continue;
            };
            if meta.uid != caller.uid && !operator {
                continue;
            }
            let picked: Vec<u32> = a
                .pending
                .iter()
                .copied()
                .filter(|&t| ranges.contains(t))
                .collect();
            // The last pending task keeps the record.
            let spare = a.pending.len().saturating_sub(1);
            if picked.len() == a.pending.len() {
                if let Some(&t) = picked.last() {
                    last.push((id, t));
                }
            }
            let dropped: Vec<u32> = picked.into_iter().take(spare).collect();
            for &task in &dropped {
                let event = Event::ArrayTaskDropped {
                    array_job_id: id,
                    task,
                    time: now,
                };
                if self.emit(out, event) {
                    done.push(v1::JobActionResult {
                        job_id: id,
                        array_task_id: Some(task),
                        ..Default::default()
                    });
                }
            }
            if dropped.is_empty() {
                continue;
            }
            // What is left of the selection: the tasks not dropped.
            let rest: Vec<u32> = self.array_task_ids(id, |t| ranges.contains(t));
            spent[k] = rest.is_empty();
            sel.task_spec = rest
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",");
        }
        let mut k = 0;
        filter.array_tasks.retain(|_| {
            k += 1;
            !spent[k - 1]
        });
        (done, last)
    }

    /// After [`Controller::drop_pending_tasks`]: a meta record cancelled
    /// through its last pending task keeps no task, so that it shows as
    /// the plain array id (`squeue` shows `15 CA`), as in Slurm.
    pub(super) fn clear_last_tasks(&mut self, out: &mut Outcome, last: &[(u32, u32)], now: i64) {
        for &(array_job_id, task) in last {
            let cancelled = self.jobs.get(&array_job_id).is_some_and(|j| {
                j.status.state.is_finished()
                    && j.array
                        .as_deref()
                        .is_some_and(|a| a.is_meta() && a.pending == [task])
            });
            if cancelled {
                let event = Event::ArrayTaskDropped {
                    array_job_id,
                    task,
                    time: now,
                };
                self.emit(out, event);
            }
        }
    }

    /// The task ids array `array_job_id` has (started or not) that
    /// `wanted` picks, ascending.
    pub(super) fn array_task_ids(
        &self,
        array_job_id: u32,
        wanted: impl Fn(u32) -> bool,
    ) -> Vec<u32> {
        let mut ids: Vec<u32> = Vec::new();
        for j in self.jobs.values() {
            let Some(a) = j
                .array
                .as_deref()
                .filter(|a| a.array_job_id == array_job_id)
            else {
                continue;
            };
            ids.extend(
                a.task
                    .iter()
                    .chain(&a.pending)
                    .copied()
                    .filter(|&t| wanted(t)),
            );
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The records of array `array_job_id` (task records and the meta
    /// record), with task `task` only if given; a pending task still in the
    /// meta record is split off first so that it can be acted on alone.
    pub(super) fn array_records(
        &mut self,
        out: &mut Outcome,
        array_job_id: u32,
        task: Option<u32>,
        now: i64,
    ) -> Vec<u32> {
        if let Some(t) = task {
            let found = self
                .jobs
                .values()
                .find(|j| is_member(j, array_job_id, Some(t)))
                .map(|j| j.id.get());
            if let Some(id) = found {
                return vec![id];
            }
            return self
                .split_task(out, array_job_id, t, now)
                .into_iter()
                .collect();
        }
        self.jobs
            .values()
            .filter(|j| is_member(j, array_job_id, None))
            .map(|j| j.id.get())
            .collect()
    }
}

/// Writes a snapshot ARRAY record for `job_id`.
pub(super) fn write_record(w: &mut Writer<'_>, job_id: u32, a: &ArrayState) {
    w.u32(job_id);
    w.u32(a.array_job_id);
    w.opt_u32(a.task);
    w.u32(a.throttle);
    w.u32(a.count);
    w.u32(a.min);
    w.u32(a.max);
    w.u32(a.step);
    w.len(a.pending.len());
    for &t in &a.pending {
        w.u32(t);
    }
}

/// Reads a snapshot ARRAY record: the job id and its array part.
pub(super) fn read_record(r: &mut Reader<'_>) -> Result<(u32, ArrayState), DecodeError> {
    let job_id = r.u32("job id")?;
    let array_job_id = r.u32("array job id")?;
    let task = r.opt_u32("array task id")?;
    let throttle = r.u32("array throttle")?;
    let count = r.u32("array task count")?;
    let min = r.u32("array task min")?;
    let max = r.u32("array task max")?;
    let step = r.u32("array task step")?;
    let n = r.u32("pending task count")?;
    // Each id takes 4 bytes: a count the record cannot hold is damage,
    // found by the reads below before anything large is allocated.
    let mut pending = Vec::with_capacity((n as usize).min(r.left() / 4));
    for _ in 0..n {
        pending.push(r.u32("pending task id")?);
    }
    Ok((
        job_id,
        ArrayState {
            array_job_id,
            task,
            pending,
            throttle,
            count,
            min,
            max,
            step,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_lists_steps_and_throttles() {
        let s = parse("0-3%2", 1001).unwrap();
        assert_eq!((s.tasks, s.throttle), (vec![0, 1, 2, 3], 2));
        let s = parse("1,5-9:2,3", 1001).unwrap();
        assert_eq!((s.tasks, s.throttle), (vec![1, 3, 5, 7, 9], 0));
        assert_eq!(parse("[2-4]", 1001).unwrap().tasks, vec![2, 3, 4]);
        assert_eq!(parse("7", 1001).unwrap().tasks, vec![7]);
        assert_eq!(parse("1,1,1", 1001).unwrap().tasks, vec![1]);
        // What Slurm 22.05 also takes: empty items and leading blanks are
        // skipped, an empty list is task 0, and the limit is read as atoi
        // reads it.
        let read = |t: &str| parse(t, 1001).map(|s| (s.tasks, s.throttle));
        assert_eq!(read("1,,2"), Ok((vec![1, 2], 0)));
        assert_eq!(read(",1"), Ok((vec![1], 0)));
        assert_eq!(read("1-3,"), Ok((vec![1, 2, 3], 0)));
        assert_eq!(read("  1-3"), Ok((vec![1, 2, 3], 0)));
        assert_eq!(read("1-3%"), Ok((vec![1, 2, 3], 0)));
        assert_eq!(read("1-3%x"), Ok((vec![1, 2, 3], 0)));
        assert_eq!(read("1-3%2x"), Ok((vec![1, 2, 3], 2)));
        assert_eq!(read("0-3%-1"), Ok((vec![0, 1, 2, 3], 0)));
        assert_eq!(read("%2"), Ok((vec![0], 2)));
        assert_eq!(read("[]"), Ok((vec![0], 0)));
        // SLURM_ARRAY_TASK_STEP is the first step written, else 1.
        let step = |t: &str| parse(t, 1001).unwrap().step;
        assert_eq!(step("1,3,5"), 1);
        assert_eq!(step("0-4:2,7"), 2);
        assert_eq!(step("1,2-8:3"), 3);
        assert_eq!(step("0-10:2,1-9:3"), 2);
        assert_eq!(step("0-4:1,10-20:5"), 1);
        assert!(matches!(
            parse("1-3%99999999999", 1001),
            Err(ArrayError::Throttle { .. })
        ));
    }

    #[test]
    fn refuses_what_slurm_refuses() {
        assert_eq!(
            parse("0-5000", 1001),
            Err(ArrayError::TooBig {
                index: 5000,
                max: 1001
            })
        );
        assert!(matches!(
            parse("1001", 1001),
            Err(ArrayError::TooBig { .. })
        ));
        assert!(parse("1000", 1001).is_ok());
        for bad in [
            "abc", "3-1", "1-", "-1", "1:0", "1:2", "1-4:", "1-3:0", ",", "1-2-3", "1-3 ",
        ] {
            assert!(parse(bad, 1001).is_err(), "{bad:?} accepted");
        }
        assert!(matches!(
            parse("99999999999999999999999", 1001),
            Err(ArrayError::TooBig { .. })
        ));
        assert!(matches!(
            parse("1-2é", 1001),
            Err(ArrayError::Syntax { .. })
        ));
    }

    #[test]
    fn selections_are_not_expanded() {
        let r = parse_ranges("[0-4000000000:2,7]").unwrap();
        assert!(r.contains(0) && r.contains(3_999_999_998) && r.contains(7));
        assert!(!r.contains(1) && !r.contains(u32::MAX));
        assert!(parse_ranges("5-1").is_err());
    }

    #[test]
    fn environment_figures_come_from_the_submission() {
        let a = ArrayState::submitted(15, &parse("0-3%2", 1001).unwrap());
        assert_eq!((a.count, a.min, a.max, a.step), (4, 0, 3, 1));
        assert!(a.is_meta());
        assert_eq!(a.pending_text(), "0-3%2");
        let a = ArrayState::submitted(15, &parse("0-12:4", 1001).unwrap());
        assert_eq!((a.count, a.min, a.max, a.step), (4, 0, 12, 4));
        let a = ArrayState::submitted(15, &parse("1,2,7", 1001).unwrap());
        assert_eq!(a.step, 1);
        let info = a.launch_info(7);
        assert_eq!((info.array_job_id, info.array_task_id), (15, 7));
    }

    #[test]
    fn pending_tasks_are_written_as_slurm_writes_the_set() {
        let a = ArrayState::submitted(3, &parse("1,3,5,7,9,11,13,15,17", 1001).unwrap());
        assert_eq!(a.pending_text(), "1-17:2");
        let b = ArrayState::submitted(4, &parse("0-8:2%2", 1001).unwrap());
        assert_eq!(b.pending_text(), "0,2,4,6,8%2");
        // One task left: shown alone, without the limit.
        let c = ArrayState::submitted(5, &parse("5%2", 1001).unwrap());
        assert_eq!(c.pending_text(), "5");
    }

    #[test]
    fn snapshot_record_round_trips() {
        let a = ArrayState {
            task: Some(2),
            pending: vec![3, 4],
            ..ArrayState::submitted(15, &parse("0-4%3", 1001).unwrap())
        };
        let mut buf = Vec::new();
        write_record(&mut Writer(&mut buf), 17, &a);
        let mut r = Reader::new(&buf);
        let (id, back) = read_record(&mut r).unwrap();
        r.done().unwrap();
        assert_eq!((id, back), (17, a));
    }
}
