//! End to end, through the real commands: `sbatch --test-only` names the
//! id the job would get and uses it up; `--gres` is refused as Slurm refuses it when no
//! node has the GRES (or the request is malformed), and a job whose GRES
//! some node has runs only there; `scontrol show partition` shows the
//! partition's TRES as the reference cluster does.

use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster, run, run_ok, text};
use slurm_testkit::golden::golden_out;
use slurm_testkit::{ClusterSpec, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

/// Slurm's line for a `--gres` of a kind slurm.conf's GresTypes lacks, or
/// malformed: sbatch refuses it itself, before submitting.
const INVALID_GRES: &str = "sbatch: error: Invalid generic resource (gres) specification\n";

/// `sbatch` that Slurm refuses: exit 1, nothing on stdout; its stderr.
fn sbatch_refused(c: &LocalCluster, args: &[&str]) -> String {
    let o = run(c, "sbatch", args);
    assert_eq!(o.status.code(), Some(1), "sbatch {args:?}: {o:?}");
    assert_eq!(text(&o.stdout), "", "sbatch {args:?}");
    text(&o.stderr)
}

/// The `TRES=` line of `scontrol show partition <name>`.
fn partition_tres(c: &LocalCluster, name: &str) -> String {
    let show = run_ok(c, "scontrol", &["show", "partition", name]);
    show.lines()
        .map(str::trim)
        .find(|l| l.starts_with("TRES="))
        .unwrap_or_else(|| panic!("no TRES line:\n{show}"))
        .to_string()
}

#[test]
fn test_only_gres_refusals_and_partition_tres() {
    let mut c = cluster(ClusterSpec::default());

    // --test-only names the next id and, as in Slurm 22.05, uses it up.
    let first = c.sbatch(&["--wrap", "sleep 300"]).expect("sbatch");
    let o = run(&c, "sbatch", &["--test-only", "--wrap", "true"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(text(&o.stdout), "");
    let err = text(&o.stderr);
    let prefix = format!("sbatch: Job {} to start at ", first + 1);
    let rest = err
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{err:?} does not start with {prefix:?}"));
    assert!(
        rest.contains(" using 1 processors on nodes n") && rest.ends_with(" in partition debug\n"),
        "{err:?}"
    );
    let next = c.sbatch(&["--wrap", "sleep 300"]).expect("sbatch");
    assert_eq!(next, first + 2);

    // No node has a GPU (and slurm.conf has no GresTypes): refused with
    // Slurm's words and nothing else, as is a malformed request, from the
    // command line or from #SBATCH.
    for gres in ["gpu:1", "gpu", "gpu:a100:2", "gpu:a:b:c", "gpu:1(S:0)"] {
        let err = sbatch_refused(&c, &[&format!("--gres={gres}"), "--wrap", "true"]);
        assert_eq!(err, INVALID_GRES, "--gres={gres}");
    }
    let work = tempfile::tempdir().expect("temp dir");
    let script = work.path().join("gpu.sh");
    std::fs::write(&script, "#!/bin/sh\n#SBATCH --gres=gpu:1\ntrue\n").expect("script");
    let err = sbatch_refused(&c, &[script.to_str().expect("utf-8 path")]);
    assert_eq!(err, INVALID_GRES);
    // --test-only checks the same way.
    let err = sbatch_refused(&c, &["--test-only", "--gres=gpu:1", "--wrap", "true"]);
    assert_eq!(err, INVALID_GRES);
    // None of the refused jobs took an id.
    assert_eq!(c.sbatch(&["--wrap", "true"]).expect("sbatch"), next + 1);

    // Partition TRES as in the reference (scontrol_show_partition):
    // cpu and mem summed over the nodes, node count, billing = CPUs.
    let golden = golden_out("scontrol_show_partition").expect("golden");
    let golden_tres = golden
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("TRES="))
        .expect("golden TRES line")
        .to_string();
    assert_eq!(golden_tres, "TRES=cpu=8,mem=16000M,node=4,billing=8");
    assert_eq!(partition_tres(&c, "debug"), golden_tres);
    // The whole of it is the reference's, byte for byte.
    assert_eq!(run_ok(&c, "scontrol", &["show", "partition"]), golden);
    let one_line = run_ok(&c, "scontrol", &["show", "partition", "-o"]);
    assert_eq!(one_line.lines().count(), 1, "{one_line}");
    assert!(
        one_line
            .split_whitespace()
            .any(|w| w == "TRES=cpu=8,mem=16000M,node=4,billing=8"),
        "{one_line}"
    );
    // Running jobs change nothing: the TRES are the configured ones.
    c.wait_job_state(first, JobState::Running, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(partition_tres(&c, "debug"), golden_tres);
    run_ok(&c, "scancel", &[&first.to_string(), &next.to_string()]);
}

/// A fifth node, `g1`, has two GPUs in slurm.conf but no slurmd: a GPU job
/// is accepted and waits for it, while jobs without GRES run and finish on
/// the four nodes without GPUs.
#[test]
fn a_gres_job_waits_for_a_node_that_has_the_gres() {
    let mut c = cluster(ClusterSpec {
        extra_lines: vec![
            "GresTypes=gpu".to_string(),
            // Nothing listens on the discard port: g1 never registers.
            "NodeName=g1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=9 CPUs=2 \
             RealMemory=4000 Gres=gpu:a100:2 State=UNKNOWN"
                .to_string(),
            "PartitionName=cpu Nodes=n[1-4] MaxTime=INFINITE State=UP".to_string(),
        ],
        ..ClusterSpec::default()
    });
    // g1 is in `debug` (Nodes=ALL): its TRES count it.
    assert_eq!(
        partition_tres(&c, "debug"),
        "TRES=cpu=10,mem=20000M,node=5,billing=10"
    );
    assert_eq!(
        partition_tres(&c, "cpu"),
        "TRES=cpu=8,mem=16000M,node=4,billing=8"
    );

    // Known GRES but more than any node has, or of a type none has, or in a
    // partition without the node: no node configuration satisfies it.
    let unavailable =
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n";
    for args in [
        ["--gres=gpu:3", "-p", "debug"],
        ["--gres=gpu:v100:1", "-p", "debug"],
        ["--gres=gpu:1", "-p", "cpu"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--wrap", "true"]);
        assert_eq!(sbatch_refused(&c, &all), unavailable, "{args:?}");
    }
    // A GRES slurm.conf does not know is invalid.
    assert_eq!(
        sbatch_refused(&c, &["--gres=fpga:1", "--wrap", "true"]),
        INVALID_GRES
    );

    let gpu = c
        .sbatch(&["--gres=gpu:a100:1", "--wrap", "true"])
        .expect("sbatch --gres");
    let plain: Vec<u32> = (0..4)
        .map(|_| c.sbatch(&["--wrap", "true"]).expect("sbatch"))
        .collect();
    for &id in &plain {
        let state = c
            .wait_job_finished(id, JOB_WAIT)
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(state, JobState::Completed, "job {id}");
    }
    // Every scheduling pass that ran those found the GPU job no place.
    assert_eq!(c.job_state(gpu), Some(JobState::Pending));
    let s = run_ok(&c, "squeue", &["-h", "-j", &gpu.to_string(), "-o", "%T %N"]);
    assert_eq!(s.trim_end(), "PENDING");
    let show = run_ok(&c, "scontrol", &["show", "job", &gpu.to_string()]);
    assert!(show.contains("NodeList=(null)"), "{show}");
}
