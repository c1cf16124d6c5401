//! `scontrol update NodeName=` with Features, ActiveFeatures, Weight and
//! Comment: who may, what is checked, what scheduling makes of it, and that
//! a replay, a snapshot and a reconfiguration keep (or drop) it as they
//! should.

use slurm_common::conf::SlurmConf;
use slurm_common::state::JobState;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{replay_encoded, script, Env, ALICE, CONF};
use crate::core::{Caller, Command, Controller, CtlConfig, Event, Reply};

fn update(caller: Caller, nodes: &str, set: impl FnOnce(&mut v1::UpdateNodeRequest)) -> Command {
    let mut request = v1::UpdateNodeRequest {
        nodes: nodes.into(),
        ..Default::default()
    };
    set(&mut request);
    Command::UpdateNode { caller, request }
}

fn refused(r: Reply) -> (ErrorCode, String) {
    match r {
        Reply::Error { code, detail } => (code, detail),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn only_operators_and_only_valid_updates() {
    let mut env = Env::new();
    env.register_all();
    let before = env.events.len();
    let (code, _) = refused(env.run(update(ALICE, "n1", |r| r.weight = Some(5))));
    assert_eq!(code, ErrorCode::AccessDenied);
    // Active features must be available ones; n[1-2] are both checked
    // before either changes. Slurm's message is its one line.
    let (code, detail) = refused(env.run(update(Caller::ROOT, "n[1-2]", |r| {
        r.features = Some("fast".into());
        r.active_features = Some("fast,ib".into());
    })));
    assert_eq!(code, ErrorCode::ActiveFeatureNotSubset);
    assert_eq!(detail, "");

    let (code, detail) = refused(env.run(update(Caller::ROOT, "n1", |r| {
        r.gres = Some("gpu:1".into())
    })));
    assert_eq!(code, ErrorCode::NotSupported);
    assert!(detail.contains("Gres"), "{detail}");
    assert_eq!(env.events.len(), before);
    assert!(env.ctl.nodes().iter().all(|n| n.attrs.is_none()));
}

/// As Slurm 22.05: feature lists are taken as written, and new available
/// features alone must still hold the active ones, which then follow them.
#[test]
fn available_features_alone_must_hold_the_active_ones() {
    let mut env = Env::new();
    env.register_all();
    let ok = |env: &mut Env, f: &str| {
        let r = env.run(update(Caller::ROOT, "n2", |r| r.features = Some(f.into())));
        assert!(matches!(r, Reply::Ok), "{f}: {r:?}");
    };
    ok(&mut env, "ib,,a&b");
    let n2 = &env.ctl.nodes()[1];
    assert_eq!(n2.active_features(), ["ib", "", "a&b"]);
    let (code, _) = refused(env.run(update(Caller::ROOT, "n2", |r| {
        r.features = Some("fast".into());
    })));
    assert_eq!(code, ErrorCode::ActiveFeatureNotSubset);
    ok(&mut env, "a&b,,ib,fast");
    assert_eq!(
        env.ctl.nodes()[1].active_features(),
        ["a&b", "", "ib", "fast"]
    );
}

#[test]
fn features_weight_and_comment_are_in_force_and_merge() {
    let mut env = Env::new();
    env.register_all();
    let r = env.run(update(Caller::ROOT, "n[3-4]", |r| {
        r.features = Some("fast,ib".into());
        r.weight = Some(7);
        r.comment = Some("new disks".into());
    }));
    assert_eq!(r, Reply::Ok);
    let n3 = &env.ctl.nodes()[2];
    assert_eq!(n3.available_features(), ["fast", "ib"]);
    assert_eq!(n3.active_features(), ["fast", "ib"]);
    assert_eq!((n3.weight_now(), n3.comment()), (7, Some("new disks")));
    // A later update changes only what it names.
    let r = env.run(update(Caller::ROOT, "n3", |r| {
        r.active_features = Some("ib".into())
    }));
    assert_eq!(r, Reply::Ok);
    let n3 = &env.ctl.nodes()[2];
    assert_eq!(n3.available_features(), ["fast", "ib"]);
    assert_eq!(n3.active_features(), ["ib"]);
    assert_eq!((n3.weight_now(), n3.comment()), (7, Some("new disks")));
    // A state change and an attribute in one request: both happen.
    let r = env.run(update(Caller::ROOT, "n4", |r| {
        r.state = v1::NodeStateUpdate::Drain as i32;
        r.reason = Some("disk".into());
        r.weight = Some(9);
    }));
    assert_eq!(r, Reply::Ok);
    let n4 = &env.ctl.nodes()[3];
    assert!(n4.state.has(slurm_common::state::NodeFlag::Drain));
    assert_eq!(n4.weight_now(), 9);
    // Slurm.conf's own values are untouched underneath.
    assert_eq!((n4.weight, n4.features.len()), (1, 0));
}

#[test]
fn constraints_and_node_order_follow_the_updates() {
    let mut env = Env::new();
    env.register_all();
    // n1 heavier than the others: a one-node job goes elsewhere.
    assert_eq!(
        env.run(update(Caller::ROOT, "n1", |r| r.weight = Some(100))),
        Reply::Ok
    );
    let id = env.submit(script());
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).alloc[0].node_index, 1);
    // Only n4 gets "fast" (active): a job asking for it runs there.
    assert_eq!(
        env.run(update(Caller::ROOT, "n4", |r| r.features = Some("fast".into()))),
        Reply::Ok
    );
    let mut desc = script();
    desc.constraint = "fast".into();
    let id = env.submit(desc);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).alloc[0].node_index, 3);
}

