//! Job dependencies end to end, through the real commands: a chain of
//! `afterok` jobs runs in order, a dependency that can never hold shows
//! `DependencyNeverSatisfied` (or cancels the job under
//! `kill_invalid_depend`), `singleton` runs one job of a name at a time,
//! malformed text is refused as Slurm refuses it, `scontrol update
//! Dependency=` changes or clears one, and a dependency survives a restart
//! of the controller.
//!
//! Ordering is checked through a file each job appends its name to: a job
//! that started too early would write before the one it waits for.

use std::path::Path;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster, run, run_ok, text, work_dir};
use slurm_testkit::golden::{assert_same, golden_out, mask_fields, normalize_show_job};
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

/// Slurm's line for a refused dependency (ESLURM_DEPENDENCY).
const DEPENDENCY_PROBLEM: &str =
    "sbatch: error: Batch job submission failed: Job dependency problem\n";

/// Submits a job in `dir` that appends `name` to `order` there; `extra`
/// are more sbatch options.
fn submit(c: &LocalCluster, dir: &Path, name: &str, extra: &[&str]) -> u32 {
    let wrap = format!("echo {name} >> order");
    let mut args = vec!["-J", name, "--wrap", wrap.as_str()];
    args.extend_from_slice(extra);
    c.sbatch_in(dir, &args)
        .unwrap_or_else(|e| panic!("sbatch {args:?}: {e:#}\n{}", c.logs()))
}

fn show_job(c: &LocalCluster, id: u32) -> String {
    run_ok(c, "scontrol", &["show", "job", &id.to_string()])
}

/// Waits until `scontrol show job id` contains `want`; the record.
fn wait_show(c: &LocalCluster, id: u32, want: &str) -> String {
    let what = format!("job {id} to show {want:?}");
    let mut last = String::new();
    wait_until(&what, JOB_WAIT, || {
        let o = c.run("scontrol", &["show", "job", &id.to_string()]).ok()?;
        last = text(&o.stdout);
        last.contains(want).then(|| last.clone())
    })
    .unwrap_or_else(|e| panic!("{e}: last seen:\n{last}\n{}", c.logs()))
}

/// `scontrol show job` of `id` (named `depjob`, waiting on job `on`, in
/// `dir`) against the reference record `golden` (job 9, waiting on job
/// 2), with what differs by run masked.
fn assert_like_golden(c: &LocalCluster, dir: &Path, id: u32, on: u32, golden: &str) {
    let got = show_job(c, id)
        .replace(&dir.display().to_string(), "<dir>")
        .replace(&format!("slurm-{id}.out"), "slurm-<id>.out")
        .replace(&format!(":{on}("), ":<on>(");
    let want = golden_out(golden)
        .expect("golden")
        .replace("/tmp/slurm-ref", "<dir>")
        .replace("slurm-9.out", "slurm-<id>.out")
        .replace(":2(", ":<on>(");
    // Account and QOS come from slurmdbd on the reference cluster, the
    // user from who ran it. TRES: a pending job's memory is not shown yet
    // (mem=4000M in the reference), which has nothing to do with its
    // dependency.
    let masked = ["Account", "QOS", "UserId", "GroupId", "TRES"];
    assert_same(
        "scontrol show job",
        &mask_fields(&normalize_show_job(&got), &masked),
        &mask_fields(&normalize_show_job(&want), &masked),
    );
}

fn finished(c: &mut LocalCluster, id: u32) -> JobState {
    c.wait_job_finished(id, JOB_WAIT)
        .unwrap_or_else(|e| panic!("job {id}: {e:#}"))
}

fn order(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("order")).unwrap_or_default()
}

