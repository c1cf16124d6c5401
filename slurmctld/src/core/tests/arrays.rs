//! Job arrays in the core (`core::array`): tasks split off their meta
//! record in order and take new ids, the last task keeps the array's id,
//! `%N` holds tasks back with `JobArrayTaskLimit`, one task is cancelled
//! alone, and replay and snapshots give back the same records.

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{filter, replay_encoded, script, snapshot_reloaded, Env, ALICE, BOB, CONF};
use crate::core::{Action, Caller, Command, Event, Reply};

fn array(spec: &str) -> v1::JobDescription {
    v1::JobDescription {
        array_spec: spec.into(),
        ..script()
    }
}

/// (job id, ArrayJobId, task) of every record, in id order.
fn records(env: &Env) -> Vec<(u32, u32, Option<u32>, JobState)> {
    env.ctl
        .jobs()
        .filter_map(|j| {
            let a = j.array.as_ref()?;
            Some((j.id.get(), a.array_job_id, a.task, j.state()))
        })
        .collect()
}

/// (job id, task) of every LaunchBatch sent.
fn launches(env: &mut Env) -> Vec<(u32, u32)> {
    env.take_actions()
        .into_iter()
        .filter_map(|a| match a {
            Action::LaunchBatch { request, .. } => {
                let info = request.array?;
                Some((request.job_id, info.array_task_id))
            }
            _ => None,
        })
        .collect()
}

/// A filter naming tasks `spec` of array `array_job_id` (`15_[1,3]`).
fn tasks(array_job_id: u32, spec: &str) -> v1::JobFilter {
    v1::JobFilter {
        array_tasks: vec![v1::ArrayTaskSelector {
            array_job_id,
            task_spec: spec.into(),
        }],
        ..Default::default()
    }
}

/// `scancel ARRAY_SPEC` as `caller`: the per-record results.
fn cancel_tasks(
    env: &mut Env,
    caller: Caller,
    array_job_id: u32,
    spec: &str,
) -> Vec<v1::JobActionResult> {
    match env.run(Command::Cancel {
        caller,
        filter: tasks(array_job_id, spec),
        signal: None,
    }) {
        Reply::JobResults(results) => results,
        other => panic!("{other:?}"),
    }
}

#[test]
fn tasks_start_in_order_and_the_last_keeps_the_array_id() {
    let mut env = Env::new();
    env.register_all();
    // 4 nodes of 2 CPUs: 8 one-CPU tasks fit, the 10th waits.
    let id = env.submit(array("0-9"));
    assert_eq!(id, 1);
    let mut got = launches(&mut env);
    got.sort_unstable();
    assert_eq!(
        got,
        vec![
            (2, 0),
            (3, 1),
            (4, 2),
            (5, 3),
            (6, 4),
            (7, 5),
            (8, 6),
            (9, 7)
        ]
    );
    let meta = env.job(1);
    assert_eq!(meta.state(), JobState::Pending);
    assert_eq!(meta.reason, PendingReason::Resources);
    assert_eq!(meta.array.as_ref().unwrap().pending, vec![8, 9]);
    // The next submission's id comes after the split-off records.
    assert_eq!(env.submit(script()), 10);

    env.finish(2, 0, 0);
    env.finish(3, 0, 0);
    let got = launches(&mut env);
    // Task 8 gets a new id; task 9, the last, runs as job 1. Job 10 waits
    // behind the array (submitted later, lower priority).
    assert_eq!(got, vec![(11, 8), (1, 9)]);
    let meta = env.job(1);
    assert_eq!(meta.state(), JobState::Running);
    assert_eq!(meta.array.as_ref().unwrap().task, Some(9));
    assert!(meta.array.as_ref().unwrap().pending.is_empty());
}

#[test]
fn a_throttle_holds_tasks_back_with_job_array_task_limit() {
    let mut env = Env::new();
    env.register_all();
    env.submit(array("0-3%2"));
    assert_eq!(launches(&mut env), vec![(2, 0), (3, 1)]);
    assert_eq!(env.job(1).reason, PendingReason::JobArrayTaskLimit);
    env.finish(2, 0, 0);
    assert_eq!(launches(&mut env), vec![(4, 2)]);
    assert_eq!(env.job(1).reason, PendingReason::JobArrayTaskLimit);
    env.finish(3, 0, 0);
    assert_eq!(launches(&mut env), vec![(1, 3)]);
    // Launches carry the array's figures for SLURM_ARRAY_*.
}

