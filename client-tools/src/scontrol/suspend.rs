//! `scontrol suspend`, `scontrol resume` and `scontrol top`.
//!
//! Slurm's scontrol takes each argument of `suspend` and `resume` on its
//! own: one that is not a job list is refused (`Invalid job id specified
//! for job ARG`) and the others still go, and a failure names the job it
//! concerns (`Job is pending execution for job 7`). `top` takes exactly one
//! job list, sent whole; its refusal names the list as given. Each argument
//! may start with `JobId=` or `Job=`, in any case, as in Slurm. Any failure
//! makes the exit status 1. The controller decides everything else
//! (`slurmctld::core::suspend`).
//!
//! A job array answers per task, in Slurm 22.05's form: one line per
//! outcome, naming the tasks it concerns as `ARRAYID_RANGES` (Slurm's bitmap
//! text, `15_0-1,3`, without brackets), lines ordered by their lowest task:
//!
//! ```text
//! $ scontrol suspend 15        # tasks 0-1 running, 2-4 pending
//! 15_0-1: No error
//! 15_2-4: Job is pending execution
//! ```
//!
//! A lone outcome without error prints nothing; any other array line makes
//! the exit status 1, "No error" lines included (they only appear beside
//! failures). This applies to an array named by its id and to tasks named
//! as `15_2` or `15_[1-3]`, where a task that does not exist is
//! `Invalid job id specified`. An ordinary job, and a refusal of the whole
//! request (access denied), keep the `<error> for job <id>` form.
//!
//! The controller reports the still-pending rest of an array as one result
//! without a task id; which tasks it holds is asked of the controller
//! afterwards (their ArrayTaskId), only when such a result needs showing.

use std::collections::{BTreeMap, HashMap};

use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::controller::{parse_job_list, CtlCommand, CtlError};
use crate::client::Controller;
use crate::output::Output;

/// One argument of `suspend` or `resume`.
#[derive(Debug, Clone, PartialEq)]
pub enum JobArg {
    /// The jobs it names; `text` is the argument without its `JobId=`.
    Jobs {
        text: String,
        filter: Box<v1::JobFilter>,
    },
    /// Not a job list (the argument without its `JobId=`).
    Invalid(String),
}

/// `suspend` (or with `resume`, `resume`) of each argument in turn.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspendCommand {
    pub resume: bool,
    pub args: Vec<JobArg>,
}

/// `top JOB_LIST`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopCommand {
    /// The list as given (without its `JobId=`), for the error line.
    pub text: String,
    pub filter: v1::JobFilter,
}

/// The argument without a leading `JobId=` and then `Job=` (either case),
/// as Slurm strips them.
fn without_prefix(arg: &str) -> &str {
    let strip = |s: &'_ str, prefix: &str| -> Option<usize> {
        s.get(..prefix.len())
            .filter(|head| head.eq_ignore_ascii_case(prefix))
            .map(|_| prefix.len())
    };
    let arg = strip(arg, "jobid=").map_or(arg, |n| &arg[n..]);
    strip(arg, "job=").map_or(arg, |n| &arg[n..])
}

fn few(tag: &str) -> CtlError {
    CtlError::new(vec![format!("too few arguments for keyword:{tag}")])
}

/// `suspend ARG...` or `resume ARG...`; `tag` is the keyword as typed,
/// which Slurm repeats when there is no argument.
pub fn parse_suspend(tag: &str, resume: bool, args: &[String]) -> Result<CtlCommand, CtlError> {
    if args.is_empty() {
        return Err(few(tag));
    }
    let args = args
        .iter()
        .map(|arg| {
            let text = without_prefix(arg).to_owned();
            match parse_job_list(std::slice::from_ref(&text)) {
                Ok(filter) => JobArg::Jobs {
                    text,
                    filter: Box::new(filter),
                },
                Err(_) => JobArg::Invalid(text),
            }
        })
        .collect();
    Ok(CtlCommand::Suspend(Box::new(SuspendCommand {
        resume,
        args,
    })))
}

