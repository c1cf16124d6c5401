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

use slurm_common::conf::{NodeConf, NodeConfState, PartitionConf};
use slurm_common::ids::JobId;
use slurm_common::state::{NodeBaseState, NodeFlag, NodeState, NodeUpdateState};
use slurm_sched::{MemReq, NodeAlloc, OverSubscribe, PartitionState, PartitionView};

use super::up_state;

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
    pub weight: u32,
    pub features: Vec<String>,
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
    pub exclusive_owner: Option<JobId>,
    /// Indices of the partitions holding it.
    pub partitions: Vec<usize>,
    pub last_registration: i64,
    /// `uname` machine and system of the node, from its registration.
    pub arch: String,
    pub os: String,
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
            conf_state: c.state,
            state,
            reason: c.reason.clone(),
            reason_uid: 0,
            reason_time: 0,
            alloc_cpus: 0,
            alloc_mem_mb: 0,
            completing_jobs: 0,
            completing_cpus: 0,
            exclusive_owner: None,
            partitions: Vec::new(),
            last_registration: 0,
            arch: String::new(),
            os: String::new(),
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

    pub(crate) fn take(&mut self, a: &NodeAlloc, exclusive: bool, job: JobId) {
        self.alloc_cpus = self.alloc_cpus.saturating_add(a.cpus);
        self.alloc_mem_mb = self.alloc_mem_mb.saturating_add(a.mem_mb);
        if exclusive {
            self.exclusive_owner = Some(job);
        }
        self.refresh();
    }

    pub(crate) fn give_back(&mut self, a: &NodeAlloc, exclusive: bool, job: JobId) {
        self.alloc_cpus = self.alloc_cpus.saturating_sub(a.cpus);
        self.alloc_mem_mb = self.alloc_mem_mb.saturating_sub(a.mem_mb);
        if exclusive && self.exclusive_owner == Some(job) {
            self.exclusive_owner = None;
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
            NodeUpdateState::Resume | NodeUpdateState::Undrain | NodeUpdateState::Idle => {
                if !self.state.has(NodeFlag::Drain) && !self.state.has(NodeFlag::Fail) {
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

/// One partition.
#[derive(Debug, Clone, PartialEq)]
pub struct PartRec {
    pub conf: PartitionConf,
    pub view: PartitionView,
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
        view.def_mem = p.def_mem.map(|m| match m {
            slurm_common::conf::MemPer::Cpu(mb) => MemReq::PerCpu(mb),
            slurm_common::conf::MemPer::Node(mb) => MemReq::PerNode(mb),
        });
        PartRec {
            conf: p.clone(),
            view,
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
