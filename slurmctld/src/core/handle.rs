//! Command handlers: validation with Slurm's error codes, then events.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason;
use slurm_common::state::{JobState, NodeFlag, NodeUpdateState};
use slurm_common::time::TimeLimit;
use slurm_proto::v1;
use slurm_proto::ErrorCode;
use slurm_sched::{Hold, MemReq, SubmitRejection, Unsatisfiable};

use super::job;
use super::node_attrs::NodeAttrs;
use super::{
    Action, Caller, Command, Controller, CtlConfig, Event, Job, JobChange, JobShape, JobSpec,
    Outcome, Reply, SharedSpec, SignalRequest, SignalScope, SpecText,
};
use crate::persist::{JobFiles, ScriptRef};

/// Linux's SIGKILL (signals travel as numbers; the core has no libc).
const SIGKILL: u32 = 9;
/// Linux's SIGTERM.
const SIGTERM: u32 = 15;

/// Per-job result of a multi-job operation.
type JobResult = Result<(), (ErrorCode, String)>;

/// The reason text of a job requeued held (`scontrol requeuehold`), as
/// Slurm words it; shown until the job is released.
pub const REQUEUE_HOLD_DETAIL: &str = "job requeued in held state";

/// The signal half of the exit code of a job whose input or output file
/// could not be opened, as Slurm 22.05 shows it (`ExitCode=0:53`): its
/// slurmstepd reports ESLURMD_IO_ERROR (4021) where a wait status goes,
/// whose low seven bits read as a signal.
const IO_ERROR_SIGNAL: u32 = (ErrorCode::IoError.number() as u32) & 0x7f;

impl Controller {
    /// Validates and performs one command at time `now`.
    pub fn handle(&mut self, cmd: Command, now: i64) -> Outcome {
        let mut out = Outcome::default();
        out.reply = match cmd {
            Command::Submit { caller, desc } => self.submit(&mut out, caller, *desc, now),
            Command::Cancel {
                caller,
                mut filter,
                signal,
            } => {
                let kills = signal.as_ref().is_none_or(|sig| sig.signal == SIGKILL);
                let (dropped, last) = if kills {
                    self.drop_pending_tasks(&mut out, caller, &mut filter, now)
                } else {
                    (Vec::new(), Vec::new())
                };
                let nothing_left = filter.job_ids.is_empty() && filter.array_tasks.is_empty();
                let reply = if !dropped.is_empty() && nothing_left {
                    Reply::JobResults(dropped)
                } else {
                    self.cancel_each(&mut out, caller, &filter, signal, dropped, now)
                };
                self.clear_last_tasks(&mut out, &last, now);
                reply
            }
            Command::Hold {
                caller,
                filter,
                user_hold,
            } => {
                let hold = if user_hold || !self.is_operator(caller) {
                    Hold::User
                } else {
                    Hold::Admin
                };
                let denied = ErrorCode::InvalidUserId;
                self.for_each_job_as(&mut out, caller, &filter, now, denied, |c, out, job| {
                    c.hold(out, job, hold, now)
                })
            }
            Command::Release { caller, filter } => {
                let op = self.is_operator(caller);
                let denied = ErrorCode::InvalidUserId;
                self.for_each_job_as(&mut out, caller, &filter, now, denied, |c, out, job| {
                    c.release_hold(out, job, op, now)
                })
            }
            Command::Requeue {
                caller,
                filter,
                hold,
            } => self.for_each_job(&mut out, caller, &filter, now, |c, out, job| {
                c.requeue(out, job, hold, now)
            }),
            Command::Suspend {
                caller,
                filter,
                resume,
            } => self.suspend_jobs(&mut out, caller, &filter, resume, now),
            Command::Top { caller, filter } => self.top_jobs(&mut out, caller, &filter, now),
            Command::UpdateJob { caller, request } => {
                let op = self.is_operator(caller);
                let filter = request.filter.clone().unwrap_or_default();
                let denied = ErrorCode::InvalidUserId;
                self.for_each_job_as(&mut out, caller, &filter, now, denied, |c, out, job| {
                    c.update_job(out, job, &request, op, now)
                })
            }
            Command::UpdateNode { caller, request } => {
                self.update_node(&mut out, caller, &request, now)
            }
            Command::UpdatePartition { caller, request } => {
                self.update_partition(&mut out, caller, &request, now)
            }
            Command::CreatePartition { caller, request } => {
                self.create_partition(&mut out, caller, &request, now)
            }
            Command::DeletePartition { caller, request } => {
                self.delete_partition(&mut out, caller, &request, now)
            }
            Command::RegisterNode { caller, request } => {
                self.register_node(&mut out, caller, &request, now)
            }
            Command::JobComplete { caller, request } => {
                self.job_complete(&mut out, caller, &request, now)
            }
            Command::EpilogComplete { caller, request } => {
                self.epilog_complete(&mut out, caller, &request, now)
            }
            Command::PrologComplete { caller, request } => {
                self.prolog_complete(&mut out, caller, &request, now)
            }
            Command::LaunchFailed { job_id, detail } => {
                self.launch_failed(&mut out, job_id, detail, now);
                Reply::None
            }
            Command::PrologFailed {
                job_id,
                node,
                detail,
            } => {
                self.prolog_failed(&mut out, job_id, &node, &detail, now);
                Reply::None
            }
            Command::Tick => {
                self.request_schedule();
                self.tick(&mut out, now);
                self.down_silent_nodes(&mut out, now);
                Reply::None
            }
            Command::Reconfigure { caller, conf } => {
                if !self.is_operator(caller) {
                    Reply::error(ErrorCode::AccessDenied, "")
                } else {
                    let mut cfg = CtlConfig::from_conf(&conf, self.cfg.operators.clone());
                    // Resolved by the shell at start-up (a user name needs
                    // a lookup the core does not make).
                    cfg.slurm_user_uid = self.cfg.slurm_user_uid;
                    match self.reconfigure(&conf, cfg) {
                        Ok(summary) => {
                            // Updates of partitions stay only as far as
                            // ReconfigFlags says; journaled so that a
                            // replay drops them too.
                            let kept = super::partition::kept_on_reconfigure(&conf);
                            let updated = self.partitions.iter().any(|p| p.update.is_some());
                            if let (true, Some(keep)) = (updated, kept.clone()) {
                                self.emit(&mut out, Event::PartitionUpdatesReset { keep });
                            }
                            // So do created partitions (KeepPartInfo only);
                            // deleted slurm.conf partitions come back.
                            let keep_created = kept.is_none();
                            if self.partition_table_differs(keep_created) {
                                self.emit(&mut out, Event::PartitionTableReset { keep_created });
                            }
                            // So do node features and weights (never kept).
                            if self.any_node_overrides_config() {
                                self.emit(&mut out, Event::NodeAttrsReset);
                            }
                            tracing::info!(
                                partitions = summary.partitions,
                                orphaned_jobs = ?summary.orphaned_jobs,
                                "reconfigured"
                            );
                            out.actions.push(Action::ReconfigureNodes {
                                nodes: (0..self.nodes.len()).collect(),
                            });
                            Reply::Ok
                        }
                        Err(e) => Reply::error(ErrorCode::NotSupported, e.to_string()),
                    }
                }
            }
            Command::NodeResponses { answered, silent } => {
                self.node_responses(&mut out, &answered, &silent, now);
                Reply::None
            }
            Command::NodeJobs { asked_at, reports } => {
                self.node_jobs(&mut out, asked_at, &reports, now);
                Reply::None
            }
            Command::NodeLoads { reports } => {
                self.node_loads(&reports);
                Reply::None
            }
        };
        out
    }

    // ---------------------------------------------------------------- submit

    fn submit(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        desc: v1::JobDescription,
        now: i64,
    ) -> Reply {
        match self.check_submit(caller, desc, now) {
            Err(reply) => {
                // Slurm checks features and the reservation once the job's
                // record is made, so these refusals use up an id (but no
                // priority number); the others come before and use none.
                let late = matches!(
                    reply,
                    Reply::Error {
                        code: ErrorCode::InvalidFeature | ErrorCode::ReservationInvalid,
                        ..
                    }
                );
                if let Some(job_id) = self.free_job_id().filter(|_| late) {
                    self.emit(
                        out,
                        Event::JobIdTaken {
                            job_id,
                            priority: None,
                        },
                    );
                }
                reply
            }
            Ok((mut desc, partition, partition_list, uid, gid, fails)) => {
                let Some(job_id) = self.free_job_id() else {
                    return Reply::error(ErrorCode::Internal, "no free job id");
                };
                if let Err(reply) = self.submitted_dependency(&mut desc, job_id, uid, now) {
                    return reply;
                }
                if desc.test_only {
                    // As Slurm, a trial that got this far uses up the id
                    // and the priority number, whether the job would fit
                    // or not.
                    let priority =
                        (desc.priority.is_none() && !desc.hold).then_some(self.next_priority);
                    self.emit(out, Event::JobIdTaken { job_id, priority });
                    if let Some(reply) = fails {
                        // Without the detail line a real submission gets.
                        return match reply {
                            Reply::Error { code, .. } => Reply::error(code, ""),
                            other => other,
                        };
                    }
                    return self.estimate(&desc, job_id, partition, &partition_list, now);
                }
                let priority = match desc.priority {
                    Some(p) => p,
                    None => self.next_priority,
                };
                if desc.switches.is_some() {
                    // The wait is granted here, so that replay reads it.
                    let max = self.cfg.max_switch_wait_secs;
                    desc.switch_wait_seconds =
                        Some(desc.switch_wait_seconds.map_or(max, |w| w.min(max)));
                }
                let files = JobFiles::new(job_id, &desc.script, &desc.environment, |len| {
                    self.scripts.place(len)
                });
                desc.script = String::new();
                desc.environment = Vec::new();
                let event = Event::JobSubmitted {
                    job_id,
                    time: now,
                    uid,
                    gid,
                    partition: partition_list,
                    priority,
                    desc: Box::new(desc),
                    files: files.at,
                };
                if self.emit(out, event) {
                    out.job_files.push(files);
                    if let Some(reply) = fails {
                        // As Slurm 22.05: the job is recorded, then fails
                        // at once (FAILED, BadConstraints, ExitCode 0:1),
                        // and the submission is refused.
                        self.end_job(
                            out,
                            job_id,
                            now,
                            JobState::Failed,
                            (0, 1),
                            PendingReason::BadConstraints.as_str(),
                            true,
                        );
                        return reply;
                    }
                    Reply::Submitted {
                        job_id,
                        estimate: None,
                    }
                } else {
                    Reply::error(ErrorCode::Internal, "job could not be recorded")
                }
            }
        }
    }

