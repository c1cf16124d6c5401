//! Node liveness: who answers, who fell silent, and what becomes of the
//! jobs of a node that is gone.
//!
//! The controller hears from a node when it registers and when it answers a
//! message (the ping task pings every node through the tree every
//! SlurmdTimeout/3). The rules are Slurm's:
//!
//! * a node that misses a message gets NOT_RESPONDING (sinfo `idle*`), and
//!   loses it when it answers again;
//! * a node silent for SlurmdTimeout since its last answer is set DOWN with
//!   Reason `Not responding`, the flag kept (sinfo `down*`). The deadline is
//!   on the timer ([`Controller::next_deadline`]), so this happens on time
//!   and not at the next ping round;
//! * its running jobs end NODE_FAIL (exit code `0:1`, reason `NodeDown`),
//!   or go back to the queue when they may be requeued (`--requeue`, or
//!   JobRequeue=1 without `--no-requeue`); no completing job waits for that
//!   node's cleanup any more, nor for that of a node that stopped
//!   responding (`core::epilog`);
//! * a job of several nodes that asked `--no-kill` loses only that node:
//!   it leaves the allocation (NodeList, NumNodes, NumCPUs and TRES shrink,
//!   ResizeTime is set), its processes there are told to end, and the job
//!   runs on. When that node is the batch host, the script is lost with
//!   it: the job ends FAILED with reason JobLaunchFailure and `ExitCode=0:9`
//!   (never requeued), as Slurm 22.05 ends it once the node's slurmd
//!   reports the script killed; here that happens at once;
//! * a DOWN node that registers comes back per ReturnToService: 0 never
//!   (only `scontrol update State=RESUME`), 1 when it went down for not
//!   responding, 2 always.
//!
//! Every state change is an event; the time comes with the command. When
//! each node last answered is bookkeeping kept beside the state
//! (`Controller::last_response`), not journaled: after a restart nothing has
//! been heard yet, and a node's silence is counted from its first miss.
//!
//! Nodes also say which jobs they have (running, or launch in progress),
//! when they register and in every ping reply, and the controller
//! reconciles that with its own view ([`Controller::reconcile_node_jobs`]).
//! This is what repairs a launch lost with a controller that died between
//! journaling a start and sending LaunchBatch:
//!
//! * a job placed on a node (as its batch host) that the node does not
//!   report, once a grace period since its start has passed
//!   (max(2 * MessageTimeout, 10 s): a launch the agent has not given up on
//!   yet is still on its way), is lost. A RUNNING one never ran there: it
//!   goes back to the queue (Restarts+1; not a launch failure, not
//!   NODE_FAIL), as Slurm does with "Batch JobId=N missing from batch node
//!   X (not found BatchStartTime after startup), Requeuing job". A
//!   COMPLETING one has nothing left to clean up there: its share of that
//!   node is released at once, not at the cleanup timeout;
//! * a job a node reports that the controller does not know, or does not
//!   place there (finished, requeued, running elsewhere) for longer than
//!   that grace period, is killed on that node: at registration in the
//!   reply's `abort_job_ids`, after a ping with a TerminateJob action.
//!
//! No terminate goes to the batch host of a lost job: it has nothing to
//! kill, and slurmd would remember the terminate for a launch still to
//! come, which could stop the requeued job's next start there. A node that
//! did not answer is judged by nothing here; its silence is the business of
//! the rules above.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use slurm_common::conf::ReturnToService;
use slurm_common::reason::PendingReason;
use slurm_common::state::{JobState, NodeBaseState, NodeFlag, NodeUpdateState};
use slurm_proto::v1;

use super::command::{Action, NodeJobReport};
use super::{Controller, Event, Job, JobTable, NodeRec, Outcome};

/// The shortest grace period of a started job before its batch host's
/// silence about it counts (Slurm's BatchStartTimeout default).
pub const MIN_MISSING_JOB_GRACE_SECS: i64 = 10;

/// How long after its start a job is given to show up on its batch host:
/// twice MessageTimeout (the agent's launch call may take one, the report
/// another), at least [`MIN_MISSING_JOB_GRACE_SECS`].
pub fn missing_job_grace_secs(message_timeout: Duration) -> i64 {
    i64::try_from(message_timeout.as_secs())
        .unwrap_or(i64::MAX)
        .saturating_mul(2)
        .max(MIN_MISSING_JOB_GRACE_SECS)
}

/// The batch host of a job that should have processes there now (running,
/// suspended, or finished and still cleaning up there).
fn batch_host(job: &Job) -> Option<usize> {
    if job.status.is_completing() {
        // Shares are released node by node: the batch host is the first
        // node of the allocation the job ran with, while it holds a share.
        let host = job.last_alloc.first()?.node_index;
        return job
            .alloc
            .iter()
            .any(|a| a.node_index == host)
            .then_some(host);
    }
    if !job.status.state.holds_resources() {
        return None;
    }
    job.alloc.first().map(|a| a.node_index)
}

/// When the grace period of a job not reported by its batch host ends, if
/// it has not ended by `asked_at`.
fn in_grace_until(job: &Job, asked_at: i64, grace: i64) -> Option<i64> {
    let until = job.start_time.saturating_add(grace);
    (until > asked_at).then_some(until)
}

/// When to ask nodes again about jobs still in their grace period: for
/// each node of `reports` that did not list a job it is the batch host of,
/// the earliest end of such a job's grace period, in node order. The ping
/// task asks those nodes again then, so a lost launch is found within about
/// the grace period rather than a ping interval later.
pub fn recheck_due(
    jobs: &JobTable,
    reports: &[NodeJobReport],
    asked_at: i64,
    grace: i64,
) -> Vec<(usize, i64)> {
    let listed: BTreeMap<usize, HashSet<u32>> = reports
        .iter()
        .map(|r| (r.node, r.job_ids.iter().copied().collect()))
        .collect();
    let mut due: BTreeMap<usize, i64> = BTreeMap::new();
    for job in jobs.values() {
        let Some(node) = batch_host(job) else {
            continue;
        };
        let Some(ids) = listed.get(&node) else {
            continue;
        };
        if ids.contains(&job.id.get()) {
            continue;
        }
        if let Some(until) = in_grace_until(job, asked_at, grace) {
            let d = due.entry(node).or_insert(until);
            *d = (*d).min(until);
        }
    }
    due.into_iter().collect()
}

/// The Reason of a node set DOWN because it stopped answering.
pub const NOT_RESPONDING_REASON: &str = "Not responding";

/// Which nodes a ping round sends what, by node index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PingTargets {
    /// Nodes that answer: a plain ping.
    pub ping: Vec<usize>,
    /// Nodes not registered, or not answering: a request to register
    /// again, which also brings a returning node back (ReturnToService).
    pub register: Vec<usize>,
}

/// Splits the nodes for a ping round. FUTURE nodes and nodes powered down
/// (or on their way up or down) are left alone.
pub fn ping_targets(nodes: &[NodeRec]) -> PingTargets {
    let mut t = PingTargets::default();
    for (i, n) in nodes.iter().enumerate() {
        let s = n.state;
        if s.base == NodeBaseState::Future
            || s.has(NodeFlag::PoweredDown)
            || s.has(NodeFlag::PoweringUp)
            || s.has(NodeFlag::PoweringDown)
        {
            continue;
        }
        if s.base == NodeBaseState::Unknown || s.has(NodeFlag::NotResponding) {
            t.register.push(i);
        } else {
            t.ping.push(i);
        }
    }
    t
}

