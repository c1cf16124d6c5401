//! Checks of option values sbatch reads but does not act on, with the
//! texts and exit statuses Slurm's sbatch gives them, and the reading of
//! node files (`-F/--nodefile`), which Slurm's sbatch also does itself.
//!
//! A script that passes `--hint=nomultithread` or `--cpu-freq=high` must
//! submit here as it does under Slurm, and one with a typo in those values
//! must fail here as it fails there, before anything is submitted: a
//! scheduler that silently accepts `--mail-type=BEGN` leaves the user
//! waiting for a mail that never comes.

use slurm_common::conf::GresSpec;
use slurm_common::hostlist::{self, HostlistError};
use slurm_common::time::{parse_time_limit, TimeLimit};
use thiserror::Error;

use super::options::{OptError, SbatchOpts};

fn usage(text: impl Into<String>) -> OptError {
    OptError::Invalid(text.into())
}

fn refused(text: impl Into<String>) -> OptError {
    OptError::Refused(text.into())
}

/// Slurm's complaint about a numeric option.
pub fn bad_number(value: &str, name: &str) -> OptError {
    refused(format!("Invalid numeric value \"{value}\" for {name}."))
}

/// A count of at least `min`, as Slurm's numeric options read it.
pub fn count_from(value: &str, name: &str, min: u32) -> Result<u32, OptError> {
    match value.trim().parse::<u32>() {
        Ok(n) if n >= min && n < u32::MAX - 1 => Ok(n),
        _ => Err(bad_number(value, name)),
    }
}

/// `-N/--nodes`: `min[-max]`, each a number with an optional `k` or `m`
/// (times 1024). A missing maximum (`2-`) reads as -1, as in Slurm, so it
/// is refused as smaller than the minimum; a maximum of 0 stays 0, for
/// none.
pub fn node_count(value: &str) -> Result<(u32, Option<u32>), OptError> {
    let num = |s: &str| -> Result<i64, OptError> {
        let t = s.trim_start();
        if t.is_empty() {
            return Ok(-1);
        }
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (n, rest) = t.split_at(digits);
        let scale: i64 = match rest {
            "" => 1,
            "k" | "K" => 1024,
            "m" | "M" => 1024 * 1024,
            _ => return Err(usage(format!("\"{s}\" is not a valid node count"))),
        };
        n.parse::<i64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(|| usage(format!("\"{s}\" is not a valid node count")))
    };
    let fits = |n: i64| u32::try_from(n).map_err(|_| usage("Invalid node count specification"));
    match value.split_once('-') {
        // A missing minimum (`-5`) is 1, as in Slurm.
        Some((a, b)) => {
            let min = if a.is_empty() { 1 } else { num(a)? };
            let max = num(b)?;
            // A maximum of 0 is none, as in Slurm: the job asks for at
            // least `min` nodes (where `-N 2` asks for exactly 2).
            // `-N 0-0` is `-N 0`.
            if max == 0 {
                let min = fits(min)?;
                return Ok((min, (min > 0).then_some(0)));
            }
            if max < min {
                return Err(usage(format!(
                    "Maximum node count {max} is less than minimum node count {min}"
                )));
            }
            Ok((fits(min)?, Some(fits(max)?)))
        }
        None => Ok((fits(num(value)?)?, None)),
    }
}

/// `-B/--extra-node-info`: `sockets[:cores[:threads]]`, each a count or
/// `*`. The counts given, in that order; `*` and parts left out give
/// `None` (they leave the request as it was). As in Slurm 22.05, 0 is a
/// count and anything after the third part is not read.
pub fn extra_node_info(value: &str) -> Result<[Option<u32>; 3], OptError> {
    let which = ["first", "second", "third"];
    let mut counts = [None; 3];
    for ((part, ordinal), slot) in value.split(':').zip(which).zip(counts.iter_mut()) {
        if part == "*" {
            continue;
        }
        match part.trim().parse::<u32>() {
            Ok(n) => *slot = Some(n),
            _ => {
                return Err(refused(format!(
                    "Invalid numeric value \"{part}\" for {ordinal} arg of -B."
                )))
            }
        }
    }
    Ok(counts)
}

/// `--switches=count[@max-time]`: the count (at least 1) and the wait in
/// seconds, `None` when none was given or it does not read as a time
/// (Slurm then grants MaxSwitchWait, as for none).
pub fn switches(value: &str) -> Result<(u32, Option<u32>), OptError> {
    let (count, wait) = match value.split_once('@') {
        Some((c, w)) => (c, Some(w)),
        None => (value, None),
    };
    let count = count_from(count, "--switches", 1)?;
    let wait = wait
        .and_then(|w| slurm_common::time::parse_duration_secs(w).ok())
        .map(|s| u32::try_from(s).unwrap_or(u32::MAX));
    Ok((count, wait))
}

