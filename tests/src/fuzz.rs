//! A no-panic fuzzer for the pure parsers (hostlists, slurm.conf and friends,
//! time and size formats).
//!
//! Inputs come from a seeded generator, so a failure is reproducible from the
//! seed and the case number: a third are random bytes, a third strings drawn
//! from the characters each grammar cares about, and a third mutations
//! (insert, delete, replace, splice, duplicate) of real-world seeds. Every call
//! runs under `catch_unwind`; a panic is a finding, recorded with its input.
//! Besides not panicking, the hostlist target checks a property on every input
//! that parses: compressing the expansion and expanding again gives the same
//! hosts.

use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use slurm_common::conf::cgroup::CgroupConf;
use slurm_common::conf::gres::GresConf;
use slurm_common::conf::SlurmConf;
use slurm_common::{hostlist, size, time};

/// A small, fast, seedable generator (SplitMix64). Not for cryptography.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The parsers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Hostlist,
    SlurmConf,
    Time,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Hostlist, Target::SlurmConf, Target::Time];

    pub fn name(self) -> &'static str {
        match self {
            Target::Hostlist => "hostlist",
            Target::SlurmConf => "slurm.conf",
            Target::Time => "time",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// The outcome of fuzzing one target.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub target: &'static str,
    pub inputs: u64,
    /// Inputs the parser accepted (the rest got an error, which is fine).
    pub accepted: u64,
    pub panics: u64,
    /// Property violations on accepted inputs.
    pub violations: u64,
    /// The first few failing inputs, with what went wrong.
    pub findings: Vec<String>,
    pub seconds: f64,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.panics == 0 && self.violations == 0
    }

    pub fn to_json(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{{\"target\":\"{}\",\"inputs\":{},\"accepted\":{},\"panics\":{},\"violations\":{},\"seconds\":{:.3},\"findings\":[",
            self.target, self.inputs, self.accepted, self.panics, self.violations, self.seconds
        );
        for (i, f) in self.findings.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push('"');
            for c in f.chars() {
                match c {
                    '"' => s.push_str("\\\""),
                    '\\' => s.push_str("\\\\"),
                    c if (c as u32) < 0x20 => {
                        let _ = write!(s, "\\u{:04x}", c as u32);
                    }
                    c => s.push(c),
                }
            }
            s.push('"');
        }
        s.push_str("]}");
        s
    }
}

const HOSTLIST_SEEDS: &[&str] = &[
    "n[1-4]",
    "gpu[01-02]",
    "rack[1-2]-n[01-04]",
    "n[1-3,5],m7,a[001-010]b",
    "node[9-11],node[010-012]",
    "a,b,c",
    "n[1-2][3-4]",
    "x[0-0],y[00-99]",
    "n1 n2\tn3",
];
const HOSTLIST_CHARS: &[u8] = b"abn0123456789[],-: \t_.x";

const CONF_SEEDS: &[&str] = &[
    include_str!("../../common/src/conf/testdata/ref-slurm.conf"),
    "ClusterName=c\nSlurmctldHost=h(127.0.0.1)\nNodeName=n[1-4] CPUs=2 RealMemory=4000\nPartitionName=p Nodes=ALL Default=YES MaxTime=1-00:00:00 State=UP\n",
    "NodeName=DEFAULT CPUs=4\nNodeName=a[1-2] Port=[7001-7002] Gres=gpu:a100:2 Features=x,y\n",
    "PartitionName=DEFAULT MaxTime=30\nPartitionName=q Nodes=a1 OverSubscribe=FORCE:4 AllowGroups=wheel\n",
    "SlurmctldHost=a\nSlurmctldHost=b\nSlurmctldTimeout=5\nMessageTimeout=10 # comment\nSchedulerParameters=bf_interval=30,\"x y\"\n",
];
const CONF_KEYS: &[&str] = &[
    "ClusterName",
    "SlurmctldHost",
    "SlurmctldPort",
    "SlurmdPort",
    "StateSaveLocation",
    "MaxJobCount",
    "MinJobAge",
    "KillWait",
    "SlurmctldTimeout",
    "SlurmdTimeout",
    "SelectType",
    "SelectTypeParameters",
    "SchedulerParameters",
    "AuthType",
    "ReturnToService",
    "TreeWidth",
    "FirstJobId",
    "DefMemPerCPU",
    "NodeName",
    "PartitionName",
    "CPUs",
    "RealMemory",
    "Port",
    "NodeAddr",
    "Gres",
    "Features",
    "Nodes",
    "MaxTime",
    "DefaultTime",
    "State",
    "OverSubscribe",
    "PriorityTier",
    "Include",
    "Name",
    "File",
    "Type",
    "ConstrainCores",
    "AllowedRAMSpace",
];
const CONF_VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "4294967296",
    "yes",
    "NO",
    "n[1-4]",
    "ALL",
    "INFINITE",
    "1-00:00",
    "abc",
    "\"q r\"",
    "'x'",
    "a(b)",
    "[1-3]",
    "gpu:2",
    "FORCE:9",
    "cgroup/v2",
    "auth/munge",
    "CR_Core_Memory",
    "4G",
    "x=y,z",
    "\\",
    "#",
];
const CONF_CHARS: &[u8] = b"abNP=[]-,:#\"'\\ \t\n01239(){}";

