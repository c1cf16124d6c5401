//! Job dependencies: `sbatch --dependency` and `scontrol update Dependency=`.
//!
//! Whether a dependency holds depends on the states of other jobs, which only
//! the controller has; the scheduler is told the outcome as a blocker
//! (`slurm_sched::JobRequest::blocked_by`): `Dependency` while it waits,
//! `DependencyNeverSatisfied` once it cannot hold any more.
//!
//! The rules are Slurm 22.05's:
//!
//! * Text: `type:jobid[:jobid...]` items joined by `,` (all must hold) or by
//!   `?` (one is enough; mixing both separators is refused). Types `after`
//!   (the job started, or was cancelled; `after:12+5`: and 5 minutes have
//!   passed since), `afterany` (it ended in any state), `afterok` (it
//!   COMPLETED), `afternotok` (it ended any other way), `afterburstbuffer`
//!   (as `afterany`: there are no burst buffers), `aftercorr` (task to
//!   task: see below), and `singleton` (no other job of the same user and
//!   name runs, or waits with a lower id). A bare job id is the old form
//!   of `afterany`. Each job id may carry a state, as Slurm shows them
//!   (`afterok:12(failed)`), so that what `scontrol show job` prints can
//!   be given back. Empty text or `0`
//!   means none. An array's id, or `jobid_*`, means every task of the
//!   array (`core::array`); `jobid_3` names one task. Array ranges
//!   (`jobid_[1-3]`) and `expand` are refused.
//! * `SchedulerParameters` or `DependencyParameters` `max_depend_depth=N`
//!   (10 unless set) bounds the search for a circular dependency: at most
//!   N jobs that wait on something are looked at, and a longer cycle is
//!   taken (as in Slurm; its jobs then wait on each other for ever).
//! * A job id that names no job (never submitted, or purged) counts as
//!   fulfilled at once, as a job that is gone does in Slurm: with `,` it is
//!   dropped, with `?` it satisfies the whole dependency. A job that
//!   depends on itself, directly or through the jobs it waits for, is
//!   refused.
//! * Each part goes one way only:
//!
//! ```text
//!   unfulfilled ──(the job it waits on does what the type asks,
//!        │         or is gone)──────────────────> fulfilled (dropped)
//!        └──────(that job can no longer do it)──> failed (kept, "(failed)")
//! ```
//!
//!   When the whole dependency holds it is removed (`Dependency=(null)`)
//!   and the job is eligible from then on (EligibleTime); while it waits,
//!   EligibleTime is Unknown. When it can never hold, the job waits with
//!   DependencyNeverSatisfied, or is cancelled with that reason under
//!   `kill_invalid_depend` (SchedulerParameters or DependencyParameters,
//!   or the job's own `--kill-on-invalid-dep`).
//!
//! `aftercorr:A`: task `t` of this array waits for task `t` of array `A`
//! to be COMPLETED, and can never run if that task ended any other way;
//! the other tasks do not care. Where there is no corresponding task (`A`
//! is not an array or has no task `t`, or this job is not an array) the
//! part is `afterok:A` on the named job (for an array, all its tasks, as
//! `afterok` takes it). The sbatch man page leaves those cases open;
//! Slurm's controller then tests the named job itself, and a job that
//! could otherwise never run is of no use to anyone.
//!
//! An array waits as one meta record (`core::array`) that holds the tasks
//! not started. The pass tests such a record's `aftercorr` parts once per
//! task it holds ([`corr::plan`]). While every task gets the same answer,
//! nothing is split: the record's text changes for all of them at once,
//! and a whole array that depends on a plain job costs nothing more.
//! When answers differ, each task whose answer differs from the tasks
//! still waiting is split off the meta record
//! ([`Event::ArrayTaskSplit`], as when a task starts) and its own text is
//! recorded ([`Event::JobDependencyChanged`] on the new record): a task
//! whose counterpart completed becomes an ordinary pending task record
//! that the scheduler starts like any other, one whose counterpart failed
//! waits with DependencyNeverSatisfied (or is cancelled under
//! `kill_invalid_depend`). The meta record keeps the tasks still waiting,
//! and its text, unchanged (`aftercorr:A(unfulfilled)`, as Slurm shows
//! it), so squeue shows them as one line with Reason=Dependency. When no
//! task is left waiting but answers differ, the last task stays in the
//! meta record with its answer. A task split off carries what it waits
//! for in its own record, so purging array `A` later changes nothing.
//! Split-off tasks still count against the array's `%N` limit.
//!
//! Determinism: the parts are tested when the scheduling pass runs, with
//! the `now` it is given, and every change becomes an event
//! ([`Event::JobDependencyChanged`], carrying the new text), so replay
//! applies results and never tests again. The text form is the persistent
//! form: fulfilled parts are never kept, so the text (with the states) says
//! everything that still matters. The pass runs after every batch of
//! events that changed something (a job that started or ended among them),
//! so a job waiting on another starts in the same pass that sees the other
//! end, or in the pass right after the one that started it (`after`).

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::fmt;

