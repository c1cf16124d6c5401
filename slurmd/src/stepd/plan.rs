//! From a launch request to a [`LaunchPlan`]: every decision slurmstepd makes
//! before touching the system, as plain data.
//!
//! Keeping the decisions pure means the rules (file names, identity checks,
//! environment) are tested without forking or being root; the exec layer
//! ([`super::exec`]) only carries the plan out.

use std::path::PathBuf;

use slurm_common::rlimit::{self, Propagated};
use slurm_proto::v1::{LaunchBatchRequest, OpenMode};
use thiserror::Error;

use super::env::{batch_env, Env, NodeContext};
use super::pattern::{self, PatternValues, NOT_AN_ARRAY_TASK};
use super::prio::{self, PrioPropagation};

/// Name of the script file inside the job's spool directory (Slurm's name,
/// visible to scripts as `$0`).
pub const SCRIPT_FILE: &str = "slurm_script";

/// How the job's processes get their identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// slurmstepd runs as root: switch to the job's uid, gid and groups.
    SwitchTo,
    /// slurmstepd already runs as the job's user (unprivileged test
    /// clusters): keep the current identity.
    Keep,
}

/// Where one output stream goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    pub path: PathBuf,
    pub append: bool,
}

/// Where standard error goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StderrTarget {
    /// Same open file as standard output (no `--error`).
    Stdout,
    File(OutputFile),
}

/// Everything needed to run the batch script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    pub job_id: u32,
    pub uid: u32,
    pub gid: u32,
    pub extra_gids: Vec<u32>,
    pub identity: Identity,
    pub work_dir: PathBuf,
    /// The script file to write and execute.
    pub script_path: PathBuf,
    pub script: String,
    /// argv[0] is the script path; then the job's arguments.
    pub argv: Vec<String>,
    pub env: Env,
    pub stdin: PathBuf,
    pub stdout: OutputFile,
    pub stderr: StderrTarget,
    /// Resource limits from the submit host (`SLURM_RLIMIT_*`, taken out
    /// of the environment), set on the job before it drops root.
    pub rlimits: Vec<Propagated>,
    /// The submitting shell's file mode creation mask (`SLURM_UMASK`,
    /// taken out of the environment): for the output files and the job.
    pub umask: Option<u32>,
    /// The nice value to give the job once it runs as its user
    /// (PropagatePrioProcess); `None` keeps slurmstepd's.
    pub nice: Option<i32>,
}

/// A launch request that cannot be carried out.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("job {job_id}: slurmstepd runs as uid {own_uid}, not root, and cannot run a job of uid {job_uid}")]
    WrongUser {
        job_id: u32,
        own_uid: u32,
        job_uid: u32,
    },
    #[error("job {job_id}: the batch script is empty")]
    EmptyScript { job_id: u32 },
    #[error("job {job_id}: working directory {work_dir:?} is not an absolute path")]
    RelativeWorkDir { job_id: u32, work_dir: String },
    #[error("job {job_id}: {what} contains a NUL byte")]
    NulByte { job_id: u32, what: &'static str },
}

/// Facts about the running slurmstepd itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepdContext {
    pub node: NodeContext,
    /// The job's spool directory.
    pub job_dir: PathBuf,
    /// Effective uid of slurmstepd.
    pub own_uid: u32,
    /// JobFileAppend from slurm.conf: the default open mode.
    pub append_by_default: bool,
    /// PropagatePrioProcess from slurm.conf.
    pub propagate_prio: PrioPropagation,
    /// slurmstepd's own nice value; `None` when it could not be read, which
    /// leaves the job's priority alone.
    pub own_nice: Option<i32>,
    /// The job user's login environment, loaded when the job asked for it
    /// (`SLURM_GET_USER_ENV=1`, see [`super::user_env`]).
    pub user_env: Option<Env>,
}

