//! The environment of a batch job, where it was seen to differ from Slurm
//! 22.05's: the user's login environment under `--export=NONE` (Slurm
//! logs the user in with `su -` and puts the job's variables on top),
//! `HOSTNAME` set to the NodeName, no empty `SLURM_JOB_ACCOUNT` or
//! `SLURM_JOB_QOS` without accounting, and `SLURM_TASKS_PER_NODE` counting
//! the CPUs of a job given no `--ntasks`; a node range (`-N1-3`) on as many
//! idle nodes as it may.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use slurm_testkit::e2e::{cluster_with as cluster, sbatch_parsable, text};
use slurm_testkit::{wait_until, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(60);

type Vars = BTreeMap<String, String>;

/// `NAME=value` entries split on NULs (what `env -0` prints).
fn parse_env0(bytes: &[u8]) -> Vars {
    bytes
        .split(|b| *b == 0)
        .filter_map(|e| std::str::from_utf8(e).ok()?.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// A script that writes its environment to `dir/env-JOBID` (whole, or not
/// at all), using absolute paths only: the job may have no PATH.
fn write_script(dir: &Path) -> String {
    let d = dir.display();
    let script = dir.join("env.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n/usr/bin/env -0 > {d}/env-$SLURM_JOB_ID.tmp\n\
             /bin/mv {d}/env-$SLURM_JOB_ID.tmp {d}/env-$SLURM_JOB_ID\n"
        ),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script.display().to_string()
}

/// Submits `args` from `dir` with `env` added to sbatch's environment and
/// returns the job's environment once it has written it.
fn job_env(c: &LocalCluster, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Vars {
    let id = sbatch_parsable(c, dir, env, args);
    let written = dir.join(format!("env-{id}"));
    let bytes = wait_until(&format!("job {id}'s environment"), JOB_WAIT, || {
        std::fs::read(&written).ok()
    })
    .unwrap_or_else(|e| panic!("{e:?}\n{}", c.logs()));
    parse_env0(&bytes)
}

/// What `su - USER` gives USER, independently of the daemons.
fn su_login(user: &str) -> Vars {
    let o = Command::new("/bin/su")
        .args(["-", user, "-c", "/usr/bin/env -0"])
        .env_clear()
        .current_dir("/")
        .output()
        .expect("su runs");
    assert!(o.status.success(), "su - {user}: {o:?}");
    parse_env0(&o.stdout)
}

fn passwd_field(user: &str, field: usize) -> String {
    let o = Command::new("getent")
        .args(["passwd", user])
        .output()
        .expect("getent runs");
    text(&o.stdout)
        .trim()
        .split(':')
        .nth(field)
        .unwrap_or_default()
        .to_string()
}

fn current_user() -> String {
    let o = Command::new("id").arg("-un").output().expect("id runs");
    text(&o.stdout).trim().to_string()
}

/// The environment script submitted with `args` from a new directory
/// `name`, by a submitter whose environment has `SUBMITTER_ONLY=1` and its
/// own HOSTNAME: ((directory, script), the job's environment).
fn from_submitter(c: &LocalCluster, name: &str, args: &[&str]) -> ((PathBuf, String), Vars) {
    let dir = c.dir().root().join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    let script = write_script(&dir);
    let mut all = args.to_vec();
    all.push(&script);
    let env = job_env(
        c,
        &dir,
        &[("SUBMITTER_ONLY", "1"), ("HOSTNAME", "submitter")],
        &all,
    );
    ((dir, script), env)
}

/// Issue: `--export=NONE` jobs had no PATH, HOME or USER; Slurm loads the
/// user's login environment for them.
#[test]
fn export_none_job_starts_from_the_login_environment() {
    let c = cluster(&[]);
    let ((dir, script), env) = from_submitter(&c, "none", &["--export=NONE,FOO=bar,PATH=/job/bin"]);
    let user = current_user();
    let want_home = passwd_field(&user, 5);
    assert_eq!(env.get("HOME"), Some(&want_home), "{env:#?}");
    assert_eq!(env.get("USER"), Some(&user), "{env:#?}");
    assert_eq!(env.get("LOGNAME"), Some(&user), "{env:#?}");
    assert!(env.contains_key("SHELL"), "{env:#?}");
    // The job's own variables go on top; the submitter's stay behind.
    assert_eq!(env.get("FOO").map(String::as_str), Some("bar"));
    assert_eq!(env.get("PATH").map(String::as_str), Some("/job/bin"));
    assert_eq!(env.get("SUBMITTER_ONLY"), None);
    // The NodeName (SLURMD_NODENAME), not the NodeHostname (localhost).
    assert_eq!(env.get("HOSTNAME"), env.get("SLURMD_NODENAME"), "{env:#?}");
    assert!(env.get("HOSTNAME").is_some_and(|h| h.starts_with('n')));
    assert_eq!(env.get("SLURM_GET_USER_ENV").map(String::as_str), Some("1"));
    assert_eq!(
        env.get("SLURM_EXPORT_ENV").map(String::as_str),
        Some("NONE,FOO=bar,PATH=/job/bin")
    );

    if euid() == 0 {
        // Everything a login gives, as su gives it, apart from what the
        // job's own shell or variables change.
        let login = su_login(&user);
        for (k, v) in &login {
            if ["PWD", "OLDPWD", "SHLVL", "_", "PATH"].contains(&k.as_str()) {
                continue;
            }
            assert_eq!(env.get(k), Some(v), "{k} from the login\n{env:#?}");
        }
        // Without a PATH of its own the job has the login's.
        let env = job_env(&c, &dir, &[], &["--export=NONE", &script]);
        assert_eq!(env.get("PATH"), login.get("PATH"), "{env:#?}");
    }
}

/// A user whose login fails (a nologin shell) still gets the environment
/// login(1) builds from the passwd entry.
#[test]
fn failed_login_falls_back_to_the_passwd_entry() {
    if euid() != 0 || passwd_field("nobody", 0) != "nobody" {
        eprintln!("needs root and a nobody user; skipped");
        return;
    }
    let c = cluster(&[]);
    // Somewhere nobody may write, outside the cluster's private directory.
    let dir = tempfile::Builder::new()
        .prefix("job-env-nobody")
        .tempdir()
        .expect("dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let script = write_script(dir.path());
    let out = dir.path().join("out.txt");
    let env = job_env(
        &c,
        dir.path(),
        &[],
        &[
            "--uid=nobody",
            "--export=NONE",
            "-o",
            out.to_str().expect("utf-8"),
            &script,
        ],
    );
    assert_eq!(env.get("USER").map(String::as_str), Some("nobody"));
    assert_eq!(env.get("HOME"), Some(&passwd_field("nobody", 5)));
    assert_eq!(env.get("SHELL"), Some(&passwd_field("nobody", 6)));
    assert!(
        env.get("PATH").is_some_and(|p| p.contains("/usr/bin")),
        "{env:#?}"
    );
}

/// Issue: HOSTNAME was the submitter's (or missing), SLURM_JOB_ACCOUNT and
/// SLURM_JOB_QOS were set empty, and an `--exclusive` job on 2 CPUs showed
/// `SLURM_TASKS_PER_NODE=1` where Slurm shows 2.
#[test]
fn plain_job_variables_match_slurm() {
    let c = cluster(&[]);
    let ((dir, script), env) = from_submitter(&c, "plain", &[]);
    // The NodeName (SLURMD_NODENAME), not the NodeHostname (localhost).
    assert_eq!(env.get("HOSTNAME"), env.get("SLURMD_NODENAME"), "{env:#?}");
    assert!(env.get("HOSTNAME").is_some_and(|h| h.starts_with('n')));
    assert_eq!(env.get("SUBMITTER_ONLY").map(String::as_str), Some("1"));
    assert_eq!(env.get("SLURM_JOB_ACCOUNT"), None, "{env:#?}");
    assert_eq!(env.get("SLURM_JOB_QOS"), None, "{env:#?}");
    assert_eq!(env.get("SLURM_GET_USER_ENV"), None);
    assert_eq!(
        env.get("SLURM_TASKS_PER_NODE").map(String::as_str),
        Some("1")
    );

    let env = job_env(&c, &dir, &[], &["--exclusive", &script]);
    assert_eq!(env.get("SLURM_CPUS_ON_NODE").map(String::as_str), Some("2"));
    assert_eq!(
        env.get("SLURM_TASKS_PER_NODE").map(String::as_str),
        Some("2"),
        "{env:#?}"
    );
    let env = job_env(&c, &dir, &[], &["--exclusive", "-c", "2", &script]);
    assert_eq!(
        env.get("SLURM_TASKS_PER_NODE").map(String::as_str),
        Some("1"),
        "{env:#?}"
    );
}

/// A node range takes as many idle nodes as it may, as Slurm 22.05 does:
/// `-N1-3` on idle nodes runs on three with a task each, `-n2 -N1-3` on
/// two (a task each), `-n1 -N1-3` on one.
#[test]
fn a_node_range_takes_the_idle_nodes_it_may() {
    let c = cluster(&[]);
    let ((dir, script), _) = from_submitter(&c, "range", &[]);
    for (args, nodes, tasks) in [
        (&["-N1-3"][..], "3", "1(x3)"),
        (&["-n2", "-N1-3"][..], "2", "1(x2)"),
        (&["-n1", "-N1-3"][..], "1", "1"),
    ] {
        // Every node idle again (the last job done) before each.
        let idle = wait_until("idle nodes", JOB_WAIT, || {
            let o = c.run("sinfo", &["-h", "-o", "%t %D"]).ok()?;
            (text(&o.stdout).trim() == "idle 4").then_some(())
        });
        assert!(idle.is_ok(), "{}", c.logs());
        let mut all = args.to_vec();
        all.push(&script);
        let env = job_env(&c, &dir, &[], &all);
        let got = |k: &str| env.get(k).map(String::as_str).unwrap_or_default();
        assert_eq!(got("SLURM_JOB_NUM_NODES"), nodes, "{args:?} {env:#?}");
        assert_eq!(got("SLURM_TASKS_PER_NODE"), tasks, "{args:?} {env:#?}");
    }
}
