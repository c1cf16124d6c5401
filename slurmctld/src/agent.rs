//! The agent: carries actions to slurmd.
//!
//! Connections to nodes are made on demand and kept for reuse, but at most
//! TreeWidth of them at once: when another node must be reached, the least
//! recently used idle one is closed, and when all are busy the call waits
//! for one to be free. So the controller never holds more than TreeWidth
//! connections to nodes, however many broadcasts overlap and however many
//! nodes it has talked to. Every call carries
//! a fresh controller credential in `x-slurm-auth`; a launch also carries it
//! in the request's `credential` field (payload `job=<id>`), which slurmd
//! checks before starting anything. slurmd answers a launch as soon as it
//! has verified it, before the node's Prolog runs, so a launch waits
//! MessageTimeout like any call; how the Prolog and the script end arrive
//! later as reports (PrologComplete, JobComplete). Failures never panic: a
//! failed launch becomes [`Command::LaunchFailed`] for the owner task, or
//! [`Command::PrologFailed`] when the node refused it with
//! ESLURMD_PROLOG_FAILED (a slurmd that runs its Prolog before answering);
//! nodes that did not answer a broadcast become [`Command::NodeResponses`],
//! so a dead slurmd turns into node state, never into a stuck controller.
//!
//! Messages for several nodes (terminate, signal, ping, registration
//! requests, the Prolog launch of PrologFlags=Alloc) travel the TreeWidth
//! tree: the controller sends `Forward` to at
//! most TreeWidth relays at a time, each relay passes the message on to its
//! share and answers for it. A relay that is unreachable or silent is
//! reported failed and its branch is split again and sent without it
//! (`slurm_common::tree::Fanout`), exactly as slurmd's relays do it
//! (`slurmd::forward`). Each level of the tree may take MessageTimeout. The
//! hops are logged at debug level as `forward: <kind> to <relay> for
//! <nodes> via slurmctld` (`for -` when the relay passes nothing on).
//!
//! Actions about one job (launch, Prolog launch, signal, terminate) reach
//! the nodes in the order the controller decided them: each job has a
//! queue, and its next action starts only once the previous one's delivery
//! is over, whether it succeeded, failed or timed out. Without this, two
//! actions issued milliseconds apart (`scontrol suspend` then `resume`, a
//! launch then `scancel`) would race as separate tasks, and a SIGCONT
//! overtaken by its SIGSTOP would leave the job stopped while the
//! controller believes it runs. Different jobs never wait for each other,
//! so a slow or dead node only delays the jobs it holds; actions without a
//! job (reconfigure) are sent at once. A job's queue lives only while it
//! has something to deliver.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_common::auth::{unix_now, Authenticator, Claims};
use slurm_common::ids::{Gid, Uid};
use slurm_common::tree::{Fanout, TreeWidth};
use slurm_proto::v1::{self, node_message, NodeMessage, NodeResult};
use slurm_proto::{ErrorCode, SlurmNodeClient};
use tokio::sync::{mpsc, oneshot};
use tonic::transport::{Channel, Endpoint};

use crate::core::{Action, Command};
use crate::persist::{scripts, ScriptRef};
use crate::rpc::Envelope;

/// Who the controller is when it talks to nodes.
#[derive(Debug, Clone)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub host: String,
    pub ttl_secs: u32,
}

/// One node's outcome of a broadcast.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeOutcome {
    /// Controller node index.
    pub node: usize,
    /// The node's reply, or the error number and detail.
    pub result: Result<v1::NodeReply, (ErrorCode, String)>,
    /// Relays the message passed through, first hop first.
    pub via: Vec<String>,
}

#[derive(Debug)]
struct NodeTarget {
    name: String,
    /// Where the node listens; `None` when its address is not a valid URI.
    endpoint: Option<Endpoint>,
}

/// The open node connections, at most `cap`, by node index. A connection
/// with calls in flight is never closed; when every slot is busy, a caller
/// for another node waits for one to come free.
#[derive(Debug)]
struct ChannelCache {
    cap: usize,
    clock: u64,
    open: HashMap<usize, Slot>,
}

#[derive(Debug)]
struct Slot {
    channel: Channel,
    last_use: u64,
    calls: usize,
}

impl ChannelCache {
    fn new(cap: usize) -> Self {
        ChannelCache {
            cap: cap.max(1),
            clock: 0,
            open: HashMap::new(),
        }
    }

    /// The channel to `node` with one more call counted on it, made with
    /// `make` when there is none (closing the least recently used idle one
    /// when the cache is full); `None` when full and every slot is busy.
    fn take(&mut self, node: usize, make: impl FnOnce() -> Channel) -> Option<Channel> {
        self.clock += 1;
        let now = self.clock;
        if let Some(slot) = self.open.get_mut(&node) {
            slot.last_use = now;
            slot.calls += 1;
            return Some(slot.channel.clone());
        }
        if self.open.len() >= self.cap {
            let idle = self
                .open
                .iter()
                .filter(|(_, s)| s.calls == 0)
                .min_by_key(|(_, s)| s.last_use)
                .map(|(&n, _)| n)?;
            self.open.remove(&idle);
        }
        let channel = make();
        self.open.insert(
            node,
            Slot {
                channel: channel.clone(),
                last_use: now,
                calls: 1,
            },
        );
        Some(channel)
    }

    /// A call on `node`'s channel is over.
    fn release(&mut self, node: usize) {
        if let Some(slot) = self.open.get_mut(&node) {
            slot.calls = slot.calls.saturating_sub(1);
        }
    }

    fn len(&self) -> usize {
        self.open.len()
    }
}

/// One call's hold on a node connection; released when dropped.
struct Lease {
    inner: Arc<Inner>,
    node: usize,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.inner
            .channels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .release(self.node);
        self.inner.slot_freed.notify_waiters();
    }
}

