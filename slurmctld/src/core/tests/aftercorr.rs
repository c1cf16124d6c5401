//! `aftercorr` through the controller (`core::depend`): each task of an
//! array starts when its counterpart completes, a task whose counterpart
//! failed never runs (or is cancelled) while the others go on, the waiting
//! tasks stay together in the meta record with Reason=Dependency, `%N`
//! still holds, a job without a counterpart follows the named job as a
//! whole, and replay and snapshots give back the same state.

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_proto::v1;

use super::{replay_encoded, script, snapshot_reloaded, Env, CONF};
use crate::core::snapshot::tests::fingerprint;
use crate::core::{Action, Event};

fn array(spec: &str) -> v1::JobDescription {
    v1::JobDescription {
        array_spec: spec.into(),
        ..script()
    }
}

fn after_corr(spec: &str, on: u32) -> v1::JobDescription {
    v1::JobDescription {
        dependency: format!("aftercorr:{on}"),
        ..array(spec)
    }
}

fn ready() -> Env {
    let mut env = Env::new();
    env.register_all();
    env
}

/// The record of task `task` of array `array_job_id` (split off or not).
fn task_of(env: &Env, array_job_id: u32, task: u32) -> u32 {
    env.ctl
        .jobs()
        .find(|j| {
            j.array.as_ref().is_some_and(|a| {
                a.array_job_id == array_job_id
                    && (a.task == Some(task) || a.pending.binary_search(&task).is_ok())
            })
        })
        .map(|j| j.id.get())
        .unwrap_or_else(|| panic!("no task {task} in array {array_job_id}"))
}

/// (job id, task) of every batch launch since the last call.
fn launches(env: &mut Env) -> Vec<(u32, u32)> {
    env.take_actions()
        .into_iter()
        .filter_map(|a| match a {
            Action::LaunchBatch { request, .. } => {
                Some((request.job_id, request.array?.array_task_id))
            }
            _ => None,
        })
        .collect()
}

fn shown(env: &Env, id: u32) -> String {
    crate::core::depend::shown(env.job(id))
}

fn pending_tasks(env: &Env, id: u32) -> Vec<u32> {
    env.job(id).array.as_ref().unwrap().pending.clone()
}

/// Array `a` (tasks 0-3, all running) and array `b` (`spec`) with
/// `aftercorr:a`, launches taken.
fn two_arrays(env: &mut Env, spec: &str) -> (u32, u32) {
    let a = env.submit(array("0-3"));
    assert_eq!(env.job(a).state(), JobState::Running);
    let b = env.submit(after_corr(spec, a));
    env.take_actions();
    (a, b)
}

#[test]
fn each_task_starts_when_its_counterpart_completes() {
    let mut env = ready();
    let (a, b) = two_arrays(&mut env, "0-3");
    let meta = env.job(b);
    assert_eq!(meta.state(), JobState::Pending);
    assert_eq!(meta.reason, PendingReason::Dependency);
    assert_eq!(shown(&env, b), format!("aftercorr:{a}(unfulfilled)"));

    // Task 2 of `a` completes: task 2 of `b` alone is split off and
    // starts in the same batch.
    let next = env.ctl.next_job_id();
    env.finish(task_of(&env, a, 2), 0, 0);
    assert_eq!(launches(&mut env), vec![(next, 2)]);
    assert_eq!(env.job(next).dependency, None);
    assert_eq!(pending_tasks(&env, b), vec![0, 1, 3]);
    let meta = env.job(b);
    assert_eq!(meta.reason, PendingReason::Dependency);
    assert_eq!(meta.eligible_time, 0);
    assert_eq!(shown(&env, b), format!("aftercorr:{a}(unfulfilled)"));

    // Task 1 fails: task 1 of `b` can never run; the others still wait.
    env.finish(task_of(&env, a, 1), 1, 0);
    assert_eq!(launches(&mut env), vec![]);
    let t1 = task_of(&env, b, 1);
    assert_ne!(t1, b);
    let job = env.job(t1);
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.reason, PendingReason::DependencyNeverSatisfied);
    assert_eq!(shown(&env, t1), format!("aftercorr:{a}(failed)"));
    assert_eq!(pending_tasks(&env, b), vec![0, 3]);
    assert_eq!(env.job(b).reason, PendingReason::Dependency);

    let next = env.ctl.next_job_id();
    env.finish(task_of(&env, a, 0), 0, 0);
    assert_eq!(launches(&mut env), vec![(next, 0)]);
    // The last task waiting keeps the array's id, as when tasks start.
    env.finish(task_of(&env, a, 3), 0, 0);
    assert_eq!(launches(&mut env), vec![(b, 3)]);
    assert_eq!(env.job(b).state(), JobState::Running);
    assert_eq!(env.job(b).dependency, None);
    assert_eq!(env.job(t1).state(), JobState::Pending);
}

