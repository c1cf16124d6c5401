//! `scancel`: cancel jobs, or send them a signal.
//!
//! Jobs are named by id (`12`, `12_3`, `12_[1-3]`, several per argument
//! with commas) and/or selected by filters (`-u`, `-t`, `-n`, `-p`, ...);
//! both together narrow the ids to the jobs that match. One request carries
//! the whole selection and the controller answers job by job, so scancel
//! reports each failure as Slurm does: quietly for jobs that no longer
//! exist or are already done (unless `-v`), as an error otherwise.
//!
//! `-i`/`--interactive` first lists the selected jobs and asks about each
//! with Slurm's prompt, reading the answers from standard input; only the
//! confirmed jobs are sent. The controller sits behind [`JobControl`] so the
//! whole exchange is tested without one.

use std::ffi::OsString;
use std::io::{BufRead, Write};

use slurm_proto::v1;
use slurm_proto::ErrorCode;

use crate::client::{
    current_uid, print_error, uid_for_name, user_name, ClientConfig, Controller, RpcError,
};
use crate::opts::{self, Getopt, GetoptError, HasArg, LongOpt, Ordering, ShortOpt};
use crate::output::{version_line, Output};

const PROG: &str = "scancel";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Account,
    Batch,
    Clusters,
    Full,
    Help,
    Hurry,
    Interactive,
    Me,
    Name,
    Nodelist,
    Partition,
    Qos,
    Quiet,
    Reservation,
    Sibling,
    Signal,
    State,
    Usage,
    User,
    Verbose,
    Version,
    Wckey,
    Ignored,
}

macro_rules! long {
    ($name:literal, $arg:ident, $key:ident) => {
        LongOpt {
            name: $name,
            has_arg: HasArg::$arg,
            key: Key::$key,
        }
    };
}

macro_rules! short {
    ($c:literal, $arg:ident, $key:ident) => {
        ShortOpt {
            letter: $c,
            has_arg: HasArg::$arg,
            key: Key::$key,
        }
    };
}

const SHORTS: &[ShortOpt<Key>] = &[
    short!('A', Required, Account),
    short!('b', No, Batch),
    short!('f', No, Full),
    short!('H', No, Hurry),
    short!('h', No, Help),
    short!('i', No, Interactive),
    short!('M', Required, Clusters),
    short!('n', Required, Name),
    short!('p', Required, Partition),
    short!('Q', No, Quiet),
    short!('q', Required, Qos),
    short!('R', Required, Reservation),
    short!('s', Required, Signal),
    short!('t', Required, State),
    short!('u', Required, User),
    short!('V', No, Version),
    short!('v', No, Verbose),
    short!('w', Required, Nodelist),
];

const LONGS: &[LongOpt<Key>] = &[
    long!("account", Required, Account),
    long!("batch", No, Batch),
    long!("cluster", Required, Clusters),
    long!("clusters", Required, Clusters),
    long!("ctld", No, Ignored),
    long!("full", No, Full),
    long!("help", No, Help),
    long!("hurry", No, Hurry),
    long!("interactive", No, Interactive),
    long!("jobname", Required, Name),
    long!("me", No, Me),
    long!("name", Required, Name),
    long!("nodelist", Required, Nodelist),
    long!("partition", Required, Partition),
    long!("qos", Required, Qos),
    long!("quiet", No, Quiet),
    long!("reservation", Required, Reservation),
    long!("sibling", Required, Sibling),
    long!("signal", Required, Signal),
    long!("state", Required, State),
    long!("usage", No, Usage),
    long!("user", Required, User),
    long!("verbose", No, Verbose),
    long!("version", No, Version),
    long!("wckey", Required, Wckey),
];

/// A job named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRef {
    Job(u32),
    /// `ID_TASKS`: tasks of an array, as written after the underscore;
    /// scancel's `ID_*` ([`ALL_TASKS`]) is the whole job or array, named
    /// so in messages.
    ArrayTasks {
        job: u32,
        tasks: String,
    },
}

/// The task part of scancel's `ID_*`.
pub const ALL_TASKS: &str = "*";

fn is_all_tasks(job: &JobRef) -> bool {
    matches!(job, JobRef::ArrayTasks { tasks, .. } if tasks == ALL_TASKS)
}

impl JobRef {
    /// The job id before any underscore.
    pub fn job_id(&self) -> u32 {
        match self {
            Self::Job(id) | Self::ArrayTasks { job: id, .. } => *id,
        }
    }
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Job(id) => write!(f, "{id}"),
            Self::ArrayTasks { job, tasks } => write!(f, "{job}_{tasks}"),
        }
    }
}

/// A step named on the command line (`12.0`, `12_3.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRef {
    pub job: JobRef,
    pub step: u32,
}

impl std::fmt::Display for StepRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.job, self.step)
    }
}

/// One id argument: a job or a step of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Job(JobRef),
    Step(StepRef),
}

/// One id argument: `12`, `12_3`, `12_[1-3]`, `12_*`, each optionally
/// followed by `.STEP`. A step is a decimal number read as C's `strtol`
/// reads it and kept to 32 bits, as Slurm does (`12.` is step 0,
/// `12.4294967296` step 0); a sign `-` or anything after the number
/// (`12.batch`, `12.0.1`) is refused.
pub fn parse_target(s: &str) -> Option<Target> {
    let job_ref = |t: &str| match t.strip_suffix("_*") {
        Some(id) => parse_job_ref(id).and_then(|j| match j {
            JobRef::Job(job) => Some(JobRef::ArrayTasks {
                job,
                tasks: ALL_TASKS.to_owned(),
            }),
            _ => None,
        }),
        None => parse_job_ref(t),
    };
    let Some((job, step)) = s.split_once('.') else {
        return job_ref(s).map(Target::Job);
    };
    let job = job_ref(job)?;
    if step.trim_start().starts_with('-') {
        return None;
    }
    let (n, rest, _) = opts::strtol(step);
    if !rest.is_empty() {
        return None;
    }
    // Slurm's cast of the `long` it read to its 32-bit step id.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let step = n as u32;
    Some(Target::Step(StepRef { job, step }))
}

/// What the arguments ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum Invocation {
    Help,
    Usage,
    Version,
    Cancel(Box<Request>),
}

/// A cancellation (or signal) request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub jobs: Vec<JobRef>,
    /// Steps named (`12.0`); they never widen the job selection.
    pub steps: Vec<StepRef>,
    /// For each step, how many jobs were named before it (the order of
    /// the command line, in which lookups are reported).
    pub step_positions: Vec<usize>,
    pub filter: v1::JobFilter,
    pub signal: Option<u32>,
    pub batch: bool,
    pub full: bool,
    pub hurry: bool,
    /// How many `-v` count (those after the last `-Q` but one).
    pub verbose: u32,
    /// `-Q` not followed by a `-v`: no per-job errors are printed.
    pub quiet: bool,
    pub interactive: bool,
    /// `--state` named a state no cancellable job is in: nothing is sent.
    pub matches_nothing: bool,
    /// `--sibling`: no job here is federated, so each selected job is
    /// refused and nothing is sent.
    pub sibling: Option<String>,
    /// `-M`/`--clusters` as given; checked against `ClusterName`.
    pub clusters: Option<String>,
    /// Each filter as `-v` names it when it matches no job (`partition` ->
    /// `x`): the last value given, as typed (users by name or `--me`'s
    /// uid, states by their names). Keys sort as Slurm lists them.
    pub filter_words: std::collections::BTreeMap<&'static str, String>,
}

impl Request {
    /// Whether any filter (`-A`, `-n`, `-p`, `-q`, `-R`, `-t`, `-u`,
    /// `--me`, `-w`, `--wckey`) narrows the jobs.
    pub fn has_filter(&self) -> bool {
        let f = &self.filter;
        !f.user_ids.is_empty()
            || !f.states.is_empty()
            || !f.names.is_empty()
            || !f.partitions.is_empty()
            || !f.accounts.is_empty()
            || !f.qos.is_empty()
            || !f.reservations.is_empty()
            || !f.nodelist.is_empty()
            || !f.wckeys.is_empty()
            || self.selects_nothing()
    }

    /// Whether the filters can match no job: `--state` names a finished
    /// state, or `--nodelist` is empty.
    pub fn selects_nothing(&self) -> bool {
        self.matches_nothing
            || (self.filter_words.contains_key("nodelist") && self.filter.nodelist.is_empty())
    }

    /// Whether the named jobs are checked against the job list before
    /// anything is sent, as Slurm's scancel does when a signal (`-s`),
    /// `--batch` or a filter goes with them; a plain cancel of ids is sent
    /// at once, and reports a finished or unknown job only with `-v`.
    pub fn checks_named_jobs(&self) -> bool {
        !self.jobs.is_empty() && (self.signal.is_some() || self.batch || self.has_filter())
    }
}

/// A command line scancel refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScancelError {
    /// Printed as `scancel: <getopt text>` and the "Try" line.
    Getopt(GetoptError),
    /// Printed as `scancel: error: <text>`.
    Invalid(String),
    /// Printed as is, without the `scancel: error: ` prefix, as Slurm
    /// prints its bad `--signal` and `--state` texts.
    Bare(String),
}

impl std::fmt::Display for ScancelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Getopt(e) => write!(f, "{e}"),
            Self::Invalid(t) | Self::Bare(t) => f.write_str(t),
        }
    }
}

impl std::error::Error for ScancelError {}

fn invalid(text: impl Into<String>) -> ScancelError {
    ScancelError::Invalid(text.into())
}

/// One job id argument: `12`, `12_3`, `12_[1-3]` (not `12_*`, which only
/// scancel's [`parse_target`] reads).
pub fn parse_job_ref(s: &str) -> Option<JobRef> {
    let digits = |t: &str| -> Option<u32> {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse::<u32>().ok().filter(|id| *id > 0)
    };
    match s.split_once('_') {
        None => digits(s).map(JobRef::Job),
        Some((job, tasks)) => {
            let job = digits(job)?;
            let inner = tasks
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .unwrap_or(tasks);
            let valid = !inner.is_empty()
                && inner
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b',' | b'%' | b':'));
            valid.then(|| JobRef::ArrayTasks {
                job,
                tasks: tasks.to_owned(),
            })
        }
    }
}

/// The refusal of a job id; a bad bracketed task range is named first, as
/// Slurm's range reader names it.
fn bad_job_id(id: &str) -> String {
    let range = id
        .split_once('_')
        .filter(|(_, tasks)| tasks.starts_with('[') && tasks.ends_with(']'))
        .and_then(|(_, tasks)| crate::format::checks::check_hostlist(tasks).err())
        .filter(|e| !matches!(e, crate::format::checks::HostlistCheckError::AfterBracket));
    match range {
        Some(e) => format!("{e}\nInvalid job id {id}"),
        None => format!("Invalid job id {id}"),
    }
}

/// What a `--state` value selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StateChoice {
    /// A state a job can be cancelled in.
    Live(v1::JobState),
    /// Another job state (its long name): valid, but no job it names can
    /// be cancelled.
    Finished(&'static str),
}

