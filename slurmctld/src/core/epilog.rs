//! COMPLETING: from the end of a job to the end of its nodes' cleanup.
//!
//! A job that ends on its nodes (its batch script exits, it is cancelled,
//! times out, fails with a node or is requeued) is not done with them at
//! once. Every node of the job is told to end it (TerminateJob); slurmd
//! kills what is left there, runs the epilog and answers EpilogComplete.
//! Until a node has answered, the job keeps its share of that node: the job
//! shows `CG`, the node COMPLETING, and no other job gets the share. This is
//! Slurm's rule, and what keeps a new job from starting beside the leftovers
//! of the previous one.
//!
//! ```text
//!   RUNNING ──ends──> STATE+COMPLETING ──last share released──> STATE
//!                      (STATE: COMPLETED, FAILED, CANCELLED, TIMEOUT,
//!                       NODE_FAIL, ...; PENDING for a requeue)
//!
//!   the share of node N is released when
//!     * N sends EpilogComplete for the job; a nonzero error code means
//!       the epilog failed there: N is drained, Reason "Epilog error"
//!     * N goes DOWN or stops responding: its answer would not come, and
//!       it takes no job meanwhile
//!   every share still held is released when no node has confirmed for
//!   CtlConfig::completing_timeout_secs (a lost message; `Command::Tick`)
//! ```
//!
//! A requeued job is PENDING while it completes (`PENDING+COMPLETING`,
//! squeue `CG`) and joins the queue when its last share is released. As in
//! Slurm, its requeue delay (Reason=BeginTime) then runs again from that
//! moment: the new launch credential must be later than the revocation of
//! the old one, which the nodes have only now carried out.
//!
//! Each release is an event ([`Event::JobNodeReleased`], [`Event::JobReleased`]
//! for the fallback), so a restart knows exactly which nodes were still
//! cleaning up. The releases take no timer: a node that answers at once
//! frees its share at once.

use slurm_common::state::{JobState, NodeBaseState, NodeFlag, NodeUpdateState};
use slurm_proto::v1;

use super::{Caller, Controller, Event, JobChange, NodeRec, Outcome, Reply};

/// The Reason of a node drained because a job's epilog failed there
/// (Slurm's wording).
pub const EPILOG_ERROR_REASON: &str = "Epilog error";

/// Whether a node's EpilogComplete cannot be expected: it is DOWN or does
/// not answer.
fn unreachable(n: &NodeRec) -> bool {
    n.state.base == NodeBaseState::Down || n.state.has(NodeFlag::NotResponding)
}

impl Controller {
    /// Command::EpilogComplete: frees the node's share of the job, and
    /// drains the node when its epilog failed. A report for a job that
    /// holds nothing there (a repeat, a job already released or purged, a
    /// terminate of a job the node should not have had) changes nothing.
    pub(super) fn epilog_complete(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::EpilogCompleteRequest,
        now: i64,
    ) -> Reply {
        let node = match self.reporting_node(caller, &req.node_name) {
            Ok(node) => node,
            Err(reply) => return reply,
        };
        self.heard_from(node, now);
        if req.error_code != 0 {
            self.drain_after_epilog_error(out, node, req, now);
        } else {
            // A message from the node (`core::liveness`).
            self.return_to_service(out, node, now);
        }
        let holds = self.jobs.get(&req.job_id).is_some_and(|j| {
            j.status.is_completing() && j.alloc.iter().any(|a| a.node_index == node)
        });
        if holds {
            self.release_share_on(out, req.job_id, node, now);
        } else {
            tracing::debug!(
                job_id = req.job_id,
                node = %req.node_name,
                "epilog complete for a job that holds nothing there"
            );
        }
        Reply::Ok
    }

    fn drain_after_epilog_error(
        &mut self,
        out: &mut Outcome,
        node: usize,
        req: &v1::EpilogCompleteRequest,
        now: i64,
    ) {
        let Some(n) = self.nodes.get(node) else {
            return;
        };
        tracing::error!(
            job_id = req.job_id,
            node = %n.name,
            error_code = req.error_code,
            detail = %req.error_detail,
            "epilog failed; draining the node"
        );
        let done = n.state.has(NodeFlag::Drain) && n.reason.as_deref() == Some(EPILOG_ERROR_REASON);
        if done || n.state.apply_update(NodeUpdateState::Drain).is_err() {
            return;
        }
        let name = n.name.clone();
        self.drain_as_slurm_user(out, name, Some(EPILOG_ERROR_REASON.to_string()), now);
    }

    /// Frees the share of node `node` of completing job `job_id`.
    pub(super) fn release_share_on(
        &mut self,
        out: &mut Outcome,
        job_id: u32,
        node: usize,
        now: i64,
    ) {
        let Some(name) = self.nodes.get(node).map(|n| n.name.clone()) else {
            return;
        };
        self.emit(
            out,
            Event::JobNodeReleased {
                job_id,
                node: name,
                time: now,
            },
        );
        self.requeue_fini(out, job_id, now);
    }

    /// After a release: a requeued job that is no longer completing is
    /// back in the queue, and waits the requeue delay from `now` if its
    /// begin time is earlier than that.
    pub(super) fn requeue_fini(&mut self, out: &mut Outcome, job_id: u32, now: i64) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        if job.status.state != JobState::Pending || job.status.is_completing() {
            return;
        }
        let begin = self.requeue_begin(now);
        if job.shape.begin_time.is_some_and(|b| b >= begin) {
            return;
        }
        self.emit(
            out,
            Event::JobUpdated {
                job_id,
                changes: vec![JobChange::BeginTime(begin)],
            },
        );
    }

    /// After job `job_id` left RUNNING: tells its nodes to end it (`why` is
    /// the end slurmd reports in the job's output, if any), and releases at
    /// once the shares of nodes that cannot answer.
    pub(super) fn end_on_nodes(
        &mut self,
        out: &mut Outcome,
        job_id: u32,
        why: v1::JobState,
        now: i64,
    ) {
        self.push_terminate(out, job_id, why, now);
        self.release_unreachable_shares(out, job_id, now);
    }

    /// Releases the shares of completing job `job_id` on nodes that are
    /// DOWN or not responding.
    pub(super) fn release_unreachable_shares(&mut self, out: &mut Outcome, job_id: u32, now: i64) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        if !job.status.is_completing() {
            return;
        }
        let gone: Vec<usize> = job
            .alloc
            .iter()
            .map(|a| a.node_index)
            .filter(|&i| self.nodes.get(i).is_some_and(unreachable))
            .collect();
        for node in gone {
            self.release_share_on(out, job_id, node, now);
        }
    }

    /// Node `node` went DOWN or stopped responding: the completing jobs
    /// waiting for it are released there.
    pub(super) fn release_node_shares(&mut self, out: &mut Outcome, node: usize, now: i64) {
        let waiting: Vec<u32> = self
            .jobs
            .values()
            .filter(|j| j.status.is_completing() && j.alloc.iter().any(|a| a.node_index == node))
            .map(|j| j.id.get())
            .collect();
        for job_id in waiting {
            self.release_share_on(out, job_id, node, now);
        }
    }

    /// Ends running job `job_id` in `state` at `time` and tells its nodes.
    pub(super) fn finish_running(
        &mut self,
        out: &mut Outcome,
        job_id: u32,
        time: i64,
        state: JobState,
        exit: (u32, u32),
        reason: &str,
    ) {
        self.end_job(out, job_id, time, state, exit, reason, false);
        self.end_on_nodes(out, job_id, v1::JobState::from(state), time);
    }
}
