//! The list-valued parameters of slurm.conf: `key=value,flag` option lists,
//! flag sets with Slurm's implications between flags, licenses, TRES weights.
//!
//! Where Slurm documents the words (PrologFlags, AccountingStorageEnforce,
//! ...), an unknown word is an error, because a misspelt enforcement flag
//! silently weakens a site's policy. Free-form grab-bags
//! (SlurmctldParameters, LaunchParameters, ...) keep every item in an
//! [`OptionList`] and leave interpretation to the code that uses them.

use std::fmt;
use std::time::Duration;

use super::plugins::word_enum;
use super::value::{parse_bool, split_list};

/// A `key=value,flag,...` list kept in order. Keys are compared without case.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OptionList(pub Vec<(String, Option<String>)>);

impl OptionList {
    /// Never fails: every comma-separated item is kept.
    pub fn parse(v: &str) -> Self {
        OptionList(
            split_list(v)
                .into_iter()
                .map(|item| match item.split_once('=') {
                    Some((k, val)) => (k.trim().to_string(), Some(val.trim().to_string())),
                    None => (item, None),
                })
                .collect(),
        )
    }

    /// Whether the item is present (as a flag or with a value).
    pub fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k.eq_ignore_ascii_case(key))
    }

    /// The value of the last `key=value` item.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .and_then(|(_, v)| v.as_deref())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for OptionList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match v {
                Some(v) => write!(f, "{k}={v}")?,
                None => f.write_str(k)?,
            }
        }
        Ok(())
    }
}

/// SchedulerParameters: the knobs the scheduler reads, typed, with 22.05's
/// defaults; every item (known or not) stays in `options`.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerParameters {
    pub bf_continue: bool,
    pub bf_interval: Duration,
    pub bf_max_job_test: u32,
    pub bf_max_job_user: Option<u32>,
    pub bf_resolution: Duration,
    pub bf_window: Duration,
    pub default_queue_depth: u32,
    pub defer: bool,
    pub kill_invalid_depend: bool,
    /// 0: no limit.
    pub max_rpc_cnt: u32,
    /// Bytes.
    pub max_script_size: u64,
    pub sched_interval: Duration,
    /// 0: no limit.
    pub sched_max_job_start: u32,
    pub sched_min_interval: Duration,
    pub options: OptionList,
}

impl Default for SchedulerParameters {
    fn default() -> Self {
        SchedulerParameters {
            bf_continue: false,
            bf_interval: Duration::from_secs(30),
            bf_max_job_test: 500,
            bf_max_job_user: None,
            bf_resolution: Duration::from_secs(60),
            bf_window: Duration::from_secs(1440 * 60),
            default_queue_depth: 100,
            defer: false,
            kill_invalid_depend: false,
            max_rpc_cnt: 0,
            max_script_size: 4 * 1024 * 1024,
            sched_interval: Duration::from_secs(60),
            sched_max_job_start: 0,
            sched_min_interval: Duration::from_micros(2),
            options: OptionList::default(),
        }
    }
}

impl SchedulerParameters {
    pub const EXPECTED: &'static str = "a comma list of scheduler options such as \
        bf_interval=<seconds>,bf_window=<minutes>,bf_max_job_test=<n>,bf_continue,\
        sched_interval=<seconds>,default_queue_depth=<n>";

    pub fn parse(v: &str) -> Option<Self> {
        let options = OptionList::parse(v);
        let mut p = SchedulerParameters::default();
        for (key, val) in &options.0 {
            let num = || val.as_deref().and_then(|s| s.trim().parse::<u32>().ok());
            match key.to_ascii_lowercase().as_str() {
                "bf_continue" => p.bf_continue = true,
                "defer" => p.defer = true,
                "kill_invalid_depend" => p.kill_invalid_depend = true,
                "bf_interval" => p.bf_interval = Duration::from_secs(num()?.into()),
                "bf_max_job_test" => p.bf_max_job_test = num()?,
                "bf_max_job_user" => p.bf_max_job_user = Some(num()?),
                "bf_resolution" => p.bf_resolution = Duration::from_secs(num()?.into()),
                "bf_window" => p.bf_window = Duration::from_secs(u64::from(num()?) * 60),
                "default_queue_depth" => p.default_queue_depth = num()?,
                "max_rpc_cnt" | "max_rpc_count" => p.max_rpc_cnt = num()?,
                "max_script_size" => p.max_script_size = num()?.into(),
                // Slurm documents -1 as "no periodic pass": kept as zero.
                "sched_interval" if val.as_deref().map(str::trim) == Some("-1") => {
                    p.sched_interval = Duration::ZERO;
                }
                "sched_interval" => p.sched_interval = Duration::from_secs(num()?.into()),
                "sched_max_job_start" => p.sched_max_job_start = num()?,
                "sched_min_interval" => p.sched_min_interval = Duration::from_micros(num()?.into()),
                _ => {}
            }
        }
        p.options = options;
        Some(p)
    }
}

