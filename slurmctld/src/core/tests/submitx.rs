//! Submission options that were once dropped (`core::extras`): `--signal`
//! sent by the timer, `--licenses` counted, `--reservation` refused,
//! `--tmp` against TmpDisk, `--deadline` ending pending jobs, `--gpus*`,
//! `--network`; each survives replay and snapshots.

use slurm_common::reason::PendingReason;
use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::{replay_encoded, script, Env, ALICE};
use crate::core::licenses::{license_report, LicenseUse};
use crate::core::snapshot;
use crate::core::{Action, Command, Event, Reply};

const CONF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
MinJobAge=300
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
Licenses=lic:1,foo:4
NodeName=n[1-2] CPUs=2 RealMemory=4000 TmpDisk=1000 State=UNKNOWN
NodeName=n[3-4] CPUs=2 RealMemory=4000 TmpDisk=100 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=small Nodes=n[1-2] MaxTime=INFINITE State=UP
";

fn env() -> Env {
    let mut env = Env::with_conf(CONF);
    env.register_all();
    env
}

fn refusal(r: &Reply) -> ErrorCode {
    match r {
        Reply::Error { code, .. } => *code,
        other => panic!("not refused: {other:?}"),
    }
}

fn minutes(m: u32) -> Option<v1::TimeLimit> {
    Some(TimeLimit::Minutes(m).into())
}

fn tick(env: &mut Env) {
    env.run(Command::Tick);
}

fn signals(actions: &[Action]) -> Vec<(u32, Vec<usize>, u32, bool)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SignalJob {
                job_id,
                nodes,
                request,
            } => Some((*job_id, nodes.clone(), request.signal, request.batch_only)),
            _ => None,
        })
        .collect()
}

fn sent_events(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::JobSignalSent { .. }))
        .count()
}

// ---------------------------------------------------------------- signal

/// `--signal=B:USR1@50` with a one-minute limit: due 10 s after the start,
/// driven by the timer (it is the next deadline), sent once to the batch
/// host as a batch-only signal, and never again, not even after a restart
/// from the journal or from a snapshot.
#[test]
fn a_batch_signal_goes_out_once_sig_time_before_the_limit() {
    let mut env = env();
    let start = env.now;
    let id = env.submit(v1::JobDescription {
        time_limit: minutes(1),
        signal_spec: "B:USR1@50".into(),
        ..script()
    });
    assert_eq!(env.job(id).state(), JobState::Running);
    env.take_actions();
    assert_eq!(env.ctl.next_deadline(env.now), Some(start + 10));

    env.now = start + 9;
    tick(&mut env);
    assert!(signals(&env.take_actions()).is_empty());

    env.now = start + 10;
    tick(&mut env);
    assert_eq!(signals(&env.take_actions()), vec![(id, vec![0], 10, true)]);
    assert_eq!(sent_events(&env.events), 1);
    assert!(env.job(id).signal_sent);
    // Next is the end of the time limit.
    assert_eq!(env.ctl.next_deadline(env.now), Some(start + 60));

    env.now = start + 11;
    tick(&mut env);
    assert!(signals(&env.take_actions()).is_empty());
    assert_eq!(sent_events(&env.events), 1);

    // A controller rebuilt from the journal or a snapshot does not send it
    // again.
    let mut replayed = replay_encoded(CONF, &env.events);
    assert!(replayed.job(id).unwrap().signal_sent);
    let out = replayed.handle(Command::Tick, env.now);
    assert!(signals(&out.actions).is_empty());
    let loaded = snapshot::decode(
        &snapshot::encode(&env.ctl, 1),
        Env::with_conf(CONF).ctl,
        false,
    )
    .unwrap()
    .controller;
    let job = loaded.job(id).unwrap();
    assert!(job.signal_sent);
    assert_eq!(job.spec.extras().signal, env.job(id).spec.extras().signal);
    assert_eq!(loaded.next_signal_due(), None);
}

