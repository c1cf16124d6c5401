//! Placement of one job on a set of free resources (select/cons_tres with
//! whole cores, as a Slurm user sees it).
//!
//! The same function answers three questions, depending on the [`Pool`] it
//! is given: can the job start now (free resources), could it start on an
//! empty cluster (every usable node idle: if not, waiting will not help), and
//! could it ever run in its partition (every node idle and up). The
//! scheduler turns the answers into a start or a pending reason.
//!
//! Rules, per node:
//! * a node takes whole tasks: `cpus_per_task` CPUs each, at most
//!   `--ntasks-per-node`; with `--overcommit` it gives `cpus_per_task` CPUs
//!   however many tasks it runs; with `--exclusive` it must be idle and gives
//!   all its CPUs;
//! * memory, when it is a consumable, must be free on the node; otherwise it
//!   is only checked against the node's RealMemory;
//! * `--tmp` must fit the node's configured TmpDisk (never consumed: Slurm
//!   does not count temporary disk between jobs either);
//! * every allocated node runs at least one task.
//!
//! Nodes are taken required ones first, then in preference order (weight,
//! then slurm.conf order), until the job has its minimum node count and room
//! for all its tasks. If that would exceed its maximum node count, the
//! roomiest nodes are tried instead. Tasks are then laid out over the chosen
//! nodes in node order: one each, then filling each node in turn (Slurm's
//! default block distribution), which gives `SLURM_TASKS_PER_NODE=2,1` for
//! three tasks on two 2-CPU nodes.

use crate::constraint::{Constraint, CountNeed};
use crate::plan::NodeAlloc;
use crate::request::{JobRequest, MemReq};
use crate::view::{ClusterView, NodeUsers, OverSubscribe, PartitionView};

/// What is still free on one node during a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FreeNode {
    pub cpus: u32,
    pub mem_mb: u64,
    /// Nothing allocated: an exclusive job may take it.
    pub idle: bool,
    /// May take work at all.
    pub usable: bool,
    /// Whose jobs hold it, and whose `--exclusive=user` job (if any).
    pub users: NodeUsers,
    pub user_exclusive: Option<u32>,
}

/// Free resources of every node, indexed like [`ClusterView::nodes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pool {
    pub nodes: Vec<FreeNode>,
}

impl Pool {
    /// What the view says is free right now.
    pub fn current(view: &ClusterView) -> Pool {
        Pool {
            nodes: view
                .nodes
                .iter()
                .map(|n| {
                    if n.exclusive_owner.is_some() {
                        FreeNode {
                            cpus: 0,
                            mem_mb: 0,
                            idle: false,
                            usable: n.usable,
                            users: n.users,
                            user_exclusive: n.user_exclusive,
                        }
                    } else {
                        FreeNode {
                            cpus: n.cpus.saturating_sub(n.alloc_cpus),
                            mem_mb: n.real_memory_mb.saturating_sub(n.alloc_mem_mb),
                            idle: n.is_idle(),
                            usable: n.usable,
                            users: n.users,
                            user_exclusive: n.user_exclusive,
                        }
                    }
                })
                .collect(),
        }
    }

    /// Every node empty; usable as the view says, or all of them when
    /// `assume_up`.
    pub fn empty(view: &ClusterView, assume_up: bool) -> Pool {
        Pool {
            nodes: view
                .nodes
                .iter()
                .map(|n| FreeNode {
                    cpus: n.cpus,
                    mem_mb: n.real_memory_mb,
                    idle: true,
                    usable: assume_up || n.usable,
                    users: NodeUsers::Nobody,
                    user_exclusive: None,
                })
                .collect(),
        }
    }