    /// Everything Slurm refuses at submission. On success: the description
    /// to store (uid/gid resolved), the index of its first partition, its
    /// partition list (`a,b`), uid, gid, and the refusal of a job no node
    /// configuration can run, which Slurm records (as FAILED) before it
    /// refuses it.
    #[allow(clippy::type_complexity)]
    fn check_submit(
        &self,
        caller: Caller,
        mut desc: v1::JobDescription,
        now: i64,
    ) -> Result<(v1::JobDescription, usize, String, u32, u32, Option<Reply>), Reply> {
        let op = self.is_operator(caller);
        if desc.script.trim().is_empty() {
            return Err(Reply::error(ErrorCode::JobScriptMissing, ""));
        }
        let (uid, gid) = if op {
            (desc.user_id, desc.group_id)
        } else if desc.user_id == caller.uid || desc.user_id == 0 {
            (caller.uid, caller.gid)
        } else {
            return Err(Reply::error(
                ErrorCode::AccessDenied,
                format!(
                    "user {} may not submit jobs as user {}",
                    caller.uid, desc.user_id
                ),
            ));
        };
        desc.user_id = uid;
        desc.group_id = gid;
        // As Slurm: mail goes to the submitter unless --mail-user says
        // otherwise, and without accounting storage no QOS is kept.
        if desc.mail_user.is_empty() && !desc.mail_type.is_empty() {
            desc.mail_user = desc.user_name.clone();
        }
        if !self.cfg.accounting {
            desc.qos = String::new();
        }
        if desc.priority.is_some() && !op {
            return Err(Reply::error(ErrorCode::AccessDenied, ""));
        }
        if desc.nice.is_some_and(|n| n < 0) && !op {
            return Err(Reply::error(ErrorCode::AccessDenied, ""));
        }
        // `-p a,b`: every name must exist; the job may run in any of them.
        let partitions: Vec<usize> = if desc.partitions.is_empty() {
            vec![self
                .default_part
                .ok_or_else(|| Reply::error(ErrorCode::DefaultPartitionNotSet, ""))?]
        } else {
            let mut chosen = Vec::new();
            for name in desc.partitions.iter().flat_map(|p| job::partition_names(p)) {
                match self.part_index.get(name) {
                    Some(&i) => {
                        if !chosen.contains(&i) {
                            chosen.push(i);
                        }
                    }
                    None => {
                        return Err(Reply::error(
                            ErrorCode::InvalidPartitionName,
                            format!("invalid partition specified: {name}"),
                        ))
                    }
                }
            }
            if chosen.is_empty() {
                return Err(Reply::error(ErrorCode::InvalidPartitionName, ""));
            }
            chosen
        };
        let partition = partitions[0];
        // DisableRootJobs (slurm.conf, or the partition's): root's jobs are
        // refused as Slurm refuses them.
        if desc.user_id == 0
            && (self.cfg.disable_root_jobs
                || partitions
                    .iter()
                    .any(|&p| self.partitions[p].conf.disable_root_jobs))
        {
            tracing::info!("DisableRootJobs: root's job refused");
            return Err(Reply::error(ErrorCode::InvalidUserId, ""));
        }
        // RootOnly: only root and SlurmUser may submit there.
        if caller.uid != 0
            && !self.cfg.operators.contains(&caller.uid)
            && partitions
                .iter()
                .any(|&p| self.partitions[p].conf.root_only)
        {
            tracing::info!(uid = caller.uid, "RootOnly partition: submission refused");
            return Err(Reply::error(ErrorCode::AccessDenied, ""));
        }
        // AllowGroups: the job's user must be in one of the groups of each
        // partition it names; root and SlurmUser may use any (the shell
        // looked the user's groups up, `rpc::add_user_groups`).
        if uid != 0 && !self.cfg.operators.contains(&uid) {
            let denied = partitions.iter().find(|&&p| {
                self.partitions[p]
                    .conf
                    .allow_groups
                    .as_ref()
                    .is_some_and(|allowed| {
                        !slurm_common::users::allows_groups(allowed, &desc.user_groups)
                    })
            });
            if let Some(&p) = denied {
                tracing::info!(
                    uid,
                    partition = self.partitions[p].name(),
                    "AllowGroups: no group of the user may use the partition"
                );
                return Err(Reply::error(ErrorCode::PartitionGroupDenied, ""));
            }
        }
        // Looked at here only: not part of the job.
        desc.user_groups.clear();
        if slurm_proto::convert::time_limit("time_limit", desc.time_limit.as_ref()).is_err() {
            return Err(Reply::error(ErrorCode::InvalidTimeLimit, ""));
        }
        // Slurm's submission reply names no node: `sbatch -w nosuchnode`
        // prints only "Invalid node name specified".
        for expr in [&desc.required_nodes, &desc.excluded_nodes] {
            if let Err(bad) = self.node_list(expr) {
                tracing::info!(node = %bad, "job asks for a node that does not exist");
                return Err(Reply::error(ErrorCode::InvalidNodeName, ""));
            }
        }
        // So is a node both named and excluded (`-w vm -x vm`), as in Slurm
        // 22.05, held job or not.
        let excluded = self.node_list(&desc.excluded_nodes).unwrap_or_default();
        let required = self.node_list(&desc.required_nodes).unwrap_or_default();
        if let Some(&i) = required.iter().find(|i| excluded.contains(i)) {
            tracing::info!(node = %self.nodes[i].name, "job both requires and excludes a node");
            return Err(Reply::error(ErrorCode::InvalidNodeName, ""));
        }
        if desc.batch_features.is_some() && !self.batch_features_valid(&desc) {
            return Err(Reply::error(ErrorCode::BatchConstraint, ""));
        }
        if !desc.constraint.is_empty() && slurm_sched::Constraint::parse(&desc.constraint).is_err()
        {
            return Err(Reply::error(ErrorCode::InvalidFeature, ""));
        }
        // (A `--prefer` that does not parse is an invalid feature
        // specification too; one naming unknown features is refused with
        // a message of its own, by the scheduler's admission.)
        if !desc.prefer.is_empty() && slurm_sched::Constraint::parse(&desc.prefer).is_err() {
            return Err(Reply::error(ErrorCode::InvalidFeature, ""));
        }
        // Slurm keeps (and shows) the older `a,b` as `a&b`.
        if desc.constraint.contains(',') {
            desc.constraint = slurm_sched::constraint::as_kept(&desc.constraint);
        }
        // As Slurm 22.05: a minimum of 0 with room for a node (`-N 0-2`)
        // runs on one node at least. No node at all (`-N 0`) is held when
        // asked (to wait with BadConstraints once released) and otherwise
        // recorded FAILED (`check_partition_fit`).
        if desc.min_nodes == Some(0) && desc.max_nodes.is_none() {
            return Err(Reply::error(ErrorCode::InvalidNodeCount, ""));
        }
        // --spread-job without a node count, as Slurm 22.05 sets it: at most
        // as many nodes as tasks, and as the partition has.
        if desc.spread_job && desc.max_nodes.is_none() {
            if let Some(ntasks) = desc.ntasks {
                let nodes = self
                    .partitions
                    .get(partition)
                    .map_or(0, |p| p.view.nodes.len());
                let most = ntasks.min(u32::try_from(nodes).unwrap_or(u32::MAX)).max(1);
                desc.max_nodes = Some(most);
                if desc.min_nodes.is_some_and(|m| m > most) {
                    desc.min_nodes = Some(most);
                }
            }
        }
        // --reservation, --licenses, --signal, --deadline, --gpus* (`core::extras`).
        self.check_submit_options(&mut desc, partition, now)?;
        let mut records = 1;
        if !desc.array_spec.is_empty() {
            match super::array::parse(&desc.array_spec, self.cfg.max_array_size) {
                Ok(spec) => records = spec.tasks.len().max(1),
                Err(e) => {
                    tracing::info!(array = %desc.array_spec, error = %e, "job array refused");
                    return Err(Reply::error(ErrorCode::InvalidArray, ""));
                }
            }
        }
        // As Slurm: each task of an array counts, this submission's and
        // those the queued arrays still hold in their meta records, though
        // a task's record is made only when it starts (`array::counted`).
        let max = usize::try_from(self.cfg.max_job_count).unwrap_or(usize::MAX);
        if !desc.test_only && self.job_count.saturating_add(records) > max {
            tracing::info!(
                jobs = self.job_count,
                records,
                max,
                "MaxJobCount limit reached"
            );
            return Err(Reply::error(ErrorCode::TryAgain, ""));
        }
        // A job listed in several partitions is refused only if no one of
        // them could ever run it, with what the first one says.
        let view = self.cluster_view();
        let mut first_refusal = None;
        for &part in &partitions {
            match self.check_partition_fit(&view, &desc, part, uid, gid) {
                Ok(()) => {
                    first_refusal = None;
                    break;
                }
                Err(refusal) => {
                    first_refusal.get_or_insert(refusal);
                }
            }
        }
        let fails = match first_refusal {
            None => None,
            Some((reply, true)) => Some(reply),
            Some((reply, false)) => return Err(reply),
        };
        let names: Vec<&str> = partitions
            .iter()
            .map(|&i| self.partitions[i].name())
            .collect();
        Ok((desc, partition, names.join(","), uid, gid, fails))
    }

