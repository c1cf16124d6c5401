//! `scontrol update|create|delete PartitionName=...`: who may, what is
//! checked, what it does to scheduling, and that a replay, a snapshot and a
//! reconfiguration keep (or drop) it as they should.

use slurm_common::conf::{PartitionState, SlurmConf};
use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{replay_encoded, script, snapshot_reloaded, Env, ALICE, CONF};
use crate::core::{Caller, Command, Controller, CtlConfig, Event, Reply};

fn update(caller: Caller, name: &str, attrs: &[(&str, &str)]) -> Command {
    Command::UpdatePartition {
        caller,
        request: v1::UpdatePartitionRequest {
            name: name.into(),
            attributes: attrs
                .iter()
                .map(|(k, v)| v1::ConfigEntry {
                    key: (*k).into(),
                    value: (*v).into(),
                })
                .collect(),
        },
    }
}

fn error_code(r: Reply) -> ErrorCode {
    match r {
        Reply::Error { code, .. } => code,
        other => panic!("not refused: {other:?}"),
    }
}

fn part<'a>(ctl: &'a Controller, name: &str) -> &'a crate::core::PartRec {
    ctl.partitions()
        .iter()
        .find(|p| p.name() == name)
        .expect("partition")
}

#[test]
fn only_operators_and_only_valid_updates() {
    let mut env = Env::new();
    let before = env.events.len();
    let cases = [
        (
            update(ALICE, "debug", &[("State", "DOWN")]),
            ErrorCode::AccessDenied,
        ),
        (
            update(Caller::ROOT, "nope", &[("State", "DOWN")]),
            ErrorCode::InvalidPartitionName,
        ),
        (
            update(Caller::ROOT, "debug", &[("State", "sideways")]),
            ErrorCode::NotSupported,
        ),
        (
            update(Caller::ROOT, "debug", &[("Bogus", "1")]),
            ErrorCode::NotSupported,
        ),
        (
            update(Caller::ROOT, "debug", &[("Nodes", "n[1-9]")]),
            ErrorCode::InvalidNodeName,
        ),
    ];
    for (cmd, code) in cases {
        assert_eq!(error_code(env.run(cmd)), code);
    }
    assert_eq!(env.events.len(), before);
    assert_eq!(part(&env.ctl, "debug").conf.state, PartitionState::Up);
}

#[test]
fn a_down_partition_holds_its_jobs_until_it_is_up_again() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(update(Caller::ROOT, "debug", &[("State", "DOWN")]));
    assert_eq!(r, Reply::Ok);
    let id = env.submit(script());
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).reason, PendingReason::PartitionDown);
    env.run(update(Caller::ROOT, "debug", &[("state", "up")]));
    assert_eq!(env.job(id).state(), JobState::Running);
}

#[test]
fn limits_nodes_and_the_default_partition_change() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(update(
        Caller::ROOT,
        "short",
        &[("MaxTime", "30"), ("Nodes", "n[3-4]"), ("Default", "YES")],
    ));
    assert_eq!(r, Reply::Ok);
    let short = part(&env.ctl, "short");
    assert_eq!(short.conf.max_time, TimeLimit::Minutes(30));
    assert_eq!(short.view.max_time, TimeLimit::Minutes(30));
    assert_eq!(short.view.nodes, [2, 3]);
    assert_eq!(short.conf.nodes, ["n3", "n4"]);
    assert!(short.conf.default && !part(&env.ctl, "debug").conf.default);
    assert_eq!(env.ctl.nodes()[0].partitions, [0]);
    assert_eq!(env.ctl.nodes()[2].partitions, [0, 1]);
    // A job without -p now goes to short, on its nodes.
    let id = env.submit(script());
    assert_eq!(env.job(id).partition_name, "short");
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).alloc[0].node_index, 2);

    // A replay of the journal arrives at the same partitions.
    let replayed = replay_encoded(CONF, &env.events);
    for p in env.ctl.partitions() {
        let q = part(&replayed, p.name());
        assert_eq!((&q.conf, &q.view.nodes), (&p.conf, &p.view.nodes));
    }
    assert_eq!(replayed.nodes()[2].partitions, [0, 1]);
}