/// `top JOB_LIST`: exactly one argument.
pub fn parse_top(tag: &str, args: &[String]) -> Result<CtlCommand, CtlError> {
    let [arg] = args else {
        if args.is_empty() {
            return Err(few(tag));
        }
        return Err(CtlError::new(vec![format!(
            "too many arguments for keyword:{tag}"
        )]));
    };
    let text = without_prefix(arg).to_owned();
    match parse_job_list(std::slice::from_ref(&text)) {
        Ok(filter) => Ok(CtlCommand::Top(Box::new(TopCommand { text, filter }))),
        Err(_) => Err(invalid(&text)),
    }
}

/// Slurm's line for an argument that is not a job list.
fn invalid(text: &str) -> CtlError {
    CtlError::hushable(vec![format!("{} for job {text}", ErrorCode::InvalidJobId)])
}

/// Sends each argument of `cmd`; the exit status.
pub async fn suspend(c: &mut Controller, cmd: &SuspendCommand, out: &mut Output<'_>) -> i32 {
    let mut status = 0;
    for arg in &cmd.args {
        let (text, filter) = match arg {
            JobArg::Invalid(text) => {
                for line in invalid(text).lines {
                    out.error_line(&line);
                }
                status = 1;
                continue;
            }
            JobArg::Jobs { text, filter } => (text, filter),
        };
        let request = v1::SuspendJobRequest {
            filter: Some((**filter).clone()),
            resume: cmd.resume,
        };
        let reply = c
            .call(|mut cl| {
                let request = request.clone();
                async move { cl.suspend_job(request).await }
            })
            .await;
        let code = match reply {
            Ok(r) => {
                let wanted = pending_lookups(filter, &r.results);
                let pending = if wanted.is_empty() {
                    HashMap::new()
                } else {
                    pending_tasks(c, wanted).await
                };
                let lines = result_lines(filter, &r.results, &pending);
                for line in &lines {
                    out.error_line(line);
                }
                i32::from(!lines.is_empty())
            }
            Err(e) => {
                out.error_line(&format!("{e} for job {text}"));
                1
            }
        };
        status = status.max(code);
    }
    status
}

/// Slurm's text for a result without error (SLURM_SUCCESS), shown beside
/// the failed tasks of the same array.
const NO_ERROR: &str = "No error";

/// The longest task list Slurm's controller writes (a 32-byte buffer);
/// a longer one is cut to [`TASK_TEXT_KEPT`] characters and `...`.
const TASK_TEXT_MAX: usize = 29;
const TASK_TEXT_KEPT: usize = 28;

/// The highest task id any array can have (Slurm's MaxArraySize is at most
/// 4000001); a task list beyond it is shown as written.
const MAX_TASK_ID: u32 = 4_000_000;