const TIME_SEEDS: &[&str] = &[
    "30",
    "1:30",
    "1:02:03",
    "2-12",
    "2-12:30",
    "2-12:30:45",
    "UNLIMITED",
    "infinite",
    "-1",
    "2026-11-21T07:00:00",
    "now+1hour",
    "now-3days",
    "today",
    "midnight",
    "noon",
    "teatime",
    "11/21",
    "1121",
    "16:00",
    "4:00PM",
    "tomorrow",
    "4G",
    "512",
    "1024K",
    "2T",
    "0",
];
const TIME_CHARS: &[u8] = b"0123456789:-/T+.nowdayhurKMGTPAMu ";

/// One input for `target`, from the generator.
pub fn generate(target: Target, rng: &mut Rng) -> String {
    let (seeds, chars): (&[&str], &[u8]) = match target {
        Target::Hostlist => (HOSTLIST_SEEDS, HOSTLIST_CHARS),
        Target::SlurmConf => (CONF_SEEDS, CONF_CHARS),
        Target::Time => (TIME_SEEDS, TIME_CHARS),
    };
    let max_len = if target == Target::SlurmConf { 400 } else { 40 };
    match rng.below(4) {
        0 => {
            let len = rng.below(max_len);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        1 => {
            let len = rng.below(max_len);
            (0..len).map(|_| *rng.pick(chars) as char).collect()
        }
        2 if target == Target::SlurmConf => conf_lines(rng),
        _ => {
            let seed: &str = seeds[rng.below(seeds.len())];
            mutate(seed, chars, rng)
        }
    }
}

/// Lines made of real keys with values from a list of awkward ones.
fn conf_lines(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..1 + rng.below(6) {
        for _ in 0..1 + rng.below(4) {
            let _ = write!(s, "{}={} ", rng.pick(CONF_KEYS), rng.pick(CONF_VALUES));
        }
        s.push('\n');
    }
    s
}

fn mutate(seed: &str, chars: &[u8], rng: &mut Rng) -> String {
    let mut s: Vec<char> = seed.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = if s.is_empty() {
            0
        } else {
            rng.below(s.len() + 1)
        };
        match rng.below(5) {
            0 => s.insert(at, *rng.pick(chars) as char),
            1 if at < s.len() => {
                s.remove(at);
            }
            2 if at < s.len() => s[at] = *rng.pick(chars) as char,
            3 => {
                // splice a piece of the string onto itself
                let end = (at + rng.below(8)).min(s.len());
                let piece: Vec<char> = s[at.min(end)..end].to_vec();
                let to = rng.below(s.len() + 1);
                for (i, c) in piece.into_iter().enumerate() {
                    s.insert(to + i, c);
                }
            }
            _ => {
                let digits = rng.below(12) + 1;
                for i in 0..digits {
                    s.insert(at + i, char::from(b'0' + rng.below(10) as u8));
                }
            }
        }
    }
    s.into_iter().collect()
}

