//! Admission: is a job worth queueing at all?
//!
//! Slurm 22.05 (with the default `EnforcePartLimits=NO`) refuses at
//! submission only a job that could never run in its partition *whatever the
//! partition's limits say*: more memory or CPUs per node than any node has
//! (`sbatch --mem=999999999` fails with "Requested node configuration is not
//! available"), a feature no node offers, a drained or inactive partition.
//! A job that merely breaks a partition limit is accepted and waits with a
//! reason instead: `sbatch -N 10` on a 4-node partition prints `Submitted
//! batch job 11` and squeue shows `(PartitionConfig)`; a `--time` above
//! `MaxTime` waits with `PartitionTimeLimit`. With
//! [`crate::SchedConfig::enforce_part_limits`] those limits are checked here
//! too, as `EnforcePartLimits=ALL` does.
//!
//! More CPUs than the partition has in all (`-n 5` where two nodes have 2
//! CPUs each, `-c 3` on one such node; MaxCPUsPerNode counts as the
//! nodes' size) or more nodes than it has are such partition limits too,
//! checked before anything asked of each node: Slurm 22.05 accepts the job
//! and it waits with `PartitionConfig` (`--mincpus=3 -N 3` and `--tmp` too
//! large with `-n 5` included), or, with `EnforcePartLimits`, refuses it
//! with "More processors requested than permitted". Within those totals,
//! what no single node can give is refused: more CPUs per node than any
//! has (`-c 3`, `--ntasks-per-node=3`, `--mincpus=3` on 2-CPU nodes) with
//! the line "CPU count per node can not be satisfied", `--ntasks-per-node`
//! tasks a node cannot hold even for one task (`-n 1 --ntasks-per-node=3`)
//! and tasks no set of nodes can hold (`-n 3 -N 1`) without it. The CPUs
//! come before the memory: on two nodes of 2 CPUs and 1000 MB, `-c 3
//! --mem=5000` is refused for its CPUs, `-n 3 -N 1 --mem=5000` for its
//! memory.
//!
//! Node states never matter here: a job asking for nodes that are down today
//! is accepted and waits. `--tmp` larger than every node's TmpDisk is
//! refused like too much memory ("Requested node configuration is not
//! available", without the memory line).

use thiserror::Error;

use crate::fit::{self, MemNeed, Pool, Shape};
use crate::plan::effective_time_limit;
use crate::request::JobRequest;
use crate::view::{ClusterView, PartitionState};

/// What about the request no node configuration can satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unsatisfiable {
    /// More memory per node (`--mem`) than any eligible node has.
    Memory,
    /// More memory per CPU (`--mem-per-cpu`) times the CPUs of a node's
    /// share than any eligible node has; Slurm adds no line of its own.
    MemoryPerCpu,
    /// More temporary disk (`--tmp`) than any eligible node's TmpDisk.
    TmpDisk,
    /// More CPUs per node (`--mincpus`) than any eligible node has.
    MinCpus,
    /// More sockets, cores per socket or threads per core (`-B`) than
    /// any eligible node has.
    Layout,
    /// The whole request does not fit the partition even when it is empty.
    TotalSize,
    /// A required node is not in the partition, or is also excluded.
    RequiredNode,
    /// A node index the view does not have.
    UnknownNode,
}

/// Why a job is refused at submission.
///
/// `Display` is our own message with the context; [`Self::slurm_error`] is
/// the text Slurm's commands print after `Batch job submission failed: `.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SubmitRejection {
    #[error("partition index {index} does not exist")]
    InvalidPartition { index: usize },
    #[error("partition {partition} does not accept jobs (state {state:?})")]
    PartitionNotAvailable {
        partition: String,
        state: PartitionState,
    },
    #[error("node count {min_nodes}-{max_nodes} is invalid for partition {partition}")]
    InvalidNodeCount {
        partition: String,
        min_nodes: u32,
        max_nodes: String,
    },
    #[error("time limit exceeds the limit of partition {partition}")]
    InvalidTimeLimit { partition: String },
    #[error("no node of partition {partition} has the features {constraint}")]
    InvalidFeature {
        partition: String,
        constraint: String,
    },
    #[error("no node of partition {partition} has the preferred features {prefer}")]
    InvalidPrefer { partition: String, prefer: String },
    #[error("partition {partition} has not as many CPUs as requested")]
    TooManyCpus { partition: String },
    #[error("no node configuration of partition {partition} satisfies the request ({cause:?})")]
    NodeConfigUnavailable {
        partition: String,
        cause: Unsatisfiable,
    },
}