/// Sends actions to slurmd daemons.
#[derive(Debug, Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    nodes: Vec<NodeTarget>,
    index: HashMap<String, usize>,
    /// Open connections, at most TreeWidth (all nodes when flat).
    channels: std::sync::Mutex<ChannelCache>,
    /// Signalled whenever a call ends, for callers waiting for a slot.
    slot_freed: tokio::sync::Notify,
    auth: Arc<dyn Authenticator>,
    identity: Identity,
    commands: mpsc::Sender<Envelope>,
    /// MessageTimeout: one call, or one level of the tree.
    timeout: Duration,
    tree_width: TreeWidth,
    /// StateSaveLocation, where the job scripts are.
    state_dir: PathBuf,
    /// Forward calls in flight now, and the most seen at once.
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    /// Jobs whose actions are being delivered, with the actions waiting
    /// behind the one in delivery. An entry exists exactly while a task
    /// delivers for that job; never locked across an await.
    jobs: std::sync::Mutex<HashMap<u32, VecDeque<Action>>>,
}

/// Counts one call in flight for as long as it lives.
struct InFlight<'a>(&'a Inner);

impl<'a> InFlight<'a> {
    fn new(inner: &'a Inner) -> Self {
        let now = inner.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        inner.peak.fetch_max(now, Ordering::Relaxed);
        InFlight(inner)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a launch failed.
struct LaunchFailure {
    detail: String,
    /// The node whose Prolog failed, when that was the reason.
    prolog_failed_on: Option<String>,
}

impl From<String> for LaunchFailure {
    fn from(detail: String) -> Self {
        Self {
            detail,
            prolog_failed_on: None,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn error_result(node: &str, code: ErrorCode, detail: String) -> NodeResult {
    NodeResult {
        node: node.to_string(),
        error_code: code.number(),
        error_detail: detail,
        reply: None,
        via: Vec::new(),
    }
}

/// The kind of message, as the logs name it.
fn kind(body: &node_message::Body) -> &'static str {
    match body {
        node_message::Body::Ping(_) => "ping",
        node_message::Body::SignalJob(_) => "signal",
        node_message::Body::TerminateJob(_) => "terminate",
        node_message::Body::Reconfigure(_) => "reconfigure",
        node_message::Body::LaunchProlog(_) => "prolog",
        node_message::Body::Shutdown(_) => "shutdown",
    }
}

/// The job whose actions must keep their order, if `action` has one.
fn ordered_job(action: &Action) -> Option<u32> {
    match action {
        Action::LaunchBatch { job_id, .. }
        | Action::LaunchProlog { job_id, .. }
        | Action::TerminateJob { job_id, .. }
        | Action::SignalJob { job_id, .. } => Some(*job_id),
        Action::ReconfigureNodes { .. } => None,
    }
}

/// The delivery task of one job. Should the task be cancelled (only when
/// the runtime stops), its entry goes with it, queued actions included, so
/// that no job is left with an entry and no task to drain it.
struct JobWorker {
    inner: Arc<Inner>,
    job_id: u32,
    done: bool,
}

impl Drop for JobWorker {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let dropped = self
            .inner
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.job_id)
            .map_or(0, |q| q.len());
        tracing::debug!(job_id = self.job_id, dropped, "job delivery cancelled");
    }
}

impl Agent {
    /// `nodes` are (name, host, port) in controller node order; job
    /// scripts are read from `state_dir` (StateSaveLocation). `timeout`
    /// is MessageTimeout; broadcasts fan out `tree_width` at a time.
    pub fn new(
        nodes: &[(String, String, u16)],
        auth: Arc<dyn Authenticator>,
        identity: Identity,
        commands: mpsc::Sender<Envelope>,
        timeout: Duration,
        state_dir: PathBuf,
        tree_width: TreeWidth,
    ) -> Agent {
        let nodes: Vec<NodeTarget> = nodes
            .iter()
            .map(|(name, host, port)| {
                let host = if host.contains(':') && !host.starts_with('[') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                // No per-call timeout on the channel: each call sets its own
                // (a relay's answer may take several levels of the tree).
                let endpoint = Endpoint::from_shared(format!("http://{host}:{port}"))
                    .ok()
                    .map(|e| e.connect_timeout(timeout).tcp_nodelay(true));
                if endpoint.is_none() {
                    tracing::error!(node = %name, %host, port, "node address is not a valid uri");
                }
                NodeTarget {
                    name: name.clone(),
                    endpoint,
                }
            })
            .collect();
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        let cap = tree_width.fan_out(nodes.len());
        Agent {
            inner: Arc::new(Inner {
                channels: std::sync::Mutex::new(ChannelCache::new(cap)),
                slot_freed: tokio::sync::Notify::new(),
                nodes,
                index,
                auth,
                identity,
                commands,
                timeout,
                tree_width,
                state_dir,
                in_flight: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                jobs: std::sync::Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Performs `action` in the background. Actions about the same job
    /// are delivered one after the other, in the order given here.
    pub fn run(&self, action: Action) {
        let Some(job_id) = ordered_job(&action) else {
            let agent = self.clone();
            tokio::spawn(async move { agent.perform(action).await });
            return;
        };
        {
            let mut jobs = self.lock_jobs();
            match jobs.entry(job_id) {
                Entry::Occupied(mut queue) => {
                    queue.get_mut().push_back(action);
                    return;
                }
                Entry::Vacant(slot) => {
                    slot.insert(VecDeque::new());
                }
            }
        }
        tokio::spawn(self.clone().deliver_in_order(job_id, action));
    }

    /// Jobs with actions being delivered or waiting to be.
    pub fn jobs_in_delivery(&self) -> usize {
        self.lock_jobs().len()
    }

    fn lock_jobs(&self) -> std::sync::MutexGuard<'_, HashMap<u32, VecDeque<Action>>> {
        self.inner
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Delivers `first`, then every action queued for `job_id` meanwhile,
    /// and removes the job's entry when nothing is left. The emptiness
    /// check and the removal happen under one lock, so an action queued
    /// concurrently is either taken here or finds no entry and starts a
    /// new task.
    async fn deliver_in_order(self, job_id: u32, first: Action) {
        let mut worker = JobWorker {
            inner: Arc::clone(&self.inner),
            job_id,
            done: false,
        };
        let mut next = first;
        loop {
            let agent = self.clone();
            // A task of its own, so that a panic while delivering one
            // action neither loses the actions behind it nor their order.
            let delivery = tokio::spawn(async move { agent.perform(next).await });
            if let Err(e) = delivery.await {
                tracing::error!(job_id, error = %e, "delivery task failed");
            }
            let mut jobs = self.lock_jobs();
            match jobs.get_mut(&job_id).and_then(VecDeque::pop_front) {
                Some(action) => next = action,
                None => {
                    jobs.remove(&job_id);
                    worker.done = true;
                    return;
                }
            }
        }
    }

    /// Delivers one action and reports its failures to the owner task.
    async fn perform(&self, action: Action) {
        match action {
            Action::LaunchBatch {
                job_id,
                node,
                request,
                files,
            } => self.launch(job_id, node, *request, files).await,
            Action::LaunchProlog {
                job_id,
                nodes,
                request,
            } => {
                self.job_broadcast(job_id, &nodes, node_message::Body::LaunchProlog(request))
                    .await
            }
            Action::TerminateJob {
                job_id,
                nodes,
                request,
            } => {
                self.job_broadcast(job_id, &nodes, node_message::Body::TerminateJob(request))
                    .await
            }
            Action::SignalJob {
                job_id,
                nodes,
                request,
            } => {
                self.job_broadcast(job_id, &nodes, node_message::Body::SignalJob(request))
                    .await
            }
            Action::ReconfigureNodes { nodes } => {
                let budget = self.broadcast_budget(nodes.len(), self.message_timeout());
                let outcomes = self.ping(&nodes, true, budget).await;
                let failed: Vec<&str> = outcomes
                    .iter()
                    .filter(|o| o.result.is_err())
                    .filter_map(|o| self.node_name(o.node))
                    .collect();
                if failed.is_empty() {
                    tracing::info!(nodes = nodes.len(), "nodes told to reconfigure");
                } else {
                    tracing::warn!(?failed, "nodes not told to reconfigure");
                }
            }
        }
    }

    /// The node names, in controller order.
    pub fn node_name(&self, node: usize) -> Option<&str> {
        self.inner.nodes.get(node).map(|n| n.name.as_str())
    }

    pub fn tree_width(&self) -> TreeWidth {
        self.inner.tree_width
    }

    /// MessageTimeout, the time one level of the tree may take.
    pub fn message_timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The most Forward calls this agent had in flight at once.
    pub fn peak_in_flight(&self) -> usize {
        self.inner.peak.load(Ordering::Relaxed)
    }

    /// Time for a broadcast to `len` nodes when each level may take
    /// `per_level`: one slot per level of the tree and one for rerouting.
    pub fn broadcast_budget(&self, len: usize, per_level: Duration) -> Duration {
        Duration::from_millis(slurm_common::tree::total_budget_ms(
            len,
            self.inner.tree_width,
            millis(per_level),
        ))
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

    /// Node connections kept open now (at most TreeWidth).
    pub fn open_channels(&self) -> usize {
        self.inner
            .channels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// A client for `node` and the lease that keeps its connection open;
    /// waits while TreeWidth connections are all busy.
    async fn client(
        &self,
        node: usize,
    ) -> Result<(String, SlurmNodeClient<Channel>, Lease), String> {
        let target = self
            .inner
            .nodes
            .get(node)
            .ok_or_else(|| format!("no node with index {node}"))?;
        let endpoint = target
            .endpoint
            .as_ref()
            .ok_or_else(|| format!("node {} has no usable address", target.name))?;
        loop {
            let freed = self.inner.slot_freed.notified();
            tokio::pin!(freed);
            // Registered before looking, so a release in between wakes us.
            freed.as_mut().enable();
            let taken = self
                .inner
                .channels
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(node, || endpoint.connect_lazy());
            if let Some(channel) = taken {
                let lease = Lease {
                    inner: Arc::clone(&self.inner),
                    node,
                };
                return Ok((target.name.clone(), SlurmNodeClient::new(channel), lease));
            }
            freed.await;
        }
    }

    fn request<T>(
        &self,
        msg: T,
        token: &str,
        timeout: Duration,
    ) -> Result<tonic::Request<T>, String> {
        let mut req = tonic::Request::new(msg);
        // A little past the caller's own timeout, so that silence always
        // ends there (SocketTimeout) rather than in a cancelled call.
        req.set_timeout(timeout + Duration::from_millis(100));
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
            // An array task's files are its array's, recorded under its id.
            let owner = request.array.as_ref().map_or(job_id, |a| a.array_job_id);
            let (script, environment) =
                tokio::task::spawn_blocking(move || scripts::read(&dir, owner, files))
                    .await
                    .map_err(|e| format!("script reader failed: {e}"))?
                    .map_err(|e| format!("cannot read the job script: {e}"))?;
            request.script = script;
            request.environment = environment;
            let token = self.credential(format!("job={job_id}").into_bytes())?;
            request.credential = token.clone().into_bytes();
            let (name, mut client, _lease) = self.client(node).await?;
            let timeout = self.inner.timeout;
            let req = self.request(request, &token, timeout)?;
            match tokio::time::timeout(timeout, client.launch_batch(req)).await {
                Ok(Ok(_)) => {}
                Ok(Err(s)) => {
                    let (code, _) = ErrorCode::from_status(&s);
                    return Err(LaunchFailure {
                        detail: format!("launch on {name} failed: {}", s.message()),
                        prolog_failed_on: (code == ErrorCode::PrologFailed).then_some(name),
                    });
                }
                Err(_) => {
                    return Err(format!(
                        "launch on {name} failed: no answer within {} ms",
                        millis(timeout)
                    )
                    .into())
                }
            }
            tracing::debug!(job_id, node = %name, "batch script launched");
            Ok::<(), LaunchFailure>(())
        }
        .await;
        if let Err(LaunchFailure {
            detail,
            prolog_failed_on,
        }) = result
        {
            tracing::warn!(job_id, %detail, "launch failed");
            let cmd = match prolog_failed_on {
                Some(node) => Command::PrologFailed {
                    job_id,
                    node,
                    detail,
                },
                None => Command::LaunchFailed { job_id, detail },
            };
            self.send(cmd).await;
        }
    }

    async fn send(&self, cmd: Command) {
        let (tx, _rx) = oneshot::channel();
        let _ = self.inner.commands.send((cmd, tx)).await;
    }

    /// Terminate or signal a job on its nodes; nodes that do not answer
    /// are reported to the owner task.
    async fn job_broadcast(&self, job_id: u32, nodes: &[usize], body: node_message::Body) {
        let token = match self.credential(format!("job={job_id}").into_bytes()) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(job_id, error = %e, "cannot create a credential");
                return;
            }
        };
        let total = self.broadcast_budget(nodes.len(), self.inner.timeout);
        let outcomes = self.broadcast(nodes, body, total, &token).await;
        let mut failed = false;
        for o in &outcomes {
            if let Err((_, detail)) = &o.result {
                failed = true;
                let node = self.node_name(o.node).unwrap_or("?");
                tracing::warn!(job_id, %node, error = %detail, "message to node failed");
            }
        }
        if failed {
            self.report(&outcomes).await;
        }
    }

    /// Pings `nodes` (or, with `register`, asks them to register again)
    /// through the tree within `total`.
    pub async fn ping(&self, nodes: &[usize], register: bool, total: Duration) -> Vec<NodeOutcome> {
        let token = match self.credential(Vec::new()) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "cannot create a credential");
                return Vec::new();
            }
        };
        let body = if register {
            node_message::Body::Reconfigure(v1::ReconfigureNodeRequest {})
        } else {
            node_message::Body::Ping(v1::PingNodeRequest {})
        };
        self.broadcast(nodes, body, total, &token).await
    }

    /// Asks `nodes` to stop (scontrol shutdown) through the tree within
    /// `total`. Their jobs keep running.
    pub async fn shutdown_nodes(&self, nodes: &[usize], total: Duration) -> Vec<NodeOutcome> {
        let token = match self.credential(Vec::new()) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "cannot create a credential");
                return Vec::new();
            }
        };
        let body = node_message::Body::Shutdown(v1::ShutdownNodeRequest {});
        self.broadcast(nodes, body, total, &token).await
    }

    /// Tells the owner task who answered and who did not.
    pub async fn report(&self, outcomes: &[NodeOutcome]) {
        if outcomes.is_empty() {
            return;
        }
        let (answered, silent): (Vec<&NodeOutcome>, Vec<&NodeOutcome>) =
            outcomes.iter().partition(|o| node_answered(&o.result));
        self.send(Command::NodeResponses {
            answered: answered.iter().map(|o| o.node).collect(),
            silent: silent.iter().map(|o| o.node).collect(),
        })
        .await;
    }

    /// Delivers `body` to every node of `nodes` through the tree, all of it
    /// over within `total`; one outcome per node, in the order given.
    pub async fn broadcast(
        &self,
        nodes: &[usize],
        body: node_message::Body,
        total: Duration,
        token: &str,
    ) -> Vec<NodeOutcome> {
        let mut seen = std::collections::HashSet::new();
        let targets: Vec<usize> = nodes
            .iter()
            .copied()
            .filter(|&n| n < self.inner.nodes.len() && seen.insert(n))
            .collect();
        let results = self.deliver(&targets, body, total, token).await;
        targets
            .iter()
            .zip(results)
            .map(|(&node, r)| NodeOutcome {
                node,
                result: if r.error_code == 0 {
                    Ok(r.reply.unwrap_or_default())
                } else {
                    Err((
                        ErrorCode::from_number_or_unspecified(r.error_code),
                        r.error_detail,
                    ))
                },
                via: r.via,
            })
            .collect()
    }

    /// The controller's end of the tree: the same loop as a slurmd relay.
    async fn deliver(
        &self,
        targets: &[usize],
        body: node_message::Body,
        total: Duration,
        token: &str,
    ) -> Vec<NodeResult> {
        let start = Instant::now();
        let what = kind(&body);
        let message = NodeMessage { body: Some(body) };
        let width = self.inner.tree_width;
        let name = |i: usize| self.inner.nodes[targets[i]].name.clone();
        let mut results: Vec<Option<NodeResult>> = vec![None; targets.len()];
        let pos: HashMap<usize, usize> = targets.iter().enumerate().map(|(p, &n)| (n, p)).collect();
        let mut fan = Fanout::new(targets.len(), width, millis(total));
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            let ready = fan.poll(millis(start.elapsed()));
            for i in ready.given_up {
                results[i] = Some(error_result(
                    &name(i),
                    ErrorCode::SocketTimeout,
                    format!("not reached within {} ms", millis(total)),
                ));
            }
            for send in ready.sends {
                let relay = name(send.relay);
                let rest_names: Vec<String> = send.rest.clone().map(name).collect();
                let rest = slurm_common::hostlist::compress(&rest_names);
                let shown = if rest.is_empty() { "-" } else { rest.as_str() };
                tracing::debug!("forward: {what} to {relay} for {shown} via slurmctld");
                let req = v1::ForwardRequest {
                    message: Some(message.clone()),
                    nodes: rest,
                    tree_width: width.get(),
                    timeout_ms: u32::try_from(send.budget_ms).unwrap_or(u32::MAX),
                };
                let agent = self.clone();
                let node = targets[send.relay];
                let token = token.to_string();
                let wait = Duration::from_millis(send.wait_ms);
                tasks.spawn(async move {
                    let outcome = agent.forward(node, req, &token, wait).await;
                    (send, relay, outcome)
                });
            }
            let Some(done) = tasks.join_next().await else {
                break;
            };
            let (send, relay, outcome) = match done {
                Ok(d) => d,
                Err(e) => {
                    tracing::error!(error = %e, "forwarding task failed");
                    continue;
                }
            };
            match outcome {
                Ok(got) => {
                    fan.delivered(send.id);
                    for mut r in got {
                        let Some(&i) = self.inner.index.get(&r.node).and_then(|n| pos.get(n))
                        else {
                            continue;
                        };
                        let in_branch = i == send.relay || send.rest.contains(&i);
                        if !in_branch || results[i].is_some() {
                            continue;
                        }
                        if i != send.relay {
                            r.via.insert(0, relay.clone());
                        }
                        results[i] = Some(r);
                    }
                    for i in std::iter::once(send.relay).chain(send.rest.clone()) {
                        if results[i].is_none() {
                            let mut r = error_result(
                                &name(i),
                                ErrorCode::CommunicationReceive,
                                format!("no result from relay {relay}"),
                            );
                            if i != send.relay {
                                r.via.push(relay.clone());
                            }
                            results[i] = Some(r);
                        }
                    }
                }
                Err((code, detail)) => {
                    fan.failed(send.id);
                    if !send.rest.is_empty() {
                        let rest_names: Vec<String> = send.rest.clone().map(name).collect();
                        let rest = slurm_common::hostlist::compress(&rest_names);
                        tracing::debug!(
                            "forward: relay {relay} failed ({detail}); rerouting {rest} via slurmctld"
                        );
                    }
                    results[send.relay] = Some(error_result(&relay, code, detail));
                }
            }
        }
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.unwrap_or_else(|| {
                    error_result(
                        &name(i),
                        ErrorCode::CommunicationReceive,
                        "no result".to_string(),
                    )
                })
            })
            .collect()
    }

    /// One Forward call to a relay, given up after `wait`.
    async fn forward(
        &self,
        node: usize,
        req: v1::ForwardRequest,
        token: &str,
        wait: Duration,
    ) -> Result<Vec<NodeResult>, (ErrorCode, String)> {
        let (name, mut client, _lease) = self
            .client(node)
            .await
            .map_err(|e| (ErrorCode::CommunicationConnection, e))?;
        let req = self
            .request(req, token, wait)
            .map_err(|e| (ErrorCode::ProtocolAuthentication, e))?;
        let _counted = InFlight::new(&self.inner);
        match tokio::time::timeout(wait, client.forward(req)).await {
            Ok(Ok(reply)) => Ok(reply.into_inner().results),
            Ok(Err(status)) => {
                let (code, detail) = ErrorCode::from_status(&status);
                Err((code, format!("{name}: {detail}")))
            }
            Err(_) => Err((
                ErrorCode::SocketTimeout,
                format!("{name} did not answer within {} ms", millis(wait)),
            )),
        }
    }
}

