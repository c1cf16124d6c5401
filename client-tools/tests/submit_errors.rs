//! The captured real-Slurm cases of `sbatch`, `scancel` and `scontrol`
//! that fail (or finish) before any controller is contacted: each `.cmd`
//! line runs through `bash -c` with our binaries first on `PATH`, in a
//! scratch directory, and standard output, standard error and the exit
//! status must match the reference byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_dir() -> PathBuf {
    match std::env::var_os("SLURM_GOLDEN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/reference/real-slurm/golden"),
    }
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_sbatch"))
        .parent()
        .expect("binary directory")
        .to_path_buf()
}

struct Case {
    command: String,
    exit: i32,
    out: String,
    err: String,
}

fn load(name: &str) -> Case {
    let dir = golden_dir();
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}")));
    let cmd = read("cmd").unwrap_or_else(|e| {
        panic!(
            "reference case {name} in {}: {e} (set SLURM_GOLDEN_DIR)",
            dir.display()
        )
    });
    let mut lines = cmd.lines();
    let command = lines.next().expect("command line").to_owned();
    let exit = lines
        .next()
        .and_then(|l| l.strip_prefix("# exit="))
        .and_then(|n| n.trim().parse().ok())
        .expect("exit line");
    Case {
        command,
        exit,
        out: read("out").unwrap_or_default(),
        err: read("err").unwrap_or_default(),
    }
}

/// Runs `case` in a fresh directory prepared by `setup`, with no Slurm
/// configuration reachable.
fn check(name: &str, setup: impl FnOnce(&Path)) {
    let case = load(name);
    let dir = tempfile::tempdir().expect("scratch dir");
    setup(dir.path());
    let path = format!("{}:/usr/bin:/bin", bin_dir().display());
    let output = Command::new("bash")
        .arg("-c")
        .arg(&case.command)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", path)
        .env("SLURM_CONF", dir.path().join("no-such-slurm.conf"))
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr, case.err,
        "{name}: standard error of `{}`",
        case.command
    );
    assert_eq!(
        stdout, case.out,
        "{name}: standard output of `{}`",
        case.command
    );
    assert_eq!(output.status.code(), Some(case.exit), "{name}: exit status");
}

#[test]
fn sbatch_bad_option() {
    check("err_sbatch_bad_option", |_| {});
}

#[test]
fn sbatch_missing_script() {
    check("err_sbatch_missing_script", |_| {});
}

#[test]
fn sbatch_empty_stdin() {
    check("err_sbatch_no_script", |_| {});
}

#[test]
fn sbatch_no_shebang() {
    check("err_sbatch_no_shebang", |dir| {
        std::fs::write(dir.join("noshebang.sh"), "echo no interpreter line\n").expect("script");
    });
}

#[test]
fn sbatch_invalid_time() {
    check("err_sbatch_time_abc", |_| {});
}

#[test]
fn sbatch_version() {
    check("sbatch_version", |_| {});
}

#[test]
fn scancel_bad_id() {
    check("err_scancel_bad_id", |_| {});
}

#[test]
fn scontrol_version() {
    check("scontrol_version", |_| {});
}

/// Without a configuration file, commands that need the controller say
/// which file they looked for.
#[test]
fn missing_configuration_is_named() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let conf = dir.path().join("no-such-slurm.conf");
    for (bin, args) in [
        (env!("CARGO_BIN_EXE_sbatch"), vec!["--wrap=true"]),
        (env!("CARGO_BIN_EXE_scancel"), vec!["12"]),
        (env!("CARGO_BIN_EXE_scontrol"), vec!["ping"]),
    ] {
        let output = Command::new(bin)
            .args(&args)
            .current_dir(dir.path())
            .env("SLURM_CONF", &conf)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{bin}: {stderr}");
        assert!(
            stderr.contains(&conf.display().to_string()) && stderr.contains(": error: "),
            "{bin}: {stderr}"
        );
        assert!(output.stdout.is_empty());
    }
}

/// Options in `#SBATCH` lines are checked like command-line ones, before
/// any configuration is read.
#[test]
fn directive_errors_stop_before_submission() {
    let dir = tempfile::tempdir().expect("scratch dir");
    std::fs::write(
        dir.path().join("job.sh"),
        "#!/bin/sh\n#SBATCH --time=abc\ntrue\n",
    )
    .expect("script");
    let output = Command::new(env!("CARGO_BIN_EXE_sbatch"))
        .arg("job.sh")
        .current_dir(dir.path())
        .env("SLURM_CONF", dir.path().join("none.conf"))
        .env_remove("SBATCH_TIMELIMIT")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(255));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "sbatch: error: Invalid --time specification\n"
    );
}
