//! `sbatch --test-only`'s job id, `--gres` against the nodes' Gres=,
//! cancelling a requeued job that is still completing, SubmitTime of a
//! requeued job, SchedulerParameters=nohold_on_prolog_fail, PrologComplete
//! and PrologFlags=Alloc, and the reason text of failed launches.

use slurm_common::reason::PendingReason;
use slurm_common::state::{JobFlag, JobState, NodeFlag};
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{filter, launched, ok_results, replay_encoded, script, Env, ALICE, CONF};
use crate::core::snapshot;
use crate::core::{Action, Caller, Command, Event, Reply};

fn with_gres(gres: &str) -> v1::JobDescription {
    v1::JobDescription {
        gres: gres.into(),
        ..script()
    }
}

fn refusal(r: &Reply) -> (ErrorCode, &str) {
    match r {
        Reply::Error { code, detail } => (*code, detail.as_str()),
        other => panic!("not refused: {other:?}"),
    }
}

// ------------------------------------------------------------- test-only

/// `sbatch --test-only` answers with the id the job would get (Slurm's
/// `sbatch: Job 3 to start at ...`) and, as Slurm 22.05 does, uses it up
/// without making a job: the next real submission gets the id after it.
#[test]
fn test_only_answers_the_job_id_and_uses_it_up() {
    let mut env = Env::new();
    env.register_all();
    env.submit(script());
    env.submit(script());
    let before = env.events.len();
    let r = env.submit_as(
        ALICE,
        v1::JobDescription {
            test_only: true,
            ..script()
        },
    );
    let Reply::Submitted {
        job_id,
        estimate: Some(est),
    } = r
    else {
        panic!("no estimate: {r:?}");
    };
    assert_eq!(job_id, 3);
    assert_eq!((est.nodes.as_str(), est.cpus), ("n2", 1));
    assert_eq!(est.partition, "debug");
    assert!(
        matches!(&env.events[before..], [Event::JobIdTaken { job_id: 3, .. }]),
        "{:?}",
        &env.events[before..]
    );
    assert!(env.ctl.job(3).is_none());
    assert_eq!(env.ctl.next_job_id(), 4);
    assert_eq!(env.submit(script()), 4);
    // A refused test-only submission is refused as a real one.
    let r = env.submit_as(
        ALICE,
        v1::JobDescription {
            test_only: true,
            partitions: vec!["nope".into()],
            ..script()
        },
    );
    assert_eq!(refusal(&r).0, ErrorCode::InvalidPartitionName);
}

// ------------------------------------------------------------------ gres

const GRES_CONF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu,mps
NodeName=n[1-2] CPUs=2 RealMemory=4000 State=UNKNOWN
NodeName=n3 CPUs=2 RealMemory=4000 Gres=gpu:a100:2 State=UNKNOWN
NodeName=n4 CPUs=2 RealMemory=4000 Gres=gpu:v100:1,gpu:a100:1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=cpu Nodes=n[1-2] MaxTime=INFINITE State=UP
";

/// Without GresTypes no GRES exists: `--gres=gpu:1` is refused with
/// Slurm's ESLURM_INVALID_GRES and nothing else (the job would otherwise
/// run on a node without a GPU), and so is a malformed request.
#[test]
fn gres_nobody_has_is_refused_as_invalid() {
    let mut env = Env::new();
    env.register_all();
    for bad in [
        "gpu:1",
        "gpu",
        "gpu:a100:1",
        "gpu:a:b:c",
        "gpu:x:1:2",
        "(",
        "gpu(S:0)",
    ] {
        let r = env.submit_as(ALICE, with_gres(bad));
        assert_eq!(refusal(&r), (ErrorCode::InvalidGres, ""), "{bad}");
    }
    assert!(env
        .events
        .iter()
        .all(|e| !matches!(e, Event::JobSubmitted { .. })));
    assert_eq!(
        ErrorCode::InvalidGres.message(),
        "Invalid generic resource (gres) specification"
    );
    // Asking for nothing is fine.
    for nothing in ["", "none", "gpu:0"] {
        let id = env.submit(with_gres(nothing));
        assert_eq!(env.job(id).state(), JobState::Running, "{nothing:?}");
    }
}

