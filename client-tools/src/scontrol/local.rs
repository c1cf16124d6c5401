//! `scontrol listpids` and `scontrol pidinfo`: questions about the steps
//! running on this host, answered from this host.
//!
//! Slurm's scontrol answers them without the controller, by asking the
//! slurmstepd processes it finds in the node's spool directory. Ours keep
//! the same directory (`SlurmdSpoolDir`, `%n` expanded, one `jobNNNNN`
//! directory per job with `slurmstepd.pid`), so the same reading works: a
//! step is here while its slurmstepd lives, and its processes are that
//! slurmstepd's descendants (as Slurm's `proctrack/linuxproc` counts them).
//! The task is the one process slurmstepd starts, the batch script.
//!
//! The process table comes through [`ProcTable`] so the listing is tested
//! on made-up tables. Which node the host is follows Slurm: the node whose
//! NodeHostname is the short host name, else the one whose NodeHostname is
//! `localhost`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use slurm_common::conf::SlurmConf;

use super::steps::{step_name, strtol, strtol_u32, BATCH_STEP, NO_VAL};

/// `pid -> parent pid` for every process on the host.
pub trait ProcTable {
    fn parents(&self) -> HashMap<i32, i32>;
}

/// The host's `/proc`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemProcs;

impl ProcTable for SystemProcs {
    fn parents(&self) -> HashMap<i32, i32> {
        let mut table = HashMap::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return table;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .as_deref()
                .and_then(parent_from_stat)
            {
                table.insert(pid, ppid);
            }
        }
        table
    }
}

/// The parent pid in a `/proc/PID/stat` line. The command name is in
/// parentheses and may itself hold parentheses and blanks, so the fields
/// are counted from the last `)`.
pub fn parent_from_stat(stat: &str) -> Option<i32> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

/// One step running on this node and its processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalStep {
    pub job: u32,
    pub step: u32,
    /// The slurmstepd process.
    pub stepd: i32,
    /// The task (the batch script), if it still runs.
    pub task: Option<i32>,
    /// Every descendant of slurmstepd, task included, ascending.
    pub pids: Vec<i32>,
}

/// Descendants of `root` in `table`, ascending.
pub fn descendants(table: &HashMap<i32, i32>, root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, &ppid) in table {
        if pid != ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        if let Some(kids) = children.get(&p) {
            for &k in kids {
                if k != root && !found.contains(&k) {
                    found.push(k);
                    todo.push(k);
                }
            }
        }
    }
    found.sort_unstable();
    found
}

/// The job a spool sub-directory stands for (`job00042` -> 42).
fn job_dir_id(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("job")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The steps of a spool directory whose slurmstepd is alive in `table`,
/// by job id; `None` when the directory cannot be read.
pub fn steps_in(spool: &Path, table: &HashMap<i32, i32>) -> Option<Vec<LocalStep>> {
    let entries = std::fs::read_dir(spool).ok()?;
    let mut steps = Vec::new();
    for entry in entries.flatten() {
        let Some(job) = entry.file_name().to_str().and_then(job_dir_id) else {
            continue;
        };
        let Some(stepd) = std::fs::read_to_string(entry.path().join("slurmstepd.pid"))
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        else {
            continue;
        };
        if !table.contains_key(&stepd) {
            continue;
        }
        let pids = descendants(table, stepd);
        let task = pids.iter().copied().find(|p| table.get(p) == Some(&stepd));
        steps.push(LocalStep {
            job,
            step: BATCH_STEP,
            stepd,
            task,
            pids,
        });
    }
    steps.sort_by_key(|s| s.job);
    Some(steps)
}

pub use slurm_common::conf::expand_node_path;

/// The nodes this host is, as Slurm finds them: those whose NodeHostname
/// is `host`, else those whose NodeHostname is `localhost`.
pub fn local_nodes<'c>(conf: &'c SlurmConf, host: &str) -> Vec<&'c str> {
    let named: Vec<&str> = conf
        .nodes
        .iter()
        .filter(|n| n.hostname == host)
        .map(|n| n.name.as_str())
        .collect();
    if !named.is_empty() {
        return named;
    }
    conf.nodes
        .iter()
        .filter(|n| n.hostname == "localhost")
        .map(|n| n.name.as_str())
        .collect()
}

/// The spool directory of node `node`.
pub fn spool_of(conf: &SlurmConf, node: &str) -> PathBuf {
    let host = conf.node(node).map_or(node, |n| n.hostname.as_str());
    PathBuf::from(expand_node_path(&conf.slurmd_spool_dir, node, host))
}

/// What `listpids` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidsOf {
    All,
    Job(u32),
    Step(u32, u32),
}