#[test]
fn an_afterok_chain_runs_in_order_and_shows_what_it_waits_for() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let a = submit(&c, &dir, "A", &["--hold"]);
    let dep_a = format!("--dependency=afterok:{a}");
    let b = submit(&c, &dir, "B", &[&dep_a]);
    let dep_b = format!("--dependency=afterok:{b}");
    let c_id = submit(&c, &dir, "C", &[&dep_b]);

    let waiting = format!("afterok:{a}(unfulfilled)");
    let show = wait_show(
        &c,
        b,
        &format!("JobState=PENDING Reason=Dependency Dependency={waiting}\n"),
    );
    assert!(show.contains(" EligibleTime=Unknown\n"), "{show}");
    // squeue's %E and -O dependency, and --json, show the same text.
    let b_arg = b.to_string();
    assert_eq!(
        run_ok(&c, "squeue", &["-h", "-j", &b_arg, "-o", "%E|%r"]),
        format!("{waiting}|Dependency\n")
    );
    // -O columns are 20 wide unless told, as in Slurm.
    let col = run_ok(&c, "squeue", &["-h", "-j", &b_arg, "-O", "dependency:40"]);
    assert_eq!(col.trim_end(), waiting, "{col:?}");
    let json = run_ok(&c, "squeue", &["--json", "-j", &b_arg]);
    assert!(json.contains(&waiting), "{json}");
    let golden = c
        .sbatch_in(&dir, &["-J", "depjob", "--wrap", "true", &dep_a])
        .expect("sbatch");
    wait_show(&c, golden, "Reason=Dependency ");
    assert_like_golden(&c, &dir, golden, a, "scontrol_show_job_dependency");
    // A job without one shows (null).
    let a_show = show_job(&c, a);
    assert!(a_show.contains(" Dependency=(null)\n"), "{a_show}");

    run_ok(&c, "scontrol", &["release", &a.to_string()]);
    for id in [a, b, c_id] {
        assert_eq!(finished(&mut c, id), JobState::Completed, "{}", c.logs());
    }
    assert_eq!(order(&dir), "A\nB\nC\n");
    let done = show_job(&c, c_id);
    assert!(done.contains(" Dependency=(null)\n"), "{done}");
}

#[test]
fn a_dependency_on_a_failed_job_never_holds_and_bad_text_is_refused() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let failed = c
        .sbatch_in(&dir, &["--wrap", "exit 3"])
        .expect("sbatch failing job");
    assert_eq!(finished(&mut c, failed), JobState::Failed);

    // afterok on it: pending for ever, as real Slurm shows it.
    let dep = format!("--dependency=afterok:{failed}");
    let never = submit(&c, &dir, "never", &[&dep]);
    wait_show(
        &c,
        never,
        &format!(
            "JobState=PENDING Reason=DependencyNeverSatisfied Dependency=afterok:{failed}(failed)\n"
        ),
    );
    let sq = run_ok(
        &c,
        "squeue",
        &["-h", "-j", &never.to_string(), "-o", "%T %r"],
    );
    assert_eq!(sq, "PENDING DependencyNeverSatisfied\n");
    let golden = c
        .sbatch_in(&dir, &["-J", "depjob", "--wrap", "true", &dep])
        .expect("sbatch");
    wait_show(&c, golden, "Reason=DependencyNeverSatisfied ");
    assert_like_golden(
        &c,
        &dir,
        golden,
        failed,
        "scontrol_show_job_dependency_never",
    );
    // afternotok on it holds at once.
    let dep = format!("--dependency=afternotok:{failed}");
    let then = submit(&c, &dir, "then", &[&dep]);
    assert_eq!(finished(&mut c, then), JobState::Completed, "{}", c.logs());

    // Malformed text, and a job depending on itself: refused.
    for bad in [
        "--dependency=foo",
        "--dependency=afterok:1,,afterok:2",
        "--dependency=after:x",
    ] {
        let o = run(&c, "sbatch", &[bad, "--wrap", "true"]);
        assert_eq!(o.status.code(), Some(1), "{bad}: {o:?}");
        assert_eq!(text(&o.stdout), "", "{bad}");
        assert_eq!(text(&o.stderr), DEPENDENCY_PROBLEM, "{bad}");
    }
    let next = then + 1;
    let o = run(
        &c,
        "sbatch",
        &[&format!("--dependency=afterok:{next}"), "--wrap", "true"],
    );
    assert_eq!(text(&o.stderr), DEPENDENCY_PROBLEM, "{o:?}");
    assert_eq!(o.status.code(), Some(1));

    // A job id that names no job is dropped, as real Slurm does.
    let ghost = c
        .sbatch_in(&dir, &["--dependency=afterok:999999", "--wrap", "true"])
        .expect("sbatch");
    assert_eq!(finished(&mut c, ghost), JobState::Completed, "{}", c.logs());
    assert!(show_job(&c, ghost).contains(" Dependency=(null)\n"));

    run_ok(&c, "scancel", &[&never.to_string(), &golden.to_string()]);
}

