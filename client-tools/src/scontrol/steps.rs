//! `scontrol show step`, `wait_job` and `notify`: the job-step commands
//! that only need what the controller knows about jobs.
//!
//! This cluster runs batch jobs only, so the only step a job has is its
//! batch step, and it exists exactly while the job runs. Rather than keep a
//! step table in the controller that would mirror the job table, the step
//! records are derived here from the job records, with the fields Slurm
//! 22.05 prints for a batch step (which are mostly constants: a batch step
//! has no TRES, no network and no srun).
//!
//! The ids are read the way Slurm's scontrol reads them, with C's `strtol`:
//! the leading number counts and the rest is ignored (`12abc` is job 12, a
//! word without digits is job 0), and a number too big for a job id is cut
//! to its low 32 bits. [`strtol`] and [`StepQuery::parse`] are pure so these
//! corners are tested without a controller.

use slurm_proto::v1;

use slurm_common::auth::unix_now;

use super::local::{self, ProcTable};
use super::{EnvLookup, Options};
use crate::client::{block_on, short_hostname, ClientConfig, Controller, RpcError};
use crate::output::Output;

/// Slurm's "no value": the step of an id without one (every step).
pub const NO_VAL: u32 = 0xffff_fffe;
/// The batch step's number.
pub const BATCH_STEP: u32 = 0xffff_fffb;
const EXTERN_STEP: u32 = 0xffff_fffc;
const PENDING_STEP: u32 = 0xffff_fffd;
const INTERACTIVE_STEP: u32 = 0xffff_fffa;

/// A step command, its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepCommand {
    /// `show step [ID]`.
    ShowStep { id: Option<String> },
    /// `wait_job ID`.
    WaitJob { word: String },
    /// `notify ID MESSAGE...`.
    Notify { word: String, message: String },
    /// `listpids [JOB[.STEP]] [NODE]`.
    ListPids {
        job: Option<String>,
        node: Option<String>,
    },
    /// `pidinfo PID`.
    PidInfo { word: String },
}

/// Runs a step command: `listpids` on this host alone, `pidinfo` on this
/// host and then the controller, the others against the controller.
pub fn execute(
    command: &StepCommand,
    options: &Options,
    env: EnvLookup<'_>,
    out: &mut Output<'_>,
) -> i32 {
    match command {
        StepCommand::ListPids { job, node } => list_pids(job.as_deref(), node.as_deref(), env, out),
        StepCommand::PidInfo { word } => pid_info(word, env, out),
        _ => match super::controller::connect(env, out) {
            Some(mut c) => block_on(run(command, options, &mut c, out)),
            None => 1,
        },
    }
}

fn list_pids(
    job: Option<&str>,
    node: Option<&str>,
    env: EnvLookup<'_>,
    out: &mut Output<'_>,
) -> i32 {
    let what = match local::parse_pids_of(job) {
        Ok(what) => Some(what),
        Err(refusal) if !refusal.after_header => {
            out.error_line(&refusal.line);
            return refusal.code;
        }
        Err(refusal) => {
            let code = out.block("scontrol", &format!("{}\n", local::PIDS_HEADER));
            out.error_line(&refusal.line);
            return code.max(refusal.code);
        }
    };
    let config = match ClientConfig::load_with(env) {
        Ok(config) => config,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            return 1;
        }
    };
    let header = out.block("scontrol", &format!("{}\n", local::PIDS_HEADER));
    let node_name = match node {
        Some(n) => Some(n.to_owned()),
        None => local::local_nodes(&config.conf, &short_hostname())
            .first()
            .map(|n| (*n).to_owned()),
    };
    let spool = local::spool_of(&config.conf, node_name.as_deref().unwrap_or(""));
    let table = local::SystemProcs.parents();
    let steps = local::steps_in(&spool, &table);
    if steps.is_none() {
        out.error_line(&format!(
            "scontrol: error: Domain socket directory {}: No such file or directory",
            spool.display()
        ));
    }
    let (rows, err, code) =
        local::list_pids(steps.as_deref(), what.unwrap_or(local::PidsOf::All), node);
    let printed = out.block("scontrol", &rows);
    if let Some(line) = err {
        out.error_line(&line);
    }
    code.max(printed).max(header)
}