use slurm_common::reason::PendingReason;
use slurm_common::state::{JobFlag, JobState};
use slurm_proto::{v1, ErrorCode};
use thiserror::Error;

use super::codec::{Reader, Writer};
use super::event::DecodeError;
use super::{Controller, Event, Job, JobTable, Outcome, Reply};

/// What a part of a dependency waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    After,
    AfterAny,
    AfterOk,
    AfterNotOk,
    AfterCorr,
    AfterBurstBuffer,
    Singleton,
}

impl Kind {
    /// The name Slurm shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::After => "after",
            Kind::AfterAny => "afterany",
            Kind::AfterOk => "afterok",
            Kind::AfterNotOk => "afternotok",
            Kind::AfterCorr => "aftercorr",
            Kind::AfterBurstBuffer => "afterburstbuffer",
            Kind::Singleton => "singleton",
        }
    }

    /// A type that takes job ids, by name (any case).
    fn with_jobs(word: &str) -> Option<Kind> {
        [
            Kind::After,
            Kind::AfterAny,
            Kind::AfterOk,
            Kind::AfterNotOk,
            Kind::AfterCorr,
            Kind::AfterBurstBuffer,
        ]
        .into_iter()
        .find(|k| k.as_str().eq_ignore_ascii_case(word))
    }
}

/// Which part of an array job a part names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Task {
    /// `jobid_*`: the whole job.
    All,
    /// `jobid_3`: one task.
    Id(u32),
}

/// Where one part stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartState {
    Unfulfilled,
    Fulfilled,
    Failed,
}

impl PartState {
    pub fn as_str(self) -> &'static str {
        match self {
            PartState::Unfulfilled => "unfulfilled",
            PartState::Fulfilled => "fulfilled",
            PartState::Failed => "failed",
        }
    }
}

/// One condition: a type and one job id (none for `singleton`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub kind: Kind,
    /// 0 for `singleton`.
    pub job_id: u32,
    pub task: Option<Task>,
    /// The `+minutes` of `after:jobid+minutes`; 0 for none.
    pub minutes: u32,
    pub state: PartState,
}

/// A job's dependency.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dependency {
    /// Joined by `?`: one part is enough.
    pub any: bool,
    /// Unfulfilled and failed parts (fulfilled ones are dropped).
    pub parts: Vec<Part>,
    /// `--kill-on-invalid-dep=yes|no`; `None` follows the configuration.
    pub kill_invalid: Option<bool>,
}

/// What a dependency says about its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// None left: the job may run.
    Satisfied,
    Waiting,
    /// It can never hold (Reason=DependencyNeverSatisfied).
    Never,
}

/// A dependency that is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DependError {
    #[error("empty dependency item at byte {offset}")]
    EmptyItem { offset: usize },
    #[error("unknown dependency type {word:?}")]
    UnknownType { word: String },
    #[error("dependency item {item:?} names no job")]
    MissingJob { item: String },
    #[error("invalid job id {text:?} in dependency")]
    BadJobId { text: String },
    #[error("invalid array task in dependency item {text:?}")]
    BadTask { text: String },
    #[error("invalid time in dependency item {text:?}: whole minutes above 0 expected")]
    BadTime { text: String },
    #[error("invalid text {text:?} after a dependency (a state such as \"(failed)\" expected)")]
    BadState { text: String },
    #[error("dependency mixes ',' (all must hold) and '?' (any may hold)")]
    MixedSeparators,
    #[error("dependency type expand is not supported")]
    Expand,
    #[error("job {job_id} cannot depend on itself")]
    OnItself { job_id: u32 },
    #[error("job {job_id} would wait for itself through job {through}")]
    Circular { job_id: u32, through: u32 },
}

impl DependError {
    /// Slurm's error for it.
    pub fn code(&self) -> ErrorCode {
        match self {
            DependError::Expand => ErrorCode::NotSupported,
            DependError::Circular { .. } => ErrorCode::CircularDependency,
            _ => ErrorCode::Dependency,
        }
    }
}

// ------------------------------------------------------------------ text

impl Dependency {
    /// Reads a dependency as users write it and as Slurm shows it. Pure;
    /// which jobs exist is not looked at here.
    pub fn parse(text: &str) -> Result<Dependency, DependError> {
        let text = text.trim();
        let mut dep = Dependency::default();
        if text.is_empty() || text == "0" {
            return Ok(dep);
        }
        if text.contains(',') && text.contains('?') {
            return Err(DependError::MixedSeparators);
        }
        dep.any = text.contains('?');
        let mut offset = 0;
        for item in text.split([',', '?']) {
            if item.is_empty() {
                return Err(DependError::EmptyItem { offset });
            }
            for part in parse_item(item)? {
                dep.push(part);
            }
            offset += item.len() + 1;
        }
        dep.normalize();
        Ok(dep)
    }

