//! Round trips (state -> snapshot -> state), "replay everything" against
//! "load a snapshot and replay the tail", and damage of every kind.

use proptest::prelude::*;
use slurm_common::conf::SlurmConf;
use slurm_proto::v1;

use super::*;
use crate::core::tests::{script, Env, CONF};
use crate::core::{Caller, Command, CtlConfig, Event};

use crate::core::tests::ALICE;

fn fresh(conf_text: &str) -> Controller {
    let conf = SlurmConf::parse(conf_text, "slurm.conf").unwrap().conf;
    Controller::new(&conf, CtlConfig::from_conf(&conf, vec![]))
}

/// Everything `apply` builds, as text: two controllers with the same
/// fingerprint hold the same state. `Debug` lists every field, so a field
/// added later is compared without changing this.
pub(crate) fn fingerprint(ctl: &Controller) -> String {
    let jobs: Vec<&Job> = ctl.jobs().collect();
    format!(
        "next_job_id={} next_priority={} last_update={}\nscripts={:?}\nnodes={:#?}\njobs={:#?}",
        ctl.next_job_id, ctl.next_priority, ctl.last_update, ctl.scripts, ctl.nodes, jobs
    )
}

fn replay(events: &[Event]) -> Controller {
    let mut ctl = fresh(CONF);
    for e in events {
        ctl.apply(e).unwrap();
    }
    ctl
}

fn load(bytes: &[u8]) -> Controller {
    let loaded = decode(bytes, fresh(CONF), false).unwrap();
    assert!(loaded.damage.is_none());
    loaded.controller.sanity_check().unwrap();
    loaded.controller
}

fn filter(ids: &[u32]) -> v1::JobFilter {
    v1::JobFilter {
        job_ids: ids.to_vec(),
        ..Default::default()
    }
}

/// A state with a bit of everything: running, pending, held, completing,
/// finished, requeued and purged jobs, drained and down nodes, odd texts.
fn busy_env() -> Env {
    let mut env = Env::new();
    env.register_all();
    for i in 0..10u32 {
        let mut d = script();
        d.name = format!("j\u{e9}{i}");
        match i % 5 {
            0 => d.hold = true,
            1 => {
                d.min_nodes = Some(2);
                d.sharing = v1::NodeSharing::Exclusive as i32;
            }
            2 => {
                d.time_limit = Some(v1::TimeLimit {
                    limit: Some(v1::time_limit::Limit::Minutes(3)),
                });
                d.memory = Some(v1::job_description::Memory::MemPerCpuMb(100));
                d.argv = vec!["a".into(), String::new(), "c d".into()];
            }
            3 => {
                d.begin_time = env.now + 3600;
                d.comment = "later".into();
            }
            _ => {
                d.ntasks = Some(3);
                d.cpus_per_task = Some(1);
                d.stdout_path = "/tmp/%j.out".into();
            }
        }
        env.submit(d);
    }
    env.complete(2, 3, 0);
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[5]),
        signal: None,
    });
    env.run(Command::Requeue {
        caller: ALICE,
        filter: filter(&[3]),
        hold: true,
    });
    env.run(Command::Hold {
        caller: Caller::ROOT,
        filter: filter(&[10]),
        user_hold: false,
    });
    env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n4".into(),
            state: v1::NodeStateUpdate::Drain as i32,
            reason: Some("disk \u{1F4A5}".into()),
            ..Default::default()
        },
    });
    env.now += 200;
    env.run(Command::Tick);
    env.now += 200;
    env.run(Command::Tick);
    env
}