fn pid_info(word: &str, env: EnvLookup<'_>, out: &mut Output<'_>) -> i32 {
    const NOT_FOUND: &str = "Failed to locate job for requested pid";
    let config = match ClientConfig::load_with(env) {
        Ok(config) => config,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            return 1;
        }
    };
    let pid = local::pid_word(word);
    let table = local::SystemProcs.parents();
    let job = local::local_nodes(&config.conf, &short_hostname())
        .into_iter()
        .filter_map(|node| local::steps_in(&local::spool_of(&config.conf, node), &table))
        .find_map(|steps| local::step_of_pid(&steps, pid).map(|s| s.job));
    let Some(job) = job else {
        out.error_line(NOT_FOUND);
        return 1;
    };
    let mut c = match Controller::new(&config) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            return 1;
        }
    };
    match block_on(load_jobs(&mut c, vec![job])) {
        Ok(jobs) => match jobs.iter().find(|j| j.job_id == job) {
            Some(record) => {
                let text = pid_info_text(record, unix_now());
                out.block("scontrol", &text)
            }
            None => {
                out.error_line("slurm_get_end_time: Invalid job id specified");
                1
            }
        },
        Err(e) => {
            out.error_line(&format!("slurm_get_end_time: {e}"));
            1
        }
    }
}

/// Seconds Slurm adds to a start time for a job without a time limit.
const YEAR_SECS: i64 = 365 * 24 * 3600;

/// What `pidinfo` prints for a job at `now`: when it ends (a job without
/// a limit ends a year after its start, as Slurm counts it) and how long
/// it has left.
pub fn pid_info_text(job: &v1::JobInfo, now: i64) -> String {
    let unlimited = matches!(
        job.time_limit.as_ref().and_then(|t| t.limit),
        Some(v1::time_limit::Limit::Unlimited(_)) | None
    );
    let end = match job.time_limit.as_ref().and_then(|t| t.limit) {
        Some(v1::time_limit::Limit::Minutes(m)) if job.start_time > 0 => job
            .start_time
            .saturating_add(i64::from(m).saturating_mul(60)),
        _ if unlimited && job.start_time > 0 => job.start_time.saturating_add(YEAR_SECS),
        _ => job.end_time,
    };
    let left = end.saturating_sub(now).max(0);
    format!(
        "Slurm JobId={} ends at {}\nJob remaining time is {left} seconds\n",
        job.job_id,
        slurm_common::time::format_ctime(end)
    )
}

/// C's `strtol` in base 10 as scontrol uses it: leading blanks, a sign and
/// the digits that follow make the number (saturating at the bounds of a
/// 64-bit `long`); the rest of the word is returned untouched. No digits
/// read as 0 with the whole word left.
pub fn strtol(word: &str) -> (i64, &str) {
    let trimmed = word.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, body) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return (0, word);
    }
    let mut value: i64 = 0;
    for b in body[..digits].bytes() {
        let d = i64::from(b - b'0');
        value = if negative {
            value.saturating_mul(10).saturating_sub(d)
        } else {
            value.saturating_mul(10).saturating_add(d)
        };
    }
    (value, &body[digits..])
}

/// [`strtol`] stored in a 32-bit unsigned id, as C's assignment does it
/// (the low 32 bits).
pub fn strtol_u32(word: &str) -> (u32, &str) {
    let (value, rest) = strtol(word);
    // Truncation is the point: Slurm keeps the low 32 bits.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (value as u32, rest)
}

/// The name Slurm gives a step number in ids (`batch`, `extern`, ...);
/// empty for "no step".
pub fn step_name(step: u32) -> String {
    match step {
        NO_VAL => String::new(),
        BATCH_STEP => "batch".to_owned(),
        EXTERN_STEP => "extern".to_owned(),
        // Slurm 22.05 spells it this way.
        PENDING_STEP => "TDB".to_owned(),
        INTERACTIVE_STEP => "interactive".to_owned(),
        n => n.to_string(),
    }
}

/// What `show step ID` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepQuery {
    /// 0: every job.
    pub job: u32,
    /// `JOB_TASK`: one task of an array.
    pub task: Option<u32>,
    /// [`NO_VAL`]: every step.
    pub step: u32,
}

impl StepQuery {
    /// Reads `JOB[_TASK][.STEP]` as Slurm does (see the module docs):
    /// anything after the numbers is ignored, `N.batch` is step 0.
    pub fn parse(word: &str) -> StepQuery {
        let (job, mut rest) = strtol_u32(word);
        let mut task = None;
        if let Some(after) = rest.strip_prefix('_') {
            let (t, r) = strtol_u32(after);
            task = Some(t);
            rest = r;
        }
        let step = match rest.strip_prefix('.') {
            Some(after) => strtol_u32(after).0,
            None => NO_VAL,
        };
        StepQuery { job, task, step }
    }