/// With GresTypes, a request is refused when it is malformed or names an
/// unknown GRES (InvalidGres), and when no node of the partition has it
/// in the count asked as configured (RequestedNodeConfigUnavailable, as
/// Slurm answers a request no node can ever satisfy).
#[test]
fn gres_checks_at_submission() {
    let mut env = Env::with_conf(GRES_CONF);
    env.register_all();
    let refused = |env: &mut Env, d: v1::JobDescription| refusal(&env.submit_as(ALICE, d)).0;
    for bad in ["fpga:1", "gpu:1:2:3", "gpu:99999999999999999999"] {
        assert_eq!(
            refused(&mut env, with_gres(bad)),
            ErrorCode::InvalidGres,
            "{bad}"
        );
    }
    for unsatisfiable in ["gpu:3", "gpu:v100:2", "gpu:h100:1", "mps:1", "gpu:1,mps:1"] {
        assert_eq!(
            refused(&mut env, with_gres(unsatisfiable)),
            ErrorCode::RequestedNodeConfigUnavailable,
            "{unsatisfiable}"
        );
    }
    // Partition `cpu` has no GPU node; a GPU node named outright must have it.
    let in_cpu = v1::JobDescription {
        partitions: vec!["cpu".into()],
        ..with_gres("gpu:1")
    };
    assert_eq!(
        refused(&mut env, in_cpu),
        ErrorCode::RequestedNodeConfigUnavailable
    );
    let on_n1 = v1::JobDescription {
        required_nodes: "n1".into(),
        ..with_gres("gpu:1")
    };
    assert_eq!(
        refused(&mut env, on_n1),
        ErrorCode::RequestedNodeConfigUnavailable
    );
    // Two nodes with a GPU of each type between them, one with both.
    let two = v1::JobDescription {
        min_nodes: Some(3),
        ..with_gres("gpu:1")
    };
    assert_eq!(
        refused(&mut env, two),
        ErrorCode::RequestedNodeConfigUnavailable
    );
    // Only the last one got as far as node selection: recorded, FAILED
    // (as Slurm records a job no node configuration can run).
    let submitted: Vec<u32> = env
        .events
        .iter()
        .filter_map(|e| match e {
            Event::JobSubmitted { job_id, .. } => Some(*job_id),
            _ => None,
        })
        .collect();
    assert_eq!(submitted.len(), 1);
    assert_eq!(env.job(submitted[0]).state(), JobState::Failed);
}

