//! Real Slurm's captured outputs (`shared/reference/real-slurm/golden`) and
//! the normalizations that make them comparable with a test cluster's.
//!
//! Only what cannot be equal is rewritten: job ids (a fresh cluster numbers
//! from 1, the reference had earlier jobs), elapsed times, host names, paths,
//! ports, pids, load and boot times. Column widths are kept, so alignment is
//! still compared byte for byte.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};

/// Where the reference outputs are: `$SLURM_GOLDEN_DIR`, else the shared
/// reference beside the workspace.
pub fn golden_dir() -> PathBuf {
    match std::env::var_os("SLURM_GOLDEN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/reference/real-slurm/golden"),
    }
}

/// The captured standard output of case `name` (`<name>.out`).
pub fn golden_out(name: &str) -> Result<String> {
    let p = golden_dir().join(format!("{name}.out"));
    std::fs::read_to_string(&p)
        .with_context(|| format!("cannot read golden {} (set SLURM_GOLDEN_DIR)", p.display()))
}

/// The captured standard error of case `name` (`<name>.err`); empty when
/// the case wrote none (no file).
pub fn golden_err(name: &str) -> Result<String> {
    let p = golden_dir().join(format!("{name}.err"));
    match std::fs::read_to_string(&p) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read golden {}", p.display())),
    }
}

/// The command line of case `name` (line 1 of `<name>.cmd`), split into
/// words; the cases quote nothing.
pub fn golden_command(name: &str) -> Result<Vec<String>> {
    let p = golden_dir().join(format!("{name}.cmd"));
    let text = std::fs::read_to_string(&p)
        .with_context(|| format!("cannot read golden {}", p.display()))?;
    let words: Vec<String> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    anyhow::ensure!(!words.is_empty(), "no command in {}", p.display());
    Ok(words)
}