    /// Adds `part` unless the same condition is there already (Slurm keeps
    /// the first).
    fn push(&mut self, part: Part) {
        let same = |p: &Part| p.kind == part.kind && p.job_id == part.job_id && p.task == part.task;
        if !self.parts.iter().any(same) {
            self.parts.push(part);
        }
    }

    /// Whether anything is left to wait for (or that failed).
    pub fn is_active(&self) -> bool {
        !self.parts.is_empty()
    }

    /// Whether an `aftercorr` part waits on the corresponding task (not
    /// on a task named with `jobid_3`): an array's tasks may then get
    /// different answers.
    pub fn follows_tasks(&self) -> bool {
        self.parts.iter().any(|p| {
            p.kind == Kind::AfterCorr
                && p.state == PartState::Unfulfilled
                && !matches!(p.task, Some(Task::Id(_)))
        })
    }

    /// What the parts say together.
    pub fn verdict(&self) -> Verdict {
        let has = |s: PartState| self.parts.iter().any(|p| p.state == s);
        if self.parts.is_empty() {
            return Verdict::Satisfied;
        }
        let (fulfilled, failed, waiting) = (
            has(PartState::Fulfilled),
            has(PartState::Failed),
            has(PartState::Unfulfilled),
        );
        if self.any {
            if fulfilled {
                Verdict::Satisfied
            } else if waiting {
                Verdict::Waiting
            } else {
                Verdict::Never
            }
        } else if failed {
            Verdict::Never
        } else if waiting {
            Verdict::Waiting
        } else {
            Verdict::Satisfied
        }
    }

    /// Drops what holds: everything once the whole holds, else the
    /// fulfilled parts. One part left is the same condition whichever
    /// separator joined it.
    fn normalize(&mut self) {
        if self.verdict() == Verdict::Satisfied {
            self.parts.clear();
        } else {
            self.parts.retain(|p| p.state != PartState::Fulfilled);
        }
        if self.parts.len() <= 1 {
            self.any = false;
        }
    }
}

/// One item between separators: `singleton[(state)]`, a bare job id
/// (`afterany`), or `type:target[:target...]`.
fn parse_item(item: &str) -> Result<Vec<Part>, DependError> {
    if let Some(rest) = strip_prefix_ignore_case(item, Kind::Singleton.as_str()) {
        let state = parse_state(rest)?;
        return Ok(vec![Part {
            kind: Kind::Singleton,
            job_id: 0,
            task: None,
            minutes: 0,
            state,
        }]);
    }
    if item.starts_with(|c: char| c.is_ascii_digit()) {
        let (job_id, task, rest) = parse_job(item)?;
        if !rest.is_empty() {
            return Err(DependError::BadJobId { text: item.into() });
        }
        return Ok(vec![Part {
            kind: Kind::AfterAny,
            job_id,
            task,
            minutes: 0,
            state: PartState::Unfulfilled,
        }]);
    }
    let Some((word, targets)) = item.split_once(':') else {
        return Err(match Kind::with_jobs(item) {
            Some(_) => DependError::MissingJob { item: item.into() },
            None => DependError::UnknownType { word: item.into() },
        });
    };
    if word.eq_ignore_ascii_case("expand") {
        return Err(DependError::Expand);
    }
    let kind =
        Kind::with_jobs(word).ok_or_else(|| DependError::UnknownType { word: word.into() })?;
    targets.split(':').map(|t| parse_target(kind, t)).collect()
}

/// `jobid[_task][+minutes][(state)]`.
fn parse_target(kind: Kind, text: &str) -> Result<Part, DependError> {
    let (job_id, task, rest) = parse_job(text)?;
    let (minutes, rest) = match rest.strip_prefix('+') {
        Some(r) => {
            let n = digits(r);
            let minutes = r[..n]
                .parse::<u32>()
                .ok()
                .filter(|&m| m > 0)
                .ok_or_else(|| DependError::BadTime { text: text.into() })?;
            (minutes, &r[n..])
        }
        None => (0, rest),
    };
    Ok(Part {
        kind,
        job_id,
        task,
        minutes,
        state: parse_state(rest)?,
    })
}

/// A job id above 0 and its optional `_task`; returns what follows.
fn parse_job(text: &str) -> Result<(u32, Option<Task>, &str), DependError> {
    let n = digits(text);
    let job_id = text[..n]
        .parse::<u32>()
        .ok()
        .filter(|&id| id > 0)
        .ok_or_else(|| DependError::BadJobId { text: text.into() })?;
    let rest = &text[n..];
    let Some(after) = rest.strip_prefix('_') else {
        return Ok((job_id, None, rest));
    };
    if let Some(r) = after.strip_prefix('*') {
        return Ok((job_id, Some(Task::All), r));
    }
    let m = digits(after);
    let task = after[..m]
        .parse::<u32>()
        .map_err(|_| DependError::BadTask { text: text.into() })?;
    Ok((job_id, Some(Task::Id(task)), &after[m..]))
}