impl SubmitRejection {
    /// Slurm's error text for this rejection (its `slurm_strerror`).
    pub fn slurm_error(&self) -> &'static str {
        match self {
            SubmitRejection::InvalidPartition { .. } => "Invalid partition name specified",
            SubmitRejection::PartitionNotAvailable { .. } => {
                "Required partition not available (inactive or drain)"
            }
            SubmitRejection::InvalidNodeCount { .. } => "Node count specification invalid",
            SubmitRejection::InvalidTimeLimit { .. } => {
                "Requested time limit is invalid (missing or exceeds some limit)"
            }
            SubmitRejection::InvalidFeature { .. } => "Invalid feature specification",
            SubmitRejection::InvalidPrefer { .. } => "Invalid preferred feature specification",
            SubmitRejection::TooManyCpus { .. } => "More processors requested than permitted",
            SubmitRejection::NodeConfigUnavailable { .. } => {
                "Requested node configuration is not available"
            }
        }
    }

    /// The extra line Slurm sends back for the user before the error, if any
    /// (`sbatch: error: Memory specification can not be satisfied`).
    pub fn user_message(&self) -> Option<&'static str> {
        match self {
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::Memory,
                ..
            } => Some("Memory specification can not be satisfied"),
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::TmpDisk,
                ..
            } => Some("Temporary disk specification can not be satisfied"),
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::MinCpus,
                ..
            } => Some("CPU count per node can not be satisfied"),
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::Layout,
                ..
            } => Some("Socket, core and/or thread specification can not be satisfied"),
            _ => None,
        }
    }
}

