//! Job arrays end to end, through the real commands: `sbatch --array`
//! runs every task with Slurm's job ids, `SLURM_ARRAY_*` variables and
//! `slurm-%A_%a.out` files (compared with the reference captures), `%N`
//! keeps tasks back with `JobArrayTaskLimit`, a job that depends on the
//! array waits for all of it, one task is cancelled alone, an array past
//! MaxArraySize is refused as Slurm refuses it, and a half-started array
//! survives a controller restart.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::e2e::{cluster, run, run_ok, text, wait_array_rows, work_dir};
use slurm_testkit::golden::{env_map, golden_dir, golden_exit, golden_out};
use slurm_testkit::{wait_until, ClusterSpec, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

fn wait_rows(c: &LocalCluster, id: u32, want: &[impl AsRef<str>]) {
    wait_array_rows(c, id, want, JOB_WAIT);
}

/// The array and job id variables of the reference capture `name`.
fn golden_ids(name: &str) -> BTreeMap<String, String> {
    let out = golden_out(name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    env_map(&out)
        .into_iter()
        .filter(|(k, _)| k.starts_with("SLURM_ARRAY_") || k == "SLURM_JOB_ID" || k == "SLURM_JOBID")
        .collect()
}

fn wait_file(c: &LocalCluster, path: &Path, lines: usize) -> String {
    wait_until(
        &format!("{} to have {lines} lines", path.display()),
        JOB_WAIT,
        || {
            let s = std::fs::read_to_string(path).ok()?;
            (s.lines().count() >= lines).then_some(s)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()))
}

#[test]
fn array_tasks_run_with_slurms_ids_environment_and_file_names() {
    let c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    std::fs::write(
        dir.join("arrayjob.sh"),
        "#!/bin/bash\nenv | grep -E '^SLURM_(ARRAY_|JOB_ID=|JOBID=)' | sort\n",
    )
    .expect("script");
    // The reference: `sbatch --array=0-3%2 arrayjob.sh` as job 15; tasks
    // 0-2 ran as jobs 16-18, task 3 as job 15.
    let out = c
        .run_in(&dir, "sbatch", &["--array=0-3%2", "arrayjob.sh"])
        .expect("sbatch");
    assert!(out.status.success(), "{out:?}");
    let id: u32 = text(&out.stdout)
        .trim()
        .strip_prefix("Submitted batch job ")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{out:?}"));
    for task in 0..4u32 {
        let file = dir.join(format!("slurm-{id}_{task}.out"));
        let got = env_map(&wait_file(&c, &file, 8));
        let want = golden_ids(&format!("env_array_task{task}"));
        assert_eq!(want.len(), 8, "reference of task {task}: {want:?}");
        let ref_id = |v: &str| v.parse::<u32>().expect("reference id");
        for (k, v) in &want {
            let expected = match k.as_str() {
                // Ids relative to the array's: 15 -> id, 16 -> id + 1, ...
                "SLURM_ARRAY_JOB_ID" | "SLURM_JOB_ID" | "SLURM_JOBID" => {
                    (ref_id(v) - 15 + id).to_string()
                }
                _ => v.clone(),
            };
            assert_eq!(got.get(k), Some(&expected), "{k} of task {task}: {got:?}");
        }
    }
    wait_rows(
        &c,
        id,
        &[
            &format!("{id}_0 CD None"),
            &format!("{id}_1 CD None"),
            &format!("{id}_2 CD None"),
            &format!("{id}_3 CD None"),
        ],
    );
    let show = run_ok(&c, "scontrol", &["show", "job", &(id + 1).to_string()]);
    assert!(
        show.starts_with(&format!(
            "JobId={} ArrayJobId={id} ArrayTaskId=0 JobName=arrayjob.sh\n",
            id + 1
        )),
        "{show}"
    );
}

#[test]
fn a_throttle_keeps_tasks_back_and_one_task_can_be_cancelled() {
    let c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let id = c
        .sbatch_in(&dir, &["--array=0-5%2", "--wrap", "sleep 300"])
        .expect("sbatch");
    wait_rows(
        &c,
        id,
        &[
            &format!("{id}_[2-5%2] PD JobArrayTaskLimit"),
            &format!("{id}_0 R None"),
            &format!("{id}_1 R None"),
        ],
    );
    let meta = run_ok(&c, "scontrol", &["show", "job", &id.to_string()]);
    assert!(
        meta.starts_with(&format!(
            "JobId={id} ArrayJobId={id} ArrayTaskId=2-5%2 ArrayTaskThrottle=2 JobName=wrap\n"
        )),
        "{meta}"
    );
    // A pending task alone, then a running one: the next task takes its
    // place within the limit. The pending task leaves the array without a
    // record, as in Slurm 22.05.
    run_ok(&c, "scancel", &[&format!("{id}_4")]);
    run_ok(&c, "scancel", &[&format!("{id}_0")]);
    wait_rows(
        &c,
        id,
        &[
            &format!("{id}_[3,5%2] PD JobArrayTaskLimit"),
            &format!("{id}_0 CA None"),
            &format!("{id}_1 R None"),
            &format!("{id}_2 R None"),
        ],
    );
    // The array's id cancels every task.
    run_ok(&c, "scancel", &[&id.to_string()]);
    wait_rows(
        &c,
        id,
        &[
            &format!("{id}_[3,5%2] CA JobArrayTaskLimit"),
            &format!("{id}_0 CA None"),
            &format!("{id}_1 CA None"),
            &format!("{id}_2 CA None"),
        ],
    );
}

#[test]
fn an_array_past_max_array_size_is_refused_as_slurm_refuses_it() {
    let c = cluster(ClusterSpec::default());
    let name = "err_sbatch_array_too_big";
    let o = run(&c, "sbatch", &["--array=0-5000", "--wrap=true"]);
    let want_err = std::fs::read_to_string(golden_dir().join(format!("{name}.err")))
        .expect("reference stderr");
    assert_eq!(text(&o.stderr), want_err);
    assert_eq!(o.status.code(), Some(golden_exit(name).expect("exit")));
    assert!(text(&o.stdout).is_empty());
    // Malformed text gets the same answer; nothing was recorded.
    let o = run(&c, "sbatch", &["--array=3-1", "--wrap=true"]);
    assert_eq!(text(&o.stderr), want_err);
    assert_eq!(run_ok(&c, "squeue", &["-h", "-t", "all"]), "");
}

#[test]
fn a_half_started_array_survives_a_controller_restart() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let id = c
        .sbatch_in(&dir, &["--array=1,5,7", "--hold", "--wrap", "sleep 300"])
        .expect("sbatch");
    run_ok(&c, "scontrol", &["release", &format!("{id}_5")]);
    let want = [
        format!("{id}_[1,7] PD JobHeldUser"),
        format!("{id}_5 R None"),
    ];
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    wait_rows(&c, id, &want);
    c.restart_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}"));
    wait_rows(&c, id, &want);
    // The split-off task kept its own id: the next submission comes after it.
    let next = c
        .sbatch_in(&dir, &["--hold", "--wrap", "true"])
        .expect("sbatch");
    assert_eq!(next, id + 2);
    // A job that waits for the whole array.
    let dep = format!("--dependency=afterany:{id}");
    let after = c
        .sbatch_in(&dir, &[dep.as_str(), "--wrap", "true"])
        .expect("dependent sbatch");
    run_ok(&c, "scontrol", &["release", &format!("{id}_[1,7]")]);
    wait_rows(
        &c,
        id,
        &[
            &format!("{id}_1 R None"),
            &format!("{id}_5 R None"),
            &format!("{id}_7 R None"),
        ],
    );
    assert_eq!(c.job_state(after), Some(JobState::Pending));
    run_ok(&c, "scancel", &[&id.to_string()]);
    let state = c
        .wait_job_finished(after, JOB_WAIT)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs()));
    assert_eq!(state, JobState::Completed);
}
