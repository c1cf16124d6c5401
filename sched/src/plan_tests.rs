//! One test per scheduling rule of [`crate::plan`].

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason as R;
use slurm_common::time::TimeLimit;

use crate::constraint::Constraint;
use crate::plan::{schedule, Plan};
use crate::request::{Hold, JobRequest, MemReq};
use crate::testkit::{cluster, job};
use crate::view::{ClusterView, OverSubscribe, PartitionState, PartitionView};

fn started(plan: &Plan) -> Vec<(u32, Vec<usize>)> {
    plan.starts
        .iter()
        .map(|s| (s.job.0, s.node_indices().collect()))
        .collect()
}

fn reasons(plan: &Plan) -> Vec<(u32, R)> {
    plan.pending.iter().map(|&(id, r)| (id.0, r)).collect()
}

/// The busy reference cluster of the goldens (squeue_jobs.out): jobs 2-4
/// take one CPU each, job 5 wants 3 nodes x 2 CPUs, job 6 all 4 nodes
/// exclusively, job 7 one CPU, job 8 is held, job 9 has a dependency.
fn golden_queue() -> Vec<JobRequest> {
    let mut q: Vec<JobRequest> = (2..=9).map(job).collect();
    let j5 = &mut q[3];
    j5.min_nodes = 3;
    j5.max_nodes = Some(3);
    j5.ntasks = 3;
    j5.cpus_per_task = 2;
    let j6 = &mut q[4];
    j6.min_nodes = 4;
    j6.max_nodes = Some(4);
    j6.ntasks = 4;
    j6.exclusive = true;
    q[6].hold = Some(Hold::User);
    q[7].blocked_by = Some(R::Dependency);
    q
}

#[test]
fn golden_busy_cluster_in_one_pass() {
    let view = cluster(4, 2, 4000);
    let plan = schedule(&view, &golden_queue(), 0);
    // squeue_jobs.out: 2 and 3 on n1, 4 on n2.
    assert_eq!(
        started(&plan),
        vec![(2, vec![0]), (3, vec![0]), (4, vec![1])]
    );
    assert_eq!(
        reasons(&plan),
        vec![
            (5, R::Resources),
            (6, R::Priority),
            (7, R::Priority),
            (8, R::JobHeldUser),
            (9, R::Dependency),
        ]
    );
}

#[test]
fn golden_busy_cluster_next_pass_keeps_reasons() {
    let mut view = cluster(4, 2, 4000);
    view.nodes[0].alloc_cpus = 2;
    view.nodes[1].alloc_cpus = 1;
    let queue: Vec<JobRequest> = golden_queue().into_iter().skip(3).collect();
    let plan = schedule(&view, &queue, 0);
    assert!(plan.starts.is_empty());
    assert_eq!(plan.reason_of(JobId(5)), Some(R::Resources));
    assert_eq!(plan.reason_of(JobId(6)), Some(R::Priority));
    // Job 7 fits on an idle node but must not pass job 5.
    assert_eq!(plan.reason_of(JobId(7)), Some(R::Priority));
}

#[test]
fn golden_too_many_nodes_waits_with_partition_config() {
    // squeue_too_many_nodes.out: sbatch -N 10 on 4 nodes.
    let view = cluster(4, 2, 4000);
    let mut j = job(11);
    j.min_nodes = 10;
    j.max_nodes = Some(10);
    j.ntasks = 10;
    let plan = schedule(&view, &[j, job(12)], 0);
    assert_eq!(reasons(&plan), vec![(11, R::PartitionConfig)]);
    assert_eq!(started(&plan), vec![(12, vec![0])], "it blocks nobody");
}

#[test]
fn holds() {
    let view = cluster(1, 2, 4000);
    let mut u = job(1);
    u.hold = Some(Hold::User);
    let mut a = job(2);
    a.hold = Some(Hold::Admin);
    let plan = schedule(&view, &[u, a], 0);
    assert_eq!(
        reasons(&plan),
        vec![(1, R::JobHeldUser), (2, R::JobHeldAdmin)]
    );
}

#[test]
fn begin_time() {
    let view = cluster(1, 2, 4000);
    let mut later = job(1);
    later.begin_time = Some(1000);
    let mut now = job(2);
    now.begin_time = Some(500);
    let plan = schedule(&view, &[later, now], 500);
    assert_eq!(reasons(&plan), vec![(1, R::BeginTime)]);
    assert_eq!(started(&plan), vec![(2, vec![0])]);
}

#[test]
fn partition_states() {
    for (state, expect) in [
        (PartitionState::Down, Some(R::PartitionDown)),
        (PartitionState::Inactive, Some(R::PartitionInactive)),
        (PartitionState::Drain, None),
        (PartitionState::Up, None),
    ] {
        let mut view = cluster(1, 2, 4000);
        view.partitions[0].state = state;
        let plan = schedule(&view, &[job(1)], 0);
        assert_eq!(plan.reason_of(JobId(1)), expect, "{state:?}");
        assert_eq!(plan.starts.len(), usize::from(expect.is_none()));
    }
}

#[test]
fn partition_time_limit_and_defaults() {
    let mut view = cluster(1, 2, 4000);
    view.partitions[0].max_time = TimeLimit::Minutes(60);
    view.partitions[0].default_time = Some(TimeLimit::Minutes(10));
    let mut long = job(1);
    long.time_limit = Some(TimeLimit::Minutes(61));
    let mut unlimited = job(2);
    unlimited.time_limit = Some(TimeLimit::Infinite);
    let mut ok = job(3);
    ok.time_limit = Some(TimeLimit::Minutes(60));
    let plain = job(4);
    let plan = schedule(&view, &[long, unlimited, ok, plain], 0);
    assert_eq!(
        reasons(&plan),
        vec![(1, R::PartitionTimeLimit), (2, R::PartitionTimeLimit)]
    );
    let limits: Vec<_> = plan
        .starts
        .iter()
        .map(|s| (s.job.0, s.time_limit))
        .collect();
    assert_eq!(
        limits,
        vec![(3, TimeLimit::Minutes(60)), (4, TimeLimit::Minutes(10))]
    );
}

