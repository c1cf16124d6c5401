//! The agent: carries actions to slurmd.
//!
//! One gRPC channel per node, created lazily and reused. Every call carries
//! a fresh controller credential in `x-slurm-auth`; a launch also carries it
//! in the request's `credential` field (payload `job=<id>`), which slurmd
//! checks before starting anything. Failures never panic: a failed launch
//! becomes [`Command::LaunchFailed`] for the owner task; a failed terminate
//! or signal is logged (the node's re-registration reconciles it).
//!
//! Fan-out is plain parallel sends from [`Agent::send_to_nodes`]; routing
//! through a TreeWidth tree will replace its body, not its callers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use slurm_common::auth::{unix_now, Authenticator, Claims};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1;
use slurm_proto::SlurmNodeClient;
use tokio::sync::{mpsc, oneshot};
use tonic::transport::{Channel, Endpoint};

use crate::core::{Action, Command};
use crate::persist::{scripts, ScriptRef};
use crate::rpc::Envelope;

/// A message for every node of a job.
#[derive(Debug, Clone)]
pub enum NodeMessage {
    Terminate(v1::NodeTerminateJobRequest),
    Signal(v1::NodeSignalJobRequest),
}

/// Who the controller is when it talks to nodes.
#[derive(Debug, Clone)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub host: String,
    pub ttl_secs: u32,
}

#[derive(Debug)]
struct NodeTarget {
    name: String,
    channel: Option<Channel>,
}

/// Sends actions to slurmd daemons.
#[derive(Debug, Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    nodes: Vec<NodeTarget>,
    auth: Arc<dyn Authenticator>,
    identity: Identity,
    commands: mpsc::Sender<Envelope>,
    timeout: Duration,
    /// StateSaveLocation, where the job scripts are.
    state_dir: PathBuf,
}

impl Agent {
    /// `nodes` are (name, host, port) in controller node order; job
    /// scripts are read from `state_dir` (StateSaveLocation).
    pub fn new(
        nodes: &[(String, String, u16)],
        auth: Arc<dyn Authenticator>,
        identity: Identity,
        commands: mpsc::Sender<Envelope>,
        timeout: Duration,
        state_dir: PathBuf,
    ) -> Agent {
        let nodes = nodes
            .iter()
            .map(|(name, host, port)| {
                let channel = Endpoint::from_shared(format!("http://{host}:{port}"))
                    .ok()
                    .map(|e| {
                        e.connect_timeout(timeout)
                            .timeout(timeout)
                            .tcp_nodelay(true)
                            .connect_lazy()
                    });
                if channel.is_none() {
                    tracing::error!(node = %name, %host, port, "node address is not a valid uri");
                }
                NodeTarget {
                    name: name.clone(),
                    channel,
                }
            })
            .collect();
        Agent {
            inner: Arc::new(Inner {
                nodes,
                auth,
                identity,
                commands,
                timeout,
                state_dir,
            }),
        }
    }

    /// Performs `action` in the background.
    pub fn run(&self, action: Action) {
        let agent = self.clone();
        tokio::spawn(async move {
            match action {
                Action::LaunchBatch {
                    job_id,
                    node,
                    request,
                    files,
                } => agent.launch(job_id, node, *request, files).await,
                Action::TerminateJob {
                    job_id,
                    nodes,
                    request,
                } => {
                    agent
                        .send_to_nodes(job_id, &nodes, NodeMessage::Terminate(request))
                        .await
                }
                Action::SignalJob {
                    job_id,
                    nodes,
                    request,
                } => {
                    agent
                        .send_to_nodes(job_id, &nodes, NodeMessage::Signal(request))
                        .await
                }
            }
        });
    }

    fn credential(&self, payload: Vec<u8>) -> Result<String, String> {
        let id = &self.inner.identity;
        let claims = Claims::new(
            Uid::new(id.uid),
            Gid::new(id.gid),
            id.host.clone(),
            unix_now(),
            id.ttl_secs,
        )
        .with_payload(payload);
        self.inner.auth.create(&claims).map_err(|e| e.to_string())
    }

    fn client(&self, node: usize) -> Result<(String, SlurmNodeClient<Channel>), String> {
        let target = self
            .inner
            .nodes
            .get(node)
            .ok_or_else(|| format!("no node with index {node}"))?;
        let channel = target
            .channel
            .clone()
            .ok_or_else(|| format!("node {} has no usable address", target.name))?;
        Ok((target.name.clone(), SlurmNodeClient::new(channel)))
    }

    fn request<T>(&self, msg: T, token: &str) -> Result<tonic::Request<T>, String> {
        let mut req = tonic::Request::new(msg);
        req.set_timeout(self.inner.timeout);
        slurm_proto::set_auth_credential(req.metadata_mut(), token).map_err(|e| e.to_string())?;
        Ok(req)
    }

    async fn launch(
        &self,
        job_id: u32,
        node: usize,
        mut request: v1::LaunchBatchRequest,
        files: ScriptRef,
    ) {
        let result = async {
            let dir = self.inner.state_dir.clone();
            let (script, environment) =
                tokio::task::spawn_blocking(move || scripts::read(&dir, job_id, files))
                    .await
                    .map_err(|e| format!("script reader failed: {e}"))?
                    .map_err(|e| format!("cannot read the job script: {e}"))?;
            request.script = script;
            request.environment = environment;
            let token = self.credential(format!("job={job_id}").into_bytes())?;
            request.credential = token.clone().into_bytes();
            let (name, mut client) = self.client(node)?;
            let req = self.request(request, &token)?;
            client
                .launch_batch(req)
                .await
                .map_err(|s| format!("launch on {name} failed: {}", s.message()))?;
            tracing::debug!(job_id, node = %name, "batch script launched");
            Ok::<(), String>(())
        }
        .await;
        if let Err(detail) = result {
            tracing::warn!(job_id, %detail, "launch failed");
            let (tx, _rx) = oneshot::channel();
            let _ = self
                .inner
                .commands
                .send((Command::LaunchFailed { job_id, detail }, tx))
                .await;
        }
    }

    /// Sends `msg` to every node in `nodes` at once and waits for all.
    pub async fn send_to_nodes(&self, job_id: u32, nodes: &[usize], msg: NodeMessage) {
        let token = match self.credential(format!("job={job_id}").into_bytes()) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(job_id, error = %e, "cannot create a credential");
                return;
            }
        };
        let mut set = tokio::task::JoinSet::new();
        for &node in nodes {
            let agent = self.clone();
            let msg = msg.clone();
            let token = token.clone();
            set.spawn(async move {
                let (name, mut client) = agent.client(node)?;
                let sent = match msg {
                    NodeMessage::Terminate(m) => client
                        .terminate_job(agent.request(m, &token)?)
                        .await
                        .map(|_| ()),
                    NodeMessage::Signal(m) => client
                        .signal_job(agent.request(m, &token)?)
                        .await
                        .map(|_| ()),
                };
                sent.map_err(|s| format!("{name}: {}", s.message()))
            });
        }
        while let Some(r) = set.join_next().await {
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(job_id, error = %e, "message to node failed"),
                Err(e) => tracing::error!(job_id, error = %e, "send task failed"),
            }
        }
    }
}
