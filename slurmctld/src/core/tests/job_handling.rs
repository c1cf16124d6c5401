//! Job handling checked against Slurm 22.05's answers: jobs asking for more
//! CPUs than a node has, holds of running and finished jobs, the reason a
//! cancelled job keeps, EligibleTime of held jobs, signals to pending jobs,
//! the exit code of a timeout, and node counts of running jobs.

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{filter, ok_results, replay_encoded, script, Env, ALICE, CONF};
use crate::core::{Action, Caller, Command, Controller, Event, Reply, SignalRequest};

fn cpus(tasks: Option<u32>, per_task: Option<u32>, per_node: Option<u32>) -> v1::JobDescription {
    v1::JobDescription {
        ntasks: tasks,
        cpus_per_task: per_task,
        ntasks_per_node: per_node,
        ..script()
    }
}

fn hold(env: &mut Env, caller: Caller, id: u32, user_hold: bool) -> Vec<(u32, i32)> {
    ok_results(&env.run(Command::Hold {
        caller,
        filter: filter(&[id]),
        user_hold,
    }))
}

fn release(env: &mut Env, caller: Caller, id: u32) -> Vec<(u32, i32)> {
    ok_results(&env.run(Command::Release {
        caller,
        filter: filter(&[id]),
    }))
}

fn signal(env: &mut Env, id: u32, sig: u32, batch_only: bool) -> Vec<(u32, i32)> {
    ok_results(&env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[id]),
        signal: Some(SignalRequest::new(sig, batch_only, false)),
    }))
}

/// `sbatch -n 9` and `-c 2 -n 5` where the partition's 4 nodes have 2
/// CPUs each: more CPUs than it has, which Slurm (EnforcePartLimits=NO)
/// queues with Reason PartitionConfig. `-c 3` and `-n 3
/// --ntasks-per-node=3` fit the partition's CPUs but no node: refused with
/// the CPU line, before any memory check; more memory than a node has is
/// refused with the memory line.
#[test]
fn more_cpus_than_the_nodes_have_waits_with_partition_config() {
    let mut env = Env::new();
    env.register_all();
    for d in [cpus(Some(9), None, None), cpus(Some(5), Some(2), None)] {
        let id = env.submit(d);
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Pending, "job {id}");
        assert_eq!(job.reason, PendingReason::PartitionConfig, "job {id}");
    }
    for d in [
        cpus(None, Some(3), None),
        cpus(Some(3), None, Some(3)),
        v1::JobDescription {
            memory: Some(v1::job_description::Memory::MemPerNodeMb(5000)),
            ..cpus(None, Some(3), None)
        },
    ] {
        assert_eq!(
            env.submit_as(ALICE, d),
            Reply::error(
                ErrorCode::RequestedNodeConfigUnavailable,
                "CPU count per node can not be satisfied"
            )
        );
    }
    let mut d = script();
    d.memory = Some(v1::job_description::Memory::MemPerNodeMb(5000));
    assert_eq!(
        env.submit_as(ALICE, d),
        Reply::error(
            ErrorCode::RequestedNodeConfigUnavailable,
            "Memory specification can not be satisfied"
        )
    );
}

/// EnforcePartLimits=ALL (or ANY): more CPUs than the partition has is
/// refused with "More processors requested than permitted", before any
/// memory check.
#[test]
fn more_cpus_than_the_nodes_have_is_refused_when_limits_are_enforced() {
    for mode in ["ALL", "ANY"] {
        let mut env = Env::with_conf(&format!("{CONF}EnforcePartLimits={mode}\n"));
        env.register_all();
        for d in [
            cpus(Some(9), None, None),
            v1::JobDescription {
                memory: Some(v1::job_description::Memory::MemPerNodeMb(5000)),
                ..cpus(Some(5), Some(2), None)
            },
        ] {
            assert_eq!(
                env.submit_as(ALICE, d),
                Reply::error(ErrorCode::TooManyRequestedCpus, ""),
                "{mode}"
            );
        }
        assert_eq!(
            ErrorCode::TooManyRequestedCpus.message(),
            "More processors requested than permitted"
        );
    }
}

