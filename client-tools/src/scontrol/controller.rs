//! The `scontrol` commands that talk to slurmctld: `ping`, `show
//! job|node|partition|config`, `hold`, `uhold`, `release`, `requeue`,
//! `requeuehold`, `update`, `create`, `delete`, `reconfigure` and
//! `takeover`.
//!
//! `ping` (and the end of `show config`, as in Slurm) asks every
//! SlurmctldHost on its own and prints one line each, `primary` for the
//! first, `backup` for the second (`backup1`, `backup2`, ... when there are
//! more). `takeover [INDEX]` goes to that backup (default the first).
//!
//! Parsing ([`parse_job_list`], [`parse_update`], [`parse_create`],
//! [`parse_delete`]) is pure and refuses bad
//! input with Slurm's texts before anything is sent; [`execute`] connects,
//! makes the call and prints the outcome. The `show` records are rendered
//! by [`crate::format::scontrol`].

use std::fmt;

use slurm_common::auth::unix_now;
use slurm_common::size::parse_mem_mb;
use slurm_common::time::{parse_time_limit, parse_timestamp, TimeLimit};
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{EnvLookup, Options};
use crate::client::{block_on, ClientConfig, Controller, RpcError};
use crate::format::{scontrol as render, Ctx};
use crate::output::Output;
use crate::scancel::{parse_job_ref, JobRef};

/// A command for the controller, parsed and checked.
#[derive(Debug, Clone, PartialEq)]
pub enum CtlCommand {
    Ping,
    Reconfigure,
    /// `takeover [INDEX]`: the backup at SlurmctldHost index INDEX
    /// (default 1) takes control.
    Takeover {
        index: u32,
    },
    ShowJobs {
        id: Option<String>,
    },
    ShowNodes {
        name: Option<String>,
    },
    ShowPartitions {
        name: Option<String>,
    },
    ShowConfig,
    /// `show licenses [NAME]`.
    ShowLicenses {
        name: Option<String>,
    },
    /// `hold` (administrator hold) or `uhold` (user hold).
    Hold {
        words: Vec<JobWord>,
        user: bool,
    },
    Release {
        words: Vec<JobWord>,
    },
    Requeue {
        words: Vec<JobWord>,
        hold: bool,
    },
    UpdateJob(Box<v1::UpdateJobRequest>),
    /// `update JobName=NAME [UserId=USER] ...` without a JobId: the jobs
    /// called NAME (of USER) get the changes, each named by its id as
    /// Slurm's scontrol names them.
    UpdateJobsNamed {
        name: String,
        uid: Option<u32>,
        request: Box<v1::UpdateJobRequest>,
    },
    UpdateNode(Box<v1::UpdateNodeRequest>),
    UpdatePartition(Box<v1::UpdatePartitionRequest>),
    CreatePartition(Box<v1::CreatePartitionRequest>),
    /// `delete PartitionName=NAME`; `word` is the argument as given,
    /// which Slurm repeats in its error line.
    DeletePartition {
        name: String,
        word: String,
    },
    /// `show reservation|frontend|topology|burstbuffer|bbstat|dwstat|
    /// federation|assoc_mgr [NAME]`: things this controller has none of
    /// (no reservations, front ends, switches, burst buffers, federation
    /// or cached associations), said as Slurm says it once the controller
    /// has answered.
    ShowNone {
        entity: &'static str,
        name: Option<String>,
    },
    /// `suspend` / `resume` (`super::suspend`).
    Suspend(Box<super::suspend::SuspendCommand>),
    /// `top` (`super::suspend`).
    Top(Box<super::suspend::TopCommand>),
}

/// A controller command line refused before sending, with the lines Slurm
/// prints (on standard error, exit status 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtlError {
    pub lines: Vec<String>,
    /// Under `scontrol -Q`, how many of the first lines are still said
    /// (`None`: all): Slurm's quiet flag leaves unsaid the refusals it
    /// reports with its quiet check (an unreadable job id, an unknown debug
    /// level or flag), not what its error log says first.
    pub quiet_keeps: Option<usize>,
}

impl CtlError {
    pub fn new(lines: Vec<String>) -> CtlError {
        CtlError {
            lines,
            quiet_keeps: None,
        }
    }

    /// A refusal `scontrol -Q` leaves unsaid.
    pub fn hushable(lines: Vec<String>) -> CtlError {
        CtlError {
            lines,
            quiet_keeps: Some(0),
        }
    }

    /// A refusal of which `scontrol -Q` says the first `kept` lines only.
    pub fn partly_hushable(lines: Vec<String>, kept: usize) -> CtlError {
        CtlError {
            lines,
            quiet_keeps: Some(kept),
        }
    }

    /// The lines said, with or without `-Q`.
    pub fn lines_said(&self, quiet: bool) -> &[String] {
        match self.quiet_keeps {
            Some(kept) if quiet => &self.lines[..kept.min(self.lines.len())],
            _ => &self.lines,
        }
    }
}

impl fmt::Display for CtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines.join("\n"))
    }
}

impl std::error::Error for CtlError {}

fn refuse(lines: &[&str]) -> CtlError {
    CtlError::new(lines.iter().map(|l| (*l).to_owned()).collect())
}

/// Job ids for `hold`, `release`, `requeue`: words with comma-separated
/// ids (`8`, `8,9`, `10_2`, `10_[1,3-4]`).
pub fn parse_job_list(args: &[String]) -> Result<v1::JobFilter, CtlError> {
    let mut filter = v1::JobFilter::default();
    for word in args {
        for id in split_outside_brackets(word).filter(|s| !s.is_empty()) {
            match parse_job_ref(id) {
                Some(JobRef::Job(job)) => filter.job_ids.push(job),
                Some(JobRef::ArrayTasks { job, tasks }) => {
                    filter.array_tasks.push(v1::ArrayTaskSelector {
                        array_job_id: job,
                        task_spec: tasks,
                    });
                }
                None => return Err(refuse(&["Invalid job id specified"])),
            }
        }
    }
    if filter.job_ids.is_empty() && filter.array_tasks.is_empty() {
        return Err(refuse(&["Invalid job id specified"]));
    }
    Ok(filter)
}

/// One argument of `hold`, `uhold`, `release`, `requeue`, `requeuehold`:
/// Slurm sends each on its own and reports each on its own, a word that
/// is no job list included (`filter` is `None` then).
#[derive(Debug, Clone, PartialEq)]
pub struct JobWord {
    pub word: String,
    pub filter: Option<v1::JobFilter>,
}

/// The words of a job list command, in order.
pub fn parse_job_words(args: &[String]) -> Vec<JobWord> {
    args.iter()
        .map(|word| JobWord {
            word: word.clone(),
            filter: parse_job_list(std::slice::from_ref(word)).ok(),
        })
        .collect()
}

/// How a job list command reports: the hold family (`hold`, `uhold`,
/// `release`) ends the errors of a word with Slurm's
/// `slurm_suspend error: ...` line; `requeue` does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListVerb {
    Hold,
    Requeue,
}

/// The lines (standard error) for one word of a job list command and
/// whether it failed. A word naming tasks of one array (`9_2`, `9_[1-3]`)
/// is answered per group of tasks with one outcome (`9_1,3: No error`,
/// `9_2: Invalid job id specified`), a task nobody answered for being
/// unknown; any other word per failed job (`<error> for job <id>`).
pub fn word_report(
    word: &JobWord,
    results: &[v1::JobActionResult],
    verb: ListVerb,
) -> (Vec<String>, bool) {
    let Some(filter) = &word.filter else {
        let mut lines = vec![format!("{} for job {}", ErrorCode::InvalidJobId, word.word)];
        if verb == ListVerb::Hold {
            lines.push(format!("slurm_suspend error: {}", ErrorCode::InvalidJobId));
        }
        return (lines, true);
    };
    if let ([], [tasks]) = (filter.job_ids.as_slice(), filter.array_tasks.as_slice()) {
        if let Some(wanted) = expand_task_spec(&tasks.task_spec) {
            return array_report(tasks.array_job_id, &wanted, results);
        }
    }
    let mut lines = Vec::new();
    for r in results.iter().filter(|r| r.error_code != 0) {
        let id = match r.array_task_id {
            Some(t) => format!("{}_{t}", r.job_id),
            None => r.job_id.to_string(),
        };
        let err = ErrorCode::from_number_or_unspecified(r.error_code);
        lines.push(format!("{err} for job {id}"));
    }
    if lines.is_empty() {
        return (lines, false);
    }
    // Slurm's closing line tells the last job's outcome, which may be
    // none when an earlier job failed (`release 6,7`: "No error").
    if verb == ListVerb::Hold {
        match results.last().map_or(0, |r| r.error_code) {
            0 => lines.push("slurm_suspend error: No error".to_owned()),
            last => lines.push(format!(
                "slurm_suspend error: {}",
                ErrorCode::from_number_or_unspecified(last)
            )),
        }
    }
    (lines, true)
}

/// The per-outcome lines of a word naming `wanted` tasks of array `job`.
fn array_report(job: u32, wanted: &[u32], results: &[v1::JobActionResult]) -> (Vec<String>, bool) {
    // A result without a task answers for the tasks nobody else did (the
    // still-pending rest of the array, or the array as a whole).
    let whole = results
        .iter()
        .find(|r| r.job_id == job && r.array_task_id.is_none())
        .map(|r| r.error_code);
    let mut groups: Vec<(i32, Vec<u32>)> = Vec::new();
    for &task in wanted {
        let code = results
            .iter()
            .find(|r| r.array_task_id == Some(task))
            .map(|r| r.error_code)
            .or(whole)
            .unwrap_or_else(|| ErrorCode::InvalidJobId.number());
        match groups.iter_mut().find(|(c, _)| *c == code) {
            Some((_, tasks)) => tasks.push(task),
            None => groups.push((code, vec![task])),
        }
    }
    if groups.iter().all(|(code, _)| *code == 0) {
        return (Vec::new(), false);
    }
    let lines = groups
        .iter()
        .map(|(code, tasks)| {
            let mut ids = String::new();
            write_task_ranges(&mut ids, tasks);
            let what = if *code == 0 {
                "No error".to_owned()
            } else {
                ErrorCode::from_number_or_unspecified(*code).to_string()
            };
            format!("{job}_{ids}: {what}")
        })
        .collect();
    (lines, true)
}