#[test]
fn no_default_time_means_max_time() {
    let mut view = cluster(1, 2, 4000);
    view.partitions[0].max_time = TimeLimit::Minutes(30);
    let plan = schedule(&view, &[job(1)], 0);
    assert_eq!(plan.starts[0].time_limit, TimeLimit::Minutes(30));
}

#[test]
fn partition_node_limits() {
    let mut view = cluster(4, 2, 4000);
    view.partitions[0].max_nodes = Some(2);
    view.partitions[0].min_nodes = 2;
    let mut wide = job(1);
    wide.min_nodes = 3;
    wide.ntasks = 3;
    let mut narrow = job(2);
    narrow.max_nodes = Some(1);
    let mut fine = job(3);
    fine.ntasks = 2;
    let plan = schedule(&view, &[wide, narrow, fine], 0);
    assert_eq!(
        reasons(&plan),
        vec![(1, R::PartitionNodeLimit), (2, R::PartitionNodeLimit)]
    );
    // MinNodes=2 spreads the two tasks over two nodes.
    assert_eq!(started(&plan), vec![(3, vec![0, 1])]);
}

#[test]
fn required_node_down_or_busy() {
    let mut view = cluster(2, 2, 4000);
    view.nodes[1].usable = false;
    let mut down = job(1);
    down.required_nodes = vec![1];
    let plan = schedule(&view, &[down.clone()], 0);
    assert_eq!(reasons(&plan), vec![(1, R::ReqNodeNotAvail)]);

    assert_eq!(
        plan.description_of(JobId(1)),
        Some("ReqNodeNotAvail, UnavailableNodes:n2")
    );

    // Waiting for the node it names holds back that node only (Slurm):
    // job 2 takes the other one.
    let mut view = cluster(2, 2, 4000);
    view.nodes[1].alloc_cpus = 2;
    let plan = schedule(&view, &[down, job(2)], 0);
    assert_eq!(reasons(&plan), vec![(1, R::Resources)]);
    assert_eq!(plan.description_of(JobId(1)), Some(""));
    assert_eq!(started(&plan), vec![(2, vec![0])]);
}

#[test]
fn not_enough_usable_nodes() {
    let mut view = cluster(2, 2, 4000);
    view.nodes[0].usable = false;
    let mut j = job(1);
    j.min_nodes = 2;
    j.ntasks = 2;
    let plan = schedule(&view, &[j, job(2)], 0);
    // Slurm 22.05: Resources, described as nodes down, drained or
    // reserved, and the partition is blocked behind it.
    assert_eq!(reasons(&plan), vec![(1, R::Resources), (2, R::Priority)]);
    assert_eq!(
        plan.description_of(JobId(1)),
        Some(slurm_common::reason::NODES_DOWN_DRAINED_OR_RESERVED)
    );
    assert_eq!(plan.description_of(JobId(2)), Some(""));
    assert!(started(&plan).is_empty());
}

#[test]
fn constraints() {
    let mut view = cluster(3, 2, 4000);
    view.nodes[1].features = vec!["gpu".into()];
    view.nodes[2].features = vec!["big".into()];
    view.nodes[2].usable = false;
    let with = |id, c: &str| {
        let mut j = job(id);
        j.constraint = Some(Constraint::parse(c).unwrap());
        j
    };
    let plan = schedule(&view, &[with(1, "gpu"), with(2, "big"), with(3, "tiny")], 0);
    assert_eq!(started(&plan), vec![(1, vec![1])]);
    assert_eq!(
        reasons(&plan),
        vec![(2, R::ReqNodeNotAvail), (3, R::BadConstraints)]
    );
}

#[test]
fn priority_then_submit_order() {
    let view = cluster(1, 1, 4000);
    let mut low = job(1);
    low.priority = 10;
    let mut high = job(2);
    high.priority = 20;
    let plan = schedule(&view, &[low.clone(), high], 0);
    assert_eq!(started(&plan), vec![(2, vec![0])]);
    assert_eq!(reasons(&plan), vec![(1, R::Resources)]);

    let mut early = job(5);
    early.submit_time = 1;
    let mut late = job(4);
    late.submit_time = 2;
    let plan = schedule(&view, &[late, early], 0);
    assert_eq!(started(&plan), vec![(5, vec![0])]);
}

fn two_partitions() -> ClusterView {
    // "small" (tier 2) on n1-n2, "all" (tier 1) on n1-n4.
    let mut view = cluster(4, 2, 4000);
    let mut small = PartitionView::new("small", vec![0, 1]);
    small.priority_tier = 2;
    view.partitions.push(small);
    view.partitions[0].name = "all".into();
    view
}

#[test]
fn higher_tier_goes_first_whatever_the_priority() {
    let mut view = two_partitions();
    view.nodes.truncate(2);
    view.partitions[0].nodes = vec![0, 1];
    let mut low_tier = job(1);
    low_tier.priority = 1000;
    low_tier.ntasks = 4;
    let mut high_tier = job(2);
    high_tier.partition = 1;
    high_tier.priority = 1;
    high_tier.ntasks = 2;
    let plan = schedule(&view, &[low_tier, high_tier], 0);
    assert_eq!(started(&plan), vec![(2, vec![0])]);
    assert_eq!(reasons(&plan), vec![(1, R::Resources)]);
}

