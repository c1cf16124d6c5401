//! The ping task: how the controller learns that a node is gone, and what
//! each node really runs.
//!
//! Every SlurmdTimeout/3 (at least a second; 100 s when SlurmdTimeout is 0,
//! which only brings silent nodes back), as Slurm does, it reads the
//! published state and sends, through the TreeWidth tree, a ping to every
//! node that answers and a request to register again to every node that is
//! not registered or not answering (its registration is what can bring a
//! DOWN node back, per ReturnToService). The answers go to the owner task as
//! one [`Command::NodeResponses`]; the core decides what they mean
//! (`core::liveness`). A round never overlaps the next: a round that takes
//! long delays the following one. The task lives while the controller is in
//! control; dropping its [`PingTask`] stops it.
//!
//! Ping replies list the jobs each node has (running or launching); they go
//! to the owner task as [`Command::NodeJobs`], and the core reconciles them
//! with the jobs it places there. Two things make that prompt:
//!
//! * the first round goes out as soon as control is taken, not an interval
//!   later: a controller that died between journaling a job's start and
//!   sending its launch left that job RUNNING in the recovered state, on
//!   nodes that never heard of it. That first round only pings nodes that
//!   are registered and answering; asking every node to register again at
//!   once would flag as not responding nodes whose slurmd is still starting;
//! * a node that did not list a job it is the batch host of, while that job
//!   is still in its grace period (it may just be launching), is pinged
//!   again when the grace period ends ([`recheck_due`]), so a lost launch is
//!   found within about that period rather than a whole interval later.
//!
//! The answers also carry each node's load and free memory (CPULoad,
//! FreeMem), boot time and slurmd start time; they go to the owner task as
//! [`Command::NodeLoads`], which keeps them in memory for the queries
//! without journaling them.
//!
//! [`Command::NodeResponses`]: crate::core::Command::NodeResponses
//! [`Command::NodeJobs`]: crate::core::Command::NodeJobs
//! [`Command::NodeLoads`]: crate::core::Command::NodeLoads

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use slurm_common::auth::unix_now;
use slurm_common::conf::SlurmConf;
use slurm_proto::v1::node_reply;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::agent::{Agent, NodeOutcome};
use crate::core::{
    missing_job_grace_secs, ping_targets, recheck_due, Command, NodeBoot, NodeJobReport, NodeLoad,
    NodeLoadReport, PingTargets,
};
use crate::rpc::Shared;

/// Ping interval when SlurmdTimeout is 0 (no node is ever set DOWN; the
/// rounds only notice nodes that answer again).
pub const IDLE_PING_INTERVAL: Duration = Duration::from_secs(100);

/// How often nodes are pinged for a SlurmdTimeout of `slurmd_timeout`:
/// a third of it in whole seconds, at least one; [`IDLE_PING_INTERVAL`]
/// for 0.
pub fn interval(slurmd_timeout: Duration) -> Duration {
    if slurmd_timeout.is_zero() {
        return IDLE_PING_INTERVAL;
    }
    Duration::from_secs((slurmd_timeout.as_secs() / 3).max(1))
}

/// Time one round may take to reach `len` nodes: MessageTimeout per level
/// of the tree, but never more than the interval, so rounds keep pace.
pub fn round_budget(agent: &Agent, len: usize, interval: Duration) -> Duration {
    agent
        .broadcast_budget(len, agent.message_timeout())
        .min(interval)
}

/// The job lists of the nodes that answered a ping with a complete one.
/// Nodes that did not answer, answered something else (a registration
/// request) or run a slurmd that does not report its jobs are left out:
/// nothing is concluded about them.
pub fn job_reports(answers: &[NodeOutcome]) -> Vec<NodeJobReport> {
    answers
        .iter()
        .filter_map(|o| {
            let reply = o.result.as_ref().ok()?;
            let Some(node_reply::Body::Ping(p)) = &reply.body else {
                return None;
            };
            if !p.reports_jobs {
                return None;
            }
            let mut job_ids: Vec<u32> = p
                .running_job_ids
                .iter()
                .chain(&p.launching_job_ids)
                .copied()
                .collect();
            job_ids.sort_unstable();
            job_ids.dedup();
            Some(NodeJobReport {
                node: o.node,
                job_ids,
            })
        })
        .collect()
}

/// The figures of the nodes that answered a ping: load and free memory
/// when measured, boot and start times when sent; the controller keeps
/// what an answer lacks.
pub fn load_reports(answers: &[NodeOutcome]) -> Vec<NodeLoadReport> {
    answers
        .iter()
        .filter_map(|o| {
            let Some(node_reply::Body::Ping(p)) = &o.result.as_ref().ok()?.body else {
                return None;
            };
            let report = NodeLoadReport {
                node: o.node,
                load: NodeLoad::from_ping(p),
                boot: NodeBoot::from_ping(p),
            };
            (report.load.is_some() || report.boot != NodeBoot::default()).then_some(report)
        })
        .collect()
}