/// Without `B:` Slurm signals every step but not the batch shell: a batch
/// job has no steps here, so the send is recorded and nothing is sent.
/// A job without a time limit never gets its signal.
#[test]
fn signals_without_b_reach_no_batch_shell_and_unlimited_jobs_get_none() {
    let mut env = env();
    let start = env.now;
    let steps = env.submit(v1::JobDescription {
        time_limit: minutes(2),
        signal_spec: "USR2".into(),
        ..script()
    });
    let unlimited = env.submit(v1::JobDescription {
        signal_spec: "B:USR1@65535".into(),
        ..script()
    });
    env.take_actions();
    // Default sig_time: 60 s before the two-minute limit.
    assert_eq!(env.ctl.next_signal_due(), Some(start + 60));
    env.now = start + 60;
    tick(&mut env);
    assert!(signals(&env.take_actions()).is_empty());
    assert!(env.job(steps).signal_sent);
    assert!(!env.job(unlimited).signal_sent);
    assert_eq!(env.ctl.next_signal_due(), None);
}

/// A requeued job that runs again gets its signal again.
#[test]
fn a_requeued_job_is_signalled_again_in_its_next_run() {
    let mut env = env();
    let id = env.submit(v1::JobDescription {
        time_limit: minutes(1),
        signal_spec: "B:10@60".into(),
        ..script()
    });
    tick(&mut env);
    assert_eq!(signals(&env.take_actions()).len(), 1);
    let r = env.run(Command::Requeue {
        caller: ALICE,
        filter: super::filter(&[id]),
        hold: false,
    });
    assert_eq!(super::ok_results(&r), vec![(id, 0)]);
    env.epilogs(id);
    env.take_actions();
    // Past the requeue delay it starts again, its mark cleared; the next
    // tick sends the signal of this run.
    env.now += 200;
    tick(&mut env);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert!(!env.job(id).signal_sent);
    assert!(signals(&env.take_actions()).is_empty());
    tick(&mut env);
    assert_eq!(signals(&env.take_actions()).len(), 1);
    assert!(env.job(id).signal_sent);
}

/// A spec that does not parse is refused (sbatch checks it first).
#[test]
fn a_malformed_signal_spec_is_refused() {
    let mut env = env();
    for bad in ["X:USR1", "USR1@70000", "NOPE"] {
        let r = env.submit_as(
            ALICE,
            v1::JobDescription {
                signal_spec: bad.into(),
                ..script()
            },
        );
        assert_eq!(refusal(&r), ErrorCode::MalformedRequest, "{bad}");
    }
}

// -------------------------------------------------------------- licenses

/// `Licenses=lic:1`: two jobs each wanting it; the second waits with
/// Reason=Licenses (and holds back nobody) until the first ends.
#[test]
fn licenses_are_held_while_running() {
    let mut env = env();
    let lic = |count| v1::JobDescription {
        licenses: format!("lic:{count}"),
        ..script()
    };
    let first = env.submit(lic(1));
    let second = env.submit(lic(1));
    let plain = env.submit(script());
    assert_eq!(env.job(first).state(), JobState::Running);
    assert_eq!(env.job(second).state(), JobState::Pending);
    assert_eq!(env.job(second).reason, PendingReason::Licenses);
    assert_eq!(env.job(plain).state(), JobState::Running);
    assert_eq!(env.job(first).spec.extras().licenses_shown(), "lic:1");
    let used = |env: &Env| -> Vec<LicenseUse> { license_report(&env.ctl.snapshot()) };
    assert_eq!(
        used(&env),
        vec![
            LicenseUse {
                name: "lic".into(),
                total: 1,
                used: 1
            },
            LicenseUse {
                name: "foo".into(),
                total: 4,
                used: 0
            },
        ]
    );

    // Given back when the job ends, before its nodes are done.
    assert_eq!(env.complete(first, 0, 0), Reply::Ok);
    assert_eq!(env.job(second).state(), JobState::Running);
    assert_eq!(used(&env)[0].used, 1);
    env.finish(second, 0, 0);
    assert_eq!(used(&env)[0].used, 0);
}

