//! Controller answers checked against a Slurm 22.05 cluster, one test per
//! difference found: priorities given at release, jobs on a node set DOWN,
//! deadlines of jobs that cannot start yet, submission refusals.

use slurm_common::reason::PendingReason;
use slurm_common::state::{JobState, NodeBaseState};
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{filter, ok_results, replay_encoded, script, Env, ALICE};
use crate::core::{Action, Caller, Command, Reply};

fn release(env: &mut Env, id: u32) {
    let r = env.run(Command::Release {
        caller: ALICE,
        filter: filter(&[id]),
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
}

fn hold(env: &mut Env, id: u32) {
    let r = env.run(Command::Hold {
        caller: ALICE,
        filter: filter(&[id]),
        user_hold: true,
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
}

/// `Nice=` moves a priority by the change of nice, to 2 at least, as
/// Slurm 22.05 does; a held job's priority of 0 moves as well, which
/// releases it (0 - 10 is 2, then 2 + 10 - 100 is 2, then 2 + 100 - 0 is
/// 102), without using up a priority number.
#[test]
fn nice_moves_even_a_held_jobs_priority() {
    let mut env = Env::new();
    let id = env.submit(script_held());
    let nice = |env: &mut Env, n: i32| {
        let r = env.run(Command::UpdateJob {
            caller: Caller::ROOT,
            request: Box::new(v1::UpdateJobRequest {
                filter: Some(filter(&[id])),
                nice: Some(n),
                ..Default::default()
            }),
        });
        assert_eq!(ok_results(&r), vec![(id, 0)]);
    };
    nice(&mut env, 0);
    assert_eq!(env.job(id).priority(), 0);
    assert!(env.job(id).hold.is_some());
    nice(&mut env, 10);
    assert_eq!((env.job(id).priority(), env.job(id).nice), (2, 10));
    assert!(env.job(id).hold.is_none());
    nice(&mut env, 100);
    assert_eq!(env.job(id).priority(), 2);
    nice(&mut env, 0);
    assert_eq!((env.job(id).priority(), env.job(id).nice), (102, 0));
    // No number used up: the next job gets the first one.
    let next = env.submit(script());
    assert_eq!(env.job(next).priority(), 4_294_901_759);
    let replayed = replay_encoded(super::CONF, &env.events);
    assert_eq!(replayed.jobs.get(&id).map(|j| j.priority()), Some(102));
}

/// A priority set outright (`--priority`, `Priority=`) is not moved by
/// `Nice=`, which is taken and changes nothing, also after a restart; a
/// held job is refused a priority ("Job is in held state, pending
/// scheduler release"), as Slurm 22.05 answers.
#[test]
fn nice_leaves_a_priority_set_outright() {
    let mut env = Env::new();
    let update = |env: &mut Env, id: u32, f: &dyn Fn(&mut v1::UpdateJobRequest)| {
        let mut request = v1::UpdateJobRequest {
            filter: Some(filter(&[id])),
            ..Default::default()
        };
        f(&mut request);
        let r = env.run(Command::UpdateJob {
            caller: Caller::ROOT,
            request: Box::new(request),
        });
        ok_results(&r)[0].1
    };
    let given = match env.submit_as(
        Caller::ROOT,
        v1::JobDescription {
            priority: Some(5),
            ..script()
        },
    ) {
        Reply::Submitted { job_id, .. } => job_id,
        other => panic!("{other:?}"),
    };
    let plain = env.submit(script());
    assert_eq!(update(&mut env, plain, &|r| r.priority = Some(50)), 0);
    for id in [given, plain] {
        let before = env.job(id).priority();
        assert_eq!(update(&mut env, id, &|r| r.nice = Some(10)), 0);
        assert_eq!((env.job(id).priority(), env.job(id).nice), (before, 0));
    }
    let reloaded = super::snapshot_reloaded(&env.ctl);
    assert!(reloaded.job(given).unwrap().spec.shown().priority_set);
    assert!(reloaded.job(plain).unwrap().spec.shown().priority_set);

    let held = env.submit(script_held());
    let code = update(&mut env, held, &|r| r.priority = Some(7));
    assert_eq!(code, ErrorCode::JobHeld.number());
    assert_eq!(env.job(held).priority(), 0);
    assert!(!env.job(held).spec.shown().priority_set);
}

/// Slurm 22.05 (priority/basic): jobs submitted with `-H` take no
/// priority number; each release takes the next one down, below every job
/// submitted before it, and `--nice` is subtracted from it. Seen there:
/// three held jobs released 1, 3, 2 got 4294901759, ...758, ...757; a
/// job held and released after a `--nice=10` job got the number after
/// that job's, not its own old one.
#[test]
fn a_released_job_takes_the_next_priority_down() {
    let mut env = Env::new();
    let held = script_held();
    let a = env.submit(held.clone());
    let b = env.submit(held.clone());
    let c = env.submit(held);
    for id in [a, b, c] {
        assert_eq!(env.job(id).priority(), 0);
    }
    release(&mut env, a);
    release(&mut env, c);
    release(&mut env, b);
    assert_eq!(env.job(a).priority(), 4_294_901_759);
    assert_eq!(env.job(c).priority(), 4_294_901_758);
    assert_eq!(env.job(b).priority(), 4_294_901_757);

    let d = env.submit(script());
    let nice = env.submit(v1::JobDescription {
        nice: Some(10),
        ..script()
    });
    assert_eq!(env.job(d).priority(), 4_294_901_756);
    assert_eq!(env.job(nice).priority(), 4_294_901_745);
    hold(&mut env, d);
    assert_eq!(env.job(d).priority(), 0);
    assert_eq!(env.job(d).reason, PendingReason::JobHeldUser);
    release(&mut env, d);
    assert_eq!(env.job(d).priority(), 4_294_901_754);
    hold(&mut env, nice);
    release(&mut env, nice);
    assert_eq!(env.job(nice).priority(), 4_294_901_743);
    // A waiting job not held is numbered again all the same (its
    // EligibleTime stays), as Slurm 22.05 does.
    let eligible = env.job(d).eligible_time;
    env.now += 5;
    release(&mut env, d);
    assert_eq!(env.job(d).priority(), 4_294_901_752);
    assert_eq!(env.job(d).state(), JobState::Pending);
    assert_eq!(env.job(d).eligible_time, eligible);

    // Replay numbers the releases the same way.
    let replayed = replay_encoded(super::CONF, &env.events);
    for id in [a, b, c, d, nice] {
        assert_eq!(
            replayed.jobs.get(&id).map(|j| j.priority()),
            Some(env.job(id).priority()),
            "job {id}"
        );
    }
    assert_eq!(replayed.next_priority, env.ctl.next_priority);
}

fn script_held() -> v1::JobDescription {
    v1::JobDescription {
        hold: true,
        ..script()
    }
}

fn set_down(env: &mut Env, node: &str) {
    let r = env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: node.into(),
            state: v1::NodeStateUpdate::Down as i32,
            reason: Some("x".into()),
            ..Default::default()
        },
    });
    assert_eq!(r, Reply::Ok);
}

/// `scontrol update NodeName=vm State=DOWN Reason=x` under a running batch
/// job, in Slurm 22.05: the job is requeued (PENDING, Reason=BeginTime,
/// Restarts=1, ExitCode=0:0, SubmitTime now, eligible 121 s later); a
/// `--no-requeue` job ends NODE_FAIL, Reason=NodeDown, ExitCode=0:15.
/// With JobRequeue=0 only a job that asked for `--requeue` comes back.
#[test]
fn a_node_set_down_requeues_its_batch_jobs_unless_they_may_not_be() {
    for (conf, asked, requeued) in [
        (super::CONF.to_string(), None, true),
        (super::CONF.to_string(), Some(false), false),
        (format!("{}JobRequeue=0\n", super::CONF), None, false),
        (format!("{}JobRequeue=0\n", super::CONF), Some(true), true),
    ] {
        let mut env = Env::with_conf(&conf);
        env.register_all();
        let id = env.submit(v1::JobDescription {
            requeue: asked,
            ..script()
        });
        assert_eq!(env.job(id).state(), JobState::Running);
        let node = env.ctl.nodes()[env.job(id).alloc[0].node_index]
            .name
            .clone();
        env.take_actions();
        env.now += 5;
        set_down(&mut env, &node);
        let job = env.job(id);
        let case = format!("{asked:?} {}", conf.ends_with("=0\n"));
        if requeued {
            assert_eq!(job.state(), JobState::Pending, "{case}");
            assert_eq!(job.reason, PendingReason::BeginTime, "{case}");
            assert_eq!(job.restart_count, 1, "{case}");
            assert_eq!((job.exit_status, job.exit_signal), (0, 0), "{case}");
            assert_eq!(job.submit_time, env.now, "{case}");
            assert_eq!(job.eligible_time, env.now + 121, "{case}");
        } else {
            assert_eq!(job.state(), JobState::NodeFail, "{case}");
            assert_eq!(job.reason, PendingReason::NodeDown, "{case}");
            assert_eq!(job.restart_count, 0, "{case}");
            assert_eq!((job.exit_status, job.exit_signal), (0, 15), "{case}");
        }
        // Its node is told to end it either way.
        assert!(
            matches!(&env.take_actions()[..], [Action::TerminateJob { .. }]),
            "{case}"
        );
    }
}

const ONE_NODE: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=n1 CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
";

fn one_node_env() -> Env {
    Env::with_node(ONE_NODE, "n1")
}

fn limit(m: u32) -> Option<v1::TimeLimit> {
    Some(v1::TimeLimit {
        limit: Some(v1::time_limit::Limit::Minutes(m)),
    })
}

/// `--deadline` sooner than now + `-t` with the only node busy, in Slurm
/// 22.05: a job the scheduler would try is ended DEADLINE at once; one
/// held, waiting on a dependency or its `--begin`, over the partition's
/// node count (PartitionNodeLimit) or bigger than any node (`-c 3`,
/// PartitionConfig) keeps waiting with that reason. Each is ended when it
/// is tried: the held one at its release, the `--begin` one at its begin
/// time, one that still had time when its time runs out.
#[test]
fn a_missed_deadline_ends_only_a_job_the_scheduler_would_try() {
    let mut env = one_node_env();
    env.without_periodic_pass();
    let t0 = env.now;
    let busy = env.submit(v1::JobDescription {
        cpus_per_task: Some(2),
        ..script()
    });
    assert_eq!(env.job(busy).state(), JobState::Running);
    let with = |f: &dyn Fn(&mut v1::JobDescription)| {
        let mut d = v1::JobDescription {
            time_limit: limit(5),
            deadline: t0 + 120,
            ..script()
        };
        f(&mut d);
        d
    };
    let tried = env.submit(with(&|_| {}));
    let later = env.submit(with(&|d| {
        d.time_limit = limit(1);
        d.deadline = t0 + 180;
    }));
    let held = env.submit(with(&|d| d.hold = true));
    let dep = env.submit(with(&|d| d.dependency = format!("afterok:{busy}")));
    let begin = env.submit(with(&|d| d.begin_time = t0 + 60));
    let wide = env.submit(with(&|d| d.min_nodes = Some(2)));
    let big = env.submit(with(&|d| d.cpus_per_task = Some(3)));
    env.run(Command::Tick);

    let job = env.job(tried);
    assert_eq!(job.state(), JobState::Deadline);
    assert_eq!(job.reason, PendingReason::DeadLine);
    assert_eq!((job.exit_status, job.exit_signal), (0, 1));
    for (id, reason) in [
        (later, PendingReason::Resources),
        (held, PendingReason::JobHeldUser),
        (dep, PendingReason::Dependency),
        (begin, PendingReason::BeginTime),
        (wide, PendingReason::PartitionNodeLimit),
        (big, PendingReason::PartitionConfig),
    ] {
        assert_eq!(env.job(id).state(), JobState::Pending, "job {id}");
        assert_eq!(env.job(id).reason, reason, "job {id}");
    }
    // The timer wakes for the next miss, never for one already judged.
    assert_eq!(env.ctl.next_deadline(env.now), Some(t0 + 60));
    env.now = t0 + 60;
    env.run(Command::Tick);
    assert_eq!(env.job(begin).state(), JobState::Deadline);
    assert_eq!(env.job(later).state(), JobState::Pending);
    assert_eq!(env.ctl.next_deadline(env.now), Some(t0 + 121));
    env.now = t0 + 121;
    env.run(Command::Tick);
    assert_eq!(env.job(later).state(), JobState::Deadline);
    // Next: MinJobAge of the first job ended; the jobs left waiting never
    // wake the timer.
    assert_eq!(env.ctl.next_deadline(env.now), Some(t0 + 300));
    release(&mut env, held);
    assert_eq!(env.job(held).state(), JobState::Deadline);
    for id in [dep, wide, big] {
        assert_eq!(env.job(id).state(), JobState::Pending, "job {id}");
    }
}

fn refusal(env: &mut Env, desc: v1::JobDescription) -> (ErrorCode, String) {
    match env.submit_as(ALICE, desc) {
        Reply::Error { code, detail } => (code, detail),
        other => panic!("accepted: {other:?}"),
    }
}

/// Slurm 22.05's answers to requests no node can serve: `-w vm -x vm` is
/// "Invalid node name specified" (held or not); `--mincpus=3` and `--tmp`
/// beyond every node are refused with a line of their own before
/// "Requested node configuration is not available"; `--mincpus=2` fits.
#[test]
fn node_requests_no_node_serves_are_refused_in_slurms_words() {
    let mut env = Env::new();
    env.register_all();
    for hold in [false, true] {
        let both = v1::JobDescription {
            required_nodes: "n1".into(),
            excluded_nodes: "n[1-2]".into(),
            hold,
            ..script()
        };
        assert_eq!(
            refusal(&mut env, both),
            (ErrorCode::InvalidNodeName, String::new())
        );
    }
    let mincpus = |n| v1::JobDescription {
        min_cpus_per_node: Some(n),
        ..script()
    };
    assert_eq!(
        refusal(&mut env, mincpus(3)),
        (
            ErrorCode::RequestedNodeConfigUnavailable,
            "CPU count per node can not be satisfied".to_string()
        )
    );
    let id = env.submit(mincpus(2));
    assert_eq!(env.job(id).state(), JobState::Running);
    let tmp = v1::JobDescription {
        tmp_disk_mb: Some(100),
        ..script()
    };
    assert_eq!(
        refusal(&mut env, tmp),
        (
            ErrorCode::RequestedNodeConfigUnavailable,
            "Temporary disk specification can not be satisfied".to_string()
        )
    );
}

/// Slurm 22.05 takes a held job (`-H`) whatever it asks of the nodes:
/// `--mem=5000`, `--tmp=100`, `--mincpus=3` on 4000 MB, TmpDisk=0, 2-CPU
/// nodes, and `-N` over the partition. Released, the first three wait
/// with BadConstraints and Priority=0; the last with PartitionNodeLimit.
#[test]
fn a_held_job_no_node_can_run_is_taken_and_waits_once_released() {
    let mut env = Env::new();
    env.register_all();
    let held = |f: &dyn Fn(&mut v1::JobDescription)| {
        let mut d = v1::JobDescription {
            hold: true,
            ..script()
        };
        f(&mut d);
        d
    };
    let mem = env.submit(held(&|d| {
        d.memory = Some(v1::job_description::Memory::MemPerNodeMb(5000));
    }));
    let tmp = env.submit(held(&|d| d.tmp_disk_mb = Some(100)));
    let cpus = env.submit(held(&|d| d.min_cpus_per_node = Some(3)));
    let wide = env.submit(held(&|d| d.min_nodes = Some(5)));
    for id in [mem, tmp, cpus, wide] {
        assert_eq!(env.job(id).reason, PendingReason::JobHeldUser);
        release(&mut env, id);
    }
    env.run(Command::Tick);
    for id in [mem, tmp, cpus] {
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Pending, "job {id}");
        assert_eq!(job.reason, PendingReason::BadConstraints, "job {id}");
        assert_eq!(job.priority(), 0, "job {id}");
    }
    assert_eq!(env.job(wide).reason, PendingReason::PartitionNodeLimit);
    assert_ne!(env.job(wide).priority(), 0);
}

