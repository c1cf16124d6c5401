//! The gRPC services: `SlurmController` (commands) and `SlurmNodeReports`
//! (slurmd).
//!
//! Every call first proves who calls: the `x-slurm-auth` credential is
//! verified and the uid/gid come from it, never from the body. Changes
//! become a [`Command`] for the owner task, and the handler waits for the
//! reply, which the owner sends only after the change is in the journal.
//! Queries read the latest published [`Snapshot`] and never wait for the
//! owner.

pub mod admin;
pub mod convert;
pub mod jobs;
mod submit_stream;

use std::sync::{Arc, RwLock};

use slurm_common::auth::{unix_now, Authenticator};
use slurm_proto::v1;
use slurm_proto::ErrorCode;
use tokio::sync::{mpsc, oneshot, watch};
use tonic::{Request, Response, Status};

use crate::core::{Caller, Command, Reply, SignalRequest, Snapshot};

/// A reply with at least this many jobs schedules a heap trim
/// ([`crate::memory::trim_soon`]).
const BIG_REPLY: usize = 1_000;

/// Schedules a heap trim after a reply of `jobs` jobs when it is big. The
/// trim is a task: only inside a runtime (always so when serving).
fn trim_after_reply(jobs: usize) {
    if jobs >= BIG_REPLY && tokio::runtime::Handle::try_current().is_ok() {
        crate::memory::trim_soon();
    }
}

/// A command and where its reply goes.
pub type Envelope = (Command, oneshot::Sender<Reply>);

/// What every RPC handler shares.
#[derive(Debug)]
pub struct Shared {
    pub snapshot: RwLock<Arc<Snapshot>>,
    pub commands: mpsc::Sender<Envelope>,
    pub auth: Arc<dyn Authenticator>,
    /// `scontrol show config` entries, computed when control is taken.
    pub config: RwLock<Vec<v1::ConfigEntry>>,
    pub start_time: i64,
    /// The fixed part of the Ping reply (in_control and epoch come from
    /// `ha`).
    pub ping: v1::PingReply,
    /// Primary/backup state and the way to the HA shell.
    pub ha: Arc<crate::ha::Link>,
    /// Set to true to begin a graceful shutdown (scontrol shutdown).
    pub shutdown: watch::Sender<bool>,
    /// Uids allowed to stop the controller (root, SlurmUser).
    pub operators: Vec<u32>,
    /// The slurm.conf this controller reads (`scontrol reconfigure` reads
    /// it again).
    pub conf_path: std::path::PathBuf,
    /// StateSaveLocation, where the epoch file says who is in control.
    pub state_dir: std::path::PathBuf,
    /// How many SlurmctldHost entries slurm.conf has.
    pub controllers: usize,
}

impl Shared {
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.snapshot.read() {
            Ok(s) => Arc::clone(&s),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    pub fn config(&self) -> Vec<v1::ConfigEntry> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn set_config(&self, entries: Vec<v1::ConfigEntry>) {
        match self.config.write() {
            Ok(mut c) => *c = entries,
            Err(poisoned) => *poisoned.into_inner() = entries,
        }
    }

    fn is_operator(&self, uid: u32) -> bool {
        uid == 0 || self.operators.contains(&uid)
    }

    pub fn publish(&self, snap: Snapshot) {
        let snap = Arc::new(snap);
        match self.snapshot.write() {
            Ok(mut s) => *s = snap,
            Err(poisoned) => *poisoned.into_inner() = snap,
        }
    }
}

/// Both services over one [`Shared`].
#[derive(Debug, Clone)]
pub struct Service {
    shared: Arc<Shared>,
}

impl Service {
    pub fn new(shared: Arc<Shared>) -> Service {
        Service { shared }
    }

