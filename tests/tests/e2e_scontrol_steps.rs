//! `scontrol`'s step commands and `show slurmd` end to end, with the real
//! daemons and a batch job running: `show step`, `listpids`, `pidinfo`,
//! `wait_job` and `notify` for the running job and for an id nobody has,
//! and `show slurmd` before, during and after the job, on the node this
//! host is and on the one `SLURMD_NODENAME` names. The expected texts are
//! Slurm 22.05's. Needs the workspace binaries
//! (`cargo build --workspace --bins`).

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster, output_text, text, work_dir};
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

/// An id no job of the test cluster has.
const UNKNOWN: &str = "99999";

/// Runs scontrol in `dir` with `env` added (and no `SLURMD_NODENAME` from
/// the test's own environment).
fn scontrol(c: &LocalCluster, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = c
        .command("scontrol")
        .unwrap_or_else(|e| panic!("scontrol: {e:#}"));
    cmd.env_remove("SLURMD_NODENAME")
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied());
    cmd.output()
        .unwrap_or_else(|e| panic!("scontrol {args:?}: {e}"))
}

/// `show slurmd` as `KEY -> VALUE`, asserting it succeeded with nothing
/// on standard error.
fn slurmd_status(c: &LocalCluster, dir: &Path, env: &[(&str, &str)]) -> Vec<(String, String)> {
    let o = scontrol(c, dir, env, &["show", "slurmd"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(o.stderr.is_empty(), "{}", output_text(&o));
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 15, "{out}");
    out.lines()
        .map(|l| {
            let (k, v) = l
                .split_once(" = ")
                .unwrap_or_else(|| panic!("no ` = ` in {l:?}"));
            assert_eq!(k.len(), 24, "{l:?}");
            (k.trim_end().to_string(), v.to_string())
        })
        .collect()
}

fn value<'a>(status: &'a [(String, String)], key: &str) -> &'a str {
    status
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in {status:?}"))
}