/// Slurm 22.05: `--time-min=0` and `--time-min=UNLIMITED` are refused as
/// an invalid time-min, with or without `-t`; `--time-min=1` is taken.
/// (sbatch sends 0 as infinite, as for `-t 0`.)
#[test]
fn time_min_zero_or_infinite_is_refused() {
    let mut env = Env::new();
    let infinite = slurm_common::time::MAX_LIMIT_MINUTES;
    for (time_min, minutes) in [
        (0, None),
        (0, Some(5)),
        (infinite, None),
        (infinite, Some(5)),
    ] {
        let d = v1::JobDescription {
            time_min_minutes: Some(time_min),
            time_limit: minutes.and_then(limit),
            ..script()
        };
        assert_eq!(
            refusal(&mut env, d),
            (ErrorCode::InvalidTimeMin, String::new())
        );
    }
    env.submit(v1::JobDescription {
        time_min_minutes: Some(1),
        ..script()
    });
}

/// Slurm 22.05 on 2-CPU nodes: `--sockets-per-node=2` alone asks for one
/// task and CPU (sbatch turns `-B 2` into two tasks itself); `--reboot`
/// shows OverSubscribe=NO and takes the whole node when it runs
/// (NumCPUs=2).
#[test]
fn sockets_per_node_count_no_tasks_and_reboot_takes_whole_nodes() {
    let mut env = Env::new();
    env.register_all();
    let cpus_of = |env: &Env, id: u32| env.job(id).alloc.iter().map(|a| a.cpus).sum::<u32>();
    let s2 = env.submit(v1::JobDescription {
        sockets_per_node: Some(2),
        ..script()
    });
    assert_eq!(env.job(s2).shape.ntasks, 1);
    assert_eq!(cpus_of(&env, s2), 1);
    let b2 = env.submit(v1::JobDescription {
        sockets_per_node: Some(2),
        ntasks: Some(2),
        ..script()
    });
    assert_eq!(env.job(b2).shape.ntasks, 2);
    assert_eq!(cpus_of(&env, b2), 2);
    let reboot = env.submit(v1::JobDescription {
        reboot: true,
        ..script()
    });
    let job = env.job(reboot);
    assert_eq!(job.state(), JobState::Running);
    assert_eq!(job.spec.sharing, v1::NodeSharing::Exclusive as i32);
    assert_eq!(cpus_of(&env, reboot), 2);
    // Its own sharing wins.
    let shared = env.submit(v1::JobDescription {
        reboot: true,
        sharing: v1::NodeSharing::ExclusiveUser as i32,
        ..script()
    });
    assert_eq!(
        env.job(shared).spec.sharing,
        v1::NodeSharing::ExclusiveUser as i32
    );
}