    /// The authenticated caller of a request only this controller's
    /// state can answer: refused with ESLURM_IN_STANDBY_MODE unless this
    /// controller is in control, so clients move on to the next one.
    fn caller<T>(&self, req: &Request<T>) -> Result<Caller, Status> {
        let caller = self.authenticate(req)?;
        if !self.shared.ha.in_control() {
            return Err(ErrorCode::InStandbyMode.to_status(""));
        }
        Ok(caller)
    }

    /// The authenticated caller, in any role (Ping, Takeover, Shutdown,
    /// RelinquishControl).
    fn authenticate<T>(&self, req: &Request<T>) -> Result<Caller, Status> {
        let token = slurm_proto::auth_credential(req.metadata())
            .ok_or_else(|| ErrorCode::ProtocolAuthentication.to_status("missing credential"))?;
        let claims = self
            .shared
            .auth
            .verify(token, unix_now())
            .map_err(|e| ErrorCode::ProtocolAuthentication.to_status(e.to_string()))?;
        Ok(Caller {
            uid: claims.uid.get(),
            gid: claims.gid.get(),
        })
    }

    async fn ask(&self, cmd: Command) -> Result<Reply, Status> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .commands
            .send((cmd, tx))
            .await
            .map_err(|_| ErrorCode::ShuttingDown.to_status(""))?;
        let reply = rx
            .await
            .map_err(|_| ErrorCode::ShuttingDown.to_status(""))?;
        match reply {
            Reply::Error { code, detail } => Err(code.to_status(detail)),
            other => Ok(other),
        }
    }

    async fn job_action(&self, cmd: Command) -> Result<Response<v1::JobActionReply>, Status> {
        match self.ask(cmd).await? {
            Reply::JobResults(results) => Ok(Response::new(v1::JobActionReply { results })),
            other => Err(unexpected(&other)),
        }
    }
}

/// The command a submission becomes. The user's name, when the request
/// has none, is resolved here by `name_of`, at the edge, so the core stays
/// free of passwd lookups; the name is journaled with the job.
fn submit_command(
    caller: Caller,
    request: v1::SubmitJobRequest,
    name_of: impl FnOnce(u32) -> String,
) -> Result<Command, Status> {
    let mut desc = request
        .job
        .ok_or_else(|| ErrorCode::MalformedRequest.to_status("no job description"))?;
    if desc.user_name.is_empty() {
        let uid = if desc.user_id == 0 {
            caller.uid
        } else {
            desc.user_id
        };
        desc.user_name = name_of(uid);
    }
    // Only the controller says what groups the user is in.
    desc.user_groups.clear();
    Ok(Command::Submit {
        caller,
        desc: Box::new(desc),
    })
}

/// Puts the job user's groups in a submission when a partition has
/// AllowGroups (the core checks them; looking them up costs a passwd and
/// group lookup, so only then).
fn add_user_groups(shared: &Shared, cmd: &mut Command) {
    let Command::Submit { caller, desc } = cmd else {
        return;
    };
    let snap = shared.snapshot();
    if !snap
        .partitions
        .iter()
        .any(|p| p.conf.allow_groups.is_some())
    {
        return;
    }
    let uid = if desc.user_id == 0 {
        caller.uid
    } else {
        desc.user_id
    };
    desc.user_groups = crate::server::group_names_of(uid);
}

fn unexpected(reply: &Reply) -> Status {
    ErrorCode::Internal.to_status(format!("unexpected reply {reply:?}"))
}

#[tonic::async_trait]
impl slurm_proto::SlurmController for Service {
    async fn submit_job(
        &self,
        request: Request<v1::SubmitJobRequest>,
    ) -> Result<Response<v1::SubmitJobReply>, Status> {
        let caller = self.caller(&request)?;
        let mut cmd = submit_command(caller, request.into_inner(), |uid| {
            crate::server::user_name_of(uid).unwrap_or_else(|| uid.to_string())
        })?;
        add_user_groups(&self.shared, &mut cmd);
        match self.ask(cmd).await? {
            Reply::Submitted { job_id, estimate } => Ok(Response::new(v1::SubmitJobReply {
                job_id,
                user_messages: Vec::new(),
                estimate,
            })),
            other => Err(unexpected(&other)),
        }
    }