/// `Nodes=` given empty leaves the partition without nodes, as Slurm
/// takes it; its jobs wait, and a replay arrives at the same.
#[test]
fn nodes_set_empty_leave_the_partition_without_nodes() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(update(Caller::ROOT, "short", &[("Nodes", "")]));
    assert_eq!(r, Reply::Ok);
    let short = part(&env.ctl, "short");
    assert!(short.view.nodes.is_empty() && short.conf.nodes.is_empty());
    let id = env.submit(v1::JobDescription {
        partitions: vec!["short".into()],
        ..script()
    });
    assert_eq!(env.job(id).state(), JobState::Pending);
    // Passes go by: still PartitionConfig (Slurm never evaluates it).
    env.submit(script());
    env.submit(script());
    assert_eq!(env.job(id).reason, PendingReason::PartitionConfig);
    let replayed = replay_encoded(CONF, &env.events);
    assert!(part(&replayed, "short").view.nodes.is_empty());
}

/// DisableRootJobs=YES on a partition: root's jobs there are "Invalid
/// user id", as Slurm refuses them; other users' and other partitions'
/// are taken.
#[test]
fn disable_root_jobs_refuses_roots_jobs() {
    let mut env = Env::new();
    let r = env.run(update(Caller::ROOT, "debug", &[("DisableRootJobs", "YES")]));
    assert_eq!(r, Reply::Ok);
    let roots = |partition: &str| v1::JobDescription {
        user_id: 0,
        group_id: 0,
        partitions: vec![partition.into()],
        ..script()
    };
    match env.submit_as(Caller::ROOT, roots("debug")) {
        Reply::Error { code, .. } => assert_eq!(code, ErrorCode::InvalidUserId),
        other => panic!("not refused: {other:?}"),
    }
    assert!(matches!(
        env.submit_as(Caller::ROOT, roots("short")),
        Reply::Submitted { .. }
    ));
    env.submit(v1::JobDescription {
        partitions: vec!["debug".into()],
        ..script()
    });
}

/// AllowAccounts: with no associations to tell a job's account, no job
/// may use the partition, in Slurm's words; a held job says so from its
/// submission, and a replay agrees.
#[test]
fn allow_accounts_keeps_jobs_out_of_the_partition() {
    const TEXT: &str =
        "Job's account not known, so it can't use this partition (debug allows a1,b2)";
    let mut env = Env::new();
    env.register_all();
    let r = env.run(update(Caller::ROOT, "debug", &[("AllowAccounts", "a1,b2")]));
    assert_eq!(r, Reply::Ok);
    let in_debug = || v1::JobDescription {
        partitions: vec!["debug".into()],
        ..script()
    };
    let held = env.submit(v1::JobDescription {
        hold: true,
        ..in_debug()
    });
    assert_eq!(env.job(held).reason, PendingReason::JobHeldUser);
    assert_eq!(env.job(held).reason_detail, TEXT);
    let id = env.submit(in_debug());
    assert_eq!(env.job(id).reason, PendingReason::AccountNotAllowed);
    assert_eq!(env.job(id).reason_detail, TEXT);
    let other = env.submit(v1::JobDescription {
        partitions: vec!["short".into()],
        ..script()
    });
    assert_eq!(env.job(other).status.state, JobState::Running);
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(replayed.job(held).unwrap().reason_detail, TEXT);
    env.run(update(Caller::ROOT, "debug", &[("AllowAccounts", "ALL")]));
    assert_eq!(env.job(id).status.state, JobState::Running);
}