/// A `listpids` argument Slurm refuses: the line, whether the header is
/// printed first, and the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidsRefusal {
    pub line: String,
    pub after_header: bool,
    pub code: i32,
}

/// Reads `listpids`'s `JOB[.STEP]` (`*` or none: every job). A word
/// that is no job id is refused before the header; a bad step after it,
/// with status 0, as Slurm does.
pub fn parse_pids_of(word: Option<&str>) -> Result<PidsOf, PidsRefusal> {
    let Some(word) = word.filter(|w| *w != "*") else {
        return Ok(PidsOf::All);
    };
    let (job, rest) = strtol_u32(word);
    if rest.is_empty() {
        return Ok(PidsOf::Job(job));
    }
    let Some(step_word) = rest.strip_prefix('.') else {
        return Err(PidsRefusal {
            line: format!("\"{word}\" does not look like a jobid"),
            after_header: false,
            code: 1,
        });
    };
    let (step, rest) = strtol_u32(step_word);
    if !rest.is_empty() {
        return Err(PidsRefusal {
            line: format!("\"{word}\" does not look like a stepid"),
            after_header: true,
            code: 0,
        });
    }
    Ok(match step {
        NO_VAL => PidsOf::Job(job),
        step => PidsOf::Step(job, step),
    })
}

pub const PIDS_HEADER: &str = "PID      JOBID    STEPID   LOCALID GLOBALID";

/// The rows of `listpids` for `steps`, after the header: the task first,
/// then the step's other processes.
fn pid_rows(steps: &[&LocalStep]) -> String {
    let mut text = String::new();
    for s in steps {
        let name = step_name(s.step);
        if let Some(task) = s.task {
            text.push_str(&format!(
                "{task:<8} {:<8} {name:<8} {:<7} {:<8}\n",
                s.job, 0, 0
            ));
        }
        for pid in s.pids.iter().filter(|p| Some(**p) != s.task) {
            text.push_str(&format!(
                "{pid:<8} {:<8} {name:<8} {:<7} {:<8}\n",
                s.job, "-", "-"
            ));
        }
    }
    text
}

/// What `listpids` prints after its header for the node's steps (`None`:
/// the spool directory was not there), given as the user named the node
/// (`None` prints as Slurm's `(null)`): (stdout rows, stderr line, status).
pub fn list_pids(
    steps: Option<&[LocalStep]>,
    what: PidsOf,
    node: Option<&str>,
) -> (String, Option<String>, i32) {
    let node = node.unwrap_or("(null)");
    let steps = steps.unwrap_or(&[]);
    let (chosen, missing): (Vec<&LocalStep>, String) = match what {
        PidsOf::All => (
            steps.iter().collect(),
            "No job steps exist on this node.".to_owned(),
        ),
        PidsOf::Job(job) => {
            let missing = if steps.is_empty() {
                let id = if job == 0 {
                    "Invalid".to_owned()
                } else {
                    job.to_string()
                };
                format!("JobId={id} does not exist on node {node}.")
            } else {
                format!("There are no steps for job {job} on node {node}.")
            };
            (steps.iter().filter(|s| s.job == job).collect(), missing)
        }
        PidsOf::Step(job, step) => {
            let id = if job == 0 {
                "Invalid".to_owned()
            } else {
                format!("{job}.{}", step_name(step))
            };
            (
                steps
                    .iter()
                    .filter(|s| s.job == job && s.step == step)
                    .collect(),
                format!("StepId={id} does not exist on node {node}."),
            )
        }
    };
    if chosen.is_empty() {
        return (String::new(), Some(missing), 1);
    }
    (pid_rows(&chosen), None, 0)
}

/// The step whose slurmstepd is `pid` or one of its ancestors.
pub fn step_of_pid(steps: &[LocalStep], pid: i64) -> Option<&LocalStep> {
    steps
        .iter()
        .find(|s| i64::from(s.stepd) == pid || s.pids.iter().any(|p| i64::from(*p) == pid))
}