    /// What of this pool the jobs of `part` may use: with a
    /// `MaxCPUsPerNode=`, each of its nodes gives no more than the limit
    /// less what the partition's jobs hold there (`held`, indexed like the
    /// nodes; a node past its end holds none), and no node with more CPUs
    /// than the limit is whole for an `--exclusive` job.
    pub fn for_partition(
        &self,
        view: &ClusterView,
        part: &PartitionView,
        held: &[u32],
    ) -> std::borrow::Cow<'_, Pool> {
        let Some(limit) = part.max_cpus_per_node else {
            return std::borrow::Cow::Borrowed(self);
        };
        let mut capped = self.clone();
        for &i in &part.nodes {
            let (Some(f), Some(n)) = (capped.nodes.get_mut(i), view.nodes.get(i)) else {
                continue;
            };
            let held = held.get(i).copied().unwrap_or(0);
            f.cpus = f.cpus.min(limit.saturating_sub(held));
            if n.cpus > limit {
                f.idle = false;
            }
        }
        std::borrow::Cow::Owned(capped)
    }

    /// Gives an allocation back to the pool (a running job that ends). An
    /// exclusive holder gives back the whole node; a node with nothing
    /// left allocated is idle again.
    pub fn release(&mut self, view: &ClusterView, allocs: &[NodeAlloc], exclusive: bool) {
        for a in allocs {
            let (Some(f), Some(n)) = (
                self.nodes.get_mut(a.node_index),
                view.nodes.get(a.node_index),
            ) else {
                continue;
            };
            if exclusive {
                f.cpus = n.cpus;
                f.mem_mb = n.real_memory_mb;
            } else {
                f.cpus = f.cpus.saturating_add(a.cpus).min(n.cpus);
                f.mem_mb = f.mem_mb.saturating_add(a.mem_mb).min(n.real_memory_mb);
            }
            f.idle = f.cpus == n.cpus && f.mem_mb == n.real_memory_mb;
            if f.idle {
                f.users = NodeUsers::Nobody;
                f.user_exclusive = None;
            }
        }
    }

    /// Removes an allocation of `shape` from the pool.
    pub fn take(&mut self, allocs: &[NodeAlloc], shape: &Shape) {
        let exclusive = shape.exclusive;
        for a in allocs {
            if let Some(f) = self.nodes.get_mut(a.node_index) {
                f.idle = false;
                f.users = f.users.with(shape.uid);
                if shape.exclusive_user {
                    f.user_exclusive = Some(shape.uid);
                }
                if exclusive {
                    f.cpus = 0;
                    f.mem_mb = 0;
                } else {
                    f.cpus = f.cpus.saturating_sub(a.cpus);
                    f.mem_mb = f.mem_mb.saturating_sub(a.mem_mb);
                }
            }
        }
    }
}

/// How much memory each node must give the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemNeed {
    /// Nothing to check (no request and memory not consumable).
    Nothing,
    /// All of the node's memory (`--mem=0`, or no request and no default
    /// while memory is consumable).
    WholeNode,
    PerNode(u64),
    PerCpu(u64),
}

/// A job's demand, normalized once per pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    pub cpus_per_task: u32,
    pub ntasks: u32,
    pub min_nodes: u32,
    pub max_nodes: u32,
    pub tasks_per_node: Option<u32>,
    pub exclusive: bool,
    pub overcommit: bool,
    pub mem: MemNeed,
    pub track_memory: bool,
    /// `--mincpus`: each node gives the job at least this many CPUs.
    pub min_cpus: u32,
    /// The job's user, and whether its nodes may hold no other user's
    /// jobs (`--exclusive=user`, `ExclusiveUser=YES`).
    pub uid: u32,
    pub exclusive_user: bool,
}

impl Shape {
    pub fn new(view: &ClusterView, job: &JobRequest, part: &PartitionView) -> Shape {
        let required = distinct_count(&job.required_nodes);
        let min_nodes = job.min_nodes.max(1).max(part.min_nodes).max(required);
        let ntasks = job.ntasks.max(min_nodes);
        // No more nodes than tasks, unless a node range without a task
        // count gives the job a task on each node it gets (`select`).
        let task_bound = if job.max_nodes.is_some() && !job.ntasks_given && !job.spread {
            u32::MAX
        } else {
            ntasks
        };
        let max_nodes = job
            .max_nodes
            .unwrap_or(u32::MAX)
            .min(part.max_nodes.unwrap_or(u32::MAX))
            .min(task_bound)
            .max(min_nodes);
        let track_memory = view.config.track_memory;
        let requested = job.mem.or(part.def_mem).or(view.config.def_mem);
        let mem = match requested {
            Some(MemReq::PerNode(0) | MemReq::PerCpu(0)) | None if track_memory => {
                MemNeed::WholeNode
            }
            Some(MemReq::PerNode(0) | MemReq::PerCpu(0)) | None => MemNeed::Nothing,
            Some(MemReq::PerNode(m)) => MemNeed::PerNode(m),
            Some(MemReq::PerCpu(m)) => MemNeed::PerCpu(m),
        };
        Shape {
            cpus_per_task: job.cpus_per_task.max(1),
            ntasks,
            min_nodes,
            max_nodes,
            tasks_per_node: job.ntasks_per_node.filter(|&n| n > 0),
            exclusive: job.exclusive || part.oversubscribe == OverSubscribe::Exclusive,
            overcommit: job.overcommit,
            mem,
            track_memory,
            min_cpus: job.min_cpus_per_node,
            uid: job.uid,
            exclusive_user: job.exclusive_user || part.exclusive_user,
        }
    }