    /// Whether partition `part` could ever run the job `desc` describes:
    /// its nodes have the GRES asked for, and the scheduler's admission
    /// rules accept it there. A refusal comes with whether Slurm records
    /// the job first: it does when no node offers the memory, `--tmp`,
    /// `--mincpus` or size asked for (its node selection fails), not for
    /// a refusal of its request as such.
    fn check_partition_fit(
        &self,
        view: &slurm_sched::ClusterView,
        desc: &v1::JobDescription,
        part: usize,
        uid: u32,
        gid: u32,
    ) -> Result<(), (Reply, bool)> {
        // Slurm prints no more than the code's text for either refusal.
        match self.check_gres(&desc.gres, &self.partitions[part].view.nodes) {
            Ok(None) => {}
            Ok(Some(_)) => {
                tracing::info!(gres = %desc.gres, "no node of the partition has the gres asked for");
                return Err((
                    Reply::error(ErrorCode::RequestedNodeConfigUnavailable, ""),
                    false,
                ));
            }
            Err(e) => {
                tracing::info!(gres = %desc.gres, error = %e, "invalid gres request");
                return Err((Reply::error(ErrorCode::InvalidGres, ""), false));
            }
        }
        if desc.max_nodes == Some(0) {
            // Slurm records the job and fails it: no node selection can
            // give it no node. Held, it waits (BadConstraints once
            // released; the scheduler never places it).
            if desc.hold {
                return Ok(());
            }
            return Err((Reply::error(ErrorCode::InvalidNodeCount, ""), true));
        }
        // The same resolution replay will do, checked by the scheduler's
        // admission rules.
        let probe = self.probe_job(desc, part, uid, gid);
        let request = self.job_request(&probe);
        match slurm_sched::check_submit(view, &request) {
            // As Slurm 22.05: a job submitted held is not tried against
            // the nodes until its release (then it waits with
            // BadConstraints); its node names and partition still count.
            Err(SubmitRejection::NodeConfigUnavailable { cause, .. })
                if desc.hold
                    && !matches!(
                        cause,
                        Unsatisfiable::RequiredNode | Unsatisfiable::UnknownNode
                    ) =>
            {
                Ok(())
            }
            Err(r @ SubmitRejection::NodeConfigUnavailable { cause, .. }) => {
                let recorded = !matches!(
                    cause,
                    Unsatisfiable::RequiredNode | Unsatisfiable::UnknownNode
                );
                Err((rejection_reply(&r), recorded))
            }
            other => other.map_err(|r| (rejection_reply(&r), false)),
        }
    }

    /// `--batch`: features of the batch host, which must exist and all be
    /// named in the job's `--prefer`, or its `--constraint` without one, as
    /// Slurm 22.05 checks (it also refuses the comma there).
    fn batch_features_valid(&self, desc: &v1::JobDescription) -> bool {
        let batch = desc.batch_features.as_deref().unwrap_or_default();
        let within = if desc.prefer.is_empty() {
            &desc.constraint
        } else {
            &desc.prefer
        };
        if within.is_empty() || batch.contains(',') {
            return false;
        }
        let (Ok(batch), Ok(within)) = (
            slurm_sched::Constraint::parse(batch),
            slurm_sched::Constraint::parse(within),
        ) else {
            return false;
        };
        let names = within.feature_names();
        let exists = |f: &str| {
            self.nodes
                .iter()
                .any(|n| n.active_features().iter().any(|g| g.as_str() == f))
        };
        batch
            .feature_names()
            .iter()
            .all(|f| names.contains(f) && exists(f))
    }

    fn probe_job(&self, desc: &v1::JobDescription, partition: usize, uid: u32, gid: u32) -> Job {
        Job {
            id: JobId::new(0),
            uid,
            gid,
            spec: SharedSpec::new(Arc::new(JobSpec::from_desc(desc)), ScriptRef::default()),
            name: desc.name.clone(),
            partition: Some(partition),
            partition_name: String::new(),
            shape: JobShape::from_desc(desc),
            status: slurm_common::state::JobStatus::pending(),
            reason: PendingReason::None,
            reason_detail: String::new(),
            base_priority: 1,
            nice: 0,
            hold: None,
            requeue: false,
            restart_count: 0,
            launch_failures: 0,
            comment: String::new(),
            submit_time: 0,
            eligible_time: 0,
            start_time: 0,
            end_time: 0,
            last_sched_eval: 0,
            run_limit: None,
            exit_status: 0,
            exit_signal: 0,
            alloc: Box::default(),
            exclusive_alloc: false,
            last_alloc: Box::default(),
            cpu_ids: Box::default(),
            last_cpu_ids: Box::default(),
            signal_sent: false,
            suspend: None,
            resize: None,
            dependency: None,
            array: None,
        }
    }

    /// --test-only: where and when the job would start if submitted now,
    /// under `job_id`, the id a submission would get now (Slurm's
    /// `sbatch: Job 5 to start at ...`).
    fn estimate(
        &self,
        desc: &v1::JobDescription,
        job_id: u32,
        partition: usize,
        partition_list: &str,
        now: i64,
    ) -> Reply {
        let mut probe = self.probe_job(desc, partition, desc.user_id, desc.group_id);
        partition_list.clone_into(&mut probe.partition_name);
        let mut request = self.job_request(&probe);
        // Behind every job already waiting, as a new submission would be.
        request.id = slurm_common::ids::JobId::new(job_id);
        request.priority = 0;
        request.submit_time = now;
        let Some(est) = self.test_only_estimate(request, now) else {
            // As Slurm: a job that could never start here is refused.
            return Reply::error(ErrorCode::RequestedNodeConfigUnavailable, String::new());
        };
        Reply::Submitted {
            job_id,
            estimate: Some(v1::StartEstimate {
                start_time: est.start_time,
                nodes: slurm_common::hostlist::compress(
                    est.nodes
                        .iter()
                        .filter_map(|a| self.nodes.get(a.node_index))
                        .map(|n| n.name.as_str()),
                ),
                cpus: u32::try_from(est.total_cpus()).unwrap_or(u32::MAX),
                partition: self.partitions[est.partition].name().to_string(),
                preempted_job_ids: Vec::new(),
            }),
        }
    }

    pub(super) fn free_job_id(&self) -> Option<u32> {
        let mut id = self.next_job_id;
        let span = self.cfg.max_job_id.saturating_sub(self.cfg.first_job_id);
        for _ in 0..=span {
            if !self.jobs.contains_key(&id) {
                return Some(id);
            }
            id = self.id_after(id);
        }
        None
    }

    // ------------------------------------------------------ job operations

    /// Resolves `filter` and runs `op` on each job the caller may touch;
    /// another user's job named is "Access/permission denied".
    pub(super) fn for_each_job(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        filter: &v1::JobFilter,
        now: i64,
        op: impl FnMut(&mut Controller, &mut Outcome, u32) -> JobResult,
    ) -> Reply {
        self.for_each_job_as(out, caller, filter, now, ErrorCode::AccessDenied, op)
    }