/// The pid `pidinfo` reads from its word (C's `atoi`).
pub fn pid_word(word: &str) -> i64 {
    strtol(word).0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn step(job: u32) -> LocalStep {
        LocalStep {
            job,
            step: BATCH_STEP,
            stepd: 100,
            task: Some(101),
            pids: vec![101, 102],
        }
    }

    #[test]
    fn stat_lines_with_odd_command_names() {
        assert_eq!(parent_from_stat("42 (sleep) S 7 42 42 0"), Some(7));
        assert_eq!(parent_from_stat("42 (a) b (c) S 9 1"), Some(9));
        assert_eq!(parent_from_stat("garbage"), None);
    }

    #[test]
    fn descendants_follow_the_tree_but_not_the_root() {
        let table: HashMap<i32, i32> = [
            (100, 1),
            (101, 100),
            (102, 101),
            (103, 102),
            (200, 1),
            (1, 0),
        ]
        .into();
        assert_eq!(descendants(&table, 100), vec![101, 102, 103]);
        assert!(descendants(&table, 200).is_empty());
        // A loop in a racy snapshot ends.
        let table: HashMap<i32, i32> = [(5, 6), (6, 5)].into();
        assert_eq!(descendants(&table, 5), vec![6]);
    }

    #[test]
    fn spool_steps_are_those_with_a_live_stepd() {
        let dir = tempfile::tempdir().unwrap();
        for (name, pid) in [("job00007", "100\n"), ("job00008", "300"), ("other", "100")] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join("slurmstepd.pid"), pid).unwrap();
        }
        let table: HashMap<i32, i32> = [(100, 1), (101, 100), (102, 101)].into();
        let steps = steps_in(dir.path(), &table).unwrap();
        assert_eq!(steps, vec![LocalStep { job: 7, ..step(7) }]);
        assert_eq!(steps_in(&dir.path().join("missing"), &table), None);
        assert_eq!(step_of_pid(&steps, 102).map(|s| s.job), Some(7));
        assert_eq!(step_of_pid(&steps, 100).map(|s| s.job), Some(7));
        assert!(step_of_pid(&steps, 1).is_none());
    }

    #[test]
    fn listpids_arguments_as_slurm_reads_them() {
        assert_eq!(parse_pids_of(None), Ok(PidsOf::All));
        assert_eq!(parse_pids_of(Some("*")), Ok(PidsOf::All));
        assert_eq!(parse_pids_of(Some("5")), Ok(PidsOf::Job(5)));
        assert_eq!(parse_pids_of(Some("5.4294967294")), Ok(PidsOf::Job(5)));
        assert_eq!(parse_pids_of(Some("5.")), Ok(PidsOf::Step(5, 0)));
        let bad_job = parse_pids_of(Some("5_1")).unwrap_err();
        assert_eq!(
            (bad_job.line.as_str(), bad_job.after_header, bad_job.code),
            ("\"5_1\" does not look like a jobid", false, 1)
        );
        let bad_step = parse_pids_of(Some("5.batch")).unwrap_err();
        assert_eq!(
            (bad_step.line.as_str(), bad_step.after_header, bad_step.code),
            ("\"5.batch\" does not look like a stepid", true, 0)
        );
    }

    #[test]
    fn listpids_rows_and_refusals() {
        let steps = vec![step(6)];
        let rows = "101      6        batch    0       0       \n102      6        batch    -       -       \n";
        assert_eq!(
            list_pids(Some(&steps), PidsOf::All, None),
            (rows.into(), None, 0)
        );
        assert_eq!(
            list_pids(Some(&steps), PidsOf::Step(6, BATCH_STEP), None).0,
            rows
        );
        assert_eq!(
            list_pids(Some(&[]), PidsOf::All, None).1.as_deref(),
            Some("No job steps exist on this node.")
        );
        assert_eq!(
            list_pids(Some(&[]), PidsOf::Job(9), None).1.as_deref(),
            Some("JobId=9 does not exist on node (null).")
        );
        assert_eq!(
            list_pids(None, PidsOf::Job(0), Some("x")).1.as_deref(),
            Some("JobId=Invalid does not exist on node x.")
        );
        assert_eq!(
            list_pids(Some(&steps), PidsOf::Job(9), Some("n1"))
                .1
                .as_deref(),
            Some("There are no steps for job 9 on node n1.")
        );
        assert_eq!(
            list_pids(Some(&steps), PidsOf::Step(6, 0), None),
            (
                String::new(),
                Some("StepId=6.0 does not exist on node (null).".into()),
                1
            )
        );
    }

    #[test]
    fn the_local_node_is_found_by_host_name_then_localhost() {
        let conf = SlurmConf::parse(
            "ClusterName=c\nSlurmctldHost=h\nNodeName=a NodeHostname=vm\nNodeName=b NodeHostname=localhost\nSlurmdSpoolDir=/s/%n/%h/%%\n",
            "t",
        )
        .unwrap()
        .conf;
        assert_eq!(local_nodes(&conf, "vm"), vec!["a"]);
        assert_eq!(local_nodes(&conf, "other"), vec!["b"]);
        assert_eq!(spool_of(&conf, "a"), PathBuf::from("/s/a/vm/%"));
        assert_eq!(spool_of(&conf, "zz"), PathBuf::from("/s/zz/zz/%"));
    }

    proptest! {
        #[test]
        fn any_listpids_word_parses_without_panic(word in "\\PC{0,40}") {
            let _ = parse_pids_of(Some(&word));
            let _ = pid_word(&word);
            let _ = expand_node_path(&word, "n", "h");
        }
    }
}