/// Whether a node answered: with a reply, or with an error of its own (a
/// job it does not have, a signal it could not deliver), which says it is
/// alive all the same. Only a node that could not be reached, did not
/// answer in time or could not be understood counts as silent.
fn node_answered(result: &Result<v1::NodeReply, (ErrorCode, String)>) -> bool {
    match result {
        Ok(_) => true,
        Err((code, _)) => !matches!(
            code,
            ErrorCode::CommunicationConnection
                | ErrorCode::SocketTimeout
                | ErrorCode::ProtocolAuthentication
                | ErrorCode::Internal
                | ErrorCode::Unspecified
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurm_common::auth::SlurmKeyAuth;
    use slurm_proto::v1::{node_reply, NodeReply, PingNodeReply};
    use slurm_proto::SlurmNodeServer;
    use tonic::{Request, Response, Status};

    /// A slurmd that answers Forward for itself and its list without
    /// passing anything on (a leaf and its nodes, as far as the
    /// controller can tell), and counts the connections it accepts.
    #[derive(Clone)]
    struct FakeSlurmd {
        name: String,
        hits: Arc<AtomicUsize>,
        /// Where signals are recorded, when the test looks at them.
        signals: Option<Arc<Signals>>,
    }

    /// What a fake slurmd saw of the signals sent to it.
    struct Signals {
        /// (job, signal) as each message arrives, before any hold.
        arrived: mpsc::UnboundedSender<(u32, u32)>,
        /// (job, signal) as each message is answered.
        handled: std::sync::Mutex<Vec<(u32, u32)>>,
        /// This (job, signal) is answered only once `release` is notified.
        hold: Option<(u32, u32)>,
        release: tokio::sync::Notify,
        /// Times to yield before answering, by signal number: lets
        /// deliveries of different lengths overlap without sleeping.
        yields: fn(u32) -> usize,
    }

    impl Signals {
        fn new(hold: Option<(u32, u32)>) -> (Arc<Self>, mpsc::UnboundedReceiver<(u32, u32)>) {
            let (tx, rx) = mpsc::unbounded_channel();
            let signals = Signals {
                arrived: tx,
                handled: std::sync::Mutex::new(Vec::new()),
                hold,
                release: tokio::sync::Notify::new(),
                yields: |_| 0,
            };
            (Arc::new(signals), rx)
        }

        fn handled(&self) -> Vec<(u32, u32)> {
            self.handled.lock().unwrap().clone()
        }
    }

    #[tonic::async_trait]
    impl slurm_proto::SlurmNode for FakeSlurmd {
        async fn launch_batch(
            &self,
            _: Request<v1::LaunchBatchRequest>,
        ) -> Result<Response<v1::LaunchBatchReply>, Status> {
            Err(Status::unimplemented("test"))
        }
        async fn signal_job(
            &self,
            _: Request<v1::NodeSignalJobRequest>,
        ) -> Result<Response<v1::NodeSignalJobReply>, Status> {
            Err(Status::unimplemented("test"))
        }
        async fn terminate_job(
            &self,
            _: Request<v1::NodeTerminateJobRequest>,
        ) -> Result<Response<v1::NodeTerminateJobReply>, Status> {
            Err(Status::unimplemented("test"))
        }
        async fn ping_node(
            &self,
            _: Request<v1::PingNodeRequest>,
        ) -> Result<Response<PingNodeReply>, Status> {
            Err(Status::unimplemented("test"))
        }
        async fn reconfigure(
            &self,
            _: Request<v1::ReconfigureNodeRequest>,
        ) -> Result<Response<v1::ReconfigureNodeReply>, Status> {
            Err(Status::unimplemented("test"))
        }
        async fn forward(
            &self,
            r: Request<v1::ForwardRequest>,
        ) -> Result<Response<v1::ForwardReply>, Status> {
            self.hits.fetch_add(1, Ordering::Relaxed);
            let req = r.into_inner();
            let body = req.message.as_ref().and_then(|m| m.body.as_ref());
            if let (Some(seen), Some(node_message::Body::SignalJob(sig))) = (&self.signals, body) {
                let key = (sig.job_id, sig.signal);
                let _ = seen.arrived.send(key);
                if seen.hold == Some(key) {
                    seen.release.notified().await;
                }
                for _ in 0..(seen.yields)(sig.signal) {
                    tokio::task::yield_now().await;
                }
                seen.handled.lock().unwrap().push(key);
            }
            let mut names = vec![self.name.clone()];
            if !req.nodes.is_empty() {
                names.extend(slurm_common::hostlist::expand(&req.nodes).unwrap());
            }
            let results = names
                .into_iter()
                .map(|n| NodeResult {
                    node: n.clone(),
                    reply: Some(NodeReply {
                        body: Some(node_reply::Body::Ping(PingNodeReply {
                            node_name: n,
                            ..Default::default()
                        })),
                    }),
                    ..Default::default()
                })
                .collect();
            Ok(Response::new(v1::ForwardReply { results }))
        }
    }

    async fn serve(name: &str, hits: Arc<AtomicUsize>) -> u16 {
        serve_recording(name, hits, None).await
    }

    async fn serve_recording(
        name: &str,
        hits: Arc<AtomicUsize>,
        signals: Option<Arc<Signals>>,
    ) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let svc = SlurmNodeServer::new(FakeSlurmd {
            name: name.to_string(),
            hits,
            signals,
        });
        tokio::spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(svc)
                .serve_with_incoming(incoming)
                .await;
        });
        port
    }

    /// An agent for `nodes` with a fresh key, MessageTimeout 5 s; the
    /// directory holding the key, and the receiving end of its reports.
    fn test_agent(
        nodes: &[(String, String, u16)],
        width: TreeWidth,
    ) -> (tempfile::TempDir, Agent, mpsc::Receiver<Envelope>) {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("slurm.key");
        slurm_common::auth::generate_key(&key).unwrap();
        let auth: Arc<dyn Authenticator> = Arc::new(SlurmKeyAuth::load(&key).unwrap());
        let (tx, rx) = mpsc::channel(64);
        let identity = Identity {
            uid: 0,
            gid: 0,
            host: "localhost".into(),
            ttl_secs: 60,
        };
        let timeout = Duration::from_secs(5);
        let state = dir.path().to_path_buf();
        let agent = Agent::new(nodes, auth, identity, tx, timeout, state, width);
        (dir, agent, rx)
    }

    /// Established TCP connections of this process to one of `ports`.
    fn established_to(ports: &[u16]) -> usize {
        let text = std::fs::read_to_string("/proc/self/net/tcp").unwrap_or_default();
        text.lines()
            .skip(1)
            .filter(|row| {
                let cols: Vec<&str> = row.split_whitespace().collect();
                let remote = cols.get(2).and_then(|r| r.rsplit(':').next());
                let port = remote.and_then(|p| u16::from_str_radix(p, 16).ok());
                cols.get(3) == Some(&"01") && port.is_some_and(|p| ports.contains(&p))
            })
            .count()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_to_nodes_stay_within_tree_width() {
        let hits = Arc::new(AtomicUsize::new(0));
        let mut nodes = Vec::new();
        let mut ports = Vec::new();
        for i in 1..=8 {
            let port = serve(&format!("n{i}"), hits.clone()).await;
            ports.push(port);
            nodes.push((format!("n{i}"), "127.0.0.1".to_string(), port));
        }
        let (_dir, agent, _rx) = test_agent(&nodes, TreeWidth::new(2));
        // Each node on its own: eight different first hops.
        for n in 0..8 {
            let out = agent.ping(&[n], false, Duration::from_secs(5)).await;
            assert!(out[0].result.is_ok());
        }
        assert!(agent.open_channels() <= 2);
        // Eight at once: calls wait for a free slot rather than open more.
        // (Counted from the agent's side: a connection it has let go of may
        // take a moment to close, which the check below waits for.)
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..8 {
            let agent = agent.clone();
            calls.spawn(async move { agent.ping(&[n], false, Duration::from_secs(5)).await });
        }
        let mut most = 0;
        while !calls.is_empty() {
            most = most.max(agent.open_channels());
            tokio::select! {
                done = calls.join_next() => {
                    if let Some(out) = done {
                        assert!(out.unwrap()[0].result.is_ok());
                    }
                }
                _ = tokio::time::sleep(Duration::from_millis(1)) => {}
            }
        }
        assert!(most <= 2, "{most} connections held at once");
        // Evicted connections close once their calls are over.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let open = established_to(&ports);
            if open <= 2 {
                break;
            }
            assert!(Instant::now() < deadline, "{open} connections still open");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn dead_port() -> u16 {
        // Bound and dropped: nothing listens there afterwards.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn broadcast_routes_around_a_dead_relay_and_reports_it() {
        let hits = Arc::new(AtomicUsize::new(0));
        // n1..n6, width 2: branches n[1-3] and n[4-6]; n4 is dead.
        let mut nodes = Vec::new();
        for i in 1..=6 {
            let port = if i == 4 {
                dead_port()
            } else {
                serve(&format!("n{i}"), hits.clone()).await
            };
            nodes.push((format!("n{i}"), "127.0.0.1".to_string(), port));
        }
        let (_dir, agent, mut rx) = test_agent(&nodes, TreeWidth::new(2));
        let total = agent.broadcast_budget(6, Duration::from_secs(5));
        assert_eq!(total, Duration::from_secs(15));
        let out = agent.ping(&[0, 1, 2, 3, 4, 5], false, total).await;
        let summary: Vec<(usize, bool, Vec<String>)> = out
            .iter()
            .map(|o| (o.node, o.result.is_ok(), o.via.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (0, true, vec![]),
                (1, true, vec!["n1".to_string()]),
                (2, true, vec!["n1".to_string()]),
                (3, false, vec![]),
                // n5 and n6 were sent to directly after n4 failed.
                (4, true, vec![]),
                (5, true, vec![]),
            ]
        );
        assert_eq!(
            out[3].result.as_ref().err().map(|e| e.0),
            Some(ErrorCode::CommunicationConnection)
        );
        assert!(agent.peak_in_flight() <= 2);
        // n1, n5, n6 were contacted; n2, n3 only through n1.
        assert_eq!(hits.load(Ordering::Relaxed), 3);
        // Other subsets go through other relays; the controller still
        // keeps no more than TreeWidth connections.
        for list in [[1usize, 2], [4, 5], [2, 5], [0, 4]] {
            let _ = agent.ping(&list, false, total).await;
            assert!(agent.open_channels() <= 2, "{} open", agent.open_channels());
        }
        agent.report(&out).await;
        let (cmd, _) = rx.recv().await.unwrap();
        match cmd {
            Command::NodeResponses { answered, silent } => {
                assert_eq!(answered, vec![0, 1, 2, 4, 5]);
                assert_eq!(silent, vec![3]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_node_that_refuses_still_answered() {
        let err = |code| Err((code, String::new()));
        assert!(node_answered(&Ok(v1::NodeReply::default())));
        assert!(node_answered(&err(ErrorCode::KillTaskFailed)));
        assert!(node_answered(&err(ErrorCode::InvalidJobId)));
        for silent in [
            ErrorCode::CommunicationConnection,
            ErrorCode::SocketTimeout,
            ErrorCode::ProtocolAuthentication,
            ErrorCode::Internal,
            ErrorCode::Unspecified,
        ] {
            assert!(!node_answered(&err(silent)), "{silent:?}");
        }
    }

    const SIGCONT: u32 = 18;
    const SIGSTOP: u32 = 19;
    const SIGUSR1: u32 = 10;

    fn signal(job_id: u32, nodes: Vec<usize>, signal: u32) -> Action {
        Action::SignalJob {
            job_id,
            nodes,
            request: v1::NodeSignalJobRequest {
                job_id,
                signal,
                ..Default::default()
            },
        }
    }

    /// The next signal a fake slurmd saw arrive, within ten seconds.
    async fn next_arrival(rx: &mut mpsc::UnboundedReceiver<(u32, u32)>) -> (u32, u32) {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("no message reached the node within 10 s")
            .expect("the fake slurmd is gone")
    }

    /// Waits (polling, with a deadline) until `jobs` jobs have something
    /// left to deliver.
    async fn until_in_delivery(agent: &Agent, jobs: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while agent.jobs_in_delivery() != jobs {
            assert!(
                Instant::now() < deadline,
                "{} jobs in delivery, not {jobs}",
                agent.jobs_in_delivery()
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    // One thread, so that without per-job order the SIGCONT (spawned
    // before job 8's signal) reliably reaches the node first.
    #[tokio::test]
    async fn resume_never_overtakes_suspend_while_other_jobs_go_ahead() {
        let (seen, mut arrived) = Signals::new(Some((7, SIGSTOP)));
        let hits = Arc::new(AtomicUsize::new(0));
        let port = serve_recording("n1", hits, Some(seen.clone())).await;
        let nodes = [("n1".to_string(), "127.0.0.1".to_string(), port)];
        let (_dir, agent, mut rx) = test_agent(&nodes, TreeWidth::new(50));

        agent.run(signal(7, vec![0], SIGSTOP));
        assert_eq!(next_arrival(&mut arrived).await, (7, SIGSTOP));
        // The node holds the SIGSTOP; the SIGCONT must wait for its answer,
        // while another job's signal goes through at once.
        agent.run(signal(7, vec![0], SIGCONT));
        agent.run(signal(8, vec![0], SIGUSR1));
        assert_eq!(next_arrival(&mut arrived).await, (8, SIGUSR1));
        // Job 8 is done with; job 7 keeps its queue while the node holds it.
        until_in_delivery(&agent, 1).await;
        assert_eq!(seen.handled(), vec![(8, SIGUSR1)]);

        seen.release.notify_one();
        assert_eq!(next_arrival(&mut arrived).await, (7, SIGCONT));
        until_in_delivery(&agent, 0).await;
        assert_eq!(
            seen.handled(),
            vec![(8, SIGUSR1), (7, SIGSTOP), (7, SIGCONT)]
        );
        assert!(rx.try_recv().is_err(), "no delivery failed");
    }

    #[tokio::test]
    async fn a_failed_launch_still_lets_the_next_action_through_after_it() {
        let (seen, mut arrived) = Signals::new(None);
        let hits = Arc::new(AtomicUsize::new(0));
        let port = serve_recording("n1", hits, Some(seen)).await;
        let nodes = [("n1".to_string(), "127.0.0.1".to_string(), port)];
        let (_dir, agent, mut rx) = test_agent(&nodes, TreeWidth::new(50));
        // No script was ever written: the launch fails before any call.
        agent.run(Action::LaunchBatch {
            job_id: 5,
            node: 0,
            request: Box::default(),
            files: ScriptRef::default(),
        });
        agent.run(signal(5, vec![0], SIGUSR1));
        assert_eq!(next_arrival(&mut arrived).await, (5, SIGUSR1));
        // The launch's failure was reported before the signal left.
        match rx.try_recv() {
            Ok((Command::LaunchFailed { job_id, .. }, _)) => assert_eq!(job_id, 5),
            other => panic!("expected the launch failure first, got {other:?}"),
        }
        until_in_delivery(&agent, 0).await;
    }

    #[tokio::test]
    async fn an_unreachable_node_delays_only_its_own_jobs_next_action() {
        let (seen, mut arrived) = Signals::new(None);
        let hits = Arc::new(AtomicUsize::new(0));
        let port = serve_recording("n1", hits, Some(seen)).await;
        let nodes = [
            ("n1".to_string(), "127.0.0.1".to_string(), port),
            ("n2".to_string(), "127.0.0.1".to_string(), dead_port()),
        ];
        let (_dir, agent, mut rx) = test_agent(&nodes, TreeWidth::new(50));
        agent.run(signal(6, vec![1], SIGSTOP));
        agent.run(signal(6, vec![0], SIGCONT));
        assert_eq!(next_arrival(&mut arrived).await, (6, SIGCONT));
        match rx.try_recv() {
            Ok((Command::NodeResponses { answered, silent }, _)) => {
                assert!(answered.is_empty());
                assert_eq!(silent, vec![1]);
            }
            other => panic!("expected n2 reported silent first, got {other:?}"),
        }
        until_in_delivery(&agent, 0).await;
    }

    #[test]
    fn only_actions_about_a_job_are_ordered() {
        assert_eq!(ordered_job(&signal(3, vec![0], SIGUSR1)), Some(3));
        let terminate = Action::TerminateJob {
            job_id: 4,
            nodes: vec![0],
            request: v1::NodeTerminateJobRequest::default(),
        };
        assert_eq!(ordered_job(&terminate), Some(4));
        let prolog = Action::LaunchProlog {
            job_id: 9,
            nodes: vec![0],
            request: v1::LaunchPrologRequest::default(),
        };
        assert_eq!(ordered_job(&prolog), Some(9));
        let reconfigure = Action::ReconfigureNodes { nodes: vec![0] };
        assert_eq!(ordered_job(&reconfigure), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]

        /// However actions for several jobs interleave and however long
        /// each takes at the node, every job sees its own in order, and
        /// no job is left with a queue.
        #[test]
        fn every_job_sees_its_actions_in_order(
            sends in proptest::collection::vec((0u32..4, 1u32..8), 1..40)
        ) {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let handled = rt.block_on(async {
                let (tx, _arrived) = mpsc::unbounded_channel();
                let seen = Arc::new(Signals {
                    arrived: tx,
                    handled: std::sync::Mutex::new(Vec::new()),
                    hold: None,
                    release: tokio::sync::Notify::new(),
                    // Earlier signals of a job take longest: without order
                    // they would be overtaken.
                    yields: |sig| 400usize.saturating_sub(sig as usize),
                });
                let hits = Arc::new(AtomicUsize::new(0));
                let port = serve_recording("n1", hits, Some(seen.clone())).await;
                let nodes = [("n1".to_string(), "127.0.0.1".to_string(), port)];
                let (_dir, agent, _rx) = test_agent(&nodes, TreeWidth::new(50));
                // Signal numbers rise within each job, so order is visible.
                let mut last = HashMap::new();
                let mut sent = Vec::new();
                for &(job, step) in &sends {
                    let sig = last.get(&job).map_or(0, |&s: &u32| s) + step;
                    last.insert(job, sig);
                    sent.push((job, sig));
                    agent.run(signal(job, vec![0], sig));
                }
                until_in_delivery(&agent, 0).await;
                (sent, seen.handled())
            });
            let (sent, got) = handled;
            for job in 0..4 {
                let want: Vec<u32> = sent.iter().filter(|s| s.0 == job).map(|s| s.1).collect();
                let seen: Vec<u32> = got.iter().filter(|s| s.0 == job).map(|s| s.1).collect();
                proptest::prop_assert_eq!(want, seen, "job {}", job);
            }
        }
    }
}
