//! Prolog and Epilog: the site's programs slurmd runs around every job.
//!
//! Sites prepare a node for a job in the Prolog (scratch directories,
//! mounts, a check that the GPUs are idle) and clean up in the Epilog, as
//! slurmd's user (root on a real node), outside the job's identity and
//! cgroup. They are the node's programs rather than the job's, so slurmd
//! runs them itself, never slurmstepd:
//!
//! ```text
//! LaunchBatch ─▶ answered at once ─▶ Prolog ─(exit 0)─▶ slurmstepd starts
//!                                       │                the batch script
//!                                       └─(fails)─▶ PrologComplete with
//!                                          ESLURMD_PROLOG_FAILED (retried):
//!                                          the controller drains the node
//!                                          ("Prolog error"), requeues the
//!                                          job held and ends it on its
//!                                          nodes, which run their Epilogs
//! LaunchProlog (PrologFlags=Alloc, every node of a new job)
//!              ─▶ answered at once ─▶ Prolog ─▶ PrologComplete, success or
//!                 failure; a batch launch on the node waits for it
//! TerminateJob ─▶ the job's processes are gone (and its Prolog is over)
//!              ─▶ Epilog ─▶ EpilogComplete; a failed Epilog reports
//!                 ESLURMD_EPILOG_FAILED there and the controller drains
//!                 the node ("Epilog error")
//! ```
//!
//! A launch is answered before its Prolog runs, as Slurm's slurmd does: a
//! Prolog may take minutes, and the controller must not hold a connection
//! (and a launch slot) open for it. So the Prolog's failure travels on its
//! own report, retried until the controller acknowledges it: lost, it would
//! leave the job RUNNING with nothing running it.
//!
//! The Prolog runs at most once per job on a node ([`PrologRuns`]): the
//! first of the batch launch and LaunchProlog to arrive runs it, the other
//! waits for its outcome, and the Epilog waits for a Prolog still running.
//! Without PrologFlags=Alloc only the batch host runs it, at the launch.
//! With PrologFlags=Serial the node's Prologs and Epilogs run one at a time.
//!
//! As in Slurm, the configured path may be a glob pattern (in its last
//! component): every match runs, in name order, and the first failure stops
//! the rest. A pattern that matches nothing is a failure, like a missing
//! program: a node whose Prolog is gone must not run jobs unprepared. Each
//! program gets PrologEpilogTimeout (none by default); one that outlives it
//! is killed with its whole session and counts as failed. The programs run
//! from `/`, with standard input, output and error on `/dev/null`, a
//! minimal PATH ([`SCRIPT_PATH`]) and the job's `SLURM_*` variables
//! ([`environment`], a pure function).
//!
//! The settings are read from the configuration in force for each run, so
//! a reconfigured Prolog or Epilog applies from the next job on.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_common::conf::SlurmConf;
use slurm_proto::v1::{LaunchBatchRequest, LaunchPrologRequest, NodeTerminateJobRequest};
use thiserror::Error;

/// PATH of the programs' environment. Slurm sets none; a minimal one keeps
/// `#!/usr/bin/env` and plain `sh` scripts working without widening what a
/// root program finds by name.
pub const SCRIPT_PATH: &str = "/usr/bin:/bin";

/// Which of the two programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Prolog,
    Epilog,
}

impl Kind {
    /// SLURM_SCRIPT_CONTEXT's value.
    pub fn context(self) -> &'static str {
        match self {
            Kind::Prolog => "prolog_slurmd",
            Kind::Epilog => "epilog_slurmd",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Prolog => "prolog",
            Kind::Epilog => "epilog",
        })
    }
}

/// What slurm.conf says about the node's Prolog and Epilog.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptConfig {
    /// Prolog: a path or a glob pattern; `None` when unset.
    pub prolog: Option<String>,
    pub epilog: Option<String>,
    /// PrologEpilogTimeout, per program; `None` waits forever.
    pub timeout: Option<Duration>,
    /// PrologFlags=Alloc (or a flag implying it): the controller asks every
    /// node of a job to run the Prolog when the job is allocated, and each
    /// reports how it ended, success included.
    pub alloc: bool,
    /// PrologFlags=Serial: the node's Prologs and Epilogs run one at a time.
    pub serial: bool,
}

impl ScriptConfig {
    /// The settings of `conf`. A blank path is no program; a zero timeout
    /// is no limit (a limit of nothing would fail every run).
    pub fn from_conf(conf: &SlurmConf) -> Self {
        let path = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
        };
        Self {
            prolog: path(&conf.prolog),
            epilog: path(&conf.epilog),
            timeout: conf.prolog_epilog_timeout.filter(|t| !t.is_zero()),
            alloc: conf.prolog_flags.alloc,
            serial: conf.prolog_flags.serial,
        }
    }

    /// The configured path of `kind`.
    pub fn program(&self, kind: Kind) -> Option<&str> {
        match kind {
            Kind::Prolog => self.prolog.as_deref(),
            Kind::Epilog => self.epilog.as_deref(),
        }
    }
}

