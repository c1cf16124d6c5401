//! `squeue -s`/`--steps`: the job steps view.
//!
//! A running batch job has one step, `N.batch`, which the controller does
//! not keep as a record of its own: it is the job's script, started on the
//! job's first node when the job started. So the rows come from the running
//! jobs themselves, and when steps launched by `srun` come they will come
//! with their own records.
//!
//! The view is Slurm 22.05's, which differs from the job view in ways
//! scripts notice: its own `%` codes and `-O` names (any other is reported
//! as an invalid "job step" specification and kept as text), the
//! `SQUEUE_FORMAT` variables ignored, only `-j`, `-u`, `-p`, `-w` and the
//! `-s` list selecting (`-t`, `-n`, `-A` and the rest do not), and a step
//! list that names numbered steps only, so it never picks a batch step.

use std::collections::HashSet;
use std::fmt::Write as _;

use prost::Message;
use slurm_proto::v1::{GetJobsReply, JobInfo, JobState};
use slurm_proto::ErrorCode;

use super::{job_selectors, ListFilter, Options, ReplyParts, ReportError};
use crate::format::spec::{self, Item, SortKey};
use crate::format::{batch_step_node, has_batch_step, pad, Ctx};

/// The step view without `-o`/`-O` (also with `-l`, which adds only the
/// date line).
pub const DEFAULT_FORMAT: &str = "%.15i %.8j %.9P %.8u %.9M %N";

/// Slurm's default order of steps: by partition, then by id.
pub const DEFAULT_SORT: &str = "P,i";

/// The `%` codes of the step view.
const CODES: &str = "bijluAMNPSU";

/// Fields only `-O` names, with codes from Unicode's private use area so
/// that no `-o` format reaches them.
mod lo {
    pub const ARRAY_JOB_ID: char = '\u{E100}';
    pub const ARRAY_TASK_ID: char = '\u{E101}';
    pub const CLUSTER: char = '\u{E102}';
    pub const CONTAINER: char = '\u{E103}';
    pub const CPU_FREQ: char = '\u{E104}';
    pub const CPUS_PER_TRES: char = '\u{E105}';
    pub const JOB_ID: char = '\u{E106}';
    pub const MEM_PER_TRES: char = '\u{E107}';
    pub const NETWORK: char = '\u{E108}';
    pub const NUM_CPUS: char = '\u{E109}';
    pub const RESV_PORTS: char = '\u{E10A}';
    pub const STATE: char = '\u{E10B}';
    pub const TRES_BIND: char = '\u{E10C}';
    pub const TRES_PER_JOB: char = '\u{E10D}';
    pub const TRES_PER_SOCKET: char = '\u{E10E}';
    pub const TRES_PER_STEP: char = '\u{E10F}';
    pub const TRES_PER_TASK: char = '\u{E110}';
}

/// The `-O` names of the step view (any case) and their fields. Slurm
/// 22.05 heads `tres-per-job` `TRES_PER_STEP` and `tres-per-node`
/// `TRES_PER_JOB`; the headers below are its.
const LONG_NAMES: &[(&str, char)] = &[
    ("arrayjobid", lo::ARRAY_JOB_ID),
    ("arraytaskid", lo::ARRAY_TASK_ID),
    ("cluster", lo::CLUSTER),
    ("container", lo::CONTAINER),
    ("cpufreq", lo::CPU_FREQ),
    ("cpus-per-tres", lo::CPUS_PER_TRES),
    ("jobid", lo::JOB_ID),
    ("mem-per-tres", lo::MEM_PER_TRES),
    ("network", lo::NETWORK),
    ("nodes", 'N'),
    ("numcpus", lo::NUM_CPUS),
    ("numtasks", 'A'),
    ("partition", 'P'),
    ("resvports", lo::RESV_PORTS),
    ("starttime", 'S'),
    ("stepid", 'i'),
    ("stepname", 'j'),
    ("stepstate", lo::STATE),
    ("timelimit", 'l'),
    ("timeused", 'M'),
    ("tres-bind", lo::TRES_BIND),
    ("tres-per-job", lo::TRES_PER_JOB),
    ("tres-per-node", 'b'),
    ("tres-per-socket", lo::TRES_PER_SOCKET),
    ("tres-per-step", lo::TRES_PER_STEP),
    ("tres-per-task", lo::TRES_PER_TASK),
    ("userid", 'U'),
    ("username", 'u'),
];

