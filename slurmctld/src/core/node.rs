//! Nodes and partitions as the controller keeps them.
//!
//! A node's base state follows its allocation once it is up (IDLE, MIXED,
//! ALLOCATED); DOWN, UNKNOWN and FUTURE are kept until a registration or an
//! administrator changes them. Flags (DRAIN, FAIL, ...) are orthogonal, as in
//! `slurm_common::state`.
//!
//! Liveness (decided in `core::liveness`, applied here):
//!
//! ```text
//!   UNKNOWN ──register──> up (IDLE, MIXED, ALLOCATED)
//!                          │          ^            ^
//!                 missed a │          │ answered   │ registered, and
//!                  message v          │            │ ReturnToService allows
//!                         up* (NOT_RESPONDING) ──────> DOWN* "Not responding"
//!                                silent for SlurmdTimeout
//! ```
//!
//! Registration against slurm.conf: a node that reports fewer resources
//! than its NodeName line gives it (fewer CPUs or threads, less memory or
//! TmpDisk) is marked INVALID_REG and drained, with Slurm's reasons
//! ([`NodeRec::short_of_config`]): jobs sized for the configured figures
//! would fail there. It stays out of service until an administrator
//! resumes it; the mark goes with the next registration that is not short.
//! With SlurmdParameters=config_overrides the configuration is trusted and
//! nothing is checked.
//!
//! Completing: a job that ended keeps its share of each node until that
//! node's slurmd reports its epilog done (`core::epilog`). Meanwhile the
//! share counts as allocated (nothing else may use it) but not as busy: the
//! base state follows the running jobs alone, and the COMPLETING flag says
//! that cleanup is under way (`IDLE+COMPLETING`, sinfo `comp`), as in Slurm.
//!
//! LastBusyTime ([`NodeRec::last_busy`]) is when the node last had work or
//! came to life: the time of its latest registration, or of the release of
//! the last share a job held there, whichever is later. Both arrive with
//! events, so replay gives it back; snapshots keep it.
//!
//! Load and free memory ([`NodeRec::load`], scontrol's CPULoad and FreeMem)
//! are figures of the moment that slurmd sends when it registers and in
//! every ping answer. Like Slurm, which never saves them, the controller
//! keeps them in memory only: the commands that bring them set them
//! directly ([`Controller::node_loads`], registration), with no event, so
//! nothing is journaled per ping. They are not part of the replayed state:
//! after a restart a node shows N/A until it answers the first ping round,
//! which goes out as soon as the controller takes control (`crate::ping`).
//!
//! BootTime and SlurmdStartTime ([`NodeRec::boot`]) are kept the same way:
//! slurmd sends them when it registers and in its ping answers, and Slurm
//! does not save them in its node state either. A node that never
//! registered shows None for both.
//!
//! A registration also carries the hash of the node's slurm.conf. As Slurm
//! 22.05 does, the controller compares it with the hash of its own file
//! and logs an error when they differ ([`conf_hash_mismatch`]); nothing
//! else happens to the node, and DebugFlags=NO_CONF_HASH turns the check
//! off.

use slurm_common::conf::{GresSpec, NodeConf, NodeConfState, PartitionConf};
use slurm_common::ids::JobId;
use slurm_common::state::{NodeBaseState, NodeFlag, NodeState, NodeUpdateState};
use slurm_sched::{MemReq, NodeAlloc, OverSubscribe, PartitionState, PartitionView};

use super::{up_state, Controller};

/// The share of its configured RealMemory a node must report, in percent,
/// when SlurmctldParameters has no node_reg_mem_percent (Slurm's default);
/// [`DEFAULT_CLOUD_REG_MEM_PERCENT`] for CLOUD nodes.
pub const DEFAULT_NODE_REG_MEM_PERCENT: f64 = 100.0;
pub const DEFAULT_CLOUD_REG_MEM_PERCENT: f64 = 90.0;

/// What a slurmd reported about its hardware when it registered. A figure
/// of 0 was not reported: protobuf cannot tell a zero from an absent field,
/// and a slurmd always finds at least one CPU and some memory, so a zero
/// says only that the sender did not fill the field in (our slurmd sends
/// no TmpDisk unless SlurmdParameters=config_overrides). Such a figure is
/// not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportedHw {
    pub cpus: u32,
    /// Sockets in total (boards times sockets per board).
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    pub real_memory_mb: u64,
    pub tmp_disk_mb: u64,
}

impl ReportedHw {
    pub fn from_request(r: &slurm_proto::v1::RegisterNodeRequest) -> ReportedHw {
        ReportedHw {
            cpus: r.cpus,
            sockets: r.sockets,
            cores_per_socket: r.cores_per_socket,
            threads_per_core: r.threads_per_core,
            real_memory_mb: r.real_memory_mb,
            tmp_disk_mb: r.tmp_disk_mb,
        }
    }
}

/// What a node's slurmd last measured of its host: not state, see the
/// module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLoad {
    /// The five-minute load average times 100 (CPULoad=2.26 is 226).
    pub cpu_load_hundredths: u32,
    /// Memory nothing uses, MiB (FreeMem).
    pub free_memory_mb: u64,
}

impl NodeLoad {
    /// The figures of a registration, if slurmd measured them.
    pub fn from_registration(r: &slurm_proto::v1::RegisterNodeRequest) -> Option<NodeLoad> {
        r.reports_load.then_some(NodeLoad {
            cpu_load_hundredths: r.cpu_load_hundredths,
            free_memory_mb: r.free_memory_mb,
        })
    }

    /// The figures of a ping answer, if slurmd measured them.
    pub fn from_ping(p: &slurm_proto::v1::PingNodeReply) -> Option<NodeLoad> {
        p.reports_load.then_some(NodeLoad {
            cpu_load_hundredths: p.cpu_load_hundredths,
            free_memory_mb: p.free_memory_mb,
        })
    }
}

/// When a node's host booted and when its slurmd started (BootTime,
/// SlurmdStartTime), unix seconds; 0 when not known. Not state: see the
/// module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeBoot {
    pub boot_time: i64,
    pub slurmd_start_time: i64,
}