/// How a job's batch script ended, for the Epilog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobExit {
    pub status: u32,
    pub signal: u32,
}

impl JobExit {
    /// The value wait(2) returns for such an end (SLURM_JOB_EXIT_CODE).
    pub fn wait_status(self) -> u32 {
        ((self.status & 0xff) << 8) | (self.signal & 0x7f)
    }
}

/// What the programs are told about a job. Each field is set only when
/// known: the node that ran the batch script knows more than the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFacts {
    pub job_id: u32,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub user: Option<String>,
    pub partition: Option<String>,
    /// The job's nodes, a hostlist expression.
    pub nodes: Option<String>,
    pub account: Option<String>,
    pub work_dir: Option<String>,
    pub constraints: Option<String>,
    pub exit: Option<JobExit>,
}

fn known(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The [`JobFacts`] of a request that names the job's user, partition,
/// nodes, account, working directory and constraints with the same field
/// names (LaunchBatch and LaunchProlog are two messages with one shape).
macro_rules! facts_of_request {
    ($req:expr) => {{
        let req = $req;
        JobFacts {
            job_id: req.job_id,
            uid: Some(req.user_id),
            gid: Some(req.group_id),
            user: known(&req.user_name),
            partition: known(&req.partition),
            nodes: known(&req.nodes),
            account: known(&req.account),
            work_dir: known(&req.work_dir),
            constraints: known(&req.constraint),
            exit: None,
        }
    }};
}

impl JobFacts {
    /// Only the id.
    pub fn new(job_id: u32) -> Self {
        Self {
            job_id,
            ..Self::default()
        }
    }

    /// What a launch request says.
    pub fn from_launch(req: &LaunchBatchRequest) -> Self {
        facts_of_request!(req)
    }

    /// What a Prolog launch (PrologFlags=Alloc) says: the same facts as a
    /// launch, in a message of its own.
    pub fn from_prolog(req: &LaunchPrologRequest) -> Self {
        facts_of_request!(req)
    }

    /// What a terminate request says.
    pub fn from_terminate(req: &NodeTerminateJobRequest) -> Self {
        Self {
            job_id: req.job_id,
            uid: Some(req.user_id),
            gid: Some(req.group_id),
            partition: known(&req.partition),
            nodes: known(&req.nodes),
            ..Self::new(req.job_id)
        }
    }

    /// Fills what `self` lacks from `other` (about the same job); what
    /// `self` knows stays.
    pub fn merge(&mut self, other: JobFacts) {
        fn fill<T>(mine: &mut Option<T>, theirs: Option<T>) {
            if mine.is_none() {
                *mine = theirs;
            }
        }
        fill(&mut self.uid, other.uid);
        fill(&mut self.gid, other.gid);
        fill(&mut self.user, other.user);
        fill(&mut self.partition, other.partition);
        fill(&mut self.nodes, other.nodes);
        fill(&mut self.account, other.account);
        fill(&mut self.work_dir, other.work_dir);
        fill(&mut self.constraints, other.constraints);
        fill(&mut self.exit, other.exit);
    }
}

/// Where the programs run.
#[derive(Debug, Clone, Copy)]
pub struct NodeFacts<'a> {
    pub name: &'a str,
    pub cluster_name: &'a str,
    pub conf_path: &'a Path,
}

/// The environment of `kind` for `job` on `node`, in a fixed order:
/// the `SLURM_*` variables Slurm's slurmd sets for its Prolog and Epilog
/// (each only when its value is known) and [`SCRIPT_PATH`]. A value with a
/// NUL byte cannot be passed to a program and is left out.
pub fn environment(kind: Kind, job: &JobFacts, node: &NodeFacts<'_>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::with_capacity(24);
    let mut put = |key: &str, value: String| {
        if !value.contains('\0') {
            env.push((key.to_string(), value));
        }
    };
    put("PATH", SCRIPT_PATH.to_string());
    put("SLURM_SCRIPT_CONTEXT", kind.context().to_string());
    put("SLURMD_NODENAME", node.name.to_string());
    put("SLURM_CONF", node.conf_path.display().to_string());
    if !node.cluster_name.is_empty() {
        put("SLURM_CLUSTER_NAME", node.cluster_name.to_string());
    }
    put("SLURM_JOB_ID", job.job_id.to_string());
    put("SLURM_JOBID", job.job_id.to_string());
    if let Some(uid) = job.uid {
        put("SLURM_JOB_UID", uid.to_string());
        put("SLURM_UID", uid.to_string());
    }
    if let Some(gid) = job.gid {
        put("SLURM_JOB_GID", gid.to_string());
    }
    if let Some(user) = &job.user {
        put("SLURM_JOB_USER", user.clone());
    }
    if let Some(partition) = &job.partition {
        put("SLURM_JOB_PARTITION", partition.clone());
    }
    if let Some(nodes) = &job.nodes {
        put("SLURM_JOB_NODELIST", nodes.clone());
        put("SLURM_NODELIST", nodes.clone());
    }
    if let Some(account) = &job.account {
        put("SLURM_JOB_ACCOUNT", account.clone());
    }
    if let Some(dir) = &job.work_dir {
        put("SLURM_JOB_WORK_DIR", dir.clone());
    }
    match kind {
        Kind::Prolog => {
            if let Some(c) = &job.constraints {
                put("SLURM_JOB_CONSTRAINTS", c.clone());
            }
        }
        Kind::Epilog => {
            if let Some(exit) = job.exit {
                put("SLURM_JOB_EXIT_CODE", exit.wait_status().to_string());
                put(
                    "SLURM_JOB_EXIT_CODE2",
                    format!("{}:{}", exit.status, exit.signal),
                );
            }
        }
    }
    env
}