fn long_code(name: &str) -> Option<char> {
    LONG_NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, c)| *c)
}

fn header(code: char) -> &'static str {
    match code {
        'b' => "TRES_PER_JOB",
        'i' => "STEPID",
        'j' => "NAME",
        'l' => "TIME_LIMIT",
        'u' => "USER",
        'A' => "TASKS",
        'M' => "TIME",
        'N' => "NODELIST",
        'P' => "PARTITION",
        'S' => "START_TIME",
        'U' => "UID",
        lo::ARRAY_JOB_ID => "ARRAY_JOB_ID",
        lo::ARRAY_TASK_ID => "ARRAY_TASK_ID",
        lo::CLUSTER => "CLUSTER",
        lo::CONTAINER => "CONTAINER",
        lo::CPU_FREQ => "CPU_FREQ",
        lo::CPUS_PER_TRES => "CPUS_PER_TRES",
        lo::JOB_ID => "JOB_ID",
        lo::MEM_PER_TRES => "MEM_PER_TRES",
        lo::NETWORK => "NETWORK",
        lo::NUM_CPUS => "NUM_CPUS",
        lo::RESV_PORTS => "RESERVED_PORTS",
        lo::STATE => "STATE",
        lo::TRES_BIND => "TRES_BIND",
        lo::TRES_PER_JOB | lo::TRES_PER_STEP => "TRES_PER_STEP",
        lo::TRES_PER_SOCKET => "TRES_PER_SOCKET",
        lo::TRES_PER_TASK => "TRES_PER_TASK",
        _ => "",
    }
}

/// What the step view selects by: the options that apply to steps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Selection {
    /// `-j` ids (a job, or every task of an array).
    job_ids: Vec<u32>,
    /// `-j` array tasks (`5_7`).
    tasks: Vec<(u32, u32)>,
    /// `-u`/`--me`: the uids, when users were asked for at all.
    uids: Option<Vec<u32>>,
    partitions: Vec<String>,
    /// `-w`: the node names.
    nodes: Option<HashSet<String>>,
    /// A `-s` list: it names numbered steps, never a batch step.
    steps_named: bool,
    /// A list option given with no item (`-u ""`): nothing is shown.
    nothing: bool,
}

impl Selection {
    fn admits(&self, job: &JobInfo) -> bool {
        if self.nothing || self.steps_named {
            return false;
        }
        let named = (self.job_ids.is_empty() && self.tasks.is_empty())
            || self.job_ids.contains(&job.job_id)
            || job.array_job_id.is_some_and(|a| self.job_ids.contains(&a))
            || match (job.array_job_id, job.array_task_id) {
                (Some(a), Some(t)) => self.tasks.contains(&(a, t)),
                _ => false,
            };
        named
            && self
                .uids
                .as_ref()
                .is_none_or(|uids| uids.contains(&job.user_id))
            && (self.partitions.is_empty() || self.partitions.contains(&job.partition))
            && self.nodes.as_ref().is_none_or(|wanted| {
                slurm_common::hostlist::expand(&job.nodes)
                    .is_ok_and(|names| names.iter().any(|n| wanted.contains(n)))
            })
    }
}

/// The step view as the options ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepPlan {
    items: Vec<Item>,
    /// `-o` codes and `-O` names the view does not know, to report.
    unknown: Vec<String>,
    sort: Vec<SortKey>,
    /// `b` keys in `-S`: each is noted and skipped, as Slurm does.
    pub gres_notes: usize,
    pub header: bool,
    select: Selection,
}

