//! `scancel` end to end where it needs a controller that answers job by
//! job: a signal for a pending job is asked again until the job starts
//! (Slurm 22.05 retries for 95 s), steps of a running job are answered as
//! Slurm answers steps that do not exist, and `--sibling` sends nothing.
//! The expected texts and statuses are Slurm 22.05's. Needs the workspace
//! binaries (`cargo build --workspace --bins`).

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use slurm_testkit::e2e::{cluster, output_text, run, run_ok, sbatch_parsable, text, work_dir};
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

/// Writes a line when the batch shell gets SIGUSR1; runs for a minute.
const TRAP: &str = "#!/bin/bash\n\
trap 'echo shell got USR1 >> trapped' USR1\n\
for i in $(seq 1 600); do sleep 0.1; done\n";

fn state(c: &LocalCluster, id: u32) -> String {
    run_ok(
        c,
        "squeue",
        &["-h", "-t", "all", "-j", &id.to_string(), "-o", "%T"],
    )
    .trim()
    .to_owned()
}

fn submit(c: &LocalCluster, dir: &Path, args: &[&str]) -> u32 {
    std::fs::write(dir.join("trap.sh"), TRAP).expect("script");
    let mut all = vec!["-o", "/dev/null"];
    all.extend_from_slice(args);
    all.push("trap.sh");
    sbatch_parsable(c, dir, &[], &all)
}

fn running(c: &LocalCluster, id: u32) {
    wait_until(&format!("job {id} to run"), WAIT, || {
        (state(c, id) == "RUNNING").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
}

/// `scancel -s USR1 -b` for a held job keeps asking; once the job is
/// released and starts, the signal reaches its batch shell and scancel
/// succeeds, having said with -v that it retried.
#[test]
fn a_signal_for_a_pending_job_waits_for_it_to_start() {
    let c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let id = submit(&c, &dir, &["-H"]);
    let mut scancel = c.command("scancel").expect("scancel");
    let mut child = scancel
        .current_dir(&dir)
        .args(["-v", "-b", "-s", "USR1", &id.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scancel starts");
    // scancel's standard error, read on a thread of its own so that a
    // scancel that hangs silently fails the test at the deadline.
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel::<u8>();
    let reader = std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        while let Ok(1) = stderr.read(&mut byte) {
            if tx.send(byte[0]).is_err() {
                break;
            }
        }
    });
    // The first answer is "not now": the retry line says so.
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + WAIT;
    while !text(&seen).contains("retrying\n") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(b) => seen.push(b),
            Err(e) => {
                let _ = child.kill();
                panic!("no retry line from scancel ({e}): {}", text(&seen));
            }
        }
    }
    run_ok(&c, "scontrol", &["release", &id.to_string()]);
    let status = wait_until("scancel to finish", WAIT, || {
        child.try_wait().ok().flatten()
    })
    .unwrap_or_else(|e| {
        let _ = child.kill();
        panic!("{e}\n{}", c.logs())
    });
    reader.join().expect("stderr reader");
    seen.extend(rx.try_iter());
    let said = text(&seen);
    assert!(status.success(), "{status:?}: {said}");
    assert!(
        said.starts_with(&format!(
            "scancel: Signal 10 to job {id}\nscancel: Job is in transitional state, retrying\n"
        )),
        "{said}"
    );
    assert!(!said.contains("error"), "{said}");
    wait_until("the batch shell to trap USR1", WAIT, || {
        std::fs::read_to_string(dir.join("trapped"))
            .ok()
            .filter(|t| t == "shell got USR1\n")
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    assert_eq!(state(&c, id), "RUNNING");
    run_ok(&c, "scancel", &[&id.to_string()]);
}

/// Steps of a running job: a cancel is refused as Slurm refuses a step
/// that does not exist (status 225, also with -Q), a signal passes, and
/// the job keeps running; `--sibling` refuses the job (191) and sends
/// nothing.
#[test]
fn steps_and_siblings_leave_the_job_running() {
    let c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let id = submit(&c, &dir, &[]);
    running(&c, id);
    let step = format!("{id}.0");
    let refused =
        format!("scancel: error: Kill job error on job step id {id}: Invalid job id specified\n");
    for args in [&[step.as_str()][..], &["-Q", &step], &["-b", &step]] {
        let o = run(&c, "scancel", args);
        assert_eq!(o.status.code(), Some(225), "{args:?}: {}", output_text(&o));
        assert_eq!(text(&o.stderr), refused, "{args:?}");
    }
    let o = run(&c, "scancel", &["-v", "-s", "KILL", &step]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(
        text(&o.stderr),
        format!("scancel: Signal 9 to step {step}\n")
    );
    // A number that is no signal reaches nothing; the job and its node
    // carry on (Slurm exits 0).
    let o = run(&c, "scancel", &["-s", "99", &id.to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(state(&c, id), "RUNNING");
    let o = run(&c, "scancel", &["99999.0"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert_eq!(
        text(&o.stderr),
        "scancel: error: Kill job error on job step id 99999.0: Invalid job id specified\n"
    );
    let o = run(&c, "scancel", &["--sibling=x", &id.to_string()]);
    assert_eq!(o.status.code(), Some(191), "{}", output_text(&o));
    assert_eq!(
        text(&o.stderr),
        format!("scancel: error: Kill job error on job id {id}: Not a valid federated job\n")
    );
    assert_eq!(state(&c, id), "RUNNING");
    // The whole job by ID_*, named so with -v.
    let o = run(&c, "scancel", &["-v", &format!("{id}_*")]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(
        text(&o.stderr),
        format!("scancel: Terminating job {id}_*\n")
    );
    wait_until("the job to end", WAIT, || {
        (state(&c, id) != "RUNNING").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
}

/// `scancel -b` with SIGTERM or SIGKILL (the default) cancels the batch
/// shell and, as Slurm 22.05's slurmstepd does, says so in the job's
/// error stream (`*** JOB N ON NODE CANCELLED AT ... ***`); another
/// signal that ends it (SIGHUP) leaves no such line. The job then ends
/// FAILED with JobLaunchFailure and the signal in its ExitCode.
#[test]
fn scancel_b_with_a_terminating_signal_leaves_slurms_line() {
    let c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    for (signal, banner) in [(None, true), (Some("TERM"), true), (Some("HUP"), false)] {
        std::fs::write(dir.join("trap.sh"), TRAP).expect("script");
        let id = sbatch_parsable(&c, &dir, &[], &["-o", "b-%j.out", "trap.sh"]);
        running(&c, id);
        let ids = id.to_string();
        let mut args = vec!["-b"];
        if let Some(s) = signal {
            args.extend(["-s", s]);
        }
        args.push(&ids);
        run_ok(&c, "scancel", &args);
        wait_until(&format!("job {id} to end"), WAIT, || {
            (state(&c, id) == "FAILED").then_some(())
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
        let out = std::fs::read_to_string(dir.join(format!("b-{id}.out"))).unwrap_or_default();
        let said =
            out.contains(&format!("error: *** JOB {id} ON ")) && out.contains(" CANCELLED AT ");
        assert_eq!(said, banner, "{signal:?}: {out:?}");
    }
}