    /// The id as the `Job step ... not found` line prints it.
    pub fn not_found_line(&self) -> String {
        let task = self.task.map(|t| format!("_{t}")).unwrap_or_default();
        let step = if self.job == 0 {
            "Invalid".to_owned()
        } else {
            step_name(self.step)
        };
        format!("Job step {}{task}.{step} not found", self.job)
    }

    /// Whether the job record `job` is one this query names (ignoring
    /// the task): its own id or its array's.
    fn names_job(&self, job: &v1::JobInfo) -> bool {
        job.job_id == self.job || job.array_job_id == Some(self.job)
    }
}

use crate::format::{batch_step_node, has_batch_step};

/// The batch steps `query` selects among `jobs` (`None`: every step), in
/// job id order. As Slurm 22.05 lists them, the whole list leaves out the
/// steps of array tasks; naming the array shows them.
pub fn select_steps<'j>(
    jobs: &'j [v1::JobInfo],
    query: Option<&StepQuery>,
) -> Vec<&'j v1::JobInfo> {
    let mut steps: Vec<&v1::JobInfo> = jobs
        .iter()
        .filter(|j| has_batch_step(j))
        .filter(|j| match query {
            None => j.array_job_id.is_none(),
            Some(q) if q.job == 0 => q.step == NO_VAL || q.step == BATCH_STEP,
            Some(q) => {
                q.names_job(j)
                    && q.task.is_none_or(|t| j.array_task_id == Some(t))
                    && (q.step == NO_VAL || q.step == BATCH_STEP)
            }
        })
        .collect();
    steps.sort_by_key(|j| j.job_id);
    steps
}

/// The id a step record starts with: `JOB.batch`, `ARRAY_TASK.batch`.
fn step_id(job: &v1::JobInfo) -> String {
    match (job.array_job_id, job.array_task_id) {
        (Some(array), Some(task)) => format!("{array}_{task}.batch"),
        _ => format!("{}.batch", job.job_id),
    }
}

/// One batch step record, as `scontrol show step` prints it: indented
/// lines and a blank line, or one line with `-o`.
pub fn write_batch_step(out: &mut String, job: &v1::JobInfo, oneliner: bool) {
    let state = if job.state == v1::JobState::Suspended as i32 {
        "SUSPENDED"
    } else {
        "RUNNING"
    };
    let node = batch_step_node(job);
    let lines = [
        format!(
            "StepId={} UserId={} StartTime={} TimeLimit=UNLIMITED",
            step_id(job),
            job.user_id,
            slurm_common::time::format_timestamp(job.start_time)
        ),
        format!("State={state} Partition={} NodeList={node}", job.partition),
        "Nodes=1 CPUs=0 Tasks=1 Name=batch Network=(null)".to_owned(),
        "TRES=(null)".to_owned(),
        "ResvPorts=(null)".to_owned(),
        "CPUFreqReq=Default".to_owned(),
        "SrunHost:Pid=(null):0".to_owned(),
    ];
    if oneliner {
        out.push_str(&lines.join(" "));
        out.push('\n');
    } else {
        out.push_str(&lines.join("\n   "));
        out.push_str("\n\n");
    }
}

/// What `show step` prints: (stdout text, stderr line, exit status).
pub fn show_step(
    jobs: &[v1::JobInfo],
    id: Option<&str>,
    oneliner: bool,
) -> (String, Option<String>, i32) {
    let query = id.map(StepQuery::parse);
    if let Some(q) = query.as_ref().filter(|q| q.job != 0) {
        // The controller refuses an id no job it holds has (when it holds
        // any); a job without that step is only "not found".
        if !jobs.is_empty() && !jobs.iter().any(|j| q.names_job(j)) {
            return (
                String::new(),
                Some("slurm_get_job_steps error: Invalid job id specified".to_owned()),
                1,
            );
        }
    }
    let steps = select_steps(jobs, query.as_ref());
    if steps.is_empty() {
        return match query {
            Some(q) => (format!("{}\n", q.not_found_line()), None, 1),
            None => ("No job steps in the system\n".to_owned(), None, 0),
        };
    }
    let mut text = String::new();
    for job in steps {
        write_batch_step(&mut text, job, oneliner);
    }
    (text, None, 0)
}

