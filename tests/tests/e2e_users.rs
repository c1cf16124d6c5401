//! Ordinary users of a cluster started by root: they cannot read slurm.key,
//! so their commands get credentials from the local slurmd
//! (`slurm_common::auth::sack`), and their jobs run as themselves. Needs
//! root and a `nobody` user; skipped otherwise.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::{wait_until, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

/// uid and gid of `nobody`, when this runs as root and the user exists.
fn nobody() -> Option<(u32, u32)> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |flag: &str| -> Option<u32> {
        let o = std::process::Command::new("id")
            .args([flag, "nobody"])
            .output()
            .ok()?;
        String::from_utf8_lossy(&o.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// Runs a command of `c` as `uid`:`gid` in `cwd` (std drops root's
/// supplementary groups with the uid).
fn run_as(
    c: &LocalCluster,
    (uid, gid): (u32, u32),
    cwd: &Path,
    name: &str,
    args: &[&str],
) -> Output {
    let mut cmd = c.command(name).expect("command");
    cmd.current_dir(cwd).args(args).uid(uid).gid(gid);
    cmd.output().expect("run")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_user_without_the_key_submits_and_the_job_runs_as_that_user() {
    let Some(user) = nobody() else {
        eprintln!("needs root and a nobody user; skipped");
        return;
    };
    let mut c = LocalCluster::start_default().expect("cluster");
    // The cluster's directory is private by default: open it as an
    // administrator would /etc/slurm (the key stays 0600).
    std::fs::set_permissions(c.dir().root(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let key = c.dir().root().join("slurm.key");
    assert_eq!(std::fs::metadata(&key).expect("key").mode() & 0o777, 0o600);
    let work = tempfile::Builder::new()
        .prefix("e2e-users")
        .tempdir()
        .expect("dir");
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");

    // The local slurmd starts its credential service with the cluster.
    let socket = c.dir().root().join("sack.socket");
    wait_until("the credential service's socket", JOB_WAIT, || {
        socket.exists().then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: {}", c.logs()));

    let o = run_as(
        &c,
        user,
        work.path(),
        "sbatch",
        &["--parsable", "--wrap", "id -u > uid.txt"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let id: u32 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .expect("job id");
    let state = c.wait_job_finished(id, JOB_WAIT).expect("finished");
    assert_eq!(state, JobState::Completed, "{}", c.logs());
    let uid_file = work.path().join("uid.txt");
    let written = std::fs::read_to_string(&uid_file).expect("uid.txt");
    assert_eq!(written.trim(), user.0.to_string());
    let out = work.path().join(format!("slurm-{id}.out"));
    assert_eq!(std::fs::metadata(&out).expect("output").uid(), user.0);

    // Their queries work; someone else's job is not theirs to cancel.
    let o = run_as(
        &c,
        user,
        work.path(),
        "squeue",
        &["-h", "-t", "all", "-o", "%i %u"],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("{id} nobody")), "{}", text(&o));
    let roots = c.sbatch(&["--hold", "--wrap", "true"]).expect("sbatch");
    let o = run_as(&c, user, work.path(), "scancel", &[&roots.to_string()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("scancel: error: Kill job error on job id {roots}: Access/permission denied\n")
    );
    assert_eq!(c.job_state(roots), Some(JobState::Pending));
}

/// Without the key and without a local slurmd, a user's command says both.
#[test]
fn without_the_key_or_a_local_service_the_error_names_both() {
    let Some(user) = nobody() else {
        eprintln!("needs root and a nobody user; skipped");
        return;
    };
    let c = LocalCluster::start_default().expect("cluster");
    // Another directory with the same configuration and key, where no
    // slurmd listens.
    let elsewhere = tempfile::Builder::new()
        .prefix("e2e-users-conf")
        .tempdir()
        .expect("dir");
    std::fs::set_permissions(elsewhere.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let conf = elsewhere.path().join("slurm.conf");
    std::fs::copy(c.conf_path(), &conf).expect("copy conf");
    std::fs::copy(
        c.dir().root().join("slurm.key"),
        elsewhere.path().join("slurm.key"),
    )
    .expect("copy key");
    let mut cmd = c.command("squeue").expect("squeue");
    cmd.env("SLURM_CONF", &conf)
        .current_dir(elsewhere.path())
        .uid(user.0)
        .gid(user.1);
    let o = cmd.output().expect("run");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Permission denied"), "{err}");
    assert!(
        err.contains(&format!(
            "no local credential service at {}",
            elsewhere.path().join("sack.socket").display()
        )),
        "{err}"
    );
}
