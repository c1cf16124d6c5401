//! MaxJobCount counts jobs as Slurm does: every record, and every task an
//! array's meta record still holds though it has no record of its own
//! yet. The count is kept by `apply` (not recounted per submission); these
//! tests compare it with a count of the records after every step, and
//! after a replay of the journal and a snapshot load.

use slurm_common::state::JobState;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{filter, replay_encoded, script, snapshot_reloaded, Env, ALICE, CONF};
use crate::core::{Command, Controller, Reply};

fn array(spec: &str) -> v1::JobDescription {
    v1::JobDescription {
        array_spec: spec.into(),
        ..script()
    }
}

fn with_max(max: u32) -> Env {
    Env::with_conf(&format!("{CONF}MaxJobCount={max}\n"))
}

/// The jobs the records hold, counted here without `array::counted`: a
/// meta record (no task of its own) once per task it holds.
fn recount(ctl: &Controller) -> usize {
    ctl.jobs()
        .map(|j| match j.array.as_deref() {
            Some(a) if a.task.is_none() => a.pending.len().max(1),
            _ => 1,
        })
        .sum()
}

/// The refusal code of a submission; `None` when it was accepted.
fn refusal(r: &Reply) -> Option<ErrorCode> {
    match r {
        Reply::Submitted { .. } => None,
        Reply::Error { code, .. } => Some(*code),
        other => panic!("not a submission reply: {other:?}"),
    }
}

/// `scancel ID_TASKS` as the owner.
fn cancel_tasks(env: &mut Env, array_job_id: u32, spec: &str) {
    let r = env.run(Command::Cancel {
        caller: ALICE,
        filter: v1::JobFilter {
            array_tasks: vec![v1::ArrayTaskSelector {
                array_job_id,
                task_spec: spec.into(),
            }],
            ..Default::default()
        },
        signal: None,
    });
    assert!(matches!(r, Reply::JobResults(_)), "{r:?}");
}

/// MinJobAge (300 s in CONF) passes: the timer purges what has ended.
fn age(env: &mut Env) {
    env.now += 301;
    env.run(Command::Tick);
}

#[test]
fn queued_array_tasks_count_against_max_job_count() {
    // No node registered: nothing starts, so no task is split off.
    let mut env = with_max(10);
    let r = env.submit_as(ALICE, array("0-99%1"));
    assert_eq!(refusal(&r), Some(ErrorCode::TryAgain));
    env.submit(array("0-8"));
    assert_eq!(env.ctl.jobs().count(), 1);
    assert_eq!(env.ctl.job_count(), 9);
    // The tenth job fits; no other, however small.
    env.submit(script());
    assert_eq!(env.ctl.job_count(), 10);
    for desc in [script(), script(), array("3"), array("0-1")] {
        let r = env.submit_as(ALICE, desc);
        assert_eq!(refusal(&r), Some(ErrorCode::TryAgain));
    }
    assert_eq!(env.ctl.jobs().count(), 2);
    assert_eq!(env.ctl.job_count(), 10);
}

#[test]
fn tasks_split_off_as_they_start_and_purges_lower_the_count() {
    let mut env = with_max(12);
    env.register_all();
    // 8 CPUs: tasks 0-7 start as jobs 2-9, tasks 8 and 9 stay in job 1.
    let id = env.submit(array("0-9"));
    assert_eq!(env.ctl.jobs().count(), 9);
    assert_eq!(env.ctl.job_count(), 10);
    let meta = env.job(id).array.as_deref().unwrap();
    assert_eq!(meta.pending, vec![8, 9]);
    // Two more fit; three do not.
    let r = env.submit_as(ALICE, array("0-2"));
    assert_eq!(refusal(&r), Some(ErrorCode::TryAgain));
    // Two tasks end: task 8 splits off as job 10, task 9 starts as job 1.
    env.finish(2, 0, 0);
    env.finish(3, 0, 0);
    assert_eq!(env.ctl.jobs().count(), 10);
    assert_eq!(env.ctl.job_count(), 10);
    assert_eq!(env.job(id).array.as_deref().unwrap().task, Some(9));
    assert_eq!(env.job(10).state(), JobState::Running);
    age(&mut env);
    assert!(env.ctl.job(2).is_none() && env.ctl.job(3).is_none());
    assert_eq!(env.ctl.job_count(), 8);
    // The rest ends; the meta record, now task 9's, goes with them.
    for job in [1, 4, 5, 6, 7, 8, 9, 10] {
        env.finish(job, 0, 0);
    }
    assert_eq!(env.ctl.job_count(), 8);
    age(&mut env);
    assert_eq!(env.ctl.jobs().count(), 0);
    assert_eq!(env.ctl.job_count(), 0);
}