#[test]
fn step_commands_and_show_slurmd_with_a_running_batch_job() {
    let mut c = cluster(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let dir = work_dir(&c);
    c.wait_nodes_idle(WAIT).expect("nodes idle");

    // Nothing runs yet.
    let idle = slurmd_status(&c, &dir, &[]);
    assert_eq!(value(&idle, "Active Steps"), "NONE");
    assert_eq!(value(&idle, "Hostname"), "n1");
    assert_eq!(value(&idle, "Version"), "22.05.8");
    assert_eq!(value(&idle, "Actual Boards"), "1");
    assert!(value(&idle, "Actual real memory").ends_with(" MB"));
    let pid: u32 = value(&idle, "Slurmd PID").parse().expect("Slurmd PID");
    assert!(Path::new(&format!("/proc/{pid}")).exists(), "slurmd {pid}");
    assert!(
        value(&idle, "Slurmd Logfile").ends_with("n1.log"),
        "{idle:?}"
    );

    // The script says who it is, then waits to be cancelled.
    let pid_file = dir.join("script.pid");
    std::fs::write(
        dir.join("job.sh"),
        format!(
            "#!/bin/sh\necho $$ > {}.tmp\nmv {0}.tmp {0}\nsleep 300\n",
            pid_file.display()
        ),
    )
    .expect("write job.sh");
    let id = c.sbatch_in(&dir, &["-w", "n1", "job.sh"]).expect("sbatch");
    let ids = id.to_string();
    c.wait_job_state(id, JobState::Running, WAIT)
        .expect("job running");
    let script_pid: u32 = wait_until("the script's pid", WAIT, || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    })
    .expect("script pid");

    // show step: the running job's batch step; an unknown id is refused.
    let o = scontrol(&c, &dir, &[], &["show", "step", &ids]);
    assert!(o.status.success(), "{}", output_text(&o));
    let step = text(&o.stdout);
    assert!(
        step.starts_with(&format!("StepId={id}.batch UserId=")),
        "{step}"
    );
    assert!(
        step.contains("\n   State=RUNNING Partition=debug NodeList=n1\n"),
        "{step}"
    );
    let o = scontrol(&c, &dir, &[], &["-o", "show", "step"]);
    assert_eq!(text(&o.stdout).lines().count(), 1, "{}", output_text(&o));
    let o = scontrol(&c, &dir, &[], &["show", "step", UNKNOWN]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "slurm_get_job_steps error: Invalid job id specified\n"
    );

    // listpids: the script first, on this host's node.
    let o = scontrol(&c, &dir, &[], &["listpids", &ids]);
    assert!(o.status.success(), "{}", output_text(&o));
    let listing = text(&o.stdout);
    let mut rows = listing.lines();
    assert_eq!(
        rows.next(),
        Some("PID      JOBID    STEPID   LOCALID GLOBALID")
    );
    assert_eq!(
        rows.next().map(str::to_string),
        Some(format!("{script_pid:<8} {id:<8} batch    0       0       "))
    );
    let o = scontrol(&c, &dir, &[], &["listpids", UNKNOWN]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        format!("There are no steps for job {UNKNOWN} on node (null).\n")
    );
    // The other node runs nothing.
    let o = scontrol(&c, &dir, &[], &["listpids", "*", "n2"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert_eq!(text(&o.stderr), "No job steps exist on this node.\n");

    // pidinfo: the job the script belongs to; a pid of no job.
    let o = scontrol(&c, &dir, &[], &["pidinfo", &script_pid.to_string()]);
    assert!(o.status.success(), "{}", output_text(&o));
    let info = text(&o.stdout);
    assert!(
        info.starts_with(&format!("Slurm JobId={id} ends at ")),
        "{info}"
    );
    assert!(info.contains("\nJob remaining time is "), "{info}");
    let o = scontrol(&c, &dir, &[], &["pidinfo", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), "Failed to locate job for requested pid\n");

    // wait_job and notify.
    let o = scontrol(&c, &dir, &[], &["wait_job", &ids]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(
        text(&o.stderr),
        format!("scontrol: Nodes are ready for job {id}\n")
    );
    let o = scontrol(&c, &dir, &[], &["wait_job", UNKNOWN]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        format!("scontrol: Problem running job {UNKNOWN}\n")
    );
    // Job 0 (or no number) is refused on a line Slurm leaves unended.
    for word in ["0", "abc"] {
        let o = scontrol(&c, &dir, &[], &["wait_job", word]);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(text(&o.stderr), format!("Invalid job_id {word}"));
    }
    let o = scontrol(&c, &dir, &[], &["notify", &ids, "hello", "there"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        output_text(&o)
    );
    let o = scontrol(&c, &dir, &[], &["notify", UNKNOWN, "hello"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "job notify failure: Invalid job id specified\n"
    );

    // show slurmd: the job's batch step shows as the job; the other node's
    // slurmd, named by SLURMD_NODENAME, runs nothing; the word after
    // `slurmd` is ignored.
    let busy = slurmd_status(&c, &dir, &[]);
    assert_eq!(value(&busy, "Active Steps"), ids);
    assert_ne!(value(&busy, "Last slurmctld msg time"), "Unknown");
    let other = slurmd_status(&c, &dir, &[("SLURMD_NODENAME", "n2")]);
    assert_eq!(value(&other, "Hostname"), "n2");
    assert_eq!(value(&other, "Active Steps"), "NONE");
    let o = scontrol(&c, &dir, &[], &["-o", "show", "slurmd", "n2"]);
    assert!(
        text(&o.stdout).starts_with(&format!("Active Steps             = {id}\n")),
        "{}",
        output_text(&o)
    );

    // Once the job is over its step is gone.
    let o = scontrol(&c, &dir, &[], &["-Q", "show", "step", &ids]);
    assert!(o.status.success(), "{}", output_text(&o));
    let cancel = c
        .run("scancel", &[&ids])
        .unwrap_or_else(|e| panic!("scancel: {e:#}"));
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    c.wait_job_finished(id, WAIT).expect("job finished");
    wait_until("the step to leave show slurmd", WAIT, || {
        let status = slurmd_status(&c, &dir, &[]);
        (value(&status, "Active Steps") == "NONE").then_some(())
    })
    .expect("no active steps");
    let o = scontrol(&c, &dir, &[], &["wait_job", &ids]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        format!("scontrol: Job {id} no longer running\n")
    );
}
