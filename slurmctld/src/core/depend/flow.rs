//! Dependencies through the controller: submissions, the events a job's
//! start and end produce, the scheduling pass that reacts in the same
//! batch, `scontrol update`, replay and snapshots.

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use crate::core::snapshot;
use crate::core::snapshot::tests::fingerprint;
use crate::core::tests::{replay_encoded, script, snapshot_reloaded, Env, ALICE, BOB, CONF};
use crate::core::{Caller, Command, Event, Reply};

fn depends(text: &str) -> v1::JobDescription {
    v1::JobDescription {
        dependency: text.into(),
        ..script()
    }
}

fn named(name: &str, dependency: &str) -> v1::JobDescription {
    v1::JobDescription {
        name: name.into(),
        dependency: dependency.into(),
        ..script()
    }
}

fn held() -> v1::JobDescription {
    v1::JobDescription {
        hold: true,
        ..script()
    }
}

fn ready() -> Env {
    let mut env = Env::new();
    env.register_all();
    env
}

fn filter(id: u32) -> v1::JobFilter {
    v1::JobFilter {
        job_ids: vec![id],
        ..Default::default()
    }
}

fn release(env: &mut Env, id: u32) {
    let r = env.run(Command::Release {
        caller: ALICE,
        filter: filter(id),
    });
    assert_eq!(results(&r), vec![(id, 0)]);
}

fn update(env: &mut Env, caller: Caller, id: u32, text: &str) -> i32 {
    let r = env.run(Command::UpdateJob {
        caller,
        request: Box::new(v1::UpdateJobRequest {
            filter: Some(filter(id)),
            dependency: Some(text.into()),
            ..Default::default()
        }),
    });
    let got = results(&r);
    assert_eq!(got.len(), 1, "{r:?}");
    got[0].1
}

fn results(r: &Reply) -> Vec<(u32, i32)> {
    match r {
        Reply::JobResults(v) => v.iter().map(|r| (r.job_id, r.error_code)).collect(),
        other => panic!("not job results: {other:?}"),
    }
}

fn shown(env: &Env, id: u32) -> String {
    super::shown(env.job(id))
}

/// The dependency events emitted since `from`, as (job, text).
fn changes(env: &Env, from: usize) -> Vec<(u32, String)> {
    env.events[from..]
        .iter()
        .filter_map(|e| match e {
            Event::JobDependencyChanged {
                job_id, dependency, ..
            } => Some((*job_id, dependency.clone())),
            _ => None,
        })
        .collect()
}

fn started(env: &Env, from: usize) -> Vec<u32> {
    env.events[from..]
        .iter()
        .filter_map(|e| match e {
            Event::JobStarted { job_id, .. } => Some(*job_id),
            _ => None,
        })
        .collect()
}

#[test]
fn an_afterok_job_waits_and_starts_in_the_pass_that_sees_the_end() {
    let mut env = ready();
    let a = env.submit(held());
    let b = env.submit(depends(&format!("afterok:{a}")));
    let job = env.job(b);
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.reason, PendingReason::Dependency);
    assert_eq!(job.eligible_time, 0, "EligibleTime=Unknown while it waits");
    assert_eq!(shown(&env, b), format!("afterok:{a}(unfulfilled)"));

    release(&mut env, a);
    assert_eq!(env.job(a).state(), JobState::Running);
    assert_eq!(env.job(b).reason, PendingReason::Dependency);

    env.now += 5;
    let from = env.events.len();
    assert_eq!(env.complete(a, 0, 0), Reply::Ok);
    // The end, the dependency change and the start, in that one batch.
    assert_eq!(changes(&env, from), vec![(b, String::new())]);
    assert_eq!(started(&env, from), vec![b]);
    let job = env.job(b);
    assert_eq!(job.state(), JobState::Running);
    assert_eq!(job.dependency, None);
    assert_eq!(job.eligible_time, env.now);
    assert_eq!(shown(&env, b), "");
}