#[test]
fn a_cancelled_array_counts_its_unsplit_tasks_until_purged() {
    let mut env = with_max(6);
    let id = env.submit(array("0-4"));
    // One pending task cancelled alone leaves the array: four jobs.
    cancel_tasks(&mut env, id, "2");
    assert_eq!(env.ctl.jobs().count(), 1);
    assert_eq!(env.ctl.job_count(), 4);
    // The whole array cancelled: its meta record keeps tasks 0, 1, 3, 4
    // until MinJobAge has passed, and they still count.
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[id]),
        signal: None,
    });
    assert!(env.ctl.jobs().all(|j| j.state() == JobState::Cancelled));
    assert_eq!(
        env.job(id).array.as_deref().unwrap().pending,
        vec![0, 1, 3, 4]
    );
    assert_eq!(env.ctl.job_count(), 4);
    let r = env.submit_as(ALICE, array("0-2"));
    assert_eq!(refusal(&r), Some(ErrorCode::TryAgain));
    // A restart counts the same.
    assert_eq!(replay_encoded(CONF, &env.events).job_count(), 4);
    assert_eq!(snapshot_reloaded(&env.ctl).job_count(), 4);
    age(&mut env);
    assert_eq!(env.ctl.jobs().count(), 0);
    assert_eq!(env.ctl.job_count(), 0);
    env.submit(array("0-5"));
    assert_eq!(env.ctl.job_count(), 6);
}

#[test]
fn holding_one_task_splits_it_off_and_keeps_the_count() {
    let mut env = with_max(10);
    let id = env.submit(array("0-3"));
    let r = env.run(Command::Hold {
        caller: ALICE,
        filter: v1::JobFilter {
            array_tasks: vec![v1::ArrayTaskSelector {
                array_job_id: id,
                task_spec: "1".into(),
            }],
            ..Default::default()
        },
        user_hold: true,
    });
    assert!(matches!(r, Reply::JobResults(_)), "{r:?}");
    assert_eq!(env.ctl.jobs().count(), 2);
    assert_eq!(env.ctl.job_count(), 4);
    assert_eq!(env.ctl.job_count(), recount(&env.ctl));
}

mod props {
    use proptest::prelude::*;

    use super::*;

    /// MaxJobCount in the runs: small, so that refusals happen.
    const MAX: usize = 14;

