//! `scontrol update PartitionName=NAME Key=Value...`.
//!
//! An update is a PartitionName line of slurm.conf laid over the partition
//! (`slurm_common::conf::PartitionUpdate`): the same keys, the same checks,
//! the same meaning. Each partition keeps slurm.conf's line (`base`) and
//! the updates merged (`update`); what is in force is always rebuilt from
//! the two, so a journal replay, a snapshot load and a reconfiguration
//! arrive at the same partition by the same path.
//!
//! Updates are journaled, so they survive a restart or a failover (as with
//! Slurm's `-R` and its backup's takeover). `scontrol reconfigure` puts the
//! partitions back as the new slurm.conf has them, unless ReconfigFlags
//! says KeepPartInfo (keep every update) or KeepPartState (keep State).

use slurm_common::conf::{PartitionUpdate, SlurmConf};
use slurm_proto::{v1, ErrorCode};

use super::{Caller, Controller, Event, Outcome, PartRec, Reply};

/// What ReconfigFlags asks `scontrol reconfigure` to keep of the updates:
/// `None` keeps them all (KeepPartInfo); otherwise the keys kept.
pub(super) fn kept_on_reconfigure(conf: &SlurmConf) -> Option<Vec<String>> {
    let flags: Vec<String> = conf
        .entries
        .iter()
        .filter(|e| e.key.eq_ignore_ascii_case("ReconfigFlags"))
        .flat_map(|e| e.value.split(',').map(|f| f.trim().to_ascii_lowercase()))
        .collect();
    if flags.iter().any(|f| f == "keeppartinfo") {
        None
    } else if flags.iter().any(|f| f == "keeppartstate") {
        Some(vec!["State".to_string()])
    } else {
        Some(Vec::new())
    }
}

impl Controller {
    pub(super) fn update_partition(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::UpdatePartitionRequest,
        now: i64,
    ) -> Reply {
        if !self.is_operator(caller) {
            return Reply::error(ErrorCode::AccessDenied, "");
        }
        if !self.part_index.contains_key(&req.name) {
            return Reply::error(ErrorCode::InvalidPartitionName, "");
        }
        let update = match PartitionUpdate::parse(
            req.attributes
                .iter()
                .map(|e| (e.key.as_str(), e.value.as_str())),
        ) {
            Ok(u) => u,
            Err(e) => return Reply::error(ErrorCode::NotSupported, e.to_string()),
        };
        if update.is_empty() {
            return Reply::Ok;
        }
        if let Some(expr) = update.nodes() {
            if let Err(bad) = self.partition_members(expr) {
                return Reply::error(
                    ErrorCode::InvalidNodeName,
                    format!("invalid node name specified: {bad}"),
                );
            }
        }
        let event = Event::PartitionUpdated {
            partition: req.name.clone(),
            attributes: update
                .pairs()
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect(),
            uid: caller.uid,
            time: now,
        };
        if self.emit(out, event) {
            Reply::Ok
        } else {
            Reply::error(
                ErrorCode::Unspecified,
                "the partition update was not applied",
            )
        }
    }

    /// Indices of the nodes `Nodes=` names (host lists and ALL), in node
    /// order; the first name that is no node on error.
    fn partition_members(&self, expr: &str) -> Result<Vec<usize>, String> {
        let mut wanted = vec![false; self.nodes.len()];
        for word in slurm_common::hostlist::expand(expr).map_err(|_| expr.to_string())? {
            if word.eq_ignore_ascii_case("ALL") {
                wanted.fill(true);
            } else {
                let i = self.node_index.get(&word).copied().ok_or(word)?;
                wanted[i] = true;
            }
        }
        Ok(wanted
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.then_some(i))
            .collect())
    }

    /// Applies a journaled update. Unknown partitions (gone from
    /// slurm.conf since) and values that no longer parse are skipped.
    pub(super) fn apply_partition_update(&mut self, name: &str, attributes: &[(String, String)]) {
        let Some(&idx) = self.part_index.get(name) else {
            tracing::warn!(partition = %name, "update of a partition slurm.conf no longer has: skipped");
            return;
        };
        let update = match PartitionUpdate::parse(
            attributes.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ) {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(partition = %name, error = %e, "partition update skipped");
                return;
            }
        };
        // One default partition: naming a new one takes it from the others.
        if update.default() == Some(true) {
            let no = PartitionUpdate::parse([("Default", "NO")]);
            for (i, p) in self.partitions.iter_mut().enumerate() {
                if i != idx && p.conf.default {
                    if let Ok(no) = &no {
                        p.update = Some(match &p.update {
                            Some(u) => u.merged(no),
                            None => no.clone(),
                        });
                    }
                }
            }
        }
        let p = &mut self.partitions[idx];
        p.update = Some(match &p.update {
            Some(u) => u.merged(&update),
            None => update,
        });
        self.rebuild_partitions();
    }

    /// Keeps of every partition's updates only the keys in `keep`.
    pub(super) fn reset_partition_updates(&mut self, keep: &[String]) {
        let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
        for p in &mut self.partitions {
            p.update = p.update.as_ref().and_then(|u| u.only(&keep));
        }
        self.rebuild_partitions();
    }

    /// What is in force, from slurm.conf's lines and the updates: each
    /// partition, the nodes' partition lists and the default partition.
    pub(super) fn rebuild_partitions(&mut self) {
        let mut rebuilt = Vec::with_capacity(self.partitions.len());
        for p in &self.partitions {
            let members = match p.update.as_ref().and_then(|u| u.nodes()) {
                Some(expr) => self.partition_members(expr).ok(),
                None => None,
            };
            let conf = match &p.update {
                Some(u) => u.apply(
                    &p.base,
                    members
                        .as_ref()
                        .map(|m| m.iter().map(|&i| self.nodes[i].name.clone()).collect()),
                ),
                None => p.base.clone(),
            };
            let indices: Vec<usize> = conf
                .nodes
                .iter()
                .filter_map(|n| self.node_index.get(n).copied())
                .collect();
            let mut rec = PartRec::from_conf(&conf, indices);
            rec.base = p.base.clone();
            rec.update = p.update.clone();
            rebuilt.push(rec);
        }
        for n in &mut self.nodes {
            n.partitions.clear();
        }
        for (idx, p) in rebuilt.iter().enumerate() {
            for &m in &p.view.nodes {
                if let Some(n) = self.nodes.get_mut(m) {
                    n.partitions.push(idx);
                }
            }
        }
        self.default_part = rebuilt.iter().position(|p| p.conf.default);
        self.partitions = rebuilt;
        self.sched_dirty = true;
    }
}