#[test]
fn a_launch_carries_the_array_figures() {
    let mut env = Env::new();
    env.register_all();
    env.submit(array("0-12:4"));
    let req = env
        .take_actions()
        .into_iter()
        .find_map(|a| match a {
            Action::LaunchBatch { request, .. } if request.job_id == 2 => Some(request),
            _ => None,
        })
        .expect("launch of task 0");
    let info = req.array.expect("array info");
    assert_eq!(
        (info.array_job_id, info.array_task_id, info.task_count),
        (1, 0, 4)
    );
    assert_eq!((info.task_min, info.task_max, info.task_step), (0, 12, 4));
}

#[test]
fn bad_arrays_are_refused_with_slurms_code() {
    let mut env = Env::new();
    for bad in ["0-5000", "1001", "abc", "3-1", "1:2"] {
        match env.submit_as(ALICE, array(bad)) {
            Reply::Error { code, .. } => assert_eq!(code, ErrorCode::InvalidArray, "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(env.events.is_empty());
    // MaxArraySize moves the limit.
    let mut big = Env::with_conf(&format!("{CONF}MaxArraySize=6000\n"));
    assert!(matches!(
        big.submit_as(ALICE, array("0-5000")),
        Reply::Submitted { .. }
    ));
}

/// As in Slurm, a pending task cancelled out of the meta record leaves
/// the array without a record of its own; the array id cancels the rest.
#[test]
fn one_pending_task_is_cancelled_out_of_the_array_and_the_array_id_cancels_all() {
    let mut env = Env::new();
    env.register_all();
    let mut held = array("0-3");
    held.hold = true;
    env.submit(held);
    let results = cancel_tasks(&mut env, ALICE, 1, "2");
    assert_eq!(
        results
            .iter()
            .map(|r| (r.job_id, r.array_task_id, r.error_code))
            .collect::<Vec<_>>(),
        vec![(1, Some(2), 0)]
    );
    assert_eq!(records(&env), vec![(1, 1, None, JobState::Pending)]);
    assert_eq!(env.job(1).array.as_ref().unwrap().pending_text(), "0-1,3");
    // No job id was taken.
    assert_eq!(env.ctl.next_job_id(), 2);
    // Another user may not pick a task: nothing changes.
    let events = env.events.len();
    let results = cancel_tasks(&mut env, BOB, 1, "3");
    assert_eq!(results[0].error_code, ErrorCode::AccessDenied.number());
    assert_eq!(env.events.len(), events);
    assert_eq!(env.job(1).array.as_ref().unwrap().pending_text(), "0-1,3");
    // A task that is not in the array names nothing.
    let results = cancel_tasks(&mut env, ALICE, 1, "9");
    assert_eq!(results[0].error_code, ErrorCode::InvalidJobId.number());
    // A task and one that is not there: the task goes, no error.
    let results = cancel_tasks(&mut env, ALICE, 1, "3,9");
    assert_eq!(
        results
            .iter()
            .map(|r| (r.array_task_id, r.error_code))
            .collect::<Vec<_>>(),
        vec![(Some(3), 0)]
    );

    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[1]),
        signal: None,
    });
    assert_eq!(records(&env), vec![(1, 1, None, JobState::Cancelled)]);
    // The whole array cancelled by its id keeps its tasks (`1_[0-1]`).
    assert_eq!(env.job(1).array.as_ref().unwrap().pending_text(), "0-1");
}