/// MaxCPUsPerNode: the partition's jobs hold no more than that many CPUs
/// of a node together; other partitions' jobs are not held back.
#[test]
fn max_cpus_per_node_caps_the_partitions_share_of_each_node() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(update(Caller::ROOT, "short", &[("MaxCPUsPerNode", "1")]));
    assert_eq!(r, Reply::Ok);
    let short = |ntasks: u32| v1::JobDescription {
        partitions: vec!["short".into()],
        ntasks: Some(ntasks),
        ..script()
    };
    let spread = env.submit(short(2));
    let held: Vec<(usize, u32)> = env
        .job(spread)
        .alloc
        .iter()
        .map(|a| (a.node_index, a.cpus))
        .collect();
    assert_eq!(held, vec![(0, 1), (1, 1)]);
    let waits = env.submit(short(1));
    assert_eq!(env.job(waits).reason, PendingReason::Resources);
    let other = env.submit(v1::JobDescription {
        partitions: vec!["debug".into()],
        ..script()
    });
    assert_eq!(env.job(other).status.state, JobState::Running);
    let mut wide = short(1);
    wide.cpus_per_task = Some(2);
    let wide = env.submit(wide);
    assert_eq!(env.job(wide).reason, PendingReason::PartitionConfig);
}

/// AllowGroups: a user in none of the groups may not submit to the
/// partition ("User's group not permitted to use this partition"); root
/// may. The groups the shell looked up are not kept with the job.
#[test]
fn allow_groups_refuses_users_outside_them() {
    let mut env = Env::new();
    let r = env.run(update(
        Caller::ROOT,
        "debug",
        &[("AllowGroups", "staff,wheel")],
    ));
    assert_eq!(r, Reply::Ok);
    let with_groups = |groups: &[&str]| v1::JobDescription {
        partitions: vec!["debug".into()],
        user_groups: groups.iter().map(|g| (*g).to_string()).collect(),
        ..script()
    };
    assert_eq!(
        error_code(env.submit_as(ALICE, with_groups(&["alice", "users"]))),
        ErrorCode::PartitionGroupDenied
    );
    // Named in a list with another partition: refused alike.
    let mut both = with_groups(&["users"]);
    both.partitions = vec!["short".into(), "debug".into()];
    assert_eq!(
        error_code(env.submit_as(ALICE, both)),
        ErrorCode::PartitionGroupDenied
    );
    env.submit(with_groups(&["users", "wheel"]));
    let kept = env.events.iter().rev().find_map(|e| match e {
        Event::JobSubmitted { desc, .. } => Some(desc.user_groups.clone()),
        _ => None,
    });
    assert_eq!(kept, Some(Vec::new()));
    let roots = v1::JobDescription {
        user_id: 0,
        group_id: 0,
        ..with_groups(&[])
    };
    assert!(matches!(
        env.submit_as(Caller::ROOT, roots),
        Reply::Submitted { .. }
    ));
    // Other partitions are open to everyone.
    let mut short = with_groups(&[]);
    short.partitions = vec!["short".into()];
    assert!(matches!(
        env.submit_as(ALICE, short),
        Reply::Submitted { .. }
    ));
}

/// RootOnly=YES: only root (and SlurmUser) may submit to the partition;
/// others get "Access/permission denied", as in Slurm.
#[test]
fn root_only_partitions_take_roots_jobs_only() {
    let mut env = Env::new();
    let r = env.run(update(Caller::ROOT, "debug", &[("RootOnly", "YES")]));
    assert_eq!(r, Reply::Ok);
    let in_debug = v1::JobDescription {
        partitions: vec!["debug".into()],
        ..script()
    };
    assert_eq!(
        error_code(env.submit_as(ALICE, in_debug.clone())),
        ErrorCode::AccessDenied
    );
    // Root may, for itself or for another user.
    assert!(matches!(
        env.submit_as(Caller::ROOT, in_debug),
        Reply::Submitted { .. }
    ));
}

#[test]
fn a_snapshot_keeps_the_updates() {
    let mut env = Env::new();
    env.run(update(
        Caller::ROOT,
        "debug",
        &[("State", "DRAIN"), ("MaxNodes", "2")],
    ));
    env.run(update(Caller::ROOT, "debug", &[("MaxNodes", "3")]));
    let bytes = crate::core::snapshot::encode(&env.ctl, 7);
    let conf = SlurmConf::parse(CONF, "slurm.conf").unwrap().conf;
    let base = Controller::new(&conf, CtlConfig::from_conf(&conf, vec![]));
    let loaded = crate::core::snapshot::decode(&bytes, base, false)
        .unwrap()
        .controller;
    let p = part(&loaded, "debug");
    assert_eq!(p.conf.state, PartitionState::Drain);
    assert_eq!(p.conf.max_nodes, Some(3));
    assert_eq!(p.update, part(&env.ctl, "debug").update);
    assert!(part(&loaded, "short").update.is_none());
}

