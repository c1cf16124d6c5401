//! Component tests of the core: commands in, exact events and actions out,
//! invariants checked after every step, replay compared with the original.

use slurm_common::conf::SlurmConf;
use slurm_common::reason::PendingReason;
use slurm_common::state::{JobFlag, JobState, NodeBaseState, NodeFlag};
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::*;

mod ctl_diffs;
mod job_handling;
mod jobs2;

pub(crate) const CONF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
MinJobAge=300
KillWait=30
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=n[1-4] CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=n[1-2] MaxTime=10 State=UP
";

pub(crate) const ALICE: Caller = Caller {
    uid: 1000,
    gid: 1000,
};
pub(crate) const BOB: Caller = Caller {
    uid: 1001,
    gid: 1001,
};

/// A controller, the clock, and everything it emitted.
pub(crate) struct Env {
    pub ctl: Controller,
    pub now: i64,
    pub events: Vec<Event>,
    pub actions: Vec<Action>,
}

impl Env {
    pub fn new() -> Env {
        Env::with_conf(CONF)
    }

    pub fn with_conf(text: &str) -> Env {
        let conf = SlurmConf::parse(text, "slurm.conf").unwrap().conf;
        let cfg = CtlConfig::from_conf(&conf, vec![]);
        Env {
            ctl: Controller::new(&conf, cfg),
            now: 1_700_000_000,
            events: Vec::new(),
            actions: Vec::new(),
        }
    }

    /// A controller of `text` whose node `node` has registered.
    pub fn with_node(text: &str, node: &str) -> Env {
        let mut env = Env::with_conf(text);
        let r = env.run(Command::RegisterNode {
            caller: Caller::ROOT,
            request: Box::new(v1::RegisterNodeRequest {
                node_name: node.into(),
                ..Default::default()
            }),
        });
        assert!(matches!(r, Reply::Registered { .. }), "{r:?}");
        env
    }

    /// Handles `cmd`, then schedules, as the owner task does.
    pub fn run(&mut self, cmd: Command) -> Reply {
        let out = self.ctl.handle(cmd, self.now);
        self.ctl.sanity_check().unwrap();
        self.events.extend(out.events);
        self.actions.extend(out.actions);
        let sched = self.ctl.schedule(self.now);
        self.ctl.sanity_check().unwrap();
        self.events.extend(sched.events);
        self.actions.extend(sched.actions);
        out.reply
    }

    pub fn register_all(&mut self) {
        for n in ["n1", "n2", "n3", "n4"] {
            let r = self.run(Command::RegisterNode {
                caller: Caller::ROOT,
                request: Box::new(v1::RegisterNodeRequest {
                    node_name: n.into(),
                    ..Default::default()
                }),
            });
            assert_eq!(
                r,
                Reply::Registered {
                    abort_job_ids: vec![],
                    invalid: None
                }
            );
        }
    }

    pub fn submit_as(&mut self, caller: Caller, desc: v1::JobDescription) -> Reply {
        self.run(Command::Submit {
            caller,
            desc: Box::new(desc),
        })
    }

    pub fn submit(&mut self, desc: v1::JobDescription) -> u32 {
        match self.submit_as(ALICE, desc) {
            Reply::Submitted { job_id, .. } => job_id,
            other => panic!("submit refused: {other:?}"),
        }
    }

    /// Registered nodes and one plain job started on n1 (its launch
    /// taken): where most job tests begin.
    pub fn running_job() -> (Env, u32) {
        let mut env = Env::new();
        env.register_all();
        let id = env.submit(script());
        env.take_actions();
        (env, id)
    }

    /// No periodic pass (SchedulerParameters=sched_interval): for tests
    /// of the other timers, whose next wake-up it would come before.
    pub fn without_periodic_pass(&mut self) {
        self.ctl.cfg.sched_interval_secs = 0;
    }

    pub fn take_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

    pub fn complete(&mut self, job_id: u32, status: u32, signal: u32) -> Reply {
        self.run(Command::JobComplete {
            caller: Caller::ROOT,
            request: v1::JobCompleteRequest {
                job_id,
                node_name: "n1".into(),
                exit_code: Some(v1::ExitCode {
                    status,
                    signal,
                    core_dumped: false,
                }),
                ..Default::default()
            },
        })
    }

    /// Node `node` reports the job's cleanup done (`error_code` 0: its
    /// epilog succeeded).
    pub fn epilog(&mut self, job_id: u32, node: &str, error_code: i32) -> Reply {
        self.run(Command::EpilogComplete {
            caller: Caller::ROOT,
            request: v1::EpilogCompleteRequest {
                job_id,
                node_name: node.into(),
                error_code,
                error_detail: String::new(),
            },
        })
    }

    /// Every node the job still holds reports its cleanup done.
    pub fn epilogs(&mut self, job_id: u32) {
        let names: Vec<String> = self
            .job(job_id)
            .alloc
            .iter()
            .map(|a| self.ctl.nodes()[a.node_index].name.clone())
            .collect();
        for n in names {
            assert_eq!(self.epilog(job_id, &n, 0), Reply::Ok);
        }
    }

    /// The batch script ends with `status`/`signal` and every node cleans
    /// up.
    pub fn finish(&mut self, job_id: u32, status: u32, signal: u32) {
        assert_eq!(self.complete(job_id, status, signal), Reply::Ok);
        self.epilogs(job_id);
    }

    pub fn job(&self, id: u32) -> &Job {
        self.ctl.job(id).unwrap()
    }
}

pub(crate) fn script() -> v1::JobDescription {
    v1::JobDescription {
        user_id: 1000,
        group_id: 1000,
        script: "#!/bin/sh\ntrue\n".into(),
        name: "wrap".into(),
        work_dir: "/tmp".into(),
        ..Default::default()
    }
}

fn filter(ids: &[u32]) -> v1::JobFilter {
    v1::JobFilter {
        job_ids: ids.to_vec(),
        ..Default::default()
    }
}

fn launched(actions: &[Action]) -> Vec<(u32, usize)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::LaunchBatch { job_id, node, .. } => Some((*job_id, *node)),
            _ => None,
        })
        .collect()
}

fn ok_results(r: &Reply) -> Vec<(u32, i32)> {
    match r {
        Reply::JobResults(v) => v.iter().map(|r| (r.job_id, r.error_code)).collect(),
        other => panic!("not job results: {other:?}"),
    }
}

#[test]
fn submit_start_complete() {
    let mut env = Env::new();
    let id = env.submit(script());
    assert_eq!(id, 1);
    // No node has registered yet: pending, nothing launched.
    assert_eq!(env.job(1).state(), JobState::Pending);
    assert!(env.take_actions().is_empty());
    env.register_all();
    let actions = env.take_actions();
    assert_eq!(launched(&actions), vec![(1, 0)]);
    assert_eq!(actions.len(), 1);
    let Action::LaunchBatch { request, .. } = &actions[0] else {
        unreachable!()
    };
    assert_eq!(request.nodes, "n1");
    assert_eq!(request.cpus_per_node, vec![1]);
    assert_eq!(request.cluster_name, "ref");
    assert_eq!(env.job(1).state(), JobState::Running);
    assert_eq!(env.ctl.nodes()[0].state.base, NodeBaseState::Mixed);

    env.now += 5;
    assert_eq!(env.complete(1, 0, 0), Reply::Ok);
    let job = env.job(1);
    assert_eq!(job.state(), JobState::Completed);
    assert_eq!(job.end_time, env.now);
    // COMPLETING (squeue CG) until the node has cleaned up: the node was
    // told to end the job and keeps the job's share meanwhile.
    assert!(job.status.is_completing());
    assert_eq!(job.status.to_string(), "COMPLETING");
    let n1 = &env.ctl.nodes()[0];
    assert_eq!(n1.state.display_long(), "IDLE+COMPLETING");
    assert_eq!(n1.alloc_cpus, 1);
    let actions = env.take_actions();
    assert!(
        matches!(
            &actions[..],
            [Action::TerminateJob { job_id: 1, nodes, request }]
                if nodes == &vec![0] && request.reason == v1::JobState::Completed as i32
        ),
        "{actions:?}"
    );
    // A second report (slurmd retry) is acknowledged and changes nothing.
    let before = env.events.len();
    assert_eq!(env.complete(1, 0, 0), Reply::Ok);
    assert_eq!(env.events.len(), before);

    // The node's EpilogComplete ends it.
    env.now += 1;
    assert_eq!(env.epilog(1, "n1", 0), Reply::Ok);
    assert_eq!(
        env.events[before..],
        [Event::JobNodeReleased {
            job_id: 1,
            node: "n1".into(),
            time: env.now,
        }]
    );
    let job = env.job(1);
    assert_eq!(job.state(), JobState::Completed);
    assert!(!job.status.is_completing());
    assert_eq!(job.end_time, env.now - 1);
    assert_eq!(job.last_alloc.len(), 1);
    let n1 = &env.ctl.nodes()[0];
    assert_eq!(n1.state.display_long(), "IDLE");
    assert_eq!(n1.alloc_cpus, 0);
    // A repeated EpilogComplete changes nothing either.
    assert_eq!(env.epilog(1, "n1", 0), Reply::Ok);
    assert_eq!(env.events.len(), before + 1);
    assert!(env.take_actions().is_empty());
}

