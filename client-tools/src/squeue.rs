//! `squeue`: list the jobs in the queue.
//!
//! Options are read as Slurm reads them (GNU `getopt_long`: long names may be
//! shortened while unambiguous, short options may be bundled), then the jobs
//! come from one `GetJobs` call and [`crate::format::squeue`] renders them.
//! The controller already filters; the same filter is applied again here so
//! the output never depends on how strict a controller version is.

use std::ffi::OsString;
use std::io::{self, Write};

use slurm_proto::v1::{ArrayTaskSelector, GetJobsRequest, JobFilter, JobInfo};
use slurm_proto::ErrorCode;

use crate::client::{self, ClientConfig, Controller, EnvLookup};
use crate::format::squeue::{self as render, StateFilter};
use crate::format::{self, Ctx};
use crate::output::{version_line, Output};

/// `getopt_long` as the Slurm commands use it, with glibc's messages.
pub(crate) mod getopt {
    /// Whether an option takes a value.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Arg {
        No,
        Required,
        Optional,
    }

    /// One option: its long name, short letter and argument.
    #[derive(Debug, Clone, Copy)]
    pub struct Spec {
        pub long: &'static str,
        pub short: Option<char>,
        pub arg: Arg,
    }

    /// A command line glibc's getopt refuses; `Display` gives its message
    /// without the program name.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    pub enum OptError {
        #[error("unrecognized option '--{0}'")]
        UnknownLong(String),
        #[error("option '--{given}' is ambiguous; possibilities:{choices}")]
        Ambiguous { given: String, choices: String },
        #[error("invalid option -- '{0}'")]
        UnknownShort(char),
        #[error("option '--{0}' requires an argument")]
        LongNeedsArgument(&'static str),
        #[error("option requires an argument -- '{0}'")]
        ShortNeedsArgument(char),
        #[error("option '--{0}' doesn't allow an argument")]
        TakesNoArgument(&'static str),
    }

    /// Parsed options in order (by long name) and the other words.
    pub type Parsed = (Vec<(&'static str, Option<String>)>, Vec<String>);

    fn find_long(specs: &[Spec], given: &str) -> Result<Spec, OptError> {
        if let Some(exact) = specs.iter().find(|s| s.long == given) {
            return Ok(*exact);
        }
        let matches: Vec<&Spec> = specs
            .iter()
            .filter(|s| !given.is_empty() && s.long.starts_with(given))
            .collect();
        match matches.as_slice() {
            [] => Err(OptError::UnknownLong(given.to_owned())),
            [one] => Ok(**one),
            many => Err(OptError::Ambiguous {
                given: given.to_owned(),
                choices: many.iter().map(|s| format!(" '--{}'", s.long)).collect(),
            }),
        }
    }

    /// Reads `args` (without the program name).
    pub fn parse(args: &[String], specs: &[Spec]) -> Result<Parsed, OptError> {
        let mut opts = Vec::new();
        let mut words = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            i += 1;
            if arg == "--" {
                words.extend(args[i..].iter().cloned());
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                let (given, value) = match long.split_once('=') {
                    Some((g, v)) => (g, Some(v.to_owned())),
                    None => (long, None),
                };
                let spec = find_long(specs, given)?;
                let value = match spec.arg {
                    Arg::No if value.is_some() => return Err(OptError::TakesNoArgument(spec.long)),
                    Arg::No | Arg::Optional => value,
                    Arg::Required => match value {
                        Some(v) => Some(v),
                        None if i < args.len() => {
                            i += 1;
                            Some(args[i - 1].clone())
                        }
                        None => return Err(OptError::LongNeedsArgument(spec.long)),
                    },
                };
                opts.push((spec.long, value));
                continue;
            }
            let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.is_empty()) else {
                words.push(arg.clone());
                continue;
            };
            for (pos, c) in shorts.char_indices() {
                let spec = specs
                    .iter()
                    .find(|s| s.short == Some(c))
                    .ok_or(OptError::UnknownShort(c))?;
                let attached = &shorts[pos + c.len_utf8()..];
                match spec.arg {
                    Arg::No => opts.push((spec.long, None)),
                    Arg::Optional => {
                        let v = (!attached.is_empty()).then(|| attached.to_owned());
                        opts.push((spec.long, v));
                        break;
                    }
                    Arg::Required => {
                        let value = if !attached.is_empty() {
                            attached.to_owned()
                        } else if i < args.len() {
                            i += 1;
                            args[i - 1].clone()
                        } else {
                            return Err(OptError::ShortNeedsArgument(c));
                        };
                        opts.push((spec.long, Some(value)));
                        break;
                    }
                }
            }
        }
        Ok((opts, words))
    }
}