    /// [`Controller::for_each_job`], another user's job named answered with
    /// `denied` (Slurm answers an update, a hold or a release of one with
    /// "Invalid user id").
    pub(super) fn for_each_job_as(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        filter: &v1::JobFilter,
        now: i64,
        denied: ErrorCode,
        mut op: impl FnMut(&mut Controller, &mut Outcome, u32) -> JobResult,
    ) -> Reply {
        let op_caller = self.is_operator(caller);
        let mut results = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        for &id in &filter.job_ids {
            // An array's id names every record of the array (looked for
            // only when the id is an array's, or names no record).
            let plain = self
                .jobs
                .get(&id)
                .map(|j| j.array.as_ref().is_none_or(|a| a.array_job_id != id));
            let members = match plain {
                Some(true) => Vec::new(),
                _ => self.array_records(out, id, None, now),
            };
            if !members.is_empty() {
                ids.extend(members);
            } else if plain.is_some() {
                ids.push(id);
            } else {
                results.push(result(id, Err((ErrorCode::InvalidJobId, String::new()))));
            }
        }
        for sel in &filter.array_tasks {
            let tasks = if sel.task_spec.is_empty() {
                None
            } else {
                match super::array::parse_ranges(&sel.task_spec) {
                    Ok(ranges) => Some(ranges),
                    Err(_) => {
                        results.push(result(
                            sel.array_job_id,
                            Err((ErrorCode::InvalidJobId, String::new())),
                        ));
                        continue;
                    }
                }
            };
            // Picking one pending task splits it off: only for those who
            // may act on the array (its records all have one owner).
            let owner = self
                .jobs
                .values()
                .find_map(|j| super::array::is_member(j, sel.array_job_id, None).then_some(j.uid));
            if owner.is_some_and(|uid| uid != caller.uid && !op_caller) {
                results.push(result(sel.array_job_id, Err((denied, String::new()))));
                continue;
            }
            let found: Vec<u32> = match tasks {
                None => self.array_records(out, sel.array_job_id, None, now),
                Some(ranges) => {
                    let tasks = self.array_task_ids(sel.array_job_id, |t| ranges.contains(t));
                    tasks
                        .into_iter()
                        .flat_map(|t| self.array_records(out, sel.array_job_id, Some(t), now))
                        .collect()
                }
            };
            if found.is_empty() {
                results.push(result(
                    sel.array_job_id,
                    Err((ErrorCode::InvalidJobId, String::new())),
                ));
            }
            ids.extend(found);
        }
        let named = !filter.job_ids.is_empty() || !filter.array_tasks.is_empty();
        if !named {
            if !super::filter::has_criteria(filter) {
                return Reply::error(ErrorCode::InvalidJobId, "no job selected");
            }
            ids = self.jobs.keys().copied().collect();
        }
        ids.sort_unstable();
        ids.dedup();
        // Names that are not nodes match no node (and so no job).
        let filter_nodes: Vec<usize> = slurm_common::hostlist::expand(&filter.nodelist)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| self.node_index.get(n).copied())
            .collect();
        for id in ids {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            if !super::filter::selects(job, filter, &filter_nodes) {
                continue;
            }
            if job.uid != caller.uid && !op_caller {
                if named {
                    results.push(result(id, Err((denied, String::new()))));
                }
                continue;
            }
            // An array task answers as ArrayJobId_TaskId.
            let (shown, task) = match job.array.as_deref() {
                Some(a) if a.task.is_some() => (a.array_job_id, a.task),
                _ => (id, None),
            };
            let r = op(self, out, id);
            results.push(v1::JobActionResult {
                array_task_id: task,
                ..result(shown, r)
            });
        }
        // In the order the ids were named (Slurm answers `release
        // 99999,11` for 99999 first), else by id.
        results.sort_by_key(|r| r.job_id);
        if named {
            let place = |id: u32| filter.job_ids.iter().position(|&n| n == id);
            results.sort_by_key(|r| place(r.job_id).unwrap_or(usize::MAX));
        }
        Reply::JobResults(results)
    }

    /// `scancel` of the jobs `filter` selects; `dropped` are the pending
    /// array tasks already cancelled out of their meta records
    /// ([`Controller::drop_pending_tasks`]), answered with the rest.
    fn cancel_each(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        filter: &v1::JobFilter,
        signal: Option<SignalRequest>,
        dropped: Vec<v1::JobActionResult>,
        now: i64,
    ) -> Reply {
        let reply = self.for_each_job(out, caller, filter, now, |c, out, job| match signal {
            // SIGKILL, unless for the batch shell alone of a job that
            // runs, cancels the job as a plain scancel does (Slurm's
            // rule: `scancel -b` of a pending job cancels it).
            None => c.cancel(out, job, now),
            Some(sig)
                if sig.signal == SIGKILL
                    && (sig.scope != SignalScope::BatchShell || c.is_pending(job)) =>
            {
                c.cancel(out, job, now)
            }
            Some(sig) => c.signal(out, job, sig),
        });
        match reply {
            Reply::JobResults(mut results) if !dropped.is_empty() => {
                results.extend(dropped);
                results.sort_by_key(|r| (r.job_id, r.array_task_id));
                Reply::JobResults(results)
            }
            other => other,
        }
    }

    fn cancel(&mut self, out: &mut Outcome, id: u32, now: i64) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        // A pending job keeps the reason it last waited for
        // (`scontrol show job` of a held job cancelled: Reason=JobHeldUser).
        let reason = job.reason.as_str();
        match job.status.state {
            JobState::Pending if !job.status.is_completing() => {
                self.end_job(out, id, now, JobState::Cancelled, (0, 0), reason, true);
                Ok(())
            }
            JobState::Pending => {
                // Requeued, and its nodes still clean up after the last
                // run: as in Slurm it is CANCELLED at once instead of going
                // back to the queue, and stays COMPLETING until those nodes
                // report (they were told to end it when it was requeued).
                self.end_job(out, id, now, JobState::Cancelled, (0, 0), "None", false);
                Ok(())
            }
            JobState::Running | JobState::Suspended => {
                // Slurm records the SIGTERM that ends it: ExitCode=0:15.
                self.finish_running(out, id, now, JobState::Cancelled, (0, SIGTERM), "None");
                Ok(())
            }
            _ => Err((ErrorCode::AlreadyDone, String::new())),
        }
    }

    /// `scancel -s`: the batch shell runs on the first node of the
    /// allocation; steps (and with `-f` the shell's children) may run on
    /// every node, whose slurmd picks the processes by the flags.
    fn signal(&mut self, out: &mut Outcome, id: u32, sig: SignalRequest) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        match job.status.state {
            JobState::Running | JobState::Suspended => {
                let batch_only = sig.scope == SignalScope::BatchShell;
                let nodes = if batch_only {
                    job.alloc.iter().take(1).map(|a| a.node_index).collect()
                } else {
                    job.alloc.iter().map(|a| a.node_index).collect()
                };
                out.actions.push(Action::SignalJob {
                    job_id: id,
                    nodes,
                    request: v1::NodeSignalJobRequest {
                        job_id: id,
                        step_id: None,
                        signal: sig.signal,
                        batch_only,
                        full: sig.scope == SignalScope::Full,
                    },
                });
                Ok(())
            }
            // Only SIGKILL (a cancel, above) acts on a job that waits;
            // Slurm answers any other signal this way (scancel retries it,
            // then exits 228).
            JobState::Pending => Err((ErrorCode::TransitionStateNoUpdate, String::new())),
            _ => Err((ErrorCode::AlreadyDone, String::new())),
        }
    }

    /// Whether job `id` exists and waits in the queue.
    fn is_pending(&self, id: u32) -> bool {
        self.jobs
            .get(&id)
            .is_some_and(|j| j.status.state == JobState::Pending)
    }

    /// Whether a waiting job asks more CPUs than its partition gives in
    /// all ([`slurm_sched::partition_cpus`]): Slurm's
    /// ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE when it is changed, held or
    /// released.
    pub(crate) fn beyond_partition_cpus(&self, job: &Job) -> bool {
        let Some(part) = job.partition.and_then(|p| self.partitions.get(p)) else {
            return false;
        };
        if job.status.state != JobState::Pending {
            return false;
        }
        let node_cpus = part
            .view
            .nodes
            .iter()
            .filter_map(|&i| self.nodes.get(i))
            .map(|n| n.cpus);
        u64::from(job.pending_cpus())
            > slurm_sched::partition_cpus(node_cpus, part.view.max_cpus_per_node)
    }

    /// The answer to a change of job `id` just made: as Slurm 22.05, a
    /// waiting job beyond its partition's CPUs takes the change and says
    /// it cannot run.
    fn changed(&self, id: u32) -> JobResult {
        match self.jobs.get(&id) {
            Some(job) if self.beyond_partition_cpus(job) => {
                Err((ErrorCode::RequestedPartConfigUnavailable, String::new()))
            }
            _ => Ok(()),
        }
    }

    /// `scontrol hold|uhold`. As in Slurm a job that runs (or is suspended)
    /// may be held too: its priority becomes 0 and its Reason shows the
    /// hold while it goes on running, so that a requeue would leave it
    /// waiting. A job that has ended is refused with ESLURM_JOB_FINISHED.
    fn hold(&mut self, out: &mut Outcome, id: u32, hold: Hold, now: i64) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        if job.status.state.is_finished() {
            return Err((ErrorCode::JobFinished, String::new()));
        }
        if job.hold != Some(hold) {
            self.emit(
                out,
                Event::JobHoldChanged {
                    job_id: id,
                    hold: Some(hold),
                    time: Some(now),
                },
            );
        }
        self.changed(id)
    }

    /// `scontrol release`, of a waiting or a running job alike (see
    /// [`Self::hold`]). As in Slurm 22.05, a waiting job that is not held
    /// is given a new priority too (the next number down), and its reason
    /// is cleared; a running one is left as it is.
    fn release_hold(&mut self, out: &mut Outcome, id: u32, operator: bool, now: i64) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        if job.status.state.is_finished() {
            return Err((ErrorCode::JobFinished, String::new()));
        }
        let waits = job.status.state == JobState::Pending && !job.status.is_completing();
        match job.hold {
            None if !waits => Ok(()),
            Some(Hold::Admin) if !operator => Err((ErrorCode::AccessDenied, String::new())),
            Some(_) | None => {
                self.emit(
                    out,
                    Event::JobHoldChanged {
                        job_id: id,
                        hold: None,
                        time: Some(now),
                    },
                );
                self.changed(id)
            }
        }
    }

    /// scontrol requeue / requeuehold, with Slurm's rules: a job that may
    /// not be requeued (`--no-requeue`, or its partition is gone) is
    /// refused with ESLURM_DISABLED, a pending one (also one requeued
    /// already and still completing) with ESLURM_JOB_PENDING. Any other
    /// state goes back to the queue: a running job through COMPLETING, a
    /// finished one whose nodes still clean up at once but keeping its
    /// shares until they report (`core::epilog`), a finished one that is
    /// done with its nodes at once. Each waits out the requeue delay
    /// (Reason=BeginTime), counted again from the end of its cleanup.
    fn requeue(&mut self, out: &mut Outcome, id: u32, hold: bool, now: i64) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        // An array record whose tasks were all cancelled out of it has
        // nothing left to run.
        let emptied = job
            .array
            .as_deref()
            .is_some_and(|a| a.is_meta() && a.pending.is_empty());
        if !job.requeue || job.partition.is_none() || emptied {
            return Err((ErrorCode::Disabled, String::new()));
        }
        if job.status.state == JobState::Pending {
            return Err((ErrorCode::JobPending, String::new()));
        }
        let running = job.status.state.holds_resources();
        // A suspended job requeued is held, as in Slurm (`core::suspend`),
        // and so is one held while it ran (`scontrol hold`).
        let held = if hold {
            Some(Hold::User)
        } else {
            job.hold
                .or((job.status.state == JobState::Suspended).then_some(Hold::Admin))
        };
        self.emit(
            out,
            Event::JobRequeued {
                job_id: id,
                time: now,
                hold: held,
                launch_failed: false,
                // Slurm's text for the reason of a requeuehold.
                detail: if hold {
                    REQUEUE_HOLD_DETAIL.to_string()
                } else {
                    String::new()
                },
                begin_time: Some(self.requeue_begin(now)),
            },
        );
        if running {
            self.end_on_nodes(out, id, v1::JobState::Pending, now);
        }
        Ok(())
    }

    fn update_job(
        &mut self,
        out: &mut Outcome,
        id: u32,
        req: &v1::UpdateJobRequest,
        operator: bool,
        now: i64,
    ) -> JobResult {
        let Some(job) = self.jobs.get(&id) else {
            return Err((ErrorCode::InvalidJobId, String::new()));
        };
        let pending = job.status.state == JobState::Pending;
        // Slurm 22.05: "Job has already finished".
        if job.status.state.is_finished() && !pending {
            return Err((ErrorCode::JobFinished, String::new()));
        }
        // No reservation exists yet: any name is an unknown one, and
        // clearing one changes nothing.
        if req
            .reservation
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty())
        {
            return Err((ErrorCode::ReservationInvalid, String::new()));
        }
        let mut changes = Vec::new();
        let current_limit =
            || super::effective_limit(job, job.partition.and_then(|p| self.partitions.get(p)));
        let limit = match (req.time_limit.as_ref(), req.time_limit_change_minutes) {
            (Some(_), Some(_)) => return Err((ErrorCode::InvalidTimeLimit, String::new())),
            (Some(limit), None) => Some(
                slurm_proto::convert::time_limit("time_limit", Some(limit))
                    .ok()
                    .flatten()
                    .ok_or((ErrorCode::InvalidTimeLimit, String::new()))?,
            ),
            (None, Some(delta)) => Some(changed_limit(current_limit(), delta)?),
            (None, None) => None,
        };
        if let Some(limit) = limit {
            if !operator && limit > current_limit() {
                return Err((ErrorCode::AccessDenied, String::new()));
            }
            // Not under the job's --time-min (one changed with it is
            // checked against the new limit below).
            let time_min = req
                .time_min_minutes
                .or(job.spec.extras().time_min_minutes)
                .filter(|m| *m > 0);
            if let (Some(m), Some(secs)) = (time_min, limit.as_secs()) {
                if u64::from(m).saturating_mul(60) > secs {
                    return Err((ErrorCode::InvalidTimeMin, String::new()));
                }
            }
            changes.push(JobChange::TimeLimit(limit));
        }
        // A started job keeps its partition: naming the one it runs in is
        // no change, as Slurm takes it; another is refused.
        let same_partition = req
            .partition
            .as_deref()
            .is_some_and(|p| !pending && p.trim() == job.partition_name);
        if let Some(p) = req.partition.as_ref().filter(|_| !same_partition) {
            if !pending {
                return Err((ErrorCode::JobNotPending, String::new()));
            }
            // `Partition=a,b` lists several, as `sbatch -p` does.
            let names: Vec<&str> = job::partition_names(p).collect();
            if names.is_empty() || names.iter().any(|n| !self.part_index.contains_key(*n)) {
                return Err((ErrorCode::InvalidPartitionName, String::new()));
            }
            changes.push(JobChange::Partition(names.join(",")));
        }
        // The nodes a running job gives up (`NumNodes=` below its count).
        let mut dropped: Vec<usize> = Vec::new();
        if !pending && (req.min_nodes.is_some() || req.max_nodes.is_some()) {
            // As Slurm 22.05: a running job may shrink to fewer nodes,
            // keeping its first ones (the batch host among them); the
            // count it has is no change; a range, no node, more nodes, or
            // a suspended job are refused.
            let count = job.alloc.len();
            match req.min_nodes {
                _ if req.max_nodes.is_some() => {
                    return Err((ErrorCode::JobNotPending, String::new()))
                }
                Some(0) => return Err((ErrorCode::InvalidNodeCount, String::new())),
                Some(n) if n as usize == count => {}
                Some(n) if (n as usize) < count && job.status.state == JobState::Running => {
                    dropped = job.alloc[n as usize..]
                        .iter()
                        .map(|a| a.node_index)
                        .collect();
                }
                _ => return Err((ErrorCode::NotSupported, String::new())),
            }
        } else if req.min_nodes.is_some() || req.max_nodes.is_some() {
            if let Some(n) = req.min_nodes {
                if n == 0 {
                    return Err((ErrorCode::InvalidNodeCount, String::new()));
                }
                changes.push(JobChange::MinNodes(n));
            }
            if let Some(n) = req.max_nodes {
                changes.push(JobChange::MaxNodes((n > 0).then_some(n)));
            }
        }
        if let Some(n) = &req.name {
            changes.push(JobChange::Name(n.clone()));
        }
        if let Some(c) = &req.comment {
            changes.push(JobChange::Comment(c.clone()));
        }
        if let Some(key) = &req.wckey {
            // As Slurm: the key of a pending job only, though giving a job
            // the key it has is no change and never refused.
            let key = key.trim();
            if key != &*job.spec.wckey {
                if !pending {
                    return Err((ErrorCode::JobNotPending, String::new()));
                }
                changes.push(JobChange::Text(SpecText::WcKey, key.to_owned()));
            }
        }
        if let Some(p) = req.priority {
            if !operator {
                return Err((ErrorCode::AccessDenied, String::new()));
            }
            // As Slurm 22.05: a held job is released first.
            if p > 0 && pending && job.hold.is_some() {
                return Err((ErrorCode::JobHeld, String::new()));
            }
            changes.push(JobChange::Priority(p));
        }
        if let Some(n) = req.nice {
            if n < 0 && !operator {
                return Err((ErrorCode::AccessDenied, String::new()));
            }
            // As Slurm 22.05: the priority moves by the change of nice, to
            // 2 at least; a held job's priority of 0 moves too, which
            // releases it.
            let held = job.hold.is_some() && pending;
            let from = if held { 0 } else { i64::from(job.priority()) };
            let moved = from + i64::from(job.nice) - i64::from(n);
            if job.spec.shown().priority_set {
                // A priority set outright stays, and so does the nice
                // value (Slurm 22.05 takes the request and changes
                // neither).
            } else if n != job.nice && (held || moved < 2) {
                let priority = u32::try_from(moved.clamp(2, i64::from(u32::MAX))).unwrap_or(2);
                changes.push(JobChange::NicePriority { priority, nice: n });
            } else {
                changes.push(JobChange::Nice(n));
            }
        }
        if let Some(t) = req.begin_time {
            if !pending {
                return Err((ErrorCode::JobNotPending, String::new()));
            }
            changes.push(JobChange::BeginTime(t));
        }
        if let Some(on) = req.requeue {
            changes.push(JobChange::Requeue(on));
        }
        if let Some(n) = req.array_task_throttle {
            match job.array.as_deref() {
                // Tasks split off run under the meta record's limit; a job
                // that is no array has none, and Slurm 22.05 accepts the
                // request without a change.
                Some(a) if a.is_meta() => changes.push(JobChange::ArrayThrottle(n)),
                Some(_) | None => {}
            }
        }
        let limit_now = limit.unwrap_or_else(current_limit);
        changes.extend(self.extras_changes(req, pending, limit_now, now)?);
        if req.gres.is_some() && !pending {
            return Err((ErrorCode::JobNotPending, String::new()));
        }
        // The partition the job will be in: `Gres=` is held against its
        // nodes.
        let partition = match &req.partition {
            Some(p) => self.part_index.get(p).copied(),
            None => job.partition,
        };
        if req.gres.is_none() && req.partition.is_some() {
            // A job moving keeps its `--gres`, which the new partition's
            // nodes must have.
            if let Some(code) = self.gres_refusal(&job.spec.gres, self.members(partition)) {
                return Err((code, String::new()));
            }
        }
        let spec = self.spec_changes(req, partition)?;
        let pending_only = pending_changes(req)?;
        if !pending && (!spec.is_empty() || !pending_only.is_empty()) {
            return Err((ErrorCode::JobNotPending, String::new()));
        }
        // What the job would become, checked as a submission is.
        let check = |changes: &[&JobChange]| {
            let mut probe = Job::clone(job);
            for c in changes {
                super::apply_job_change(&mut probe, c, &self.part_index);
            }
            let request = self.job_request(&probe);
            slurm_sched::check_submit(&self.cluster_view(), &request)
        };
        // As Slurm 22.05, a node configuration no node offers (more memory
        // than any node has, `Features=a*2` on one node) is taken: the job
        // then waits with BadConstraints. Unknown names are not.
        let lenient = |changes: &[&JobChange]| match check(changes) {
            Err(SubmitRejection::NodeConfigUnavailable { cause, .. })
                if !matches!(
                    cause,
                    Unsatisfiable::RequiredNode | Unsatisfiable::UnknownNode
                ) =>
            {
                Ok(())
            }
            other => other.map_err(|rejection| rejection_code(&rejection)),
        };
        let mut cpu_refusal = None;
        let cpu_fields = pending_only
            .iter()
            .any(|c| matches!(c, JobChange::Cpus { .. } | JobChange::MinCpusPerNode(_)));
        // The node count goes last, as Slurm applies it: a CPU count kept
        // or set in the same request grows with it (`NumCPUs=2
        // NumTasks=100 NumNodes=9` asks 100 CPUs).
        let is_count = |c: &JobChange| matches!(c, JobChange::MinNodes(_) | JobChange::MaxNodes(_));
        let (counts, mut changes): (Vec<JobChange>, Vec<JobChange>) =
            changes.into_iter().partition(|c| is_count(c));
        let node_count = counts.iter().any(|c| matches!(c, JobChange::MinNodes(_)));
        let all: Vec<&JobChange> = changes
            .iter()
            .chain(&spec)
            .chain(&pending_only)
            .chain(&counts)
            .collect();
        // More CPUs than the whole partition has (`NumNodes=3` on two
        // CPUs, `MinCPUsNode=3` on one node of 2, or a job submitted so):
        // Slurm 22.05 takes any change of such a waiting job all the same
        // (it then cannot start) and says so. More nodes alone is taken
        // (`NumNodes=3` on two nodes of 2 CPUs).
        let beyond_partition = pending && {
            let mut probe = Job::clone(job);
            for c in &all {
                super::apply_job_change(&mut probe, c, &self.part_index);
            }
            self.beyond_partition_cpus(&probe)
        };
        if beyond_partition {
            lenient(&spec.iter().collect::<Vec<_>>())?;
            cpu_refusal = Some((ErrorCode::RequestedPartConfigUnavailable, String::new()));
        } else if cpu_fields {
            // Within the partition, more than any node gives
            // (`MinCPUsNode=3` on two nodes of 2) is taken; the job then
            // waits with BadConstraints.
            lenient(&all)?;
        } else if !spec.is_empty() && !node_count {
            lenient(&spec.iter().collect::<Vec<_>>())?;
        }
        changes.extend(spec);
        changes.extend(pending_only);
        changes.extend(counts);
        if let Some(text) = &req.admin_comment {
            if !operator {
                return Err((ErrorCode::AccessDenied, String::new()));
            }
            changes.push(JobChange::AdminComment(text.clone()));
        }
        let dependency = match &req.dependency {
            Some(_) if !pending => return Err((ErrorCode::JobNotPending, String::new())),
            Some(text) => Some(self.updated_dependency(job, text, now)?),
            None => None,
        };
        if !changes.is_empty() {
            self.emit(
                out,
                Event::JobUpdated {
                    job_id: id,
                    changes,
                },
            );
        }
        if let Some(dependency) = dependency {
            let event = Event::JobDependencyChanged {
                job_id: id,
                time: now,
                dependency,
            };
            self.emit(out, event);
        }
        if !dropped.is_empty() {
            tracing::info!(job_id = id, nodes = ?dropped, "nodes released from running job");
            self.take_nodes_out(out, id, dropped, now);
        }
        match cpu_refusal {
            Some(refusal) => Err(refusal),
            None => Ok(()),
        }
    }

    /// Nodes `nodes` leave running job `id`, which goes on with the others
    /// (`scontrol update NumNodes=`, a failed node of a `--no-kill` job):
    /// they are told to end the job there, and leave its allocation.
    pub(super) fn take_nodes_out(
        &mut self,
        out: &mut Outcome,
        id: u32,
        nodes: Vec<usize>,
        now: i64,
    ) {
        // Without a banner in the job's output (the state names no reason).
        self.push_terminate_on(out, id, nodes.clone(), v1::JobState::Failed, now);
        for node in nodes {
            let Some(name) = self.nodes.get(node).map(|n| n.name.clone()) else {
                continue;
            };
            self.emit(
                out,
                Event::JobNodeExcised {
                    job_id: id,
                    node: name,
                    time: now,
                },
            );
        }
    }

    /// `Deadline=`, `TimeMin=` and `Licenses=` (pending jobs only), checked
    /// as at submission; `limit` is the job's time limit now.
    fn extras_changes(
        &self,
        req: &v1::UpdateJobRequest,
        pending: bool,
        limit: TimeLimit,
        now: i64,
    ) -> Result<Vec<JobChange>, (ErrorCode, String)> {
        let mut out = Vec::new();
        let asked =
            req.deadline.is_some() || req.time_min_minutes.is_some() || req.licenses.is_some();
        if asked && !pending {
            return Err((ErrorCode::JobNotPending, String::new()));
        }
        if let Some(t) = req.deadline {
            if t > 0 && t <= now {
                return Err((ErrorCode::InvalidTimeValue, String::new()));
            }
            out.push(JobChange::Deadline(t.max(0)));
        }
        if let Some(m) = req.time_min_minutes {
            if let TimeLimit::Minutes(l) = limit {
                if m > l {
                    return Err((
                        ErrorCode::InvalidTimeMin,
                        format!("TimeMin ({m} minutes) exceeds the time limit ({l} minutes)"),
                    ));
                }
            }
            out.push(JobChange::TimeMin(m));
        }
        if let Some(text) = &req.licenses {
            match self.license_request(text) {
                Ok(asks) => out.push(JobChange::Licenses(asks)),
                Err(e) => return Err((ErrorCode::InvalidLicenses, e.to_string())),
            }
        }
        Ok(out)
    }

    /// The nodes of partition `p` (none for no partition).
    fn members(&self, p: Option<usize>) -> &[usize] {
        p.and_then(|p| self.partitions.get(p))
            .map_or(&[], |p| p.view.nodes.as_slice())
    }

    /// The changes of `req` to the job's texts, `Gres=`, tasks, CPUs and
    /// memory (pending jobs only), each checked on its own (`Gres=` as at
    /// submission, against the nodes of `partition`); together they are
    /// checked against the partition's nodes by the caller.
    fn spec_changes(
        &self,
        req: &v1::UpdateJobRequest,
        partition: Option<usize>,
    ) -> Result<Vec<JobChange>, (ErrorCode, String)> {
        let mut out = Vec::new();
        if req.burst_buffer.is_some() {
            // No burst buffer plugin: Slurm's answer without one.
            return Err((ErrorCode::NotSupported, String::new()));
        }
        if let Some(text) = &req.prefer {
            // Unreadable or naming unknown features (checked by the
            // caller, with the rest): an invalid preferred feature
            // specification, as Slurm 22.05 words it here.
            if !text.is_empty() && slurm_sched::Constraint::parse(text).is_err() {
                return Err((ErrorCode::InvalidPrefer, String::new()));
            }
            out.push(JobChange::Prefer(slurm_sched::constraint::as_kept(text)));
        }
        if let Some(text) = &req.gres {
            let text = text.trim();
            if let Some(code) = self.gres_refusal(text, self.members(partition)) {
                // Slurm prints no more than the code's text.
                return Err((code, String::new()));
            }
            out.push(JobChange::Text(SpecText::Gres, text.to_owned()));
        }
        let texts = [
            (SpecText::Account, &req.account),
            (SpecText::Qos, &req.qos),
            (SpecText::RequiredNodes, &req.required_nodes),
            (SpecText::ExcludedNodes, &req.excluded_nodes),
            (SpecText::Features, &req.features),
            (SpecText::WorkDir, &req.work_dir),
            (SpecText::StdOut, &req.stdout_path),
            (SpecText::StdErr, &req.stderr_path),
            (SpecText::MailType, &req.mail_type),
            (SpecText::MailUser, &req.mail_user),
        ];
        for (field, value) in texts {
            let Some(text) = value else { continue };
            // Without accounting storage there are no associations to move
            // a job to: Slurm 22.05 accepts the change and keeps the job's
            // account and QOS as they were.
            if !self.cfg.accounting && matches!(field, SpecText::Account | SpecText::Qos) {
                continue;
            }
            let text = text.trim();
            match field {
                SpecText::RequiredNodes | SpecText::ExcludedNodes => {
                    if let Err(bad) = self.node_list(text) {
                        return Err((
                            ErrorCode::InvalidNodeName,
                            format!("invalid node name specified: {bad}"),
                        ));
                    }
                }
                SpecText::Features
                    if !text.is_empty() && slurm_sched::Constraint::parse(text).is_err() =>
                {
                    return Err((ErrorCode::InvalidFeature, String::new()));
                }
                SpecText::WorkDir if !text.starts_with('/') => {
                    return Err((
                        ErrorCode::Unspecified,
                        format!("WorkDir must be an absolute path: {text}"),
                    ));
                }
                _ => {}
            }
            let text = match field {
                SpecText::Features => slurm_sched::constraint::as_kept(text),
                _ => text.to_owned(),
            };
            out.push(JobChange::Text(field, text));
        }
        if let Some(n) = req.ntasks {
            if n == 0 {
                return Err((ErrorCode::BadTaskCount, String::new()));
            }
            out.push(JobChange::NumTasks(n));
        }
        if let Some(n) = req.cpus_per_task {
            if n == 0 {
                return Err((ErrorCode::InvalidCpuCount, String::new()));
            }
            out.push(JobChange::CpusPerTask(n));
        }
        match req.memory {
            Some(v1::update_job_request::Memory::MemPerNodeMb(mb)) => {
                out.push(JobChange::Memory(MemReq::PerNode(mb)));
            }
            Some(v1::update_job_request::Memory::MemPerCpuMb(mb)) => {
                out.push(JobChange::Memory(MemReq::PerCpu(mb)));
            }
            None => {}
        }
        Ok(out)
    }

    // ---------------------------------------------------------- node side

    fn update_node(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::UpdateNodeRequest,
        now: i64,
    ) -> Reply {
        if !self.is_operator(caller) {
            return Reply::error(ErrorCode::AccessDenied, "");
        }
        let nodes = match self.node_list(&req.nodes) {
            Ok(n) if !n.is_empty() => n,
            Ok(_) => return Reply::error(ErrorCode::InvalidNodeName, ""),
            Err(bad) => {
                return Reply::error(
                    ErrorCode::InvalidNodeName,
                    format!("invalid node name specified: {bad}"),
                )
            }
        };
        // Refused by name rather than accepted and dropped: GRES counts
        // are not tracked per node yet.
        if req.gres.is_some() {
            return Reply::error(
                ErrorCode::NotSupported,
                "updating Gres of a node is not supported",
            );
        }
        let attrs = NodeAttrs::from_request(req);
        if let Some(attrs) = &attrs {
            // Every node is checked before any changes.
            if let Some(e) = nodes
                .iter()
                .find_map(|&i| self.nodes[i].attrs_with(attrs).err())
            {
                // Slurm's one line says it all; ours goes to the log.
                tracing::info!(error = %e, "node feature update refused");
                return Reply::error(ErrorCode::ActiveFeatureNotSubset, "");
            }
        }
        let update = node_update(req.state);
        if update.is_none() && req.reason.is_some() {
            return Reply::error(
                ErrorCode::NotSupported,
                "a node's Reason changes only with its State (DRAIN, DOWN or FAIL)",
            );
        }
        let reason = req.reason.clone().filter(|r| !r.trim().is_empty());
        if let Some(update) = update {
            // No power saving here (no SuspendProgram): Slurm refuses
            // POWER_DOWN and POWER_UP then.
            if matches!(
                update,
                NodeUpdateState::PowerDown | NodeUpdateState::PowerUp
            ) {
                tracing::info!(%update, "no power saving configured");
                return Reply::error(ErrorCode::InvalidNodeState, "");
            }
            if update.needs_reason() && reason.is_none() {
                return Reply::error(
                    ErrorCode::InvalidNodeState,
                    "you must specify a reason when DOWNING or DRAINING a node",
                );
            }
            for &i in &nodes {
                if let Err(e) = self.nodes[i].state.apply_update(update) {
                    // As Slurm 22.05: the transition is logged, the reply
                    // carries the code alone (`scontrol update ...
                    // State=RESUME` of an idle node prints one line).
                    tracing::info!(node = %self.nodes[i].name, error = %e, "invalid node state transition");
                    return Reply::error(ErrorCode::InvalidNodeState, "");
                }
            }
        }
        if let Some(attrs) = attrs {
            for &i in &nodes {
                let node = self.nodes[i].name.clone();
                self.emit(
                    out,
                    Event::NodeAttrsUpdated {
                        node,
                        attrs: attrs.clone(),
                        uid: caller.uid,
                        time: now,
                    },
                );
            }
        }
        let Some(update) = update else {
            return Reply::Ok;
        };
        for &i in &nodes {
            let name = self.nodes[i].name.clone();
            self.emit(
                out,
                Event::NodeUpdated {
                    node: name,
                    update,
                    reason: reason.clone(),
                    uid: caller.uid,
                    time: now,
                },
            );
            if update == NodeUpdateState::Down {
                // As Slurm 22.05: jobs on a node an operator sets DOWN are
                // requeued (BeginTime, Restarts+1) unless they may not be
                // (--no-requeue, JobRequeue=0), which end NODE_FAIL with
                // Reason=NodeDown; the other nodes of such a job clean up
                // as after any end, and no job waits for this node's
                // cleanup any more.
                self.fail_jobs_on_node(out, i, now, 15);
            }
        }
        Reply::Ok
    }

    fn register_node(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::RegisterNodeRequest,
        now: i64,
    ) -> Reply {
        let i = match self.reporting_node(caller, &req.node_name) {
            Ok(i) => i,
            Err(reply) => return reply,
        };
        if super::node::conf_hash_mismatch(
            self.cfg.check_conf_hash,
            &self.cfg.conf_hash,
            &req.config_hash,
        ) {
            // Slurm's words; as in Slurm, nothing else is done about it.
            tracing::error!(
                node = %req.node_name,
                ours = %self.cfg.conf_hash,
                theirs = %req.config_hash,
                "Node {} appears to have a different slurm.conf than the slurmctld.  This could cause issues with communication and functionality.  Please review both files and make sure they are the same.  If this is expected ignore, and set DebugFlags=NO_CONF_HASH in your slurm.conf.",
                req.node_name
            );
        }
        let invalid = if self.cfg.config_overrides {
            None
        } else {
            self.nodes[i].short_of_config(
                &super::node::ReportedHw::from_request(req),
                self.cfg.node_reg_mem_percent,
            )
        };
        self.emit(
            out,
            Event::NodeRegistered {
                node: req.node_name.clone(),
                time: now,
                arch: req.arch.clone(),
                os: req.os.clone(),
                invalid: invalid.clone(),
            },
        );
        // Figures of the moment, not journaled (see `core::node`).
        if let Some(load) = super::NodeLoad::from_registration(req) {
            self.nodes[i].load = Some(load);
        }
        self.nodes[i].boot = self.nodes[i]
            .boot
            .updated(super::NodeBoot::from_registration(req));
        match &invalid {
            // As Slurm: drained by SlurmUser with the reason, unless it is
            // out of service already; not returned to service either.
            Some(reason) => self.drain_short_node(out, i, reason, now),
            None => self.return_to_service(out, i, now),
        }
        let reported: HashSet<u32> = req.running_jobs.iter().map(|r| r.job_id).collect();
        // slurmd restarted after these started on it and does not have
        // them: they died with it (NODE_FAIL).
        let died: Vec<u32> = self
            .jobs
            .values()
            .filter(|j| {
                j.status.state == JobState::Running
                    && !j.status.is_completing()
                    && j.alloc.first().is_some_and(|a| a.node_index == i)
                    && req.slurmd_start_time > j.start_time
                    && !reported.contains(&j.id.get())
            })
            .map(|j| j.id.get())
            .collect();
        for id in died {
            self.end_job(out, id, now, JobState::NodeFail, (0, 0), "None", true);
        }
        // The rest as after a ping: lost jobs requeued or released, jobs
        // we do not place here aborted by the node.
        let listed = BTreeMap::from([(i, reported)]);
        let abort_job_ids = self
            .reconcile_node_jobs(out, &listed, now, now)
            .remove(&i)
            .unwrap_or_default();
        Reply::Registered {
            abort_job_ids,
            invalid,
        }
    }

    /// Drains node `i`, whose registration fell short of slurm.conf for
    /// `reason`, as Slurm does: not when it is DOWN, DRAIN or FAIL already,
    /// and an earlier reason stays unless it is only "Not responding".
    fn drain_short_node(&mut self, out: &mut Outcome, i: usize, reason: &str, now: i64) {
        let Some(n) = self.nodes.get(i) else {
            return;
        };
        let out_of_service = n.state.base == slurm_common::state::NodeBaseState::Down
            || n.state.has(NodeFlag::Drain)
            || n.state.has(NodeFlag::Fail);
        if out_of_service {
            return;
        }
        tracing::error!(node = %n.name, reason, "node registered with less than configured; draining it");
        let keep = n
            .reason
            .as_deref()
            .is_some_and(|r| !r.starts_with(super::NOT_RESPONDING_REASON));
        let name = n.name.clone();
        self.drain_as_slurm_user(out, name, (!keep).then(|| reason.to_string()), now);
    }

    /// Drains `node` on the controller's own account (SlurmUser), with
    /// `reason` (None keeps the node's current one).
    pub(super) fn drain_as_slurm_user(
        &mut self,
        out: &mut Outcome,
        node: String,
        reason: Option<String>,
        now: i64,
    ) {
        self.emit(
            out,
            Event::NodeUpdated {
                node,
                update: NodeUpdateState::Drain,
                reason,
                uid: self.cfg.slurm_user_uid,
                time: now,
            },
        );
    }

    fn job_complete(
        &mut self,
        out: &mut Outcome,
        caller: Caller,
        req: &v1::JobCompleteRequest,
        now: i64,
    ) -> Reply {
        if !self.is_operator(caller) {
            return Reply::error(ErrorCode::AccessDenied, "");
        }
        let Some(job) = self.jobs.get(&req.job_id) else {
            // Already purged or never known: acknowledge so slurmd stops.
            return Reply::Ok;
        };
        if job.status.is_completing() {
            // It ended earlier (cancelled, timed out, requeued) and its
            // nodes were told to end it: each answers with EpilogComplete
            // once its part is cleaned up (`core::epilog`).
            return Reply::Ok;
        }
        // A suspended job's report crossed its suspension (`core::suspend`).
        if !job.status.state.holds_resources() {
            return Reply::Ok;
        }
        if req.launch_error == ErrorCode::PrologFailed.number() {
            // Slurm's slurmd reports a failed Prolog of the batch host so.
            let detail = format!("prolog failed on {}", req.node_name);
            self.prolog_failed(out, req.job_id, &req.node_name, &detail, now);
            return Reply::Ok;
        }
        if req.launch_error == ErrorCode::IoError.number() {
            // The script's input or output file could not be opened: the
            // job FAILS at once, never requeued, with the exit code Slurm
            // 22.05 shows for it (0:53).
            tracing::warn!(job_id = req.job_id, node = %req.node_name, "job files cannot be opened");
            self.emit(
                out,
                Event::JobEnded {
                    job_id: req.job_id,
                    time: now,
                    state: JobState::Failed,
                    exit_status: 0,
                    exit_signal: IO_ERROR_SIGNAL,
                    reason: PendingReason::JobLaunchFailure.as_str().to_string(),
                    detail: String::new(),
                    release: true,
                },
            );
            return Reply::Ok;
        }
        if req.launch_error != 0 {
            let code = ErrorCode::from_number_or_unspecified(req.launch_error);
            let detail = format!("launch on {} failed: {code}", req.node_name);
            self.launch_failed(out, req.job_id, detail, now);
            return Reply::Ok;
        }
        let exit = req.exit_code.unwrap_or_default();
        let (state, reason) = if req.oom_killed {
            (JobState::OutOfMemory, "OutOfMemory")
        } else if exit.signal != 0 {
            // Slurm 22.05 gives a batch script killed by a signal the
            // reason of a failed launch.
            (JobState::Failed, "JobLaunchFailure")
        } else if exit.status != 0 {
            (JobState::Failed, "NonZeroExitCode")
        } else {
            (JobState::Completed, "None")
        };
        let end = if req.end_time > 0 {
            req.end_time.min(now)
        } else {
            now
        };
        // The nodes end what is left of the job and run their epilogs; the
        // job is COMPLETING until they report (`core::epilog`).
        self.finish_running(
            out,
            req.job_id,
            end.max(job.start_time),
            state,
            (exit.status, exit.signal),
            reason,
        );
        Reply::Ok
    }

    /// The batch script could not be launched. As a first failure of a
    /// job that may be requeued it goes back to the queue (Reason
    /// BeginTime until the requeue delay has passed), else it FAILS with
    /// Reason JobLaunchFailure. `detail` (the node's error text) goes to
    /// the log, never into the job: Slurm shows only those reasons.
    fn launch_failed(&mut self, out: &mut Outcome, job_id: u32, detail: String, now: i64) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        tracing::warn!(job_id, %detail, "batch launch failed");
        if job.status.is_completing() {
            // It ended (cancelled, timed out) while its launch was under way.
            // Nothing runs, so no JobComplete will come to release it.
            self.emit(out, Event::JobReleased { job_id, time: now });
            return;
        }
        if job.status.state != JobState::Running {
            return;
        }
        if job.launch_failures == 0 && job.requeue {
            self.emit(
                out,
                Event::JobRequeued {
                    job_id,
                    time: now,
                    hold: None,
                    launch_failed: true,
                    detail: String::new(),
                    begin_time: Some(self.requeue_begin(now)),
                },
            );
            // Nothing runs anywhere: no node has anything to clean up.
            self.emit(out, Event::JobReleased { job_id, time: now });
        } else {
            self.emit(
                out,
                Event::JobEnded {
                    job_id,
                    time: now,
                    state: JobState::Failed,
                    exit_status: 1,
                    exit_signal: 0,
                    reason: PendingReason::JobLaunchFailure.as_str().to_string(),
                    detail: String::new(),
                    release: true,
                },
            );
        }
    }

    // ---------------------------------------------------------------- timer

    fn tick(&mut self, out: &mut Outcome, now: i64) {
        // Before the time limits: a --signal due at the end still goes out.
        self.send_due_signals(out, now);
        let mut timeouts = Vec::new();
        let mut stuck = Vec::new();
        let mut purge = Vec::new();
        for job in self.jobs.values() {
            let id = job.id.get();
            if self.kill_time(job).is_some_and(|d| d <= now) {
                timeouts.push(id);
            } else if job.status.is_completing() {
                if job
                    .end_time
                    .saturating_add(self.cfg.completing_timeout_secs)
                    <= now
                {
                    stuck.push(id);
                }
            } else if job.status.state.is_finished()
                && job.end_time.saturating_add(self.cfg.min_job_age_secs) <= now
            {
                purge.push(id);
            }
        }
        for id in timeouts {
            // Slurm records the SIGTERM of the time limit: ExitCode=0:15.
            self.finish_running(out, id, now, JobState::Timeout, (0, SIGTERM), "TimeLimit");
        }
        for id in stuck {
            tracing::warn!(job_id = id, "nodes never confirmed cleanup; releasing");
            self.emit(
                out,
                Event::JobReleased {
                    job_id: id,
                    time: now,
                },
            );
            self.requeue_fini(out, id, now);
        }
        if !purge.is_empty() {
            self.emit(out, Event::JobsPurged { job_ids: purge });
        }
    }

    // -------------------------------------------------------------- helpers

    /// The index of node `name` reporting as `caller`: only slurmd (root or
    /// SlurmUser) speaks for a node, and only for one slurm.conf defines.
    pub(super) fn reporting_node(&self, caller: Caller, name: &str) -> Result<usize, Reply> {
        if !self.is_operator(caller) {
            return Err(Reply::error(ErrorCode::AccessDenied, ""));
        }
        self.node_index.get(name).copied().ok_or_else(|| {
            Reply::error(
                ErrorCode::InvalidNodeName,
                format!("invalid node name specified: {name}"),
            )
        })
    }

    /// When a job requeued at `now` may start again.
    pub(super) fn requeue_begin(&self, now: i64) -> i64 {
        now.saturating_add(self.cfg.requeue_delay_secs)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn end_job(
        &mut self,
        out: &mut Outcome,
        job_id: u32,
        time: i64,
        state: JobState,
        exit: (u32, u32),
        reason: &str,
        release: bool,
    ) {
        self.emit(
            out,
            Event::JobEnded {
                job_id,
                time,
                state,
                exit_status: exit.0,
                exit_signal: exit.1,
                reason: reason.to_string(),
                detail: String::new(),
                release,
            },
        );
    }

    pub(super) fn push_terminate(
        &self,
        out: &mut Outcome,
        job_id: u32,
        why: v1::JobState,
        now: i64,
    ) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        let nodes: Vec<usize> = job.alloc.iter().map(|a| a.node_index).collect();
        self.push_terminate_on(out, job_id, nodes, why, now);
    }

    /// Tells nodes `nodes` to end job `job_id` there (`why` is the state
    /// the job ended in).
    pub(super) fn push_terminate_on(
        &self,
        out: &mut Outcome,
        job_id: u32,
        nodes: Vec<usize>,
        why: v1::JobState,
        now: i64,
    ) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        if nodes.is_empty() {
            return;
        }
        let names = slurm_common::hostlist::compress(
            nodes
                .iter()
                .filter_map(|&i| self.nodes.get(i))
                .map(|n| n.name.as_str()),
        );
        out.actions.push(Action::TerminateJob {
            job_id,
            nodes,
            request: v1::NodeTerminateJobRequest {
                job_id,
                reason: why as i32,
                time: now,
                user_id: job.uid,
                group_id: job.gid,
                nodes: names,
                partition: job.partition_name.clone(),
                kill_wait_secs: self.cfg.kill_wait_secs,
                not_started: false,
            },
        });
    }

    /// The LaunchBatch action for a job that just started.
    pub(crate) fn launch_action(&self, job_id: u32) -> Option<Action> {
        let job = self.jobs.get(&job_id)?;
        let first = job.alloc.first()?;
        let d = &job.spec;
        let names: Vec<&str> = job
            .alloc
            .iter()
            .filter_map(|a| self.nodes.get(a.node_index))
            .map(|n| n.name.as_str())
            .collect();
        let memory = match job.shape.mem {
            Some(slurm_sched::MemReq::PerNode(mb)) => {
                Some(v1::launch_batch_request::Memory::MemPerNodeMb(mb))
            }
            Some(slurm_sched::MemReq::PerCpu(mb)) => {
                Some(v1::launch_batch_request::Memory::MemPerCpuMb(mb))
            }
            None => None,
        };
        let limit = job.run_limit.unwrap_or(TimeLimit::Infinite);
        let array = job
            .array
            .as_ref()
            .and_then(|a| Some(a.launch_info(a.task?)));
        let request = v1::LaunchBatchRequest {
            job_id,
            array,
            credential: Vec::new(),
            name: job.name.clone(),
            user_id: job.uid,
            group_id: job.gid,
            user_name: d.user_name.to_string(),
            extra_group_ids: Vec::new(),
            // Read from the job's files by the agent, off the owner task.
            script: String::new(),
            argv: d.argv.iter().map(|a| a.to_string()).collect(),
            environment: Vec::new(),
            work_dir: d.work_dir.to_string(),
            stdin_path: d.stdin_path.to_string(),
            stdout_path: d.stdout_path.to_string(),
            stderr_path: d.stderr_path.to_string(),
            open_mode: d.open_mode,
            nodes: slurm_common::hostlist::compress(names),
            cpus_per_node: job.alloc.iter().map(|a| a.cpus).collect(),
            tasks_per_node: job.tasks_on_nodes(),
            ntasks: job.launch_ntasks(),
            cpus_per_task: d.cpus_per_task,
            ntasks_per_node: d.ntasks_per_node,
            memory,
            resources: Some(v1::JobResources {
                nodes: crate::rpc::convert::node_allocations(&self.nodes, &job.alloc, &job.cpu_ids),
            }),
            time_limit: Some(limit.into()),
            partition: job.partition_name.clone(),
            account: d.account.to_string(),
            qos: d.qos.to_string(),
            reservation: d.reservation.to_string(),
            cluster_name: self.cfg.cluster_name.clone(),
            submit_host: d.submit_host.to_string(),
            submit_dir: d.work_dir.to_string(),
            nice: job.nice,
            restart_count: job.restart_count,
            constraint: d.constraint.to_string(),
            tres_bind: d.shown().tres_bind.to_string(),
            ntasks_per_core: d.shown().ntasks_per_core,
            ntasks_per_socket: d.shown().ntasks_per_socket,
        };
        Some(Action::LaunchBatch {
            job_id,
            node: first.node_index,
            request: Box::new(request),
            files: d.files,
        })
    }
}