    type SubmitJobsStream = slurm_proto::SubmitJobsReplyStream;

    async fn submit_jobs(
        &self,
        request: Request<tonic::Streaming<v1::SubmitJobRequest>>,
    ) -> Result<Response<Self::SubmitJobsStream>, Status> {
        let caller = self.caller(&request)?;
        Ok(Response::new(submit_stream::serve(
            Arc::clone(&self.shared),
            caller,
            request.into_inner(),
        )))
    }

    async fn get_jobs(
        &self,
        request: Request<v1::GetJobsRequest>,
    ) -> Result<Response<v1::GetJobsReply>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        let snap = self.shared.snapshot();
        let hiding = jobs::hiding_for(&self.shared, &snap, caller, &req);
        if req.changed_since > 0 && snap.last_update <= req.changed_since {
            return Ok(Response::new(v1::GetJobsReply {
                jobs: Vec::new(),
                last_update: snap.last_update,
                unchanged: true,
            }));
        }
        // Answered by `jobs::JobsRoute` when the server is built with it;
        // this is the same answer as a value (the tests compare the two).
        let now = unix_now();
        let fields = convert::JobFields::from_tags(&req.fields);
        let f = req.filter.unwrap_or_default();
        let jobs: Vec<v1::JobInfo> = jobs::select(&snap, &f, &hiding)
            .into_iter()
            .map(|j| convert::job_info_fields(&snap, j, now, fields))
            .collect();
        if jobs::names_jobs(&f) && jobs.is_empty() {
            return Err(ErrorCode::InvalidJobId.to_status(""));
        }
        trim_after_reply(jobs.len());
        Ok(Response::new(v1::GetJobsReply {
            jobs,
            last_update: snap.last_update,
            unchanged: false,
        }))
    }

    type StreamJobsStream = slurm_proto::JobsReplyStream;

    async fn stream_jobs(
        &self,
        request: Request<v1::GetJobsRequest>,
    ) -> Result<Response<Self::StreamJobsStream>, Status> {
        // Answered by `jobs::JobsRoute` when the server is built with it;
        // this is the same answer as values (the tests compare the two).
        let reply = self.get_jobs(request).await?.into_inner();
        let parts = jobs::split_reply(reply);
        Ok(Response::new(Box::pin(tonic::codegen::tokio_stream::iter(
            parts.into_iter().map(Ok),
        ))))
    }

    async fn get_nodes(
        &self,
        request: Request<v1::GetNodesRequest>,
    ) -> Result<Response<v1::GetNodesReply>, Status> {
        self.caller(&request)?;
        let req = request.into_inner();
        let snap = self.shared.snapshot();
        let mut names: Vec<String> = Vec::new();
        for expr in &req.names {
            match slurm_common::hostlist::expand(expr) {
                Ok(n) => names.extend(n),
                Err(_) => return Err(ErrorCode::InvalidNodeName.to_status(expr.clone())),
            }
        }
        let nodes: Vec<v1::NodeInfo> = snap
            .nodes
            .iter()
            .filter(|n| names.is_empty() || names.contains(&n.name))
            .filter(|n| {
                req.partitions.is_empty()
                    || n.partitions.iter().any(|&p| {
                        snap.partitions
                            .get(p)
                            .is_some_and(|p| req.partitions.iter().any(|w| w == p.name()))
                    })
            })
            .map(|n| convert::node_info(&snap, n))
            .collect();
        if !names.is_empty() && nodes.is_empty() {
            return Err(ErrorCode::InvalidNodeName.to_status(""));
        }
        Ok(Response::new(v1::GetNodesReply {
            nodes,
            last_update: snap.last_update,
            unchanged: false,
        }))
    }

    async fn get_partitions(
        &self,
        request: Request<v1::GetPartitionsRequest>,
    ) -> Result<Response<v1::GetPartitionsReply>, Status> {
        self.caller(&request)?;
        let req = request.into_inner();
        let snap = self.shared.snapshot();
        let partitions: Vec<v1::PartitionInfo> = snap
            .partitions
            .iter()
            .filter(|p| req.names.is_empty() || req.names.iter().any(|n| n == p.name()))
            .map(|p| convert::partition_info(&snap, p))
            .collect();
        if !req.names.is_empty() && partitions.is_empty() {
            return Err(ErrorCode::InvalidPartitionName.to_status(""));
        }
        Ok(Response::new(v1::GetPartitionsReply {
            partitions,
            last_update: snap.last_update,
            unchanged: false,
        }))
    }

    async fn get_config(
        &self,
        request: Request<v1::GetConfigRequest>,
    ) -> Result<Response<v1::GetConfigReply>, Status> {
        self.caller(&request)?;
        let mut entries = self.shared.config();
        // The one value that moves with every submission.
        let next = self.shared.snapshot().next_job_id;
        if let Some(e) = entries.iter_mut().find(|e| e.key == "NEXT_JOB_ID") {
            if next > 0 {
                e.value = next.to_string();
            }
        }
        Ok(Response::new(v1::GetConfigReply {
            entries,
            last_update: unix_now(),
        }))
    }

    async fn cancel_job(
        &self,
        request: Request<v1::CancelJobRequest>,
    ) -> Result<Response<v1::JobActionReply>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        // `scancel -b` / `-f` without `-s` sends SIGKILL where the flag
        // says (with `-b`, the batch shell alone) rather than cancelling.
        let signal = (req.batch_only || req.full)
            .then(|| SignalRequest::new(libc::SIGKILL as u32, req.batch_only, req.full));
        self.job_action(Command::Cancel {
            caller,
            filter: req.filter.unwrap_or_default(),
            signal,
        })
        .await
    }

    async fn signal_job(
        &self,
        request: Request<v1::SignalJobRequest>,
    ) -> Result<Response<v1::JobActionReply>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        self.job_action(Command::Cancel {
            caller,
            filter: req.filter.unwrap_or_default(),
            signal: Some(SignalRequest::new(req.signal, req.batch_only, req.full)),
        })
        .await
    }

    async fn hold_job(
        &self,
        request: Request<v1::HoldJobRequest>,
    ) -> Result<Response<v1::JobActionReply>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        self.job_action(Command::Hold {
            caller,
            filter: req.filter.unwrap_or_default(),
            user_hold: req.user_hold,
        })
        .await
    }

    async fn release_job(
        &self,
        request: Request<v1::ReleaseJobRequest>,
    ) -> Result<Response<v1::JobActionReply>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        self.job_action(Command::Release {
            caller,
            filter: req.filter.unwrap_or_default(),
        })
        .await
    }

    async fn requeue_job(
        &self,
        request: Request<v1::RequeueJobRequest>,
    ) -> Result<Response<v1::JobActionReply>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        self.job_action(Command::Requeue {
            caller,
            filter: req.filter.unwrap_or_default(),
            hold: req.hold,
        })
        .await
    }

    async fn suspend_job(
        &self,
        request: Request<v1::SuspendJobRequest>,
    ) -> Result<Response<v1::JobActionReply>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        self.job_action(Command::Suspend {
            caller,
            filter: req.filter.unwrap_or_default(),
            resume: req.resume,
        })
        .await
    }

    async fn top_job(
        &self,
        request: Request<v1::TopJobRequest>,
    ) -> Result<Response<v1::TopJobReply>, Status> {
        let caller = self.caller(&request)?;
        let filter = request.into_inner().filter.unwrap_or_default();
        match self.ask(Command::Top { caller, filter }).await? {
            Reply::Ok => Ok(Response::new(v1::TopJobReply {})),
            other => Err(unexpected(&other)),
        }
    }

    async fn update_job(
        &self,
        request: Request<v1::UpdateJobRequest>,
    ) -> Result<Response<v1::JobActionReply>, Status> {
        let caller = self.caller(&request)?;
        self.job_action(Command::UpdateJob {
            caller,
            request: Box::new(request.into_inner()),
        })
        .await
    }

    async fn update_node(
        &self,
        request: Request<v1::UpdateNodeRequest>,
    ) -> Result<Response<v1::UpdateNodeReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::UpdateNode {
                caller,
                request: request.into_inner(),
            })
            .await?
        {
            Reply::Ok => Ok(Response::new(v1::UpdateNodeReply {})),
            other => Err(unexpected(&other)),
        }
    }

    async fn update_partition(
        &self,
        request: Request<v1::UpdatePartitionRequest>,
    ) -> Result<Response<v1::UpdatePartitionReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::UpdatePartition {
                caller,
                request: request.into_inner(),
            })
            .await?
        {
            Reply::Ok => Ok(Response::new(v1::UpdatePartitionReply {})),
            other => Err(unexpected(&other)),
        }
    }

    async fn create_partition(
        &self,
        request: Request<v1::CreatePartitionRequest>,
    ) -> Result<Response<v1::CreatePartitionReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::CreatePartition {
                caller,
                request: request.into_inner(),
            })
            .await?
        {
            Reply::Ok => Ok(Response::new(v1::CreatePartitionReply {})),
            other => Err(unexpected(&other)),
        }
    }

    async fn delete_partition(
        &self,
        request: Request<v1::DeletePartitionRequest>,
    ) -> Result<Response<v1::DeletePartitionReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::DeletePartition {
                caller,
                request: request.into_inner(),
            })
            .await?
        {
            Reply::Ok => Ok(Response::new(v1::DeletePartitionReply {})),
            other => Err(unexpected(&other)),
        }
    }

    async fn ping(
        &self,
        request: Request<v1::PingRequest>,
    ) -> Result<Response<v1::PingReply>, Status> {
        self.authenticate(&request)?;
        let mut reply = self.shared.ping.clone();
        reply.in_control = self.shared.ha.in_control();
        reply.epoch = self.shared.ha.epoch();
        if reply.in_control && self.shared.controllers > 1 {
            // Claim control only while the epoch file still says so: a
            // controller deposed a moment ago may not have noticed yet, and
            // two controllers must never both answer "in control".
            let dir = self.shared.state_dir.clone();
            let (epoch, index) = (reply.epoch, reply.index);
            let still = tokio::task::spawn_blocking(move || {
                matches!(
                    crate::ha::epoch::read_epoch(&dir),
                    Ok(Some(r)) if r.epoch == epoch && r.owner == index
                )
            })
            .await
            .unwrap_or(false);
            reply.in_control = still;
        }
        Ok(Response::new(reply))
    }

    async fn reconfigure(
        &self,
        request: Request<v1::ReconfigureRequest>,
    ) -> Result<Response<v1::ReconfigureReply>, Status> {
        let caller = self.caller(&request)?;
        if !self.shared.is_operator(caller.uid) {
            return Err(ErrorCode::AccessDenied.to_status(""));
        }
        // Parsed here, off the owner task; a broken file changes nothing.
        let path = self.shared.conf_path.clone();
        let text = path.display().to_string();
        let parsed =
            tokio::task::spawn_blocking(move || slurm_common::conf::SlurmConf::load(&text))
                .await
                .map_err(|e| ErrorCode::Unspecified.to_status(e.to_string()))?
                .map_err(|e| {
                    tracing::error!(error = %e, "reconfigure: slurm.conf not taken");
                    ErrorCode::NotSupported
                        .to_status(format!("cannot load {}: {e}", path.display()))
                })?;
        for w in &parsed.warnings {
            tracing::warn!("{}: {:?}", w.loc.file, w.kind);
        }
        let conf = parsed.conf;
        match self
            .ask(Command::Reconfigure {
                caller,
                conf: Box::new(conf.clone()),
            })
            .await?
        {
            Reply::Ok => {
                // As in Slurm, a level set by `scontrol setdebug` lasts
                // until the next reconfigure. Without the daemon's own log
                // (the library in tests) there is nothing to reset.
                let _ = crate::logging::set_level(conf.slurmctld_debug);
                let next = self.shared.snapshot().next_job_id;
                self.shared.set_config(crate::server::config_entries_for(
                    &conf,
                    &self.shared.conf_path,
                    self.shared.start_time,
                    next,
                ));
                Ok(Response::new(v1::ReconfigureReply {}))
            }
            other => Err(unexpected(&other)),
        }
    }

    async fn shutdown(
        &self,
        request: Request<v1::ShutdownRequest>,
    ) -> Result<Response<v1::ShutdownReply>, Status> {
        let caller = self.authenticate(&request)?;
        if !self.shared.is_operator(caller.uid) {
            // Slurm's answer: ESLURM_USER_ID_MISSING.
            return Err(ErrorCode::InvalidUserId.to_status(""));
        }
        let scope = request.get_ref().scope;
        if scope == v1::ShutdownScope::Abort as i32 {
            tracing::warn!(uid = caller.uid, "abort requested: stopping at once");
            admin::abort_soon();
            return Ok(Response::new(v1::ShutdownReply {}));
        }
        tracing::info!(uid = caller.uid, scope, "shutdown requested");
        // As in Slurm, every controller stops, not only the one in charge
        // (which would otherwise hand over to a backup); the one in charge
        // also stops every slurmd unless asked for the controllers only.
        let in_control = self.shared.ha.in_control();
        if in_control {
            self.shared.ha.shutdown_peers(scope).await;
        }
        let nodes_too = in_control && scope != v1::ShutdownScope::Controller as i32;
        admin::begin_shutdown(Arc::clone(&self.shared), nodes_too);
        Ok(Response::new(v1::ShutdownReply {}))
    }

    async fn takeover(
        &self,
        request: Request<v1::TakeoverRequest>,
    ) -> Result<Response<v1::TakeoverReply>, Status> {
        let caller = self.authenticate(&request)?;
        if !self.shared.is_operator(caller.uid) {
            return Err(ErrorCode::AccessDenied.to_status(""));
        }
        let me = self.shared.ha.index();
        if let Some(want) = request.get_ref().backup_index {
            if usize::try_from(want).ok() != Some(me) {
                return Err(ErrorCode::MalformedRequest.to_status(format!(
                    "this is SlurmctldHost[{me}], not SlurmctldHost[{want}]"
                )));
            }
        }
        match self.shared.ha.takeover().await {
            Ok(()) => Ok(Response::new(v1::TakeoverReply {})),
            Err(refusal) => Err(ErrorCode::Disabled.to_status(match refusal {
                crate::ha::Refusal::PreemptedBy(i) => {
                    format!("SlurmctldHost[{i}] is taking control")
                }
                crate::ha::Refusal::Busy => "control is changing hands; try again".to_string(),
                crate::ha::Refusal::NotTaken => {
                    "cannot write the epoch in StateSaveLocation".to_string()
                }
            })),
        }
    }

    async fn get_licenses(
        &self,
        request: Request<v1::GetLicensesRequest>,
    ) -> Result<Response<v1::GetLicensesReply>, Status> {
        self.caller(&request)?;
        let snap = self.shared.snapshot();
        Ok(Response::new(convert::licenses_reply(&snap)))
    }

    async fn get_batch_script(
        &self,
        request: Request<v1::GetBatchScriptRequest>,
    ) -> Result<Response<v1::GetBatchScriptReply>, Status> {
        let caller = self.caller(&request)?;
        let script = admin::batch_script(&self.shared, caller, request.get_ref().job_id).await?;
        Ok(Response::new(v1::GetBatchScriptReply { script }))
    }

    async fn set_debug_level(
        &self,
        request: Request<v1::SetDebugLevelRequest>,
    ) -> Result<Response<v1::SetDebugLevelReply>, Status> {
        let caller = self.caller(&request)?;
        admin::set_debug_level(&self.shared, caller, request.get_ref().level)?;
        Ok(Response::new(v1::SetDebugLevelReply {}))
    }

    async fn set_debug_flags(
        &self,
        request: Request<v1::SetDebugFlagsRequest>,
    ) -> Result<Response<v1::SetDebugFlagsReply>, Status> {
        let caller = self.caller(&request)?;
        let r = request.get_ref();
        let flags = admin::set_debug_flags(&self.shared, caller, &r.add, &r.remove)?;
        Ok(Response::new(v1::SetDebugFlagsReply { flags }))
    }
}