impl NodeBoot {
    /// The times a registration gives.
    pub fn from_registration(r: &slurm_proto::v1::RegisterNodeRequest) -> NodeBoot {
        NodeBoot {
            boot_time: r.boot_time.max(0),
            slurmd_start_time: r.slurmd_start_time.max(0),
        }
    }

    /// The times a ping answer gives (an older slurmd sends neither).
    pub fn from_ping(p: &slurm_proto::v1::PingNodeReply) -> NodeBoot {
        NodeBoot {
            boot_time: p.boot_time.max(0),
            slurmd_start_time: p.slurmd_start_time.max(0),
        }
    }

    /// `self` with the times `news` knows (non-zero) taken from it: an
    /// emulated node, which knows no boot time, keeps none rather than
    /// losing one.
    pub fn updated(self, news: NodeBoot) -> NodeBoot {
        let pick = |new: i64, old: i64| if new > 0 { new } else { old };
        NodeBoot {
            boot_time: pick(news.boot_time, self.boot_time),
            slurmd_start_time: pick(news.slurmd_start_time, self.slurmd_start_time),
        }
    }
}

/// Whether a node registering with slurm.conf hash `reported` should be
/// reported as having another slurm.conf than the controller's `ours`:
/// only when the check is on (no DebugFlags=NO_CONF_HASH) and both hashes
/// are known (a node that could not read its file sends none, as Slurm's
/// slurmd sends NO_VAL).
pub fn conf_hash_mismatch(check: bool, ours: &str, reported: &str) -> bool {
    check && !ours.is_empty() && !reported.is_empty() && ours != reported
}

/// One node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRec {
    pub name: String,
    pub addr: String,
    pub hostname: String,
    /// slurmd's port for this node.
    pub port: u16,
    pub cpus: u32,
    pub boards: u16,
    pub sockets: u16,
    pub cores_per_socket: u16,
    pub threads_per_core: u16,
    pub real_memory_mb: u64,
    pub tmp_disk_mb: u64,
    /// Weight= and Features= as slurm.conf has them; what is in force
    /// includes `attrs` (`weight_now`, `available_features`).
    pub weight: u32,
    pub features: Vec<String>,
    /// What `scontrol update NodeName=` laid over slurm.conf's line
    /// (`core::node_attrs`).
    pub attrs: Option<Box<super::node_attrs::NodeAttrs>>,
    /// Gres= as slurm.conf gives it (`scontrol show node`'s Gres, sinfo
    /// `%G`).
    pub gres: Vec<GresSpec>,
    pub conf_state: NodeConfState,
    pub state: NodeState,
    pub reason: Option<String>,
    pub reason_uid: u32,
    pub reason_time: i64,
    pub alloc_cpus: u32,
    pub alloc_mem_mb: u64,
    /// Jobs in COMPLETING that still hold a share of this node, and the
    /// CPUs of those shares (part of `alloc_cpus`). Derived from the jobs:
    /// kept up to date by `Controller::apply`, recounted when a snapshot is
    /// loaded, never written to one.
    pub completing_jobs: u32,
    pub completing_cpus: u32,
    /// How many job shares hold each of the node's CPUs (Slurm's abstract
    /// CPU ids, `0..cpus`), by the ids each job was given
    /// (`Job::cpu_ids`). Derived from the jobs like `completing_jobs`.
    pub cpu_use: Vec<u16>,
    pub exclusive_owner: Option<JobId>,
    /// Indices of the partitions holding it.
    pub partitions: Vec<usize>,
    pub last_registration: i64,
    /// `uname` machine and system of the node, from its registration.
    pub arch: String,
    pub os: String,
    /// LastBusyTime, unix seconds; 0 before the first registration.
    pub last_busy: i64,
    /// The latest load and free memory slurmd reported; `None` until it
    /// reports any (N/A). Kept in memory only: see the module docs.
    pub load: Option<NodeLoad>,
    /// BootTime and SlurmdStartTime, in memory only like `load`.
    pub boot: NodeBoot,
}

impl NodeRec {
    pub fn from_conf(c: &NodeConf) -> NodeRec {
        let state = match c.state {
            NodeConfState::Down => NodeState::new(NodeBaseState::Down),
            NodeConfState::Drain => NodeState::new(NodeBaseState::Unknown).with(NodeFlag::Drain),
            NodeConfState::Fail | NodeConfState::Failing => {
                NodeState::new(NodeBaseState::Unknown).with(NodeFlag::Fail)
            }
            NodeConfState::Future => NodeState::new(NodeBaseState::Future),
            NodeConfState::Cloud => NodeState::new(NodeBaseState::Unknown).with(NodeFlag::Cloud),
            NodeConfState::Unknown | NodeConfState::Idle => NodeState::new(NodeBaseState::Unknown),
        };
        NodeRec {
            name: c.name.clone(),
            addr: c.addr.clone(),
            hostname: c.hostname.clone(),
            port: c.port,
            cpus: c.cpus,
            boards: c.boards,
            sockets: c.sockets,
            cores_per_socket: c.cores_per_socket,
            threads_per_core: c.threads_per_core,
            real_memory_mb: c.real_memory,
            tmp_disk_mb: c.tmp_disk,
            weight: c.weight,
            features: c.features.clone(),
            attrs: None,
            gres: c.gres.clone(),
            conf_state: c.state,
            state,
            reason: c.reason.clone(),
            reason_uid: 0,
            reason_time: 0,
            alloc_cpus: 0,
            alloc_mem_mb: 0,
            completing_jobs: 0,
            completing_cpus: 0,
            cpu_use: vec![0; c.cpus as usize],
            exclusive_owner: None,
            partitions: Vec::new(),
            last_registration: 0,
            arch: String::new(),
            os: String::new(),
            last_busy: 0,
            load: None,
            boot: NodeBoot::default(),
        }
    }

    fn is_up(&self) -> bool {
        matches!(
            self.state.base,
            NodeBaseState::Idle | NodeBaseState::Mixed | NodeBaseState::Allocated
        )
    }

    /// CPUs of running (or suspended) jobs: the allocation less the
    /// shares still completing.
    fn busy_cpus(&self) -> u32 {
        self.alloc_cpus.saturating_sub(self.completing_cpus)
    }

