//! sbatch against the daemons, where its output was seen to differ from
//! Slurm 22.05's: the refusal of an unknown node name (one line, no
//! detail), `--test-only` refusals (`allocation failure:`), the order of
//! the option sources (`SBATCH_*` over `#SBATCH`), and the variables
//! `--export` adds to the job's environment.

use std::path::PathBuf;
use std::time::Duration;

use slurm_testkit::e2e::{cluster_with as cluster, text};
use slurm_testkit::{wait_until, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(30);

fn submit_dir(c: &LocalCluster) -> PathBuf {
    let d = c.dir().root().join("submit");
    std::fs::create_dir_all(&d).expect("submit dir");
    d
}

/// Runs sbatch with `env` added to its environment: (status, stdout,
/// stderr).
fn sbatch(c: &LocalCluster, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut cmd = c.command("sbatch").expect("sbatch");
    cmd.current_dir(submit_dir(c)).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("sbatch runs");
    (
        o.status.code().unwrap_or(-1),
        text(&o.stdout),
        text(&o.stderr),
    )
}

fn job_id(stdout: &str) -> u32 {
    stdout.trim().parse().expect("--parsable prints the job id")
}

#[test]
fn refusals_print_what_slurm_prints() {
    let c = cluster(&[]);
    for flag in ["-w", "-x"] {
        let got = sbatch(&c, &[], &[flag, "nosuchnode", "--wrap", "true"]);
        assert_eq!(
            got,
            (
                1,
                String::new(),
                "sbatch: error: Batch job submission failed: Invalid node name specified\n"
                    .to_string()
            ),
            "{flag}\n{}",
            c.logs()
        );
    }
    let got = sbatch(&c, &[], &["--test-only", "-p", "nope", "--wrap", "true"]);
    assert_eq!(
        got,
        (
            1,
            String::new(),
            "sbatch: error: invalid partition specified: nope\n\
             allocation failure: Invalid partition name specified\n"
                .to_string()
        )
    );
}

/// `SBATCH_JOB_NAME` beats `#SBATCH -J`; the command line beats both.
/// `--export=NONE` tells the node to load the user's environment.
#[test]
fn environment_beats_directives_and_export_asks_for_the_user_environment() {
    let c = cluster(&[]);
    let dir = submit_dir(&c);
    let script = dir.join("job.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n#SBATCH -J dirname -t 5\nenv > env-$SLURM_JOB_ID.txt\n",
    )
    .expect("script");
    let script = script.to_str().expect("utf-8 path");
    let env = [("SBATCH_JOB_NAME", "envname"), ("SBATCH_TIMELIMIT", "7")];
    let (status, out, err) = sbatch(&c, &env, &["--parsable", "-H", script]);
    assert_eq!(status, 0, "{err}\n{}", c.logs());
    let held = job_id(&out);
    let (status, out, err) = sbatch(&c, &env, &["--parsable", "-H", "-J", "cliname", script]);
    assert_eq!(status, 0, "{err}");
    let named = job_id(&out);
    let show = |id: u32| {
        let o = c
            .run("squeue", &["-h", "-j", &id.to_string(), "-o", "%j %l"])
            .expect("squeue");
        text(&o.stdout).trim().to_string()
    };
    assert_eq!(show(held), "envname 7:00");
    assert_eq!(show(named), "cliname 7:00");

    let (status, out, err) = sbatch(&c, &[], &["--parsable", "--export=NONE", script]);
    assert_eq!(status, 0, "{err}");
    let id = job_id(&out);
    let written = dir.join(format!("env-{id}.txt"));
    let env = wait_until("the job's environment", JOB_WAIT, || {
        std::fs::read_to_string(&written)
            .ok()
            .filter(|t| t.contains("SLURM_JOB_ID="))
    })
    .unwrap_or_else(|e| panic!("{e:?}\n{}", c.logs()));
    assert!(env.lines().any(|l| l == "SLURM_GET_USER_ENV=1"), "{env}");
    assert!(env.lines().any(|l| l == "SLURM_EXPORT_ENV=NONE"), "{env}");
}
