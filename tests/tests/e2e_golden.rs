//! Command output of a real cluster compared with real Slurm's captured
//! output (shared/reference/real-slurm/golden), after masking what cannot be
//! equal (ids, times, host names, ports). The test cluster has the
//! reference's shape: n[1-4], 2 CPUs and 4000 MB each, partition debug.

use std::collections::BTreeMap;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::golden::{
    assert_same, golden_command, golden_err, golden_exit, golden_out, mask_squeue_time,
    normalize_show_node, renumber_squeue,
};
use slurm_testkit::LocalCluster;

fn cluster() -> LocalCluster {
    LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster did not start: {e:#}"))
}

fn run_ok(c: &LocalCluster, cmd: &str, args: &[&str], golden: &str) -> String {
    let o = c.run(cmd, args).expect("run");
    assert_eq!(
        o.status.code(),
        Some(golden_exit(golden).expect("golden exit")),
        "{cmd} {args:?}: {o:?}"
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn sinfo_on_an_idle_cluster() {
    let c = cluster();
    assert_same(
        "sinfo",
        &run_ok(&c, "sinfo", &[], "sinfo"),
        &golden_out("sinfo").expect("golden"),
    );
}

#[test]
fn squeue_on_an_empty_queue() {
    let c = cluster();
    assert_same(
        "squeue",
        &run_ok(&c, "squeue", &[], "squeue_empty"),
        &golden_out("squeue_empty").expect("golden"),
    );
}

#[test]
fn scontrol_ping() {
    let c = cluster();
    // The reference controller's host was "vm"; ours is this host, as
    // Slurm names a controller configured as `localhost`.
    let host = slurm_common::host::short_hostname();
    assert_same(
        "scontrol ping",
        &run_ok(&c, "scontrol", &["ping"], "scontrol_ping"),
        &golden_out("scontrol_ping")
            .expect("golden")
            .replace(" at vm ", &format!(" at {host} ")),
    );
}

#[test]
fn scontrol_show_node_on_an_idle_cluster() {
    let c = cluster();
    assert_same(
        "scontrol show node",
        &normalize_show_node(&run_ok(
            &c,
            "scontrol",
            &["show", "node"],
            "scontrol_show_node",
        )),
        &normalize_show_node(&golden_out("scontrol_show_node").expect("golden")),
    );
}

#[test]
fn busy_cluster_outputs_match() {
    let mut c = cluster();
    // The reference's jobs 2-4 (`--wrap="sleep 300"`, running on n1, n1, n2)
    // and 8 (held, named heldjob).
    let mut ids = BTreeMap::new();
    for golden_id in [2, 3, 4] {
        let id = c.sbatch(&["--wrap", "sleep 300"]).expect("sbatch");
        c.wait_job_state(id, JobState::Running, Duration::from_secs(30))
            .expect("running");
        ids.insert(golden_id, id);
    }
    let held = c
        .sbatch(&["-J", "heldjob", "--hold", "--wrap", "sleep 300"])
        .expect("sbatch");
    ids.insert(8, held);

    let want = mask_squeue_time(&renumber_squeue(
        &golden_out("squeue_jobs").expect("golden"),
        &ids,
    ));
    let got = mask_squeue_time(&run_ok(&c, "squeue", &[], "squeue_jobs"));
    assert_same("squeue", &got, &want);
    assert_same(
        "sinfo",
        &run_ok(&c, "sinfo", &[], "sinfo_busy"),
        &golden_out("sinfo_busy").expect("golden"),
    );
}

/// Commands naming a job that does not exist, or a partition, against a
/// queue that is not empty: the same output, errors and exit status as the
/// reference (a job id never lists the whole queue).
#[test]
fn unknown_ids_and_names_answer_as_slurm() {
    let c = cluster();
    let held = c
        .run("sbatch", &["--hold", "--wrap", "true"])
        .expect("sbatch");
    assert!(held.status.success(), "{held:?}");
    for case in [
        "err_scontrol_show_job_999999",
        "err_squeue_j_999999",
        "err_scancel_999999",
        "err_scancel_v_999999",
        "err_sbatch_partition_nope",
    ] {
        let words = golden_command(case).expect("golden command");
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let o = c.run(&words[0], &args).expect("run");
        let what = words.join(" ");
        assert_eq!(
            o.status.code(),
            Some(golden_exit(case).expect("golden exit")),
            "{what}: {o:?}"
        );
        assert_same(
            &format!("{what} (stdout)"),
            &String::from_utf8_lossy(&o.stdout),
            &golden_out(case).unwrap_or_default(),
        );
        assert_same(
            &format!("{what} (stderr)"),
            &String::from_utf8_lossy(&o.stderr),
            &golden_err(case).expect("golden err"),
        );
    }
    // A dependency on a job that does not exist is accepted (and holds at
    // once, as the job is gone).
    let case = "err_sbatch_dependency_999999";
    let words = golden_command(case).expect("golden command");
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let o = c.run(&words[0], &args).expect("run");
    assert_eq!(o.status.code(), Some(golden_exit(case).expect("exit")));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("Submitted batch job "),
        "{o:?}"
    );
}
