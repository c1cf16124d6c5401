//! `scontrol update JobId=...` beyond names and limits: the job's texts
//! (account, node lists, features, paths, mail), its task count, CPUs
//! and memory, checked as a submission is; `TimeLimit+=` / `-=`; an
//! array's throttle; `Gres=` and `WCKey=` of a pending job; and
//! `Reservation=`, refused for any name while no reservation exists.

use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;
use slurm_proto::v1;
use slurm_proto::ErrorCode;
use slurm_sched::MemReq;

use super::{filter, ok_results, replay_encoded, script, Env, ALICE, BOB, CONF};
use crate::core::{Caller, Command, Controller, Reply};
use crate::rpc::convert::job_info;

/// `scontrol update JobId=ID ...` as `caller`, the fields set by `f`.
pub(super) fn update(
    id: u32,
    caller: Caller,
    f: impl FnOnce(&mut v1::UpdateJobRequest),
) -> Command {
    let mut r = v1::UpdateJobRequest {
        filter: Some(filter(&[id])),
        ..Default::default()
    };
    f(&mut r);
    Command::UpdateJob {
        caller,
        request: Box::new(r),
    }
}

fn code(env: &mut Env, cmd: Command) -> i32 {
    let r = env.run(cmd);
    let results = ok_results(&r);
    assert_eq!(results.len(), 1, "{r:?}");
    results[0].1
}

fn minutes(m: u32) -> Option<v1::TimeLimit> {
    Some(v1::TimeLimit {
        limit: Some(v1::time_limit::Limit::Minutes(m)),
    })
}

#[test]
fn texts_tasks_cpus_and_memory_of_a_pending_job_change() {
    // With accounting storage: accounts and QOS are kept.
    let conf = format!("{CONF}AccountingStorageType=accounting_storage/slurmdbd\n");
    let mut env = Env::with_conf(&conf);
    let id = env.submit(script());
    let other = env.submit(script());
    let r = env.run(update(id, ALICE, |r| {
        r.account = Some("physics".into());
        r.qos = Some("high".into());
        r.required_nodes = Some("n1".into());
        r.excluded_nodes = Some("n[3-4]".into());
        r.work_dir = Some("/var/tmp".into());
        r.stdout_path = Some("/tmp/o-%j".into());
        r.stderr_path = Some("/tmp/e-%j".into());
        r.mail_type = Some("END".into());
        r.mail_user = Some("a@b".into());
        r.requeue = Some(false);
        r.ntasks = Some(2);
        r.cpus_per_task = Some(1);
        r.memory = Some(v1::update_job_request::Memory::MemPerNodeMb(1000));
    }));
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    let job = env.job(id);
    assert_eq!(&*job.spec.account, "physics");
    assert_eq!(&*job.spec.qos, "high");
    assert_eq!(&*job.spec.required_nodes, "n1");
    assert_eq!(&*job.spec.excluded_nodes, "n[3-4]");
    assert_eq!(&*job.spec.work_dir, "/var/tmp");
    assert_eq!(&*job.spec.stdout_path, "/tmp/o-%j");
    assert_eq!(&*job.spec.stderr_path, "/tmp/e-%j");
    assert_eq!((&*job.spec.mail_type, &*job.spec.mail_user), ("END", "a@b"));
    assert!(!job.requeue);
    assert_eq!((job.shape.ntasks, job.shape.cpus_per_task), (2, 1));
    assert_eq!(job.shape.mem, Some(MemReq::PerNode(1000)));
    // The other job had the same spec (shared); it keeps its own.
    assert_eq!(&*env.job(other).spec.account, "");
    assert_eq!(&*env.job(other).spec.work_dir, "/tmp");

    // Replaying the journal gives the same record.
    let replayed = replay_encoded(&conf, &env.events);
    let again = replayed.job(id).unwrap();
    assert_eq!(again.spec.clone(), env.job(id).spec.clone());
    assert_eq!(again.shape, env.job(id).shape);
    assert_eq!(again.requeue, env.job(id).requeue);

    // Started on the nodes it names, with what it asks for.
    env.register_all();
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Running);
    let nodes: Vec<usize> = job.alloc.iter().map(|a| a.node_index).collect();
    assert_eq!(nodes, vec![0]);
}

/// Without accounting storage, as Slurm 22.05: a new account or QOS is
/// accepted and not kept; the rest of the request still applies.
#[test]
fn account_and_qos_changes_are_kept_only_with_accounting() {
    let mut env = Env::new();
    let mut d = script();
    d.account = "acct".into();
    let id = env.submit(d);
    let r = env.run(update(id, ALICE, |r| {
        r.account = Some("physics".into());
        r.qos = Some("high".into());
        r.comment = Some("kept".into());
        // No array: nothing to throttle, and no refusal either.
        r.array_task_throttle = Some(2);
    }));
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    let job = env.job(id);
    assert_eq!((&*job.spec.account, &*job.spec.qos), ("acct", ""));
    assert_eq!(job.comment, "kept");
}

