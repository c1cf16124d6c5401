//! Output file names and the job environment, where they were seen to
//! differ from Slurm 22.05's: the pattern is expanded over the whole path
//! (a `%` in the submit directory counts), odd patterns keep what Slurm's
//! scanner keeps, `scontrol show job` leaves `%N` as written, and an
//! `--export-file` replaces the submit environment, `SLURM_JOB_NAME`
//! included.

use std::path::{Path, PathBuf};
use std::time::Duration;

use slurm_testkit::e2e::{cluster_with as cluster, run_ok, sbatch_parsable as submit};
use slurm_testkit::{wait_until, LocalCluster};

const JOB_WAIT: Duration = Duration::from_secs(60);

/// The text of `path` once the job wrote `marker` into it.
fn written(c: &LocalCluster, path: &Path, marker: &str) -> String {
    wait_until(&format!("{}", path.display()), JOB_WAIT, || {
        std::fs::read_to_string(path)
            .ok()
            .filter(|t| t.contains(marker))
    })
    .unwrap_or_else(|e| panic!("{e:?}\n{}", c.logs()))
}

fn make_dir(c: &LocalCluster, name: &str) -> PathBuf {
    let d = c.dir().root().join(name);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

#[test]
fn output_names_expand_as_slurm_expands_them() {
    let c = cluster(&[]);
    // Submitted from `w%%d`: Slurm writes into `w%d`.
    let literal = make_dir(&c, "w%%d");
    let expanded = make_dir(&c, "w%d");
    let id = submit(
        &c,
        &literal,
        &[],
        &["-o", "o-%5q-%2%j-%12j.txt", "--wrap", "echo done"],
    );
    let name = format!("o-5q-2{id}-{id:010}.txt");
    assert_eq!(written(&c, &expanded.join(&name), "done"), "done\n");
    assert!(!literal.join(&name).exists());

    // A backslash turns expansion off and escapes the next character.
    let id2 = submit(
        &c,
        &expanded,
        &[],
        &["-o", "b\\\\x\\q%j", "--wrap", "echo two"],
    );
    assert_eq!(written(&c, &expanded.join("b\\xq%j"), "two"), "two\n");

    // scontrol shows %N as written, even for a job that ran.
    let show = run_ok(&c, "scontrol", &["show", "job", &id2.to_string()]);
    assert!(show.contains("StdOut="), "{show}");
    let id3 = submit(
        &c,
        &expanded,
        &[],
        &["-o", "n-%N-%j.out", "--wrap", "echo three"],
    );
    let show = wait_until("job to end", JOB_WAIT, || {
        let s = run_ok(&c, "scontrol", &["show", "job", &id3.to_string()]);
        s.contains("JobState=COMPLETED").then_some(s)
    })
    .unwrap_or_else(|e| panic!("{e:?}\n{}", c.logs()));
    let want = format!("StdOut={}/n-%N-{id3}.out", expanded.display());
    assert!(show.contains(&want), "{want} not in {show}");
}

#[test]
fn export_file_takes_the_place_of_the_environment() {
    let c = cluster(&[]);
    let dir = make_dir(&c, "exp");
    std::fs::write(dir.join("ef"), b"FOO=fromfile\nBAR=x y\n\0ZZ=1\0").expect("file");
    let env = [("QQQ", "2")];
    let script =
        "/usr/bin/env -0 > env-$SLURM_JOB_ID.tmp; mv env-$SLURM_JOB_ID.tmp env-$SLURM_JOB_ID";
    let vars = |id: u32| -> Vec<String> {
        let path = dir.join(format!("env-{id}"));
        let bytes = wait_until("the job's environment", JOB_WAIT, || {
            std::fs::read(&path).ok()
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", c.logs()));
        bytes
            .split(|b| *b == 0)
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    };
    let id = submit(&c, &dir, &env, &["--export-file=ef", "--wrap", script]);
    let got = vars(id);
    // Newlines do not separate entries: FOO takes the rest of the line.
    assert!(
        got.contains(&"FOO=fromfile\nBAR=x y\n".to_owned()),
        "{got:?}"
    );
    assert!(got.contains(&"ZZ=1".to_owned()), "{got:?}");
    for absent in ["QQQ=", "SLURM_JOB_NAME=", "SLURM_EXPORT_ENV="] {
        assert!(
            !got.iter().any(|v| v.starts_with(absent)),
            "{absent} in {got:?}"
        );
    }

    // Without the file the name comes from sbatch, as submitted: a rename
    // while held does not reach the job.
    let id = submit(&c, &dir, &env, &["-H", "-J", "foo", "--wrap", script]);
    let job = id.to_string();
    run_ok(
        &c,
        "scontrol",
        &["update", &format!("JobId={job}"), "JobName=bar"],
    );
    run_ok(&c, "scontrol", &["release", &job]);
    let got = vars(id);
    assert!(got.contains(&"SLURM_JOB_NAME=foo".to_owned()), "{got:?}");
    assert!(got.contains(&"QQQ=2".to_owned()), "{got:?}");
}