/// Nodes to ask again, with the unix second from which each is due.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rechecks(BTreeMap<usize, i64>);

impl Rechecks {
    /// Adds `due` entries (node, unix second), keeping the earliest per
    /// node.
    pub fn add(&mut self, due: impl IntoIterator<Item = (usize, i64)>) {
        for (node, at) in due {
            let d = self.0.entry(node).or_insert(at);
            *d = (*d).min(at);
        }
    }

    /// The earliest due time, if any.
    pub fn next(&self) -> Option<i64> {
        self.0.values().copied().min()
    }

    /// Removes and returns the nodes due at `now` (unix seconds), in order.
    pub fn take_due(&mut self, now: i64) -> Vec<usize> {
        let due: Vec<usize> = self
            .0
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(n, _)| *n)
            .collect();
        for n in &due {
            self.0.remove(n);
        }
        due
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// The running ping task; stops it when dropped.
#[derive(Debug)]
pub struct PingTask(JoinHandle<()>);

impl Drop for PingTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts pinging the nodes of `conf` with `agent`, reading the node states
/// from `shared`'s published snapshot. Stops when dropped or when `shared`
/// is gone.
pub fn spawn(agent: &Agent, shared: &Arc<Shared>, conf: &SlurmConf) -> PingTask {
    let every = interval(conf.slurmd_timeout);
    let grace = missing_job_grace_secs(conf.message_timeout);
    PingTask(tokio::spawn(run(
        agent.clone(),
        Arc::downgrade(shared),
        every,
        grace,
    )))
}

/// When the next round is due: the next full round, or the earliest
/// recheck (unix seconds) if that comes first.
fn wake_at(next_full: Instant, rechecks: &Rechecks) -> Instant {
    let Some(at) = rechecks.next() else {
        return next_full;
    };
    let wait = u64::try_from(at.saturating_sub(unix_now())).unwrap_or(0);
    next_full.min(Instant::now() + Duration::from_secs(wait))
}

async fn run(agent: Agent, shared: Weak<Shared>, every: Duration, grace: i64) {
    // The first round goes out at once (see the module docs).
    let mut next_full = Instant::now();
    let mut first = true;
    let mut rechecks = Rechecks::default();
    loop {
        tokio::time::sleep_until(wake_at(next_full, &rechecks)).await;
        let Some(snapshot) = shared.upgrade().map(|s| s.snapshot()) else {
            return;
        };
        let started = Instant::now();
        let full = started >= next_full;
        let mut targets = ping_targets(&snapshot.nodes);
        if full {
            if first {
                targets.register.clear();
                first = false;
            }
            rechecks.clear();
            next_full = started + every;
        } else {
            // Only nodes that still answer; the others are asked to
            // register by the next full round, and registering reconciles.
            let due = rechecks.take_due(unix_now());
            targets = PingTargets {
                ping: due
                    .into_iter()
                    .filter(|n| targets.ping.contains(n))
                    .collect(),
                register: Vec::new(),
            };
            if targets.ping.is_empty() {
                continue;
            }
        }
        let asked_at = unix_now();
        let ping_budget = round_budget(&agent, targets.ping.len(), every);
        let register_budget = round_budget(&agent, targets.register.len(), every);
        let (mut answers, asked) = tokio::join!(
            agent.ping(&targets.ping, false, ping_budget),
            agent.ping(&targets.register, true, register_budget),
        );
        answers.extend(asked);
        let silent = answers.iter().filter(|o| o.result.is_err()).count();
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if full {
            // Read by the tree benchmark (tests/src/bench_tree.rs).
            tracing::debug!(
                pinged = targets.ping.len(),
                asked_to_register = targets.register.len(),
                silent,
                elapsed_ms,
                peak_forwards = agent.peak_in_flight(),
                "ping round done"
            );
        } else {
            tracing::debug!(
                pinged = targets.ping.len(),
                silent,
                elapsed_ms,
                "jobs in their grace period checked again"
            );
        }
        agent.report(&answers).await;
        let loads = load_reports(&answers);
        if !loads.is_empty() {
            let Some(commands) = shared.upgrade().map(|s| s.commands.clone()) else {
                return;
            };
            let (tx, _rx) = oneshot::channel();
            let cmd = Command::NodeLoads { reports: loads };
            if commands.send((cmd, tx)).await.is_err() {
                return;
            }
        }
        let reports = job_reports(&answers);
        if reports.is_empty() {
            continue;
        }
        rechecks.add(recheck_due(&snapshot.jobs, &reports, asked_at, grace));
        drop(snapshot);
        let Some(commands) = shared.upgrade().map(|s| s.commands.clone()) else {
            return;
        };
        let (tx, _rx) = oneshot::channel();
        let cmd = Command::NodeJobs { asked_at, reports };
        if commands.send((cmd, tx)).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurm_proto::v1::{NodeReply, PingNodeReply};
    use slurm_proto::ErrorCode;

    #[test]
    fn interval_is_a_third_of_slurmd_timeout() {
        assert_eq!(interval(Duration::from_secs(300)), Duration::from_secs(100));
        assert_eq!(interval(Duration::from_secs(10)), Duration::from_secs(3));
        assert_eq!(interval(Duration::from_secs(2)), Duration::from_secs(1));
        assert_eq!(interval(Duration::ZERO), IDLE_PING_INTERVAL);
    }

    fn answer(node: usize, body: node_reply::Body) -> NodeOutcome {
        NodeOutcome {
            node,
            result: Ok(NodeReply { body: Some(body) }),
            via: Vec::new(),
        }
    }

    #[test]
    fn only_complete_ping_answers_become_job_reports() {
        let answers = vec![
            answer(
                0,
                node_reply::Body::Ping(PingNodeReply {
                    running_job_ids: vec![9, 2],
                    launching_job_ids: vec![5, 9],
                    reports_jobs: true,
                    ..Default::default()
                }),
            ),
            // Nothing running: an empty list is news too.
            answer(
                1,
                node_reply::Body::Ping(PingNodeReply {
                    reports_jobs: true,
                    ..Default::default()
                }),
            ),
            // A slurmd that does not say whether its list is complete.
            answer(
                2,
                node_reply::Body::Ping(PingNodeReply {
                    running_job_ids: vec![1],
                    ..Default::default()
                }),
            ),
            // Asked to register: no list.
            answer(3, node_reply::Body::Reconfigure(Default::default())),
            NodeOutcome {
                node: 4,
                result: Err((ErrorCode::SocketTimeout, "silent".into())),
                via: Vec::new(),
            },
        ];
        assert_eq!(
            job_reports(&answers),
            vec![
                NodeJobReport {
                    node: 0,
                    job_ids: vec![2, 5, 9]
                },
                NodeJobReport {
                    node: 1,
                    job_ids: vec![]
                },
            ]
        );
    }

    #[test]
    fn only_measured_figures_of_ping_answers_become_load_reports() {
        let ping = |reports_load, load, free| {
            node_reply::Body::Ping(PingNodeReply {
                cpu_load_hundredths: load,
                free_memory_mb: free,
                reports_load,
                ..Default::default()
            })
        };
        let answers = vec![
            answer(0, ping(true, 226, 22719)),
            // Idle and nearly full: zeros are figures too.
            answer(1, ping(true, 0, 0)),
            // Not measured (emulated node, failed probe, older slurmd).
            answer(2, ping(false, 500, 1)),
            // Not measured, but it says when it started.
            answer(
                5,
                node_reply::Body::Ping(PingNodeReply {
                    slurmd_start_time: 1_700_000_100,
                    ..Default::default()
                }),
            ),
            answer(3, node_reply::Body::Reconfigure(Default::default())),
            NodeOutcome {
                node: 4,
                result: Err((ErrorCode::SocketTimeout, "silent".into())),
                via: Vec::new(),
            },
        ];
        let load = |cpu_load_hundredths, free_memory_mb| {
            Some(NodeLoad {
                cpu_load_hundredths,
                free_memory_mb,
            })
        };
        assert_eq!(
            load_reports(&answers),
            vec![
                NodeLoadReport {
                    node: 0,
                    load: load(226, 22719),
                    boot: NodeBoot::default(),
                },
                NodeLoadReport {
                    node: 1,
                    load: load(0, 0),
                    boot: NodeBoot::default(),
                },
                NodeLoadReport {
                    node: 5,
                    load: None,
                    boot: NodeBoot {
                        boot_time: 0,
                        slurmd_start_time: 1_700_000_100,
                    },
                },
            ]
        );
    }

    #[test]
    fn rechecks_keep_the_earliest_time_per_node() {
        let mut r = Rechecks::default();
        assert_eq!(r.next(), None);
        r.add([(3, 120), (1, 110), (3, 105)]);
        assert_eq!(r.next(), Some(105));
        assert!(r.take_due(104).is_empty());
        assert_eq!(r.take_due(110), vec![1, 3]);
        assert_eq!(r.next(), None);
        r.add([(2, 50)]);
        r.clear();
        assert_eq!(r.next(), None);
    }
}
