//! The node Prolog, as the controller sees it.
//!
//! slurmd answers a launch before its Prolog runs, so a Prolog's outcome
//! reaches the controller on a report of its own, PrologComplete
//! ([`Command::PrologComplete`]); an older slurmd refuses the launch with
//! ESLURMD_PROLOG_FAILED instead, which the agent turns into
//! [`Command::PrologFailed`], and Slurm's own slurmd sends JobComplete with
//! that error. All three end in [`Controller::prolog_failed`]:
//!
//! ```text
//! Prolog fails on node N ─▶ N drained, Reason "Prolog error" (a node out
//!                           of service keeps its state and reason)
//!                         ─▶ the job, if it still runs on N: requeued held
//!                            (JobHeldAdmin, shown as Reason
//!                            launch_failed_requeued_held), or not held with
//!                            SchedulerParameters=nohold_on_prolog_fail
//!                         ─▶ its nodes told to end it: their Epilogs run and
//!                            EpilogComplete frees their shares (core::epilog)
//! ```
//!
//! With PrologFlags=Alloc every node of a starting job is asked to run the
//! Prolog ([`Action::LaunchProlog`], sent with the batch launch; slurmd
//! starts the script only once its own node's Prolog is over) and each
//! reports success or failure; a success changes nothing here.
//!
//! What a job shows after a failed Prolog is Slurm's text, its state_desc
//! ([`LAUNCH_FAILED_HELD`]); the node's error text (program, exit status)
//! goes to the controller's log, never into the job or the node.

use slurm_common::state::{JobState, NodeFlag, NodeUpdateState};
use slurm_proto::v1;
use slurm_proto::ErrorCode;
use slurm_sched::Hold;

use super::{Action, Caller, Controller, Event, Outcome, Reply};

/// The description (Slurm's state_desc) of a job requeued held because its
/// launch failed; `scontrol show job` prints it as
/// `Reason=launch_failed_requeued_held`, squeue as it is.
pub const LAUNCH_FAILED_HELD: &str = "launch failed requeued held";

/// The reason of a node drained for a failed Prolog.
pub const PROLOG_ERROR_REASON: &str = "Prolog error";

impl Controller {
    /// Command::PrologComplete: node `req.node_name` ran its Prolog for
    /// job `req.job_id`. Only slurmd (root or SlurmUser) reports, for a
    /// node slurm.conf defines. A failure is [`Controller::prolog_failed`],
    /// for the job only while it still runs on that node (a report that
    /// comes late, or again, must not requeue a later run of the job).
    pub(super) fn prolog_complete(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::PrologCompleteRequest,
        now: i64,
    ) -> Reply {
        let node = match self.reporting_node(caller, &req.node_name) {
            Ok(i) => i,
            Err(reply) => return reply,
        };
        let job_id = req.job_id;
        if req.error_code == 0 {
            tracing::debug!(job_id, node = %req.node_name, "prolog done");
            return Reply::Ok;
        }
        let code = ErrorCode::from_number_or_unspecified(req.error_code);
        let detail = format!("{code}: {}", req.error_detail);
        let placed = self
            .jobs
            .get(&job_id)
            .is_some_and(|j| j.alloc.iter().any(|a| a.node_index == node));
        if placed {
            self.prolog_failed(out, job_id, &req.node_name, &detail, now);
        } else {
            // Drained all the same: the node failed to prepare for a job.
            tracing::error!(job_id, node = %req.node_name, %detail, "prolog failed for a job not running there");
            self.drain_for_prolog(out, &req.node_name, now);
        }
        Reply::Ok
    }

    /// The Prolog failed on `node` and the job cannot run there. As in
    /// Slurm, the node is drained with Reason "Prolog error" and the job is
    /// requeued held (JobHeldAdmin, described as "launch failed requeued
    /// held") whatever its --requeue setting, so that it neither fails for
    /// a node's fault nor starts again before an administrator has looked;
    /// with SchedulerParameters=nohold_on_prolog_fail it is requeued
    /// without the hold (and without a description), to start elsewhere
    /// once the requeue delay has passed. Its nodes are told to end it, so
    /// each runs its Epilog (cleaning up after a Prolog that failed
    /// half-way, or ending the script on a batch host whose own Prolog
    /// succeeded) and frees its share with EpilogComplete. A job that ended
    /// meanwhile (cancelled during the launch) has been told to end already
    /// and keeps waiting for its nodes. `detail` (how the Prolog failed)
    /// goes to the log.
    pub(super) fn prolog_failed(
        &mut self,
        out: &mut Outcome,
        job_id: u32,
        node: &str,
        detail: &str,
        now: i64,
    ) {
        let hold = (!self.cfg.nohold_on_prolog_fail).then_some(Hold::Admin);
        tracing::error!(
            job_id,
            %node,
            %detail,
            held = hold.is_some(),
            "prolog failed; draining the node and requeueing the job"
        );
        self.drain_for_prolog(out, node, now);
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        if job.status.state != JobState::Running || job.status.is_completing() {
            return;
        }
        self.emit(
            out,
            Event::JobRequeued {
                job_id,
                time: now,
                hold,
                // The node's fault: not counted against the job's launches.
                launch_failed: false,
                detail: if hold.is_some() {
                    LAUNCH_FAILED_HELD.to_string()
                } else {
                    String::new()
                },
                begin_time: Some(self.requeue_begin(now)),
            },
        );
        self.end_on_nodes(out, job_id, v1::JobState::Pending, now);
    }

    /// Drains `node` with Reason "Prolog error", unless it is drained (or
    /// failed) already: like Slurm, such a node keeps its state and reason,
    /// an administrator's note included.
    fn drain_for_prolog(&mut self, out: &mut Outcome, node: &str, now: i64) {
        let Some(n) = self.node_index.get(node).and_then(|&i| self.nodes.get(i)) else {
            return;
        };
        let out_of_service = n.state.has(NodeFlag::Drain) || n.state.has(NodeFlag::Fail);
        if !out_of_service && n.state.apply_update(NodeUpdateState::Drain).is_ok() {
            let name = n.name.clone();
            self.drain_as_slurm_user(out, name, Some(PROLOG_ERROR_REASON.to_string()), now);
        }
    }

    /// With PrologFlags=Alloc, the LaunchProlog action for a job that just
    /// started: every node it has, and what its Prolog is told.
    pub(crate) fn prolog_action(&self, job_id: u32) -> Option<Action> {
        if !self.cfg.prolog_alloc {
            return None;
        }
        let job = self.jobs.get(&job_id)?;
        let nodes: Vec<usize> = job.alloc.iter().map(|a| a.node_index).collect();
        if nodes.is_empty() {
            return None;
        }
        let d = &job.spec;
        let names = slurm_common::hostlist::compress(
            nodes
                .iter()
                .filter_map(|&i| self.nodes.get(i))
                .map(|n| n.name.as_str()),
        );
        Some(Action::LaunchProlog {
            job_id,
            nodes,
            request: v1::LaunchPrologRequest {
                job_id,
                user_id: job.uid,
                group_id: job.gid,
                user_name: d.user_name.to_string(),
                nodes: names,
                partition: job.partition_name.clone(),
                account: d.account.to_string(),
                work_dir: d.work_dir.to_string(),
                constraint: d.constraint.to_string(),
            },
        })
    }
}
