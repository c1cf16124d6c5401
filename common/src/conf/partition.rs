//! `PartitionName=` lines of slurm.conf.
//!
//! A partition is a queue over a set of nodes with its own limits. Its
//! `Nodes=` may mix host lists, NodeSet names and `ALL`; they are resolved
//! against the NodeName lines (wherever in the file those are), and a name
//! that is none of them is an error, since a partition silently missing a
//! node is a capacity bug that nobody notices.
//!
//! `PartitionName=DEFAULT` lines set defaults for the partitions after them.
//! Values that Slurm documents as "the cluster value" when unset (memory
//! defaults and limits, PreemptMode) are filled in from the top-level keys,
//! so consumers read one resolved value.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use super::lexer::Pair;
use super::node::{NodeConf, NodeSet};
use super::options::TresWeight;
use super::plugins::{word_enum, PreemptMode, SelectTypeParameters};
use super::value::{is_unlimited, record_attrs, split_list, Field};
use super::{ConfError, ConfWarning, SourceLoc, WarningKind};
use crate::time::TimeLimit;

word_enum! {
    /// Partition State=.
    PartitionState, default Up, expected "UP, DOWN, DRAIN or INACTIVE" {
        /// Accepts and starts jobs.
        Up => "UP",
        /// Accepts jobs, starts none.
        Down => "DOWN",
        /// Starts queued jobs, accepts no new ones.
        Drain => "DRAIN",
        /// Neither.
        Inactive => "INACTIVE",
    }
}

/// OverSubscribe= (old name Shared=): how many jobs may share a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OverSubscribe {
    #[default]
    No,
    /// Whole nodes only.
    Exclusive,
    /// Jobs may ask to share, up to this many per resource.
    Yes(u16),
    /// Always shared, up to this many per resource.
    Force(u16),
}

impl OverSubscribe {
    pub const EXPECTED: &'static str = "NO, EXCLUSIVE, YES[:count] or FORCE[:count]";
    /// The job count when YES or FORCE give none.
    pub const DEFAULT_COUNT: u16 = 4;

    pub fn parse(v: &str) -> Option<Self> {
        let v = v.trim();
        let (word, count) = match v.split_once(':') {
            Some((w, c)) => (w, Some(c.trim().parse::<u16>().ok().filter(|c| *c > 0)?)),
            None => (v, None),
        };
        let count_or_default = count.unwrap_or(Self::DEFAULT_COUNT);
        match word.to_ascii_uppercase().as_str() {
            "NO" if count.is_none() => Some(OverSubscribe::No),
            "EXCLUSIVE" if count.is_none() => Some(OverSubscribe::Exclusive),
            "YES" => Some(OverSubscribe::Yes(count_or_default)),
            "FORCE" => Some(OverSubscribe::Force(count_or_default)),
            _ => None,
        }
    }
}

impl fmt::Display for OverSubscribe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverSubscribe::No => f.write_str("NO"),
            OverSubscribe::Exclusive => f.write_str("EXCLUSIVE"),
            OverSubscribe::Yes(n) => write!(f, "YES:{n}"),
            OverSubscribe::Force(n) => write!(f, "FORCE:{n}"),
        }
    }
}

/// A memory default or limit, per allocated CPU or per node (Slurm keeps one
/// value of either kind: DefMemPerCPU and DefMemPerNode exclude each other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemPer {
    /// MB per allocated CPU.
    Cpu(u64),
    /// MB per node.
    Node(u64),
}

/// One partition, defaults and cluster values applied.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionConf {
    pub loc: SourceLoc,
    pub name: String,
    /// Member nodes in node config order, without duplicates.
    pub nodes: Vec<String>,
    /// Nodes= as written (for display), if given.
    pub nodes_expr: Option<String>,
    pub default: bool,
    pub state: PartitionState,
    pub max_time: TimeLimit,
    /// None: jobs without a time limit get MaxTime.
    pub default_time: Option<TimeLimit>,
    /// None: unlimited.
    pub max_nodes: Option<u32>,
    pub min_nodes: u32,
    /// None: unlimited.
    pub max_cpus_per_node: Option<u32>,
    pub over_subscribe: OverSubscribe,
    pub priority_tier: u16,
    pub priority_job_factor: u16,
    pub preempt_mode: PreemptMode,
    pub qos: Option<String>,
    /// None: every account.
    pub allow_accounts: Option<Vec<String>>,
    pub deny_accounts: Vec<String>,
    /// None: every group.
    pub allow_groups: Option<Vec<String>>,
    /// None: every QOS.
    pub allow_qos: Option<Vec<String>>,
    pub deny_qos: Vec<String>,
    /// None: any submit host.
    pub alloc_nodes: Option<Vec<String>>,
    pub hidden: bool,
    pub root_only: bool,
    pub req_resv: bool,
    pub disable_root_jobs: bool,
    pub exclusive_user: bool,
    pub lln: bool,
    pub grace_time: Duration,
    /// None: the cluster's OverTimeLimit.
    pub over_time_limit: Option<TimeLimit>,
    /// None: the cluster's SelectTypeParameters.
    pub select_type_parameters: Option<SelectTypeParameters>,
    /// None: unlimited.
    pub def_mem: Option<MemPer>,
    /// None: unlimited.
    pub max_mem: Option<MemPer>,
    pub def_cpu_per_gpu: Option<u64>,
    pub def_mem_per_gpu: Option<u64>,
    pub tres_billing_weights: Vec<TresWeight>,
    pub alternate: Option<String>,
    pub cpu_bind: Option<String>,
}