/// JobAcctGatherFrequency: sampling intervals (0 disables one kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcctGatherFrequency {
    pub task: Duration,
    pub energy: Duration,
    pub network: Duration,
    pub filesystem: Duration,
}

impl Default for AcctGatherFrequency {
    fn default() -> Self {
        AcctGatherFrequency {
            task: Duration::from_secs(30),
            energy: Duration::ZERO,
            network: Duration::ZERO,
            filesystem: Duration::ZERO,
        }
    }
}

impl AcctGatherFrequency {
    pub const EXPECTED: &'static str =
        "seconds, or a comma list of task=, energy=, network=, filesystem= seconds";

    pub fn parse(v: &str) -> Option<Self> {
        let mut f = AcctGatherFrequency::default();
        let items = split_list(v);
        if items.is_empty() {
            return None;
        }
        for item in items {
            match item.split_once('=') {
                None => f.task = Duration::from_secs(item.parse::<u32>().ok()?.into()),
                Some((k, s)) => {
                    let d = Duration::from_secs(s.trim().parse::<u32>().ok()?.into());
                    match k.trim().to_ascii_lowercase().as_str() {
                        "task" => f.task = d,
                        "energy" => f.energy = d,
                        "network" => f.network = d,
                        "filesystem" => f.filesystem = d,
                        _ => return None,
                    }
                }
            }
        }
        Some(f)
    }
}

/// One entry of Licenses=: a cluster-wide countable license.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct License {
    pub name: String,
    pub count: u32,
}

impl License {
    pub const EXPECTED: &'static str = "a comma list of name[:count]";

    /// `matlab:4,fluent*2,abaqus` (count defaults to 1). Items may also be
    /// separated by `;`, as Slurm's own parser allows; a name given twice
    /// counts once with the counts added (Slurm merges them too), in the
    /// order of its first appearance. `None` for an empty name, a count
    /// that is not a number or does not fit 32 bits, or a sum that
    /// overflows.
    pub fn parse_list(v: &str) -> Option<Vec<License>> {
        let mut out: Vec<License> = Vec::new();
        for item in v.split([',', ';']).map(str::trim).filter(|i| !i.is_empty()) {
            let (name, count) = match item.split_once([':', '*']) {
                Some((n, c)) => (n.trim(), c.trim().parse::<u32>().ok()?),
                None => (item, 1),
            };
            if name.is_empty() {
                return None;
            }
            match out.iter_mut().find(|l| l.name == name) {
                Some(l) => l.count = l.count.checked_add(count)?,
                None => out.push(License {
                    name: name.to_string(),
                    count,
                }),
            }
        }
        Some(out)
    }
}

/// One `TRES=weight` entry of PriorityWeightTRES or TRESBillingWeights. A
/// unit suffix on the weight (`Mem=0.25G`: per GB) is folded in, so
/// `weight` is always per base unit (MB for memory).
#[derive(Debug, Clone, PartialEq)]
pub struct TresWeight {
    pub tres: String,
    pub weight: f64,
}

impl TresWeight {
    pub const EXPECTED: &'static str =
        "a comma list of TRES=weight such as CPU=1.0,Mem=0.25G,GRES/gpu=2.0";

    pub fn parse_list(v: &str) -> Option<Vec<TresWeight>> {
        split_list(v)
            .into_iter()
            .map(|item| {
                let (tres, w) = item.split_once('=')?;
                let tres = tres.trim();
                let w = w.trim();
                let (num, per_mb) = match w.chars().last()?.to_ascii_uppercase() {
                    'K' => (&w[..w.len() - 1], 1.0 / 1024.0),
                    'M' => (&w[..w.len() - 1], 1.0),
                    'G' => (&w[..w.len() - 1], 1024.0),
                    'T' => (&w[..w.len() - 1], 1024.0 * 1024.0),
                    'P' => (&w[..w.len() - 1], 1024.0 * 1024.0 * 1024.0),
                    _ => (w, 1.0),
                };
                let weight: f64 = num.parse().ok()?;
                (!tres.is_empty() && weight.is_finite() && weight >= 0.0).then(|| TresWeight {
                    tres: tres.to_string(),
                    weight: weight / per_mb,
                })
            })
            .collect()
    }
}