/// Whether `s` holds a glob metacharacter.
pub fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Whether file name `name` matches glob `pattern`, as glob(3) matches one
/// path component: `*`, `?`, bracket classes (`[a-z]`, `[!x]`, `[^x]`), a
/// backslash quoting the next character, and a leading `.` matched only
/// by a literal one. An unclosed `[` stands for itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let explicit_dot = match p.first() {
        Some('.') => true,
        Some('\\') => p.get(1) == Some(&'.'),
        _ => false,
    };
    if n.first() == Some(&'.') && !explicit_dot {
        return false;
    }
    let (mut pi, mut ni) = (0usize, 0usize);
    // Where the latest `*` was and how much of the name it has taken.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if p.get(pi) == Some(&'*') {
            star = Some((pi, ni));
            pi += 1;
            continue;
        }
        if let Some(next) = step(&p, pi, n[ni]) {
            pi = next;
            ni += 1;
            continue;
        }
        match star {
            Some((sp, sn)) => {
                // Let the `*` take one more character and try again.
                star = Some((sp, sn + 1));
                pi = sp + 1;
                ni = sn + 1;
            }
            None => return false,
        }
    }
    p[pi.min(p.len())..].iter().all(|&c| c == '*')
}

/// The pattern position after matching `c` at `pi` (not a `*`), if it
/// matches.
fn step(p: &[char], pi: usize, c: char) -> Option<usize> {
    match *p.get(pi)? {
        '?' => Some(pi + 1),
        '[' => match class(p, pi, c) {
            Some((true, next)) => Some(next),
            Some((false, _)) => None,
            None => (c == '[').then_some(pi + 1),
        },
        '\\' => match p.get(pi + 1) {
            Some(&quoted) => (quoted == c).then_some(pi + 2),
            None => (c == '\\').then_some(pi + 1),
        },
        literal => (literal == c).then_some(pi + 1),
    }
}

/// Matches `c` against the bracket class opening at `pi`: whether it
/// matches and the position after the class; `None` when it is unclosed.
fn class(p: &[char], pi: usize, c: char) -> Option<(bool, usize)> {
    let mut j = pi + 1;
    let negated = matches!(p.get(j), Some('!' | '^'));
    if negated {
        j += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *p.get(j)?;
        if lo == ']' && !first {
            break;
        }
        first = false;
        match (p.get(j + 1), p.get(j + 2)) {
            (Some('-'), Some(&hi)) if hi != ']' => {
                matched |= lo <= c && c <= hi;
                j += 3;
            }
            _ => {
                matched |= lo == c;
                j += 1;
            }
        }
    }
    Some((matched != negated, j + 1))
}

/// The programs `pattern` names, in the order they run: the path itself
/// when it has no glob metacharacter, else the entries of its directory
/// whose names match its last component, sorted (directories left out).
/// Blocking: reads the directory.
pub fn programs(pattern: &str) -> Vec<PathBuf> {
    let path = Path::new(pattern);
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    if !has_glob(file) {
        return vec![path.to_path_buf()];
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| glob_match(file, n)))
        .map(|e| e.path())
        .filter(|p| !p.is_dir())
        .collect();
    found.sort();
    found
}

/// How a job's Prolog ended on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrologOutcome {
    /// It succeeded, or no Prolog is configured.
    Succeeded,
    /// It failed; `detail` says how (for the logs and the controller's).
    Failed { detail: String },
}

/// Most jobs whose Prolog outcome a node keeps; beyond it the lowest job
/// ids (the oldest) whose Prolog is over are forgotten.
pub const MAX_PROLOG_RUNS: usize = 4096;

/// One job's Prolog: `None` until it has run. Its lock is held while it
/// runs, so whoever else wants the outcome waits for it.
type PrologSlot = Arc<tokio::sync::Mutex<Option<PrologOutcome>>>;

/// The Prolog of each job on a node, run at most once per job: the batch
/// launch and LaunchProlog may both ask for it, in either order, and a job
/// step must not prepare the node a second time. The first caller runs it;
/// later and concurrent callers get its outcome. A job's entry goes when
/// the job has ended on the node ([`PrologRuns::forget`], after its
/// Epilog), so a requeued job that comes back runs the Prolog again.
#[derive(Debug, Default)]
pub struct PrologRuns {
    slots: std::sync::Mutex<BTreeMap<u32, PrologSlot>>,
}

