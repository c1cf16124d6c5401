//! The commands' option reading end to end, through the real binaries:
//! glibc's error texts followed by Slurm's "Try" line and each command's
//! exit status, options that act the moment they are read, the checks of
//! `--iterate`, and `scontrol` reading commands from a pipe. None of these
//! needs a controller.

use std::io::Write;
use std::process::{Command, Stdio};

struct Run {
    out: String,
    err: String,
    code: i32,
}

fn bin(name: &str) -> &'static str {
    match name {
        "sbatch" => env!("CARGO_BIN_EXE_sbatch"),
        "squeue" => env!("CARGO_BIN_EXE_squeue"),
        "sinfo" => env!("CARGO_BIN_EXE_sinfo"),
        "scancel" => env!("CARGO_BIN_EXE_scancel"),
        "scontrol" => env!("CARGO_BIN_EXE_scontrol"),
        other => panic!("no binary {other}"),
    }
}

/// Runs `name` with `args`, `input` on standard input, and no Slurm
/// configuration reachable.
fn run(name: &str, args: &[&str], input: &str) -> Run {
    let dir = tempfile::tempdir().expect("scratch dir");
    let mut child = Command::new(bin(name))
        .args(args)
        .current_dir(dir.path())
        .env("SLURM_CONF", dir.path().join("missing.conf"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write stdin");
    }
    let output = child.wait_with_output().expect("wait");
    Run {
        out: String::from_utf8_lossy(&output.stdout).into_owned(),
        err: String::from_utf8_lossy(&output.stderr).into_owned(),
        code: output.status.code().unwrap_or(-1),
    }
}

/// getopt's refusal: the program as it was called (here by its path),
/// then the pointer to `--help` by its name.
fn try_help(prog: &str, first: &str) -> String {
    format!(
        "{}: {first}\nTry \"{prog} --help\" for more information\n",
        bin(prog)
    )
}

#[test]
fn every_command_refuses_options_as_slurm() {
    // sbatch's option errors exit 255 (see err_sbatch_bad_option); the
    // others exit 1.
    for (prog, code) in [
        ("sbatch", 255),
        ("squeue", 1),
        ("sinfo", 1),
        ("scancel", 1),
        ("scontrol", 1),
    ] {
        let r = run(prog, &["-z"], "");
        assert_eq!(r.err, try_help(prog, "invalid option -- 'z'"), "{prog}");
        assert_eq!((r.out.as_str(), r.code), ("", code), "{prog}");
        let r = run(prog, &["--bogus=1"], "");
        assert_eq!(
            r.err,
            try_help(prog, "unrecognized option '--bogus=1'"),
            "{prog}"
        );
        assert_eq!(r.code, code, "{prog}");
    }
}

#[test]
fn ambiguous_and_missing_values() {
    let r = run("squeue", &["--sta"], "");
    assert_eq!(
        r.err,
        try_help(
            "squeue",
            "option '--sta' is ambiguous; possibilities: '--start' '--states'"
        )
    );
    let r = run("sinfo", &["-S"], "");
    assert_eq!(
        r.err,
        try_help("sinfo", "option requires an argument -- 'S'")
    );
    let r = run("scontrol", &["--clusters"], "");
    assert_eq!(
        r.err,
        try_help("scontrol", "option '--clusters' requires an argument")
    );
    let r = run("scancel", &["--verbose=2"], "");
    assert_eq!(
        r.err,
        try_help("scancel", "option '--verbose' doesn't allow an argument")
    );
    assert_eq!(r.code, 1);
}

#[test]
fn version_acts_before_later_words() {
    for prog in ["squeue", "sinfo", "scancel", "scontrol"] {
        let r = run(prog, &["-V", "--bogus"], "");
        assert_eq!(
            (r.out.as_str(), r.err.as_str(), r.code),
            ("slurm-wlm 22.05.8\n", "", 0),
            "{prog}"
        );
    }
}

#[test]
fn iterate_values_are_checked_first() {
    let r = run("squeue", &["-i", "0"], "");
    assert_eq!(
        (r.err.as_str(), r.code),
        ("squeue: error: --iterate=0\n\n", 1)
    );
    let r = run("squeue", &["--iterate=soon"], "");
    assert_eq!(r.err, "squeue: error: --iterate=soon\n\n");
    let r = run("sinfo", &["-i", "x"], "");
    assert_eq!(
        (r.err.as_str(), r.code),
        ("sinfo: error: Error: invalid entry for --iterate=x\n", 1)
    );
}

#[test]
fn scontrol_reads_commands_from_a_pipe() {
    // No terminal: no prompt, and no newline at the end of input.
    let r = run(
        "scontrol",
        &[],
        "show hostnames n[1-2]\noneliner\nversion\nshow hostlist n3,n1\n",
    );
    assert_eq!(r.out, "n1\nn2\nslurm-wlm 22.05.8\nn[3,1]\n");
    assert_eq!((r.err.as_str(), r.code), ("", 0));
    // A failed line does not end the session, and makes the status 1.
    let r = run(
        "scontrol",
        &["-o"],
        "nonsense\nshow hostnames z1\nquit\nversion\n",
    );
    assert_eq!(r.out, "z1\n");
    assert_eq!((r.err.as_str(), r.code), ("invalid keyword: nonsense\n", 1));
    // `-` is a word like any other, as getopt leaves it.
    let r = run("scontrol", &["-"], "");
    assert_eq!((r.err.as_str(), r.code), ("invalid keyword: -\n", 1));
}