use getopt::{Arg, Spec};

const fn spec(long: &'static str, short: Option<char>, arg: Arg) -> Spec {
    Spec { long, short, arg }
}

const SPECS: &[Spec] = &[
    spec("account", Some('A'), Arg::Required),
    spec("all", Some('a'), Arg::No),
    spec("array", Some('r'), Arg::No),
    spec("array-unique", None, Arg::No),
    spec("clusters", Some('M'), Arg::Required),
    spec("federation", None, Arg::No),
    spec("format", Some('o'), Arg::Required),
    spec("Format", Some('O'), Arg::Required),
    spec("help", None, Arg::No),
    spec("hide", None, Arg::No),
    spec("iterate", Some('i'), Arg::Required),
    spec("jobs", Some('j'), Arg::Optional),
    spec("json", None, Arg::No),
    spec("licenses", Some('L'), Arg::Required),
    spec("local", None, Arg::No),
    spec("long", Some('l'), Arg::No),
    spec("me", None, Arg::No),
    spec("name", Some('n'), Arg::Required),
    spec("noconvert", None, Arg::No),
    spec("noheader", Some('h'), Arg::No),
    spec("nodelist", Some('w'), Arg::Required),
    spec("partition", Some('p'), Arg::Required),
    spec("priority", Some('P'), Arg::No),
    spec("qos", Some('q'), Arg::Required),
    spec("reservation", Some('R'), Arg::Required),
    spec("sibling", None, Arg::No),
    spec("sort", Some('S'), Arg::Required),
    spec("start", None, Arg::No),
    spec("states", Some('t'), Arg::Required),
    spec("steps", Some('s'), Arg::Optional),
    spec("usage", None, Arg::No),
    spec("user", Some('u'), Arg::Required),
    spec("verbose", Some('v'), Arg::No),
    spec("version", Some('V'), Arg::No),
    spec("yaml", None, Arg::No),
];

const USAGE: &str = "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [--only-job-state] [-p partitions]
              [--qos qos] [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
              [--expand-patterns] [--json=data_parser] [--yaml=data_parser]
              [-ahjlrsv]";

/// What the command line asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub accounts: Vec<String>,
    pub array: bool,
    pub format: Option<String>,
    pub format_long: Option<String>,
    pub help: bool,
    pub usage: bool,
    pub job_ids: Vec<String>,
    pub json: bool,
    pub long: bool,
    pub me: bool,
    pub names: Vec<String>,
    pub no_header: bool,
    pub nodelist: String,
    pub partitions: Vec<String>,
    pub qos: Vec<String>,
    pub reservations: Vec<String>,
    pub sort: Option<String>,
    pub start: bool,
    pub states: Option<String>,
    pub users: Vec<String>,
    pub version: bool,
}

fn list(value: Option<String>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Reads the options (arguments without the program name) and the
/// `SQUEUE_*` environment variables they override.
pub fn parse_options(args: &[String], env: EnvLookup<'_>) -> Result<Options, getopt::OptError> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| !v.is_empty())
    };
    let mut o = Options {
        format: var("SQUEUE_FORMAT"),
        format_long: var("SQUEUE_FORMAT2"),
        sort: var("SQUEUE_SORT"),
        accounts: list(var("SQUEUE_ACCOUNT")),
        partitions: list(var("SQUEUE_PARTITION")),
        qos: list(var("SQUEUE_QOS")),
        users: list(var("SQUEUE_USERS")),
        states: var("SQUEUE_STATES"),
        ..Options::default()
    };
    let (opts, words) = getopt::parse(args, SPECS)?;
    for (name, value) in opts {
        match name {
            "account" => o.accounts = list(value),
            "array" => o.array = true,
            "format" => {
                o.format = value;
                o.format_long = None;
            }
            "Format" => {
                o.format_long = value;
                o.format = None;
            }
            "help" => o.help = true,
            "usage" => o.usage = true,
            "jobs" => o.job_ids.extend(list(value)),
            "json" => o.json = true,
            "long" => o.long = true,
            "me" => o.me = true,
            "name" => o.names = list(value),
            "noheader" => o.no_header = true,
            "nodelist" => o.nodelist = value.unwrap_or_default(),
            "partition" => o.partitions = list(value),
            "qos" => o.qos = list(value),
            "reservation" => o.reservations = list(value),
            "sort" => o.sort = value,
            "start" => o.start = true,
            "states" => o.states = value,
            "user" => o.users = list(value),
            "version" => o.version = true,
            _ => {}
        }
    }
    // A bare word after -j is more job ids, as in `squeue -j 1 2`.
    o.job_ids
        .extend(words.iter().flat_map(|w| list(Some(w.clone()))));
    Ok(o)
}