#[test]
fn afterok_on_a_job_that_failed_never_holds() {
    let mut env = ready();
    let a = env.submit(script());
    let early = env.submit(depends(&format!("afterok:{a}")));
    env.finish(a, 1, 0);
    assert_eq!(env.job(a).state(), JobState::Failed);
    let late = env.submit(depends(&format!("afterok:{a}")));
    for id in [early, late] {
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Pending);
        assert_eq!(job.reason, PendingReason::DependencyNeverSatisfied);
        assert_eq!(shown(&env, id), format!("afterok:{a}(failed)"));
    }
    // afternotok on it holds at once: the job runs.
    let other = env.submit(depends(&format!("afternotok:{a}")));
    assert_eq!(env.job(other).state(), JobState::Running);
    // Nothing more changes on later passes.
    let from = env.events.len();
    env.run(Command::Tick);
    assert_eq!(changes(&env, from), vec![]);
}

#[test]
fn kill_invalid_depend_cancels_unless_the_job_says_no() {
    let conf = format!("{CONF}SchedulerParameters=kill_invalid_depend\n");
    let mut env = Env::with_conf(&conf);
    env.register_all();
    let a = env.submit(script());
    let doomed = env.submit(depends(&format!("afterok:{a}")));
    let kept = env.submit(v1::JobDescription {
        kill_on_invalid_dep: Some(false),
        ..depends(&format!("afterok:{a}"))
    });
    env.finish(a, 2, 0);
    let job = env.job(doomed);
    assert_eq!(job.state(), JobState::Cancelled);
    assert_eq!(job.reason, PendingReason::DependencyNeverSatisfied);
    assert_eq!(shown(&env, doomed), format!("afterok:{a}(failed)"));
    assert_eq!(env.job(kept).state(), JobState::Pending);
    assert_eq!(
        env.job(kept).reason,
        PendingReason::DependencyNeverSatisfied
    );
    // Without the setting, the job's own --kill-on-invalid-dep=yes.
    let mut env = ready();
    let a = env.submit(script());
    env.finish(a, 1, 0);
    let doomed = env.submit(v1::JobDescription {
        kill_on_invalid_dep: Some(true),
        ..depends(&format!("afterok:{a}"))
    });
    assert_eq!(env.job(doomed).state(), JobState::Cancelled);
    // DependencyParameters=kill_invalid_depend works as well.
    let conf = format!("{CONF}DependencyParameters=kill_invalid_depend\n");
    assert!(Env::with_conf(&conf).ctl.config().kill_invalid_depend);
    assert!(!Env::new().ctl.config().kill_invalid_depend);
}

#[test]
fn after_holds_once_the_job_starts_in_the_same_scheduling_call() {
    let mut env = ready();
    let a = env.submit(held());
    let b = env.submit(depends(&format!("after:{a}")));
    assert_eq!(env.job(b).reason, PendingReason::Dependency);
    let from = env.events.len();
    release(&mut env, a);
    assert_eq!(started(&env, from), vec![a, b]);
}

#[test]
fn after_with_minutes_sets_the_timer() {
    let mut env = ready();
    env.without_periodic_pass();
    let a = env.submit(script());
    let b = env.submit(depends(&format!("after:{a}+2")));
    assert_eq!(env.job(b).reason, PendingReason::Dependency);
    assert_eq!(env.ctl.next_deadline(env.now), Some(env.now + 120));
    env.now += 119;
    env.run(Command::Tick);
    assert_eq!(env.job(b).state(), JobState::Pending);
    env.now += 1;
    env.run(Command::Tick);
    assert_eq!(env.job(b).state(), JobState::Running);
}

#[test]
fn singleton_lets_one_job_of_a_user_and_name_run_at_a_time() {
    let mut env = ready();
    let first = env.submit(named("s", ""));
    let second = env.submit(named("s", "singleton"));
    let third = env.submit(named("s", "singleton"));
    let other_name = env.submit(named("t", "singleton"));
    let other_user = match env.submit_as(
        BOB,
        v1::JobDescription {
            user_id: 1001,
            group_id: 1001,
            ..named("s", "singleton")
        },
    ) {
        Reply::Submitted { job_id, .. } => job_id,
        r => panic!("{r:?}"),
    };
    for id in [first, other_name, other_user] {
        assert_eq!(env.job(id).state(), JobState::Running, "job {id}");
    }
    for id in [second, third] {
        assert_eq!(env.job(id).reason, PendingReason::Dependency, "job {id}");
        assert_eq!(shown(&env, id), "singleton(unfulfilled)");
    }
    env.finish(first, 0, 0);
    assert_eq!(env.job(second).state(), JobState::Running);
    assert_eq!(env.job(third).state(), JobState::Pending);
    env.finish(second, 0, 0);
    assert_eq!(env.job(third).state(), JobState::Running);
}

