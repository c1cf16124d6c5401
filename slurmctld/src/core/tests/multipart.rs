//! Jobs submitted to several partitions (`sbatch -p short,debug`): every
//! name is checked, the job waits showing the whole list, starts in the
//! first partition (in scheduling order) that has room, and from then on
//! is shown in that one, through a replay and a snapshot too.

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::updates::update;
use super::{ok_results, replay_encoded, script, snapshot_reloaded, Env, ALICE, CONF};
use crate::core::{Caller, Command, Event, Reply};

fn in_partitions(list: &[&str]) -> v1::JobDescription {
    v1::JobDescription {
        partitions: list.iter().map(|p| (*p).to_string()).collect(),
        ..script()
    }
}

/// A one-CPU job on each CPU of n1 and n2, the nodes of "short".
fn fill_short(env: &mut Env) -> Vec<u32> {
    (0..4)
        .map(|_| {
            let id = env.submit(in_partitions(&["short"]));
            assert_eq!(env.job(id).state(), JobState::Running);
            id
        })
        .collect()
}

fn refusal(r: Reply) -> ErrorCode {
    match r {
        Reply::Error { code, .. } => code,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn starts_in_the_partition_with_room_and_shows_it() {
    let mut env = Env::new();
    env.register_all();
    fill_short(&mut env);
    // Given as one argument or as several, as sbatch may send it.
    for list in [&["short,debug"][..], &["short", "debug"]] {
        let id = env.submit(in_partitions(list));
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Running);
        assert_eq!(job.partition_name, "debug");
        assert_eq!(job.partition, env.ctl.part_index.get("debug").copied());
        let started = env.events.iter().rev().find_map(|e| match e {
            Event::JobStarted {
                job_id, partition, ..
            } if *job_id == id => Some(partition.clone()),
            _ => None,
        });
        assert_eq!(started, Some(Some("debug".to_string())));
    }
    // A job with one partition records none in its start.
    let plain = env.submit(script());
    assert!(env.events.iter().any(|e| matches!(
        e,
        Event::JobStarted { job_id, partition: None, .. } if *job_id == plain
    )));

    for ctl in [
        replay_encoded(CONF, &env.events),
        snapshot_reloaded(&env.ctl),
    ] {
        for (id, job) in env.ctl.jobs.iter() {
            let again = ctl.job(*id).expect("job kept");
            assert_eq!(again.partition_name, job.partition_name, "job {id}");
            assert_eq!(again.partition, job.partition, "job {id}");
        }
    }
}

#[test]
fn waits_showing_every_partition_and_starts_when_one_frees() {
    let mut env = Env::new();
    env.register_all();
    let fill = fill_short(&mut env);
    // Two nodes of "debug" are not enough either: it asks for all 4
    // nodes whole.
    let mut desc = in_partitions(&["short,debug"]);
    desc.min_nodes = Some(4);
    desc.sharing = v1::NodeSharing::Exclusive as i32;
    let id = env.submit(desc);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.partition_name, "short,debug");
    // "short" has 2 nodes (PartitionConfig there), "debug" is busy: the
    // reason about resources wins.
    assert_eq!(job.reason, PendingReason::Resources);
    for busy in fill {
        env.finish(busy, 0, 0);
    }
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Running);
    assert_eq!(job.partition_name, "debug");
    assert_eq!(job.alloc.len(), 4);
}

#[test]
fn a_partition_over_the_time_limit_is_skipped() {
    let mut env = Env::new();
    env.register_all();
    // "short" allows 10 minutes: a 30-minute job can only run in "debug",
    // although "short" is listed first and has room.
    let mut desc = in_partitions(&["short,debug"]);
    desc.time_limit = Some(v1::TimeLimit {
        limit: Some(v1::time_limit::Limit::Minutes(30)),
    });
    let id = env.submit(desc);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).partition_name, "debug");
}

#[test]
fn every_name_must_exist() {
    let mut env = Env::new();
    for list in [&["short,nope"][..], &["nope", "debug"], &[","]] {
        let r = env.submit_as(ALICE, in_partitions(list));
        assert_eq!(refusal(r), ErrorCode::InvalidPartitionName, "{list:?}");
    }
    // The same name twice counts once.
    let id = env.submit(in_partitions(&["short, short,debug"]));
    assert_eq!(env.job(id).partition_name, "short,debug");
}

#[test]
fn update_filter_and_delete_see_every_partition() {
    let mut env = Env::new();
    let id = env.submit(script());
    // scontrol update Partition=a,b lists several too.
    let r = env.run(update(id, ALICE, |u| {
        u.partition = Some("short,debug".into())
    }));
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    assert_eq!(env.job(id).partition_name, "short,debug");
    assert_eq!(
        env.job(id).partition,
        env.ctl.part_index.get("short").copied()
    );
    let r = env.run(update(id, ALICE, |u| {
        u.partition = Some("short,nope".into())
    }));
    assert_eq!(
        ok_results(&r),
        vec![(id, ErrorCode::InvalidPartitionName.number())]
    );
    assert_eq!(env.job(id).partition_name, "short,debug");

    // A filter on either partition selects it.
    let r = env.run(Command::Hold {
        caller: ALICE,
        filter: v1::JobFilter {
            partitions: vec!["debug".into()],
            ..Default::default()
        },
        user_hold: true,
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);

    // Neither partition can be deleted while the job may run in it.
    for name in ["short", "debug"] {
        let r = env.run(Command::DeletePartition {
            caller: Caller::ROOT,
            request: v1::DeletePartitionRequest { name: name.into() },
        });
        assert_eq!(refusal(r), ErrorCode::PartitionInUse, "{name}");
    }
}

#[test]
fn refused_only_when_no_partition_could_ever_run_it() {
    let conf = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=n[3-4] CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=small Nodes=n[1-2] Default=YES State=UP
PartitionName=big Nodes=n[3-4] State=UP
";
    let mut env = Env::with_conf(conf);
    let with_mem = |list: &[&str]| v1::JobDescription {
        memory: Some(v1::job_description::Memory::MemPerNodeMb(2000)),
        ..in_partitions(list)
    };
    // No node of "small" has 2000 MB: refused there alone, with what
    // "small" says, whichever partition comes first.
    let alone = refusal(env.submit_as(ALICE, with_mem(&["small"])));
    assert_ne!(alone, ErrorCode::InvalidPartitionName);
    let r = env.submit_as(ALICE, with_mem(&["big"]));
    assert!(matches!(r, Reply::Submitted { .. }), "{r:?}");
    let id = env.submit(with_mem(&["small,big"]));
    assert_eq!(env.job(id).partition_name, "small,big");
    let id = env.submit(with_mem(&["big,small"]));
    assert_eq!(env.job(id).partition_name, "big,small");
    let mut too_big = with_mem(&["small"]);
    too_big.memory = Some(v1::job_description::Memory::MemPerNodeMb(9000));
    too_big.partitions = vec!["small,big".into()];
    assert_eq!(refusal(env.submit_as(ALICE, too_big)), alone);
}