impl StepPlan {
    /// The plan from squeue's options. Only `-o`/`-O` given on the command
    /// line choose the format: Slurm's step view ignores `SQUEUE_FORMAT`
    /// and `SQUEUE_FORMAT2`.
    pub fn new(o: &Options) -> Result<StepPlan, String> {
        let mut unknown = Vec::new();
        let items = match (&o.cli_format, &o.cli_format_long) {
            (Some(f), _) => {
                let (items, codes) = spec::parse_lenient(f, |c| CODES.contains(c));
                unknown = codes;
                items
            }
            (None, Some(f)) => {
                let (items, names) = spec::parse_long_lenient(f, 20, long_code);
                unknown = names;
                items
            }
            (None, None) => spec::parse_lenient(DEFAULT_FORMAT, |c| CODES.contains(c)).0,
        };
        let (sort, gres_notes) = parse_sort(o.sort.as_deref().unwrap_or(DEFAULT_SORT));
        let (job_ids, array_tasks) = job_selectors(&o.job_ids).map_err(|e| e.to_string())?;
        let tasks = array_tasks
            .iter()
            .filter_map(|s| Some((s.array_job_id, s.task_spec.parse::<u32>().ok()?)))
            .collect();
        let mut uids = o.uids.clone();
        if o.me {
            uids.push(crate::client::current_uid());
        }
        let nodes = if o.nodelist.is_empty() {
            None
        } else {
            Some(
                slurm_common::hostlist::expand(&o.nodelist)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .collect(),
            )
        };
        let nothing = o.empty_lists.iter().any(|l| {
            matches!(
                l,
                ListFilter::Jobs | ListFilter::Partitions | ListFilter::Nodes
            )
        });
        Ok(StepPlan {
            items,
            unknown,
            sort,
            gres_notes,
            header: !o.no_header,
            select: Selection {
                job_ids,
                tasks,
                uids: (o.users_given || o.me).then_some(uids),
                partitions: o.partitions.clone(),
                nodes,
                steps_named: o.steps.as_deref().is_some_and(|s| !s.is_empty()),
                nothing,
            },
        })
    }

    /// The lines reporting `-o` codes and `-O` names the view does not know.
    pub fn format_faults(&self) -> impl Iterator<Item = String> + '_ {
        self.unknown
            .iter()
            .map(|c| format!("squeue: error: Invalid job step format specification: {c}"))
    }

    /// The report from the controller's reply, read part by part.
    pub fn render_parts(
        &self,
        parts: &mut dyn ReplyParts,
        ctx: &Ctx,
    ) -> Result<String, ReportError> {
        let malformed = ReportError::Reply(ErrorCode::from_grpc_code(tonic::Code::Internal));
        let mut jobs = Vec::new();
        while let Some(part) = parts.next_part().map_err(ReportError::Rpc)? {
            let reply = GetJobsReply::decode(part).map_err(|_| malformed.clone())?;
            jobs.extend(reply.jobs);
        }
        Ok(self.render(&jobs, ctx))
    }

    /// The header and one row per batch step of the selected jobs.
    pub fn render(&self, jobs: &[JobInfo], ctx: &Ctx) -> String {
        let mut steps: Vec<&JobInfo> = jobs
            .iter()
            .filter(|j| has_batch_step(j) && self.select.admits(j))
            .collect();
        // Stable sorts from the least significant key up.
        for key in self.sort.iter().rev() {
            steps.sort_by(|a, b| {
                let order = compare(a, b, key.code);
                if key.descending {
                    order.reverse()
                } else {
                    order
                }
            });
        }
        let mut out = String::new();
        if self.header {
            self.line(&mut out, |out, code| out.push_str(header(code)));
        }
        let mut value = String::new();
        for job in steps {
            self.line(&mut out, |out, code| {
                value.clear();
                write_value(&mut value, code, job, ctx);
                out.push_str(&value);
            });
        }
        out
    }

    /// One line: each field's text from `field`, padded to its width.
    fn line(&self, out: &mut String, mut field: impl FnMut(&mut String, char)) {
        let mut text = String::new();
        for item in &self.items {
            match item {
                Item::Literal(s) => out.push_str(s),
                Item::Field { code, width, right } => {
                    text.clear();
                    field(&mut text, *code);
                    pad(out, &text, *width, *right);
                }
            }
        }
        out.push('\n');
    }
}