#[test]
fn a_job_id_that_names_no_job_is_dropped() {
    let mut env = ready();
    let ghost = env.submit(depends("afterok:999999"));
    let job = env.job(ghost);
    assert_eq!(job.dependency, None);
    assert_eq!(job.state(), JobState::Running);
    // With ?, a job that is gone satisfies the whole.
    let a = env.submit(held());
    let b = env.submit(depends(&format!("afterok:{a}?afterok:999999")));
    assert_eq!(env.job(b).dependency, None);
    // With ,, only that part goes.
    let c = env.submit(depends(&format!("afterok:999999,afterany:{a}")));
    assert_eq!(shown(&env, c), format!("afterany:{a}(unfulfilled)"));
    // The submission records what is left, so replay needs no lookups.
    let recorded = env.events.iter().find_map(|e| match e {
        Event::JobSubmitted { job_id, desc, .. } if *job_id == c => Some(desc.dependency.clone()),
        _ => None,
    });
    assert_eq!(
        recorded.as_deref(),
        Some(&*format!("afterany:{a}(unfulfilled)"))
    );
}

#[test]
fn malformed_and_self_dependencies_are_refused_as_slurm_does() {
    let mut env = ready();
    let next = env.ctl.next_job_id();
    for text in [
        "foo".to_string(),
        "afterok:".into(),
        "afterok:1,afterok:2?afterok:3".into(),
        format!("afterok:{next}"),
        format!("afterany:{next}_*"),
    ] {
        let r = env.submit_as(ALICE, depends(&text));
        assert_eq!(r, Reply::error(ErrorCode::Dependency, ""), "{text:?}");
    }
    assert_eq!(
        env.submit_as(ALICE, depends("expand:1")),
        Reply::error(ErrorCode::NotSupported, "")
    );
    // Nothing was taken: the next job gets the id.
    assert_eq!(env.submit(script()), next);
}

#[test]
fn scontrol_update_sets_clears_and_checks_a_dependency() {
    let mut env = ready();
    let a = env.submit(held());
    let b = env.submit(held());
    assert_eq!(update(&mut env, ALICE, b, &format!("afterok:{a}")), 0);
    assert_eq!(shown(&env, b), format!("afterok:{a}(unfulfilled)"));
    assert_eq!(env.job(b).eligible_time, 0);
    release(&mut env, b);
    assert_eq!(env.job(b).reason, PendingReason::Dependency);
    let code = |c: ErrorCode| c.number();
    // Refused: malformed, itself, a cycle, someone else's job.
    assert_eq!(
        update(&mut env, ALICE, b, "bad"),
        code(ErrorCode::Dependency)
    );
    assert_eq!(
        update(&mut env, ALICE, b, &format!("afterok:{b}")),
        code(ErrorCode::Dependency)
    );
    assert_eq!(
        update(&mut env, ALICE, a, &format!("afterany:{b}")),
        code(ErrorCode::CircularDependency)
    );
    assert_eq!(update(&mut env, BOB, b, ""), code(ErrorCode::InvalidUserId));
    assert_eq!(shown(&env, b), format!("afterok:{a}(unfulfilled)"));
    // Cleared: it runs.
    assert_eq!(update(&mut env, ALICE, b, ""), 0);
    assert_eq!(env.job(b).state(), JobState::Running);
    assert_eq!(env.job(b).eligible_time, env.now);
    // Only pending jobs.
    assert_eq!(
        update(&mut env, ALICE, b, &format!("afterok:{a}")),
        code(ErrorCode::JobNotPending)
    );
    // Operators may change anyone's.
    assert_eq!(update(&mut env, Caller::ROOT, a, "singleton"), 0);
}