#[test]
fn counterparts_ending_together_leave_one_change_per_answer() {
    let mut env = ready();
    let (a, b) = two_arrays(&mut env, "0-3");
    // Tasks 0 and 2 complete, 1 fails, 3 still runs: all in one batch.
    let (t0, t1, t2) = (
        task_of(&env, a, 0),
        task_of(&env, a, 1),
        task_of(&env, a, 2),
    );
    for (t, status) in [(t0, 0), (t1, 1), (t2, 0)] {
        assert_eq!(env.complete(t, status, 0), crate::core::Reply::Ok);
    }
    let splits: Vec<u32> = env
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ArrayTaskSplit {
                array_job_id, task, ..
            } if *array_job_id == b => Some(*task),
            _ => None,
        })
        .collect();
    assert_eq!(splits, vec![0, 1, 2]);
    assert_eq!(pending_tasks(&env, b), vec![3]);
    assert_eq!(shown(&env, b), format!("aftercorr:{a}(unfulfilled)"));
    let running: Vec<u32> = [0, 2]
        .into_iter()
        .map(|t| task_of(&env, b, t))
        .filter(|&id| env.job(id).state() == JobState::Running)
        .collect();
    assert_eq!(running.len(), 2);
    assert_eq!(
        env.job(task_of(&env, b, 1)).reason,
        PendingReason::DependencyNeverSatisfied
    );
}

#[test]
fn kill_invalid_depend_cancels_only_the_task_whose_counterpart_failed() {
    let mut env = Env::with_conf(&format!("{CONF}DependencyParameters=kill_invalid_depend\n"));
    env.register_all();
    let (a, b) = two_arrays(&mut env, "0-3");
    env.finish(task_of(&env, a, 1), 1, 0);
    let t1 = task_of(&env, b, 1);
    let job = env.job(t1);
    assert_eq!(job.state(), JobState::Cancelled);
    assert_eq!(job.reason, PendingReason::DependencyNeverSatisfied);
    assert_eq!(env.job(b).state(), JobState::Pending);
    assert_eq!(pending_tasks(&env, b), vec![0, 2, 3]);
    // When every task left fails, the meta record itself is cancelled.
    for t in [0, 2, 3] {
        env.finish(task_of(&env, a, t), 1, 0);
    }
    assert_eq!(env.job(b).state(), JobState::Cancelled);
    assert_eq!(shown(&env, b), format!("aftercorr:{a}(failed)"));
}