/// How a job stands for `wait_job` and `notify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStanding {
    Unknown,
    Pending,
    Running,
    Done,
}

/// The standing of the job whose own id is `job` among `jobs`.
pub fn standing(jobs: &[v1::JobInfo], job: u32) -> JobStanding {
    let Some(record) = jobs.iter().find(|j| j.job_id == job) else {
        return JobStanding::Unknown;
    };
    let completing = record
        .state_flags
        .contains(&(v1::JobStateFlag::Completing as i32));
    match v1::JobState::try_from(record.state) {
        Ok(v1::JobState::Pending) => JobStanding::Pending,
        Ok(v1::JobState::Running | v1::JobState::Suspended) if !completing => JobStanding::Running,
        _ => JobStanding::Done,
    }
}

/// What `wait_job` prints on standard error, and its exit status. Slurm
/// waits while the job's nodes boot; nodes here never boot, so a running
/// job's nodes are ready at once, and a job that is not running (pending
/// included) ends the wait.
pub fn wait_job_report(standing: JobStanding, job: u32) -> (String, i32) {
    match standing {
        JobStanding::Running => (format!("scontrol: Nodes are ready for job {job}"), 0),
        JobStanding::Unknown => (format!("scontrol: Problem running job {job}"), 1),
        JobStanding::Pending | JobStanding::Done => {
            (format!("scontrol: Job {job} no longer running"), 1)
        }
    }
}

/// What `notify` prints on standard error (nothing when it succeeds), and
/// its exit status. Slurm hands the message to the job's sruns; a batch
/// job has none, so a running job takes it silently.
pub fn notify_report(standing: JobStanding) -> (Option<&'static str>, i32) {
    match standing {
        JobStanding::Running => (None, 0),
        JobStanding::Unknown => (Some("job notify failure: Invalid job id specified"), 1),
        JobStanding::Pending => (
            Some("job notify failure: Requested operation is presently disabled"),
            1,
        ),
        JobStanding::Done => (
            Some("job notify failure: Job/step already completing or completed"),
            1,
        ),
    }
}

async fn load_jobs(c: &mut Controller, job_ids: Vec<u32>) -> Result<Vec<v1::JobInfo>, RpcError> {
    let request = v1::GetJobsRequest {
        hide_hidden: false,
        filter: Some(v1::JobFilter {
            job_ids,
            ..v1::JobFilter::default()
        }),
        changed_since: 0,
        detail: false,
        fields: Vec::new(),
    };
    c.call(|mut cl| {
        let request = request.clone();
        async move { cl.get_jobs(request).await }
    })
    .await
    .map(|r| r.jobs)
}

/// The job id `wait_job` and `notify` read, or the line refusing it
/// (Slurm refuses job 0, which is also what a word without digits reads).
fn job_word(word: &str) -> Result<u32, String> {
    match strtol_u32(word).0 {
        0 => Err(format!("Invalid job_id {word}")),
        id => Ok(id),
    }
}

