//! `scontrol show hostnames|hostlist|hostlistsorted` and `--version`,
//! compared byte for byte (stdout, stderr, exit status) with Slurm 22.05.8.
//!
//! Three sources of truth:
//! * the captured reference outputs in `shared/reference/real-slurm/golden`
//!   (every `scontrol_show_host*` and `scontrol_version` case there; the
//!   directory can be moved with `SLURM_GOLDEN_DIR`);
//! * [`VERIFIED`], further cases run through a real `scontrol` 22.05.8;
//! * [`DIFFERENT`], inputs Slurm misreads or crashes on, where this
//!   scontrol deliberately answers otherwise (each says why).

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

struct Case {
    args: &'static [&'static str],
    /// `SLURM_NODELIST` for the run; unset when `None`.
    nodelist: Option<&'static str>,
    stdout: &'static str,
    stderr: &'static str,
    code: i32,
}

struct Outcome {
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

fn scontrol(args: &[String], nodelist: Option<&str>) -> Outcome {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scontrol"));
    // Called as the reference was, by name: getopt's lines start with it.
    cmd.arg0("scontrol")
        .args(args)
        .env_remove("SLURM_NODELIST")
        .env_remove("SLURM_JOB_NODELIST");
    if let Some(list) = nodelist {
        cmd.env("SLURM_NODELIST", list);
    }
    let out = cmd.output().expect("run the scontrol binary");
    Outcome {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

fn check(
    name: &str,
    args: &[String],
    nodelist: Option<&str>,
    stdout: &str,
    stderr: &str,
    code: i32,
) -> Vec<String> {
    let got = scontrol(args, nodelist);
    let mut failures = Vec::new();
    if got.stdout != stdout {
        failures.push(format!(
            "{name} {args:?}: stdout\n  want {stdout:?}\n  got  {:?}",
            got.stdout
        ));
    }
    if got.stderr != stderr {
        failures.push(format!(
            "{name} {args:?}: stderr\n  want {stderr:?}\n  got  {:?}",
            got.stderr
        ));
    }
    if got.code != Some(code) {
        failures.push(format!(
            "{name} {args:?}: exit status want {code}, got {:?}",
            got.code
        ));
    }
    failures
}

fn run_table(table: &[Case]) {
    let mut failures = Vec::new();
    for case in table {
        let args: Vec<String> = case.args.iter().map(|a| a.to_string()).collect();
        failures.extend(check(
            "case",
            &args,
            case.nodelist,
            case.stdout,
            case.stderr,
            case.code,
        ));
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Splits a command line as a POSIX shell would for the simple forms the
/// `.cmd` files use: blanks separate words; single quotes keep everything;
/// double quotes keep everything but `\"`, `\\`, `\$` and `` \` ``; a
/// backslash outside quotes keeps the next character.
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed ' in {line:?}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("unclosed \" in {line:?}")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed \" in {line:?}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(format!("trailing backslash in {line:?}")),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[test]
fn shell_words_handles_quotes() {
    let w = |s: &str| shell_words(s).unwrap();
    assert_eq!(
        w("scontrol show hostnames 'n[1-3], x'"),
        ["scontrol", "show", "hostnames", "n[1-3], x"]
    );
    assert_eq!(
        w(r#"a "b \"c\" \d" e\ f ''"#),
        ["a", "b \"c\" \\d", "e f", ""]
    );
    assert_eq!(w("  a\tb  "), ["a", "b"]);
    assert!(shell_words("a 'b").is_err());
    assert!(shell_words("a \"b").is_err());
}

fn golden_dir() -> PathBuf {
    match std::env::var_os("SLURM_GOLDEN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/reference/real-slurm/golden"),
    }
}

/// Every captured `scontrol show host*` and `scontrol --version` case.
#[test]
fn golden_outputs_match() {
    let dir = golden_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "reference outputs {}: {e} (set SLURM_GOLDEN_DIR)",
            dir.display()
        )
    });
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            (n.starts_with("scontrol_show_host") || n.starts_with("scontrol_version"))
                && n.ends_with(".cmd")
        })
        .collect();
    names.sort();
    assert!(
        names.len() >= 7,
        "expected the scontrol hostlist goldens in {}, found {names:?}",
        dir.display()
    );
    let mut failures = Vec::new();
    for name in &names {
        let cmd = std::fs::read_to_string(dir.join(name)).unwrap();
        let mut lines = cmd.lines();
        let words = shell_words(lines.next().unwrap_or_default()).unwrap();
        let code: i32 = lines
            .next()
            .and_then(|l| l.trim().strip_prefix("# exit="))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{name}: second line must be `# exit=N`"));
        assert_eq!(
            words.first().map(String::as_str),
            Some("scontrol"),
            "{name}"
        );
        let stem = name.trim_end_matches(".cmd");
        let read = |ext: &str| {
            std::fs::read_to_string(dir.join(format!("{stem}.{ext}"))).unwrap_or_default()
        };
        failures.extend(check(
            stem,
            &words[1..],
            None,
            &read("out"),
            &read("err"),
            code,
        ));
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn verified_against_real_scontrol() {
    run_table(VERIFIED);
}

#[test]
fn deliberate_differences() {
    run_table(DIFFERENT);
}

/// `scontrol show hostnames ... | head -1`: the reader goes away, scontrol
/// stops writing and exits 0 without a panic message.
#[test]
fn closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scontrol"))
        .args(["show", "hostnames", "n[0-65535],m[0-65535]"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start scontrol");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    assert_eq!(first, "n0\n");
    // The reader is dropped here; scontrol's next full pipe write fails.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// Inputs Slurm 22.05 misreads, where this scontrol refuses or answers
/// otherwise on purpose (Slurm's answer in each comment).
const DIFFERENT: &[Case] = &[
    // Slurm prints the host `n]`.
    Case {
        args: &["show", "hostnames", "n[1-3"],
        nodelist: None,
        stdout: "",
        stderr: "Invalid hostlist: n[1-3\n",
        code: 0,
    },
    // Slurm prints the host `n1-2]`.
    Case {
        args: &["show", "hostlist", "n1-2]"],
        nodelist: None,
        stdout: "",
        stderr: "Invalid hostlist: n1-2]\n",
        code: 1,
    },
    // Slurm prints n01 n02 n03 (the space counts as a digit of width).
    Case {
        args: &["show", "hostnames", "n[ 1-3]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: ` 1-3'\nInvalid hostlist: n[ 1-3]\n",
        code: 0,
    },
    // Slurm prints n01 n02 n03 (the sign counts as a digit of width).
    Case {
        args: &["show", "hostnames", "n[+1-3]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `+1-3'\nInvalid hostlist: n[+1-3]\n",
        code: 0,
    },
    // Slurm renames the host n18446744073709551615.
    Case {
        args: &["show", "hostnames", "n99999999999999999999"],
        nodelist: None,
        stdout: "n99999999999999999999\n",
        stderr: "",
        code: 0,
    },
    // Slurm prints n18446744073709551615.
    Case {
        args: &["show", "hostnames", "n[99999999999999999999]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `99999999999999999999'\nInvalid hostlist: n[99999999999999999999]\n",
        code: 0,
    },
    // Slurm crashes (the loop counter wraps).
    Case {
        args: &["show", "hostnames", "n[18446744073709551614-18446744073709551615]"],
        nodelist: None,
        stdout: "n18446744073709551614\nn18446744073709551615\n",
        stderr: "",
        code: 0,
    },
    // Slurm prints nothing at all.
    Case {
        args: &["show", "hostnames", "n[0-65535]-[0-65535]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: hostlist \"n[0-65535]-[0-65535]\" names more than 1000000 hosts\nInvalid hostlist: n[0-65535]-[0-65535]\n",
        code: 0,
    },
    // Slurm silently leaves out the name with the bad range (`a n0`).
    Case {
        args: &["show", "hostnames", "a,gpu[13,03-1]-[0-2][05-8],n0"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `03-1'\nInvalid hostlist: a,gpu[13,03-1]-[0-2][05-8],n0\n",
        code: 0,
    },
    // Slurm loses n1x00-n1x02 while sorting mixed widths: n1x[8-9,9-10,10-11,11-12,12-13,13].
    Case {
        args: &["show", "hostlistsorted", "n1x[8-13,00-2,9-13]"],
        nodelist: None,
        stdout: "n1x[8-9,9-10,10-11,11-12,12-13,13,00-02]\n",
        stderr: "",
        code: 0,
    },
];

/// Generated by running each command through Slurm 22.05.8's scontrol.
const VERIFIED: &[Case] = &[
    Case {
        args: &["show", "hostnames", "n[1-3,5],gpu[01-02],a,b"],
        nodelist: None,
        stdout: "n1\nn2\nn3\nn5\ngpu01\ngpu02\na\nb\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "rack[1-2]-n[01-04]"],
        nodelist: None,
        stdout: "rack1-n01\nrack1-n02\nrack1-n03\nrack1-n04\nrack2-n01\nrack2-n02\nrack2-n03\nrack2-n04\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-2][3-4]"],
        nodelist: None,
        stdout: "n13\nn14\nn23\nn24\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "[5-6]x[1-2]-[7]"],
        nodelist: None,
        stdout: "5x1-7\n6x1-7\n5x2-7\n6x2-7\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "x[1,3]y[08-09]z[1-2]"],
        nodelist: None,
        stdout: "x1y08z1\nx1y08z2\nx3y08z1\nx3y08z2\nx1y09z1\nx1y09z2\nx3y09z1\nx3y09z2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-010]"],
        nodelist: None,
        stdout: "n1\nn2\nn3\nn4\nn5\nn6\nn7\nn8\nn9\nn10\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[098-100]"],
        nodelist: None,
        stdout: "n098\nn099\nn100\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[4-]"],
        nodelist: None,
        stdout: "n4\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "[1-3]"],
        nodelist: None,
        stdout: "1\n2\n3\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n1 n2\tn3\nn4,,n5,"],
        nodelist: None,
        stdout: "n1\nn2\nn3\nn4\nn5\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", ",n1"],
        nodelist: None,
        stdout: "n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", ""],
        nodelist: None,
        stdout: "",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", " , "],
        nodelist: None,
        stdout: "",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n1;n2"],
        nodelist: None,
        stdout: "n1;n2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n1\rn2"],
        nodelist: None,
        stdout: "n1\rn2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "é[1-2]"],
        nodelist: None,
        stdout: "é1\né2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[3,1-2],n1"],
        nodelist: None,
        stdout: "n3\nn1\nn2\nn1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1,1]"],
        nodelist: None,
        stdout: "n1\nn1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n007,n1b"],
        nodelist: None,
        stdout: "n007\nn1b\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n18446744073709551615"],
        nodelist: None,
        stdout: "n18446744073709551615\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[5-1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `'\nInvalid hostlist: n[]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[a-b]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `a-b'\nInvalid hostlist: n[a-b]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[-1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `-1'\nInvalid hostlist: n[-1]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1--3]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `1--3'\nInvalid hostlist: n[1--3]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1,2,,3]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `'\nInvalid hostlist: n[1,2,,3]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[,1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `'\nInvalid hostlist: n[,1]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-2,]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `'\nInvalid hostlist: n[1-2,]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-2x]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `1-2x'\nInvalid hostlist: n[1-2x]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1x2]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `1x2'\nInvalid hostlist: n[1x2]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "a[x]b[y]c[1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `y'\nInvalid hostlist: a[x]b[y]c[1]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[a]-[1-2]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `a'\nInvalid hostlist: n[a]-[1-2]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[5-1]-[1-2]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]-[1-2]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "ok[1],n[5-1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: ok[1],n[5-1]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-2]-[]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `'\nInvalid hostlist: n[1-2]-[]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-3]x"],
        nodelist: None,
        stdout: "",
        stderr: "Invalid hostlist: n[1-3]x\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "a-[1-2]b"],
        nodelist: None,
        stdout: "",
        stderr: "Invalid hostlist: a-[1-2]b\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[[1-2]]"],
        nodelist: None,
        stdout: "",
        stderr: "Invalid hostlist: n[[1-2]]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-2]]"],
        nodelist: None,
        stdout: "",
        stderr: "Invalid hostlist: n[1-2]]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[0-65536]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Too many hosts in range `0-65536'\nInvalid hostlist: n[0-65536]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-2]-[0-65536]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Too many hosts in range `0-65536'\nInvalid hostlist: n[1-2]-[0-65536]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n[1-99999999999999999999]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Too many hosts in range `1-99999999999999999999'\nInvalid hostlist: n[1-99999999999999999999]\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames"],
        nodelist: Some("x[1-2]"),
        stdout: "x1\nx2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames"],
        nodelist: Some(""),
        stdout: "",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: host list is empty\n",
        code: 0,
    },
    Case {
        args: &["show", "hostnames"],
        nodelist: Some("n[5-1]"),
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]\n",
        code: 0,
    },
    Case {
        args: &["SHOW", "HOSTNAMES", "n1"],
        nodelist: None,
        stdout: "n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["sho", "hostn", "n[1-2]"],
        nodelist: None,
        stdout: "n1\nn2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostname", "n1"],
        nodelist: None,
        stdout: "n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostna", "n1"],
        nodelist: None,
        stdout: "n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "host", "n1"],
        nodelist: None,
        stdout: "",
        stderr: "invalid entity:host for keyword:show \n",
        code: 1,
    },
    Case {
        args: &["show", "hostnamesx", "n1"],
        nodelist: None,
        stdout: "",
        stderr: "invalid entity:hostnamesx for keyword:show \n",
        code: 1,
    },
    Case {
        args: &["show", "hostnames", "a", "b"],
        nodelist: None,
        stdout: "",
        stderr: "too many arguments for keyword:show\n",
        code: 1,
    },
    Case {
        args: &["show"],
        nodelist: None,
        stdout: "",
        stderr: "too few arguments for keyword:show\n",
        code: 1,
    },
    Case {
        args: &["sh", "hostnames", "n1"],
        nodelist: None,
        stdout: "",
        stderr: "invalid keyword: sh\n",
        code: 1,
    },
    Case {
        args: &["foo"],
        nodelist: None,
        stdout: "",
        stderr: "invalid keyword: foo\n",
        code: 1,
    },
    Case {
        args: &["show", "hostnames", "--", "-n1"],
        nodelist: None,
        stdout: "-n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "-n1"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: invalid option -- 'n'\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["-Q", "show", "hostnames", "n[5-1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]\n",
        code: 0,
    },
    Case {
        args: &["-dv", "show", "hostnames", "n1"],
        nodelist: None,
        stdout: "n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["-o", "--details", "--loc", "show", "hostnames", "n1"],
        nodelist: None,
        stdout: "n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n1,n01"],
        nodelist: None,
        stdout: "n[1,01]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n01,n1"],
        nodelist: None,
        stdout: "n[01,1]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n1,n2,n01,n02"],
        nodelist: None,
        stdout: "n[1-2,01-02]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n9,n10"],
        nodelist: None,
        stdout: "n[9-10]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n09,n10"],
        nodelist: None,
        stdout: "n[09-10]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n99,n100"],
        nodelist: None,
        stdout: "n[99-100]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n099,n100"],
        nodelist: None,
        stdout: "n[099-100]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n9,n010"],
        nodelist: None,
        stdout: "n[9,010]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[05-09],n10"],
        nodelist: None,
        stdout: "n[05-10]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n1,n,n2"],
        nodelist: None,
        stdout: "n1,n,n2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n,n1"],
        nodelist: None,
        stdout: "n,n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "a,b,a"],
        nodelist: None,
        stdout: "a,b,a\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n1,m1,n2"],
        nodelist: None,
        stdout: "n1,m1,n2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "rack1-n1,rack1-n2,rack2-n1"],
        nodelist: None,
        stdout: "rack1-n[1-2],rack2-n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n1b,n2b"],
        nodelist: None,
        stdout: "n1b,n2b\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[1-3],n[2-4]"],
        nodelist: None,
        stdout: "n[1-3,2-4]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[1-3],n[4-6]"],
        nodelist: None,
        stdout: "n[1-6]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n0,n1"],
        nodelist: None,
        stdout: "n[0-1]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n00,n01,n02"],
        nodelist: None,
        stdout: "n[00-02]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n007"],
        nodelist: None,
        stdout: "n007\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[1-2][3-4]"],
        nodelist: None,
        stdout: "n1[3-4],n2[3-4]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[1-2]-[3-4]"],
        nodelist: None,
        stdout: "n1-[3-4],n2-[3-4]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "x1y2,x1y3"],
        nodelist: None,
        stdout: "x1y[2-3]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n1,n3,n2"],
        nodelist: None,
        stdout: "n[1,3,2]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n5,n4"],
        nodelist: None,
        stdout: "n[5,4]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n1 n2"],
        nodelist: None,
        stdout: "n[1-2]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "1,2,3"],
        nodelist: None,
        stdout: "[1-3]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n-1,n-2"],
        nodelist: None,
        stdout: "n-[1-2]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[8-10]"],
        nodelist: None,
        stdout: "n[8-10]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[001-1000]"],
        nodelist: None,
        stdout: "n[001-1000]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", ""],
        nodelist: None,
        stdout: "\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlist", "n[5-1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]\n",
        code: 1,
    },
    Case {
        args: &["show", "hostlist", "n[1-3]x"],
        nodelist: None,
        stdout: "",
        stderr: "Invalid hostlist: n[1-3]x\n",
        code: 1,
    },
    Case {
        args: &["show", "hostlist", "n[1-2]-[0-65536]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Too many hosts in range `0-65536'\nInvalid hostlist: n[1-2]-[0-65536]\n",
        code: 1,
    },
    Case {
        args: &["show", "hostl", "n1,n2"],
        nodelist: None,
        stdout: "n[1-2]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlis", "n2,n1"],
        nodelist: None,
        stdout: "n[2,1]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n3,n1,n1,n2"],
        nodelist: None,
        stdout: "n[1,1-3]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-10],n[5-6]"],
        nodelist: None,
        stdout: "n[1-5,5-6,6-10]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-5],n[3-7]"],
        nodelist: None,
        stdout: "n[1-3,3-4,4-5,5-7]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[3-7],n[1-5]"],
        nodelist: None,
        stdout: "n[1-3,3-4,4-5,5-7]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n1,n2,n2,n3"],
        nodelist: None,
        stdout: "n[1-2,2-3]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n1,n1,n2,n2"],
        nodelist: None,
        stdout: "n[1,1-2,2]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-3],n[1-3]"],
        nodelist: None,
        stdout: "n[1,1-2,2-3,3]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-3],n2"],
        nodelist: None,
        stdout: "n[1-2,2-3]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-5],n[1-5],n[1-5]"],
        nodelist: None,
        stdout: "n[1,1,1-2,2,2-3,3,3-4,4,4-5,5,5]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-5],n[2-3]"],
        nodelist: None,
        stdout: "n[1-2,2-3,3-5]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-5],n[5-9]"],
        nodelist: None,
        stdout: "n[1-5,5-9]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n2,n1,n01,n02"],
        nodelist: None,
        stdout: "n[1-2,01-02]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n1,n01,n2"],
        nodelist: None,
        stdout: "n[1-2,01]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n9,n08,n10"],
        nodelist: None,
        stdout: "n[9,08,10]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n10,n9,n010"],
        nodelist: None,
        stdout: "n[9-10,010]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n5,n05,n4"],
        nodelist: None,
        stdout: "n[4-5,05]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n02,n1"],
        nodelist: None,
        stdout: "n[1,02]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "rack10-n1,rack2-n1,rack1-n1"],
        nodelist: None,
        stdout: "rack1-n1,rack2-n1,rack10-n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "b1,A1,a1,B1"],
        nodelist: None,
        stdout: "A1,B1,a1,b1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n,n1,n"],
        nodelist: None,
        stdout: "n,n,n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n1,n,m"],
        nodelist: None,
        stdout: "m,n,n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "z,a1,a"],
        nodelist: None,
        stdout: "a,a1,z\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "x10y,x2y,x1y"],
        nodelist: None,
        stdout: "x1y,x2y,x10y\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "gpu2,gpu10,gpu1"],
        nodelist: None,
        stdout: "gpu[1-2,10]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "a01b,a1b"],
        nodelist: None,
        stdout: "a01b,a1b\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "a9b,a10b,a1b"],
        nodelist: None,
        stdout: "a1b,a9b,a10b\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-2][3-4],n1[1-2]"],
        nodelist: None,
        stdout: "n1[1-4],n2[3-4]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-100],n50"],
        nodelist: None,
        stdout: "n[1-50,50-100]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[1-3],m[1-3],n[4-5]"],
        nodelist: None,
        stdout: "m[1-3],n[1-5]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n1x,n1"],
        nodelist: None,
        stdout: "n1,n1x\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "r01n1,r1n2"],
        nodelist: None,
        stdout: "r01n1,r1n2\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "a-1,a1,a_1,a.1"],
        nodelist: None,
        stdout: "a1,a-1,a.1,a_1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "é1,a1,z1,~1,A1,-1,_1"],
        nodelist: None,
        stdout: "é1,-1,A1,_1,a1,z1,~1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "r001n1,r01n1,r1n1,r10n1,r010n1,r2n1,r0n1,r00n1"],
        nodelist: None,
        stdout: "r0n1,r00n1,r001n1,r01n1,r010n1,r1n1,r2n1,r10n1\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "gpu[2-3,07-12,7-12]"],
        nodelist: None,
        stdout: "gpu[2-3,7-12,07-12]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n1x5-[03-6,5-10,13]"],
        nodelist: None,
        stdout: "n1x5-[5-10,03-06,13]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", ""],
        nodelist: None,
        stdout: "\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsorted", "n[5-1]"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]\n",
        code: 1,
    },
    Case {
        args: &["show", "hostlists", "n2,n1"],
        nodelist: None,
        stdout: "n[1-2]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostlistsor", "n2,n1"],
        nodelist: None,
        stdout: "n[1-2]\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["--version"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["-V"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["version"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["vers"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["VERSION"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["ver"],
        nodelist: None,
        stdout: "",
        stderr: "invalid keyword: ver\n",
        code: 1,
    },
    Case {
        args: &["version", "x"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "too many arguments for version keyword\n",
        code: 1,
    },
    Case {
        args: &["--vers"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["--version", "x"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["-Vx"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["show", "hostnames", "n1", "-V"],
        nodelist: None,
        stdout: "slurm-wlm 22.05.8\n",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["--foo", "show", "hostnames", "n1"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: unrecognized option '--foo'\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["-z"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: invalid option -- 'z'\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["-M"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: option requires an argument -- 'M'\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["--uid"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: option '--uid' requires an argument\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["--ver"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: option '--ver' is ambiguous; possibilities: '--verbose' '--version'\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["--help=x"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: option '--help' doesn't allow an argument\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["--version=x"],
        nodelist: None,
        stdout: "",
        stderr: "scontrol: option '--version' doesn't allow an argument\nTry \"scontrol --help\" for more information\n",
        code: 1,
    },
    Case {
        args: &["quit"],
        nodelist: None,
        stdout: "",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["exit"],
        nodelist: None,
        stdout: "",
        stderr: "",
        code: 0,
    },
    Case {
        args: &["exit", "x"],
        nodelist: None,
        stdout: "",
        stderr: "too many arguments for keyword:exit\n",
        code: 1,
    },
    Case {
        args: &["quit", "x"],
        nodelist: None,
        stdout: "",
        stderr: "too many arguments for keyword:quit\n",
        code: 1,
    },
];