/// The exit status recorded in `<name>.cmd` (`# exit=N` on line 2).
pub fn golden_exit(name: &str) -> Result<i32> {
    let p = golden_dir().join(format!("{name}.cmd"));
    let text = std::fs::read_to_string(&p)
        .with_context(|| format!("cannot read golden {}", p.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("# exit="))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no '# exit=' line in {}", p.display()))
}

/// Replaces every digit of `s` with `9`: times and loads keep their width.
pub fn mask_digits(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect()
}

/// Masks squeue's TIME column (`M:SS`, `H:MM:SS`, `D-HH:MM:SS`) in a table
/// with the default format: the field that ends at the TIME header's end.
pub fn mask_squeue_time(table: &str) -> String {
    let mut lines = table.lines();
    let Some(header) = lines.next() else {
        return String::new();
    };
    let Some(end) = header.find("TIME").map(|i| i + 4) else {
        return table.to_string();
    };
    let mut out = String::from(header);
    out.push('\n');
    for line in lines {
        if line.len() >= end && line.is_char_boundary(end) {
            let (head, tail) = line.split_at(end);
            let start = head.rfind(' ').map_or(0, |i| i + 1);
            out.push_str(&head[..start]);
            out.push_str(&mask_digits(&head[start..]));
            out.push_str(tail);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Rewrites the JOBID column (right-aligned, 18 wide in the default
/// format) through `map`; lines whose id is not in `map` are dropped.
/// The header stays.
pub fn renumber_squeue(table: &str, map: &BTreeMap<u32, u32>) -> String {
    let mut out = String::new();
    for (i, line) in table.lines().enumerate() {
        if i == 0 {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let id = line
            .split_whitespace()
            .next()
            .and_then(|t| t.parse::<u32>().ok());
        let Some(new) = id.and_then(|id| map.get(&id)) else {
            continue;
        };
        let rest = line.get(18..).unwrap_or("");
        out.push_str(&format!("{new:>18}{rest}\n"));
    }
    out
}

/// Masks the fields of `scontrol show node` that depend on the host and the
/// moment: CPULoad, FreeMem, OS, NodeHostName, Port, and the times.
pub fn normalize_show_node(text: &str) -> String {
    mask_fields(
        text,
        &[
            "CPULoad",
            "FreeMem",
            "NodeHostName",
            "Port",
            "BootTime",
            "SlurmdStartTime",
            "LastBusyTime",
        ],
    )
}

/// Masks the fields of `scontrol show job` that depend on the moment, the
/// host and the job's number.
pub fn normalize_show_job(text: &str) -> String {
    mask_fields(
        text,
        &[
            "JobId",
            "Priority",
            "RunTime",
            "SubmitTime",
            "EligibleTime",
            "AccrueTime",
            "StartTime",
            "EndTime",
            "LastSchedEval",
            "AllocNode:Sid",
        ],
    )
}

/// Replaces the value of each `Key=value` word whose key is in `keys` with
/// `<key>` (lowercase). An `OS=` line (its value has spaces) becomes
/// `OS=<os>`. Spacing is kept.
pub fn mask_fields(text: &str, keys: &[&str]) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let lead = line.len() - line.trim_start().len();
        if line.trim_start().starts_with("OS=") {
            out.push_str(&line[..lead]);
            out.push_str("OS=<os>\n");
            continue;
        }
        out.push_str(&line[..lead]);
        let mut first = true;
        for word in line[lead..].split(' ') {
            if !first {
                out.push(' ');
            }
            first = false;
            out.push_str(&mask_field(word, keys));
        }
    }
    out
}

fn mask_field(word: &str, keys: &[&str]) -> String {
    let Some((key, value)) = word.split_once('=') else {
        return word.to_string();
    };
    let nl = if value.ends_with('\n') { "\n" } else { "" };
    if keys.contains(&key) {
        format!("{key}=<{}>{nl}", key.to_ascii_lowercase())
    } else {
        word.to_string()
    }
}

/// `None` when `got == want`, else a line diff (longest common
/// subsequence): `- ` lines only real Slurm printed, `+ ` lines only ours
/// printed, each with its line number, for assertion messages.
pub fn diff_lines(got: &str, want: &str) -> Option<String> {
    if got == want {
        return None;
    }
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    // lcs[i][j]: common lines of w[i..] and g[j..].
    let mut lcs = vec![vec![0usize; g.len() + 1]; w.len() + 1];
    for i in (0..w.len()).rev() {
        for j in (0..g.len()).rev() {
            lcs[i][j] = if w[i] == g[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < w.len() || j < g.len() {
        if i < w.len() && j < g.len() && w[i] == g[j] {
            i += 1;
            j += 1;
        } else if j < g.len() && (i == w.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("line {}: + {:?}\n", j + 1, g[j]));
            j += 1;
        } else {
            out.push_str(&format!("line {}: - {:?}\n", i + 1, w[i]));
            i += 1;
        }
    }
    if out.is_empty() {
        out.push_str("same lines, different line endings\n");
    }
    Some(out)
}

/// Panics with the differing lines unless `got == want`.
#[track_caller]
pub fn assert_same(what: &str, got: &str, want: &str) {
    if let Some(d) = diff_lines(got, want) {
        panic!("{what} differs from real Slurm (- real, + ours):\n{d}");
    }
}

/// A job's `KEY=value` environment dump as a map.
pub fn env_map(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The value of `key=` in `scontrol show` output (the first word that
/// starts with it), `None` when absent.
pub fn show_field<'a>(shown: &'a str, key: &str) -> Option<&'a str> {
    let prefix = format!("{key}=");
    shown
        .split_whitespace()
        .find_map(|w| w.strip_prefix(prefix.as_str()))
}

/// The value of `key=` in `scontrol show` output; panics (a test failure)
/// naming the key when it is absent.
pub fn require_field(shown: &str, key: &str) -> String {
    show_field(shown, key)
        .unwrap_or_else(|| panic!("no {key} in {shown}"))
        .to_string()
}

/// A date as Slurm's commands print it: `2026-11-21T07:01:01`.
pub fn is_slurm_date(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 19
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b.iter()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16].contains(&i) || c.is_ascii_digit())
}

/// The values of every `"key": <number>` member of JSON text, in order
/// (`None` for one that is not a plain unsigned number).
pub fn json_numbers<T: std::str::FromStr>(json: &str, key: &str) -> Vec<Option<T>> {
    let member = format!("\"{key}\":");
    json.match_indices(&member)
        .map(|(at, _)| {
            let rest = json[at + member.len()..].trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_time_is_masked_keeping_width() {
        let t = "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n                 2     debug     wrap     root  R       0:02      1 n1\n";
        let m = mask_squeue_time(t);
        assert!(m.contains("  R       9:99      1 n1\n"), "{m}");
        assert_eq!(m.len(), t.len());
    }

    #[test]
    fn squeue_ids_are_renumbered_and_others_dropped() {
        let t = "H\n                 2     debug     wrap     root  R       0:02      1 n1\n                 5     debug     wrap     root PD       0:00      3 (Resources)\n";
        let map = BTreeMap::from([(2, 11)]);
        assert_eq!(
            renumber_squeue(t, &map),
            "H\n                11     debug     wrap     root  R       0:02      1 n1\n"
        );
    }

    #[test]
    fn show_node_masks_host_dependent_fields_only() {
        let t = "NodeName=n1 Arch=x86_64 CoresPerSocket=2 \n   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=2.26\n   OS=Linux 6.1 #1 SMP\n   NodeAddr=127.0.0.1 NodeHostName=vm Port=17001 Version=22.05.8\n";
        let n = normalize_show_node(t);
        assert_eq!(
            n,
            "NodeName=n1 Arch=x86_64 CoresPerSocket=2 \n   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=<cpuload>\n   OS=<os>\n   NodeAddr=127.0.0.1 NodeHostName=<nodehostname> Port=<port> Version=22.05.8\n"
        );
    }

    #[test]
    fn diff_names_the_differing_lines() {
        assert_eq!(diff_lines("a\nb\n", "a\nb\n"), None);
        let d = diff_lines("a\nx\nc\n", "a\nb\nc\n").expect("differs");
        assert_eq!(d, "line 2: + \"x\"\nline 2: - \"b\"\n");
        let d = diff_lines("a\nnew\nb\n", "a\nb\n").expect("differs");
        assert_eq!(d, "line 2: + \"new\"\n");
        let d = diff_lines("a\n", "a\ngone\n").expect("differs");
        assert_eq!(d, "line 2: - \"gone\"\n");
        assert!(diff_lines("a", "a\n").is_some());
    }

    #[test]
    fn the_reference_outputs_are_there() {
        let sinfo = golden_out("sinfo").expect("sinfo golden");
        assert!(sinfo.starts_with("PARTITION AVAIL"));
        assert_eq!(golden_exit("sbatch_wait_exit").expect("exit"), 7);
    }
}
