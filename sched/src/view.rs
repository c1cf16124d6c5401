//! What the scheduler sees of the cluster: a plain, immutable snapshot.
//!
//! The controller builds a [`ClusterView`] from its own tables before each
//! pass. It holds only what placement needs (sizes, current use, features,
//! whether a node may take work) and refers to nodes by their index in
//! `nodes`, which is also the order Slurm lists them in (slurm.conf order), so
//! a plan is cheap to apply and stable across passes.
//!
//! The view has its own small enums instead of reusing the slurm.conf types:
//! the scheduler cares about what a setting *does* to placement, not how it
//! was spelled, and the controller maps one to the other in one place.

use slurm_common::ids::JobId;
use slurm_common::time::TimeLimit;

use crate::request::MemReq;

/// One node as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    pub name: String,
    /// Schedulable CPUs (CPUTot, or CPUEfctv where cores are reserved).
    pub cpus: u32,
    /// RealMemory from slurm.conf, in MB.
    pub real_memory_mb: u64,
    /// Available features (slurm.conf `Features=`), matched by `--constraint`.
    pub features: Vec<String>,
    /// Lower weights are filled first.
    pub weight: u32,
    /// May take new work: up, responding, not drained or failing (see
    /// `slurm_common::state::NodeState::is_schedulable`).
    pub usable: bool,
    /// CPUs held by running, suspended or completing jobs.
    pub alloc_cpus: u32,
    /// Memory held by those jobs, in MB (0 unless memory is a consumable).
    pub alloc_mem_mb: u64,
    /// A job that holds the whole node (`--exclusive`); nobody else may use
    /// it, whatever its counters say.
    pub exclusive_owner: Option<JobId>,
    /// TmpDisk from slurm.conf, in MB: a job's `--tmp` must fit in it.
    pub tmp_disk_mb: u64,
    /// Sockets, cores per socket and threads per core, which `-B` asks
    /// for; 0 when unknown (any request fits).
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// Whose jobs hold the node: an `--exclusive=user` job may only join
    /// its own user's.
    pub users: NodeUsers,
    /// The user whose `--exclusive=user` job holds the node (or who holds
    /// it in an `ExclusiveUser=YES` partition): no one else's job may use
    /// it.
    pub user_exclusive: Option<u32>,
}

/// Whose jobs hold a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeUsers {
    #[default]
    Nobody,
    One(u32),
    Several,
}

impl NodeUsers {
    /// With a job of `uid` added.
    pub fn with(self, uid: u32) -> NodeUsers {
        match self {
            NodeUsers::Nobody => NodeUsers::One(uid),
            NodeUsers::One(u) if u == uid => self,
            _ => NodeUsers::Several,
        }
    }

    /// No job but `uid`'s holds the node.
    pub fn only(self, uid: u32) -> bool {
        self == NodeUsers::Nobody || self == NodeUsers::One(uid)
    }
}

impl NodeView {
    /// An idle, usable node with no features and weight 1.
    pub fn new(name: impl Into<String>, cpus: u32, real_memory_mb: u64) -> NodeView {
        NodeView {
            name: name.into(),
            cpus,
            real_memory_mb,
            features: Vec::new(),
            weight: 1,
            usable: true,
            alloc_cpus: 0,
            alloc_mem_mb: 0,
            exclusive_owner: None,
            tmp_disk_mb: 0,
            sockets: 0,
            cores_per_socket: 0,
            threads_per_core: 0,
            users: NodeUsers::Nobody,
            user_exclusive: None,
        }
    }

    /// Nothing allocated at all: an `--exclusive` job may take it.
    pub fn is_idle(&self) -> bool {
        self.alloc_cpus == 0 && self.alloc_mem_mb == 0 && self.exclusive_owner.is_none()
    }

    pub fn has_feature(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }
}

/// A partition's `State=`, as it affects scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartitionState {
    /// Accepts and runs jobs.
    Up,
    /// Accepts jobs but starts none (`PartitionDown`).
    Down,
    /// Refuses new jobs but runs the queued ones.
    Drain,
    /// Refuses new jobs and starts none (`PartitionInactive`).
    Inactive,
}

/// A partition's `OverSubscribe=`, as it affects placement.
///
/// Only `Exclusive` changes placement today (every job gets whole nodes).
/// `Yes` and `Force` would let jobs share CPUs, which needs gang scheduling;
/// until that exists they place jobs exactly as `No` does, which never
/// oversubscribes and is what a user of a default Slurm sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OverSubscribe {
    #[default]
    No,
    Yes,
    Force,
    Exclusive,
}

