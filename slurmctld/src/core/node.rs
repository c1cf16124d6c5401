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

    /// slurmd registered: it answers, and an UNKNOWN node comes up. A DOWN
    /// node stays DOWN: whether it returns is ReturnToService's decision,
    /// journaled as its own event ([`NodeRec::returned`]).
    pub(crate) fn registered(&mut self, time: i64) {
        self.last_registration = time;
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
