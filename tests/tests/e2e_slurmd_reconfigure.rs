//! slurmd taking a re-read slurm.conf end to end: `scontrol reconfigure`
//! makes the controller take a node's new line (what `scontrol show node`
//! shows comes from the controller's slurm.conf) and pass the request on to
//! every slurmd, which re-reads the file itself and registers again; SIGHUP
//! does the same for one slurmd. A broken file leaves every daemon running
//! as it was, with the error (file and line) in slurmd's log.
//!
//! slurmd's side is seen in its log: the cluster's daemons report their
//! configured sizes nowhere else.

use std::path::{Path, PathBuf};
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::{wait_until, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn show_node(c: &LocalCluster, node: &str) -> String {
    let o = c
        .run("scontrol", &["show", "node", node])
        .expect("scontrol show node");
    text(&o)
}

fn slurmd_log(c: &LocalCluster, node: &str) -> PathBuf {
    c.dir().log_dir().join(format!("slurmd.{node}.log"))
}

/// The lines of `path` (empty while it does not exist).
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits until a line of `path` after the first `skip` holds every one of
/// `words`; returns that line.
fn wait_log_line(c: &LocalCluster, path: &Path, skip: usize, words: &[&str]) -> String {
    wait_until(
        &format!("{} to log {words:?}", path.display()),
        WAIT,
        || {
            lines(path)
                .into_iter()
                .skip(skip)
                .find(|l| words.iter().all(|w| l.contains(w)))
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()))
}

fn slurmd_pid(c: &LocalCluster, node: &str) -> i32 {
    let path = c.dir().run_dir().join(format!("slurmd.{node}.pid"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("bad pid file {}: {text:?}", path.display()))
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn hangup(pid: i32) {
    // SAFETY: a signal to a daemon this test's cluster started.
    assert_eq!(
        unsafe { libc::kill(pid, libc::SIGHUP) },
        0,
        "kill -HUP {pid}"
    );
}

#[test]
fn slurmd_takes_a_new_node_line_and_outlives_a_broken_file() {
    let mut c = LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster: {e:#}"));
    let conf_path = c.conf_path();
    let good = std::fs::read_to_string(&conf_path).expect("read slurm.conf");
    let n1 = good
        .lines()
        .find(|l| l.starts_with("NodeName=n1 "))
        .expect("n1 line")
        .to_string();
    assert!(n1.contains(" RealMemory=4000 "), "{n1}");
    let before = show_node(&c, "n1");
    assert!(before.contains("RealMemory=4000 "), "{before}");
    assert!(before.contains("AvailableFeatures=(null)"), "{before}");

    // A feature and less memory for n1, then reconfigure.
    let n1_new = n1.replace(" RealMemory=4000 ", " RealMemory=3000 Feature=fast ");
    let changed = good.replace(&n1, &n1_new);
    std::fs::write(&conf_path, &changed).expect("write");
    let log1 = slurmd_log(&c, "n1");
    let log2 = slurmd_log(&c, "n2");
    let (seen1, seen2) = (lines(&log1).len(), lines(&log2).len());
    let o = c.run("scontrol", &["reconfigure"]).expect("reconfigure");
    assert!(o.status.success(), "{}", text(&o));

    wait_until("scontrol show node n1 to show the new line", WAIT, || {
        let shown = show_node(&c, "n1");
        (shown.contains("RealMemory=3000 ") && shown.contains("AvailableFeatures=fast"))
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", show_node(&c, "n1"), c.logs()));
    // n1's slurmd took its node's new definition; n2's re-read the file
    // and found nothing new for its node.
    wait_log_line(
        &c,
        &log1,
        seen1,
        &[
            "node configuration reloaded",
            "node=n1",
            "RealMemory",
            "Feature",
        ],
    );
    wait_log_line(&c, &log2, seen2, &["re-read slurm.conf"]);
    assert!(
        !lines(&log2)
            .iter()
            .skip(seen2)
            .any(|l| l.contains("node configuration reloaded")),
        "{}",
        c.logs()
    );

    // A broken line: the reconfigure is refused (scontrol reads the file
    // first and names the line) and every daemon runs on. Nothing that
    // reads slurm.conf can ask them while it is broken, so their pids are.
    let broken = changed.replace(" RealMemory=3000 ", " RealMemory=lots ");
    std::fs::write(&conf_path, &broken).expect("write");
    let o = c.run("scontrol", &["reconfigure"]).expect("reconfigure");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("lots"), "{}", text(&o));
    let ctld = c.controller_pid().expect("slurmctld pid");
    let ctld = i32::try_from(ctld).expect("pid");

    // SIGHUP makes n1's slurmd read the broken file itself: it logs the
    // file and line, keeps its configuration and keeps running.
    let pid = slurmd_pid(&c, "n1");
    let line_no = broken
        .lines()
        .position(|l| l.starts_with("NodeName=n1 "))
        .expect("n1 line")
        + 1;
    let seen1 = lines(&log1).len();
    hangup(pid);
    let error = wait_log_line(
        &c,
        &log1,
        seen1,
        &[
            "keeping the running configuration",
            &format!("slurm.conf:{line_no}"),
            "lots",
        ],
    );
    assert!(error.contains("ERROR"), "{error}");
    assert!(alive(pid), "slurmd n1 died on SIGHUP\n{}", c.logs());
    assert!(alive(ctld), "slurmctld died\n{}", c.logs());

    // Mended: every node is up, n1 as it was before the broken file.
    std::fs::write(&conf_path, &changed).expect("write");
    c.wait_nodes_idle(WAIT)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs()));
    let shown = show_node(&c, "n1");
    assert!(
        shown.contains("RealMemory=3000 ") && shown.contains("AvailableFeatures=fast"),
        "{shown}"
    );
    // SIGHUP is taken again, and n1 still runs jobs.
    let seen1 = lines(&log1).len();
    hangup(pid);
    wait_log_line(&c, &log1, seen1, &["re-read slurm.conf"]);
    assert!(alive(pid), "slurmd n1 died on SIGHUP\n{}", c.logs());
    let id = c
        .sbatch(&["-w", "n1", "-t", "5", "--wrap", "true"])
        .expect("sbatch");
    assert_eq!(
        c.wait_job_finished(id, WAIT)
            .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs())),
        JobState::Completed
    );
    assert_eq!(slurmd_pid(&c, "n1"), pid);
}