/// Decides whether `job` may be queued. See the module docs for what is
/// refused here and what is left to wait with a reason.
pub fn check_submit(view: &ClusterView, job: &JobRequest) -> Result<(), SubmitRejection> {
    let part = view
        .partitions
        .get(job.partition)
        .ok_or(SubmitRejection::InvalidPartition {
            index: job.partition,
        })?;
    let name = || part.name.clone();
    let unsatisfiable = |cause| SubmitRejection::NodeConfigUnavailable {
        partition: name(),
        cause,
    };
    if matches!(part.state, PartitionState::Drain | PartitionState::Inactive) {
        return Err(SubmitRejection::PartitionNotAvailable {
            partition: name(),
            state: part.state,
        });
    }

    let bad_count = || SubmitRejection::InvalidNodeCount {
        partition: name(),
        min_nodes: job.min_nodes,
        max_nodes: job
            .max_nodes
            .map_or_else(|| "unlimited".to_string(), |m| m.to_string()),
    };
    // `-N 0`: no node configuration gives a job no node at all.
    if job.max_nodes == Some(0) {
        return Err(unsatisfiable(Unsatisfiable::TotalSize));
    }
    let mut required = job.required_nodes.clone();
    required.sort_unstable();
    required.dedup();
    if job
        .max_nodes
        .is_some_and(|m| m < job.min_nodes || (m as usize) < required.len())
    {
        return Err(bad_count());
    }
    if job
        .required_nodes
        .iter()
        .chain(&job.excluded_nodes)
        .any(|&i| i >= view.nodes.len())
    {
        return Err(unsatisfiable(Unsatisfiable::UnknownNode));
    }
    // (A node the user both names and excludes is refused before this, as
    // an invalid node name; one excluded here lacks a GRES the job asks.)
    if required
        .iter()
        .any(|i| !part.nodes.contains(i) || job.excluded_nodes.contains(i))
    {
        return Err(unsatisfiable(Unsatisfiable::RequiredNode));
    }

    let shape = Shape::new(view, job, part);
    if view.config.enforce_part_limits {
        if job.time_limit.is_some() && effective_time_limit(job, part) > part.max_time {
            return Err(SubmitRejection::InvalidTimeLimit { partition: name() });
        }
        let below_min = job.max_nodes.is_some_and(|m| m < part.min_nodes);
        let above_max = part.max_nodes.is_some_and(|m| shape.min_nodes > m);
        if below_min || above_max || shape.min_nodes as usize > part.nodes.len() {
            return Err(bad_count());
        }
    }

    let order = view.preference_order(part);
    let with_features: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| fit::features_allowed(view, job, i))
        .collect();
    // As in Slurm 22.05, every feature named must exist, even in an
    // alternative the nodes could do without (`zz|fa`).
    let known = |name: &str| {
        order
            .iter()
            .filter_map(|&i| view.nodes.get(i))
            .any(|n| n.features.iter().any(|f| f == name))
    };
    if let Some(c) = &job.constraint {
        // Nodes `-x` leaves out still count here: with none left, the
        // configuration is not available (below), as Slurm 22.05 says.
        let some_node_has_them = order
            .iter()
            .filter_map(|&i| view.nodes.get(i))
            .any(|n| c.matches(&n.features));
        if !some_node_has_them
            || required.iter().any(|i| !with_features.contains(i))
            || !c.feature_names().into_iter().all(known)
        {
            return Err(SubmitRejection::InvalidFeature {
                partition: name(),
                constraint: c.to_string(),
            });
        }
    }
    // `--prefer`: likewise every feature named must exist; the nodes need
    // not have them.
    if let Some(p) = &job.prefer {
        if !p.feature_names().into_iter().all(known) {
            return Err(SubmitRejection::InvalidPrefer {
                partition: name(),
                prefer: p.to_string(),
            });
        }
    }
    // The partition's limits come next: more nodes or CPUs than it has is
    // accepted and waits with PartitionConfig (refused under
    // EnforcePartLimits), whatever the job asks of each node.
    if shape.min_nodes as usize > order.len() {
        return Ok(());
    }
    let total = partition_cpus(
        order
            .iter()
            .filter_map(|&i| view.nodes.get(i))
            .map(|n| n.cpus),
        part.max_cpus_per_node,
    );
    let per_node = least_cpus_per_node(job, &shape);
    if least_cpus(job, &shape) > total || part.max_cpus_per_node.is_some_and(|m| per_node > m) {
        return if view.config.enforce_part_limits {
            Err(SubmitRejection::TooManyCpus { partition: name() })
        } else {
            Ok(())
        };
    }
    // --tmp: some node (and every required one) must have that much
    // TmpDisk, whatever its state, or the job could never run.
    let eligible: Vec<usize> = with_features
        .iter()
        .copied()
        .filter(|&i| fit::tmp_disk_fits(view, job, i))
        .collect();
    if job.tmp_disk_mb > 0
        && (eligible.is_empty() || required.iter().any(|i| !eligible.contains(i)))
    {
        return Err(unsatisfiable(Unsatisfiable::TmpDisk));
    }
    // The CPUs one node must give (`--mincpus`, `-c`, `--ntasks-per-node`
    // tasks): checked after --tmp as Slurm 22.05 does, and before the
    // memory (`-c 3 --mem=5000` is refused for its CPUs).
    let big_enough = |i: usize| view.nodes.get(i).is_some_and(|n| n.cpus >= per_node);
    if (!eligible.is_empty() && !eligible.iter().any(|&i| big_enough(i)))
        || required
            .iter()
            .any(|&i| eligible.contains(&i) && !big_enough(i))
    {
        return Err(unsatisfiable(Unsatisfiable::MinCpus));
    }
    let eligible: Vec<usize> = eligible.into_iter().filter(|&i| big_enough(i)).collect();
    // `--ntasks-per-node` tasks more than a node's CPUs: refused without
    // a line of its own, even when one task is all the job runs or it
    // overcommits.
    if tasks_per_node_exceed_cpus(view, job, &order) {
        return Err(unsatisfiable(Unsatisfiable::TotalSize));
    }
    // MaxCPUsPerNode limits what a node gives; a whole node for an
    // `--exclusive` job that the limit denies is a node configuration not
    // available (the final placement below), as Slurm 22.05 refuses it.
    let whole = Pool::empty(view, true);
    let empty = whole.for_partition(view, part, &[]);
    let nodes = || eligible.iter().filter_map(|&i| view.nodes.get(i));
    let mem_per_node = |cpus: u32| match shape.mem {
        MemNeed::Nothing | MemNeed::WholeNode => 0,
        MemNeed::PerNode(m) => m,
        MemNeed::PerCpu(m) => m.saturating_mul(u64::from(cpus)),
    };
    let fits_memory = |n: &crate::view::NodeView| {
        let cpus = if shape.exclusive {
            n.cpus
        } else {
            shape.cpus_per_task
        };
        mem_per_node(cpus) <= n.real_memory_mb
    };
    if eligible.is_empty() {
        // `--exclude` took every node: no node to size the memory against,
        // and Slurm says only that the configuration is not available.
        return Err(unsatisfiable(Unsatisfiable::TotalSize));
    }
    if !nodes().any(fits_memory) {
        // Slurm words it as a memory problem when one CPU's worth is more
        // than any node has, and not when only the product is.
        let most = nodes().map(|n| n.real_memory_mb).max().unwrap_or(0);
        return Err(unsatisfiable(match shape.mem {
            MemNeed::PerCpu(m) if m <= most => Unsatisfiable::MemoryPerCpu,
            _ => Unsatisfiable::Memory,
        }));
    }
    // -B: checked after the memory, as Slurm 22.05 does.
    if job.layout != [0; 3] {
        let shaped: Vec<usize> = eligible
            .iter()
            .copied()
            .filter(|&i| fit::layout_fits(view, job, i))
            .collect();
        if shaped.is_empty() || required.iter().any(|i| !shaped.contains(i)) {
            return Err(unsatisfiable(Unsatisfiable::Layout));
        }
    }
    if fit::select(view, job, &shape, &empty, &order, None).is_none() {
        return Err(unsatisfiable(Unsatisfiable::TotalSize));
    }
    Ok(())
}

/// The fewest CPUs the job can run on, as Slurm 22.05 weighs it against
/// the partition's CPUs: its tasks' CPUs (one task's worth on each node
/// when it overcommits), and at least `--mincpus` on each of its nodes.
fn least_cpus(job: &JobRequest, shape: &Shape) -> u64 {
    let tasks = if shape.overcommit {
        shape.min_nodes
    } else {
        shape.ntasks
    };
    let cpus = u64::from(tasks) * u64::from(shape.cpus_per_task);
    cpus.max(u64::from(shape.min_nodes) * u64::from(job.min_cpus_per_node))
}