/// One partition as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionView {
    pub name: String,
    /// Indices into [`ClusterView::nodes`].
    pub nodes: Vec<usize>,
    pub state: PartitionState,
    /// `MaxTime=`; `Infinite` when unlimited.
    pub max_time: TimeLimit,
    /// `DefaultTime=`; a job without `--time` gets this, else `max_time`.
    pub default_time: Option<TimeLimit>,
    /// `MinNodes=`.
    pub min_nodes: u32,
    /// `MaxNodes=`; `None` when unlimited.
    pub max_nodes: Option<u32>,
    /// `PriorityTier=`: higher tiers are scheduled first.
    pub priority_tier: u16,
    pub oversubscribe: OverSubscribe,
    /// `DefMemPerCPU=`/`DefMemPerNode=` of the partition, which win over the
    /// cluster-wide default in [`SchedConfig::def_mem`].
    pub def_mem: Option<MemReq>,
    /// `MaxMemPerCPU=`/`MaxMemPerNode=`: a job asking more waits with
    /// MaxMemPerLimit.
    pub max_mem: Option<MemReq>,
    /// `AllowAccounts=`; `None` for ALL. Without associations to tell
    /// what a job's account is, a job may not use a partition that names
    /// its accounts: it waits with AccountNotAllowed, as in Slurm.
    pub allow_accounts: Option<Vec<String>>,
    /// `MaxCPUsPerNode=`: the most CPUs of one node that the partition's
    /// jobs may hold together; `None` when unlimited. A whole node (an
    /// `--exclusive` job) is more when the node has more CPUs.
    pub max_cpus_per_node: Option<u32>,
    /// The CPUs the partition's running jobs hold on each node, indexed
    /// like [`ClusterView::nodes`] (a node past the end: none). Only read
    /// when `max_cpus_per_node` is set.
    pub used_cpus: Vec<u32>,
    /// `ExclusiveUser=YES`: every job of the partition is `--exclusive=user`.
    pub exclusive_user: bool,
    /// `LLN=YES` (or `CR_LLN`): among nodes of the same weight, the ones
    /// with the most idle CPUs are taken first.
    pub lln: bool,
}

impl PartitionView {
    /// An UP partition over `nodes` with Slurm's defaults (no limits, tier 1).
    pub fn new(name: impl Into<String>, nodes: Vec<usize>) -> PartitionView {
        PartitionView {
            name: name.into(),
            nodes,
            state: PartitionState::Up,
            max_time: TimeLimit::Infinite,
            default_time: None,
            min_nodes: 0,
            max_nodes: None,
            priority_tier: 1,
            oversubscribe: OverSubscribe::No,
            def_mem: None,
            max_mem: None,
            allow_accounts: None,
            max_cpus_per_node: None,
            used_cpus: Vec::new(),
            exclusive_user: false,
            lln: false,
        }
    }
}

/// Cluster-wide settings that change placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedConfig {
    /// Memory is a consumable resource (`SelectTypeParameters=CR_*_Memory`):
    /// allocations take memory and a job without a memory request gets the
    /// default below, or the whole node when there is none, as in Slurm.
    /// Without it, memory requests are only checked against `RealMemory`.
    pub track_memory: bool,
    /// `EnforcePartLimits=ALL|ANY|YES`: reject at submission a job that
    /// exceeds its partition's limits instead of leaving it pending.
    pub enforce_part_limits: bool,
    /// Cluster-wide `DefMemPerCPU=`/`DefMemPerNode=`.
    pub def_mem: Option<MemReq>,
}

/// One cluster license (slurm.conf `Licenses=`), as a pass sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LicenseView {
    pub name: String,
    pub total: u32,
    /// Held by running (and completing) jobs.
    pub used: u32,
}

impl LicenseView {
    /// What jobs may still take.
    pub fn free(&self) -> u32 {
        self.total.saturating_sub(self.used)
    }
}

/// Everything a scheduling pass reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterView {
    pub nodes: Vec<NodeView>,
    pub partitions: Vec<PartitionView>,
    pub config: SchedConfig,
    /// Cluster licenses; [`crate::JobRequest::licenses`] index into it.
    pub licenses: Vec<LicenseView>,
}

impl ClusterView {
    /// Node indices of partition `part` in placement preference order: lower
    /// weight first, then slurm.conf order. Unknown indices are dropped.
    pub(crate) fn preference_order(&self, part: &PartitionView) -> Vec<usize> {
        let mut order: Vec<usize> = part
            .nodes
            .iter()
            .copied()
            .filter(|&i| i < self.nodes.len())
            .collect();
        order.sort_unstable_by_key(|&i| (self.nodes[i].weight, i));
        order.dedup();
        order
    }
}