/// Plans the launch of `req`. `user_name` is the job user's login name
/// (from the request, else looked up by the caller).
pub fn plan(req: &LaunchBatchRequest, ctx: &StepdContext) -> Result<LaunchPlan, PlanError> {
    let job_id = req.job_id;
    let identity = if ctx.own_uid == 0 {
        Identity::SwitchTo
    } else if ctx.own_uid == req.user_id {
        Identity::Keep
    } else {
        return Err(PlanError::WrongUser {
            job_id,
            own_uid: ctx.own_uid,
            job_uid: req.user_id,
        });
    };
    if req.script.is_empty() {
        return Err(PlanError::EmptyScript { job_id });
    }
    let nul = |what: &'static str, s: &str| {
        if s.contains('\0') {
            Err(PlanError::NulByte { job_id, what })
        } else {
            Ok(())
        }
    };
    nul("the script", &req.script)?;
    nul("the working directory", &req.work_dir)?;
    for a in &req.argv {
        nul("an argument", a)?;
    }
    for e in &req.environment {
        nul("an environment variable", e)?;
    }
    for p in [&req.stdin_path, &req.stdout_path, &req.stderr_path] {
        nul("a file name", p)?;
    }
    let work_dir = if req.work_dir.is_empty() {
        PathBuf::from("/tmp")
    } else if req.work_dir.starts_with('/') {
        PathBuf::from(&req.work_dir)
    } else {
        return Err(PlanError::RelativeWorkDir {
            job_id,
            work_dir: req.work_dir.clone(),
        });
    };

    let node_index = node_index(&req.nodes, &ctx.node.node_name);
    let values = PatternValues {
        job_id,
        array_job_id: req.array.as_ref().map_or(job_id, |a| a.array_job_id),
        array_task_id: req
            .array
            .as_ref()
            .map_or(NOT_AN_ARRAY_TASK, |a| a.array_task_id),
        job_name: &req.name,
        user_name: &req.user_name,
        host_name: &ctx.node.host_name,
        node_index: u32::try_from(node_index).unwrap_or(0),
        task_id: 0,
    };
    // Slurm expands the absolute path, working directory included.
    let resolve = |p: &str| -> PathBuf {
        if p.starts_with('/') {
            PathBuf::from(pattern::expand(p, &values))
        } else {
            let joined = work_dir.join(p);
            PathBuf::from(pattern::expand(&joined.to_string_lossy(), &values))
        }
    };
    let append = match OpenMode::try_from(req.open_mode).unwrap_or(OpenMode::Unspecified) {
        OpenMode::Append => true,
        OpenMode::Truncate => false,
        // A requeued job keeps what earlier runs wrote.
        OpenMode::Unspecified => ctx.append_by_default || req.restart_count > 0,
    };
    let stdout_pattern = if req.stdout_path.is_empty() {
        pattern::default_output(req.array.is_some())
    } else {
        req.stdout_path.as_str()
    };
    let stdout = OutputFile {
        path: resolve(stdout_pattern),
        append,
    };
    let stderr = if req.stderr_path.is_empty() {
        StderrTarget::Stdout
    } else {
        let path = resolve(&req.stderr_path);
        if path == stdout.path {
            StderrTarget::Stdout
        } else {
            StderrTarget::File(OutputFile { path, append })
        }
    };
    let stdin = if req.stdin_path.is_empty() {
        PathBuf::from("/dev/null")
    } else {
        resolve(&req.stdin_path)
    };

    let script_path = ctx.job_dir.join(SCRIPT_FILE);
    let mut argv = vec![script_path.display().to_string()];
    argv.extend(req.argv.iter().cloned());
    let mut env = batch_env(req, &ctx.node, node_index, ctx.user_env.as_ref());
    let rlimits = env
        .take(rlimit::parse_env)
        .into_iter()
        .filter_map(|r| {
            r.map_err(|e| tracing::warn!(job_id, "not propagated: {e}"))
                .ok()
        })
        .collect();
    let umask = env
        .take(|k, v| (k == UMASK_VAR).then(|| parse_umask(v)))
        .pop()
        .flatten();
    let nice = ctx.own_nice.and_then(|own| {
        prio::task_nice(
            ctx.propagate_prio,
            own,
            prio::requested_nice(&req.environment),
            req.user_id == 0,
        )
    });
    Ok(LaunchPlan {
        job_id,
        uid: req.user_id,
        gid: req.group_id,
        extra_gids: req.extra_group_ids.clone(),
        identity,
        work_dir,
        script_path,
        script: req.script.clone(),
        argv,
        env,
        stdin,
        stdout,
        stderr,
        rlimits,
        umask,
        nice,
    })
}

/// The variable sbatch puts the submitting shell's umask in.
const UMASK_VAR: &str = "SLURM_UMASK";

/// An octal mask of at most three digits' worth (`0022`); `None` otherwise.
fn parse_umask(v: &str) -> Option<u32> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return None;
    }
    u32::from_str_radix(v, 8).ok().filter(|m| *m <= 0o777)
}