/// A GRES job runs only on nodes configured with its GRES, and waits for
/// them rather than take an idle node without it.
#[test]
fn gres_jobs_run_only_on_nodes_that_have_the_gres() {
    let mut env = Env::with_conf(GRES_CONF);
    env.register_all();
    // A test-only submission is placed as the job would be: on the one
    // node with a V100, though n1 is idle and first.
    let r = env.submit_as(
        ALICE,
        v1::JobDescription {
            test_only: true,
            ..with_gres("gpu:v100:1")
        },
    );
    let Reply::Submitted {
        estimate: Some(est),
        ..
    } = r
    else {
        panic!("{r:?}");
    };
    assert_eq!(est.nodes, "n4");
    let a100s = env.submit(with_gres("gpu:a100:2"));
    let v100 = env.submit(with_gres("gres:gpu:v100:1"));
    let two = env.submit(v1::JobDescription {
        min_nodes: Some(2),
        ..with_gres("gpu:1")
    });
    assert_eq!(&*env.job(a100s).spec.gres, "gpu:a100:2");
    let started = launched(&env.take_actions());
    // n3 (index 2) has two A100s; n4 (index 3) the only V100; the
    // two-node job gets both (no counting of GRES in use yet).
    assert_eq!(started, vec![(a100s, 2), (v100, 3), (two, 2)]);
    assert_eq!(env.job(two).alloc.len(), 2);
    // Both GPU nodes are full now: the next GPU job waits for them while
    // n1 and n2 are idle.
    let waiting = env.submit(with_gres("gpu:1"));
    assert_eq!(env.job(waiting).state(), JobState::Pending);
    assert_eq!(env.job(waiting).reason, PendingReason::Resources);
    assert!(env.take_actions().is_empty());
    env.run(Command::Tick);
    assert!(env.take_actions().is_empty());
    assert_eq!(
        env.ctl
            .nodes()
            .iter()
            .map(|n| n.alloc_cpus)
            .collect::<Vec<_>>(),
        vec![0, 0, 2, 2]
    );
    // n3 frees up: the waiting job goes there.
    env.finish(a100s, 0, 0);
    env.run(Command::Tick);
    assert_eq!(launched(&env.take_actions()), vec![(waiting, 2)]);

    // Replay and a snapshot keep the request, and with it the placement.
    let replayed = replay_encoded(GRES_CONF, &env.events);
    assert_eq!(&*replayed.job(v100).unwrap().spec.gres, "gres:gpu:v100:1");
    let conf = slurm_common::conf::SlurmConf::parse(GRES_CONF, "slurm.conf")
        .unwrap()
        .conf;
    let base =
        || crate::core::Controller::new(&conf, crate::core::CtlConfig::from_conf(&conf, vec![]));
    let bytes = snapshot::encode(&env.ctl, 1);
    let loaded = snapshot::decode(&bytes, base(), false).unwrap().controller;
    for id in [a100s, v100, two, waiting] {
        assert_eq!(loaded.job(id).unwrap().spec.gres, env.job(id).spec.gres);
    }
    let request = loaded.job_request(loaded.job(waiting).unwrap());
    assert_eq!(request.excluded_nodes, vec![0, 1]);
}

/// Snapshots written before jobs kept their --gres (the job record one
/// field shorter) still load, as jobs asking for none.
#[test]
fn snapshot_job_records_without_gres_still_load() {
    let mut env = Env::new();
    env.register_all();
    env.submit(script());
    env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    let bytes = snapshot::encode(&env.ctl, 7);
    // Rewrite every job record without its last fields (the options kept
    // to be shown: fifteen zero bytes, then an empty text: four zero
    // bytes; then --switches, --container and --cluster-constraint:
    // thirteen more; what scontrol update sets: four; --prefer,
    // --mcs-label, --bb and --batch: sixteen; TresBind= and --profile:
    // eight; whether -n came with --ntasks-per-node: one), with its
    // length and checksum made again.
    let mut old = bytes[..snapshot::SNAPSHOT_HEADER_LEN].to_vec();
    let mut pos = snapshot::SNAPSHOT_HEADER_LEN;
    let mut cut = 0;
    while pos < bytes.len() {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = word(pos) as usize;
        let mut payload = bytes[pos + 8..pos + 8 + len].to_vec();
        if payload[0] == 3 {
            assert_eq!(payload.split_off(payload.len() - 61), vec![0; 61]);
            cut += 1;
        }
        old.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
        old.extend_from_slice(&crate::persist::crc::crc32(&payload).to_le_bytes());
        old.extend_from_slice(&payload);
        pos += 8 + len;
    }
    assert_eq!(cut, 2);
    let loaded = snapshot::decode(&old, Env::new().ctl, false).unwrap();
    assert!(loaded.damage.is_none());
    let ctl = loaded.controller;
    ctl.sanity_check().unwrap();
    assert_eq!(
        crate::core::snapshot::tests::fingerprint(&ctl),
        crate::core::snapshot::tests::fingerprint(&env.ctl)
    );
}

// ------------------------------------- cancel of a requeued completing job