fn reconfigure(env: &mut Env, extra: &str) -> Reply {
    let conf = SlurmConf::parse(&format!("{CONF}{extra}"), "slurm.conf")
        .unwrap()
        .conf;
    env.run(Command::Reconfigure {
        caller: Caller::ROOT,
        conf: Box::new(conf),
    })
}

#[test]
fn reconfigure_drops_updates_unless_reconfig_flags_keep_them() {
    for (flags, state, max_time) in [
        ("", PartitionState::Up, TimeLimit::Minutes(10)),
        (
            "ReconfigFlags=KeepPartState\n",
            PartitionState::Down,
            TimeLimit::Minutes(10),
        ),
        (
            "ReconfigFlags=KeepPartInfo\n",
            PartitionState::Down,
            TimeLimit::Minutes(99),
        ),
    ] {
        let mut env = Env::new();
        env.run(update(
            Caller::ROOT,
            "short",
            &[("State", "DOWN"), ("MaxTime", "99")],
        ));
        assert_eq!(reconfigure(&mut env, flags), Reply::Ok);
        let p = part(&env.ctl, "short");
        assert_eq!(
            (p.conf.state, p.conf.max_time),
            (state, max_time),
            "{flags}"
        );
        // A restart replays the journal, reset included, to the same place.
        let replayed = replay_encoded(&format!("{CONF}{flags}"), &env.events);
        assert_eq!(part(&replayed, "short").conf, p.conf, "{flags}");
    }
}

fn entries(attrs: &[(&str, &str)]) -> Vec<v1::ConfigEntry> {
    attrs
        .iter()
        .map(|(k, v)| v1::ConfigEntry {
            key: (*k).into(),
            value: (*v).into(),
        })
        .collect()
}

fn create(caller: Caller, name: &str, attrs: &[(&str, &str)]) -> Command {
    Command::CreatePartition {
        caller,
        request: v1::CreatePartitionRequest {
            name: name.into(),
            attributes: entries(attrs),
        },
    }
}

fn delete(caller: Caller, name: &str) -> Command {
    Command::DeletePartition {
        caller,
        request: v1::DeletePartitionRequest { name: name.into() },
    }
}

fn names(ctl: &Controller) -> Vec<&str> {
    ctl.partitions().iter().map(|p| p.name()).collect()
}

fn in_job(name: &str) -> v1::JobDescription {
    v1::JobDescription {
        partitions: vec![name.into()],
        ..script()
    }
}

/// The partitions as a restart would have them, every way it can: the
/// journal replayed, and a snapshot of the live state loaded.
fn assert_survives_restart(env: &Env, conf: &str) {
    let replayed = replay_encoded(conf, &env.events);
    let parsed = SlurmConf::parse(conf, "slurm.conf").unwrap().conf;
    let base = Controller::new(&parsed, CtlConfig::from_conf(&parsed, vec![]));
    let loaded =
        crate::core::snapshot::decode(&crate::core::snapshot::encode(&env.ctl, 3), base, false)
            .unwrap()
            .controller;
    for other in [&replayed, &loaded] {
        other.sanity_check().unwrap();
        assert_eq!(names(other), names(&env.ctl));
        for (p, q) in env.ctl.partitions().iter().zip(other.partitions()) {
            assert_eq!(
                (&q.conf, &q.view.nodes, q.created),
                (&p.conf, &p.view.nodes, p.created)
            );
        }
        assert_eq!(other.default_part, env.ctl.default_part);
        let nodes: Vec<&Vec<usize>> = other.nodes().iter().map(|n| &n.partitions).collect();
        let live: Vec<&Vec<usize>> = env.ctl.nodes().iter().map(|n| &n.partitions).collect();
        assert_eq!(nodes, live);
        for job in env.ctl.jobs() {
            let j = other.job(job.id.get()).expect("job kept");
            assert_eq!(j.partition, job.partition, "job {}", job.id.get());
        }
    }
}