/// The job ids of `results` that may be the pending rest of an array
/// (a result without a task id, for a job id the argument named, with an
/// outcome other than success, refusal or "no such job"): their task ids
/// are needed to show them.
pub fn pending_lookups(filter: &v1::JobFilter, results: &[v1::JobActionResult]) -> Vec<u32> {
    let quiet = [
        0,
        ErrorCode::AccessDenied.number(),
        ErrorCode::InvalidJobId.number(),
        ErrorCode::UnexpectedMessage.number(),
    ];
    let mut ids: Vec<u32> = results
        .iter()
        .filter(|r| r.array_task_id.is_none() && !quiet.contains(&r.error_code))
        .map(|r| r.job_id)
        .filter(|id| filter.job_ids.contains(id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The pending task ids of those of `ids` that are the pending rest of an
/// array, asked of the controller. A failed query leaves them out, and
/// their results are shown as ordinary jobs'.
async fn pending_tasks(c: &mut Controller, ids: Vec<u32>) -> HashMap<u32, Vec<u32>> {
    let request = v1::GetJobsRequest {
        hide_hidden: false,
        filter: Some(v1::JobFilter {
            job_ids: ids.clone(),
            ..Default::default()
        }),
        changed_since: 0,
        detail: false,
        // job_id, array_job_id, array_task_id, array_task_spec
        fields: vec![1, 2, 3, 4],
    };
    let reply = c
        .call(|mut cl| {
            let request = request.clone();
            async move { cl.get_jobs(request).await }
        })
        .await;
    let Ok(reply) = reply else {
        return HashMap::new();
    };
    reply
        .jobs
        .iter()
        .filter(|j| {
            ids.contains(&j.job_id) && j.array_job_id == Some(j.job_id) && j.array_task_id.is_none()
        })
        .filter_map(|j| Some((j.job_id, parse_tasks(&j.array_task_spec)?)))
        .collect()
}

/// Task ids written as Slurm writes them (`2`, `1-3,5`, `0-9:3`, in
/// brackets or not, with or without a `%` limit), ascending and without
/// repeats; `None` for anything else, for ids beyond [`MAX_TASK_ID`], or
/// for a list naming more ids, repeats counted, than any array can hold.
pub fn parse_tasks(text: &str) -> Option<Vec<u32>> {
    let text = text.split_once('%').map_or(text, |(list, _)| list).trim();
    let list = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    let number = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse::<u32>().ok().filter(|n| *n <= MAX_TASK_ID)
    };
    let mut ranges = Vec::new();
    let mut count: u64 = 0;
    for part in list.split(',') {
        let (range, step) = match part.split_once(':') {
            Some((r, s)) => (r, number(s).filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(range)?, number(range)?),
        };
        if hi < lo {
            return None;
        }
        count += u64::from((hi - lo) / step) + 1;
        if count > u64::from(MAX_TASK_ID) + 1 {
            return None;
        }
        ranges.push((lo, hi, step));
    }
    let mut ids = Vec::new();
    for (lo, hi, step) in ranges {
        ids.extend((lo..=hi).step_by(usize::try_from(step).ok()?));
    }
    ids.sort_unstable();
    ids.dedup();
    Some(ids)
}

/// Slurm's text of a task id set: ascending runs as `a-b`, single ids as
/// `a`, joined by commas (`0-3,5,7-8`), cut as Slurm's controller cuts it.
pub fn format_tasks(ids: &[u32]) -> String {
    let mut text = String::new();
    let mut i = 0;
    while let Some(&first) = ids.get(i) {
        let mut last = first;
        while ids.get(i + 1) == Some(&last.wrapping_add(1)) && last != u32::MAX {
            last += 1;
            i += 1;
        }
        if !text.is_empty() {
            text.push(',');
        }
        if first == last {
            text.push_str(&first.to_string());
        } else {
            text.push_str(&format!("{first}-{last}"));
        }
        i += 1;
    }
    if text.len() > TASK_TEXT_MAX {
        // Only ASCII digits, commas and dashes: any index is a boundary.
        text.truncate(TASK_TEXT_KEPT);
        text.push_str("...");
    }
    text
}

/// A task selector's list without its brackets, as Slurm's scontrol sends it.
fn unbracketed(spec: &str) -> &str {
    spec.strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(spec)
}

/// The error text of a result, Slurm's for success included.
fn outcome_text(code: i32) -> String {
    if code == 0 {
        NO_ERROR.to_owned()
    } else {
        ErrorCode::from_number_or_unspecified(code).to_string()
    }
}

/// Task ids of one array by outcome (error number).
type Outcomes = BTreeMap<i32, Vec<u32>>;

/// Adds `tasks` with outcome `code` to `array`'s outcomes.
fn add_tasks(arrays: &mut BTreeMap<u32, Outcomes>, array: u32, code: i32, tasks: &[u32]) {
    arrays
        .entry(array)
        .or_default()
        .entry(code)
        .or_default()
        .extend_from_slice(tasks);
}

/// What the controller answered for one argument (`filter`), as the lines
/// Slurm's scontrol prints (see the module docs). `pending` holds the
/// pending task ids of those results without a task id that are the rest
/// of an array ([`pending_lookups`]).
pub fn result_lines(
    filter: &v1::JobFilter,
    results: &[v1::JobActionResult],
    pending: &HashMap<u32, Vec<u32>>,
) -> Vec<String> {
    let denied = ErrorCode::AccessDenied.number();
    let invalid = ErrorCode::InvalidJobId.number();
    // What Slurm 22.05 answers for a job or array that does not exist: a
    // line of its own, as a refusal's.
    let unknown = ErrorCode::UnexpectedMessage.number();
    let named = |id: u32| filter.job_ids.contains(&id);
    let selected = |id: u32| filter.array_tasks.iter().any(|s| s.array_job_id == id);
    // A refusal concerns the whole request: no task lines beside it.
    let refused: Vec<u32> = results
        .iter()
        .filter(|r| r.error_code == denied || r.error_code == unknown)
        .map(|r| r.job_id)
        .collect();
    let is_array = |id: u32| {
        !refused.contains(&id)
            && (selected(id)
                || pending.contains_key(&id)
                || results
                    .iter()
                    .any(|r| r.job_id == id && r.array_task_id.is_some()))
    };
    // The lists of the selectors, without brackets, for a refusal's line.
    let mut specs: HashMap<u32, Vec<&str>> = HashMap::new();
    for s in &filter.array_tasks {
        specs
            .entry(s.array_job_id)
            .or_default()
            .push(unbracketed(&s.task_spec));
    }

    let mut arrays: BTreeMap<u32, Outcomes> = BTreeMap::new();
    // (job id, line) of the results shown as an ordinary job's.
    let mut plain: Vec<(u32, String)> = Vec::new();
    for r in results {
        let id = r.job_id;
        let code = r.error_code;
        if code == denied || code == unknown {
            let shown = match (r.array_task_id, specs.get_mut(&id)) {
                (Some(t), _) => format!("{id}_{t}"),
                (None, Some(list)) if !named(id) && !list.is_empty() => {
                    format!("{id}_{}", list.remove(0))
                }
                (None, _) => id.to_string(),
            };
            plain.push((id, format!("{} for job {shown}", outcome_text(code))));
            continue;
        }
        if !is_array(id) {
            if code != 0 {
                let shown = match r.array_task_id {
                    Some(t) => format!("{id}_{t}"),
                    None => id.to_string(),
                };
                plain.push((id, format!("{} for job {shown}", outcome_text(code))));
            }
            continue;
        }
        match (r.array_task_id, pending.get(&id)) {
            (Some(t), _) => add_tasks(&mut arrays, id, code, &[t]),
            (None, Some(tasks)) if named(id) && !tasks.is_empty() => {
                add_tasks(&mut arrays, id, code, tasks)
            }
            // A selector that found no task: its tasks are named below.
            (None, _) if code == invalid && selected(id) => {}
            (None, _) if code == 0 => {}
            // The pending rest of an array whose tasks are not known.
            (None, _) => plain.push((id, format!("{} for job {id}", outcome_text(code)))),
        }
    }
    // Tasks a selector named and the controller found no record of do not
    // exist.
    let found_none = |id: u32| {
        results
            .iter()
            .any(|r| r.job_id == id && r.array_task_id.is_none() && r.error_code == invalid)
    };
    for s in &filter.array_tasks {
        let id = s.array_job_id;
        if refused.contains(&id) {
            continue;
        }
        match parse_tasks(&s.task_spec) {
            Some(asked) => {
                let mut known: Vec<u32> = arrays
                    .get(&id)
                    .map(|by_code| by_code.values().flatten().copied().collect())
                    .unwrap_or_default();
                known.sort_unstable();
                let missing: Vec<u32> = asked
                    .into_iter()
                    .filter(|t| known.binary_search(t).is_err())
                    .collect();
                if missing.is_empty() && found_none(id) {
                    // Found and not found at once: say what was said.
                    plain.push((id, format!("{} for job {id}", outcome_text(invalid))));
                }
                add_tasks(&mut arrays, id, invalid, &missing);
            }
            // The controller could not read it either: refused whole.
            None if found_none(id) => plain.push((
                id,
                format!(
                    "{} for job {id}_{}",
                    outcome_text(invalid),
                    unbracketed(&s.task_spec)
                ),
            )),
            None => {}
        }
    }

    // In the order the argument names the jobs (Slurm's scontrol sends
    // each in turn), ids first, then task selectors; an array's lines
    // together, ordered by their lowest task.
    let order = |id: u32| {
        let at = filter
            .job_ids
            .iter()
            .position(|j| *j == id)
            .or_else(|| {
                filter
                    .array_tasks
                    .iter()
                    .position(|s| s.array_job_id == id)
                    .map(|p| p + filter.job_ids.len())
            })
            .unwrap_or(usize::MAX);
        (at, id)
    };
    plain.sort_by_key(|(id, _)| order(*id));
    let mut arrays: Vec<(u32, Outcomes)> = arrays.into_iter().collect();
    arrays.sort_by_key(|(id, _)| order(*id));
    let mut plain = plain.into_iter().peekable();
    let mut lines = Vec::new();
    for (array, by_code) in arrays {
        while let Some((_, line)) = plain.next_if(|(id, _)| order(*id) < order(array)) {
            lines.push(line);
        }
        let mut groups: Vec<(i32, Vec<u32>)> = by_code
            .into_iter()
            .map(|(code, mut tasks)| {
                tasks.sort_unstable();
                tasks.dedup();
                (code, tasks)
            })
            .filter(|(_, tasks)| !tasks.is_empty())
            .collect();
        groups.sort_by_key(|(_, tasks)| tasks.first().copied());
        if let [(0, _)] = groups.as_slice() {
            continue;
        }
        for (code, tasks) in groups {
            lines.push(format!(
                "{array}_{}: {}",
                format_tasks(&tasks),
                outcome_text(code)
            ));
        }
    }
    lines.extend(plain.map(|(_, line)| line));
    lines
}

/// Sends `top`; the exit status.
pub async fn top(c: &mut Controller, cmd: &TopCommand, out: &mut Output<'_>) -> i32 {
    let request = v1::TopJobRequest {
        filter: Some(cmd.filter.clone()),
    };
    let reply = c
        .call(|mut cl| {
            let request = request.clone();
            async move { cl.top_job(request).await }
        })
        .await;
    match reply {
        Ok(_) => 0,
        Err(e) => {
            out.error_line(&format!("{e} for job {}", cmd.text));
            1
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{Command, CommandError};
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn parsed(line: &str) -> CtlCommand {
        match Command::parse(&words(line)) {
            Ok(Command::Controller(c)) => *c,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn refused(line: &str) -> Vec<String> {
        match Command::parse(&words(line)) {
            Err(CommandError::Controller(CtlError { lines, .. })) => lines,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn jobs(ids: &[u32]) -> v1::JobFilter {
        v1::JobFilter {
            job_ids: ids.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn suspend_and_resume_take_each_argument_on_its_own() {
        let want = |resume, args| CtlCommand::Suspend(Box::new(SuspendCommand { resume, args }));
        assert_eq!(
            parsed("suspend 5,6 JobId=7 job=8_2 abc"),
            want(
                false,
                vec![
                    JobArg::Jobs {
                        text: "5,6".into(),
                        filter: Box::new(jobs(&[5, 6]))
                    },
                    JobArg::Jobs {
                        text: "7".into(),
                        filter: Box::new(jobs(&[7]))
                    },
                    JobArg::Jobs {
                        text: "8_2".into(),
                        filter: Box::new(v1::JobFilter {
                            array_tasks: vec![v1::ArrayTaskSelector {
                                array_job_id: 8,
                                task_spec: "2".into()
                            }],
                            ..Default::default()
                        })
                    },
                    JobArg::Invalid("abc".into()),
                ]
            )
        );
        // Slurm's shortest forms: `su`, `res`; any case.
        for line in ["su 5", "SUSP 5", "suspend 5"] {
            assert!(
                matches!(parsed(line), CtlCommand::Suspend(s) if !s.resume),
                "{line}"
            );
        }
        for line in ["res 5", "Resume 5"] {
            assert!(
                matches!(parsed(line), CtlCommand::Suspend(s) if s.resume),
                "{line}"
            );
        }
        // `re` is not enough (requeue, release, reconfigure...).
        assert!(matches!(
            Command::parse(&words("re 5")),
            Err(CommandError::InvalidKeyword(_))
        ));
        assert_eq!(refused("susp"), vec!["too few arguments for keyword:susp"]);
        assert_eq!(
            refused("resume"),
            vec!["too few arguments for keyword:resume"]
        );
    }

    #[test]
    fn top_takes_one_job_list() {
        assert_eq!(
            parsed("top JOBID=9,4"),
            CtlCommand::Top(Box::new(TopCommand {
                text: "9,4".into(),
                filter: jobs(&[9, 4])
            }))
        );
        assert_eq!(refused("top"), vec!["too few arguments for keyword:top"]);
        assert_eq!(
            refused("TOP 1 2"),
            vec!["too many arguments for keyword:TOP"]
        );
        assert_eq!(
            refused("top x1"),
            vec!["Invalid job id specified for job x1"]
        );
        assert!(matches!(
            Command::parse(&words("to 5")),
            Err(CommandError::InvalidKeyword(_))
        ));
    }

    fn res(job_id: u32, task: Option<u32>, code: ErrorCode) -> v1::JobActionResult {
        v1::JobActionResult {
            job_id,
            array_task_id: task,
            error_code: code.number(),
            error_detail: String::new(),
        }
    }

    fn ok(job_id: u32, task: Option<u32>) -> v1::JobActionResult {
        v1::JobActionResult {
            error_code: 0,
            ..res(job_id, task, ErrorCode::Unspecified)
        }
    }

    /// The filter of one `suspend` argument, as the parser makes it.
    fn arg(text: &str) -> v1::JobFilter {
        match parsed(&format!("suspend {text}")) {
            CtlCommand::Suspend(s) => match &s.args[..] {
                [JobArg::Jobs { filter, .. }] => (**filter).clone(),
                other => panic!("{text}: {other:?}"),
            },
            other => panic!("{text}: {other:?}"),
        }
    }

    fn lines(
        text: &str,
        results: &[v1::JobActionResult],
        pending: &[(u32, &[u32])],
    ) -> Vec<String> {
        let pending = pending.iter().map(|(id, t)| (*id, t.to_vec())).collect();
        result_lines(&arg(text), results, &pending)
    }

    use ErrorCode::{
        AccessDenied, AlreadyDone, InvalidJobId, JobNotSuspended, JobPending, UnexpectedMessage,
    };

    #[test]
    fn ordinary_jobs_keep_the_for_job_form() {
        assert_eq!(
            lines("7", &[res(7, None, JobPending)], &[]),
            vec!["Job is pending execution for job 7"]
        );
        assert_eq!(
            lines("999", &[res(999, None, InvalidJobId)], &[]),
            vec!["Invalid job id specified for job 999"]
        );
        assert!(lines("7", &[ok(7, None)], &[]).is_empty());
        assert!(lines("7", &[], &[]).is_empty());
    }

    /// `scontrol suspend 15`: tasks 0-1 running, 2-4 pending.
    #[test]
    fn an_array_answers_per_outcome_with_task_ranges() {
        let results = [ok(15, Some(0)), ok(15, Some(1)), res(15, None, JobPending)];
        assert_eq!(
            lines("15", &results, &[(15, &[2, 3, 4])]),
            vec!["15_0-1: No error", "15_2-4: Job is pending execution"]
        );
        // Every task pending.
        assert_eq!(
            lines(
                "15",
                &[res(15, None, JobPending)],
                &[(15, &[0, 1, 2, 3, 4])]
            ),
            vec!["15_0-4: Job is pending execution"]
        );
        // Every task done: nothing to say.
        assert!(lines("15", &[ok(15, Some(0)), ok(15, Some(1))], &[]).is_empty());
        // One task, one failure: still the array form.
        assert_eq!(
            lines("15", &[res(15, Some(3), AlreadyDone)], &[]),
            vec!["15_3: Job/step already completing or completed"]
        );
    }

    /// Lines come in the order of their lowest task.
    #[test]
    fn resume_of_a_mixed_array() {
        let results = [
            res(15, Some(0), JobNotSuspended),
            ok(15, Some(1)),
            res(15, Some(2), JobNotSuspended),
            res(15, None, JobPending),
        ];
        assert_eq!(
            lines("15", &results, &[(15, &[3, 4, 5, 9])]),
            vec![
                "15_0,2: Job is not suspended",
                "15_1: No error",
                "15_3-5,9: Job is pending execution",
            ]
        );
    }

    #[test]
    fn named_tasks_and_tasks_that_do_not_exist() {
        let results = [ok(15, Some(1)), res(15, Some(2), AlreadyDone)];
        assert_eq!(
            lines("15_[1-3]", &results, &[]),
            vec![
                "15_1: No error",
                "15_2: Job/step already completing or completed",
                "15_3: Invalid job id specified",
            ]
        );
        assert_eq!(
            lines("15_9", &[res(15, None, InvalidJobId)], &[]),
            vec!["15_9: Invalid job id specified"]
        );
        assert_eq!(
            lines("15_[1-7:3]", &[res(15, None, InvalidJobId)], &[]),
            vec!["15_1,4,7: Invalid job id specified"]
        );
        // A list the controller could not read is refused whole.
        assert_eq!(
            lines("15_3-1", &[res(15, None, InvalidJobId)], &[]),
            vec!["Invalid job id specified for job 15_3-1"]
        );
        // One task, done.
        assert!(lines("15_2", &[ok(15, Some(2))], &[]).is_empty());
    }

    /// A refusal of the request names it as sent, brackets dropped.
    #[test]
    fn refusals_keep_the_for_job_form() {
        let results = [res(5, None, AccessDenied), res(15, None, AccessDenied)];
        assert_eq!(
            lines("5,15_[2-4]", &results, &[]),
            vec![
                "Access/permission denied for job 5",
                "Access/permission denied for job 15_2-4",
            ]
        );
        assert_eq!(
            lines("15_2", &[res(15, Some(2), AccessDenied)], &[]),
            vec!["Access/permission denied for job 15_2"]
        );
    }

    /// Slurm 22.05's scontrol answers for the jobs of a list in the
    /// list's order; one that names no job is "Unexpected message
    /// received".
    #[test]
    fn several_jobs_in_one_argument_come_in_their_order() {
        let results = [
            res(15, Some(0), JobPending),
            ok(15, Some(1)),
            res(20, None, AlreadyDone),
            res(99, None, UnexpectedMessage),
        ];
        assert_eq!(
            lines("20,99,15", &results, &[]),
            vec![
                "Job/step already completing or completed for job 20",
                "Unexpected message received for job 99",
                "15_0: Job is pending execution",
                "15_1: No error",
            ]
        );
        assert_eq!(
            lines("15,20", &results[..3], &[]),
            vec![
                "15_0: Job is pending execution",
                "15_1: No error",
                "Job/step already completing or completed for job 20",
            ]
        );
        assert_eq!(
            lines("99_[1-3]", &[res(99, None, UnexpectedMessage)], &[]),
            vec!["Unexpected message received for job 99_1-3"]
        );
    }

    /// Without the pending tasks (the query failed), their result is shown
    /// as an ordinary job's rather than lost.
    #[test]
    fn pending_rest_without_its_tasks() {
        let results = [ok(15, Some(0)), res(15, None, JobPending)];
        assert_eq!(
            lines("15", &results, &[]),
            vec!["Job is pending execution for job 15"]
        );
    }

    #[test]
    fn which_results_need_their_pending_tasks() {
        let results = [
            ok(15, None),
            res(15, Some(1), JobPending),
            res(16, None, JobPending),
            res(17, None, InvalidJobId),
            res(18, None, AccessDenied),
            res(40, None, JobPending),
        ];
        assert_eq!(pending_lookups(&arg("15,16,17,18"), &results), vec![16]);
        assert!(pending_lookups(&arg("15_1"), &results).is_empty());
    }

    #[test]
    fn task_lists_read_and_written_as_slurm_does() {
        assert_eq!(parse_tasks("2"), Some(vec![2]));
        assert_eq!(parse_tasks("[1-3,5]"), Some(vec![1, 2, 3, 5]));
        assert_eq!(parse_tasks("0-9:3"), Some(vec![0, 3, 6, 9]));
        assert_eq!(parse_tasks("1-3,2%4"), Some(vec![1, 2, 3]));
        assert_eq!(parse_tasks("4000000"), Some(vec![4_000_000]));
        for bad in [
            "",
            "[",
            "[1-2",
            "1-",
            "-1",
            "3-1",
            "1-4:0",
            "x",
            "1,,2",
            "4000001",
            "1-99999999999",
            "é",
            "0-4000000,0-1",
        ] {
            assert_eq!(parse_tasks(bad), None, "{bad:?}");
        }
        assert_eq!(format_tasks(&[]), "");
        assert_eq!(format_tasks(&[3]), "3");
        assert_eq!(format_tasks(&[1, 2]), "1-2");
        assert_eq!(format_tasks(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(
            format_tasks(&[u32::MAX - 1, u32::MAX]),
            "4294967294-4294967295"
        );
        // Cut where Slurm's controller cuts: 29 characters are kept whole.
        let evens: Vec<u32> = (0..=40).step_by(2).collect();
        assert_eq!(format_tasks(&evens), "0,2,4,6,8,10,12,14,16,18,20,...");
        assert_eq!(
            format_tasks(&[1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21]),
            "1,3,5,7,9,11,13,15,17,19,21"
        );
        let twenty_nine = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 2000];
        assert_eq!(format_tasks(&twenty_nine).len(), 29);
        assert!(!format_tasks(&twenty_nine).ends_with("..."));
        let thirty = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20000];
        assert_eq!(format_tasks(&thirty), "0,2,4,6,8,10,12,14,16,18,200...");
    }

    proptest::proptest! {
        #[test]
        fn task_lists_round_trip(ids in proptest::collection::btree_set(0u32..=2000, 1..12)) {
            let ids: Vec<u32> = ids.into_iter().collect();
            let text = format_tasks(&ids);
            if !text.ends_with("...") {
                proptest::prop_assert_eq!(parse_tasks(&text), Some(ids));
            }
        }

        #[test]
        fn any_task_text_is_handled(text in ".{0,40}") {
            if let Some(ids) = parse_tasks(&text) {
                proptest::prop_assert!(ids.windows(2).all(|w| w[0] < w[1]));
            }
        }

        #[test]
        fn any_answer_is_shown_without_panic(
            ids in proptest::collection::vec(1u32..40, 0..4),
            tasks in proptest::collection::vec((1u32..40, 0u32..50), 0..4),
            results in proptest::collection::vec(
                (1u32..40, proptest::option::of(0u32..50), proptest::sample::select(vec![
                    0, 2017, 2020, 2021, 2035, 2050, -1, 12345,
                ])),
                0..12,
            ),
            pending in proptest::collection::hash_map(1u32..40, proptest::collection::vec(0u32..50, 0..6), 0..3),
        ) {
            let filter = v1::JobFilter {
                job_ids: ids,
                array_tasks: tasks
                    .into_iter()
                    .map(|(job, t)| v1::ArrayTaskSelector {
                        array_job_id: job,
                        task_spec: t.to_string(),
                    })
                    .collect(),
                ..Default::default()
            };
            let results: Vec<v1::JobActionResult> = results
                .into_iter()
                .map(|(job_id, array_task_id, error_code)| v1::JobActionResult {
                    job_id,
                    array_task_id,
                    error_code,
                    error_detail: String::new(),
                })
                .collect();
            let shown = result_lines(&filter, &results, &pending);
            // Every failure is shown somewhere.
            if results.iter().any(|r| r.error_code != 0) {
                proptest::prop_assert!(!shown.is_empty());
            }
            let _ = pending_lookups(&filter, &results);
        }
    }

    #[test]
    fn prefixes_are_stripped_once_each_in_slurms_order() {
        assert_eq!(without_prefix("jobid=5"), "5");
        assert_eq!(without_prefix("JOB=5"), "5");
        assert_eq!(without_prefix("JobId=Job=5"), "5");
        assert_eq!(without_prefix("job=jobid=5"), "jobid=5");
        assert_eq!(without_prefix("jo"), "jo");
        assert_eq!(without_prefix("jöbid=5"), "jöbid=5");
        assert_eq!(without_prefix(""), "");
    }
}