#[test]
fn waiting_job_reserves_its_partition_nodes_for_others() {
    let mut view = two_partitions();
    view.nodes[0].alloc_cpus = 1;
    // Tier 2: needs both n1 and n2 whole; n1 is half used.
    let mut big = job(1);
    big.partition = 1;
    big.ntasks = 4;
    big.min_nodes = 2;
    // Tier 1: would fit on n1 but must leave n1-n2 to job 1.
    let small = job(2);
    // Tier 1, asks for n2 explicitly: only the reservation stops it.
    let mut pinned = job(3);
    pinned.required_nodes = vec![1];
    let plan = schedule(&view, &[pinned, small, big], 0);
    assert_eq!(plan.reason_of(JobId(1)), Some(R::Resources));
    // Job 2 comes before job 3 (same priority, earlier submit): it is
    // placed outside n1-n2. Job 3 cannot be, and then blocks "all".
    assert_eq!(started(&plan), vec![(2, vec![2])]);
    assert_eq!(plan.reason_of(JobId(3)), Some(R::Priority));
}

#[test]
fn outside_blockers_block_nobody() {
    let view = cluster(1, 2, 4000);
    let mut limited = job(1);
    limited.blocked_by = Some(R::QOSMaxJobsPerUserLimit);
    let plan = schedule(&view, &[limited, job(2)], 0);
    assert_eq!(reasons(&plan), vec![(1, R::QOSMaxJobsPerUserLimit)]);
    assert_eq!(started(&plan), vec![(2, vec![0])]);
}

#[test]
fn exclusive_jobs() {
    let mut view = cluster(2, 2, 4000);
    view.nodes[0].alloc_cpus = 1;
    let mut ex = job(1);
    ex.exclusive = true;
    let plan = schedule(&view, &[ex.clone(), job(2)], 0);
    // Job 1 gets idle n2 whole; job 2 fits next to the running job on n1.
    assert_eq!(started(&plan), vec![(1, vec![1]), (2, vec![0])]);
    assert!(plan.starts[0].exclusive);
    assert_eq!(plan.starts[0].nodes[0].cpus, 2);

    // Nothing after an exclusive start may share its node.
    let view = cluster(1, 4, 4000);
    let plan = schedule(&view, &[ex, job(2)], 0);
    assert_eq!(started(&plan), vec![(1, vec![0])]);
    assert_eq!(reasons(&plan), vec![(2, R::Resources)]);
}

#[test]
fn oversubscribe_exclusive_partition_makes_every_job_exclusive() {
    let mut view = cluster(2, 4, 4000);
    view.partitions[0].oversubscribe = OverSubscribe::Exclusive;
    let plan = schedule(&view, &[job(1), job(2), job(3)], 0);
    assert_eq!(started(&plan), vec![(1, vec![0]), (2, vec![1])]);
    assert!(plan
        .starts
        .iter()
        .all(|s| s.exclusive && s.total_cpus() == 4));
    assert_eq!(reasons(&plan), vec![(3, R::Resources)]);
}

#[test]
fn memory_as_consumable() {
    let mut view = cluster(2, 4, 4000);
    view.config.track_memory = true;
    // No request, no default: each job takes a whole node's memory.
    let plan = schedule(&view, &[job(1), job(2), job(3)], 0);
    assert_eq!(started(&plan), vec![(1, vec![0]), (2, vec![1])]);
    assert_eq!(reasons(&plan), vec![(3, R::Resources)]);
    // With DefMemPerCPU the CPUs are the limit again.
    view.partitions[0].def_mem = Some(MemReq::PerCpu(500));
    let queue: Vec<_> = (1..=9).map(job).collect();
    let plan = schedule(&view, &queue, 0);
    assert_eq!(plan.starts.len(), 8);
    assert!(plan.starts.iter().all(|s| s.nodes[0].mem_mb == 500));
    // A job wanting more than any node has never fits (one submitted held
    // and released: Slurm 22.05 says BadConstraints).
    let mut huge = job(10);
    huge.mem = Some(MemReq::PerNode(5000));
    assert_eq!(
        schedule(&view, &[huge], 0).reason_of(JobId(10)),
        Some(R::BadConstraints)
    );
}

#[test]
fn cluster_wide_default_memory_loses_to_partition_default() {
    let mut view = cluster(1, 4, 4000);
    view.config.track_memory = true;
    view.config.def_mem = Some(MemReq::PerNode(1000));
    let plan = schedule(&view, &[job(1)], 0);
    assert_eq!(plan.starts[0].nodes[0].mem_mb, 1000);
    view.partitions[0].def_mem = Some(MemReq::PerNode(300));
    let plan = schedule(&view, &[job(1)], 0);
    assert_eq!(plan.starts[0].nodes[0].mem_mb, 300);
}

#[test]
fn unusable_and_owned_nodes_get_nothing() {
    let mut view = cluster(3, 2, 4000);
    view.nodes[0].usable = false;
    view.nodes[1].exclusive_owner = Some(JobId(99));
    let plan = schedule(&view, &[job(1), job(2), job(3)], 0);
    assert_eq!(started(&plan), vec![(1, vec![2]), (2, vec![2])]);
    assert_eq!(reasons(&plan), vec![(3, R::Resources)]);
}

#[test]
fn unknown_partition_index() {
    let view = cluster(1, 2, 4000);
    let mut j = job(1);
    j.partition = 7;
    assert_eq!(
        schedule(&view, &[j], 0).reason_of(JobId(1)),
        Some(R::PartitionConfig)
    );
}

#[test]
fn start_env_strings() {
    let view = cluster(4, 2, 4000);
    let mut j = job(20);
    j.min_nodes = 2;
    j.max_nodes = Some(2);
    j.ntasks = 4;
    let mut k = job(21);
    k.min_nodes = 2;
    k.max_nodes = Some(2);
    k.ntasks = 3;
    let plan = schedule(&view, &[j, k], 0);
    let s = plan.start_of(JobId(20)).unwrap();
    assert_eq!(
        (s.cpus_per_node(), s.tasks_per_node()),
        ("2(x2)".into(), "2(x2)".into())
    );
    let s = plan.start_of(JobId(21)).unwrap();
    assert_eq!(
        (s.cpus_per_node(), s.tasks_per_node()),
        ("2,1".into(), "2,1".into())
    );
}