/// `-m/--distribution`: `first[:second[:third]][,Pack|NoPack]` or
/// `plane=size`.
pub fn distribution(value: &str) -> Result<(), OptError> {
    let bad = || usage("Invalid --distribution specification");
    let lower = value.to_ascii_lowercase();
    let (layout, pack) = match lower.split_once(',') {
        Some((l, p)) => (l, Some(p)),
        None => (lower.as_str(), None),
    };
    if pack.is_some_and(|p| p != "pack" && p != "nopack") {
        return Err(bad());
    }
    if let Some(size) = layout.strip_prefix("plane") {
        return match size.strip_prefix('=').map(|s| s.parse::<u32>()) {
            Some(Ok(n)) if n > 0 => Ok(()),
            _ => Err(OptError::Invalid(
                "Invalid plane size or size not specified\nInvalid --distribution specification"
                    .into(),
            )),
        };
    }
    let levels: Vec<&str> = layout.split(':').collect();
    let ok = match levels.as_slice() {
        [first, rest @ ..] if rest.len() <= 2 => {
            matches!(*first, "block" | "cyclic" | "arbitrary" | "*")
                && rest
                    .iter()
                    .all(|l| matches!(*l, "block" | "cyclic" | "fcyclic" | "*"))
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(bad())
    }
}

/// Whether any comma-separated word of `value` is one of `known`
/// (case-insensitive): Slurm ignores unknown words beside known ones.
fn any_known(value: &str, known: &[&str]) -> bool {
    value
        .split(',')
        .any(|w| known.iter().any(|k| k.eq_ignore_ascii_case(w.trim())))
}

/// The `--mail-type` events, in the order Slurm lists a job's events, with
/// the words that name them.
const MAIL_EVENTS: &[&str] = &[
    "ARRAY_TASKS",
    "INVALID_DEPEND",
    "BEGIN",
    "END",
    "FAIL",
    "REQUEUE",
    "STAGE_OUT",
    "TIME_LIMIT_50",
    "TIME_LIMIT_80",
    "TIME_LIMIT_90",
    "TIME_LIMIT",
];

/// What `ALL` stands for: INVALID_DEPEND through STAGE_OUT.
const MAIL_ALL: &[&str] = MAIL_EVENTS.split_at(7).0.split_at(1).1;

/// `--mail-type`, as the set of events Slurm keeps for the job: the known
/// words (any case; unknown ones beside them are ignored) in Slurm's order,
/// `ALL` spelled out, and `None` when `NONE` appears anywhere, since Slurm
/// then keeps no event at all.
pub fn mail_type(value: &str) -> Result<Option<String>, OptError> {
    let mut wanted = [false; MAIL_EVENTS.len()];
    let mut known = false;
    let mut none = false;
    for word in value.split(',').map(str::trim) {
        if word.eq_ignore_ascii_case("NONE") {
            known = true;
            none = true;
        } else if word.eq_ignore_ascii_case("ALL") {
            known = true;
            for (slot, event) in wanted.iter_mut().zip(MAIL_EVENTS) {
                *slot |= MAIL_ALL.contains(event);
            }
        } else if let Some(i) = MAIL_EVENTS
            .iter()
            .position(|e| e.eq_ignore_ascii_case(word))
        {
            known = true;
            wanted[i] = true;
        }
    }
    if !known {
        return Err(usage("Invalid --mail-type specification"));
    }
    if none {
        return Ok(None);
    }
    let events: Vec<&str> = MAIL_EVENTS
        .iter()
        .zip(wanted)
        .filter_map(|(e, w)| w.then_some(*e))
        .collect();
    Ok(Some(events.join(",")))
}

/// `--profile`.
pub fn profile(value: &str) -> Result<(), OptError> {
    if any_known(
        value,
        &["all", "none", "energy", "lustre", "network", "task"],
    ) {
        Ok(())
    } else {
        Err(usage(format!("invalid --profile={value} option")))
    }
}

/// What `--hint=help` prints (on standard output; sbatch then exits 1).
pub const HINT_HELP: &str = "\
Application hint options:
    --hint=             Bind tasks according to application hints
        compute_bound   use all cores in each socket
        memory_bound    use only one core in each socket
        [no]multithread [don't] use extra threads with in-core multi-threading
        help            show this help message
";

/// What `--mem-bind=help` prints (on standard output; sbatch then exits
/// 255).
pub const MEM_BIND_HELP: &str = "\
Memory bind options:
    --mem-bind=         Bind memory to locality domains (ldom)
        nosort          avoid sorting pages at startup
        sort            sort pages at startup
        q[uiet]         quietly bind before task runs (default)
        v[erbose]       verbosely report binding before task runs
        no[ne]          don't bind tasks to memory (default)
        rank            bind by task rank
        local           bind to memory local to processor
        map_mem:<list>  specify a memory binding for each task
                        where <list> is <cpuid1>,<cpuid2>,...<cpuidN>
        mask_mem:<list> specify a memory binding mask for each tasks
                        where <list> is <mask1>,<mask2>,...<maskN>
        help            show this help message
";

/// `--hint`.
pub fn hint(value: &str) -> Result<(), OptError> {
    for word in value.split(',') {
        let w = word.to_ascii_lowercase();
        match w.as_str() {
            "help" => {
                return Err(OptError::Help {
                    text: HINT_HELP,
                    status: 1,
                })
            }
            "compute_bound" | "memory_bound" | "multithread" | "nomultithread" => {}
            _ => {
                return Err(refused(format!(
                    "unrecognized --hint argument \"{word}\", see --hint=help"
                )))
            }
        }
    }
    Ok(())
}

/// The words of a binding option: commas separate them, except those
/// followed by a digit, which continue a `map_mem:0,1` list.
fn binding_words(value: &str) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, _) in value.match_indices(',') {
        if !value[i + 1..].starts_with(|c: char| c.is_ascii_digit()) {
            words.push(&value[start..i]);
            start = i + 1;
        }
    }
    words.push(&value[start..]);
    words
}

/// `--mem-bind`.
pub fn mem_bind(value: &str) -> Result<(), OptError> {
    for word in binding_words(value) {
        let w = word.to_ascii_lowercase();
        let known = matches!(
            w.as_str(),
            "q" | "quiet"
                | "v"
                | "verbose"
                | "no"
                | "none"
                | "rank"
                | "local"
                | "sort"
                | "nosort"
                | "prefer"
        ) || w.starts_with("map_mem:")
            || w.starts_with("mask_mem:");
        if w == "help" {
            return Err(OptError::Help {
                text: MEM_BIND_HELP,
                status: 255,
            });
        }
        if !known {
            return Err(usage(format!(
                "unrecognized --mem-bind argument \"{word}\""
            )));
        }
    }
    Ok(())
}

/// `--cpu-freq`: `min[-max][:governor]` or a governor alone; each
/// frequency a number (kHz) or `low`, `medium`, `high`, `highm1`.
pub fn cpu_freq(value: &str) -> Result<(), OptError> {
    let unrecognized = |w: &str| {
        usage(format!(
            "unrecognized --cpu-freq argument \"{w}\"\nInvalid --cpu-freq argument"
        ))
    };
    let freq = |w: &str| named_freq(w).is_some() || w.parse::<u32>().is_ok_and(|n| n > 0);
    let governor = |w: &str| named_governor(w).is_some();
    let (range, gov) = match value.split_once(':') {
        Some((r, g)) => (r, Some(g)),
        None => (value, None),
    };
    if gov.is_none() && governor(range) {
        return Ok(());
    }
    let (min, max) = match range.split_once('-') {
        Some((a, b)) => (a, Some(b)),
        None => (range, None),
    };
    for w in std::iter::once(min).chain(max) {
        if !freq(w) {
            return Err(unrecognized(w));
        }
    }
    if let Some(max) = max {
        if freq_rank(min) > freq_rank(max) {
            return Err(usage(format!(
                "min cpu-frec ({min}) must be < max cpu-freq ({max})\nInvalid --cpu-freq argument"
            )));
        }
    }
    if let Some(g) = gov {
        if max.is_none() {
            return Err(usage(format!(
                "gov on cpu-frec ({g}) illegal without max\nInvalid --cpu-freq argument"
            )));
        }
        if !governor(g) {
            return Err(unrecognized(g));
        }
    }
    Ok(())
}

/// The governors of `--cpu-freq`, spelled as Slurm shows them
/// (`SLURM_CPU_FREQ_REQ`, `Governor=`), with the numbers it keeps for them
/// (`squeue --json`). Any case is accepted.
const GOVERNORS: &[(&str, u32)] = &[
    ("Conservative", 0x8800_0000),
    ("OnDemand", 0x8400_0000),
    ("Performance", 0x8200_0000),
    ("PowerSave", 0x8100_0000),
    ("UserSpace", 0x8080_0000),
    ("SchedUtil", 0x8040_0000),
];

/// The named frequencies of `--cpu-freq` as Slurm shows them, with the
/// numbers it keeps for them (above any kHz value), in rising order.
const NAMED_FREQS: &[(&str, u32)] = &[
    ("Low", 0x8000_0001),
    ("Medium", 0x8000_0002),
    ("High", 0x8000_0003),
    ("Highm1", 0x8000_0004),
];

fn named_governor(word: &str) -> Option<(&'static str, u32)> {
    GOVERNORS
        .iter()
        .copied()
        .find(|(name, _)| name.eq_ignore_ascii_case(word))
}

