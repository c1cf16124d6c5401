//! The partition table at run time: `scontrol update PartitionName=`,
//! `scontrol create PartitionName=` and `scontrol delete PartitionName=`.
//!
//! An update is a PartitionName line of slurm.conf laid over the partition
//! (`slurm_common::conf::PartitionUpdate`): the same keys, the same checks,
//! the same meaning. Each partition keeps the line it starts from (`base`)
//! and the updates merged (`update`); what is in force is always rebuilt
//! from the two, so a journal replay, a snapshot load and a reconfiguration
//! arrive at the same partition by the same path.
//!
//! A created partition is the same thing with another base: slurm.conf's
//! PartitionName=DEFAULT values over Slurm's defaults (as Slurm builds a new
//! partition from its default record), and its whole definition is the
//! `update`. So it is shown, updated, saved and replayed like any other.
//! A name belongs to one partition: should a replay or a snapshot load meet
//! a slurm.conf that has since gained a line of a created partition's name,
//! the created one stands in its place until a reconfiguration decides.
//!
//! Deleting is refused while a pending, running or suspended job is in the
//! partition, as Slurm 22.05 refuses with ESLURM_PARTITION_IN_USE (ended
//! jobs, even completing ones, do not count, as in Slurm); deleting the
//! default partition leaves none.
//!
//! All three are journaled, so they survive a restart or a failover (as with
//! Slurm's `-R` and its backup's takeover). `scontrol reconfigure` puts the
//! table back as the new slurm.conf has it, as Slurm 22.05 does: deleted
//! slurm.conf partitions are back, created ones are gone unless
//! ReconfigFlags=KeepPartInfo, updates are dropped unless KeepPartInfo
//! (keep every update) or KeepPartState (keep State). Dropping is journaled
//! too (`PartitionUpdatesReset`, `PartitionTableReset`), so a replay drops
//! the same.

use std::sync::Arc;

use slurm_common::conf::{NodeSet, PartitionConf, PartitionUpdate, SlurmConf, SourceLoc};
use slurm_proto::{v1, ErrorCode};

use super::{Caller, Controller, Event, Outcome, PartRec, Reply};

/// Where a created partition's base says it comes from.
const CREATED_ORIGIN: &str = "scontrol create";

/// What slurm.conf says about partitions beyond the partitions themselves:
/// kept so that a reset can bring a deleted line back, `Nodes=` can name
/// a NodeSet, and a created partition starts from the configured defaults.
#[derive(Debug, Clone)]
pub(crate) struct PartConfig {
    /// The PartitionName lines, in file order.
    lines: Vec<PartitionConf>,
    node_sets: Vec<NodeSet>,
    /// What a created partition starts from (named at creation); `None`
    /// only if Slurm's defaults stopped parsing, which refuses creation.
    template: Option<PartitionConf>,
}

impl PartConfig {
    pub(crate) fn from_conf(conf: &SlurmConf) -> PartConfig {
        PartConfig {
            lines: conf.partitions.clone(),
            node_sets: conf.node_sets.clone(),
            template: template(conf),
        }
    }

    /// Whether slurm.conf has a PartitionName line of this name.
    pub(super) fn has_line(&self, name: &str) -> bool {
        self.lines.iter().any(|l| l.name == name)
    }

    pub(super) fn created_base(&self, name: &str) -> Option<PartitionConf> {
        let mut base = self.template.clone()?;
        base.name = name.to_string();
        Some(base)
    }
}