#[test]
fn empty_inputs() {
    assert_eq!(schedule(&ClusterView::default(), &[], 0), Plan::default());
    let plan = schedule(&ClusterView::default(), &[job(1)], 0);
    assert_eq!(reasons(&plan), vec![(1, R::PartitionConfig)]);
    let mut view = cluster(1, 2, 4000);
    view.partitions[0].nodes.clear();
    assert_eq!(
        schedule(&view, &[job(1)], 0).reason_of(JobId(1)),
        Some(R::PartitionConfig)
    );
}

#[test]
fn absurd_requests_do_not_panic() {
    let view = cluster(2, 2, 4000);
    let mut j = job(1);
    j.min_nodes = u32::MAX;
    j.ntasks = u32::MAX;
    j.cpus_per_task = u32::MAX;
    j.ntasks_per_node = Some(u32::MAX);
    j.mem = Some(MemReq::PerCpu(u64::MAX));
    j.required_nodes = vec![usize::MAX, 0];
    j.excluded_nodes = vec![usize::MAX];
    let mut k = job(2);
    k.max_nodes = Some(0);
    k.cpus_per_task = 0;
    k.ntasks = 0;
    k.overcommit = true;
    k.mem = Some(MemReq::PerNode(u64::MAX));
    let plan = schedule(&view, &[j, k], i64::MIN);
    assert_eq!(plan.pending.len() + plan.starts.len(), 2);
}

fn with_license(total: u32, used: u32) -> ClusterView {
    let mut view = cluster(2, 2, 4000);
    view.licenses = vec![crate::view::LicenseView {
        name: "lic".into(),
        total,
        used,
    }];
    view
}

fn wanting(id: u32, count: u32) -> JobRequest {
    let mut j = job(id);
    j.licenses = vec![crate::request::LicenseNeed { index: 0, count }];
    j
}

#[test]
fn licenses_are_counted_within_a_pass_and_block_nobody() {
    // lic:1: the first job takes it, the second waits with Licenses, and
    // the third (no license) starts although it comes later.
    let view = with_license(1, 0);
    let plan = schedule(&view, &[wanting(1, 1), wanting(2, 1), job(3)], 0);
    assert_eq!(started(&plan), vec![(1, vec![0]), (3, vec![0])]);
    assert_eq!(reasons(&plan), vec![(2, R::Licenses)]);
}

#[test]
fn licenses_held_by_running_jobs_are_not_free() {
    let plan = schedule(&with_license(2, 2), &[wanting(1, 1)], 0);
    assert_eq!(reasons(&plan), vec![(1, R::Licenses)]);
    let plan = schedule(&with_license(3, 1), &[wanting(1, 2)], 0);
    assert_eq!(started(&plan), vec![(1, vec![0])]);
    // A license the view does not have is never free.
    let mut j = job(1);
    j.licenses = vec![crate::request::LicenseNeed { index: 7, count: 1 }];
    let plan = schedule(&with_license(3, 0), &[j], 0);
    assert_eq!(reasons(&plan), vec![(1, R::Licenses)]);
}

#[test]
fn a_job_behind_in_its_partition_waits_with_priority_before_licenses() {
    let mut view = with_license(0, 0);
    view.nodes[0].alloc_cpus = 1;
    let mut big = job(1);
    big.ntasks = 4;
    let plan = schedule(&view, &[big, wanting(2, 1)], 0);
    assert_eq!(reasons(&plan), vec![(1, R::Resources), (2, R::Priority)]);
}

#[test]
fn tmp_disk_keeps_jobs_off_small_nodes() {
    let mut view = cluster(2, 2, 4000);
    view.nodes[0].tmp_disk_mb = 10;
    view.nodes[1].tmp_disk_mb = 100;
    let mut j = job(1);
    j.tmp_disk_mb = 50;
    let plan = schedule(&view, &[j.clone()], 0);
    assert_eq!(started(&plan), vec![(1, vec![1])]);
    j.tmp_disk_mb = 101;
    let plan = schedule(&view, &[j], 0);
    assert_eq!(reasons(&plan), vec![(1, R::BadConstraints)]);
}

#[test]
fn a_deadline_shortens_the_limit_of_a_start() {
    let mut view = cluster(1, 2, 4000);
    view.partitions[0].default_time = Some(TimeLimit::Minutes(120));
    let mut j = job(1);
    // Starts at 1000 with a deadline 3599 s later: 59 whole minutes.
    j.deadline = Some(1000 + 3599);
    let plan = schedule(&view, &[j.clone()], 1000);
    assert_eq!(plan.starts[0].time_limit, TimeLimit::Minutes(59));
    // A shorter limit of its own stays.
    j.time_limit = Some(TimeLimit::Minutes(10));
    let plan = schedule(&view, &[j.clone()], 1000);
    assert_eq!(plan.starts[0].time_limit, TimeLimit::Minutes(10));
    // No limit at all becomes the time left.
    view.partitions[0].default_time = None;
    j.time_limit = None;
    j.deadline = Some(1000 + 600);
    let plan = schedule(&view, &[j.clone()], 1000);
    assert_eq!(plan.starts[0].time_limit, TimeLimit::Minutes(10));
    // A deadline in the past (or absurdly far) does not panic.
    for d in [i64::MIN, 0, i64::MAX] {
        j.deadline = Some(d);
        let plan = schedule(&view, &[j.clone()], 1000);
        assert_eq!(plan.starts.len(), 1);
    }
}

fn partitions_of(plan: &Plan) -> Vec<(u32, usize)> {
    plan.starts.iter().map(|s| (s.job.0, s.partition)).collect()
}

#[test]
fn job_in_two_partitions_starts_in_the_one_with_room() {
    // "all" (index 0) on n1-n4, "small" (index 1, tier 2) on n1-n2; n1-n2
    // are full.
    let mut view = two_partitions();
    for n in &mut view.nodes[..2] {
        n.alloc_cpus = 2;
    }
    let mut j = job(1);
    j.partition = 1;
    j.other_partitions = vec![0];
    let plan = schedule(&view, &[j], 0);
    assert_eq!(partitions_of(&plan), vec![(1, 0)]);
    assert_eq!(started(&plan), vec![(1, vec![2])]);
    assert!(plan.pending.is_empty());
}