/// `1,3-5`: ascending task ids with runs of three or more collapsed, as
/// Slurm writes a task set.
fn write_task_ranges(out: &mut String, tasks: &[u32]) {
    let mut i = 0;
    while i < tasks.len() {
        let start = tasks[i];
        let mut end = start;
        while i + 1 < tasks.len() && tasks[i + 1] == end.saturating_add(1) {
            i += 1;
            end = tasks[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
}

/// The most task ids one word may name here; more is read as no task set.
const MAX_WORD_TASKS: usize = 1_000_000;

/// The task ids of `2`, `[1-3]`, `[1,3-9:2]` (`%N` ignored), ascending.
fn expand_task_spec(spec: &str) -> Option<Vec<u32>> {
    let spec = spec.split('%').next().unwrap_or_default();
    let inner = spec
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(spec);
    let mut tasks = Vec::new();
    for range in inner.split(',') {
        let (range, step) = match range.split_once(':') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (range, 1),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?),
            None => {
                let one = range.parse::<u32>().ok()?;
                (one, one)
            }
        };
        if lo > hi {
            return None;
        }
        let mut t = lo;
        loop {
            tasks.push(t);
            if tasks.len() > MAX_WORD_TASKS {
                return None;
            }
            match t.checked_add(step) {
                Some(next) if next <= hi => t = next,
                _ => break,
            }
        }
    }
    tasks.sort_unstable();
    tasks.dedup();
    Some(tasks)
}

/// `word` split at the commas that are not inside `[...]`.
fn split_outside_brackets(word: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    word.split(move |c: char| {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        c == ',' && depth <= 0
    })
}

fn time_limit(t: TimeLimit) -> v1::TimeLimit {
    v1::TimeLimit {
        limit: Some(match t {
            TimeLimit::Minutes(m) => v1::time_limit::Limit::Minutes(m),
            TimeLimit::Infinite => v1::time_limit::Limit::Unlimited(true),
        }),
    }
}

fn unsupported(arg: &str) -> CtlError {
    CtlError::new(vec![
        format!("Update of this parameter is not supported: {arg}"),
        "Request aborted".to_owned(),
    ])
}

fn invalid_value(what: &str, value: &str) -> CtlError {
    CtlError::new(vec![format!(
        "scontrol: error: Invalid {what} value: {value}"
    )])
}

/// For the keys whose refusal Slurm words without the value.
fn invalid_bare(what: &str) -> CtlError {
    CtlError::new(vec![format!("scontrol: error: Invalid {what} value")])
}

/// `takeover [INDEX]`: which backup (SlurmctldHost index, default 1).
pub fn parse_takeover(args: &[String]) -> Result<CtlCommand, CtlError> {
    match args {
        [] => Ok(CtlCommand::Takeover { index: 1 }),
        // Read as atoi reads it ("x" is 0, "1x" is 1); the range is
        // checked against slurm.conf when run.
        [one] => {
            let t = one.trim_start();
            let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let index = t[..digits].parse::<u32>().unwrap_or(0);
            if index >= 1 {
                Ok(CtlCommand::Takeover { index })
            } else {
                Err(CtlError::new(vec![format!(
                    "takeover: invalid backup controller index ({index})"
                )]))
            }
        }
        _ => Err(refuse(&["takeover: too many arguments"])),
    }
}

/// `update Key=Value ...` for a job (`JobId=`) or nodes (`NodeName=`).
pub fn parse_update(args: &[String], now: i64) -> Result<CtlCommand, CtlError> {
    // A job is also named `job N`, `job=N` or `jobid N`, as Slurm takes it.
    let mut words: Vec<String> = Vec::with_capacity(args.len());
    let mut rest = args.iter();
    while let Some(word) = rest.next() {
        let (key, value) = word.split_once('=').unwrap_or((word.as_str(), ""));
        let is_job = ["job", "jobid"].iter().any(|k| key.eq_ignore_ascii_case(k));
        if is_job && !word.contains('=') {
            match rest.next() {
                Some(id) => words.push(format!("JobId={id}")),
                None => {
                    return Err(refuse(&[
                        &format!("Invalid input: {word}"),
                        "Request aborted",
                    ]))
                }
            }
        } else if key.eq_ignore_ascii_case("job") {
            words.push(format!("JobId={value}"));
        } else {
            words.push(word.clone());
        }
    }
    let pairs = split_pairs(&words);
    let has = |name: &str| pairs.iter().any(|(k, _, _)| k.eq_ignore_ascii_case(name));
    if has("JobId") || has("JobName") {
        parse_update_job(&pairs, now)
    } else if has("NodeName") {
        parse_update_node(&pairs)
    } else if has("PartitionName") {
        parse_update_partition(&pairs)
    } else if let Some(entity) = [
        "ReservationName",
        "Reservation",
        "StepId",
        "FrontendName",
        "SuspendExcNodes",
        "SuspendExcParts",
        "SuspendExcStates",
        "Layouts",
    ]
    .into_iter()
    .find(|e| has(e))
    {
        // Entities Slurm knows that this controller cannot change yet.
        Err(refuse(&[&format!(
            "scontrol: error: update of {entity} records is not supported"
        )]))
    } else {
        Err(refuse(&[
            "No valid entity in update command",
            "Input line must include \"NodeName\", \"PartitionName\", \"Reservation\", \"JobId\", or \"SlurmctldDebug\"",
        ]))
    }
}

fn parse_update_job(pairs: &[(&str, &str, &str)], now: i64) -> Result<CtlCommand, CtlError> {
    let mut r = v1::UpdateJobRequest::default();
    // Without a JobId, JobName= (the last one) names the jobs to change,
    // and UserId= narrows them to one user's.
    let by_name = !pairs
        .iter()
        .any(|(k, _, _)| k.eq_ignore_ascii_case("jobid"));
    let mut selected_name = String::new();
    let mut selected_uid = None;
    // A JobId that does not read is reported after the other values, as
    // Slurm reads the whole line before it looks at the id.
    let mut bad_job_id: Option<&str> = None;
    let some = |v: &str| Some(v.to_owned());
    let count = |what: &str, v: &str| -> Result<u32, CtlError> {
        v.trim().parse::<u32>().map_err(|_| invalid_value(what, v))
    };
    for (key, value, arg) in pairs {
        let v = *value;
        match key.to_ascii_lowercase().as_str() {
            "jobid" => match parse_job_list(&[v.to_owned()]) {
                Ok(filter) => r.filter = Some(filter),
                Err(_) => bad_job_id = Some(v),
            },
            // `TimeLimit=+30`, `TimeLimit+=30` (or `-`): changes the
            // current limit of the one job named before it.
            "timelimit" | "timelimit+" | "timelimit-" => {
                let sign = match key.as_bytes().last() {
                    Some(b'+') => Some(1),
                    Some(b'-') => Some(-1),
                    _ => match v.as_bytes().first() {
                        Some(b'+') => Some(1),
                        Some(b'-') => Some(-1),
                        _ => None,
                    },
                };
                let bad = || refuse(&["scontrol: error: Invalid TimeLimit value"]);
                let Some(sign) = sign else {
                    // Slurm's wording for a bad absolute limit.
                    let t = parse_time_limit(v).map_err(|_| bad())?;
                    r.time_limit = Some(time_limit(t));
                    continue;
                };
                let Some(filter) = &r.filter else {
                    if let Some(id) = bad_job_id {
                        return Err(refuse(&[&format!("scontrol: error: Invalid job ID {id}")]));
                    }
                    return Err(refuse(&[
                        "scontrol: error: JobId must precede TimeLimit increment or decrement",
                    ]));
                };
                if filter.job_ids.len() != 1 || !filter.array_tasks.is_empty() {
                    let named = pairs
                        .iter()
                        .find(|(k, _, _)| k.eq_ignore_ascii_case("jobid"))
                        .map_or("", |(_, v, _)| *v);
                    return Err(refuse(&[&format!(
                        "scontrol: error: Invalid job ID {named}"
                    )]));
                }
                let amount = if key.ends_with(['+', '-']) {
                    v
                } else {
                    &v[1..]
                };
                let minutes = match parse_time_limit(amount) {
                    Ok(TimeLimit::Minutes(m)) => i32::try_from(m).ok(),
                    _ => None,
                }
                .ok_or_else(bad)?;
                r.time_limit_change_minutes = Some(sign * minutes);
            }
            "timemin" => {
                let t = parse_time_limit(v).map_err(|_| invalid_bare("TimeMin"))?;
                r.time_min_minutes = Some(match t {
                    TimeLimit::Minutes(m) => m,
                    TimeLimit::Infinite => u32::MAX - 2,
                });
            }
            "partition" => r.partition = some(v),
            "name" | "jobname" if by_name => selected_name = v.to_owned(),
            "userid" if by_name => {
                let uid = crate::client::uid_for_name(v)
                    .filter(|uid| crate::client::user_name(*uid).is_some())
                    .ok_or_else(|| refuse(&[&format!("Invalid UserID: {v}"), "Request aborted"]))?;
                selected_uid = Some(uid);
            }
            "name" | "jobname" => r.name = some(v),
            "account" => r.account = some(v),
            "qos" => r.qos = some(v),
            "comment" => r.comment = some(v),
            "dependency" => r.dependency = some(v),
            "nice" => {
                let n = v
                    .trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|n| n.unsigned_abs() <= 2_147_483_645)
                    .ok_or_else(|| invalid_value("Nice", v))?;
                r.nice = Some(n);
            }
            "priority" => r.priority = Some(count("Priority", v)?),
            "numnodes" | "reqnodes" => {
                let nodes = |n: &str| {
                    n.trim().parse::<u32>().map_err(|_| {
                        refuse(&[&format!(
                            "scontrol: error: Invalid numeric value \"{v}\" for requested node count."
                        )])
                    })
                };
                let (min, max) = match v.split_once('-') {
                    Some((a, b)) => (nodes(a)?, Some(nodes(b)?)),
                    None => (nodes(v)?, None),
                };
                if max.is_some_and(|m| m < min) {
                    return Err(invalid_value("NumNodes", v));
                }
                r.min_nodes = Some(min);
                r.max_nodes = max;
            }
            "numtasks" | "reqprocs" => r.ntasks = Some(count("NumTasks", v)?),
            "cpuspertask" => r.cpus_per_task = Some(count("CPUsPerTask", v)?),
            "minmemorynode" => {
                let mb = parse_mem_mb(v.trim()).map_err(|_| invalid_value("MinMemoryNode", v))?;
                r.memory = Some(v1::update_job_request::Memory::MemPerNodeMb(mb));
            }
            "minmemorycpu" => {
                let mb = parse_mem_mb(v.trim()).map_err(|_| invalid_value("MinMemoryCPU", v))?;
                r.memory = Some(v1::update_job_request::Memory::MemPerCpuMb(mb));
            }
            "starttime" | "begintime" | "eligibletime" => {
                let t = parse_timestamp(v, now).map_err(|e| bad_time(&e))?;
                r.begin_time = Some(t);
            }
            "deadline" => {
                let t = parse_timestamp(v, now).map_err(|e| bad_time(&e))?;
                r.deadline = Some(t);
            }
            "features" => r.features = some(v),
            "prefer" => r.prefer = some(v),
            "burstbuffer" => r.burst_buffer = some(v),
            "reqnodelist" | "nodelist" => r.required_nodes = some(v),
            "excnodelist" => r.excluded_nodes = some(v),
            "requeue" => {
                r.requeue = Some(match v.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(invalid_value("Requeue", v)),
                });
            }
            "reservation" => r.reservation = some(v),
            "workdir" => r.work_dir = some(v),
            "stdout" => r.stdout_path = some(v),
            "stderr" => r.stderr_path = some(v),
            "arraytaskthrottle" => {
                r.array_task_throttle = Some(
                    v.trim()
                        .parse::<u32>()
                        .map_err(|_| invalid_bare("ArrayTaskThrottle"))?,
                )
            }
            "gres" => r.gres = some(v),
            "licenses" => r.licenses = some(v),
            "wckey" => r.wckey = some(v),
            "mailtype" => r.mail_type = some(v),
            "mailuser" => r.mail_user = some(v),
            "numcpus" => {
                let (min, max) = cpu_range(v)?;
                r.min_cpus = Some(min);
                r.max_cpus = max;
            }
            "mincpusnode" => {
                r.min_cpus_per_node = Some(
                    v.parse::<u32>()
                        .map_err(|_| invalid_value("MinCPUsNode", v))?,
                );
            }
            "contiguous" => {
                r.contiguous = Some(yes_no_count(v).ok_or_else(|| invalid_value("Contiguous", v))?)
            }
            "oversubscribe" | "shared" => {
                let on = yes_no_count(v).ok_or_else(|| invalid_value("OverSubscribe", v))?;
                r.sharing = Some(if on {
                    v1::NodeSharing::Oversubscribe as i32
                } else {
                    v1::NodeSharing::Exclusive as i32
                });
            }
            "reboot" => r.reboot = Some(yes_no_count(v).ok_or_else(|| invalid_value("reboot", v))?),
            "admincomment" => r.admin_comment = some(v),
            _ => return Err(unsupported(arg)),
        }
    }
    if by_name {
        // Slurm looks the jobs up even when nothing is to change.
        return Ok(CtlCommand::UpdateJobsNamed {
            name: selected_name,
            uid: selected_uid,
            request: Box::new(r),
        });
    }
    if pairs.len() < 2 {
        // `JobId=` alone.
        return Err(refuse(&["No changes specified"]));
    }
    if let Some(v) = bad_job_id {
        return Err(CtlError::hushable(vec![format!(
            "{} for job {v}",
            ErrorCode::InvalidJobId
        )]));
    }
    Ok(CtlCommand::UpdateJob(Box::new(r)))
}

/// `NumCPUs=MIN[-MAX]`, each count with an optional `k` (×1024) or `m`
/// (×1048576) as Slurm reads it; an empty value is any count from one.
fn cpu_range(v: &str) -> Result<(u32, Option<u32>), CtlError> {
    const MOST: u32 = i32::MAX as u32;
    if v.is_empty() {
        return Ok((1, Some(MOST)));
    }
    let count = |text: &str| -> Result<u32, CtlError> {
        let (digits, scale) = match text.char_indices().last() {
            Some((at, 'k' | 'K')) => (&text[..at], 1024u64),
            Some((at, 'm' | 'M')) => (&text[..at], 1024 * 1024),
            _ => (text, 1),
        };
        digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .filter(|n| *n <= u64::from(MOST))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                CtlError::new(vec![
                    format!("scontrol: error: Invalid numeric value \"{v}\" for NumCPUs."),
                    format!("scontrol: error: Invalid NumCPUs value: {v}"),
                ])
            })
    };
    let (min, max) = match v.split_once('-') {
        Some((lo, hi)) if !lo.is_empty() => (count(lo)?, Some(count(hi)?)),
        _ => (count(v)?, None),
    };
    if min == 0 || max.is_some_and(|m| m < min) {
        return Err(invalid_value("NumCPUs", v));
    }
    Ok((min, max))
}

/// `YES`/`NO` (or the start of either, any case), or a count: 0 is no.
fn yes_no_count(v: &str) -> Option<bool> {
    let lower = v.to_ascii_lowercase();
    if !lower.is_empty() && "yes".starts_with(&lower) {
        Some(true)
    } else if !lower.is_empty() && "no".starts_with(&lower) {
        Some(false)
    } else {
        lower.parse::<u16>().ok().map(|n| n > 0)
    }
}