/// `scontrol hold|uhold` of a running job succeed: it keeps running with
/// priority 0 and the hold as its Reason, EligibleTime Unknown;
/// `release` takes the hold away again.
#[test]
fn a_running_job_can_be_held_and_released() {
    let (mut env, id) = Env::running_job();
    assert_ne!(env.job(id).eligible_time, 0);
    assert_eq!(hold(&mut env, Caller::ROOT, id, false), vec![(id, 0)]);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Running);
    assert_eq!(job.reason, PendingReason::JobHeldAdmin);
    assert_eq!(job.priority(), 0);
    assert_eq!(job.eligible_time, 0);
    assert_eq!(release(&mut env, Caller::ROOT, id), vec![(id, 0)]);
    let job = env.job(id);
    assert_eq!(job.reason, PendingReason::None);
    assert_ne!(job.priority(), 0);
    // Still Unknown while it runs, as Slurm shows it.
    assert_eq!(job.eligible_time, 0);
    assert_eq!(hold(&mut env, ALICE, id, true), vec![(id, 0)]);
    assert_eq!(env.job(id).reason, PendingReason::JobHeldUser);
    assert_eq!(release(&mut env, ALICE, id), vec![(id, 0)]);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert!(env.take_actions().is_empty());
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(
        crate::core::snapshot::tests::fingerprint(&replayed),
        crate::core::snapshot::tests::fingerprint(&env.ctl)
    );
}

/// A held job requeued stays held.
#[test]
fn a_running_job_held_and_requeued_waits_held() {
    let (mut env, id) = Env::running_job();
    assert_eq!(hold(&mut env, ALICE, id, true), vec![(id, 0)]);
    let r = env.run(Command::Requeue {
        caller: ALICE,
        filter: filter(&[id]),
        hold: false,
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    env.epilogs(id);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.reason, PendingReason::JobHeldUser);
}

/// hold, uhold and release of a finished job: "Job has already finished"
/// (ESLURM_JOB_FINISHED).
#[test]
fn holding_a_finished_job_says_it_has_finished() {
    let (mut env, id) = Env::running_job();
    env.finish(id, 0, 0);
    let finished = ErrorCode::JobFinished.number();
    assert_eq!(finished, 2084);
    assert_eq!(ErrorCode::JobFinished.message(), "Job has already finished");
    assert_eq!(
        hold(&mut env, Caller::ROOT, id, false),
        vec![(id, finished)]
    );
    assert_eq!(hold(&mut env, ALICE, id, true), vec![(id, finished)]);
    assert_eq!(release(&mut env, ALICE, id), vec![(id, finished)]);
    // A pending job cancelled is finished too.
    let p = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[p]),
        signal: None,
    });
    assert_eq!(release(&mut env, ALICE, p), vec![(p, finished)]);
}

/// A job cancelled while it waits keeps the reason it waited for
/// (`scontrol show job`: JobState=CANCELLED Reason=JobHeldUser).
#[test]
fn a_job_cancelled_while_pending_keeps_its_reason() {
    let mut env = Env::new();
    env.register_all();
    let held = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    let wide = env.submit(cpus(Some(9), None, None));
    for (id, reason) in [
        (held, PendingReason::JobHeldUser),
        (wide, PendingReason::PartitionConfig),
    ] {
        let r = env.run(Command::Cancel {
            caller: ALICE,
            filter: filter(&[id]),
            signal: None,
        });
        assert_eq!(ok_results(&r), vec![(id, 0)]);
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Cancelled);
        assert_eq!(job.reason, reason);
    }
}

/// EligibleTime is Unknown while a job is held (a begin time still to come
/// stays shown); released, it is eligible from the release.
#[test]
fn a_held_job_has_no_eligible_time_until_released() {
    let mut env = Env::new();
    let t0 = env.now;
    let held = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    assert_eq!(env.job(held).eligible_time, 0);
    let begin = t0 + 3600;
    let later = env.submit(v1::JobDescription {
        hold: true,
        begin_time: begin,
        ..script()
    });
    assert_eq!(env.job(later).eligible_time, begin);
    let plain = env.submit(script());
    assert_eq!(env.job(plain).eligible_time, t0);

    env.now += 10;
    assert_eq!(release(&mut env, ALICE, held), vec![(held, 0)]);
    assert_eq!(env.job(held).eligible_time, t0 + 10);
    assert_eq!(release(&mut env, ALICE, later), vec![(later, 0)]);
    assert_eq!(env.job(later).eligible_time, begin);
    env.now += 10;
    assert_eq!(hold(&mut env, ALICE, plain, true), vec![(plain, 0)]);
    assert_eq!(env.job(plain).eligible_time, 0);
    assert_eq!(hold(&mut env, ALICE, later, true), vec![(later, 0)]);
    assert_eq!(env.job(later).eligible_time, begin);
    // Replay (the events' own times, no clock) gives the same.
    let replayed = replay_encoded(CONF, &env.events);
    for id in [held, later, plain] {
        let (a, b) = (replayed.job(id).unwrap(), env.job(id));
        assert_eq!((a.hold, a.eligible_time), (b.hold, b.eligible_time));
    }
}