#[test]
fn job_in_two_partitions_tries_the_higher_tier_first() {
    // Both have room: tier 2 ("small", index 1) is tried first though it is
    // listed second.
    let view = two_partitions();
    let mut j = job(1);
    j.other_partitions = vec![1];
    let plan = schedule(&view, &[j], 0);
    assert_eq!(partitions_of(&plan), vec![(1, 1)]);
}

#[test]
fn job_in_two_partitions_is_not_held_back_by_its_own_wait() {
    // "a" = n1-n2 with n1 full, "b" = n2-n3. The job wants two whole
    // nodes: in "a" it waits for n1 and keeps n1-n2 back, but in "b" it may
    // still take n2 and n3.
    let mut view = cluster(3, 2, 4000);
    view.partitions[0] = PartitionView::new("a", vec![0, 1]);
    view.partitions.push(PartitionView::new("b", vec![1, 2]));
    view.nodes[0].alloc_cpus = 2;
    let mut j = job(1);
    j.min_nodes = 2;
    j.ntasks = 4;
    j.other_partitions = vec![1];
    // A later job of "b" alone must not slip in ahead of it.
    let mut other = job(2);
    other.partition = 1;
    other.submit_time = 5;
    let plan = schedule(&view, &[other, j], 0);
    assert_eq!(partitions_of(&plan), vec![(1, 1)]);
    assert_eq!(started(&plan), vec![(1, vec![1, 2])]);
    assert_eq!(reasons(&plan), vec![(2, R::Resources)]);
}

#[test]
fn job_in_two_partitions_keeps_the_reason_about_resources() {
    // "a" is down, "b" is full: the job waits for resources, whichever
    // partition is tried last.
    let mut view = cluster(2, 2, 4000);
    view.partitions[0] = PartitionView::new("a", vec![0]);
    view.partitions[0].state = PartitionState::Down;
    view.partitions.push(PartitionView::new("b", vec![1]));
    view.nodes[1].alloc_cpus = 2;
    for others in [vec![1], vec![0]] {
        let mut j = job(1);
        j.partition = if others == [1] { 0 } else { 1 };
        j.other_partitions = others;
        let plan = schedule(&view, &[j], 0);
        assert!(plan.starts.is_empty());
        assert_eq!(reasons(&plan), vec![(1, R::Resources)]);
    }
    // Held: one reason, given once.
    let mut held = job(1);
    held.other_partitions = vec![1];
    held.hold = Some(Hold::User);
    let plan = schedule(&view, &[held], 0);
    assert_eq!(reasons(&plan), vec![(1, R::JobHeldUser)]);
}

#[test]
fn job_in_two_partitions_starts_once() {
    let mut view = cluster(2, 2, 4000);
    view.partitions.push(PartitionView::new("b", vec![0, 1]));
    let mut j = job(1);
    j.other_partitions = vec![1];
    let plan = schedule(&view, &[j], 0);
    assert_eq!(plan.starts.len(), 1);
    assert_eq!(plan.starts[0].partition, 0);
    assert_eq!(view.nodes[0].alloc_cpus, 0);
}

/// The descriptions given, by job.
fn descriptions(plan: &Plan) -> Vec<(u32, String)> {
    plan.descriptions
        .iter()
        .map(|(id, d)| (id.0, d.clone()))
        .collect()
}

const DOWN_TEXT: &str = slurm_common::reason::NODES_DOWN_DRAINED_OR_RESERVED;

#[test]
fn drained_node_first_job_resources_with_text_then_submit_time_reasons() {
    // Slurm 22.05, one drained node, three jobs submitted: the first gets
    // Resources described as nodes down or drained; the others, never
    // looked at before, get what submission gives them.
    let mut view = cluster(1, 2, 4000);
    view.nodes[0].usable = false;
    let plan = schedule(&view, &[job(1), job(2), job(3)], 0);
    assert_eq!(
        reasons(&plan),
        vec![
            (1, R::Resources),
            (2, R::ReqNodeNotAvail),
            (3, R::ReqNodeNotAvail)
        ]
    );
    assert_eq!(
        descriptions(&plan),
        vec![
            (1, DOWN_TEXT.to_string()),
            (2, "ReqNodeNotAvail, UnavailableNodes:n1".to_string()),
            (3, "ReqNodeNotAvail, UnavailableNodes:n1".to_string()),
        ]
    );
}

#[test]
fn behind_a_blocked_partition_some_reasons_are_kept() {
    // Slurm turns only no reason and Resources into Priority; a job that
    // waits for down nodes or licenses keeps that, and its text.
    let mut view = cluster(1, 2, 4000);
    view.nodes[0].alloc_cpus = 2;
    let prior = |id, r| {
        let mut j = job(id);
        j.prior_reason = Some(r);
        j
    };
    let queue = [
        prior(1, R::Resources),
        prior(2, R::ReqNodeNotAvail),
        prior(3, R::Resources),
        prior(4, R::None),
        prior(5, R::Licenses),
        prior(6, R::BeginTime),
    ];
    let plan = schedule(&view, &queue, 0);
    assert_eq!(
        reasons(&plan),
        vec![
            (1, R::Resources),
            (2, R::ReqNodeNotAvail),
            (3, R::Priority),
            (4, R::Priority),
            (5, R::Licenses),
            (6, R::Priority),
        ]
    );
    // Kept reasons keep their text: no description for them.
    assert_eq!(plan.description_of(JobId(2)), None);
    assert_eq!(plan.description_of(JobId(5)), None);
    assert_eq!(plan.description_of(JobId(3)), Some(""));
}