#[test]
fn nonzero_exit_fails_with_exit_code() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    env.complete(id, 3, 0);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Failed);
    assert_eq!((job.exit_status, job.exit_signal), (3, 0));
    assert_eq!(job.reason, PendingReason::NonZeroExitCode);
}

#[test]
fn priorities_decrease_with_submit_order() {
    let mut env = Env::new();
    let a = env.submit(script());
    let b = env.submit(script());
    assert_eq!(env.job(a).priority(), 4_294_901_759);
    assert_eq!(env.job(b).priority(), 4_294_901_758);
    // --priority is for operators only.
    let mut d = script();
    d.priority = Some(5);
    assert!(matches!(
        env.submit_as(ALICE, d.clone()),
        Reply::Error {
            code: ErrorCode::AccessDenied,
            ..
        }
    ));
    let Reply::Submitted { job_id, .. } = env.submit_as(Caller::ROOT, d) else {
        panic!("root may set a priority")
    };
    assert_eq!(env.job(job_id).priority(), 5);
}

#[test]
fn submission_errors_use_slurm_codes() {
    let mut env = Env::new();
    let mut d = script();
    d.partitions = vec!["nope".into()];
    assert_eq!(
        env.submit_as(ALICE, d),
        Reply::error(
            ErrorCode::InvalidPartitionName,
            "invalid partition specified: nope"
        )
    );
    let mut d = script();
    d.memory = Some(v1::job_description::Memory::MemPerNodeMb(999_999_999));
    assert_eq!(
        env.submit_as(ALICE, d),
        Reply::error(
            ErrorCode::RequestedNodeConfigUnavailable,
            "Memory specification can not be satisfied"
        )
    );
    let mut d = script();
    d.script.clear();
    assert!(matches!(
        env.submit_as(ALICE, d),
        Reply::Error {
            code: ErrorCode::JobScriptMissing,
            ..
        }
    ));
    let mut d = script();
    d.user_id = 1001;
    assert!(matches!(
        env.submit_as(ALICE, d),
        Reply::Error {
            code: ErrorCode::AccessDenied,
            ..
        }
    ));
    let mut d = script();
    d.required_nodes = "n9".into();
    assert!(matches!(
        env.submit_as(ALICE, d),
        Reply::Error {
            code: ErrorCode::InvalidNodeName,
            ..
        }
    ));
    // Nothing was journaled for refused jobs but the one no node could
    // run: Slurm records it, FAILED with BadConstraints, before refusing.
    assert!(matches!(
        &env.events[..],
        [
            Event::JobSubmitted { job_id: 1, .. },
            Event::JobEnded { job_id: 1, .. }
        ]
    ));
    let job = env.job(1);
    assert_eq!(job.state(), JobState::Failed);
    assert_eq!(job.reason, PendingReason::BadConstraints);
    assert_eq!((job.exit_status, job.exit_signal), (0, 1));
    assert_eq!(env.ctl.next_job_id(), 2);
}

#[test]
fn too_many_nodes_is_accepted_and_waits() {
    let mut env = Env::new();
    env.register_all();
    let mut d = script();
    d.min_nodes = Some(10);
    d.max_nodes = Some(10);
    let id = env.submit(d);
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).reason, PendingReason::PartitionConfig);
}

#[test]
fn time_over_partition_max_waits() {
    let mut env = Env::new();
    env.register_all();
    let mut d = script();
    d.partitions = vec!["short".into()];
    d.time_limit = Some(v1::TimeLimit {
        limit: Some(v1::time_limit::Limit::Minutes(60)),
    });
    let id = env.submit(d);
    assert_eq!(env.job(id).reason, PendingReason::PartitionTimeLimit);
}

#[test]
fn cancel_pending_and_running() {
    let mut env = Env::new();
    let pending = env.submit(script());
    let r = env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[pending, 999_999]),
        signal: None,
    });
    assert_eq!(
        ok_results(&r),
        vec![(pending, 0), (999_999, ErrorCode::InvalidJobId.number())]
    );
    assert_eq!(env.job(pending).state(), JobState::Cancelled);
    assert!(env.take_actions().is_empty());

    env.register_all();
    let running = env.submit(script());
    assert_eq!(env.job(running).state(), JobState::Running);
    env.take_actions();
    // Bob may not cancel Alice's job.
    let r = env.run(Command::Cancel {
        caller: BOB,
        filter: filter(&[running]),
        signal: None,
    });
    assert_eq!(
        ok_results(&r),
        vec![(running, ErrorCode::AccessDenied.number())]
    );
    let r = env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[running]),
        signal: None,
    });
    assert_eq!(ok_results(&r), vec![(running, 0)]);
    let job = env.job(running);
    assert_eq!(job.state(), JobState::Cancelled);
    assert!(job.status.flags.contains(JobFlag::Completing));
    let actions = env.take_actions();
    assert_eq!(actions.len(), 1);
    assert!(matches!(
        &actions[0],
        Action::TerminateJob { job_id, nodes, .. } if *job_id == running && nodes == &vec![0]
    ));
    // Cancelling again: already done.
    let r = env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[running]),
        signal: None,
    });
    assert_eq!(
        ok_results(&r),
        vec![(running, ErrorCode::AlreadyDone.number())]
    );
    // The batch host reports the script's end: still cleaning up.
    env.complete(running, 0, 15);
    assert!(env.job(running).status.is_completing());
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 1);
    // The node reports its cleanup: resources are released, state stays.
    env.epilog(running, "n1", 0);
    let job = env.job(running);
    assert_eq!(job.state(), JobState::Cancelled);
    assert!(!job.status.is_completing());
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);
}

#[test]
fn signal_running_job() {
    let (mut env, id) = Env::running_job();
    let signal = |env: &mut Env, sig, batch_only, full| {
        let r = env.run(Command::Cancel {
            caller: ALICE,
            filter: filter(&[id]),
            signal: Some(SignalRequest::new(sig, batch_only, full)),
        });
        assert_eq!(ok_results(&r), vec![(id, 0)]);
        env.take_actions()
    };
    // Neither -b nor -f: the steps; -b: the batch shell; -f (with or
    // without -b): everything.
    for (batch_only, full, want) in [
        (false, false, (false, false)),
        (true, false, (true, false)),
        (false, true, (false, true)),
        (true, true, (false, true)),
    ] {
        let actions = signal(&mut env, 10, batch_only, full);
        assert!(
            matches!(
                &actions[..],
                [Action::SignalJob { request, .. }]
                    if request.signal == 10 && (request.batch_only, request.full) == want
            ),
            "-b {batch_only} -f {full}: {actions:?}"
        );
        assert_eq!(env.job(id).state(), JobState::Running);
    }
    // SIGKILL to the batch shell alone is a signal; otherwise it cancels.
    let actions = signal(&mut env, 9, true, false);
    assert!(
        matches!(&actions[..], [Action::SignalJob { request, .. }] if request.batch_only),
        "{actions:?}"
    );
    assert_eq!(env.job(id).state(), JobState::Running);
    signal(&mut env, 9, false, false);
    assert_eq!(env.job(id).state(), JobState::Cancelled);
}

#[test]
fn hold_and_release() {
    let mut env = Env::new();
    let id = env.submit(script());
    let r = env.run(Command::Hold {
        caller: ALICE,
        filter: filter(&[id]),
        user_hold: false,
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    assert_eq!(env.job(id).priority(), 0);
    assert_eq!(env.job(id).reason, PendingReason::JobHeldUser);
    env.register_all();
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).reason, PendingReason::JobHeldUser);

    // An operator's hold is an admin hold that the owner cannot release.
    env.run(Command::Hold {
        caller: Caller::ROOT,
        filter: filter(&[id]),
        user_hold: false,
    });
    assert_eq!(env.job(id).reason, PendingReason::JobHeldAdmin);
    let r = env.run(Command::Release {
        caller: ALICE,
        filter: filter(&[id]),
    });
    assert_eq!(ok_results(&r), vec![(id, ErrorCode::AccessDenied.number())]);
    let r = env.run(Command::Release {
        caller: Caller::ROOT,
        filter: filter(&[id]),
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    assert_eq!(env.job(id).state(), JobState::Running);
    // The release numbered it anew, as Slurm's priority/basic does.
    assert_eq!(env.job(id).priority(), 4_294_901_758);
}

#[test]
fn submit_held() {
    let mut env = Env::new();
    env.register_all();
    let mut d = script();
    d.hold = true;
    let id = env.submit(d);
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).priority(), 0);
}

