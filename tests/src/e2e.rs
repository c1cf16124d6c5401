//! The few steps every end-to-end test takes, each with a failure message
//! that says what was run: start a cluster, run a command (that must
//! succeed), read its output as text, show a record, make a working
//! directory.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::{wait_until, ClusterSpec, LocalCluster};

/// A started cluster; panics with the reason when it does not start.
pub fn cluster(spec: ClusterSpec) -> LocalCluster {
    LocalCluster::start(spec).unwrap_or_else(|e| panic!("cluster did not start: {e:#}"))
}

/// The default cluster with `extra` lines appended to its slurm.conf.
pub fn cluster_with(extra: &[&str]) -> LocalCluster {
    cluster(ClusterSpec {
        extra_lines: extra.iter().map(|l| (*l).to_string()).collect(),
        ..ClusterSpec::default()
    })
}

/// Command output as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `cmd args` against `c`; panics only when it cannot be started.
pub fn run(c: &LocalCluster, cmd: &str, args: &[&str]) -> Output {
    c.run(cmd, args).unwrap_or_else(|e| panic!("{cmd}: {e:#}"))
}

/// Runs `sbatch --parsable args` from `dir` with `env` added to its
/// environment; the job id. Panics with the cluster's logs when refused.
pub fn sbatch_parsable(c: &LocalCluster, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> u32 {
    let mut cmd = c
        .command("sbatch")
        .unwrap_or_else(|e| panic!("sbatch: {e:#}"));
    cmd.current_dir(dir).arg("--parsable").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("sbatch runs");
    assert!(o.status.success(), "sbatch {args:?}: {o:?}\n{}", c.logs());
    text(&o.stdout).trim().parse().expect("job id")
}

/// Standard output then standard error, as a terminal shows them.
pub fn output_text(o: &Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}

/// `scontrol show WHAT NAME`: what it printed, errors included.
pub fn scontrol_show(c: &LocalCluster, what: &str, name: &str) -> String {
    output_text(&run(c, "scontrol", &["show", what, name]))
}

/// Polls `scontrol show WHAT NAME` until it contains `needle`; what it
/// showed then. Panics after `timeout` with the last record and the
/// daemons' logs.
pub fn wait_shown(
    c: &LocalCluster,
    what: &str,
    name: &str,
    needle: &str,
    timeout: Duration,
) -> String {
    wait_until(
        &format!("{what} {name} showing {needle:?}"),
        timeout,
        || {
            let shown = scontrol_show(c, what, name);
            shown.contains(needle).then_some(shown)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", scontrol_show(c, what, name), c.logs()))
}

/// Runs a command that must succeed; its stdout. A failure shows the
/// command, its output and the daemons' logs.
pub fn run_ok(c: &LocalCluster, cmd: &str, args: &[&str]) -> String {
    let o = run(c, cmd, args);
    assert!(o.status.success(), "{cmd} {args:?}: {o:?}\n{}", c.logs());
    text(&o.stdout)
}

/// `squeue --array-unique -h -t all -j ID -o "%i %t %r"` lines, sorted:
/// every record of job or array `id` with its state and reason, as the
/// controller holds them (`--array-unique`: pending tasks split off an
/// array keep lines of their own instead of folding into the array's).
pub fn array_rows(c: &LocalCluster, id: u32) -> Vec<String> {
    let out = run_ok(
        c,
        "squeue",
        &[
            "--array-unique",
            "-h",
            "-t",
            "all",
            "-j",
            &id.to_string(),
            "-o",
            "%i %t %r",
        ],
    );
    let mut rows: Vec<String> = out.lines().map(|l| l.trim().to_string()).collect();
    rows.sort();
    rows
}

/// Polls [`array_rows`] until they are `want`, in any order. Panics after
/// `timeout` with the last rows and the daemons' logs.
pub fn wait_array_rows(c: &LocalCluster, id: u32, want: &[impl AsRef<str>], timeout: Duration) {
    let mut want: Vec<String> = want.iter().map(|s| s.as_ref().to_string()).collect();
    want.sort();
    let mut last = Vec::new();
    wait_until(&format!("array {id} to show {want:?}"), timeout, || {
        last = array_rows(c, id);
        (last == want).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: last seen {last:?}\n{}", c.logs()));
}

/// `work/` in the cluster's directory, created: where jobs are submitted
/// from and write their output.
pub fn work_dir(c: &LocalCluster) -> PathBuf {
    let d = c.dir().root().join("work");
    std::fs::create_dir_all(&d).expect("work dir");
    d
}