/// Slurm 22.05 takes a change no node can satisfy (`MinMemoryNode=` above
/// every node, `Features=a*2` on a one-node partition); the job then waits
/// with BadConstraints. A feature no node has is refused.
#[test]
fn node_configuration_no_node_offers_is_kept() {
    let mut env = Env::new();
    env.register_all();
    let mut d = script();
    d.hold = true;
    let id = env.submit(d);
    let r = update(id, ALICE, |r| {
        r.memory = Some(v1::update_job_request::Memory::MemPerNodeMb(9000));
    });
    assert_eq!(code(&mut env, r), 0);
    assert_eq!(env.job(id).shape.mem, Some(MemReq::PerNode(9000)));
    let r = update(id, ALICE, |r| r.features = Some("fast".into()));
    assert_eq!(code(&mut env, r), ErrorCode::InvalidFeature.number());
    env.run(Command::Release {
        caller: ALICE,
        filter: filter(&[id]),
    });
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(
        job.reason,
        slurm_common::reason::PendingReason::BadConstraints
    );
}

/// `--prefer`: kept and shown, used first by the scheduler; `Prefer=`
/// changes it while pending (unknown or unreadable features: an invalid
/// preferred feature specification). `BurstBuffer=` is not supported.
#[test]
fn prefer_at_submission_and_by_update() {
    let conf = CONF.replace(
        "NodeName=n[1-4] CPUs=2 RealMemory=4000 State=UNKNOWN",
        "NodeName=n[1-3] CPUs=2 RealMemory=4000 State=UNKNOWN\n\
         NodeName=n4 CPUs=2 RealMemory=4000 Features=big State=UNKNOWN",
    );
    let mut env = Env::with_conf(&conf);
    env.register_all();
    let mut d = script();
    d.prefer = "big".into();
    let id = env.submit(d);
    let job = env.job(id);
    assert_eq!(&*job.spec.shown().prefer, "big");
    let nodes: Vec<usize> = job.alloc.iter().map(|a| a.node_index).collect();
    assert_eq!(nodes, vec![3], "the preferred node first");
    let mut d = script();
    d.prefer = "huge".into();
    assert_eq!(
        env.submit_as(ALICE, d),
        Reply::error(ErrorCode::InvalidPrefer, "")
    );

    let mut d = script();
    d.hold = true;
    let id = env.submit(d);
    for (text, want) in [
        ("big,big", 0),
        ("huge", ErrorCode::InvalidPrefer.number()),
        ("((big))", ErrorCode::InvalidPrefer.number()),
    ] {
        let r = update(id, ALICE, |r| r.prefer = Some(text.into()));
        assert_eq!(code(&mut env, r), want, "{text}");
    }
    assert_eq!(&*env.job(id).spec.shown().prefer, "big&big");
    let r = update(id, ALICE, |r| r.burst_buffer = Some("x".into()));
    assert_eq!(code(&mut env, r), ErrorCode::NotSupported.number());
}

/// `NumNodes=` asking more CPUs than the partition has (one CPU a node) is
/// kept and answered "Requested partition configuration not available
/// now", as Slurm 22.05 does.
#[test]
fn node_count_beyond_the_partition_cpus_is_kept_and_refused() {
    let mut env = Env::new();
    let id = env.submit(script());
    let total: u32 = env.ctl.nodes.iter().map(|n| n.cpus).sum();
    let r = update(id, ALICE, |r| r.min_nodes = Some(total + 1));
    assert_eq!(
        code(&mut env, r),
        ErrorCode::RequestedPartConfigUnavailable.number()
    );
    assert_eq!(env.job(id).shape.min_nodes, total + 1);
    let id = env.submit(script());
    let r = update(id, ALICE, |r| r.min_nodes = Some(total));
    assert_eq!(code(&mut env, r), 0);
}