word_enum! {
    /// One PrivateData word: what users may not see of others.
    PrivateData,
    expected "a comma list of accounts, cloud, events, jobs, nodes, partitions, \
              reservations, usage, users or none" {
        Accounts => "accounts",
        Cloud => "cloud",
        Events => "events",
        Jobs => "jobs",
        Nodes => "nodes",
        Partitions => "partitions",
        Reservations => "reservations",
        Usage => "usage",
        Users => "users",
    }
}

impl PrivateData {
    /// `none` is the empty list.
    pub fn parse_list(v: &str) -> Option<Vec<PrivateData>> {
        let mut out = Vec::new();
        for item in split_list(v) {
            if item.eq_ignore_ascii_case("none") {
                continue;
            }
            let p = PrivateData::parse(&item)?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        Some(out)
    }
}

word_enum! {
    /// One resource limit name of PropagateResourceLimits.
    Rlimit,
    expected "ALL, NONE or a comma list of AS, CORE, CPU, DATA, FSIZE, MEMLOCK, NOFILE, \
              NPROC, RSS, STACK" {
        As => "AS",
        Core => "CORE",
        Cpu => "CPU",
        Data => "DATA",
        Fsize => "FSIZE",
        Memlock => "MEMLOCK",
        Nofile => "NOFILE",
        Nproc => "NPROC",
        Rss => "RSS",
        Stack => "STACK",
    }
}

/// PropagateResourceLimits: which submit-host rlimits follow the job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PropagateLimits {
    #[default]
    All,
    None,
    Only(Vec<Rlimit>),
}

impl PropagateLimits {
    pub const EXPECTED: &'static str = Rlimit::EXPECTED;

    pub fn parse(v: &str) -> Option<Self> {
        let items = split_list(v);
        match items.as_slice() {
            [] => None,
            [one] if one.eq_ignore_ascii_case("ALL") => Some(PropagateLimits::All),
            [one] if one.eq_ignore_ascii_case("NONE") => Some(PropagateLimits::None),
            _ => items
                .iter()
                .map(|i| Rlimit::parse(i))
                .collect::<Option<Vec<_>>>()
                .map(PropagateLimits::Only),
        }
    }

    pub fn propagates(&self, limit: Rlimit) -> bool {
        match self {
            PropagateLimits::All => true,
            PropagateLimits::None => false,
            PropagateLimits::Only(l) => l.contains(&limit),
        }
    }
}

/// Parses a comma list of known words into a struct of flags; returns None
/// on an unknown word.
fn parse_flag_words(v: &str, mut set: impl FnMut(&str) -> bool) -> Option<()> {
    for item in split_list(v) {
        if !set(&item.to_ascii_lowercase()) {
            return None;
        }
    }
    Some(())
}

/// PrologFlags, with Slurm's implications applied (Contain implies Alloc;
/// X11 and RunInJob imply Contain).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrologFlags {
    pub alloc: bool,
    pub contain: bool,
    pub defer_batch: bool,
    pub force_requeue_on_fail: bool,
    pub no_hold: bool,
    pub run_in_job: bool,
    pub serial: bool,
    pub x11: bool,
}

impl PrologFlags {
    pub const EXPECTED: &'static str = "a comma list of Alloc, Contain, DeferBatch, \
        ForceRequeueOnFail, NoHold, RunInJob, Serial, X11 or none";

    pub fn parse(v: &str) -> Option<Self> {
        let mut f = PrologFlags::default();
        parse_flag_words(v, |w| {
            match w {
                "alloc" => f.alloc = true,
                "contain" => f.contain = true,
                "deferbatch" => f.defer_batch = true,
                "forcerequeueonfail" => f.force_requeue_on_fail = true,
                "nohold" => f.no_hold = true,
                "runinjob" => f.run_in_job = true,
                "serial" => f.serial = true,
                "x11" => f.x11 = true,
                "none" => {}
                _ => return false,
            }
            true
        })?;
        if f.x11 || f.run_in_job {
            f.contain = true;
        }
        if f.contain {
            f.alloc = true;
        }
        Some(f)
    }
}