/// Slurm's defaults as slurm.conf's parser resolves them for a bare
/// PartitionName line, with the cluster values that partitions inherit,
/// then what the PartitionName=DEFAULT lines set (their Nodes= aside: a
/// created partition has the nodes it is given).
fn template(conf: &SlurmConf) -> Option<PartitionConf> {
    let mut t = SlurmConf::parse(
        "ClusterName=template\nSlurmctldHost=template\nPartitionName=template\n",
        CREATED_ORIGIN,
    )
    .ok()?
    .conf
    .partitions
    .into_iter()
    .next()?;
    t.loc = SourceLoc::new(CREATED_ORIGIN, 0);
    t.nodes.clear();
    t.nodes_expr = None;
    t.default = false;
    t.def_mem = conf.def_mem;
    t.max_mem = conf.max_mem;
    t.preempt_mode = conf.preempt_mode;
    let mut defaults: Option<PartitionUpdate> = None;
    for line in default_lines(conf) {
        for (k, v) in line {
            if k.eq_ignore_ascii_case("PartitionName") || k.eq_ignore_ascii_case("Nodes") {
                continue;
            }
            // Keys an update cannot carry were taken (or refused) by the
            // parser already; only the ones it can carry are inherited.
            if let Ok(one) = PartitionUpdate::parse([(k, v)]) {
                defaults = Some(match defaults {
                    Some(d) => d.merged(&one),
                    None => one,
                });
            }
        }
    }
    Some(match defaults {
        Some(d) => d.apply(&t, None),
        None => t,
    })
}

/// The pairs of each `PartitionName=DEFAULT` line, in file order.
fn default_lines(conf: &SlurmConf) -> Vec<Vec<(&str, &str)>> {
    let mut out: Vec<Vec<(&str, &str)>> = Vec::new();
    let mut current: Option<&SourceLoc> = None;
    for e in &conf.entries {
        let starts = e.key.eq_ignore_ascii_case("PartitionName");
        if starts && e.value.trim().eq_ignore_ascii_case("DEFAULT") {
            out.push(vec![(e.key.as_str(), e.value.as_str())]);
            current = Some(&e.loc);
        } else if starts || current != Some(&e.loc) {
            current = None;
        } else if let Some(line) = out.last_mut() {
            line.push((e.key.as_str(), e.value.as_str()));
        }
    }
    out
}

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