fn result(job_id: u32, r: JobResult) -> v1::JobActionResult {
    let (code, detail) = match r {
        Ok(()) => (0, String::new()),
        Err((code, detail)) => (code.number(), detail),
    };
    v1::JobActionResult {
        job_id,
        array_task_id: None,
        error_code: code,
        error_detail: detail,
    }
}

fn node_update(raw: i32) -> Option<NodeUpdateState> {
    use v1::NodeStateUpdate as U;
    Some(match U::try_from(raw).ok()? {
        U::Unspecified => return None,
        U::Drain => NodeUpdateState::Drain,
        U::Resume => NodeUpdateState::Resume,
        U::Undrain => NodeUpdateState::Undrain,
        U::Down => NodeUpdateState::Down,
        U::Fail => NodeUpdateState::Fail,
        U::Idle => NodeUpdateState::Idle,
        U::PowerDown => NodeUpdateState::PowerDown,
        U::PowerUp => NodeUpdateState::PowerUp,
        U::CancelReboot => NodeUpdateState::CancelReboot,
        U::Future => NodeUpdateState::Future,
        U::NoResp => NodeUpdateState::NoResp,
    })
}

/// The reply for a submission the scheduler's admission refuses.
/// `current` with `delta` minutes added (`TimeLimit+=` / `-=`). An
/// unlimited job has nothing to count from, and a limit cannot go below
/// zero.
fn changed_limit(current: TimeLimit, delta: i32) -> Result<TimeLimit, (ErrorCode, String)> {
    let invalid = || (ErrorCode::InvalidTimeLimit, String::new());
    let TimeLimit::Minutes(now) = current else {
        return Err(invalid());
    };
    let next = i64::from(now) + i64::from(delta);
    u32::try_from(next)
        .ok()
        .filter(|m| *m < u32::MAX - 2)
        .map(TimeLimit::Minutes)
        .ok_or_else(invalid)
}