/// A `-j` entry that is not a job id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid job id: {0}")]
pub struct JobIdError(pub String);

/// Splits `-j` entries into plain ids and array task selectors.
fn job_selectors(ids: &[String]) -> Result<(Vec<u32>, Vec<ArrayTaskSelector>), JobIdError> {
    let mut plain = Vec::new();
    let mut tasks = Vec::new();
    for id in ids {
        match id.split_once('_') {
            Some((master, spec)) => {
                let master = master.parse::<u32>().map_err(|_| JobIdError(id.clone()))?;
                tasks.push(ArrayTaskSelector {
                    array_job_id: master,
                    task_spec: spec.to_owned(),
                });
            }
            None => plain.push(id.parse::<u32>().map_err(|_| JobIdError(id.clone()))?),
        }
    }
    Ok((plain, tasks))
}

/// Runs `squeue` with the process's arguments, streams and environment.
pub fn run(args: Vec<OsString>) -> i32 {
    let stdout = io::stdout();
    let mut stdout = io::BufWriter::new(stdout.lock());
    let stderr = io::stderr();
    let mut stderr = stderr.lock();
    let code = run_with(&args, &client::process_env, &mut stdout, &mut stderr);
    let _ = stdout.flush();
    code
}

/// [`run`] with the environment and both output streams handed in.
pub fn run_with(
    args: &[OsString],
    env: EnvLookup<'_>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let mut out = Output::new(stdout, stderr);
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let opts = match parse_options(&args, env) {
        Ok(o) => o,
        Err(e) => {
            out.error_line(&format!("squeue: {e}"));
            out.error_line("Try \"squeue --help\" for more information");
            return 1;
        }
    };
    if opts.version {
        return out.block("squeue", &version_line());
    }
    if opts.help || opts.usage {
        return out.block("squeue", USAGE);
    }
    let plan = match Plan::new(&opts) {
        Ok(p) => p,
        Err(message) => {
            out.error_line(&format!("squeue: error: {message}"));
            return 1;
        }
    };
    let config = match ClientConfig::load_with(env) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("squeue: error: {e}"));
            return 1;
        }
    };
    let mut controller = match Controller::new(&config) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("squeue: error: {e}"));
            return 1;
        }
    };
    let request = plan.request.clone();
    let reply = client::block_on(controller.call(move |mut c| {
        let request = request.clone();
        async move { c.get_jobs(request).await }
    }));
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            out.error_line(&format!("slurm_load_jobs error: {e}"));
            return 1;
        }
    };
    let now = slurm_common::auth::unix_now();
    match plan.render(&reply.jobs, &Ctx::system(now)) {
        Ok(text) => out.block("squeue", &text),
        Err(e) => {
            out.error_line(&format!("slurm_load_jobs error: {}", e.message()));
            1
        }
    }
}

/// Everything decided from the options before asking the controller.
#[derive(Debug, Clone)]
pub struct Plan {
    pub request: GetJobsRequest,
    items: Vec<format::Item>,
    sort: Vec<format::spec::SortKey>,
    states: StateFilter,
    named: bool,
    single_id: bool,
    header: bool,
    date_line: bool,
    start: bool,
    json: bool,
    array: bool,
    uids: Vec<u32>,
    opts: Options,
}