/// A release journaled before holds carried their time (tag 5) shows the
/// job eligible from its submission, as it was shown then.
#[test]
fn an_old_release_record_makes_the_job_eligible_from_its_submission() {
    let mut env = Env::new();
    let t0 = env.now;
    let id = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    let mut events = env.events.clone();
    events.push(Event::JobHoldChanged {
        job_id: id,
        hold: None,
        time: None,
    });
    let replayed = replay_encoded(CONF, &events);
    let job = replayed.job(id).unwrap();
    assert_eq!((job.hold, job.eligible_time), (None, t0));
}

/// `scancel -s USR1` (or TERM) of a pending job: "Job can not be altered
/// now, try again later" and the job waits on; `-s KILL` and `-b` (KILL to
/// the batch shell) cancel it.
#[test]
fn signals_to_a_pending_job() {
    let mut env = Env::new();
    let a = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    let b = env.submit(script());
    let busy = ErrorCode::TransitionStateNoUpdate;
    assert_eq!(
        busy.message(),
        "Job can not be altered now, try again later"
    );
    for sig in [10, 15] {
        assert_eq!(signal(&mut env, a, sig, false), vec![(a, busy.number())]);
        assert_eq!(signal(&mut env, a, sig, true), vec![(a, busy.number())]);
    }
    assert_eq!(env.job(a).state(), JobState::Pending);
    assert!(env.take_actions().is_empty());
    assert_eq!(signal(&mut env, a, 9, false), vec![(a, 0)]);
    assert_eq!(signal(&mut env, b, 9, true), vec![(b, 0)]);
    for id in [a, b] {
        assert_eq!(env.job(id).state(), JobState::Cancelled);
    }
    assert_eq!(env.job(a).reason, PendingReason::JobHeldUser);
}

/// A job ended by its time limit: TIMEOUT with ExitCode=0:15, whatever the
/// node reports afterwards.
#[test]
fn a_timed_out_job_has_exit_code_0_15() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(v1::JobDescription {
        time_limit: Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(1)),
        }),
        ..script()
    });
    env.now += 60;
    env.run(Command::Tick);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Timeout);
    assert_eq!((job.exit_status, job.exit_signal), (0, 15));
    env.complete(id, 0, 9);
    env.epilogs(id);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Timeout);
    assert_eq!((job.exit_status, job.exit_signal), (0, 15));
}

/// `scontrol update JobId=<running> NumNodes=`, as Slurm 22.05 answers
/// it: more nodes "Requested operation not supported on this system", a
/// range "Job is no longer pending execution", 0 "Node count
/// specification invalid"; the count it has is no change; fewer nodes
/// keep its first ones and free the rest at once, which are told to end
/// the job there (also through a replay).
#[test]
fn a_running_job_may_only_shrink() {
    let mut env = Env::new();
    env.register_all();
    let mut desc = script();
    desc.min_nodes = Some(3);
    let id = env.submit(desc);
    env.take_actions();
    let update = |env: &mut Env, min: u32, max: Option<u32>| {
        ok_results(&env.run(Command::UpdateJob {
            caller: Caller::ROOT,
            request: Box::new(v1::UpdateJobRequest {
                filter: Some(filter(&[id])),
                min_nodes: Some(min),
                max_nodes: max,
                ..Default::default()
            }),
        }))
    };
    let unsupported = ErrorCode::NotSupported;
    assert_eq!(
        unsupported.message(),
        "Requested operation not supported on this system"
    );
    let before = env.events.len();
    assert_eq!(update(&mut env, 4, None), vec![(id, unsupported.number())]);
    let not_pending = ErrorCode::JobNotPending.number();
    assert_eq!(update(&mut env, 1, Some(3)), vec![(id, not_pending)]);
    assert_eq!(update(&mut env, 3, Some(3)), vec![(id, not_pending)]);
    let invalid = ErrorCode::InvalidNodeCount.number();
    assert_eq!(update(&mut env, 0, None), vec![(id, invalid)]);
    assert_eq!(update(&mut env, 3, None), vec![(id, 0)]);
    assert_eq!(env.events.len(), before);

    assert_eq!(update(&mut env, 1, None), vec![(id, 0)]);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Running);
    let nodes: Vec<usize> = job.alloc.iter().map(|a| a.node_index).collect();
    assert_eq!(nodes, vec![0]);
    assert!(job.resize.is_some());
    assert_eq!(env.ctl.nodes[1].alloc_cpus, 0);
    assert_eq!(env.ctl.nodes[2].alloc_cpus, 0);
    let actions = env.take_actions();
    assert!(
        matches!(
            &actions[..],
            [Action::TerminateJob { job_id, nodes, .. }] if *job_id == id && nodes == &vec![1, 2]
        ),
        "{actions:?}"
    );
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(replayed.job(id).unwrap().alloc, env.job(id).alloc);
}