/// Reads `-S` as Slurm reads it for steps: from the end, a `-` right
/// before a letter reverses it, `,` and `+` are skipped, `b` is noted and
/// skipped, and letters that are no step key are skipped silently.
fn parse_sort(spec: &str) -> (Vec<SortKey>, usize) {
    const KEYS: &str = "AijlMNPSuU";
    let chars: Vec<char> = spec.chars().collect();
    let mut keys = Vec::new();
    let mut notes = 0;
    for (i, &c) in chars.iter().enumerate().rev() {
        if c == 'b' {
            notes += 1;
        } else if KEYS.contains(c) {
            let descending = i > 0 && chars[i - 1] == '-';
            keys.push(SortKey {
                code: c,
                descending,
            });
        }
    }
    keys.reverse();
    (keys, notes)
}

fn compare(a: &JobInfo, b: &JobInfo, code: char) -> std::cmp::Ordering {
    match code {
        'i' => (a.job_id, a.array_task_id).cmp(&(b.job_id, b.array_task_id)),
        'M' => a.run_time_secs.cmp(&b.run_time_secs),
        'N' => batch_step_node(a).cmp(&batch_step_node(b)),
        'P' => a.partition.cmp(&b.partition),
        'S' => a.start_time.cmp(&b.start_time),
        'u' => a.user_name.cmp(&b.user_name),
        'U' => a.user_id.cmp(&b.user_id),
        // One batch step each: the same name, task count and limit.
        _ => std::cmp::Ordering::Equal,
    }
}