/// scancel of a job requeued while its node still cleans up: as in Slurm
/// the job becomes CANCELLED at once, still COMPLETING (and holding its
/// share) until the node reports, and then never runs again.
#[test]
fn cancelling_a_requeued_completing_job_cancels_it() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    env.now += 5;
    let ended_at = env.now;
    // Requeued while running: PENDING+COMPLETING until n1 reports.
    assert_eq!(
        ok_results(&env.run(Command::Requeue {
            caller: ALICE,
            filter: filter(&[id]),
            hold: false,
        })),
        vec![(id, 0)]
    );
    assert!(env.job(id).status.flags.contains(JobFlag::Requeued));
    env.take_actions();
    env.now += 2;
    let before = env.events.len();
    let r = env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[id]),
        signal: None,
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    assert_eq!(
        env.events[before..],
        [Event::JobEnded {
            job_id: id,
            time: env.now,
            state: JobState::Cancelled,
            exit_status: 0,
            exit_signal: 0,
            reason: "None".into(),
            detail: String::new(),
            release: false,
        }]
    );
    // Its node was told to end it at the requeue: nothing new to send.
    assert!(env.take_actions().is_empty());
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Cancelled);
    assert!(job.status.is_completing());
    assert!(!job.status.flags.contains(JobFlag::Requeued));
    assert_eq!(job.status.code().short_code(), "CG");
    assert_eq!(job.end_time, ended_at);
    assert!(job.start_time <= job.end_time);
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 1);
    assert!(env.ctl.nodes()[0].state.has(NodeFlag::Completing));
    // Cancelled already.
    let r = env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[id]),
        signal: None,
    });
    assert_eq!(ok_results(&r), vec![(id, ErrorCode::AlreadyDone.number())]);
    // n1 reports: the job is done, and is not put back in the queue.
    let before = env.events.len();
    env.now += 3;
    assert_eq!(env.epilog(id, "n1", 0), Reply::Ok);
    assert!(matches!(
        env.events[before..],
        [Event::JobNodeReleased { .. }]
    ));
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Cancelled);
    assert!(!job.status.is_completing());
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);
    env.now += 200;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Cancelled);
    assert!(launched(&env.take_actions()).is_empty());

    let replayed = replay_encoded(CONF, &env.events);
    replayed.sanity_check().unwrap();
    let (a, b) = (env.job(id), replayed.job(id).unwrap());
    assert_eq!(
        (a.status, a.start_time, a.end_time, &a.last_alloc),
        (b.status, b.start_time, b.end_time, &b.last_alloc)
    );
    assert_eq!(replayed.nodes(), env.ctl.nodes());
}

// ------------------------------------------------ SubmitTime on requeue

/// As in Slurm, a requeued job counts as submitted again when it is back in
/// the queue: when its nodes are done with it, or at once when it held
/// none; one second later than before when that is the same second.
#[test]
fn a_requeued_job_is_submitted_again_when_back_in_the_queue() {
    let mut env = Env::new();
    env.register_all();
    let submitted = env.now;
    let id = env.submit(script());
    assert_eq!(env.job(id).submit_time, submitted);
    env.now += 10;
    env.run(Command::Requeue {
        caller: ALICE,
        filter: filter(&[id]),
        hold: false,
    });
    // Still completing: not in the queue yet.
    assert_eq!(env.job(id).submit_time, submitted);
    env.now += 4;
    env.epilog(id, "n1", 0);
    assert_eq!(env.job(id).submit_time, env.now);

    // A finished job whose nodes are done: back in the queue at once.
    let done = env.submit(script());
    env.finish(done, 0, 0);
    env.now += 7;
    env.run(Command::Requeue {
        caller: ALICE,
        filter: filter(&[done]),
        hold: true,
    });
    assert_eq!(env.job(done).submit_time, env.now);

    // A launch that fails the second the job was submitted.
    let quick = env.submit(script());
    let quick_at = env.now;
    env.run(Command::LaunchFailed {
        job_id: quick,
        detail: "connection refused".into(),
    });
    assert_eq!(env.job(quick).state(), JobState::Pending);
    assert_eq!(env.job(quick).submit_time, quick_at + 1);

    let replayed = replay_encoded(CONF, &env.events);
    for j in [id, done, quick] {
        assert_eq!(replayed.job(j).unwrap().submit_time, env.job(j).submit_time);
    }
}

// ----------------------------------------------- nohold_on_prolog_fail