/// Slurm's main loop runs every SchedulerParameters=sched_interval (60 s
/// by default) besides the passes events trigger, and its scheduler looks
/// at a new job again right after the submission: `-N` over the partition
/// waits with PartitionConfig at submission and PartitionNodeLimit from
/// that second look on (a second later, as real 22.05 showed it). `-c 3`
/// stays PartitionConfig and is not looked at again before the periodic
/// pass. An idle controller is not woken.
#[test]
fn a_periodic_pass_runs_every_sched_interval_while_jobs_wait() {
    for (conf, every) in [
        (super::CONF.to_string(), 60),
        (
            format!("{}SchedulerParameters=sched_interval=30\n", super::CONF),
            30,
        ),
    ] {
        let mut env = Env::with_conf(&conf);
        env.register_all();
        let t0 = env.now;
        // Nothing waits: no wake-up for a pass.
        assert_eq!(env.ctl.next_deadline(t0), None);
        let wide = env.submit(v1::JobDescription {
            min_nodes: Some(5),
            ..script()
        });
        assert_eq!(env.job(wide).reason, PendingReason::PartitionConfig);
        assert_eq!(env.ctl.next_deadline(t0), Some(t0 + 1));
        env.now = t0 + 1;
        env.run(Command::Tick);
        assert_eq!(env.job(wide).reason, PendingReason::PartitionNodeLimit);
        // One pass per interval, counted from the last one.
        let t1 = env.now;
        assert_eq!(env.ctl.next_deadline(t1), Some(t1 + every));
        let big = env.submit(v1::JobDescription {
            ntasks: Some(9),
            ..script()
        });
        assert_eq!(env.job(big).reason, PendingReason::PartitionConfig);
        assert_eq!(env.ctl.next_deadline(t1), Some(t1 + 1));
        env.now = t1 + 1;
        env.run(Command::Tick);
        assert_eq!(env.job(big).reason, PendingReason::PartitionConfig);
        assert_eq!(env.ctl.next_deadline(env.now), Some(env.now + every));
        let r = env.run(Command::Cancel {
            caller: ALICE,
            filter: filter(&[wide, big]),
            signal: None,
        });
        assert_eq!(ok_results(&r), vec![(wide, 0), (big, 0)]);
        // Only the purge of the cancelled job is left to wake for.
        assert_eq!(env.ctl.next_deadline(env.now), Some(env.now + 300));
    }
}