/// Unknown licenses, more than configured, and alternatives are refused
/// with Slurm's ESLURM_INVALID_LICENSES.
#[test]
fn invalid_license_requests_are_refused() {
    let mut env = env();
    for bad in ["nope", "lic:2", "foo:5", "lic|foo", "lic:", "lic foo"] {
        let r = env.submit_as(
            ALICE,
            v1::JobDescription {
                licenses: bad.into(),
                ..script()
            },
        );
        assert_eq!(refusal(&r), ErrorCode::InvalidLicenses, "{bad}");
    }
    // Repeats add up: foo:2,foo:2 is four, which exist.
    let id = env.submit(v1::JobDescription {
        licenses: "foo:2;foo:2".into(),
        ..script()
    });
    assert_eq!(env.job(id).spec.extras().licenses_shown(), "foo:4");
    // Without Licenses= nothing may be asked for.
    let mut bare = Env::new();
    let r = bare.submit_as(
        ALICE,
        v1::JobDescription {
            licenses: "lic".into(),
            ..script()
        },
    );
    assert_eq!(refusal(&r), ErrorCode::InvalidLicenses);
    assert!(license_report(&bare.ctl.snapshot()).is_empty());
}

// ------------------------------------------------- reservation, network

#[test]
fn reservations_do_not_exist_yet() {
    let mut env = env();
    let r = env.submit_as(
        ALICE,
        v1::JobDescription {
            reservation: "maint".into(),
            ..script()
        },
    );
    assert_eq!(refusal(&r), ErrorCode::ReservationInvalid);
    assert_eq!(
        ErrorCode::ReservationInvalid.message(),
        "Requested reservation is invalid"
    );
}

// -------------------------------------------------------------------- tmp

/// `--tmp` keeps a job on nodes with that much TmpDisk and is refused when
/// no node of the partition has it.
#[test]
fn tmp_disk_places_and_refuses() {
    let mut env = env();
    // n1-n2 have 1000 MB, n3-n4 100 MB; fill n1 and n2 first.
    let big = env.submit(v1::JobDescription {
        tmp_disk_mb: Some(1000),
        ..script()
    });
    assert_eq!(env.job(big).alloc[0].node_index, 0);
    let r = env.submit_as(
        ALICE,
        v1::JobDescription {
            tmp_disk_mb: Some(1001),
            ..script()
        },
    );
    assert_eq!(refusal(&r), ErrorCode::RequestedNodeConfigUnavailable);
    let exclusive = |tmp| v1::JobDescription {
        tmp_disk_mb: Some(tmp),
        sharing: v1::NodeSharing::Exclusive as i32,
        ..script()
    };
    let a = env.submit(exclusive(500));
    let b = env.submit(exclusive(500));
    assert_eq!(env.job(a).alloc[0].node_index, 1);
    // Only n1 and n2 qualify, and both are taken: it waits.
    assert_eq!(env.job(b).state(), JobState::Pending);
    assert_eq!(env.job(b).reason, PendingReason::Resources);
}

// --------------------------------------------------------------- deadline

#[test]
fn deadlines_that_cannot_be_met_are_refused_at_submission() {
    let mut env = env();
    let now = env.now;
    let with = |deadline: i64, limit: Option<u32>, time_min: Option<u32>| v1::JobDescription {
        deadline,
        time_limit: limit.and_then(minutes),
        time_min_minutes: time_min,
        ..script()
    };
    for (deadline, limit, time_min, code) in [
        (now - 1, None, None, ErrorCode::InvalidTimeLimit),
        (now - 60, Some(1), None, ErrorCode::InvalidTimeLimit),
        (now + 3600, Some(120), Some(61), ErrorCode::InvalidTimeMin),
        (0, Some(20), Some(90), ErrorCode::InvalidTimeMin),
    ] {
        let r = env.submit_as(ALICE, with(deadline, limit, time_min));
        assert_eq!(refusal(&r), code, "{deadline} {limit:?} {time_min:?}");
    }
    // A --begin after the deadline, too.
    let r = env.submit_as(
        ALICE,
        v1::JobDescription {
            begin_time: now + 7200,
            ..with(now + 3600, None, None)
        },
    );
    assert_eq!(refusal(&r), ErrorCode::InvalidTimeLimit);
    env.submit(with(now + 3600, Some(60), None));
    // A limit past the deadline is taken (a pass ends the job as DEADLINE).
    env.submit(with(now + 3599, Some(60), None));
    env.submit(with(now + 3600, Some(120), Some(20)));
    env.submit(with(now + 600, None, None));
}