fn prolog_failed(job_id: u32, node: &str) -> Command {
    Command::PrologFailed {
        job_id,
        node: node.into(),
        detail: "prolog failed".into(),
    }
}

/// A failed Prolog requeues the job held (JobHeldAdmin); with
/// SchedulerParameters=nohold_on_prolog_fail it is requeued without the
/// hold and starts on another node once the requeue delay has passed.
#[test]
fn nohold_on_prolog_fail_requeues_without_the_hold() {
    let held = {
        let mut env = Env::new();
        env.register_all();
        let id = env.submit(script());
        env.run(prolog_failed(id, "n1"));
        env.job(id).hold
    };
    assert_eq!(held, Some(slurm_sched::Hold::Admin));

    let conf = format!("{CONF}SchedulerParameters=defer,nohold_on_prolog_fail\n");
    let mut env = Env::with_conf(&conf);
    assert!(env.ctl.config().nohold_on_prolog_fail);
    assert!(!Env::new().ctl.config().nohold_on_prolog_fail);
    env.register_all();
    let id = env.submit(script());
    env.take_actions();
    let before = env.events.len();
    env.run(prolog_failed(id, "n1"));
    let requeue = env.events[before..]
        .iter()
        .find(|e| matches!(e, Event::JobRequeued { .. }))
        .cloned();
    assert_eq!(
        requeue,
        Some(Event::JobRequeued {
            job_id: id,
            time: env.now,
            hold: None,
            launch_failed: false,
            // No description without the hold: Reason=BeginTime shows.
            detail: String::new(),
            begin_time: Some(env.now + 121),
        })
    );
    assert!(env.ctl.nodes()[0].state.has(NodeFlag::Drain));
    let job = env.job(id);
    assert_eq!((job.state(), job.hold), (JobState::Pending, None));
    env.epilog(id, "n1", 0);
    assert_eq!(env.job(id).reason, PendingReason::BeginTime);
    env.now += 121;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(launched(&env.take_actions()), vec![(id, 1)]);
    let replayed = replay_encoded(&conf, &env.events);
    assert_eq!(replayed.job(id).unwrap().status, env.job(id).status);
}

// ------------------------------------------------- PrologComplete, Alloc

const ALLOC_CONF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PrologFlags=Alloc
NodeName=n[1-4] CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
";

fn prolog_report(job_id: u32, node: &str, error_code: i32) -> Command {
    Command::PrologComplete {
        caller: Caller::ROOT,
        request: v1::PrologCompleteRequest {
            job_id,
            node_name: node.into(),
            error_code,
            error_detail: "prolog /etc/slurm/prolog.sh failed for job 1 after 5 ms: exit status 1"
                .into(),
        },
    }
}

fn failed() -> i32 {
    ErrorCode::PrologFailed.number()
}

/// A two-node job on n1 and n2 (n1 the batch host); the actions its start
/// emitted.
fn two_node_start(env: &mut Env) -> (u32, Vec<Action>) {
    let mut d = script();
    d.min_nodes = Some(2);
    let id = env.submit(d);
    assert_eq!(env.job(id).state(), JobState::Running);
    (id, env.take_actions())
}