#[test]
fn time_limit_gives_timeout() {
    let mut env = Env::new();
    env.register_all();
    let mut d = script();
    d.time_limit = Some(v1::TimeLimit {
        limit: Some(v1::time_limit::Limit::Minutes(1)),
    });
    let id = env.submit(d);
    env.take_actions();
    assert_eq!(env.ctl.next_deadline(env.now), Some(env.now + 60));
    env.now += 59;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
    env.now += 1;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Timeout);
    assert_eq!(env.job(id).reason, PendingReason::TimeLimit);
    // Next: giving up on the nodes' cleanup confirmation.
    assert_eq!(
        env.ctl.next_deadline(env.now),
        Some(env.now + env.ctl.cfg.completing_timeout_secs)
    );
    let actions = env.take_actions();
    assert!(matches!(
        &actions[..],
        [Action::TerminateJob { request, .. }] if request.reason == v1::JobState::Timeout as i32
    ));
}

/// OverTimeLimit: the job runs that much past its limit before it is
/// ended with TIMEOUT; a partition's own wins over slurm.conf's, and
/// UNLIMITED never ends it.
#[test]
fn over_time_limit_lets_a_job_overrun() {
    let conf = CONF
        .replace("MinJobAge=300", "MinJobAge=300\nOverTimeLimit=2")
        .replace(
            "PartitionName=short Nodes=n[1-2] MaxTime=10",
            "PartitionName=short Nodes=n[1-2] MaxTime=10 OverTimeLimit=UNLIMITED",
        );
    let mut env = Env::with_conf(&conf);
    env.register_all();
    let one_minute = |partition: &str| v1::JobDescription {
        time_limit: Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(1)),
        }),
        partitions: vec![partition.into()],
        ..script()
    };
    let id = env.submit(one_minute("debug"));
    let forever = env.submit(one_minute("short"));
    assert_eq!(env.ctl.next_deadline(env.now), Some(env.now + 180));
    env.now += 179;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
    env.now += 1;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Timeout);
    env.now += 10_000;
    env.run(Command::Tick);
    assert_eq!(env.job(forever).state(), JobState::Running);
}

#[test]
fn purge_after_min_job_age() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    env.complete(id, 0, 0);
    env.now += 299;
    env.run(Command::Tick);
    assert!(env.ctl.job(id).is_some());
    env.now += 1;
    env.run(Command::Tick);
    assert!(env.ctl.job(id).is_none());
    // Ids keep increasing after a purge.
    assert_eq!(env.submit(script()), id + 1);
}

#[test]
fn launch_failure_requeues_once_then_fails() {
    let (mut env, id) = Env::running_job();
    env.run(Command::LaunchFailed {
        job_id: id,
        detail: "connection refused".into(),
    });
    // Requeued, and started again once the requeue delay has passed.
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).reason, PendingReason::BeginTime);
    assert_eq!(env.job(id).restart_count, 1);
    assert!(env.take_actions().is_empty());
    env.now += 121;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(launched(&env.take_actions()), vec![(id, 0)]);
    env.run(Command::LaunchFailed {
        job_id: id,
        detail: "connection refused".into(),
    });
    assert_eq!(env.job(id).state(), JobState::Failed);
    assert_eq!(env.job(id).reason, PendingReason::JobLaunchFailure);
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);
}

#[test]
fn cancel_during_a_failed_launch_releases_the_job() {
    // Cancelled while its LaunchBatch was in flight, and then the launch
    // failed: nothing runs on the node, so no JobComplete will ever come.
    let (mut env, id) = Env::running_job();
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[id]),
        signal: None,
    });
    assert!(env.job(id).status.is_completing());
    env.run(Command::LaunchFailed {
        job_id: id,
        detail: "connection refused".into(),
    });
    assert_eq!(env.job(id).state(), JobState::Cancelled);
    assert!(!env.job(id).status.is_completing());
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);
}

#[test]
fn requeue_running_job() {
    let (mut env, id) = Env::running_job();
    env.without_periodic_pass();
    let r = env.run(Command::Requeue {
        caller: ALICE,
        filter: filter(&[id]),
        hold: false,
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert!(env.job(id).status.is_completing());
    assert_eq!(env.take_actions().len(), 1);
    // The batch script's end does not release it; the node's cleanup does.
    env.complete(id, 0, 15);
    assert!(env.job(id).status.is_completing());
    env.epilog(id, "n1", 0);
    let job = env.job(id);
    assert!(!job.status.is_completing());
    // Back in the queue, not eligible before the requeue delay: AuthInfo
    // cred_expire (120 s by default) and one second, as in Slurm.
    let requeued_at = env.now;
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.reason, PendingReason::BeginTime);
    assert_eq!(job.eligible_time, requeued_at + 121);
    assert_eq!(job.shape.begin_time, Some(requeued_at + 121));
    assert_eq!(job.restart_count, 1);
    assert!(env.take_actions().is_empty());
    assert_eq!(env.ctl.next_deadline(env.now), Some(requeued_at + 121));
    env.now += 120;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).reason, PendingReason::BeginTime);
    env.now += 1;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).restart_count, 1);
}

#[test]
fn update_job_fields_and_permissions() {
    let mut env = Env::new();
    let id = env.submit(script());
    let upd = |caller, f: fn(&mut v1::UpdateJobRequest)| updates::update(id, caller, f);
    let r = env.run(upd(ALICE, |r| {
        r.name = Some("renamed".into());
        r.comment = Some("hello".into());
        r.partition = Some("short".into());
        r.time_limit = Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(5)),
        });
    }));
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    let job = env.job(id);
    assert_eq!(job.name, "renamed");
    assert_eq!(job.comment, "hello");
    assert_eq!(job.partition_name, "short");
    // Raising the limit or the priority needs an operator.
    let r = env.run(upd(ALICE, |r| {
        r.time_limit = Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(50)),
        });
    }));
    assert_eq!(ok_results(&r), vec![(id, ErrorCode::AccessDenied.number())]);
    let r = env.run(upd(ALICE, |r| r.priority = Some(7)));
    assert_eq!(ok_results(&r), vec![(id, ErrorCode::AccessDenied.number())]);
    let r = env.run(upd(Caller::ROOT, |r| r.priority = Some(7)));
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    assert_eq!(env.job(id).priority(), 7);
    let r = env.run(upd(ALICE, |r| r.partition = Some("nope".into())));
    assert_eq!(
        ok_results(&r),
        vec![(id, ErrorCode::InvalidPartitionName.number())]
    );
}