#[test]
fn create_only_for_operators_with_a_free_name_and_valid_attributes() {
    let mut env = Env::new();
    let before = env.events.len();
    let cases = [
        (
            create(ALICE, "new", &[("Nodes", "n1")]),
            ErrorCode::AccessDenied,
        ),
        (
            create(Caller::ROOT, "short", &[("Nodes", "n1")]),
            ErrorCode::InvalidPartitionName,
        ),
        (
            create(Caller::ROOT, "", &[("Nodes", "n1")]),
            ErrorCode::InvalidPartitionName,
        ),
        (
            create(Caller::ROOT, "default", &[]),
            ErrorCode::InvalidPartitionName,
        ),
        (
            create(Caller::ROOT, "a,b", &[]),
            ErrorCode::InvalidPartitionName,
        ),
        (
            create(Caller::ROOT, "new", &[("MaxTime", "soon")]),
            ErrorCode::NotSupported,
        ),
        (
            create(Caller::ROOT, "new", &[("PartitionName", "x")]),
            ErrorCode::NotSupported,
        ),
        (
            create(
                Caller::ROOT,
                "new",
                &[("Nodes", "n[1-99999999999999999999]")],
            ),
            ErrorCode::InvalidNodeName,
        ),
        (
            create(Caller::ROOT, "new", &[("Nodes", "n[1-")]),
            ErrorCode::InvalidNodeName,
        ),
    ];
    for (cmd, code) in cases {
        assert_eq!(error_code(env.run(cmd)), code);
    }
    let detail = match env.run(create(Caller::ROOT, "new", &[("Nodes", "n[3-9]")])) {
        Reply::Error { code, detail } => {
            assert_eq!(code, ErrorCode::InvalidNodeName);
            detail
        }
        other => panic!("not refused: {other:?}"),
    };
    assert_eq!(detail, "invalid node name specified: n5");
    assert_eq!(env.events.len(), before);
    assert_eq!(names(&env.ctl), ["debug", "short"]);
}

#[test]
fn a_created_partition_runs_jobs_and_is_journaled() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(create(
        Caller::ROOT,
        "new",
        &[("Nodes", "n[3-4]"), ("MaxTime", "30"), ("State", "UP")],
    ));
    assert_eq!(r, Reply::Ok);
    assert!(matches!(
        env.events.last(),
        Some(Event::PartitionCreated { partition, uid: 0, .. }) if partition == "new"
    ));
    let p = part(&env.ctl, "new");
    assert!(p.created);
    assert_eq!(p.conf.max_time, TimeLimit::Minutes(30));
    assert_eq!(p.view.nodes, [2, 3]);
    assert_eq!(p.conf.nodes_expr.as_deref(), Some("n[3-4]"));
    // Slurm's defaults where nothing was given.
    assert_eq!((p.conf.priority_tier, p.conf.min_nodes), (1, 0));
    assert!(!p.conf.default);
    assert_eq!(env.ctl.nodes()[3].partitions, [0, 2]);
    let id = env.submit(in_job("new"));
    assert_eq!(env.job(id).partition_name, "new");
    assert_eq!(env.job(id).partition, Some(2));
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).alloc[0].node_index, 2);
    // It can be updated like any other.
    assert_eq!(
        env.run(update(Caller::ROOT, "new", &[("MaxTime", "45")])),
        Reply::Ok
    );
    assert_eq!(part(&env.ctl, "new").conf.max_time, TimeLimit::Minutes(45));
    assert_survives_restart(&env, CONF);
    let reloaded = snapshot_reloaded(&env.ctl);
    assert_eq!(part(&reloaded, "new").update, part(&env.ctl, "new").update);
}

#[test]
fn a_created_default_partition_takes_the_default() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(create(
        Caller::ROOT,
        "new",
        &[("Nodes", "n4"), ("Default", "YES")],
    ));
    assert_eq!(r, Reply::Ok);
    assert!(!part(&env.ctl, "debug").conf.default);
    assert_eq!(env.ctl.default_part, Some(2));
    let id = env.submit(script());
    assert_eq!(env.job(id).partition_name, "new");
    assert_survives_restart(&env, CONF);
}