/// Nothing, or a state in parentheses. As in Slurm, `(fulfilled)` given
/// back is taken as unfulfilled: only the controller decides that.
fn parse_state(text: &str) -> Result<PartState, DependError> {
    if text.is_empty() {
        return Ok(PartState::Unfulfilled);
    }
    let word = text
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| DependError::BadState { text: text.into() })?;
    if word.eq_ignore_ascii_case("failed") {
        Ok(PartState::Failed)
    } else if word.eq_ignore_ascii_case("unfulfilled") || word.eq_ignore_ascii_case("fulfilled") {
        Ok(PartState::Unfulfilled)
    } else {
        Err(DependError::BadState { text: text.into() })
    }
}

/// The length of the ASCII digits `text` starts with (a char boundary).
fn digits(text: &str) -> usize {
    text.bytes().take_while(u8::is_ascii_digit).count()
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == Kind::Singleton {
            return write!(f, "singleton({})", self.state.as_str());
        }
        write!(f, "{}:{}", self.kind.as_str(), self.job_id)?;
        match self.task {
            Some(Task::All) => f.write_str("_*")?,
            Some(Task::Id(t)) => write!(f, "_{t}")?,
            None => {}
        }
        if self.minutes > 0 {
            write!(f, "+{}", self.minutes)?;
        }
        write!(f, "({})", self.state.as_str())
    }
}

/// As Slurm shows it (`afterok:12(unfulfilled),singleton(unfulfilled)`);
/// empty when nothing is left. [`Dependency::parse`] reads it back.
impl fmt::Display for Dependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sep = if self.any { "?" } else { "," };
        let shown = self
            .parts
            .iter()
            .filter(|p| p.state != PartState::Fulfilled);
        for (i, p) in shown.enumerate() {
            if i > 0 {
                f.write_str(sep)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

// ------------------------------------------------------------ evaluation

/// What a dependency needs to know of a job it waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upstream {
    pub state: JobState,
    /// Requeued with a special exit (`afternotok` holds).
    pub special_exit: bool,
    /// 0 if it never started.
    pub start_time: i64,
}

/// The job that has the dependency.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub id: u32,
    pub uid: u32,
    pub name: &'a str,
    /// Which array task it is, for `aftercorr`.
    pub corr: Corr,
}

/// What an `aftercorr` part of a job's dependency corresponds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corr {
    /// Not an array: the part is `afterok` on the named job.
    Whole,
    /// The record of one array task: the same task of the named job.
    Task(u32),
    /// A meta record holding tasks not started: each has its own answer,
    /// which [`corr::plan`] asks task by task; as a whole the part waits
    /// (unless the named job is gone).
    Meta,
}

/// The other jobs, as dependencies see them.
pub trait World {
    /// The job `job_id`, if it still exists; for an array's id, the
    /// array as a whole.
    fn upstream(&self, job_id: u32) -> Option<Upstream>;
    /// Task `task` of array `job_id`, if the array has it. The default:
    /// no job is an array task.
    fn upstream_task(&self, job_id: u32, task: u32) -> Option<Upstream> {
        let _ = (job_id, task);
        None
    }
    /// Whether another job of the owner's user and name runs (or is
    /// suspended), or waits with a lower id.
    fn singleton_blocked(&self, owner: &Owner<'_>) -> bool;
}

/// Where `part` of `owner`'s dependency stands now. Fulfilled and failed
/// parts stay so.
pub fn test_part(part: &Part, owner: &Owner<'_>, world: &impl World, now: i64) -> PartState {
    use PartState::{Failed, Fulfilled, Unfulfilled};
    if part.state != Unfulfilled {
        return part.state;
    }
    if part.kind == Kind::Singleton {
        // A job without a name matches no other (Slurm lifts it).
        return if owner.name.is_empty() || !world.singleton_blocked(owner) {
            Fulfilled
        } else {
            Unfulfilled
        };
    }
    let up = match (part.task, part.kind, owner.corr) {
        (Some(Task::Id(t)), _, _) => world.upstream_task(part.job_id, t),
        (_, Kind::AfterCorr, Corr::Task(t)) => world
            .upstream_task(part.job_id, t)
            .or_else(|| world.upstream(part.job_id)),
        (_, Kind::AfterCorr, Corr::Meta) => {
            let gone = world.upstream(part.job_id).is_none();
            return if gone { Fulfilled } else { Unfulfilled };
        }
        _ => world.upstream(part.job_id),
    };
    let Some(up) = up else {
        return Fulfilled;
    };
    let ended = up.state.is_finished();
    let pick = |done: bool| if done { Fulfilled } else { Unfulfilled };
    match part.kind {
        Kind::After => {
            let waited = part.minutes == 0
                || (up.start_time > 0
                    && now.saturating_sub(up.start_time) >= i64::from(part.minutes) * 60);
            pick(up.state != JobState::Pending && waited)
        }
        // (Singleton was answered above.)
        Kind::AfterAny | Kind::AfterBurstBuffer | Kind::Singleton => pick(ended),
        Kind::AfterNotOk if up.special_exit => Fulfilled,
        Kind::AfterNotOk if !ended => Unfulfilled,
        Kind::AfterNotOk if up.state == JobState::Completed => Failed,
        Kind::AfterNotOk => Fulfilled,
        Kind::AfterOk | Kind::AfterCorr if !ended => Unfulfilled,
        Kind::AfterOk | Kind::AfterCorr if up.state == JobState::Completed => Fulfilled,
        Kind::AfterOk | Kind::AfterCorr => Failed,
    }
}

impl Dependency {
    /// The dependency after testing its unfulfilled parts at `now`;
    /// `None` when nothing changed.
    pub fn refreshed(&self, owner: &Owner<'_>, world: &impl World, now: i64) -> Option<Dependency> {
        let states: Vec<PartState> = self
            .parts
            .iter()
            .map(|p| test_part(p, owner, world, now))
            .collect();
        if self.parts.iter().zip(&states).all(|(p, s)| p.state == *s) {
            return None;
        }
        let mut next = self.clone();
        for (p, s) in next.parts.iter_mut().zip(states) {
            p.state = s;
        }
        next.normalize();
        Some(next)
    }