#[test]
fn a_job_waiting_for_the_down_node_it_names_keeps_its_text_and_blocks_nobody() {
    let mut view = cluster(2, 2, 4000);
    view.nodes[1].usable = false;
    let mut named = job(1);
    named.required_nodes = vec![1];
    named.prior_reason = Some(R::ReqNodeNotAvail);
    let plan = schedule(&view, &[named, job(2)], 0);
    assert_eq!(reasons(&plan), vec![(1, R::ReqNodeNotAvail)]);
    assert_eq!(plan.description_of(JobId(1)), None);
    assert_eq!(started(&plan), vec![(2, vec![0])]);
}

#[test]
fn unavailable_nodes_are_narrowed_to_the_named_ones() {
    let mut view = cluster(4, 2, 4000);
    for i in [0, 1, 3] {
        view.nodes[i].usable = false;
    }
    let mut named = job(1);
    named.required_nodes = vec![3];
    let mut wide = job(2);
    wide.min_nodes = 2;
    wide.ntasks = 2;
    wide.excluded_nodes = vec![2];
    let plan = schedule(&view, &[named, wide], 0);
    assert_eq!(
        plan.description_of(JobId(1)),
        Some("ReqNodeNotAvail, UnavailableNodes:n4")
    );
    // Only one node is up: too few for two, in Slurm's words.
    assert_eq!(plan.reason_of(JobId(2)), Some(R::Resources));
    assert_eq!(plan.description_of(JobId(2)), Some(DOWN_TEXT));
}

#[test]
fn a_busy_named_node_leaves_too_few_nodes_for_the_next_job() {
    // Slurm 22.05, one busy node: `-w vm` waits with Resources and keeps
    // vm back; the next job finds no node left, and says so.
    let mut view = cluster(1, 2, 4000);
    view.nodes[0].alloc_cpus = 2;
    let mut named = job(1);
    named.required_nodes = vec![0];
    let plan = schedule(&view, &[named, job(2), job(3)], 0);
    assert_eq!(
        reasons(&plan),
        vec![(1, R::Resources), (2, R::Resources), (3, R::Priority)]
    );
    assert_eq!(
        descriptions(&plan),
        vec![
            (1, String::new()),
            (2, DOWN_TEXT.to_string()),
            (3, String::new())
        ]
    );
}

/// MaxMemPerNode: a job needing more memory per node waits with
/// MaxMemPerLimit; all of a node's memory is more when the node has more.
/// MaxMemPerCPU is not a gate (Slurm gives the job more CPUs instead).
#[test]
fn memory_over_max_mem_per_node_waits() {
    let mut view = cluster(1, 2, 4000);
    view.partitions[0].max_mem = Some(MemReq::PerNode(100));
    let with = |id: u32, mem: Option<MemReq>, cpt: u32| {
        let mut j = job(id);
        j.mem = mem;
        j.cpus_per_task = cpt;
        j
    };
    let plan = schedule(&view, &[with(1, Some(MemReq::PerNode(200)), 1)], 0);
    assert_eq!(reasons(&plan), vec![(1, R::MaxMemPerLimit)]);
    let plan = schedule(&view, &[with(2, Some(MemReq::PerCpu(60)), 2)], 0);
    assert_eq!(reasons(&plan), vec![(2, R::MaxMemPerLimit)]);
    let plan = schedule(&view, &[with(3, Some(MemReq::PerNode(50)), 1)], 0);
    assert_eq!(started(&plan).len(), 1);
    view.config.track_memory = true;
    let plan = schedule(&view, &[with(4, Some(MemReq::PerNode(0)), 1)], 0);
    assert_eq!(reasons(&plan), vec![(4, R::MaxMemPerLimit)]);
    view.partitions[0].max_mem = Some(MemReq::PerNode(4000));
    let plan = schedule(&view, &[with(5, None, 1)], 0);
    assert_eq!(started(&plan).len(), 1);
    view.partitions[0].max_mem = Some(MemReq::PerCpu(10));
    let plan = schedule(&view, &[with(6, Some(MemReq::PerCpu(200)), 1)], 0);
    assert_eq!(started(&plan).len(), 1);
}

/// AllowAccounts: with no association to say what a job's account is, no
/// job may use the partition (Slurm 22.05 without accounting). The text
/// shows for a held job too; `--begin`, the partition's state and its
/// limits come first.
#[test]
fn allow_accounts_keeps_every_job_out() {
    const TEXT: &str =
        "Job's account not known, so it can't use this partition (debug allows a1,b2)";
    let mut view = cluster(1, 2, 4000);
    view.partitions[0].allow_accounts = Some(vec!["a1".into(), "b2".into()]);
    let mut held = job(2);
    held.hold = Some(Hold::User);
    let mut later = job(3);
    later.begin_time = Some(100);
    let mut wide = job(4);
    wide.min_nodes = 2;
    wide.ntasks = 2;
    let plan = schedule(&view, &[job(1), held, later, wide], 0);
    assert!(plan.starts.is_empty());
    assert_eq!(
        reasons(&plan),
        vec![
            (1, R::AccountNotAllowed),
            (2, R::JobHeldUser),
            (3, R::BeginTime),
            (4, R::PartitionConfig)
        ]
    );
    assert_eq!(plan.description_of(JobId(1)), Some(TEXT));
    assert_eq!(plan.description_of(JobId(2)), Some(TEXT));
    assert_eq!(plan.description_of(JobId(3)), Some(""));
    assert_eq!(plan.description_of(JobId(4)), Some(""));
    view.partitions[0].state = PartitionState::Down;
    let plan = schedule(&view, &[job(5)], 0);
    assert_eq!(reasons(&plan), vec![(5, R::PartitionDown)]);
    view.partitions[0].allow_accounts = None;
    view.partitions[0].state = PartitionState::Up;
    let plan = schedule(&view, &[job(6)], 0);
    assert_eq!(started(&plan).len(), 1);
}