#[test]
fn created_partitions_start_from_partition_defaults() {
    let conf = format!(
        "{CONF}DefMemPerCPU=100\nPartitionName=DEFAULT MaxTime=20 PriorityTier=5 Nodes=n1\n"
    );
    let mut env = Env::with_conf(&conf);
    assert_eq!(env.run(create(Caller::ROOT, "new", &[])), Reply::Ok);
    let p = part(&env.ctl, "new");
    assert_eq!(p.conf.max_time, TimeLimit::Minutes(20));
    assert_eq!(p.conf.priority_tier, 5);
    assert_eq!(p.conf.def_mem, Some(slurm_common::conf::MemPer::Cpu(100)));
    // Nodes= of the defaults is not taken: no nodes were given.
    assert!(p.view.nodes.is_empty());
    let r = env.run(create(Caller::ROOT, "mine", &[("MaxTime", "7")]));
    assert_eq!(r, Reply::Ok);
    assert_eq!(part(&env.ctl, "mine").conf.max_time, TimeLimit::Minutes(7));
    assert_survives_restart(&env, &conf);
}

#[test]
fn delete_only_for_operators_and_known_partitions() {
    let mut env = Env::new();
    let before = env.events.len();
    assert_eq!(
        error_code(env.run(delete(ALICE, "short"))),
        ErrorCode::AccessDenied
    );
    assert_eq!(
        error_code(env.run(delete(Caller::ROOT, "nope"))),
        ErrorCode::InvalidPartitionName
    );
    assert_eq!(env.events.len(), before);
    assert_eq!(names(&env.ctl), ["debug", "short"]);
}

#[test]
fn a_partition_with_pending_or_running_jobs_is_in_use() {
    let mut env = Env::new();
    env.register_all();
    let running = env.submit(in_job("short"));
    assert_eq!(env.job(running).state(), JobState::Running);
    let refused = |env: &mut Env| match env.run(delete(Caller::ROOT, "short")) {
        Reply::Error { code, detail } => (code, detail),
        other => panic!("not refused: {other:?}"),
    };
    let in_use = (ErrorCode::PartitionInUse, String::new());
    assert_eq!(refused(&mut env), in_use);
    env.finish(running, 0, 0);
    // Pending (held) counts too.
    let held = env.submit(v1::JobDescription {
        hold: true,
        ..in_job("short")
    });
    assert_eq!(env.job(held).state(), JobState::Pending);
    assert_eq!(refused(&mut env), in_use);
    env.run(Command::Cancel {
        caller: ALICE,
        filter: v1::JobFilter {
            job_ids: vec![held],
            ..Default::default()
        },
        signal: None,
    });
    // Ended jobs do not count; they keep their partition's name.
    assert_eq!(env.run(delete(Caller::ROOT, "short")), Reply::Ok);
    assert_eq!(names(&env.ctl), ["debug"]);
    assert_eq!(env.job(held).partition, None);
    assert_eq!(env.job(held).partition_name, "short");
    assert_eq!(env.ctl.nodes()[0].partitions, [0]);
    // The name is free again; jobs may not use the old one meanwhile.
    let r = env.submit_as(ALICE, in_job("short"));
    assert_eq!(error_code(r), ErrorCode::InvalidPartitionName);
    assert_survives_restart(&env, CONF);
}

#[test]
fn deleting_the_default_partition_leaves_none() {
    let mut env = Env::new();
    assert_eq!(env.run(delete(Caller::ROOT, "debug")), Reply::Ok);
    assert_eq!(env.ctl.default_part, None);
    assert_eq!(names(&env.ctl), ["short"]);
    assert_eq!(part(&env.ctl, "short").view.nodes, [0, 1]);
    let r = env.submit_as(ALICE, script());
    assert_eq!(error_code(r), ErrorCode::DefaultPartitionNotSet);
    // Jobs in the partitions after it follow the new positions.
    env.register_all();
    let id = env.submit(in_job("short"));
    assert_eq!(env.job(id).partition, Some(0));
    assert_survives_restart(&env, CONF);
}