    /// When an `after:jobid+minutes` part whose job has started will hold,
    /// if that is later than `now`.
    pub fn next_check(&self, world: &impl World, now: i64) -> Option<i64> {
        self.parts
            .iter()
            .filter(|p| p.kind == Kind::After && p.minutes > 0 && p.state == PartState::Unfulfilled)
            .filter_map(|p| {
                let up = world.upstream(p.job_id)?;
                (up.state != JobState::Pending && up.start_time > 0)
                    .then(|| up.start_time.saturating_add(i64::from(p.minutes) * 60))
            })
            .filter(|&t| t > now)
            .min()
    }
}

/// The controller's job table as a [`World`]. Who blocks a singleton is
/// counted once per use, only if some dependency asks; the records of
/// arrays are indexed once per use, the first time a test asks about an
/// array (an `aftercorr` meta record asks once per task it holds).
struct TableWorld<'a> {
    jobs: &'a JobTable,
    /// (uid, name) -> (some job runs, lowest id of those pending).
    singles: HashMap<(u32, &'a str), (bool, u32)>,
    arrays: OnceCell<ArrayIndex<'a>>,
}

/// The records of each array: all of them, and those of started (or
/// split off) tasks by task id.
#[derive(Default)]
struct ArrayIndex<'a> {
    members: HashMap<u32, Vec<&'a Job>>,
    tasks: HashMap<(u32, u32), &'a Job>,
}

impl<'a> ArrayIndex<'a> {
    fn new(jobs: &'a JobTable) -> ArrayIndex<'a> {
        let mut index = ArrayIndex::default();
        for j in jobs.values() {
            let Some(a) = j.array.as_deref() else {
                continue;
            };
            index.members.entry(a.array_job_id).or_default().push(j);
            if let Some(t) = a.task {
                index.tasks.insert((a.array_job_id, t), j);
            }
        }
        index
    }
}

impl<'a> TableWorld<'a> {
    fn new(jobs: &'a JobTable, singletons: bool) -> TableWorld<'a> {
        let mut singles = HashMap::new();
        if singletons {
            for j in jobs.values() {
                let e = singles
                    .entry((j.uid, j.name.as_str()))
                    .or_insert((false, u32::MAX));
                match j.status.state {
                    JobState::Running | JobState::Suspended => e.0 = true,
                    JobState::Pending => e.1 = e.1.min(j.id.get()),
                    _ => {}
                }
            }
        }
        TableWorld {
            jobs,
            singles,
            arrays: OnceCell::new(),
        }
    }

    fn arrays(&self) -> &ArrayIndex<'a> {
        self.arrays.get_or_init(|| ArrayIndex::new(self.jobs))
    }
}

fn upstream_of(j: &Job) -> Upstream {
    Upstream {
        state: j.status.state,
        special_exit: j.status.flags.contains(JobFlag::SpecialExit),
        start_time: j.start_time,
    }
}

/// Every record of an array taken together: pending while a task has not
/// started (running once one has), and once all have ended COMPLETED only
/// if every task did, else the state of the first task that did not.
fn array_upstream<'j>(records: impl Iterator<Item = &'j Job>) -> Option<Upstream> {
    let mut all: Option<Upstream> = None;
    let mut open = false;
    let mut started = false;
    let mut bad: Option<JobState> = None;
    for j in records {
        let up = upstream_of(j);
        let a = all.get_or_insert(up);
        a.special_exit |= up.special_exit;
        if up.start_time > 0 && (a.start_time == 0 || up.start_time < a.start_time) {
            a.start_time = up.start_time;
        }
        if !up.state.is_finished() {
            open = true;
            started |= up.state != JobState::Pending;
        } else if up.state != JobState::Completed && bad.is_none() {
            bad = Some(up.state);
        }
        // A meta record with tasks left has not started them all.
        if j.array.as_ref().is_some_and(|a| a.is_meta()) && up.state == JobState::Pending {
            open = true;
        }
    }
    let mut up = all?;
    up.state = match (open, started, bad) {
        (true, true, _) => JobState::Running,
        (true, false, _) => JobState::Pending,
        (false, _, Some(state)) => state,
        (false, _, None) => JobState::Completed,
    };
    Some(up)
}