#[test]
fn impossible_or_malformed_changes_are_refused_and_change_nothing() {
    let mut env = Env::new();
    let id = env.submit(script());
    let before = format!("{:?}", env.job(id));
    let cases: Vec<(ErrorCode, Command)> = vec![
        (
            ErrorCode::InvalidFeature,
            update(id, ALICE, |r| r.features = Some("fast".into())),
        ),
        (
            ErrorCode::InvalidFeature,
            update(id, ALICE, |r| r.features = Some("a&&|b".into())),
        ),
        (
            ErrorCode::InvalidNodeName,
            update(id, ALICE, |r| r.excluded_nodes = Some("zz[9".into())),
        ),
        (
            ErrorCode::InvalidNodeName,
            update(id, ALICE, |r| r.required_nodes = Some("n9".into())),
        ),
        (
            ErrorCode::BadTaskCount,
            update(id, ALICE, |r| r.ntasks = Some(0)),
        ),
        (
            ErrorCode::InvalidCpuCount,
            update(id, ALICE, |r| r.cpus_per_task = Some(0)),
        ),
        (
            // Without GresTypes no GRES exists.
            ErrorCode::InvalidGres,
            update(id, ALICE, |r| r.gres = Some("gpu:1".into())),
        ),
        (
            ErrorCode::ReservationInvalid,
            update(id, ALICE, |r| {
                r.name = Some("x".into());
                r.wckey = Some("w".into());
                r.reservation = Some("maint".into());
            }),
        ),
        (
            ErrorCode::InvalidLicenses,
            update(id, ALICE, |r| r.licenses = Some("matlab".into())),
        ),
        (
            ErrorCode::InvalidTimeValue,
            update(id, ALICE, |r| r.deadline = Some(1)),
        ),
    ];
    let events = env.events.len();
    for (want, cmd) in cases {
        let what = format!("{cmd:?}");
        assert_eq!(code(&mut env, cmd), want.number(), "{what}");
    }
    assert_eq!(env.events.len(), events, "nothing journaled");
    assert_eq!(format!("{:?}", env.job(id)), before);

    // A running job keeps its placement: only pending jobs move.
    let (mut env, id) = Env::running_job();
    let c = code(
        &mut env,
        update(id, ALICE, |r| r.excluded_nodes = Some("n1".into())),
    );
    assert_eq!(c, ErrorCode::JobNotPending.number());
    assert_eq!(
        code(&mut env, update(id, ALICE, |r| r.requeue = Some(false))),
        0
    );
    assert!(!env.job(id).requeue);
}

#[test]
fn time_limit_increments_and_decrements() {
    let mut env = Env::new();
    let id = env.submit(v1::JobDescription {
        time_limit: minutes(10),
        ..script()
    });
    let change = |delta: i32, caller: Caller| {
        update(id, caller, move |r| {
            r.time_limit_change_minutes = Some(delta)
        })
    };
    assert_eq!(code(&mut env, change(5, Caller::ROOT)), 0);
    assert_eq!(env.job(id).shape.time_limit, Some(TimeLimit::Minutes(15)));
    assert_eq!(code(&mut env, change(-3, ALICE)), 0);
    assert_eq!(env.job(id).shape.time_limit, Some(TimeLimit::Minutes(12)));
    // Only an operator may raise it; it cannot go below zero.
    assert_eq!(
        code(&mut env, change(1, ALICE)),
        ErrorCode::AccessDenied.number()
    );
    assert_eq!(
        code(&mut env, change(-13, ALICE)),
        ErrorCode::InvalidTimeLimit.number()
    );
    // A new limit and a change at once contradict each other.
    let both = update(id, Caller::ROOT, |r| {
        r.time_limit = minutes(20);
        r.time_limit_change_minutes = Some(1);
    });
    assert_eq!(code(&mut env, both), ErrorCode::InvalidTimeLimit.number());
    assert_eq!(env.job(id).shape.time_limit, Some(TimeLimit::Minutes(12)));
    // An unlimited job has nothing to add to.
    let open = env.submit(script());
    let c = code(
        &mut env,
        update(open, Caller::ROOT, |r| {
            r.time_limit_change_minutes = Some(5)
        }),
    );
    assert_eq!(c, ErrorCode::InvalidTimeLimit.number());
}

#[test]
fn an_arrays_throttle_changes_on_its_meta_record() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(v1::JobDescription {
        array_spec: "0-5%1".into(),
        ..script()
    });
    let running = |env: &Env| {
        env.ctl
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .count()
    };
    assert_eq!(running(&env), 1);
    // The array's id names the meta record and the running task; the
    // task takes no throttle of its own.
    let r = env.run(update(id, ALICE, |r| r.array_task_throttle = Some(3)));
    assert!(ok_results(&r).iter().all(|(_, c)| *c == 0), "{r:?}");
    assert_eq!(env.job(id).array.as_ref().unwrap().throttle, 3);
    assert_eq!(running(&env), 3);
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(
        replayed.job(id).unwrap().array.as_ref().unwrap().throttle,
        3
    );
}

