//! Start estimates against Slurm 22.05 on one 2-CPU node with memory
//! consumable (the reference cluster): `sbatch --test-only` behind busy
//! and waiting jobs, the planned StartTime/SchedNodeList of pending jobs,
//! and the job ids and priority numbers trials and refusals use up.

use slurm_common::state::JobState;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{script, Env, ALICE};
use crate::core::{Command, Reply};

const REF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
NodeName=vm CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=vm Default=YES MaxTime=INFINITE State=UP
";

fn ref_env() -> Env {
    Env::with_node(REF, "vm")
}

fn minutes(m: u32) -> v1::JobDescription {
    v1::JobDescription {
        time_limit: Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(m)),
        }),
        ..script()
    }
}

fn test_only(env: &mut Env, mut desc: v1::JobDescription) -> Result<v1::StartEstimate, ErrorCode> {
    desc.test_only = true;
    match env.submit_as(ALICE, desc) {
        Reply::Submitted {
            estimate: Some(e), ..
        } => Ok(e),
        Reply::Error { code, .. } => Err(code),
        other => panic!("unexpected reply: {other:?}"),
    }
}

/// Slurm 22.05: `-t 5` running, then `-t 10` and `-t 7 --mem 100`
/// waiting, a held job (ignored): the test job starts when all of them
/// are done, 5 + 10 + 7 minutes on, although it would fit beside the
/// last one (backfill plans whole nodes).
#[test]
fn test_only_waits_for_running_and_waiting_jobs_ahead() {
    let mut env = ref_env();
    let t0 = env.now;
    let running = env.submit(minutes(5));
    assert_eq!(env.job(running).state(), JobState::Running);
    env.submit(minutes(10));
    env.submit(v1::JobDescription {
        memory: Some(v1::job_description::Memory::MemPerNodeMb(100)),
        ..minutes(7)
    });
    env.submit(v1::JobDescription {
        hold: true,
        ..minutes(30)
    });
    let est = test_only(
        &mut env,
        v1::JobDescription {
            memory: Some(v1::job_description::Memory::MemPerNodeMb(10)),
            ..minutes(1)
        },
    )
    .unwrap();
    assert_eq!(est.start_time, t0 + (5 + 10 + 7) * 60);
    assert_eq!((est.cpus, est.nodes.as_str()), (1, "vm"));
    assert_eq!(est.partition, "debug");
    // -c 2 and --exclusive: the whole node, at the same time.
    let est = test_only(
        &mut env,
        v1::JobDescription {
            cpus_per_task: Some(2),
            ..minutes(1)
        },
    )
    .unwrap();
    assert_eq!((est.start_time, est.cpus), (t0 + 22 * 60, 2));
}

/// Slurm 22.05: `-N 2` on a one-node cluster is refused with
/// "Requested node configuration is not available".
#[test]
fn test_only_that_can_never_run_is_refused() {
    let mut env = ref_env();
    let r = test_only(
        &mut env,
        v1::JobDescription {
            min_nodes: Some(2),
            ..script()
        },
    );
    assert_eq!(r.unwrap_err(), ErrorCode::RequestedNodeConfigUnavailable);
}

/// Behind more waiting jobs than the plan covers (500), a test job still
/// gets an answer, placed after the running jobs alone; it is not refused.
#[test]
fn test_only_behind_a_long_queue_is_answered() {
    let mut env = ref_env();
    let t0 = env.now;
    let running = env.submit(minutes(5));
    assert_eq!(env.job(running).state(), JobState::Running);
    for _ in 0..520 {
        env.submit(minutes(1));
    }
    let est = test_only(&mut env, minutes(1)).unwrap();
    assert!(est.start_time >= t0 + 5 * 60, "{est:?}");
    assert_eq!((est.cpus, est.nodes.as_str()), (1, "vm"));
}