/// Reads `--state` as scancel 22.05 does: one job state name or code, in
/// any case, as typed (no list, no blanks, no `all`).
fn parse_state(s: &str) -> Option<StateChoice> {
    use slurm_common::state::JobStateCode;
    match s.to_ascii_uppercase().as_str() {
        "PD" | "PENDING" => return Some(StateChoice::Live(v1::JobState::Pending)),
        "R" | "RUNNING" => return Some(StateChoice::Live(v1::JobState::Running)),
        "S" | "SUSPENDED" => return Some(StateChoice::Live(v1::JobState::Suspended)),
        _ => {}
    }
    if s.trim() != s {
        return None;
    }
    s.parse::<JobStateCode>()
        .ok()
        .map(|code| StateChoice::Finished(code.long_name()))
}

/// The signal names scancel 22.05 knows (with or without `SIG`, any case),
/// a subset of [`slurm_common::signal`]'s, which gives their numbers.
const SIGNAL_NAMES: &[&str] = &[
    "HUP", "INT", "QUIT", "ABRT", "KILL", "USR1", "USR2", "ALRM", "TERM", "CONT", "STOP", "TSTP",
    "TTIN", "TTOU", "URG", "XCPU",
];

/// Reads `--signal` as scancel 22.05 does: a number (C's `strtol`, blanks
/// after it allowed, kept to an `int` and then to Slurm's 16-bit signal
/// field) that is not 0, or one of [`SIGNAL_NAMES`].
pub fn parse_scancel_signal(v: &str) -> Option<u32> {
    let (n, rest, any) = crate::format::checks::strtol(v);
    if any && rest.trim_start().is_empty() {
        // The casts are Slurm's: `int`, then the 16-bit field it sends.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let sig = n as i32 as u16;
        return (n as i32 != 0).then_some(u32::from(sig));
    }
    let upper = v.trim().to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    if SIGNAL_NAMES.contains(&name) {
        slurm_common::signal::parse_signal(name)
    } else {
        None
    }
}

/// Reads the arguments (without the program name). `uid_of` resolves user
/// names; `me` is the caller's uid.
pub fn parse(
    args: &[String],
    uid_of: &dyn Fn(&str) -> Option<u32>,
    me: u32,
) -> Result<Invocation, ScancelError> {
    parse_with_env(args, &|_| None, uid_of, me).map(|(invocation, _)| invocation)
}

/// The `SCANCEL_*` variables and the option each stands for, in the
/// order Slurm reads them; the command line overrides them.
const ENV_OPTIONS: &[(&str, Key)] = &[
    ("SCANCEL_ACCOUNT", Key::Account),
    ("SCANCEL_BATCH", Key::Batch),
    ("SCANCEL_CTLD", Key::Ignored),
    ("SCANCEL_FULL", Key::Full),
    ("SCANCEL_HURRY", Key::Hurry),
    ("SCANCEL_INTERACTIVE", Key::Interactive),
    ("SCANCEL_NAME", Key::Name),
    ("SCANCEL_PARTITION", Key::Partition),
    ("SCANCEL_QOS", Key::Qos),
    ("SCANCEL_STATE", Key::State),
    ("SCANCEL_USER", Key::User),
    ("SCANCEL_VERBOSE", Key::Verbose),
    ("SCANCEL_WCKEY", Key::Wckey),
];

/// Applies the `SCANCEL_*` variables `env` gives. A switch takes `true`
/// or `T` (set) and `false` or `F` (unset), in any case; another value is
/// warned about (the returned lines) and ignored, as in Slurm, except for
/// `SCANCEL_CTLD` and `SCANCEL_HURRY`, which any value sets. A bad state
/// or user stops the command.
fn apply_env(
    r: &mut Request,
    env: &dyn Fn(&str) -> Option<String>,
    uid_of: &dyn Fn(&str) -> Option<u32>,
    me: u32,
) -> Result<Vec<String>, ScancelError> {
    let mut warnings = Vec::new();
    for (name, key) in ENV_OPTIONS {
        let Some(value) = env(name) else {
            continue;
        };
        match key {
            Key::Batch | Key::Full | Key::Interactive | Key::Verbose => {
                let on = match value.to_ascii_lowercase().as_str() {
                    "true" | "t" => true,
                    "false" | "f" => false,
                    _ => {
                        warnings.push(format!("Unrecognized {name} value: {value}"));
                        continue;
                    }
                };
                match key {
                    Key::Batch => r.batch = on,
                    Key::Full => r.full = on,
                    Key::Interactive => r.interactive = on,
                    _ => r.verbose = u32::from(on),
                }
            }
            Key::State if parse_state(&value).is_none() => {
                return Err(ScancelError::Bare(format!(
                    "Unrecognized {name} value: {value}\n\
                     Valid job states are PENDING, RUNNING, and SUSPENDED"
                )));
            }
            _ => apply_option(&mut *r, *key, &value, uid_of, me)?,
        }
    }
    Ok(warnings)
}

/// [`parse`] with the `SCANCEL_*` environment `env` gives, read before
/// the arguments; also gives the warnings about bad variables.
pub fn parse_with_env(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    uid_of: &dyn Fn(&str) -> Option<u32>,
    me: u32,
) -> Result<(Invocation, Vec<String>), ScancelError> {
    let mut r = Request::default();
    let warnings = apply_env(&mut r, env, uid_of, me)?;
    // One option at a time: --help, --usage and --version answer the
    // moment they are read, and a bad value stops the reading, as in Slurm.
    let mut getopt = Getopt::new(args, SHORTS, LONGS, Ordering::Permute);
    for found in &mut getopt {
        let found = found.map_err(ScancelError::Getopt)?;
        let v = found.value.as_deref().unwrap_or("");
        match found.key {
            Key::Help => return Ok((Invocation::Help, warnings)),
            Key::Usage => return Ok((Invocation::Usage, warnings)),
            Key::Version => return Ok((Invocation::Version, warnings)),
            key => apply_option(&mut r, key, v, uid_of, me)?,
        }
    }
    for operand in &getopt.into_operands() {
        for id in operand.split(',').filter(|s| !s.is_empty()) {
            match parse_target(id).ok_or_else(|| invalid(bad_job_id(id)))? {
                Target::Job(job) => r.jobs.push(job),
                Target::Step(step) => {
                    r.step_positions.push(r.jobs.len());
                    r.steps.push(step);
                }
            }
        }
        if operand.split(',').all(str::is_empty) {
            return Err(invalid(format!("Invalid job id {operand}")));
        }
    }
    if r.jobs.is_empty() && r.steps.is_empty() && !r.has_filter() {
        return Err(invalid("No job identification provided"));
    }
    let named = selection(&r.jobs);
    r.filter.job_ids = named.job_ids;
    r.filter.array_tasks = named.array_tasks;
    if r.has_filter() && r.filter.states.is_empty() {
        // Filters act on active jobs only, as Slurm's do: a finished job
        // still listed is never selected.
        r.filter.states = LIVE_STATES.iter().map(|s| *s as i32).collect();
    }
    Ok((Invocation::Cancel(Box::new(r)), warnings))
}

/// Applies one option (from the command line or a `SCANCEL_*` variable).
fn apply_option(
    r: &mut Request,
    key: Key,
    v: &str,
    uid_of: &dyn Fn(&str) -> Option<u32>,
    me: u32,
) -> Result<(), ScancelError> {
    match key {
        // Answered by the caller.
        Key::Help | Key::Usage | Key::Version => {}
        Key::Account => {
            r.filter.accounts = vec![v.to_owned()];
            r.filter_words.insert("account", v.to_owned());
        }
        Key::Batch => r.batch = true,
        Key::Clusters => r.clusters = Some(v.to_owned()),
        Key::Ignored => {}
        Key::Sibling => r.sibling = Some(v.to_owned()),
        Key::Full => r.full = true,
        Key::Hurry => r.hurry = true,
        Key::Interactive => r.interactive = true,
        Key::Me => {
            r.filter.user_ids = vec![me];
            r.filter_words.insert("user_name", me.to_string());
        }
        Key::Name => {
            r.filter.names = vec![v.to_owned()];
            r.filter_words.insert("job_name", v.to_owned());
        }
        Key::Nodelist => {
            r.filter.nodelist = v.to_owned();
            r.filter_words.insert("nodelist", v.to_owned());
        }
        Key::Partition => {
            r.filter.partitions = vec![v.to_owned()];
            r.filter_words.insert("partition", v.to_owned());
        }
        Key::Qos => {
            r.filter.qos = vec![v.to_owned()];
            r.filter_words.insert("qos", v.to_owned());
        }
        // One level, as Slurm keeps it: `-Q` sets it below zero and
        // each `-v` raises it, so `-Q -v` is the default level again.
        Key::Quiet => {
            r.quiet = true;
            r.verbose = 0;
        }
        Key::Reservation => {
            r.filter.reservations = vec![v.to_owned()];
            r.filter_words.insert("reservation", v.to_owned());
        }
        Key::Signal => {
            r.signal = Some(
                parse_scancel_signal(v)
                    .ok_or_else(|| ScancelError::Bare(format!("Unknown job signal: {v}")))?,
            );
        }
        Key::State => match parse_state(v) {
            Some(StateChoice::Live(state)) => {
                r.filter.states = vec![state as i32];
                r.matches_nothing = false;
                let name = match state {
                    v1::JobState::Running => "RUNNING",
                    v1::JobState::Suspended => "SUSPENDED",
                    _ => "PENDING",
                };
                r.filter_words.insert("state", name.to_owned());
            }
            Some(StateChoice::Finished(name)) => {
                r.filter.states.clear();
                r.matches_nothing = true;
                r.filter_words.insert("state", name.to_owned());
            }
            None => {
                return Err(ScancelError::Bare(format!(
                    "Invalid job state specified: {v}\n\
                     Valid job states are PENDING, RUNNING, and SUSPENDED"
                )))
            }
        },
        Key::User => {
            // One user, the whole value, as Slurm reads it.
            let uid = uid_of(v).ok_or_else(|| invalid(format!("Invalid user name: {v}")))?;
            r.filter.user_ids = vec![uid];
            r.filter_words.insert("user_name", v.to_owned());
        }
        Key::Verbose if r.quiet => r.quiet = false,
        Key::Verbose => r.verbose = r.verbose.saturating_add(1),
        Key::Wckey => {
            r.filter.wckeys = vec![v.to_owned()];
            r.filter_words.insert("wckey", v.to_owned());
        }
    }
    Ok(())
}

/// Runs `scancel` with the process's arguments (the program name first)
/// and standard streams.
pub fn run(args: Vec<OsString>) -> i32 {
    crate::output::with_std_streams(|input, stdout, stderr| run_io(&args, input, stdout, stderr))
}

/// [`run`] with standard input and both output streams handed in.
pub fn run_io(
    args: &[OsString],
    input: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let words = words_of(args);
    let called_as = opts::called_as(args, PROG);
    let prepared = {
        let mut out = Output::new(stdout, stderr);
        let prepared = prepare(
            &words,
            &called_as,
            &|name| std::env::var(name).ok(),
            &mut out,
        );
        let _ = out.flush();
        prepared
    };
    match prepared {
        Err(code) | Ok(Prepared::Done(code)) => code,
        Ok(Prepared::Send(request, mut control)) => {
            execute_io(control.as_mut(), &request, input, stdout, stderr)
        }
    }
}