/// The CPUs each of the job's nodes must have (Slurm's MinCPUsNode).
fn least_cpus_per_node(job: &JobRequest, shape: &Shape) -> u32 {
    min_cpus_per_node(
        job.ntasks,
        shape.tasks_per_node,
        shape.cpus_per_task,
        shape.overcommit,
        job.min_cpus_per_node,
    )
}

/// Slurm 22.05's MinCPUsNode of a job of `ntasks` tasks: one task's CPUs,
/// or `--ntasks-per-node` tasks' unless the job runs a single task or
/// overcommits (`-n1 --ntasks-per-node=2` is 1), and at least
/// `--mincpus`. The controller shows it, and submission holds it against
/// the nodes.
pub fn min_cpus_per_node(
    ntasks: u32,
    tasks_per_node: Option<u32>,
    cpus_per_task: u32,
    overcommit: bool,
    mincpus: u32,
) -> u32 {
    let tasks = match tasks_per_node {
        Some(n) if n > 0 && ntasks > 1 && !overcommit => n,
        _ => 1,
    };
    tasks.saturating_mul(cpus_per_task.max(1)).max(mincpus)
}

/// The CPUs a partition's nodes (their CPU counts) give its jobs in all:
/// each node's, no more than MaxCPUsPerNode. A job asking more waits with
/// PartitionConfig at submission, and its changes are answered
/// ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE.
pub fn partition_cpus(
    node_cpus: impl IntoIterator<Item = u32>,
    max_cpus_per_node: Option<u32>,
) -> u64 {
    node_cpus
        .into_iter()
        .map(|c| u64::from(c.min(max_cpus_per_node.unwrap_or(u32::MAX))))
        .sum()
}