/// Cancelling every pending task by task ids cancels the record and
/// leaves it no task (squeue shows the plain id, as Slurm does), whether
/// at once or one by one; replay and a snapshot agree, and such a record
/// cannot be requeued.
#[test]
fn cancelling_every_pending_task_leaves_the_cancelled_record_without_tasks() {
    for one_by_one in [false, true] {
        let mut env = Env::new();
        env.register_all();
        let mut held = array("0-3");
        held.hold = true;
        env.submit(held);
        let mut results = Vec::new();
        if one_by_one {
            for t in ["0", "1", "2", "3"] {
                results.extend(cancel_tasks(&mut env, ALICE, 1, t));
            }
        } else {
            results = cancel_tasks(&mut env, ALICE, 1, "0-3");
        }
        assert!(results.iter().all(|r| r.error_code == 0), "{results:?}");
        assert_eq!(results.len(), 4, "{results:?}");
        assert_eq!(records(&env), vec![(1, 1, None, JobState::Cancelled)]);
        assert!(env.job(1).array.as_ref().unwrap().pending.is_empty());
        let replayed = replay_encoded(CONF, &env.events);
        replayed.sanity_check().unwrap();
        let loaded = snapshot_reloaded(&env.ctl);
        for c in [&replayed, &loaded] {
            let job = c.jobs().find(|j| j.id.get() == 1).unwrap();
            assert_eq!(job.state(), JobState::Cancelled);
            assert!(job.array.as_ref().unwrap().pending.is_empty());
        }
        match env.run(Command::Requeue {
            caller: ALICE,
            filter: filter(&[1]),
            hold: false,
        }) {
            Reply::JobResults(r) => {
                assert_eq!(r[0].error_code, ErrorCode::Disabled.number(), "{r:?}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_dependency_on_an_array_waits_for_every_task() {
    let mut env = Env::new();
    env.register_all();
    env.submit(array("0-1"));
    let dep = env.submit(v1::JobDescription {
        dependency: "afterok:1".into(),
        ..script()
    });
    assert_eq!(env.job(dep).reason, PendingReason::Dependency);
    env.finish(2, 0, 0);
    assert_eq!(env.job(dep).reason, PendingReason::Dependency);
    env.finish(1, 0, 0);
    assert_eq!(env.job(dep).state(), JobState::Running);
    // One task that fails makes `afterok` on the array impossible.
    env.submit(array("0-1"));
    let ids: Vec<u32> = records(&env)
        .into_iter()
        .filter(|r| r.1 == 4 && r.3 == JobState::Running)
        .map(|r| r.0)
        .collect();
    let dep2 = env.submit(v1::JobDescription {
        dependency: "afterok:4_1".into(),
        ..script()
    });
    assert_eq!(ids.len(), 2);
    // Task 1 runs as job 4 (the last task keeps the id).
    env.finish(4, 1, 0);
    assert_eq!(
        env.job(dep2).reason,
        PendingReason::DependencyNeverSatisfied
    );
}

#[test]
fn replay_and_snapshots_give_back_the_array_records() {
    let mut env = Env::new();
    env.register_all();
    env.submit(array("0-9%3"));
    env.finish(2, 0, 0);
    let mut held = array("1,5,7");
    held.hold = true;
    let held_id = env.submit(held);
    env.run(Command::Release {
        caller: ALICE,
        filter: tasks(held_id, "5"),
    });
    assert!(env
        .events
        .iter()
        .any(|e| matches!(e, Event::ArrayTaskSplit { task: 5, .. })));
    // aftercorr on the first array: task 0's counterpart completed, so
    // task 0 is split off and runs while 1-2 wait (`core::depend`).
    let corr = env.submit(v1::JobDescription {
        dependency: "aftercorr:1".into(),
        ..array("0-2")
    });
    assert_eq!(env.job(corr).array.as_ref().unwrap().pending, vec![1, 2]);
    let shape = |c: &crate::core::Controller| {
        c.jobs()
            .map(|j| {
                let dependency = crate::core::depend::shown(j);
                let array = j.array.clone();
                (j.id, j.status, array, j.alloc.clone(), j.hold, dependency)
            })
            .collect::<Vec<_>>()
    };
    let replayed = replay_encoded(CONF, &env.events);
    replayed.sanity_check().unwrap();
    assert_eq!(shape(&replayed), shape(&env.ctl));
    assert_eq!(replayed.next_job_id(), env.ctl.next_job_id());
    assert_eq!(replayed.script_space(), env.ctl.script_space());

    let loaded = snapshot_reloaded(&env.ctl);
    assert_eq!(shape(&loaded), shape(&env.ctl));
    assert_eq!(loaded.script_space(), env.ctl.script_space());
}

#[test]
fn a_huge_task_selection_picks_what_the_array_has() {
    let mut env = Env::new();
    env.register_all();
    let mut held = array("0-3");
    held.hold = true;
    env.submit(held);
    // Four billion ids are not expanded: the array's own tasks are tested.
    let results = cancel_tasks(&mut env, ALICE, 1, "[1-4000000000:2]");
    let tasks: Vec<_> = results.iter().map(|r| r.array_task_id).collect();
    assert_eq!(tasks, vec![Some(1), Some(3)]);
    assert_eq!(env.job(1).array.as_ref().unwrap().pending, vec![0, 2]);
}