fn words_of(args: &[OsString]) -> Vec<String> {
    args.iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// What is left to do once the arguments are read.
enum Prepared {
    /// Answered already (help, usage, version) with this status.
    Done(i32),
    /// Send the request to the controller.
    Send(Box<Request>, Box<ControllerControl>),
}

/// Reads the arguments and connects; `Err` is the exit status after the
/// refusal was printed.
fn prepare(
    words: &[String],
    called_as: &str,
    env: &dyn Fn(&str) -> Option<String>,
    out: &mut Output<'_>,
) -> Result<Prepared, i32> {
    let uid_of = |name: &str| {
        crate::format::checks::uid_from_string(name, &uid_for_name, &|uid| user_name(uid).is_some())
    };
    let parsed =
        parse_with_env(words, env, &uid_of, current_uid()).map(|(invocation, warnings)| {
            for line in &warnings {
                print_error(out, PROG, line);
            }
            invocation
        });
    let request = match parsed {
        Ok(Invocation::Help) => return Ok(Prepared::Done(out.block(PROG, HELP))),
        Ok(Invocation::Usage) => return Ok(Prepared::Done(out.block(PROG, USAGE))),
        Ok(Invocation::Version) => return Ok(Prepared::Done(out.block(PROG, &version_line()))),
        Ok(Invocation::Cancel(r)) => r,
        Err(ScancelError::Getopt(e)) => {
            opts::report(out, PROG, called_as, &e);
            return Err(1);
        }
        Err(ScancelError::Invalid(text)) => {
            for line in text.lines() {
                print_error(out, PROG, line);
            }
            return Err(1);
        }
        Err(ScancelError::Bare(text)) => {
            for line in text.lines() {
                out.error_line(line);
            }
            return Err(1);
        }
    };
    let config = ClientConfig::load().map_err(|e| {
        print_error(out, PROG, e);
        1
    })?;
    if crate::client::refused_clusters(out, PROG, request.clusters.as_deref(), &config.conf) {
        return Err(1);
    }
    if request.selects_nothing() && request.jobs.is_empty() && request.steps.is_empty() {
        if request.verbose > 0 && !request.quiet {
            out.error_line(&no_match_line(&request));
        }
        return Ok(Prepared::Done(0));
    }
    let controller = Controller::new(&config).map_err(|e| {
        print_error(out, PROG, e);
        1
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            print_error(out, PROG, format!("cannot start the I/O runtime: {e}"));
            1
        })?;
    Ok(Prepared::Send(
        request,
        Box::new(ControllerControl {
            controller,
            runtime,
        }),
    ))
}

/// The calls scancel makes, behind a trait so the whole flow, prompts
/// included, runs in tests without a controller.
pub trait JobControl {
    /// The jobs `filter` selects (`--interactive` asks about each).
    fn jobs(&mut self, filter: &v1::JobFilter) -> Result<Vec<v1::JobInfo>, RpcError>;
    /// Cancels, or signals when `r.signal` is set, the jobs `r.filter`
    /// selects.
    fn act(&mut self, r: &Request) -> Result<v1::JobActionReply, RpcError>;
    /// Waits before a job that could not take the request is asked again.
    fn pause(&mut self, wait: std::time::Duration);
}

/// [`JobControl`] through slurmctld.
struct ControllerControl {
    controller: Controller,
    /// One runtime for every call: the connection lives in it.
    runtime: tokio::runtime::Runtime,
}

impl JobControl for ControllerControl {
    fn jobs(&mut self, filter: &v1::JobFilter) -> Result<Vec<v1::JobInfo>, RpcError> {
        let request = v1::GetJobsRequest {
            hide_hidden: false,
            filter: Some(filter.clone()),
            ..Default::default()
        };
        self.runtime
            .block_on(self.controller.call(|mut c| {
                let request = request.clone();
                async move { c.get_jobs(request).await }
            }))
            .map(|reply| reply.jobs)
    }

    fn act(&mut self, r: &Request) -> Result<v1::JobActionReply, RpcError> {
        match r.signal {
            Some(signal) => {
                let request = v1::SignalJobRequest {
                    filter: Some(r.filter.clone()),
                    signal,
                    batch_only: r.batch,
                    full: r.full,
                };
                self.runtime.block_on(self.controller.call(|mut c| {
                    let request = request.clone();
                    async move { c.signal_job(request).await }
                }))
            }
            None => {
                let request = v1::CancelJobRequest {
                    filter: Some(r.filter.clone()),
                    batch_only: r.batch,
                    full: r.full,
                    hurry: r.hurry,
                };
                self.runtime.block_on(self.controller.call(|mut c| {
                    let request = request.clone();
                    async move { c.cancel_job(request).await }
                }))
            }
        }
    }

    fn pause(&mut self, wait: std::time::Duration) {
        std::thread::sleep(wait);
    }
}

/// Runs a request: with `--interactive`, first asks about each job on
/// `stdout` and reads the answers from `input`. Named steps are handled
/// first; when only steps are named, the filters narrow them and select
/// no job of their own.
pub fn execute_io(
    control: &mut dyn JobControl,
    r: &Request,
    input: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let mut code = 0;
    let found;
    let mut r = r;
    if !r.steps.is_empty() {
        let mut out = Output::new(&mut *stdout, &mut *stderr);
        if !r.jobs.is_empty() {
            if let Some((left, missing)) = missing_named(control, r, &mut out) {
                code = missing;
                found = left;
                r = &found;
            }
        }
        code = code.max(execute_steps(control, r, &mut out));
        let _ = out.flush();
        if r.jobs.is_empty() {
            return code;
        }
    }
    code.max(execute_jobs_io(control, r, input, stdout, stderr))
}

/// The jobs `filter` selects; none existing is an empty list.
fn live_jobs(
    control: &mut dyn JobControl,
    filter: &v1::JobFilter,
) -> Result<Vec<v1::JobInfo>, RpcError> {
    match control.jobs(filter) {
        Err(e) if e.code == ErrorCode::InvalidJobId => Ok(Vec::new()),
        other => other,
    }
}

/// Named steps. The controller keeps no numbered steps (there is no
/// `srun` to make one), so the step of a live job is one that does not
/// exist, and each is answered as Slurm 22.05 answers such a step: a
/// job that is unknown, finished or named as `ID_*` is an invalid job
/// id (status 1); a job the filters leave out, or a pending one (it has
/// no steps), is passed over; for a running job `-v` announces the step,
/// a signal is reported as sent (Slurm's slurmd takes a signal for a
/// step it does not have without complaint) and a cancel is refused as
/// an invalid job id, with that error's number as the status (225).
fn execute_steps(control: &mut dyn JobControl, r: &Request, out: &mut Output<'_>) -> i32 {
    let refs: Vec<JobRef> = r.steps.iter().map(|s| s.job.clone()).collect();
    let named = selection(&refs);
    let mut narrowed = r.filter.clone();
    narrowed.job_ids.clone_from(&named.job_ids);
    narrowed.array_tasks.clone_from(&named.array_tasks);
    let loaded = live_jobs(control, &named).and_then(|all| {
        let selected = if r.selects_nothing() {
            Vec::new()
        } else if r.has_filter() {
            live_jobs(control, &narrowed)?
        } else {
            all.clone()
        };
        Ok((all, selected))
    });
    let (all, selected) = match loaded {
        Ok(lists) => lists,
        Err(e) => {
            print_error(out, PROG, format!("slurm_load_jobs error: {e}"));
            return 1;
        }
    };
    let find = |jobs: &[v1::JobInfo], job: &JobRef| -> Option<v1::JobInfo> {
        jobs.iter()
            .find(|j| !is_all_tasks(job) && matches_ref(j, job) && is_cancellable(j))
            .cloned()
    };
    let mut code = 0;
    let mut refused = Vec::new();
    for step in &r.steps {
        // The job itself is named too: cancelling it covers the step.
        if r.jobs.contains(&step.job) || r.jobs.contains(&JobRef::Job(step.job.job_id())) {
            continue;
        }
        if find(&all, &step.job).is_none() {
            code = code.max(1);
            if !r.quiet {
                print_error(
                    out,
                    PROG,
                    format!(
                        "Kill job error on job step id {step}: {}",
                        ErrorCode::InvalidJobId
                    ),
                );
            }
            continue;
        }
        let Some(job) = find(&selected, &step.job) else {
            continue;
        };
        if crate::format::base_state(&job) == slurm_common::state::JobState::Pending {
            continue;
        }
        if r.verbose > 0 {
            out.error_line(&match r.signal {
                Some(sig) => format!("{PROG}: Signal {sig} to step {step}"),
                None => format!("{PROG}: Terminating step {step}"),
            });
        }
        if r.signal.is_some() {
            continue;
        }
        refused.push(&step.job);
    }
    // The answers come after every step was announced, as Slurm sends
    // them all before it reports.
    let err = ErrorCode::InvalidJobId;
    for job in refused {
        // Printed even with -Q, as Slurm prints it.
        code = code.max((err.number() & 0xff).max(1));
        print_error(
            out,
            PROG,
            format!("Kill job error on job step id {job}: {err}"),
        );
    }
    code
}

/// With both jobs and steps named, Slurm 22.05 looks them all up first and
/// reports, in command-line order, each job that does not exist and each
/// step whose job does not (or is finished); a job named alone is sent its
/// cancel and answered then. Returns the request without them and the
/// status so far, or `None` when the jobs cannot be loaded (each part then
/// reports its own).
fn missing_named(
    control: &mut dyn JobControl,
    r: &Request,
    out: &mut Output<'_>,
) -> Option<(Request, i32)> {
    let step_jobs: Vec<JobRef> = r.steps.iter().map(|s| s.job.clone()).collect();
    let everything: Vec<JobRef> = r.jobs.iter().chain(&step_jobs).cloned().collect();
    let live = live_jobs(control, &selection(&everything)).ok()?;
    let job_missing = |j: &JobRef| !live.iter().any(|x| matches_ref(x, j));
    // A step of a job also named is left to the job's cancel.
    let step_missing = |s: &StepRef| {
        let job_named = r.jobs.contains(&s.job) || r.jobs.contains(&JobRef::Job(s.job.job_id()));
        let live_job = live
            .iter()
            .any(|x| !is_all_tasks(&s.job) && matches_ref(x, &s.job) && is_cancellable(x));
        !job_named && !live_job
    };
    // A step is reported before the job named after it: its position is
    // how many jobs came before it (after them all when not recorded).
    let position = |k: usize| r.step_positions.get(k).copied().unwrap_or(r.jobs.len());
    let mut lines = Vec::new();
    let mut next_step = 0;
    for i in 0..=r.jobs.len() {
        while next_step < r.steps.len() && position(next_step) <= i {
            let step = &r.steps[next_step];
            if step_missing(step) {
                lines.push(format!("Kill job error on job step id {step}"));
            }
            next_step += 1;
        }
        if let Some(job) = r.jobs.get(i).filter(|j| job_missing(j)) {
            lines.push(format!("Kill job error on job id {job}"));
        }
    }
    if !r.quiet {
        for line in &lines {
            print_error(out, PROG, format!("{line}: {}", ErrorCode::InvalidJobId));
        }
    }
    let kept: Vec<(StepRef, usize)> = r
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| !step_missing(s))
        .map(|(k, s)| (s.clone(), position(k)))
        .collect();
    let left = Request {
        jobs: r.jobs.iter().filter(|j| !job_missing(j)).cloned().collect(),
        steps: kept.iter().map(|(s, _)| s.clone()).collect(),
        step_positions: kept.iter().map(|&(_, at)| at).collect(),
        ..r.clone()
    };
    Some((left, i32::from(!lines.is_empty())))
}