/// Node attributes the controller does not change are refused by name,
/// with nothing journaled, instead of being answered with success.
#[test]
fn node_updates_not_acted_on_are_refused() {
    let mut env = Env::new();
    env.register_all();
    let events = env.events.len();
    type Case = (fn(&mut v1::UpdateNodeRequest), &'static str);
    let cases: Vec<Case> = vec![
        (|r| r.gres = Some("gpu:1".into()), "Gres"),
        (
            |r| {
                r.state = v1::NodeStateUpdate::Drain as i32;
                r.reason = Some("disk".into());
                r.gres = Some("gpu:2".into());
            },
            "Gres",
        ),
        (|r| r.reason = Some("alone".into()), "Reason"),
    ];
    for (set, name) in cases {
        let mut request = v1::UpdateNodeRequest {
            nodes: "n1".into(),
            ..Default::default()
        };
        set(&mut request);
        match env.run(Command::UpdateNode {
            caller: Caller::ROOT,
            request,
        }) {
            Reply::Error { code, detail } => {
                assert_eq!(code, ErrorCode::NotSupported);
                assert!(detail.contains(name), "{detail}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_eq!(env.events.len(), events);
    assert!(!env.ctl.nodes()[0].state.has(NodeFlag::Drain));
}

/// As Slurm 22.05 answers them: POWER_DOWN and POWER_UP without power
/// saving are refused; NoResp flags the node; a FUTURE node resumed comes
/// in not responding; a DOWN node undrained keeps its reason, and UNDRAIN
/// clears FAIL.
#[test]
fn node_states_slurm_takes_or_refuses() {
    let mut env = Env::new();
    env.register_all();
    let upd = |node: &str, state: v1::NodeStateUpdate, reason: Option<&str>| Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: node.into(),
            state: state as i32,
            reason: reason.map(str::to_string),
            ..Default::default()
        },
    };
    for state in [v1::NodeStateUpdate::PowerDown, v1::NodeStateUpdate::PowerUp] {
        assert!(matches!(
            env.run(upd("n1", state, None)),
            Reply::Error {
                code: ErrorCode::InvalidNodeState,
                ..
            }
        ));
    }
    assert!(!env.ctl.nodes()[0].state.has(NodeFlag::PowerDown));
    assert!(!env.ctl.nodes()[0].state.has(NodeFlag::PoweringUp));
    assert_eq!(
        env.run(upd("n1", v1::NodeStateUpdate::NoResp, None)),
        Reply::Ok
    );
    assert!(env.ctl.nodes()[0].state.has(NodeFlag::NotResponding));
    assert_eq!(
        env.run(upd("n2", v1::NodeStateUpdate::Future, None)),
        Reply::Ok
    );
    assert_eq!(env.ctl.nodes()[1].state.base, NodeBaseState::Future);
    assert_eq!(
        env.run(upd("n2", v1::NodeStateUpdate::Resume, None)),
        Reply::Ok
    );
    let n2 = &env.ctl.nodes()[1].state;
    assert_eq!(n2.base, NodeBaseState::Idle);
    assert!(n2.has(NodeFlag::NotResponding));
    let down = upd("n3", v1::NodeStateUpdate::Down, Some("dead"));
    assert_eq!(env.run(down), Reply::Ok);
    assert_eq!(
        env.run(upd("n3", v1::NodeStateUpdate::Undrain, None)),
        Reply::Ok
    );
    assert_eq!(env.ctl.nodes()[2].reason.as_deref(), Some("dead"));
    let fail = upd("n3", v1::NodeStateUpdate::Fail, Some("flaky"));
    assert_eq!(env.run(fail), Reply::Ok);
    assert_eq!(
        env.run(upd("n3", v1::NodeStateUpdate::Resume, None)),
        Reply::Ok
    );
    assert_eq!(
        env.run(upd("n3", v1::NodeStateUpdate::Fail, Some("x"))),
        Reply::Ok
    );
    assert_eq!(
        env.run(upd("n3", v1::NodeStateUpdate::Undrain, None)),
        Reply::Ok
    );
    assert!(!env.ctl.nodes()[2].state.has(NodeFlag::Fail));
    assert_eq!(env.ctl.nodes()[2].reason, None);
}

#[test]
fn drain_resume_and_down() {
    let mut env = Env::new();
    env.register_all();
    let upd = |state: v1::NodeStateUpdate, reason: Option<&str>| Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n[1-2]".into(),
            state: state as i32,
            reason: reason.map(str::to_string),
            ..Default::default()
        },
    };
    assert!(matches!(
        env.run(upd(v1::NodeStateUpdate::Drain, None)),
        Reply::Error {
            code: ErrorCode::InvalidNodeState,
            ..
        }
    ));
    assert!(matches!(
        env.run(Command::UpdateNode {
            caller: ALICE,
            request: v1::UpdateNodeRequest {
                nodes: "n1".into(),
                state: v1::NodeStateUpdate::Resume as i32,
                ..Default::default()
            }
        }),
        Reply::Error {
            code: ErrorCode::AccessDenied,
            ..
        }
    ));
    assert_eq!(
        env.run(upd(v1::NodeStateUpdate::Drain, Some("disk"))),
        Reply::Ok
    );
    let n1 = &env.ctl.nodes()[0];
    assert!(n1.state.has(NodeFlag::Drain));
    assert_eq!(n1.reason.as_deref(), Some("disk"));
    assert_eq!(n1.reason_time, env.now);
    // A job now goes to n3.
    let id = env.submit(script());
    assert_eq!(launched(&env.take_actions()), vec![(id, 2)]);
    assert_eq!(env.run(upd(v1::NodeStateUpdate::Resume, None)), Reply::Ok);
    assert!(!env.ctl.nodes()[0].state.has(NodeFlag::Drain));
    assert_eq!(env.ctl.nodes()[0].reason, None);

    // DOWN requeues the jobs on the node (see `ctl_diffs` for the rest).
    let r = env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n3".into(),
            state: v1::NodeStateUpdate::Down as i32,
            reason: Some("dead".into()),
            ..Default::default()
        },
    });
    assert_eq!(r, Reply::Ok);
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.job(id).restart_count, 1);
    assert_eq!(env.ctl.nodes()[2].state.base, NodeBaseState::Down);
    assert!(matches!(
        &env.take_actions()[..],
        [Action::TerminateJob { .. }]
    ));
}

#[test]
fn registration_reconciles_jobs() {
    let (mut env, id) = Env::running_job();
    env.now += 10;
    // slurmd restarted after the job started and does not know it.
    let r = env.run(Command::RegisterNode {
        caller: Caller::ROOT,
        request: Box::new(v1::RegisterNodeRequest {
            node_name: "n1".into(),
            slurmd_start_time: env.now,
            running_jobs: vec![v1::RunningJob {
                job_id: 4242,
                step_ids: vec![],
            }],
            ..Default::default()
        }),
    });
    assert_eq!(
        r,
        Reply::Registered {
            abort_job_ids: vec![4242],
            invalid: None
        }
    );
    assert_eq!(env.job(id).state(), JobState::NodeFail);
}

/// A controller rebuilt from `events` after a trip through their journal
/// encoding, on the slurm.conf `conf`: what a restart would recover.
pub(crate) fn replay_encoded(conf: &str, events: &[Event]) -> Controller {
    let conf = SlurmConf::parse(conf, "slurm.conf").unwrap().conf;
    let mut replayed = Controller::new(&conf, CtlConfig::from_conf(&conf, vec![]));
    for e in events {
        let mut buf = Vec::new();
        e.encode(&mut buf);
        replayed.apply(&Event::decode(&buf).unwrap()).unwrap();
    }
    replayed
}

/// The controller a restart would load from a snapshot of `ctl`, which
/// must decode whole.
pub(crate) fn snapshot_reloaded(ctl: &Controller) -> Controller {
    let loaded = snapshot::decode(&snapshot::encode(ctl, 1), Env::new().ctl, false).unwrap();
    assert!(loaded.damage.is_none(), "{:?}", loaded.damage);
    loaded.controller
}

#[test]
fn replay_rebuilds_the_same_state() {
    let mut env = Env::new();
    env.register_all();
    for _ in 0..12 {
        env.submit(script());
    }
    env.complete(1, 0, 0);
    env.complete(2, 1, 0);
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[3, 11]),
        signal: None,
    });
    env.run(Command::Hold {
        caller: ALICE,
        filter: filter(&[12]),
        user_hold: true,
    });
    env.now += 400;
    env.run(Command::Tick);

    let replayed = replay_encoded(CONF, &env.events);
    replayed.sanity_check().unwrap();
    assert_eq!(replayed.next_job_id(), env.ctl.next_job_id());
    assert_eq!(replayed.next_priority, env.ctl.next_priority);
    let a: Vec<_> = env
        .ctl
        .jobs()
        .map(|j| (j.id, j.status, j.alloc.clone(), j.priority(), j.end_time))
        .collect();
    let b: Vec<_> = replayed
        .jobs()
        .map(|j| (j.id, j.status, j.alloc.clone(), j.priority(), j.end_time))
        .collect();
    assert_eq!(a, b);
    assert_eq!(replayed.nodes(), env.ctl.nodes());
}

#[test]
fn submit_moves_script_and_environment_out_of_the_record() {
    let mut env = Env::new();
    let mut d = script();
    d.environment = vec!["A=1".into(), "B=2".into()];
    let out = env.ctl.handle(
        Command::Submit {
            caller: ALICE,
            desc: Box::new(d.clone()),
        },
        env.now,
    );
    assert_eq!(out.job_files.len(), 1);
    let files = &out.job_files[0];
    assert_eq!(files.job_id, 1);
    assert_eq!(files.at.script_len as usize, d.script.len());
    assert_eq!(files.at.env_len, 8);
    assert_eq!(files.at.offset, 0);
    let [Event::JobSubmitted { desc, files: r, .. }] = out.events.as_slice() else {
        panic!("expected one JobSubmitted: {:?}", out.events);
    };
    // The journal record carries neither, only the reference.
    assert!(desc.script.is_empty() && desc.environment.is_empty());
    assert_eq!(*r, files.at);
    assert_eq!(env.job(1).spec.files, files.at);
    // The next record goes right after it.
    assert_eq!(env.ctl.script_space().end, files.at.end());
    // A refused submission writes nothing.
    let mut bad = script();
    bad.partitions = vec!["nope".into()];
    let out = env.ctl.handle(
        Command::Submit {
            caller: ALICE,
            desc: Box::new(bad),
        },
        env.now,
    );
    assert!(out.job_files.is_empty() && out.events.is_empty());
}

#[test]
fn begin_time_is_a_deadline_until_it_passes() {
    let mut env = Env::new();
    env.without_periodic_pass();
    env.register_all();
    assert_eq!(env.ctl.next_deadline(env.now), None);
    let mut d = script();
    d.begin_time = env.now + 30;
    let id = env.submit(d);
    assert_eq!(env.job(id).state(), JobState::Pending);
    assert_eq!(env.ctl.next_deadline(env.now), Some(env.now + 30));
    // Held jobs and jobs whose begin time passed wait for events, not the timer.
    let mut held = script();
    held.hold = true;
    env.submit(held);
    assert_eq!(env.ctl.next_deadline(env.now + 30), None);
    env.now += 30;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
}