/// `Deadline=`, `TimeMin=` and `Licenses=` of a pending job: checked as at
/// submission, kept through a replay and a snapshot, and acted on.
#[test]
fn deadline_time_min_and_licenses_of_a_pending_job() {
    let conf = format!("{CONF}Licenses=matlab:4\n");
    let mut env = Env::with_conf(&conf);
    let id = env.submit(v1::JobDescription {
        time_limit: minutes(30),
        hold: true,
        ..script()
    });
    let deadline = env.now + 3600;
    let cases = [
        (
            ErrorCode::InvalidTimeMin,
            update(id, ALICE, |r| r.time_min_minutes = Some(31)),
        ),
        // With a new limit in the same request, the new limit counts.
        (
            ErrorCode::InvalidTimeMin,
            update(id, ALICE, |r| {
                r.time_min_minutes = Some(20);
                r.time_limit_change_minutes = Some(-15);
            }),
        ),
        (
            ErrorCode::InvalidLicenses,
            update(id, ALICE, |r| r.licenses = Some("matlab:5".into())),
        ),
    ];
    for (want, cmd) in cases {
        assert_eq!(code(&mut env, cmd), want.number());
    }
    let ok = update(id, ALICE, |r| {
        r.deadline = Some(deadline);
        r.time_min_minutes = Some(10);
        r.licenses = Some("matlab:2".into());
    });
    assert_eq!(code(&mut env, ok), 0);
    // A limit under the --time-min now kept is refused as Slurm does.
    let under = update(id, ALICE, |r| r.time_limit_change_minutes = Some(-25));
    assert_eq!(code(&mut env, under), ErrorCode::InvalidTimeMin.number());
    let x = env.job(id).spec.extras.clone().expect("options kept");
    assert_eq!((x.deadline, x.time_min_minutes), (deadline, Some(10)));
    assert_eq!(x.licenses_shown(), "matlab:2");
    let replayed = replay_encoded(&conf, &env.events);
    assert_eq!(replayed.job(id).unwrap().spec.extras, Some(x.clone()));
    let bytes = crate::core::snapshot::encode(&env.ctl, 2);
    let parsed = slurm_common::conf::SlurmConf::parse(&conf, "slurm.conf")
        .unwrap()
        .conf;
    let base =
        crate::core::Controller::new(&parsed, crate::core::CtlConfig::from_conf(&parsed, vec![]));
    let loaded = crate::core::snapshot::decode(&bytes, base, false)
        .unwrap()
        .controller;
    assert_eq!(loaded.job(id).unwrap().spec.extras, Some(x));
    // Cleared again: the job has no options left.
    let clear = update(id, ALICE, |r| {
        r.deadline = Some(0);
        r.time_min_minutes = Some(0);
        r.licenses = Some(String::new());
    });
    assert_eq!(code(&mut env, clear), 0);
    assert_eq!(env.job(id).spec.extras, None);
    // A deadline the job cannot make any more ends it, never having run,
    // once it is no longer held (Slurm checks only jobs it may start).
    let id = env.submit(v1::JobDescription {
        time_limit: minutes(30),
        hold: true,
        ..script()
    });
    assert_eq!(
        code(&mut env, update(id, ALICE, |r| r.deadline = Some(deadline))),
        0
    );
    env.now = deadline - 60;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Pending);
    env.run(Command::Release {
        caller: ALICE,
        filter: super::filter(&[id]),
    });
    assert_eq!(env.job(id).state(), JobState::Deadline);
    // Only pending jobs change this way.
    let (mut env, id) = Env::running_job();
    let c = code(
        &mut env,
        update(id, ALICE, |r| r.time_min_minutes = Some(1)),
    );
    assert_eq!(c, ErrorCode::JobNotPending.number());
}

/// Nodes with GPUs (n3, n4) and without (n1, n2).
const GRES_CONF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
MinJobAge=300
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
NodeName=n[1-2] CPUs=2 RealMemory=4000 State=UNKNOWN
NodeName=n[3-4] CPUs=2 RealMemory=4000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=small Nodes=n[1-2] MaxTime=INFINITE State=UP
";

/// The controller a restart would load from a snapshot of `ctl`, on the
/// slurm.conf `conf`.
fn reloaded(conf: &str, ctl: &Controller) -> Controller {
    let parsed = slurm_common::conf::SlurmConf::parse(conf, "slurm.conf")
        .unwrap()
        .conf;
    let base = Controller::new(&parsed, crate::core::CtlConfig::from_conf(&parsed, vec![]));
    let bytes = crate::core::snapshot::encode(ctl, 2);
    let loaded = crate::core::snapshot::decode(&bytes, base, false).unwrap();
    assert!(loaded.damage.is_none(), "{:?}", loaded.damage);
    loaded.controller
}

/// TresPerNode as `scontrol show job` and `squeue -o %b` get it.
fn tres_per_node(env: &Env, id: u32) -> String {
    job_info(&env.ctl.snapshot(), env.job(id), env.now).gres
}

/// The WCKey the controller reports for the job.
fn wckey(env: &Env, id: u32) -> String {
    job_info(&env.ctl.snapshot(), env.job(id), env.now).wckey
}

