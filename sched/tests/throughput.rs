//! How fast a pass is on the shapes the controller meets most. The times are
//! printed (run with `--nocapture` to see them); the assertions are about
//! correctness only, so a slow machine cannot make these fail.

use std::time::Instant;

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason;
use slurm_sched::{schedule, ClusterView, JobRequest, NodeView, PartitionView, Plan};

fn reference_cluster() -> ClusterView {
    ClusterView {
        nodes: (1..=4)
            .map(|i| NodeView::new(format!("n{i}"), 2, 4000))
            .collect(),
        partitions: vec![PartitionView::new("debug", vec![0, 1, 2, 3])],
        config: Default::default(),
        licenses: Vec::new(),
    }
}

fn trivial_jobs(n: u32) -> Vec<JobRequest> {
    (1..=n)
        .map(|id| {
            let mut j = JobRequest::new(JobId(id), 0);
            j.submit_time = i64::from(id);
            j
        })
        .collect()
}

/// Books a plan's starts into the view, as the controller would.
fn apply(view: &mut ClusterView, plan: &Plan) {
    for s in &plan.starts {
        for a in &s.nodes {
            let n = &mut view.nodes[a.node_index];
            n.alloc_cpus += a.cpus;
            n.alloc_mem_mb += a.mem_mb;
            assert!(n.alloc_cpus <= n.cpus, "{} oversubscribed", n.name);
        }
    }
}

#[test]
fn idle_cluster_starts_a_job_at_once() {
    let view = reference_cluster();
    let queue = trivial_jobs(1);
    let t = Instant::now();
    let plan = schedule(&view, &queue, 0);
    let took = t.elapsed();
    println!("idle cluster, one job: {took:?}");
    assert_eq!(plan.starts.len(), 1);
    assert_eq!(plan.starts[0].node_indices().collect::<Vec<_>>(), vec![0]);
}

#[test]
fn ten_thousand_pending_jobs_on_four_nodes() {
    let queue = trivial_jobs(10_000);

    // Full cluster: nothing can start, every job needs a reason.
    let mut full = reference_cluster();
    for n in &mut full.nodes {
        n.alloc_cpus = n.cpus;
    }
    let mut best = std::time::Duration::MAX;
    let mut plan = Plan::default();
    for _ in 0..5 {
        let t = Instant::now();
        plan = schedule(&full, &queue, 0);
        best = best.min(t.elapsed());
    }
    println!("10000 pending jobs, full 4-node cluster: best of 5 passes {best:?}");
    assert!(plan.starts.is_empty());
    assert_eq!(plan.pending.len(), 10_000);
    assert_eq!(plan.pending[0], (JobId(1), PendingReason::Resources));
    assert!(plan.pending[1..]
        .iter()
        .all(|&(_, r)| r == PendingReason::Priority));

    // Idle cluster: the first eight start, the ninth waits for resources.
    let idle = reference_cluster();
    let t = Instant::now();
    let plan = schedule(&idle, &queue, 0);
    println!("10000 pending jobs, idle 4-node cluster: {:?}", t.elapsed());
    assert_eq!(plan.starts.len(), 8);
    assert_eq!(plan.pending[0], (JobId(9), PendingReason::Resources));
}

#[test]
fn five_hundred_trivial_jobs_flow_through() {
    let mut queue = trivial_jobs(500);
    let mut view = reference_cluster();
    let mut started = Vec::new();
    let mut passes = 0;
    let t = Instant::now();
    while !queue.is_empty() {
        passes += 1;
        assert!(passes <= 500, "no progress");
        let plan = schedule(&view, &queue, 0);
        assert_eq!(plan.starts.len(), 8.min(queue.len()), "pass {passes}");
        apply(&mut view, &plan);
        started.extend(plan.starts.iter().map(|s| s.job));
        queue.retain(|j| plan.start_of(j.id).is_none());
        // Every running job ends before the next pass.
        for n in &mut view.nodes {
            n.alloc_cpus = 0;
        }
    }
    println!(
        "500 one-CPU jobs on 4x2 CPUs: {passes} passes, {:?} in all",
        t.elapsed()
    );
    assert_eq!(passes, 63);
    // Strict FIFO: jobs start in submission order.
    assert_eq!(started, (1..=500).map(JobId).collect::<Vec<_>>());
}