#[test]
fn schedule_runs_only_after_a_relevant_change() {
    let mut env = Env::new();
    env.register_all();
    assert!(!env.ctl.needs_schedule());
    let mut held = script();
    held.hold = true;
    let id = env.submit(held);
    // A held submission cannot start anything: no pass is owed.
    assert!(!env.ctl.needs_schedule());
    assert_eq!(env.job(id).reason, PendingReason::JobHeldUser);
    assert_eq!(env.job(id).last_sched_eval, env.now);
    // Releasing it can: the pass starts it.
    let r = env.ctl.handle(
        Command::Release {
            caller: ALICE,
            filter: v1::JobFilter {
                job_ids: vec![id],
                ..Default::default()
            },
        },
        env.now,
    );
    assert!(!r.events.is_empty());
    assert!(env.ctl.needs_schedule());
    let out = env.ctl.schedule(env.now);
    assert_eq!(launched(&out.actions), vec![(id, 0)]);
    assert!(!env.ctl.needs_schedule());
    assert_eq!(env.ctl.schedule(env.now), Outcome::default());
    // The timer asks for a pass (begin times).
    env.ctl.handle(Command::Tick, env.now);
    assert!(env.ctl.needs_schedule());
}

/// Prints the time of one scheduling pass over 10,000 pending jobs on a
/// full cluster (run with `--release -- --ignored --nocapture`).
#[test]
#[ignore = "benchmark"]
fn bench_schedule_pass_with_10k_pending() {
    let mut env = Env::new();
    env.register_all();
    for _ in 0..8 {
        env.submit(script());
    }
    for _ in 0..10_000 {
        let out = env.ctl.handle(
            Command::Submit {
                caller: ALICE,
                desc: Box::new(script()),
            },
            env.now,
        );
        assert!(matches!(out.reply, Reply::Submitted { .. }));
    }
    let mut times = Vec::new();
    for _ in 0..20 {
        env.ctl.request_schedule();
        let t = std::time::Instant::now();
        let out = env.ctl.schedule(env.now);
        times.push(t.elapsed());
        assert!(out.events.is_empty());
    }
    times.sort();
    let t = std::time::Instant::now();
    let deadline = env.ctl.next_deadline(env.now);
    let nd = t.elapsed();
    let t = std::time::Instant::now();
    let snap = env.ctl.snapshot();
    let st = t.elapsed();
    println!(
        "schedule pass, 10k pending: median {:?} (min {:?}); next_deadline {:?} ({deadline:?}); snapshot {:?} ({} jobs)",
        times[times.len() / 2],
        times[0],
        nd,
        st,
        snap.jobs.len()
    );
}

/// Jobs submitted with the same options share one spec, each with its own
/// files, and still do after a snapshot round trip; a job that differs
/// gets its own.
#[test]
fn equal_submissions_share_their_spec() {
    let mut env = Env::new();
    let ids: Vec<u32> = (0..3).map(|_| env.submit(script())).collect();
    let mut other = script();
    other.work_dir = "/elsewhere".into();
    let odd = env.submit(other);
    let (a, b, c) = (env.job(ids[0]), env.job(ids[1]), env.job(ids[2]));
    assert!(a.spec.is_shared_with(&b.spec) && a.spec.is_shared_with(&c.spec));
    assert_ne!(a.spec.files, b.spec.files);
    assert!(!a.spec.is_shared_with(&env.job(odd).spec));
    assert_eq!(&*env.job(odd).spec.work_dir, "/elsewhere");

    let bytes = snapshot::encode(&env.ctl, 1);
    let fresh = Env::new().ctl;
    let loaded = snapshot::decode(&bytes, fresh, false).unwrap().controller;
    let (la, lb) = (loaded.job(ids[0]).unwrap(), loaded.job(ids[1]).unwrap());
    assert!(la.spec.is_shared_with(&lb.spec));
    assert_eq!(la.spec.files, a.spec.files);
    assert_eq!(lb.spec.files, b.spec.files);
    assert!(!la.spec.is_shared_with(&loaded.job(odd).unwrap().spec));
}

/// The per-job records stay small: 10,000 queued jobs must fit the
/// controller's memory target with room to spare.
#[test]
fn job_records_stay_compact() {
    // 360: the array part is one more pointer (`core::array`); 368: the
    // suspension another (`core::suspend`); 376: a `--no-kill` job's
    // resize another (`core::liveness`); 408: the CPU ids of its shares,
    // now and as last shown.
    assert!(
        std::mem::size_of::<Job>() <= 408,
        "{}",
        std::mem::size_of::<Job>()
    );
    // 360: the options kept only to be shown are one more pointer
    // (`core::job::ShownOptions`).
    assert!(
        std::mem::size_of::<JobSpec>() <= 360,
        "{}",
        std::mem::size_of::<JobSpec>()
    );
}

/// A job on n1 and n2, running.
fn two_node_job(env: &mut Env) -> u32 {
    let mut d = script();
    d.min_nodes = Some(2);
    let id = env.submit(d);
    assert_eq!(env.job(id).state(), JobState::Running);
    let on: Vec<usize> = env.job(id).alloc.iter().map(|a| a.node_index).collect();
    assert_eq!(on, vec![0, 1]);
    env.take_actions();
    id
}

fn alloc_nodes(job: &Job) -> Vec<usize> {
    job.alloc.iter().map(|a| a.node_index).collect()
}

#[test]
fn each_node_releases_its_share_with_its_epilog_complete() {
    let mut env = Env::new();
    env.register_all();
    let id = two_node_job(&mut env);
    env.now += 10;
    env.complete(id, 0, 0);
    assert!(matches!(
        &env.take_actions()[..],
        [Action::TerminateJob { nodes, .. }] if nodes == &vec![0, 1]
    ));
    for n in &env.ctl.nodes()[..2] {
        assert_eq!(n.state.display_long(), "IDLE+COMPLETING");
        assert_eq!(n.state.sinfo_short(), "comp");
    }
    // n2 is done first: its share is free, the job still waits for n1.
    env.now += 1;
    env.epilog(id, "n2", 0);
    let job = env.job(id);
    assert!(job.status.is_completing());
    assert_eq!(alloc_nodes(job), vec![0]);
    assert_eq!(env.ctl.nodes()[1].state.display_long(), "IDLE");
    assert_eq!(env.ctl.nodes()[1].alloc_cpus, 0);
    assert!(env.ctl.nodes()[0].state.has(NodeFlag::Completing));
    // A node that holds nothing of it (any more) changes nothing.
    let before = env.events.len();
    env.epilog(id, "n2", 0);
    env.epilog(id, "n3", 0);
    assert_eq!(env.events.len(), before);
    // n1 ends it: the final state stays, the nodes it ran on are kept.
    env.epilog(id, "n1", 0);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Completed);
    assert!(!job.status.is_completing());
    assert!(job.alloc.is_empty());
    assert_eq!(
        job.last_alloc
            .iter()
            .map(|a| a.node_index)
            .collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert!(env
        .ctl
        .nodes()
        .iter()
        .all(|n| n.alloc_cpus == 0 && n.state.display_long() == "IDLE"));
    assert!(env.take_actions().is_empty());
}

#[test]
fn a_completing_share_is_not_given_to_another_job() {
    let mut env = Env::new();
    env.register_all();
    let mut whole = script();
    whole.required_nodes = "n1".into();
    whole.ntasks = Some(2);
    let first = env.submit(whole.clone());
    let second = env.submit(whole);
    assert_eq!(env.job(second).state(), JobState::Pending);
    env.take_actions();
    env.complete(first, 0, 0);
    // n1 shows the cleanup; the next job waits for it.
    assert_eq!(env.job(second).state(), JobState::Pending);
    env.epilog(first, "n1", 0);
    assert_eq!(env.job(second).state(), JobState::Running);
}

#[test]
fn a_failed_epilog_drains_the_node_and_still_frees_its_share() {
    let (mut env, id) = Env::running_job();
    env.complete(id, 0, 0);
    env.now += 2;
    let before = env.events.len();
    assert_eq!(env.epilog(id, "n1", 1), Reply::Ok);
    assert_eq!(
        env.events[before..],
        [
            Event::NodeUpdated {
                node: "n1".into(),
                update: slurm_common::state::NodeUpdateState::Drain,
                reason: Some("Epilog error".into()),
                uid: 0,
                time: env.now,
            },
            Event::JobNodeReleased {
                job_id: id,
                node: "n1".into(),
                time: env.now,
            },
        ]
    );
    let n1 = &env.ctl.nodes()[0];
    assert_eq!(n1.state.display_long(), "IDLE+DRAIN");
    assert_eq!(n1.reason.as_deref(), Some("Epilog error"));
    assert_eq!(n1.reason_time, env.now);
    assert!(!env.job(id).status.is_completing());
    // The next job goes elsewhere; a repeated report drains nothing again.
    let next = env.submit(script());
    assert_eq!(env.job(next).alloc[0].node_index, 1);
    let before = env.events.len();
    assert_eq!(env.epilog(id, "n1", 1), Reply::Ok);
    assert_eq!(env.events.len(), before);
}