/// MaxCPUsPerNode: the partition's jobs together hold no more of a node
/// than the limit, counting what runs and what this pass starts; more per
/// node than the limit is PartitionConfig (Slurm 22.05).
#[test]
fn max_cpus_per_node_caps_what_the_partitions_jobs_hold() {
    let mut view = cluster(2, 4, 4000);
    view.partitions[0].max_cpus_per_node = Some(2);
    let mut two = job(1);
    two.ntasks = 3;
    let plan = schedule(&view, &[two.clone(), job(2), job(3)], 0);
    // Three tasks: two on n1, one on n2; then one more CPU on n2.
    assert_eq!(started(&plan), vec![(1, vec![0, 1]), (2, vec![1])]);
    assert_eq!(plan.starts[0].cpus_per_node(), "2,1");
    assert_eq!(reasons(&plan), vec![(3, R::Resources)]);
    // What runs counts: n1 holds 2 of the partition's CPUs already.
    view.partitions[0].used_cpus = vec![2, 0];
    view.nodes[0].alloc_cpus = 2;
    let plan = schedule(&view, &[job(4)], 0);
    assert_eq!(started(&plan), vec![(4, vec![1])]);
    let mut wide = job(5);
    wide.cpus_per_task = 3;
    let mut excl = job(6);
    excl.exclusive = true;
    let plan = schedule(&view, &[wide, excl], 0);
    assert!(plan.starts.is_empty());
    assert_eq!(plan.reason_of(JobId(5)), Some(R::PartitionConfig));
    // A whole node is never left to the partition (submitted held, as
    // Slurm refuses it otherwise): it can never start.
    assert_eq!(plan.reason_of(JobId(6)), Some(R::BadConstraints));
}

/// `--ntasks-per-node`: every node used gets that many tasks' CPUs (never
/// more than the task count), as Slurm 22.05 lays out `-n3
/// --ntasks-per-node=2` on nodes of 2 CPUs: two nodes of 2, not 2 and 1.
#[test]
fn tasks_per_node_fill_every_node_used() {
    let view = cluster(4, 2, 4000);
    let mut j = job(1);
    j.ntasks = 3;
    j.ntasks_given = true;
    j.ntasks_per_node = Some(2);
    let plan = schedule(&view, &[j.clone()], 0);
    assert_eq!(started(&plan), vec![(1, vec![0, 1])]);
    assert_eq!(plan.starts[0].tasks_per_node(), "2(x2)");
    j.ntasks = 1;
    let plan = schedule(&view, &[j], 0);
    assert_eq!(started(&plan), vec![(1, vec![0])]);
    assert_eq!(plan.starts[0].tasks_per_node(), "1");
}

/// A node range takes as many free nodes as it may, as Slurm 22.05 does
/// (`-N1-2` on two idle nodes runs on both): up to its maximum, and no more
/// nodes than tasks when the user gave a task count or `--spread-job`;
/// without a range the tasks are packed.
#[test]
fn a_node_range_takes_as_many_nodes_as_it_may() {
    let view = cluster(4, 2, 4000);
    let mut packed = job(1);
    packed.ntasks = 3;
    packed.ntasks_given = true;
    let plan = schedule(&view, &[packed.clone()], 0);
    assert_eq!(started(&plan), vec![(1, vec![0, 1])]);
    let mut ranged = packed.clone();
    ranged.max_nodes = Some(3);
    let plan = schedule(&view, &[ranged.clone()], 0);
    assert_eq!(started(&plan), vec![(1, vec![0, 1, 2])]);
    assert_eq!(plan.starts[0].tasks_per_node(), "1(x3)");
    // No more nodes than tasks given, whatever the maximum.
    ranged.max_nodes = Some(4);
    ranged.ntasks = 2;
    let plan = schedule(&view, &[ranged.clone()], 0);
    assert_eq!(started(&plan), vec![(1, vec![0, 1])]);
    let mut spread = ranged.clone();
    spread.ntasks_given = false;
    spread.spread = true;
    let plan = schedule(&view, &[spread], 0);
    assert_eq!(started(&plan), vec![(1, vec![0, 1])]);
    // Without a task count: up to the maximum, a task on each.
    let mut bare = job(2);
    bare.max_nodes = Some(3);
    let plan = schedule(&view, &[bare], 0);
    assert_eq!(started(&plan), vec![(2, vec![0, 1, 2])]);
    assert_eq!(plan.starts[0].tasks_per_node(), "1(x3)");
}

/// `--exclusive=user`: the job's nodes hold no other user's jobs, either
/// way round, in the same pass as across passes; `ExclusiveUser=YES`
/// makes every job of the partition so (Slurm 22.05, one 2-CPU node).
#[test]
fn exclusive_user_keeps_other_users_off_the_nodes() {
    use crate::view::NodeUsers;
    let view = cluster(1, 2, 4000);
    let as_user = |id: u32, uid: u32, exclusive_user: bool| {
        let mut j = job(id);
        j.uid = uid;
        j.exclusive_user = exclusive_user;
        j
    };
    // A's job is exclusive: B's waits, A's second one joins it.
    let plan = schedule(
        &view,
        &[
            as_user(1, 1000, true),
            as_user(2, 2000, false),
            as_user(3, 1000, false),
        ],
        0,
    );
    assert_eq!(started(&plan), vec![(1, vec![0])]);
    assert_eq!(reasons(&plan), vec![(2, R::Resources), (3, R::Priority)]);
    // B's plain job runs there already: A's exclusive one waits.
    let mut busy = view.clone();
    busy.nodes[0].alloc_cpus = 1;
    busy.nodes[0].users = NodeUsers::One(2000);
    let plan = schedule(&busy, &[as_user(4, 1000, true)], 0);
    assert_eq!(reasons(&plan), vec![(4, R::Resources)]);
    let plan = schedule(&busy, &[as_user(5, 2000, true)], 0);
    assert_eq!(started(&plan), vec![(5, vec![0])]);
    // Held by A's exclusive job: B's waits.
    busy.nodes[0].users = NodeUsers::One(1000);
    busy.nodes[0].user_exclusive = Some(1000);
    let plan = schedule(&busy, &[as_user(6, 2000, false)], 0);
    assert_eq!(reasons(&plan), vec![(6, R::Resources)]);
    // ExclusiveUser=YES: two users' plain jobs do not share the node.
    let mut part_excl = view.clone();
    part_excl.partitions[0].exclusive_user = true;
    let plan = schedule(
        &part_excl,
        &[as_user(7, 1000, false), as_user(8, 2000, false)],
        0,
    );
    assert_eq!(started(&plan), vec![(7, vec![0])]);
    assert_eq!(reasons(&plan), vec![(8, R::Resources)]);
}