#[test]
fn gres_of_a_pending_job_changes_and_places_it() {
    let mut env = Env::with_conf(GRES_CONF);
    let id = env.submit(script());
    let other = env.submit(script());
    assert!(env.job(id).spec.is_shared_with(&env.job(other).spec));
    assert_eq!(
        code(
            &mut env,
            update(id, ALICE, |r| r.gres = Some(" gpu:2 ".into()))
        ),
        0
    );
    assert_eq!(&*env.job(id).spec.gres, "gpu:2");
    assert_eq!(tres_per_node(&env, id), "gres:gpu:2");
    // The job it shared its spec with keeps its own.
    assert_eq!(&*env.job(other).spec.gres, "");
    assert_eq!(tres_per_node(&env, other), "");
    // Kept through the journal and a snapshot.
    let replayed = replay_encoded(GRES_CONF, &env.events);
    assert_eq!(replayed.job(id).unwrap().spec, env.job(id).spec);
    let loaded = reloaded(GRES_CONF, &env.ctl);
    assert_eq!(&*loaded.job(id).unwrap().spec.gres, "gpu:2");
    assert_eq!(&*loaded.job(other).unwrap().spec.gres, "");
    // The scheduler places it on a node with two GPUs; the other job
    // goes where it fits first.
    env.register_all();
    let node = |env: &Env, id: u32| {
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Running, "job {id}");
        env.ctl.nodes()[job.alloc[0].node_index].name.clone()
    };
    assert!(["n3", "n4"].contains(&node(&env, id).as_str()));
    assert_eq!(node(&env, other), "n1");
}

#[test]
fn gres_cleared_lets_a_job_run_where_it_could_not() {
    let mut env = Env::with_conf(GRES_CONF);
    let id = env.submit(v1::JobDescription {
        gres: "gpu:1".into(),
        partitions: vec!["debug".into()],
        ..script()
    });
    assert_eq!(tres_per_node(&env, id), "gres:gpu:1");
    // Into the partition without GPUs, the request dropped at once.
    let r = update(id, ALICE, |r| {
        r.partition = Some("small".into());
        r.gres = Some(String::new());
    });
    assert_eq!(code(&mut env, r), 0);
    assert_eq!(&*env.job(id).spec.gres, "");
    assert_eq!(tres_per_node(&env, id), "");
    let replayed = replay_encoded(GRES_CONF, &env.events);
    assert_eq!(&*replayed.job(id).unwrap().spec.gres, "");
    assert_eq!(
        &*reloaded(GRES_CONF, &env.ctl).job(id).unwrap().spec.gres,
        ""
    );
    env.register_all();
    assert_eq!(env.job(id).state(), JobState::Running);
}

#[test]
fn gres_changes_refused_change_nothing() {
    let mut env = Env::with_conf(GRES_CONF);
    let id = env.submit(v1::JobDescription {
        gres: "gpu:1".into(),
        ..script()
    });
    let before = format!("{:?}", env.job(id));
    let gres = |text: &str| {
        let text = text.to_string();
        update(id, ALICE, move |r| r.gres = Some(text))
    };
    let cases = [
        (ErrorCode::InvalidGres, gres("gpu:a:b:c")),
        (ErrorCode::InvalidGres, gres("gpu:1(S:0)")),
        (ErrorCode::InvalidGres, gres("nic:1")),
        (ErrorCode::InvalidGres, gres("gpu:99999999999999999999")),
        (ErrorCode::InvalidGres, gres("g\u{e9}u:1,[")),
        (ErrorCode::RequestedNodeConfigUnavailable, gres("gpu:3")),
        // Held against the partition the job moves to.
        (
            ErrorCode::RequestedNodeConfigUnavailable,
            update(id, ALICE, |r| r.partition = Some("small".into())),
        ),
        (
            ErrorCode::RequestedNodeConfigUnavailable,
            update(id, ALICE, |r| {
                r.partition = Some("small".into());
                r.gres = Some("gpu:1".into());
            }),
        ),
        // Only the owner or an operator changes a job (Slurm's "Invalid
        // user id" for anyone else).
        (ErrorCode::InvalidUserId, update(id, BOB, |r| r.gres = None)),
    ];
    let events = env.events.len();
    for (want, cmd) in cases {
        let what = format!("{cmd:?}");
        assert_eq!(code(&mut env, cmd), want.number(), "{what}");
    }
    assert_eq!(env.events.len(), events, "nothing journaled");
    assert_eq!(format!("{:?}", env.job(id)), before);
    // An operator changes another user's job.
    assert_eq!(
        code(
            &mut env,
            update(id, Caller::ROOT, |r| r.gres = Some("gpu:2".into()))
        ),
        0
    );
    assert_eq!(&*env.job(id).spec.gres, "gpu:2");

    // Once running, the job keeps what it started with, whatever is asked.
    let (mut env, id) = Env::running_job();
    let events = env.events.len();
    for text in ["gpu:1", "", "gpu:a:b:c"] {
        let c = code(&mut env, update(id, ALICE, |r| r.gres = Some(text.into())));
        assert_eq!(c, ErrorCode::JobNotPending.number(), "{text:?}");
    }
    assert_eq!(env.events.len(), events);
}

