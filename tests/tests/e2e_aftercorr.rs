//! `aftercorr` end to end, through the real commands: each task of an
//! array starts as soon as the same task of the array it follows has
//! completed, a task whose counterpart failed waits for ever with
//! `DependencyNeverSatisfied` while the others go on, the tasks still
//! waiting show as one squeue line with `Dependency`, and all of that
//! survives a restart of the controller.
//!
//! The tasks of the first array wait for a file per task (`go_N`) that
//! holds their exit code, so the test decides which ends when and how;
//! the tasks of the second append their task id to `order`.

use std::path::Path;
use std::time::Duration;

use slurm_testkit::e2e::{cluster, run_ok, wait_array_rows, wait_shown, work_dir};
use slurm_testkit::{ClusterSpec, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

fn wait_rows(c: &LocalCluster, id: u32, want: &[impl AsRef<str>]) {
    wait_array_rows(c, id, want, JOB_WAIT);
}

/// Lets task `task` of the first array end with `code`.
fn go(dir: &Path, task: u32, code: u32) {
    std::fs::write(dir.join(format!("go_{task}")), format!("{code}\n")).expect("go file");
}

/// The task ids the second array's tasks wrote, sorted.
fn ran(dir: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(dir.join("order")).unwrap_or_default();
    let mut ids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    ids.sort_unstable();
    ids
}

#[test]
fn each_task_follows_its_counterpart_alone_and_survives_a_restart() {
    let mut c = cluster(ClusterSpec::default());
    let dir = work_dir(&c);
    let first = c
        .sbatch_in(
            &dir,
            &[
                "--array=0-3",
                "--wrap",
                "f=go_$SLURM_ARRAY_TASK_ID; while [ ! -e $f ]; do sleep 0.05; done; exit $(cat $f)",
            ],
        )
        .expect("sbatch first array");
    let running: Vec<String> = (0..4).map(|t| format!("{first}_{t} R None")).collect();
    wait_rows(&c, first, &running);

    let dep = format!("--dependency=aftercorr:{first}");
    let second = c
        .sbatch_in(
            &dir,
            &[
                "--array=0-3",
                &dep,
                "--wrap",
                "echo $SLURM_ARRAY_TASK_ID >> order",
            ],
        )
        .expect("sbatch second array");
    wait_rows(&c, second, &[format!("{second}_[0-3] PD Dependency")]);
    let waiting = format!("Dependency=aftercorr:{first}(unfulfilled)\n");
    wait_shown(&c, "job", &second.to_string(), &waiting, JOB_WAIT);

    // Task 2 completes: task 2 of the second array runs, alone.
    go(&dir, 2, 0);
    wait_rows(
        &c,
        second,
        &[
            format!("{second}_[0-1,3] PD Dependency"),
            format!("{second}_2 CD None"),
        ],
    );
    assert_eq!(ran(&dir), vec![2]);
    // The tasks still waiting keep the text Slurm shows.
    wait_shown(&c, "job", &second.to_string(), &waiting, JOB_WAIT);

    // Task 1 fails: task 1 can never run; 0 and 3 still wait.
    go(&dir, 1, 3);
    wait_rows(
        &c,
        second,
        &[
            format!("{second}_[0,3] PD Dependency"),
            format!("{second}_1 PD DependencyNeverSatisfied"),
            format!("{second}_2 CD None"),
        ],
    );
    wait_shown(
        &c,
        "job",
        &format!("{second}_1"),
        &format!(
            "JobState=PENDING Reason=DependencyNeverSatisfied Dependency=aftercorr:{first}(failed)\n"
        ),
        JOB_WAIT,
    );
    // Plain squeue folds the split task back into the array's line, with
    // both reasons.
    let folded = run_ok(
        &c,
        "squeue",
        &[
            "-h",
            "-t",
            "all",
            "-j",
            &second.to_string(),
            "-o",
            "%i %t %r",
        ],
    );
    let mut folded: Vec<&str> = folded.lines().map(str::trim).collect();
    folded.sort_unstable();
    assert_eq!(
        folded,
        vec![
            format!("{second}_2 CD None"),
            format!("{second}_[0-1,3] PD Dependency,DependencyNeverSatisfied"),
        ]
    );

    c.restart_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}"));
    wait_rows(
        &c,
        second,
        &[
            format!("{second}_[0,3] PD Dependency"),
            format!("{second}_1 PD DependencyNeverSatisfied"),
            format!("{second}_2 CD None"),
        ],
    );

    go(&dir, 0, 0);
    go(&dir, 3, 0);
    wait_rows(
        &c,
        second,
        &[
            format!("{second}_0 CD None"),
            format!("{second}_1 PD DependencyNeverSatisfied"),
            format!("{second}_2 CD None"),
            format!("{second}_3 CD None"),
        ],
    );
    assert_eq!(ran(&dir), vec![0, 2, 3]);
    run_ok(&c, "scancel", &[&format!("{second}_1")]);
}
