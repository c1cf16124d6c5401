//! slurmd's informational command lines, run as a user would.

use std::process::Command;

fn run(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_slurmd"))
        .args(args)
        .output()
        .expect("run slurmd");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn version_matches_the_goldens() {
    assert_eq!(
        run(&["-V"]),
        ("slurm-wlm 22.05.8\n".into(), String::new(), 0)
    );
}

#[test]
fn dash_c_prints_the_hardware_line() {
    let (out, err, code) = run(&["-C"]);
    assert_eq!((err.as_str(), code), ("", 0));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let words: Vec<&str> = lines[0].split(' ').collect();
    let keys: Vec<&str> = words
        .iter()
        .map(|w| w.split('=').next().unwrap_or(""))
        .collect();
    assert_eq!(
        keys,
        [
            "NodeName",
            "CPUs",
            "Boards",
            "SocketsPerBoard",
            "CoresPerSocket",
            "ThreadsPerCore",
            "RealMemory"
        ]
    );
    let up = lines[1].strip_prefix("UpTime=").expect("UpTime line");
    let (days, hms) = up.split_once('-').expect("days-hh:mm:ss");
    assert!(days.parse::<u64>().is_ok() && hms.len() == 8, "{up}");
    let (out, _, _) = run(&["-C", "-N", "n7"]);
    assert!(out.starts_with("NodeName=n7 CPUs="), "{out}");
}

#[test]
fn bad_usage_fails() {
    let (out, err, code) = run(&["-Q"]);
    assert_eq!((out.as_str(), code), ("", 1));
    assert!(err.starts_with("slurmd: invalid option -- 'Q'\n"), "{err}");
    let (_, err, code) = run(&["-D", "-f", "/nonexistent/slurm.conf"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("slurmd: fatal: cannot load /nonexistent/slurm.conf"),
        "{err}"
    );
}