#[test]
fn a_busy_state_round_trips() {
    let env = busy_env();
    let bytes = encode(&env.ctl, 7);
    let loaded = decode(&bytes, fresh(CONF), false).unwrap();
    assert_eq!(loaded.generation, Some(7));
    assert_eq!(loaded.jobs, env.ctl.jobs.len());
    assert_eq!(fingerprint(&loaded.controller), fingerprint(&env.ctl));
    loaded.controller.sanity_check().unwrap();
    // Byte for byte stable.
    assert_eq!(encode(&loaded.controller, 7), bytes);
    // The state has what the test means it to have.
    let states: std::collections::BTreeSet<_> = env.ctl.jobs().map(|j| j.state()).collect();
    assert!(states.len() >= 3, "{states:?}");
    assert!(env.ctl.jobs().any(|j| j.status.is_completing()));
    assert!(env.ctl.jobs().any(|j| j.hold.is_some()));
    assert!(env.ctl.jobs.len() < 10, "nothing was purged");
}

#[test]
fn an_empty_controller_round_trips() {
    let ctl = fresh(CONF);
    let loaded = load(&encode(&ctl, 0));
    assert_eq!(fingerprint(&loaded), fingerprint(&ctl));
}

#[test]
fn the_scheduler_continues_from_a_loaded_state_as_from_the_original() {
    let mut env = busy_env();
    let mut copy = load(&encode(&env.ctl, 1));
    env.now += 10;
    let a = env.ctl.schedule(env.now);
    let b = copy.schedule(env.now);
    assert_eq!(a, b);
    assert_eq!(fingerprint(&env.ctl), fingerprint(&copy));
}

#[test]
fn enum_tables_cover_every_value_once() {
    assert_eq!(JOB_FLAGS.len(), JobFlag::DISPLAY_ORDER.len());
    for (i, f) in JOB_FLAGS.iter().enumerate() {
        assert_eq!(job_flag_bit(*f), 1 << i, "{f:?}");
        assert!(JobFlag::DISPLAY_ORDER.contains(f));
    }
    assert_eq!(NODE_FLAGS.len(), NodeFlag::DISPLAY_ORDER.len());
    for (i, f) in NODE_FLAGS.iter().enumerate() {
        assert_eq!(node_flag_bit(*f), 1 << i, "{f:?}");
        assert!(NodeFlag::DISPLAY_ORDER.contains(f));
    }
    for code in 0..=u8::MAX {
        if let Some(b) = node_base_from(code) {
            assert_eq!(node_base_code(b), code);
        }
        if let Some(s) = job_state_from(code) {
            assert_eq!(job_state_code(s), code);
        }
    }
    let all: JobFlags = JOB_FLAGS.into_iter().collect();
    assert_eq!(job_flags_from(job_flag_mask(all)), Some(all));
    assert_eq!(job_flags_from(1 << 31), None);
    let all: NodeFlags = NODE_FLAGS.into_iter().collect();
    assert_eq!(node_flags_from(node_flag_mask(all)), Some(all));
    assert_eq!(node_flags_from(1 << 31), None);
}

#[test]
fn every_flipped_byte_and_every_cut_is_refused_never_a_panic() {
    let env = busy_env();
    let bytes = encode(&env.ctl, 3);
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5A;
        let r = decode(&bad, fresh(CONF), false);
        assert!(r.is_err(), "flip at {at} was accepted");
        // Salvage never fails on damage and keeps a consistent state; only
        // another version is refused.
        match decode(&bad, fresh(CONF), true) {
            Ok(s) => {
                assert!(s.damage.is_some(), "flip at {at}");
                s.controller.sanity_check().unwrap();
            }
            Err(SnapshotError::UnsupportedVersion { .. }) => assert!((8..12).contains(&at)),
            Err(e) => panic!("flip at {at}: {e}"),
        }
    }
    for cut in 0..bytes.len() {
        let err = decode(&bytes[..cut], fresh(CONF), false).unwrap_err();
        assert!(err.is_damage(), "cut at {cut}: {err}");
    }
}