    /// How many tasks node `node` can take from `free`, or `None` if it can
    /// take none.
    pub fn capacity(&self, view: &ClusterView, node: usize, free: FreeNode) -> Option<u32> {
        let n = view.nodes.get(node)?;
        if !free.usable || (self.exclusive && !free.idle) {
            return None;
        }
        // Another user's `--exclusive=user` job holds it, or this one is
        // and another user's job does.
        if free.user_exclusive.is_some_and(|u| u != self.uid)
            || (self.exclusive_user && !free.users.only(self.uid))
        {
            return None;
        }
        let cpt = self.cpus_per_task;
        let cpus = if self.exclusive { n.cpus } else { free.cpus };
        // --mincpus: that many free CPUs, whatever the tasks need.
        if cpus < self.min_cpus {
            return None;
        }
        let mut tasks = if self.overcommit {
            if cpus < cpt {
                return None;
            }
            u32::MAX
        } else {
            cpus / cpt
        };
        if let Some(limit) = self.tasks_per_node {
            tasks = tasks.min(limit);
        }
        // Memory: free memory when it is consumable, RealMemory otherwise.
        let mem_avail = if self.track_memory {
            free.mem_mb
        } else {
            n.real_memory_mb
        };
        match self.mem {
            MemNeed::Nothing => {}
            MemNeed::WholeNode => {
                if self.track_memory && free.mem_mb < n.real_memory_mb {
                    return None;
                }
            }
            MemNeed::PerNode(m) => {
                if m > mem_avail {
                    return None;
                }
            }
            MemNeed::PerCpu(m) => {
                let cpus_taken = if self.exclusive || self.overcommit {
                    Some(if self.exclusive { n.cpus } else { cpt })
                } else {
                    None
                };
                match cpus_taken {
                    // A fixed number of CPUs whatever the tasks: all or nothing.
                    Some(c) => {
                        let c = c.max(self.min_cpus);
                        if u64::from(c).saturating_mul(m) > mem_avail {
                            return None;
                        }
                    }
                    None => {
                        if u64::from(self.min_cpus).saturating_mul(m) > mem_avail {
                            return None;
                        }
                        let per_task = u64::from(cpt).saturating_mul(m);
                        let fit = mem_avail / per_task.max(1);
                        tasks = tasks.min(u32::try_from(fit).unwrap_or(u32::MAX));
                    }
                }
            }
        }
        // --ntasks-per-node asks for that many tasks on each node it uses:
        // a node that cannot hold them all (CPUs or memory) is not used,
        // as cons_tres does, unless the job overcommits.
        if let Some(limit) = self.tasks_per_node {
            if !self.overcommit && tasks < limit {
                return None;
            }
        }
        (tasks > 0).then_some(tasks)
    }

    /// What node `node` gives the job for `tasks` tasks.
    fn alloc(&self, view: &ClusterView, node: usize, tasks: u32) -> NodeAlloc {
        let (node_cpus, real) = view
            .nodes
            .get(node)
            .map_or((0, 0), |n| (n.cpus, n.real_memory_mb));
        let cpus = if self.exclusive {
            node_cpus
        } else if self.overcommit {
            self.cpus_per_task.max(self.min_cpus)
        } else {
            tasks.saturating_mul(self.cpus_per_task).max(self.min_cpus)
        };
        let mem_mb = if !self.track_memory {
            0
        } else {
            match self.mem {
                MemNeed::Nothing => 0,
                MemNeed::WholeNode => real,
                MemNeed::PerNode(m) => m,
                MemNeed::PerCpu(m) => m.saturating_mul(u64::from(cpus)),
            }
        };
        NodeAlloc {
            node_index: node,
            cpus,
            mem_mb,
            tasks,
        }
    }
}

fn distinct_count(nodes: &[usize]) -> u32 {
    if nodes.len() < 2 {
        return nodes.len() as u32;
    }
    let mut v = nodes.to_vec();
    v.sort_unstable();
    v.dedup();
    u32::try_from(v.len()).unwrap_or(u32::MAX)
}

/// Whether node `i` is acceptable to the job at all (features, `-x`,
/// `--tmp`, `--mincpus`, `-B`). `constraint` is the job's, or one
/// alternative of its matching OR.
pub(crate) fn node_allowed(
    view: &ClusterView,
    job: &JobRequest,
    constraint: Option<&Constraint>,
    i: usize,
) -> bool {
    !job.excluded_nodes.contains(&i)
        && has_features(view, constraint, i)
        && tmp_disk_fits(view, job, i)
        && min_cpus_fit(view, job, i)
        && layout_fits(view, job, i)
}

/// Whether node `i` has the sockets, cores per socket and threads per core
/// the job's `-B` asks for (a figure the view does not know fits).
pub(crate) fn layout_fits(view: &ClusterView, job: &JobRequest, i: usize) -> bool {
    let Some(n) = view.nodes.get(i) else {
        return false;
    };
    let [s, c, t] = job.layout;
    let ok = |want: u32, have: u32| want == 0 || have == 0 || have >= want;
    ok(s, n.sockets) && ok(c, n.cores_per_socket) && ok(t, n.threads_per_core)
}