/// LLN: each job goes to the node with the most idle CPUs (of the lowest
/// weight), counting the starts of the same pass; without it, to the
/// first node with room.
#[test]
fn lln_places_jobs_on_the_least_loaded_nodes() {
    let mut view = cluster(3, 4, 4000);
    view.nodes[0].alloc_cpus = 1;
    let plan = schedule(&view, &[job(1), job(2)], 0);
    assert_eq!(started(&plan), vec![(1, vec![0]), (2, vec![0])]);
    view.partitions[0].lln = true;
    let plan = schedule(&view, &[job(1), job(2), job(3)], 0);
    assert_eq!(
        started(&plan),
        vec![(1, vec![1]), (2, vec![2]), (3, vec![0])]
    );
    // Weight still comes first.
    view.nodes[1].weight = 5;
    view.nodes[2].weight = 5;
    let plan = schedule(&view, &[job(4)], 0);
    assert_eq!(started(&plan), vec![(4, vec![0])]);
}

#[test]
fn more_nodes_than_the_partition_has_is_partition_config_then_node_limit() {
    // Slurm 22.05: PartitionConfig when submitted, PartitionNodeLimit from
    // the first pass on.
    let view = cluster(1, 2, 4000);
    let mut wide = job(1);
    wide.min_nodes = 2;
    wide.ntasks = 2;
    let plan = schedule(&view, std::slice::from_ref(&wide), 0);
    assert_eq!(reasons(&plan), vec![(1, R::PartitionConfig)]);
    wide.prior_reason = Some(R::PartitionConfig);
    let plan = schedule(&view, &[wide], 0);
    assert_eq!(reasons(&plan), vec![(1, R::PartitionNodeLimit)]);
}

#[test]
fn holds_keep_their_description() {
    let view = cluster(1, 2, 4000);
    let mut held = job(1);
    held.hold = Some(Hold::Admin);
    let plan = schedule(&view, &[held], 0);
    assert_eq!(reasons(&plan), vec![(1, R::JobHeldAdmin)]);
    assert_eq!(plan.description_of(JobId(1)), None);
}

#[test]
fn a_new_job_naming_a_drained_node_waits_for_it_and_blocks_nobody() {
    // Slurm 22.05, one drained node: `-w vm` shows `ReqNodeNotAvail,
    // UnavailableNodes:vm`; the plain job after it the nodes-down text.
    let mut view = cluster(1, 2, 4000);
    view.nodes[0].usable = false;
    let mut named = job(1);
    named.required_nodes = vec![0];
    let plan = schedule(&view, &[named, job(2)], 0);
    assert_eq!(
        reasons(&plan),
        vec![(1, R::ReqNodeNotAvail), (2, R::Resources)]
    );
    assert_eq!(
        descriptions(&plan),
        vec![
            (1, "ReqNodeNotAvail, UnavailableNodes:n1".to_string()),
            (2, DOWN_TEXT.to_string())
        ]
    );
}

/// Slurm 22.05: `-c 3` on 2-CPU nodes, queued behind a job that waits for
/// resources, waits with PartitionConfig, not Priority, at submission and
/// after.
#[test]
fn a_job_that_never_fits_behind_a_blocked_partition_says_partition_config() {
    let v = cluster(1, 2, 4000);
    let mut first = job(1);
    first.cpus_per_task = 2;
    first.priority = 30;
    let mut waiting = job(2);
    waiting.cpus_per_task = 2;
    waiting.priority = 20;
    let mut big = job(3);
    big.cpus_per_task = 3;
    big.priority = 10;
    let plan = schedule(&v, &[first, waiting.clone(), big.clone()], 0);
    assert_eq!(started(&plan), vec![(1, vec![0])]);
    assert_eq!(
        reasons(&plan),
        vec![(2, R::Resources), (3, R::PartitionConfig)]
    );
    // Kept on the next passes, with the node still busy.
    let mut v = v;
    v.nodes[0].alloc_cpus = 2;
    waiting.prior_reason = Some(R::Resources);
    big.prior_reason = Some(R::PartitionConfig);
    let plan = schedule(&v, &[waiting, big], 0);
    assert_eq!(
        reasons(&plan),
        vec![(2, R::Resources), (3, R::PartitionConfig)]
    );
}

/// A job past its deadline is not started even on an idle node: it gets
/// `DeadLine` for the controller to end; one its partition can never run
/// keeps PartitionConfig, one held keeps its hold, as in Slurm 22.05.
#[test]
fn a_job_that_missed_its_deadline_is_not_started() {
    let v = cluster(1, 2, 4000);
    let mut missed = job(1);
    missed.deadline_missed = true;
    let mut big = job(2);
    big.deadline_missed = true;
    big.cpus_per_task = 3;
    let mut held = job(3);
    held.deadline_missed = true;
    held.hold = Some(Hold::User);
    let plan = schedule(&v, &[missed, big, held, job(4)], 0);
    assert_eq!(started(&plan), vec![(4, vec![0])]);
    assert_eq!(
        reasons(&plan),
        vec![
            (1, R::DeadLine),
            (2, R::PartitionConfig),
            (3, R::JobHeldUser)
        ]
    );
}