pub(crate) const PARTITION_KEYS: &[&str] = &[
    "PartitionName",
    "AllocNodes",
    "AllowAccounts",
    "AllowGroups",
    "AllowQos",
    "Alternate",
    "CpuBind",
    "Default",
    "DefaultTime",
    "DefCpuPerGPU",
    "DefMemPerCPU",
    "DefMemPerGPU",
    "DefMemPerNode",
    "DenyAccounts",
    "DenyQos",
    "DisableRootJobs",
    "ExclusiveUser",
    "GraceTime",
    "Hidden",
    "LLN",
    "MaxCPUsPerNode",
    "MaxMemPerCPU",
    "MaxMemPerNode",
    "MaxNodes",
    "MaxTime",
    "MinNodes",
    "Nodes",
    "OverSubscribe",
    "OverTimeLimit",
    "PreemptMode",
    "PriorityJobFactor",
    "PriorityTier",
    "QOS",
    "ReqResv",
    "RootOnly",
    "SelectTypeParameters",
    "State",
    "TRESBillingWeights",
    // Known, kept only in the raw entries.
    "Exclusive",
    "JobDefaults",
    "MaxCPUsPerSocket",
    "PowerDownOnIdle",
    "ResumeTimeout",
    "SuspendTime",
    "SuspendTimeout",
    "Topology",
];

const PARTITION_ALIASES: &[(&str, &str)] = &[("Shared", "OverSubscribe")];

/// Partition attributes before defaults; None when not set. Memory values
/// are `Some(None)` when set to 0/UNLIMITED, to tell that from "not set".
#[derive(Debug, Clone, Default)]
struct PartTemplate {
    nodes: Option<String>,
    default: Option<bool>,
    state: Option<PartitionState>,
    max_time: Option<TimeLimit>,
    default_time: Option<TimeLimit>,
    max_nodes: Option<Option<u32>>,
    min_nodes: Option<u32>,
    max_cpus_per_node: Option<Option<u32>>,
    over_subscribe: Option<OverSubscribe>,
    priority_tier: Option<u16>,
    priority_job_factor: Option<u16>,
    preempt_mode: Option<PreemptMode>,
    qos: Option<String>,
    allow_accounts: Option<Option<Vec<String>>>,
    deny_accounts: Option<Vec<String>>,
    allow_groups: Option<Option<Vec<String>>>,
    allow_qos: Option<Option<Vec<String>>>,
    deny_qos: Option<Vec<String>>,
    alloc_nodes: Option<Option<Vec<String>>>,
    hidden: Option<bool>,
    root_only: Option<bool>,
    req_resv: Option<bool>,
    disable_root_jobs: Option<bool>,
    exclusive_user: Option<bool>,
    lln: Option<bool>,
    grace_time: Option<Duration>,
    over_time_limit: Option<TimeLimit>,
    select_type_parameters: Option<SelectTypeParameters>,
    def_mem_per_cpu: Option<Option<u64>>,
    def_mem_per_node: Option<Option<u64>>,
    max_mem_per_cpu: Option<Option<u64>>,
    max_mem_per_node: Option<Option<u64>>,
    def_cpu_per_gpu: Option<u64>,
    def_mem_per_gpu: Option<u64>,
    tres_billing_weights: Option<Vec<TresWeight>>,
    alternate: Option<String>,
    cpu_bind: Option<String>,
}

macro_rules! overlay_part {
    ($base:expr, $over:expr, $($field:ident),+ $(,)?) => {
        PartTemplate {
            $( $field: $over.$field.clone().or_else(|| $base.$field.clone()) ),+
        }
    };
}