/// Whether node `i` has the CPUs the job's `--mincpus` asks for.
pub(crate) fn min_cpus_fit(view: &ClusterView, job: &JobRequest, i: usize) -> bool {
    view.nodes
        .get(i)
        .is_some_and(|n| n.cpus >= job.min_cpus_per_node)
}

/// Whether node `i` is not excluded and has the features the job asks for.
pub(crate) fn features_allowed(view: &ClusterView, job: &JobRequest, i: usize) -> bool {
    let Some(n) = view.nodes.get(i) else {
        return false;
    };
    if job.excluded_nodes.contains(&i) {
        return false;
    }
    job.constraint
        .as_ref()
        .is_none_or(|c: &Constraint| c.matches(&n.features))
}

/// Whether node `i` satisfies `constraint` on its own (no constraint: any
/// node does).
fn has_features(view: &ClusterView, constraint: Option<&Constraint>, i: usize) -> bool {
    view.nodes
        .get(i)
        .is_some_and(|n| constraint.is_none_or(|c| c.matches(&n.features)))
}

/// Whether node `i` has the TmpDisk the job's `--tmp` asks for.
pub(crate) fn tmp_disk_fits(view: &ClusterView, job: &JobRequest, i: usize) -> bool {
    view.nodes
        .get(i)
        .is_some_and(|n| n.tmp_disk_mb >= job.tmp_disk_mb)
}

/// Places `job` on `pool`, choosing among `order` (the partition's nodes in
/// preference order) minus nodes marked in `blocked`. Returns the allocation
/// in node order, or `None` when it does not fit.
///
/// A matching OR (`-C "[a|b]"`) tries its alternatives in order and takes
/// the first that fits, so that every node satisfies the same one. With
/// `--prefer`, the preferred features are tried first (along with the
/// constraint), then the constraint alone. With `--batch`, the first node
/// of the allocation (the batch host) is one with those features. The
/// batch host being always the lowest-numbered node here, a job of several
/// nodes that cannot be placed so is placed as without `--batch`.
pub(crate) fn select(
    view: &ClusterView,
    job: &JobRequest,
    shape: &Shape,
    pool: &Pool,
    order: &[usize],
    blocked: Option<&[bool]>,
) -> Option<Vec<NodeAlloc>> {
    // `-N 0`: no node at all, which no allocation is.
    if job.max_nodes == Some(0) {
        return None;
    }
    let hosts = |constraint: Option<&Constraint>| {
        let attempt = |batch_host| Attempt {
            constraint,
            batch_host,
        };
        let led = job.batch_features.as_ref().and_then(|features| {
            order
                .iter()
                .copied()
                .filter(|&b| {
                    view.nodes
                        .get(b)
                        .is_some_and(|n| features.matches(&n.features))
                })
                .find_map(|b| select_with(view, job, attempt(Some(b)), shape, pool, order, blocked))
        });
        let unled = job.batch_features.is_none() || shape.min_nodes > 1;
        led.or_else(|| {
            unled
                .then(|| select_with(view, job, attempt(None), shape, pool, order, blocked))
                .flatten()
        })
    };
    // Only a matching OR needs copies of the expression, one per choice.
    let with = |constraint: Option<&Constraint>| match constraint {
        Some(c) if c.has_matching_or() => c.alternatives().iter().find_map(|alt| hosts(Some(alt))),
        other => hosts(other),
    };
    let preferred = job.prefer.as_ref().and_then(|p| match &job.constraint {
        None => Some(p.clone()),
        // One matching OR at most: two would have to choose together.
        Some(c) if c.has_matching_or() && p.has_matching_or() => None,
        Some(c) => Some(Constraint::And(vec![c.clone(), p.clone()])),
    });
    preferred
        .and_then(|p| with(Some(&p)))
        .or_else(|| with(job.constraint.as_ref()))
}

/// One way [`select`] tries: with one alternative of the job's constraint,
/// and with the node to be its batch host (the lowest-numbered one).
#[derive(Debug, Clone, Copy)]
struct Attempt<'a> {
    constraint: Option<&'a Constraint>,
    batch_host: Option<usize>,
}