fn changed(env: &mut Env) {
    env.register_all();
    for cmd in [
        update(Caller::ROOT, "n[1-2]", |r| {
            r.features = Some("a,b".into());
            r.weight = Some(4);
        }),
        update(Caller::ROOT, "n2", |r| {
            r.active_features = Some("b".into());
            r.comment = Some("spare".into());
        }),
    ] {
        assert_eq!(env.run(cmd), Reply::Ok);
    }
}

#[test]
fn a_replay_and_a_snapshot_arrive_at_the_same_attributes() {
    let mut env = Env::new();
    changed(&mut env);
    let replayed = replay_encoded(CONF, &env.events);
    let bytes = crate::core::snapshot::encode(&env.ctl, 3);
    let conf = SlurmConf::parse(CONF, "slurm.conf").unwrap().conf;
    let base = Controller::new(&conf, CtlConfig::from_conf(&conf, vec![]));
    let loaded = crate::core::snapshot::decode(&bytes, base, false)
        .unwrap()
        .controller;
    for other in [&replayed, &loaded] {
        for (a, b) in env.ctl.nodes().iter().zip(other.nodes()) {
            assert_eq!(a.attrs, b.attrs, "{}", a.name);
        }
    }
    assert_eq!(loaded.nodes()[1].active_features(), ["b"]);
    assert_eq!(loaded.nodes()[1].comment(), Some("spare"));
}

#[test]
fn reconfigure_puts_features_and_weights_back_and_keeps_comments() {
    let mut env = Env::new();
    changed(&mut env);
    let conf = SlurmConf::parse(CONF, "slurm.conf").unwrap().conf;
    let r = env.run(Command::Reconfigure {
        caller: Caller::ROOT,
        conf: Box::new(conf),
    });
    assert_eq!(r, Reply::Ok);
    assert!(env.events.contains(&Event::NodeAttrsReset));
    let n2 = &env.ctl.nodes()[1];
    assert!(n2.available_features().is_empty());
    assert_eq!((n2.weight_now(), n2.comment()), (1, Some("spare")));
    assert!(env.ctl.nodes()[0].attrs.is_none());
    // A restart replays the journal, reset included, to the same place.
    let replayed = replay_encoded(CONF, &env.events);
    for (a, b) in env.ctl.nodes().iter().zip(replayed.nodes()) {
        assert_eq!(a.attrs, b.attrs, "{}", a.name);
    }
}