/// Position of `node` in the job's node list; 0 when the list cannot be
/// read or does not name it (the batch host is the first node).
pub fn node_index(nodes: &str, node: &str) -> usize {
    slurm_common::hostlist::expand(nodes)
        .ok()
        .and_then(|names| names.iter().position(|n| n == node))
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use slurm_proto::v1::ArrayInfo;

    fn ctx(own_uid: u32) -> StepdContext {
        StepdContext {
            node: NodeContext {
                node_name: "n2".into(),
                host_name: "vm".into(),
                conf_path: "/etc/slurm/slurm.conf".into(),
                tmp_fs: "/tmp".into(),
                controller_addr: "127.0.0.1".into(),
                controller_port: 6817,
                select_plugin_id: 109,
            },
            job_dir: "/spool/n2/job00026".into(),
            own_uid,
            append_by_default: false,
            propagate_prio: PrioPropagation::Off,
            own_nice: Some(0),
            user_env: None,
        }
    }

    fn req() -> LaunchBatchRequest {
        LaunchBatchRequest {
            job_id: 26,
            name: "job.sh".into(),
            user_id: 1000,
            group_id: 1000,
            user_name: "alice".into(),
            script: "#!/bin/sh\necho hi\n".into(),
            argv: vec!["a1".into()],
            work_dir: "/home/alice".into(),
            nodes: "n[1-2]".into(),
            cpus_per_node: vec![1, 1],
            ..Default::default()
        }
    }

    #[test]
    fn defaults() {
        let p = plan(&req(), &ctx(0)).unwrap();
        assert_eq!(p.identity, Identity::SwitchTo);
        assert_eq!(
            p.stdout,
            OutputFile {
                path: "/home/alice/slurm-26.out".into(),
                append: false
            }
        );
        assert_eq!(p.stderr, StderrTarget::Stdout);
        assert_eq!(p.stdin, PathBuf::from("/dev/null"));
        assert_eq!(
            p.argv,
            vec!["/spool/n2/job00026/slurm_script".to_string(), "a1".into()]
        );
        assert_eq!(p.env.get("SLURM_NODEID"), Some("1"));
        assert_eq!(p.env.get("SLURMD_NODENAME"), Some("n2"));
    }

    /// `SLURM_UMASK` and `SLURM_RLIMIT_*` are for slurmstepd: taken out
    /// of the job's environment; what cannot be read is dropped.
    #[test]
    fn umask_and_limits_leave_the_environment() {
        let mut r = req();
        r.environment = vec![
            "SLURM_UMASK=0077".into(),
            "SLURM_RLIMIT_CORE=0".into(),
            "SLURM_RLIMIT_STACK=U8388608".into(),
            "SLURM_RLIMIT_BOGUS=1".into(),
            "KEEP=1".into(),
        ];
        let p = plan(&r, &ctx(0)).unwrap();
        assert_eq!(p.umask, Some(0o77));
        assert_eq!(p.rlimits.len(), 2);
        assert!(p.rlimits[1].asked && p.rlimits[1].value == 8_388_608);
        assert!(!p
            .env
            .vars()
            .iter()
            .any(|(k, _)| k.starts_with("SLURM_RLIMIT_") || k == "SLURM_UMASK"));
        assert_eq!(p.env.get("KEEP"), Some("1"));
        for (v, want) in [
            ("022", Some(0o22)),
            ("0", Some(0)),
            ("0777", Some(0o777)),
            ("1000", None),
            ("9", None),
            ("", None),
            ("-1", None),
        ] {
            assert_eq!(parse_umask(v), want, "{v}");
        }
        assert_eq!(plan(&req(), &ctx(0)).unwrap().umask, None);
    }

    /// The submitter's nice value reaches the plan only as
    /// PropagatePrioProcess allows; it stays in the job's environment.
    #[test]
    fn nice_follows_propagate_prio_process() {
        let with = |mode, own_nice, env: &[&str], uid| {
            let r = LaunchBatchRequest {
                environment: env.iter().map(|e| e.to_string()).collect(),
                user_id: uid,
                ..req()
            };
            let c = StepdContext {
                propagate_prio: mode,
                own_nice,
                ..ctx(0)
            };
            plan(&r, &c).unwrap()
        };
        let seven = ["SLURM_PRIO_PROCESS=7"];
        assert_eq!(with(PrioPropagation::Off, Some(0), &seven, 1000).nice, None);
        let p = with(PrioPropagation::Submitter, Some(0), &seven, 1000);
        assert_eq!(p.nice, Some(7));
        assert_eq!(p.env.get("SLURM_PRIO_PROCESS"), Some("7"));
        let minus = ["SLURM_PRIO_PROCESS=-5"];
        assert_eq!(
            with(PrioPropagation::Submitter, Some(2), &minus, 1000).nice,
            Some(2)
        );
        assert_eq!(
            with(PrioPropagation::Submitter, Some(2), &minus, 0).nice,
            Some(-5)
        );
        assert_eq!(
            with(PrioPropagation::Nicer, Some(2), &minus, 0).nice,
            Some(3)
        );
        // Missing, not a number, or slurmstepd's own value unknown: left alone.
        assert_eq!(
            with(PrioPropagation::Submitter, Some(0), &[], 1000).nice,
            None
        );
        let bad = ["SLURM_PRIO_PROCESS=high"];
        assert_eq!(with(PrioPropagation::Nicer, Some(0), &bad, 1000).nice, None);
        assert_eq!(
            with(PrioPropagation::Submitter, None, &seven, 1000).nice,
            None
        );
    }

    #[test]
    fn patterns_and_modes() {
        let r = LaunchBatchRequest {
            stdout_path: "out/%x-%j-%N.txt".into(),
            stderr_path: "/var/log/%u/%A_%a.err".into(),
            stdin_path: "in.txt".into(),
            open_mode: OpenMode::Append as i32,
            array: Some(ArrayInfo {
                array_job_id: 20,
                array_task_id: 3,
                ..Default::default()
            }),
            ..req()
        };
        let p = plan(&r, &ctx(1000)).unwrap();
        assert_eq!(p.identity, Identity::Keep);
        assert_eq!(
            p.stdout.path,
            PathBuf::from("/home/alice/out/job.sh-26-vm.txt")
        );
        assert!(p.stdout.append);
        assert_eq!(
            p.stderr,
            StderrTarget::File(OutputFile {
                path: "/var/log/alice/20_3.err".into(),
                append: true
            })
        );
        assert_eq!(p.stdin, PathBuf::from("/home/alice/in.txt"));
        let r = LaunchBatchRequest {
            stdout_path: String::new(),
            ..r
        };
        assert_eq!(
            plan(&r, &ctx(0)).unwrap().stdout.path,
            PathBuf::from("/home/alice/slurm-20_3.out")
        );
    }

    /// Slurm 22.05 expands the whole path: a job submitted from `w%%d`
    /// with `-o out.txt` writes `w%d/out.txt`, and a backslash in the
    /// working directory turns expansion off for the file name too.
    #[test]
    fn working_directory_is_part_of_the_pattern() {
        let r = LaunchBatchRequest {
            work_dir: "/home/w%%d".into(),
            stdout_path: "out-%j.txt".into(),
            stderr_path: "/abs/%j.err".into(),
            ..req()
        };
        let p = plan(&r, &ctx(0)).unwrap();
        assert_eq!(p.stdout.path, PathBuf::from("/home/w%d/out-26.txt"));
        assert_eq!(p.work_dir, PathBuf::from("/home/w%%d"));
        assert_eq!(
            p.stderr,
            StderrTarget::File(OutputFile {
                path: "/abs/26.err".into(),
                append: false
            })
        );
        let r = LaunchBatchRequest {
            work_dir: "/home/a\\b".into(),
            ..r
        };
        let p = plan(&r, &ctx(0)).unwrap();
        assert_eq!(p.stdout.path, PathBuf::from("/home/ab/out-%j.txt"));
    }

    #[test]
    fn error_equal_to_output_joins_it_and_requeue_appends() {
        let r = LaunchBatchRequest {
            stdout_path: "x-%j".into(),
            stderr_path: "x-%j".into(),
            restart_count: 2,
            ..req()
        };
        let p = plan(&r, &ctx(0)).unwrap();
        assert_eq!(p.stderr, StderrTarget::Stdout);
        assert!(p.stdout.append);
    }

    #[test]
    fn refusals() {
        assert_eq!(
            plan(&req(), &ctx(1001)).unwrap_err(),
            PlanError::WrongUser {
                job_id: 26,
                own_uid: 1001,
                job_uid: 1000
            }
        );
        let e = plan(
            &LaunchBatchRequest {
                script: String::new(),
                ..req()
            },
            &ctx(0),
        )
        .unwrap_err();
        assert_eq!(e, PlanError::EmptyScript { job_id: 26 });
        let e = plan(
            &LaunchBatchRequest {
                work_dir: "rel".into(),
                ..req()
            },
            &ctx(0),
        )
        .unwrap_err();
        assert!(matches!(e, PlanError::RelativeWorkDir { .. }));
        let e = plan(
            &LaunchBatchRequest {
                argv: vec!["a\0b".into()],
                ..req()
            },
            &ctx(0),
        )
        .unwrap_err();
        assert!(e.to_string().contains("NUL"));
        assert!(plan(
            &LaunchBatchRequest {
                work_dir: String::new(),
                ..req()
            },
            &ctx(0)
        )
        .is_ok());
    }
}