/// [`select`] for one [`Attempt`]. Nodes the constraint counts (`a*2`,
/// `[a*1&b*2]`) are taken first, then the rest as usual; the counts may
/// take the job past its task count in nodes when it asked for no node
/// count of its own.
fn select_with(
    view: &ClusterView,
    job: &JobRequest,
    attempt: Attempt<'_>,
    shape: &Shape,
    pool: &Pool,
    order: &[usize],
    blocked: Option<&[bool]>,
) -> Option<Vec<NodeAlloc>> {
    let is_blocked = |i: usize| blocked.is_some_and(|b| b.get(i).copied().unwrap_or(false));
    let free = |i: usize| pool.nodes.get(i).copied();
    let capacity = |i: usize| free(i).and_then(|f| shape.capacity(view, i, f));

    let constraint = attempt.constraint;
    // Required nodes first (and the batch host, below all the others):
    // each must be in the partition, allowed and able to take at least one
    // task.
    let mut required: Vec<usize> = job.required_nodes.clone();
    required.extend(attempt.batch_host);
    required.sort_unstable();
    required.dedup();
    let above_batch_host = |i: usize| attempt.batch_host.is_none_or(|b| i >= b);
    if !required.iter().all(|&r| above_batch_host(r)) {
        return None;
    }
    let mut chosen: Vec<(usize, u32)> = Vec::with_capacity(shape.min_nodes as usize);
    let allowed = |i: usize| node_allowed(view, job, constraint, i) && above_batch_host(i);
    for &r in &required {
        if !order.contains(&r) || !allowed(r) || is_blocked(r) {
            return None;
        }
        chosen.push((r, capacity(r)?));
    }

    let mut candidates: Vec<(usize, u32)> = order
        .iter()
        .copied()
        .filter(|&i| !is_blocked(i) && required.binary_search(&i).is_err())
        .filter(|&i| allowed(i))
        .filter_map(|i| capacity(i).map(|c| (i, c)))
        .collect();

    let needs = constraint.map(Constraint::node_counts).unwrap_or_default();
    let counted = take_counted_nodes(view, &needs, &mut chosen, &mut candidates)?;
    let min_nodes = (shape.min_nodes as usize).max(counted);
    let max_nodes = if job.max_nodes.is_some() {
        shape.max_nodes as usize
    } else {
        (shape.max_nodes as usize).max(counted)
    };
    if chosen.len() > max_nodes {
        return None;
    }

    let ntasks = u64::from(shape.ntasks);
    let satisfied = |set: &[(usize, u32)]| {
        set.len() >= min_nodes && set.iter().map(|&(_, c)| u64::from(c)).sum::<u64>() >= ntasks
    };
    let fill = |mut set: Vec<(usize, u32)>, from: &[(usize, u32)]| {
        for &cand in from {
            if satisfied(&set) || set.len() >= max_nodes {
                break;
            }
            set.push(cand);
        }
        set
    };

    let mut set = fill(chosen.clone(), &candidates);
    if !satisfied(&set) && set.len() >= max_nodes {
        // The preferred nodes are too small to fit under the node limit: try
        // the roomiest ones (stable, so preference still breaks ties).
        let mut roomy = candidates.clone();
        roomy.sort_by_key(|&(_, c)| std::cmp::Reverse(c));
        set = fill(chosen, &roomy);
    }
    if !satisfied(&set) {
        return None;
    }
    // A node range (`-N 1-3`) takes as many of the nodes free now as it
    // may, as Slurm does: up to its maximum and, when the user gave a task
    // count or `--spread-job`, one task each at least.
    if job.max_nodes.is_some() {
        let tasks = usize::try_from(shape.ntasks).unwrap_or(usize::MAX);
        let most = if job.spread || job.ntasks_given {
            max_nodes.min(tasks)
        } else {
            max_nodes
        };
        for &cand in &candidates {
            if set.len() >= most {
                break;
            }
            if !set.iter().any(|&(i, _)| i == cand.0) {
                set.push(cand);
            }
        }
    }

    // Lay tasks out in node order: one each, then fill nodes in turn; with
    // `--ntasks-per-node`, that many on every node (no more than the task
    // count), even past the task count in all (Slurm 22.05 gives
    // `-n3 --ntasks-per-node=2` two nodes of 2, `-n1` one CPU).
    set.sort_unstable_by_key(|&(i, _)| i);
    if let Some(per_node) = shape
        .tasks_per_node
        .filter(|_| !shape.overcommit)
        .map(|p| p.min(shape.ntasks))
    {
        let allocs: Vec<NodeAlloc> = set
            .iter()
            .map(|&(i, cap)| shape.alloc(view, i, per_node.min(cap)))
            .collect();
        let placed: u64 = allocs.iter().map(|a| u64::from(a.tasks)).sum();
        return (placed >= u64::from(shape.ntasks)).then_some(allocs);
    }
    let mut remaining = shape.ntasks.saturating_sub(u32::try_from(set.len()).ok()?);
    let mut allocs = Vec::with_capacity(set.len());
    for &(i, cap) in &set {
        let extra = remaining.min(cap.saturating_sub(1));
        remaining -= extra;
        allocs.push(shape.alloc(view, i, 1 + extra));
    }
    (remaining == 0).then_some(allocs)
}