#[test]
fn epilog_complete_needs_an_operator_and_a_known_node() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    env.complete(id, 0, 0);
    let ask = |caller, node: &str| Command::EpilogComplete {
        caller,
        request: v1::EpilogCompleteRequest {
            job_id: id,
            node_name: node.into(),
            error_code: 0,
            error_detail: String::new(),
        },
    };
    assert!(matches!(
        env.run(ask(ALICE, "n1")),
        Reply::Error {
            code: ErrorCode::AccessDenied,
            ..
        }
    ));
    assert!(matches!(
        env.run(ask(Caller::ROOT, "n\u{e9}9")),
        Reply::Error {
            code: ErrorCode::InvalidNodeName,
            ..
        }
    ));
    assert!(env.job(id).status.is_completing());
    // A job the controller never had (or purged): acknowledged.
    let before = env.events.len();
    assert_eq!(env.epilog(4242, "n1", 0), Reply::Ok);
    assert_eq!(env.events.len(), before);
}

#[test]
fn a_node_that_stops_responding_or_goes_down_releases_its_shares() {
    let mut env = Env::with_conf(&format!("{CONF}SlurmdTimeout=30\n"));
    env.register_all();
    let id = two_node_job(&mut env);
    let other = two_node_job_on(&mut env, "n[3-4]");
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[id]),
        signal: None,
    });
    // n2 did not take the terminate: it is not responding, and its share
    // is released. n4 falls silent too, under a running job.
    env.now += 1;
    env.run(Command::NodeResponses {
        answered: vec![0, 2],
        silent: vec![1, 3],
    });
    let n2 = &env.ctl.nodes()[1];
    assert!(n2.state.has(NodeFlag::NotResponding));
    assert!(!n2.state.has(NodeFlag::Completing));
    assert_eq!(n2.alloc_cpus, 0);
    assert_eq!(alloc_nodes(env.job(id)), vec![0]);
    assert_eq!(alloc_nodes(env.job(other)), vec![2, 3]);

    // A job that ends while one of its nodes is silent does not wait for
    // that node; the node keeps its flag.
    env.complete(other, 0, 0);
    assert_eq!(alloc_nodes(env.job(other)), vec![2]);
    assert!(env.ctl.nodes()[3].state.has(NodeFlag::NotResponding));
    assert_eq!(env.ctl.nodes()[3].alloc_cpus, 0);

    // DOWN (scontrol) releases what n3 holds for completing jobs.
    env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n3".into(),
            state: v1::NodeStateUpdate::Down as i32,
            reason: Some("dead".into()),
            ..Default::default()
        },
    });
    assert!(!env.job(other).status.is_completing());
    assert_eq!(env.ctl.nodes()[2].alloc_cpus, 0);
    // n1 still owes its report for the cancelled job.
    assert!(env.job(id).status.is_completing());
    env.epilog(id, "n1", 0);
    assert!(!env.job(id).status.is_completing());
    assert_eq!(env.job(id).state(), JobState::Cancelled);
}

/// A job on the two nodes of `nodes` (a hostlist), running.
fn two_node_job_on(env: &mut Env, nodes: &str) -> u32 {
    let mut d = script();
    d.min_nodes = Some(2);
    d.required_nodes = nodes.into();
    let id = env.submit(d);
    assert_eq!(env.job(id).state(), JobState::Running);
    env.take_actions();
    id
}

#[test]
fn a_running_job_on_a_node_set_down_fails_and_its_other_nodes_clean_up() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(v1::JobDescription {
        min_nodes: Some(2),
        requeue: Some(false),
        ..script()
    });
    env.take_actions();
    env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n2".into(),
            state: v1::NodeStateUpdate::Down as i32,
            reason: Some("dead".into()),
            ..Default::default()
        },
    });
    let job = env.job(id);
    assert_eq!(job.state(), JobState::NodeFail);
    assert!(job.status.is_completing());
    assert_eq!(alloc_nodes(job), vec![0]);
    assert!(matches!(
        &env.take_actions()[..],
        [Action::TerminateJob { nodes, request, .. }]
            if nodes == &vec![0, 1] && request.reason == v1::JobState::NodeFail as i32
    ));
    env.epilog(id, "n1", 0);
    assert!(!env.job(id).status.is_completing());
}

#[test]
fn nodes_that_never_report_are_given_up_on_after_the_cleanup_timeout() {
    let mut env = Env::new();
    env.register_all();
    let id = two_node_job(&mut env);
    env.complete(id, 0, 0);
    let ended = env.now;
    env.epilog(id, "n1", 0);
    let timeout = env.ctl.cfg.completing_timeout_secs;
    assert_eq!(env.ctl.next_deadline(env.now), Some(ended + timeout));
    env.now = ended + timeout - 1;
    env.run(Command::Tick);
    assert!(env.job(id).status.is_completing());
    env.now += 1;
    let before = env.events.len();
    env.run(Command::Tick);
    assert_eq!(
        env.events[before..],
        [Event::JobReleased {
            job_id: id,
            time: env.now
        }]
    );
    assert!(!env.job(id).status.is_completing());
    assert!(env.ctl.nodes().iter().all(|n| n.alloc_cpus == 0));
}

#[test]
fn partly_released_jobs_replay_and_snapshot_to_the_same_state() {
    let mut env = Env::new();
    env.register_all();
    let a = two_node_job(&mut env);
    let b = two_node_job_on(&mut env, "n[3-4]");
    env.complete(a, 0, 0);
    env.epilog(a, "n2", 0);
    env.run(Command::Requeue {
        caller: ALICE,
        filter: filter(&[b]),
        hold: true,
    });
    env.epilog(b, "n4", 0);
    assert_eq!(alloc_nodes(env.job(a)), vec![0]);
    assert_eq!(alloc_nodes(env.job(b)), vec![2]);

    let replayed = replay_encoded(CONF, &env.events);
    replayed.sanity_check().unwrap();
    assert_eq!(replayed.nodes(), env.ctl.nodes());
    let loaded = snapshot_reloaded(&env.ctl);
    loaded.sanity_check().unwrap();
    assert_eq!(loaded.nodes(), env.ctl.nodes());
    for id in [a, b] {
        let (x, y, z) = (
            env.job(id),
            replayed.job(id).unwrap(),
            loaded.job(id).unwrap(),
        );
        assert_eq!(
            (x.status, &x.alloc, &x.last_alloc),
            (y.status, &y.alloc, &y.last_alloc)
        );
        assert_eq!(
            (x.status, &x.alloc, &x.last_alloc),
            (z.status, &z.alloc, &z.last_alloc)
        );
    }
    // The held requeue keeps its hold, and its begin time.
    let job = env.job(b);
    assert_eq!(job.reason, PendingReason::JobHeldUser);
    assert_eq!(job.shape.begin_time, Some(job.end_time + 121));
}

#[test]
fn requeue_delay_follows_auth_info_cred_expire() {
    let env = Env::with_conf(&format!("{CONF}AuthInfo=cred_expire=300\n"));
    assert_eq!(env.ctl.cfg.requeue_delay_secs, 301);
    let env = Env::with_conf(&format!("{CONF}AuthInfo=cred_expire=x\n"));
    assert_eq!(env.ctl.cfg.requeue_delay_secs, 121);
    assert_eq!(Env::new().ctl.cfg.requeue_delay_secs, 121);
}

#[test]
fn a_finished_job_requeued_waits_out_the_delay() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    env.finish(id, 0, 0);
    env.now += 7;
    let r = env.run(Command::Requeue {
        caller: ALICE,
        filter: filter(&[id]),
        hold: false,
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Pending);
    assert!(!job.status.is_completing());
    assert_eq!(job.reason, PendingReason::BeginTime);
    assert_eq!(job.eligible_time, env.now + 121);
    // Cancelled while it waits: it ends now.
    env.now += 3;
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[id]),
        signal: None,
    });
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Cancelled);
    assert_eq!(job.end_time, env.now);
}

// ------------------------------------------------------------ requeue rules

fn requeue_as(env: &mut Env, caller: Caller, id: u32, hold: bool) -> Vec<(u32, i32)> {
    let r = env.run(Command::Requeue {
        caller,
        filter: filter(&[id]),
        hold,
    });
    ok_results(&r)
}