    /// The state an up node has with its current allocation.
    fn up_now(&self) -> NodeState {
        up_state(self.state, self.busy_cpus(), self.cpus)
    }

    /// Base state from the allocation (up nodes only) and the COMPLETING
    /// flag from the completing shares (any node). Other flags stay: a
    /// node that stopped answering keeps NOT_RESPONDING whatever its jobs do.
    pub(crate) fn refresh(&mut self) {
        if self.is_up() {
            self.state.base = NodeBaseState::from_alloc(self.busy_cpus(), self.cpus);
        }
        self.state = if self.completing_jobs > 0 {
            self.state.with(NodeFlag::Completing)
        } else {
            self.state.without(NodeFlag::Completing)
        };
    }

    /// A job holding `a` here started completing.
    pub(crate) fn completing_started(&mut self, a: &NodeAlloc) {
        self.completing_jobs = self.completing_jobs.saturating_add(1);
        self.completing_cpus = self.completing_cpus.saturating_add(a.cpus);
        self.refresh();
    }

    /// A completing job's share `a` here is no longer completing (released,
    /// or the job left COMPLETING with it).
    pub(crate) fn completing_ended(&mut self, a: &NodeAlloc) {
        self.completing_jobs = self.completing_jobs.saturating_sub(1);
        self.completing_cpus = self.completing_cpus.saturating_sub(a.cpus);
        self.refresh();
    }

    /// The CPU ids a share of `count` CPUs gets here: the least used
    /// (free ones first), lowest ids first, in ascending order.
    pub(crate) fn pick_cpus(&self, count: u32) -> Box<[u32]> {
        let mut order: Vec<u32> =
            (0..u32::try_from(self.cpu_use.len()).unwrap_or(u32::MAX)).collect();
        order.sort_by_key(|&i| (self.cpu_use[i as usize], i));
        order.truncate(count as usize);
        order.sort_unstable();
        order.into_boxed_slice()
    }

    /// Counts CPUs `ids` held by one more share (`hold`) or one less,
    /// without `alloc_cpus` ([`Self::recount_alloc_cpus`] follows).
    pub(crate) fn count_cpus(&mut self, ids: &[u32], hold: bool) {
        for &i in ids {
            if let Some(u) = self.cpu_use.get_mut(i as usize) {
                *u = if hold {
                    u.saturating_add(1)
                } else {
                    u.saturating_sub(1)
                };
            }
        }
    }

    /// `alloc_cpus` from `cpu_use`: the CPUs some share holds, however
    /// many.
    pub(crate) fn recount_alloc_cpus(&mut self) {
        let held = self.cpu_use.iter().filter(|&&u| u > 0).count();
        self.alloc_cpus = u32::try_from(held).unwrap_or(u32::MAX);
    }

    /// A share `a` of job `job` holding CPUs `ids` here started (or
    /// resumed: then `a` counts no memory). CPUs another share holds too
    /// (a job resumed onto CPUs taken meanwhile) count once, as in Slurm.
    pub(crate) fn take(&mut self, a: &NodeAlloc, ids: &[u32], exclusive: bool, job: JobId) {
        self.count_cpus(ids, true);
        self.recount_alloc_cpus();
        self.alloc_mem_mb = self.alloc_mem_mb.saturating_add(a.mem_mb);
        if exclusive {
            self.exclusive_owner = Some(job);
        }
        self.refresh();
    }

    /// Job `job` released its share `a` here, holding CPUs `ids`, at
    /// `time`; the node was busy until then if no CPU is held any more.
    pub(crate) fn give_back(
        &mut self,
        a: &NodeAlloc,
        ids: &[u32],
        exclusive: bool,
        job: JobId,
        time: i64,
    ) {
        self.count_cpus(ids, false);
        self.recount_alloc_cpus();
        self.alloc_mem_mb = self.alloc_mem_mb.saturating_sub(a.mem_mb);
        if exclusive && self.exclusive_owner == Some(job) {
            self.exclusive_owner = None;
        }
        if self.alloc_cpus == 0 {
            self.last_busy = self.last_busy.max(time);
        }
        self.refresh();
    }

    /// Why a registration reporting `hw` falls short of this node's
    /// configuration, or `None` when it does not. Slurm's checks, in its
    /// order and words, joined by ", ": the socket*core*thread count, the
    /// CPU count, RealMemory (which must reach `mem_percent` of the
    /// configured size, by default 100, 90 for CLOUD nodes) and TmpDisk.
    /// More than configured is never a fault: the configuration stands.
    pub fn short_of_config(&self, hw: &ReportedHw, mem_percent: Option<f64>) -> Option<String> {
        let mut reasons: Vec<String> = Vec::new();
        let reported_threads = u64::from(hw.sockets)
            .saturating_mul(u64::from(hw.cores_per_socket))
            .saturating_mul(u64::from(hw.threads_per_core));
        let configured_threads = u64::from(self.sockets)
            .saturating_mul(u64::from(self.cores_per_socket))
            .saturating_mul(u64::from(self.threads_per_core));
        if reported_threads > 0 && reported_threads < configured_threads {
            reasons.push("Low socket*core*thread count".to_string());
        }
        if hw.cpus > 0 && hw.cpus < self.cpus {
            reasons.push("Low CPUs".to_string());
        }
        let percent = mem_percent.unwrap_or(if matches!(self.conf_state, NodeConfState::Cloud) {
            DEFAULT_CLOUD_REG_MEM_PERCENT
        } else {
            DEFAULT_NODE_REG_MEM_PERCENT
        });
        // Compared as Slurm does, in floating point: reported / configured
        // as a percentage against the threshold. Both sizes are MiB, far
        // below 2^53, so the division is exact enough.
        #[allow(clippy::cast_precision_loss)]
        let mem_short = self.real_memory_mb > 0
            && hw.real_memory_mb > 0
            && (hw.real_memory_mb as f64 / self.real_memory_mb as f64) * 100.0 < percent;
        if mem_short {
            reasons.push(format!(
                "Low RealMemory (reported:{} < {percent:.2}% of configured:{})",
                hw.real_memory_mb, self.real_memory_mb
            ));
        }
        if hw.tmp_disk_mb > 0 && hw.tmp_disk_mb < self.tmp_disk_mb {
            reasons.push("Low TmpDisk".to_string());
        }
        (!reasons.is_empty()).then(|| reasons.join(", "))
    }