/// [`execute_io`] for the named jobs and the filters.
fn execute_jobs_io(
    control: &mut dyn JobControl,
    r: &Request,
    input: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    if r.sibling.is_some() {
        let mut out = Output::new(stdout, stderr);
        let code = refuse_siblings(control, r, &mut out);
        let _ = out.flush();
        return code;
    }
    if !r.interactive || r.selects_nothing() {
        let mut out = Output::new(stdout, stderr);
        let code = if r.checks_named_jobs() {
            execute_checked(control, r, &mut out)
        } else {
            execute(control, r, &mut out)
        };
        let _ = out.flush();
        return code;
    }
    let jobs = match control.jobs(&r.filter) {
        Ok(jobs) => jobs,
        // None of the named jobs exists: each is reported below.
        Err(e) if e.code == ErrorCode::InvalidJobId => Vec::new(),
        Err(e) => {
            let mut out = Output::new(stdout, stderr);
            out.error_line(&format!("slurm_load_jobs error: {e}"));
            return 1;
        }
    };
    // Named jobs that are gone are reported before any question, as Slurm
    // checks them first.
    let mut code = 0;
    {
        let mut out = Output::new(&mut *stdout, &mut *stderr);
        for job in &r.jobs {
            let alive = jobs
                .iter()
                .any(|j| matches_ref(j, job) && is_cancellable(j));
            if !alive && (matches!(job, JobRef::Job(_)) || is_all_tasks(job)) {
                code = 1;
                if !r.quiet {
                    print_error(
                        &mut out,
                        PROG,
                        format!(
                            "Kill job error on job id {job}: {}",
                            ErrorCode::InvalidJobId
                        ),
                    );
                }
            }
        }
    }
    // The controller filters already; the named ids are checked again so
    // only the jobs asked for are asked about.
    let named: Vec<v1::JobInfo> = jobs
        .into_iter()
        .filter(|j| r.jobs.is_empty() || r.jobs.iter().any(|id| matches_ref(j, id)))
        .collect();
    let confirmed = confirm(&candidates(&named), input, stdout);
    if confirmed.is_empty() {
        return code;
    }
    let mut request = r.clone();
    request.filter = selection(&confirmed);
    request.jobs = confirmed;
    let mut out = Output::new(stdout, stderr);
    let sent = execute(control, &request, &mut out);
    let _ = out.flush();
    code.max(sent)
}

/// [`execute`] for named jobs that Slurm checks against the job list first
/// (see [`Request::checks_named_jobs`]): each one that is unknown or
/// finished is reported as an invalid job id, even without `-v`, and makes
/// the exit status 1; the request then goes for the others only.
fn execute_checked(control: &mut dyn JobControl, r: &Request, out: &mut Output<'_>) -> i32 {
    let jobs = match control.jobs(&selection(&r.jobs)) {
        Ok(jobs) => jobs,
        // None of the named jobs exists: each is reported below.
        Err(e) if e.code == ErrorCode::InvalidJobId => Vec::new(),
        Err(e) => {
            print_error(out, PROG, format!("slurm_load_jobs error: {e}"));
            return 1;
        }
    };
    let (live, gone): (Vec<&JobRef>, Vec<&JobRef>) = r.jobs.iter().partition(|job| {
        jobs.iter()
            .any(|j| matches_ref(j, job) && is_cancellable(j))
    });
    if !r.quiet {
        for job in &gone {
            print_error(
                out,
                PROG,
                format!(
                    "Kill job error on job id {job}: {}",
                    ErrorCode::InvalidJobId
                ),
            );
        }
    }
    let code = i32::from(!gone.is_empty());
    if live.is_empty() {
        return code;
    }
    let mut request = r.clone();
    request.jobs = live.into_iter().cloned().collect();
    let named = selection(&request.jobs);
    request.filter.job_ids = named.job_ids;
    request.filter.array_tasks = named.array_tasks;
    if r.has_filter() {
        // The filters narrow the named jobs before anything is announced
        // or sent; when none is left, -v says which filters those were.
        let kept = if r.selects_nothing() {
            Vec::new()
        } else {
            match live_jobs(control, &request.filter) {
                Ok(jobs) => jobs,
                Err(e) => {
                    print_error(out, PROG, format!("slurm_load_jobs error: {e}"));
                    return 1;
                }
            }
        };
        request
            .jobs
            .retain(|job| kept.iter().any(|j| matches_ref(j, job)));
        if request.jobs.is_empty() {
            if r.verbose > 0 && !r.quiet {
                out.error_line(&no_match_line(r));
            }
            return code;
        }
        let named = selection(&request.jobs);
        request.filter.job_ids = named.job_ids;
        request.filter.array_tasks = named.array_tasks;
    }
    code.max(execute(control, &request, out))
}

/// `--sibling`: the jobs selected are live but none is federated, so
/// each is refused with Slurm's error and its number as the status
/// (2239 & 0xff); unknown or finished jobs pass quietly, as a plain
/// cancel's do.
fn refuse_siblings(control: &mut dyn JobControl, r: &Request, out: &mut Output<'_>) -> i32 {
    const NOT_FEDERATED: &str = "Not a valid federated job";
    const NOT_FEDERATED_STATUS: i32 = 2239 & 0xff;
    let loaded = if r.selects_nothing() {
        Ok(Vec::new())
    } else {
        live_jobs(control, &r.filter)
    };
    let jobs = match loaded {
        Ok(jobs) => jobs,
        Err(e) => {
            print_error(out, PROG, format!("slurm_load_jobs error: {e}"));
            return 1;
        }
    };
    let mut code = 0;
    for job in jobs.iter().filter(|j| is_cancellable(j)) {
        let id = match r.jobs.iter().find(|n| matches_ref(job, n)) {
            Some(JobRef::Job(id)) => id.to_string(),
            _ => job_ref_of(job).to_string(),
        };
        if r.verbose > 0 {
            out.error_line(&verbose_line(r, &id));
        }
        code = NOT_FEDERATED_STATUS;
        if !r.quiet {
            print_error(
                out,
                PROG,
                format!("Kill job error on job id {id}: {NOT_FEDERATED}"),
            );
        }
    }
    if jobs.is_empty() && r.jobs.is_empty() && r.verbose > 0 && !r.quiet {
        out.error_line(&no_match_line(r));
    }
    code
}

/// The states a job can be cancelled in.
const LIVE_STATES: [v1::JobState; 3] = [
    v1::JobState::Pending,
    v1::JobState::Running,
    v1::JobState::Suspended,
];

/// Whether a job can still be cancelled (pending, running or suspended).
fn is_cancellable(job: &v1::JobInfo) -> bool {
    use slurm_common::state::JobState as S;
    matches!(
        crate::format::base_state(job),
        S::Pending | S::Running | S::Suspended
    )
}

/// Whether a record is the job a command-line id names.
fn matches_ref(job: &v1::JobInfo, r: &JobRef) -> bool {
    match r {
        JobRef::Job(id) => job.job_id == *id || job.array_job_id == Some(*id),
        JobRef::ArrayTasks { job: id, tasks } if tasks == ALL_TASKS => {
            job.job_id == *id || job.array_job_id == Some(*id)
        }
        JobRef::ArrayTasks { job: master, tasks } => {
            job.array_job_id == Some(*master)
                && job.array_task_id.is_some_and(|t| {
                    crate::squeue::array_task_ids(tasks).is_some_and(|ids| ids.contains(&t))
                })
        }
    }
}

/// The jobs `--interactive` asks about, in Slurm's order: pending jobs
/// first, then the others, each group as the controller listed them.
fn candidates(jobs: &[v1::JobInfo]) -> Vec<&v1::JobInfo> {
    use slurm_common::state::JobState as S;
    let pending = |j: &&v1::JobInfo| crate::format::base_state(j) == S::Pending;
    let live = jobs.iter().filter(|j| is_cancellable(j));
    live.clone()
        .filter(pending)
        .chain(live.filter(|j| !pending(j)))
        .collect()
}

/// The record a job is, for the request and the prompt: an array task as
/// `ARRAY_TASK`, anything else by its own id.
fn job_ref_of(job: &v1::JobInfo) -> JobRef {
    match (job.array_job_id, job.array_task_id) {
        (Some(master), Some(task)) => JobRef::ArrayTasks {
            job: master,
            tasks: task.to_string(),
        },
        _ => JobRef::Job(job.job_id),
    }
}

/// The filter naming exactly `jobs`.
fn selection(jobs: &[JobRef]) -> v1::JobFilter {
    let mut filter = v1::JobFilter::default();
    for job in jobs {
        match job {
            JobRef::Job(id) => filter.job_ids.push(*id),
            JobRef::ArrayTasks { job, tasks } if tasks == ALL_TASKS => filter.job_ids.push(*job),
            JobRef::ArrayTasks { job, tasks } => filter.array_tasks.push(v1::ArrayTaskSelector {
                array_job_id: *job,
                task_spec: tasks.clone(),
            }),
        }
    }
    filter
}

/// Asks about each job with Slurm's prompt
/// (`Cancel job_id=12 name=foo partition=debug [y/n]? `) and reads one
/// answer line per question: `y`/`Y` cancels, `n`/`N` keeps, anything else
/// asks again. Slurm asks forever once input ends; here the end of input
/// keeps the remaining jobs. Gives the confirmed jobs in order.
pub fn confirm(
    jobs: &[&v1::JobInfo],
    input: &mut dyn BufRead,
    prompt: &mut dyn Write,
) -> Vec<JobRef> {
    let mut confirmed = Vec::new();
    let mut line = String::new();
    'jobs: for job in jobs {
        let id = job_ref_of(job);
        loop {
            let asked = write!(
                prompt,
                "Cancel job_id={id} name={} partition={} [y/n]? ",
                job.name, job.partition
            )
            .and_then(|()| prompt.flush());
            if asked.is_err() {
                // Nobody can see the question; cancel nothing more.
                break 'jobs;
            }
            line.clear();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => break 'jobs,
                Ok(_) => match line.as_bytes().first() {
                    Some(b'y' | b'Y') => {
                        confirmed.push(id);
                        break;
                    }
                    Some(b'n' | b'N') => break,
                    _ => {}
                },
            }
        }
    }
    confirmed
}