impl World for TableWorld<'_> {
    fn upstream(&self, job_id: u32) -> Option<Upstream> {
        let job = self.jobs.get(&job_id)?;
        if job.array.as_ref().is_some_and(|a| a.array_job_id == job_id) {
            let members = self.arrays().members.get(&job_id);
            return array_upstream(members.into_iter().flatten().copied());
        }
        Some(upstream_of(job))
    }

    fn upstream_task(&self, job_id: u32, task: u32) -> Option<Upstream> {
        let meta = self.jobs.get(&job_id)?;
        let waiting = meta
            .array
            .as_ref()
            .is_some_and(|a| a.is_meta() && a.pending.binary_search(&task).is_ok());
        if waiting {
            return Some(Upstream {
                state: JobState::Pending,
                ..upstream_of(meta)
            });
        }
        self.arrays()
            .tasks
            .get(&(job_id, task))
            .map(|j| upstream_of(j))
    }

    fn singleton_blocked(&self, owner: &Owner<'_>) -> bool {
        self.singles
            .get(&(owner.uid, owner.name))
            .is_some_and(|&(running, lowest)| running || lowest < owner.id)
    }
}

fn has_singleton(dep: &Dependency) -> bool {
    dep.parts.iter().any(|p| p.kind == Kind::Singleton)
}

fn owner(job: &Job) -> Owner<'_> {
    let corr = match job.array.as_deref() {
        None => Corr::Whole,
        Some(a) => a.task.map_or(Corr::Meta, Corr::Task),
    };
    Owner {
        id: job.id.get(),
        uid: job.uid,
        name: &job.name,
        corr,
    }
}

/// The tasks of `job` to test one by one: those of a meta record whose
/// dependency follows task correspondence.
fn corr_tasks<'j>(job: &'j Job, dep: &Dependency) -> Option<&'j [u32]> {
    let a = job.array.as_deref()?;
    (a.is_meta() && !a.pending.is_empty() && dep.follows_tasks()).then_some(a.pending.as_slice())
}

// ------------------------------------------------------ controller hooks

/// The dependency of a job as submitted: its description's text (what
/// [`Controller::resolve_dependency`] made of it) and
/// `--kill-on-invalid-dep`. `None` when there is neither.
///
/// Journals written before dependencies were honoured may hold any text
/// the user gave; text that does not parse is ignored there (the job ran
/// without it then), with a warning.
pub(super) fn from_submission(
    job_id: u32,
    text: &str,
    kill: Option<bool>,
) -> Option<Box<Dependency>> {
    let mut dep = match Dependency::parse(text) {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(job_id, error = %e, "ignoring a recorded dependency that does not parse");
            Dependency::default()
        }
    };
    dep.kill_invalid = kill;
    (dep.is_active() || kill.is_some()).then(|| Box::new(dep))
}

/// `max_depend_depth=N` of DependencyParameters (or, as older Slurm
/// versions read it, SchedulerParameters): how many jobs the search for a
/// circular dependency looks at. 10 when unset or not a number, as in
/// Slurm.
pub fn max_depend_depth(conf: &slurm_common::conf::SlurmConf) -> u32 {
    const KEY: &str = "max_depend_depth";
    let text = conf
        .dependency_parameters
        .get(KEY)
        .or_else(|| conf.scheduler_parameters.options.get(KEY));
    let Some(text) = text else {
        return 10;
    };
    text.trim().parse::<u32>().unwrap_or_else(|_| {
        tracing::warn!(value = text, "invalid max_depend_depth; using 10");
        10
    })
}

/// Applies [`Event::JobDependencyChanged`]: the new text replaces the
/// parts (the kill setting stays). A pending job is eligible from `time`
/// (or its begin time) once nothing is left; Unknown while something is.
pub(super) fn apply_change(job: &mut Job, text: &str, time: i64) -> Result<(), DependError> {
    let mut next = Dependency::parse(text)?;
    let was_active = job.dependency.as_ref().is_some_and(|d| d.is_active());
    next.kill_invalid = job.dependency.as_ref().and_then(|d| d.kill_invalid);
    let active = next.is_active();
    job.dependency = (active || next.kill_invalid.is_some()).then(|| Box::new(next));
    if job.status.state == JobState::Pending {
        if active {
            job.eligible_time = 0;
        } else if was_active {
            job.eligible_time = job.shape.begin_time.unwrap_or(time).max(time);
        }
    }
    Ok(())
}

/// Writes the fields of a snapshot DEPEND record (`core::snapshot`).
pub(super) fn write_record(w: &mut Writer<'_>, job_id: u32, dep: &Dependency) {
    w.u32(job_id);
    w.str(&dep.to_string());
    w.u8(match dep.kill_invalid {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    });
}

