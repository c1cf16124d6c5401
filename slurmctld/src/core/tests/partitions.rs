//! `scontrol update PartitionName=...`: who may, what is checked, what it
//! does to scheduling, and that a replay, a snapshot and a reconfiguration
//! keep (or drop) it as they should.

use slurm_common::conf::{PartitionState, SlurmConf};
use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{replay_encoded, script, Env, ALICE, CONF};
use crate::core::{Caller, Command, Controller, CtlConfig, Reply};

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