    /// slurmd registered but reported less than slurm.conf gives the node
    /// (`reason`): it answers, and is marked INVALID_REG; an UNKNOWN node
    /// does not come up (Slurm's node stays `UNKNOWN+DRAIN+INVALID_REG`
    /// until a registration that is not short).
    pub(crate) fn registered_short(&mut self, time: i64) {
        self.last_registration = time;
        self.last_busy = self.last_busy.max(time);
        self.state = self
            .state
            .without(NodeFlag::NotResponding)
            .with(NodeFlag::InvalidReg);
        self.refresh();
    }

    /// slurmd registered: it answers, and an UNKNOWN node comes up. A DOWN
    /// node stays DOWN: whether it returns is ReturnToService's decision,
    /// journaled as its own event ([`NodeRec::returned`]). A mark of an
    /// earlier short registration goes (the drain, if any, stays).
    pub(crate) fn registered(&mut self, time: i64) {
        self.last_registration = time;
        self.last_busy = self.last_busy.max(time);
        self.state = self.state.without(NodeFlag::InvalidReg);
        if self.state.base == NodeBaseState::Unknown {
            self.state = self.up_now();
            self.refresh();
        } else {
            self.state = self.state.without(NodeFlag::NotResponding);
            self.refresh();
        }
    }

    /// Sets or clears NOT_RESPONDING.
    pub(crate) fn set_responding(&mut self, responding: bool) {
        self.state = if responding {
            self.state.without(NodeFlag::NotResponding)
        } else {
            self.state.with(NodeFlag::NotResponding)
        };
    }

    /// Back in service after being DOWN (ReturnToService): up with its
    /// allocation, flags kept; the reason goes unless a drain or failure
    /// still explains the node's state.
    pub(crate) fn returned(&mut self) {
        if !matches!(
            self.state.base,
            NodeBaseState::Down | NodeBaseState::Unknown
        ) {
            return;
        }
        self.state = self.up_now();
        self.refresh();
        if !self.state.has(NodeFlag::Drain) && !self.state.has(NodeFlag::Fail) {
            self.reason = None;
            self.reason_uid = 0;
            self.reason_time = 0;
        }
    }

    /// scontrol update NodeName=... State=...; validated by the caller.
    pub(crate) fn admin_update(
        &mut self,
        update: NodeUpdateState,
        reason: Option<&str>,
        uid: u32,
        time: i64,
    ) {
        if let Ok(next) = self.state.apply_update(update) {
            self.state = next;
        }
        match update {
            // The reason goes with the last of DOWN, DRAIN and FAIL (a DOWN
            // node undrained keeps it, as in Slurm).
            NodeUpdateState::Resume | NodeUpdateState::Undrain | NodeUpdateState::Idle => {
                if !self.state.has(NodeFlag::Drain)
                    && !self.state.has(NodeFlag::Fail)
                    && self.state.base != NodeBaseState::Down
                {
                    self.reason = None;
                    self.reason_uid = 0;
                    self.reason_time = 0;
                }
            }
            _ => {
                if let Some(r) = reason {
                    self.reason = Some(r.to_string());
                    self.reason_uid = uid;
                    self.reason_time = time;
                }
            }
        }
        self.refresh();
    }
}

/// The figures one node sent in answer to a ping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLoadReport {
    /// Controller node index.
    pub node: usize,
    /// `None` when the node did not measure them (its figures stay).
    pub load: Option<NodeLoad>,
    pub boot: NodeBoot,
}

impl Controller {
    /// Command::NodeLoads: the figures of each report replace the node's
    /// (unknown indices are skipped; what a report lacks stays). No event:
    /// see the module docs.
    pub(crate) fn node_loads(&mut self, reports: &[NodeLoadReport]) {
        for r in reports {
            if let Some(n) = self.nodes.get_mut(r.node) {
                if let Some(load) = r.load {
                    n.load = Some(load);
                }
                n.boot = n.boot.updated(r.boot);
            }
        }
    }
}

/// One partition.
#[derive(Debug, Clone, PartialEq)]
pub struct PartRec {
    /// What is in force: slurm.conf's line with `update` laid over it.
    pub conf: PartitionConf,
    pub view: PartitionView,
    /// The partition as slurm.conf has it.
    pub base: PartitionConf,
    /// What `scontrol update PartitionName=` changed, merged (`core::partition`).
    pub update: Option<slurm_common::conf::PartitionUpdate>,
    /// Made by `scontrol create PartitionName=`: `base` is then slurm.conf's
    /// PartitionName=DEFAULT template and `update` the whole definition.
    pub created: bool,
}

impl PartRec {
    pub fn from_conf(p: &PartitionConf, members: Vec<usize>) -> PartRec {
        let mut view = PartitionView::new(p.name.clone(), members);
        view.state = match p.state {
            slurm_common::conf::PartitionState::Up => PartitionState::Up,
            slurm_common::conf::PartitionState::Down => PartitionState::Down,
            slurm_common::conf::PartitionState::Drain => PartitionState::Drain,
            slurm_common::conf::PartitionState::Inactive => PartitionState::Inactive,
        };
        view.max_time = p.max_time;
        view.default_time = p.default_time;
        view.min_nodes = p.min_nodes;
        view.max_nodes = p.max_nodes;
        view.priority_tier = p.priority_tier;
        view.oversubscribe = match p.over_subscribe {
            slurm_common::conf::OverSubscribe::No => OverSubscribe::No,
            slurm_common::conf::OverSubscribe::Exclusive => OverSubscribe::Exclusive,
            slurm_common::conf::OverSubscribe::Yes(_) => OverSubscribe::Yes,
            slurm_common::conf::OverSubscribe::Force(_) => OverSubscribe::Force,
        };
        let mem = |m: slurm_common::conf::MemPer| match m {
            slurm_common::conf::MemPer::Cpu(mb) => MemReq::PerCpu(mb),
            slurm_common::conf::MemPer::Node(mb) => MemReq::PerNode(mb),
        };
        view.def_mem = p.def_mem.map(mem);
        view.max_mem = p.max_mem.map(mem);
        view.allow_accounts.clone_from(&p.allow_accounts);
        view.max_cpus_per_node = p.max_cpus_per_node;
        view.exclusive_user = p.exclusive_user;
        view.lln = p.lln;
        PartRec {
            conf: p.clone(),
            view,
            base: p.clone(),
            update: None,
            created: false,
        }
    }

