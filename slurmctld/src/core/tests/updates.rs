//! `scontrol update JobId=...` beyond names and limits: the job's texts
//! (account, node lists, features, paths, mail), its task count, CPUs
//! and memory, checked as a submission is; `TimeLimit+=` / `-=`; an
//! array's throttle; and the fields the controller does not act on,
//! refused by name instead of being accepted and ignored.

use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;
use slurm_proto::v1;
use slurm_proto::ErrorCode;
use slurm_sched::MemReq;

use super::{filter, ok_results, replay_encoded, script, Env, ALICE, CONF};
use crate::core::{Caller, Command};

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
    let mut env = Env::new();
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
    let replayed = replay_encoded(CONF, &env.events);
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

#[test]
fn impossible_or_malformed_changes_are_refused_and_change_nothing() {
    let mut env = Env::new();
    let id = env.submit(script());
    let before = format!("{:?}", env.job(id));
    let cases: Vec<(ErrorCode, Command)> = vec![
        (
            ErrorCode::RequestedNodeConfigUnavailable,
            update(id, ALICE, |r| {
                r.memory = Some(v1::update_job_request::Memory::MemPerNodeMb(9000));
            }),
        ),
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
            ErrorCode::NotSupported,
            update(id, ALICE, |r| r.gres = Some("gpu:1".into())),
        ),
        (
            ErrorCode::NotSupported,
            update(id, ALICE, |r| {
                r.name = Some("x".into());
                r.wckey = Some("w".into());
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
        (
            ErrorCode::InvalidArray,
            update(id, ALICE, |r| r.array_task_throttle = Some(2)),
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
            ErrorCode::InvalidTimeLimit,
            update(id, ALICE, |r| r.time_min_minutes = Some(31)),
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
    // A deadline the job cannot make any more ends it, never having run.
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
    assert_eq!(env.job(id).state(), JobState::Deadline);
    // Only pending jobs change this way.
    let (mut env, id) = Env::running_job();
    let c = code(
        &mut env,
        update(id, ALICE, |r| r.time_min_minutes = Some(1)),
    );
    assert_eq!(c, ErrorCode::JobNotPending.number());
}