#[test]
fn wckey_of_a_pending_job_is_set_and_cleared() {
    let mut env = Env::new();
    let id = env.submit(v1::JobDescription {
        wckey: "sub".into(),
        ..script()
    });
    assert_eq!(wckey(&env, id), "sub");
    // A leading `*` (Slurm's mark of a default key) is kept as given.
    assert_eq!(
        code(
            &mut env,
            update(id, ALICE, |r| r.wckey = Some("*ops".into()))
        ),
        0
    );
    assert_eq!(&*env.job(id).spec.wckey, "*ops");
    assert_eq!(wckey(&env, id), "*ops");
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(&*replayed.job(id).unwrap().spec.wckey, "*ops");
    assert_eq!(
        &*reloaded(CONF, &env.ctl).job(id).unwrap().spec.wckey,
        "*ops"
    );
    assert_eq!(
        code(&mut env, update(id, BOB, |r| r.wckey = Some("x".into()))),
        ErrorCode::InvalidUserId.number()
    );
    assert_eq!(
        code(
            &mut env,
            update(id, ALICE, |r| r.wckey = Some(String::new()))
        ),
        0
    );
    assert_eq!(wckey(&env, id), "");
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(&*replayed.job(id).unwrap().spec.wckey, "");
    assert_eq!(&*reloaded(CONF, &env.ctl).job(id).unwrap().spec.wckey, "");
}

/// As Slurm's controller: a running job's key stays; asking for the key
/// it has already changes nothing and is no error.
#[test]
fn wckey_of_a_running_job_stays() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(v1::JobDescription {
        wckey: "w1".into(),
        ..script()
    });
    assert_eq!(env.job(id).state(), JobState::Running);
    let events = env.events.len();
    assert_eq!(
        code(&mut env, update(id, ALICE, |r| r.wckey = Some("w2".into()))),
        ErrorCode::JobNotPending.number()
    );
    assert_eq!(
        code(&mut env, update(id, ALICE, |r| r.wckey = Some("w1".into()))),
        0
    );
    assert_eq!(env.events.len(), events, "nothing journaled");
    assert_eq!(wckey(&env, id), "w1");
}

#[test]
fn reservation_names_are_refused_and_clearing_is_accepted() {
    let mut env = Env::new();
    let id = env.submit(script());
    let before = format!("{:?}", env.job(id));
    let events = env.events.len();
    let r = update(id, ALICE, |r| r.reservation = Some("maint".into()));
    assert_eq!(code(&mut env, r), 2053);
    assert_eq!(
        ErrorCode::ReservationInvalid.number(),
        2053,
        "ESLURM_RESERVATION_INVALID"
    );
    for clear in ["", "  "] {
        let r = update(id, ALICE, |r| r.reservation = Some(clear.into()));
        assert_eq!(code(&mut env, r), 0, "{clear:?}");
    }
    assert_eq!(env.events.len(), events, "nothing journaled");
    assert_eq!(format!("{:?}", env.job(id)), before);
    // With another change, only that one is journaled.
    let r = update(id, ALICE, |r| {
        r.reservation = Some(String::new());
        r.comment = Some("c".into());
    });
    assert_eq!(code(&mut env, r), 0);
    assert_eq!(env.job(id).comment, "c");
    assert_eq!(env.events.len(), events + 1);
    // Running jobs too: no reservation to leave.
    let (mut env, id) = Env::running_job();
    let r = update(id, ALICE, |r| r.reservation = Some(String::new()));
    assert_eq!(code(&mut env, r), 0);
    let r = update(id, ALICE, |r| r.reservation = Some("maint".into()));
    assert_eq!(code(&mut env, r), ErrorCode::ReservationInvalid.number());
}

