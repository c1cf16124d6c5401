//! The controller core on a Prolog failure (`Command::PrologFailed`, which
//! the agent makes of a launch that slurmd refused with
//! ESLURMD_PROLOG_FAILED): the node is drained with Reason "Prolog error"
//! and the job goes back to the queue held (JobHeldAdmin) whatever its
//! --requeue setting; its nodes are told to end it and free their shares
//! with EpilogComplete, as after any job. Exact events are asserted, and
//! replaying them gives the same state.

#![allow(clippy::unwrap_used)]

use slurm_common::conf::SlurmConf;
use slurm_common::reason::PendingReason;
use slurm_common::state::{JobState, NodeFlag, NodeUpdateState};
use slurm_proto::v1;
use slurmctld::core::{Action, Caller, Command, Controller, CtlConfig, Event, Reply};

const CONF: &str = "\
ClusterName=ref
SlurmctldHost=vm
SlurmUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=n[1-2] CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
";

const ALICE: Caller = Caller {
    uid: 1000,
    gid: 1000,
};

struct Env {
    conf: SlurmConf,
    ctl: Controller,
    now: i64,
    events: Vec<Event>,
}

impl Env {
    fn new() -> Env {
        let conf = SlurmConf::parse(CONF, "slurm.conf").unwrap().conf;
        let ctl = Controller::new(&conf, CtlConfig::from_conf(&conf, vec![]));
        let mut env = Env {
            conf,
            ctl,
            now: 1_700_000_000,
            events: Vec::new(),
        };
        for n in ["n1", "n2"] {
            env.run(Command::RegisterNode {
                caller: Caller::ROOT,
                request: Box::new(v1::RegisterNodeRequest {
                    node_name: n.into(),
                    ..Default::default()
                }),
            });
        }
        env
    }

    /// Handles `cmd`, then schedules, as the owner task does; the events
    /// of the command itself.
    fn run(&mut self, cmd: Command) -> (Reply, Vec<Event>, Vec<Action>) {
        let out = self.ctl.handle(cmd, self.now);
        self.ctl.sanity_check().unwrap();
        let sched = self.ctl.schedule(self.now);
        self.ctl.sanity_check().unwrap();
        self.events.extend(out.events.iter().cloned());
        self.events.extend(sched.events);
        let mut actions = out.actions;
        actions.extend(sched.actions);
        (out.reply, out.events, actions)
    }

    /// Submits a one-node job and returns its id and the node it was
    /// launched on.
    fn start(&mut self, requeue: Option<bool>) -> (u32, String) {
        let (reply, _, actions) = self.run(Command::Submit {
            caller: ALICE,
            desc: Box::new(v1::JobDescription {
                user_id: 1000,
                group_id: 1000,
                script: "#!/bin/sh\ntrue\n".into(),
                name: "wrap".into(),
                work_dir: "/tmp".into(),
                requeue,
                ..Default::default()
            }),
        });
        let Reply::Submitted { job_id, .. } = reply else {
            panic!("submit refused: {reply:?}");
        };
        let node = actions
            .iter()
            .find_map(|a| match a {
                Action::LaunchBatch {
                    job_id: j, node, ..
                } if *j == job_id => Some(*node),
                _ => None,
            })
            .expect("launched");
        assert_eq!(
            self.ctl.job(job_id).unwrap().status.state,
            JobState::Running
        );
        (job_id, self.ctl.nodes()[node].name.clone())
    }

    /// Node `node` reports its cleanup of `job_id` (its Epilog ran).
    fn epilog_complete(&mut self, job_id: u32, node: &str) -> Vec<Event> {
        let (reply, events, _) = self.run(Command::EpilogComplete {
            caller: Caller::ROOT,
            request: v1::EpilogCompleteRequest {
                job_id,
                node_name: node.into(),
                error_code: 0,
                error_detail: String::new(),
            },
        });
        assert_eq!(reply, Reply::Ok);
        events
    }

    fn node(&self, name: &str) -> &slurmctld::core::NodeRec {
        self.ctl.nodes().iter().find(|n| n.name == name).unwrap()
    }

    /// A controller rebuilt from every event so far has the same jobs and
    /// nodes.
    fn check_replay(&self) {
        let mut replayed = Controller::new(&self.conf, CtlConfig::from_conf(&self.conf, vec![]));
        for e in &self.events {
            replayed.apply(e).unwrap();
        }
        replayed.sanity_check().unwrap();
        for (a, b) in self.ctl.nodes().iter().zip(replayed.nodes()) {
            assert_eq!(
                (&a.name, a.state, &a.reason, a.alloc_cpus),
                (&b.name, b.state, &b.reason, b.alloc_cpus)
            );
        }
    }
}

fn prolog_failed(job_id: u32, node: &str) -> Command {
    Command::PrologFailed {
        job_id,
        node: node.into(),
        detail: "launch on n1 failed: prolog /etc/slurm/prolog.sh failed for job 1 after 5 ms: exit status 1".into(),
    }
}