/// Slurm 22.05's backfill: the first waiting job starts when the running
/// one ends; the next when the first's limit runs out, rounded down to
/// the minute; StartTime and SchedNodeList show it, and a start is
/// forgotten once the job runs.
#[test]
fn pending_jobs_show_their_planned_start() {
    let mut env = ref_env();
    env.now = 1_700_000_022; // 22 s past a minute
    let t0 = env.now;
    env.submit(minutes(5));
    let first = env.submit(minutes(10));
    let second = env.submit(minutes(7));
    let held = env.submit(v1::JobDescription {
        hold: true,
        ..minutes(7)
    });
    // Planned at the first pass, then at most once per bf_interval (30 s):
    // the jobs submitted since are not planned yet.
    assert_eq!(env.ctl.snapshot().planned.get(&second), None);
    env.now = t0 + 30;
    env.run(Command::Tick);
    let snap = env.ctl.snapshot();
    let start = |id: u32| {
        snap.planned
            .get(&id)
            .map(|p| (p.start_time, p.nodes.clone()))
    };
    assert_eq!(start(first), Some((t0 + 300, "vm".to_string())));
    let end = t0 + 300 + 600;
    assert_eq!(start(second), Some((end - end % 60, "vm".to_string())));
    assert_eq!(start(held), None);
    let info = crate::rpc::convert::job_info(&snap, env.job(second), env.now);
    assert_eq!(info.start_time, end - end % 60);
    assert_eq!(info.end_time, end - end % 60 + 420);
    assert_eq!(info.scheduled_nodes, "vm");
}

/// Slurm 22.05: every trial submission that passes the first checks uses
/// up a job id and, unless held, a priority number, whether it would fit
/// or not (jobs 17, then trials, then 20 and 22 had priorities …748,
/// …745, …743). An unknown partition uses up nothing. A restart keeps
/// the count.
#[test]
fn test_only_uses_up_the_id_and_the_priority_number() {
    let mut env = ref_env();
    let first = env.submit(minutes(5));
    let p0 = env.job(first).priority();
    test_only(&mut env, minutes(1)).unwrap();
    let refused = test_only(
        &mut env,
        v1::JobDescription {
            min_nodes: Some(2),
            ..script()
        },
    );
    assert_eq!(
        refused.unwrap_err(),
        ErrorCode::RequestedNodeConfigUnavailable
    );
    // Held: the id only.
    test_only(
        &mut env,
        v1::JobDescription {
            hold: true,
            ..minutes(1)
        },
    )
    .unwrap();
    let nowhere = test_only(
        &mut env,
        v1::JobDescription {
            partitions: vec!["nope".into()],
            ..minutes(1)
        },
    );
    assert!(nowhere.is_err());
    let next = env.submit(minutes(5));
    assert_eq!(next, first + 4);
    assert_eq!(env.job(next).priority(), p0 - 3);

    let replayed = super::replay_encoded(REF, &env.events);
    assert_eq!(replayed.next_job_id(), env.ctl.next_job_id());
    assert_eq!(replayed.next_priority, env.ctl.next_priority);
}

/// Slurm 22.05 checks features and the reservation after the job's record
/// is made: those refusals use up an id, though no priority number; a
/// license or partition refusal uses up nothing.
#[test]
fn late_refusals_use_up_an_id() {
    let mut env = ref_env();
    let first = env.submit(minutes(5));
    let p0 = env.job(first).priority();
    for (desc, code) in [
        (
            v1::JobDescription {
                constraint: "nofeat".into(),
                ..script()
            },
            ErrorCode::InvalidFeature,
        ),
        (
            v1::JobDescription {
                reservation: "nores".into(),
                ..script()
            },
            ErrorCode::ReservationInvalid,
        ),
        (
            v1::JobDescription {
                licenses: "nolic".into(),
                ..script()
            },
            ErrorCode::InvalidLicenses,
        ),
    ] {
        match env.submit_as(ALICE, desc) {
            Reply::Error { code: got, .. } => assert_eq!(got, code),
            other => panic!("unexpected reply: {other:?}"),
        }
    }
    let next = env.submit(minutes(5));
    assert_eq!(next, first + 3);
    assert_eq!(env.job(next).priority(), p0 - 1);
}
