//! `scontrol` administration end to end, with the real daemons: `write
//! batch_script` gives back a submitted script byte for byte, `setdebug`
//! changes what slurmctld logs while it runs, and `shutdown` stops the
//! controller and every slurmd (or the controller only) while running
//! jobs carry on, as in Slurm. Needs the workspace binaries
//! (`cargo build --workspace --bins`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster, output_text, run, text, work_dir};
use slurm_testkit::process::pids_with_env;
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

/// A script with what a careless copy would change: blanks at line ends,
/// a tab, text that is not ASCII, empty lines at the end.
const SCRIPT: &str = "#!/bin/sh\n#SBATCH --hold\n# a tab\there, blanks after   \n\
                      # non-ASCII: \u{e9}\u{fc}\u{4e2d}\necho done\n\n\n";

fn scontrol_in(c: &LocalCluster, dir: &Path, args: &[&str]) -> Output {
    c.run_in(dir, "scontrol", args)
        .unwrap_or_else(|e| panic!("scontrol {args:?}: {e:#}"))
}

fn config_value(c: &LocalCluster, key: &str) -> String {
    let o = run(c, "scontrol", &["show", "config"]);
    assert!(o.status.success(), "{}", output_text(&o));
    text(&o.stdout)
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no {key} in show config"))
}