/// The fields of a snapshot DEPEND record.
#[derive(Debug)]
pub(super) struct DependRecord {
    pub job_id: u32,
    text: String,
    kill: Option<bool>,
}

impl DependRecord {
    /// The job's dependency (`Err` when its text does not parse: damage).
    pub(super) fn dependency(&self) -> Result<Option<Box<Dependency>>, DependError> {
        let mut dep = Dependency::parse(&self.text)?;
        dep.kill_invalid = self.kill;
        Ok((dep.is_active() || self.kill.is_some()).then(|| Box::new(dep)))
    }
}

/// Reads the fields of a snapshot DEPEND record.
pub(super) fn read_record(r: &mut Reader<'_>) -> Result<DependRecord, DecodeError> {
    let job_id = r.u32("job id")?;
    let text = r.string("dependency")?;
    let at = r.pos;
    let kill = match r.u8("kill on invalid dependency")? {
        0 => None,
        1 => Some(false),
        2 => Some(true),
        other => {
            return Err(DecodeError::Unknown {
                offset: at,
                what: "kill on invalid dependency",
                value: u32::from(other),
            })
        }
    };
    Ok(DependRecord { job_id, text, kill })
}

/// The dependency as `scontrol show job` and squeue show it; empty for
/// none.
pub fn shown(job: &Job) -> String {
    job.dependency
        .as_ref()
        .map(|d| d.to_string())
        .unwrap_or_default()
}

/// Why the scheduler must leave `job` alone, if its dependency says so.
pub(super) fn blocker(job: &Job) -> Option<PendingReason> {
    match job.dependency.as_ref()?.verdict() {
        Verdict::Satisfied => None,
        Verdict::Waiting => Some(PendingReason::Dependency),
        Verdict::Never => Some(PendingReason::DependencyNeverSatisfied),
    }
}

impl Controller {
    /// `text` made ready to record for job `owner` (submitted now, or
    /// updated): parsed, checked against the jobs there are, and, with
    /// `test`, tested once; the text to store (empty when nothing is left).
    /// A job submitted held is not tested until it is released: as in
    /// Slurm, it shows every part `(unfulfilled)` meanwhile.
    pub(super) fn resolve_dependency(
        &self,
        text: &str,
        owner: &Owner<'_>,
        test: bool,
        now: i64,
    ) -> Result<String, DependError> {
        let dep = Dependency::parse(text)?;
        // `jobid_3` names an array task, never this job.
        let on_itself = |p: &Part| {
            p.kind != Kind::Singleton
                && p.job_id == owner.id
                && !matches!(p.task, Some(Task::Id(_)))
        };
        if dep.parts.iter().any(on_itself) {
            return Err(DependError::OnItself { job_id: owner.id });
        }
        self.check_cycle(&dep, owner.id)?;
        if !test {
            return Ok(dep.to_string());
        }
        let world = TableWorld::new(&self.jobs, has_singleton(&dep));
        let dep = dep.refreshed(owner, &world, now).unwrap_or(dep);
        Ok(dep.to_string())
    }

    /// A submission's `--dependency` for job `job_id` of user `uid`,
    /// replaced by what is to be recorded; the refusal as Slurm answers it
    /// (the code's text alone: "Job dependency problem").
    pub(super) fn submitted_dependency(
        &self,
        desc: &mut v1::JobDescription,
        job_id: u32,
        uid: u32,
        now: i64,
    ) -> Result<(), Reply> {
        if desc.dependency.is_empty() {
            return Ok(());
        }
        let owner = Owner {
            id: job_id,
            uid,
            name: &desc.name,
            corr: if desc.array_spec.is_empty() {
                Corr::Whole
            } else {
                Corr::Meta
            },
        };
        match self.resolve_dependency(&desc.dependency, &owner, !desc.hold, now) {
            Ok(text) => {
                desc.dependency = text;
                Ok(())
            }
            Err(e) => {
                tracing::info!(job_id, dependency = %desc.dependency, error = %e, "dependency refused");
                Err(Reply::error(e.code(), ""))
            }
        }
    }

    /// `scontrol update Dependency=text` of pending `job`: the text to
    /// record, or the error for the job's result.
    pub(super) fn updated_dependency(
        &self,
        job: &Job,
        text: &str,
        now: i64,
    ) -> Result<String, (ErrorCode, String)> {
        self.resolve_dependency(text, &owner(job), true, now).map_err(|e| {
            tracing::info!(job_id = job.id.get(), dependency = %text, error = %e, "dependency refused");
            (e.code(), String::new())
        })
    }