fn named_freq(word: &str) -> Option<(&'static str, u32)> {
    NAMED_FREQS
        .iter()
        .copied()
        .find(|(name, _)| name.eq_ignore_ascii_case(word))
}

/// The governors a job may ask for when slurm.conf has no
/// CpuFreqGovernors.
const DEFAULT_GOVERNORS: &str = "OnDemand,Performance,UserSpace";

/// A valid `--cpu-freq` value's governor must be one of slurm.conf's
/// CpuFreqGovernors (`allowed`; `None` when not set).
pub fn cpu_freq_allowed(value: &str, allowed: Option<&str>) -> Result<(), OptError> {
    let Some(governor) = CpuFreq::read(value).governor else {
        return Ok(());
    };
    let listed = allowed
        .unwrap_or(DEFAULT_GOVERNORS)
        .split(',')
        .any(|g| g.trim().eq_ignore_ascii_case(governor));
    if listed {
        Ok(())
    } else {
        Err(usage(format!(
            "governor of {value} is not allowed in slurm.conf\nInvalid --cpu-freq argument"
        )))
    }
}

/// A valid `--cpu-freq` value read into its parts, each spelled as Slurm
/// shows it (`Low`, `Highm1`, kHz as numbers; `OnDemand`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuFreq {
    pub min: Option<String>,
    pub max: Option<String>,
    pub governor: Option<&'static str>,
}

impl CpuFreq {
    /// The parts of `spec` (`min[-max][:governor]`, or a governor alone;
    /// a single frequency is the maximum).
    pub fn read(spec: &str) -> CpuFreq {
        let governor = |w: &str| named_governor(w).map(|(shown, _)| shown);
        let freq = |w: &str| match named_freq(w) {
            Some((shown, _)) => shown.to_owned(),
            None => w
                .parse::<u32>()
                .map_or_else(|_| w.to_owned(), |n| n.to_string()),
        };
        let (range, gov) = match spec.split_once(':') {
            Some((r, g)) => (r, governor(g)),
            None => match governor(spec) {
                Some(g) => ("", Some(g)),
                None => (spec, None),
            },
        };
        let (min, max) = match range.split_once('-') {
            Some((a, b)) => (Some(freq(a)), Some(freq(b))),
            None if range.is_empty() => (None, None),
            None => (None, Some(freq(range))),
        };
        CpuFreq {
            min,
            max,
            governor: gov,
        }
    }

    /// `SLURM_CPU_FREQ_REQ`: `Low-High:Performance`, `High`, `OnDemand`.
    pub fn env(&self) -> String {
        let mut text = [&self.min, &self.max]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join("-");
        if let Some(g) = self.governor {
            if !text.is_empty() {
                text.push(':');
            }
            text.push_str(g);
        }
        text
    }

    /// The number Slurm keeps for a frequency as shown (`squeue --json`).
    pub fn freq_code(shown: &str) -> u32 {
        named_freq(shown).map_or_else(|| shown.parse().unwrap_or(0), |(_, code)| code)
    }

    /// The number Slurm keeps for a governor as shown.
    pub fn governor_code(shown: &str) -> u32 {
        named_governor(shown).map_or(0, |(_, code)| code)
    }
}

/// `SLURM_PROFILE` for a valid `--profile` value: `None` when it names
/// none, `All` for all, else the kinds named in Slurm's order.
pub fn profile_env(value: &str) -> String {
    const KINDS: [&str; 4] = ["Energy", "Lustre", "Network", "Task"];
    let words: Vec<String> = value
        .split(',')
        .map(|w| w.trim().to_ascii_lowercase())
        .collect();
    if words.iter().any(|w| w == "none") {
        return "None".to_owned();
    }
    if words.iter().any(|w| w == "all") {
        return "All".to_owned();
    }
    KINDS
        .iter()
        .filter(|k| words.iter().any(|w| k.eq_ignore_ascii_case(w)))
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}

/// How Slurm orders the frequencies of a `--cpu-freq` range: kHz values
/// below the named ones, then low, medium, high and highm1.
fn freq_rank(word: &str) -> u64 {
    named_freq(word).map_or_else(
        || word.parse::<u64>().unwrap_or(0),
        |(_, code)| (1 << 32) + u64::from(code),
    )
}

/// `--propagate[=rlimit,...]`: upper-case limit names, with or without
/// `RLIMIT_`; `ALL` and `NONE` only alone.
pub fn propagate(value: &str) -> Result<(), OptError> {
    const NAMES: &[&str] = &[
        "AS", "CORE", "CPU", "DATA", "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK",
    ];
    if value.is_empty() || value == "ALL" || value == "NONE" {
        return Ok(());
    }
    for word in value.split(',') {
        let name = word.strip_prefix("RLIMIT_").unwrap_or(word);
        if !NAMES.contains(&name) {
            return Err(refused(format!(
                "Bad rlimit name: {word}\n--propagate={value} is not valid."
            )));
        }
    }
    Ok(())
}

/// `--acctg-freq`: seconds, or `type=seconds` for task, energy, network
/// and filesystem, comma-separated.
pub fn acctg_freq(value: &str) -> Result<(), OptError> {
    let seconds = |s: &str| s.trim().parse::<u32>().is_ok();
    let ok = value.split(',').all(|item| match item.split_once('=') {
        Some((kind, s)) => {
            matches!(
                kind.to_ascii_lowercase().as_str(),
                "task" | "energy" | "network" | "filesystem"
            ) && seconds(s)
        }
        None => seconds(item),
    });
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "Invalid --acctg-freq specification: {value}"
        )))
    }
}

/// `--wait-all-nodes=0|1`.
pub fn wait_all_nodes(value: &str) -> Result<(), OptError> {
    match value.trim() {
        "0" | "1" => Ok(()),
        _ => Err(usage("Invalid --wait-all-nodes specification")),
    }
}

/// `--delay-boot=time`, in minutes (`UNLIMITED` reads as the largest).
pub fn delay_boot(value: &str) -> Result<u32, OptError> {
    match parse_time_limit(value) {
        Ok(TimeLimit::Minutes(m)) => Ok(m),
        Ok(TimeLimit::Infinite) => Ok(u32::MAX),
        Err(_) => Err(usage("Invalid --delay-boot specification")),
    }
}

/// `--gres-flags`: `enforce-binding` (true) or `disable-binding`
/// (false), in any case.
pub fn gres_flags(value: &str) -> Result<bool, OptError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "enforce-binding" => Ok(true),
        "disable-binding" => Ok(false),
        _ => Err(usage("Invalid --gres-flags specification")),
    }
}

/// `--power=flag[,flag]`: the flags known (only `level`), upper case as
/// shown, and for each unknown word the line Slurm 22.05's sbatch prints
/// (twice: it reads the options twice) before it goes on.
pub fn power(value: &str) -> (Option<String>, Vec<String>) {
    let mut known = Vec::new();
    let mut notices = Vec::new();
    for word in value.split(',').filter(|w| !w.is_empty()) {
        if word.eq_ignore_ascii_case("level") {
            known.push("LEVEL");
        } else {
            let line = format!("Ignoring unrecognized power option ({word})");
            notices.push(line.clone());
            notices.push(line);
        }
    }
    let flags = (!known.is_empty()).then(|| known.join(","));
    (flags, notices)
}