/// A `StartTime=`/`Deadline=` Slurm cannot read: its position notice,
/// then the update is dropped as Slurm drops it.
fn bad_time(e: &slurm_common::time::TimeError) -> CtlError {
    CtlError::new(
        e.slurm_notice()
            .into_iter()
            .chain(["No changes specified".to_owned()])
            .collect(),
    )
}

/// `State=` values of `update NodeName=`.
fn node_state(v: &str) -> Option<v1::NodeStateUpdate> {
    use v1::NodeStateUpdate as S;
    Some(match v.to_ascii_uppercase().as_str() {
        "DRAIN" => S::Drain,
        "RESUME" => S::Resume,
        "UNDRAIN" => S::Undrain,
        "DOWN" => S::Down,
        "FAIL" => S::Fail,
        "IDLE" => S::Idle,
        "FUTURE" => S::Future,
        "NORESP" => S::NoResp,
        "POWER_DOWN" | "POWER_DOWN_ASAP" | "POWER_DOWN_FORCE" => S::PowerDown,
        "POWER_UP" => S::PowerUp,
        "CANCEL_REBOOT" => S::CancelReboot,
        _ => return None,
    })
}

fn parse_update_node(pairs: &[(&str, &str, &str)]) -> Result<CtlCommand, CtlError> {
    let mut r = v1::UpdateNodeRequest::default();
    let some = |v: &str| Some(v.to_owned());
    for (key, value, arg) in pairs {
        let v = *value;
        match key.to_ascii_lowercase().as_str() {
            "nodename" => r.nodes = v.to_owned(),
            "state" => {
                let s = node_state(v).ok_or_else(|| {
                    CtlError::new(vec![
                        format!("Invalid input: {arg}"),
                        "Request aborted".to_owned(),
                        "Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN".to_owned(),
                        "Not all states are valid given a node's prior state".to_owned(),
                    ])
                })?;
                r.state = s as i32;
            }
            "reason" => r.reason = some(v),
            "features" | "availablefeatures" => r.features = some(v),
            "activefeatures" => r.active_features = some(v),
            "gres" => r.gres = some(v),
            "weight" => {
                r.weight = Some(v.trim().parse::<u32>().map_err(|_| {
                    refuse(&[
                        &format!("scontrol: error: Weight value ({v}) is not a valid number"),
                        "No changes specified",
                    ])
                })?);
            }
            "comment" => r.comment = some(v),
            _ => return Err(unsupported(arg)),
        }
    }
    use v1::NodeStateUpdate as S;
    let needs_reason = [S::Down as i32, S::Drain as i32, S::Fail as i32].contains(&r.state);
    if needs_reason && r.reason.as_deref().is_none_or(str::is_empty) {
        return Err(refuse(&[
            "You must specify a reason when DOWNING or DRAINING a node. Request denied",
        ]));
    }
    Ok(CtlCommand::UpdateNode(Box::new(r)))
}

/// `update PartitionName=NAME Key=Value...`: the keys of a PartitionName
/// line of slurm.conf, checked here as the controller checks them.
fn parse_update_partition(pairs: &[(&str, &str, &str)]) -> Result<CtlCommand, CtlError> {
    let (name, attributes) =
        partition_options(pairs).map_err(|e| CtlError::new(partition_update_refusal(&e)))?;
    if name.is_empty() {
        return Err(refuse(&[
            "Invalid input: PartitionName=",
            "Request aborted",
        ]));
    }
    Ok(CtlCommand::UpdatePartition(Box::new(
        v1::UpdatePartitionRequest { name, attributes },
    )))
}

/// The lines for a partition creation with a key or value refused.
fn partition_create_refusal(e: slurm_common::conf::PartitionUpdateError) -> CtlError {
    use slurm_common::conf::PartitionUpdateError;
    let mut lines = vec![e.to_string(), "Request aborted".to_owned()];
    if let PartitionUpdateError::Invalid { key, .. } = &e {
        if key == "State" {
            lines.push("Acceptable State values are UP, DOWN, DRAIN and INACTIVE".to_owned());
        }
    }
    CtlError::new(lines)
}

/// Slurm's lines for `update PartitionName=...` with a key or value it
/// refuses, which depend on the kind of value.
fn partition_update_refusal(e: &slurm_common::conf::PartitionUpdateError) -> Vec<String> {
    use slurm_common::conf::PartitionUpdateError;
    const FAILED: &str = "slurm_update error: No error";
    let (key, value) = match e {
        PartitionUpdateError::Unsupported { key, value } => {
            return vec![
                format!(
                    "scontrol: error: Update of this parameter is not supported: {key}={value}"
                ),
                String::new(),
                "scontrol: error: Request aborted".to_owned(),
                FAILED.to_owned(),
            ];
        }
        PartitionUpdateError::Invalid { key, value, .. } => (key.as_str(), value.as_str()),
    };
    let is = |names: &[&str]| names.iter().any(|n| n.eq_ignore_ascii_case(key));
    if is(&["MaxNodes", "MinNodes", "MaxCPUsPerNode"]) {
        return vec![format!(
            "scontrol: error: Invalid numeric value \"{value}\" for {key}."
        )];
    }
    if is(&["MaxTime", "DefaultTime", "OverTimeLimit"]) {
        return vec![
            format!("scontrol: error: Invalid input {key}={value}"),
            FAILED.to_owned(),
        ];
    }
    if is(&["PriorityTier", "PriorityJobFactor", "GraceTime"]) {
        return vec![
            format!("scontrol: error: Invalid {key} value: {value}"),
            FAILED.to_owned(),
        ];
    }
    let mut lines = vec![format!("scontrol: error: Invalid input: {key}={value}")];
    if is(&["State"]) {
        lines.push(
            "scontrol: error: Acceptable State values are UP, DOWN, DRAIN and INACTIVE".to_owned(),
        );
    } else if is(&[
        "Default",
        "Hidden",
        "RootOnly",
        "ReqResv",
        "LLN",
        "ExclusiveUser",
        "DisableRootJobs",
    ]) {
        lines.push(format!(
            "scontrol: error: Acceptable {key} values are YES and NO"
        ));
    }
    lines.push(FAILED.to_owned());
    lines
}

/// The PartitionName= value (empty when not given) and the other pairs of
/// a partition update or creation, in slurm.conf's spelling; Slurm's lines
/// for a key or value it refuses.
fn partition_options(
    pairs: &[(&str, &str, &str)],
) -> Result<(String, Vec<v1::ConfigEntry>), slurm_common::conf::PartitionUpdateError> {
    use slurm_common::conf::PartitionUpdate;
    let mut name = String::new();
    let mut attributes = Vec::new();
    for (key, value, _) in pairs {
        if key.eq_ignore_ascii_case("PartitionName") {
            name = value.to_string();
        } else {
            attributes.push((*key, *value));
        }
    }
    let update = PartitionUpdate::parse(attributes.iter().copied())?;
    let attributes = update
        .pairs()
        .iter()
        .map(|(k, v)| v1::ConfigEntry {
            key: (*k).to_owned(),
            value: v.clone(),
        })
        .collect();
    Ok((name, attributes))
}

/// `key=value` words as (key, value, word); a word without `=` has an
/// empty value.
fn split_pairs(args: &[String]) -> Vec<(&str, &str, &str)> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k, v, a.as_str()),
            None => (a.as_str(), "", a.as_str()),
        })
        .collect()
}

/// `create PartitionName=NAME Key=Value...`: the entity is the first word
/// whose key names one, as in Slurm; every word must then be a `Key=Value`
/// (so `create partition PartitionName=x` is refused, as Slurm refuses
/// it). Only partitions can be created here.
pub fn parse_create(args: &[String]) -> Result<CtlCommand, CtlError> {
    let pairs = split_pairs(args);
    let entity = pairs.iter().find_map(|(k, _, _)| {
        ["ReservationName", "PartitionName", "NodeName"]
            .into_iter()
            .find(|e| super::abbreviates(k, e, 3))
    });
    match entity {
        Some("PartitionName") => {}
        Some(entity) => {
            return Err(refuse(&[&format!(
                "scontrol: error: create of {entity} records is not supported"
            )]))
        }
        None => {
            let first = args.first().map_or("", String::as_str);
            return Err(refuse(&[&format!(
                "scontrol: error: Invalid creation entity: {first}"
            )]));
        }
    }
    if let Some((_, _, word)) = pairs.iter().find(|(_, _, w)| !w.contains('=')) {
        return Err(CtlError::new(vec![format!(
            "scontrol: error: Invalid input: {word}  Request aborted"
        )]));
    }
    let (name, attributes) = partition_options(&pairs).map_err(partition_create_refusal)?;
    // An empty name is the controller's to refuse, as in Slurm.
    if !pairs
        .iter()
        .any(|(k, _, _)| k.eq_ignore_ascii_case("PartitionName"))
    {
        return Err(refuse(&["scontrol: error: PartitionName must be given."]));
    }
    if name.eq_ignore_ascii_case("DEFAULT") {
        return Err(refuse(&[
            "scontrol: error: PartitionName cannot be \"DEFAULT\".",
        ]));
    }
    Ok(CtlCommand::CreatePartition(Box::new(
        v1::CreatePartitionRequest { name, attributes },
    )))
}

/// `delete PartitionName=NAME`: exactly one word. Only partitions can be
/// deleted here.
pub fn parse_delete(args: &[String]) -> Result<CtlCommand, CtlError> {
    let [word] = args else {
        return Err(refuse(&[
            "scontrol: error: Too many arguments for delete keyword",
        ]));
    };
    let Some((tag, value)) = word.split_once('=') else {
        return Err(refuse(&[
            "scontrol: error: Proper format is 'delete Partition=p' or 'delete Reservation=r'",
        ]));
    };
    if super::abbreviates(tag, "PartitionName", 3) {
        Ok(CtlCommand::DeletePartition {
            name: value.to_owned(),
            word: word.clone(),
        })
    } else if let Some(entity) = ["ReservationName", "NodeName"]
        .into_iter()
        .find(|e| super::abbreviates(tag, e, 3))
    {
        Err(refuse(&[&format!(
            "scontrol: error: delete of {entity} records is not supported"
        )]))
    } else {
        Err(CtlError::new(vec![format!(
            "Invalid deletion entity: {word}"
        )]))
    }
}

/// Slurm's error line for a refused `delete`: `delete_partition WORD`,
/// cut as Slurm cuts it (63 bytes), then the error's text.
fn delete_error_line(word: &str, e: &RpcError) -> String {
    let mut prefix = format!("delete_partition {word}");
    if prefix.len() > 63 {
        let mut end = 63;
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        prefix.truncate(end);
    }
    format!("{prefix}: {}", e.code.message())
}

impl CtlCommand {
    /// Whether `scontrol -Q` silences this command's errors, as Slurm
    /// 22.05's does: those of showing jobs, nodes, partitions and the
    /// like, and of acting on jobs.
    pub fn hushed_by_quiet(&self) -> bool {
        matches!(
            self,
            CtlCommand::ShowJobs { .. }
                | CtlCommand::ShowNodes { .. }
                | CtlCommand::ShowPartitions { .. }
                | CtlCommand::Hold { .. }
                | CtlCommand::Release { .. }
                | CtlCommand::Requeue { .. }
                | CtlCommand::UpdateJob(_)
                | CtlCommand::Suspend(_)
                | CtlCommand::Top(_)
        )
    }
}

/// Runs a controller command and returns its exit status.
pub fn execute(
    command: &CtlCommand,
    options: &Options,
    env: EnvLookup<'_>,
    out: &mut Output<'_>,
) -> i32 {
    let Some(config) = load_config(env, out) else {
        return 1;
    };
    // Hidden partitions show with -a, and always to root and SlurmUser.
    let mut options = options.clone();
    if matches!(command, CtlCommand::ShowPartitions { .. }) {
        options.all |= crate::client::sees_hidden_partitions(&config.conf);
    }
    match connect_with(&config, out) {
        Some(mut controller) => block_on(run(command, &options, env, &mut controller, out)),
        None => 1,
    }
}

/// A client of the controller slurm.conf names; `None` once the reason
/// it cannot be made is printed.
pub(super) fn connect(env: EnvLookup<'_>, out: &mut Output<'_>) -> Option<Controller> {
    connect_with(&load_config(env, out)?, out)
}

/// slurm.conf as the clients read it; `None` once why it cannot be read
/// is printed.
fn load_config(env: EnvLookup<'_>, out: &mut Output<'_>) -> Option<ClientConfig> {
    ClientConfig::load_with(env)
        .map_err(|e| out.error_line(&format!("scontrol: error: {e}")))
        .ok()
}

/// A client of the controller `config` names; `None` once why it cannot
/// be made is printed.
fn connect_with(config: &ClientConfig, out: &mut Output<'_>) -> Option<Controller> {
    Controller::new(config)
        .map_err(|e| out.error_line(&format!("scontrol: error: {e}")))
        .ok()
}