/// `--ntasks-per-node` as Slurm 22.05 counts it once a job runs (nodes of
/// 2 CPUs): that many tasks on every node it got (SLURM_TASKS_PER_NODE,
/// NumTasks), while the batch step's SLURM_NTASKS is `-n` when given;
/// MinCPUsNode counts one task for a job of one task.
#[test]
fn tasks_per_node_count_on_every_node_a_job_gets() {
    // -n and -N min-max with --ntasks-per-node=2; then nodes, NumTasks,
    // SLURM_NTASKS, tasks on each node, MinCPUsNode.
    type Case = (
        Option<u32>,
        Option<(u32, u32)>,
        usize,
        u32,
        u32,
        Vec<u32>,
        u32,
    );
    let cases: [Case; 4] = [
        (Some(1), None, 1, 2, 1, vec![2], 1),
        (None, Some((1, 2)), 2, 4, 4, vec![2, 2], 2),
        (Some(2), Some((1, 2)), 2, 4, 2, vec![2, 2], 2),
        (Some(3), None, 2, 4, 3, vec![2, 2], 2),
    ];
    for (ntasks, range, nodes, shown, launched, on_nodes, min_cpus) in cases {
        let mut env = Env::new();
        env.register_all();
        env.take_actions();
        let id = env.submit(v1::JobDescription {
            ntasks,
            min_nodes: range.map(|r| r.0),
            max_nodes: range.map(|r| r.1),
            ntasks_per_node: Some(2),
            ..script()
        });
        let case = format!("-n {ntasks:?} -N {range:?}");
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Running, "{case}");
        assert_eq!(job.alloc.len(), nodes, "{case}");
        assert_eq!(job.placed_ntasks(job.alloc.len()), shown, "{case}");
        assert_eq!(job.min_cpus_per_node(), min_cpus, "{case}");
        let actions = env.take_actions();
        let request = actions
            .iter()
            .find_map(|a| match a {
                Action::LaunchBatch { request, .. } => Some(request),
                _ => None,
            })
            .unwrap();
        assert_eq!(request.ntasks, Some(launched), "{case}");
        assert_eq!(request.tasks_per_node, on_nodes, "{case}");
        // Kept across a restart from the snapshot.
        let reloaded = super::snapshot_reloaded(&env.ctl);
        assert_eq!(
            reloaded.job(id).unwrap().launch_ntasks(),
            Some(launched),
            "{case}"
        );
    }
}

/// A waiting job asking more CPUs than its partition has (`-n 9` on 8):
/// as Slurm 22.05, holding, releasing or changing it takes effect and is
/// answered "Requested partition configuration not available now"; a job
/// asking more nodes only is not (`-N 5`).
#[test]
fn changes_of_a_job_beyond_its_partition_are_taken_and_refused() {
    let mut env = Env::new();
    env.register_all();
    let wide = env.submit(cpus(Some(9), None, None));
    let many_nodes = env.submit(v1::JobDescription {
        min_nodes: Some(5),
        ..script()
    });
    let beyond = ErrorCode::RequestedPartConfigUnavailable.number();
    assert_eq!(hold(&mut env, ALICE, wide, true), vec![(wide, beyond)]);
    assert_eq!(env.job(wide).reason, PendingReason::JobHeldUser);
    assert_eq!(release(&mut env, ALICE, wide), vec![(wide, beyond)]);
    assert_eq!(env.job(wide).hold, None);
    let r = env.run(super::updates::update(wide, ALICE, |r| {
        r.name = Some("renamed".into());
    }));
    assert_eq!(ok_results(&r), vec![(wide, beyond)]);
    assert_eq!(env.job(wide).name, "renamed");
    assert_eq!(
        hold(&mut env, ALICE, many_nodes, true),
        vec![(many_nodes, 0)]
    );
    assert_eq!(release(&mut env, ALICE, many_nodes), vec![(many_nodes, 0)]);
    // Answered in the order named.
    assert_eq!(
        hold(&mut env, ALICE, 999_999, true),
        vec![(999_999, ErrorCode::InvalidJobId.number())]
    );
    // MaxCPUsPerNode counts as the nodes' size, as at submission: two
    // nodes giving one CPU each.
    let mut env = Env::with_conf(&format!(
        "{CONF}PartitionName=capped Nodes=n[1-2] MaxCPUsPerNode=1 State=UP\n"
    ));
    env.register_all();
    let capped = env.submit(v1::JobDescription {
        partitions: vec!["capped".into()],
        ..cpus(Some(3), None, None)
    });
    assert_eq!(env.job(capped).reason, PendingReason::PartitionConfig);
    assert_eq!(hold(&mut env, ALICE, capped, true), vec![(capped, beyond)]);
}