fn write_value(out: &mut String, code: char, job: &JobInfo, ctx: &Ctx) {
    match code {
        'i' => {
            match (job.array_job_id, job.array_task_id) {
                (Some(array), Some(task)) => {
                    let _ = write!(out, "{array}_{task}");
                }
                _ => {
                    let _ = write!(out, "{}", job.job_id);
                }
            }
            out.push_str(".batch");
        }
        'j' => out.push_str("batch"),
        'l' => out.push_str("UNLIMITED"),
        'u' => {
            if job.user_name.is_empty() {
                let _ = write!(out, "{}", job.user_id);
            } else {
                out.push_str(&job.user_name);
            }
        }
        'U' => {
            let _ = write!(out, "{}", job.user_id);
        }
        'A' => out.push('1'),
        'M' => crate::format::squeue::write_duration(out, job.run_time_secs),
        'N' => out.push_str(&batch_step_node(job)),
        'P' => out.push_str(&job.partition),
        'S' => {
            if job.start_time <= 0 {
                out.push_str("N/A");
            } else {
                out.push_str(&ctx.timestamp(job.start_time));
            }
        }
        lo::ARRAY_JOB_ID => {
            let _ = write!(out, "{}", job.array_job_id.unwrap_or(0));
        }
        lo::ARRAY_TASK_ID => match job.array_task_id {
            Some(task) => {
                let _ = write!(out, "{task}");
            }
            None => out.push_str("N/A"),
        },
        lo::CLUSTER => out.push_str(if job.cluster.is_empty() {
            "(null)"
        } else {
            &job.cluster
        }),
        // A batch step asks for no frequency: Slurm 22.05 prints the
        // three zeros of its unset request.
        lo::CPU_FREQ => out.push_str("0-0:0"),
        lo::JOB_ID => {
            let _ = write!(out, "{}", job.job_id);
        }
        // The batch step counts no CPUs of its own in Slurm 22.05.
        lo::NUM_CPUS => out.push('0'),
        lo::STATE => out.push_str(if job.state == JobState::Suspended as i32 {
            "SUSPENDED"
        } else {
            "RUNNING"
        }),
        // Unset for a batch step.
        _ => out.push_str("(null)"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::squeue::parse_options;
    use slurm_proto::v1::JobStateFlag;

    fn plan(args: &[&str]) -> StepPlan {
        plan_env(args, &|_| None)
    }

    fn plan_env(args: &[&str], env: crate::client::EnvLookup<'_>) -> StepPlan {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let o = parse_options(&args, env).unwrap();
        StepPlan::new(&o).unwrap()
    }

    fn running(id: u32, start: i64) -> JobInfo {
        JobInfo {
            job_id: id,
            name: "wrap".into(),
            user_id: 1000,
            user_name: "alice".into(),
            partition: "debug".into(),
            state: JobState::Running as i32,
            batch: true,
            nodes: "n[1-2]".into(),
            batch_host: "n1".into(),
            start_time: start,
            run_time_secs: (1_000 - start) as u64,
            cluster: "local".into(),
            ..JobInfo::default()
        }
    }

    fn jobs() -> Vec<JobInfo> {
        let pending = JobInfo {
            state: JobState::Pending as i32,
            ..running(3, 0)
        };
        let completing = JobInfo {
            state_flags: vec![JobStateFlag::Completing as i32],
            ..running(4, 900)
        };
        let task = JobInfo {
            array_job_id: Some(5),
            array_task_id: Some(7),
            user_id: 0,
            user_name: "root".into(),
            nodes: "n3".into(),
            batch_host: String::new(),
            ..running(6, 990)
        };
        vec![running(2, 997), running(1, 967), pending, completing, task]
    }

    #[test]
    fn default_view_lists_batch_steps_of_running_jobs() {
        let out = plan(&["-s"]).render(&jobs(), &Ctx::utc(1_000));
        assert_eq!(
            out,
            "         STEPID     NAME PARTITION     USER      TIME NODELIST\n\
             \x20       1.batch    batch     debug    alice      0:33 n1\n\
             \x20       2.batch    batch     debug    alice      0:03 n1\n\
             \x20     5_7.batch    batch     debug     root      0:10 n3\n"
        );
        // -l adds only the date line (the caller's); -h drops the header.
        assert_eq!(plan(&["-s", "-l"]).render(&jobs(), &Ctx::utc(1_000)), out);
        let bare = plan(&["-s", "-h"]).render(&jobs(), &Ctx::utc(1_000));
        assert_eq!(bare, out.split_once('\n').unwrap().1);
    }

    #[test]
    fn only_jobs_users_partitions_nodes_and_step_lists_select() {
        let ids = |args: &[&str]| -> Vec<String> {
            let out = plan(args).render(&jobs(), &Ctx::utc(1_000));
            out.lines()
                .skip(1)
                .map(|l| l.split_whitespace().next().unwrap_or("").to_owned())
                .collect()
        };
        assert_eq!(ids(&["-s", "-j", "2,9"]), vec!["2.batch"]);
        assert_eq!(ids(&["-s", "-j", "5"]), vec!["5_7.batch"]);
        assert_eq!(ids(&["-s", "-j", "5_7"]), vec!["5_7.batch"]);
        assert_eq!(ids(&["-s", "-u", "root"]), vec!["5_7.batch"]);
        assert_eq!(ids(&["-s", "-p", "nope"]), Vec::<String>::new());
        assert_eq!(ids(&["-s", "-w", "n3"]), vec!["5_7.batch"]);
        assert_eq!(ids(&["-s", "-w", "n2"]), vec!["1.batch", "2.batch"]);
        // A step list names numbered steps only.
        assert_eq!(ids(&["-s", "2.0"]), Vec::<String>::new());
        assert_eq!(ids(&["--steps=2.batch"]), Vec::<String>::new());
        // Empty lists select nothing.
        assert_eq!(ids(&["-s", "--jobs="]), Vec::<String>::new());
        assert_eq!(ids(&["-s", "-p", ""]), Vec::<String>::new());
        // What does not apply to steps.
        for extra in [
            &["-t", "PD"][..],
            &["-n", "zz"],
            &["-A", "x"],
            &["-q", "x"],
            &["-r"],
            &["--start"],
            &["-L", "x"],
        ] {
            let args: Vec<&str> = ["-s"].iter().chain(extra).copied().collect();
            assert_eq!(ids(&args).len(), 3, "{args:?}");
        }
    }

    #[test]
    fn codes_names_and_headers_are_the_step_views() {
        let job = [running(8, 970)];
        let ctx = Ctx::utc(1_000);
        let out = plan(&["-s", "-o", "%i|%j|%A|%N|%P|%u|%M|%l|%S|%b|%U|%C"]).render(&job, &ctx);
        assert_eq!(
            out,
            "STEPID|NAME|TASKS|NODELIST|PARTITION|USER|TIME|TIME_LIMIT|START_TIME|TRES_PER_JOB|UID|%C\n\
             8.batch|batch|1|n1|debug|alice|0:30|UNLIMITED|1970-01-01T00:16:10|(null)|1000|%C\n"
        );
        let p = plan(&["-s", "-o", "%20i|%-10j|%.3P|%x"]);
        assert_eq!(
            p.format_faults().collect::<Vec<_>>(),
            vec![
                "squeue: error: Invalid job step format specification: -",
                "squeue: error: Invalid job step format specification: x",
            ]
        );
        assert_eq!(
            p.render(&job, &ctx),
            "STEPID              |%-10j|PAR|%x\n8.batch             |%-10j|deb|%x\n"
        );
        let long = plan(&[
            "-s",
            "-O",
            "StepId:5,stepname:.12,NumTasks,ArrayJobId:4,ArrayTaskId:4,JobId:3,NumCPUs:3,\
             StepState:8,CPUFreq:6,Cluster:6,tres-per-node:13,tres-per-job:14,Bogus:3|,Nodes:3",
        ]);
        assert_eq!(
            long.format_faults().collect::<Vec<_>>(),
            vec!["squeue: error: Invalid job step format specification: Bogus",]
        );
        assert_eq!(
            long.render(&job, &ctx),
            "STEPI        NAMETASKS               ARRAARRAJOBNUMSTATE   CPU_FRCLUSTETRES_PER_JOB TRES_PER_STEP |NOD\n\
             8.bat       batch1                   0   N/A 8  0  RUNNING 0-0:0 local (null)       (null)        |n1 \n"
        );
    }

    #[test]
    fn squeue_format_variables_are_ignored_and_squeue_sort_is_not() {
        let env = |name: &str| match name {
            "SQUEUE_FORMAT" => Some("%i %A".into()),
            "SQUEUE_FORMAT2" => Some("stepid,username".into()),
            "SQUEUE_SORT" => Some("-i".into()),
            _ => None,
        };
        let out = plan_env(&["-s", "-h"], &env).render(&jobs()[..2], &Ctx::utc(1_000));
        assert_eq!(
            out,
            "        2.batch    batch     debug    alice      0:03 n1\n\
             \x20       1.batch    batch     debug    alice      0:33 n1\n"
        );
    }

    #[test]
    fn sort_keys_read_from_the_end() {
        let order = |args: &[&str]| -> Vec<u32> {
            let p = plan(args);
            let out = p.render(&jobs(), &Ctx::utc(1_000));
            out.lines()
                .skip(1)
                .map(|l| {
                    let id = l.split_whitespace().next().unwrap_or("");
                    id.trim_end_matches(".batch")
                        .split('_')
                        .next_back()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0)
                })
                .collect()
        };
        assert_eq!(order(&["-s", "-S", "-i"]), vec![7, 2, 1]);
        // Time used, shortest first; descending with '-'.
        assert_eq!(order(&["-s", "-S", "M"]), vec![2, 7, 1]);
        assert_eq!(order(&["-s", "-S", "-M"]), vec![1, 7, 2]);
        assert_eq!(order(&["-s", "-S", "u,-S"]), vec![2, 1, 7]);
        // Keys the view does not sort by are skipped; `b` is noted.
        assert_eq!(order(&["-s", "-S", "x,E,i"]), vec![1, 2, 7]);
        assert_eq!(plan(&["-s", "-S", "b,i"]).gres_notes, 1);
        assert_eq!(parse_sort(""), (vec![], 0));
        assert_eq!(parse_sort("-"), (vec![], 0));
    }
}