/// Slurm 22.05 with ReturnToService=2: a node an operator sets DOWN under
/// a running job is back in service ("node_did_resp: node vm returned to
/// service") with the first message of its slurmd, the EpilogComplete of
/// the job it killed, or a ping's answer; with ReturnToService=1 it stays
/// DOWN.
#[test]
fn a_node_set_down_returns_with_its_next_message_under_return_to_service_2() {
    for (rts, back) in [("1", false), ("2", true)] {
        let mut env = Env::with_conf(&format!("{}ReturnToService={rts}\n", super::CONF));
        env.register_all();
        let id = env.submit(script());
        env.take_actions();
        set_down(&mut env, "n1");
        assert_eq!(env.job(id).state(), JobState::Pending);
        env.epilog(id, "n1", 0);
        let n1 = &env.ctl.nodes()[0];
        assert_eq!(n1.state.base == NodeBaseState::Down, !back, "RTS={rts}");
        // Set DOWN again without a job: a ping's answer does it too.
        set_down(&mut env, "n2");
        env.run(Command::NodeResponses {
            answered: vec![1],
            silent: vec![],
        });
        let n2 = &env.ctl.nodes()[1];
        assert_eq!(n2.state.base == NodeBaseState::Down, !back, "RTS={rts}");
    }
}