/// `--get-user-env[=timeout][S|L]`.
pub fn get_user_env(value: &str) -> Result<(), OptError> {
    let digits = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    match &value[digits..] {
        "" | "S" | "s" | "L" | "l" => Ok(()),
        _ => Err(usage("Invalid --get-user-env specification")),
    }
}

/// `--gpu-bind`: `[verbose,]` then one of `closest`, `none`,
/// `map_gpu:list`, `mask_gpu:list`, `single:n`, `per_task:n`.
pub fn gpu_bind(value: &str) -> Result<(), OptError> {
    let body = value.strip_prefix("verbose,").unwrap_or(value);
    let n = |s: &str| s.parse::<u32>().is_ok_and(|n| n > 0);
    let ok = match body.split_once(':') {
        None => matches!(body, "closest" | "none" | "verbose"),
        Some(("map_gpu" | "mask_gpu", list)) => !list.is_empty(),
        Some(("single" | "per_task", count)) => n(count),
        Some(_) => false,
    };
    if ok {
        Ok(())
    } else {
        Err(usage(format!("Invalid --gpu-bind argument: gpu:{value}")))
    }
}

/// The GRES a job asks for must be of the kinds slurm.conf's GresTypes
/// names, spelled `name[:type][:count]`; `--gpus*` ask for `gpu`, and
/// `--cpus-per-gpu`/`--mem-per-gpu` need GPUs asked for. Slurm's sbatch
/// refuses the others itself, before it submits.
pub fn gres_kinds(o: &SbatchOpts, gres_types: &[String]) -> Result<(), OptError> {
    let bad = || refused("Invalid generic resource (gres) specification");
    let known = |name: &str| gres_types.iter().any(|t| t == name);
    let mut gres_gpu = false;
    if let Some(list) = o.gres.as_deref() {
        for item in list.split(',').filter(|i| !i.is_empty()) {
            let item = item.strip_prefix("gres/").unwrap_or(item);
            match GresSpec::parse(item) {
                // A count of 0 asks for nothing, whatever it names.
                Some(spec) if spec.count == 0 => {}
                Some(spec) if known(&spec.name) => gres_gpu |= spec.name == "gpu",
                _ => return Err(bad()),
            }
        }
    }
    // A count of 0 (`--gpus=0`, `--gpus-per-node=a100:0`) asks for none.
    let asks = |g: &Option<String>| g.as_deref().is_some_and(|v| !zero_gpus(v));
    let gpus = [
        &o.gpus,
        &o.gpus_per_node,
        &o.gpus_per_task,
        &o.gpus_per_socket,
    ];
    let asks_gpus = gpus.iter().any(|g| asks(g));
    if asks_gpus && !known("gpu") {
        return Err(bad());
    }
    // --ntasks-per-gpu makes a GPU request of its own from the task (or
    // node) count; there must be one to make it from.
    if let Some(per_gpu) = o.ntasks_per_gpu.filter(|_| !(asks_gpus || gres_gpu)) {
        let tasks = o.ntasks.or(o.nodes.map(|(min, _)| min));
        let text = match tasks {
            None => "gres_job_state_validate: --ntasks-per-tres needs either a GRES GPU \
                     specification or a node/ntask specification"
                .to_owned(),
            Some(_) if known("gpu") => String::new(),
            Some(n) => format!(
                "gres_job_state_validate: Failed to add generated GRES gres:gpu:{} \
                 (via ntasks_per_tres) to gres_list",
                (n / per_gpu.max(1)).max(1)
            ),
        };
        if !text.is_empty() {
            return Err(refused(format!(
                "{text}\nInvalid generic resource (gres) specification"
            )));
        }
    }
    let per_gpu = o.cpus_per_gpu.is_some_and(|n| n > 0) || o.mem_per_gpu.is_some_and(|m| m > 0);
    if per_gpu && !(asks_gpus || gres_gpu) {
        return Err(bad());
    }
    if asks(&o.gpus_per_task) && o.gpus.is_none() && o.ntasks.is_none() {
        return Err(refused(
            "Failed to validate job spec. --gpus-per-task used without either --gpus or \
             -n/--ntasks is not allowed.\nInvalid generic resource (gres) specification",
        ));
    }
    Ok(())
}

/// Whether a `--gpus*` value (`[type:]count`) asks for no GPU: its count
/// reads as 0.
fn zero_gpus(value: &str) -> bool {
    let count = value.rsplit(':').next().unwrap_or(value).trim();
    count.parse::<u64>() == Ok(0)
}

/// Largest node file read. Slurm streams the file, so it has no limit; here
/// the file is read whole, and a million hosts on lines of at most
/// [`MAX_NODE_FILE_LINE`] bytes fit with room to spare for comments.
pub const MAX_NODE_FILE_BYTES: usize = 64 * 1024 * 1024;

/// Longest line of a node file, without its newline. Slurm reads lines into
/// a buffer of 1024 bytes and refuses one that fills it.
pub const MAX_NODE_FILE_LINE: usize = 1022;

/// Why a node file (`-F/--nodefile`, or a `-w/--nodelist` value holding a
/// `/`) gives no node list. [`NodeFileError::slurm_text`] is what sbatch
/// prints.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NodeFileError {
    /// The file could not be opened; `reason` is the system's text
    /// (`No such file or directory`).
    #[error("cannot open node file {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("node file {path} is larger than {limit} bytes")]
    TooLarge { path: String, limit: usize },
    /// `line` counts from 1.
    #[error("line {line} of node file {path} is longer than {limit} bytes")]
    LineTooLong {
        path: String,
        line: usize,
        limit: usize,
    },
    /// A line that does not start with an ASCII letter or digit (after
    /// its comment is removed): a blank, a comma, a bracket. `line` counts
    /// from 1.
    #[error("line {line} of node file {path} does not start with a host name")]
    BadLine { path: String, line: usize },
    #[error("line {line} of node file {path}: {source}")]
    Hostlist {
        path: String,
        line: usize,
        #[source]
        source: HostlistError,
    },
    #[error("node file {path} names more than {limit} hosts")]
    TooManyHosts { path: String, limit: usize },
    #[error("node file {path} names no hosts")]
    Empty { path: String },
}

impl NodeFileError {
    /// The line Slurm 22.05's sbatch prints after `sbatch: error: `. Where
    /// Slurm has no sensible text (a bad host list expression makes it
    /// report a memory allocation failure), this error's own.
    pub fn slurm_text(&self) -> String {
        match self {
            Self::Open { path, reason } => {
                format!("slurm_allocate_resources error opening file {path}, {reason}")
            }
            // Slurm numbers this line from 0, unlike the next.
            Self::LineTooLong { path, line, .. } => {
                format!(
                    "Line {}, of hostfile {path} too long",
                    line.saturating_sub(1)
                )
            }
            Self::BadLine { path, line } => {
                format!("Invalid hostfile {path} contents on line {line}")
            }
            Self::Empty { .. } => "Hostlist is empty!".to_owned(),
            Self::TooLarge { .. } | Self::Hostlist { .. } | Self::TooManyHosts { .. } => {
                self.to_string()
            }
        }
    }