    pub fn name(&self) -> &str {
        &self.view.name
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use slurm_common::conf::SlurmConf;

    /// The node of a one-node slurm.conf whose NodeName line ends in `attrs`.
    fn node(attrs: &str) -> NodeRec {
        let text = format!("ClusterName=c\nSlurmctldHost=h\nNodeName=n1 {attrs}\n");
        let conf = SlurmConf::parse(&text, "slurm.conf").unwrap().conf;
        NodeRec::from_conf(&conf.nodes[0])
    }

    /// A report of exactly what `n` is configured with.
    fn as_configured(n: &NodeRec) -> ReportedHw {
        ReportedHw {
            cpus: n.cpus,
            sockets: u32::from(n.sockets),
            cores_per_socket: u32::from(n.cores_per_socket),
            threads_per_core: u32::from(n.threads_per_core),
            real_memory_mb: n.real_memory_mb,
            tmp_disk_mb: n.tmp_disk_mb,
        }
    }

    #[test]
    fn a_report_of_the_configuration_or_more_is_not_short() {
        let n = node("Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=8000 TmpDisk=500");
        let hw = as_configured(&n);
        assert_eq!(n.short_of_config(&hw, None), None);
        let more = ReportedHw {
            cpus: 64,
            sockets: 4,
            real_memory_mb: 64_000,
            tmp_disk_mb: 10_000,
            ..hw
        };
        assert_eq!(n.short_of_config(&more, None), None);
    }

    #[test]
    fn every_shortfall_is_named_in_slurms_order_and_words() {
        let n = node("Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=8000 TmpDisk=500");
        let hw = ReportedHw {
            cpus: 8,
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 2,
            real_memory_mb: 7999,
            tmp_disk_mb: 499,
        };
        assert_eq!(
            n.short_of_config(&hw, None).as_deref(),
            Some(
                "Low socket*core*thread count, Low CPUs, \
                 Low RealMemory (reported:7999 < 100.00% of configured:8000), Low TmpDisk"
            )
        );
        let cpus_only = ReportedHw {
            cpus: 15,
            ..as_configured(&n)
        };
        assert_eq!(
            n.short_of_config(&cpus_only, None).as_deref(),
            Some("Low CPUs")
        );
    }

    #[test]
    fn memory_may_fall_short_by_node_reg_mem_percent_or_ten_percent_in_the_cloud() {
        let n = node("CPUs=2 RealMemory=4000");
        let at = |mb| ReportedHw {
            real_memory_mb: mb,
            ..as_configured(&n)
        };
        assert_eq!(n.short_of_config(&at(3700), Some(90.0)), None);
        assert_eq!(
            n.short_of_config(&at(3500), Some(90.0)).as_deref(),
            Some("Low RealMemory (reported:3500 < 90.00% of configured:4000)")
        );
        assert_eq!(n.short_of_config(&at(1), Some(0.0)), None);
        let cloud = node("CPUs=2 RealMemory=4000 State=CLOUD");
        assert_eq!(cloud.short_of_config(&at(3600), None), None);
        assert_eq!(
            cloud.short_of_config(&at(3599), None).as_deref(),
            Some("Low RealMemory (reported:3599 < 90.00% of configured:4000)")
        );
    }

    #[test]
    fn figures_not_reported_or_not_configured_are_not_checked() {
        let n = node("CPUs=4 RealMemory=4000 TmpDisk=100");
        assert_eq!(n.short_of_config(&ReportedHw::default(), None), None);
        let no_size = node("CPUs=1");
        let hw = ReportedHw {
            cpus: 1,
            real_memory_mb: 1,
            tmp_disk_mb: 1,
            ..ReportedHw::default()
        };
        assert_eq!(no_size.short_of_config(&hw, None), None);
    }

    proptest::proptest! {
        /// Short exactly when some reported figure (not 0) is below its
        /// configured one, with one reason per such figure.
        #[test]
        fn short_iff_a_reported_figure_is_below_the_configured_one(
            conf in (1u32..5, 1u32..5, 1u32..3, 1u64..9000, 0u64..900),
            rep in (0u32..6, 0u32..6, 0u32..4, 0u64..10_000, 0u64..1000),
        ) {
            let (s, c, t, mem, tmp) = conf;
            let n = node(&format!(
                "Sockets={s} CoresPerSocket={c} ThreadsPerCore={t} RealMemory={mem} TmpDisk={tmp}"
            ));
            let hw = ReportedHw {
                cpus: rep.0 * rep.1 * rep.2,
                sockets: rep.0,
                cores_per_socket: rep.1,
                threads_per_core: rep.2,
                real_memory_mb: rep.3,
                tmp_disk_mb: rep.4,
            };
            let threads = u64::from(hw.cpus);
            let expected = [
                threads > 0 && threads < u64::from(s * c * t),
                hw.cpus > 0 && hw.cpus < s * c * t,
                hw.real_memory_mb > 0 && hw.real_memory_mb < mem,
                hw.tmp_disk_mb > 0 && hw.tmp_disk_mb < tmp,
            ];
            let count = expected.iter().filter(|&&b| b).count();
            match n.short_of_config(&hw, None) {
                None => proptest::prop_assert_eq!(count, 0),
                Some(r) => proptest::prop_assert_eq!(r.split(", ").count(), count),
            }
        }
    }

    fn share(cpus: u32) -> NodeAlloc {
        NodeAlloc {
            node_index: 0,
            cpus,
            mem_mb: 0,
            tasks: 1,
        }
    }

    #[test]
    fn the_node_was_busy_until_its_last_share_went() {
        let mut n = node("CPUs=4");
        n.registered(100);
        assert_eq!(n.last_busy, 100);
        let job = |id| JobId::new(id);
        let one = n.pick_cpus(1);
        n.take(&share(1), &one, false, job(1));
        let two = n.pick_cpus(2);
        assert_eq!((&*one, &*two), (&[0][..], &[1, 2][..]));
        n.take(&share(2), &two, false, job(2));
        assert_eq!(n.alloc_cpus, 3);
        n.give_back(&share(1), &one, false, job(1), 150);
        assert_eq!(n.last_busy, 100, "job 2 still runs");
        n.give_back(&share(2), &two, false, job(2), 160);
        assert_eq!(n.last_busy, 160);
        assert_eq!(n.alloc_cpus, 0);
        // A registration is news of life as well; time never goes back.
        n.registered(170);
        assert_eq!(n.last_busy, 170);
        n.registered_short(165);
        assert_eq!(n.last_busy, 170);
    }

    /// CPUs two shares hold (a job resumed onto CPUs taken meanwhile)
    /// count once, as Slurm's CPUAlloc counts them; the least used go
    /// first.
    #[test]
    fn cpus_held_twice_count_once() {
        let mut n = node("CPUs=2");
        let job = |id| JobId::new(id);
        n.take(&share(2), &[0, 1], false, job(1));
        n.take(&share(1), &[0], false, job(2));
        assert_eq!((n.alloc_cpus, &n.cpu_use[..]), (2, &[2, 1][..]));
        assert_eq!(&*n.pick_cpus(1), &[1]);
        n.give_back(&share(2), &[0, 1], false, job(1), 10);
        assert_eq!((n.alloc_cpus, &n.cpu_use[..]), (1, &[1, 0][..]));
    }

    #[test]
    fn huge_figures_do_not_overflow() {
        let n = node("Sockets=64 CoresPerSocket=64 ThreadsPerCore=8 RealMemory=1");
        let hw = ReportedHw {
            cpus: u32::MAX,
            sockets: u32::MAX,
            cores_per_socket: u32::MAX,
            threads_per_core: u32::MAX,
            real_memory_mb: u64::MAX,
            tmp_disk_mb: u64::MAX,
        };
        assert_eq!(n.short_of_config(&hw, None), None);
    }
}

/// The record's updates driven through the controller: LastBusyTime from
/// events (replayed, snapshotted), load figures from commands (neither).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod controller_tests {
    use slurm_proto::v1;

