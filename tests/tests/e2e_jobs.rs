//! Batch jobs end to end: real slurmctld, slurmd, slurmstepd and commands on
//! loopback, one fresh cluster per test. Needs the workspace binaries
//! (`cargo build --workspace --bins`, or `cargo test --workspace`).
//!
//! Slurm time limits are whole minutes, so the TIMEOUT test takes a little
//! over one; the other tests run beside it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::golden::{assert_same, env_map, golden_out, mask_fields, normalize_show_job};
use slurm_testkit::LocalCluster;

const JOB_WAIT: Duration = Duration::from_secs(30);

fn cluster() -> LocalCluster {
    LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster did not start: {e:#}"))
}

fn write_script(dir: &Path, name: &str, body: &str) {
    std::fs::write(dir.join(name), body).expect("write script");
}

fn submit_dir(c: &LocalCluster) -> std::path::PathBuf {
    let d = c.dir().root().join("submit");
    std::fs::create_dir_all(&d).expect("submit dir");
    d
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn finished(c: &mut LocalCluster, id: u32) -> JobState {
    c.wait_job_finished(id, JOB_WAIT)
        .unwrap_or_else(|e| panic!("job {id}: {e:#}"))
}

fn show_job(c: &LocalCluster, id: u32) -> String {
    let o = c
        .run("scontrol", &["show", "job", &id.to_string()])
        .expect("scontrol");
    assert!(o.status.success(), "scontrol show job {id}: {o:?}");
    stdout(&o)
}

#[test]
fn a_script_runs_and_writes_slurm_id_out_in_the_submit_dir() {
    let mut c = cluster();
    let dir = submit_dir(&c);
    write_script(
        &dir,
        "hello.sh",
        "#!/bin/sh\necho \"hello $SLURM_JOB_ID\"\necho to-stderr >&2\n",
    );
    let id = c.sbatch_in(&dir, &["hello.sh"]).expect("sbatch");
    assert_eq!(finished(&mut c, id), JobState::Completed, "{}", c.logs());
    let out = std::fs::read_to_string(dir.join(format!("slurm-{id}.out")))
        .unwrap_or_else(|e| panic!("slurm-{id}.out: {e}\n{}", c.logs()));
    // stderr joins stdout by default.
    assert_eq!(out, format!("hello {id}\nto-stderr\n"));
}

/// Values that differ between the reference run and this one for reasons
/// that are not bugs: ids, pids, host, paths, ports, the submitting user.
fn normalize_env(
    env: &BTreeMap<String, String>,
    id: &str,
    submit_dir: &str,
    conf: &str,
) -> BTreeMap<String, String> {
    env.iter()
        // The reference cluster ran slurmdbd, whose association gave the job
        // its account (root) and QOS (normal). Accounting is not part of
        // these clusters yet, so those two are left out of the comparison.
        .filter(|(k, _)| !matches!(k.as_str(), "SLURM_JOB_ACCOUNT" | "SLURM_JOB_QOS"))
        .map(|(k, v)| {
            let v = match k.as_str() {
                "SLURM_JOBID" | "SLURM_JOB_ID" if v == id => "<id>".to_string(),
                "SLURM_TASK_PID" if v.parse::<u32>().is_ok() => "<pid>".to_string(),
                "SLURM_SUBMIT_DIR" if v == submit_dir => "<submit_dir>".to_string(),
                "SLURM_CONF" if v == conf => "<conf>".to_string(),
                "SLURM_SUBMIT_HOST" if !v.is_empty() => "<host>".to_string(),
                "SLURM_WORKING_CLUSTER" => {
                    // cluster:addr:port:protocol:plugin; the port is ours.
                    let parts: Vec<&str> = v.split(':').collect();
                    if parts.len() == 5 && parts[2].parse::<u16>().is_ok() {
                        format!("{}:{}:<port>:{}:{}", parts[0], parts[1], parts[3], parts[4])
                    } else {
                        v.clone()
                    }
                }
                _ => v.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

#[test]
fn the_job_environment_matches_real_slurm() {
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 {
        // The reference ran as root: uid, gid, user and account would differ.
        eprintln!("skipped: the reference environment was captured as root");
        return;
    }
    let mut c = cluster();
    let dir = submit_dir(&c);
    write_script(
        &dir,
        "envjob.sh",
        "#!/bin/bash\nenv | sort | grep -E '^(SLURM|SBATCH|SRUN|CUDA|TMP|ENVIRONMENT|GPU_DEVICE|ROCR|ZE_AFFINITY|OMPI_MCA)'\n",
    );
    let mut cmd = c.command("sbatch").expect("sbatch");
    let o = cmd
        .current_dir(&dir)
        .env("TMPDIR", "/tmp")
        .arg("envjob.sh")
        .output()
        .expect("run sbatch");
    assert!(o.status.success(), "{o:?}");
    let id = slurm_testkit::local_cluster::parse_submitted(&stdout(&o)).expect("id");
    assert_eq!(finished(&mut c, id), JobState::Completed, "{}", c.logs());
    let got = std::fs::read_to_string(dir.join(format!("slurm-{id}.out"))).expect("output file");
    let got = normalize_env(
        &env_map(&got),
        &id.to_string(),
        &dir.display().to_string(),
        &c.conf_path().display().to_string(),
    );
    let want = normalize_env(
        &env_map(&golden_out("env_plain_job").expect("golden")),
        "14",
        "/tmp/slurm-ref",
        "/etc/slurm/slurm.conf",
    );
    let text = |m: &BTreeMap<String, String>| -> String {
        m.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    };
    assert_same("the job environment", &text(&got), &text(&want));
}

#[test]
fn exit_codes_give_completed_and_failed() {
    let mut c = cluster();
    let ok = c.sbatch(&["--wrap", "true"]).expect("sbatch ok");
    let bad = c.sbatch(&["--wrap", "exit 3"]).expect("sbatch bad");
    assert_eq!(finished(&mut c, ok), JobState::Completed, "{}", c.logs());
    assert_eq!(finished(&mut c, bad), JobState::Failed, "{}", c.logs());
    let s = show_job(&c, ok);
    assert!(s.contains("JobState=COMPLETED Reason=None"), "{s}");
    assert!(s.contains(" ExitCode=0:0\n"), "{s}");
    let s = show_job(&c, bad);
    assert!(s.contains("JobState=FAILED Reason=NonZeroExitCode"), "{s}");
    assert!(s.contains(" ExitCode=3:0\n"), "{s}");
    let o = c
        .run("squeue", &["-t", "all", "-h", "-o", "%i %T"])
        .expect("squeue");
    assert!(o.status.success(), "{o:?}");
    let q = stdout(&o);
    assert!(q.lines().any(|l| l == format!("{ok} COMPLETED")), "{q}");
    assert!(q.lines().any(|l| l == format!("{bad} FAILED")), "{q}");
}

#[test]
fn scancel_of_a_running_job_cancels_it() {
    let mut c = cluster();
    let id = c.sbatch(&["--wrap", "sleep 300"]).expect("sbatch");
    c.wait_job_state(id, JobState::Running, JOB_WAIT)
        .expect("running");
    let o = c.run("scancel", &[&id.to_string()]).expect("scancel");
    assert!(o.status.success(), "{o:?}");
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
    assert_eq!(finished(&mut c, id), JobState::Cancelled, "{}", c.logs());
    let s = show_job(&c, id);
    assert!(s.contains("JobState=CANCELLED"), "{s}");
}

#[test]
fn a_job_over_its_time_limit_gets_sigterm_then_sigkill_and_ends_timeout() {
    let spec = slurm_testkit::ClusterSpec {
        extra_lines: vec!["KillWait=2".to_string()],
        ..Default::default()
    };
    let mut c = LocalCluster::start(spec).unwrap_or_else(|e| panic!("cluster: {e:#}"));
    let dir = submit_dir(&c);
    // The script survives SIGTERM (it records it) so that only SIGKILL,
    // KillWait seconds later, can end it.
    write_script(
        &dir,
        "overtime.sh",
        "#!/bin/sh\n\
         #SBATCH -t 1\n\
         trap 'echo got-TERM' TERM\n\
         echo started\n\
         sleep 600 &\n\
         wait\n\
         while :; do sleep 1; done\n\
         echo never\n",
    );
    let id = c.sbatch_in(&dir, &["overtime.sh"]).expect("sbatch");
    c.wait_job_state(id, JobState::Running, JOB_WAIT)
        .expect("running");
    let started = std::time::Instant::now();
    let state = c
        .wait_job_finished(id, Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("job {id}: {e:#}\n{}", c.logs()));
    let took = started.elapsed();
    assert_eq!(state, JobState::Timeout, "{}", c.logs());
    // Limit one minute (the first seconds may have passed before we saw it
    // running), plus KillWait, plus reporting.
    assert!(
        took >= Duration::from_secs(55) && took <= Duration::from_secs(75),
        "ended {took:?} after it was seen running"
    );
    let out = std::fs::read_to_string(dir.join(format!("slurm-{id}.out"))).expect("output");
    assert!(out.starts_with("started\n"), "{out:?}");
    assert!(
        out.contains("got-TERM"),
        "SIGTERM never reached the script: {out:?}"
    );
    assert!(!out.contains("never"), "{out:?}");
    let s = show_job(&c, id);
    assert!(s.contains("JobState=TIMEOUT Reason=TimeLimit"), "{s}");
    assert!(s.contains(" TimeLimit=00:01:00 "), "{s}");
    let o = c
        .run(
            "squeue",
            &["-t", "all", "-h", "-j", &id.to_string(), "-o", "%i %T"],
        )
        .expect("squeue");
    assert_eq!(stdout(&o), format!("{id} TIMEOUT\n"), "{o:?}");
}

#[test]
fn a_held_job_waits_until_released() {
    let mut c = cluster();
    let id = c
        .sbatch(&["--hold", "-J", "heldjob", "--wrap", "true"])
        .expect("sbatch");
    let o = c
        .run("squeue", &["-h", "-j", &id.to_string(), "-o", "%i %t %r"])
        .expect("squeue");
    assert_eq!(stdout(&o), format!("{id} PD JobHeldUser\n"), "{o:?}");
    assert_eq!(c.job_state(id), Some(JobState::Pending));
    let o = c
        .run("scontrol", &["release", &id.to_string()])
        .expect("release");
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    assert_eq!(finished(&mut c, id), JobState::Completed, "{}", c.logs());

    // scontrol hold on a job waiting for resources: as root, Slurm records
    // an administrator hold (squeue_after_cancel golden: JobHeldAdmin).
    let blocker = c
        .sbatch(&["-N4", "--exclusive", "--wrap", "sleep 300"])
        .expect("sbatch");
    c.wait_job_state(blocker, JobState::Running, JOB_WAIT)
        .expect("blocker running");
    let pending = c.sbatch(&["--wrap", "true"]).expect("sbatch");
    let o = c
        .run("scontrol", &["hold", &pending.to_string()])
        .expect("hold");
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    let o = c
        .run("squeue", &["-h", "-j", &pending.to_string(), "-o", "%t %r"])
        .expect("squeue");
    assert_eq!(stdout(&o), "PD JobHeldAdmin\n", "{o:?}");
    let o = c
        .run("scontrol", &["release", &pending.to_string()])
        .expect("release");
    assert!(o.status.success(), "{o:?}");
    let o = c
        .run("squeue", &["-h", "-j", &pending.to_string(), "-o", "%t %r"])
        .expect("squeue");
    let q = stdout(&o);
    assert!(q == "PD Resources\n" || q == "PD Priority\n", "{q:?}");
}

#[test]
fn sbatch_parsable_prints_only_the_id() {
    let c = cluster();
    let o = c
        .run("sbatch", &["--parsable", "--wrap", "sleep 300"])
        .expect("sbatch");
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    assert!(
        out.ends_with('\n') && out.trim_end().parse::<u32>().is_ok(),
        "{out:?}"
    );
    assert!(o.stderr.is_empty(), "{o:?}");
}

#[test]
fn sbatch_wait_exits_with_the_job_exit_code() {
    let c = cluster();
    let o = c
        .run("sbatch", &["--wait", "--wrap", "exit 7"])
        .expect("sbatch");
    assert_eq!(o.status.code(), Some(7), "{o:?}\n{}", c.logs());
    let out = stdout(&o);
    assert!(
        out.starts_with("Submitted batch job ") && out.ends_with('\n'),
        "{out:?}"
    );
    let o = c
        .run("sbatch", &["--wait", "--wrap", "true"])
        .expect("sbatch");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
}

/// `scontrol show job ID` compared with the captured case `golden`, whose
/// job was `golden_id`: paths and output file names made equal, Account
/// and QOS masked (they come from slurmdbd's association on the
/// reference cluster; accounting is not part of these clusters yet).
fn assert_show_job_as_golden(c: &LocalCluster, dir: &Path, id: u32, golden: &str, golden_id: u32) {
    let got = show_job(c, id)
        .replace(&dir.display().to_string(), "<dir>")
        .replace(&format!("slurm-{id}.out"), "slurm-<id>.out");
    let want = golden_out(golden)
        .expect("golden")
        .replace("/tmp/slurm-ref", "<dir>")
        .replace(&format!("slurm-{golden_id}.out"), "slurm-<id>.out");
    let accounting = ["Account", "QOS"];
    assert_same(
        "scontrol show job",
        &mask_fields(&normalize_show_job(&got), &accounting),
        &mask_fields(&normalize_show_job(&want), &accounting),
    );
}

#[test]
fn scontrol_show_job_of_a_completed_job_matches_real_slurm() {
    let mut c = cluster();
    let dir = submit_dir(&c);
    write_script(&dir, "envjob.sh", "#!/bin/bash\ntrue\n");
    let id = c.sbatch_in(&dir, &["envjob.sh"]).expect("sbatch");
    assert_eq!(finished(&mut c, id), JobState::Completed, "{}", c.logs());
    assert_show_job_as_golden(&c, &dir, id, "scontrol_show_job_completed", 14);
}

#[test]
fn scontrol_show_job_of_a_running_job_matches_real_slurm() {
    let mut c = cluster();
    let dir = submit_dir(&c);
    let id = c.sbatch_in(&dir, &["--wrap", "sleep 60"]).expect("sbatch");
    c.wait_job_state(id, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("job {id}: {e:#}\n{}", c.logs()));
    assert_show_job_as_golden(&c, &dir, id, "scontrol_show_job_running", 2);
    // The per-node allocation lines belong to the details only.
    let o = c
        .run("scontrol", &["-d", "show", "job", &id.to_string()])
        .expect("scontrol -d");
    assert!(stdout(&o).contains("\n     Nodes=n1 "), "{o:?}");
    let o = c.run("scancel", &[&id.to_string()]).expect("scancel");
    assert!(o.status.success(), "{o:?}");
}

#[test]
fn scontrol_show_job_of_a_held_job_matches_real_slurm() {
    let c = cluster();
    let dir = submit_dir(&c);
    let id = c
        .sbatch_in(&dir, &["-J", "heldjob", "--hold", "--wrap", "sleep 300"])
        .expect("sbatch");
    // Slurm counts a held job that asks for no memory as wanting the whole
    // node's (TRES=...,mem=4000M,...): the clusters here have 4000 MB nodes.
    assert_show_job_as_golden(&c, &dir, id, "scontrol_show_job_held", 8);
}

/// `scontrol update JobId=` changes what scontrol then shows (and where
/// the job may run), `TimeLimit+=` / `-=` count from the current limit,
/// and an update the controller does not act on fails with its name.
#[test]
fn scontrol_update_changes_what_a_pending_job_asks_for() {
    let mut c = cluster();
    let id = c
        .sbatch(&["--hold", "-t", "10", "--wrap", "true"])
        .expect("sbatch");
    let job = format!("JobId={id}");
    let o = c
        .run(
            "scontrol",
            &[
                "update",
                &job,
                "TimeLimit+=5",
                "ExcNodeList=n[1-3]",
                "MinMemoryNode=1000",
                "NumTasks=2",
                "Account=physics",
            ],
        )
        .expect("update");
    assert!(o.status.success() && o.stderr.is_empty(), "{o:?}");
    let shown = show_job(&c, id);
    for want in [
        "TimeLimit=00:15:00",
        "ExcNodeList=n[1-3]",
        "MinMemoryNode=1000M",
        "NumTasks=2",
        // Without accounting storage the new account is accepted and not
        // kept, as in Slurm 22.05.
        "Account=(null)",
    ] {
        assert!(shown.contains(want), "{want} in {shown}");
    }
    let o = c
        .run("scontrol", &["update", &job, "TimeLimit-=1:00:00"])
        .expect("update");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o) + &String::from_utf8_lossy(&o.stderr),
        "scontrol: error: TimeLimit decrement larger than current time limit (60 > 15)\n"
    );
    // More memory than any node has is taken, as in Slurm 22.05 (the job
    // would wait with BadConstraints), and can be taken back.
    for mem in ["MinMemoryNode=99999", "MinMemoryNode=1000"] {
        let o = c.run("scontrol", &["update", &job, mem]).expect("update");
        assert!(o.status.success() && o.stderr.is_empty(), "{mem}: {o:?}");
    }
    assert!(show_job(&c, id).contains("MinMemoryNode=1000M"));
    // Released, it runs where the update sent it.
    let o = c
        .run("scontrol", &["release", &id.to_string()])
        .expect("release");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(finished(&mut c, id), JobState::Completed, "{}", c.logs());
    assert!(
        show_job(&c, id).contains("   NodeList=n4\n"),
        "{}",
        show_job(&c, id)
    );

    // Node attributes: in force at once, shown, and checked.
    let o = c
        .run(
            "scontrol",
            &[
                "update",
                "NodeName=n1",
                "Weight=5",
                "Features=fast,ib",
                "ActiveFeatures=ib",
                "Comment=new disks",
            ],
        )
        .expect("update");
    assert!(o.status.success(), "{o:?}");
    let shown = slurm_testkit::e2e::scontrol_show(&c, "node", "n1");
    for want in [
        "   AvailableFeatures=fast,ib\n",
        "   ActiveFeatures=ib\n",
        " Weight=5 ",
        "   Comment=new disks\n",
    ] {
        assert!(shown.contains(want), "{want:?} in {shown}");
    }
    let o = c
        .run("scontrol", &["update", "NodeName=n1", "ActiveFeatures=gpu"])
        .expect("update");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "slurm_update error: Active features not subset of available features\n"
    );
    let o = c
        .run("scontrol", &["update", "NodeName=n1", "Gres=gpu:1"])
        .expect("update");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "slurm_update error: Requested operation not supported on this system\n\
         updating Gres of a node is not supported\n"
    );
}