/// What one input did.
enum Verdict {
    Rejected,
    Accepted,
    Violation(String),
}

fn check(target: Target, input: &str) -> Verdict {
    match target {
        Target::Hostlist => match hostlist::expand(input) {
            Err(_) => Verdict::Rejected,
            Ok(hosts) => {
                let compressed = hostlist::compress(&hosts);
                match hostlist::expand(&compressed) {
                    Ok(again) if again == hosts => Verdict::Accepted,
                    Ok(again) => Verdict::Violation(format!(
                        "expand(compress(expand(x))) differs: {} hosts -> {compressed:?} -> {} hosts",
                        hosts.len(),
                        again.len()
                    )),
                    Err(e) => Verdict::Violation(format!(
                        "compress gave an expression that does not expand: {compressed:?}: {e}"
                    )),
                }
            }
        },
        Target::SlurmConf => {
            let a = SlurmConf::parse(input, "fuzz.conf").is_ok();
            let b = GresConf::parse(input, "fuzz-gres.conf").is_ok();
            let c = CgroupConf::parse(input, "fuzz-cgroup.conf").is_ok();
            if a || b || c {
                Verdict::Accepted
            } else {
                Verdict::Rejected
            }
        }
        Target::Time => {
            let now = 1_795_000_000;
            let results = [
                time::parse_time_limit(input).is_ok(),
                time::parse_duration_secs(input).is_ok(),
                time::parse_timestamp(input, now).is_ok(),
                time::parse_timestamp_past(input, now).is_ok(),
                size::parse_mem_mb(input).is_ok(),
            ];
            if let Ok(limit) = time::parse_time_limit(input) {
                // What is printed must read back as the same limit.
                let printed = time::format_time_limit(limit);
                match time::parse_time_limit(&printed) {
                    Ok(back) if back == limit => {}
                    other => {
                        return Verdict::Violation(format!(
                            "time limit {limit:?} printed as {printed:?} reads back as {other:?}"
                        ))
                    }
                }
            }
            if results.iter().any(|ok| *ok) {
                Verdict::Accepted
            } else {
                Verdict::Rejected
            }
        }
    }
}

/// Runs `inputs` generated inputs through `target`'s parsers.
pub fn run(target: Target, inputs: u64, seed: u64) -> Report {
    let mut rng = Rng::new(seed ^ (target as u64).wrapping_mul(0x1234_5678_9ABC_DEF1));
    let mut report = Report {
        target: target.name(),
        ..Report::default()
    };
    let start = Instant::now();
    let previous_hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    for case in 0..inputs {
        let input = generate(target, &mut rng);
        report.inputs += 1;
        match panic::catch_unwind(AssertUnwindSafe(|| check(target, &input))) {
            Ok(Verdict::Rejected) => {}
            Ok(Verdict::Accepted) => report.accepted += 1,
            Ok(Verdict::Violation(what)) => {
                report.violations += 1;
                if report.findings.len() < 10 {
                    report
                        .findings
                        .push(format!("case {case}: {input:?}: {what}"));
                }
            }
            Err(payload) => {
                report.panics += 1;
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                if report.findings.len() < 10 {
                    report
                        .findings
                        .push(format!("case {case}: {input:?}: panic: {msg}"));
                }
            }
        }
    }
    panic::set_hook(previous_hook);
    report.seconds = start.elapsed().as_secs_f64();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_deterministic() {
        let a: Vec<String> = {
            let mut r = Rng::new(7);
            (0..50)
                .map(|_| generate(Target::SlurmConf, &mut r))
                .collect()
        };
        let mut r = Rng::new(7);
        let b: Vec<String> = (0..50)
            .map(|_| generate(Target::SlurmConf, &mut r))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn a_panicking_parser_would_be_caught_and_reported() {
        // The harness itself must be able to see a panic, or a green run means nothing.
        let previous = panic::take_hook();
        panic::set_hook(Box::new(|_| {}));
        let caught = panic::catch_unwind(|| {
            let v: Vec<u8> = Vec::new();
            v[usize::from(v.is_empty())]
        });
        panic::set_hook(previous);
        assert!(caught.is_err());
    }
}