/// Sends the request and reports each job's outcome.
pub fn execute(control: &mut dyn JobControl, r: &Request, out: &mut Output<'_>) -> i32 {
    if r.verbose > 0 {
        for job in &r.jobs {
            out.error_line(&verbose_line(r, &job.to_string()));
        }
    }
    let results = match act_with_retries(control, r, out) {
        Ok(results) => results,
        // A whole-call refusal concerns every job named.
        Err(e) if !r.jobs.is_empty() && !is_transport(&e) => {
            r.jobs.iter().map(|j| named_result(j, e.code)).collect()
        }
        Err(e) if !r.jobs.is_empty() => {
            for job in &r.jobs {
                print_error(out, PROG, format!("Kill job error on job id {job}: {e}"));
            }
            return 1;
        }
        // Filters alone that select no job: Slurm finds nothing to do.
        Err(e) if e.code == ErrorCode::InvalidJobId => return 0,
        Err(e) => {
            print_error(out, PROG, format!("slurm_load_jobs error: {e}"));
            return 1;
        }
    };
    report(r, &results, out)
}

/// How many times a job that cannot take the request now (pending for a
/// signal, still being set up) is asked again, as Slurm's scancel does.
const TRANSITION_RETRIES: u32 = 10;

/// The wait before retry `attempt` (0-based): Slurm's scancel waits 5 s,
/// then a second longer each time, 95 s in all.
fn retry_wait(attempt: u32) -> std::time::Duration {
    std::time::Duration::from_secs(5 + u64::from(attempt))
}

/// Sends the request; the jobs the controller answers "can not be altered
/// now" for are sent again, alone, after [`retry_wait`], up to
/// [`TRANSITION_RETRIES`] times (`-v` says so each time). A signal for a
/// pending job thus reaches it if it starts meanwhile. Gives each job's
/// last answer.
fn act_with_retries(
    control: &mut dyn JobControl,
    r: &Request,
    out: &mut Output<'_>,
) -> Result<Vec<v1::JobActionResult>, RpcError> {
    let mut results = control.act(r)?.results;
    for attempt in 0..TRANSITION_RETRIES {
        let busy: Vec<JobRef> = results
            .iter()
            .filter(|res| is_transitional(res))
            .map(result_ref)
            .collect();
        if busy.is_empty() {
            break;
        }
        if r.verbose > 0 {
            for _ in &busy {
                out.error_line(&format!("{PROG}: Job is in transitional state, retrying"));
            }
        }
        let _ = out.flush();
        control.pause(retry_wait(attempt));
        let mut again = r.clone();
        again.filter = selection(&busy);
        again.jobs = busy;
        let answers = match control.act(&again) {
            Ok(reply) => reply.results,
            // The whole call failed this time: keep the last answers.
            Err(_) => continue,
        };
        for answer in answers {
            match results.iter_mut().find(|res| {
                res.job_id == answer.job_id && res.array_task_id == answer.array_task_id
            }) {
                Some(slot) => *slot = answer,
                None => results.push(answer),
            }
        }
    }
    Ok(results)
}

fn is_transitional(result: &v1::JobActionResult) -> bool {
    ErrorCode::from_number_or_unspecified(result.error_code) == ErrorCode::TransitionStateNoUpdate
}

/// The command-line form of the record a result is about.
fn result_ref(result: &v1::JobActionResult) -> JobRef {
    match result.array_task_id {
        Some(task) => JobRef::ArrayTasks {
            job: result.job_id,
            tasks: task.to_string(),
        },
        None => JobRef::Job(result.job_id),
    }
}

fn is_transport(e: &RpcError) -> bool {
    matches!(
        e.code,
        ErrorCode::ControllerConnect
            | ErrorCode::ControllerSend
            | ErrorCode::ControllerReceive
            | ErrorCode::CommunicationConnection
            | ErrorCode::SocketTimeout
    )
}

fn named_result(job: &JobRef, code: ErrorCode) -> v1::JobActionResult {
    let (job_id, array_task_id) = match job {
        JobRef::Job(id) => (*id, None),
        JobRef::ArrayTasks { job, tasks } => (*job, tasks.parse::<u32>().ok()),
    };
    v1::JobActionResult {
        job_id,
        array_task_id,
        error_code: code.number(),
        error_detail: String::new(),
    }
}

fn verbose_line(r: &Request, job: &str) -> String {
    match r.signal {
        Some(sig) => format!("{PROG}: Signal {sig} to job {job}"),
        None => format!("{PROG}: Terminating job {job}"),
    }
}

/// Prints the per-job outcomes; the exit status is 1 when a job failed for
/// a reason other than being gone or already finished.
pub fn report(r: &Request, results: &[v1::JobActionResult], out: &mut Output<'_>) -> i32 {
    let mut code = 0;
    if results.is_empty() && r.jobs.is_empty() && r.verbose > 0 {
        out.error_line(&no_match_line(r));
    }
    // A refusal about a whole job named only through an array form
    // (`12_*`, or `12_3` when 12 is no array) names it as typed, as Slurm
    // reports each id it was given; each such form is used once.
    let mut typed: Vec<Option<&JobRef>> = r
        .jobs
        .iter()
        .map(|j| (!matches!(j, JobRef::Job(_))).then_some(j))
        .collect();
    for result in results {
        let mut id = match result.array_task_id {
            Some(task) => format!("{}_{task}", result.job_id),
            None => result.job_id.to_string(),
        };
        if result.array_task_id.is_none()
            && result.error_code != 0
            && !r.jobs.contains(&JobRef::Job(result.job_id))
        {
            if let Some(slot) = typed
                .iter_mut()
                .find(|j| j.is_some_and(|j| j.job_id() == result.job_id))
            {
                if let Some(j) = slot.take() {
                    id = j.to_string();
                }
            }
        }
        // Records of a job or array named on the command line were
        // announced with it (`scancel -v 15_[0-3]` is one line).
        let named = r.jobs.iter().any(|j| j.job_id() == result.job_id);
        if r.verbose > 0 && !named {
            out.error_line(&verbose_line(r, &id));
        }
        if result.error_code == 0 {
            continue;
        }
        let err = ErrorCode::from_number_or_unspecified(result.error_code);
        let quiet_kind = matches!(err, ErrorCode::InvalidJobId | ErrorCode::AlreadyDone);
        if err == ErrorCode::TransitionStateNoUpdate {
            // A job that cannot take the signal now (pending): Slurm's
            // scancel gives up after its retries with the error number
            // as its status, which the shell sees as 2020 & 0xff = 228.
            code = (result.error_code & 0xff).max(1);
        } else if !quiet_kind && code == 0 {
            code = 1;
        }
        if !r.quiet && (r.verbose > 0 || !quiet_kind) {
            print_error(out, PROG, format!("Kill job error on job id {id}: {err}"));
        }
    }
    code
}

/// `-v`'s line when the filters match no job: each filter as given,
/// followed by a space.
fn no_match_line(r: &Request) -> String {
    let mut line =
        String::from("scancel: error: No active jobs match ALL job filters, including: ");
    for (key, value) in &r.filter_words {
        line.push_str(key);
        line.push('=');
        line.push_str(value);
        line.push(' ');
    }
    line
}

const USAGE: &str = "\
Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]
               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]
               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]
               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]
               [job_id[_array_id][.step_id]]
";