/// A job that ended but whose node has not reported its cleanup yet is
/// requeued at once (PENDING, still COMPLETING on its node), joins the
/// queue when the node reports, and waits the requeue delay from then.
#[test]
fn a_completing_job_is_requeued_and_joins_the_queue_after_its_epilog() {
    let mut env = Env::new();
    env.without_periodic_pass();
    env.register_all();
    let id = env.submit(script());
    env.now += 5;
    assert_eq!(env.complete(id, 0, 0), Reply::Ok);
    let ended_at = env.now;
    assert!(env.job(id).status.is_completing());
    env.take_actions();
    env.now += 3;
    let requeued_at = env.now;
    let before = env.events.len();
    assert_eq!(requeue_as(&mut env, ALICE, id, false), vec![(id, 0)]);
    assert_eq!(
        env.events[before..],
        [Event::JobRequeued {
            job_id: id,
            time: requeued_at,
            hold: None,
            launch_failed: false,
            detail: String::new(),
            begin_time: Some(requeued_at + 121),
        }]
    );
    // Its node was told to end it already: nothing new to send.
    assert!(env.take_actions().is_empty());
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Pending);
    assert!(job.status.is_completing());
    assert!(job.status.flags.contains(JobFlag::Requeued));
    assert_eq!(job.status.code().short_code(), "CG");
    assert_eq!(job.restart_count, 1);
    assert_eq!(job.reason, PendingReason::BeginTime);
    // The cleanup it waits for began when the run ended.
    assert_eq!(job.end_time, ended_at);
    assert_eq!(alloc_nodes(job), vec![0]);
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 1);
    // Requeued already: a second requeue finds it pending.
    assert_eq!(
        requeue_as(&mut env, ALICE, id, false),
        vec![(id, ErrorCode::JobPending.number())]
    );
    // The node reports 10 s later: the job is back in the queue and its
    // delay runs from now.
    env.now += 10;
    let released_at = env.now;
    let before = env.events.len();
    assert_eq!(env.epilog(id, "n1", 0), Reply::Ok);
    assert_eq!(
        env.events[before..],
        [
            Event::JobNodeReleased {
                job_id: id,
                node: "n1".into(),
                time: released_at,
            },
            Event::JobUpdated {
                job_id: id,
                changes: vec![JobChange::BeginTime(released_at + 121)],
            },
        ]
    );
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Pending);
    assert!(!job.status.is_completing());
    assert_eq!(job.reason, PendingReason::BeginTime);
    assert_eq!(job.eligible_time, released_at + 121);
    assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);
    assert_eq!(env.ctl.next_deadline(env.now), Some(released_at + 121));
    env.now += 120;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Pending);
    env.now += 1;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).restart_count, 1);

    let replayed = replay_encoded(CONF, &env.events);
    replayed.sanity_check().unwrap();
    assert_eq!(replayed.nodes(), env.ctl.nodes());
    let (a, b) = (env.job(id), replayed.job(id).unwrap());
    assert_eq!(
        (a.status, a.eligible_time, a.restart_count, &a.alloc),
        (b.status, b.eligible_time, b.restart_count, &b.alloc)
    );
}

/// A node that reports at once: the requeue delay counts from the requeue
/// and no second begin time is recorded.
#[test]
fn a_completing_job_released_at_once_keeps_its_requeue_begin_time() {
    let mut env = Env::new();
    env.register_all();
    let id = env.submit(script());
    env.complete(id, 1, 0);
    assert_eq!(requeue_as(&mut env, ALICE, id, false), vec![(id, 0)]);
    let before = env.events.len();
    env.epilog(id, "n1", 0);
    assert!(matches!(
        env.events[before..],
        [Event::JobNodeReleased { .. }]
    ));
    assert_eq!(env.job(id).eligible_time, env.now + 121);
}

/// Slurm requeues a batch job in any finished state, whatever ended it.
#[test]
fn finished_jobs_of_every_kind_are_requeued() {
    let mut env = Env::new();
    let cancelled_pending = env.submit(script());
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[cancelled_pending]),
        signal: None,
    });
    env.register_all();
    let completed = env.submit(script());
    let failed = env.submit(script());
    let cancelled = env.submit(script());
    let timed_out = env.submit(v1::JobDescription {
        time_limit: Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(1)),
        }),
        ..script()
    });
    env.finish(completed, 0, 0);
    env.finish(failed, 3, 0);
    env.run(Command::Cancel {
        caller: ALICE,
        filter: filter(&[cancelled]),
        signal: None,
    });
    env.epilogs(cancelled);
    env.now += 60;
    env.run(Command::Tick);
    env.epilogs(timed_out);
    // A job whose slurmd restarted without it ends NODE_FAIL yet may be
    // requeued (a node set DOWN requeues such a job itself).
    env.now += 1;
    let node_failed = env.submit(script());
    let node = env.ctl.nodes()[env.job(node_failed).alloc[0].node_index]
        .name
        .clone();
    env.now += 1;
    env.run(Command::RegisterNode {
        caller: Caller::ROOT,
        request: Box::new(v1::RegisterNodeRequest {
            node_name: node,
            slurmd_start_time: env.now,
            ..Default::default()
        }),
    });
    env.epilogs(node_failed);
    let cases = [
        (cancelled_pending, JobState::Cancelled),
        (completed, JobState::Completed),
        (failed, JobState::Failed),
        (cancelled, JobState::Cancelled),
        (timed_out, JobState::Timeout),
        (node_failed, JobState::NodeFail),
    ];
    for (id, state) in cases {
        assert_eq!(env.job(id).state(), state, "job {id}");
        assert!(!env.job(id).status.is_completing(), "job {id}");
    }
    env.now += 1;
    for (id, state) in cases {
        assert_eq!(
            requeue_as(&mut env, ALICE, id, false),
            vec![(id, 0)],
            "{state}"
        );
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Pending, "{state}");
        assert!(!job.status.is_completing(), "{state}");
        assert_eq!(job.reason, PendingReason::BeginTime, "{state}");
        assert_eq!(job.eligible_time, env.now + 121, "{state}");
        assert_eq!(job.end_time, env.now, "{state}");
    }
}

/// Refusals, with Slurm's codes: the job may not be requeued
/// (ESLURM_DISABLED, also when its partition is gone), it is pending
/// (ESLURM_JOB_PENDING), or it is somebody else's (ESLURM_ACCESS_DENIED).
#[test]
fn requeue_refusals_use_slurms_codes() {
    let mut env = Env::new();
    let pending = env.submit(script());
    let no_requeue = env.submit(v1::JobDescription {
        requeue: Some(false),
        ..script()
    });
    assert_eq!(
        requeue_as(&mut env, ALICE, pending, false),
        vec![(pending, ErrorCode::JobPending.number())]
    );
    // Not requeueable: refused as disabled in any state, pending included.
    assert_eq!(
        requeue_as(&mut env, ALICE, no_requeue, false),
        vec![(no_requeue, ErrorCode::Disabled.number())]
    );
    env.register_all();
    assert_eq!(env.job(no_requeue).state(), JobState::Running);
    assert_eq!(
        requeue_as(&mut env, ALICE, no_requeue, true),
        vec![(no_requeue, ErrorCode::Disabled.number())]
    );
    env.finish(no_requeue, 0, 0);
    assert_eq!(
        requeue_as(&mut env, ALICE, no_requeue, false),
        vec![(no_requeue, ErrorCode::Disabled.number())]
    );
    assert_eq!(
        requeue_as(&mut env, BOB, pending, false),
        vec![(pending, ErrorCode::AccessDenied.number())]
    );
    // A finished job whose partition left slurm.conf.
    let short = env.submit(v1::JobDescription {
        partitions: vec!["short".into()],
        ..script()
    });
    env.finish(short, 0, 0);
    let conf = SlurmConf::parse(
        &CONF.replace("PartitionName=short Nodes=n[1-2] MaxTime=10 State=UP\n", ""),
        "slurm.conf",
    )
    .unwrap()
    .conf;
    assert_eq!(
        env.run(Command::Reconfigure {
            caller: Caller::ROOT,
            conf: Box::new(conf),
        }),
        Reply::Ok
    );
    assert_eq!(
        requeue_as(&mut env, ALICE, short, false),
        vec![(short, ErrorCode::Disabled.number())]
    );
    assert_eq!(env.job(short).state(), JobState::Completed);
}

/// requeuehold: back in the queue held by its user, with Slurm's reason
/// text, which goes when it is released.
#[test]
fn requeuehold_holds_with_slurms_reason_until_released() {
    let (mut env, id) = Env::running_job();
    assert_eq!(requeue_as(&mut env, ALICE, id, true), vec![(id, 0)]);
    env.epilogs(id);
    let job = env.job(id);
    assert_eq!(job.state(), JobState::Pending);
    assert_eq!(job.hold, Some(slurm_sched::Hold::User));
    assert_eq!(job.reason, PendingReason::JobHeldUser);
    assert_eq!(job.reason_detail, "job requeued in held state");
    assert_eq!(job.priority(), 0);
    env.now += 200;
    env.run(Command::Tick);
    assert_eq!(env.job(id).state(), JobState::Pending);
    let r = env.run(Command::Release {
        caller: ALICE,
        filter: filter(&[id]),
    });
    assert_eq!(ok_results(&r), vec![(id, 0)]);
    assert_eq!(env.job(id).state(), JobState::Running);
    assert_eq!(env.job(id).reason_detail, "");
}