/// Slurm 22.05: `scontrol update NodeName=vm State=RESUME` of an idle node
/// prints only "slurm_update error: Invalid node state specified"; the
/// transition refused goes to the log.
#[test]
fn resuming_an_idle_node_is_refused_with_the_code_alone() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n1".into(),
            state: v1::NodeStateUpdate::Resume as i32,
            ..Default::default()
        },
    });
    assert_eq!(r, Reply::error(ErrorCode::InvalidNodeState, ""));
}

/// Slurm 22.05 records a job no node configuration can run before it
/// refuses it (`sbatch --mem=5000` on 4000 MB nodes: the id is taken and
/// `squeue -t all` shows it `F (BadConstraints)`, ExitCode=0:1, started
/// and ended at its submission); a request refused as such (an unknown
/// node, `-w` with the same `-x`) leaves nothing.
#[test]
fn a_job_no_node_can_run_is_recorded_failed_then_refused() {
    let mut env = Env::new();
    env.register_all();
    let both = v1::JobDescription {
        required_nodes: "n1".into(),
        excluded_nodes: "n1".into(),
        ..script()
    };
    refusal(&mut env, both);
    assert_eq!(env.ctl.next_job_id(), 1);
    let (code, detail) = refusal(
        &mut env,
        v1::JobDescription {
            memory: Some(v1::job_description::Memory::MemPerNodeMb(5000)),
            ..script()
        },
    );
    assert_eq!(code, ErrorCode::RequestedNodeConfigUnavailable);
    assert_eq!(detail, "Memory specification can not be satisfied");
    let job = env.job(1);
    assert_eq!(job.state(), JobState::Failed);
    assert_eq!(job.reason, PendingReason::BadConstraints);
    assert_eq!((job.exit_status, job.exit_signal), (0, 1));
    assert_eq!((job.start_time, job.end_time), (env.now, env.now));
    assert_eq!(env.job(1).priority(), 4_294_901_759);
    // The next job gets the next id and priority.
    let next = env.submit(script());
    assert_eq!(next, 2);
    assert_eq!(env.job(next).priority(), 4_294_901_758);
    // --test-only records no job, but uses up the id, and is refused
    // without the detail line.
    let r = env.submit_as(
        ALICE,
        v1::JobDescription {
            test_only: true,
            tmp_disk_mb: Some(100),
            ..script()
        },
    );
    let Reply::Error { code, detail } = r else {
        panic!("{r:?}");
    };
    assert_eq!(code, ErrorCode::RequestedNodeConfigUnavailable);
    assert_eq!(detail, "");
    assert!(env.ctl.job(3).is_none());
    assert_eq!(env.ctl.next_job_id(), 4);
}