#[test]
fn write_batch_script_gives_back_the_script_byte_for_byte() {
    // An Epilog that waits for a word from the test keeps a job
    // COMPLETING for `scontrol completing` to show.
    let gate = tempfile::tempdir().expect("tempdir");
    let go = gate.path().join("go");
    let epilog = gate.path().join("epilog.sh");
    std::fs::write(
        &epilog,
        format!(
            "#!/bin/sh\nwhile [ ! -e {} ]; do sleep 0.05; done\n",
            go.display()
        ),
    )
    .expect("write epilog");
    std::fs::set_permissions(&epilog, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut c = cluster(ClusterSpec {
        extra_lines: vec![format!("Epilog={}", epilog.display())],
        ..ClusterSpec::default()
    });
    let dir = work_dir(&c);
    std::fs::write(dir.join("job.sh"), SCRIPT).expect("write job.sh");
    let id = c.sbatch_in(&dir, &["job.sh"]).expect("sbatch");
    let ids = id.to_string();

    let o = scontrol_in(&c, &dir, &["write", "batch_script", &ids]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(
        text(&o.stdout),
        format!("batch script for job {id} written to slurm-{id}.sh\n")
    );
    assert!(o.stderr.is_empty(), "{}", output_text(&o));
    let written = std::fs::read(dir.join(format!("slurm-{id}.sh"))).expect("slurm-ID.sh");
    assert_eq!(written, SCRIPT.as_bytes());

    let o = scontrol_in(&c, &dir, &["write", "batch", &ids, "copy.sh"]);
    assert_eq!(
        text(&o.stdout),
        format!("batch script for job {id} written to copy.sh\n")
    );
    assert_eq!(
        std::fs::read(dir.join("copy.sh")).expect("copy.sh"),
        SCRIPT.as_bytes()
    );

    // `-` is standard output; -Q keeps the confirmation quiet.
    let o = scontrol_in(&c, &dir, &["write", "batch_script", &ids, "-"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(o.stdout, SCRIPT.as_bytes());
    let o = scontrol_in(&c, &dir, &["-Q", "write", "batch_script", &ids, "quiet.sh"]);
    assert!(
        o.status.success() && o.stdout.is_empty(),
        "{}",
        output_text(&o)
    );
    assert_eq!(
        std::fs::read(dir.join("quiet.sh")).expect("quiet.sh"),
        SCRIPT.as_bytes()
    );

    // An array's script, asked for by the array's id.
    let array = c
        .sbatch_in(&dir, &["--array=1-3", "job.sh"])
        .expect("sbatch --array");
    let o = scontrol_in(
        &c,
        &dir,
        &["write", "batch_script", &array.to_string(), "-"],
    );
    assert_eq!(o.stdout, SCRIPT.as_bytes(), "{}", output_text(&o));

    // An unknown job: Slurm's line, its status 0, and no file left behind.
    let o = scontrol_in(&c, &dir, &["write", "batch_script", "999999"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(
        text(&o.stderr),
        "job script retrieval failed: Invalid job id specified\n"
    );
    assert!(o.stdout.is_empty());
    assert!(!dir.join("slurm-999999.sh").exists());

    // Nothing is completing yet.
    let o = scontrol_in(&c, &dir, &["completing"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        output_text(&o)
    );

    // A job whose Epilog has not ended: one line, every field followed by
    // a blank, its node still completing.
    let done = c.sbatch_in(&dir, &["--wrap", "true"]).expect("sbatch");
    let line = wait_until("the job to show as completing", WAIT, || {
        let o = scontrol_in(&c, &dir, &["completing"]);
        let out = text(&o.stdout);
        (!out.is_empty()).then_some(out)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    assert!(
        line.starts_with(&format!("JobId={done} EndTime=20")),
        "{line:?}"
    );
    assert!(line.contains(" CompletingTime=00:00:"), "{line:?}");
    assert!(line.ends_with(" Nodes(COMPLETING)=n1 \n"), "{line:?}");
    assert_eq!(line.lines().count(), 1, "{line:?}");
    std::fs::write(&go, "").expect("open the gate");
    c.wait_job_finished(done, WAIT)
        .unwrap_or_else(|e| panic!("job {done}: {e:#}"));
    let o = scontrol_in(&c, &dir, &["completing"]);
    assert!(o.stdout.is_empty(), "{}", output_text(&o));
}

/// What slurmctld wrote to its log so far (it runs in the foreground, so
/// its standard error).
fn controller_log(c: &LocalCluster) -> String {
    let path = c.dir().log_dir().join("slurmctld.out");
    String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned()
}

/// Runs a short job to its end: the controller talks to the node on the
/// way (the launch, the clean-up), which it logs at debug level.
fn run_a_job(c: &mut LocalCluster) {
    let id = c.sbatch(&["--wrap", "true"]).expect("sbatch");
    let state = c
        .wait_job_finished(id, WAIT)
        .unwrap_or_else(|e| panic!("job {id}: {e:#}"));
    assert_eq!(state, JobState::Completed, "{}", c.logs());
}

#[test]
fn setdebug_changes_what_the_controller_logs() {
    let mut c = cluster(ClusterSpec::default());
    // Started at SlurmctldDebug's default, info: no debug lines.
    run_a_job(&mut c);
    assert!(
        !controller_log(&c).contains("DEBUG"),
        "{}",
        controller_log(&c)
    );
    assert_eq!(config_value(&c, "SlurmctldDebug"), "info");

    let o = run(&c, "scontrol", &["setdebug", "debug"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        output_text(&o)
    );
    assert!(controller_log(&c).contains("set debug level to 'debug'"));
    assert_eq!(config_value(&c, "SlurmctldDebug"), "debug");
    run_a_job(&mut c);
    wait_until("a debug line in the controller log", WAIT, || {
        controller_log(&c).contains("DEBUG").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", controller_log(&c)));

    // Back to info: the same work logs no debug line any more.
    let o = run(&c, "scontrol", &["setdebug", "3"]);
    assert!(o.status.success(), "{}", output_text(&o));
    let before = controller_log(&c).len();
    run_a_job(&mut c);
    let after = controller_log(&c);
    assert!(!after[before..].contains("DEBUG"), "{}", &after[before..]);
    assert_eq!(config_value(&c, "SlurmctldDebug"), "info");

    // A level Slurm does not know is refused before anything is sent.
    let o = run(&c, "scontrol", &["setdebug", "loud"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), "invalid debug level: loud\n");

    // DebugFlags follow setdebugflags, as `show config` shows them.
    assert_eq!(config_value(&c, "DebugFlags"), "(null)");
    let o = run(&c, "scontrol", &["setdebugflags", "+backfill,Gres"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(config_value(&c, "DebugFlags"), "Backfill,Gres");
    let o = run(&c, "scontrol", &["setdebugflags", "-BACKFILL"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(config_value(&c, "DebugFlags"), "Gres");

    // `write config FILE` saves the running configuration, flags included,
    // as FILE.<time>; the result reads back as a slurm.conf.
    let base = c.dir().root().join("saved.conf");
    let o = run(
        &c,
        "scontrol",
        &["write", "config", &base.to_string_lossy()],
    );
    assert!(o.status.success(), "{}", output_text(&o));
    let said = text(&o.stdout);
    let prefix = format!("Slurm config saved to {}.", base.display());
    let path = said
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix('\n'))
        .map(|time| format!("{}.{time}", base.display()))
        .unwrap_or_else(|| panic!("{said:?}"));
    let saved = std::fs::read_to_string(&path).expect("saved config");
    assert!(saved.contains("\nDebugFlags=Gres\n"), "{saved}");
    assert!(saved.contains("\nClusterName=ref\n"), "{saved}");
    assert!(
        saved.contains("\nPartitionName=debug Default=YES"),
        "{saved}"
    );
    let parsed = slurm_common::conf::SlurmConf::parse(&saved, &path)
        .unwrap_or_else(|e| panic!("{e}\n{saved}"))
        .conf;
    assert_eq!(parsed.nodes.len(), 4);
    assert_eq!(parsed.debug_flags, ["Gres"]);
}

/// The cluster's slurmctld and slurmd processes still alive: found by the
/// `SLURM_CONF` they carry (an exited one, even before it is reaped, shows
/// no environment).
fn daemons(c: &LocalCluster) -> Vec<String> {
    let entry = format!("SLURM_CONF={}", c.conf_path().display());
    let mut names: Vec<String> = pids_with_env(&entry)
        .into_iter()
        .filter_map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            let comm = comm.trim().to_string();
            matches!(comm.as_str(), "slurmctld" | "slurmd").then_some(comm)
        })
        .collect();
    names.sort();
    names
}

/// What every slurmd wrote to its log so far (its log file, and its
/// standard error, where a failure to start would be).
fn slurmd_logs(c: &LocalCluster) -> String {
    let mut all = String::new();
    for node in c.dir().node_names() {
        for ext in ["log", "out"] {
            let path = c.dir().log_dir().join(format!("slurmd.{node}.{ext}"));
            all.push_str(&String::from_utf8_lossy(
                &std::fs::read(&path).unwrap_or_default(),
            ));
        }
    }
    all
}

#[test]
fn shutdown_stops_the_controller_and_every_slurmd_but_not_the_jobs() {
    let mut c = cluster(ClusterSpec::default());
    let job = c.sbatch(&["--wrap", "sleep 300"]).expect("sbatch");
    c.wait_job_state(job, JobState::Running, WAIT)
        .unwrap_or_else(|e| panic!("job {job}: {e:#}"));
    let job_env = format!("SLURM_JOB_ID={job}");
    wait_until("the job's processes", WAIT, || {
        (!pids_with_env(&job_env).is_empty()).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    let mut want = vec!["slurmd".to_string(); 4];
    want.insert(0, "slurmctld".to_string());
    assert_eq!(daemons(&c), want);

    let o = run(&c, "scontrol", &["shutdown"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        output_text(&o)
    );
    wait_until("every daemon to stop", WAIT, || {
        daemons(&c).is_empty().then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: {:?} left\n{}", daemons(&c), c.logs()));
    assert_eq!(
        slurmd_logs(&c)
            .matches("shutdown requested by the controller")
            .count(),
        4,
        "{}",
        c.logs()
    );
    // The job is not the daemons': it runs on.
    assert!(!pids_with_env(&job_env).is_empty(), "{}", c.logs());
}

#[test]
fn shutdown_slurmctld_leaves_the_slurmds_running() {
    let c = cluster(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    assert_eq!(daemons(&c), ["slurmctld", "slurmd", "slurmd"]);
    let o = run(&c, "scontrol", &["shutdown", "slurmctld"]);
    assert!(o.status.success(), "{}", output_text(&o));
    wait_until("slurmctld to stop", WAIT, || {
        (!daemons(&c).iter().any(|d| d == "slurmctld")).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    // The controller was never to tell them, and did not.
    assert_eq!(daemons(&c), ["slurmd", "slurmd"]);
    assert!(
        !slurmd_logs(&c).contains("shutdown requested by the controller"),
        "{}",
        c.logs()
    );
    let o = run(&c, "scontrol", &["ping"]);
    assert!(text(&o.stdout).contains("is DOWN"), "{}", output_text(&o));
}
