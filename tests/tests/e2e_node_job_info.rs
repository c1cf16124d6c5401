//! What the commands show of nodes and jobs, end to end through the real
//! daemons and commands:
//!
//! * BootTime is the host's kernel boot time and SlurmdStartTime when its
//!   slurmd started, both as slurmd reports them (not the registration
//!   time); they come back after a controller restart from the first ping
//!   round, as in Slurm they come back with the nodes' registrations;
//! * a `--gres` job shows its request as Slurm 22.05 does, `gres:gpu:1`, in
//!   squeue's `%b` and `tres-per-node`, `scontrol show job`'s TresPerNode
//!   and `squeue --json`; `sinfo -o %G` shows each node's Gres;
//! * a requeued job keeps its priority (priority/basic) and is submitted
//!   anew: SubmitTime moves to the requeue, and a job submitted after it
//!   still ranks below it;
//! * SIGUSR2 has slurmd reopen its log file (logrotate).
//!
//! Needs the workspace binaries.

use std::process::Output;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::cluster_dir::ClusterSpec;
use slurm_testkit::golden::{is_slurm_date, json_numbers, show_field};
use slurm_testkit::{wait_until, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs a command that must succeed; its stdout.
fn run_ok(c: &LocalCluster, cmd: &str, args: &[&str]) -> String {
    let o = c.run(cmd, args).unwrap_or_else(|e| panic!("{cmd}: {e:#}"));
    assert!(o.status.success(), "{cmd} {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn show(c: &LocalCluster, what: &str, name: &str) -> String {
    run_ok(c, "scontrol", &["show", what, name])
}

/// The kernel's boot time, as slurmd reads it (`btime` in /proc/stat).
fn host_boot_time() -> i64 {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
        .expect("btime in /proc/stat")
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// n1 and n2 run a slurmd; g1 has two GPUs in slurm.conf and no slurmd
/// (nothing listens on the discard port), so a GPU job waits for it.
fn start() -> LocalCluster {
    let spec = ClusterSpec {
        nodes: 2,
        extra_lines: vec![
            "GresTypes=gpu".to_string(),
            "NodeName=g1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=9 CPUs=2 \
             RealMemory=4000 Gres=gpu:a100:2 State=UNKNOWN"
                .to_string(),
        ],
        ..ClusterSpec::default()
    };
    LocalCluster::start(spec).unwrap_or_else(|e| panic!("cluster: {e:#}"))
}

/// Waits until `scontrol show node` shows dates for both times.
fn wait_times(c: &LocalCluster, node: &str) -> String {
    wait_until(
        &format!("{node} to show BootTime and SlurmdStartTime"),
        WAIT,
        || {
            let shown = show(c, "node", node);
            let ok = show_field(&shown, "BootTime").is_some_and(is_slurm_date)
                && show_field(&shown, "SlurmdStartTime").is_some_and(is_slurm_date);
            ok.then_some(shown)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", show(c, "node", node), c.logs()))
}

#[test]
fn node_times_gres_displays_and_requeue_priority() {
    let started = unix_now();
    let mut c = start();

    // ---- BootTime and SlurmdStartTime.
    let n1 = wait_times(&c, "n1");
    let boot = show_field(&n1, "BootTime").unwrap_or_default().to_string();
    let slurmd = show_field(&n1, "SlurmdStartTime")
        .unwrap_or_default()
        .to_string();
    // The host booted before its slurmd started (same format: the text
    // order is the time order).
    assert!(boot < slurmd, "{n1}");
    // Never registered: no times.
    let g1 = show(&c, "node", "g1");
    assert_eq!(show_field(&g1, "BootTime"), Some("None"), "{g1}");
    assert_eq!(show_field(&g1, "SlurmdStartTime"), Some("None"), "{g1}");
    // As numbers: the kernel's boot time, and a start during this test.
    let json = run_ok(&c, "sinfo", &["--json"]);
    let boots = json_numbers::<i64>(&json, "boot_time");
    let starts = json_numbers::<i64>(&json, "slurmd_start_time");
    assert_eq!(boots.len(), 3, "{json}");
    let btime = host_boot_time();
    assert_eq!(
        boots.iter().filter(|b| **b == Some(btime)).count(),
        2,
        "{json}"
    );
    let in_test = |t: &Option<i64>| t.is_some_and(|t| t >= started - 1 && t <= unix_now());
    assert_eq!(starts.iter().filter(|t| in_test(t)).count(), 2, "{json}");

    // ---- A --gres job, pending for g1.
    let gpu = c
        .sbatch(&["--gres=gpu:1", "--wrap", "true"])
        .expect("sbatch --gres");
    let id = gpu.to_string();
    let squeue = run_ok(&c, "squeue", &["-j", &id, "-o", "%i %b"]);
    assert_eq!(squeue, format!("JOBID TRES_PER_NODE\n{id} gres:gpu:1\n"));
    let long = run_ok(&c, "squeue", &["-j", &id, "-O", "jobid,tres-per-node"]);
    let rows: Vec<Vec<&str>> = long
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        vec![vec!["JOBID", "TRES_PER_NODE"], vec![&id, "gres:gpu:1"]],
        "{long}"
    );
    let job = show(&c, "job", &id);
    assert_eq!(show_field(&job, "TresPerNode"), Some("gres:gpu:1"), "{job}");
    assert!(
        job.contains("\n   Power=\n   TresPerNode=gres:gpu:1\n"),
        "{job}"
    );
    let json = run_ok(&c, "squeue", &["-j", &id, "--json"]);
    assert!(json.contains("\"tres_per_node\": \"gres:gpu:1\""), "{json}");
    // A job without --gres: N/A, no TresPerNode line.
    let plain = c.sbatch(&["--wrap", "sleep 300"]).expect("sbatch");
    let row = run_ok(&c, "squeue", &["-h", "-j", &plain.to_string(), "-o", "%b"]);
    assert_eq!(row, "N/A\n");
    assert!(!show(&c, "job", &plain.to_string()).contains("TresPerNode"));
    // Each node's Gres.
    let sinfo = run_ok(&c, "sinfo", &["-N", "-o", "%N %G"]);
    let mut lines: Vec<&str> = sinfo.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        vec!["NODELIST GRES", "g1 gpu:a100:2", "n1 (null)", "n2 (null)"],
        "{sinfo}"
    );

    // ---- Requeue: the priority stays, SubmitTime restarts.
    c.wait_job_state(plain, JobState::Running, WAIT)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs()));
    let before = show(&c, "job", &plain.to_string());
    let priority = show_field(&before, "Priority")
        .unwrap_or_default()
        .to_string();
    let submitted = show_field(&before, "SubmitTime")
        .unwrap_or_default()
        .to_string();
    run_ok(&c, "scontrol", &["requeue", &plain.to_string()]);
    // Back in the queue once its node cleaned up: submitted anew then.
    let after = wait_until("the requeued job to be submitted anew", WAIT, || {
        let shown = show(&c, "job", &plain.to_string());
        show_field(&shown, "SubmitTime")
            .is_some_and(|t| is_slurm_date(t) && t > submitted.as_str())
            .then_some(shown)
    })
    .unwrap_or_else(|e| panic!("{e}\n{before}\n{}", show(&c, "job", &plain.to_string())));
    assert_eq!(show_field(&after, "JobState"), Some("PENDING"), "{after}");
    assert_eq!(show_field(&after, "Restarts"), Some("1"), "{after}");
    assert_eq!(
        show_field(&after, "Priority"),
        Some(priority.as_str()),
        "{after}"
    );
    let resubmitted = show_field(&after, "SubmitTime")
        .unwrap_or_default()
        .to_string();
    let later = c.sbatch(&["--wrap", "true"]).expect("sbatch");
    let rows = run_ok(
        &c,
        "squeue",
        &["-h", "-o", "%i %Q %V", "-j", &format!("{plain},{later}")],
    );
    let prio = |job: u32| -> u64 {
        rows.lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(job.to_string().as_str()))
                    .then(|| w.next().and_then(|p| p.parse().ok()))
                    .flatten()
            })
            .unwrap_or_else(|| panic!("job {job} in {rows}"))
    };
    assert!(prio(later) < prio(plain), "{rows}");
    assert!(rows.contains(&resubmitted), "{rows}");

    // ---- The times come back after a controller restart (first pings).
    c.restart_controller().expect("restart slurmctld");
    let again = wait_times(&c, "n1");
    assert_eq!(
        show_field(&again, "BootTime"),
        Some(boot.as_str()),
        "{again}"
    );
    assert_eq!(
        show_field(&again, "SlurmdStartTime"),
        Some(slurmd.as_str()),
        "{again}"
    );
    run_ok(
        &c,
        "scancel",
        &[&id, &plain.to_string(), &later.to_string()],
    );

    // ---- SIGUSR2 has slurmd reopen its log, as logrotate expects: the
    // line saying so goes to the file in use, the reopen makes a fresh one
    // at the name, and what follows goes there (a second signal shows it).
    let log = c.dir().log_dir().join("slurmd.n1.log");
    let rotated = c.dir().log_dir().join("slurmd.n1.log.1");
    std::fs::rename(&log, &rotated).expect("rotate the log");
    let pid =
        std::fs::read_to_string(c.dir().run_dir().join("slurmd.n1.pid")).expect("slurmd pid file");
    let usr2 = || {
        let kill = std::process::Command::new("kill")
            .args(["-USR2", pid.trim()])
            .output()
            .expect("kill");
        assert!(kill.status.success(), "{}", text(&kill));
    };
    const ROTATE: &str = "Logrotate signal (SIGUSR2) received";
    let count = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .map(|t| t.matches(ROTATE).count())
            .unwrap_or(0)
    };
    usr2();
    wait_until("the rotated log to have the signal's line", WAIT, || {
        (count(&rotated) == 1 && log.exists()).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    usr2();
    wait_until("slurmd to log to the fresh file", WAIT, || {
        (count(&log) == 1).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    assert_eq!(count(&rotated), 1);
    c.stop().expect("stop");
}