/// CPU ids as Slurm 22.05 gives them (`scontrol show job -d`): the lowest
/// free ones of each node, kept for the job's life, given back when its
/// nodes are released, and the same after a restart from the snapshot.
#[test]
fn jobs_hold_the_lowest_free_cpu_ids() {
    let mut env = Env::new();
    env.register_all();
    let on_n1 = |env: &mut Env, cpus: u32| {
        env.submit(v1::JobDescription {
            required_nodes: "n1".into(),
            cpus_per_task: Some(cpus),
            memory: Some(v1::job_description::Memory::MemPerNodeMb(100)),
            ..script()
        })
    };
    let a = on_n1(&mut env, 1);
    let b = on_n1(&mut env, 1);
    let ids = |env: &Env, id: u32| -> Vec<Vec<u32>> {
        env.job(id).cpu_ids.iter().map(|c| c.to_vec()).collect()
    };
    assert_eq!(ids(&env, a), vec![vec![0]]);
    assert_eq!(ids(&env, b), vec![vec![1]]);
    assert_eq!(env.ctl.nodes()[0].cpu_use, vec![1, 1]);
    env.finish(a, 0, 0);
    assert!(env.job(a).cpu_ids.is_empty());
    // Still shown once it ended, also after a restart.
    let shown = |ctl: &Controller, id: u32| -> Vec<Vec<u32>> {
        let snap = ctl.snapshot();
        let info = crate::rpc::convert::job_info(&snap, snap.jobs.get(&id).unwrap(), 0);
        info.resources
            .unwrap()
            .nodes
            .iter()
            .map(|n| n.cpu_ids.clone())
            .collect()
    };
    assert_eq!(shown(&env.ctl, a), vec![vec![0]]);
    assert_eq!(shown(&super::snapshot_reloaded(&env.ctl), a), vec![vec![0]]);
    assert_eq!(env.ctl.nodes()[0].cpu_use, vec![0, 1]);
    let c = on_n1(&mut env, 1);
    assert_eq!(ids(&env, c), vec![vec![0]]);
    let wide = env.submit(v1::JobDescription {
        min_nodes: Some(2),
        ntasks: Some(3),
        excluded_nodes: "n1".into(),
        memory: Some(v1::job_description::Memory::MemPerNodeMb(100)),
        ..script()
    });
    assert_eq!(ids(&env, wide), vec![vec![0, 1], vec![0]]);
    let reloaded = super::snapshot_reloaded(&env.ctl);
    reloaded.sanity_check().unwrap();
    for id in [b, c, wide] {
        let kept: Vec<Vec<u32>> = reloaded
            .job(id)
            .unwrap()
            .cpu_ids
            .iter()
            .map(|c| c.to_vec())
            .collect();
        assert_eq!(kept, ids(&env, id), "job {id}");
    }
    assert_eq!(reloaded.nodes()[0].cpu_use, vec![1, 1]);
    // The launch names them for the node.
    let launched: Vec<Vec<u32>> = env
        .take_actions()
        .iter()
        .filter_map(|act| match act {
            Action::LaunchBatch {
                job_id, request, ..
            } if *job_id == wide => Some(
                request
                    .resources
                    .as_ref()
                    .unwrap()
                    .nodes
                    .iter()
                    .map(|n| n.cpu_ids.clone())
                    .collect::<Vec<Vec<u32>>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(launched, vec![vec![0, 1], vec![0]]);
}