#[test]
fn damage_names_the_record_offset() {
    let env = busy_env();
    let bytes = encode(&env.ctl, 3);
    // The first record starts after the header.
    let mut bad = bytes.clone();
    bad[SNAPSHOT_HEADER_LEN + RECORD_HEAD + 2] ^= 1;
    let err = decode(&bad, fresh(CONF), false).unwrap_err();
    assert!(
        matches!(err, SnapshotError::Corrupt { offset, .. } if offset == SNAPSHOT_HEADER_LEN as u64),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("byte offset 16: checksum mismatch"),
        "{err}"
    );
    let mut other = bytes.clone();
    other[8] = 9;
    assert!(matches!(
        decode(&other, fresh(CONF), true),
        Err(SnapshotError::UnsupportedVersion { found: 9 })
    ));
    let mut reserved = bytes;
    reserved[13] = 1;
    assert!(matches!(
        decode(&reserved, fresh(CONF), false),
        Err(SnapshotError::BadHeader)
    ));
}

/// Offsets of the records of `bytes`, and each record's tag.
fn records(bytes: &[u8]) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    let mut pos = SNAPSHOT_HEADER_LEN;
    while pos < bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        out.push((pos, bytes[pos + RECORD_HEAD]));
        pos += RECORD_HEAD + len;
    }
    out
}

#[test]
fn salvage_keeps_the_records_before_the_damage() {
    let env = busy_env();
    let bytes = encode(&env.ctl, 5);
    let recs = records(&bytes);
    let jobs: Vec<usize> = recs
        .iter()
        .filter(|(_, t)| *t == TAG_JOB)
        .map(|(at, _)| *at)
        .collect();
    let ids: Vec<u32> = env.ctl.jobs.keys().copied().collect();
    let k = jobs.len() / 2;
    let mut bad = bytes.clone();
    bad[jobs[k] + RECORD_HEAD + 1] ^= 0xFF;
    let s = decode(&bad, fresh(CONF), true).unwrap();
    assert!(
        matches!(&s.damage, Some(SnapshotError::Corrupt { offset, .. }) if *offset == jobs[k] as u64)
    );
    assert_eq!(s.generation, Some(5));
    let kept: Vec<u32> = s.controller.jobs.keys().copied().collect();
    assert_eq!(kept, ids[..k]);
    // Counters match the jobs kept; ids of lost jobs are not reused.
    s.controller.sanity_check().unwrap();
    assert!(s.controller.next_job_id() >= env.ctl.next_job_id());

    // Damage in META: nothing of the snapshot is usable.
    let mut bad = bytes;
    bad[SNAPSHOT_HEADER_LEN + RECORD_HEAD + 1] ^= 0xFF;
    let s = decode(&bad, fresh(CONF), true).unwrap();
    assert_eq!(s.generation, None);
    assert_eq!(s.jobs, 0);
    assert_eq!(
        fingerprint(&s.controller),
        fingerprint(&fresh(CONF)),
        "a lost META leaves the configuration's state"
    );
}

#[test]
fn nodes_gone_from_slurm_conf_are_dropped_with_their_allocations() {
    let env = busy_env();
    let bytes = encode(&env.ctl, 1);
    let smaller = CONF
        .replace("NodeName=n[1-4]", "NodeName=n[2-4]")
        .replace("Nodes=n[1-2]", "Nodes=n2");
    let loaded = decode(&bytes, fresh(&smaller), false).unwrap();
    assert_eq!(loaded.unknown_nodes, 1);
    assert!(loaded.dropped_allocs > 0);
    loaded.controller.sanity_check().unwrap();
    // Reordered nodes are matched by name.
    let reordered = CONF.replace(
        "NodeName=n[1-4] CPUs=2 RealMemory=4000 State=UNKNOWN",
        "NodeName=n[3-4] CPUs=2 RealMemory=4000 State=UNKNOWN\nNodeName=n[1-2] CPUs=2 RealMemory=4000 State=UNKNOWN",
    );
    let loaded = decode(&bytes, fresh(&reordered), false).unwrap();
    assert_eq!(loaded.dropped_allocs, 0);
    let c = &loaded.controller;
    c.sanity_check().unwrap();
    for node in env.ctl.nodes() {
        let i = c.node_index[&node.name];
        assert_eq!(c.nodes[i].alloc_cpus, node.alloc_cpus, "{}", node.name);
        assert_eq!(c.nodes[i].state, node.state, "{}", node.name);
    }
}