#[test]
fn scontrol_update_sets_and_clears_a_dependency() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let held = submit(&c, &dir, "held", &["--hold"]);
    let free = submit(&c, &dir, "free", &["--hold"]);
    let id = free.to_string();

    // Set one on a held job, then release it: it waits.
    let set = format!("Dependency=afterany:{held}");
    run_ok(&c, "scontrol", &["update", &format!("JobId={id}"), &set]);
    run_ok(&c, "scontrol", &["release", &id]);
    wait_show(
        &c,
        free,
        &format!("Reason=Dependency Dependency=afterany:{held}(unfulfilled)\n"),
    );
    // Malformed: refused, nothing changes.
    let o = run(
        &c,
        "scontrol",
        &["update", &format!("JobId={id}"), "Dependency=foo"],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(text(&o.stderr).contains("Job dependency problem"), "{o:?}");
    // Circular: refused.
    let o = run(
        &c,
        "scontrol",
        &[
            "update",
            &format!("JobId={held}"),
            &format!("Dependency=afterok:{free}"),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(show_job(&c, free).contains(&format!("Dependency=afterany:{held}(unfulfilled)")));
    // Cleared: it runs.
    run_ok(
        &c,
        "scontrol",
        &["update", &format!("JobId={id}"), "Dependency="],
    );
    assert_eq!(finished(&mut c, free), JobState::Completed, "{}", c.logs());
    assert_eq!(order(&dir), "free\n");
    run_ok(&c, "scancel", &[&held.to_string()]);
}

#[test]
fn singleton_runs_one_job_of_a_name_at_a_time() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    // The first waits for a file the test creates.
    let first = c
        .sbatch_in(
            &dir,
            &[
                "-J",
                "solo",
                "--wrap",
                "while [ ! -e go ]; do sleep 0.05; done; echo first >> order",
            ],
        )
        .expect("sbatch");
    c.wait_job_state(first, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let second = c
        .sbatch_in(
            &dir,
            &[
                "-J",
                "solo",
                "--dependency=singleton",
                "--wrap",
                "echo second >> order",
            ],
        )
        .expect("sbatch");
    // Another name is not held back.
    let other = submit(&c, &dir, "other", &["--dependency=singleton"]);
    assert_eq!(finished(&mut c, other), JobState::Completed, "{}", c.logs());
    let show = wait_show(
        &c,
        second,
        "Reason=Dependency Dependency=singleton(unfulfilled)\n",
    );
    assert!(show.contains("JobState=PENDING"), "{show}");

    std::fs::write(dir.join("go"), "").expect("go");
    assert_eq!(finished(&mut c, first), JobState::Completed, "{}", c.logs());
    assert_eq!(
        finished(&mut c, second),
        JobState::Completed,
        "{}",
        c.logs()
    );
    assert_eq!(order(&dir), "other\nfirst\nsecond\n");
}

#[test]
fn a_dependency_survives_a_controller_restart() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let a = submit(&c, &dir, "A", &["--hold"]);
    let b = submit(&c, &dir, "B", &[&format!("--dependency=afterok:{a}")]);
    let want = format!("Reason=Dependency Dependency=afterok:{a}(unfulfilled)\n");
    wait_show(&c, b, &want);

    c.restart_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}"));
    let show = wait_show(&c, b, &want);
    assert!(show.contains("JobState=PENDING"), "{show}");

    run_ok(&c, "scontrol", &["release", &a.to_string()]);
    assert_eq!(finished(&mut c, a), JobState::Completed, "{}", c.logs());
    assert_eq!(finished(&mut c, b), JobState::Completed, "{}", c.logs());
    assert_eq!(order(&dir), "A\nB\n");
}

#[test]
fn kill_invalid_depend_cancels_a_job_whose_dependency_cannot_hold() {
    let mut c = cluster(ClusterSpec {
        extra_lines: vec!["SchedulerParameters=kill_invalid_depend".into()],
        ..ClusterSpec::default()
    });
    let dir = work_dir(&c);
    let held = c
        .sbatch_in(&dir, &["--hold", "--wrap", "exit 1"])
        .expect("sbatch");
    let dep = format!("--dependency=afterok:{held}");
    let doomed = submit(&c, &dir, "doomed", &[&dep]);
    // The job's own --kill-on-invalid-dep=no wins over the configuration.
    let kept = submit(&c, &dir, "kept", &[&dep, "--kill-on-invalid-dep=no"]);
    wait_show(&c, doomed, "Reason=Dependency ");

    run_ok(&c, "scontrol", &["release", &held.to_string()]);
    assert_eq!(finished(&mut c, held), JobState::Failed);
    assert_eq!(finished(&mut c, doomed), JobState::Cancelled);
    let show = show_job(&c, doomed);
    assert!(
        show.contains(&format!(
            "JobState=CANCELLED Reason=DependencyNeverSatisfied Dependency=afterok:{held}(failed)\n"
        )),
        "{show}"
    );
    wait_show(
        &c,
        kept,
        "JobState=PENDING Reason=DependencyNeverSatisfied ",
    );
    assert_eq!(order(&dir), "");
    run_ok(&c, "scancel", &[&kept.to_string()]);
}
