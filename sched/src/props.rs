//! Safety properties of [`crate::schedule`] over generated clusters and
//! queues. Each property is checked against the plan directly, never by
//! calling the placement code again.

use proptest::prelude::*;

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason as R;

use crate::constraint::Constraint;
use crate::plan::{schedule, Plan, Start};
use crate::request::{Hold, JobRequest, LicenseNeed, MemReq};
use crate::view::{
    ClusterView, LicenseView, NodeView, OverSubscribe, PartitionState, PartitionView, SchedConfig,
};

const FEATURES: [&str; 2] = ["a", "b"];

fn arb_node(i: usize) -> impl Strategy<Value = NodeView> {
    (
        1u32..=8,
        prop::sample::select(vec![1000u64, 2000, 4000, 8000]),
        prop::sample::subsequence(FEATURES.to_vec(), 0..=2),
        1u32..=3,
        prop::bool::weighted(0.85),
        0u32..=8,
        0u64..=8000,
        prop::bool::weighted(0.1),
        prop::sample::select(vec![0u64, 100, 1000]),
    )
        .prop_map(
            move |(cpus, mem, feats, weight, usable, used, used_mem, owned, tmp)| {
                let mut n = NodeView::new(format!("n{}", i + 1), cpus, mem);
                n.tmp_disk_mb = tmp;
                n.features = feats.into_iter().map(String::from).collect();
                n.weight = weight;
                n.usable = usable;
                n.alloc_cpus = used.min(cpus);
                n.alloc_mem_mb = used_mem.min(mem);
                if owned {
                    n.exclusive_owner = Some(JobId(9999));
                }
                n
            },
        )
}

fn arb_partition(nodes: usize) -> impl Strategy<Value = PartitionView> {
    (
        prop::sample::subsequence((0..nodes).collect::<Vec<_>>(), 1..=nodes),
        prop::sample::select(vec![
            PartitionState::Up,
            PartitionState::Up,
            PartitionState::Up,
            PartitionState::Drain,
            PartitionState::Down,
        ]),
        1u16..=3,
        prop::option::weighted(0.2, 1u32..=3),
        prop::bool::weighted(0.15),
        prop::option::weighted(
            0.3,
            prop_oneof![
                (100u64..2000).prop_map(MemReq::PerCpu),
                (100u64..4000).prop_map(MemReq::PerNode)
            ],
        ),
    )
        .prop_map(|(members, state, tier, max_nodes, exclusive, def_mem)| {
            let mut p = PartitionView::new("p", members);
            p.state = state;
            p.priority_tier = tier;
            p.max_nodes = max_nodes;
            if exclusive {
                p.oversubscribe = OverSubscribe::Exclusive;
            }
            p.def_mem = def_mem;
            p
        })
}

fn arb_view() -> impl Strategy<Value = ClusterView> {
    (1usize..=6)
        .prop_flat_map(|n| {
            (
                (0..n).map(arb_node).collect::<Vec<_>>(),
                prop::collection::vec(arb_partition(n), 1..=3),
                any::<bool>(),
                prop::collection::vec((0u32..=3, 0u32..=3), 0..=2),
            )
        })
        .prop_map(|(nodes, partitions, track_memory, licenses)| ClusterView {
            nodes,
            partitions,
            config: SchedConfig {
                track_memory,
                ..SchedConfig::default()
            },
            licenses: licenses
                .into_iter()
                .enumerate()
                .map(|(i, (total, used))| LicenseView {
                    name: format!("lic{i}"),
                    total,
                    used: used.min(total),
                })
                .collect(),
        })
}

