//! `scontrol reconfigure`: taking a re-read slurm.conf into a running
//! controller.
//!
//! The new configuration replaces everything the controller derives from
//! slurm.conf (partitions and their limits, node features, weights and
//! sizes, the timeouts and scheduling settings of [`CtlConfig`]) while
//! keeping everything that happened since start-up: jobs, allocations, node
//! states and reasons set by `scontrol update`, the next job id.
//!
//! As in Slurm 22.05, the node list itself cannot change this way: job
//! allocations refer to nodes by position, and slurmd daemons would have to
//! be restarted anyway. A changed node list is refused with an error naming
//! the first difference, and nothing changes.
//!
//! Nothing here is journaled: a restart reads slurm.conf afresh and arrives
//! at the same place. The exception is what `scontrol update|create|delete
//! PartitionName=` changed: the journal has those, so dropping them (as
//! Slurm does unless ReconfigFlags keeps them) is journaled too
//! (`core::partition`).

use slurm_common::conf::SlurmConf;
use thiserror::Error;

use super::{Controller, CtlConfig, PartRec};

/// Why a configuration was not taken.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReconfigError {
    #[error(
        "node list changed ({detail}); adding or removing nodes needs a restart of slurmctld and slurmd"
    )]
    NodesChanged { detail: String },
}

/// What a reconfiguration changed, for the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconfigSummary {
    pub partitions: usize,
    /// Jobs whose partition no longer exists.
    pub orphaned_jobs: Vec<u32>,
}

impl Controller {
    /// Takes `conf` (already parsed and validated) with settings `cfg`.
    pub fn reconfigure(
        &mut self,
        conf: &SlurmConf,
        cfg: CtlConfig,
    ) -> Result<ReconfigSummary, ReconfigError> {
        let fresh = Controller::new(conf, cfg.clone());
        if fresh.nodes.len() != self.nodes.len() {
            return Err(ReconfigError::NodesChanged {
                detail: format!("{} nodes, was {}", fresh.nodes.len(), self.nodes.len()),
            });
        }
        if let Some((new, old)) = fresh
            .nodes
            .iter()
            .zip(&self.nodes)
            .find(|(n, o)| n.name != o.name)
        {
            return Err(ReconfigError::NodesChanged {
                detail: format!("{} where {} was", new.name, old.name),
            });
        }
        let mut nodes = fresh.nodes;
        for (new, old) in nodes.iter_mut().zip(&self.nodes) {
            // Runtime state stays; what slurm.conf says comes from the new one.
            new.state = old.state;
            new.reason = old.reason.clone();
            new.reason_uid = old.reason_uid;
            new.reason_time = old.reason_time;
            new.alloc_cpus = old.alloc_cpus;
            new.alloc_mem_mb = old.alloc_mem_mb;
            new.completing_jobs = old.completing_jobs;
            new.completing_cpus = old.completing_cpus;
            // The ids running jobs hold stay theirs; a node given fewer
            // CPUs no longer counts those past its end.
            let cpus = new.cpu_use.len();
            new.cpu_use.clone_from(&old.cpu_use);
            new.cpu_use.resize(cpus, 0);
            new.recount_alloc_cpus();
            new.exclusive_owner = old.exclusive_owner;
            new.last_registration = old.last_registration;
            new.arch = old.arch.clone();
            new.os = old.os.clone();
            new.last_busy = old.last_busy;
            new.load = old.load;
            new.boot = old.boot;
            // Dropped by the caller, journaled (`core::node_attrs`).
            new.attrs.clone_from(&old.attrs);
        }
        // Updates by `scontrol update PartitionName=` follow their
        // partition by name, and created partitions stay (standing in for
        // a new line of their name); deleted slurm.conf partitions stay
        // away. The caller then drops, journaled, what ReconfigFlags does
        // not keep (`core::partition`), so that a replay drops the same.
        let summary_partitions = fresh.partitions.len();
        let mut partitions = Vec::with_capacity(fresh.partitions.len());
        for mut p in fresh.partitions {
            match self.partitions.iter().find(|old| old.name() == p.name()) {
                Some(old) if old.created => {}
                Some(old) => {
                    p.update.clone_from(&old.update);
                    partitions.push(p);
                }
                None if !self.part_conf.has_line(p.name()) => partitions.push(p),
                // Deleted, until the reset brings it back.
                None => {}
            }
        }
        for old in self.partitions.iter().filter(|p| p.created) {
            let Some(base) = fresh.part_conf.created_base(old.name()) else {
                continue;
            };
            let mut rec = PartRec::from_conf(&base, Vec::new());
            rec.update.clone_from(&old.update);
            rec.created = true;
            partitions.push(rec);
        }
        self.nodes = nodes;
        self.node_index = fresh.node_index;
        self.partitions = partitions;
        self.part_conf = fresh.part_conf;
        self.relink_partitions();
        self.rebuild_partitions();
        let orphaned_jobs = self
            .jobs
            .values()
            .filter(|j| j.partition.is_none())
            .map(|j| j.id.get())
            .collect();
        let summary = ReconfigSummary {
            partitions: summary_partitions,
            orphaned_jobs,
        };
        // The job id sequence continues; the operators and the rest of the
        // settings are the new ones.
        self.cfg = cfg;
        self.sched_dirty = true;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurm_common::state::NodeFlag;

    fn conf(text: &str) -> SlurmConf {
        SlurmConf::parse(text, "slurm.conf").expect("parses").conf
    }

    const BASE: &str = "ClusterName=c\nSlurmctldHost=h\n\
        NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN\n\
        PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=60 State=UP\n";

    fn controller(text: &str) -> Controller {
        let c = conf(text);
        Controller::new(&c, CtlConfig::from_conf(&c, vec![0]))
    }

    #[test]
    fn partition_limits_and_node_features_change_and_node_states_stay() {
        let mut ctl = controller(BASE);
        ctl.nodes[0].state = ctl.nodes[0].state.with(NodeFlag::Drain);
        ctl.nodes[0].reason = Some("disk".into());
        let new = BASE
            .replace("MaxTime=60", "MaxTime=120")
            .replace("RealMemory=1000", "RealMemory=1000 Feature=fast")
            + "PartitionName=long Nodes=n2 MaxTime=INFINITE\n";
        let c = conf(&new);
        let summary = ctl
            .reconfigure(&c, CtlConfig::from_conf(&c, vec![0]))
            .expect("taken");
        assert_eq!(summary.partitions, 2);
        assert!(ctl.nodes[0].state.has(NodeFlag::Drain));
        assert_eq!(ctl.nodes[0].reason.as_deref(), Some("disk"));
        assert_eq!(ctl.nodes[1].features, vec!["fast".to_string()]);
        assert_eq!(ctl.partitions.len(), 2);
        assert_eq!(
            ctl.partitions[0].view.max_time,
            slurm_common::time::TimeLimit::Minutes(120)
        );
        assert_eq!(ctl.nodes[1].partitions, vec![0, 1]);
    }

    #[test]
    fn a_changed_node_list_is_refused_and_nothing_changes() {
        let mut ctl = controller(BASE);
        let before = ctl.partitions.clone();
        for text in [
            BASE.replace("n[1-2]", "n[1-3]"),
            BASE.replace("n[1-2]", "m[1-2]"),
        ] {
            let c = conf(&text);
            let err = ctl
                .reconfigure(&c, CtlConfig::from_conf(&c, vec![0]))
                .expect_err("refused");
            assert!(matches!(err, ReconfigError::NodesChanged { .. }), "{err}");
            assert_eq!(ctl.partitions, before);
        }
    }
}