// ------------------------------------------------ registration vs slurm.conf

fn register_with(env: &mut Env, node: &str, cpus: u32, mem: u64) -> Reply {
    env.run(Command::RegisterNode {
        caller: Caller::ROOT,
        request: Box::new(v1::RegisterNodeRequest {
            node_name: node.into(),
            cpus,
            sockets: 1,
            cores_per_socket: cpus,
            threads_per_core: 1,
            real_memory_mb: mem,
            ..Default::default()
        }),
    })
}

/// A node that reports fewer CPUs and less memory than slurm.conf gives it
/// is marked INVALID_REG, drained by SlurmUser with Slurm's reason, and
/// takes no job; a later registration that is not short clears the mark,
/// the drain stays until an administrator resumes the node.
#[test]
fn a_node_registering_short_of_its_configuration_is_drained_as_invalid() {
    let mut env = Env::new();
    let reason = "Low socket*core*thread count, Low CPUs, \
                  Low RealMemory (reported:3000 < 100.00% of configured:4000)";
    let before = env.events.len();
    let r = register_with(&mut env, "n1", 1, 3000);
    assert_eq!(
        r,
        Reply::Registered {
            abort_job_ids: vec![],
            invalid: Some(reason.into()),
        }
    );
    assert_eq!(
        env.events[before..],
        [
            Event::NodeRegistered {
                node: "n1".into(),
                time: env.now,
                arch: String::new(),
                os: String::new(),
                invalid: Some(reason.into()),
            },
            Event::NodeUpdated {
                node: "n1".into(),
                update: slurm_common::state::NodeUpdateState::Drain,
                reason: Some(reason.into()),
                uid: 0,
                time: env.now,
            },
        ]
    );
    let n1 = &env.ctl.nodes()[0];
    assert_eq!(n1.state.display_long(), "UNKNOWN+DRAIN+INVALID_REG");
    assert_eq!(n1.state.sinfo_short(), "inval");
    assert_eq!(n1.reason.as_deref(), Some(reason));
    assert_eq!((n1.reason_uid, n1.reason_time), (0, env.now));
    // The others register as configured; a job goes to one of them.
    for n in ["n2", "n3", "n4"] {
        assert_eq!(
            register_with(&mut env, n, 2, 4000),
            Reply::Registered {
                abort_job_ids: vec![],
                invalid: None,
            }
        );
    }
    let id = env.submit(script());
    assert_eq!(launched(&env.take_actions()), vec![(id, 1)]);
    // Registering short again changes nothing more: drained already.
    let before = env.events.len();
    register_with(&mut env, "n1", 1, 3000);
    assert!(matches!(
        env.events[before..],
        [Event::NodeRegistered { .. }]
    ));
    // Fixed: up, still drained with its reason.
    env.now += 5;
    register_with(&mut env, "n1", 4, 8000);
    let n1 = &env.ctl.nodes()[0];
    assert_eq!(n1.state.display_long(), "IDLE+DRAIN");
    assert_eq!(n1.reason.as_deref(), Some(reason));
    let r = env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n1".into(),
            state: v1::NodeStateUpdate::Resume as i32,
            ..Default::default()
        },
    });
    assert_eq!(r, Reply::Ok);
    assert_eq!(env.ctl.nodes()[0].state.display_long(), "IDLE");
    assert_eq!(env.ctl.nodes()[0].reason, None);

    let replayed = replay_encoded(CONF, &env.events);
    assert_eq!(replayed.nodes(), env.ctl.nodes());
    let loaded = snapshot_reloaded(&env.ctl);
    assert_eq!(loaded.nodes(), env.ctl.nodes());
}

/// A node out of service already (DOWN here) is marked but not drained,
/// and ReturnToService does not bring it back while it is short.
#[test]
fn a_down_node_registering_short_stays_down_and_is_not_drained() {
    let mut env = Env::with_conf(&format!("{CONF}ReturnToService=2\n"));
    env.register_all();
    env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: "n2".into(),
            state: v1::NodeStateUpdate::Down as i32,
            reason: Some("dead".into()),
            ..Default::default()
        },
    });
    let before = env.events.len();
    let r = register_with(&mut env, "n2", 1, 4000);
    assert!(matches!(
        r,
        Reply::Registered { invalid: Some(ref why), .. }
            if why == "Low socket*core*thread count, Low CPUs"
    ));
    assert!(matches!(
        env.events[before..],
        [Event::NodeRegistered { .. }]
    ));
    let n2 = &env.ctl.nodes()[1];
    assert_eq!(n2.state.display_long(), "DOWN+INVALID_REG");
    assert_eq!(n2.reason.as_deref(), Some("dead"));
    // As configured again: ReturnToService=2 brings it back.
    register_with(&mut env, "n2", 2, 4000);
    assert_eq!(env.ctl.nodes()[1].state.display_long(), "IDLE");
}

/// SlurmdParameters=config_overrides: slurm.conf's figures stand and a
/// short report is accepted.
#[test]
fn config_overrides_skips_the_check() {
    let mut env = Env::with_conf(&format!("{CONF}SlurmdParameters=config_overrides\n"));
    assert_eq!(
        register_with(&mut env, "n1", 1, 10),
        Reply::Registered {
            abort_job_ids: vec![],
            invalid: None,
        }
    );
    assert_eq!(env.ctl.nodes()[0].state.display_long(), "IDLE");
}

/// SlurmctldParameters=node_reg_mem_percent lowers the memory a node must
/// report, and shows in the reason.
#[test]
fn node_reg_mem_percent_sets_the_memory_threshold() {
    let mut env = Env::with_conf(&format!(
        "{CONF}SlurmctldParameters=node_reg_mem_percent=80\n"
    ));
    assert!(matches!(
        register_with(&mut env, "n1", 2, 3200),
        Reply::Registered { invalid: None, .. }
    ));
    assert!(matches!(
        register_with(&mut env, "n2", 2, 3199),
        Reply::Registered { invalid: Some(ref why), .. }
            if why == "Low RealMemory (reported:3199 < 80.00% of configured:4000)"
    ));
    let bad = Env::with_conf(&format!(
        "{CONF}SlurmctldParameters=node_reg_mem_percent=lots\n"
    ));
    assert_eq!(bad.ctl.cfg.node_reg_mem_percent, None);
}

// --signal, --licenses, --reservation, --tmp, --deadline, --gpus*, --network.
mod submitx;

// --array.
mod aftercorr;
mod arrays;

// scontrol update JobId= of texts, sizes, TimeLimit+=/-=, ArrayTaskThrottle.
mod updates;

// scontrol update PartitionName=.
mod partitions;

// sbatch -p a,b: a job listed in several partitions.
mod multipart;

// scontrol update NodeName= Features, ActiveFeatures, Weight, Comment.
mod node_attrs;

// MaxJobCount, counting the tasks arrays still hold.
mod job_count;

// sbatch --test-only and the planned starts of pending jobs.
mod estimates;

/// A cancel by filter honours every field: one the job does not match
/// (account, QOS, wckey, node) spares it, even with a user given too.
#[test]
fn cancel_by_filter_honours_every_field() {
    let mut env = Env::new();
    let mut d = script();
    d.account = "physics".into();
    d.qos = "normal".into();
    d.wckey = "*proj".into();
    let job = env.submit(d);
    let by = |f: &dyn Fn(&mut v1::JobFilter)| {
        let mut filter = v1::JobFilter {
            user_ids: vec![ALICE.uid],
            ..Default::default()
        };
        f(&mut filter);
        filter
    };
    for miss in [
        by(&|f| f.accounts = vec!["chemistry".into()]),
        by(&|f| f.qos = vec!["high".into()]),
        by(&|f| f.wckeys = vec!["other".into()]),
        by(&|f| f.reservations = vec!["maint".into()]),
        by(&|f| f.nodelist = "n2".into()),
    ] {
        env.run(Command::Cancel {
            caller: ALICE,
            filter: miss.clone(),
            signal: None,
        });
        assert_eq!(env.job(job).state(), JobState::Pending, "{miss:?}");
    }
    // Only the fields, no user: still a selection.
    let r = env.run(Command::Cancel {
        caller: ALICE,
        filter: v1::JobFilter {
            wckeys: vec!["proj".into()],
            ..Default::default()
        },
        signal: None,
    });
    assert_eq!(ok_results(&r), vec![(job, 0)]);
    assert_eq!(env.job(job).state(), JobState::Cancelled);
}