/// Every node the controller knows.
pub(super) async fn load_nodes(c: &mut Controller) -> Result<Vec<v1::NodeInfo>, RpcError> {
    let request = v1::GetNodesRequest {
        names: Vec::new(),
        partitions: Vec::new(),
        changed_since: 0,
    };
    c.call(|mut cl| {
        let request = request.clone();
        async move { cl.get_nodes(request).await }
    })
    .await
    .map(|r| r.nodes)
}

/// Prints `text` (which ends with a newline, or is empty) as is.
/// What Slurm prints for `show ENTITY [NAME]` when there is none of it:
/// (stdout text, stderr line, exit status). `name` for assoc_mgr is its
/// `flags=` selection (users, assoc, qos).
pub fn none_of(entity: &str, name: Option<&str>) -> (String, Option<String>, i32) {
    match (entity, name) {
        ("reservation", None) => ("No reservations in the system\n".into(), None, 0),
        ("reservation", Some(n)) => (format!("Reservation {n} not found\n"), None, 1),
        ("frontend", None) => ("No nodes in the system\n".into(), None, 0),
        ("frontend", Some(n)) => (format!("Node {n} not found\n"), None, 1),
        ("topology", None) => (
            String::new(),
            Some("scontrol: error: No topology information available".into()),
            0,
        ),
        ("topology", Some(n)) => (
            String::new(),
            Some(format!(
                "scontrol: error: Topology information contains no switch or node named {n}"
            )),
            0,
        ),
        ("assoc_mgr", flags) => {
            let wanted = flags
                .and_then(|f| {
                    f.split_whitespace().find_map(|w| {
                        w.get(..6)
                            .filter(|k| k.eq_ignore_ascii_case("flags="))
                            .map(|_| w[6..].to_ascii_lowercase())
                    })
                })
                .unwrap_or_default();
            let all = wanted.is_empty();
            let has = |k: &str| all || wanted.split(',').any(|w| w.starts_with(k));
            let mut text = String::from("Current Association Manager state\n");
            if has("user") {
                text.push_str("\nNo users currently cached in Slurm.\n\n");
            }
            if has("assoc") {
                text.push_str("\nNo associations currently cached in Slurm.\n\n");
            }
            if has("qos") {
                text.push_str("\nNo QOS currently cached in Slurm.\n\n");
            }
            (text, None, 0)
        }
        // burstbuffer, bbstat, dwstat, federation: nothing at all.
        _ => (String::new(), None, 0),
    }
}

async fn show_none(
    c: &mut Controller,
    entity: &str,
    name: Option<&str>,
    quiet: bool,
    out: &mut Output<'_>,
) -> i32 {
    if let Err(e) = c
        .call(|mut cl| async move { cl.ping(v1::PingRequest {}).await })
        .await
    {
        let call = match entity {
            "reservation" => "slurm_load_reservations",
            "frontend" => "slurm_load_front_end",
            "topology" => "slurm_load_topo",
            "assoc_mgr" => "slurm_load_assoc_mgr_info",
            "federation" => "slurm_load_federation",
            _ => "slurm_load_burst_buffer_info",
        };
        return fail(out, &format!("{call} error"), &e);
    }
    let (text, err, code) = none_of(entity, name);
    // `-Q` leaves out what says there are none (or not the one named) on
    // standard output, not the errors; assoc_mgr's report stays.
    let hushed = quiet && entity != "assoc_mgr";
    if !text.is_empty() && !hushed {
        out.block("scontrol", &text);
    }
    if let Some(line) = err {
        out.error_line(&line);
    }
    code
}

fn fail(out: &mut Output<'_>, prefix: &str, e: &RpcError) -> i32 {
    out.error_line(&format!("{prefix}: {e}"));
    1
}

/// The exit status of a node or partition update: on error, Slurm's
/// line, then what the controller named.
fn update_status<T>(out: &mut Output<'_>, reply: Result<T, RpcError>) -> i32 {
    status_after(out, "slurm_update error", reply)
}

/// The exit status of a change: on error, `prefix: <Slurm's text>`, then
/// what the controller named.
fn status_after<T>(out: &mut Output<'_>, prefix: &str, reply: Result<T, RpcError>) -> i32 {
    match reply {
        Ok(_) => 0,
        Err(e) => {
            let code = fail(out, prefix, &e);
            if let Some(detail) = e.extra_detail() {
                out.error_line(detail);
            }
            code
        }
    }
}

/// Reports per-job results as `<error> for job <id>`; 1 if any failed.
pub(super) fn report_results(out: &mut Output<'_>, results: &[v1::JobActionResult]) -> i32 {
    let mut code = 0;
    for r in results.iter().filter(|r| r.error_code != 0) {
        let id = match r.array_task_id {
            Some(t) => format!("{}_{t}", r.job_id),
            None => r.job_id.to_string(),
        };
        let err = ErrorCode::from_number_or_unspecified(r.error_code);
        out.error_line(&format!("{err} for job {id}"));
        code = 1;
    }
    code
}

/// The job `show job ID` asks for, read as Slurm reads ID: `N`, `N_T`
/// (an array task), `N+C` (a component of a heterogeneous job; every job
/// here is its own component 0), `N_T+C`; an empty word or 0 is every job.
/// `N_` and `N+` read the missing number as 0 and as "any".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShowJobId {
    All,
    /// A job id above what a job id can hold: no such job.
    Unknown,
    Job {
        job: u32,
        component: Option<u32>,
    },
    Task {
        job: u32,
        task: u32,
        component: Option<u32>,
    },
}

impl ShowJobId {
    /// `None` for a word that is no job id (`6,7`, `6abc`, `2_[1-3]`).
    pub fn parse(word: &str) -> Option<ShowJobId> {
        fn number(s: &str) -> Option<u64> {
            if s.is_empty() {
                return Some(0);
            }
            if !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Digits past what fits read as a number no job has.
            Some(s.parse::<u64>().unwrap_or(u64::MAX))
        }
        if word.is_empty() {
            return Some(ShowJobId::All);
        }
        let (head, component) = match word.split_once('+') {
            Some((head, "")) => (head, None),
            Some((head, c)) => (head, Some(number(c)?)),
            None => (word, None),
        };
        let (job, task) = match head.split_once('_') {
            Some((job, task)) => (job, Some(number(task)?)),
            None => (head, None),
        };
        if job.is_empty() {
            return None;
        }
        let job = number(job)?;
        if job == 0 {
            return Some(ShowJobId::All);
        }
        let Ok(job) = u32::try_from(job) else {
            return Some(ShowJobId::Unknown);
        };
        let component = component.map(|c| u32::try_from(c).unwrap_or(u32::MAX));
        Some(match task {
            None => ShowJobId::Job { job, component },
            Some(task) => ShowJobId::Task {
                job,
                task: u32::try_from(task).unwrap_or(u32::MAX),
                component,
            },
        })
    }

    /// What to ask the controller for.
    fn filter(self) -> v1::JobFilter {
        let mut filter = v1::JobFilter::default();
        match self {
            ShowJobId::All => {}
            // Job id 0 is never given out: nothing matches it.
            ShowJobId::Unknown => filter.job_ids.push(0),
            ShowJobId::Job { job, .. } => filter.job_ids.push(job),
            ShowJobId::Task { job, task, .. } => filter.array_tasks.push(v1::ArrayTaskSelector {
                array_job_id: job,
                task_spec: task.to_string(),
            }),
        }
        filter
    }

    /// Whether the jobs loaded are the ones asked for: a component other
    /// than 0, or a task of a job that is no array, is not there.
    fn matches(self, jobs: &[v1::JobInfo]) -> bool {
        match self {
            ShowJobId::All | ShowJobId::Unknown => true,
            ShowJobId::Job { component, .. } => component.unwrap_or(0) == 0,
            ShowJobId::Task {
                task, component, ..
            } => {
                component.unwrap_or(0) == 0
                    && jobs.iter().any(|j| {
                        j.array_task_id == Some(task) || task_spec_holds(&j.array_task_spec, task)
                    })
            }
        }
    }

    /// Keeps only the record of the task asked for; the still-pending rest
    /// of an array shows as that one task, as Slurm shows it.
    fn narrow(self, jobs: &mut Vec<v1::JobInfo>) {
        let ShowJobId::Task { task, .. } = self else {
            return;
        };
        jobs.retain(|j| j.array_task_id == Some(task) || task_spec_holds(&j.array_task_spec, task));
        for job in jobs.iter_mut().filter(|j| j.array_task_id != Some(task)) {
            job.array_task_spec.clear();
            job.array_task_id = Some(task);
        }
    }

    /// The id as Slurm's `Job ... not found` line names it.
    fn missing_name(self) -> String {
        match self {
            ShowJobId::All | ShowJobId::Unknown => String::new(),
            ShowJobId::Job { job, component } => match component {
                Some(c) => format!("{job}+{c}"),
                None => job.to_string(),
            },
            ShowJobId::Task { job, task, .. } => format!("{job}_{task}"),
        }
    }
}

/// Whether an array's pending task list (`1-33:2`, `0,4-6%2`) holds `task`.
fn task_spec_holds(spec: &str, task: u32) -> bool {
    let spec = spec.split('%').next().unwrap_or_default();
    spec.split(',').any(|range| {
        let (range, step) = match range.split_once(':') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)),
            None => (range, Some(1)),
        };
        let Some(step) = step else {
            return false;
        };
        let (lo, hi) = match range.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u32>().ok(), hi.parse::<u32>().ok()),
            None => (range.parse::<u32>().ok(), range.parse::<u32>().ok()),
        };
        matches!((lo, hi), (Some(lo), Some(hi)) if (lo..=hi).contains(&task) && (task - lo) % step == 0)
    })
}

/// A `TimeLimit=+N` / `-N` change made into the limit to set, from the
/// job's current one, as Slurm's scontrol does: it loads the job first
/// (the sum wraps around as Slurm's 32-bit one does, so `+10` on an
/// UNLIMITED job gives 9 minutes). Err(status) once the refusal is printed.
async fn settle_time_limit_change(
    c: &mut Controller,
    request: &mut v1::UpdateJobRequest,
    out: &mut Output<'_>,
) -> Result<(), i32> {
    let Some(delta) = request.time_limit_change_minutes else {
        return Ok(());
    };
    let Some(filter) = request.filter.clone() else {
        return Ok(());
    };
    let id = filter.job_ids.first().copied().unwrap_or(0);
    let job = match load_jobs(c, filter, false, false).await {
        Ok(reply) => reply.jobs.into_iter().find(|j| j.job_id == id),
        Err(e) => {
            out.error_line(&format!(
                "scontrol: error: Could not load state information for job {id}: {e}"
            ));
            return Err(1);
        }
    };
    let Some(job) = job else {
        out.error_line(&format!(
            "scontrol: error: Could not load state information for job {id}: {}",
            ErrorCode::InvalidJobId
        ));
        return Err(1);
    };
    let current = match job.time_limit.and_then(|t| t.limit) {
        Some(v1::time_limit::Limit::Minutes(m)) => m,
        _ => u32::MAX,
    };
    let by = delta.unsigned_abs();
    let limit = if delta < 0 {
        if by > current {
            out.error_line(&format!(
                "scontrol: error: TimeLimit decrement larger than current time limit \
                 ({by} > {current})"
            ));
            return Err(1);
        }
        current - by
    } else {
        current.wrapping_add(by)
    };
    request.time_limit_change_minutes = None;
    request.time_limit = Some(time_limit(if limit == u32::MAX {
        TimeLimit::Infinite
    } else {
        TimeLimit::Minutes(limit)
    }));
    Ok(())
}

/// The jobs `filter` selects; with `hide_hidden`, not those of hidden
/// partitions (unless the caller is root or SlurmUser).
async fn load_jobs(
    c: &mut Controller,
    filter: v1::JobFilter,
    detail: bool,
    hide_hidden: bool,
) -> Result<v1::GetJobsReply, RpcError> {
    let request = v1::GetJobsRequest {
        filter: Some(filter),
        changed_since: 0,
        detail,
        fields: Vec::new(),
        hide_hidden,
    };
    c.call(|mut cl| {
        let request = request.clone();
        async move { cl.get_jobs(request).await }
    })
    .await
}

/// The records of the entities that `expr` names (a hostlist expression;
/// a word that is not one is taken as one name), in the order named, each
/// missing one replaced by Slurm's `<what> NAME not found` line; and
/// whether any was missing.
fn render_named<T: Clone>(
    expr: &str,
    all: &[T],
    name_of: impl Fn(&T) -> &String,
    what: &str,
    render_one: impl Fn(&[T]) -> String,
    quiet: bool,
) -> (String, bool) {
    let names = crate::format::checks::slurm_host_names(expr);
    let mut text = String::new();
    let mut missing = false;
    for wanted in &names {
        match all.iter().find(|item| name_of(item) == wanted) {
            Some(item) => text.push_str(&render_one(std::slice::from_ref(item))),
            // `-Q` leaves the line out (the exit status still says it).
            None => {
                missing = true;
                if !quiet {
                    text.push_str(&format!("{what} {wanted} not found\n"));
                }
            }
        }
    }
    (text, missing)
}