/// AccountingStorageEnforce, with Slurm's implications applied (`all`; limits,
/// qos, wckeys and safe all imply associations; safe implies limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AccountingEnforce {
    pub associations: bool,
    pub limits: bool,
    pub qos: bool,
    pub safe: bool,
    pub wckeys: bool,
    pub nojobs: bool,
    pub nosteps: bool,
}

impl AccountingEnforce {
    pub const EXPECTED: &'static str = "a comma list of associations, limits, qos, safe, \
        wckeys, all, nojobs, nosteps or none";

    pub fn parse(v: &str) -> Option<Self> {
        let mut f = AccountingEnforce::default();
        parse_flag_words(v, |w| {
            match w {
                "associations" | "assoc" => f.associations = true,
                "limits" => f.limits = true,
                "qos" => f.qos = true,
                "safe" => f.safe = true,
                "wckeys" | "wckey" => f.wckeys = true,
                "nojobs" => f.nojobs = true,
                "nosteps" => f.nosteps = true,
                "all" => {
                    f.associations = true;
                    f.limits = true;
                    f.qos = true;
                    f.safe = true;
                    f.wckeys = true;
                }
                "none" => {}
                _ => return false,
            }
            true
        })?;
        if f.safe {
            f.limits = true;
        }
        if f.limits || f.qos || f.wckeys {
            f.associations = true;
        }
        if f.nojobs {
            f.nosteps = true;
        }
        Some(f)
    }

    pub fn is_none(&self) -> bool {
        *self == AccountingEnforce::default()
    }
}

/// HealthCheckNodeState: node states on which the health check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthCheckNodeState {
    pub any: bool,
    pub alloc: bool,
    pub idle: bool,
    pub mixed: bool,
    pub nondrained_idle: bool,
    /// Spread the checks over HealthCheckInterval instead of all at once.
    pub cycle: bool,
}

impl Default for HealthCheckNodeState {
    fn default() -> Self {
        HealthCheckNodeState {
            any: true,
            alloc: false,
            idle: false,
            mixed: false,
            nondrained_idle: false,
            cycle: false,
        }
    }
}

impl HealthCheckNodeState {
    pub const EXPECTED: &'static str =
        "a comma list of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE";

    pub fn parse(v: &str) -> Option<Self> {
        let mut f = HealthCheckNodeState {
            any: false,
            ..Default::default()
        };
        if split_list(v).is_empty() {
            return None;
        }
        parse_flag_words(v, |w| {
            match w {
                "any" => f.any = true,
                "alloc" => f.alloc = true,
                "idle" => f.idle = true,
                "mixed" => f.mixed = true,
                "nondrained_idle" => f.nondrained_idle = true,
                "cycle" => f.cycle = true,
                _ => return false,
            }
            true
        })?;
        if !(f.alloc || f.idle || f.mixed || f.nondrained_idle) {
            // CYCLE alone still checks every node.
            f.any = true;
        }
        Some(f)
    }
}