/// Moves into `chosen` the candidates the constraint's node counts need
/// beyond the nodes already chosen, first in preference order. Returns how
/// many nodes the counts add up to, or `None` when the candidates cannot
/// meet them.
fn take_counted_nodes(
    view: &ClusterView,
    needs: &[CountNeed<'_>],
    chosen: &mut Vec<(usize, u32)>,
    candidates: &mut Vec<(usize, u32)>,
) -> Option<usize> {
    let has =
        |i: usize, what: &Constraint| view.nodes.get(i).is_some_and(|n| what.matches(&n.features));
    // A node counted for one part of `[a*1&b*2]` counts for no other.
    let mut claimed = vec![false; chosen.len()];
    let (mut loose, mut distinct) = (0usize, 0usize);
    for need in needs {
        let want = need.count as usize;
        let mut have = 0;
        for (k, &(i, _)) in chosen.iter().enumerate() {
            if have == want {
                break;
            }
            if has(i, need.what) && !(need.distinct && claimed[k]) {
                have += 1;
                claimed[k] |= need.distinct;
            }
        }
        while have < want {
            let pos = candidates.iter().position(|&(i, _)| has(i, need.what))?;
            chosen.push(candidates.remove(pos));
            claimed.push(need.distinct);
            have += 1;
        }
        if need.distinct {
            distinct = distinct.saturating_add(want);
        } else {
            loose = loose.max(want);
        }
    }
    Some(loose.max(distinct))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{cluster, job};

    fn place(view: &ClusterView, j: &JobRequest) -> Option<Vec<NodeAlloc>> {
        let part = &view.partitions[j.partition];
        let shape = Shape::new(view, j, part);
        let order = view.preference_order(part);
        select(view, j, &shape, &Pool::current(view), &order, None)
    }

    fn layout(allocs: &[NodeAlloc]) -> Vec<(usize, u32, u32)> {
        allocs
            .iter()
            .map(|a| (a.node_index, a.cpus, a.tasks))
            .collect()
    }

    #[test]
    fn one_task_takes_one_cpu_on_first_node() {
        let v = cluster(4, 2, 4000);
        let a = place(&v, &job(1)).unwrap();
        assert_eq!(layout(&a), vec![(0, 1, 1)]);
        assert_eq!(a[0].mem_mb, 0, "memory is not consumable in this view");
    }

    #[test]
    fn block_distribution_matches_slurm_env() {
        let v = cluster(4, 2, 4000);
        // env_nodes2_ntasks4: --nodes=2 --ntasks=4 -> 2(x2) CPUs and tasks
        let mut j = job(1);
        j.min_nodes = 2;
        j.max_nodes = Some(2);
        j.ntasks = 4;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 2, 2), (1, 2, 2)]);
        // --nodes=2 --ntasks=3 -> 2,1
        j.ntasks = 3;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 2, 2), (1, 1, 1)]);
        // --nodes=2 --ntasks=2 -> 1(x2)
        j.ntasks = 2;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 1, 1), (1, 1, 1)]);
        // -n 4 alone spreads over as many nodes as needed
        let mut j = job(2);
        j.ntasks = 4;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 2, 2), (1, 2, 2)]);
    }

    /// Slurm 22.05: `--mincpus=2` gives the job two CPUs on its node
    /// (NumCPUs=2, one task); a node with one CPU free cannot take it.
    #[test]
    fn mincpus_sizes_the_share_of_each_node() {
        let mut v = cluster(2, 2, 4000);
        let mut j = job(1);
        j.min_cpus_per_node = 2;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 2, 1)]);
        j.min_nodes = 2;
        j.ntasks = 3;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 2, 2), (1, 2, 1)]);
        v.nodes[0].alloc_cpus = 1;
        let mut j = job(2);
        j.min_cpus_per_node = 2;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(1, 2, 1)]);
    }

    #[test]
    fn cpus_per_task_and_tasks_per_node() {
        let v = cluster(4, 4, 4000);
        let mut j = job(1);
        j.ntasks = 3;
        j.cpus_per_task = 2;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 4, 2), (1, 2, 1)]);
        let mut j = job(2);
        j.ntasks = 4;
        j.ntasks_per_node = Some(1);
        assert_eq!(
            layout(&place(&v, &j).unwrap()),
            vec![(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1)]
        );
        j.ntasks = 5;
        assert!(
            place(&v, &j).is_none(),
            "5 tasks, at most 1 per node, 4 nodes"
        );
    }

    #[test]
    fn tasks_per_node_needs_room_for_all_of_them_on_each_node() {
        // Three tasks per node on 2-CPU nodes: no node can hold them, and
        // spreading them 2+1 over two nodes is not what was asked.
        let v = cluster(4, 2, 4000);
        let mut j = job(1);
        j.ntasks = 3;
        j.ntasks_per_node = Some(3);
        assert!(place(&v, &j).is_none());
        // Overcommitted, the tasks share the node's CPUs.
        j.overcommit = true;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 1, 3)]);
        // A node with one CPU left cannot take two tasks; the next can.
        let mut v = cluster(2, 2, 4000);
        v.nodes[0].alloc_cpus = 1;
        let mut j = job(2);
        j.ntasks = 2;
        j.ntasks_per_node = Some(2);
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(1, 2, 2)]);
    }

    #[test]
    fn exclusive_takes_whole_idle_nodes() {
        let mut v = cluster(2, 4, 4000);
        let mut j = job(1);
        j.exclusive = true;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 4, 1)]);
        v.nodes[0].alloc_cpus = 1;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(1, 4, 1)]);
        v.nodes[1].alloc_mem_mb = 1;
        assert!(place(&v, &j).is_none());
    }

    #[test]
    fn exclusively_owned_node_is_taken() {
        let mut v = cluster(1, 4, 4000);
        v.nodes[0].exclusive_owner = Some(slurm_common::ids::JobId(7));
        assert!(place(&v, &job(1)).is_none());
    }

    #[test]
    fn overcommit_gives_one_task_group_per_node() {
        let v = cluster(2, 2, 4000);
        let mut j = job(1);
        j.ntasks = 8;
        j.overcommit = true;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 1, 8)]);
        j.min_nodes = 2;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 1, 7), (1, 1, 1)]);
    }

    #[test]
    fn memory_consumable() {
        let mut v = cluster(2, 4, 4000);
        v.config.track_memory = true;
        let mut j = job(1);
        j.mem = Some(MemReq::PerNode(3000));
        assert_eq!(place(&v, &j).unwrap()[0].mem_mb, 3000);
        v.nodes[0].alloc_mem_mb = 1001;
        assert_eq!(place(&v, &j).unwrap()[0].node_index, 1);
        // Per CPU: 4 tasks x 1000 MB need a node with 4000 MB free.
        let mut j = job(2);
        j.ntasks = 4;
        j.mem = Some(MemReq::PerCpu(1000));
        let a = place(&v, &j).unwrap();
        assert_eq!(layout(&a), vec![(0, 2, 2), (1, 2, 2)]);
        assert_eq!(a[0].mem_mb, 2000);
        // No request and no default: the whole node, as in Slurm.
        let j = job(3);
        let a = place(&v, &j).unwrap();
        assert_eq!((a[0].node_index, a[0].mem_mb), (1, 4000));
    }

    #[test]
    fn memory_not_consumable_is_still_bounded_by_real_memory() {
        let v = cluster(2, 4, 4000);
        let mut j = job(1);
        j.mem = Some(MemReq::PerNode(4001));
        assert!(place(&v, &j).is_none());
        j.mem = Some(MemReq::PerNode(4000));
        assert_eq!(place(&v, &j).unwrap()[0].mem_mb, 0);
    }

    #[test]
    fn weight_then_order() {
        let mut v = cluster(3, 2, 4000);
        v.nodes[0].weight = 10;
        assert_eq!(place(&v, &job(1)).unwrap()[0].node_index, 1);
    }

    #[test]
    fn required_and_excluded_nodes() {
        let v = cluster(4, 2, 4000);
        let mut j = job(1);
        j.required_nodes = vec![2];
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(2, 1, 1)]);
        let mut j = job(2);
        j.excluded_nodes = vec![0, 1];
        assert_eq!(place(&v, &j).unwrap()[0].node_index, 2);
        let mut j = job(3);
        j.required_nodes = vec![3, 0];
        j.min_nodes = 2;
        j.ntasks = 2;
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(0, 1, 1), (3, 1, 1)]);
    }

    #[test]
    fn features() {
        let mut v = cluster(3, 2, 4000);
        v.nodes[2].features = vec!["gpu".into()];
        let mut j = job(1);
        j.constraint = Some(Constraint::parse("gpu").unwrap());
        assert_eq!(place(&v, &j).unwrap()[0].node_index, 2);
        j.constraint = Some(Constraint::parse("gpu&big").unwrap());
        assert!(place(&v, &j).is_none());
    }

    /// Nodes 0 and 2 have `a`, 1 and 3 have `b`.
    fn striped() -> ClusterView {
        let mut v = cluster(4, 2, 4000);
        for (i, n) in v.nodes.iter_mut().enumerate() {
            n.features = vec![if i % 2 == 0 { "a" } else { "b" }.into()];
        }
        v
    }

    fn nodes_of(a: Option<Vec<NodeAlloc>>) -> Option<Vec<usize>> {
        a.map(|a| a.iter().map(|n| n.node_index).collect())
    }

    #[test]
    fn matching_or_puts_every_node_on_one_alternative() {
        let mut v = striped();
        let mut j = job(1);
        j.constraint = Some(Constraint::parse("[a|b]").unwrap());
        j.min_nodes = 2;
        j.ntasks = 2;
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![0, 2]));
        // `a` has one node free: both go to `b`, not one of each.
        v.nodes[0].alloc_cpus = 2;
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![1, 3]));
        // Three nodes of one kind do not exist.
        j.min_nodes = 3;
        j.ntasks = 3;
        assert_eq!(nodes_of(place(&striped(), &j)), None);
        // A plain OR mixes them.
        j.constraint = Some(Constraint::parse("a|b").unwrap());
        assert_eq!(nodes_of(place(&striped(), &j)), Some(vec![0, 1, 2]));
    }

    #[test]
    fn node_counts_take_nodes_with_the_feature() {
        let v = striped();
        let mut j = job(1);
        // One task, but two nodes with `a`.
        j.constraint = Some(Constraint::parse("a*2").unwrap());
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![0, 2]));
        assert_eq!(place(&v, &j).map(|a| a.len()), Some(2));
        j.constraint = Some(Constraint::parse("a*3").unwrap());
        assert_eq!(nodes_of(place(&v, &j)), None);
        // A node count of its own caps the counted nodes.
        j.constraint = Some(Constraint::parse("a*2").unwrap());
        j.max_nodes = Some(1);
        assert_eq!(nodes_of(place(&v, &j)), None);
        // Counted nodes need not be the others' kind; the rest must be.
        let mut j = job(2);
        j.constraint = Some(Constraint::parse("b*1&a").unwrap());
        assert_eq!(
            nodes_of(place(&v, &j)),
            None,
            "b*1 needs a node with b, a every node"
        );
        j.constraint = Some(Constraint::parse("b*1|a").unwrap());
        j.min_nodes = 3;
        j.ntasks = 3;
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![0, 1, 2]));
    }

    #[test]
    fn preferred_features_first_then_without() {
        let mut v = striped();
        let mut j = job(1);
        j.prefer = Some(Constraint::parse("b").unwrap());
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![1]));
        v.nodes[1].alloc_cpus = 2;
        v.nodes[3].alloc_cpus = 2;
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![0]));
        // Within the constraint only.
        j.constraint = Some(Constraint::parse("b").unwrap());
        j.prefer = Some(Constraint::parse("a").unwrap());
        assert_eq!(nodes_of(place(&striped(), &j)), Some(vec![1]));
    }

    /// `--batch=b`: the first node (the batch host) has `b`; the others
    /// need not.
    #[test]
    fn the_batch_host_has_the_batch_features() {
        let v = striped();
        let mut j = job(1);
        j.batch_features = Some(Constraint::parse("b").unwrap());
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![1]));
        // One node: it waits for one with `b`.
        let mut b_busy = striped();
        b_busy.nodes[1].alloc_cpus = 2;
        b_busy.nodes[3].alloc_cpus = 2;
        assert_eq!(nodes_of(place(&b_busy, &j)), None);
        j.min_nodes = 2;
        j.ntasks = 2;
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![1, 2]));
        // The batch host comes first: node 3 with `b` cannot lead node 0,
        // so the job goes as it would without `--batch`.
        let mut busy = striped();
        busy.nodes[1].alloc_cpus = 2;
        busy.nodes[2].alloc_cpus = 2;
        assert_eq!(nodes_of(place(&busy, &j)), Some(vec![0, 3]));
    }

    #[test]
    fn bracketed_counts_use_distinct_nodes() {
        let mut v = striped();
        v.nodes[0].features = vec!["a".into(), "b".into()];
        let mut j = job(1);
        j.constraint = Some(Constraint::parse("[a*1&b*1]").unwrap());
        // Node 0 has both but counts once.
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![0, 1]));
        j.constraint = Some(Constraint::parse("[a*2&b*2]").unwrap());
        assert_eq!(nodes_of(place(&v, &j)), Some(vec![0, 1, 2, 3]));
        j.constraint = Some(Constraint::parse("[a*3&b*2]").unwrap());
        assert_eq!(nodes_of(place(&v, &j)), None);
    }

    #[test]
    fn roomiest_nodes_when_preferred_ones_exceed_node_limit() {
        let mut v = cluster(3, 2, 4000);
        v.nodes[0].alloc_cpus = 1;
        let mut j = job(1);
        j.ntasks = 4;
        j.max_nodes = Some(2);
        assert_eq!(layout(&place(&v, &j).unwrap()), vec![(1, 2, 2), (2, 2, 2)]);
    }
}