#[test]
fn dependencies_replay_and_snapshot_to_the_same_state() {
    let mut env = ready();
    let a = env.submit(held());
    let failed = env.submit(script());
    env.finish(failed, 1, 0);
    env.submit(depends(&format!("afterok:{a}")));
    env.submit(v1::JobDescription {
        kill_on_invalid_dep: Some(false),
        ..depends(&format!("afterok:{failed},afterany:{a}"))
    });
    env.submit(named("s", &format!("singleton?after:{a}+5")));
    env.submit(v1::JobDescription {
        kill_on_invalid_dep: Some(true),
        ..script()
    });
    // Pending reasons are derived: the first pass after a restart makes
    // them again, and finds nothing to change or start.
    let mut replayed = replay_encoded(CONF, &env.events);
    assert_eq!(replayed.schedule(env.now).events, vec![]);
    assert_eq!(fingerprint(&replayed), fingerprint(&env.ctl));
    let loaded = snapshot_reloaded(&env.ctl);
    assert_eq!(fingerprint(&loaded), fingerprint(&env.ctl));

    // After the restart the job still waits and starts when it should.
    let mut after = Env::new();
    after.ctl = loaded;
    after.now = env.now;
    release(&mut after, a);
    after.finish(a, 0, 0);
    assert_eq!(after.job(a + 2).state(), JobState::Running);
}

#[test]
fn a_recorded_dependency_that_does_not_parse_is_ignored_on_replay() {
    // Journals from before dependencies were honoured hold the user's text.
    let mut env = ready();
    let id = env.submit(script());
    let mut events = env.events.clone();
    for e in &mut events {
        if let Event::JobSubmitted { desc, .. } = e {
            desc.dependency = "foo:1".into();
        }
    }
    let replayed = replay_encoded(CONF, &events);
    assert_eq!(replayed.job(id).unwrap().dependency, None);
    // A change event of the core's own that does not parse is damage.
    let mut ctl = replay_encoded(CONF, &events);
    let bad = Event::JobDependencyChanged {
        job_id: id,
        time: 1,
        dependency: "foo".into(),
    };
    assert!(ctl.apply(&bad).is_err());
}

#[test]
fn a_dependency_record_must_follow_its_job() {
    let mut env = ready();
    let a = env.submit(held());
    env.submit(depends(&format!("afterok:{a}")));
    let bytes = snapshot::encode(&env.ctl, 1);
    // Records: META, 4 NODE, JOB a, JOB b, DEPEND b, END. Swap the last
    // JOB and its DEPEND record.
    let mut records = Vec::new();
    let mut pos = snapshot::SNAPSHOT_HEADER_LEN;
    while pos < bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        records.push(bytes[pos..pos + 8 + len].to_vec());
        pos += 8 + len;
    }
    let n = records.len();
    assert_eq!(records[n - 2][8], 5, "a DEPEND record before END");
    records.swap(n - 3, n - 2);
    let mut damaged = bytes[..snapshot::SNAPSHOT_HEADER_LEN].to_vec();
    for r in records {
        damaged.extend_from_slice(&r);
    }
    assert!(snapshot::decode(&damaged, Env::new().ctl, false).is_err());
}

/// squeue and scontrol read the text from JobInfo's `dependency`; the
/// hand-encoded GetJobs reply writes it as prost does.
#[test]
fn job_info_carries_the_dependency_text_in_both_encodings() {
    use crate::rpc::convert::{job_info_fields, JobFields};
    use crate::rpc::jobs::{encode_job, DIRECT};
    use prost::Message;

    let mut env = ready();
    let a = env.submit(held());
    let b = env.submit(depends(&format!("afterok:{a}")));
    let snap = env.ctl.snapshot();
    let info = crate::rpc::convert::job_info(&snap, env.job(b), env.now);
    assert_eq!(info.dependency, format!("afterok:{a}(unfulfilled)"));
    assert_eq!(info.state_reason, "Dependency");
    assert_eq!(info.eligible_time, 0);
    assert!(DIRECT.has(24));
    for want in [JobFields::of(&[24]), DIRECT] {
        for id in [a, b] {
            let job = env.job(id);
            let (mut direct, mut body) = (Vec::new(), Vec::new());
            encode_job(&mut direct, &mut body, &snap, job, env.now, want);
            let prost = v1::GetJobsReply {
                jobs: vec![job_info_fields(&snap, job, env.now, want)],
                last_update: 0,
                unchanged: false,
            }
            .encode_to_vec();
            assert_eq!(direct, prost, "job {id}");
        }
    }
}