/// Prints `text` on standard output; exit status 1 when `failed`, as
/// Slurm's scontrol gives when a named entity does not exist.
fn block_then_status(out: &mut Output<'_>, text: &str, failed: bool) -> i32 {
    let code = out.block("scontrol", text);
    if failed {
        1
    } else {
        code
    }
}

async fn run(
    command: &CtlCommand,
    options: &Options,
    env: EnvLookup<'_>,
    c: &mut Controller,
    out: &mut Output<'_>,
) -> i32 {
    let oneliner = options.oneliner;
    match command {
        CtlCommand::Ping => ping(c, out).await,
        CtlCommand::ShowNone { entity, name } => {
            show_none(c, entity, name.as_deref(), options.quiet, out).await
        }
        CtlCommand::Suspend(cmd) => super::suspend::suspend(c, cmd, out).await,
        CtlCommand::Top(cmd) => super::suspend::top(c, cmd, out).await,
        CtlCommand::Takeover { index } => takeover(c, *index, out).await,
        CtlCommand::Reconfigure => {
            match c
                .call(|mut cl| async move { cl.reconfigure(v1::ReconfigureRequest {}).await })
                .await
            {
                Ok(_) => 0,
                Err(e) => {
                    // Slurm's line, then why the controller refused it.
                    let code = fail(out, "slurm_reconfigure error", &e);
                    if let Some(detail) = e.extra_detail() {
                        out.error_line(detail);
                    }
                    code
                }
            }
        }
        CtlCommand::ShowJobs { id } => {
            let selector = match id.as_deref().map(ShowJobId::parse) {
                None => ShowJobId::All,
                Some(Some(sel)) => sel,
                Some(None) => {
                    out.error_line("scontrol_print_job error: Invalid job id specified");
                    return 1;
                }
            };
            let detail = options.details > 0;
            // As Slurm: a job named is shown whatever its partition; the
            // whole list leaves hidden partitions' jobs out without -a.
            let hide_hidden = selector == ShowJobId::All && !options.all;
            let reply = load_jobs(c, selector.filter(), detail, hide_hidden).await;
            let nothing = reply.as_ref().map_or(true, |r| r.jobs.is_empty());
            let reply = match selector {
                // An array task that is not there: Slurm tells it apart from
                // an array (or a job) that is not there at all, which the
                // records of the whole job decide.
                ShowJobId::Task { job, .. } if nothing => {
                    let whole = v1::JobFilter {
                        job_ids: vec![job],
                        ..v1::JobFilter::default()
                    };
                    load_jobs(c, whole, false, false).await
                }
                _ => reply,
            };
            match reply {
                Ok(r) if r.jobs.is_empty() && selector != ShowJobId::All => {
                    out.error_line("slurm_load_jobs error: Invalid job id specified");
                    1
                }
                Ok(r) if r.jobs.is_empty() => out.block("scontrol", "No jobs in the system\n"),
                Ok(r) if !selector.matches(&r.jobs) => {
                    let text = format!("Job {} not found\n", selector.missing_name());
                    block_then_status(out, if options.quiet { "" } else { &text }, true)
                }
                Ok(mut r) => {
                    selector.narrow(&mut r.jobs);
                    // The per-node allocation lines (`Nodes=n1 CPU_IDs=...`)
                    // are part of the details (`-d`) only, as in Slurm.
                    if options.details == 0 {
                        for job in &mut r.jobs {
                            job.resources = None;
                        }
                    }
                    // Names are resolved where the command runs, as Slurm's
                    // scontrol does: the controller sends ids.
                    let mut names = std::collections::HashMap::new();
                    for job in r.jobs.iter_mut().filter(|j| j.group_name.is_empty()) {
                        if let Some(name) = names
                            .entry(job.group_id)
                            .or_insert_with(|| crate::client::group_name(job.group_id))
                        {
                            job.group_name.clone_from(name);
                        }
                    }
                    out.block(
                        "scontrol",
                        &render::show_jobs_detailed(
                            &r.jobs,
                            oneliner,
                            options.details > 0,
                            &Ctx::system(unix_now()),
                        ),
                    )
                }
                Err(e) => fail(out, "slurm_load_jobs error", &e),
            }
        }
        CtlCommand::ShowNodes { name } => {
            if let Some(Err(e)) = name.as_deref().map(crate::format::checks::check_hostlist) {
                // As Slurm: a range it cannot read has a line of its own.
                if !matches!(e, crate::format::checks::HostlistCheckError::AfterBracket) {
                    out.error_line(&format!("scontrol: error: {e}"));
                }
                out.error_line(&format!(
                    "unable to parse node list {}",
                    name.as_deref().unwrap_or_default()
                ));
                return 1;
            }
            // Every node is loaded and the names are matched here, as
            // Slurm's scontrol does: each name of the expression is shown
            // in its turn, or reported missing on standard output.
            let request = v1::GetNodesRequest {
                names: Vec::new(),
                partitions: Vec::new(),
                changed_since: 0,
            };
            let reply = c
                .call(|mut cl| {
                    let request = request.clone();
                    async move { cl.get_nodes(request).await }
                })
                .await;
            match reply {
                Ok(mut r) => {
                    // FUTURE nodes only with --future, even when named, as
                    // in Slurm.
                    if !options.future {
                        r.nodes.retain(|n| {
                            render::node_state(n).base != slurm_common::state::NodeBaseState::Future
                        });
                    }
                    let ctx = Ctx::system(unix_now());
                    match name {
                        Some(expr) => {
                            let (text, missing) = render_named(
                                expr,
                                &r.nodes,
                                |n| &n.name,
                                "Node",
                                |found| render::show_nodes(found, oneliner, &ctx),
                                options.quiet,
                            );
                            block_then_status(out, &text, missing)
                        }
                        None if r.nodes.is_empty() => {
                            out.block("scontrol", "No nodes in the system\n")
                        }
                        None => {
                            out.block("scontrol", &render::show_nodes(&r.nodes, oneliner, &ctx))
                        }
                    }
                }
                Err(e) => fail(out, "slurm_load_node error", &e),
            }
        }
        CtlCommand::ShowPartitions { name } => {
            // All partitions are loaded and the name matched as given (no
            // list, no expression), as Slurm's scontrol does.
            let request = v1::GetPartitionsRequest {
                names: Vec::new(),
                changed_since: 0,
            };
            let reply = c
                .call(|mut cl| {
                    let request = request.clone();
                    async move { cl.get_partitions(request).await }
                })
                .await;
            let reply = reply.map(|mut r| {
                if !options.all {
                    // Hidden ones, and those whose AllowGroups the user
                    // is in none of, as Slurm keeps them from users.
                    let groups = if r.partitions.iter().any(|p| !p.allow_groups.is_empty()) {
                        crate::client::my_group_names()
                    } else {
                        Vec::new()
                    };
                    r.partitions.retain(|p| {
                        !p.hidden && !crate::client::groups_denied(&p.allow_groups, &groups)
                    });
                }
                r
            });
            match reply {
                Ok(r) => match name {
                    Some(n) => {
                        let found: Vec<v1::PartitionInfo> = r
                            .partitions
                            .iter()
                            .filter(|p| &p.name == n)
                            .cloned()
                            .collect();
                        if found.is_empty() {
                            let text = format!("Partition {n} not found\n");
                            block_then_status(out, if options.quiet { "" } else { &text }, true)
                        } else {
                            out.block("scontrol", &render::show_partitions(&found, oneliner))
                        }
                    }
                    None if r.partitions.is_empty() => {
                        out.block("scontrol", "No partitions in the system\n")
                    }
                    None => out.block(
                        "scontrol",
                        &render::show_partitions(&r.partitions, oneliner),
                    ),
                },
                Err(e) => fail(out, "slurm_load_partitions error", &e),
            }
        }
        CtlCommand::ShowConfig => {
            let reply = c
                .call(|mut cl| async move { cl.get_config(v1::GetConfigRequest {}).await })
                .await;
            match reply {
                Ok(r) => {
                    let status = out.block(
                        "scontrol",
                        &render::show_config(&r, &Ctx::system(unix_now())),
                    );
                    if status != 0 || out.line("").is_err() {
                        return 1;
                    }
                    // Slurm ends the listing with the state of each
                    // controller.
                    ping(c, out).await;
                    0
                }
                Err(e) => fail(out, "slurm_load_ctl_conf error", &e),
            }
        }
        CtlCommand::ShowLicenses { name } => {
            let reply = c
                .call(|mut cl| async move { cl.get_licenses(v1::GetLicensesRequest {}).await })
                .await;
            match reply {
                Ok(r) => out.block(
                    "scontrol",
                    &render::show_licenses(&r.licenses, name.as_deref(), oneliner),
                ),
                Err(e) => fail(out, "slurm_load_license error", &e),
            }
        }
        CtlCommand::Hold { words, user } => {
            job_words(out, words, ListCall::Hold { user: *user }, c).await
        }
        CtlCommand::Release { words } => job_words(out, words, ListCall::Release, c).await,
        CtlCommand::Requeue { words, hold } => {
            job_words(out, words, ListCall::Requeue { hold: *hold }, c).await
        }
        CtlCommand::UpdateJob(request) => {
            let mut request = (**request).clone();
            if let Err(code) = settle_time_limit_change(c, &mut request, out).await {
                return code;
            }
            let code = send_update_job(c, &request, out).await;
            if code == 0 && request.min_nodes.is_some() {
                resize_files(c, &request, env, out).await;
            }
            code
        }
        CtlCommand::UpdateJobsNamed { name, uid, request } => {
            update_jobs_named(c, name, *uid, request, out).await
        }
        CtlCommand::UpdatePartition(request) => {
            let reply = c
                .call(|mut cl| {
                    let request = (**request).clone();
                    async move { cl.update_partition(request).await }
                })
                .await;
            update_status(out, reply)
        }
        CtlCommand::CreatePartition(request) => {
            let reply = c
                .call(|mut cl| {
                    let request = (**request).clone();
                    async move { cl.create_partition(request).await }
                })
                .await;
            status_after(out, "Error creating the partition", reply)
        }
        CtlCommand::DeletePartition { name, word } => {
            let reply = c
                .call(|mut cl| {
                    let request = v1::DeletePartitionRequest { name: name.clone() };
                    async move { cl.delete_partition(request).await }
                })
                .await;
            match reply {
                Ok(_) => 0,
                Err(e) => {
                    out.error_line(&delete_error_line(word, &e));
                    1
                }
            }
        }
        CtlCommand::UpdateNode(request) => {
            let reply = c
                .call(|mut cl| {
                    let request = (**request).clone();
                    async move { cl.update_node(request).await }
                })
                .await;
            match reply {
                // Slurm's line says it all: no name after it.
                Err(e) if e.code == ErrorCode::InvalidNodeName => {
                    fail(out, "slurm_update error", &e)
                }
                reply => update_status(out, reply),
            }
        }
    }
}

/// The call a job list command makes for each of its words.
#[derive(Debug, Clone, Copy)]
enum ListCall {
    Hold { user: bool },
    Release,
    Requeue { hold: bool },
}

/// Sends each word of a job list command on its own and reports each;
/// 1 if any failed.
async fn job_words(
    out: &mut Output<'_>,
    words: &[JobWord],
    call: ListCall,
    c: &mut Controller,
) -> i32 {
    let verb = match call {
        ListCall::Requeue { .. } => ListVerb::Requeue,
        ListCall::Hold { .. } | ListCall::Release => ListVerb::Hold,
    };
    let mut code = 0;
    for word in words {
        let reply = match &word.filter {
            None => Ok(Vec::new()),
            Some(filter) => {
                let filter = Some(filter.clone());
                let reply = match call {
                    ListCall::Hold { user } => {
                        let request = v1::HoldJobRequest {
                            filter,
                            user_hold: user,
                        };
                        c.call(|mut cl| {
                            let request = request.clone();
                            async move { cl.hold_job(request).await }
                        })
                        .await
                    }
                    ListCall::Release => {
                        let request = v1::ReleaseJobRequest { filter };
                        c.call(|mut cl| {
                            let request = request.clone();
                            async move { cl.release_job(request).await }
                        })
                        .await
                    }
                    ListCall::Requeue { hold } => {
                        let request = v1::RequeueJobRequest {
                            filter,
                            hold,
                            special_exit: false,
                        };
                        c.call(|mut cl| {
                            let request = request.clone();
                            async move { cl.requeue_job(request).await }
                        })
                        .await
                    }
                };
                reply.map(|r| r.results)
            }
        };
        match reply {
            Ok(results) => {
                let (lines, failed) = word_report(word, &results, verb);
                for line in &lines {
                    out.error_line(line);
                }
                if failed {
                    code = 1;
                }
            }
            Err(e) => code = fail(out, "slurm_update error", &e),
        }
    }
    code
}