/// With PrologFlags=Alloc a starting job's Prolog is launched on every node
/// it has, before its batch launch; without it only the batch launch goes
/// out (the batch host runs the Prolog then).
#[test]
fn prolog_flags_alloc_launches_the_prolog_on_every_node_of_a_job() {
    let mut env = Env::with_conf(ALLOC_CONF);
    assert!(env.ctl.config().prolog_alloc);
    env.register_all();
    let (id, actions) = two_node_start(&mut env);
    let [Action::LaunchProlog {
        job_id,
        nodes,
        request,
    }, Action::LaunchBatch { node, .. }] = actions.as_slice()
    else {
        panic!("{actions:?}");
    };
    assert_eq!((*job_id, nodes.as_slice(), *node), (id, &[0, 1][..], 0));
    assert_eq!(
        *request,
        v1::LaunchPrologRequest {
            job_id: id,
            user_id: 1000,
            group_id: 1000,
            user_name: String::new(),
            nodes: "n[1-2]".into(),
            partition: "debug".into(),
            account: String::new(),
            work_dir: "/tmp".into(),
            constraint: String::new(),
        }
    );
    // Success reports change nothing.
    let before = env.events.len();
    for n in ["n1", "n2"] {
        assert_eq!(env.run(prolog_report(id, n, 0)), Reply::Ok);
    }
    assert_eq!(env.events.len(), before);
    assert!(env.take_actions().is_empty());
    assert_eq!(env.job(id).state(), JobState::Running);

    let mut plain = Env::new();
    assert!(!plain.ctl.config().prolog_alloc);
    plain.register_all();
    let (_, actions) = two_node_start(&mut plain);
    assert!(
        matches!(actions.as_slice(), [Action::LaunchBatch { .. }]),
        "{actions:?}"
    );
    // Contain implies Alloc.
    let contain = ALLOC_CONF.replace("PrologFlags=Alloc", "PrologFlags=Contain");
    assert!(Env::with_conf(&contain).ctl.config().prolog_alloc);
}

/// A Prolog that fails on a node other than the batch host drains that
/// node ("Prolog error") and requeues the job held, described as Slurm
/// describes it (scontrol shows Reason=launch_failed_requeued_held); the
/// node's error text stays out of the job. Every node of the job is told
/// to end it, and the job is back in the queue once both have cleaned up.
#[test]
fn a_prolog_failing_on_another_node_drains_it_and_requeues_the_job_held() {
    let mut env = Env::with_conf(ALLOC_CONF);
    env.register_all();
    let (id, _) = two_node_start(&mut env);
    env.now += 2;
    let before = env.events.len();
    assert_eq!(env.run(prolog_report(id, "n2", failed())), Reply::Ok);
    let now = env.now;
    assert_eq!(
        env.events[before..],
        [
            Event::NodeUpdated {
                node: "n2".into(),
                update: slurm_common::state::NodeUpdateState::Drain,
                reason: Some("Prolog error".into()),
                uid: 0,
                time: now,
            },
            Event::JobRequeued {
                job_id: id,
                time: now,
                hold: Some(slurm_sched::Hold::Admin),
                launch_failed: false,
                detail: "launch failed requeued held".into(),
                begin_time: Some(now + 121),
            },
        ]
    );
    let terminated: Vec<(u32, Vec<usize>)> = env
        .take_actions()
        .iter()
        .map(|a| match a {
            Action::TerminateJob { job_id, nodes, .. } => (*job_id, nodes.clone()),
            other => panic!("unexpected action {other:?}"),
        })
        .collect();
    assert_eq!(terminated, vec![(id, vec![0, 1])]);
    let job = env.job(id);
    assert_eq!(job.reason, PendingReason::JobHeldAdmin);
    assert_eq!(job.reason_detail, "launch failed requeued held");
    assert!(job.status.is_completing());
    let n2 = &env.ctl.nodes()[1];
    assert!(n2.state.has(NodeFlag::Drain));
    assert_eq!(n2.reason.as_deref(), Some("Prolog error"));
    assert!(!env.ctl.nodes()[0].state.has(NodeFlag::Drain));
    // The batch host's script was killed: its end changes nothing.
    assert_eq!(env.complete(id, 0, 15), Reply::Ok);
    env.epilog(id, "n1", 0);
    env.epilog(id, "n2", 0);
    let job = env.job(id);
    assert!(!job.status.is_completing());
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.reason_detail, "launch failed requeued held");

    // The same failure reported again (a retried report): nothing more.
    let before = env.events.len();
    env.run(prolog_report(id, "n2", failed()));
    assert_eq!(env.events.len(), before);
    // Released by an administrator: the description goes with the hold.
    env.run(Command::Release {
        caller: Caller::ROOT,
        filter: super::filter(&[id]),
    });
    assert_eq!(env.job(id).reason_detail, "");
    let replayed = replay_encoded(ALLOC_CONF, &env.events);
    let (a, b) = (replayed.job(id).unwrap(), env.job(id));
    assert_eq!((&a.reason_detail, a.status), (&b.reason_detail, b.status));
}

