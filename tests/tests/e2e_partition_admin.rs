//! `scontrol create|delete PartitionName=` end to end: a partition made at
//! run time takes jobs, shows in sinfo and `scontrol show partition`, and
//! survives a slurmctld killed with SIGKILL (the journal has it); deleting
//! it is refused while a job is in it, and works once the job is gone.
//! Errors are printed as Slurm 22.05's scontrol prints them, exit status 1.

use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster_with, output_text, run, run_ok, scontrol_show};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_created_partition_takes_jobs_survives_a_crash_and_is_deleted_when_empty() {
    let mut c = cluster_with(&["NodeSet=firsts Nodes=n[1-2]"]);

    // Nodes= may name a NodeSet of slurm.conf.
    let out = run_ok(
        &c,
        "scontrol",
        &["create", "PartitionName=new", "Nodes=firsts", "MaxTime=30"],
    );
    assert_eq!(out, "");
    let shown = scontrol_show(&c, "partition", "new");
    assert!(shown.starts_with("PartitionName=new\n"), "{shown}");
    assert!(shown.contains(" MaxTime=00:30:00 "), "{shown}");
    assert!(shown.contains("\n   Nodes=n[1-2]\n"), "{shown}");
    assert!(shown.contains(" TotalNodes=2 "), "{shown}");

    // A name in use, and a node that does not exist.
    let o = run(&c, "scontrol", &["create", "PartitionName=new", "Nodes=n1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        output_text(&o),
        "Error creating the partition: Invalid partition name specified\n"
    );
    let o = run(
        &c,
        "scontrol",
        &["create", "PartitionName=other", "Nodes=zz9"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        output_text(&o).starts_with("Error creating the partition: Invalid node name specified\n"),
        "{}",
        output_text(&o)
    );

    let id = c
        .sbatch(&["-p", "new", "--hold", "--wrap", "true"])
        .expect("sbatch -p new");
    let sinfo = run_ok(&c, "sinfo", &["-h", "-p", "new", "-o", "%P %D"]);
    assert_eq!(sinfo, "new 2\n");
    let part = run_ok(&c, "squeue", &["-h", "-j", &id.to_string(), "-o", "%P"]);
    assert_eq!(part, "new\n");

    // A crash loses nothing: the partition and its job are back.
    c.restart_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}\n{}", c.logs()));
    let shown = scontrol_show(&c, "partition", "new");
    assert!(shown.contains(" MaxTime=00:30:00 "), "{shown}");
    assert!(shown.contains(" TotalNodes=2 "), "{shown}");
    let part = run_ok(&c, "squeue", &["-h", "-j", &id.to_string(), "-o", "%P"]);
    assert_eq!(part, "new\n");

    // In use while the job waits.
    let o = run(&c, "scontrol", &["delete", "PartitionName=new"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        output_text(&o),
        "delete_partition PartitionName=new: Partition is in use\n"
    );
    let o = run(&c, "scontrol", &["delete", "PartitionName=nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        output_text(&o),
        "delete_partition PartitionName=nope: Invalid partition name specified\n"
    );

    run_ok(&c, "scancel", &[&id.to_string()]);
    assert_eq!(
        c.wait_job_finished(id, WAIT)
            .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs())),
        JobState::Cancelled
    );
    assert_eq!(run_ok(&c, "scontrol", &["delete", "PartitionName=new"]), "");
    let o = run(&c, "scontrol", &["show", "partition", "new"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let sinfo = run_ok(&c, "sinfo", &["-h", "-o", "%P"]);
    assert!(!sinfo.contains("new"), "{sinfo}");

    // Gone for good: a second crash does not bring it back.
    c.restart_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}\n{}", c.logs()));
    let o = run(&c, "scontrol", &["show", "partition", "new"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
}

/// `sbatch -p half,debug`: the job waits showing both partitions, is
/// found by `squeue -p` and `scancel -p` on either, and once started shows
/// the one it runs in, after a controller crash too. A name that does not
/// exist anywhere in the list refuses the job.
#[test]
fn a_job_given_several_partitions_runs_in_one_of_them() {
    let mut c = cluster_with(&["PartitionName=half Nodes=n[1-2] MaxTime=30 PriorityTier=2"]);

    let o = run(&c, "sbatch", &["-p", "half,nope", "--wrap", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        output_text(&o),
        "sbatch: error: invalid partition specified: nope\n\
         sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    );

    let held = c
        .sbatch(&["-p", "half,debug", "--hold", "--wrap", "true"])
        .expect("sbatch -p half,debug");
    let held_s = held.to_string();
    let shown = run_ok(&c, "squeue", &["-h", "-j", &held_s, "-o", "%P %T"]);
    assert_eq!(shown, "half,debug PENDING\n");
    assert!(scontrol_show(&c, "job", &held_s).contains(" Partition=half,debug "));
    for part in ["half", "debug"] {
        let listed = run_ok(&c, "squeue", &["-h", "-p", part, "-o", "%i"]);
        assert_eq!(listed, format!("{held}\n"), "squeue -p {part}");
    }
    // -P: one line per partition, sorted by partition name.
    let lines = run_ok(&c, "squeue", &["-h", "-P", "-j", &held_s, "-o", "%P"]);
    assert_eq!(lines, "debug\nhalf\n");

    // Three nodes do not fit "half" (two nodes): it runs in "debug".
    let id = c
        .sbatch(&["-p", "half,debug", "-N", "3", "--wrap", "sleep 300"])
        .expect("sbatch -N 3");
    let id_s = id.to_string();
    let wait_running = |c: &slurm_testkit::LocalCluster| {
        slurm_testkit::wait_until("job running in debug", WAIT, || {
            let o = run_ok(c, "squeue", &["-h", "-j", &id_s, "-o", "%T %P %D"]);
            (o == "RUNNING debug 3\n").then_some(())
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    };
    wait_running(&c);
    c.restart_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}\n{}", c.logs()));
    wait_running(&c);
    assert!(scontrol_show(&c, "job", &id_s).contains(" Partition=debug "));

    // scancel -p half takes the waiting job (listed in half), not the
    // running one (now only in debug).
    run_ok(&c, "scancel", &["-p", "half"]);
    let left = run_ok(&c, "squeue", &["-h", "-o", "%i %T"]);
    assert_eq!(left, format!("{id} RUNNING\n"));
    run_ok(&c, "scancel", &[&id_s]);
}