/// Runs a step command against the controller.
async fn run(
    command: &StepCommand,
    options: &Options,
    c: &mut Controller,
    out: &mut Output<'_>,
) -> i32 {
    match command {
        StepCommand::ShowStep { id } => {
            let jobs = match load_jobs(c, Vec::new()).await {
                Ok(jobs) => jobs,
                Err(e) => {
                    out.error_line(&format!("slurm_get_job_steps error: {e}"));
                    return 1;
                }
            };
            let (text, err, code) = show_step(&jobs, id.as_deref(), options.oneliner);
            if let Some(line) = err {
                out.error_line(&line);
            }
            // `-Q` leaves out the "not found" line, as Slurm does.
            let text = if options.quiet && code != 0 {
                ""
            } else {
                &text
            };
            let printed = out.block("scontrol", text);
            code.max(printed)
        }
        StepCommand::WaitJob { word } => {
            let job = match job_word(word) {
                Ok(job) => job,
                Err(line) => {
                    // Slurm leaves this line without its newline.
                    out.error_text(&line);
                    return 1;
                }
            };
            match load_jobs(c, vec![job]).await {
                Ok(jobs) => {
                    let (line, code) = wait_job_report(standing(&jobs, job), job);
                    out.error_line(&line);
                    code
                }
                Err(e) if e.code == slurm_proto::ErrorCode::InvalidJobId => {
                    out.error_line(&wait_job_report(JobStanding::Unknown, job).0);
                    1
                }
                Err(e) => {
                    out.error_line(&format!("scontrol: error: slurm_job_node_ready: {e}"));
                    1
                }
            }
        }
        StepCommand::Notify { word, .. } => {
            let job = match job_word(word) {
                Ok(job) => job,
                Err(line) => {
                    // Slurm ends the refusal without a newline and carries on
                    // to report a failure with no error set.
                    out.error_line(&format!("{line}job notify failure: No error"));
                    return 1;
                }
            };
            let standing = match load_jobs(c, vec![job]).await {
                Ok(jobs) => standing(&jobs, job),
                Err(e) if e.code == slurm_proto::ErrorCode::InvalidJobId => JobStanding::Unknown,
                Err(e) => {
                    out.error_line(&format!("job notify failure: {e}"));
                    return 1;
                }
            };
            let (line, code) = notify_report(standing);
            if let Some(line) = line {
                out.error_line(line);
            }
            code
        }
        StepCommand::ListPids { .. } | StepCommand::PidInfo { .. } => 1,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn running(job_id: u32) -> v1::JobInfo {
        v1::JobInfo {
            job_id,
            user_id: 0,
            state: v1::JobState::Running as i32,
            partition: "debug".into(),
            batch: true,
            batch_host: "n1".into(),
            nodes: "n1".into(),
            start_time: 1_000,
            ..v1::JobInfo::default()
        }
    }

    #[test]
    fn strtol_reads_like_c() {
        assert_eq!(strtol("12abc"), (12, "abc"));
        assert_eq!(strtol("abc"), (0, "abc"));
        assert_eq!(strtol(""), (0, ""));
        assert_eq!(strtol("-1"), (-1, ""));
        assert_eq!(strtol("99999999999999999999"), (i64::MAX, ""));
        assert_eq!(strtol_u32("99999999999").0, 1_215_752_191);
        assert_eq!(strtol_u32("99999999999999999999").0, u32::MAX);
        assert_eq!(strtol_u32("-5").0, BATCH_STEP);
        assert_eq!(strtol_u32("é1"), (0, "é1"));
    }

    #[test]
    fn step_ids_as_slurm_reads_and_names_them() {
        let q = StepQuery::parse("99999");
        assert_eq!(q.not_found_line(), "Job step 99999. not found");
        assert_eq!(
            StepQuery::parse("9.batch").not_found_line(),
            "Job step 9.0 not found"
        );
        assert_eq!(
            StepQuery::parse("abc").not_found_line(),
            "Job step 0.Invalid not found"
        );
        assert_eq!(
            StepQuery::parse("").not_found_line(),
            "Job step 0.Invalid not found"
        );
        assert_eq!(
            StepQuery::parse("4_").not_found_line(),
            "Job step 4_0. not found"
        );
        assert_eq!(
            StepQuery::parse("1.4294967293").not_found_line(),
            "Job step 1.TDB not found"
        );
        assert_eq!(
            StepQuery::parse("1.4294967290").not_found_line(),
            "Job step 1.interactive not found"
        );
        assert_eq!(
            StepQuery::parse("1.4294967292").not_found_line(),
            "Job step 1.extern not found"
        );
        assert_eq!(
            StepQuery::parse("5.-1").not_found_line(),
            "Job step 5.4294967295 not found"
        );
        assert_eq!(StepQuery::parse("1.2.3").step, 2);
        assert_eq!(StepQuery::parse("1+2").step, NO_VAL);
    }

    #[test]
    fn show_step_derives_the_batch_step_of_running_jobs() {
        let mut pending = running(8);
        pending.state = v1::JobState::Pending as i32;
        let jobs = vec![running(6), pending];
        let (text, err, code) = show_step(&jobs, None, true);
        assert_eq!((err, code), (None, 0));
        assert!(
            text.starts_with("StepId=6.batch UserId=0 StartTime="),
            "{text}"
        );
        assert!(text.ends_with(
            "TimeLimit=UNLIMITED State=RUNNING Partition=debug NodeList=n1 Nodes=1 CPUs=0 Tasks=1 \
             Name=batch Network=(null) TRES=(null) ResvPorts=(null) CPUFreqReq=Default \
             SrunHost:Pid=(null):0\n"
        ), "{text}");
        let (text, _, code) = show_step(&jobs, Some("6"), false);
        assert_eq!(code, 0);
        assert!(
            text.contains("\n   State=RUNNING Partition=debug NodeList=n1\n"),
            "{text}"
        );
        assert!(text.ends_with("SrunHost:Pid=(null):0\n\n"), "{text}");
        // The batch step's number read from `6.batch` is 0: not there.
        assert_eq!(
            show_step(&jobs, Some("6.batch"), false),
            ("Job step 6.0 not found\n".into(), None, 1)
        );
        assert_eq!(show_step(&jobs, Some("6.4294967291"), false).2, 0);
        assert_eq!(
            show_step(&jobs, Some("8"), false),
            ("Job step 8. not found\n".into(), None, 1)
        );
        assert_eq!(
            show_step(&jobs, Some("99"), false),
            (
                String::new(),
                Some("slurm_get_job_steps error: Invalid job id specified".into()),
                1
            )
        );
        // With no job at all, an unknown id is only "not found".
        assert_eq!(
            show_step(&[], Some("99"), false),
            ("Job step 99. not found\n".into(), None, 1)
        );
        assert_eq!(
            show_step(&[], None, false),
            ("No job steps in the system\n".into(), None, 0)
        );
        assert_eq!(
            show_step(&jobs[1..], Some("0"), false),
            ("Job step 0.Invalid not found\n".into(), None, 1)
        );
    }

    #[test]
    fn array_task_steps_show_under_their_array_name_only_when_asked() {
        let mut task = running(5);
        task.array_job_id = Some(4);
        task.array_task_id = Some(0);
        let jobs = vec![task];
        assert_eq!(
            show_step(&jobs, None, true).0,
            "No job steps in the system\n"
        );
        let (text, _, code) = show_step(&jobs, Some("4"), true);
        assert_eq!(code, 0);
        assert!(text.starts_with("StepId=4_0.batch "), "{text}");
        assert_eq!(show_step(&jobs, Some("4_0"), true).2, 0);
        assert_eq!(
            show_step(&jobs, Some("4_1"), true),
            ("Job step 4_1. not found\n".into(), None, 1)
        );
    }

    #[test]
    fn wait_job_and_notify_report_by_standing() {
        let mut done = running(3);
        done.state = v1::JobState::Cancelled as i32;
        let jobs = vec![running(2), done];
        assert_eq!(standing(&jobs, 2), JobStanding::Running);
        assert_eq!(standing(&jobs, 3), JobStanding::Done);
        assert_eq!(standing(&jobs, 4), JobStanding::Unknown);
        assert_eq!(
            wait_job_report(JobStanding::Running, 2),
            ("scontrol: Nodes are ready for job 2".into(), 0)
        );
        assert_eq!(
            wait_job_report(JobStanding::Pending, 2),
            ("scontrol: Job 2 no longer running".into(), 1)
        );
        assert_eq!(
            wait_job_report(JobStanding::Unknown, 9),
            ("scontrol: Problem running job 9".into(), 1)
        );
        assert_eq!(notify_report(JobStanding::Running), (None, 0));
        assert_eq!(
            notify_report(JobStanding::Pending).0,
            Some("job notify failure: Requested operation is presently disabled")
        );
        assert_eq!(
            notify_report(JobStanding::Done).0,
            Some("job notify failure: Job/step already completing or completed")
        );
        assert_eq!(job_word("12abc"), Ok(12));
        assert_eq!(job_word("abc"), Err("Invalid job_id abc".into()));
    }

    #[test]
    fn pid_info_counts_a_year_for_an_unlimited_job() {
        let mut job = running(6);
        job.time_limit = Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Unlimited(true)),
        });
        let text = pid_info_text(&job, 1_010);
        assert!(text.starts_with("Slurm JobId=6 ends at "), "{text}");
        assert!(
            text.ends_with(&format!(
                "\nJob remaining time is {} seconds\n",
                YEAR_SECS - 10
            )),
            "{text}"
        );
        job.time_limit = Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(5)),
        });
        assert!(pid_info_text(&job, 1_002).ends_with("is 298 seconds\n"));
        assert!(pid_info_text(&job, 9_999).ends_with("is 0 seconds\n"));
    }

    proptest! {
        #[test]
        fn any_word_parses_without_panic(word in "\\PC{0,40}") {
            let q = StepQuery::parse(&word);
            let _ = q.not_found_line();
            let _ = show_step(&[running(1)], Some(&word), false);
            let _ = job_word(&word);
        }
    }
}