/// A name a partition can have: not empty, not the DEFAULT of slurm.conf,
/// and nothing that would split it in `-p a,b` or a PartitionName line.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.eq_ignore_ascii_case("DEFAULT")
        && !name
            .chars()
            .any(|c| c == ',' || c == '=' || c.is_whitespace() || c.is_control())
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
        let update = match self.checked_attributes(&req.attributes) {
            Ok(u) => u,
            Err(reply) => return reply,
        };
        if update.is_empty() {
            return Reply::Ok;
        }
        let event = Event::PartitionUpdated {
            partition: req.name.clone(),
            attributes: owned_pairs(&update),
            uid: caller.uid,
            time: now,
        };
        self.emit_or_fail(out, event, "the partition update was not applied")
    }

    /// `scontrol create PartitionName=NAME ...`. A name in use is
    /// ESLURM_INVALID_PARTITION_NAME, as Slurm answers it.
    pub(super) fn create_partition(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::CreatePartitionRequest,
        now: i64,
    ) -> Reply {
        if !self.is_operator(caller) {
            return Reply::error(ErrorCode::AccessDenied, "");
        }
        if !valid_name(&req.name) {
            return Reply::error(ErrorCode::InvalidPartitionName, "");
        }
        if self.part_index.contains_key(&req.name) {
            tracing::debug!(partition = %req.name, "duplicate partition name for create");
            return Reply::error(ErrorCode::InvalidPartitionName, "");
        }
        if self.part_conf.template.is_none() {
            return Reply::error(
                ErrorCode::Internal,
                "no partition defaults to create a partition from",
            );
        }
        let update = match self.checked_attributes(&req.attributes) {
            Ok(u) => u,
            Err(reply) => return reply,
        };
        let event = Event::PartitionCreated {
            partition: req.name.clone(),
            attributes: owned_pairs(&update),
            uid: caller.uid,
            time: now,
        };
        self.emit_or_fail(out, event, "the partition was not created")
    }

    /// `scontrol delete PartitionName=NAME`.
    pub(super) fn delete_partition(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::DeletePartitionRequest,
        now: i64,
    ) -> Reply {
        if !self.is_operator(caller) {
            return Reply::error(ErrorCode::AccessDenied, "");
        }
        if !self.part_index.contains_key(&req.name) {
            return Reply::error(ErrorCode::InvalidPartitionName, "");
        }
        if let Some(job) = self
            .jobs()
            .find(|j| j.in_partition(&req.name) && !j.state().is_finished())
        {
            tracing::debug!(partition = %req.name, job_id = job.id.get(), "partition in use");
            return Reply::error(ErrorCode::PartitionInUse, "");
        }
        let event = Event::PartitionDeleted {
            partition: req.name.clone(),
            uid: caller.uid,
            time: now,
        };
        self.emit_or_fail(out, event, "the partition was not deleted")
    }

    /// Attributes of an update or a creation, checked: the keys and values
    /// of a PartitionName line, and `Nodes=` naming only known nodes.
    fn checked_attributes(&self, attributes: &[v1::ConfigEntry]) -> Result<PartitionUpdate, Reply> {
        let update = PartitionUpdate::parse(
            attributes
                .iter()
                .map(|e| (e.key.as_str(), e.value.as_str())),
        )
        .map_err(|e| Reply::error(ErrorCode::NotSupported, e.to_string()))?;
        if let Some(expr) = update.nodes() {
            if let Err(bad) = self.partition_members(expr) {
                return Err(Reply::error(
                    ErrorCode::InvalidNodeName,
                    format!("invalid node name specified: {bad}"),
                ));
            }
        }
        Ok(update)
    }

    fn emit_or_fail(&mut self, out: &mut Outcome, event: Event, failed: &str) -> Reply {
        if self.emit(out, event) {
            Reply::Ok
        } else {
            Reply::error(ErrorCode::Unspecified, failed)
        }
    }

    /// Indices of the nodes `Nodes=` names (host lists, NodeSet names and
    /// ALL, resolved in that order of precedence as slurm.conf resolves
    /// them), in node order; the first name that is none of them on error.
    fn partition_members(&self, expr: &str) -> Result<Vec<usize>, String> {
        if expr.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut wanted = vec![false; self.nodes.len()];
        for word in slurm_common::hostlist::expand(expr).map_err(|_| expr.to_string())? {
            if word.eq_ignore_ascii_case("ALL") {
                wanted.fill(true);
            } else if let Some(set) = self.part_conf.node_sets.iter().find(|s| s.name == word) {
                for member in &set.nodes {
                    if let Some(&i) = self.node_index.get(member) {
                        wanted[i] = true;
                    }
                }
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
        let Some(update) = parse_journaled(name, attributes) else {
            return;
        };
        if update.default() == Some(true) {
            self.take_default_from_others(idx);
        }
        let p = &mut self.partitions[idx];
        p.update = Some(match &p.update {
            Some(u) => u.merged(&update),
            None => update,
        });
        self.rebuild_partitions();
    }

    /// Applies a journaled creation. The name is free when it was made;
    /// if slurm.conf has gained a line of that name since (a replay or a
    /// snapshot load), the created partition stands in its place.
    pub(super) fn apply_partition_create(&mut self, name: &str, attributes: &[(String, String)]) {
        let Some(update) = parse_journaled(name, attributes) else {
            return;
        };
        let Some(base) = self.part_conf.created_base(name) else {
            tracing::warn!(partition = %name, "no partition defaults: creation skipped");
            return;
        };
        if let Some(&old) = self.part_index.get(name) {
            tracing::warn!(partition = %name, "created partition stands in for slurm.conf's line of the same name");
            self.partitions.remove(old);
        }
        let default = update.default() == Some(true);
        let mut rec = PartRec::from_conf(&base, Vec::new());
        rec.update = Some(update);
        rec.created = true;
        self.partitions.push(rec);
        self.relink_partitions();
        if default {
            self.take_default_from_others(self.partitions.len() - 1);
        }
        self.rebuild_partitions();
    }

    /// Applies a journaled deletion (of a partition slurm.conf may no
    /// longer have: then nothing happens).
    pub(super) fn apply_partition_delete(&mut self, name: &str) {
        let Some(&idx) = self.part_index.get(name) else {
            tracing::warn!(partition = %name, "deletion of an unknown partition: skipped");
            return;
        };
        self.partitions.remove(idx);
        self.relink_partitions();
        self.rebuild_partitions();
    }

    /// Puts the table back as slurm.conf has it: its lines in its order
    /// (a deleted one comes back without updates), then the created
    /// partitions if `keep_created`, which keep standing in for a line of
    /// their name.
    pub(super) fn reset_partition_table(&mut self, keep_created: bool) {
        let mut current: Vec<Option<PartRec>> = std::mem::take(&mut self.partitions)
            .into_iter()
            .map(Some)
            .collect();
        let mut table = Vec::with_capacity(self.part_conf.lines.len());
        for line in &self.part_conf.lines {
            let found = current
                .iter()
                .position(|p| p.as_ref().is_some_and(|p| p.name() == line.name));
            match found {
                Some(i) if current[i].as_ref().is_some_and(|p| !p.created) => {
                    table.extend(current[i].take());
                }
                Some(_) if keep_created => {}
                _ => table.push(PartRec::from_conf(line, Vec::new())),
            }
        }
        if keep_created {
            table.extend(current.into_iter().flatten().filter(|p| p.created));
        }
        self.partitions = table;
        self.relink_partitions();
        self.rebuild_partitions();
    }

    /// Whether [`Self::reset_partition_table`] would change anything.
    pub(super) fn partition_table_differs(&self, keep_created: bool) -> bool {
        self.partitions.iter().any(|p| p.created && !keep_created)
            || self
                .part_conf
                .lines
                .iter()
                .any(|l| !self.part_index.contains_key(&l.name))
    }

    /// The lines of slurm.conf that are not in the table (deleted, and
    /// not stood in for by a created partition), for the snapshot.
    pub(super) fn deleted_conf_partitions(&self) -> impl Iterator<Item = &str> {
        self.part_conf
            .lines
            .iter()
            .filter(|l| !self.part_index.contains_key(&l.name))
            .map(|l| l.name.as_str())
    }

    /// One default partition: naming a new one takes it from the others.
    fn take_default_from_others(&mut self, idx: usize) {
        let Ok(no) = PartitionUpdate::parse([("Default", "NO")]) else {
            return;
        };
        for (i, p) in self.partitions.iter_mut().enumerate() {
            if i != idx && p.conf.default {
                p.update = Some(match &p.update {
                    Some(u) => u.merged(&no),
                    None => no.clone(),
                });
            }
        }
    }

    /// After partitions came or went: the name index, and each job's
    /// partition found again by name (`None` for a partition gone).
    pub(super) fn relink_partitions(&mut self) {
        self.part_index = self
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name().to_string(), i))
            .collect();
        let ids: Vec<u32> = self.jobs.keys().copied().collect();
        for id in ids {
            let index = self
                .jobs
                .get(&id)
                .map(|j| super::job::first_partition(&j.partition_name, &self.part_index));
            if let (Some(index), Some(job)) = (index, self.jobs.get_mut(&id)) {
                if job.partition != index {
                    Arc::make_mut(job).partition = index;
                }
            }
        }
    }

    /// Keeps of every partition's updates only the keys in `keep`.
    pub(super) fn reset_partition_updates(&mut self, keep: &[String]) {
        let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
        for p in &mut self.partitions {
            p.update = p.update.as_ref().and_then(|u| u.only(&keep));
        }
        self.rebuild_partitions();
    }

    /// What is in force, from the base lines and the updates: each
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
            rec.created = p.created;
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

/// The canonical pairs, owned, as events carry them.
fn owned_pairs(update: &PartitionUpdate) -> Vec<(String, String)> {
    update
        .pairs()
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect()
}

/// Journaled attributes parsed again; `None` (logged) for values this
/// build no longer takes.
fn parse_journaled(name: &str, attributes: &[(String, String)]) -> Option<PartitionUpdate> {
    match PartitionUpdate::parse(attributes.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(u) => Some(u),
        Err(e) => {
            tracing::warn!(partition = %name, error = %e, "partition change skipped");
            None
        }
    }
}