impl PrologRuns {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, PrologSlot>> {
        // Every method leaves the map valid, even one that panicked.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The outcome of `job_id`'s Prolog: made by `run` when nobody ran it
    /// yet, else the outcome of the run that did (waiting for it to end).
    pub async fn once<F, Fut>(&self, job_id: u32, run: F) -> PrologOutcome
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = PrologOutcome>,
    {
        let slot = {
            let mut slots = self.lock();
            let slot = slots.entry(job_id).or_default().clone();
            prune(&mut slots, job_id);
            slot
        };
        let mut outcome = slot.lock().await;
        if let Some(done) = outcome.as_ref() {
            return done.clone();
        }
        let done = run().await;
        *outcome = Some(done.clone());
        done
    }

    /// The outcome of `job_id`'s Prolog, once it has run here.
    pub fn outcome(&self, job_id: u32) -> Option<PrologOutcome> {
        let slot = self.lock().get(&job_id).cloned()?;
        let outcome = slot.try_lock().ok()?.clone();
        outcome
    }

    /// Resolves once no Prolog of `job_id` runs here (at once when none
    /// was started).
    pub async fn wait_idle(&self, job_id: u32) {
        let slot = self.lock().get(&job_id).cloned();
        if let Some(slot) = slot {
            drop(slot.lock().await);
        }
    }

    /// Forgets `job_id`: its next run on this node runs the Prolog again.
    pub fn forget(&self, job_id: u32) {
        self.lock().remove(&job_id);
    }