impl Controller {
    /// Node `node` answered at `time`.
    pub(crate) fn heard_from(&mut self, node: usize, time: i64) {
        if let Some(t) = self.last_response.get_mut(node) {
            *t = (*t).max(time);
        }
    }

    /// When node `i`'s silence reaches SlurmdTimeout, if it is counting.
    fn silence_deadline(&self, i: usize) -> Option<i64> {
        let n = self.nodes.get(i)?;
        let last = *self.last_response.get(i)?;
        let timeout = self.cfg.slurmd_timeout_secs;
        let counting = timeout > 0
            && last > 0
            && n.state.has(NodeFlag::NotResponding)
            && !matches!(n.state.base, NodeBaseState::Down | NodeBaseState::Future);
        counting.then(|| last.saturating_add(timeout))
    }

    /// The earliest time a node that stopped answering is due to go DOWN.
    pub(crate) fn next_node_deadline(&self) -> Option<i64> {
        (0..self.nodes.len())
            .filter_map(|i| self.silence_deadline(i))
            .min()
    }

    /// Command::NodeResponses: flags for who answered and who did not,
    /// then DOWN for whoever has been silent long enough.
    pub(super) fn node_responses(
        &mut self,
        out: &mut Outcome,
        answered: &[usize],
        silent: &[usize],
        now: i64,
    ) {
        let mut back = Vec::new();
        let mut lost = Vec::new();
        let mut seen = HashSet::new();
        for &i in answered {
            let Some(n) = self.nodes.get(i) else {
                continue;
            };
            if !seen.insert(i) {
                continue;
            }
            if n.state.has(NodeFlag::NotResponding) {
                back.push(n.name.clone());
            }
            self.heard_from(i, now);
        }
        // As Slurm's node_did_resp: any answer may return a DOWN node to
        // service, as a registration does.
        let mut heard = HashSet::new();
        for &i in answered {
            if i < self.nodes.len() && heard.insert(i) {
                self.return_to_service(out, i, now);
            }
        }
        for &i in silent {
            let Some(n) = self.nodes.get(i) else {
                continue;
            };
            // Answered (in another broadcast of the same report), or
            // listed twice.
            if !seen.insert(i) || n.state.base == NodeBaseState::Future {
                continue;
            }
            if !n.state.has(NodeFlag::NotResponding) {
                lost.push(n.name.clone());
            }
            // Not heard from since the controller started: the silence
            // counts from now.
            if self.last_response[i] == 0 {
                self.last_response[i] = now;
            }
        }
        if !back.is_empty() {
            self.emit(
                out,
                Event::NodesResponding {
                    nodes: back,
                    time: now,
                },
            );
        }
        if !lost.is_empty() {
            for name in &lost {
                tracing::info!(node = %name, "node not responding");
            }
            let lost_idx: Vec<usize> = lost
                .iter()
                .filter_map(|n| self.node_index.get(n).copied())
                .collect();
            self.emit(
                out,
                Event::NodesNotResponding {
                    nodes: lost,
                    time: now,
                },
            );
            // Its EpilogComplete may never come; while it does not answer
            // it takes no job anyway.
            for i in lost_idx {
                self.release_node_shares(out, i, now);
            }
        }
        self.down_silent_nodes(out, now);
    }