#[test]
fn delete_then_create_again_under_the_same_name() {
    let mut env = Env::new();
    env.register_all();
    assert_eq!(env.run(delete(Caller::ROOT, "short")), Reply::Ok);
    let r = env.run(create(Caller::ROOT, "short", &[("Nodes", "n4")]));
    assert_eq!(r, Reply::Ok);
    let p = part(&env.ctl, "short");
    assert!(p.created);
    assert_eq!(p.view.nodes, [3]);
    assert_eq!(p.conf.max_time, TimeLimit::Infinite);
    assert_survives_restart(&env, CONF);
}

#[test]
fn nodes_may_name_node_sets() {
    let conf = CONF.replace(
        "NodeName=n[1-4] CPUs=2 RealMemory=4000 State=UNKNOWN\n",
        "NodeName=n[1-2] CPUs=2 RealMemory=4000 State=UNKNOWN\n\
         NodeName=n[3-4] CPUs=2 RealMemory=4000 State=UNKNOWN Feature=gpu\n\
         NodeSet=gpus Feature=gpu\nNodeSet=first Nodes=n1\n",
    );
    let mut env = Env::with_conf(&conf);
    let r = env.run(create(Caller::ROOT, "g", &[("Nodes", "gpus")]));
    assert_eq!(r, Reply::Ok);
    assert_eq!(part(&env.ctl, "g").view.nodes, [2, 3]);
    assert_eq!(part(&env.ctl, "g").conf.nodes, ["n3", "n4"]);
    // Mixed with host names, in node order, no duplicates.
    let r = env.run(update(Caller::ROOT, "short", &[("Nodes", "n4,first,gpus")]));
    assert_eq!(r, Reply::Ok);
    assert_eq!(part(&env.ctl, "short").view.nodes, [0, 2, 3]);
    // A NodeSet name is exact, as in slurm.conf.
    let r = env.run(update(Caller::ROOT, "short", &[("Nodes", "GPUS")]));
    assert_eq!(error_code(r), ErrorCode::InvalidNodeName);
    assert_survives_restart(&env, &conf);
}

#[test]
fn reconfigure_drops_created_and_restores_deleted_unless_keep_part_info() {
    for flags in [
        "",
        "ReconfigFlags=KeepPartState\n",
        "ReconfigFlags=KeepPartInfo\n",
    ] {
        let mut env = Env::new();
        env.register_all();
        assert_eq!(
            env.run(create(
                Caller::ROOT,
                "new",
                &[("Nodes", "n3"), ("MaxTime", "5")]
            )),
            Reply::Ok
        );
        let id = env.submit(in_job("new"));
        assert_eq!(env.run(delete(Caller::ROOT, "short")), Reply::Ok);
        assert_eq!(reconfigure(&mut env, flags), Reply::Ok);
        // Deleted slurm.conf partitions always come back, as in Slurm.
        let short = part(&env.ctl, "short");
        assert!(!short.created);
        assert_eq!(short.conf.max_time, TimeLimit::Minutes(10));
        let keep = flags.contains("KeepPartInfo");
        if keep {
            assert_eq!(names(&env.ctl), ["debug", "short", "new"], "{flags}");
            assert_eq!(part(&env.ctl, "new").conf.max_time, TimeLimit::Minutes(5));
            assert_eq!(env.job(id).partition, Some(2));
        } else {
            assert_eq!(names(&env.ctl), ["debug", "short"], "{flags}");
            assert_eq!(env.job(id).partition, None, "{flags}");
        }
        assert_eq!(env.ctl.nodes()[0].partitions, [0, 1], "{flags}");
        env.ctl.sanity_check().unwrap();
        // A restart replays the journal, resets included, to the same place.
        assert_survives_restart(&env, &format!("{CONF}{flags}"));
        // And a second reconfiguration changes nothing more.
        let events = env.events.len();
        assert_eq!(reconfigure(&mut env, flags), Reply::Ok);
        assert!(
            !env.events[events..]
                .iter()
                .any(|e| matches!(e, Event::PartitionTableReset { .. })),
            "{flags}"
        );
    }
}