/// The changes of `NumCPUs=`, `MinCPUsNode=` (0: none), `OverSubscribe=`,
/// `Contiguous=` and `Reboot=`, which only a pending job takes.
/// `MinCPUsNode=` comes first: it also sets the CPU count, which a
/// `NumCPUs=` given with it then overrides, as Slurm applies them.
fn pending_changes(req: &v1::UpdateJobRequest) -> Result<Vec<JobChange>, (ErrorCode, String)> {
    let mut out = Vec::new();
    if let Some(n) = req.min_cpus_per_node.filter(|n| *n > 0) {
        out.push(JobChange::MinCpusPerNode(n));
    }
    if let Some(min) = req.min_cpus {
        let max = req.max_cpus.filter(|m| *m > 0);
        if min == 0 || max.is_some_and(|m| m < min) {
            return Err((ErrorCode::InvalidCpuCount, String::new()));
        }
        out.push(JobChange::Cpus { min, max });
    }
    if let Some(sharing) = req.sharing {
        let known = [v1::NodeSharing::Oversubscribe, v1::NodeSharing::Exclusive]
            .iter()
            .any(|s| *s as i32 == sharing);
        if !known {
            return Err((
                ErrorCode::Unspecified,
                format!("invalid node sharing {sharing}"),
            ));
        }
        out.push(JobChange::Sharing(sharing));
    }
    if let Some(on) = req.contiguous {
        out.push(JobChange::Contiguous(on));
    }
    if let Some(on) = req.reboot {
        out.push(JobChange::Reboot(on));
    }
    Ok(out)
}