/// Whether `--ntasks-per-node` tasks of `-c` CPUs each are more CPUs than
/// any node of the partition (`order`) has.
fn tasks_per_node_exceed_cpus(view: &ClusterView, job: &JobRequest, order: &[usize]) -> bool {
    let Some(per_node) = job.ntasks_per_node.filter(|&n| n > 0) else {
        return false;
    };
    let wanted = u64::from(per_node) * u64::from(job.cpus_per_task.max(1));
    let most = order
        .iter()
        .filter_map(|&i| view.nodes.get(i))
        .map(|n| u64::from(n.cpus))
        .max()
        .unwrap_or(0);
    wanted > most
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraint::Constraint;
    use crate::request::MemReq;
    use crate::testkit::{cluster, job};
    use slurm_common::time::TimeLimit;

    fn reject(view: &ClusterView, j: &JobRequest) -> SubmitRejection {
        match check_submit(view, j) {
            Err(e) => e,
            Ok(()) => panic!("job {} accepted", j.id),
        }
    }

    /// MaxCPUsPerNode below the nodes' size (Slurm 22.05, one 2-CPU node,
    /// limit 1): more CPUs than it leaves waits with PartitionConfig; a
    /// whole node (`--exclusive`) is refused, unless submitted held.
    #[test]
    fn max_cpus_per_node_is_a_partition_limit_and_denies_whole_nodes() {
        let mut view = cluster(1, 2, 4000);
        view.partitions[0].max_cpus_per_node = Some(1);
        let mut wide = job(1);
        wide.cpus_per_task = 2;
        assert_eq!(check_submit(&view, &wide), Ok(()));
        let mut two = job(2);
        two.ntasks = 2;
        assert_eq!(check_submit(&view, &two), Ok(()));
        let mut excl = job(3);
        excl.exclusive = true;
        assert_eq!(
            reject(&view, &excl).slurm_error(),
            "Requested node configuration is not available"
        );
        view.config.enforce_part_limits = true;
        assert_eq!(
            reject(&view, &wide).slurm_error(),
            "More processors requested than permitted"
        );
    }

    #[test]
    fn excluding_every_node_is_not_a_memory_problem() {
        // Slurm 22.05: `sbatch --exclude vm` on a one-node partition fails
        // with "Requested node configuration is not available" alone.
        let view = cluster(1, 2, 4000);
        let mut j = job(1);
        j.excluded_nodes = vec![0];
        let e = reject(&view, &j);
        assert_eq!(e.user_message(), None);
        assert_eq!(
            e.slurm_error(),
            "Requested node configuration is not available"
        );
    }

    #[test]
    fn golden_too_much_memory_is_rejected() {
        // err_sbatch_too_much_mem: sbatch --mem=999999999 (CR_Core, no tracking)
        let view = cluster(4, 2, 4000);
        let mut j = job(12);
        j.mem = Some(MemReq::PerNode(999_999_999));
        let e = reject(&view, &j);
        assert_eq!(
            e,
            SubmitRejection::NodeConfigUnavailable {
                partition: "debug".into(),
                cause: Unsatisfiable::Memory
            }
        );
        assert_eq!(
            e.slurm_error(),
            "Requested node configuration is not available"
        );
        assert_eq!(
            e.user_message(),
            Some("Memory specification can not be satisfied")
        );
    }

    #[test]
    fn golden_too_many_nodes_is_accepted() {
        // err_sbatch_too_many_nodes: sbatch -N 10 prints "Submitted batch job 11"
        let view = cluster(4, 2, 4000);
        let mut j = job(11);
        j.min_nodes = 10;
        j.max_nodes = Some(10);
        j.ntasks = 10;
        assert_eq!(check_submit(&view, &j), Ok(()));
    }

    #[test]
    fn too_many_nodes_is_rejected_when_limits_are_enforced() {
        let mut view = cluster(4, 2, 4000);
        view.config.enforce_part_limits = true;
        let mut j = job(11);
        j.min_nodes = 10;
        j.ntasks = 10;
        let e = reject(&view, &j);
        assert!(
            matches!(e, SubmitRejection::InvalidNodeCount { .. }),
            "{e:?}"
        );
        assert_eq!(e.slurm_error(), "Node count specification invalid");
    }

    #[test]
    fn time_limit_only_checked_when_enforced() {
        let mut view = cluster(1, 2, 4000);
        view.partitions[0].max_time = TimeLimit::Minutes(60);
        let mut j = job(1);
        j.time_limit = Some(TimeLimit::Minutes(120));
        assert_eq!(check_submit(&view, &j), Ok(()));
        view.config.enforce_part_limits = true;
        let e = reject(&view, &j);
        assert_eq!(
            e.slurm_error(),
            "Requested time limit is invalid (missing or exceeds some limit)"
        );
        // A job without --time takes the partition's limit and is fine.
        assert_eq!(check_submit(&view, &job(2)), Ok(()));
    }

    #[test]
    fn partition_availability() {
        let mut view = cluster(1, 2, 4000);
        let mut j = job(1);
        j.partition = 3;
        let e = reject(&view, &j);
        assert_eq!(e, SubmitRejection::InvalidPartition { index: 3 });
        assert_eq!(e.slurm_error(), "Invalid partition name specified");
        for state in [PartitionState::Drain, PartitionState::Inactive] {
            view.partitions[0].state = state;
            let e = reject(&view, &job(1));
            assert_eq!(
                e.slurm_error(),
                "Required partition not available (inactive or drain)"
            );
        }
        // A DOWN partition queues jobs (they wait with PartitionDown).
        view.partitions[0].state = PartitionState::Down;
        assert_eq!(check_submit(&view, &job(1)), Ok(()));
    }

    #[test]
    fn features() {
        let mut view = cluster(2, 2, 4000);
        view.nodes[1].features = vec!["gpu".into()];
        view.nodes[1].usable = false;
        let mut j = job(1);
        j.constraint = Some(Constraint::parse("gpu").unwrap());
        assert_eq!(
            check_submit(&view, &j),
            Ok(()),
            "node state does not matter"
        );
        j.constraint = Some(Constraint::parse("gpu&fast").unwrap());
        let e = reject(&view, &j);
        assert_eq!(
            e,
            SubmitRejection::InvalidFeature {
                partition: "debug".into(),
                constraint: "gpu&fast".into()
            }
        );
        assert_eq!(e.slurm_error(), "Invalid feature specification");
    }

    /// Slurm 22.05 on one node with features `fa,fb`: each name must
    /// exist; counts the partition's nodes cannot meet are a node
    /// configuration that is not available.
    #[test]
    fn every_feature_named_must_exist_and_counts_must_fit() {
        let mut view = cluster(1, 2, 4000);
        view.nodes[0].features = vec!["fa".into(), "fb".into()];
        let with = |c: &str| {
            let mut j = job(1);
            j.constraint = Some(Constraint::parse(c).unwrap());
            check_submit(&view, &j).map_err(|e| e.slurm_error())
        };
        for ok in ["fa|fb", "[fa|fb]", "fa*1&fb", "(fa|fb)&fa"] {
            assert_eq!(with(ok), Ok(()), "{ok}");
        }
        for unknown in ["zz|fa", "[fa|zz]", "fa&(fb|zz)", "zz*2", "FA"] {
            assert_eq!(
                with(unknown),
                Err("Invalid feature specification"),
                "{unknown}"
            );
        }
        for too_many in ["fa*2", "[fa*1&fb*1]", "[fa*2]", "fa*2|fb"] {
            assert_eq!(
                with(too_many),
                Err("Requested node configuration is not available"),
                "{too_many}"
            );
        }
    }

    /// `-C fa -x NODE` where NODE alone has `fa`: the features exist, the
    /// nodes left do not have them (Slurm 22.05).
    #[test]
    fn features_only_excluded_nodes_have_are_not_available() {
        let mut view = cluster(2, 2, 4000);
        view.nodes[1].features = vec!["fa".into()];
        let mut j = job(1);
        j.constraint = Some(Constraint::parse("fa").unwrap());
        j.excluded_nodes = vec![1];
        assert_eq!(
            check_submit(&view, &j).map_err(|e| e.slurm_error()),
            Err("Requested node configuration is not available")
        );
    }

    #[test]
    fn too_many_cpus_waits_unless_limits_are_enforced() {
        // sbatch -c 3, -n 3, -c 2 -n 2, --ntasks-per-node=3 on 2-CPU
        // nodes: accepted (Reason PartitionConfig) by Slurm 22.05, refused
        // with "More processors requested than permitted" under
        // EnforcePartLimits=ALL or ANY.
        let mut view = cluster(1, 2, 4000);
        let mut wide_task = job(1);
        wide_task.cpus_per_task = 3;
        let mut many = job(2);
        many.ntasks = 3;
        let mut both = job(3);
        both.ntasks = 2;
        both.cpus_per_task = 2;
        let mut per_node = job(4);
        per_node.ntasks = 3;
        per_node.ntasks_per_node = Some(3);
        let jobs = [wide_task, many, both, per_node];
        for j in &jobs {
            assert_eq!(check_submit(&view, j), Ok(()), "job {}", j.id);
        }
        view.config.enforce_part_limits = true;
        for j in &jobs {
            let e = reject(&view, j);
            assert_eq!(
                e,
                SubmitRejection::TooManyCpus {
                    partition: "debug".into()
                }
            );
            assert_eq!(e.slurm_error(), "More processors requested than permitted");
            assert_eq!(e.user_message(), None);
        }
    }

    #[test]
    fn cpus_are_checked_before_memory() {
        let mut view = cluster(1, 2, 4000);
        // -c 3 --mem=5000: the CPUs decide, so it waits.
        let mut j = job(1);
        j.cpus_per_task = 3;
        j.mem = Some(MemReq::PerNode(5000));
        assert_eq!(check_submit(&view, &j), Ok(()));
        // --mem=5000 alone: refused for its memory.
        let mut m = job(2);
        m.mem = Some(MemReq::PerNode(5000));
        assert_eq!(
            reject(&view, &m).user_message(),
            Some("Memory specification can not be satisfied")
        );
        // -n 2 --mem-per-cpu=3000: the CPUs fit, the node's memory does
        // not; refused without the memory line, as Slurm does.
        let mut t = job(3);
        t.ntasks = 2;
        t.mem = Some(MemReq::PerCpu(3000));
        let e = reject(&view, &t);
        assert_eq!(
            e,
            SubmitRejection::NodeConfigUnavailable {
                partition: "debug".into(),
                cause: Unsatisfiable::TotalSize
            }
        );
        assert_eq!(e.user_message(), None);
        view.config.enforce_part_limits = true;
        assert_eq!(
            reject(&view, &j).slurm_error(),
            "More processors requested than permitted"
        );
    }

    #[test]
    fn total_size() {
        let view = cluster(4, 2, 4000);
        let mut many = job(2);
        many.ntasks = 9;
        assert_eq!(check_submit(&view, &many), Ok(()));
        many.ntasks = 8;
        many.mem = Some(MemReq::PerCpu(2001));
        assert_eq!(
            reject(&view, &many),
            SubmitRejection::NodeConfigUnavailable {
                partition: "debug".into(),
                cause: Unsatisfiable::TotalSize
            }
        );
        many.mem = None;
        assert_eq!(check_submit(&view, &many), Ok(()));
        many.overcommit = true;
        many.ntasks = 100;
        assert_eq!(check_submit(&view, &many), Ok(()));
    }

    #[test]
    fn node_lists() {
        let mut view = cluster(3, 2, 4000);
        view.partitions[0].nodes = vec![0, 1];
        let mut j = job(1);
        j.required_nodes = vec![2];
        assert!(matches!(
            reject(&view, &j),
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::RequiredNode,
                ..
            }
        ));
        j.required_nodes = vec![1];
        j.excluded_nodes = vec![1];
        assert!(matches!(
            reject(&view, &j),
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::RequiredNode,
                ..
            }
        ));
        j.excluded_nodes = vec![42];
        assert!(matches!(
            reject(&view, &j),
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::UnknownNode,
                ..
            }
        ));
        let mut k = job(2);
        k.min_nodes = 2;
        k.max_nodes = Some(1);
        assert_eq!(
            reject(&view, &k).slurm_error(),
            "Node count specification invalid"
        );
        let mut k = job(3);
        k.required_nodes = vec![0, 1];
        k.max_nodes = Some(1);
        assert_eq!(
            reject(&view, &k).slurm_error(),
            "Node count specification invalid"
        );
    }

    #[test]
    fn down_nodes_do_not_matter() {
        let mut view = cluster(2, 2, 4000);
        for n in &mut view.nodes {
            n.usable = false;
            n.alloc_cpus = 2;
        }
        let mut j = job(1);
        j.ntasks = 4;
        assert_eq!(check_submit(&view, &j), Ok(()));
    }

    #[test]
    fn memory_per_cpu_counts_cpus_per_task() {
        let view = cluster(2, 4, 4000);
        let mut j = job(1);
        j.cpus_per_task = 2;
        j.mem = Some(MemReq::PerCpu(2000));
        assert_eq!(check_submit(&view, &j), Ok(()));
        j.mem = Some(MemReq::PerCpu(2001));
        let e = reject(&view, &j);
        assert!(matches!(
            e,
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::MemoryPerCpu,
                ..
            }
        ));
        // Slurm 22.05 (`--mem-per-cpu=3000 -c 2` on 4000 MB): no memory line.
        assert_eq!(e.user_message(), None);
        // One CPU's worth over every node (`--mem-per-cpu=4001`): the line.
        j.mem = Some(MemReq::PerCpu(4001));
        j.cpus_per_task = 1;
        assert_eq!(
            reject(&view, &j).user_message(),
            Some("Memory specification can not be satisfied")
        );
    }

    #[test]
    fn tasks_per_node_the_nodes_cannot_honour_are_refused() {
        // Slurm 22.05, one node: `-n 2 --ntasks-per-node=1` is refused with
        // "Requested node configuration is not available", while `-n 3`
        // (more CPUs than there are) and `-N 2` are queued.
        let view = cluster(1, 2, 4000);
        let mut j = job(1);
        j.ntasks = 2;
        j.ntasks_per_node = Some(1);
        let e = reject(&view, &j);
        assert_eq!(
            e,
            SubmitRejection::NodeConfigUnavailable {
                partition: "debug".into(),
                cause: Unsatisfiable::TotalSize
            }
        );
        assert_eq!(e.user_message(), None);
        let mut many = job(2);
        many.ntasks = 3;
        assert_eq!(check_submit(&view, &many), Ok(()));
        let mut wide = job(3);
        wide.min_nodes = 2;
        assert_eq!(check_submit(&view, &wide), Ok(()));
        // `-n 3 --ntasks-per-node=3`: more CPUs than the node has, queued.
        let mut packed = job(4);
        packed.ntasks = 3;
        packed.ntasks_per_node = Some(3);
        assert_eq!(check_submit(&view, &packed), Ok(()));
    }

    #[test]
    fn tmp_disk_must_fit_some_node() {
        let mut view = cluster(2, 2, 4000);
        view.nodes[0].tmp_disk_mb = 100;
        view.nodes[1].tmp_disk_mb = 2048;
        let mut j = job(1);
        j.tmp_disk_mb = 2048;
        assert_eq!(check_submit(&view, &j), Ok(()));
        j.tmp_disk_mb = 2049;
        let e = reject(&view, &j);
        assert_eq!(
            e,
            SubmitRejection::NodeConfigUnavailable {
                partition: "debug".into(),
                cause: Unsatisfiable::TmpDisk
            }
        );
        assert_eq!(
            e.slurm_error(),
            "Requested node configuration is not available"
        );
        // Slurm 22.05 (`sbatch --tmp=100`, TmpDisk=0) prints this line first.
        assert_eq!(
            e.user_message(),
            Some("Temporary disk specification can not be satisfied")
        );
        // A required node without it is as bad as none.
        j.tmp_disk_mb = 1000;
        j.required_nodes = vec![0];
        assert!(matches!(
            reject(&view, &j),
            SubmitRejection::NodeConfigUnavailable {
                cause: Unsatisfiable::TmpDisk,
                ..
            }
        ));
        // A feature no node has is still reported as a feature problem.
        let mut f = job(2);
        f.tmp_disk_mb = 1 << 40;
        f.constraint = Some(Constraint::parse("nope").unwrap());
        assert_eq!(
            reject(&view, &f).slurm_error(),
            "Invalid feature specification"
        );
    }

    #[test]
    fn messages_follow_house_style() {
        let view = cluster(1, 2, 4000);
        let mut j = job(1);
        j.mem = Some(MemReq::PerNode(1 << 40));
        let msg = reject(&view, &j).to_string();
        assert!(
            msg.starts_with("no node configuration of partition debug"),
            "{msg}"
        );
        assert!(!msg.ends_with('.'));
    }

    /// Slurm 22.05, `sbatch --mincpus=3` on 2-CPU nodes: refused, with
    /// "CPU count per node can not be satisfied" first; `--mincpus=2` fits.
    #[test]
    fn mincpus_over_every_node_is_refused_with_its_line() {
        let view = cluster(2, 2, 4000);
        let mut j = job(1);
        j.min_cpus_per_node = 2;
        assert_eq!(check_submit(&view, &j), Ok(()));
        j.min_cpus_per_node = 3;
        let e = reject(&view, &j);
        assert_eq!(
            e,
            SubmitRejection::NodeConfigUnavailable {
                partition: "debug".into(),
                cause: Unsatisfiable::MinCpus,
            }
        );
        assert_eq!(
            e.slurm_error(),
            "Requested node configuration is not available"
        );
        assert_eq!(
            e.user_message(),
            Some("CPU count per node can not be satisfied")
        );
        // A node with more CPUs in the partition takes it.
        let mut view = view;
        view.nodes[1].cpus = 4;
        assert_eq!(check_submit(&view, &j), Ok(()));
    }

    /// Slurm 22.05 on two nodes of 2 CPUs and 1000 MB: the partition's
    /// four CPUs are the limit a job waits for; within them, what no node
    /// can give is refused, with the CPU line when a node's share
    /// (MinCPUsNode) is more than any node has.
    #[test]
    fn partition_cpus_then_what_each_node_must_give() {
        let view = cluster(2, 2, 1000);
        let with = |f: &dyn Fn(&mut JobRequest)| {
            let mut j = job(1);
            f(&mut j);
            j
        };
        let waits = [
            with(&|j| j.ntasks = 5),
            with(&|j| {
                j.ntasks = 5;
                j.min_cpus_per_node = 3;
                j.max_nodes = Some(1);
            }),
            with(&|j| {
                j.ntasks = 5;
                j.tmp_disk_mb = 999_999;
            }),
            with(&|j| {
                j.min_cpus_per_node = 3;
                j.min_nodes = 3;
            }),
            with(&|j| {
                j.ntasks = 5;
                j.mem = Some(MemReq::PerNode(2000));
            }),
            with(&|j| j.ntasks = 3),
        ];
        for j in &waits {
            assert_eq!(check_submit(&view, j), Ok(()), "{j:?}");
        }
        let cpu_line = [
            with(&|j| j.cpus_per_task = 3),
            with(&|j| {
                j.ntasks = 3;
                j.ntasks_per_node = Some(3);
            }),
            with(&|j| {
                j.ntasks = 2;
                j.ntasks_per_node = Some(3);
            }),
            with(&|j| {
                j.cpus_per_task = 3;
                j.mem = Some(MemReq::PerNode(5000));
            }),
            with(&|j| {
                j.cpus_per_task = 3;
                j.ntasks = 2;
                j.overcommit = true;
            }),
            with(&|j| {
                j.ntasks = 2;
                j.ntasks_per_node = Some(2);
                j.cpus_per_task = 2;
            }),
        ];
        for j in &cpu_line {
            let e = reject(&view, j);
            assert_eq!(
                e.user_message(),
                Some("CPU count per node can not be satisfied"),
                "{j:?}"
            );
        }
        let no_line = [
            with(&|j| {
                j.ntasks = 3;
                j.max_nodes = Some(1);
            }),
            with(&|j| j.ntasks_per_node = Some(3)),
            with(&|j| {
                j.ntasks_per_node = Some(3);
                j.overcommit = true;
            }),
            with(&|j| {
                j.ntasks_per_node = Some(2);
                j.cpus_per_task = 2;
            }),
            with(&|j| {
                j.ntasks = 3;
                j.ntasks_per_node = Some(3);
                j.overcommit = true;
            }),
        ];
        for j in &no_line {
            let e = reject(&view, j);
            assert_eq!(
                e.slurm_error(),
                "Requested node configuration is not available",
                "{j:?}"
            );
            assert_eq!(e.user_message(), None, "{j:?}");
        }
        let mut memory = with(&|j| {
            j.ntasks = 3;
            j.max_nodes = Some(1);
        });
        memory.mem = Some(MemReq::PerNode(5000));
        assert_eq!(
            reject(&view, &memory).user_message(),
            Some("Memory specification can not be satisfied")
        );
    }

    /// Slurm 22.05 on a node of `CPUs=2` (two sockets of one core):
    /// `-B 1:2` and `-B 1:1:2` are refused with "Socket, core and/or
    /// thread specification can not be satisfied", after the memory
    /// check; `-B 2:1` fits; a node whose layout is not known fits.
    #[test]
    fn a_layout_no_node_has_is_refused_after_the_memory() {
        let mut view = cluster(1, 2, 4000);
        view.nodes[0].sockets = 2;
        view.nodes[0].cores_per_socket = 1;
        view.nodes[0].threads_per_core = 1;
        let mut j = job(1);
        for ok in [[2, 1, 0], [1, 1, 1], [0, 0, 0]] {
            j.layout = ok;
            assert_eq!(check_submit(&view, &j), Ok(()), "{ok:?}");
        }
        for bad in [[1, 2, 0], [1, 1, 2], [3, 0, 0]] {
            j.layout = bad;
            let e = reject(&view, &j);
            assert_eq!(
                e.user_message(),
                Some("Socket, core and/or thread specification can not be satisfied"),
                "{bad:?}"
            );
        }
        j.layout = [1, 2, 0];
        j.mem = Some(MemReq::PerNode(1 << 40));
        assert_eq!(
            reject(&view, &j).user_message(),
            Some("Memory specification can not be satisfied")
        );
        j.mem = None;
        // Placement keeps to the nodes that have it.
        assert!(!fit::node_allowed(&view, &j, j.constraint.as_ref(), 0));
        view.nodes[0].cores_per_socket = 0;
        assert_eq!(check_submit(&view, &j), Ok(()));
        assert!(fit::node_allowed(&view, &j, j.constraint.as_ref(), 0));
    }
}
