//! Submission options end to end, through the real daemons and commands:
//! `--signal=B:` reaching the batch shell before the time limit,
//! `--licenses` counted against slurm.conf's Licenses= (and refused when
//! unknown), `--reservation` refused, `--tmp` shown and refused, and
//! `--deadline` shown and ending a pending job that can no longer make it;
//! and `scancel -s` reaching the processes `-b` and `-f` choose.

use std::path::{Path, PathBuf};
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster_with as cluster, run_ok as run, text};
use slurm_testkit::golden::require_field;
use slurm_testkit::{wait_until, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

/// One more node, n5, that no slurmd serves: the only one with TmpDisk
/// (in partition debug, whose Nodes=ALL takes it, and in one of its own).
/// Jobs that need it are accepted and wait.
const TMP_NODE: &[&str] = &[
    "NodeName=n5 NodeHostname=localhost NodeAddr=127.0.0.1 Port=9 CPUs=2 RealMemory=4000 TmpDisk=500 State=UNKNOWN",
    "PartitionName=tmpdisk Nodes=n5 MaxTime=INFINITE State=UP",
];

fn submit_dir(c: &LocalCluster) -> PathBuf {
    let d = c.dir().root().join("submit");
    std::fs::create_dir_all(&d).expect("submit dir");
    d
}

fn sbatch(c: &LocalCluster, dir: &Path, args: &[&str]) -> u32 {
    c.sbatch_in(dir, args)
        .unwrap_or_else(|e| panic!("sbatch {args:?}: {e:#}\n{}", c.logs()))
}

/// An sbatch that must be refused: its exit status and stderr.
fn refused(c: &LocalCluster, args: &[&str]) -> (i32, String) {
    let o = c.run("sbatch", args).expect("sbatch");
    assert!(!o.status.success(), "sbatch {args:?} accepted: {o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    (o.status.code().unwrap_or(-1), text(&o.stderr))
}

fn show_job(c: &LocalCluster, id: u32) -> String {
    run(c, "scontrol", &["show", "job", &id.to_string()])
}

/// squeue's `fmt` column for job `id` (every state).
fn squeue(c: &LocalCluster, id: u32, fmt: &str) -> String {
    run(
        c,
        "squeue",
        &["-h", "-t", "all", "-j", &id.to_string(), "-o", fmt],
    )
    .trim()
    .to_string()
}

fn cancel(c: &LocalCluster, id: u32) {
    run(c, "scancel", &[&id.to_string()]);
}

/// `--signal=B:USR1@50` with a one-minute limit: the batch shell gets USR1
/// about 10 s after the start, its trap runs, and the job goes on.
#[test]
fn a_batch_signal_reaches_the_shell_before_the_time_limit() {
    let mut c = cluster(&[]);
    let dir = submit_dir(&c);
    std::fs::write(
        dir.join("trap.sh"),
        "#!/bin/bash\ntrap 'echo got-usr1' USR1\necho started\nwhile true; do sleep 1; done\n",
    )
    .expect("script");
    let id = sbatch(&c, &dir, &["-t", "1", "--signal=B:USR1@50", "trap.sh"]);
    c.wait_job_state(id, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let out = dir.join(format!("slurm-{id}.out"));
    let seen = wait_until("the trap's line", Duration::from_secs(40), || {
        let text = std::fs::read_to_string(&out).ok()?;
        text.contains("got-usr1").then_some(text)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    assert_eq!(seen.matches("got-usr1").count(), 1, "{seen}");
    assert!(seen.starts_with("started\n"), "{seen}");
    // It survives the signal: the shell trapped it.
    assert_eq!(c.job_state(id), Some(JobState::Running));
    cancel(&c, id);
}

/// `scancel -s` as in Slurm: without `-b` or `-f` a signal is for the
/// job's steps, so a batch job's shell and children get nothing; `-b`
/// signals the batch shell alone; `-f` the shell and its children; and
/// SIGKILL cancels the job.
#[test]
fn scancel_signals_reach_what_batch_and_full_choose() {
    let mut c = cluster(&[]);
    let dir = submit_dir(&c);
    std::fs::write(
        dir.join("sig.sh"),
        "#!/bin/bash
\
         trap 'echo shell-usr1' USR1\ntrap 'echo shell-usr2' USR2\n\
         bash -c 'trap \"echo child-usr1\" USR1; trap \"echo child-usr2\" USR2; \
         echo child-ready; while true; do sleep 0.2; done' &\n\
         while true; do sleep 0.2; done\n",
    )
    .expect("script");
    let id = sbatch(&c, &dir, &["sig.sh"]);
    let out = dir.join(format!("slurm-{id}.out"));
    let wait_out = |what: &str, done: &dyn Fn(&str) -> bool| {
        wait_until(what, JOB_WAIT, || {
            let text = std::fs::read_to_string(&out).ok()?;
            done(&text).then_some(text)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()))
    };
    wait_out("the child's traps", &|t| t.contains("child-ready"));
    let job = id.to_string();
    // For the steps: there are none.
    run(&c, "scancel", &["-s", "USR1", &job]);
    // The batch shell alone.
    run(&c, "scancel", &["-b", "-s", "USR2", &job]);
    wait_out("the shell's USR2 trap", &|t| t.contains("shell-usr2"));
    // Everything.
    run(&c, "scancel", &["--full", "--signal=USR1", &job]);
    let text = wait_out("both USR1 traps", &|t| {
        t.contains("shell-usr1") && t.contains("child-usr1")
    });
    assert_eq!(text.matches("shell-usr1").count(), 1, "{text}");
    assert!(!text.contains("child-usr2"), "{text}");
    assert_eq!(c.job_state(id), Some(JobState::Running));
    run(&c, "scancel", &["-s", "KILL", &job]);
    let state = c
        .wait_job_finished(id, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(state, JobState::Cancelled);
}

/// `scancel -b` without `-s` sends SIGKILL to the batch shell alone, as
/// Slurm's scancel does, instead of cancelling the job: the shell dies of
/// signal 9, so the job ends FAILED with ExitCode=0:9, not CANCELLED.
#[test]
fn scancel_batch_without_a_signal_kills_the_shell_only() {
    let mut c = cluster(&[]);
    let dir = submit_dir(&c);
    let id = sbatch(
        &c,
        &dir,
        &["--wrap", "echo started; sleep 300 & wait; echo after-wait"],
    );
    let out = dir.join(format!("slurm-{id}.out"));
    wait_until("the script to start", JOB_WAIT, || {
        let text = std::fs::read_to_string(&out).ok()?;
        text.contains("started").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    run(&c, "scancel", &["-b", &id.to_string()]);
    let state = c
        .wait_job_finished(id, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(state, JobState::Failed, "{}", c.logs());
    assert_eq!(require_field(&show_job(&c, id), "ExitCode"), "0:9");
    let text = std::fs::read_to_string(&out).expect("output");
    assert!(!text.contains("after-wait"), "{text}");
}

/// `scontrol update PartitionName=debug State=DOWN MaxTime=30`: scontrol
/// and sinfo show it, a job waits with Reason=PartitionDown, the update
/// survives a SIGKILL of the controller, and State=UP lets the job run. A
/// bad value is refused with Slurm's words.
#[test]
fn a_partition_set_down_holds_its_jobs_and_stays_down_after_a_crash() {
    let mut c = cluster(&[]);
    let dir = submit_dir(&c);
    let update = |c: &LocalCluster, args: &[&str]| {
        let mut all = vec!["update", "PartitionName=debug"];
        all.extend_from_slice(args);
        run(c, "scontrol", &all)
    };
    update(&c, &["State=DOWN", "MaxTime=30"]);
    let show = run(&c, "scontrol", &["show", "partition", "debug"]);
    assert!(show.contains(" State=DOWN "), "{show}");
    assert!(show.contains(" MaxTime=00:30:00 "), "{show}");
    assert_eq!(
        run(&c, "sinfo", &["-h", "-o", "%P %a %l"]),
        "debug* down 30:00\n"
    );
    let id = sbatch(&c, &dir, &["--wrap", "true"]);
    wait_until("Reason=PartitionDown", JOB_WAIT, || {
        (squeue(&c, id, "%r") == "PartitionDown").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));

    c.restart_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}"));
    let show = run(&c, "scontrol", &["show", "partition", "debug"]);
    assert!(show.contains(" State=DOWN "), "{show}");
    assert_eq!(c.job_state(id), Some(JobState::Pending));

    let o = c
        .run(
            "scontrol",
            &["update", "PartitionName=debug", "State=sideways"],
        )
        .expect("scontrol");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "scontrol: error: Invalid input: State=sideways\n\
         scontrol: error: Acceptable State values are UP, DOWN, DRAIN and INACTIVE\n\
         slurm_update error: No error\n"
    );
    update(&c, &["State=UP"]);
    let state = c
        .wait_job_finished(id, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(state, JobState::Completed);
}

/// `Licenses=lic:1`: the second of two jobs wanting it waits with
/// Reason=Licenses until the first ends; squeue `%W`, scontrol show job and
/// scontrol show licenses show them. An unknown license is refused with
/// Slurm's words and exit status 1.
#[test]
fn licenses_are_counted_and_unknown_ones_refused() {
    let mut c = cluster(&["Licenses=lic:1,foo:4"]);
    let dir = submit_dir(&c);
    let first = sbatch(&c, &dir, &["-L", "lic:1", "--wrap", "sleep 300"]);
    c.wait_job_state(first, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let second = sbatch(&c, &dir, &["--licenses=lic", "--wrap", "true"]);
    wait_until("Reason=Licenses", JOB_WAIT, || {
        (squeue(&c, second, "%r") == "Licenses").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    assert_eq!(c.job_state(second), Some(JobState::Pending));
    assert_eq!(squeue(&c, first, "%W"), "lic:1");
    assert_eq!(require_field(&show_job(&c, second), "Licenses"), "lic:1");
    assert_eq!(
        run(&c, "scontrol", &["show", "licenses"]),
        "LicenseName=foo\n    Total=4 Used=0 Free=4 Reserved=0 Remote=no\n\
         LicenseName=lic\n    Total=1 Used=1 Free=0 Reserved=0 Remote=no\n"
    );
    assert_eq!(
        run(&c, "scontrol", &["-o", "show", "license", "lic"]),
        "LicenseName=lic Total=1 Used=1 Free=0 Reserved=0 Remote=no\n"
    );

    cancel(&c, first);
    let state = c
        .wait_job_finished(second, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(state, JobState::Completed);

    for bad in ["nope", "lic:2"] {
        let (code, err) = refused(&c, &["-L", bad, "--wrap", "true"]);
        assert_eq!(code, 1);
        assert_eq!(
            err,
            "sbatch: error: Batch job submission failed: Invalid license specification\n"
        );
    }
}

/// No reservation exists: `--reservation` is refused; `--tmp` shows in
/// MinTmpDiskNode= and is refused when no node of the partition has that
/// much TmpDisk.
#[test]
fn reservations_and_tmp_disk() {
    let c = cluster(TMP_NODE);
    let (code, err) = refused(&c, &["--reservation=maint", "--wrap", "true"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "sbatch: error: Batch job submission failed: Requested reservation is invalid\n"
    );

    let dir = submit_dir(&c);
    let id = sbatch(&c, &dir, &["-p", "tmpdisk", "--tmp=100", "--wrap", "true"]);
    let show = show_job(&c, id);
    assert_eq!(require_field(&show, "MinTmpDiskNode"), "100M", "{show}");
    assert_eq!(require_field(&show, "JobState"), "PENDING");
    cancel(&c, id);
    for args in [
        &["--tmp=1G", "--wrap", "true"][..],
        &["-p", "tmpdisk", "--tmp=501", "--wrap", "true"][..],
    ] {
        let (code, err) = refused(&c, args);
        assert_eq!(code, 1);
        // As Slurm 22.05: the reason first, then the refusal.
        assert_eq!(
            err,
            "sbatch: error: Temporary disk specification can not be satisfied\n\
             sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
            "{args:?}"
        );
    }
}

/// `--deadline`: shown as Deadline=; refused when past or when its
/// `--time-min` cannot end by it; a pending job that can no longer end by
/// it ends DEADLINE (squeue `DL`) with Reason=DeadLine.
#[test]
fn a_pending_job_past_its_deadline_ends_deadline() {
    let mut c = cluster(&[]);
    let dir = submit_dir(&c);
    // As Slurm 22.05: a deadline already past, and a --time-min that
    // cannot end by it, are refused; a time limit that runs past it is not.
    let (code, err) = refused(&c, &["--deadline=2020-01-01", "--wrap", "true"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)\n"
    );
    let (code, err) = refused(
        &c,
        &[
            "-t",
            "10",
            "--time-min=5",
            "--deadline=now+60",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "sbatch: error: Batch job submission failed: Invalid time-min specification (exceeds job's time or other limits)\n"
    );

    let hog = sbatch(&c, &dir, &["-N", "4", "--exclusive", "--wrap", "sleep 300"]);
    c.wait_job_state(hog, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    // Needs one minute and has 65 s: it misses once 5 s have passed.
    let id = sbatch(
        &c,
        &dir,
        &["-t", "1", "--deadline=now+65", "--wrap", "true"],
    );
    let show = show_job(&c, id);
    let deadline = require_field(&show, "Deadline");
    assert_ne!(deadline, "N/A", "{show}");
    assert!(
        slurm_common::time::parse_timestamp(&deadline, slurm_common::auth::unix_now()).is_ok(),
        "{show}"
    );
    let state = c
        .wait_job_finished(id, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(state, JobState::Deadline);
    assert_eq!(squeue(&c, id, "%t %r"), "DL DeadLine");
    let show = show_job(&c, id);
    assert_eq!(require_field(&show, "JobState"), "DEADLINE", "{show}");
    assert_eq!(require_field(&show, "Reason"), "DeadLine", "{show}");
    cancel(&c, hog);
}

/// Runs sbatch with a soft stack limit of `stack_kib`, a soft core limit
/// of 0 (what a user's `ulimit -S` would set) and umask 077, and returns
/// the job id.
fn sbatch_with_limits(c: &LocalCluster, dir: &Path, stack_kib: u64, args: &[&str]) -> u32 {
    use std::os::unix::process::CommandExt;
    let mut cmd = c.command("sbatch").expect("sbatch");
    cmd.current_dir(dir).args(args);
    // SAFETY: only setrlimit, which is async-signal-safe, runs in the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(0o077);
            for (resource, soft) in [
                (libc::RLIMIT_STACK, stack_kib * 1024),
                (libc::RLIMIT_CORE, 0),
            ] {
                let mut r = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(resource, &mut r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                r.rlim_cur = soft.min(r.rlim_max);
                if libc::setrlimit(resource, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let o = cmd.output().expect("run sbatch");
    assert!(o.status.success(), "sbatch {args:?}: {o:?}");
    text(&o.stdout)
        .trim()
        .rsplit(' ')
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id: {o:?}"))
}

/// The submit host's soft limits follow the job (PropagateResourceLimits
/// defaults to ALL) through `SLURM_RLIMIT_*` variables that the job itself
/// never sees; `--propagate=NONE` keeps the node's own, and a list takes
/// only what it names.
#[test]
fn submit_host_limits_follow_the_job_as_propagate_says() {
    let mut c = cluster(&[]);
    let dir = submit_dir(&c);
    std::fs::write(
        dir.join("limits.sh"),
        "#!/bin/sh\necho \"stack=$(ulimit -S -s) core=$(ulimit -S -c) vars=$(env | grep -c '^SLURM_RLIMIT_\\|^SLURM_UMASK=') umask=$(umask)\"\n",
    )
    .expect("script");
    let all = sbatch_with_limits(&c, &dir, 3333, &["limits.sh"]);
    let only_stack = sbatch_with_limits(&c, &dir, 3333, &["--propagate=STACK", "limits.sh"]);
    let none = sbatch_with_limits(&c, &dir, 3333, &["--propagate=NONE", "limits.sh"]);
    let mut output_of = |id: u32| {
        c.wait_job_state(id, JobState::Completed, JOB_WAIT)
            .unwrap_or_else(|e| panic!("{e:#}"));
        std::fs::read_to_string(dir.join(format!("slurm-{id}.out"))).expect("output")
    };
    assert_eq!(output_of(all), "stack=3333 core=0 vars=0 umask=0077\n");
    // The output file too is made with the submitter's mask.
    let mode = std::fs::metadata(dir.join(format!("slurm-{all}.out")))
        .expect("output")
        .permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );
    let text = output_of(only_stack);
    assert!(text.starts_with("stack=3333 core="), "{text}");
    let text = output_of(none);
    assert!(
        !text.starts_with("stack=3333 ") && text.ends_with(" vars=0 umask=0077\n"),
        "{text}"
    );
}