/// `update JobName=NAME [UserId=USER] ...`: the ids of the jobs called
/// NAME (of USER, if given), in any state, then the update of those ids.
async fn update_jobs_named(
    c: &mut Controller,
    name: &str,
    uid: Option<u32>,
    request: &v1::UpdateJobRequest,
    out: &mut Output<'_>,
) -> i32 {
    let lookup = v1::GetJobsRequest {
        hide_hidden: false,
        filter: Some(v1::JobFilter {
            names: vec![name.to_owned()],
            user_ids: uid.into_iter().collect(),
            states: Vec::new(),
            ..v1::JobFilter::default()
        }),
        changed_since: 0,
        detail: false,
        // job_id
        fields: vec![1],
    };
    let jobs = match c
        .call(|mut cl| {
            let lookup = lookup.clone();
            async move { cl.get_jobs(lookup).await }
        })
        .await
    {
        Ok(r) => r.jobs,
        Err(e) => return fail(out, "slurm_load_jobs error", &e),
    };
    // The controller selects by name and user.
    let mut ids: Vec<u32> = jobs.iter().map(|j| j.job_id).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        let line = match uid {
            Some(u) => format!("scontrol: error: No jobs with user ID {u} and name '{name}'"),
            None => format!("scontrol: error: No jobs with name '{name}'"),
        };
        out.error_line(&line);
        return 1;
    }
    let mut request = request.clone();
    request.filter = Some(v1::JobFilter {
        job_ids: ids,
        ..v1::JobFilter::default()
    });
    send_update_job(c, &request, out).await
}

/// Sends a job update and prints what failed, per job; the exit status.
async fn send_update_job(
    c: &mut Controller,
    request: &v1::UpdateJobRequest,
    out: &mut Output<'_>,
) -> i32 {
    let reply = c
        .call(|mut cl| {
            let request = request.clone();
            async move { cl.update_job(request).await }
        })
        .await;
    job_action(out, reply)
}

/// After `NumNodes=` was taken for the job `SLURM_JOBID` names (the job
/// scontrol runs in): the files that set its environment to its size now,
/// in the current directory (`scontrol::resize`). Nothing here changes
/// the exit status, as in Slurm.
async fn resize_files(
    c: &mut Controller,
    request: &v1::UpdateJobRequest,
    env: EnvLookup<'_>,
    out: &mut Output<'_>,
) {
    let Some(id) = env("SLURM_JOBID").and_then(|v| super::resize::env_job_id(&v.to_string_lossy()))
    else {
        return;
    };
    let named = request.filter.as_ref().map(|f| f.job_ids.as_slice());
    if named != Some(&[id][..]) {
        return;
    }
    let filter = v1::JobFilter {
        job_ids: vec![id],
        ..v1::JobFilter::default()
    };
    let lookup = |text: &dyn std::fmt::Display| format!("slurm_allocation_lookup: {text}");
    let job = match load_jobs(c, filter, true, false).await {
        Ok(reply) => reply.jobs.into_iter().find(|j| j.job_id == id),
        Err(e) => return out.error_line(&lookup(&e.code)),
    };
    let Some(job) = job else {
        return out.error_line(&lookup(&ErrorCode::InvalidJobId));
    };
    if job.state == v1::JobState::Pending as i32 {
        return out.error_line(&lookup(&ErrorCode::JobPending));
    }
    let allocation = super::resize::Allocation {
        job_id: id,
        nodes: job.nodes.clone(),
        node_count: job.num_nodes,
        cpus_per_node: job
            .resources
            .as_ref()
            .map(|r| r.nodes.iter().map(|n| n.cpus).collect())
            .unwrap_or_default(),
    };
    match allocation.write_files(std::path::Path::new(".")) {
        Ok(()) => {
            let _ = out.line(allocation.message().trim_end_matches('\n'));
        }
        Err(e) => out.error_line(&e),
    }
}

fn job_action(out: &mut Output<'_>, reply: Result<v1::JobActionReply, RpcError>) -> i32 {
    match reply {
        Ok(r) => report_results(out, &r.results),
        Err(e) => fail(out, "slurm_update error", &e),
    }
}

/// The role word `scontrol ping` prints for SlurmctldHost `index` of
/// `count`: `primary`, `backup` when there is one backup, else `backupN`.
pub fn role_word(index: usize, count: usize) -> String {
    match index {
        0 => "primary".to_owned(),
        1 if count <= 2 => "backup".to_owned(),
        i => format!("backup{i}"),
    }
}

/// One `scontrol ping` line.
pub fn ping_line(index: usize, count: usize, name: &str, up: bool) -> String {
    format!(
        "Slurmctld({}) at {name} is {}",
        role_word(index, count),
        if up { "UP" } else { "DOWN" }
    )
}

/// `scontrol ping`: asks every controller in turn. The status is 0 when
/// at least one answers.
async fn ping(c: &Controller, out: &mut Output<'_>) -> i32 {
    let mut any_up = false;
    let count = c.controllers().len();
    for addr in c.controllers().to_vec() {
        let up = match c
            .call_one(
                &addr,
                |mut cl| async move { cl.ping(v1::PingRequest {}).await },
            )
            .await
        {
            Ok(_) => true,
            // It answered, if only to refuse.
            Err(e) => !matches!(
                e.code,
                ErrorCode::ControllerConnect
                    | ErrorCode::CommunicationConnection
                    | ErrorCode::SocketTimeout
            ),
        };
        any_up |= up;
        if let Err(e) = out.line(&ping_line(addr.index, count, &addr.name, up)) {
            out.error_line(&format!("scontrol: error: {e}"));
            return 1;
        }
    }
    i32::from(!any_up)
}