    #[derive(Debug, Clone)]
    enum Op {
        Plain {
            hold: bool,
        },
        Array {
            tasks: u32,
            throttle: u32,
            hold: bool,
        },
        /// Node `n1`..`n4` registers: pending jobs may start.
        Register(usize),
        /// The n-th running job ends (ids in order, wrapping).
        Complete(usize),
        /// The n-th record is cancelled by id (a meta record's id names
        /// the whole array).
        Cancel(usize),
        /// One task of the n-th array is cancelled alone.
        CancelTask(usize, u32),
        /// One task of the n-th array is held, then the array released.
        HoldTask(usize, u32),
        /// The n-th running job is requeued.
        Requeue(usize),
        /// MinJobAge passes: finished records are purged.
        Age,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            any::<bool>().prop_map(|hold| Op::Plain { hold }),
            (1..7u32, 0..3u32, any::<bool>()).prop_map(|(tasks, throttle, hold)| Op::Array {
                tasks,
                throttle,
                hold
            }),
            (0..4usize).prop_map(Op::Register),
            (0..8usize).prop_map(Op::Complete),
            (0..8usize).prop_map(Op::Cancel),
            (0..4usize, 0..7u32).prop_map(|(a, t)| Op::CancelTask(a, t)),
            (0..4usize, 0..7u32).prop_map(|(a, t)| Op::HoldTask(a, t)),
            (0..8usize).prop_map(Op::Requeue),
            Just(Op::Age),
        ]
    }

    fn nth(ids: &[u32], n: usize) -> Option<u32> {
        (!ids.is_empty()).then(|| ids[n % ids.len()])
    }

    fn running(env: &Env) -> Vec<u32> {
        env.ctl
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .map(|j| j.id.get())
            .collect()
    }

    fn arrays(env: &Env) -> Vec<u32> {
        let mut ids: Vec<u32> = env
            .ctl
            .jobs()
            .filter_map(|j| j.array.as_deref().map(|a| a.array_job_id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    fn task_filter(array_job_id: u32, task: u32) -> v1::JobFilter {
        v1::JobFilter {
            array_tasks: vec![v1::ArrayTaskSelector {
                array_job_id,
                task_spec: task.to_string(),
            }],
            ..Default::default()
        }
    }

    fn step(env: &mut Env, op: Op) -> Result<(), TestCaseError> {
        let before = env.ctl.job_count();
        match op {
            Op::Plain { hold } | Op::Array { hold, .. } => {
                let (desc, jobs) = match op {
                    Op::Array {
                        tasks, throttle, ..
                    } => {
                        let spec = if throttle > 0 {
                            format!("0-{}%{throttle}", tasks - 1)
                        } else {
                            format!("0-{}", tasks - 1)
                        };
                        (array(&spec), tasks as usize)
                    }
                    _ => (script(), 1),
                };
                let r = env.submit_as(ALICE, v1::JobDescription { hold, ..desc });
                // Refused exactly when the jobs would go beyond the limit.
                let over = before + jobs > MAX;
                let want = over.then_some(ErrorCode::TryAgain);
                prop_assert_eq!(refusal(&r), want);
                if !over {
                    prop_assert!(env.ctl.job_count() == before + jobs);
                }
            }
            Op::Register(n) => {
                env.run(Command::RegisterNode {
                    caller: crate::core::Caller::ROOT,
                    request: Box::new(v1::RegisterNodeRequest {
                        node_name: format!("n{}", n + 1),
                        ..Default::default()
                    }),
                });
            }
            Op::Complete(n) => {
                if let Some(id) = nth(&running(env), n) {
                    env.finish(id, 0, 0);
                }
            }
            Op::Cancel(n) => {
                let ids: Vec<u32> = env.ctl.jobs().map(|j| j.id.get()).collect();
                if let Some(id) = nth(&ids, n) {
                    env.run(Command::Cancel {
                        caller: ALICE,
                        filter: filter(&[id]),
                        signal: None,
                    });
                }
            }
            Op::CancelTask(n, task) => {
                if let Some(id) = nth(&arrays(env), n) {
                    env.run(Command::Cancel {
                        caller: ALICE,
                        filter: task_filter(id, task),
                        signal: None,
                    });
                }
            }
            Op::HoldTask(n, task) => {
                if let Some(id) = nth(&arrays(env), n) {
                    env.run(Command::Hold {
                        caller: ALICE,
                        filter: task_filter(id, task),
                        user_hold: true,
                    });
                    env.run(Command::Release {
                        caller: ALICE,
                        filter: filter(&[id]),
                    });
                }
            }
            Op::Requeue(n) => {
                if let Some(id) = nth(&running(env), n) {
                    env.run(Command::Requeue {
                        caller: ALICE,
                        filter: filter(&[id]),
                        hold: false,
                    });
                }
            }
            Op::Age => age(env),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Whatever is submitted, started, ended, split off, cancelled and
        /// purged, the kept count equals a recount of the records, and a
        /// restart (journal replay or snapshot load) arrives at it too.
        #[test]
        fn the_count_matches_the_records_and_survives_a_restart(
            ops in proptest::collection::vec(op(), 1..24)
        ) {
            let mut env = with_max(MAX as u32);
            for op in ops {
                step(&mut env, op)?;
                env.ctl.sanity_check().unwrap();
                let count = env.ctl.job_count();
                prop_assert_eq!(count, recount(&env.ctl));
                prop_assert!(count <= MAX);
                let replayed = replay_encoded(&format!("{CONF}MaxJobCount={MAX}\n"), &env.events);
                prop_assert_eq!(replayed.job_count(), count);
                prop_assert_eq!(snapshot_reloaded(&env.ctl).job_count(), count);
            }
        }
    }
}
