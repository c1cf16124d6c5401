//! squeue against a real controller where what it shows depends on how the
//! controller answers: array tasks named with `-j`, ids that find nothing,
//! list filters given with no item, and a sort key squeue does not know.
//! The expected outputs are those of Slurm 22.05 for the same commands.
//! Needs the workspace binaries (`cargo build --workspace --bins`).

use slurm_testkit::LocalCluster;

fn cluster() -> LocalCluster {
    LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster did not start: {e:#}"))
}

/// squeue's standard output, standard error and exit status.
fn squeue(c: &LocalCluster, args: &[&str]) -> (String, String, i32) {
    let o = c.run("squeue", args).expect("squeue runs");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn array_tasks_named_with_j_narrow_the_pending_line() {
    let c = cluster();
    let id = c
        .sbatch(&["-H", "-a", "1-5%2", "--wrap", "true"])
        .expect("sbatch");
    let shown = |ids: &str| squeue(&c, &["-h", "-o", "%i %K", "-j", ids]);
    assert_eq!(
        shown(&format!("{id}_2,{id}_4")),
        (format!("{id}_[2,4] 2,4\n"), String::new(), 0)
    );
    assert_eq!(
        shown(&format!("{id}_3")),
        (format!("{id}_3 3\n"), String::new(), 0)
    );
    assert_eq!(
        shown(&format!("{id},{id}_3")),
        (format!("{id}_[1-5%2] 1-5%2\n"), String::new(), 0)
    );
    // A task the array does not have, or ids of no job: an empty list,
    // not an error (that is for one plain id).
    assert_eq!(shown(&format!("{id}_9")), (String::new(), String::new(), 0));
    assert_eq!(shown("999998,999999"), (String::new(), String::new(), 0));
    let (out, err, code) = shown("999999");
    assert_eq!((out.as_str(), code), ("", 1));
    assert_eq!(err, "slurm_load_jobs error: Invalid job id specified\n");
}

#[test]
fn empty_filters_and_unknown_sort_keys() {
    let c = cluster();
    let id = c.sbatch(&["-H", "--wrap", "true"]).expect("sbatch");
    let all = squeue(&c, &["-h", "-o", "%i"]);
    assert_eq!(all, (format!("{id}\n"), String::new(), 0));
    for args in [["-A", ""], ["-p", ""], ["-n", " "], ["-q", ","]] {
        let mut full = vec!["-h", "-o", "%i"];
        full.extend_from_slice(&args);
        assert_eq!(
            squeue(&c, &full),
            (String::new(), String::new(), 0),
            "{args:?}"
        );
    }
    assert_eq!(
        squeue(&c, &["-S", "x,b", "-o", "%i"]),
        (
            "JOBID\n".to_owned(),
            "squeue: Invalid sort specification: b\n\
             squeue: error: Invalid sort specification: x\n"
                .to_owned(),
            1
        )
    );
}

/// `-s`: a running batch job has one step, `N.batch`, on the job's first
/// node; a pending job has none, and only the selections Slurm applies to
/// steps (here `-j` and `-p`) narrow the list.
#[test]
fn steps_view_lists_the_batch_step_of_running_jobs() {
    let mut c = cluster();
    let running = c.sbatch(&["--wrap", "sleep 300"]).expect("sbatch");
    let held = c.sbatch(&["-H", "--wrap", "true"]).expect("sbatch");
    c.wait_job_state(
        running,
        slurm_proto::v1::JobState::Running,
        std::time::Duration::from_secs(20),
    )
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs()));
    let (job_row, _, _) = squeue(&c, &["-h", "-j", &running.to_string(), "-o", "%P|%u|%N"]);
    let (partition, rest) = job_row.trim_end().split_once('|').expect("job row");
    let (user, nodes) = rest.split_once('|').expect("job row");
    let first = nodes
        .split(['[', ',', '-'])
        .next()
        .expect("a node")
        .to_owned();
    let (out, err, code) = squeue(&c, &["-s", "-o", "%i|%j|%P|%u|%N|%A|%l"]);
    assert_eq!((err.as_str(), code), ("", 0), "{out}");
    assert_eq!(
        out,
        format!(
            "STEPID|NAME|PARTITION|USER|NODELIST|TASKS|TIME_LIMIT\n\
             {running}.batch|batch|{partition}|{user}|{first}|1|UNLIMITED\n"
        )
    );
    let (out, _, _) = squeue(&c, &["-s", "-h", "-O", "StepId:12,StepState"]);
    assert_eq!(
        out,
        format!("{:<12}RUNNING             \n", format!("{running}.batch"))
    );
    for args in [
        vec!["-s", "-h", "-j", &held.to_string()],
        vec!["-s", "-h", "-p", "nope"],
        vec!["-s", "-h", "-s", &format!("{running}.0")],
    ] {
        assert_eq!(
            squeue(&c, &args),
            (String::new(), String::new(), 0),
            "{args:?}"
        );
    }
    // An unknown code is reported as a step format and kept as text.
    assert_eq!(
        squeue(&c, &["-s", "-h", "-o", "%i %C", "-j", &running.to_string()]),
        (
            format!("{running}.batch %C\n"),
            "squeue: error: Invalid job step format specification: C\n".to_owned(),
            0
        )
    );
}