/// A deadline job without a time limit or time-min gets TimeMin=00:01:00
/// where the partition has no DefaultTime, as in Slurm; a limit given
/// (even UNLIMITED) or a time-min leaves it as it is.
#[test]
fn a_deadline_alone_gives_a_one_minute_time_min() {
    let mut env = env();
    let now = env.now;
    let time_min = |env: &mut Env, desc: v1::JobDescription| {
        let id = env.submit(desc);
        env.job(id).spec.extras().time_min_minutes
    };
    let deadline = |limit| v1::JobDescription {
        deadline: now + 3600,
        time_limit: limit,
        ..script()
    };
    assert_eq!(time_min(&mut env, deadline(None)), Some(1));
    assert_eq!(time_min(&mut env, deadline(minutes(30))), None);
    let unlimited = Some(v1::TimeLimit {
        limit: Some(v1::time_limit::Limit::Unlimited(true)),
    });
    assert_eq!(time_min(&mut env, deadline(unlimited)), None);
    let given = v1::JobDescription {
        time_min_minutes: Some(5),
        time_limit: minutes(30),
        ..deadline(None)
    };
    assert_eq!(time_min(&mut env, given), Some(5));
    assert_eq!(time_min(&mut env, script()), None);
}

/// A pending job that can no longer end by its deadline is removed at the
/// moment that becomes true, by the timer: DEADLINE, Reason=DeadLine.
#[test]
fn a_pending_job_that_misses_its_deadline_is_removed_by_the_timer() {
    let mut env = env();
    let now = env.now;
    // Fill the cluster.
    for _ in 0..4 {
        env.submit(v1::JobDescription {
            sharing: v1::NodeSharing::Exclusive as i32,
            ..script()
        });
    }
    let id = env.submit(v1::JobDescription {
        time_limit: minutes(1),
        deadline: now + 90,
        ..script()
    });
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).spec.extras().deadline, now + 90);
    // Missed once now + 60 > now + 90: at now + 31.
    assert_eq!(env.ctl.next_deadline(env.now), Some(now + 31));
    env.now = now + 30;
    tick(&mut env);
    assert_eq!(env.job(id).state(), JobState::Pending);
    env.now = now + 31;
    tick(&mut env);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Deadline);
    assert_eq!(job.reason, PendingReason::DeadLine);
    assert_eq!((job.exit_status, job.exit_signal), (0, 1));
    assert_eq!(job.start_time, now + 31);
    assert!(env
        .take_actions()
        .iter()
        .all(|a| !matches!(a, Action::LaunchBatch { job_id, .. } if *job_id == id)));
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(replayed.job(id).unwrap().state(), JobState::Deadline);
}

/// A job that starts runs no later than its deadline: its limit is cut to
/// the whole minutes left.
#[test]
fn a_start_cuts_the_limit_to_the_deadline() {
    let mut env = env();
    let now = env.now;
    let id = env.submit(v1::JobDescription {
        deadline: now + 659,
        ..script()
    });
    assert_eq!(env.job(id).run_limit, Some(TimeLimit::Minutes(10)));
    let id = env.submit(v1::JobDescription {
        deadline: now + 3600,
        time_limit: minutes(120),
        time_min_minutes: Some(20),
        ..script()
    });
    assert_eq!(env.job(id).run_limit, Some(TimeLimit::Minutes(60)));
}

