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