impl PartTemplate {
    fn overlay(&self, over: &PartTemplate) -> PartTemplate {
        overlay_part!(
            self,
            over,
            nodes,
            default,
            state,
            max_time,
            default_time,
            max_nodes,
            min_nodes,
            max_cpus_per_node,
            over_subscribe,
            priority_tier,
            priority_job_factor,
            preempt_mode,
            qos,
            allow_accounts,
            deny_accounts,
            allow_groups,
            allow_qos,
            deny_qos,
            alloc_nodes,
            hidden,
            root_only,
            req_resv,
            disable_root_jobs,
            exclusive_user,
            lln,
            grace_time,
            over_time_limit,
            select_type_parameters,
            def_mem_per_cpu,
            def_mem_per_node,
            max_mem_per_cpu,
            max_mem_per_node,
            def_cpu_per_gpu,
            def_mem_per_gpu,
            tres_billing_weights,
            alternate,
            cpu_bind,
        )
    }

    fn parse(attrs: &[(&'static str, &str)], loc: &SourceLoc) -> Result<Self, ConfError> {
        let mut t = PartTemplate::default();
        for &(key, value) in attrs {
            let f = Field::new(key, value, loc);
            match key {
                "Nodes" => t.nodes = f.string(),
                "Default" => t.default = Some(f.bool()?),
                "State" => t.state = Some(f.with(PartitionState::EXPECTED, PartitionState::parse)?),
                "MaxTime" => t.max_time = Some(f.time_limit()?),
                "DefaultTime" => t.default_time = Some(f.time_limit()?),
                "MaxNodes" => t.max_nodes = Some(unlimited_u32(&f)?),
                "MinNodes" => t.min_nodes = Some(f.u32()?),
                "MaxCPUsPerNode" => t.max_cpus_per_node = Some(unlimited_u32(&f)?),
                "OverSubscribe" => {
                    t.over_subscribe = Some(f.with(OverSubscribe::EXPECTED, OverSubscribe::parse)?)
                }
                "PriorityTier" => t.priority_tier = Some(f.u16()?),
                "PriorityJobFactor" => t.priority_job_factor = Some(f.u16()?),
                "PreemptMode" => {
                    t.preempt_mode = Some(f.with(PreemptMode::EXPECTED, PreemptMode::parse)?)
                }
                "QOS" => t.qos = f.string(),
                "AllowAccounts" => t.allow_accounts = Some(all_or_list(value)),
                "DenyAccounts" => t.deny_accounts = Some(split_list(value)),
                "AllowGroups" => t.allow_groups = Some(all_or_list(value)),
                "AllowQos" => t.allow_qos = Some(all_or_list(value)),
                "DenyQos" => t.deny_qos = Some(split_list(value)),
                "AllocNodes" => t.alloc_nodes = Some(all_or_list(value)),
                "Hidden" => t.hidden = Some(f.bool()?),
                "RootOnly" => t.root_only = Some(f.bool()?),
                "ReqResv" => t.req_resv = Some(f.bool()?),
                "DisableRootJobs" => t.disable_root_jobs = Some(f.bool()?),
                "ExclusiveUser" => t.exclusive_user = Some(f.bool()?),
                "LLN" => t.lln = Some(f.bool()?),
                "GraceTime" => t.grace_time = Some(f.secs()?),
                "OverTimeLimit" => t.over_time_limit = Some(over_time_limit(&f)?),
                "SelectTypeParameters" => {
                    t.select_type_parameters =
                        Some(f.with(SelectTypeParameters::EXPECTED, SelectTypeParameters::parse)?)
                }
                "DefMemPerCPU" => t.def_mem_per_cpu = Some(f.mem_limit()?),
                "DefMemPerNode" => t.def_mem_per_node = Some(f.mem_limit()?),
                "MaxMemPerCPU" => t.max_mem_per_cpu = Some(f.mem_limit()?),
                "MaxMemPerNode" => t.max_mem_per_node = Some(f.mem_limit()?),
                "DefCpuPerGPU" => t.def_cpu_per_gpu = Some(f.u64()?),
                "DefMemPerGPU" => t.def_mem_per_gpu = Some(f.mem_mb()?),
                "TRESBillingWeights" => {
                    t.tres_billing_weights =
                        Some(f.with(TresWeight::EXPECTED, TresWeight::parse_list)?)
                }
                "Alternate" => t.alternate = f.string(),
                "CpuBind" => t.cpu_bind = f.string(),
                _ => {}
            }
        }
        Ok(t)
    }
}

/// Keys of a PartitionName line that `scontrol update` may not change:
/// the name itself, and those kept only as written.
const FIXED_PARTITION_KEYS: &[&str] = &[
    "PartitionName",
    "Exclusive",
    "JobDefaults",
    "MaxCPUsPerSocket",
    "PowerDownOnIdle",
    "ResumeTimeout",
    "SuspendTime",
    "SuspendTimeout",
    "Topology",
];

/// Why `scontrol update PartitionName=` was refused; the texts are the
/// first line of Slurm's scontrol message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionUpdateError {
    #[error("Update of this parameter is not supported: {key}={value}")]
    Unsupported { key: String, value: String },
    #[error("Invalid input: {key}={value}")]
    Invalid {
        key: String,
        value: String,
        expected: &'static str,
    },
}

/// A checked `scontrol update PartitionName=NAME Key=Value...`: the keys
/// and values of a PartitionName line, parsed as slurm.conf parses them,
/// laid over a partition. Kept as its canonical pairs too, which is what
/// the controller journals and saves.
#[derive(Debug, Clone)]
pub struct PartitionUpdate {
    t: PartTemplate,
    pairs: Vec<(&'static str, String)>,
}

impl PartialEq for PartitionUpdate {
    fn eq(&self, other: &Self) -> bool {
        self.pairs == other.pairs
    }
}

impl PartitionUpdate {
    /// Parses `pairs` (without PartitionName=); keys are case-insensitive,
    /// and a key given twice keeps its last value.
    pub fn parse<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<PartitionUpdate, PartitionUpdateError> {
        let mut canonical: Vec<(&'static str, String)> = Vec::new();
        for (key, value) in pairs {
            let known = PARTITION_KEYS
                .iter()
                .copied()
                .find(|k| k.eq_ignore_ascii_case(key))
                .or_else(|| {
                    PARTITION_ALIASES
                        .iter()
                        .find(|(a, _)| a.eq_ignore_ascii_case(key))
                        .map(|(_, k)| *k)
                });
            let Some(k) = known.filter(|k| !FIXED_PARTITION_KEYS.contains(k)) else {
                return Err(PartitionUpdateError::Unsupported {
                    key: key.to_string(),
                    value: value.to_string(),
                });
            };
            canonical.retain(|(old, _)| *old != k);
            canonical.push((k, value.to_string()));
        }
        Self::from_canonical(canonical)
    }

    fn from_canonical(
        pairs: Vec<(&'static str, String)>,
    ) -> Result<PartitionUpdate, PartitionUpdateError> {
        let loc = SourceLoc::new("scontrol update", 0);
        let attrs: Vec<(&'static str, &str)> =
            pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let t = PartTemplate::parse(&attrs, &loc).map_err(|e| match e {
            ConfError::InvalidValue {
                key,
                value,
                expected,
                ..
            } => PartitionUpdateError::Invalid {
                key,
                value,
                expected,
            },
            other => PartitionUpdateError::Invalid {
                key: String::new(),
                value: other.to_string(),
                expected: "a valid value",
            },
        })?;
        // `Nodes=` given empty leaves the partition without nodes, as
        // Slurm takes it.
        let mut t = t;
        if pairs
            .iter()
            .any(|(k, v)| *k == "Nodes" && v.trim().is_empty())
        {
            t.nodes = Some(String::new());
        }
        Ok(PartitionUpdate { t, pairs })
    }

    /// The keys (slurm.conf spelling) and values, in the order given.
    pub fn pairs(&self) -> &[(&'static str, String)] {
        &self.pairs
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// `Nodes=` as given, for the caller to resolve.
    pub fn nodes(&self) -> Option<&str> {
        self.t.nodes.as_deref()
    }

    /// `Default=`, when given.
    pub fn default(&self) -> Option<bool> {
        self.t.default
    }

    /// This update, then `later` (whose values win).
    pub fn merged(&self, later: &PartitionUpdate) -> PartitionUpdate {
        let mut pairs = self.pairs.clone();
        for (k, v) in &later.pairs {
            pairs.retain(|(old, _)| old != k);
            pairs.push((k, v.clone()));
        }
        PartitionUpdate {
            t: self.t.overlay(&later.t),
            pairs,
        }
    }

    /// Only the keys `keep` names (e.g. `State` for ReconfigFlags=KeepPartState).
    pub fn only(&self, keep: &[&str]) -> Option<PartitionUpdate> {
        let pairs: Vec<(&'static str, String)> = self
            .pairs
            .iter()
            .filter(|(k, _)| keep.contains(k))
            .cloned()
            .collect();
        if pairs.is_empty() {
            return None;
        }
        Self::from_canonical(pairs).ok()
    }

    /// `p` with the update laid over it. `members` is `Nodes=` resolved
    /// by the caller against the nodes it knows (ignored without one).
    pub fn apply(&self, p: &PartitionConf, members: Option<Vec<String>>) -> PartitionConf {
        let t = &self.t;
        let mut out = p.clone();
        if let (Some(expr), Some(members)) = (&t.nodes, members) {
            out.nodes = members;
            out.nodes_expr = Some(expr.clone());
        }
        macro_rules! set {
            ($($field:ident),+ $(,)?) => {
                $( if let Some(v) = &t.$field { out.$field = v.clone(); } )+
            };
        }
        set!(
            default,
            state,
            max_time,
            max_nodes,
            min_nodes,
            max_cpus_per_node,
            over_subscribe,
            priority_tier,
            priority_job_factor,
            preempt_mode,
            allow_accounts,
            deny_accounts,
            allow_groups,
            allow_qos,
            deny_qos,
            alloc_nodes,
            hidden,
            root_only,
            req_resv,
            disable_root_jobs,
            exclusive_user,
            lln,
            grace_time,
            tres_billing_weights,
        );
        if let Some(d) = t.default_time {
            out.default_time = Some(d);
        }
        if let Some(q) = &t.qos {
            out.qos = Some(q.clone());
        }
        if let Some(o) = t.over_time_limit {
            out.over_time_limit = Some(o);
        }
        if let Some(s) = t.select_type_parameters {
            out.select_type_parameters = Some(s);
        }
        // The per-CPU key wins over the per-node one, as in slurm.conf.
        if let Some(v) = t.def_mem_per_node {
            out.def_mem = v.map(MemPer::Node);
        }
        if let Some(v) = t.def_mem_per_cpu {
            out.def_mem = v.map(MemPer::Cpu);
        }
        if let Some(v) = t.max_mem_per_node {
            out.max_mem = v.map(MemPer::Node);
        }
        if let Some(v) = t.max_mem_per_cpu {
            out.max_mem = v.map(MemPer::Cpu);
        }
        if let Some(v) = t.def_cpu_per_gpu {
            out.def_cpu_per_gpu = Some(v);
        }
        if let Some(v) = t.def_mem_per_gpu {
            out.def_mem_per_gpu = Some(v);
        }
        if let Some(v) = &t.alternate {
            out.alternate = Some(v.clone());
        }
        if let Some(v) = &t.cpu_bind {
            out.cpu_bind = Some(v.clone());
        }
        out
    }
}

/// `UNLIMITED`/`INFINITE` or a number.
fn unlimited_u32(f: &Field<'_>) -> Result<Option<u32>, ConfError> {
    f.with("a whole number or UNLIMITED", |v| {
        if is_unlimited(v) {
            Some(None)
        } else {
            v.trim().parse::<u32>().ok().map(Some)
        }
    })
}

/// OverTimeLimit: minutes or UNLIMITED.
pub(crate) fn over_time_limit(f: &Field<'_>) -> Result<TimeLimit, ConfError> {
    f.with("a number of minutes or UNLIMITED", |v| {
        if is_unlimited(v) {
            Some(TimeLimit::Infinite)
        } else {
            v.trim()
                .parse::<u16>()
                .ok()
                .map(|m| TimeLimit::Minutes(u32::from(m)))
        }
    })
}

/// `ALL` (None) or a comma list.
fn all_or_list(v: &str) -> Option<Vec<String>> {
    let list = split_list(v);
    if list.is_empty() || list.iter().any(|x| x.eq_ignore_ascii_case("ALL")) {
        None
    } else {
        Some(list)
    }
}

/// What partitions inherit from the top-level keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClusterDefaults {
    pub def_mem: Option<MemPer>,
    pub max_mem: Option<MemPer>,
    pub preempt_mode: PreemptMode,
}

/// A PartitionName line kept until the nodes are known.
#[derive(Debug, Clone)]
struct PendingPartition {
    loc: SourceLoc,
    name: String,
    t: PartTemplate,
}

/// Reads PartitionName lines in order; [`PartitionBuilder::finish`] resolves
/// nodes and cluster values once the whole file has been read.
#[derive(Debug, Default)]
pub(crate) struct PartitionBuilder {
    defaults: PartTemplate,
    pending: Vec<PendingPartition>,
}

impl PartitionBuilder {
    pub fn add_line(
        &mut self,
        pairs: &[Pair],
        loc: &SourceLoc,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<(), ConfError> {
        let attrs = record_attrs(pairs, PARTITION_KEYS, PARTITION_ALIASES, loc, warnings);
        let name = attrs
            .iter()
            .find(|(k, _)| *k == "PartitionName")
            .map(|(_, v)| v.trim())
            .unwrap_or("");
        let line = PartTemplate::parse(&attrs, loc)?;
        if name.eq_ignore_ascii_case("DEFAULT") {
            self.defaults = self.defaults.overlay(&line);
            return Ok(());
        }
        if name.is_empty() {
            return Err(ConfError::MissingName {
                loc: loc.clone(),
                line_key: "PartitionName",
            });
        }
        if self.pending.iter().any(|p| p.name == name) {
            return Err(ConfError::DuplicatePartition {
                loc: loc.clone(),
                partition: name.to_string(),
            });
        }
        self.pending.push(PendingPartition {
            loc: loc.clone(),
            name: name.to_string(),
            t: self.defaults.overlay(&line),
        });
        Ok(())
    }

    pub fn finish(
        self,
        nodes: &[NodeConf],
        node_sets: &[NodeSet],
        cluster: ClusterDefaults,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<Vec<PartitionConf>, ConfError> {
        let mut out = Vec::with_capacity(self.pending.len());
        // Node names are looked up once per name listed in a partition:
        // a set keeps a thousand-node partition from costing a million
        // comparisons.
        let known: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        for p in self.pending {
            out.push(resolve(p, nodes, &known, node_sets, cluster, warnings)?);
        }
        let defaults: Vec<&PartitionConf> = out.iter().filter(|p| p.default).collect();
        if let (Some(first), Some(last)) = (defaults.first(), defaults.last()) {
            if defaults.len() > 1 {
                warnings.push(ConfWarning {
                    loc: last.loc.clone(),
                    kind: WarningKind::MultipleDefaultPartitions {
                        first: first.name.clone(),
                        last: last.name.clone(),
                    },
                });
            }
        }
        Ok(out)
    }
}

fn ignored(loc: &SourceLoc, key: &str, reason: &'static str) -> ConfWarning {
    ConfWarning {
        loc: loc.clone(),
        kind: WarningKind::Ignored {
            key: key.to_string(),
            reason,
        },
    }
}

/// One of a CPU/node pair of memory keys, the CPU one winning as in Slurm.
fn pick_mem(
    per_cpu: Option<Option<u64>>,
    per_node: Option<Option<u64>>,
    node_key: &str,
    loc: &SourceLoc,
    warnings: &mut Vec<ConfWarning>,
) -> Option<Option<MemPer>> {
    match (per_cpu, per_node) {
        (Some(c), node) => {
            if node.is_some() {
                warnings.push(ignored(loc, node_key, "the per-CPU value is also set"));
            }
            Some(c.map(MemPer::Cpu))
        }
        (None, Some(n)) => Some(n.map(MemPer::Node)),
        (None, None) => None,
    }
}

fn resolve(
    p: PendingPartition,
    nodes: &[NodeConf],
    known: &HashMap<&str, usize>,
    node_sets: &[NodeSet],
    cluster: ClusterDefaults,
    warnings: &mut Vec<ConfWarning>,
) -> Result<PartitionConf, ConfError> {
    let PendingPartition { loc, name, t } = p;
    let members = match &t.nodes {
        None => Vec::new(),
        Some(expr) => member_nodes(expr, &name, &loc, nodes, known, node_sets)?,
    };
    let max_time = t.max_time.unwrap_or(TimeLimit::Infinite);
    let mut default_time = t.default_time;
    if let Some(d) = default_time {
        // Finite limits order below Infinite.
        if d > max_time {
            warnings.push(ConfWarning {
                loc: loc.clone(),
                kind: WarningKind::DefaultTimeExceedsMaxTime {
                    partition: name.clone(),
                },
            });
            default_time = None;
        }
    }
    let mut deny_accounts = t.deny_accounts.unwrap_or_default();
    let allow_accounts = t.allow_accounts.flatten();
    if allow_accounts.is_some() && !deny_accounts.is_empty() {
        warnings.push(ignored(&loc, "DenyAccounts", "AllowAccounts is also set"));
        deny_accounts.clear();
    }
    let mut deny_qos = t.deny_qos.unwrap_or_default();
    let allow_qos = t.allow_qos.flatten();
    if allow_qos.is_some() && !deny_qos.is_empty() {
        warnings.push(ignored(&loc, "DenyQos", "AllowQos is also set"));
        deny_qos.clear();
    }
    let def_mem = pick_mem(
        t.def_mem_per_cpu,
        t.def_mem_per_node,
        "DefMemPerNode",
        &loc,
        warnings,
    )
    .unwrap_or(cluster.def_mem);
    let max_mem = pick_mem(
        t.max_mem_per_cpu,
        t.max_mem_per_node,
        "MaxMemPerNode",
        &loc,
        warnings,
    )
    .unwrap_or(cluster.max_mem);
    Ok(PartitionConf {
        name,
        nodes: members,
        nodes_expr: t.nodes,
        default: t.default.unwrap_or(false),
        state: t.state.unwrap_or_default(),
        max_time,
        default_time,
        max_nodes: t.max_nodes.flatten(),
        min_nodes: t.min_nodes.unwrap_or(0),
        max_cpus_per_node: t.max_cpus_per_node.flatten(),
        over_subscribe: t.over_subscribe.unwrap_or_default(),
        priority_tier: t.priority_tier.unwrap_or(1),
        priority_job_factor: t.priority_job_factor.unwrap_or(1),
        preempt_mode: t.preempt_mode.unwrap_or(cluster.preempt_mode),
        qos: t.qos,
        allow_accounts,
        deny_accounts,
        allow_groups: t.allow_groups.flatten(),
        allow_qos,
        deny_qos,
        alloc_nodes: t.alloc_nodes.flatten(),
        hidden: t.hidden.unwrap_or(false),
        root_only: t.root_only.unwrap_or(false),
        req_resv: t.req_resv.unwrap_or(false),
        disable_root_jobs: t.disable_root_jobs.unwrap_or(false),
        exclusive_user: t.exclusive_user.unwrap_or(false),
        lln: t.lln.unwrap_or(false),
        grace_time: t.grace_time.unwrap_or(Duration::ZERO),
        over_time_limit: t.over_time_limit,
        select_type_parameters: t.select_type_parameters,
        def_mem,
        max_mem,
        def_cpu_per_gpu: t.def_cpu_per_gpu,
        def_mem_per_gpu: t.def_mem_per_gpu,
        tres_billing_weights: t.tres_billing_weights.unwrap_or_default(),
        alternate: t.alternate,
        cpu_bind: t.cpu_bind,
        loc,
    })
}

/// Resolves `Nodes=`: host lists, NodeSet names and ALL, in node config
/// order without duplicates. `known` maps every node name to its index in
/// `nodes`.
fn member_nodes(
    expr: &str,
    partition: &str,
    loc: &SourceLoc,
    nodes: &[NodeConf],
    known: &HashMap<&str, usize>,
    node_sets: &[NodeSet],
) -> Result<Vec<String>, ConfError> {
    let names = Field::new("Nodes", expr, loc).hostlist()?;
    let mut wanted = vec![false; nodes.len()];
    for n in &names {
        if n.eq_ignore_ascii_case("ALL") {
            wanted.fill(true);
        } else if let Some(set) = node_sets.iter().find(|s| &s.name == n) {
            for member in &set.nodes {
                if let Some(&i) = known.get(member.as_str()) {
                    wanted[i] = true;
                }
            }
        } else if let Some(&i) = known.get(n.as_str()) {
            wanted[i] = true;
        } else {
            return Err(ConfError::UnknownNode {
                loc: loc.clone(),
                what: "PartitionName",
                owner: partition.to_string(),
                node: n.clone(),
            });
        }
    }
    Ok(nodes
        .iter()
        .zip(wanted)
        .filter(|(_, w)| *w)
        .map(|(n, _)| n.name.clone())
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn over_subscribe_forms() {
        assert_eq!(OverSubscribe::parse("NO"), Some(OverSubscribe::No));
        assert_eq!(
            OverSubscribe::parse("exclusive"),
            Some(OverSubscribe::Exclusive)
        );
        assert_eq!(OverSubscribe::parse("YES"), Some(OverSubscribe::Yes(4)));
        assert_eq!(
            OverSubscribe::parse("FORCE:8"),
            Some(OverSubscribe::Force(8))
        );
        assert_eq!(OverSubscribe::parse("YES:0"), None);
        assert_eq!(OverSubscribe::parse("NO:2"), None);
        assert_eq!(OverSubscribe::parse("FORCE:x"), None);
        assert_eq!(OverSubscribe::parse("sometimes"), None);
        assert_eq!(OverSubscribe::Force(4).to_string(), "FORCE:4");
    }

    fn debug_partition() -> PartitionConf {
        let text = "ClusterName=c\nSlurmctldHost=h\nNodeName=n[1-4] CPUs=2\n\
                    PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=60 State=UP\n";
        let parsed = crate::conf::SlurmConf::parse(text, "slurm.conf").unwrap();
        parsed.conf.partitions[0].clone()
    }

    #[test]
    fn an_update_is_a_partition_line_laid_over_the_partition() {
        let p = debug_partition();
        let u = PartitionUpdate::parse([
            ("state", "down"),
            ("MAXTIME", "2:00:00"),
            ("Shared", "YES:2"),
            ("DefMemPerCPU", "100"),
            ("maxnodes", "UNLIMITED"),
            ("AllowGroups", "wheel,users"),
        ])
        .unwrap();
        assert_eq!(
            u.pairs().iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            [
                "State",
                "MaxTime",
                "OverSubscribe",
                "DefMemPerCPU",
                "MaxNodes",
                "AllowGroups"
            ]
        );
        let q = u.apply(&p, None);
        assert_eq!(q.state, PartitionState::Down);
        assert_eq!(q.max_time, TimeLimit::Minutes(120));
        assert_eq!(q.over_subscribe, OverSubscribe::Yes(2));
        assert_eq!(q.def_mem, Some(MemPer::Cpu(100)));
        assert_eq!(q.max_nodes, None);
        assert_eq!(
            q.allow_groups,
            Some(vec!["wheel".to_string(), "users".to_string()])
        );
        // Untouched values stay.
        assert_eq!((q.nodes.clone(), q.default), (p.nodes.clone(), true));
        // Nodes= is resolved by the caller.
        let u = PartitionUpdate::parse([("Nodes", "n[3-4]")]).unwrap();
        assert_eq!(u.nodes(), Some("n[3-4]"));
        let q = u.apply(&p, Some(vec!["n3".into(), "n4".into()]));
        assert_eq!(q.nodes, ["n3", "n4"]);
        assert_eq!(q.nodes_expr.as_deref(), Some("n[3-4]"));
    }

    #[test]
    fn later_updates_win_and_state_can_be_kept_alone() {
        let a = PartitionUpdate::parse([("State", "DRAIN"), ("MaxTime", "10")]).unwrap();
        let b = PartitionUpdate::parse([("MaxTime", "20"), ("Hidden", "YES")]).unwrap();
        let m = a.merged(&b);
        let q = m.apply(&debug_partition(), None);
        assert_eq!(
            (q.state, q.max_time, q.hidden),
            (PartitionState::Drain, TimeLimit::Minutes(20), true)
        );
        let kept = m.only(&["State"]).unwrap();
        assert_eq!(kept.pairs(), [("State", "DRAIN".to_string())]);
        assert!(b.only(&["State"]).is_none());
    }

    #[test]
    fn bad_updates_name_what_was_wrong() {
        let err = |pairs: &[(&str, &str)]| {
            PartitionUpdate::parse(pairs.iter().copied())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[("State", "sideways")]),
            "Invalid input: State=sideways"
        );
        assert_eq!(err(&[("MaxTime", "soon")]), "Invalid input: MaxTime=soon");
        assert_eq!(
            PartitionUpdate::parse([("Nodes", "")]).unwrap().nodes(),
            Some("")
        );
        assert_eq!(
            err(&[("Bogus", "1")]),
            "Update of this parameter is not supported: Bogus=1"
        );
        assert_eq!(
            err(&[("PartitionName", "x")]),
            "Update of this parameter is not supported: PartitionName=x"
        );
        assert_eq!(
            err(&[("Topology", "x")]),
            "Update of this parameter is not supported: Topology=x"
        );
        assert_eq!(
            err(&[("MaxNodes", "99999999999999999999")]),
            "Invalid input: MaxNodes=99999999999999999999"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_parsed_or_refused_without_panic(
            key in "[A-Za-z]{0,16}", value in "\\PC{0,24}"
        ) {
            let _ = PartitionUpdate::parse([(key.as_str(), value.as_str())])
                .map(|u| u.apply(&debug_partition(), None));
        }
    }

    #[test]
    fn all_or_list_forms() {
        assert_eq!(all_or_list("ALL"), None);
        assert_eq!(all_or_list(""), None);
        assert_eq!(
            all_or_list("a,b"),
            Some(vec!["a".to_string(), "b".to_string()])
        );
    }
}