impl Plan {
    /// Checks the options; the error is the message squeue prints after
    /// `squeue: error: `.
    pub fn new(o: &Options) -> Result<Plan, String> {
        let items = match (&o.format, &o.format_long) {
            (Some(f), _) => render::parse_format(f),
            (None, Some(f)) => render::parse_long_format(f),
            (None, None) if o.start => render::parse_format(render::START_FORMAT),
            (None, None) if o.long => render::parse_format(render::LONG_FORMAT),
            (None, None) => render::parse_format(render::DEFAULT_FORMAT),
        }
        .map_err(|e| capitalize(&e.to_string()))?;
        let sort_spec = match &o.sort {
            Some(s) => s.as_str(),
            None if o.start => render::START_SORT,
            None => render::DEFAULT_SORT,
        };
        let sort = render::parse_sort(sort_spec).map_err(|e| capitalize(&e.to_string()))?;
        let states = match &o.states {
            Some(s) => render::parse_states(s).map_err(|e| capitalize(&e.to_string()))?,
            None => StateFilter::Default,
        };
        let (job_ids, array_tasks) = job_selectors(&o.job_ids).map_err(|e| e.to_string())?;
        let mut uids = Vec::new();
        for user in &o.users {
            match user.parse::<u32>() {
                Ok(uid) => uids.push(uid),
                Err(_) => match client::uid_for_name(user) {
                    Some(uid) => uids.push(uid),
                    None => return Err(format!("Invalid user: {user}")),
                },
            }
        }
        if o.me {
            uids.push(client::current_uid());
        }
        let named = !o.job_ids.is_empty();
        let single_id = job_ids.len() == 1 && array_tasks.is_empty();
        let filter = JobFilter {
            job_ids,
            array_tasks,
            user_ids: uids.clone(),
            states: Vec::new(),
            names: o.names.clone(),
            partitions: o.partitions.clone(),
            accounts: o.accounts.clone(),
            qos: o.qos.clone(),
            reservations: o.reservations.clone(),
            nodelist: o.nodelist.clone(),
        };
        Ok(Plan {
            request: GetJobsRequest {
                filter: Some(filter),
                changed_since: 0,
                detail: false,
            },
            items,
            sort,
            states,
            named,
            single_id,
            header: !o.no_header,
            date_line: o.long,
            start: o.start,
            json: o.json,
            array: o.array,
            uids,
            opts: o.clone(),
        })
    }

    fn admits(&self, job: &JobInfo) -> bool {
        let o = &self.opts;
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        self.states.admits(job, self.named)
            && (!self.start || format::base_state(job) == slurm_common::state::JobState::Pending)
            && (self.uids.is_empty() || self.uids.contains(&job.user_id))
            && any(&o.names, &job.name)
            && (o.partitions.is_empty()
                || job
                    .partition
                    .split(',')
                    .any(|p| o.partitions.iter().any(|x| x == p)))
            && any(&o.accounts, &job.account)
            && any(&o.qos, &job.qos)
            && any(&o.reservations, &job.reservation)
    }

    /// Filters, sorts and renders the controller's jobs. A single `-j` id
    /// that matches nothing is Slurm's "Invalid job id specified".
    pub fn render(&self, jobs: &[JobInfo], ctx: &Ctx) -> Result<String, ErrorCode> {
        if self.single_id && jobs.is_empty() {
            return Err(ErrorCode::InvalidJobId);
        }
        let expanded;
        let jobs = if self.array {
            expanded = expand_arrays(jobs);
            &expanded[..]
        } else {
            jobs
        };
        let mut shown: Vec<&JobInfo> = jobs.iter().filter(|j| self.admits(j)).collect();
        if self.json {
            return Ok(format::json::jobs(&shown, ctx));
        }
        render::sort_jobs(&mut shown, &self.sort);
        Ok(render::render(
            &shown,
            &self.items,
            self.header,
            self.date_line,
            ctx,
        ))
    }
}

/// Most tasks `-r` shows for one pending array record; a bigger spec is
/// shown as one line, as without `-r`.
const MAX_EXPANDED_TASKS: usize = 100_000;

/// Task ids of an array spec such as `0-3%2`, `1,5-9:2`; `None` when the
/// spec is malformed or names too many tasks.
pub fn array_task_ids(spec: &str) -> Option<Vec<u32>> {
    let spec = spec.split('%').next().unwrap_or("");
    let spec = spec.trim_start_matches('[').trim_end_matches(']');
    let mut ids = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        let (range, step) = match part.split_once(':') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let v = range.parse::<u32>().ok()?;
                (v, v)
            }
        };
        if hi < lo {
            return None;
        }
        let mut id = lo;
        loop {
            ids.push(id);
            if ids.len() > MAX_EXPANDED_TASKS {
                return None;
            }
            match id.checked_add(step) {
                Some(next) if next <= hi => id = next,
                _ => break,
            }
        }
    }
    Some(ids)
}

/// `-r`: one record per task of each still-pending array record.
fn expand_arrays(jobs: &[JobInfo]) -> Vec<JobInfo> {
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let ids = (job.array_task_id.is_none() && !job.array_task_spec.is_empty())
            .then(|| array_task_ids(&job.array_task_spec))
            .flatten();
        match ids {
            Some(ids) => {
                for id in ids {
                    let mut task = job.clone();
                    task.array_task_id = Some(id);
                    task.array_task_spec.clear();
                    out.push(task);
                }
            }
            None => out.push(job.clone()),
        }
    }
    out
}