#[test]
fn a_large_state_encodes_and_loads() {
    let mut env = Env::new();
    let mut d = script();
    d.hold = true;
    d.environment = vec!["A=1".into()];
    let mut events = Vec::new();
    for _ in 0..5_000 {
        let out = env.ctl.handle(
            Command::Submit {
                caller: ALICE,
                desc: Box::new(d.clone()),
            },
            env.now,
        );
        events.extend(out.events);
    }
    let started = std::time::Instant::now();
    let bytes = encode(&env.ctl, 1);
    let encoded = started.elapsed();
    let started = std::time::Instant::now();
    let loaded = load(&bytes);
    let loaded_in = started.elapsed();
    assert_eq!(loaded.jobs.len(), 5_000);
    assert_eq!(fingerprint(&loaded), fingerprint(&replay(&events)));
    eprintln!(
        "5000 jobs: {} bytes, encoded in {encoded:?}, loaded in {loaded_in:?}",
        bytes.len()
    );
}

// ------------------------------------------------------------ properties

#[derive(Debug, Clone)]
enum Op {
    Submit {
        hold: bool,
        nodes: u32,
        exclusive: bool,
        limit: Option<u32>,
        begin: Option<i64>,
        partition_short: bool,
    },
    Complete {
        pick: usize,
        status: u32,
    },
    Cancel {
        pick: usize,
    },
    Hold {
        pick: usize,
        admin: bool,
    },
    Release {
        pick: usize,
    },
    Requeue {
        pick: usize,
        hold: bool,
    },
    Rename {
        pick: usize,
        name: String,
    },
    Node {
        node: usize,
        drain: bool,
    },
    Down {
        node: usize,
    },
    Register {
        node: usize,
    },
    LaunchFailed {
        pick: usize,
    },
    Advance {
        secs: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), 1u32..4, any::<bool>(), proptest::option::of(1u32..5), proptest::option::of(1i64..900), any::<bool>())
            .prop_map(|(hold, nodes, exclusive, limit, begin, partition_short)| Op::Submit {
                hold,
                nodes,
                exclusive,
                limit,
                begin,
                partition_short
            }),
        3 => (any::<usize>(), 0u32..3).prop_map(|(pick, status)| Op::Complete { pick, status }),
        1 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(pick, admin)| Op::Hold { pick, admin }),
        1 => any::<usize>().prop_map(|pick| Op::Release { pick }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(pick, hold)| Op::Requeue { pick, hold }),
        1 => (any::<usize>(), "\\PC{0,6}").prop_map(|(pick, name)| Op::Rename { pick, name }),
        1 => (0usize..4, any::<bool>()).prop_map(|(node, drain)| Op::Node { node, drain }),
        1 => (0usize..4).prop_map(|node| Op::Down { node }),
        1 => (0usize..4).prop_map(|node| Op::Register { node }),
        1 => any::<usize>().prop_map(|pick| Op::LaunchFailed { pick }),
        2 => (1i64..400).prop_map(|secs| Op::Advance { secs }),
    ]
}

fn node_name(i: usize) -> String {
    format!("n{}", i + 1)
}