/// `NumCPUs=` and `MinCPUsNode=` set a pending job's CPU count (shown and
/// counted in its TRES), which a later change of its tasks leaves as it
/// was, as Slurm 22.05 keeps the count it computed at submission; the job
/// then gets that many CPUs.
#[test]
fn cpu_count_is_set_and_kept_across_task_changes() {
    let mut env = Env::new();
    let id = env.submit(script());
    let shown = |env: &Env| {
        let info = job_info(&env.ctl.snapshot(), env.job(id), env.now);
        let cpu = info
            .tres_requested
            .as_ref()
            .and_then(|t| t.items.iter().find(|i| i.r#type == "cpu").map(|i| i.count));
        (info.num_cpus, info.max_cpus, info.min_cpus_per_node, cpu)
    };
    // More tasks: the count stays (TRES too), MinCPUsNode as well.
    assert_eq!(code(&mut env, update(id, ALICE, |r| r.ntasks = Some(2))), 0);
    assert_eq!(shown(&env), (1, 0, 1, Some(1)));
    assert_eq!(
        code(&mut env, update(id, ALICE, |r| r.cpus_per_task = Some(2))),
        0
    );
    assert_eq!(shown(&env), (1, 0, 1, Some(1)));
    // NumCPUs= sets it; a range is shown while pending.
    let r = update(id, ALICE, |r| {
        r.cpus_per_task = Some(1);
        r.min_cpus = Some(2);
        r.max_cpus = Some(4);
    });
    assert_eq!(code(&mut env, r), 0);
    assert_eq!(shown(&env), (2, 4, 1, Some(2)));
    // MinCPUsNode= sets both, and NumCPUs= given with it wins.
    let r = update(id, ALICE, |r| r.min_cpus_per_node = Some(1));
    assert_eq!(code(&mut env, r), 0);
    assert_eq!(shown(&env), (1, 4, 1, Some(1)));
    let r = update(id, ALICE, |r| {
        r.min_cpus_per_node = Some(2);
        r.min_cpus = Some(1);
        r.max_cpus = None;
    });
    assert_eq!(code(&mut env, r), 0);
    assert_eq!(shown(&env), (1, 0, 2, Some(1)));
    // A count of 0, or a range upside down, is refused.
    let r = update(id, ALICE, |r| r.min_cpus = Some(0));
    assert_eq!(code(&mut env, r), ErrorCode::InvalidCpuCount.number());
    let r = update(id, ALICE, |r| {
        r.min_cpus = Some(3);
        r.max_cpus = Some(2);
    });
    assert_eq!(code(&mut env, r), ErrorCode::InvalidCpuCount.number());

    // Replay and a snapshot give the same record.
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(
        replayed.job(id).unwrap().spec.clone(),
        env.job(id).spec.clone()
    );
    let reloaded = super::snapshot_reloaded(&env.ctl);
    assert_eq!(
        reloaded.job(id).unwrap().spec.clone(),
        env.job(id).spec.clone()
    );

    // Two CPUs on one node once it runs (MinCPUsNode=2), two tasks.
    env.register_all();
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Running);
    assert_eq!(job.alloc.iter().map(|a| a.cpus).sum::<u32>(), 2);
}

/// As Slurm 22.05 (two nodes of 2 CPUs there, four here): more CPUs per
/// node than any node has but no more than the partition's is taken
/// (`MinCPUsNode=3`); more CPUs or nodes than the partition has is kept
/// all the same and answered "Requested partition configuration not
/// available now", with whatever else the request changes. Either way the
/// job cannot start.
#[test]
fn cpu_count_beyond_the_partition_is_kept_and_refused() {
    let mut env = Env::new();
    let id = env.submit(script());
    let r = update(id, ALICE, |r| {
        r.min_cpus_per_node = Some(3);
        r.name = Some("kept".into());
    });
    assert_eq!(code(&mut env, r), 0);
    let job = env.job(id);
    assert_eq!(job.name, "kept");
    assert_eq!(job.pending_cpus(), 3);
    assert_eq!(job.min_cpus_per_node(), 3);
    env.register_all();
    assert_eq!(env.job(id).state(), JobState::Pending);
    // Three nodes of 3 CPUs: more than the partition's 8.
    let r = update(id, ALICE, |r| r.min_nodes = Some(3));
    assert_eq!(
        code(&mut env, r),
        ErrorCode::RequestedPartConfigUnavailable.number()
    );
    assert_eq!(env.job(id).shape.min_nodes, 3);
    assert_eq!(env.job(id).pending_cpus(), 9);
    let r = update(id, ALICE, |r| {
        r.min_cpus = Some(2);
        r.ntasks = Some(100);
        r.min_nodes = Some(9);
    });
    assert_eq!(
        code(&mut env, r),
        ErrorCode::RequestedPartConfigUnavailable.number()
    );
    let job = env.job(id);
    assert_eq!((job.shape.ntasks, job.shape.min_nodes), (100, 9));
    assert_eq!(job.state(), JobState::Pending);
}

/// As Slurm 22.05 on nodes of 2 CPUs: `MinCPUsNode=` counts on each of
/// the job's nodes (with `NumNodes=2`, in the same request or a later one,
/// NumCPUs is 4), and `NumCPUs=3` for a job given no task count is taken,
/// to run on two nodes, 2 CPUs and 1.
#[test]
fn cpu_counts_span_the_nodes_as_in_slurm() {
    let mut env = Env::new();
    let cpus = |env: &Env, id: u32| env.job(id).pending_cpus();
    for two_steps in [false, true] {
        let id = env.submit(script());
        if two_steps {
            let r = update(id, ALICE, |r| r.min_cpus_per_node = Some(2));
            assert_eq!(code(&mut env, r), 0);
            assert_eq!(cpus(&env, id), 2);
            let r = update(id, ALICE, |r| r.min_nodes = Some(2));
            assert_eq!(code(&mut env, r), 0);
        } else {
            let r = update(id, ALICE, |r| {
                r.min_cpus_per_node = Some(2);
                r.min_nodes = Some(2);
            });
            assert_eq!(code(&mut env, r), 0);
        }
        assert_eq!(cpus(&env, id), 4, "two steps: {two_steps}");
        env.run(Command::Cancel {
            caller: ALICE,
            filter: filter(&[id]),
            signal: None,
        });
    }
    let id = env.submit(script());
    let r = update(id, ALICE, |r| r.min_cpus = Some(3));
    assert_eq!(code(&mut env, r), 0);
    env.register_all();
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Running);
    let per_node: Vec<u32> = job.alloc.iter().map(|a| a.cpus).collect();
    assert_eq!(per_node, vec![2, 1]);
}