    use super::{NodeBoot, NodeLoad, NodeLoadReport};
    use crate::core::snapshot;
    use crate::core::tests::{replay_encoded, script, Env, CONF};
    use crate::core::{Caller, Command, Controller, CtlConfig, Reply};

    fn fresh() -> Controller {
        let conf = slurm_common::conf::SlurmConf::parse(CONF, "slurm.conf")
            .unwrap()
            .conf;
        Controller::new(&conf, CtlConfig::from_conf(&conf, vec![]))
    }

    fn register(env: &mut Env, request: v1::RegisterNodeRequest) {
        let r = env.run(Command::RegisterNode {
            caller: Caller::ROOT,
            request: Box::new(request),
        });
        assert!(
            matches!(r, Reply::Registered { invalid: None, .. }),
            "{r:?}"
        );
    }

    fn measured(
        node: &str,
        cpu_load_hundredths: u32,
        free_memory_mb: u64,
    ) -> v1::RegisterNodeRequest {
        v1::RegisterNodeRequest {
            node_name: node.into(),
            reports_load: true,
            cpu_load_hundredths,
            free_memory_mb,
            ..Default::default()
        }
    }

    fn load(cpu_load_hundredths: u32, free_memory_mb: u64) -> Option<NodeLoad> {
        Some(NodeLoad {
            cpu_load_hundredths,
            free_memory_mb,
        })
    }

    #[test]
    fn last_busy_time_follows_registration_and_the_end_of_the_last_job() {
        let mut env = Env::new();
        let registered = env.now;
        env.register_all();
        assert!(env.ctl.nodes().iter().all(|n| n.last_busy == registered));

        env.now += 100;
        let id = env.submit(script());
        let node = env.job(id).alloc[0].node_index;
        assert_eq!(
            env.ctl.nodes()[node].last_busy,
            registered,
            "a start is not the end of work"
        );
        env.now += 50;
        assert_eq!(env.complete(id, 0, 0), Reply::Ok);
        assert_eq!(
            env.ctl.nodes()[node].last_busy,
            registered,
            "still busy cleaning up"
        );
        env.now += 5;
        env.epilogs(id);
        assert_eq!(env.ctl.nodes()[node].last_busy, env.now);
        let others = env
            .ctl
            .nodes()
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != node);
        assert!(others.into_iter().all(|(_, n)| n.last_busy == registered));