/// A failure reported for a job that no longer runs on the node (a late
/// report, after the job was requeued and started elsewhere) drains the
/// node but leaves the job alone; reports come only from slurmd, about
/// nodes slurm.conf defines.
#[test]
fn a_prolog_failure_for_a_job_not_on_the_node_only_drains_it() {
    let mut env = Env::with_conf(ALLOC_CONF);
    env.register_all();
    let (id, _) = two_node_start(&mut env);
    let before = env.events.len();
    env.run(prolog_report(id, "n3", failed()));
    assert!(
        matches!(
            &env.events[before..],
            [Event::NodeUpdated { node, reason: Some(r), .. }] if node == "n3" && r == "Prolog error"
        ),
        "{:?}",
        &env.events[before..]
    );
    assert_eq!(env.job(id).state(), JobState::Running);
    assert!(env.take_actions().is_empty());
    // Unknown jobs: the node is drained all the same (n4 here).
    env.run(prolog_report(999, "n4", failed()));
    assert!(env.ctl.nodes()[3].state.has(NodeFlag::Drain));
    // Only slurmd speaks for a node.
    let r = env.run(Command::PrologComplete {
        caller: ALICE,
        request: v1::PrologCompleteRequest {
            job_id: id,
            node_name: "n1".into(),
            error_code: failed(),
            error_detail: String::new(),
        },
    });
    assert_eq!(refusal(&r).0, ErrorCode::AccessDenied);
    let r = env.run(prolog_report(id, "nope", failed()));
    assert_eq!(refusal(&r).0, ErrorCode::InvalidNodeName);
    assert_eq!(env.job(id).state(), JobState::Running);
}

/// slurmd's JobComplete for job `id` on n1 whose launch failed with `code`.
fn launch_error_report(id: u32, code: ErrorCode) -> Command {
    Command::JobComplete {
        caller: Caller::ROOT,
        request: v1::JobCompleteRequest {
            job_id: id,
            node_name: "n1".into(),
            launch_error: code.number(),
            ..Default::default()
        },
    }
}

/// The three ways a failed Prolog reaches the controller end alike:
/// PrologComplete, the agent's PrologFailed (a slurmd that refuses the
/// launch) and JobComplete with ESLURMD_PROLOG_FAILED (as Slurm's slurmd
/// reports it).
#[test]
fn every_report_of_a_failed_prolog_ends_alike() {
    let outcome = |cmd: fn(u32) -> Command| {
        let mut env = Env::new();
        env.register_all();
        let id = env.submit(script());
        env.take_actions();
        let before = env.events.len();
        env.run(cmd(id));
        let job = env.job(id);
        (
            env.events[before..].to_vec(),
            job.reason,
            job.reason_detail.clone(),
            env.take_actions().len(),
        )
    };
    let reported = outcome(|id| prolog_report(id, "n1", ErrorCode::PrologFailed.number()));
    let refused = outcome(|id| prolog_failed(id, "n1"));
    let completed = outcome(|id| launch_error_report(id, ErrorCode::PrologFailed));
    assert_eq!(reported.1, PendingReason::JobHeldAdmin);
    assert_eq!(reported.2, "launch failed requeued held");
    assert_eq!(reported.3, 1, "one terminate");
    assert_eq!(reported, refused);
    assert_eq!(reported, completed);
}

/// A launch that fails for another reason keeps the node's error text out
/// of the job: requeued, it shows Reason=BeginTime, failed for good
/// Reason=JobLaunchFailure, each without a description.
#[test]
fn a_failed_launch_keeps_the_error_text_out_of_the_job() {
    let (mut env, id) = Env::running_job();
    env.run(launch_error_report(id, ErrorCode::ExecveFailed));
    let job = env.job(id);
    assert_eq!(
        (job.state(), job.reason),
        (JobState::Pending, PendingReason::BeginTime)
    );
    assert_eq!(job.reason_detail, "");
    env.now += 121;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
    env.run(Command::LaunchFailed {
        job_id: id,
        detail: "launch on n1 failed: connection refused".into(),
    });
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Failed);
    assert_eq!(job.reason, PendingReason::JobLaunchFailure);
    assert_eq!(job.reason_detail, "");
}