// ------------------------------------------------------------------ gpus

#[test]
fn gpus_need_nodes_with_gpus() {
    let mut env = env();
    let id = env.submit(v1::JobDescription {
        gpus: "1".into(),
        ..script()
    });
    let job = env.job(id);
    assert_eq!(&*job.spec.extras().tres_per_job, "gres:gpu:1");
    assert_eq!(job.alloc[0].node_index, 2, "placed on a node with GPUs");
    let id = env.submit(v1::JobDescription {
        gpus_per_node: "2".into(),
        ..script()
    });
    assert_eq!(&*env.job(id).spec.gres, "gpu:2");
    assert!(env.job(id).alloc[0].node_index >= 2);
    let id = env.submit(v1::JobDescription {
        gpus_per_task: "1".into(),
        ..script()
    });
    assert_eq!(&*env.job(id).spec.extras().tres_per_task, "gres:gpu:1");

    let refused = |env: &mut Env, d: v1::JobDescription| refusal(&env.submit_as(ALICE, d));
    // No GPU in partition small.
    for d in [
        v1::JobDescription {
            gpus: "1".into(),
            ..script()
        },
        v1::JobDescription {
            gpus_per_node: "1".into(),
            ..script()
        },
        v1::JobDescription {
            gpus_per_task: "1".into(),
            ..script()
        },
    ] {
        let d = v1::JobDescription {
            partitions: vec!["small".into()],
            ..d
        };
        assert_eq!(
            refused(&mut env, d),
            ErrorCode::RequestedNodeConfigUnavailable
        );
    }
    // More than any node has, malformed, or given twice.
    for d in [
        v1::JobDescription {
            gpus_per_node: "3".into(),
            ..script()
        },
        v1::JobDescription {
            gpus_per_task: "3".into(),
            ..script()
        },
    ] {
        assert_eq!(
            refused(&mut env, d),
            ErrorCode::RequestedNodeConfigUnavailable
        );
    }
    for d in [
        v1::JobDescription {
            gpus: "1,2".into(),
            ..script()
        },
        v1::JobDescription {
            gres: "gpu:1".into(),
            gpus_per_node: "1".into(),
            ..script()
        },
    ] {
        assert_eq!(refused(&mut env, d), ErrorCode::InvalidGres);
    }
    // Without GresTypes no GPU exists at all, as with --gres=gpu:1.
    let mut bare = Env::new();
    bare.register_all();
    let r = bare.submit_as(
        ALICE,
        v1::JobDescription {
            gpus: "1".into(),
            ..script()
        },
    );
    assert_eq!(refusal(&r), ErrorCode::InvalidGres);
}

// --------------------------------------------------------- persistence

/// Every option survives replay and a snapshot.
#[test]
fn options_survive_replay_and_snapshots() {
    let mut env = env();
    let id = env.submit(v1::JobDescription {
        licenses: "foo:2".into(),
        tmp_disk_mb: Some(10),
        deadline: env.now + 86_400,
        time_min_minutes: Some(5),
        signal_spec: "R:USR1".into(),
        network: "sn_all".into(),
        gpus: "1".into(),
        gpus_per_task: "1".into(),
        ..script()
    });
    let plain = env.submit(script());
    let want = env.job(id).spec.extras().clone();
    assert_ne!(want, Default::default());
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(replayed.job(id).unwrap().spec.extras(), &want);
    let bytes = snapshot::encode(&env.ctl, 1);
    let loaded = snapshot::decode(&bytes, Env::with_conf(CONF).ctl, false)
        .unwrap()
        .controller;
    assert_eq!(loaded.job(id).unwrap().spec.extras(), &want);
    assert!(loaded.job(plain).unwrap().spec.extras.is_none());
    assert_eq!(&*loaded.job(id).unwrap().spec.extras().network, "sn_all");
    // Damaged OPTIONS records are refused, not misread.
    let mut cut = bytes.clone();
    let pos = cut.windows(6).position(|w| w == b"sn_all").unwrap();
    cut[pos - 8] ^= 0xff;
    assert!(snapshot::decode(&cut, Env::with_conf(CONF).ctl, false).is_err());
}