#[test]
fn without_a_corresponding_task_the_named_job_counts_as_a_whole() {
    let mut env = ready();
    // `b` has tasks 4 and 5 that `a` lacks: they wait for all of `a`.
    let (a, b) = two_arrays(&mut env, "2-5");
    let plain = env.submit(v1::JobDescription {
        dependency: format!("aftercorr:{a}"),
        ..script()
    });
    for t in [0, 1, 3] {
        env.finish(task_of(&env, a, t), 0, 0);
    }
    // Task 3's counterpart completed; task 2's runs, 4 and 5 follow `a`.
    assert_eq!(launches(&mut env), vec![(task_of(&env, b, 3), 3)]);
    assert_eq!(pending_tasks(&env, b), vec![2, 4, 5]);
    assert_eq!(env.job(plain).reason, PendingReason::Dependency);
    env.finish(task_of(&env, a, 2), 0, 0);
    let mut got: Vec<u32> = launches(&mut env).into_iter().map(|l| l.1).collect();
    got.sort_unstable();
    assert_eq!(got, vec![2, 4, 5]);
    assert_eq!(env.job(plain).state(), JobState::Running);

    // An array on a plain job: every task together, nothing split early.
    let p = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    let c = env.submit(after_corr("0-2", p));
    env.run(crate::core::Command::Release {
        caller: super::ALICE,
        filter: super::filter(&[p]),
    });
    let from = env.events.len();
    env.finish(p, 3, 0);
    assert!(!env.events[from..]
        .iter()
        .any(|e| matches!(e, Event::ArrayTaskSplit { .. })));
    assert_eq!(shown(&env, c), format!("aftercorr:{p}(failed)"));
    assert_eq!(env.job(c).reason, PendingReason::DependencyNeverSatisfied);
    assert_eq!(pending_tasks(&env, c), vec![0, 1, 2]);
}

#[test]
fn tasks_let_go_early_keep_to_the_array_throttle() {
    let mut env = ready();
    let (a, b) = two_arrays(&mut env, "0-3%1");
    for t in [0, 1, 2] {
        env.finish(task_of(&env, a, t), 0, 0);
    }
    let (b0, b1, b2) = (
        task_of(&env, b, 0),
        task_of(&env, b, 1),
        task_of(&env, b, 2),
    );
    assert_eq!(launches(&mut env), vec![(b0, 0)]);
    for id in [b1, b2] {
        assert_eq!(env.job(id).state(), JobState::Pending);
        assert_eq!(env.job(id).reason, PendingReason::JobArrayTaskLimit);
    }
    assert_eq!(env.job(b).reason, PendingReason::Dependency);
    // The last counterpart completes: the meta record is free too, but
    // the tasks split off first come first.
    env.finish(task_of(&env, a, 3), 0, 0);
    assert_eq!(launches(&mut env), vec![]);
    assert_eq!(env.job(b).reason, PendingReason::JobArrayTaskLimit);
    env.finish(b0, 0, 0);
    assert_eq!(launches(&mut env), vec![(b1, 1)]);
    env.finish(b1, 0, 0);
    assert_eq!(launches(&mut env), vec![(b2, 2)]);
    env.finish(b2, 0, 0);
    assert_eq!(launches(&mut env), vec![(b, 3)]);
}

#[test]
fn aftercorr_state_replays_and_snapshots_to_the_same_state() {
    let mut env = ready();
    let (a, b) = two_arrays(&mut env, "0-3");
    let plain = env.submit(v1::JobDescription {
        dependency: format!("aftercorr:{a}"),
        kill_on_invalid_dep: Some(false),
        ..script()
    });
    env.finish(task_of(&env, a, 2), 0, 0);
    env.finish(task_of(&env, a, 1), 1, 0);
    // Split, started, never satisfied, still waiting: all there.
    assert_eq!(pending_tasks(&env, b), vec![0, 3]);

    // Pending reasons are derived: the first pass after a restart makes
    // them again, and finds nothing to change, split or start.
    let mut replayed = replay_encoded(CONF, &env.events);
    replayed.sanity_check().unwrap();
    assert_eq!(replayed.schedule(env.now).events, vec![]);
    assert_eq!(fingerprint(&replayed), fingerprint(&env.ctl));
    let loaded = snapshot_reloaded(&env.ctl);
    assert_eq!(fingerprint(&loaded), fingerprint(&env.ctl));

    // After the restart the rest still goes task by task.
    let mut after = Env::new();
    after.ctl = loaded;
    after.now = env.now;
    let next = after.ctl.next_job_id();
    after.finish(task_of(&after, a, 0), 0, 0);
    assert_eq!(launches(&mut after), vec![(next, 0)]);
    after.finish(task_of(&after, a, 3), 0, 0);
    assert_eq!(launches(&mut after), vec![(b, 3)]);
    assert_eq!(
        after.job(plain).reason,
        PendingReason::DependencyNeverSatisfied
    );
}