/// Slurm's messages start with a capital letter; ours are lowercase.
fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, getopt::OptError> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        parse_options(&args, &|_| None)
    }

    #[test]
    fn long_names_may_be_shortened() {
        let o = parse(&["--noh", "--form=%i", "--sta"]).unwrap_err();
        assert!(matches!(o, getopt::OptError::Ambiguous { .. }));
        let o = parse(&["--noh", "--form=%i", "--start"]).unwrap();
        assert!(o.no_header && o.start);
        assert_eq!(o.format.as_deref(), Some("%i"));
    }

    #[test]
    fn short_options_bundle_and_take_values() {
        let o = parse(&["-hl", "-tPD", "-u", "root", "-j5,6"]).unwrap();
        assert!(o.no_header && o.long);
        assert_eq!(o.states.as_deref(), Some("PD"));
        assert_eq!(o.users, vec!["root"]);
        assert_eq!(o.job_ids, vec!["5", "6"]);
    }

    #[test]
    fn glibc_messages() {
        assert_eq!(
            parse(&["--bogus"]).unwrap_err().to_string(),
            "unrecognized option '--bogus'"
        );
        assert_eq!(
            parse(&["-z"]).unwrap_err().to_string(),
            "invalid option -- 'z'"
        );
        assert_eq!(
            parse(&["-o"]).unwrap_err().to_string(),
            "option requires an argument -- 'o'"
        );
        assert_eq!(
            parse(&["--long=1"]).unwrap_err().to_string(),
            "option '--long' doesn't allow an argument"
        );
    }

    #[test]
    fn environment_is_overridden_by_options() {
        let env = |name: &str| match name {
            "SQUEUE_FORMAT" => Some(OsString::from("%i")),
            "SQUEUE_SORT" => Some(OsString::from("-i")),
            _ => None,
        };
        let args: Vec<String> = vec!["-O".into(), "JobID".into()];
        let o = parse_options(&args, &env).unwrap();
        assert_eq!(o.format, None);
        assert_eq!(o.format_long.as_deref(), Some("JobID"));
        assert_eq!(o.sort.as_deref(), Some("-i"));
    }

    #[test]
    fn unknown_single_id_is_invalid() {
        let o = parse(&["-j", "999999"]).unwrap();
        let plan = Plan::new(&o).unwrap();
        let ctx = Ctx::system(0);
        assert_eq!(plan.render(&[], &ctx), Err(ErrorCode::InvalidJobId));
        assert_eq!(
            ErrorCode::InvalidJobId.message(),
            "Invalid job id specified"
        );
        let o = parse(&["-u", "root"]).unwrap();
        let plan = Plan::new(&o).unwrap();
        assert!(plan
            .render(&[], &ctx)
            .unwrap()
            .starts_with("             JOBID"));
    }

    #[test]
    fn array_specs_expand() {
        assert_eq!(array_task_ids("0-3%2"), Some(vec![0, 1, 2, 3]));
        assert_eq!(array_task_ids("[1,5-9:2]"), Some(vec![1, 5, 7, 9]));
        assert_eq!(array_task_ids("3-1"), None);
        assert_eq!(array_task_ids("x"), None);
        assert_eq!(array_task_ids("0-4294967295"), None);
        assert_eq!(array_task_ids("4294967295"), Some(vec![u32::MAX]));
    }

    #[test]
    fn array_option_shows_one_line_per_task() {
        let master = JobInfo {
            job_id: 15,
            array_job_id: Some(15),
            array_task_spec: "0-1".into(),
            name: "a".into(),
            state: slurm_proto::v1::JobState::Pending as i32,
            ..JobInfo::default()
        };
        let plan = Plan::new(&parse(&["-r", "-h", "-o", "%i"]).unwrap()).unwrap();
        let text = plan.render(&[master], &Ctx::system(0)).unwrap();
        assert_eq!(text, "15_0\n15_1\n");
    }

    #[test]
    fn bad_specs_are_reported() {
        assert_eq!(
            Plan::new(&parse(&["-o", "%+"]).unwrap()).unwrap_err(),
            "Invalid job format specification: +"
        );
        assert!(Plan::new(&parse(&["-t", "nosuch"]).unwrap()).is_err());
        assert!(Plan::new(&parse(&["-j", "abc"]).unwrap()).is_err());
    }
}