    /// Refuses `dep` for job `id` when a job it waits on (not ended) waits,
    /// directly or further on, for `id`. At most `max_depend_depth` jobs
    /// that wait on something are looked at: past that the search stops
    /// and the dependency is taken.
    fn check_cycle(&self, dep: &Dependency, id: u32) -> Result<(), DependError> {
        let mut seen = HashSet::new();
        let mut tested = 0u32;
        for first in dep.parts.iter().filter(|p| p.kind != Kind::Singleton) {
            let mut stack = vec![first.job_id];
            while let Some(j) = stack.pop() {
                if !seen.insert(j) {
                    continue;
                }
                let Some(job) = self.jobs.get(&j) else {
                    continue;
                };
                if job.status.state.is_finished() {
                    continue;
                }
                let Some(d) = job.dependency.as_deref().filter(|d| d.is_active()) else {
                    continue;
                };
                if tested >= self.cfg.max_depend_depth {
                    tracing::debug!(
                        job_id = id,
                        max_depend_depth = tested,
                        "circular dependency search stopped"
                    );
                    return Ok(());
                }
                tested += 1;
                for p in d.parts.iter().filter(|p| p.kind != Kind::Singleton) {
                    if p.job_id == id {
                        return Err(DependError::Circular {
                            job_id: id,
                            through: first.job_id,
                        });
                    }
                    stack.push(p.job_id);
                }
            }
        }
        Ok(())
    }

    /// Tests the dependencies of the jobs that wait (also held ones, as
    /// Slurm does) and records what changed; splits off the tasks of a
    /// meta record whose `aftercorr` answer differs from the others'
    /// ([`corr::plan`]); cancels the jobs whose dependency can never hold
    /// where `kill_invalid_depend` applies. True if it emitted anything.
    pub(super) fn refresh_dependencies(&mut self, out: &mut Outcome, now: i64) -> bool {
        let mut any = false;
        loop {
            let waiting = || {
                self.jobs.values().filter(|j| {
                    j.is_schedulable() && j.dependency.as_ref().is_some_and(|d| d.is_active())
                })
            };
            let singletons = waiting().any(|j| j.dependency.as_deref().is_some_and(has_singleton));
            let world = TableWorld::new(&self.jobs, singletons);
            let mut changes = Vec::new();
            // (array, task, text, to cancel)
            let mut splits = Vec::new();
            let mut kills = Vec::new();
            for job in waiting() {
                let Some(dep) = job.dependency.as_deref() else {
                    continue;
                };
                let kill = dep.kill_invalid.unwrap_or(self.cfg.kill_invalid_depend);
                let me = owner(job);
                let next = match corr_tasks(job, dep) {
                    Some(tasks) => {
                        let plan = corr::plan(dep, &me, tasks, &world, now);
                        for (task, d) in plan.split {
                            let doomed = kill && d.verdict() == Verdict::Never;
                            splits.push((job.id.get(), task, d.to_string(), doomed));
                        }
                        plan.meta
                    }
                    None => dep.refreshed(&me, &world, now),
                };
                let now_dep = next.as_ref().unwrap_or(dep);
                if now_dep.verdict() == Verdict::Never && kill {
                    kills.push(job.id.get());
                }
                if let Some(next) = next {
                    changes.push((job.id.get(), next.to_string()));
                }
            }
            drop(world);
            any |= !changes.is_empty() || !splits.is_empty() || !kills.is_empty();
            // Split first: a task taken off its meta record keeps the
            // record's text until its own is recorded. A meta record whose
            // tasks could not all be split keeps its text too (its change
            // was planned for the tasks left after the splits).
            let mut unsplit = HashSet::new();
            for (array_job_id, task, dependency, doomed) in splits {
                match self.split_task(out, array_job_id, task, now) {
                    Some(job_id) if job_id != array_job_id => {
                        let event = Event::JobDependencyChanged {
                            job_id,
                            time: now,
                            dependency,
                        };
                        if self.emit(out, event) && doomed {
                            kills.push(job_id);
                        }
                    }
                    // No free job id: the task waits in its meta record,
                    // the next pass tries again. (The plan never splits
                    // a meta record's last task.)
                    _ => {
                        unsplit.insert(array_job_id);
                        tracing::warn!(
                            array_job_id,
                            task,
                            "array task whose dependency changed could not be split off"
                        );
                    }
                }
            }
            for (job_id, dependency) in changes {
                if unsplit.contains(&job_id) {
                    kills.retain(|&k| k != job_id);
                    continue;
                }
                self.emit(
                    out,
                    Event::JobDependencyChanged {
                        job_id,
                        time: now,
                        dependency,
                    },
                );
            }
            if kills.is_empty() {
                return any;
            }
            for job_id in kills {
                tracing::info!(
                    job_id,
                    "dependency can never be satisfied; cancelling the job"
                );
                self.end_job(
                    out,
                    job_id,
                    now,
                    JobState::Cancelled,
                    (0, 0),
                    PendingReason::DependencyNeverSatisfied.as_str(),
                    true,
                );
            }
            // A cancelled job no longer blocks singletons: test again.
        }
    }

    /// When a waiting job's `after:jobid+minutes` will hold, if later than
    /// `now` (the timer's business).
    pub(super) fn dependency_deadline(&self, job: &Job, now: i64) -> Option<i64> {
        let dep = job.dependency.as_deref()?;
        if !dep.is_active() {
            return None;
        }
        dep.next_check(&TableWorld::new(&self.jobs, false), now)
    }
}

pub mod corr;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod flow;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