/// A yes/no flag inside an option list (`Flag=yes`), used by some plugins.
pub fn option_bool(options: &OptionList, key: &str) -> Option<bool> {
    options.get(key).and_then(parse_bool)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn option_list_keeps_order_and_finds_keys_without_case() {
        let o = OptionList::parse("enable_configless,jwt_key=/k,Foo=1");
        assert!(o.has("ENABLE_CONFIGLESS"));
        assert_eq!(o.get("JWT_KEY"), Some("/k"));
        assert_eq!(o.get("enable_configless"), None);
        assert_eq!(o.to_string(), "enable_configless,jwt_key=/k,Foo=1");
        assert!(OptionList::parse("").is_empty());
        assert_eq!(option_bool(&o, "foo"), Some(true));
    }

    #[test]
    fn scheduler_parameters_typed_and_defaults() {
        let d = SchedulerParameters::default();
        assert_eq!(d.bf_interval, Duration::from_secs(30));
        let p = SchedulerParameters::parse(
            "bf_interval=1,sched_interval=1,bf_continue,\
                                            bf_window=60,unknown_knob=3",
        )
        .unwrap();
        assert_eq!(p.bf_interval, Duration::from_secs(1));
        assert_eq!(p.sched_interval, Duration::from_secs(1));
        let off = SchedulerParameters::parse("sched_interval=-1").unwrap();
        assert_eq!(off.sched_interval, Duration::ZERO);
        assert!(SchedulerParameters::parse("sched_interval=-2").is_none());
        assert!(SchedulerParameters::parse("sched_interval=").is_none());
        assert_eq!(p.bf_window, Duration::from_secs(3600));
        assert!(p.bf_continue);
        assert_eq!(p.options.get("unknown_knob"), Some("3"));
        assert_eq!(SchedulerParameters::parse("bf_interval=abc"), None);
        assert_eq!(SchedulerParameters::parse("bf_interval"), None);
    }

    #[test]
    fn acct_gather_frequency_forms() {
        let f = AcctGatherFrequency::parse("30").unwrap();
        assert_eq!(f.task, Duration::from_secs(30));
        let f = AcctGatherFrequency::parse("task=10,energy=5").unwrap();
        assert_eq!(f.task, Duration::from_secs(10));
        assert_eq!(f.energy, Duration::from_secs(5));
        assert_eq!(AcctGatherFrequency::parse("gpu=3"), None);
        assert_eq!(AcctGatherFrequency::parse("x"), None);
    }

    #[test]
    fn licenses() {
        let l = License::parse_list("matlab:4,fluent*2,abaqus").unwrap();
        assert_eq!(
            l,
            vec![
                License {
                    name: "matlab".into(),
                    count: 4
                },
                License {
                    name: "fluent".into(),
                    count: 2
                },
                License {
                    name: "abaqus".into(),
                    count: 1
                },
            ]
        );
        assert_eq!(License::parse_list("x:abc"), None);
        assert_eq!(License::parse_list(":3"), None);
    }

    #[test]
    fn licenses_merge_repeats_and_take_semicolons() {
        let l = License::parse_list("foo:4;bar,foo:2,,").unwrap();
        assert_eq!(
            l,
            vec![
                License {
                    name: "foo".into(),
                    count: 6
                },
                License {
                    name: "bar".into(),
                    count: 1
                },
            ]
        );
        assert_eq!(License::parse_list(""), Some(vec![]));
        assert_eq!(License::parse_list("x:4294967296"), None);
        assert_eq!(License::parse_list("x:4294967295,x:1"), None);
        assert_eq!(License::parse_list("x:-1"), None);
        let u = License::parse_list("licença:2").unwrap();
        assert_eq!((u[0].name.as_str(), u[0].count), ("licença", 2));
    }

    #[test]
    fn tres_weights_fold_units() {
        let w = TresWeight::parse_list("CPU=1.0,Mem=0.25G,GRES/gpu=2").unwrap();
        assert_eq!(
            w[0],
            TresWeight {
                tres: "CPU".into(),
                weight: 1.0
            }
        );
        assert!((w[1].weight - 0.25 / 1024.0).abs() < 1e-12);
        assert_eq!(w[2].tres, "GRES/gpu");
        assert_eq!(TresWeight::parse_list("CPU"), None);
        assert_eq!(TresWeight::parse_list("CPU=-1"), None);
        assert_eq!(TresWeight::parse_list("CPU=inf"), None);
        assert_eq!(TresWeight::parse_list("CPU=é"), None);
    }

    #[test]
    fn flag_sets_apply_implications() {
        let p = PrologFlags::parse("X11").unwrap();
        assert!(p.x11 && p.contain && p.alloc);
        assert!(PrologFlags::parse("Contain,Bogus").is_none());
        let a = AccountingEnforce::parse("safe").unwrap();
        assert!(a.safe && a.limits && a.associations && !a.qos);
        let a = AccountingEnforce::parse("all,nojobs").unwrap();
        assert!(a.qos && a.wckeys && a.nojobs && a.nosteps);
        assert!(AccountingEnforce::parse("none").unwrap().is_none());
        let h = HealthCheckNodeState::parse("IDLE,CYCLE").unwrap();
        assert!(h.idle && h.cycle && !h.any);
        assert!(HealthCheckNodeState::parse("CYCLE").unwrap().any);
        assert!(HealthCheckNodeState::parse("sleepy").is_none());
    }

    #[test]
    fn private_data_and_propagate_limits() {
        assert_eq!(
            PrivateData::parse_list("jobs,usage,jobs").unwrap(),
            vec![PrivateData::Jobs, PrivateData::Usage]
        );
        assert_eq!(PrivateData::parse_list("none").unwrap(), vec![]);
        assert!(PrivateData::parse_list("secrets").is_none());
        assert_eq!(PropagateLimits::parse("ALL"), Some(PropagateLimits::All));
        let p = PropagateLimits::parse("CORE,nofile").unwrap();
        assert!(p.propagates(Rlimit::Nofile) && !p.propagates(Rlimit::Stack));
        assert_eq!(PropagateLimits::parse("ALL,CORE"), None);
    }
}