#[test]
fn reconfigure_with_a_new_line_of_a_created_name() {
    for (flags, created) in [("", false), ("ReconfigFlags=KeepPartInfo\n", true)] {
        let mut env = Env::new();
        assert_eq!(
            env.run(create(Caller::ROOT, "new", &[("Nodes", "n3")])),
            Reply::Ok
        );
        let extra = format!("{flags}PartitionName=new Nodes=n4 MaxTime=3\n");
        assert_eq!(reconfigure(&mut env, &extra), Reply::Ok);
        let p = part(&env.ctl, "new");
        assert_eq!(p.created, created, "{flags}");
        assert_eq!(p.view.nodes, if created { [2] } else { [3] }, "{flags}");
        assert_eq!(names(&env.ctl), ["debug", "short", "new"]);
        assert_survives_restart(&env, &format!("{CONF}{extra}"));
    }
}

#[test]
fn replay_of_a_creation_against_a_slurm_conf_that_has_the_name() {
    let mut env = Env::new();
    assert_eq!(
        env.run(create(Caller::ROOT, "new", &[("Nodes", "n3")])),
        Reply::Ok
    );
    let conf = format!("{CONF}PartitionName=new Nodes=n4\n");
    let replayed = replay_encoded(&conf, &env.events);
    replayed.sanity_check().unwrap();
    let p = part(&replayed, "new");
    assert!(p.created);
    assert_eq!(p.view.nodes, [2]);
    assert_eq!(names(&replayed), ["debug", "short", "new"]);
}

#[test]
fn partition_table_events_decode_to_themselves() {
    for e in [
        Event::PartitionCreated {
            partition: "é,x".into(),
            attributes: vec![("Nodes".into(), "".into())],
            uid: u32::MAX,
            time: i64::MIN,
        },
        Event::PartitionDeleted {
            partition: String::new(),
            uid: 0,
            time: 0,
        },
        Event::PartitionTableReset { keep_created: true },
    ] {
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(Event::decode(&buf).unwrap(), e);
        for cut in 0..buf.len() {
            assert!(Event::decode(&buf[..cut]).is_err(), "{e:?} cut at {cut}");
        }
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Create(usize, Vec<(usize, String)>),
        Delete(usize),
        Update(usize, usize, String),
    }

    const NAMES: [&str; 4] = ["debug", "short", "new", "other"];
    const KEYS: [&str; 4] = ["Nodes", "MaxTime", "Default", "State"];

    fn op() -> impl Strategy<Value = Op> {
        let value = prop_oneof![
            Just("n[1-2]".to_string()),
            Just("n4".to_string()),
            Just("YES".to_string()),
            Just("NO".to_string()),
            Just("30".to_string()),
            Just("DOWN".to_string()),
            Just("UP".to_string()),
            "\\PC{0,6}",
        ];
        prop_oneof![
            (
                0..4usize,
                proptest::collection::vec((0..4usize, value.clone()), 0..3)
            )
                .prop_map(|(n, a)| Op::Create(n, a)),
            (0..4usize).prop_map(Op::Delete),
            (0..4usize, 0..4usize, value).prop_map(|(n, k, v)| Op::Update(n, k, v)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Whatever is created, deleted and updated (well formed or not),
        /// nothing panics, the invariants hold, and a restart (replay or
        /// snapshot) arrives at the same table.
        #[test]
        fn any_sequence_survives_a_restart(ops in proptest::collection::vec(op(), 1..10)) {
            let mut env = Env::new();
            env.register_all();
            for op in ops {
                let cmd = match op {
                    Op::Create(n, attrs) => {
                        let attrs: Vec<(&str, &str)> =
                            attrs.iter().map(|(k, v)| (KEYS[*k], v.as_str())).collect();
                        create(Caller::ROOT, NAMES[n], &attrs)
                    }
                    Op::Delete(n) => delete(Caller::ROOT, NAMES[n]),
                    Op::Update(n, k, v) => update(Caller::ROOT, NAMES[n], &[(KEYS[k], v.as_str())]),
                };
                env.run(cmd);
                env.ctl.sanity_check().unwrap();
                let defaults = env.ctl.partitions().iter().filter(|p| p.conf.default).count();
                prop_assert!(defaults <= 1);
            }
            assert_survives_restart(&env, CONF);
        }
    }
}