#[test]
fn a_failed_prolog_drains_the_node_and_holds_the_job() {
    let mut env = Env::new();
    // --no-requeue: a Prolog failure requeues all the same.
    let (id, node) = env.start(Some(false));
    env.now += 3;
    let (reply, events, actions) = env.run(prolog_failed(id, &node));
    assert_eq!(reply, Reply::None);
    let now = env.now;
    assert_eq!(
        events,
        vec![
            Event::NodeUpdated {
                node: node.clone(),
                update: NodeUpdateState::Drain,
                reason: Some("Prolog error".into()),
                uid: 0,
                time: now,
            },
            Event::JobRequeued {
                job_id: id,
                time: now,
                hold: Some(slurm_sched::Hold::Admin),
                launch_failed: false,
                // Slurm's description; the node's error text goes to the
                // log only.
                detail: "launch failed requeued held".into(),
                begin_time: Some(now + 121),
            },
        ]
    );
    // The node is told to end the job (and so runs its Epilog); nothing
    // else starts.
    let index = env.ctl.nodes().iter().position(|n| n.name == node).unwrap();
    let terminated: Vec<(u32, Vec<usize>)> = actions
        .iter()
        .map(|a| match a {
            Action::TerminateJob { job_id, nodes, .. } => (*job_id, nodes.clone()),
            other => panic!("unexpected action {other:?}"),
        })
        .collect();
    assert_eq!(terminated, vec![(id, vec![index])]);
    let job = env.ctl.job(id).unwrap();
    assert_eq!(job.status.state, JobState::Pending);
    assert!(
        job.status.is_completing(),
        "until the node's EpilogComplete"
    );
    assert_eq!(job.reason, PendingReason::JobHeldAdmin);
    assert_eq!(job.reason_detail, "launch failed requeued held");
    assert_eq!(job.restart_count, 1);
    assert_eq!(job.launch_failures, 0);
    let n = env.node(&node);
    assert!(n.state.has(NodeFlag::Drain));
    assert_eq!(n.reason.as_deref(), Some("Prolog error"));
    let events = env.epilog_complete(id, &node);
    assert!(
        matches!(events.as_slice(), [Event::JobNodeReleased { .. }]),
        "{events:?}"
    );
    assert!(!env.ctl.job(id).unwrap().status.is_completing());
    assert_eq!(env.node(&node).alloc_cpus, 0);
    env.check_replay();

    // Released by an administrator, it starts on the other node.
    let (_, _, actions) = env.run(Command::Release {
        caller: Caller::ROOT,
        filter: v1::JobFilter {
            job_ids: vec![id],
            ..Default::default()
        },
    });
    assert!(actions.is_empty(), "the requeue delay still holds it");
    env.now += 121;
    let (_, _, actions) = env.run(Command::Tick);
    let launched: Vec<usize> = actions
        .iter()
        .filter_map(|a| match a {
            Action::LaunchBatch { node, .. } => Some(*node),
            _ => None,
        })
        .collect();
    assert_eq!(launched.len(), 1, "{actions:?}");
    assert_ne!(
        env.ctl.nodes()[launched[0]].name,
        node,
        "not on the drained node"
    );
}

#[test]
fn a_repeated_report_changes_nothing_and_a_cancelled_job_stays_cancelled() {
    let mut env = Env::new();
    let (first, node) = env.start(None);
    env.run(prolog_failed(first, &node));
    assert_eq!(
        env.ctl.job(first).unwrap().reason,
        PendingReason::JobHeldAdmin
    );
    // The same report again: no second drain, no second requeue.
    let (_, events, actions) = env.run(prolog_failed(first, &node));
    assert!(events.is_empty(), "{events:?}");
    assert!(actions.is_empty(), "{actions:?}");
    env.epilog_complete(first, &node);

    // A job cancelled while its launch (and the Prolog) was under way: not
    // requeued, still waiting for the node it was told to end on; the
    // node is drained all the same.
    let (second, other) = env.start(None);
    assert_ne!(other, node);
    env.run(Command::Cancel {
        caller: ALICE,
        filter: v1::JobFilter {
            job_ids: vec![second],
            ..Default::default()
        },
        signal: None,
    });
    assert!(env.ctl.job(second).unwrap().status.is_completing());
    let (_, events, actions) = env.run(prolog_failed(second, &other));
    assert!(
        matches!(events.as_slice(), [Event::NodeUpdated { .. }]),
        "{events:?}"
    );
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(env.node(&other).reason.as_deref(), Some("Prolog error"));
    env.epilog_complete(second, &other);
    let job = env.ctl.job(second).unwrap();
    assert_eq!(job.status.state, JobState::Cancelled);
    assert!(!job.status.is_completing());

    // A node an administrator drained while the launch was under way
    // keeps that reason; the job is requeued held all the same.
    let (reply, _, _) = env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: node.clone(),
            state: v1::NodeStateUpdate::Resume as i32,
            ..Default::default()
        },
    });
    assert_eq!(reply, Reply::Ok);
    let third = env.start(None);
    assert_eq!(third.1, node);
    let (reply, _, _) = env.run(Command::UpdateNode {
        caller: Caller::ROOT,
        request: v1::UpdateNodeRequest {
            nodes: third.1.clone(),
            state: v1::NodeStateUpdate::Drain as i32,
            reason: Some("maintenance".into()),
            ..Default::default()
        },
    });
    assert_eq!(reply, Reply::Ok);
    let (_, events, _) = env.run(prolog_failed(third.0, &third.1));
    assert!(
        matches!(events.as_slice(), [Event::JobRequeued { .. }]),
        "{events:?}"
    );
    assert_eq!(env.node(&third.1).reason.as_deref(), Some("maintenance"));
    env.epilog_complete(third.0, &third.1);

    // A report for an unknown job or node changes nothing.
    let (_, events, _) = env.run(prolog_failed(999, "nope"));
    assert!(events.is_empty(), "{events:?}");
    env.check_replay();
}