/// `Contiguous=`, `OverSubscribe=`, `Reboot=`: a pending job's only;
/// `AdminComment=`: an operator's only, in any state.
#[test]
fn contiguous_sharing_reboot_and_admin_comment() {
    let mut env = Env::new();
    let id = env.submit(script());
    let r = update(id, ALICE, |r| {
        r.contiguous = Some(true);
        r.sharing = Some(v1::NodeSharing::Oversubscribe as i32);
        r.reboot = Some(true);
    });
    assert_eq!(code(&mut env, r), 0);
    let job = env.job(id);
    assert!(job.spec.contiguous && job.spec.shown().reboot && !job.shape.exclusive);
    assert_eq!(job.spec.sharing, v1::NodeSharing::Oversubscribe as i32);
    let r = update(id, ALICE, |r| {
        r.sharing = Some(v1::NodeSharing::Exclusive as i32)
    });
    assert_eq!(code(&mut env, r), 0);
    assert!(env.job(id).shape.exclusive);
    let r = update(id, ALICE, |r| r.sharing = Some(77));
    assert_ne!(code(&mut env, r), 0);

    let r = update(id, ALICE, |r| r.admin_comment = Some("mine".into()));
    assert_eq!(code(&mut env, r), ErrorCode::AccessDenied.number());
    let r = update(id, Caller::ROOT, |r| r.admin_comment = Some(String::new()));
    assert_eq!(code(&mut env, r), 0);
    assert_eq!(env.job(id).spec.shown().admin_comment.as_deref(), Some(""));

    env.register_all();
    assert_eq!(env.job(id).state(), JobState::Running);
    for f in [
        (|r: &mut v1::UpdateJobRequest| r.contiguous = Some(false)) as fn(&mut _),
        |r| r.reboot = Some(false),
        |r| r.sharing = Some(v1::NodeSharing::Oversubscribe as i32),
        |r| r.min_cpus = Some(1),
        |r| r.min_cpus_per_node = Some(1),
    ] {
        let r = update(id, ALICE, f);
        assert_eq!(code(&mut env, r), ErrorCode::JobNotPending.number());
    }
    let r = update(id, Caller::ROOT, |r| {
        r.admin_comment = Some("checked".into())
    });
    assert_eq!(code(&mut env, r), 0);
    let info = job_info(&env.ctl.snapshot(), env.job(id), env.now);
    assert_eq!(info.admin_comment.as_deref(), Some("checked"));
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(
        replayed.job(id).unwrap().spec.clone(),
        env.job(id).spec.clone()
    );
}

/// A job that has ended cannot change: Slurm 22.05's "Job has already
/// finished", whatever is asked.
#[test]
fn an_ended_job_is_refused_as_finished() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    assert_eq!(env.job(id).state(), JobState::Running);
    env.finish(id, 0, 0);
    env.take_actions();
    assert!(env.job(id).state().is_finished());
    for cmd in [
        update(id, ALICE, |r| r.time_limit = minutes(5)),
        update(id, Caller::ROOT, |r| r.comment = Some("x".into())),
        update(id, Caller::ROOT, |r| r.name = Some("q".into())),
    ] {
        assert_eq!(code(&mut env, cmd), ErrorCode::JobFinished.number());
    }
}

/// A running job named with the partition it runs in is no change, as
/// Slurm takes it; another partition is refused as not pending.
#[test]
fn a_running_job_keeps_its_partition() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    assert_eq!(env.job(id).state(), JobState::Running);
    let same = env.job(id).partition_name.clone();
    let cmd = update(id, ALICE, |r| r.partition = Some(same.clone()));
    assert_eq!(code(&mut env, cmd), 0);
    let cmd = update(id, ALICE, |r| r.partition = Some("short".into()));
    assert_eq!(code(&mut env, cmd), ErrorCode::JobNotPending.number());
    assert_eq!(env.job(id).partition_name, same);
}