#[test]
fn max_depend_depth_bounds_the_search_for_a_cycle() {
    // A chain: c waits on b, b on a; making a wait on c closes a cycle
    // through 2 waiting jobs (c, then b).
    let chain = |env: &mut Env| {
        let a = env.submit(held());
        let b = env.submit(depends(&format!("afterok:{a}")));
        let c = env.submit(depends(&format!("afterok:{b}")));
        (a, c)
    };
    let circular = ErrorCode::CircularDependency.number();
    let mut env = ready();
    assert_eq!(env.ctl.config().max_depend_depth, 10);
    let (a, c) = chain(&mut env);
    assert_eq!(
        update(&mut env, ALICE, a, &format!("afterok:{c}")),
        circular
    );
    // Two jobs looked at are enough to find it...
    let mut env = Env::with_conf(&format!("{CONF}DependencyParameters=max_depend_depth=2\n"));
    env.register_all();
    let (a, c) = chain(&mut env);
    assert_eq!(
        update(&mut env, ALICE, a, &format!("afterok:{c}")),
        circular
    );
    // ... one is not: the search stops and the dependency is taken.
    let mut env = Env::with_conf(&format!("{CONF}SchedulerParameters=max_depend_depth=1\n"));
    env.register_all();
    let (a, c) = chain(&mut env);
    assert_eq!(update(&mut env, ALICE, a, &format!("afterok:{c}")), 0);
    assert_eq!(shown(&env, a), format!("afterok:{c}(unfulfilled)"));
    // DependencyParameters wins; text that is not a number means 10.
    let conf = format!(
        "{CONF}SchedulerParameters=max_depend_depth=4\nDependencyParameters=max_depend_depth=3\n"
    );
    assert_eq!(Env::with_conf(&conf).ctl.config().max_depend_depth, 3);
    let conf = format!("{CONF}DependencyParameters=max_depend_depth=lots\n");
    assert_eq!(Env::with_conf(&conf).ctl.config().max_depend_depth, 10);
}

/// A job submitted held is not tested until released, as in Slurm 22.05:
/// it shows `singleton(unfulfilled)` and `afterok:N(unfulfilled)` for a job
/// already done; released, it is tested and runs (or never can).
#[test]
fn a_job_submitted_held_is_tested_when_released() {
    let mut env = ready();
    let a = env.submit(script());
    env.complete(a, 0, 0);
    let alone = env.submit(v1::JobDescription {
        hold: true,
        ..named("solo", "singleton")
    });
    let after = env.submit(v1::JobDescription {
        hold: true,
        ..depends(&format!("afterok:{a}"))
    });
    let never = env.submit(v1::JobDescription {
        hold: true,
        ..depends(&format!("afternotok:{a}"))
    });
    assert_eq!(shown(&env, alone), "singleton(unfulfilled)");
    assert_eq!(shown(&env, after), format!("afterok:{a}(unfulfilled)"));
    assert_eq!(shown(&env, never), format!("afternotok:{a}(unfulfilled)"));
    for id in [alone, after, never] {
        assert_eq!(env.job(id).reason, PendingReason::JobHeldUser);
        release(&mut env, id);
    }
    assert_eq!(env.job(alone).state(), JobState::Running);
    assert_eq!(env.job(after).state(), JobState::Running);
    assert_eq!(shown(&env, never), format!("afternotok:{a}(failed)"));
    assert_eq!(
        env.job(never).reason,
        PendingReason::DependencyNeverSatisfied
    );
}