        // Replay and a snapshot give it back.
        let replayed = replay_encoded(CONF, &env.events);
        assert_eq!(replayed.nodes(), env.ctl.nodes());
        let bytes = snapshot::encode(&env.ctl, 1);
        let loaded = snapshot::decode(&bytes, fresh(), false).unwrap().controller;
        assert_eq!(loaded.nodes(), env.ctl.nodes());
    }

    /// A snapshot whose NODE record payloads went through `f` (lengths
    /// and checksums made right again).
    fn map_node_records(bytes: &[u8], f: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = bytes[..snapshot::SNAPSHOT_HEADER_LEN].to_vec();
        let mut pos = snapshot::SNAPSHOT_HEADER_LEN;
        while pos < bytes.len() {
            let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
            let mut payload = bytes[pos + 8..pos + 8 + len].to_vec();
            if payload[0] == 2 {
                f(&mut payload);
            }
            let new_len = u32::try_from(payload.len()).unwrap();
            out.extend_from_slice(&new_len.to_le_bytes());
            out.extend_from_slice(&crate::persist::crc::crc32(&payload).to_le_bytes());
            out.extend_from_slice(&payload);
            pos += 8 + len;
        }
        out
    }

    #[test]
    fn a_snapshot_from_before_last_busy_time_takes_the_last_registration() {
        let mut env = Env::new();
        env.register_all();
        env.now += 100;
        let id = env.submit(script());
        env.now += 10;
        env.finish(id, 0, 0);
        let node = env.ctl.job(id).unwrap().last_alloc[0].node_index;
        assert_eq!(env.ctl.nodes()[node].last_busy, env.now);

        let bytes = snapshot::encode(&env.ctl, 1);
        // The layout from before LastBusyTime was kept: its 8 bytes gone.
        let old = map_node_records(&bytes, |p| p.truncate(p.len() - 8));
        let loaded = snapshot::decode(&old, fresh(), false).unwrap().controller;
        for (got, was) in loaded.nodes().iter().zip(env.ctl.nodes()) {
            assert_eq!(got.last_busy, was.last_registration, "{}", got.name);
            assert_eq!(got.state, was.state);
        }
        // Half a LastBusyTime, or bytes after it, are damage.
        for bad in [
            map_node_records(&bytes, |p| p.truncate(p.len() - 4)),
            map_node_records(&bytes, |p| p.push(0)),
        ] {
            assert!(snapshot::decode(&bad, fresh(), false).is_err());
        }
    }

    #[test]
    fn load_comes_with_registrations_and_pings_and_is_never_journaled() {
        let mut env = Env::new();
        register(&mut env, measured("n1", 226, 22719));
        register(
            &mut env,
            v1::RegisterNodeRequest {
                node_name: "n2".into(),
                // Not measured (an emulated node): not shown as 0.00.
                cpu_load_hundredths: 500,
                ..Default::default()
            },
        );
        assert_eq!(env.ctl.nodes()[0].load, load(226, 22719));
        assert_eq!(env.ctl.nodes()[1].load, None);

        let events = env.events.len();
        let out = env.ctl.handle(
            Command::NodeLoads {
                reports: vec![
                    NodeLoadReport {
                        node: 1,
                        load: load(0, 0),
                        boot: NodeBoot::default(),
                    },
                    NodeLoadReport {
                        node: 0,
                        load: load(1250, 100),
                        boot: NodeBoot::default(),
                    },
                    // An index the controller does not have.
                    NodeLoadReport {
                        node: 99,
                        load: load(1, 1),
                        boot: NodeBoot::default(),
                    },
                ],
            },
            env.now,
        );
        assert_eq!(out.reply, Reply::None);
        assert!(out.events.is_empty() && out.actions.is_empty());
        assert_eq!(env.events.len(), events);
        let snap = env.ctl.snapshot();
        assert_eq!(snap.nodes[0].load, load(1250, 100));
        assert_eq!(snap.nodes[1].load, load(0, 0));

        // A registration that does not measure keeps the figures.
        register(
            &mut env,
            v1::RegisterNodeRequest {
                node_name: "n1".into(),
                ..Default::default()
            },
        );
        assert_eq!(env.ctl.nodes()[0].load, load(1250, 100));

        // Neither replay nor a snapshot brings them back: the state
        // without them is the same.
        let strip = |ctl: &Controller| {
            let mut nodes = ctl.nodes().to_vec();
            for n in &mut nodes {
                n.load = None;
            }
            nodes
        };
        let replayed = replay_encoded(CONF, &env.events);
        assert!(replayed.nodes().iter().all(|n| n.load.is_none()));
        assert_eq!(replayed.nodes(), strip(&env.ctl).as_slice());
        let loaded = snapshot::decode(&snapshot::encode(&env.ctl, 1), fresh(), false)
            .unwrap()
            .controller;
        assert_eq!(loaded.nodes(), strip(&env.ctl).as_slice());
    }

    #[test]
    fn scontrol_gets_the_figures_or_nothing_and_last_busy_time() {
        let mut env = Env::new();
        register(&mut env, measured("n1", 226, 22719));
        let snap = env.ctl.snapshot();
        let n1 = crate::rpc::convert::node_info(&snap, &snap.nodes[0]);
        assert_eq!(n1.cpu_load_hundredths, Some(226));
        assert_eq!(n1.free_memory_mb, Some(22719));
        assert_eq!(n1.last_busy_time, env.now);
        let n2 = crate::rpc::convert::node_info(&snap, &snap.nodes[1]);
        assert_eq!((n2.cpu_load_hundredths, n2.free_memory_mb), (None, None));
        assert_eq!(n2.last_busy_time, 0, "never registered: Unknown");
    }

    /// The registration of a node that booted at `boot` and whose slurmd
    /// started at `start`.
    fn booted(node: &str, boot: i64, start: i64) -> v1::RegisterNodeRequest {
        v1::RegisterNodeRequest {
            node_name: node.into(),
            boot_time: boot,
            slurmd_start_time: start,
            ..Default::default()
        }
    }

    #[test]
    fn boot_and_slurmd_start_times_come_from_slurmd_and_are_not_state() {
        let mut env = Env::new();
        let (boot, start) = (env.now - 3600, env.now - 5);
        register(&mut env, booted("n1", boot, start));
        let snap = env.ctl.snapshot();
        let n1 = crate::rpc::convert::node_info(&snap, &snap.nodes[0]);
        assert_eq!((n1.boot_time, n1.slurmd_start_time), (boot, start));
        // Not the registration time, which is later than both.
        assert!(n1.boot_time < snap.nodes[0].last_registration);
        let n2 = crate::rpc::convert::node_info(&snap, &snap.nodes[1]);
        assert_eq!((n2.boot_time, n2.slurmd_start_time), (0, 0), "None");

        // A ping answer brings a restarted slurmd's start time; one that
        // says nothing (an older slurmd, an emulated node) changes nothing.
        let events = env.events.len();
        env.ctl.handle(
            Command::NodeLoads {
                reports: vec![
                    NodeLoadReport {
                        node: 0,
                        load: None,
                        boot: NodeBoot {
                            boot_time: 0,
                            slurmd_start_time: start + 60,
                        },
                    },
                    NodeLoadReport {
                        node: 1,
                        load: None,
                        boot: NodeBoot::default(),
                    },
                ],
            },
            env.now,
        );
        assert_eq!(env.events.len(), events);
        let nodes = env.ctl.nodes();
        assert_eq!(
            nodes[0].boot,
            NodeBoot {
                boot_time: boot,
                slurmd_start_time: start + 60
            }
        );
        assert_eq!(nodes[1].boot, NodeBoot::default());

        // Neither replay nor a snapshot brings them back, and nothing else
        // differs without them.
        let strip = |ctl: &Controller| {
            let mut nodes = ctl.nodes().to_vec();
            for n in &mut nodes {
                n.boot = NodeBoot::default();
            }
            nodes
        };
        let replayed = replay_encoded(CONF, &env.events);
        assert_eq!(replayed.nodes(), strip(&env.ctl).as_slice());
        let loaded = snapshot::decode(&snapshot::encode(&env.ctl, 1), fresh(), false)
            .unwrap()
            .controller;
        assert_eq!(loaded.nodes(), strip(&env.ctl).as_slice());

        // A reconfiguration keeps them.
        let conf = slurm_common::conf::SlurmConf::parse(CONF, "slurm.conf")
            .unwrap()
            .conf;
        let before = env.ctl.nodes()[0].boot;
        env.ctl
            .reconfigure(&conf, CtlConfig::from_conf(&conf, vec![]))
            .unwrap();
        assert_eq!(env.ctl.nodes()[0].boot, before);
    }

    #[test]
    fn negative_times_are_not_known_times() {
        let news = NodeBoot::from_registration(&booted("n1", -5, -1));
        assert_eq!(news, NodeBoot::default());
        let known = NodeBoot {
            boot_time: 10,
            slurmd_start_time: 20,
        };
        assert_eq!(known.updated(news), known);
        assert_eq!(
            known.updated(NodeBoot {
                boot_time: 11,
                slurmd_start_time: 0
            }),
            NodeBoot {
                boot_time: 11,
                slurmd_start_time: 20
            }
        );
    }

    /// Log lines written while `f` runs, without colours.
    fn logs_of(f: impl FnOnce()) -> String {
        use std::sync::{Arc, Mutex};
        #[derive(Clone)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf(Arc::new(Mutex::new(Vec::new())));
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = buf.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    const DIFFERENT_CONF: &str = "Node n1 appears to have a different slurm.conf than the slurmctld.  \
        This could cause issues with communication and functionality.  Please review both files and \
        make sure they are the same.  If this is expected ignore, and set DebugFlags=NO_CONF_HASH in \
        your slurm.conf.";

    fn hashed_env(extra: &str) -> Env {
        let text = format!("{CONF}{extra}");
        let mut env = Env::with_conf(&text);
        let conf = slurm_common::conf::SlurmConf::parse(&text, "slurm.conf")
            .unwrap()
            .conf;
        let mut cfg = CtlConfig::from_conf(&conf, vec![]);
        cfg.conf_hash = slurm_common::conf::conf_hash(text.as_bytes());
        env.ctl = Controller::new(&conf, cfg);
        env
    }

    fn hashed(node: &str, hash: &str) -> v1::RegisterNodeRequest {
        v1::RegisterNodeRequest {
            node_name: node.into(),
            config_hash: hash.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_node_with_another_slurm_conf_is_logged_once_per_registration_and_nothing_more() {
        let mut env = hashed_env("");
        let ours = env.ctl.config().conf_hash.clone();
        assert_eq!(ours.len(), 16);
        let logs = logs_of(|| register(&mut env, hashed("n1", "0123456789abcdef")));
        assert_eq!(logs.matches(DIFFERENT_CONF).count(), 1, "{logs}");
        assert!(logs.contains("ERROR"), "{logs}");
        // Registered all the same: up, no reason.
        let n1 = &env.ctl.nodes()[0];
        assert_eq!(n1.state.base, slurm_common::state::NodeBaseState::Idle);
        assert_eq!(n1.reason, None);
        // Again at the next registration, once.
        let logs = logs_of(|| register(&mut env, hashed("n1", "0123456789abcdef")));
        assert_eq!(logs.matches(DIFFERENT_CONF).count(), 1, "{logs}");
        // The same file, or a node that sent no hash: nothing.
        let logs = logs_of(|| {
            register(&mut env, hashed("n1", &ours));
            register(&mut env, hashed("n1", ""));
        });
        assert!(!logs.contains("different slurm.conf"), "{logs}");
    }

    #[test]
    fn debug_flags_no_conf_hash_turns_the_check_off() {
        let mut env = hashed_env("DebugFlags=Backfill,no_conf_hash\n");
        assert!(!env.ctl.config().check_conf_hash);
        let logs = logs_of(|| register(&mut env, hashed("n1", "0123456789abcdef")));
        assert!(!logs.contains("different slurm.conf"), "{logs}");
        assert!(
            hashed_env("DebugFlags=Backfill\n")
                .ctl
                .config()
                .check_conf_hash
        );
    }

    #[test]
    fn the_controller_takes_the_hash_of_the_file_it_read() {
        use slurm_common::conf::{conf_hash, MemoryIncludes, SlurmConf};
        let mut files = MemoryIncludes::new().with("/etc/slurm/slurm.conf", CONF);
        let conf = SlurmConf::load_with("/etc/slurm/slurm.conf", &mut files)
            .unwrap()
            .conf;
        let cfg = CtlConfig::from_conf(&conf, vec![]);
        assert_eq!(cfg.conf_hash, conf_hash(CONF.as_bytes()));
        assert!(cfg.check_conf_hash);
    }

    #[test]
    fn conf_hashes_are_compared_only_when_both_are_known() {
        use super::conf_hash_mismatch as differs;
        assert!(differs(true, "aa", "bb"));
        assert!(!differs(true, "aa", "aa"));
        assert!(!differs(true, "", "bb"), "a controller without a file");
        assert!(
            !differs(true, "aa", ""),
            "a node that could not read its file"
        );
        assert!(!differs(false, "aa", "bb"), "NO_CONF_HASH");
    }

    #[test]
    fn reconfigure_keeps_last_busy_time_and_load() {
        let mut env = Env::new();
        register(&mut env, measured("n1", 7, 8));
        let before = env.ctl.nodes()[0].clone();
        let conf = slurm_common::conf::SlurmConf::parse(CONF, "slurm.conf")
            .unwrap()
            .conf;
        env.ctl
            .reconfigure(&conf, CtlConfig::from_conf(&conf, vec![]))
            .unwrap();
        let after = &env.ctl.nodes()[0];
        assert_eq!(
            (after.last_busy, after.load),
            (before.last_busy, before.load)
        );
    }
}