fn arb_job(id: u32, nodes: usize, parts: usize) -> impl Strategy<Value = JobRequest> {
    let node_list = move |w| prop::collection::vec(0..nodes, 0..=1).prop_filter("w", move |_| w);
    (
        (0..parts, 0u32..4, 0i64..5),
        (
            1u32..=3,
            prop::option::of(1u32..=4),
            1u32..=8,
            prop::option::weighted(0.2, 1u32..=3),
        ),
        (
            1u32..=3,
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.7),
        ),
        prop::option::weighted(
            0.3,
            prop_oneof![
                (0u64..3000).prop_map(MemReq::PerNode),
                (0u64..1500).prop_map(MemReq::PerCpu)
            ],
        ),
        (node_list(true), node_list(true)),
        prop::option::weighted(0.2, prop::sample::select(vec!["a", "b", "a&b", "a|b"])),
        prop::option::weighted(0.05, prop::sample::select(vec![Hold::User, Hold::Admin])),
        prop::option::weighted(0.05, 0i64..10),
        (
            prop::sample::select(vec![0u64, 0, 0, 50, 500]),
            prop::collection::vec((0usize..=2, 1u32..=2), 0..=2),
            prop::option::weighted(0.25, 0..parts),
        ),
        // What an earlier pass left it with; `None`: never looked at.
        prop::option::weighted(
            0.5,
            prop::sample::select(vec![
                R::None,
                R::Resources,
                R::Priority,
                R::ReqNodeNotAvail,
                R::Licenses,
                R::PartitionConfig,
                R::PartitionNodeLimit,
            ]),
        ),
    )
        .prop_map(
            move |(
                (partition, priority, submit),
                (min_nodes, max_extra, ntasks, per_node),
                (cpt, exclusive, overcommit, ntasks_given),
                mem,
                (required, excluded),
                constraint,
                hold,
                begin,
                (tmp, licenses, other),
                prior,
            )| {
                let mut j = JobRequest::new(JobId(id), partition);
                // `-p a,b`: a second partition, now and then.
                j.other_partitions = other.filter(|&o| o != partition).into_iter().collect();
                j.priority = priority;
                j.submit_time = submit;
                j.min_nodes = min_nodes;
                j.max_nodes = max_extra.map(|e| min_nodes + e - 1);
                // A task count not given is the controller's: one task a
                // node, or `--ntasks-per-node` on each.
                j.ntasks_given = ntasks_given;
                j.ntasks = if ntasks_given {
                    ntasks
                } else {
                    per_node.unwrap_or(1) * min_nodes
                };
                j.ntasks_per_node = per_node;
                j.cpus_per_task = cpt;
                j.exclusive = exclusive;
                j.overcommit = overcommit;
                j.mem = mem;
                j.required_nodes = required;
                j.excluded_nodes = excluded;
                j.constraint = constraint.and_then(|c| Constraint::parse(c).ok());
                j.hold = hold;
                j.begin_time = begin;
                j.prior_reason = prior;
                j.tmp_disk_mb = tmp;
                j.licenses = licenses
                    .into_iter()
                    .map(|(index, count)| LicenseNeed { index, count })
                    .collect();
                j
            },
        )
}

fn arb_case() -> impl Strategy<Value = (ClusterView, Vec<JobRequest>)> {
    arb_view().prop_flat_map(|view| {
        let (n, p) = (view.nodes.len(), view.partitions.len());
        let jobs = (0..12u32)
            .map(|id| arb_job(id + 1, n, p))
            .collect::<Vec<_>>();
        (Just(view), jobs, 0usize..=12).prop_map(|(v, mut jobs, keep)| {
            jobs.truncate(keep);
            (v, jobs)
        })
    })
}

/// The scheduler's order key of `j` in partition `part`, restated
/// independently.
fn order_key(
    view: &ClusterView,
    j: &JobRequest,
    part: usize,
) -> (std::cmp::Reverse<u16>, std::cmp::Reverse<u32>, i64, JobId) {
    let tier = view.partitions.get(part).map_or(0, |p| p.priority_tier);
    (
        std::cmp::Reverse(tier),
        std::cmp::Reverse(j.priority),
        j.submit_time,
        j.id,
    )
}

fn job_of<'a>(queue: &'a [JobRequest], s: &Start) -> &'a JobRequest {
    queue
        .iter()
        .find(|j| j.id == s.job)
        .unwrap_or_else(|| panic!("start for unknown job {}", s.job))
}

fn check_no_oversubscription(
    view: &ClusterView,
    queue: &[JobRequest],
    plan: &Plan,
) -> Result<(), TestCaseError> {
    for (i, n) in view.nodes.iter().enumerate() {
        let here: Vec<&Start> = plan
            .starts
            .iter()
            .filter(|s| s.node_indices().any(|x| x == i))
            .collect();
        if here.is_empty() {
            continue;
        }
        prop_assert!(n.usable, "start on unusable node {}", i);
        prop_assert!(n.exclusive_owner.is_none(), "start on owned node {}", i);
        let cpus: u64 = here
            .iter()
            .flat_map(|s| s.nodes.iter().filter(|a| a.node_index == i))
            .map(|a| u64::from(a.cpus))
            .sum();
        prop_assert!(
            u64::from(n.alloc_cpus) + cpus <= u64::from(n.cpus),
            "node {} CPUs: {} used + {} planned > {}",
            i,
            n.alloc_cpus,
            cpus,
            n.cpus
        );
        if view.config.track_memory {
            let mem: u64 = here
                .iter()
                .flat_map(|s| s.nodes.iter().filter(|a| a.node_index == i))
                .map(|a| a.mem_mb)
                .sum();
            prop_assert!(
                n.alloc_mem_mb + mem <= n.real_memory_mb,
                "node {} memory",
                i
            );
        }
        if here.iter().any(|s| s.exclusive) {
            prop_assert_eq!(here.len(), 1, "exclusive start shares node {}", i);
            prop_assert!(n.is_idle(), "exclusive start on busy node {}", i);
        }
        for s in &here {
            let j = job_of(queue, s);
            prop_assert!(s.partition == j.partition || j.other_partitions.contains(&s.partition));
            prop_assert!(view.partitions[s.partition].nodes.contains(&i));
        }
    }
    Ok(())
}