/// `--switches`: the wait is granted at submission, MaxSwitchWait (300 s
/// unless set) when none was asked or more was, as Slurm 22.05 does; it
/// survives replay and snapshots with `--container` and
/// `--cluster-constraint`.
#[test]
fn switch_waits_are_bounded_by_max_switch_wait_and_kept() {
    let mut env = env();
    let wait = |env: &mut Env, switches, asked| {
        let id = env.submit(v1::JobDescription {
            switches,
            switch_wait_seconds: asked,
            container: "/srv/bundle".into(),
            cluster_constraint: "fast".into(),
            ..script()
        });
        let shown = env.job(id).spec.shown().clone();
        (id, shown.switches, shown.switch_wait_secs)
    };
    assert_eq!(wait(&mut env, Some(2), None).1, Some(2));
    assert_eq!(wait(&mut env, Some(2), None).2, 300);
    assert_eq!(wait(&mut env, Some(1), Some(60)).2, 60);
    assert_eq!(wait(&mut env, Some(1), Some(86_400)).2, 300);
    assert_eq!(wait(&mut env, Some(5), Some(0)).2, 0);
    // A wait without a switch count means nothing.
    assert_eq!(wait(&mut env, None, Some(60)).1, None);
    assert_eq!(wait(&mut env, None, Some(60)).2, 0);
    let (id, _, _) = wait(&mut env, Some(3), Some(120));
    let want = env.job(id).spec.shown().clone();
    assert_eq!(&*want.container, "/srv/bundle");
    assert_eq!(&*want.cluster_features, "fast");
    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(replayed.job(id).unwrap().spec.shown(), &want);
    let bytes = snapshot::encode(&env.ctl, 1);
    let loaded = snapshot::decode(&bytes, Env::with_conf(CONF).ctl, false)
        .unwrap()
        .controller;
    assert_eq!(loaded.job(id).unwrap().spec.shown(), &want);

    let mut longer = Env::with_conf(&format!("{CONF}MaxSwitchWait=1000\n"));
    longer.register_all();
    assert_eq!(wait(&mut longer, Some(1), Some(600)).2, 600);
    assert_eq!(wait(&mut longer, Some(1), None).2, 1000);
}

/// MaxJobCount: a submission that would make more job records than that
/// (an array counting each of its tasks, as Slurm checks it) is refused
/// with EAGAIN, and taken again once records are purged.
#[test]
fn max_job_count_refuses_with_eagain_counting_array_tasks() {
    let mut env = Env::with_conf(&format!("{}MaxJobCount=3\n", super::CONF));
    env.register_all();
    let first = env.submit(v1::JobDescription {
        hold: true,
        ..script()
    });
    let array = |spec: &str| v1::JobDescription {
        array_spec: spec.into(),
        hold: true,
        ..script()
    };
    let refused = |r: Reply| match r {
        Reply::Error { code, .. } => code,
        other => panic!("not refused: {other:?}"),
    };
    // One record held: three more tasks would make four.
    assert_eq!(
        refused(env.submit_as(ALICE, array("0-2"))),
        ErrorCode::TryAgain
    );
    // Two tasks fit, and count as two although they share one record
    // until they start: the limit is reached.
    env.submit(array("0-1"));
    let events = env.events.len();
    assert_eq!(refused(env.submit_as(ALICE, script())), ErrorCode::TryAgain);
    // --test-only makes no record: still answered.
    let probe = env.submit_as(
        ALICE,
        v1::JobDescription {
            test_only: true,
            ..script()
        },
    );
    assert!(!matches!(probe, Reply::Error { .. }), "{probe:?}");
    assert!(
        matches!(&env.events[events..], [Event::JobIdTaken { .. }]),
        "only the id it used up journaled: {:?}",
        &env.events[events..]
    );
    // Cancelled and purged after MinJobAge, its place is free again.
    env.run(Command::Cancel {
        caller: ALICE,
        filter: super::filter(&[first]),
        signal: None,
    });
    env.now += 301;
    env.run(Command::Tick);
    assert!(env.ctl.job(first).is_none(), "purged");
    env.submit(script());
}