    /// Number of jobs with an entry (for tests and logs).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Keeps at most [`MAX_PROLOG_RUNS`] entries, dropping the lowest job ids
/// whose Prolog is not running (a running one is never dropped: its
/// callers would lose each other); `keep` stays.
fn prune(slots: &mut BTreeMap<u32, PrologSlot>, keep: u32) {
    if slots.len() <= MAX_PROLOG_RUNS {
        return;
    }
    let excess = slots.len() - MAX_PROLOG_RUNS;
    let idle: Vec<u32> = slots
        .iter()
        .filter(|(&id, slot)| id != keep && Arc::strong_count(slot) == 1)
        .map(|(&id, _)| id)
        .take(excess)
        .collect();
    for id in idle {
        slots.remove(&id);
    }
}

/// How one program ended (shared with the health check, which runs
/// programs the same way).
pub use crate::health::Exit;

/// A Prolog or Epilog that did not succeed.
#[derive(Debug, Error)]
pub enum ScriptError {
    #[error("{kind} {} failed for job {job_id} after {} ms: {exit}", program.display(), elapsed.as_millis())]
    Failed {
        kind: Kind,
        program: PathBuf,
        job_id: u32,
        exit: Exit,
        elapsed: Duration,
    },
    #[error("{kind} {pattern} matches no program (job {job_id})")]
    NoProgram {
        kind: Kind,
        pattern: String,
        job_id: u32,
    },
    #[error("{kind} for job {job_id}: the task preparing it failed: {source}")]
    Task {
        kind: Kind,
        job_id: u32,
        source: tokio::task::JoinError,
    },
}

impl ScriptError {
    /// How the failing program ended, when one ran.
    pub fn exit(&self) -> Option<&Exit> {
        match self {
            ScriptError::Failed { exit, .. } => Some(exit),
            _ => None,
        }
    }
}

/// Runs `program` with exactly `env`, from `/`, stdio on `/dev/null`, in a
/// session of its own; kills that session after `timeout`. Forks off the
/// async runtime; waits on it without blocking it.
pub async fn run_program(
    program: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
) -> Exit {
    let mut cmd = tokio::process::Command::new(program);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(false);
    // A session of its own lets a timeout kill everything it started.
    crate::health::in_new_session(cmd.as_std_mut());
    let shown = program.display().to_string();
    let mut child = match tokio::task::spawn_blocking(move || cmd.spawn()).await {
        Ok(Ok(child)) => child,
        Ok(Err(e)) => return Exit::SpawnFailed(format!("{shown}: {e}")),
        Err(e) => return Exit::SpawnFailed(format!("{shown}: {e}")),
    };
    let session = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    let started = Instant::now();
    let status = match timeout {
        Some(limit) => match tokio::time::timeout(limit, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                crate::health::kill_group(session);
                let _ = child.wait().await;
                return Exit::TimedOut(started.elapsed());
            }
        },
        None => child.wait().await,
    };
    match status {
        Ok(s) => crate::health::exit_of(s),
        Err(e) => Exit::SpawnFailed(format!("cannot wait for {shown}: {e}")),
    }
}

/// Runs the node's `kind` for `job`: nothing when none is configured,
/// else every program it names, in order, until one fails. The job
/// owner's name is looked up when the facts lack it. Each successful run
/// is logged; a failure is returned, with how long the program ran.
pub async fn run(
    kind: Kind,
    config: &ScriptConfig,
    job: &JobFacts,
    node: &NodeFacts<'_>,
) -> Result<(), ScriptError> {
    let Some(pattern) = config.program(kind) else {
        return Ok(());
    };
    let job_id = job.job_id;
    let mut facts = job.clone();
    let owned = pattern.to_string();
    // The directory read and the passwd look-up (NSS: maybe a network
    // call) stay off the runtime.
    let (list, facts) = tokio::task::spawn_blocking(move || {
        if facts.user.is_none() {
            facts.user = facts.uid.and_then(crate::users::name_of);
        }
        (programs(&owned), facts)
    })
    .await
    .map_err(|source| ScriptError::Task {
        kind,
        job_id,
        source,
    })?;
    if list.is_empty() {
        return Err(ScriptError::NoProgram {
            kind,
            pattern: pattern.to_string(),
            job_id,
        });
    }
    let env = environment(kind, &facts, node);
    for program in list {
        let started = Instant::now();
        let exit = run_program(&program, &env, config.timeout).await;
        let elapsed = started.elapsed();
        if !exit.success() {
            return Err(ScriptError::Failed {
                kind,
                program,
                job_id,
                exit,
                elapsed,
            });
        }
        tracing::info!(
            job_id,
            node = node.name,
            program = %program.display(),
            rc = 0,
            duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            "{kind} done"
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const CONF: &str = "/etc/slurm/slurm.conf";

    fn node() -> NodeFacts<'static> {
        NodeFacts {
            name: "n3",
            cluster_name: "ref",
            conf_path: Path::new(CONF),
        }
    }

    fn full_job() -> JobFacts {
        JobFacts {
            job_id: 42,
            uid: Some(1000),
            gid: Some(100),
            user: Some("alice".into()),
            partition: Some("debug".into()),
            nodes: Some("n[3-4]".into()),
            account: Some("physics".into()),
            work_dir: Some("/home/alice".into()),
            constraints: Some("gpu&fast".into()),
            exit: Some(JobExit {
                status: 3,
                signal: 0,
            }),
        }
    }

    fn as_map(env: &[(String, String)]) -> HashMap<&str, &str> {
        env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn prolog_environment_names_the_job_and_the_node() {
        let env = environment(Kind::Prolog, &full_job(), &node());
        let expected = [
            ("PATH", SCRIPT_PATH),
            ("SLURM_SCRIPT_CONTEXT", "prolog_slurmd"),
            ("SLURMD_NODENAME", "n3"),
            ("SLURM_CONF", CONF),
            ("SLURM_CLUSTER_NAME", "ref"),
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOBID", "42"),
            ("SLURM_JOB_UID", "1000"),
            ("SLURM_UID", "1000"),
            ("SLURM_JOB_GID", "100"),
            ("SLURM_JOB_USER", "alice"),
            ("SLURM_JOB_PARTITION", "debug"),
            ("SLURM_JOB_NODELIST", "n[3-4]"),
            ("SLURM_NODELIST", "n[3-4]"),
            ("SLURM_JOB_ACCOUNT", "physics"),
            ("SLURM_JOB_WORK_DIR", "/home/alice"),
            ("SLURM_JOB_CONSTRAINTS", "gpu&fast"),
        ];
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn epilog_environment_carries_the_exit_code_and_no_constraints() {
        let env = environment(Kind::Epilog, &full_job(), &node());
        let m = as_map(&env);
        assert_eq!(m["SLURM_SCRIPT_CONTEXT"], "epilog_slurmd");
        assert_eq!(m["SLURM_JOB_EXIT_CODE"], "768");
        assert_eq!(m["SLURM_JOB_EXIT_CODE2"], "3:0");
        assert!(!m.contains_key("SLURM_JOB_CONSTRAINTS"));
        let killed = JobExit {
            status: 0,
            signal: 9,
        };
        assert_eq!(killed.wait_status(), 9);
    }

    #[test]
    fn unknown_facts_are_left_out() {
        let env = environment(Kind::Epilog, &JobFacts::new(7), &node());
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "PATH",
                "SLURM_SCRIPT_CONTEXT",
                "SLURMD_NODENAME",
                "SLURM_CONF",
                "SLURM_CLUSTER_NAME",
                "SLURM_JOB_ID",
                "SLURM_JOBID"
            ]
        );
        let no_cluster = NodeFacts {
            cluster_name: "",
            ..node()
        };
        assert!(
            !as_map(&environment(Kind::Prolog, &JobFacts::new(7), &no_cluster))
                .contains_key("SLURM_CLUSTER_NAME")
        );
    }

    #[test]
    fn a_value_with_a_nul_byte_is_left_out() {
        let job = JobFacts {
            user: Some("al\0ice".into()),
            ..JobFacts::new(1)
        };
        let env = environment(Kind::Prolog, &job, &node());
        assert!(!as_map(&env).contains_key("SLURM_JOB_USER"));
    }

    #[test]
    fn facts_from_requests_and_merging() {
        let launch = LaunchBatchRequest {
            job_id: 9,
            user_id: 1000,
            group_id: 1000,
            user_name: "alice".into(),
            partition: "debug".into(),
            nodes: "n1".into(),
            account: "root".into(),
            work_dir: "/w".into(),
            ..Default::default()
        };
        let terminate = NodeTerminateJobRequest {
            job_id: 9,
            user_id: 1000,
            group_id: 1000,
            nodes: "n[1-2]".into(),
            partition: "debug".into(),
            ..Default::default()
        };
        let from_term = JobFacts::from_terminate(&terminate);
        assert_eq!(from_term.user, None);
        assert_eq!(from_term.account, None);
        assert_eq!(from_term.nodes.as_deref(), Some("n[1-2]"));
        let mut facts = JobFacts::from_launch(&launch);
        assert_eq!(facts.constraints, None, "empty means unknown");
        facts.merge(from_term.clone());
        assert_eq!(facts.nodes.as_deref(), Some("n1"), "what is known stays");
        assert_eq!(facts.account.as_deref(), Some("root"));
        let mut only_term = from_term;
        only_term.merge(JobFacts::from_launch(&launch));
        assert_eq!(only_term.user.as_deref(), Some("alice"), "gaps are filled");
    }

    #[test]
    fn config_from_slurm_conf() {
        let parse = |text: &str| {
            let text = format!("ClusterName=c\nSlurmctldHost=vm\n{text}");
            let conf = SlurmConf::parse(&text, "slurm.conf").unwrap().conf;
            ScriptConfig::from_conf(&conf)
        };
        let c = parse("Prolog=/etc/slurm/prolog.d/*\nEpilog=/e.sh\nPrologEpilogTimeout=30\n");
        assert_eq!(c.program(Kind::Prolog), Some("/etc/slurm/prolog.d/*"));
        assert_eq!(c.program(Kind::Epilog), Some("/e.sh"));
        assert_eq!(c.timeout, Some(Duration::from_secs(30)));
        assert_eq!(parse(""), ScriptConfig::default());
        assert_eq!(parse("PrologEpilogTimeout=0\n").timeout, None);
        assert_eq!(parse("PrologEpilogTimeout=65534\n").timeout, None);
        assert!(!c.alloc && !c.serial);
        let flags = |v: &str| {
            let c = parse(&format!("PrologFlags={v}\n"));
            (c.alloc, c.serial)
        };
        assert_eq!(flags("Alloc"), (true, false));
        // Contain (and X11, which implies it) implies Alloc.
        assert_eq!(flags("Contain"), (true, false));
        assert_eq!(flags("X11"), (true, false));
        assert_eq!(flags("Serial"), (false, true));
        assert_eq!(flags("serial,alloc"), (true, true));
        assert_eq!(flags("NoHold"), (false, false));
    }

    #[test]
    fn facts_from_a_prolog_launch() {
        let req = LaunchPrologRequest {
            job_id: 4,
            user_id: 1000,
            group_id: 100,
            user_name: "alice".into(),
            nodes: "n[1-2]".into(),
            partition: "debug".into(),
            account: String::new(),
            work_dir: "/w".into(),
            constraint: "gpu".into(),
        };
        let f = JobFacts::from_prolog(&req);
        assert_eq!(f.job_id, 4);
        assert_eq!((f.uid, f.gid), (Some(1000), Some(100)));
        assert_eq!(f.user.as_deref(), Some("alice"));
        assert_eq!(f.nodes.as_deref(), Some("n[1-2]"));
        assert_eq!(f.account, None, "empty means unknown");
        assert_eq!(f.constraints.as_deref(), Some("gpu"));
        let env = environment(Kind::Prolog, &f, &node());
        assert_eq!(as_map(&env)["SLURM_JOB_NODELIST"], "n[1-2]");
    }

    #[tokio::test]
    async fn a_jobs_prolog_runs_once_and_concurrent_callers_share_its_outcome() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let runs = Arc::new(PrologRuns::default());
        let count = Arc::new(AtomicUsize::new(0));
        let (release, gate) = tokio::sync::oneshot::channel::<()>();
        let first = {
            let (runs, count) = (runs.clone(), count.clone());
            tokio::spawn(async move {
                runs.once(7, || async move {
                    count.fetch_add(1, Ordering::SeqCst);
                    let _ = gate.await;
                    PrologOutcome::Failed {
                        detail: "exit status 1".into(),
                    }
                })
                .await
            })
        };
        // Wait (bounded) until the first run is under way.
        let deadline = Instant::now() + Duration::from_secs(10);
        while count.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "the first run never started");
            tokio::task::yield_now().await;
        }
        assert_eq!(runs.outcome(7), None, "still running");
        let second = {
            let (runs, count) = (runs.clone(), count.clone());
            tokio::spawn(async move {
                runs.once(7, || async move {
                    count.fetch_add(1, Ordering::SeqCst);
                    PrologOutcome::Succeeded
                })
                .await
            })
        };
        let idle = {
            let runs = runs.clone();
            tokio::spawn(async move { runs.wait_idle(7).await })
        };
        tokio::task::yield_now().await;
        assert!(!second.is_finished() && !idle.is_finished());
        release.send(()).unwrap();
        let failed = PrologOutcome::Failed {
            detail: "exit status 1".into(),
        };
        assert_eq!(first.await.unwrap(), failed);
        assert_eq!(second.await.unwrap(), failed, "the first run's outcome");
        idle.await.unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 1, "one run");
        assert_eq!(runs.outcome(7), Some(failed));
        // Another job runs its own; a forgotten job runs again.
        let ok = runs.once(8, || async { PrologOutcome::Succeeded }).await;
        assert_eq!(ok, PrologOutcome::Succeeded);
        assert_eq!(runs.len(), 2);
        runs.forget(7);
        assert_eq!(runs.outcome(7), None);
        let again = runs.once(7, || async { PrologOutcome::Succeeded }).await;
        assert_eq!(again, PrologOutcome::Succeeded);
        // Nothing started: nothing to wait for.
        runs.wait_idle(99).await;
        assert_eq!(runs.len(), 2);
    }

    #[tokio::test]
    async fn prolog_runs_are_bounded_and_forget_the_oldest_finished_ones() {
        let runs = PrologRuns::default();
        let max = u32::try_from(MAX_PROLOG_RUNS).unwrap();
        for id in 1..=max + 3 {
            runs.once(id, || async { PrologOutcome::Succeeded }).await;
        }
        assert_eq!(runs.len(), MAX_PROLOG_RUNS);
        assert_eq!(runs.outcome(1), None);
        assert_eq!(runs.outcome(3), None);
        assert_eq!(runs.outcome(4), Some(PrologOutcome::Succeeded));
        assert_eq!(runs.outcome(max + 3), Some(PrologOutcome::Succeeded));
    }

    #[test]
    fn glob_patterns() {
        assert!(glob_match("*", "a.sh"));
        assert!(!glob_match("*", ".hidden"));
        assert!(glob_match(".*", ".hidden"));
        assert!(glob_match("*.sh", "10-gpu.sh"));
        assert!(!glob_match("*.sh", "10-gpu.sh~"));
        assert!(glob_match("??-*", "10-x"));
        assert!(!glob_match("??-*", "1-x"));
        assert!(glob_match("[0-9]*", "5x"));
        assert!(!glob_match("[!0-9]*", "5x"));
        assert!(glob_match("[^0-9]*", "x5"));
        assert!(glob_match("[]]", "]"));
        assert!(glob_match("a[", "a["), "an unclosed class is literal");
        assert!(!glob_match("a[", "ab"));
        assert!(glob_match("a\\*", "a*"));
        assert!(!glob_match("a\\*", "ab"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(!glob_match("a*b*c", "aXbYbZ"));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "x"));
        assert!(glob_match("é*", "été"));
    }

    proptest! {
        #[test]
        fn glob_never_panics(p in ".{0,12}", n in ".{0,12}") {
            let _ = glob_match(&p, &n);
        }

        #[test]
        fn a_name_matches_itself_quoted_and_any_star(n in "[a-zA-Z0-9_.\\-]{1,12}") {
            let quoted: String = n.chars().flat_map(|c| ['\\', c]).collect();
            prop_assert!(glob_match(&quoted, &n));
            prop_assert_eq!(glob_match("*", &n), !n.starts_with('.'));
            let prefix = format!("{}*", &n[..1]);
            prop_assert!(glob_match(&prefix, &n));
        }

        #[test]
        fn a_plain_pattern_matches_only_itself(p in "[a-z0-9_.\\-]{1,8}", n in "[a-z0-9_.\\-]{1,8}") {
            prop_assert_eq!(glob_match(&p, &n), p == n);
        }
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn program_lists() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["20-b.sh", "10-a.sh", "notes.txt", ".30-hidden.sh"] {
            script(dir.path(), n, "#!/bin/sh\n");
        }
        std::fs::create_dir(dir.path().join("40-dir.sh")).unwrap();
        let pattern = format!("{}/*.sh", dir.path().display());
        assert_eq!(
            programs(&pattern),
            vec![dir.path().join("10-a.sh"), dir.path().join("20-b.sh")]
        );
        let none = format!("{}/*.py", dir.path().display());
        assert!(programs(&none).is_empty());
        assert!(programs("/nonexistent-dir/*").is_empty());
        // A plain path is run as it is, even when missing.
        assert_eq!(programs("/no/such"), vec![PathBuf::from("/no/such")]);
    }

    fn config(prolog: Option<&Path>, timeout: Option<Duration>) -> ScriptConfig {
        ScriptConfig {
            prolog: prolog.map(|p| p.display().to_string()),
            timeout,
            ..ScriptConfig::default()
        }
    }

    #[tokio::test]
    async fn programs_run_in_order_with_the_job_environment() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let body = |tag: &str| {
            format!(
                "#!/bin/sh\necho \"{tag} $SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURMD_NODENAME \
                 $SLURM_JOB_USER $PATH $(pwd) $HOME\" >> {}\n",
                out.display()
            )
        };
        script(dir.path(), "p1.sh", &body("one"));
        script(dir.path(), "p2.sh", &body("two"));
        let cfg = ScriptConfig {
            prolog: Some(format!("{}/p*.sh", dir.path().display())),
            ..ScriptConfig::default()
        };
        let job = JobFacts {
            user: Some("alice".into()),
            ..JobFacts::new(42)
        };
        run(Kind::Prolog, &cfg, &job, &node()).await.unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            text,
            format!(
                "one prolog_slurmd 42 n3 alice {SCRIPT_PATH} / \n\
                 two prolog_slurmd 42 n3 alice {SCRIPT_PATH} / \n"
            )
        );
        // Nothing configured: nothing runs.
        run(Kind::Epilog, &cfg, &job, &node()).await.unwrap();
    }

    #[tokio::test]
    async fn a_failure_stops_the_rest_and_reports_the_exit() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        script(dir.path(), "a.sh", "#!/bin/sh\nexit 3\n");
        script(
            dir.path(),
            "b.sh",
            &format!("#!/bin/sh\ntouch {}\n", marker.display()),
        );
        let cfg = ScriptConfig {
            prolog: Some(format!("{}/*.sh", dir.path().display())),
            ..ScriptConfig::default()
        };
        let err = run(Kind::Prolog, &cfg, &JobFacts::new(5), &node())
            .await
            .unwrap_err();
        assert_eq!(err.exit(), Some(&Exit::Code(3)));
        let text = err.to_string();
        assert!(text.starts_with("prolog "), "{text}");
        assert!(text.contains("a.sh failed for job 5 after "), "{text}");
        assert!(text.ends_with(": exit status 3"), "{text}");
        assert!(!marker.exists(), "b.sh must not run after a.sh failed");
    }

    #[tokio::test]
    async fn a_missing_program_or_empty_pattern_fails() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.sh");
        let err = run(
            Kind::Epilog,
            &ScriptConfig {
                epilog: Some(missing.display().to_string()),
                ..ScriptConfig::default()
            },
            &JobFacts::new(1),
            &node(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err.exit(), Some(Exit::SpawnFailed(e)) if e.contains("missing.sh")));
        let pattern = format!("{}/*.sh", dir.path().display());
        let err = run(
            Kind::Prolog,
            &ScriptConfig {
                prolog: Some(pattern.clone()),
                ..ScriptConfig::default()
            },
            &JobFacts::new(1),
            &node(),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("prolog {pattern} matches no program (job 1)")
        );
    }

    #[tokio::test]
    async fn a_program_past_its_timeout_is_killed_with_its_session() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let p = script(
            dir.path(),
            "hang.sh",
            &format!(
                "#!/bin/sh\nsleep 300 &\necho $! > {}\nsleep 300\n",
                pids.display()
            ),
        );
        let started = Instant::now();
        let err = run(
            Kind::Prolog,
            &config(Some(&p), Some(Duration::from_secs(1))),
            &JobFacts::new(2),
            &node(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err.exit(), Some(Exit::TimedOut(d)) if *d >= Duration::from_secs(1)));
        assert!(started.elapsed() < Duration::from_secs(60));
        // The background child went with the session.
        let child: i32 = std::fs::read_to_string(&pids)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // SAFETY: signal 0 only checks for existence.
            let alive = unsafe { libc::kill(child, 0) } == 0;
            let zombie = std::fs::read_to_string(format!("/proc/{child}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true);
            if !alive || zombie {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "background child {child} survived"
            );
            std::thread::yield_now();
        }
    }

    #[tokio::test]
    async fn exit_codes_and_signals() {
        let dir = tempfile::tempdir().unwrap();
        let ok = script(dir.path(), "ok", "#!/bin/sh\nexit 0\n");
        let bad = script(dir.path(), "bad", "#!/bin/sh\nexit 7\n");
        let killed = script(dir.path(), "killed", "#!/bin/sh\nkill -TERM $$\n");
        let env = environment(Kind::Epilog, &JobFacts::new(1), &node());
        let limit = Some(Duration::from_secs(30));
        assert_eq!(run_program(&ok, &env, limit).await, Exit::Code(0));
        assert_eq!(run_program(&bad, &env, None).await, Exit::Code(7));
        assert_eq!(
            run_program(&killed, &env, limit).await,
            Exit::Signal(libc::SIGTERM)
        );
        assert!(Exit::Code(0).success());
        assert!(!Exit::Code(7).success());
        assert!(!Exit::TimedOut(Duration::ZERO).success());
        assert_eq!(Exit::Signal(9).to_string(), "killed by signal 9");
    }
}