fn check_allocation_meets_request(
    view: &ClusterView,
    queue: &[JobRequest],
    plan: &Plan,
) -> Result<(), TestCaseError> {
    for s in &plan.starts {
        let j = job_of(queue, s);
        let part = &view.partitions[s.partition];
        let cpt = j.cpus_per_task.max(1);
        let count = s.nodes.len() as u32;
        prop_assert!(count >= j.min_nodes.max(part.min_nodes).max(1));
        if let Some(m) = j.max_nodes {
            prop_assert!(count <= m.max(j.min_nodes));
        }
        if let Some(m) = part.max_nodes {
            prop_assert!(count <= m);
        }
        let tasks: u64 = s.nodes.iter().map(|a| u64::from(a.tasks)).sum();
        prop_assert!(tasks >= u64::from(j.ntasks));
        prop_assert!(
            s.nodes
                .windows(2)
                .all(|w| w[0].node_index < w[1].node_index),
            "node order"
        );
        for r in &j.required_nodes {
            prop_assert!(
                s.node_indices().any(|i| i == *r),
                "required node {} missing",
                r
            );
        }
        let exclusive = j.exclusive || part.oversubscribe == OverSubscribe::Exclusive;
        prop_assert_eq!(s.exclusive, exclusive);
        for a in &s.nodes {
            let n = &view.nodes[a.node_index];
            prop_assert!(a.tasks >= 1);
            prop_assert!(!j.excluded_nodes.contains(&a.node_index));
            prop_assert!(n.tmp_disk_mb >= j.tmp_disk_mb, "--tmp does not fit");
            if let Some(c) = &j.constraint {
                prop_assert!(c.matches(&n.features));
            }
            if let Some(p) = j.ntasks_per_node {
                prop_assert!(a.tasks <= p);
            }
            let want_cpus = if exclusive {
                n.cpus
            } else if j.overcommit {
                cpt
            } else {
                a.tasks * cpt
            };
            prop_assert_eq!(a.cpus, want_cpus);
            let req = j.mem.or(part.def_mem).or(view.config.def_mem);
            if view.config.track_memory {
                let want = match req {
                    Some(MemReq::PerNode(0) | MemReq::PerCpu(0)) | None => n.real_memory_mb,
                    Some(MemReq::PerNode(m)) => m,
                    Some(MemReq::PerCpu(m)) => m * u64::from(a.cpus),
                };
                prop_assert_eq!(a.mem_mb, want);
            } else {
                prop_assert_eq!(a.mem_mb, 0);
                match req {
                    Some(MemReq::PerNode(m)) => prop_assert!(m <= n.real_memory_mb),
                    Some(MemReq::PerCpu(m)) => {
                        prop_assert!(m * u64::from(a.cpus) <= n.real_memory_mb)
                    }
                    None => {}
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn never_oversubscribes((view, queue) in arb_case()) {
        let plan = schedule(&view, &queue, 5);
        check_no_oversubscription(&view, &queue, &plan)?;
    }

    #[test]
    fn never_hands_out_more_licenses_than_are_free((view, queue) in arb_case()) {
        let plan = schedule(&view, &queue, 5);
        for (i, lic) in view.licenses.iter().enumerate() {
            let taken: u64 = plan
                .starts
                .iter()
                .flat_map(|s| job_of(&queue, s).licenses.iter())
                .filter(|n| n.index == i)
                .map(|n| u64::from(n.count))
                .sum();
            prop_assert!(taken <= u64::from(lic.free()), "license {} over-allocated", i);
        }
        for s in &plan.starts {
            for need in &job_of(&queue, s).licenses {
                prop_assert!(need.index < view.licenses.len(), "unknown license started");
            }
        }
    }

    #[test]
    fn started_jobs_get_what_they_asked_for((view, queue) in arb_case()) {
        let plan = schedule(&view, &queue, 5);
        check_allocation_meets_request(&view, &queue, &plan)?;
    }

    #[test]
    fn every_job_gets_exactly_one_outcome((view, queue) in arb_case()) {
        let plan = schedule(&view, &queue, 5);
        prop_assert_eq!(plan.starts.len() + plan.pending.len(), queue.len());
        for j in &queue {
            let n = plan.starts.iter().filter(|s| s.job == j.id).count()
                + plan.pending.iter().filter(|p| p.0 == j.id).count();
            prop_assert_eq!(n, 1, "job {}", j.id);
        }
    }

    #[test]
    fn plan_is_deterministic_and_ignores_queue_order(
        (view, queue) in arb_case(),
        seed in any::<u64>(),
    ) {
        let plan = schedule(&view, &queue, 5);
        prop_assert_eq!(&plan, &schedule(&view, &queue, 5));
        let mut shuffled = queue.clone();
        // A seeded rotation and reversal: a different order, same jobs.
        if !shuffled.is_empty() {
            let k = (seed % shuffled.len() as u64) as usize;
            shuffled.rotate_left(k);
            if seed & 1 == 1 {
                shuffled.reverse();
            }
        }
        prop_assert_eq!(plan, schedule(&view, &shuffled, 5));
    }

    #[test]
    fn no_later_job_uses_what_a_waiting_job_needs((view, queue) in arb_case()) {
        let plan = schedule(&view, &queue, 5);
        for &(id, reason) in &plan.pending {
            if !matches!(reason, R::Resources | R::Priority) {
                continue;
            }
            let waiting = queue.iter().find(|j| j.id == id).map_or_else(
                || Err(TestCaseError::fail("pending job not in queue")), Ok)?;
            // A job listed in several partitions keeps back only those
            // where it waits for resources, which its one reason does not
            // tell: the unit tests of `plan` cover it.
            if !waiting.other_partitions.is_empty() {
                continue;
            }
            // One that names (-w) as many nodes as it needs keeps back
            // only those, as in Slurm.
            let part = &view.partitions[waiting.partition];
            // One that names a node outside its partition can never start
            // there (the controller refuses such a job at submission): it
            // needs nothing anyone else could take from it.
            if waiting.required_nodes.iter().any(|i| !part.nodes.contains(i)) {
                continue;
            }
            let shape = crate::fit::Shape::new(&view, waiting, part);
            let mut named = waiting.required_nodes.clone();
            named.sort_unstable();
            named.dedup();
            let its_nodes = if !named.is_empty() && named.len() >= shape.min_nodes as usize {
                &waiting.required_nodes
            } else {
                &part.nodes
            };
            let waiting_key = order_key(&view, waiting, waiting.partition);
            for s in &plan.starts {
                let started = job_of(&queue, s);
                // A job listed in several partitions that comes before the
                // waiting job in one of them may start in another on the
                // nodes it kept back: the waiting job waits for it
                // (Priority) either way.
                let ahead_somewhere = std::iter::once(started.partition)
                    .chain(started.other_partitions.iter().copied())
                    .any(|p| order_key(&view, started, p) < waiting_key);
                if !ahead_somewhere && order_key(&view, started, s.partition) > waiting_key {
                    prop_assert!(
                        !s.node_indices().any(|i| its_nodes.contains(&i)),
                        "job {} started on nodes of job {}, which waits with {}",
                        s.job, id, reason
                    );
                }
            }
        }
    }

    #[test]
    fn waiting_for_resources_means_an_empty_cluster_would_do((view, queue) in arb_case()) {
        let plan = schedule(&view, &queue, 5);
        let mut empty = view.clone();
        for n in &mut empty.nodes {
            n.alloc_cpus = 0;
            n.alloc_mem_mb = 0;
            n.exclusive_owner = None;
        }
        for &(id, reason) in &plan.pending {
            let Some(j) = queue.iter().find(|j| j.id == id) else { continue };
            let alone = schedule(&empty, std::slice::from_ref(j), 5);
            match reason {
                // Too few usable nodes is also Resources in Slurm, told
                // apart by its description.
                R::Resources if plan.description_of(id) == Some("") => {
                    prop_assert_eq!(alone.starts.len(), 1, "job {}", id)
                }
                // Only what this pass decided: a reason kept from an
                // earlier pass (no description given) may be stale, as in
                // Slurm.
                R::ReqNodeNotAvail | R::PartitionConfig | R::BadConstraints
                    if plan.description_of(id).is_some() =>
                {
                    prop_assert!(alone.starts.is_empty(), "job {} with {} fits an empty cluster", id, reason)
                }
                _ => {}
            }
        }
    }

    #[test]
    fn held_and_future_jobs_never_start((view, queue) in arb_case()) {
        let plan = schedule(&view, &queue, 5);
        for s in &plan.starts {
            let j = job_of(&queue, s);
            prop_assert!(j.hold.is_none());
            prop_assert!(j.begin_time.is_none_or(|t| t <= 5));
            prop_assert!(matches!(
                view.partitions[s.partition].state,
                PartitionState::Up | PartitionState::Drain
            ));
        }
    }
}