/// `scontrol takeover [INDEX]`: asks that backup to take control; prints
/// nothing on success.
async fn takeover(c: &Controller, index: u32, out: &mut Output<'_>) -> i32 {
    let Some(addr) = usize::try_from(index)
        .ok()
        .and_then(|i| c.controllers().get(i))
        .cloned()
    else {
        out.error_line(&format!(
            "takeover: invalid backup controller index ({index})"
        ));
        return 1;
    };
    let request = v1::TakeoverRequest {
        backup_index: Some(index),
    };
    match c
        .call_one(&addr, |mut cl| async move { cl.takeover(request).await })
        .await
    {
        Ok(_) => 0,
        Err(e) => {
            let text = match e.extra_detail() {
                Some(d) => format!("{e}: {d}"),
                None => e.to_string(),
            };
            out.error_line(&format!("slurm_takeover error: {text}"));
            1
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn show_job_ids_as_slurm_reads_them() {
        let job = |job, component| Some(ShowJobId::Job { job, component });
        let task = |job, task, component| {
            Some(ShowJobId::Task {
                job,
                task,
                component,
            })
        };
        assert_eq!(ShowJobId::parse(""), Some(ShowJobId::All));
        assert_eq!(ShowJobId::parse("0"), Some(ShowJobId::All));
        assert_eq!(ShowJobId::parse("6"), job(6, None));
        assert_eq!(ShowJobId::parse("06"), job(6, None));
        assert_eq!(ShowJobId::parse("6+0"), job(6, Some(0)));
        assert_eq!(ShowJobId::parse("6+"), job(6, None));
        assert_eq!(ShowJobId::parse("6_"), task(6, 0, None));
        assert_eq!(ShowJobId::parse("2_01"), task(2, 1, None));
        assert_eq!(ShowJobId::parse("2_1+0"), task(2, 1, Some(0)));
        assert_eq!(ShowJobId::parse("4294967296"), Some(ShowJobId::Unknown));
        assert_eq!(
            ShowJobId::parse("99999999999999999999999"),
            Some(ShowJobId::Unknown)
        );
        for bad in [
            "6,7", "6abc", " 6", "0x6", "2_[1-3]", "6_abc", "_1", "+1", "6=7", "-6",
        ] {
            assert_eq!(ShowJobId::parse(bad), None, "{bad}");
        }
        assert_eq!(
            job(6, Some(1)).map(ShowJobId::missing_name).as_deref(),
            Some("6+1")
        );
        assert_eq!(
            task(6, 0, Some(1)).map(ShowJobId::missing_name).as_deref(),
            Some("6_0")
        );
    }

    #[test]
    fn show_job_narrows_an_array_to_the_task_asked_for() {
        let meta = v1::JobInfo {
            job_id: 9,
            array_job_id: Some(9),
            array_task_spec: "1-33:2".into(),
            ..v1::JobInfo::default()
        };
        let running = v1::JobInfo {
            job_id: 10,
            array_job_id: Some(9),
            array_task_id: Some(0),
            ..v1::JobInfo::default()
        };
        let jobs = vec![meta.clone(), running.clone()];
        let sel = |t| ShowJobId::Task {
            job: 9,
            task: t,
            component: None,
        };
        assert!(sel(3).matches(&jobs));
        assert!(sel(0).matches(&jobs));
        assert!(!sel(2).matches(&jobs));
        assert!(!sel(35).matches(&jobs));
        let mut narrowed = jobs.clone();
        sel(3).narrow(&mut narrowed);
        assert_eq!(narrowed.len(), 1);
        assert_eq!(
            (narrowed[0].job_id, narrowed[0].array_task_id),
            (9, Some(3))
        );
        assert_eq!(narrowed[0].array_task_spec, "");
        let mut narrowed = jobs;
        sel(0).narrow(&mut narrowed);
        assert_eq!(narrowed, vec![running]);
        // A job that is no array has no tasks; only component 0 exists.
        let plain = vec![v1::JobInfo {
            job_id: 6,
            ..v1::JobInfo::default()
        }];
        assert!(!ShowJobId::Task {
            job: 6,
            task: 0,
            component: None
        }
        .matches(&plain));
        assert!(ShowJobId::Job {
            job: 6,
            component: Some(0)
        }
        .matches(&plain));
        assert!(!ShowJobId::Job {
            job: 6,
            component: Some(1)
        }
        .matches(&plain));
    }

    fn res(job_id: u32, task: Option<u32>, code: ErrorCode) -> v1::JobActionResult {
        v1::JobActionResult {
            job_id,
            array_task_id: task,
            error_code: if code == ErrorCode::Unspecified {
                0
            } else {
                code.number()
            },
            error_detail: String::new(),
        }
    }

    #[test]
    fn job_list_words_are_reported_one_by_one_as_slurm_does() {
        let words = parse_job_words(&words("abc 999999,abc 7,8 9_[1-3] 9_2"));
        assert_eq!(words.len(), 5);
        assert_eq!(words[0].filter, None);
        assert_eq!(words[1].filter, None);
        // A word that is no job list, with the hold family's last line.
        assert_eq!(
            word_report(&words[0], &[], ListVerb::Hold),
            (
                vec![
                    "Invalid job id specified for job abc".to_owned(),
                    "slurm_suspend error: Invalid job id specified".to_owned()
                ],
                true
            )
        );
        assert_eq!(
            word_report(&words[1], &[], ListVerb::Requeue),
            (
                vec!["Invalid job id specified for job 999999,abc".to_owned()],
                true
            )
        );
        // Jobs: one line per failed job, then the last error.
        let results = [
            res(7, None, ErrorCode::AlreadyDone),
            res(8, None, ErrorCode::InvalidJobId),
        ];
        assert_eq!(
            word_report(&words[2], &results, ListVerb::Hold).0,
            vec![
                "Job/step already completing or completed for job 7",
                "Invalid job id specified for job 8",
                "slurm_suspend error: Invalid job id specified",
            ]
        );
        let ok = [res(7, None, ErrorCode::Unspecified)];
        assert_eq!(word_report(&words[2], &ok, ListVerb::Hold), (vec![], false));
        // The last line tells the last job's outcome, none at all when it
        // went well (Slurm 22.05: `release 6,7`, 6 beyond its partition).
        let results = [
            res(7, None, ErrorCode::RequestedPartConfigUnavailable),
            res(8, None, ErrorCode::Unspecified),
        ];
        assert_eq!(
            word_report(&words[2], &results, ListVerb::Hold),
            (
                vec![
                    "Requested partition configuration not available now for job 7".to_owned(),
                    "slurm_suspend error: No error".to_owned()
                ],
                true
            )
        );
        // Array tasks: grouped by outcome, a task nobody answered for is
        // unknown; all well prints nothing.
        let results = [
            res(9, Some(1), ErrorCode::Unspecified),
            res(9, Some(3), ErrorCode::Unspecified),
        ];
        assert_eq!(
            word_report(&words[3], &results, ListVerb::Hold),
            (
                vec![
                    "9_1,3: No error".to_owned(),
                    "9_2: Invalid job id specified".to_owned()
                ],
                true
            )
        );
        assert_eq!(
            word_report(&words[4], &[], ListVerb::Requeue),
            (vec!["9_2: Invalid job id specified".to_owned()], true)
        );
        let pending_rest = [res(9, None, ErrorCode::JobPending)];
        assert_eq!(
            word_report(&words[4], &pending_rest, ListVerb::Requeue).0,
            vec!["9_2: Job is pending execution"]
        );
        assert_eq!(
            word_report(
                &words[3],
                &[res(9, None, ErrorCode::Unspecified)],
                ListVerb::Hold
            ),
            (vec![], false)
        );
    }

    #[test]
    fn task_sets_expand_and_compress() {
        assert_eq!(expand_task_spec("2"), Some(vec![2]));
        assert_eq!(expand_task_spec("[1-3]"), Some(vec![1, 2, 3]));
        assert_eq!(expand_task_spec("[5,1-9:4]%2"), Some(vec![1, 5, 9]));
        assert_eq!(expand_task_spec("[3-1]"), None);
        assert_eq!(expand_task_spec("[1-5:0]"), None);
        assert_eq!(expand_task_spec("[0-4294967295]"), None);
        let mut out = String::new();
        write_task_ranges(&mut out, &[1, 3, 4, 5, 9, 10]);
        assert_eq!(out, "1,3-5,9-10");
    }

    #[test]
    fn task_specs() {
        assert!(task_spec_holds("1-33:2", 33));
        assert!(!task_spec_holds("1-33:2", 32));
        assert!(task_spec_holds("0,4-6%2", 5));
        assert!(!task_spec_holds("0,4-6%2", 2));
        assert!(!task_spec_holds("", 0));
        assert!(!task_spec_holds("1-5:0", 1));
    }

    /// A JobId that does not read is reported after what else is wrong
    /// with the line, as Slurm reads the whole line first.
    #[test]
    fn an_unreadable_job_id_comes_last() {
        let parse = |s: &str| {
            let words: Vec<String> = s.split_whitespace().map(str::to_owned).collect();
            parse_update(&words, 0).unwrap_err().lines
        };
        assert_eq!(
            parse("JobId=abc Bogus=5"),
            [
                "Update of this parameter is not supported: Bogus=5",
                "Request aborted"
            ]
        );
        assert_eq!(parse("JobId=abc"), ["No changes specified"]);
        assert_eq!(
            parse("JobId=abc TimeLimit=5"),
            ["Invalid job id specified for job abc"]
        );
        assert_eq!(
            parse("JobId=abc TimeLimit=+5"),
            ["scontrol: error: Invalid job ID abc"]
        );
    }

    /// Without a JobId, JobName= (the last one) names the jobs to change,
    /// and UserId= must name a user; with one, it renames the job.
    #[test]
    fn update_by_job_name() {
        let parse = |s: &str| {
            let words: Vec<String> = s.split_whitespace().map(str::to_owned).collect();
            parse_update(&words, 0)
        };
        match parse("JobName=a JobName=b UserId=0 TimeLimit=5") {
            Ok(CtlCommand::UpdateJobsNamed { name, uid, request }) => {
                assert_eq!((name.as_str(), uid), ("b", Some(0)));
                assert!(request.time_limit.is_some() && request.name.is_none());
                assert!(request.filter.is_none());
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse("JobName=a"),
            Ok(CtlCommand::UpdateJobsNamed { .. })
        ));
        match parse("JobId=5 JobName=q") {
            Ok(CtlCommand::UpdateJob(r)) => assert_eq!(r.name.as_deref(), Some("q")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse("JobName=a UserId=no-such-user-here TimeLimit=5")
                .unwrap_err()
                .lines,
            vec!["Invalid UserID: no-such-user-here", "Request aborted"]
        );
    }

    #[test]
    fn named_entities_in_order_with_the_missing_ones_reported() {
        let nodes = vec!["n1".to_owned(), "n2".to_owned()];
        let render = |found: &[String]| format!("<{}>\n", found.join(","));
        let named = |expr| render_named(expr, &nodes, |n| n, "Node", render, false);
        assert_eq!(
            named("nosuch,n2"),
            ("Node nosuch not found\n<n2>\n".to_owned(), true)
        );
        assert_eq!(
            named("n[1-3]"),
            ("<n1>\n<n2>\nNode n3 not found\n".to_owned(), true)
        );
        assert_eq!(named("n2"), ("<n2>\n".to_owned(), false));
        // An empty name names nothing.
        assert_eq!(named(""), (String::new(), false));
        // scontrol -Q: the found ones only; the status still says.
        assert_eq!(
            render_named("nosuch,n2", &nodes, |n| n, "Node", render, true),
            ("<n2>\n".to_owned(), true)
        );
    }

    /// `-Q` says the first lines a refusal keeps, all of one it does not
    /// silence, none of one it does.
    #[test]
    fn quiet_says_what_a_refusal_keeps() {
        let lines = || vec!["first".to_string(), "second".to_string()];
        let partly = CtlError::partly_hushable(lines(), 1);
        assert_eq!(partly.lines_said(true), ["first"]);
        assert_eq!(partly.lines_said(false), ["first", "second"]);
        assert!(CtlError::hushable(lines()).lines_said(true).is_empty());
        assert_eq!(CtlError::new(lines()).lines_said(true).len(), 2);
    }

    /// Slurm 22.05's `scontrol -Q` silences the errors of showing and of
    /// acting on jobs, not those of node and partition updates.
    #[test]
    fn which_commands_quiet_silences() {
        let hushed = |line: &str| match super::super::Command::parse(
            &line
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        ) {
            Ok(super::super::Command::Controller(c)) => c.hushed_by_quiet(),
            other => panic!("{line}: {other:?}"),
        };
        for line in [
            "hold 5",
            "release 5",
            "requeue 5",
            "update JobId=5 TimeLimit=5",
            "show job 5",
            "show node n1",
            "show partition p",
            "suspend 5",
            "top 5",
        ] {
            assert!(hushed(line), "{line}");
        }
        for line in [
            "update NodeName=n1 State=DRAIN Reason=x",
            "update PartitionName=p MaxTime=5",
            "ping",
            "show reservation",
        ] {
            assert!(!hushed(line), "{line}");
        }
    }

    #[test]
    fn create_partition_carries_slurm_conf_spelling() {
        let Ok(CtlCommand::CreatePartition(r)) = parse_create(&words(
            "PartitionName=new nodes=n[1-2] maxtime=30 Shared=YES",
        )) else {
            panic!("not a partition creation");
        };
        assert_eq!(r.name, "new");
        let pairs: Vec<(&str, &str)> = r
            .attributes
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("Nodes", "n[1-2]"),
                ("MaxTime", "30"),
                ("OverSubscribe", "YES")
            ]
        );
        // The entity may come anywhere; a name alone is a creation.
        let Ok(CtlCommand::CreatePartition(r)) = parse_create(&words("State=DOWN partitionname=x"))
        else {
            panic!("not a partition creation");
        };
        assert_eq!((r.name.as_str(), r.attributes.len()), ("x", 1));
        let Ok(CtlCommand::CreatePartition(r)) = parse_create(&words("PartitionName=y")) else {
            panic!("not a partition creation");
        };
        assert!(r.attributes.is_empty());
    }

    #[test]
    fn create_refusals() {
        let e = |s: &str| parse_create(&words(s)).unwrap_err().lines;
        assert_eq!(
            e("Nodes=n1 MaxTime=5"),
            vec!["scontrol: error: Invalid creation entity: Nodes=n1"]
        );
        assert_eq!(
            e("partition PartitionName=x"),
            vec!["scontrol: error: Invalid input: partition  Request aborted"]
        );
        assert_eq!(
            e("PartitionName=default Nodes=n1"),
            vec!["scontrol: error: PartitionName cannot be \"DEFAULT\"."]
        );
        assert_eq!(
            e("PartitionName=x State=sideways"),
            vec![
                "Invalid input: State=sideways",
                "Request aborted",
                "Acceptable State values are UP, DOWN, DRAIN and INACTIVE"
            ]
        );
        assert_eq!(
            e("PartitionName=x Bogus=1"),
            vec![
                "Update of this parameter is not supported: Bogus=1",
                "Request aborted"
            ]
        );
        assert_eq!(
            e("ReservationName=r StartTime=now"),
            vec!["scontrol: error: create of ReservationName records is not supported"]
        );
        // An empty name goes to the controller, which refuses it.
        assert!(matches!(
            parse_create(&words("PartitionName= Nodes=n1")),
            Ok(CtlCommand::CreatePartition(r)) if r.name.is_empty()
        ));
    }

    #[test]
    fn delete_partition_and_its_refusals() {
        assert_eq!(
            parse_delete(&words("PartitionName=old")),
            Ok(CtlCommand::DeletePartition {
                name: "old".into(),
                word: "PartitionName=old".into()
            })
        );
        assert_eq!(
            parse_delete(&words("part=old")),
            Ok(CtlCommand::DeletePartition {
                name: "old".into(),
                word: "part=old".into()
            })
        );
        let e = |s: &str| parse_delete(&words(s)).unwrap_err().lines;
        assert_eq!(
            e("PartitionName=a PartitionName=b"),
            vec!["scontrol: error: Too many arguments for delete keyword"]
        );
        assert_eq!(
            e("old"),
            vec![
                "scontrol: error: Proper format is 'delete Partition=p' or 'delete Reservation=r'"
            ]
        );
        assert_eq!(e("Foo=1"), vec!["Invalid deletion entity: Foo=1"]);
        assert_eq!(
            e("Reservation=r"),
            vec!["scontrol: error: delete of ReservationName records is not supported"]
        );
    }

    #[test]
    fn delete_errors_as_slurm_prints_them() {
        let invalid = RpcError::new(ErrorCode::InvalidPartitionName, "");
        assert_eq!(
            delete_error_line("PartitionName=x", &invalid),
            "delete_partition PartitionName=x: Invalid partition name specified"
        );
        let in_use = RpcError::new(ErrorCode::PartitionInUse, "");
        assert_eq!(
            delete_error_line("PartitionName=x", &in_use),
            "delete_partition PartitionName=x: Partition is in use"
        );
        // Slurm cuts its prefix to 63 bytes, never inside a character here.
        let long = format!("PartitionName={}", "é".repeat(40));
        let line = delete_error_line(&long, &invalid);
        let (prefix, rest) = line.split_once(": ").unwrap();
        assert!(prefix.len() <= 63 && prefix.len() >= 62, "{prefix}");
        assert_eq!(rest, "Invalid partition name specified");
    }

    #[test]
    fn ping_lines_name_each_role() {
        assert_eq!(
            ping_line(0, 1, "vm", true),
            "Slurmctld(primary) at vm is UP"
        );
        assert_eq!(
            ping_line(0, 2, "a", false),
            "Slurmctld(primary) at a is DOWN"
        );
        assert_eq!(ping_line(1, 2, "b", true), "Slurmctld(backup) at b is UP");
        assert_eq!(role_word(1, 3), "backup1");
        assert_eq!(role_word(2, 3), "backup2");
    }

    #[test]
    fn takeover_index() {
        assert_eq!(parse_takeover(&[]), Ok(CtlCommand::Takeover { index: 1 }));
        assert_eq!(
            parse_takeover(&words("2")),
            Ok(CtlCommand::Takeover { index: 2 })
        );
        for bad in ["0", "x", "-1", "99999999999", "١"] {
            assert_eq!(
                parse_takeover(&words(bad)),
                Err(CtlError::new(vec![
                    "takeover: invalid backup controller index (0)".into()
                ])),
                "{bad}"
            );
        }
        // Leading digits count, as atoi reads them.
        assert_eq!(
            parse_takeover(&words("1x")),
            Ok(CtlCommand::Takeover { index: 1 })
        );
        assert_eq!(
            parse_takeover(&words("1 2")),
            Err(CtlError::new(vec!["takeover: too many arguments".into()]))
        );
    }

    /// What Slurm 22.05 prints for entities there is none of.
    #[test]
    fn entities_there_are_none_of() {
        let show = |e: &str, n: Option<&str>| none_of(e, n);
        assert_eq!(
            show("reservation", None),
            ("No reservations in the system\n".into(), None, 0)
        );
        assert_eq!(
            show("reservation", Some("r1")),
            ("Reservation r1 not found\n".into(), None, 1)
        );
        assert_eq!(
            show("frontend", None),
            ("No nodes in the system\n".into(), None, 0)
        );
        assert_eq!(
            show("frontend", Some("f")),
            ("Node f not found\n".into(), None, 1)
        );
        assert_eq!(
            show("topology", Some("sw1")).1.as_deref(),
            Some("scontrol: error: Topology information contains no switch or node named sw1")
        );
        assert_eq!(show("burstbuffer", None), (String::new(), None, 0));
        let all = show("assoc_mgr", None).0;
        assert_eq!(
            all,
            "Current Association Manager state\n\nNo users currently cached in Slurm.\n\n\n\
             No associations currently cached in Slurm.\n\n\nNo QOS currently cached in Slurm.\n\n"
        );
        assert_eq!(
            show("assoc_mgr", Some("users=root FLAGS=qos")).0,
            "Current Association Manager state\n\nNo QOS currently cached in Slurm.\n\n"
        );
        // Non-ASCII or short words are no flags.
        assert_eq!(show("assoc_mgr", Some("é flags")).0, all);
    }

    #[test]
    fn job_lists() {
        let f = parse_job_list(&words("8,9 10_2")).unwrap();
        assert_eq!(f.job_ids, vec![8, 9]);
        assert_eq!(f.array_tasks[0].array_job_id, 10);
        // Commas inside brackets belong to the task list.
        let f = parse_job_list(&words("10_[1,3-4],11")).unwrap();
        assert_eq!(f.job_ids, vec![11]);
        assert_eq!(f.array_tasks[0].task_spec, "[1,3-4]");
        assert_eq!(
            parse_job_list(&words("abc")).unwrap_err().to_string(),
            "Invalid job id specified"
        );
        assert!(parse_job_list(&[]).is_err());
    }

    #[test]
    fn update_job_fields() {
        let CtlCommand::UpdateJob(r) = parse_update(
            &words("JobId=12 TimeLimit=1:00:00 Partition=debug NumNodes=2-3 Name=x Comment=c Priority=5 Nice=-3"),
            0,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(r.filter.unwrap().job_ids, vec![12]);
        assert_eq!(r.time_limit, Some(time_limit(TimeLimit::Minutes(60))));
        assert_eq!(r.partition.as_deref(), Some("debug"));
        assert_eq!((r.min_nodes, r.max_nodes), (Some(2), Some(3)));
        assert_eq!(r.name.as_deref(), Some("x"));
        assert_eq!(r.comment.as_deref(), Some("c"));
        assert_eq!((r.priority, r.nice), (Some(5), Some(-3)));
        assert_eq!(r.account, None);
        let CtlCommand::UpdateJob(r) =
            parse_update(&words("jobid=3 jobname=y timelimit=unlimited"), 0).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.name.as_deref(), Some("y"));
        assert_eq!(r.time_limit, Some(time_limit(TimeLimit::Infinite)));
        // Increments and decrements of the current limit.
        let change = |s: &str| match parse_update(&words(s), 0) {
            Ok(CtlCommand::UpdateJob(r)) => Ok((r.time_limit, r.time_limit_change_minutes)),
            Ok(_) => panic!("not a job update"),
            Err(e) => Err(e.lines),
        };
        assert_eq!(change("JobId=3 TimeLimit+=30"), Ok((None, Some(30))));
        assert_eq!(change("JobId=3 TimeLimit-=1:00:00"), Ok((None, Some(-60))));
        assert_eq!(
            change("JobId=3 TimeLimit+=unlimited"),
            Err(vec!["scontrol: error: Invalid TimeLimit value".to_string()])
        );
        assert!(change("JobId=3 TimeLimit+=abc").is_err());
        // The same with the sign in the value, as Slurm takes it too.
        assert_eq!(change("JobId=3 TimeLimit=+10"), Ok((None, Some(10))));
        assert_eq!(change("JobId=3 TimeLimit=-5"), Ok((None, Some(-5))));
        assert_eq!(
            change("JobId=3 TimeLimit=+abc"),
            Err(vec!["scontrol: error: Invalid TimeLimit value".to_string()])
        );
        // Only for one job, named first.
        assert_eq!(
            change("TimeLimit=+5 JobId=3"),
            Err(vec![
                "scontrol: error: JobId must precede TimeLimit increment or decrement".to_string()
            ])
        );
        assert_eq!(
            change("JobId=3,4 TimeLimit=+5"),
            Err(vec!["scontrol: error: Invalid job ID 3,4".to_string()])
        );
    }

    /// NumCPUs=, MinCPUsNode=, Contiguous=, OverSubscribe=/Shared=,
    /// Reboot=, AdminComment=, read and refused as Slurm 22.05's scontrol
    /// reads them.
    #[test]
    fn update_cpu_sharing_and_admin_fields() {
        let parse = |s: &str| match parse_update(&words(&format!("JobId=4 {s}")), 0) {
            Ok(CtlCommand::UpdateJob(r)) => Ok(r),
            Ok(_) => panic!("not a job update"),
            Err(e) => Err(e.lines),
        };
        let cpus = |s: &str| parse(s).map(|r| (r.min_cpus, r.max_cpus));
        assert_eq!(cpus("NumCPUs=2"), Ok((Some(2), None)));
        assert_eq!(cpus("NumCPUs=1-2"), Ok((Some(1), Some(2))));
        assert_eq!(cpus("NumCPUs=3k"), Ok((Some(3072), None)));
        assert_eq!(cpus("NumCPUs="), Ok((Some(1), Some(2_147_483_647))));
        let bad = |v: &str| {
            vec![
                format!("scontrol: error: Invalid numeric value \"{v}\" for NumCPUs."),
                format!("scontrol: error: Invalid NumCPUs value: {v}"),
            ]
        };
        for v in ["abc", "-1", "2x", "1-y", "99999999999"] {
            assert_eq!(cpus(&format!("NumCPUs={v}")), Err(bad(v)), "{v}");
        }
        for v in ["0", "2-1"] {
            assert_eq!(
                cpus(&format!("NumCPUs={v}")),
                Err(vec![format!("scontrol: error: Invalid NumCPUs value: {v}")])
            );
        }
        assert_eq!(parse("MinCPUsNode=3").unwrap().min_cpus_per_node, Some(3));
        assert_eq!(
            parse("MinCPUsNode=1x").unwrap_err(),
            vec!["scontrol: error: Invalid MinCPUsNode value: 1x"]
        );
        let flags = |s: &str| parse(s).map(|r| (r.contiguous, r.sharing, r.reboot));
        let yes = v1::NodeSharing::Oversubscribe as i32;
        let no = v1::NodeSharing::Exclusive as i32;
        assert_eq!(
            flags("Contiguous=y Shared=NO Reboot=2"),
            Ok((Some(true), Some(no), Some(true)))
        );
        assert_eq!(
            flags("Contiguous=0 OverSubscribe=yes Reboot=n"),
            Ok((Some(false), Some(yes), Some(false)))
        );
        assert_eq!(
            flags("Contiguous=maybe"),
            Err(vec![
                "scontrol: error: Invalid Contiguous value: maybe".to_string()
            ])
        );
        assert_eq!(
            flags("OverSubscribe=yess"),
            Err(vec![
                "scontrol: error: Invalid OverSubscribe value: yess".to_string()
            ])
        );
        assert_eq!(
            flags("Reboot=x"),
            Err(vec!["scontrol: error: Invalid reboot value: x".to_string()])
        );
        assert_eq!(
            parse("AdminComment=").unwrap().admin_comment.as_deref(),
            Some("")
        );
        assert_eq!(
            parse("AdminComment=ok").unwrap().admin_comment.as_deref(),
            Some("ok")
        );
    }

    #[test]
    fn partition_updates_carry_slurm_conf_spelling() {
        let Ok(CtlCommand::UpdatePartition(r)) = parse_update(
            &words("partitionname=debug state=down maxtime=30 Shared=NO"),
            0,
        ) else {
            panic!("not a partition update");
        };
        assert_eq!(r.name, "debug");
        let pairs: Vec<(&str, &str)> = r
            .attributes
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("State", "down"),
                ("MaxTime", "30"),
                ("OverSubscribe", "NO")
            ]
        );
    }

    /// `job N`, `job=N` and `jobid N` name the job as `JobId=N` does.
    #[test]
    fn a_job_is_named_several_ways() {
        let id_of = |s: &str| match parse_update(&words(s), 0) {
            Ok(CtlCommand::UpdateJob(r)) => (
                r.filter.unwrap_or_default().job_ids,
                r.name.unwrap_or_default(),
            ),
            other => panic!("{s}: {other:?}"),
        };
        for s in [
            "job 7 JobName=x",
            "job=7 JobName=x",
            "JOBID 7 JobName=x",
            "JobName=x JobId=7",
        ] {
            assert_eq!(id_of(s), (vec![7], "x".to_string()), "{s}");
        }
        assert_eq!(
            parse_update(&words("job"), 0).unwrap_err().lines,
            vec!["Invalid input: job", "Request aborted"]
        );
    }

    #[test]
    fn update_refusals() {
        let e = |s: &str| parse_update(&words(s), 0).unwrap_err().lines;
        assert_eq!(
            e("ReservationName=r Duration=10"),
            vec!["scontrol: error: update of ReservationName records is not supported"]
        );
        // Partition refusals as Slurm 22.05 words each kind of value.
        assert_eq!(
            e("PartitionName=debug State=sideways"),
            vec![
                "scontrol: error: Invalid input: State=sideways",
                "scontrol: error: Acceptable State values are UP, DOWN, DRAIN and INACTIVE",
                "slurm_update error: No error"
            ]
        );
        assert_eq!(
            e("PartitionName=debug Bogus=1"),
            vec![
                "scontrol: error: Update of this parameter is not supported: Bogus=1",
                "",
                "scontrol: error: Request aborted",
                "slurm_update error: No error"
            ]
        );
        assert_eq!(
            e("PartitionName=debug MaxTime=soon"),
            vec![
                "scontrol: error: Invalid input MaxTime=soon",
                "slurm_update error: No error"
            ]
        );
        assert_eq!(
            e("PartitionName=debug MaxNodes=abc"),
            vec!["scontrol: error: Invalid numeric value \"abc\" for MaxNodes."]
        );
        assert_eq!(
            e("PartitionName=debug Default=maybe"),
            vec![
                "scontrol: error: Invalid input: Default=maybe",
                "scontrol: error: Acceptable Default values are YES and NO",
                "slurm_update error: No error"
            ]
        );
        assert_eq!(
            e("PartitionName=debug PriorityTier=x"),
            vec![
                "scontrol: error: Invalid PriorityTier value: x",
                "slurm_update error: No error"
            ]
        );
        // Job and node values.
        assert_eq!(
            e("JobId=1 Priority=x"),
            vec!["scontrol: error: Invalid Priority value: x"]
        );
        assert_eq!(
            e("JobId=1 TimeMin=x"),
            vec!["scontrol: error: Invalid TimeMin value"]
        );
        assert_eq!(
            e("JobId=1 NumNodes=x"),
            vec!["scontrol: error: Invalid numeric value \"x\" for requested node count."]
        );
        assert_eq!(
            e("NodeName=n1 Weight=x"),
            vec![
                "scontrol: error: Weight value (x) is not a valid number",
                "No changes specified"
            ]
        );
        assert_eq!(
            e("JobId=1 Bogus=2"),
            vec![
                "Update of this parameter is not supported: Bogus=2",
                "Request aborted"
            ]
        );
        assert_eq!(
            e("JobId=1 TimeLimit=abc"),
            vec!["scontrol: error: Invalid TimeLimit value"]
        );
        // Slurm says there is nothing to change before it reads the id.
        assert_eq!(e("JobId=x"), vec!["No changes specified"]);
        assert_eq!(
            e("JobId=x Name=y"),
            vec!["Invalid job id specified for job x"]
        );
        assert_eq!(e("JobId=1"), vec!["No changes specified"]);
        assert_eq!(e("Foo=1")[0], "No valid entity in update command");
        assert_eq!(
            e("NodeName=n1 State=DRAIN"),
            vec!["You must specify a reason when DOWNING or DRAINING a node. Request denied"]
        );
        assert_eq!(
            e("NodeName=n1 State=SLEEPY")[0],
            "Invalid input: State=SLEEPY"
        );
    }

    #[test]
    fn update_node_fields() {
        let CtlCommand::UpdateNode(r) =
            parse_update(&words("NodeName=n[1-2] State=drain Reason=maint"), 0).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.nodes, "n[1-2]");
        assert_eq!(r.state, v1::NodeStateUpdate::Drain as i32);
        assert_eq!(r.reason.as_deref(), Some("maint"));
        let CtlCommand::UpdateNode(r) =
            parse_update(&words("nodename=n1 state=RESUME"), 0).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.state, v1::NodeStateUpdate::Resume as i32);
        assert_eq!(r.reason, None);
    }

    #[test]
    fn per_job_results() {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        let code = report_results(
            &mut out,
            &[
                v1::JobActionResult {
                    job_id: 8,
                    ..Default::default()
                },
                v1::JobActionResult {
                    job_id: 9,
                    error_code: ErrorCode::JobNotPending.number(),
                    ..Default::default()
                },
            ],
        );
        assert_eq!(code, 1);
        assert_eq!(
            String::from_utf8(e).unwrap(),
            "Job is no longer pending execution for job 9\n"
        );
    }
}