/// A script whose input or output file cannot be opened (`-o` into a
/// directory that does not exist) FAILS at once, never requeued, with
/// Slurm 22.05's `ExitCode=0:53` and Reason JobLaunchFailure.
#[test]
fn a_job_whose_files_cannot_be_opened_fails_without_a_requeue() {
    let (mut env, id) = Env::running_job();
    env.run(launch_error_report(id, ErrorCode::IoError));
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Failed);
    assert_eq!(job.reason, PendingReason::JobLaunchFailure);
    assert_eq!(job.restart_count, 0);
    let info = crate::rpc::convert::job_info(&env.ctl.snapshot(), job, env.now);
    let code = info.exit_code.unwrap_or_default();
    assert_eq!((code.status, code.signal), (0, 53));
}

/// A batch script killed by a signal FAILS with the reason Slurm 22.05
/// gives it, JobLaunchFailure, and `ExitCode=0:SIG`; a non-zero exit is
/// NonZeroExitCode.
#[test]
fn a_script_killed_by_a_signal_fails_as_in_slurm() {
    let (mut env, id) = Env::running_job();
    env.complete(id, 0, 9);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Failed);
    assert_eq!(job.reason, PendingReason::JobLaunchFailure);
    assert_eq!((job.exit_status, job.exit_signal), (0, 9));
    let (mut env, id) = Env::running_job();
    env.complete(id, 44, 0);
    assert_eq!(env.job(id).reason, PendingReason::NonZeroExitCode);
}

/// `scancel` of a running job records the SIGTERM that ends it
/// (`ExitCode=0:15`), of a pending one nothing (`0:0`), as Slurm 22.05.
#[test]
fn a_cancelled_job_shows_the_signal_that_ended_it() {
    let (mut env, id) = Env::running_job();
    let pending = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    for job in [id, pending] {
        env.run(Command::Cancel {
            caller: ALICE,
            filter: v1::JobFilter {
                job_ids: vec![job],
                ..Default::default()
            },
            signal: None,
        });
    }
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Cancelled);
    assert_eq!((job.exit_status, job.exit_signal), (0, 15));
    let job = env.job(pending);
    assert_eq!((job.exit_status, job.exit_signal), (0, 0));
}

/// A snapshot written before CPU ids were kept (no CPUS records) still
/// loads: running jobs are given ids then, distinct on each node.
#[test]
fn snapshot_without_cpu_ids_gives_running_jobs_some() {
    let mut env = Env::new();
    env.register_all();
    let a = env.submit(script());
    let b = env.submit(script());
    let bytes = snapshot::encode(&env.ctl, 7);
    let mut old = bytes[..snapshot::SNAPSHOT_HEADER_LEN].to_vec();
    let mut pos = snapshot::SNAPSHOT_HEADER_LEN;
    let mut removed = 0u32;
    while pos < bytes.len() {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = word(pos) as usize;
        let mut payload = bytes[pos + 8..pos + 8 + len].to_vec();
        pos += 8 + len;
        if payload[0] == 14 {
            removed += 1;
            continue;
        }
        if payload[0] == 4 {
            let count = u32::from_le_bytes(payload[1..5].try_into().unwrap()) - removed;
            payload[1..5].copy_from_slice(&count.to_le_bytes());
        }
        old.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
        old.extend_from_slice(&crate::persist::crc::crc32(&payload).to_le_bytes());
        old.extend_from_slice(&payload);
    }
    assert_eq!(removed, 2);
    let loaded = snapshot::decode(&old, Env::new().ctl, false).unwrap();
    assert!(loaded.damage.is_none());
    let ctl = loaded.controller;
    ctl.sanity_check().unwrap();
    for id in [a, b] {
        assert_eq!(ctl.job(id).unwrap().cpu_ids.len(), 1, "job {id}");
    }
}