/// Slurm 22.05 on a `CPUs=2` node (two sockets of one core): `-B 1:2`
/// (two tasks, sbatch's count) is recorded FAILED with BadConstraints and
/// refused with "Socket, core and/or thread specification can not be
/// satisfied"; `-B 2:1` runs; a held one is accepted.
#[test]
fn a_socket_layout_no_node_has_is_refused() {
    let mut env = one_node_env();
    let b12 = v1::JobDescription {
        sockets_per_node: Some(1),
        cores_per_socket: Some(2),
        ntasks: Some(2),
        ..script()
    };
    assert_eq!(
        refusal(&mut env, b12.clone()),
        (
            ErrorCode::RequestedNodeConfigUnavailable,
            "Socket, core and/or thread specification can not be satisfied".into()
        )
    );
    let job = env.job(1);
    assert_eq!(job.state(), JobState::Failed);
    assert_eq!(job.reason, PendingReason::BadConstraints);
    let held = env.submit(v1::JobDescription { hold: true, ..b12 });
    assert_eq!(env.job(held).reason, PendingReason::JobHeldUser);
    let b21 = env.submit(v1::JobDescription {
        sockets_per_node: Some(2),
        cores_per_socket: Some(1),
        ntasks: Some(2),
        ..script()
    });
    assert_eq!(env.job(b21).state(), JobState::Running);
}