#[tonic::async_trait]
impl v1::slurm_controller_peer_server::SlurmControllerPeer for Service {
    async fn relinquish_control(
        &self,
        request: Request<v1::RelinquishControlRequest>,
    ) -> Result<Response<v1::RelinquishControlReply>, Status> {
        let caller = self.authenticate(&request)?;
        if !self.shared.is_operator(caller.uid) {
            return Err(ErrorCode::AccessDenied.to_status(""));
        }
        let me = self.shared.ha.index();
        let from = usize::try_from(request.get_ref().from_index).unwrap_or(usize::MAX);
        if from == me {
            return Err(ErrorCode::MalformedRequest
                .to_status(format!("SlurmctldHost[{me}] cannot relinquish to itself")));
        }
        // No shell any more: the daemon is stopping and acts no more.
        let answer = self
            .shared
            .ha
            .relinquish(from)
            .await
            .unwrap_or(crate::ha::Released {
                released: true,
                epoch: self.shared.ha.epoch(),
            });
        Ok(Response::new(v1::RelinquishControlReply {
            released: answer.released,
            index: u32::try_from(me).unwrap_or(u32::MAX),
            epoch: answer.epoch,
        }))
    }
}

#[tonic::async_trait]
impl slurm_proto::SlurmNodeReports for Service {
    async fn register_node(
        &self,
        request: Request<v1::RegisterNodeRequest>,
    ) -> Result<Response<v1::RegisterNodeReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::RegisterNode {
                caller,
                request: Box::new(request.into_inner()),
            })
            .await?
        {
            Reply::Registered {
                abort_job_ids,
                invalid,
            } => Ok(Response::new(v1::RegisterNodeReply {
                abort_job_ids,
                invalid: invalid.is_some(),
                invalid_reason: invalid.unwrap_or_default(),
            })),
            other => Err(unexpected(&other)),
        }
    }

    async fn job_complete(
        &self,
        request: Request<v1::JobCompleteRequest>,
    ) -> Result<Response<v1::JobCompleteReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::JobComplete {
                caller,
                request: request.into_inner(),
            })
            .await?
        {
            Reply::Ok => Ok(Response::new(v1::JobCompleteReply {})),
            other => Err(unexpected(&other)),
        }
    }

    async fn epilog_complete(
        &self,
        request: Request<v1::EpilogCompleteRequest>,
    ) -> Result<Response<v1::EpilogCompleteReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::EpilogComplete {
                caller,
                request: request.into_inner(),
            })
            .await?
        {
            Reply::Ok => Ok(Response::new(v1::EpilogCompleteReply {})),
            other => Err(unexpected(&other)),
        }
    }

    async fn prolog_complete(
        &self,
        request: Request<v1::PrologCompleteRequest>,
    ) -> Result<Response<v1::PrologCompleteReply>, Status> {
        let caller = self.caller(&request)?;
        match self
            .ask(Command::PrologComplete {
                caller,
                request: request.into_inner(),
            })
            .await?
        {
            Reply::Ok => Ok(Response::new(v1::PrologCompleteReply {})),
            other => Err(unexpected(&other)),
        }
    }
}