/// As Slurm 22.05: mail goes to the submitter when `--mail-type` comes
/// without `--mail-user`, and without accounting storage a job keeps no
/// QOS (`QOS=(null)`); with it, the QOS asked for stays.
#[test]
fn mail_user_defaults_to_the_submitter_and_qos_needs_accounting() {
    let mut env = env();
    let id = env.submit(v1::JobDescription {
        mail_type: "END".into(),
        qos: "normal".into(),
        user_name: "alice".into(),
        ..script()
    });
    assert_eq!(&*env.job(id).spec.mail_user, "alice");
    assert_eq!(&*env.job(id).spec.qos, "");
    let id = env.submit(v1::JobDescription {
        mail_type: "END".into(),
        mail_user: "bob@example.org".into(),
        ..script()
    });
    assert_eq!(&*env.job(id).spec.mail_user, "bob@example.org");
    let plain = env.submit(script());
    assert_eq!(&*env.job(plain).spec.mail_user, "");

    let mut acct = Env::with_conf(&format!(
        "{CONF}AccountingStorageType=accounting_storage/slurmdbd\n"
    ));
    let id = acct.submit(v1::JobDescription {
        qos: "normal".into(),
        ..script()
    });
    assert_eq!(&*acct.job(id).spec.qos, "normal");
}

/// `--spread-job` with a task count and no node count: at most as many
/// nodes as tasks and as the partition has (Slurm 22.05 shows `-n3` on
/// three 2-CPU nodes as NumNodes=2-3), and it runs spread over them.
#[test]
fn a_spread_job_gets_a_maximum_node_count_and_spreads() {
    let mut env = Env::new();
    env.register_all();
    let spread = |ntasks: u32| v1::JobDescription {
        ntasks: Some(ntasks),
        spread_job: true,
        ..script()
    };
    let three = env.submit(spread(3));
    assert_eq!(env.job(three).shape.max_nodes, Some(3));
    assert_eq!(env.job(three).alloc.len(), 3);
    let six = env.submit(v1::JobDescription {
        hold: true,
        ..spread(6)
    });
    assert_eq!(env.job(six).shape.max_nodes, Some(4));
}

/// `--exclusive=user`: another user's job does not join the nodes the job
/// holds; the same user's does. Its view of whose jobs hold each node is
/// the controller's, from the running jobs.
#[test]
fn exclusive_user_jobs_keep_other_users_off_their_nodes() {
    use crate::core::Caller;
    let mut env = Env::new();
    env.register_all();
    let bob = Caller {
        uid: 1001,
        gid: 1001,
    };
    let one_cpu = |uid: u32| v1::JobDescription {
        user_id: uid,
        group_id: uid,
        required_nodes: "n1".into(),
        ..script()
    };
    let first = env.submit(v1::JobDescription {
        sharing: v1::NodeSharing::ExclusiveUser as i32,
        ..one_cpu(1000)
    });
    assert_eq!(env.job(first).status.state, JobState::Running);
    let theirs = match env.submit_as(bob, one_cpu(1001)) {
        Reply::Submitted { job_id, .. } => job_id,
        other => panic!("refused: {other:?}"),
    };
    assert_eq!(env.job(theirs).reason, PendingReason::Resources);
    let (view, _) = env.ctl.holdings(env.now);
    assert_eq!(view.nodes[0].user_exclusive, Some(1000));
    // A view for admission alone does without.
    assert_eq!(env.ctl.cluster_view().nodes[0].user_exclusive, None);
}