const HELP: &str = include_str!("help/scancel.txt");

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn uid_of(name: &str) -> Option<u32> {
        match name {
            "root" => Some(0),
            "alice" => Some(1000),
            _ => name.parse().ok(),
        }
    }

    fn req(s: &str) -> Request {
        match parse(&args(s), &uid_of, 42).unwrap() {
            Invocation::Cancel(r) => *r,
            other => panic!("{other:?}"),
        }
    }

    fn err(s: &str) -> String {
        parse(&args(s), &uid_of, 42).unwrap_err().to_string()
    }

    #[test]
    fn job_ids_and_arrays() {
        let r = req("12 13,14 15_3 16_[1-3]");
        assert_eq!(r.filter.job_ids, vec![12, 13, 14]);
        assert_eq!(r.filter.array_tasks.len(), 2);
        assert_eq!(r.filter.array_tasks[0].array_job_id, 15);
        assert_eq!(r.filter.array_tasks[0].task_spec, "3");
        assert_eq!(r.filter.array_tasks[1].task_spec, "[1-3]");
        assert_eq!(r.jobs[3].to_string(), "15_3");
        assert_eq!(parse_job_ref("0"), None);
        assert_eq!(parse_job_ref("99999999999"), None);
        assert_eq!(parse_job_ref("12_"), None);
        assert_eq!(parse_job_ref("_3"), None);
        assert_eq!(parse_job_ref("12_[x]"), None);
        assert_eq!(parse_job_ref("١٢"), None);
    }

    #[test]
    fn filters_and_signals() {
        let r = req("-u root -u alice -t PD -t running -n a -p debug -s USR1 -b -vv --me");
        // One user, the last named (`--me` here), as in Slurm.
        assert_eq!(r.filter.user_ids, vec![42]);
        assert_eq!(r.filter.states, vec![v1::JobState::Running as i32]);
        assert_eq!(r.filter.names, vec!["a"]);
        assert_eq!(r.filter.partitions, vec!["debug"]);
        assert_eq!(r.signal, Some(10));
        assert!(r.batch);
        assert_eq!(r.verbose, 2);
        assert_eq!(req("--signal=9 5").signal, Some(9));
        assert_eq!(req("--name x").filter.names, vec!["x"]);
    }

    #[test]
    fn refusals_with_slurm_texts() {
        assert_eq!(err("abc"), "Invalid job id abc");
        assert_eq!(err("12,x"), "Invalid job id x");
        assert_eq!(err(""), "No job identification provided");
        assert_eq!(err("-u nobody-here"), "Invalid user name: nobody-here");
        assert_eq!(err("-s FOO 1"), "Unknown job signal: FOO");
        assert_eq!(err("-u root,alice"), "Invalid user name: root,alice");
        assert!(err("-t done").starts_with("Invalid job state specified: done"));
        assert_eq!(err("--bogus"), "unrecognized option '--bogus'");
        assert_eq!(
            parse(&args("--vers"), &uid_of, 0).unwrap(),
            Invocation::Version
        );
    }

    /// Runs scancel up to the point it would load the configuration.
    fn run_words(words: &[&str]) -> (String, i32) {
        let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        let code = match prepare(&words, PROG, &|_| None, &mut out) {
            Err(code) | Ok(Prepared::Done(code)) => code,
            Ok(Prepared::Send(..)) => -1,
        };
        let _ = out.flush();
        assert!(o.is_empty());
        (String::from_utf8(e).unwrap(), code)
    }

    #[test]
    fn signal_and_state_refusals_have_no_prefix() {
        for (words, text) in [
            (&["-s", "foo"][..], "Unknown job signal: foo\n"),
            (&["--signal=BOGUS", "5"][..], "Unknown job signal: BOGUS\n"),
            (&["-s", "", "5"][..], "Unknown job signal: \n"),
            (
                &["--state=foo"][..],
                "Invalid job state specified: foo\n\
                 Valid job states are PENDING, RUNNING, and SUSPENDED\n",
            ),
            (
                &["-t", "pd,r"][..],
                "Invalid job state specified: pd,r\n\
                 Valid job states are PENDING, RUNNING, and SUSPENDED\n",
            ),
        ] {
            assert_eq!(run_words(words), (text.to_owned(), 1), "{words:?}");
        }
    }

    #[test]
    fn signals_read_as_scancel_reads_them() {
        for (text, sig) in [
            ("9", 9),
            ("+9", 9),
            (" 9", 9),
            ("9 ", 9),
            ("SIGKILL", 9),
            ("sigKill", 9),
            ("SIGKILL ", 9),
            ("usr1", 10),
            ("XCPU", 24),
            ("65", 65),
            ("-9", 65_527),
        ] {
            assert_eq!(parse_scancel_signal(text), Some(sig), "{text:?}");
        }
        // Every name of scancel's list is one the shared table knows.
        for name in SIGNAL_NAMES {
            assert!(parse_scancel_signal(name).is_some(), "{name}");
        }
        for bad in [
            "0",
            "00",
            "-0",
            "",
            " ",
            "9abc",
            "4294967296",
            "SIG",
            "0x9",
            "kil",
            "KILL9",
            "SIGSIGKILL",
            "STKFLT",
            "WINCH",
            "SEGV",
            "PWR",
            "RTMIN",
            "é",
        ] {
            assert_eq!(parse_scancel_signal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn finished_states_are_valid_and_select_nothing() {
        let r = req("-t cd");
        assert!(r.matches_nothing && r.selects_nothing());
        assert!(!req("-t cd -t pd").matches_nothing);
        for bad in ["all", "", " pd", "pending "] {
            assert!(parse(&[format!("--state={bad}")], &uid_of, 0).is_err());
        }
    }

    #[test]
    fn bad_array_ranges_are_named() {
        assert_eq!(
            run_words(&["1_[a-b]"]),
            (
                "scancel: error: _parse_single_range: Invalid range: `a-b'\n\
                 scancel: error: Invalid job id 1_[a-b]\n"
                    .to_owned(),
                1
            )
        );
        assert_eq!(
            run_words(&["1.x"]),
            ("scancel: error: Invalid job id 1.x\n".to_owned(), 1)
        );
    }

    #[test]
    fn users_must_exist() {
        assert_eq!(
            run_words(&["-u", ""]),
            ("scancel: error: Invalid user name: \n".to_owned(), 1)
        );
        assert_eq!(
            run_words(&["-u", "4294967294"]),
            (
                "scancel: error: Invalid user name: 4294967294\n".to_owned(),
                1
            )
        );
    }

    #[test]
    fn usage_is_the_2205_text() {
        assert!(USAGE.contains("[-w hosts...] [--wckey=wckey]\n"));
        assert!(USAGE.ends_with("               [job_id[_array_id][.step_id]]\n"));
    }

    #[test]
    fn filters_that_select_nothing_succeed_quietly() {
        struct NoJobs;
        impl JobControl for NoJobs {
            fn jobs(&mut self, _: &v1::JobFilter) -> Result<Vec<v1::JobInfo>, RpcError> {
                Err(RpcError::new(ErrorCode::InvalidJobId, ""))
            }
            fn act(&mut self, _: &Request) -> Result<v1::JobActionReply, RpcError> {
                Err(RpcError::new(ErrorCode::InvalidJobId, ""))
            }
            fn pause(&mut self, _: std::time::Duration) {
                panic!("nothing to retry");
            }
        }
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        assert_eq!(execute(&mut NoJobs, &req("-A acct"), &mut out), 0);
        let _ = out.flush();
        assert!(e.is_empty());
        // --interactive names the missing job as Slurm does.
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let code = execute_io(&mut NoJobs, &req("-i 5"), &mut &b""[..], &mut o, &mut e);
        assert_eq!(code, 1);
        assert_eq!(
            String::from_utf8(e).unwrap(),
            "scancel: error: Kill job error on job id 5: Invalid job id specified\n"
        );
    }

    fn run_report(r: &Request, results: &[v1::JobActionResult]) -> (String, i32) {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        let code = report(r, results, &mut out);
        assert!(o.is_empty());
        (String::from_utf8(e).unwrap(), code)
    }

    /// `-v` announces what was named once: the tasks an array selection
    /// or an array id reaches are not listed again, as in Slurm.
    #[test]
    fn verbose_names_an_array_selection_once() {
        let task = |t: u32| v1::JobActionResult {
            job_id: 13,
            array_task_id: Some(t),
            ..Default::default()
        };
        let tasks = [task(0), task(1), task(2)];
        assert_eq!(run_report(&req("-v 13_[0-2]"), &tasks), (String::new(), 0));
        assert_eq!(run_report(&req("-v 13"), &tasks), (String::new(), 0));
        assert_eq!(
            run_report(&req("-v 14"), &tasks[..1]),
            ("scancel: Terminating job 13_0\n".into(), 0)
        );
    }

    #[test]
    fn unknown_jobs_are_silent_unless_verbose() {
        let gone = [named_result(&JobRef::Job(999999), ErrorCode::InvalidJobId)];
        assert_eq!(run_report(&req("999999"), &gone), (String::new(), 0));
        assert_eq!(
            run_report(&req("-v 999999"), &gone),
            (
                "scancel: error: Kill job error on job id 999999: Invalid job id specified\n"
                    .into(),
                0
            )
        );
        let denied = [named_result(&JobRef::Job(5), ErrorCode::AccessDenied)];
        assert_eq!(
            run_report(&req("5"), &denied),
            (
                "scancel: error: Kill job error on job id 5: Access/permission denied\n".into(),
                1
            )
        );
        let ok = [v1::JobActionResult {
            job_id: 7,
            ..Default::default()
        }];
        assert_eq!(
            run_report(&req("-v -u root"), &ok),
            ("scancel: Terminating job 7\n".into(), 0)
        );
        // Filters that match nothing: said with -v only, as Slurm 22.05
        // says it (last value of each, keys in its order).
        assert_eq!(
            run_report(&req("-v -t pd -n a,b -u root -p x -p y -q a,b -A c,d"), &[]),
            (
                "scancel: error: No active jobs match ALL job filters, including: \
                 account=c,d job_name=a,b partition=y qos=a,b state=PENDING user_name=root \n"
                    .into(),
                0
            )
        );
        assert_eq!(
            run_report(&req("-v -t r -u 0 --me -w vm --wckey w1 --wckey w2"), &[]),
            (
                "scancel: error: No active jobs match ALL job filters, including: \
                 nodelist=vm state=RUNNING user_name=42 wckey=w2 \n"
                    .into(),
                0
            )
        );
        assert_eq!(run_report(&req("-p y"), &[]), (String::new(), 0));
        // A signal a pending job cannot take: Slurm's status, 2020 & 0xff.
        let busy = [v1::JobActionResult {
            job_id: 8,
            error_code: 2020,
            ..Default::default()
        }];
        assert_eq!(
            run_report(&req("-s USR1 8"), &busy),
            (
                "scancel: error: Kill job error on job id 8: \
                 Job can not be altered now, try again later\n"
                    .into(),
                228
            )
        );
        // The last of a repeated filter is the one sent.
        assert_eq!(req("-p x -p y").filter.partitions, vec!["y"]);
    }

    /// A controller that lists `jobs` and records what it is asked to do.
    struct FakeControl {
        jobs: Result<Vec<v1::JobInfo>, RpcError>,
        acted: Vec<Request>,
    }

    impl JobControl for FakeControl {
        fn jobs(&mut self, _: &v1::JobFilter) -> Result<Vec<v1::JobInfo>, RpcError> {
            self.jobs.clone()
        }

        fn act(&mut self, r: &Request) -> Result<v1::JobActionReply, RpcError> {
            self.acted.push(r.clone());
            let mut results: Vec<v1::JobActionResult> = r
                .filter
                .job_ids
                .iter()
                .map(|id| v1::JobActionResult {
                    job_id: *id,
                    ..Default::default()
                })
                .collect();
            results.extend(r.filter.array_tasks.iter().map(|t| v1::JobActionResult {
                job_id: t.array_job_id,
                array_task_id: t.task_spec.parse().ok(),
                ..Default::default()
            }));
            Ok(v1::JobActionReply { results })
        }

        fn pause(&mut self, _: std::time::Duration) {
            panic!("nothing to retry");
        }
    }

    fn job(id: u32, name: &str, state: v1::JobState) -> v1::JobInfo {
        v1::JobInfo {
            job_id: id,
            name: name.into(),
            partition: "debug".into(),
            state: state as i32,
            ..Default::default()
        }
    }

    fn queue() -> Vec<v1::JobInfo> {
        let mut task = job(16, "arr", v1::JobState::Running);
        task.array_job_id = Some(15);
        task.array_task_id = Some(2);
        vec![
            job(12, "foo", v1::JobState::Running),
            job(13, "bar", v1::JobState::Pending),
            job(14, "done", v1::JobState::Completed),
            task,
        ]
    }

    fn interact(
        args: &str,
        jobs: Result<Vec<v1::JobInfo>, RpcError>,
        answers: &str,
    ) -> (String, String, i32, Vec<Request>) {
        let r = req(args);
        let mut control = FakeControl {
            jobs,
            acted: Vec::new(),
        };
        let mut input = answers.as_bytes();
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let code = execute_io(&mut control, &r, &mut input, &mut o, &mut e);
        (
            String::from_utf8(o).unwrap(),
            String::from_utf8(e).unwrap(),
            code,
            control.acted,
        )
    }

    #[test]
    fn interactive_asks_about_each_job() {
        let (out, err, code, acted) = interact("-i -v -p debug", Ok(queue()), "n\ny\nmaybe\nY\n");
        // Pending jobs are asked about first; finished ones never; an
        // answer that is neither yes nor no asks again.
        assert_eq!(
            out,
            "Cancel job_id=13 name=bar partition=debug [y/n]? \
             Cancel job_id=12 name=foo partition=debug [y/n]? \
             Cancel job_id=15_2 name=arr partition=debug [y/n]? \
             Cancel job_id=15_2 name=arr partition=debug [y/n]? "
        );
        assert_eq!(code, 0);
        assert_eq!(acted.len(), 1);
        assert_eq!(acted[0].filter.job_ids, vec![12]);
        assert_eq!(acted[0].filter.array_tasks.len(), 1);
        assert_eq!(acted[0].filter.array_tasks[0].array_job_id, 15);
        assert_eq!(acted[0].filter.array_tasks[0].task_spec, "2");
        assert!(acted[0].filter.partitions.is_empty());
        assert_eq!(
            err,
            "scancel: Terminating job 12\nscancel: Terminating job 15_2\n"
        );
    }

    #[test]
    fn interactive_sends_nothing_without_a_yes() {
        let (out, err, code, acted) = interact("-i 12", Ok(queue()), "");
        assert_eq!(out, "Cancel job_id=12 name=foo partition=debug [y/n]? ");
        assert_eq!((err.as_str(), code), ("", 0));
        assert!(acted.is_empty());
        let (_, _, code, acted) = interact("--interactive 12", Ok(queue()), "no\n");
        assert_eq!(code, 0);
        assert!(acted.is_empty());
    }

    #[test]
    fn interactive_reports_gone_jobs_and_failures() {
        let (out, err, code, acted) = interact("-i 999999 14", Ok(queue()), "");
        assert_eq!(out, "");
        assert_eq!(
            err,
            "scancel: error: Kill job error on job id 999999: Invalid job id specified\n\
             scancel: error: Kill job error on job id 14: Invalid job id specified\n"
        );
        assert_eq!(code, 1);
        assert!(acted.is_empty());
        let (_, err, code, _) = interact("-i -Q 999999", Ok(Vec::new()), "");
        assert_eq!((err.as_str(), code), ("", 1));
        let down = Err(RpcError::new(ErrorCode::ControllerConnect, ""));
        let (_, err, code, _) = interact("-i 12", down, "y\n");
        assert_eq!(
            err,
            format!(
                "slurm_load_jobs error: {}\n",
                ErrorCode::ControllerConnect.message()
            )
        );
        assert_eq!(code, 1);
    }

    #[test]
    fn without_interactive_the_request_goes_as_given() {
        let (out, _, code, acted) = interact("-u alice 12", Ok(queue()), "y\n");
        assert_eq!((out.as_str(), code), ("", 0));
        assert_eq!(acted.len(), 1);
        assert_eq!(acted[0].filter.user_ids, vec![1000]);
        assert_eq!(acted[0].filter.job_ids, vec![12]);
    }

    #[test]
    fn help_and_version_act_when_read() {
        assert_eq!(
            parse(&args("-V --bogus"), &uid_of, 0).unwrap(),
            Invocation::Version
        );
        assert_eq!(
            parse(&args("--help -z"), &uid_of, 0).unwrap(),
            Invocation::Help
        );
        assert_eq!(err("-z --help"), "invalid option -- 'z'");
    }

    /// With a signal, `--batch` or a filter, named jobs that are unknown or
    /// finished are reported as Slurm 22.05 reports them (without `-v`) and
    /// make the status 1; the live ones are still sent, filters kept.
    #[test]
    fn named_jobs_with_signal_batch_or_filter_are_checked_first() {
        let invalid = |ids: &[&str]| -> String {
            ids.iter()
                .map(|id| {
                    format!(
                        "scancel: error: Kill job error on job id {id}: Invalid job id specified\n"
                    )
                })
                .collect()
        };
        for args in [
            "-s USR1 999999",
            "-b 999999",
            "-t PENDING 999999",
            "-p debug 14",
            "-s KILL 14",
            "-s USR1 15_7",
        ] {
            let (out, err, code, acted) = interact(args, Ok(queue()), "");
            let id = args.rsplit(' ').next().unwrap();
            assert_eq!((out.as_str(), err, code), ("", invalid(&[id]), 1), "{args}");
            assert!(acted.is_empty(), "{args}: {acted:?}");
        }
        // The live ones go, with the filters; the gone ones are named.
        let (_, err, code, acted) = interact("-s USR1 -n foo 12 999999 14", Ok(queue()), "");
        assert_eq!((err, code), (invalid(&["999999", "14"]), 1));
        assert_eq!(acted.len(), 1);
        assert_eq!(acted[0].filter.job_ids, vec![12]);
        assert_eq!(acted[0].filter.names, vec!["foo".to_string()]);
        assert_eq!(acted[0].signal, Some(10));
        // -Q keeps the status and drops the lines; none of the jobs
        // existing is not a load error.
        let (_, err, code, _) = interact(
            "-Q -s USR1 999999",
            Err(RpcError::new(ErrorCode::InvalidJobId, "")),
            "",
        );
        assert_eq!((err.as_str(), code), ("", 1));
        // A plain cancel is sent at once, and a gone job stays quiet.
        let (_, err, code, acted) = interact("999999", Ok(queue()), "");
        assert_eq!((err.as_str(), code, acted.len()), ("", 0, 1));
        // Live jobs pass the check silently.
        let (_, err, code, acted) = interact("-s USR1 13 15_2", Ok(queue()), "");
        assert_eq!((err.as_str(), code, acted.len()), ("", 0, 1));
    }

    /// A controller that answers "can not be altered now" for job 8 the
    /// first `busy` times, and records each request and each pause.
    struct Transitional {
        busy: u32,
        sent: Vec<v1::JobFilter>,
        pauses: Vec<u64>,
    }

    impl JobControl for Transitional {
        fn jobs(&mut self, _: &v1::JobFilter) -> Result<Vec<v1::JobInfo>, RpcError> {
            Ok(vec![
                job(8, "p", v1::JobState::Pending),
                job(9, "r", v1::JobState::Running),
            ])
        }

        fn act(&mut self, r: &Request) -> Result<v1::JobActionReply, RpcError> {
            self.sent.push(r.filter.clone());
            let results = r
                .filter
                .job_ids
                .iter()
                .map(|id| {
                    let busy = *id == 8 && self.busy > 0;
                    v1::JobActionResult {
                        job_id: *id,
                        error_code: if busy { 2020 } else { 0 },
                        ..Default::default()
                    }
                })
                .collect();
            self.busy = self.busy.saturating_sub(1);
            Ok(v1::JobActionReply { results })
        }

        fn pause(&mut self, wait: std::time::Duration) {
            self.pauses.push(wait.as_secs());
        }
    }

    fn transitional(args: &str, busy: u32) -> (String, i32, Transitional) {
        let mut control = Transitional {
            busy,
            sent: Vec::new(),
            pauses: Vec::new(),
        };
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let code = execute_io(&mut control, &req(args), &mut &b""[..], &mut o, &mut e);
        assert!(o.is_empty());
        (String::from_utf8(e).unwrap(), code, control)
    }

    /// A signal for a pending job is asked again, only for that job,
    /// after 5 s, then 6 s, ... as Slurm's scancel does; it goes through
    /// once the job can take it.
    #[test]
    fn a_job_in_transition_is_asked_again() {
        let (err, code, control) = transitional("-v -s USR1 8 9", 2);
        assert_eq!(code, 0);
        assert_eq!(control.pauses, vec![5, 6]);
        assert_eq!(control.sent.len(), 3);
        assert_eq!(control.sent[0].job_ids, vec![8, 9]);
        assert_eq!(control.sent[1].job_ids, vec![8]);
        assert_eq!(control.sent[2].job_ids, vec![8]);
        assert_eq!(
            err,
            "scancel: Signal 10 to job 8\n\
             scancel: Signal 10 to job 9\n\
             scancel: Job is in transitional state, retrying\n\
             scancel: Job is in transitional state, retrying\n"
        );
    }

    /// Ten retries, 95 s in all, then Slurm's error and status 228; the
    /// retry lines are for `-v` only.
    #[test]
    fn a_job_in_transition_gives_up_after_ten_retries() {
        let (err, code, control) = transitional("-s USR1 8", u32::MAX);
        assert_eq!(code, 228);
        assert_eq!(control.pauses, (5..=14).collect::<Vec<u64>>());
        assert_eq!(control.pauses.iter().sum::<u64>(), 95);
        assert_eq!(control.sent.len(), 11);
        assert_eq!(
            err,
            "scancel: error: Kill job error on job id 8: \
             Job can not be altered now, try again later\n"
        );
        let (err, code, _) = transitional("-Q -s USR1 8", u32::MAX);
        assert_eq!((err.as_str(), code), ("", 228));
    }

    /// `-Q` and `-v` move one level, as in Slurm: the last word counts.
    #[test]
    fn quiet_and_verbose_share_one_level() {
        let level = |a: &str| {
            let r = req(a);
            (r.quiet, r.verbose)
        };
        assert_eq!(level("-Q 5"), (true, 0));
        assert_eq!(level("-v -Q 5"), (true, 0));
        assert_eq!(level("-Q -v 5"), (false, 0));
        assert_eq!(level("-v -Q -v 5"), (false, 0));
        assert_eq!(level("-Q -v -v 5"), (false, 1));
        assert_eq!(level("-vv 5"), (false, 2));
        let gone = [named_result(&JobRef::Job(5), ErrorCode::InvalidJobId)];
        assert_eq!(run_report(&req("-v -Q 5"), &gone), (String::new(), 0));
        let denied = [named_result(&JobRef::Job(5), ErrorCode::AccessDenied)];
        assert_eq!(run_report(&req("-Q 5"), &denied), (String::new(), 1));
    }

    /// Each filter takes its whole value as one name, as Slurm 22.05 does:
    /// `-p a,b` is the partition called `a,b`; an empty value matches no
    /// job.
    #[test]
    fn filter_values_are_single_names() {
        let r = req("-p a,b -A c,d -n e,f -q g,h -R i,j --wckey k,l");
        assert_eq!(r.filter.partitions, vec!["a,b"]);
        assert_eq!(r.filter.accounts, vec!["c,d"]);
        assert_eq!(r.filter.names, vec!["e,f"]);
        assert_eq!(r.filter.qos, vec!["g,h"]);
        assert_eq!(r.filter.reservations, vec!["i,j"]);
        assert_eq!(r.filter.wckeys, vec!["k,l"]);
        let empty = parse(&["-w".to_owned(), String::new()], &uid_of, 0).unwrap();
        let Invocation::Cancel(r) = empty else {
            panic!("{empty:?}")
        };
        assert!(r.has_filter() && r.selects_nothing());
        assert!(!req("-w n1").selects_nothing());
        // A finished state is named by its long name.
        assert_eq!(req("-t cd").filter_words["state"], "COMPLETED");
        assert_eq!(req("-t oom").filter_words["state"], "OUT_OF_MEMORY");
        assert_eq!(
            no_match_line(&req("-v -t cd")),
            "scancel: error: No active jobs match ALL job filters, including: state=COMPLETED "
        );
    }

    #[test]
    fn steps_and_whole_arrays_are_read_as_slurm_reads_them() {
        let step = |job: JobRef, step: u32| Some(Target::Step(StepRef { job, step }));
        assert_eq!(parse_target("12.0"), step(JobRef::Job(12), 0));
        assert_eq!(parse_target("12."), step(JobRef::Job(12), 0));
        assert_eq!(parse_target("12.+3"), step(JobRef::Job(12), 3));
        assert_eq!(parse_target("12.4294967296"), step(JobRef::Job(12), 0));
        assert_eq!(
            parse_target("12.4294967295"),
            step(JobRef::Job(12), u32::MAX)
        );
        let all = JobRef::ArrayTasks {
            job: 12,
            tasks: ALL_TASKS.into(),
        };
        assert_eq!(parse_target("12_*"), Some(Target::Job(all.clone())));
        assert_eq!(parse_target("12_*.1"), step(all.clone(), 1));
        assert_eq!(all.to_string(), "12_*");
        for bad in [
            "12.batch",
            "12.extern",
            "12.-1",
            "12.0.1",
            "12.x",
            ".0",
            "12_**",
            "*",
        ] {
            assert_eq!(parse_target(bad), None, "{bad}");
        }
        // 12_* goes as the job id, named as typed in a refusal.
        let r = req("-v 12_*");
        assert_eq!(r.filter.job_ids, vec![12]);
        assert!(r.filter.array_tasks.is_empty());
        let gone = [v1::JobActionResult {
            job_id: 12,
            error_code: ErrorCode::InvalidJobId.number(),
            ..Default::default()
        }];
        assert_eq!(
            run_report(&r, &gone),
            (
                "scancel: error: Kill job error on job id 12_*: Invalid job id specified\n".into(),
                0
            )
        );
        // Tasks of a job that is no array: each named as typed.
        let r = req("-v 12_1,12_3");
        let both = [gone[0].clone(), gone[0].clone()];
        assert_eq!(
            run_report(&r, &both).0,
            "scancel: error: Kill job error on job id 12_1: Invalid job id specified\n\
             scancel: error: Kill job error on job id 12_3: Invalid job id specified\n"
        );
        // Only steps: the filters never select jobs of their own.
        let r = req("-u root 12.0");
        assert!(r.jobs.is_empty() && r.filter.job_ids.is_empty());
        assert_eq!(r.steps.len(), 1);
    }

    /// The controller keeps no numbered steps: each named step is answered
    /// as Slurm 22.05 answers a step that does not exist.
    #[test]
    fn steps_are_answered_as_missing_steps() {
        let step_error = |id: &str| {
            format!(
                "scancel: error: Kill job error on job step id {id}: Invalid job id specified\n"
            )
        };
        // Running job: the cancel is refused with the error's number.
        let (out, err, code, acted) = interact("-v 12.5", Ok(queue()), "");
        assert_eq!(out, "");
        assert_eq!(
            err,
            format!("scancel: Terminating step 12.5\n{}", step_error("12"))
        );
        assert_eq!(code, 225);
        assert!(acted.is_empty());
        let (_, err, _, _) = interact("-v 12.0,12.1", Ok(queue()), "");
        assert_eq!(
            err,
            format!(
                "scancel: Terminating step 12.0\nscancel: Terminating step 12.1\n{}{}",
                step_error("12"),
                step_error("12")
            )
        );
        // -b is a cancel too.
        assert_eq!(interact("-b 12.0", Ok(queue()), "").2, 225);
        // A signal is taken without a word.
        let (_, err, code, acted) = interact("-s KILL 12.0", Ok(queue()), "");
        assert_eq!((err.as_str(), code, acted.len()), ("", 0, 0));
        let (_, err, _, _) = interact("-v -s USR1 12.0", Ok(queue()), "");
        assert_eq!(err, "scancel: Signal 10 to step 12.0\n");
        // Pending (no steps yet): passed over.
        for args in ["-v 13.0", "-v -s USR1 13.0", "-t PD 13.0"] {
            let (_, err, code, acted) = interact(args, Ok(queue()), "");
            assert_eq!((err.as_str(), code), ("", 0), "{args}");
            assert!(acted.is_empty(), "{args}");
        }
        // Unknown, finished, or named as ID_*: an invalid job id, status 1.
        let (_, err, code, _) = interact("999999.0 14.0 12_*.0 15_7.1", Ok(queue()), "");
        assert_eq!(
            err,
            [
                step_error("999999.0"),
                step_error("14.0"),
                step_error("12_*.0"),
                step_error("15_7.1"),
            ]
            .concat()
        );
        assert_eq!(code, 1);
        let (_, err, code, _) = interact("-Q 999999.0 12.0", Ok(queue()), "");
        assert_eq!((err, code), (step_error("12"), 225));
        // The job named as well: its step is left to the job's cancel.
        let (_, err, code, acted) = interact("-v 12 12.0", Ok(queue()), "");
        assert_eq!((err.as_str(), code), ("scancel: Terminating job 12\n", 0));
        assert_eq!(acted.len(), 1);
        // Jobs and steps that do not exist are reported first, in the
        // order given, and those jobs are not sent anything (Slurm 22.05).
        let (_, err, code, acted) = interact("999999 12.0 888888.0", Ok(queue()), "");
        assert_eq!(
            err,
            [
                "scancel: error: Kill job error on job id 999999: Invalid job id specified\n"
                    .to_string(),
                step_error("888888.0"),
                step_error("12"),
            ]
            .concat()
        );
        assert_eq!(code, 225);
        assert!(acted.is_empty());
        // Steps and jobs together: the job goes, the step is answered.
        let (_, err, code, acted) = interact("13 13.0 12.1", Ok(queue()), "");
        assert_eq!((err, code), (step_error("12"), 225));
        assert_eq!(acted.len(), 1);
        assert_eq!(acted[0].filter.job_ids, vec![13]);
    }

    /// `SCANCEL_*` variables stand for their options; the command line
    /// overrides them; bad switch values are warned about and ignored.
    #[test]
    fn environment_variables_stand_for_options() {
        let env_parse = |args: &str, vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            let env =
                move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            parse_with_env(&args_of(args), &env, &uid_of, 42)
        };
        let request = |args: &str, vars: &[(&str, &str)]| match env_parse(args, vars) {
            Ok((Invocation::Cancel(r), warnings)) => (*r, warnings),
            other => panic!("{other:?}"),
        };
        let (r, w) = request(
            "",
            &[
                ("SCANCEL_BATCH", "true"),
                ("SCANCEL_FULL", "T"),
                ("SCANCEL_HURRY", "1"),
                ("SCANCEL_CTLD", "anything"),
                ("SCANCEL_INTERACTIVE", "t"),
                ("SCANCEL_VERBOSE", "TRUE"),
                ("SCANCEL_ACCOUNT", "a"),
                ("SCANCEL_NAME", "n"),
                ("SCANCEL_PARTITION", "p"),
                ("SCANCEL_QOS", "q"),
                ("SCANCEL_STATE", "running"),
                ("SCANCEL_USER", "alice"),
                ("SCANCEL_WCKEY", "w"),
            ],
        );
        assert!(w.is_empty());
        assert!(r.batch && r.full && r.hurry && r.interactive);
        assert_eq!(r.verbose, 1);
        assert_eq!(r.filter.accounts, vec!["a"]);
        assert_eq!(r.filter.names, vec!["n"]);
        assert_eq!(r.filter.partitions, vec!["p"]);
        assert_eq!(r.filter.qos, vec!["q"]);
        assert_eq!(r.filter.states, vec![v1::JobState::Running as i32]);
        assert_eq!(r.filter.user_ids, vec![1000]);
        assert_eq!(r.filter.wckeys, vec!["w"]);
        // The command line wins; -v adds to SCANCEL_VERBOSE.
        let (r, _) = request(
            "-u root -p x -v",
            &[
                ("SCANCEL_USER", "alice"),
                ("SCANCEL_PARTITION", "p"),
                ("SCANCEL_VERBOSE", "true"),
            ],
        );
        assert_eq!((r.filter.user_ids.as_slice(), r.verbose), (&[0][..], 2));
        assert_eq!(r.filter.partitions, vec!["x"]);
        // Bad switch values: warned, ignored.
        let (r, w) = request(
            "5",
            &[
                ("SCANCEL_BATCH", "1"),
                ("SCANCEL_VERBOSE", "yes"),
                ("SCANCEL_FULL", "false"),
            ],
        );
        assert!(!r.batch && !r.full && r.verbose == 0);
        assert_eq!(
            w,
            vec![
                "Unrecognized SCANCEL_BATCH value: 1",
                "Unrecognized SCANCEL_VERBOSE value: yes"
            ]
        );
        // Bad state or user: refused.
        assert_eq!(
            env_parse("5", &[("SCANCEL_STATE", "bogus")])
                .unwrap_err()
                .to_string(),
            "Unrecognized SCANCEL_STATE value: bogus\n\
             Valid job states are PENDING, RUNNING, and SUSPENDED"
        );
        assert_eq!(
            env_parse("5", &[("SCANCEL_USER", "nobodyx")])
                .unwrap_err()
                .to_string(),
            "Invalid user name: nobodyx"
        );
    }

    fn args_of(s: &str) -> Vec<String> {
        args(s)
    }

    /// A controller that filters its queue by ids and names, as the real
    /// one does, and records what it is asked to do.
    struct Filtering(FakeControl);

    impl JobControl for Filtering {
        fn jobs(&mut self, f: &v1::JobFilter) -> Result<Vec<v1::JobInfo>, RpcError> {
            let all = self.0.jobs(f)?;
            Ok(all
                .into_iter()
                .filter(|j| f.job_ids.is_empty() || f.job_ids.contains(&j.job_id))
                .filter(|j| f.names.is_empty() || f.names.contains(&j.name))
                .collect())
        }

        fn act(&mut self, r: &Request) -> Result<v1::JobActionReply, RpcError> {
            self.0.act(r)
        }

        fn pause(&mut self, _: std::time::Duration) {
            panic!("nothing to retry");
        }
    }

    fn filtered(args: &str) -> (String, i32, Vec<Request>) {
        let mut control = Filtering(FakeControl {
            jobs: Ok(queue()),
            acted: Vec::new(),
        });
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let code = execute_io(&mut control, &req(args), &mut &b""[..], &mut o, &mut e);
        assert!(o.is_empty());
        (String::from_utf8(e).unwrap(), code, control.0.acted)
    }

    /// Named jobs the filters leave out are neither announced nor sent;
    /// when none is left, -v names the filters, as Slurm 22.05 does.
    #[test]
    fn filters_narrow_named_jobs_before_announcing() {
        let (err, code, acted) = filtered("-v -n nope 12");
        assert_eq!(
            (err.as_str(), code),
            (
                "scancel: error: No active jobs match ALL job filters, including: job_name=nope \n",
                0
            )
        );
        assert!(acted.is_empty());
        let (err, code, acted) = filtered("-v -n foo 12 13");
        assert_eq!((err.as_str(), code), ("scancel: Terminating job 12\n", 0));
        assert_eq!(acted.len(), 1);
        assert_eq!(acted[0].filter.job_ids, vec![12]);
        let (err, _, acted) = filtered("-v -t cd 12");
        assert!(err.ends_with("including: state=COMPLETED \n"), "{err}");
        assert!(acted.is_empty());
        // Filters act on active jobs only.
        let live: Vec<i32> = LIVE_STATES.iter().map(|s| *s as i32).collect();
        assert_eq!(req("-p debug").filter.states, live);
        assert_eq!(req("-u root 5").filter.states, live);
        assert!(req("5").filter.states.is_empty());
        assert_eq!(
            req("-t r").filter.states,
            vec![v1::JobState::Running as i32]
        );
    }

    /// No job is federated: --sibling refuses each live job selected and
    /// sends nothing; gone jobs pass quietly.
    #[test]
    fn sibling_refuses_every_live_job() {
        let (err, code, acted) = filtered("--sibling=x 12 999999");
        assert_eq!(
            (err.as_str(), code),
            (
                "scancel: error: Kill job error on job id 12: Not a valid federated job\n",
                191
            )
        );
        assert!(acted.is_empty());
        let (err, code, acted) = filtered("--sibling x 999999");
        assert_eq!((err.as_str(), code, acted.len()), ("", 0, 0));
    }
}
