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
    long!("sibling", Required, Ignored),
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
    /// `ID_TASKS`: tasks of an array, as written after the underscore.
    ArrayTasks {
        job: u32,
        tasks: String,
    },
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Job(id) => write!(f, "{id}"),
            Self::ArrayTasks { job, tasks } => write!(f, "{job}_{tasks}"),
        }
    }
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
    pub filter: v1::JobFilter,
    pub signal: Option<u32>,
    pub batch: bool,
    pub full: bool,
    pub hurry: bool,
    pub verbose: u32,
    pub quiet: bool,
    pub interactive: bool,
    /// `--state` named a state no cancellable job is in: nothing is sent.
    pub matches_nothing: bool,
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
            || self.matches_nothing
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

/// One job id argument: `12`, `12_3`, `12_[1-3]`.
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
    /// Another job state: valid, but no job it names can be cancelled.
    Finished,
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
    (s.trim() == s && s.parse::<JobStateCode>().is_ok()).then_some(StateChoice::Finished)
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

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Reads the arguments (without the program name). `uid_of` resolves user
/// names; `me` is the caller's uid.
pub fn parse(
    args: &[String],
    uid_of: &dyn Fn(&str) -> Option<u32>,
    me: u32,
) -> Result<Invocation, ScancelError> {
    // One option at a time: --help, --usage and --version answer the
    // moment they are read, and a bad value stops the reading, as in Slurm.
    let mut getopt = Getopt::new(args, SHORTS, LONGS, Ordering::Permute);
    let mut r = Request::default();
    for found in &mut getopt {
        let found = found.map_err(ScancelError::Getopt)?;
        let v = found.value.as_deref().unwrap_or("");
        match found.key {
            Key::Help => return Ok(Invocation::Help),
            Key::Usage => return Ok(Invocation::Usage),
            Key::Version => return Ok(Invocation::Version),
            Key::Account => {
                r.filter.accounts = list(v);
                r.filter_words.insert("account", v.to_owned());
            }
            Key::Batch => r.batch = true,
            Key::Clusters => r.clusters = Some(v.to_owned()),
            Key::Ignored => {}
            Key::Full => r.full = true,
            Key::Hurry => r.hurry = true,
            Key::Interactive => r.interactive = true,
            Key::Me => {
                r.filter.user_ids = vec![me];
                r.filter_words.insert("user_name", me.to_string());
            }
            Key::Name => {
                r.filter.names = list(v);
                r.filter_words.insert("job_name", v.to_owned());
            }
            Key::Nodelist => {
                r.filter.nodelist = v.to_owned();
                r.filter_words.insert("nodelist", v.to_owned());
            }
            Key::Partition => {
                r.filter.partitions = list(v);
                r.filter_words.insert("partition", v.to_owned());
            }
            Key::Qos => {
                r.filter.qos = list(v);
                r.filter_words.insert("qos", v.to_owned());
            }
            Key::Quiet => r.quiet = true,
            Key::Reservation => {
                r.filter.reservations = list(v);
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
                Some(StateChoice::Finished) => {
                    r.filter.states.clear();
                    r.matches_nothing = true;
                    r.filter_words.insert("state", v.to_ascii_uppercase());
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
            Key::Verbose => r.verbose += 1,
            Key::Wckey => {
                r.filter.wckeys = vec![v.to_owned()];
                r.filter_words.insert("wckey", v.to_owned());
            }
        }
    }
    for operand in &getopt.into_operands() {
        for id in operand.split(',').filter(|s| !s.is_empty()) {
            let job = parse_job_ref(id).ok_or_else(|| invalid(bad_job_id(id)))?;
            r.jobs.push(job);
        }
        if operand.split(',').all(str::is_empty) {
            return Err(invalid(format!("Invalid job id {operand}")));
        }
    }
    if r.jobs.is_empty() && !r.has_filter() {
        return Err(invalid("No job identification provided"));
    }
    for job in &r.jobs {
        match job {
            JobRef::Job(id) => r.filter.job_ids.push(*id),
            JobRef::ArrayTasks { job, tasks } => r.filter.array_tasks.push(v1::ArrayTaskSelector {
                array_job_id: *job,
                task_spec: tasks.clone(),
            }),
        }
    }
    Ok(Invocation::Cancel(Box::new(r)))
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
        let prepared = prepare(&words, &called_as, &mut out);
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
fn prepare(words: &[String], called_as: &str, out: &mut Output<'_>) -> Result<Prepared, i32> {
    let uid_of = |name: &str| {
        crate::format::checks::uid_from_string(name, &uid_for_name, &|uid| user_name(uid).is_some())
    };
    let request = match parse(words, &uid_of, current_uid()) {
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
    if let Some(line) = request
        .clusters
        .as_deref()
        .and_then(|names| crate::squeue::unknown_clusters(PROG, names, &config.conf.cluster_name))
    {
        out.error_line(&line);
        return Err(1);
    }
    if request.matches_nothing {
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
}

/// Runs a request: with `--interactive`, first asks about each job on
/// `stdout` and reads the answers from `input`.
pub fn execute_io(
    control: &mut dyn JobControl,
    r: &Request,
    input: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    if !r.interactive {
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
            if !alive && matches!(job, JobRef::Job(_)) {
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
    code.max(execute(control, &request, out))
}

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
    let results = match control.act(r) {
        Ok(reply) => reply.results,
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
    for result in results {
        let id = match result.array_task_id {
            Some(task) => format!("{}_{task}", result.job_id),
            None => result.job_id.to_string(),
        };
        // Records of a job or array named on the command line were
        // announced with it (`scancel -v 15_[0-3]` is one line).
        let named = r.jobs.iter().any(|j| match j {
            JobRef::Job(job) | JobRef::ArrayTasks { job, .. } => *job == result.job_id,
        });
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
        if r.verbose > 0 || !quiet_kind {
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
        let code = match prepare(&words, PROG, &mut out) {
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
        assert!(r.matches_nothing && r.filter.states.is_empty());
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
}