/// Node counts with a minimum of 0, as Slurm 22.05 takes them: `-N 0-2`
/// runs on one node at least; `-N 0` (no node at all) is recorded FAILED
/// with BadConstraints, then refused as an invalid node count; held, it
/// is held, and waits with BadConstraints once released.
#[test]
fn a_node_count_from_zero() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(v1::JobDescription {
        min_nodes: Some(0),
        max_nodes: Some(2),
        ..script()
    });
    assert_eq!(env.job(id).shape.min_nodes, 1);
    assert_eq!(env.job(id).state(), JobState::Running);
    let none = v1::JobDescription {
        min_nodes: Some(0),
        max_nodes: Some(0),
        ..script()
    };
    let (code, _) = refusal(&mut env, none.clone());
    assert_eq!(code, ErrorCode::InvalidNodeCount);
    let failed = env.job(id + 1);
    assert_eq!(failed.state(), JobState::Failed);
    assert_eq!(failed.reason, PendingReason::BadConstraints);
    let held = env.submit(v1::JobDescription { hold: true, ..none });
    assert_eq!(env.job(held).reason, PendingReason::JobHeldUser);
    release(&mut env, held);
    let job = env.job(held);
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.reason, PendingReason::BadConstraints);
    assert!(job.alloc.is_empty());
}