    /// Sets DOWN every node silent for SlurmdTimeout at `now`, and ends or
    /// requeues its jobs (from the timer and after every round of answers).
    pub(super) fn down_silent_nodes(&mut self, out: &mut Outcome, now: i64) {
        let due: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.silence_deadline(i).is_some_and(|d| d <= now))
            .collect();
        for i in due {
            let name = self.nodes[i].name.clone();
            tracing::warn!(node = %name, "node silent for SlurmdTimeout; setting it DOWN");
            self.emit(
                out,
                Event::NodeUpdated {
                    node: name,
                    update: NodeUpdateState::Down,
                    reason: Some(NOT_RESPONDING_REASON.to_string()),
                    uid: self.cfg.slurm_user_uid,
                    time: now,
                },
            );
            self.fail_jobs_on_node(out, i, now, 1);
        }
    }

    /// The jobs of node `node`, which is gone (DOWN): running ones requeued
    /// or NODE_FAIL, and no completing job waits for its cleanup any more.
    /// The other nodes of those jobs clean up as after any end
    /// (`core::epilog`). A job that ends shows signal `exit_signal` in its
    /// ExitCode: 1 for a node that stopped responding (Slurm's minimum
    /// failure code), 15 for one an operator set DOWN, whose slurmd kills
    /// the script with SIGTERM (Slurm 22.05 shows `ExitCode=0:15`).
    pub(super) fn fail_jobs_on_node(
        &mut self,
        out: &mut Outcome,
        node: usize,
        now: i64,
        exit_signal: u32,
    ) {
        let running: Vec<(u32, bool, bool)> = self
            .jobs
            .values()
            .filter(|j| {
                !j.status.is_completing()
                    && j.status.state.holds_resources()
                    && j.alloc.iter().any(|a| a.node_index == node)
            })
            .map(|j| {
                let keeps_going = j.spec.shown().no_kill && j.alloc.len() > 1;
                (j.id.get(), j.requeue, keeps_going)
            })
            .collect();
        for (job_id, requeue, keeps_going) in running {
            if keeps_going {
                self.excise_failed_node(out, job_id, node, now);
                continue;
            }
            if requeue {
                tracing::info!(job_id, node = %self.nodes[node].name, "requeueing job of a failed node");
                self.emit(
                    out,
                    Event::JobRequeued {
                        job_id,
                        time: now,
                        hold: None,
                        launch_failed: false,
                        detail: String::new(),
                        begin_time: Some(self.requeue_begin(now)),
                    },
                );
            } else {
                tracing::info!(job_id, node = %self.nodes[node].name, "killing job of a failed node");
                self.emit(
                    out,
                    Event::JobEnded {
                        job_id,
                        time: now,
                        state: JobState::NodeFail,
                        exit_status: 0,
                        exit_signal,
                        reason: PendingReason::NodeDown.as_str().to_string(),
                        detail: String::new(),
                        release: false,
                    },
                );
            }
            self.end_on_nodes(out, job_id, v1::JobState::NodeFail, now);
        }
        self.release_node_shares(out, node, now);
    }

    /// Takes failed node `node` out of running `--no-kill` job `job_id`
    /// and tells the node to end the job's processes there. A batch host
    /// taken out ends the job FAILED (JobLaunchFailure, `0:9`): its script
    /// went with the node.
    fn excise_failed_node(&mut self, out: &mut Outcome, job_id: u32, node: usize, now: i64) {
        let batch_host = self
            .jobs
            .get(&job_id)
            .and_then(|j| j.alloc.first())
            .is_some_and(|a| a.node_index == node);
        tracing::error!(job_id, node = %self.nodes[node].name, "removing failed node from job");
        self.take_nodes_out(out, job_id, vec![node], now);
        if batch_host {
            let reason = PendingReason::JobLaunchFailure.as_str();
            self.finish_running(out, job_id, now, JobState::Failed, (0, 9), reason);
        }
    }

    /// Command::NodeJobs: reconciles every node that reported its jobs,
    /// and kills on each the jobs it should not have.
    pub(super) fn node_jobs(
        &mut self,
        out: &mut Outcome,
        asked_at: i64,
        reports: &[NodeJobReport],
        now: i64,
    ) {
        let mut listed: BTreeMap<usize, HashSet<u32>> = BTreeMap::new();
        for r in reports {
            if r.node < self.nodes.len() {
                // A node listed twice (two broadcasts): its first answer.
                listed
                    .entry(r.node)
                    .or_insert_with(|| r.job_ids.iter().copied().collect());
            }
        }
        for (node, ids) in self.reconcile_node_jobs(out, &listed, asked_at, now) {
            for job_id in ids {
                self.push_abort(out, job_id, node, now);
            }
        }
    }

    /// Compares the jobs each node of `listed` reported at `asked_at`
    /// with what the controller places there (see the module docs):
    /// requeues the lost running jobs a node is the batch host of, releases
    /// the lost completing ones, and returns, per node, the reported jobs
    /// it must end, in id order. One pass over the jobs, whatever the
    /// number of nodes.
    pub(super) fn reconcile_node_jobs(
        &mut self,
        out: &mut Outcome,
        listed: &BTreeMap<usize, HashSet<u32>>,
        asked_at: i64,
        now: i64,
    ) -> BTreeMap<usize, Vec<u32>> {
        let grace = self.cfg.missing_job_grace_secs;
        let abort: BTreeMap<usize, Vec<u32>> = listed
            .iter()
            .map(|(&node, ids)| {
                let mut foreign: Vec<u32> = ids
                    .iter()
                    .copied()
                    .filter(|&id| self.foreign_to(id, node, asked_at))
                    .collect();
                foreign.sort_unstable();
                (node, foreign)
            })
            .collect();
        // (job, batch host, completing), in job id order.
        let gone: Vec<(u32, usize, bool)> = self
            .jobs
            .values()
            .filter_map(|job| {
                let node = batch_host(job)?;
                let ids = listed.get(&node)?;
                let missing =
                    !ids.contains(&job.id.get()) && in_grace_until(job, asked_at, grace).is_none();
                missing.then(|| (job.id.get(), node, job.status.is_completing()))
            })
            .collect();
        for (job_id, node, completing) in gone {
            let name = self.nodes[node].name.clone();
            if completing {
                tracing::info!(job_id, node = %name, "completing job is gone from its batch host; releasing it there");
                self.release_share_on(out, job_id, node, now);
                continue;
            }
            tracing::info!(
                job_id,
                "Batch JobId={job_id} missing from batch node {name} (not found BatchStartTime after startup), Requeuing job"
            );
            self.emit(
                out,
                Event::JobRequeued {
                    job_id,
                    time: now,
                    hold: None,
                    launch_failed: false,
                    detail: String::new(),
                    begin_time: Some(self.requeue_begin(now)),
                },
            );
            // It never ran: no node has anything to clean up.
            self.emit(out, Event::JobReleased { job_id, time: now });
        }
        abort
    }

    /// Whether job `job_id`, reported by node `node` at `asked_at`, must
    /// end there: the controller does not know it, or does not place it on
    /// that node and has not for the grace period (a job that just finished,
    /// was requeued or started elsewhere may still be ending there, or the
    /// report may predate the change).
    fn foreign_to(&self, job_id: u32, node: usize, asked_at: i64) -> bool {
        let Some(job) = self.jobs.get(&job_id) else {
            return true;
        };
        let placed = (job.status.state.holds_resources() || job.status.is_completing())
            && job.alloc.iter().any(|a| a.node_index == node);
        if placed {
            return false;
        }
        let changed = job.start_time.max(job.end_time);
        changed.saturating_add(self.cfg.missing_job_grace_secs) <= asked_at
    }

    /// Kills job `job_id` on node `node` only (a job the node should not
    /// have).
    fn push_abort(&self, out: &mut Outcome, job_id: u32, node: usize, now: i64) {
        let Some(n) = self.nodes.get(node) else {
            return;
        };
        let job = self.jobs.get(&job_id);
        tracing::info!(job_id, node = %n.name, "node runs a job it should not; ending it there");
        out.actions.push(Action::TerminateJob {
            job_id,
            nodes: vec![node],
            request: v1::NodeTerminateJobRequest {
                job_id,
                reason: v1::JobState::Unspecified as i32,
                time: now,
                user_id: job.map_or(0, |j| j.uid),
                group_id: job.map_or(0, |j| j.gid),
                nodes: n.name.clone(),
                partition: job.map(|j| j.partition_name.clone()).unwrap_or_default(),
                kill_wait_secs: self.cfg.kill_wait_secs,
                not_started: false,
            },
        });
    }

    /// After a registration of node `node`, or any message from it (a
    /// ping's answer, an EpilogComplete): back to service if it is DOWN and
    /// ReturnToService says so, as Slurm 22.05 does (with
    /// ReturnToService=2 a node an operator set DOWN comes back with its
    /// slurmd's next message), unless its registration fell short of its
    /// configuration.
    pub(super) fn return_to_service(&mut self, out: &mut Outcome, node: usize, now: i64) {
        let Some(n) = self.nodes.get(node) else {
            return;
        };
        if n.state.base != NodeBaseState::Down || n.state.has(NodeFlag::InvalidReg) {
            return;
        }
        let back = match self.cfg.return_to_service {
            ReturnToService::Never => false,
            ReturnToService::NonResponsive => n.reason.as_deref() == Some(NOT_RESPONDING_REASON),
            ReturnToService::Any => true,
        };
        if back {
            tracing::info!(node = %n.name, "node returned to service");
            let name = n.name.clone();
            self.emit(
                out,
                Event::NodeReturned {
                    node: name,
                    time: now,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use slurm_common::state::{JobState, NodeBaseState, NodeFlag};
    use slurm_proto::v1;

    use super::super::tests::{replay_encoded, script, Env, CONF};
    use super::super::{Action, Caller, Command, Event, Reply};
    use super::*;

    /// The core test cluster with SlurmdTimeout=30 and `extra` lines.
    fn env(extra: &str) -> Env {
        Env::with_conf(&format!("{CONF}SlurmdTimeout=30\n{extra}"))
    }

    fn responses(env: &mut Env, answered: &[usize], silent: &[usize]) -> Vec<Event> {
        let before = env.events.len();
        let r = env.run(Command::NodeResponses {
            answered: answered.to_vec(),
            silent: silent.to_vec(),
        });
        assert_eq!(r, Reply::None);
        env.events[before..].to_vec()
    }

    fn register(env: &mut Env, node: &str) -> Vec<Event> {
        let before = env.events.len();
        env.run(Command::RegisterNode {
            caller: Caller::ROOT,
            request: Box::new(v1::RegisterNodeRequest {
                node_name: node.into(),
                ..Default::default()
            }),
        });
        env.events[before..].to_vec()
    }

    fn tick(env: &mut Env) -> Vec<Event> {
        let before = env.events.len();
        env.run(Command::Tick);
        env.events[before..].to_vec()
    }

    fn down(node: &str, time: i64) -> Event {
        Event::NodeUpdated {
            node: node.into(),
            update: NodeUpdateState::Down,
            reason: Some("Not responding".into()),
            uid: 0,
            time,
        }
    }

    #[test]
    fn ping_targets_split_answering_and_silent_nodes() {
        let mut env = env("");
        env.register_all();
        responses(&mut env, &[0, 1], &[2]);
        let t = ping_targets(env.ctl.nodes());
        assert_eq!(t.ping, vec![0, 1, 3]);
        assert_eq!(t.register, vec![2]);
        // Before registering, every node is asked to register.
        let fresh = super::super::tests::Env::new();
        assert_eq!(ping_targets(fresh.ctl.nodes()).register, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_missed_ping_flags_the_node_then_silence_sets_it_down() {
        let mut env = env("");
        env.register_all();
        let t0 = env.now;
        env.now += 10;
        assert!(responses(&mut env, &[0, 1, 2, 3], &[]).is_empty());
        // n2 misses the next round: NOT_RESPONDING, idle*.
        env.now += 10;
        assert_eq!(
            responses(&mut env, &[0, 2, 3], &[1]),
            vec![Event::NodesNotResponding {
                nodes: vec!["n2".into()],
                time: t0 + 20
            }]
        );
        let n2 = &env.ctl.nodes()[1];
        assert_eq!(n2.state.sinfo_short(), "idle*");
        assert!(!n2.state.is_schedulable());
        // Missing again changes nothing yet; it was last heard at t0 + 10.
        env.now += 10;
        assert!(responses(&mut env, &[0, 2, 3], &[1]).is_empty());
        assert_eq!(env.ctl.next_deadline(env.now), Some(t0 + 40));
        // The timer fires at the deadline: DOWN*, Not responding.
        env.now = t0 + 39;
        assert!(tick(&mut env).is_empty());
        env.now = t0 + 40;
        assert_eq!(tick(&mut env), vec![down("n2", t0 + 40)]);
        let n2 = &env.ctl.nodes()[1];
        assert_eq!(n2.state.base, NodeBaseState::Down);
        assert!(n2.state.has(NodeFlag::NotResponding));
        assert_eq!(n2.state.sinfo_short(), "down*");
        assert_eq!(n2.reason.as_deref(), Some("Not responding"));
        assert_eq!(n2.reason_time, t0 + 40);
        // Nothing more is due, and nothing happens twice.
        assert_eq!(env.ctl.next_deadline(env.now), None);
        env.now += 100;
        assert!(tick(&mut env).is_empty());
        assert!(responses(&mut env, &[], &[1]).is_empty());
    }

    #[test]
    fn a_node_that_answers_again_loses_the_flag() {
        let mut env = env("");
        env.register_all();
        env.now += 5;
        responses(&mut env, &[], &[3]);
        env.now += 5;
        assert_eq!(
            responses(&mut env, &[3], &[]),
            vec![Event::NodesResponding {
                nodes: vec!["n4".into()],
                time: env.now
            }]
        );
        assert_eq!(env.ctl.nodes()[3].state.sinfo_short(), "idle");
        assert_eq!(env.ctl.next_deadline(env.now), None);
        // Answering and missing in one report (two broadcasts): answered.
        assert!(responses(&mut env, &[3], &[3]).is_empty());
        // A node listed twice is flagged once; unknown indices are ignored.
        assert_eq!(
            responses(&mut env, &[], &[2, 2, 99]),
            vec![Event::NodesNotResponding {
                nodes: vec!["n3".into()],
                time: env.now
            }]
        );
    }

    #[test]
    fn jobs_of_a_dead_node_end_node_fail_or_are_requeued() {
        let mut env = env("");
        env.register_all();
        // Two whole-node jobs on n1 and n2: one may be requeued, one not.
        let mut keep = script();
        keep.requeue = Some(false);
        keep.min_nodes = Some(2);
        keep.ntasks_per_node = Some(2);
        let failed = env.submit(keep);
        let mut again = script();
        again.ntasks = Some(2);
        let requeued = env.submit(again);
        let actions = env.take_actions();
        assert_eq!(actions.len(), 2);
        assert_eq!(env.job(failed).state(), JobState::Running);
        assert_eq!(env.job(requeued).state(), JobState::Running);
        let nodes_of = |env: &Env, id: u32| -> Vec<usize> {
            env.job(id).alloc.iter().map(|a| a.node_index).collect()
        };
        assert_eq!(nodes_of(&env, failed), vec![0, 1]);
        assert_eq!(nodes_of(&env, requeued), vec![2]);
        let t0 = env.now;
        env.now += 1;
        responses(&mut env, &[0, 1, 3], &[2]);
        env.now = t0 + 31;
        responses(&mut env, &[0, 1, 3], &[2]);
        // n3 went DOWN: job 2 went back to the queue, eligible again after
        // the requeue delay, and nothing waits for n3's cleanup; job 1 on
        // n1,n2 is untouched.
        let events = &env.events;
        let i = events
            .iter()
            .position(|e| *e == down("n3", t0 + 31))
            .unwrap();
        let begin = t0 + 31 + 121;
        assert_eq!(
            events[i + 1..].to_vec(),
            vec![
                Event::JobRequeued {
                    job_id: requeued,
                    time: t0 + 31,
                    hold: None,
                    launch_failed: false,
                    detail: String::new(),
                    begin_time: Some(begin),
                },
                Event::JobNodeReleased {
                    job_id: requeued,
                    node: "n3".into(),
                    time: t0 + 31,
                },
            ]
        );
        let job = env.job(requeued);
        assert_eq!(job.state(), JobState::Pending);
        assert!(!job.status.is_completing());
        assert_eq!(job.reason, PendingReason::BeginTime);
        assert_eq!(job.restart_count, 1);
        assert!(job.alloc.is_empty());
        let actions = env.take_actions();
        assert!(matches!(
            &actions[..],
            [Action::TerminateJob { job_id, nodes, request }]
                if *job_id == requeued && nodes == &vec![2]
                    && request.reason == v1::JobState::NodeFail as i32
        ));
        assert_eq!(env.job(failed).state(), JobState::Running);

        // n2 falls silent too: the job that may not be requeued fails. Its
        // share of n2 is released with n2; n1 cleans up and reports.
        env.now += 1;
        responses(&mut env, &[0, 3], &[1]);
        env.now += 30;
        let events = tick(&mut env);
        assert_eq!(
            events,
            vec![
                down("n2", env.now),
                Event::JobEnded {
                    job_id: failed,
                    time: env.now,
                    state: JobState::NodeFail,
                    exit_status: 0,
                    exit_signal: 1,
                    reason: "NodeDown".into(),
                    detail: String::new(),
                    release: false,
                },
                Event::JobNodeReleased {
                    job_id: failed,
                    node: "n2".into(),
                    time: env.now,
                },
            ]
        );
        let job = env.job(failed);
        assert_eq!(job.state(), JobState::NodeFail);
        assert!(job.status.is_completing());
        assert_eq!((job.exit_status, job.exit_signal), (0, 1));
        assert_eq!(nodes_of(&env, failed), vec![0]);
        let actions = env.take_actions();
        assert!(matches!(
            &actions[..],
            [Action::TerminateJob { job_id, nodes, .. }] if *job_id == failed && nodes == &vec![0, 1]
        ));
        assert!(env.ctl.nodes()[0].state.has(NodeFlag::Completing));
        assert_eq!(env.epilog(failed, "n1", 0), Reply::Ok);
        assert!(!env.job(failed).status.is_completing());
        // n1 is free again; n2 is down.
        assert_eq!(env.ctl.nodes()[0].state.base, NodeBaseState::Idle);
        assert!(!env.ctl.nodes()[0].state.has(NodeFlag::Completing));
        assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);

        // The requeued job starts again once its begin time has come,
        // elsewhere than the dead n3.
        env.now = begin;
        tick(&mut env);
        let job = env.job(requeued);
        assert_eq!(job.state(), JobState::Running);
        assert!(!nodes_of(&env, requeued).contains(&2));
    }

    /// `--no-kill`, as Slurm 22.05 has it: a job of several nodes loses
    /// only the node that failed, is told to end there, and runs on with
    /// the others (also through a replay and a snapshot); when its batch
    /// host fails, it ends FAILED (JobLaunchFailure, 0:9) although it may
    /// be requeued.
    #[test]
    fn a_no_kill_job_loses_only_its_failed_node() {
        let mut env = env("");
        env.register_all();
        let mut desc = script();
        desc.no_kill = true;
        desc.min_nodes = Some(3);
        let id = env.submit(desc);
        env.take_actions();
        let nodes_of =
            |env: &Env| -> Vec<usize> { env.job(id).alloc.iter().map(|a| a.node_index).collect() };
        assert_eq!(nodes_of(&env), vec![0, 1, 2]);
        assert!(env.job(id).requeue);
        let t0 = env.now;
        env.now += 1;
        responses(&mut env, &[0, 1, 3], &[2]);
        env.now = t0 + 31;
        let events = responses(&mut env, &[0, 1, 3], &[2]);
        assert_eq!(
            events,
            vec![
                down("n3", env.now),
                Event::JobNodeExcised {
                    job_id: id,
                    node: "n3".into(),
                    time: env.now,
                },
            ]
        );
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Running);
        assert!(!job.status.is_completing());
        assert_eq!(nodes_of(&env), vec![0, 1]);
        let resized = Some(super::super::job::Resize {
            time: env.now,
            batch_host: None,
        });
        assert_eq!(job.resize.as_deref(), resized.as_ref());
        assert_eq!(env.ctl.nodes()[2].alloc_cpus, 0);
        assert_eq!(env.ctl.nodes()[0].alloc_cpus, 1);
        let actions = env.take_actions();
        assert!(
            matches!(
                &actions[..],
                [Action::TerminateJob { job_id, nodes, request }]
                    if *job_id == id && nodes == &vec![2]
                        && request.reason == v1::JobState::Failed as i32
            ),
            "{actions:?}"
        );
        for ctl in [
            replay_encoded(&format!("{CONF}SlurmdTimeout=30\n"), &env.events),
            super::super::tests::snapshot_reloaded(&env.ctl),
        ] {
            let again = ctl.job(id).unwrap();
            assert_eq!(again.alloc, env.job(id).alloc);
            assert_eq!(again.resize.as_deref(), resized.as_ref());
            assert!(again.spec.shown().no_kill);
            assert_eq!(ctl.nodes()[2].alloc_cpus, 0);
        }

        // The batch host n1 fails: the job ends, n2 cleans up.
        env.now += 1;
        responses(&mut env, &[1, 3], &[0]);
        env.now += 30;
        let events = tick(&mut env);
        assert_eq!(
            events,
            vec![
                down("n1", env.now),
                Event::JobNodeExcised {
                    job_id: id,
                    node: "n1".into(),
                    time: env.now,
                },
                Event::JobEnded {
                    job_id: id,
                    time: env.now,
                    state: JobState::Failed,
                    exit_status: 0,
                    exit_signal: 9,
                    reason: "JobLaunchFailure".into(),
                    detail: String::new(),
                    release: false,
                },
            ]
        );
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Failed);
        assert!(job.status.is_completing());
        assert_eq!(nodes_of(&env), vec![1]);
        assert_eq!(job.resize.as_ref().and_then(|r| r.batch_host), Some(0));
        let reloaded = super::super::tests::snapshot_reloaded(&env.ctl);
        let again = reloaded.job(id).unwrap();
        assert_eq!(again.resize.as_ref().and_then(|r| r.batch_host), Some(0));
        assert_eq!(env.epilog(id, "n2", 0), Reply::Ok);
        assert!(!env.job(id).status.is_completing());
        assert_eq!(env.ctl.nodes()[1].alloc_cpus, 0);
    }

    /// Without `--no-kill`, or on one node, a node failure ends the job as
    /// ever (here: requeued).
    #[test]
    fn no_kill_on_one_node_changes_nothing() {
        let mut env = env("");
        env.register_all();
        let mut desc = script();
        desc.no_kill = true;
        let id = env.submit(desc);
        env.take_actions();
        let t0 = env.now;
        env.now += 1;
        responses(&mut env, &[1, 2, 3], &[0]);
        env.now = t0 + 31;
        responses(&mut env, &[1, 2, 3], &[0]);
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Pending);
        assert_eq!(job.restart_count, 1);
        assert!(job.resize.is_none());
    }

    /// As Slurm 22.05 with priority/basic (the only priority plugin here):
    /// a job requeued because its node died keeps the priority it was
    /// given at submission (Slurm sets a priority anew only at submission
    /// and release), and restarts as a new submission: SubmitTime is the
    /// requeue, and it is not eligible before the requeue delay. A job
    /// submitted later still ranks after it.
    #[test]
    fn a_node_failure_requeue_keeps_the_priority_and_restarts_the_submit_time() {
        let mut env = env("");
        env.register_all();
        let mut whole = script();
        whole.ntasks = Some(2);
        let id = env.submit(whole);
        env.take_actions();
        let (priority, submitted) = (env.job(id).priority(), env.job(id).submit_time);
        let node = env.job(id).alloc[0].node_index;
        let others: Vec<usize> = (0..4).filter(|&i| i != node).collect();
        let t0 = env.now;
        env.now += 1;
        responses(&mut env, &others, &[node]);
        env.now = t0 + 31;
        responses(&mut env, &others, &[node]);
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Pending);
        assert_eq!(job.restart_count, 1);
        assert_eq!(job.priority(), priority);
        assert!(job.submit_time > submitted);
        assert_eq!(job.submit_time, t0 + 31);
        assert_eq!(job.eligible_time, t0 + 31 + 121);
        let later = env.submit(script());
        assert!(env.job(later).priority() < priority);
    }

    #[test]
    fn job_requeue_0_fails_jobs_unless_they_asked_for_requeue() {
        let mut env = env("JobRequeue=0\n");
        env.register_all();
        let plain = env.submit(script());
        let mut asked = script();
        asked.requeue = Some(true);
        let requeued = env.submit(asked);
        // Both on n1 (one CPU each).
        assert_eq!(env.job(plain).alloc[0].node_index, 0);
        assert_eq!(env.job(requeued).alloc[0].node_index, 0);
        env.take_actions();
        responses(&mut env, &[1, 2, 3], &[0]);
        env.now += 30;
        tick(&mut env);
        assert_eq!(env.job(plain).state(), JobState::NodeFail);
        assert_eq!(env.job(requeued).restart_count, 1);
        assert_ne!(env.job(requeued).state(), JobState::NodeFail);
    }

    #[test]
    fn return_to_service_decides_who_comes_back() {
        for (rts, back_after_silence, back_after_admin) in
            [("0", false, false), ("1", true, false), ("2", true, true)]
        {
            let mut env = env(&format!("ReturnToService={rts}\n"));
            env.register_all();
            // n1 goes silent and DOWN; n2 is set DOWN by an administrator.
            responses(&mut env, &[1, 2, 3], &[0]);
            env.now += 30;
            tick(&mut env);
            let r = env.run(Command::UpdateNode {
                caller: Caller::ROOT,
                request: v1::UpdateNodeRequest {
                    nodes: "n2".into(),
                    state: v1::NodeStateUpdate::Down as i32,
                    reason: Some("bad disk".into()),
                    ..Default::default()
                },
            });
            assert_eq!(r, Reply::Ok);
            env.now += 5;
            let ev = register(&mut env, "n1");
            let returned = Event::NodeReturned {
                node: "n1".into(),
                time: env.now,
            };
            assert_eq!(ev.contains(&returned), back_after_silence, "RTS={rts}");
            let n1 = &env.ctl.nodes()[0];
            assert!(!n1.state.has(NodeFlag::NotResponding), "RTS={rts}");
            if back_after_silence {
                assert_eq!(n1.state.sinfo_short(), "idle");
                assert_eq!(n1.reason, None);
            } else {
                // Answering, still DOWN: `down`, no star.
                assert_eq!(n1.state.sinfo_short(), "down");
                assert_eq!(n1.reason.as_deref(), Some("Not responding"));
            }
            let ev = register(&mut env, "n2");
            assert_eq!(
                ev.iter().any(|e| matches!(e, Event::NodeReturned { .. })),
                back_after_admin,
                "RTS={rts}"
            );
            // RESUME always brings a node back.
            let r = env.run(Command::UpdateNode {
                caller: Caller::ROOT,
                request: v1::UpdateNodeRequest {
                    nodes: "n[1-2]".into(),
                    state: v1::NodeStateUpdate::Resume as i32,
                    ..Default::default()
                },
            });
            if back_after_silence && back_after_admin {
                // Both are up already: RESUME does not apply.
                assert!(matches!(r, Reply::Error { .. }), "RTS={rts}: {r:?}");
            } else if !back_after_silence {
                assert_eq!(r, Reply::Ok, "RTS={rts}");
            }
            let n2 = &env.ctl.nodes()[1];
            if r == Reply::Ok || back_after_admin {
                assert_eq!(n2.state.base, NodeBaseState::Idle, "RTS={rts}");
            }
        }
    }

    #[test]
    fn a_drained_node_that_returns_stays_drained() {
        let mut env = env("ReturnToService=2\n");
        env.register_all();
        let r = env.run(Command::UpdateNode {
            caller: Caller::ROOT,
            request: v1::UpdateNodeRequest {
                nodes: "n1".into(),
                state: v1::NodeStateUpdate::Drain as i32,
                reason: Some("maint".into()),
                ..Default::default()
            },
        });
        assert_eq!(r, Reply::Ok);
        responses(&mut env, &[], &[0]);
        env.now += 30;
        tick(&mut env);
        assert_eq!(env.ctl.nodes()[0].state.sinfo_short(), "drain*");
        register(&mut env, "n1");
        let n1 = &env.ctl.nodes()[0];
        assert_eq!(n1.state.sinfo_short(), "drain");
        assert_eq!(n1.state.base, NodeBaseState::Idle);
    }

    #[test]
    fn nodes_never_heard_from_go_down_a_timeout_after_the_first_miss() {
        let mut env = env("");
        // Nobody registered; n4 never will.
        env.now += 100;
        responses(&mut env, &[], &[3]);
        assert_eq!(env.ctl.nodes()[3].state.sinfo_short(), "unk*");
        env.now += 29;
        assert!(tick(&mut env).is_empty());
        env.now += 1;
        assert_eq!(tick(&mut env), vec![down("n4", env.now)]);
        assert_eq!(env.ctl.nodes()[3].state.sinfo_short(), "down*");
    }

    #[test]
    fn slurmd_timeout_0_flags_but_never_downs() {
        let mut env = Env::with_conf(&format!("{CONF}SlurmdTimeout=0\n"));
        env.register_all();
        responses(&mut env, &[], &[0]);
        env.now += 100_000;
        assert!(responses(&mut env, &[], &[0]).is_empty());
        assert!(tick(&mut env).is_empty());
        assert_eq!(env.ctl.nodes()[0].state.sinfo_short(), "idle*");
        assert_eq!(env.ctl.next_deadline(env.now), None);
    }

    #[test]
    fn a_slurmd_restart_keeps_the_jobs_it_reports() {
        // Issue "Fan-out tree, node health": jobs survive a slurmd restart.
        let mut env = env("");
        env.register_all();
        let id = env.submit(script());
        env.take_actions();
        env.now += 60;
        let before = env.events.len();
        let r = env.run(Command::RegisterNode {
            caller: Caller::ROOT,
            request: Box::new(v1::RegisterNodeRequest {
                node_name: "n1".into(),
                slurmd_start_time: env.now,
                running_jobs: vec![v1::RunningJob {
                    job_id: id,
                    step_ids: vec![0xFFFF_FFFB],
                }],
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
        assert_eq!(env.job(id).state(), JobState::Running);
        assert!(env.take_actions().is_empty());
        assert!(matches!(
            &env.events[before..],
            [Event::NodeRegistered { node, .. }] if node == "n1"
        ));
    }

    #[test]
    fn liveness_events_replay_to_the_same_nodes() {
        let mut env = env("ReturnToService=1\n");
        env.register_all();
        let id = env.submit(script());
        responses(&mut env, &[1, 2, 3], &[0]);
        env.now += 30;
        tick(&mut env);
        env.now += 1;
        responses(&mut env, &[0], &[]);
        register(&mut env, "n1");
        assert!(env.job(id).restart_count >= 1);

        let replayed = replay_encoded(
            &format!("{CONF}SlurmdTimeout=30\nReturnToService=1\n"),
            &env.events,
        );
        replayed.sanity_check().unwrap();
        assert_eq!(replayed.nodes(), env.ctl.nodes());
        assert_eq!(
            replayed.job(id).map(|j| (j.status, j.restart_count)),
            Some((env.job(id).status, env.job(id).restart_count))
        );
    }

    // ------------------------------------------------ job reconciliation
    //
    // Issue "e2e_crash: a job journaled as started whose LaunchBatch died
    // with the controller stays RUNNING forever".

    /// The core cluster, every node registered, one job started on n1 at
    /// `env.now` (MessageTimeout 10: a grace period of 20 s).
    fn env_with_job(extra: &str) -> (Env, u32) {
        let mut env = env(extra);
        env.register_all();
        let id = env.submit(script());
        assert_eq!(env.job(id).state(), JobState::Running);
        assert_eq!(env.job(id).alloc[0].node_index, 0);
        env.take_actions();
        (env, id)
    }

    /// Runs Command::NodeJobs asked at `env.now`; the events it caused.
    fn node_jobs(env: &mut Env, reports: &[(usize, &[u32])]) -> Vec<Event> {
        let before = env.events.len();
        let r = env.run(Command::NodeJobs {
            asked_at: env.now,
            reports: reports
                .iter()
                .map(|(node, ids)| NodeJobReport {
                    node: *node,
                    job_ids: ids.to_vec(),
                })
                .collect(),
        });
        assert_eq!(r, Reply::None);
        env.events[before..].to_vec()
    }

    #[test]
    fn grace_is_twice_message_timeout_and_at_least_ten_seconds() {
        let s = Duration::from_secs;
        assert_eq!(missing_job_grace_secs(s(10)), 20);
        assert_eq!(missing_job_grace_secs(s(30)), 60);
        assert_eq!(missing_job_grace_secs(s(4)), 10);
        assert_eq!(missing_job_grace_secs(Duration::ZERO), 10);
        assert_eq!(missing_job_grace_secs(s(u64::MAX)), i64::MAX);
        let (env, _) = env_with_job("");
        assert_eq!(env.ctl.config().missing_job_grace_secs, 20);
        assert_eq!(
            env_with_job("MessageTimeout=2\n")
                .0
                .ctl
                .config()
                .missing_job_grace_secs,
            10
        );
    }

    #[test]
    fn a_job_its_batch_host_does_not_have_is_requeued_after_the_grace_period() {
        let (mut env, id) = env_with_job("");
        env.without_periodic_pass();
        let start = env.now;
        // Within the grace period the launch may still be on its way.
        env.now = start + 19;
        assert!(node_jobs(&mut env, &[(0, &[])]).is_empty());
        assert!(env.take_actions().is_empty());
        // Reported (running, or launching): nothing to do, however late.
        env.now = start + 500;
        assert!(node_jobs(&mut env, &[(0, &[id])]).is_empty());
        assert!(env.take_actions().is_empty());

        // Not there, and 20 s after its start: it never ran. Back to the
        // queue, Restarts+1, not a launch failure, no NODE_FAIL record, no
        // terminate to a node that has nothing to kill.
        env.now = start + 20;
        let before = env.events.len();
        let out = env.ctl.handle(
            Command::NodeJobs {
                asked_at: env.now,
                reports: vec![NodeJobReport {
                    node: 0,
                    job_ids: vec![],
                }],
            },
            env.now,
        );
        env.ctl.sanity_check().unwrap();
        let begin = start + 20 + 121;
        assert_eq!(
            out.events,
            vec![
                Event::JobRequeued {
                    job_id: id,
                    time: start + 20,
                    hold: None,
                    launch_failed: false,
                    detail: String::new(),
                    begin_time: Some(begin),
                },
                Event::JobReleased {
                    job_id: id,
                    time: start + 20,
                },
            ]
        );
        assert!(out.actions.is_empty());
        assert_eq!(out.reply, Reply::None);
        env.events.extend(out.events);
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Pending);
        assert!(!job.status.is_completing());
        assert_eq!((job.restart_count, job.launch_failures), (1, 0));
        assert_eq!((job.exit_status, job.exit_signal), (0, 0));
        assert_eq!(job.start_time, 0);
        // Not eligible before the requeue delay, as any requeued job.
        assert_eq!(job.eligible_time, begin);
        assert_eq!(job.reason, PendingReason::BeginTime);
        assert!(job.reason_detail.is_empty());
        assert!(job.alloc.is_empty());
        assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);
        assert!(env.ctl.schedule(env.now).events.is_empty());
        assert_eq!(env.ctl.next_deadline(env.now), Some(begin));

        // The first pass at its begin time starts it again, and this
        // launch goes out.
        env.now = begin;
        env.ctl.request_schedule();
        let sched = env.ctl.schedule(env.now);
        env.ctl.sanity_check().unwrap();
        assert!(matches!(
            &sched.events[..],
            [Event::JobStarted { job_id, time, .. }] if *job_id == id && *time == begin
        ));
        assert!(matches!(
            &sched.actions[..],
            [Action::LaunchBatch { job_id, request, .. }] if *job_id == id && request.restart_count == 1
        ));
        env.events.extend(sched.events);
        assert_eq!(env.job(id).state(), JobState::Running);
        assert_eq!(env.events.len(), before + 3);

        // Its new start opens a new grace period.
        env.now += 19;
        assert!(node_jobs(&mut env, &[(0, &[])]).is_empty());
    }

    #[test]
    fn a_job_that_does_not_hold_resources_is_never_missing() {
        // Requeued back to PENDING and finished jobs are not expected on
        // any node.
        let (mut env, id) = env_with_job("");
        env.now += 5;
        env.finish(id, 0, 0);
        env.take_actions();
        let mut held = script();
        held.hold = true;
        let pending = env.submit(held);
        env.now += 100;
        assert!(node_jobs(&mut env, &[(0, &[]), (1, &[]), (2, &[]), (3, &[])]).is_empty());
        assert!(env.take_actions().is_empty());
        assert_eq!(env.job(id).state(), JobState::Completed);
        assert_eq!(env.job(pending).state(), JobState::Pending);
    }

    #[test]
    fn a_completing_job_gone_from_its_batch_host_is_released_at_once() {
        let (mut env, id) = env_with_job("");
        let start = env.now;
        env.now += 1;
        let r = env.run(Command::Cancel {
            caller: Caller::ROOT,
            filter: v1::JobFilter {
                job_ids: vec![id],
                ..Default::default()
            },
            signal: None,
        });
        assert!(matches!(r, Reply::JobResults(_)));
        assert!(env.job(id).status.is_completing());
        env.take_actions();
        // Still there (KillWait): it stays COMPLETING.
        env.now = start + 25;
        assert!(node_jobs(&mut env, &[(0, &[id])]).is_empty());
        // Gone: released there and then, not at the cleanup timeout.
        env.now = start + 26;
        assert_eq!(
            node_jobs(&mut env, &[(0, &[])]),
            vec![Event::JobNodeReleased {
                job_id: id,
                node: "n1".into(),
                time: start + 26,
            }]
        );
        assert!(env.take_actions().is_empty());
        let job = env.job(id);
        assert_eq!(job.state(), JobState::Cancelled);
        assert!(!job.status.is_completing());
        assert_eq!(job.restart_count, 0);
        assert_eq!(env.ctl.nodes()[0].alloc_cpus, 0);
        assert_eq!(env.ctl.nodes()[0].state.base, NodeBaseState::Idle);
    }

    #[test]
    fn only_the_batch_host_of_a_completing_job_is_asked_about_it() {
        // A job on n1 (its batch host) and n2; n1 has reported its cleanup.
        let mut env = env("");
        env.register_all();
        let mut d = script();
        d.min_nodes = Some(2);
        let id = env.submit(d);
        env.now += 30;
        env.complete(id, 0, 0);
        env.epilog(id, "n1", 0);
        assert!(env.job(id).status.is_completing());
        // n2 never runs the script, so it never lists the job: that is no
        // sign of its cleanup, which it reports itself.
        env.now += 30;
        assert!(node_jobs(&mut env, &[(0, &[]), (1, &[])]).is_empty());
        assert!(env.job(id).status.is_completing());
        env.epilog(id, "n2", 0);
        assert!(!env.job(id).status.is_completing());
    }

    #[test]
    fn a_completing_job_whose_launch_was_lost_waits_out_the_grace_period() {
        // Cancelled right after its start: its launch may still arrive.
        let (mut env, id) = env_with_job("");
        let start = env.now;
        env.run(Command::Cancel {
            caller: Caller::ROOT,
            filter: v1::JobFilter {
                job_ids: vec![id],
                ..Default::default()
            },
            signal: None,
        });
        env.now = start + 19;
        assert!(node_jobs(&mut env, &[(0, &[])]).is_empty());
        env.now = start + 20;
        assert_eq!(
            node_jobs(&mut env, &[(0, &[])]),
            vec![Event::JobNodeReleased {
                job_id: id,
                node: "n1".into(),
                time: start + 20,
            }]
        );
    }

    #[test]
    fn a_job_the_controller_does_not_place_on_the_node_is_aborted_there() {
        let (mut env, id) = env_with_job("");
        let start = env.now;
        let terminate = |job_id: u32, node: usize, name: &str, uid: u32, partition: &str| {
            Action::TerminateJob {
                job_id,
                nodes: vec![node],
                request: v1::NodeTerminateJobRequest {
                    job_id,
                    reason: v1::JobState::Unspecified as i32,
                    time: start + 1,
                    user_id: uid,
                    group_id: uid,
                    nodes: name.into(),
                    partition: partition.into(),
                    kill_wait_secs: 30,
                    not_started: false,
                },
            }
        };
        // n2 runs 4242, which the controller never heard of, and job `id`,
        // which runs on n1 (started a second ago: maybe an old instance
        // still ending there, or a report older than the start).
        env.now = start + 1;
        assert!(node_jobs(&mut env, &[(1, &[4242, id])]).is_empty());
        assert_eq!(env.take_actions(), vec![terminate(4242, 1, "n2", 0, "")]);
        assert_eq!(env.job(id).state(), JobState::Running);

        // Once the grace period is over, it is killed on n2 (only there).
        env.now = start + 20;
        assert!(node_jobs(&mut env, &[(1, &[id]), (0, &[id])]).is_empty());
        let mut expected = terminate(id, 1, "n2", 1000, "debug");
        if let Action::TerminateJob { request, .. } = &mut expected {
            request.time = start + 20;
        }
        assert_eq!(env.take_actions(), vec![expected]);
        assert_eq!(env.job(id).state(), JobState::Running);

        // A finished job is killed where it lingers once it has been over
        // for the grace period.
        env.now = start + 30;
        env.finish(id, 0, 0);
        env.take_actions();
        env.now = start + 49;
        assert!(node_jobs(&mut env, &[(0, &[id])]).is_empty());
        assert!(env.take_actions().is_empty());
        env.now = start + 50;
        assert!(node_jobs(&mut env, &[(0, &[id])]).is_empty());
        assert!(matches!(
            &env.take_actions()[..],
            [Action::TerminateJob { job_id, nodes, .. }] if *job_id == id && nodes == &vec![0]
        ));
    }

    #[test]
    fn nodes_that_did_not_answer_are_judged_by_nothing() {
        let (mut env, id) = env_with_job("");
        // Past the grace period, short of SlurmdTimeout.
        env.now += 25;
        // A round in which n1 did not answer: only the other nodes report.
        responses(&mut env, &[1, 2, 3], &[0]);
        assert!(node_jobs(&mut env, &[(1, &[]), (2, &[]), (3, &[])]).is_empty());
        // An empty round, unknown and repeated node indices.
        assert!(node_jobs(&mut env, &[]).is_empty());
        assert!(node_jobs(&mut env, &[(99, &[]), (1, &[]), (1, &[])]).is_empty());
        let actions = env.take_actions();
        assert!(actions.is_empty(), "{actions:?}");
        assert_eq!(env.job(id).state(), JobState::Running);
        assert_eq!(env.job(id).restart_count, 0);
    }

    #[test]
    fn registration_requeues_a_lost_launch_and_keeps_a_launching_one() {
        let (mut env, lost) = env_with_job("");
        let launching = env.submit(script());
        assert_eq!(env.job(launching).alloc[0].node_index, 0);
        env.take_actions();
        let start = env.now;
        env.now = start + 30;
        let before = env.events.len();
        // slurmd has run all along (it did not restart since the starts)
        // and has only the job it is launching.
        let r = env.run(Command::RegisterNode {
            caller: Caller::ROOT,
            request: Box::new(v1::RegisterNodeRequest {
                node_name: "n1".into(),
                slurmd_start_time: start - 100,
                running_jobs: vec![v1::RunningJob {
                    job_id: launching,
                    step_ids: vec![0xFFFF_FFFB],
                }],
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
        let events = &env.events[before..];
        assert!(matches!(&events[0], Event::NodeRegistered { node, .. } if node == "n1"));
        assert_eq!(
            events[1..3].to_vec(),
            vec![
                Event::JobRequeued {
                    job_id: lost,
                    time: start + 30,
                    hold: None,
                    launch_failed: false,
                    detail: String::new(),
                    begin_time: Some(start + 30 + 121),
                },
                Event::JobReleased {
                    job_id: lost,
                    time: start + 30,
                },
            ]
        );
        // Back in the queue until the requeue delay has passed.
        assert!(events[3..].is_empty(), "{:?}", &events[3..]);
        assert_eq!(env.job(lost).state(), JobState::Pending);
        assert_eq!(env.job(lost).reason, PendingReason::BeginTime);
        assert_eq!(env.job(lost).restart_count, 1);
        assert_eq!(env.job(launching).state(), JobState::Running);
        assert_eq!(env.job(launching).restart_count, 0);
    }

    #[test]
    fn registration_aborts_jobs_over_for_the_grace_period_only() {
        let (mut env, id) = env_with_job("");
        env.now += 5;
        env.finish(id, 0, 0);
        let register = |env: &mut Env| {
            env.run(Command::RegisterNode {
                caller: Caller::ROOT,
                request: Box::new(v1::RegisterNodeRequest {
                    node_name: "n1".into(),
                    running_jobs: vec![
                        v1::RunningJob {
                            job_id: id,
                            step_ids: vec![],
                        },
                        v1::RunningJob {
                            job_id: 777,
                            step_ids: vec![],
                        },
                    ],
                    ..Default::default()
                }),
            })
        };
        // Just finished: its slurmstepd may still be on its way out.
        env.now += 1;
        assert_eq!(
            register(&mut env),
            Reply::Registered {
                abort_job_ids: vec![777],
                invalid: None
            }
        );
        env.now += 19;
        assert_eq!(
            register(&mut env),
            Reply::Registered {
                abort_job_ids: vec![id, 777],
                invalid: None
            }
        );
    }

    #[test]
    fn recheck_due_names_nodes_silent_about_jobs_in_their_grace_period() {
        let (mut env, on_n1) = env_with_job("");
        let start = env.now;
        env.now += 4;
        let mut two = script();
        two.required_nodes = "n2".into();
        let on_n2 = env.submit(two);
        assert_eq!(env.job(on_n2).alloc[0].node_index, 1);
        let jobs = env.ctl.snapshot().jobs;
        let report = |node: usize, ids: &[u32]| NodeJobReport {
            node,
            job_ids: ids.to_vec(),
        };
        // n1 lacks its job, n2 has its one, n3 answered and has no job.
        assert_eq!(
            recheck_due(
                &jobs,
                &[report(0, &[]), report(1, &[on_n2]), report(2, &[])],
                start + 5,
                20
            ),
            vec![(0, start + 20)]
        );
        // Both lacking: each node's own due time; a node that did not
        // report is not named.
        assert_eq!(
            recheck_due(&jobs, &[report(0, &[]), report(1, &[])], start + 5, 20),
            vec![(0, start + 20), (1, start + 24)]
        );
        assert_eq!(
            recheck_due(&jobs, &[report(1, &[])], start + 5, 20),
            vec![(1, start + 24)]
        );
        // Past the grace period the core decides at once: nothing to ask.
        assert!(recheck_due(&jobs, &[report(0, &[])], start + 20, 20).is_empty());
        assert!(env.job(on_n1).alloc[0].node_index == 0);
    }

    #[test]
    fn reconciliation_replays_to_the_same_state() {
        let (mut env, lost) = env_with_job("");
        let cancelled = env.submit(script());
        env.run(Command::Cancel {
            caller: Caller::ROOT,
            filter: v1::JobFilter {
                job_ids: vec![cancelled],
                ..Default::default()
            },
            signal: None,
        });
        env.now += 20;
        node_jobs(&mut env, &[(0, &[])]);
        assert_eq!(env.job(lost).restart_count, 1);
        assert!(!env.job(cancelled).status.is_completing());

        let replayed = replay_encoded(&format!("{CONF}SlurmdTimeout=30\n"), &env.events);
        replayed.sanity_check().unwrap();
        assert_eq!(replayed.nodes(), env.ctl.nodes());
        for id in [lost, cancelled] {
            let (a, b) = (replayed.job(id).unwrap(), env.job(id));
            assert_eq!(
                (
                    a.status,
                    a.restart_count,
                    &a.alloc,
                    a.start_time,
                    a.end_time
                ),
                (
                    b.status,
                    b.restart_count,
                    &b.alloc,
                    b.start_time,
                    b.end_time
                )
            );
        }
    }
}