/// Runs `ops` as the owner does (handle, then schedule); returns the
/// environment with every event.
fn run_ops(ops: &[Op]) -> Env {
    let mut env = Env::new();
    env.register_all();
    for op in ops {
        let ids: Vec<u32> = env.ctl.jobs.keys().copied().collect();
        let pick = |p: &usize| ids.get(p % ids.len().max(1)).copied().unwrap_or(1);
        let cmd = match op {
            Op::Submit {
                hold,
                nodes,
                exclusive,
                limit,
                begin,
                partition_short,
            } => {
                let mut d = script();
                d.hold = *hold;
                d.min_nodes = Some(*nodes);
                if *exclusive {
                    d.sharing = v1::NodeSharing::Exclusive as i32;
                }
                d.time_limit = limit.map(|m| v1::TimeLimit {
                    limit: Some(v1::time_limit::Limit::Minutes(m)),
                });
                d.begin_time = begin.map_or(0, |b| env.now + b);
                if *partition_short {
                    d.partitions = vec!["short".into()];
                }
                Command::Submit {
                    caller: ALICE,
                    desc: Box::new(d),
                }
            }
            Op::Complete { pick: p, status } => Command::JobComplete {
                caller: Caller::ROOT,
                request: v1::JobCompleteRequest {
                    job_id: pick(p),
                    exit_code: Some(v1::ExitCode {
                        status: *status,
                        signal: 0,
                        core_dumped: false,
                    }),
                    ..Default::default()
                },
            },
            Op::Cancel { pick: p } => Command::Cancel {
                caller: ALICE,
                filter: filter(&[pick(p)]),
                signal: None,
            },
            Op::Hold { pick: p, admin } => Command::Hold {
                caller: if *admin { Caller::ROOT } else { ALICE },
                filter: filter(&[pick(p)]),
                user_hold: !*admin,
            },
            Op::Release { pick: p } => Command::Release {
                caller: Caller::ROOT,
                filter: filter(&[pick(p)]),
            },
            Op::Requeue { pick: p, hold } => Command::Requeue {
                caller: ALICE,
                filter: filter(&[pick(p)]),
                hold: *hold,
            },
            Op::Rename { pick: p, name } => Command::UpdateJob {
                caller: ALICE,
                request: Box::new(v1::UpdateJobRequest {
                    filter: Some(filter(&[pick(p)])),
                    name: Some(name.clone()),
                    ..Default::default()
                }),
            },
            Op::Node { node, drain } => Command::UpdateNode {
                caller: Caller::ROOT,
                request: v1::UpdateNodeRequest {
                    nodes: node_name(*node),
                    state: if *drain {
                        v1::NodeStateUpdate::Drain as i32
                    } else {
                        v1::NodeStateUpdate::Resume as i32
                    },
                    reason: drain.then(|| "maint".to_string()),
                    ..Default::default()
                },
            },
            Op::Down { node } => Command::UpdateNode {
                caller: Caller::ROOT,
                request: v1::UpdateNodeRequest {
                    nodes: node_name(*node),
                    state: v1::NodeStateUpdate::Down as i32,
                    reason: Some("dead".into()),
                    ..Default::default()
                },
            },
            Op::Register { node } => Command::RegisterNode {
                caller: Caller::ROOT,
                request: Box::new(v1::RegisterNodeRequest {
                    node_name: node_name(*node),
                    ..Default::default()
                }),
            },
            Op::LaunchFailed { pick: p } => Command::LaunchFailed {
                job_id: pick(p),
                detail: "launch failed".into(),
            },
            Op::Advance { secs } => {
                env.now += secs;
                Command::Tick
            }
        };
        env.run(cmd);
    }
    env
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// state -> snapshot -> state is the identity, scheduler-derived fields
    /// included.
    #[test]
    fn snapshot_round_trips_any_reachable_state(ops in proptest::collection::vec(op(), 0..40)) {
        let env = run_ops(&ops);
        let loaded = load(&encode(&env.ctl, 9));
        prop_assert_eq!(fingerprint(&loaded), fingerprint(&env.ctl));
    }

    /// Replaying the whole journal gives the state that loading a snapshot
    /// taken anywhere in it and replaying the rest gives.
    #[test]
    fn replay_equals_snapshot_plus_tail(
        ops in proptest::collection::vec(op(), 0..40),
        split in any::<proptest::sample::Index>(),
    ) {
        let env = run_ops(&ops);
        let events = &env.events;
        let k = split.index(events.len() + 1);
        let whole = replay(events);
        let mut resumed = load(&encode(&replay(&events[..k]), 1));
        for e in &events[k..] {
            resumed.apply(e).unwrap();
        }
        resumed.sanity_check().unwrap();
        prop_assert_eq!(fingerprint(&resumed), fingerprint(&whole));
    }
}