fn rejection_code(r: &SubmitRejection) -> (ErrorCode, String) {
    match rejection_reply(r) {
        Reply::Error { code, detail } => (code, detail),
        _ => (ErrorCode::Unspecified, String::new()),
    }
}

fn rejection_reply(r: &SubmitRejection) -> Reply {
    let code = match r {
        SubmitRejection::InvalidPartition { .. } => ErrorCode::InvalidPartitionName,
        SubmitRejection::PartitionNotAvailable { .. } => ErrorCode::PartitionNotAvailable,
        SubmitRejection::InvalidNodeCount { .. } => ErrorCode::InvalidNodeCount,
        SubmitRejection::InvalidTimeLimit { .. } => ErrorCode::InvalidTimeLimit,
        SubmitRejection::InvalidFeature { .. } => ErrorCode::InvalidFeature,
        SubmitRejection::InvalidPrefer { .. } => ErrorCode::InvalidPrefer,
        SubmitRejection::TooManyCpus { .. } => ErrorCode::TooManyRequestedCpus,
        SubmitRejection::NodeConfigUnavailable { .. } => ErrorCode::RequestedNodeConfigUnavailable,
    };
    Reply::error(code, r.user_message().unwrap_or_default())
}

#[cfg(test)]
mod submit_check_tests {
    use super::super::tests::{script, Env, ALICE};
    use super::*;

    /// `sbatch -w nosuchnode` (or `-x`): Slurm's reply carries the code
    /// alone, so sbatch prints one line, "Invalid node name specified".
    #[test]
    fn unknown_node_names_are_refused_without_a_detail() {
        let mut env = Env::new();
        env.register_all();
        for (required, excluded) in [("nosuchnode", ""), ("", "nosuchnode")] {
            let r = env.submit_as(
                ALICE,
                v1::JobDescription {
                    required_nodes: required.into(),
                    excluded_nodes: excluded.into(),
                    ..script()
                },
            );
            match r {
                Reply::Error { code, detail } => {
                    assert_eq!((code, detail.as_str()), (ErrorCode::InvalidNodeName, ""));
                }
                other => panic!("accepted: {other:?}"),
            }
        }
    }
}