    /// Whether Slurm ends sbatch with status 1 here rather than treating
    /// the file as an invalid option (status 255).
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Hostlist { .. } | Self::TooManyHosts { .. })
    }
}

/// The node list a node file names, as Slurm's sbatch reads one: host list
/// expressions separated by blanks, commas or lines; `#` starts a comment;
/// empty lines are skipped, and every other line must start with an ASCII
/// letter or digit. The hosts come back sorted, without duplicates, and
/// compressed (`n2`, `n1`, `n1` gives `n[1-2]`), which is what sbatch
/// sends as the job's required nodes. `path` only names the file in errors.
///
/// Bytes are taken as they are: a carriage return stays part of the host
/// name before it, as in Slurm. Where Slurm misreads a malformed expression
/// (`n[1-` becomes the host `n]`), this refuses it.
pub fn node_file(path: &str, bytes: &[u8]) -> Result<String, NodeFileError> {
    if bytes.len() > MAX_NODE_FILE_BYTES {
        return Err(NodeFileError::TooLarge {
            path: path.to_owned(),
            limit: MAX_NODE_FILE_BYTES,
        });
    }
    let mut names: Vec<String> = Vec::new();
    // The file's last newline ends a line; it does not start an empty one.
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    for (index, raw) in body.split(|&b| b == b'\n').enumerate() {
        let line = index + 1;
        if raw.len() > MAX_NODE_FILE_LINE {
            return Err(NodeFileError::LineTooLong {
                path: path.to_owned(),
                line,
                limit: MAX_NODE_FILE_LINE,
            });
        }
        // Slurm's line is a C string: it ends at a NUL, and at a comment.
        let hosts = raw
            .split(|&b| b == 0 || b == b'#')
            .next()
            .unwrap_or_default();
        match hosts.first() {
            None => continue,
            Some(b) if b.is_ascii_alphanumeric() => {}
            Some(_) => {
                return Err(NodeFileError::BadLine {
                    path: path.to_owned(),
                    line,
                })
            }
        }
        let expr = String::from_utf8_lossy(hosts);
        let expanded = hostlist::expand(&expr).map_err(|source| NodeFileError::Hostlist {
            path: path.to_owned(),
            line,
            source,
        })?;
        if names.len().saturating_add(expanded.len()) > hostlist::MAX_HOSTS {
            return Err(NodeFileError::TooManyHosts {
                path: path.to_owned(),
                limit: hostlist::MAX_HOSTS,
            });
        }
        names.extend(expanded);
    }
    if names.is_empty() {
        return Err(NodeFileError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(hostlist::compress_unique(&names))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cpu_freq_env_spells_values_as_slurm() {
        for (given, shown) in [
            ("high", "High"),
            ("highm1", "Highm1"),
            ("1000", "1000"),
            ("1000-2000", "1000-2000"),
            ("low-high:performance", "Low-High:Performance"),
            ("ondemand", "OnDemand"),
            ("UserSpace", "UserSpace"),
            ("1000-2000:userspace", "1000-2000:UserSpace"),
        ] {
            assert_eq!(CpuFreq::read(given).env(), shown, "{given}");
        }
    }

    #[test]
    fn cpu_freq_governors_follow_the_configuration() {
        for ok in ["high", "1000-2000", "performance", "low-high:OnDemand"] {
            assert!(cpu_freq_allowed(ok, None).is_ok(), "{ok}");
        }
        assert_eq!(
            text(cpu_freq_allowed("1000-2000:conservative", None)),
            "governor of 1000-2000:conservative is not allowed in slurm.conf\n\
             Invalid --cpu-freq argument"
        );
        assert!(cpu_freq_allowed("Conservative", Some("conservative,ondemand")).is_ok());
        assert!(cpu_freq_allowed("performance", Some("OnDemand")).is_err());
    }

    #[test]
    fn profile_env_orders_and_capitalises() {
        for (given, shown) in [
            ("task", "Task"),
            ("TASK", "Task"),
            ("task,energy", "Energy,Task"),
            ("task,lustre", "Lustre,Task"),
            ("energy,lustre,network,task", "Energy,Lustre,Network,Task"),
            ("energy,none", "None"),
            ("none,energy", "None"),
            ("all", "All"),
        ] {
            assert_eq!(profile_env(given), shown, "{given}");
        }
    }

    fn text(r: Result<(), OptError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn node_counts_as_slurm_reads_them() {
        assert_eq!(node_count("3").unwrap(), (3, None));
        assert_eq!(node_count("2-4").unwrap(), (2, Some(4)));
        assert_eq!(node_count("1k").unwrap(), (1024, None));
        let err = |v: &str| node_count(v).unwrap_err().to_string();
        assert_eq!(err("abc"), "\"abc\" is not a valid node count");
        assert_eq!(err("1-2-3"), "\"2-3\" is not a valid node count");
        assert_eq!(
            err("3-2"),
            "Maximum node count 2 is less than minimum node count 3"
        );
        assert_eq!(
            err("2-"),
            "Maximum node count -1 is less than minimum node count 2"
        );
        // A missing minimum is 1 (Slurm 22.05 ran `-N -5` as 1-5, and
        // read `-N --hold` as the count "--hold").
        assert_eq!(node_count("-5").unwrap(), (1, Some(5)));
        assert_eq!(node_count("2-0").unwrap(), (2, Some(0)));
        assert_eq!(node_count("0-0").unwrap(), (0, None));
        assert_eq!(
            err("-"),
            "Maximum node count -1 is less than minimum node count 1"
        );
        assert_eq!(err("--hold"), "\"-hold\" is not a valid node count");
        assert_eq!(err("-x"), "\"x\" is not a valid node count");
        assert_eq!(err("99999999999"), "Invalid node count specification");
        assert_eq!(
            err("9999999999999999999999k"),
            "\"9999999999999999999999k\" is not a valid node count"
        );
    }

    #[test]
    fn numeric_refusals_exit_1() {
        let e = count_from("0", "--thread-spec", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid numeric value \"0\" for --thread-spec."
        );
        assert_eq!(e.exit_status(), 1);
        assert_eq!(
            text(extra_node_info("2:x").map(|_| ())),
            "Invalid numeric value \"x\" for second arg of -B."
        );
        assert_eq!(
            text(extra_node_info("2:2:x").map(|_| ())),
            "Invalid numeric value \"x\" for third arg of -B."
        );
        assert!(extra_node_info("*:2").is_ok() && extra_node_info("2:*:1").is_ok());
        // Slurm 22.05 took 0, and did not read past the third part.
        assert_eq!(extra_node_info("0:1").ok(), Some([Some(0), Some(1), None]));
        assert_eq!(
            extra_node_info("1:2:3:x:5").ok(),
            Some([Some(1), Some(2), Some(3)])
        );
        assert_eq!(
            text(switches("abc").map(|_| ())),
            "Invalid numeric value \"abc\" for --switches."
        );
        assert_eq!(switches("2@10:00").unwrap(), (2, Some(600)));
        assert_eq!(switches("1@1").unwrap(), (1, Some(60)));
        assert_eq!(switches("5@0").unwrap(), (5, Some(0)));
        assert_eq!(switches("3").unwrap(), (3, None));
        // An unreadable wait is no wait, as in Slurm.
        assert_eq!(switches("1@abc").unwrap(), (1, None));
        assert_eq!(switches("1@").unwrap(), (1, None));
        for bad in ["0", "0@2", "-1", "@5"] {
            assert!(switches(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn layouts_and_words() {
        for ok in [
            "BLOCK",
            "plane=4",
            "block:cyclic:fcyclic,Pack",
            "*:block",
            "cyclic",
        ] {
            assert!(distribution(ok).is_ok(), "{ok}");
        }
        for bad in ["foo", "block:foo", "block,foo", "block:block:block:block"] {
            let e = distribution(bad).unwrap_err();
            assert_eq!(e.to_string(), "Invalid --distribution specification");
            assert_eq!(e.exit_status(), 255);
        }
        assert_eq!(
            text(distribution("plane")),
            "Invalid plane size or size not specified\nInvalid --distribution specification"
        );
        assert_eq!(
            text(mail_type("FOO").map(|_| ())),
            "Invalid --mail-type specification"
        );
        assert!(profile("task,foo").is_ok() && profile("TASK").is_ok());
        assert_eq!(text(profile("foo")), "invalid --profile=foo option");
    }

    #[test]
    fn binding_options() {
        assert!(hint("multithread,compute_bound").is_ok());
        let e = hint("foo").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unrecognized --hint argument \"foo\", see --hint=help"
        );
        assert_eq!(e.exit_status(), 1);
        assert_eq!(hint("help").unwrap_err().exit_status(), 1);
        assert_eq!(mem_bind("help").unwrap_err().exit_status(), 255);
        assert_eq!(
            text(mem_bind("quiet,foo")),
            "unrecognized --mem-bind argument \"foo\""
        );
        assert!(mem_bind("v,map_mem:0,1").is_ok());
        assert_eq!(
            text(gpu_bind("verbose,foo")),
            "Invalid --gpu-bind argument: gpu:verbose,foo"
        );
        assert!(gpu_bind("closest").is_ok() && gpu_bind("single:1").is_ok());
    }

    #[test]
    fn tuning_options() {
        for ok in ["high", "Performance", "1000-2000:performance", "low-high"] {
            assert!(cpu_freq(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            text(cpu_freq("foo")),
            "unrecognized --cpu-freq argument \"foo\"\nInvalid --cpu-freq argument"
        );
        assert_eq!(
            text(cpu_freq("1000-bar")),
            "unrecognized --cpu-freq argument \"bar\"\nInvalid --cpu-freq argument"
        );
        assert_eq!(
            text(cpu_freq("low:foo")),
            "gov on cpu-frec (foo) illegal without max\nInvalid --cpu-freq argument"
        );
        // A range must not fall (equal ends are fine); kHz values come
        // before the named ones, as in Slurm 22.05.
        for (bad, min, max) in [
            ("2000-1000", "2000", "1000"),
            ("high-low", "high", "low"),
            ("low-1000", "low", "1000"),
        ] {
            assert_eq!(
                text(cpu_freq(bad)),
                format!(
                    "min cpu-frec ({min}) must be < max cpu-freq ({max})\nInvalid --cpu-freq argument"
                )
            );
        }
        for ok in ["1000-1000", "2000-high", "low-highm1", "medium-High"] {
            assert!(cpu_freq(ok).is_ok(), "{ok}");
        }
        assert!(propagate("CORE,STACK").is_ok() && propagate("RLIMIT_CORE").is_ok());
        assert!(propagate("").is_ok() && propagate("NONE").is_ok());
        let e = propagate("NONE,CORE").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Bad rlimit name: NONE\n--propagate=NONE,CORE is not valid."
        );
        assert_eq!(e.exit_status(), 1);
        assert_eq!(
            text(propagate("core")),
            "Bad rlimit name: core\n--propagate=core is not valid."
        );
        assert!(acctg_freq("30").is_ok() && acctg_freq("task=30,energy=0").is_ok());
        assert_eq!(
            text(acctg_freq("task=abc")),
            "Invalid --acctg-freq specification: task=abc"
        );
        assert_eq!(
            text(acctg_freq("foo=30")),
            "Invalid --acctg-freq specification: foo=30"
        );
        assert!(wait_all_nodes("0").is_ok());
        assert_eq!(
            text(wait_all_nodes("2")),
            "Invalid --wait-all-nodes specification"
        );
        assert!(delay_boot("1:00:00").is_ok());
        assert_eq!(
            text(delay_boot("x").map(|_| ())),
            "Invalid --delay-boot specification"
        );
        assert!(get_user_env("10L").is_ok() && get_user_env("").is_ok());
        assert_eq!(
            text(get_user_env("X")),
            "Invalid --get-user-env specification"
        );
    }

    #[test]
    fn gres_of_unconfigured_kinds_is_refused() {
        let types = vec!["gpu".to_owned()];
        let with = |gres: &str| SbatchOpts {
            gres: Some(gres.to_owned()),
            ..SbatchOpts::default()
        };
        for ok in ["gpu:1", "gpu", "gpu:abc", "gpu:1:2", "gpu:a100:2,gpu:1"] {
            assert!(gres_kinds(&with(ok), &types).is_ok(), "{ok}");
        }
        // Counts of 0 ask for nothing, even of a GRES not configured.
        for ok in ["gpu:0", "foo:0", "gpu:tesla:0", "gpu:0,foo:0"] {
            assert!(gres_kinds(&with(ok), &[]).is_ok(), "{ok}");
        }
        assert!(gres_kinds(&with("gpu:0,gpu:1"), &[]).is_err());
        for bad in ["foo:2", "gpu:a100:x", "gpu:1,foo"] {
            let e = gres_kinds(&with(bad), &types).unwrap_err();
            assert_eq!(
                e.to_string(),
                "Invalid generic resource (gres) specification"
            );
            assert_eq!(e.exit_status(), 1);
        }
        assert!(gres_kinds(&with("gpu:1"), &[]).is_err());
        let gpus = SbatchOpts {
            gpus: Some("abc".to_owned()),
            ..SbatchOpts::default()
        };
        assert!(gres_kinds(&gpus, &types).is_ok());
        assert!(gres_kinds(&gpus, &[]).is_err());
        assert!(gres_kinds(&SbatchOpts::default(), &[]).is_ok());
        // As Slurm 22.05: `--gpus*=0` (any type) and `--mem-per-gpu=0` ask
        // for nothing, so no GpuTypes are needed, nor a task count.
        let zero = |v: &str| SbatchOpts {
            gpus: Some(v.to_owned()),
            gpus_per_node: Some(v.to_owned()),
            gpus_per_task: Some(v.to_owned()),
            gpus_per_socket: Some(v.to_owned()),
            mem_per_gpu: Some(0),
            cpus_per_gpu: Some(0),
            ..SbatchOpts::default()
        };
        assert!(gres_kinds(&zero("0"), &[]).is_ok());
        assert!(gres_kinds(&zero("a100:0"), &[]).is_ok());
        assert!(gres_kinds(&zero("1"), &[]).is_err());
        let mem_only = SbatchOpts {
            mem_per_gpu: Some(10),
            ..SbatchOpts::default()
        };
        assert!(gres_kinds(&mem_only, &types).is_err());
        let per_task = |ntasks: Option<u32>| SbatchOpts {
            gpus_per_task: Some("1".to_owned()),
            ntasks,
            ..SbatchOpts::default()
        };
        assert_eq!(
            gres_kinds(&per_task(None), &types).unwrap_err().to_string(),
            "Failed to validate job spec. --gpus-per-task used without either --gpus or \
             -n/--ntasks is not allowed.\nInvalid generic resource (gres) specification"
        );
        assert!(gres_kinds(&per_task(Some(2)), &types).is_ok());
        // Without GresTypes=gpu only the GRES error is given.
        assert_eq!(
            gres_kinds(&per_task(None), &[]).unwrap_err().to_string(),
            "Invalid generic resource (gres) specification"
        );
    }

    /// Slurm 22.05 refuses `--cpus-per-gpu`/`--mem-per-gpu` without GPUs
    /// (status 1, no submission), and on a cluster without GresTypes=gpu
    /// with them too.
    #[test]
    fn gpu_ratios_need_a_gpu_request() {
        let types = vec!["gpu".to_owned(), "mps".to_owned()];
        let ratio = |gres: Option<&str>, gpus: Option<&str>| SbatchOpts {
            cpus_per_gpu: Some(2),
            gres: gres.map(str::to_owned),
            gpus: gpus.map(str::to_owned),
            ..SbatchOpts::default()
        };
        for (opts, types) in [
            (ratio(None, None), &types[..]),
            (ratio(Some("mps:10"), None), &types[..]),
            (ratio(None, Some("1")), &[]),
            (ratio(Some("gpu:1"), None), &[]),
        ] {
            let e = gres_kinds(&opts, types).unwrap_err();
            assert_eq!(
                e.to_string(),
                "Invalid generic resource (gres) specification"
            );
            assert_eq!(e.exit_status(), 1);
        }
        assert!(gres_kinds(&ratio(None, Some("1")), &types).is_ok());
        assert!(gres_kinds(&ratio(Some("gpu:1"), None), &types).is_ok());
        let mem = SbatchOpts {
            mem_per_gpu: Some(100),
            ..SbatchOpts::default()
        };
        assert!(gres_kinds(&mem, &types).is_err());
    }

    /// `--gpus-per-socket` and `--ntasks-per-gpu` on a cluster without
    /// GresTypes=gpu, as Slurm 22.05 refused them.
    #[test]
    fn gpus_per_socket_and_ntasks_per_gpu_need_gpus() {
        let socket = SbatchOpts {
            gpus_per_socket: Some("1".to_owned()),
            ..SbatchOpts::default()
        };
        assert_eq!(
            gres_kinds(&socket, &[]).unwrap_err().to_string(),
            "Invalid generic resource (gres) specification"
        );
        assert!(gres_kinds(&socket, &["gpu".to_owned()]).is_ok());
        let per_gpu = |ntasks: Option<u32>, nodes: Option<u32>| SbatchOpts {
            ntasks_per_gpu: Some(1),
            ntasks,
            nodes: nodes.map(|n| (n, None)),
            ..SbatchOpts::default()
        };
        let e = gres_kinds(&per_gpu(None, None), &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres_job_state_validate: --ntasks-per-tres needs either a GRES GPU specification \
             or a node/ntask specification\nInvalid generic resource (gres) specification"
        );
        assert_eq!(e.exit_status(), 1);
        for (opts, n) in [(per_gpu(Some(2), None), 2), (per_gpu(None, Some(1)), 1)] {
            assert_eq!(
                gres_kinds(&opts, &[]).unwrap_err().to_string(),
                format!(
                    "gres_job_state_validate: Failed to add generated GRES gres:gpu:{n} \
                     (via ntasks_per_tres) to gres_list\nInvalid generic resource (gres) \
                     specification"
                )
            );
        }
        assert!(gres_kinds(&per_gpu(Some(2), None), &["gpu".to_owned()]).is_ok());
    }

    #[test]
    fn power_gres_flags_and_delay_boot_read_as_slurm_reads_them() {
        assert_eq!(power("level"), (Some("LEVEL".to_owned()), vec![]));
        let line = "Ignoring unrecognized power option (foo)".to_owned();
        assert_eq!(
            power("LEVEL,foo"),
            (Some("LEVEL".to_owned()), vec![line.clone(), line])
        );
        assert_eq!(power("").0, None);
        assert_eq!(gres_flags("Enforce-Binding").ok(), Some(true));
        assert_eq!(gres_flags("disable-binding").ok(), Some(false));
        let e = gres_flags("foo").unwrap_err();
        assert_eq!(
            (e.to_string(), e.exit_status()),
            ("Invalid --gres-flags specification".to_owned(), 255)
        );
        assert_eq!(delay_boot("90").ok(), Some(90));
        assert_eq!(delay_boot("2-0").ok(), Some(2880));
        assert!(delay_boot("x").is_err());
    }

    /// What `scontrol show job` gave on Slurm 22.05 for each
    /// `--mail-type` (MailType=, or no mail line at all).
    #[test]
    fn mail_type_is_kept_as_slurm_keeps_it() {
        for (given, kept) in [
            ("END,BEGIN", Some("BEGIN,END")),
            ("begin,end", Some("BEGIN,END")),
            ("BEGIN,,END", Some("BEGIN,END")),
            ("BEGIN,FOO", Some("BEGIN")),
            (
                "ALL",
                Some("INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT"),
            ),
            (
                "ALL,TIME_LIMIT_90",
                Some("INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT,TIME_LIMIT_90"),
            ),
            (
                "BEGIN,END,FAIL,REQUEUE,TIME_LIMIT,TIME_LIMIT_90,TIME_LIMIT_80,\
                 TIME_LIMIT_50,STAGE_OUT,ARRAY_TASKS,INVALID_DEPEND",
                Some(
                    "ARRAY_TASKS,INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT,\
                     TIME_LIMIT_50,TIME_LIMIT_80,TIME_LIMIT_90,TIME_LIMIT",
                ),
            ),
            ("NONE", None),
            ("none", None),
            ("BEGIN,NONE", None),
            ("NONE,END", None),
            ("ALL,NONE", None),
        ] {
            assert_eq!(mail_type(given).unwrap().as_deref(), kept, "{given}");
        }
    }

    proptest::proptest! {
        #[test]
        fn no_value_panics(v in "\\PC{0,24}") {
            let _ = node_count(&v);
            let _ = extra_node_info(&v);
            let _ = switches(&v);
            let _ = distribution(&v);
            let _ = mail_type(&v);
            let _ = profile(&v);
            let _ = hint(&v);
            let _ = mem_bind(&v);
            let _ = cpu_freq(&v);
            let _ = propagate(&v);
            let _ = acctg_freq(&v);
            let _ = wait_all_nodes(&v);
            let _ = delay_boot(&v);
            let _ = get_user_env(&v);
            let _ = gpu_bind(&v);
        }
    }

    /// The node list of a file, or Slurm's text for its refusal.
    fn read(bytes: &str) -> Result<String, String> {
        node_file("hosts", bytes.as_bytes()).map_err(|e| e.slurm_text())
    }

    /// Each case here was checked against Slurm 22.05's sbatch, by the
    /// node list it sends or the error it prints.
    #[test]
    fn node_files_read_as_slurm_reads_them() {
        let cases: &[(&str, &str)] = &[
            ("n1\nn2\n", "n[1-2]"),
            ("n1,n2\n", "n[1-2]"),
            ("n1 n2\n", "n[1-2]"),
            ("n1\tn2\n", "n[1-2]"),
            ("n1, n2\n", "n[1-2]"),
            ("n1 ,n2\n", "n[1-2]"),
            ("n1,,n2\n", "n[1-2]"),
            ("n[1-2],\n", "n[1-2]"),
            ("n[1-2]\n", "n[1-2]"),
            ("n[1,3]\n", "n[1,3]"),
            // Sorted, without duplicates.
            ("n1\nn1\nn3\n", "n[1,3]"),
            ("n2\nn1\n", "n[1-2]"),
            ("n1 n1 n1\n", "n1"),
            ("n10\nn9\nn2\n", "n[2,9-10]"),
            ("n[1-2] n[2-3]\n", "n[1-3]"),
            ("n[1-2],m[3-4]\n", "m[3-4],n[1-2]"),
            ("b1,A1,a1\n", "A1,a1,b1"),
            ("n01,n1\n", "n[1,01]"),
            ("rack[1-2]-n[1-2]\n", "rack1-n[1-2],rack2-n[1-2]"),
            // Comments, empty lines, a missing last newline, trailing blanks.
            ("n1\n# comment\nn2\n", "n[1-2]"),
            ("n1\n#\nn2\n", "n[1-2]"),
            ("n1#c\n", "n1"),
            ("n1 # c\n", "n1"),
            ("n1", "n1"),
            ("n1\n\nn2\n", "n[1-2]"),
            ("\n\n\nn1\n", "n1"),
            ("n1\n\n\n", "n1"),
            ("n1 \n", "n1"),
            ("n1\t\n", "n1"),
            // Bytes are kept: a carriage return is part of the name.
            ("n1\r\nn2\r\n", "n1\r,n2\r"),
            ("nödé\n", "nödé"),
            ("1n\n", "1n"),
        ];
        for (text, want) in cases {
            assert_eq!(read(text), Ok((*want).to_owned()), "file {text:?}");
        }
    }

    #[test]
    fn node_file_refusals_carry_slurms_text() {
        let empty = "Hostlist is empty!";
        let line = |n: usize| format!("Invalid hostfile hosts contents on line {n}");
        let cases: Vec<(&str, String)> = vec![
            ("", empty.to_owned()),
            ("\n\n", empty.to_owned()),
            ("#only\n", empty.to_owned()),
            ("  n1  \n", line(1)),
            (" n1\n", line(1)),
            ("\tn1\n", line(1)),
            (",n1\n", line(1)),
            ("[1-2]\n", line(1)),
            ("_n1\n", line(1)),
            ("-n1\n", line(1)),
            (".n1\n", line(1)),
            ("ö1\n", line(1)),
            ("n1\n n2\n", line(2)),
            ("n1\n \n", line(2)),
            ("n1\r\n\r\nn2\n", line(2)),
        ];
        for (text, want) in cases {
            assert_eq!(read(text), Err(want), "file {text:?}");
        }
    }

    #[test]
    fn node_file_lines_fit_slurms_buffer() {
        // 1022 bytes fit, with or without a newline; 1023 do not, and
        // Slurm counts that line from 0.
        let fits = "n".repeat(MAX_NODE_FILE_LINE);
        assert_eq!(read(&fits), Ok(fits.clone()));
        assert_eq!(read(&format!("{fits}\n")), Ok(fits.clone()));
        let long = "n".repeat(MAX_NODE_FILE_LINE + 1);
        assert_eq!(
            read(&long),
            Err("Line 0, of hostfile hosts too long".into())
        );
        assert_eq!(
            read(&format!("n1\nn2\n{long}\n")),
            Err("Line 2, of hostfile hosts too long".into())
        );
        // A long comment is still a long line.
        assert!(read(&format!("#{long}\nn1\n")).is_err());
        let huge = vec![b'#'; MAX_NODE_FILE_BYTES + 1];
        assert_eq!(
            node_file("hosts", &huge),
            Err(NodeFileError::TooLarge {
                path: "hosts".into(),
                limit: MAX_NODE_FILE_BYTES
            })
        );
    }

    #[test]
    fn malformed_expressions_in_node_files_are_fatal() {
        // Slurm turns `n[1-` into the host `n]` and dies on the others;
        // all are refused here, with status 1.
        for text in [
            "n[1-\n",
            "a[1-2]b\n",
            "n[a-b]\n",
            "n[2-1]\n",
            "n1\nn[1-70000]\n",
        ] {
            let e = node_file("hosts", text.as_bytes()).unwrap_err();
            assert!(
                matches!(e, NodeFileError::Hostlist { .. }),
                "{text:?}: {e:?}"
            );
            assert!(e.is_fatal());
        }
        let line = node_file("hosts", b"n1\nn[2-1]\n").unwrap_err();
        assert!(matches!(line, NodeFileError::Hostlist { line: 2, .. }));
        assert!(!node_file("hosts", b"").unwrap_err().is_fatal());
    }

    #[test]
    fn node_files_name_at_most_a_million_hosts() {
        let text: String = (0..16).map(|i| format!("r{i}n[0-65535]\n")).collect();
        let e = node_file("hosts", text.as_bytes()).unwrap_err();
        assert_eq!(
            e,
            NodeFileError::TooManyHosts {
                path: "hosts".into(),
                limit: hostlist::MAX_HOSTS
            }
        );
        assert!(e.is_fatal());
    }

    proptest::proptest! {
        #[test]
        fn node_files_give_the_sorted_set_of_their_hosts(
            hosts in proptest::collection::vec("[a-c][0-9]{1,3}", 1..30),
            seps in proptest::collection::vec(proptest::sample::select(vec!["\n", ",", " ", "\t", " # c\n"]), 30),
        ) {
            let text: String = hosts
                .iter()
                .zip(&seps)
                .map(|(h, sep)| format!("{h}{sep}"))
                .collect();
            let got = node_file("hosts", text.as_bytes());
            let mut want = hosts.clone();
            want.sort();
            want.dedup();
            let expanded = got.as_ref().ok().and_then(|list| hostlist::expand(list).ok());
            let mut expanded = expanded.unwrap_or_default();
            expanded.sort();
            proptest::prop_assert_eq!(expanded, want, "{:?} gave {:?}", text, got);
        }

        #[test]
        fn node_file_reading_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = node_file("hosts", &bytes);
        }
    }
}
