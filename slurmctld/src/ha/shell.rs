//! The async side of [`super::machine`]: timers, pings and
//! RelinquishControl calls to the peers, PingNode calls to witnesses, the
//! epoch and heartbeat files, and the answers to the
//! Takeover/RelinquishControl RPCs.
//!
//! The daemon alternates between [`Shell::standby`] (refuse commands, watch,
//! until this controller should take control: returns the [`Fence`] of the
//! new epoch) and [`Shell::active`] (beat, until the machine says to stop
//! acting), with the owner task running beside `active`. Background calls
//! (pings, relinquish requests, file reads) report back through one channel
//! as machine inputs, so the loop itself never waits on the network.
//!
//! Two periods: in standby a probe every [`probe_interval`] (and a tick
//! right at the machine's next deadline, so SlurmctldTimeout is counted
//! from the last sign of life, not rounded up to a period); in control a
//! fence check and heartbeat every [`beat_interval`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use slurm_common::auth::{unix_now, Authenticator, Claims};
use slurm_common::conf::ControllerHost;
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1;
use slurm_proto::v1::slurm_controller_peer_client::SlurmControllerPeerClient;
use slurm_proto::{ErrorCode, SlurmControllerClient, SlurmNodeClient};
use tokio::sync::{mpsc, oneshot, watch};
use tonic::transport::{Channel, Endpoint};

use super::epoch::{read_epoch, take_epoch, Fence, FenceError};
use super::heartbeat::{read_heartbeat, write_heartbeat, Heartbeat};
use super::machine::{
    self, Action, Input, Machine, Millis, PeerAnswer, PeerState, ReclaimWait, Refusal,
};
use super::{Link, Released, Request};
use crate::core::Reply;
use crate::rpc::Envelope;

/// What the shell needs from slurm.conf and the daemon.
#[derive(Clone)]
pub struct ShellConfig {
    /// This controller's index in `hosts`.
    pub me: usize,
    /// SlurmctldHost, in order.
    pub hosts: Vec<ControllerHost>,
    pub port: u16,
    /// StateSaveLocation.
    pub state_dir: PathBuf,
    pub slurmctld_timeout: Duration,
    pub message_timeout: Duration,
    /// Signs the calls to the peers.
    pub auth: Arc<dyn Authenticator>,
    pub uid: u32,
    pub gid: u32,
    /// This host's name, for the credentials.
    pub host: String,
    /// The slurmd that can vouch that this controller is not cut off
    /// (every node of slurm.conf, in order).
    pub witnesses: Vec<Witness>,
}

/// Where a slurmd listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    pub node: String,
    /// NodeAddr (else the node name).
    pub host: String,
    pub port: u16,
}

/// How many slurmd one witness round asks at once (the first answer
/// settles it); rounds rotate over the nodes.
const WITNESSES_PER_ROUND: usize = 3;

impl std::fmt::Debug for ShellConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellConfig")
            .field("me", &self.me)
            .field("hosts", &self.hosts)
            .field("state_dir", &self.state_dir)
            .field("slurmctld_timeout", &self.slurmctld_timeout)
            .field("witnesses", &self.witnesses.len())
            .finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> Millis {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// [`machine::probe_interval`] for a SlurmctldTimeout.
pub fn probe_interval(slurmctld_timeout: Duration) -> Duration {
    Duration::from_millis(machine::probe_interval(millis(slurmctld_timeout)))
}

/// [`machine::beat_interval`] for a SlurmctldTimeout.
pub fn beat_interval(slurmctld_timeout: Duration) -> Duration {
    Duration::from_millis(machine::beat_interval(millis(slurmctld_timeout)))
}

/// How long a starting primary that cannot take control at once (a backup
/// must answer first) waits before it serves in standby: a third of
/// SlurmctldTimeout, within 100 ms and 10 s.
pub fn startup_wait(slurmctld_timeout: Duration) -> Duration {
    (slurmctld_timeout / 3).clamp(Duration::from_millis(100), Duration::from_secs(10))
}

/// The endpoint of a controller. IPv6 addresses need brackets.
fn uri(host: &ControllerHost, port: u16) -> String {
    endpoint(host.contact(), port)
}

fn endpoint(contact: &str, port: u16) -> String {
    if contact.contains(':') && !contact.starts_with('[') {
        format!("http://[{contact}]:{port}")
    } else {
        format!("http://{contact}:{port}")
    }
}

/// Whether a gRPC answer came from the daemon itself (a reply, or a
/// refusal carrying a Slurm error number), as opposed to a transport
/// failure or timeout: either way the host is reachable.
fn answered<T>(r: &Result<tonic::Response<T>, tonic::Status>) -> bool {
    match r {
        Ok(_) => true,
        Err(status) => status
            .metadata()
            .get(slurm_proto::ERRNO_METADATA_KEY)
            .is_some(),
    }
}

/// What background calls report.
#[derive(Debug)]
enum Event {
    Input(Input),
    /// The files could not be read (nothing is known about them).
    FilesFailed,
    /// A heartbeat task ended (after its own input, if any).
    BeatEnded,
}

/// The HA shell of one controller.
pub struct Shell {
    cfg: ShellConfig,
    machine: Machine,
    link: Arc<Link>,
    requests: mpsc::Receiver<Request>,
    events_tx: mpsc::UnboundedSender<Event>,
    events_rx: mpsc::UnboundedReceiver<Event>,
    /// One lazily connected channel per SlurmctldHost (None for this one).
    channels: Vec<Option<Channel>>,
    /// Channels to witnesses, made when first asked.
    witness_channels: Vec<Option<Channel>>,
    /// The next witness a round starts with.
    witness_next: usize,
    witness_in_flight: bool,
    /// Standby period.
    probe_ticker: tokio::time::Interval,
    /// In-control period.
    beat_ticker: tokio::time::Interval,
    base: tokio::time::Instant,
    started: bool,
    pending_relinquish: Vec<(usize, oneshot::Sender<Released>)>,
    pending_takeover: Vec<oneshot::Sender<Result<(), Refusal>>>,
    ping_in_flight: Vec<bool>,
    files_in_flight: bool,
    beat_in_flight: bool,
    fence: Option<Arc<Fence>>,
    beat_seq: u64,
    /// `Some(forced)` once the machine said to take control.
    take_now: Option<bool>,
    /// After a forced take: acting starts no earlier than this.
    settle_until: Option<tokio::time::Instant>,
    /// What asking for control back waited for, as last logged.
    reclaim_wait: Option<ReclaimWait>,
    stop_now: bool,
}

impl std::fmt::Debug for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell")
            .field("me", &self.cfg.me)
            .field("phase", self.machine.phase())
            .finish_non_exhaustive()
    }
}

impl Shell {
    /// Must be called inside the tokio runtime (channels connect lazily).
    pub fn new(cfg: ShellConfig, link: Arc<Link>, requests: mpsc::Receiver<Request>) -> Shell {
        let count = cfg.hosts.len().max(cfg.me + 1);
        let timeout_ms = u64::try_from(cfg.slurmctld_timeout.as_millis()).unwrap_or(u64::MAX);
        let rpc_timeout = cfg.message_timeout.max(Duration::from_millis(100));
        let channels = cfg
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                if i == cfg.me {
                    return None;
                }
                let ep = match Endpoint::from_shared(uri(h, cfg.port)) {
                    Ok(ep) => ep,
                    Err(e) => {
                        tracing::error!(host = %h.name, error = %e, "invalid controller address");
                        return None;
                    }
                };
                Some(
                    ep.connect_timeout(rpc_timeout)
                        .timeout(rpc_timeout)
                        .tcp_nodelay(true)
                        .connect_lazy(),
                )
            })
            .collect();
        let ticker = |period: Duration| {
            let mut t = tokio::time::interval(period);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        };
        let probe_ticker = ticker(probe_interval(cfg.slurmctld_timeout));
        let beat_ticker = ticker(beat_interval(cfg.slurmctld_timeout));
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        Shell {
            machine: Machine::new(cfg.me, count, timeout_ms)
                .with_witnesses(!cfg.witnesses.is_empty()),
            witness_channels: vec![None; cfg.witnesses.len()],
            witness_next: 0,
            witness_in_flight: false,
            cfg,
            link,
            requests,
            events_tx,
            events_rx,
            channels,
            probe_ticker,
            beat_ticker,
            base: tokio::time::Instant::now(),
            started: false,
            pending_relinquish: Vec::new(),
            pending_takeover: Vec::new(),
            ping_in_flight: vec![false; count],
            files_in_flight: false,
            beat_in_flight: false,
            fence: None,
            beat_seq: 0,
            take_now: None,
            settle_until: None,
            reclaim_wait: None,
            stop_now: false,
        }
    }

    fn now(&self) -> Millis {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn rpc_timeout(&self) -> Duration {
        self.cfg.message_timeout.max(Duration::from_millis(100))
    }

    /// Waits in standby, refusing the commands that arrive, until this
    /// controller takes control (the fence of its new epoch) or `done` is
    /// set (`None`).
    pub async fn standby(
        &mut self,
        commands: &mut mpsc::Receiver<Envelope>,
        done: &mut watch::Receiver<bool>,
    ) -> Option<Arc<Fence>> {
        self.link.set_in_control(false);
        if !self.started {
            self.started = true;
            let dir = self.cfg.state_dir.clone();
            let epoch = match tokio::task::spawn_blocking(move || read_epoch(&dir)).await {
                Ok(Ok(e)) => e,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "cannot read the epoch");
                    None
                }
                Err(_) => None,
            };
            if let Some(e) = &epoch {
                self.link.set_epoch(e.epoch);
            }
            let now = self.now();
            self.feed(Input::Started { now, epoch });
        }
        let mut commands_open = true;
        loop {
            if let Some(forced) = self.take_now.take() {
                if let Some(fence) = self.take(forced).await {
                    return Some(fence);
                }
                continue;
            }
            let now = self.now();
            let deadline = self
                .machine
                .next_deadline(now)
                .map(|d| self.base + Duration::from_millis(d));
            tokio::select! {
                biased;
                _ = done.wait_for(|v| *v) => return None,
                req = self.requests.recv() => match req {
                    Some(req) => self.request(req),
                    None => return None,
                },
                Some(ev) = self.events_rx.recv() => self.event(ev),
                env = commands.recv(), if commands_open => match env {
                    Some((_, reply)) => {
                        let _ = reply.send(Reply::error(ErrorCode::InStandbyMode, ""));
                    }
                    None => commands_open = false,
                },
                _ = self.probe_ticker.tick() => {
                    let now = self.now();
                    self.feed(Input::Tick { now });
                }
                () = sleep_until_some(deadline) => {
                    let now = self.now();
                    self.feed(Input::Tick { now });
                }
            }
            self.log_reclaim_wait();
        }
    }

    /// Says (once per change) why control is not asked back yet.
    fn log_reclaim_wait(&mut self) {
        let wait = self.machine.reclaim_wait(self.now());
        if wait == self.reclaim_wait {
            return;
        }
        self.reclaim_wait = wait;
        match wait {
            Some(ReclaimWait::Owner) => tracing::info!(
                "waiting to reach the controller in charge before asking for control back"
            ),
            Some(ReclaimWait::Witness) => tracing::info!(
                "the controller in charge answers but no slurmd does: not asking for control back yet"
            ),
            None => {}
        }
    }

    /// After a take without the previous owner's consent, waits until
    /// [`machine::settle_time`] has passed since the epoch write, so that
    /// an owner that still runs has met the new epoch at a fence check
    /// (and stopped answering as in control) before this one acts. Call
    /// it right before acting; returns at once otherwise.
    pub async fn settle(&mut self) {
        if let Some(at) = self.settle_until.take() {
            tokio::time::sleep_until(at).await;
        }
    }

    /// Runs beside the owner task while this controller acts; returns when
    /// it must stop acting (relinquish asked, or the fence was lost). The
    /// caller then stops the owner and calls [`Shell::owner_stopped`].
    /// Cancel-safe: every request is recorded before anything is awaited.
    pub async fn active(&mut self, fence: Arc<Fence>) {
        self.link.set_epoch(fence.epoch());
        self.fence = Some(Arc::clone(&fence));
        self.stop_now = false;
        let now = self.now();
        self.feed(Input::Activated {
            now,
            epoch: fence.epoch(),
        });
        let mut requests_open = true;
        loop {
            if self.stop_now {
                return;
            }
            tokio::select! {
                biased;
                req = self.requests.recv(), if requests_open => match req {
                    Some(req) => self.request(req),
                    None => requests_open = false,
                },
                Some(ev) = self.events_rx.recv() => self.event(ev),
                _ = self.beat_ticker.tick() => {
                    let now = self.now();
                    self.feed(Input::Tick { now });
                }
            }
        }
    }

    /// The owner task has stopped: answers whoever asked us to relinquish.
    /// `lost` says the fence failed (the epoch was taken over).
    pub fn owner_stopped(&mut self, lost: bool) {
        self.link.set_in_control(false);
        let now = self.now();
        if lost {
            self.feed(Input::ControlLost { now });
        }
        self.stop_now = false;
        self.fence = None;
        self.feed(Input::Stopped { now });
    }

    fn request(&mut self, req: Request) {
        let now = self.now();
        match req {
            Request::Takeover { reply } => {
                tracing::info!("takeover requested");
                self.pending_takeover.push(reply);
                self.feed(Input::TakeoverRequested { now });
            }
            Request::Relinquish { from, reply } => {
                tracing::info!(from, "peer asks this controller to relinquish control");
                self.pending_relinquish.push((from, reply));
                self.feed(Input::RelinquishRequested { now, from });
            }
            Request::ShutdownPeers { scope, reply } => self.shutdown_peers(scope, reply),
        }
    }

    fn event(&mut self, ev: Event) {
        let ev = match ev {
            Event::FilesFailed => {
                self.files_in_flight = false;
                return;
            }
            Event::BeatEnded => {
                self.beat_in_flight = false;
                return;
            }
            Event::Input(ev) => ev,
        };
        match &ev {
            Input::PeerSeen { peer, .. } => {
                if let Some(f) = self.ping_in_flight.get_mut(*peer) {
                    *f = false;
                }
            }
            Input::FilesRead { .. } => self.files_in_flight = false,
            Input::WitnessSeen { .. } => self.witness_in_flight = false,
            _ => {}
        }
        self.feed(ev);
        if !self.machine.is_active() {
            if let Some(e) = self.machine.epoch_seen() {
                self.link.set_epoch(e.epoch);
            }
        }
    }

    /// Steps the machine and carries out what it says.
    fn feed(&mut self, input: Input) {
        tracing::trace!(?input, "ha input");
        let actions = self.machine.step(input);
        for action in actions {
            tracing::debug!(?action, phase = ?self.machine.phase(), "ha action");
            match action {
                Action::Probe => self.probe(),
                Action::AskWitness => self.ask_witness(),
                Action::AskRelinquish { peers } => self.ask_relinquish(&peers),
                Action::TakeControl { forced } => self.take_now = Some(forced),
                Action::WriteHeartbeat => self.beat(),
                Action::GiveUp => {
                    tracing::warn!(
                        "the heartbeat was not renewed for half of SlurmctldTimeout; giving up control"
                    );
                    if let Some(f) = &self.fence {
                        f.mark_lost();
                    }
                }
                Action::StopActing => {
                    // New requests are refused from now on; the owner
                    // drains what it accepted and stops.
                    self.link.set_in_control(false);
                    self.stop_now = true;
                }
                Action::AnswerRelinquish { to, released } => {
                    if let Some(at) = self.pending_relinquish.iter().position(|(f, _)| *f == to) {
                        let (_, reply) = self.pending_relinquish.remove(at);
                        let _ = reply.send(Released {
                            released,
                            epoch: self.link.epoch(),
                        });
                    }
                }
                Action::AnswerTakeover { result } => {
                    for reply in self.pending_takeover.drain(..) {
                        let _ = reply.send(result);
                    }
                }
            }
        }
    }

    fn request_for<T>(&self, body: T) -> Option<tonic::Request<T>> {
        let claims = Claims::new(
            Uid::new(self.cfg.uid),
            Gid::new(self.cfg.gid),
            self.cfg.host.clone(),
            unix_now(),
            300,
        );
        let token = match self.cfg.auth.create(&claims) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "cannot sign a call to a peer controller");
                return None;
            }
        };
        let mut req = tonic::Request::new(body);
        slurm_proto::set_auth_credential(req.metadata_mut(), &token).ok()?;
        req.set_timeout(self.rpc_timeout());
        Some(req)
    }

    fn probe(&mut self) {
        let base = self.base;
        let timeout = self.rpc_timeout();
        for peer in self.machine.peers() {
            if self.ping_in_flight.get(peer).copied().unwrap_or(true) {
                continue;
            }
            let Some(Some(channel)) = self.channels.get(peer) else {
                continue;
            };
            let Some(req) = self.request_for(v1::PingRequest {}) else {
                continue;
            };
            self.ping_in_flight[peer] = true;
            let mut client = SlurmControllerClient::new(channel.clone());
            let tx = self.events_tx.clone();
            tokio::spawn(async move {
                let state = match tokio::time::timeout(timeout, client.ping(req)).await {
                    Ok(Ok(reply)) => {
                        let r = reply.into_inner();
                        if r.in_control {
                            PeerState::InControl { epoch: r.epoch }
                        } else {
                            PeerState::Standby
                        }
                    }
                    // An answer from the daemon itself (a refusal): it is up.
                    Ok(r) if answered(&r) => PeerState::Standby,
                    _ => PeerState::Unreachable,
                };
                let now = u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX);
                let _ = tx.send(Event::Input(Input::PeerSeen { now, peer, state }));
            });
        }
        if !self.files_in_flight {
            self.files_in_flight = true;
            let dir = self.cfg.state_dir.clone();
            let tx = self.events_tx.clone();
            tokio::task::spawn_blocking(move || {
                let heartbeat = match read_heartbeat(&dir) {
                    Ok(h) => h,
                    Err(e) => {
                        tracing::debug!(error = %e, "cannot read the heartbeat");
                        let _ = tx.send(Event::FilesFailed);
                        return;
                    }
                };
                let epoch = read_epoch(&dir).unwrap_or_else(|e| {
                    tracing::debug!(error = %e, "cannot read the epoch");
                    None
                });
                let now = u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX);
                let _ = tx.send(Event::Input(Input::FilesRead {
                    now,
                    heartbeat,
                    epoch,
                }));
            });
        }
    }

    /// Asks a few slurmd (rotating over the nodes) for a PingNode answer;
    /// the first answer settles the round. An answer slower than a
    /// quarter of SlurmctldTimeout would be too old to count anyway.
    fn ask_witness(&mut self) {
        let n = self.cfg.witnesses.len();
        if self.witness_in_flight || n == 0 {
            return;
        }
        let timeout =
            (self.cfg.slurmctld_timeout / 4).clamp(Duration::from_millis(100), self.rpc_timeout());
        let mut calls = Vec::new();
        for i in 0..n.min(WITNESSES_PER_ROUND) {
            let at = (self.witness_next + i) % n;
            let Some(channel) = self.witness_channel(at, timeout) else {
                continue;
            };
            let Some(req) = self.request_for(v1::PingNodeRequest {}) else {
                continue;
            };
            calls.push((SlurmNodeClient::new(channel), req));
        }
        self.witness_next = (self.witness_next + n.min(WITNESSES_PER_ROUND)) % n;
        if calls.is_empty() {
            return;
        }
        self.witness_in_flight = true;
        let base = self.base;
        let tx = self.events_tx.clone();
        tokio::spawn(async move {
            let mut round = tokio::task::JoinSet::new();
            for (mut client, req) in calls {
                round.spawn(async move {
                    matches!(
                        tokio::time::timeout(timeout, client.ping_node(req)).await,
                        Ok(r) if answered(&r)
                    )
                });
            }
            let mut reached = false;
            while let Some(r) = round.join_next().await {
                if r.unwrap_or(false) {
                    reached = true;
                    break;
                }
            }
            let now = u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX);
            tracing::trace!(reached, "witness round");
            let _ = tx.send(Event::Input(Input::WitnessSeen { now, reached }));
        });
    }

    fn witness_channel(&mut self, at: usize, timeout: Duration) -> Option<Channel> {
        if let Some(Some(c)) = self.witness_channels.get(at) {
            return Some(c.clone());
        }
        let w = self.cfg.witnesses.get(at)?;
        let channel = match Endpoint::from_shared(endpoint(&w.host, w.port)) {
            Ok(ep) => ep.connect_timeout(timeout).tcp_nodelay(true).connect_lazy(),
            Err(e) => {
                tracing::error!(node = %w.node, error = %e, "invalid node address");
                return None;
            }
        };
        if let Some(slot) = self.witness_channels.get_mut(at) {
            *slot = Some(channel.clone());
        }
        Some(channel)
    }

    fn shutdown_peers(&self, scope: i32, reply: oneshot::Sender<()>) {
        let timeout = self.rpc_timeout();
        let calls: Vec<_> = self
            .machine
            .peers()
            .into_iter()
            .filter_map(|p| {
                let channel = self.channels.get(p).cloned().flatten()?;
                let req = self.request_for(v1::ShutdownRequest { scope })?;
                Some((p, SlurmControllerClient::new(channel), req))
            })
            .collect();
        tokio::spawn(async move {
            for (peer, mut client, req) in calls {
                let r = tokio::time::timeout(timeout, client.shutdown(req)).await;
                tracing::info!(
                    peer,
                    ok = matches!(r, Ok(Ok(_))),
                    "asked a peer controller to shut down"
                );
            }
            let _ = reply.send(());
        });
    }

    fn ask_relinquish(&mut self, peers: &[usize]) {
        let base = self.base;
        let timeout = self.rpc_timeout();
        let epoch = self.machine.epoch_seen().map_or(0, |e| e.epoch);
        for &peer in peers {
            let tx = self.events_tx.clone();
            let channel = self.channels.get(peer).cloned().flatten();
            let req = self.request_for(v1::RelinquishControlRequest {
                from_index: u32::try_from(self.cfg.me).unwrap_or(u32::MAX),
                epoch,
            });
            tokio::spawn(async move {
                let answer = match (channel, req) {
                    (Some(channel), Some(req)) => {
                        let mut client = SlurmControllerPeerClient::new(channel);
                        match tokio::time::timeout(timeout, client.relinquish_control(req)).await {
                            Ok(Ok(r)) if r.get_ref().released => PeerAnswer::Released,
                            Ok(Ok(_)) => PeerAnswer::Refused,
                            Ok(Err(status)) => {
                                tracing::info!(peer, %status, "relinquish request failed");
                                PeerAnswer::Unreachable
                            }
                            Err(_) => PeerAnswer::Unreachable,
                        }
                    }
                    _ => PeerAnswer::Unreachable,
                };
                tracing::info!(peer, ?answer, "relinquish answer");
                let now = u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX);
                let _ = tx.send(Event::Input(Input::RelinquishAnswered {
                    now,
                    peer,
                    answer,
                }));
            });
        }
    }

    /// Writes the heartbeat after a fence check; a failed check stops
    /// acting. Runs on a blocking thread and reports back as events; one
    /// at a time, so a hung file system does not pile up threads (the
    /// machine steps down when no beat lands for SlurmctldTimeout/2).
    fn beat(&mut self) {
        if self.beat_in_flight {
            return;
        }
        let Some(fence) = self.fence.clone() else {
            return;
        };
        self.beat_in_flight = true;
        self.beat_seq = self.beat_seq.wrapping_add(1);
        let hb = Heartbeat {
            epoch: fence.epoch(),
            owner: fence.record().owner,
            seq: self.beat_seq,
            time: unix_now(),
        };
        let dir = self.cfg.state_dir.clone();
        let tx = self.events_tx.clone();
        let base = self.base;
        tokio::task::spawn_blocking(move || {
            let now = || u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX);
            if let Err(e) = fence.check() {
                // Given up already (stepping down): nothing new to say.
                if !matches!(e, FenceError::GivenUp { .. }) {
                    tracing::warn!(error = %e, "lost control");
                }
                let _ = tx.send(Event::Input(Input::ControlLost { now: now() }));
            } else {
                match write_heartbeat(&dir, &hb) {
                    Ok(()) => {
                        let _ = tx.send(Event::Input(Input::BeatWritten { now: now() }));
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot write the heartbeat"),
                }
            }
            let _ = tx.send(Event::BeatEnded);
        });
    }

    /// Writes the next epoch as ours. `None` when that failed (the machine
    /// is told and goes back to standby). `forced`: the previous owner did
    /// not consent (see [`Shell::settle`]).
    async fn take(&mut self, forced: bool) -> Option<Arc<Fence>> {
        let dir = self.cfg.state_dir.clone();
        let me = u32::try_from(self.cfg.me).unwrap_or(u32::MAX);
        let host = self
            .cfg
            .hosts
            .get(self.cfg.me)
            .map(|h| h.name.clone())
            .unwrap_or_default();
        let taken = tokio::task::spawn_blocking(move || take_epoch(&dir, me, &host)).await;
        match taken {
            Ok(Ok(fence)) => {
                tracing::info!(epoch = fence.epoch(), forced, "took control");
                self.settle_until = forced.then(|| {
                    tokio::time::Instant::now()
                        + Duration::from_millis(machine::settle_time(millis(
                            self.cfg.slurmctld_timeout,
                        )))
                });
                Some(Arc::new(fence))
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "cannot take control");
                let now = self.now();
                self.feed(Input::TakeFailed { now });
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "epoch writer failed");
                let now = self.now();
                self.feed(Input::TakeFailed { now });
                None
            }
        }
    }
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_follow_the_machine() {
        let t = Duration::from_secs(5);
        assert_eq!(probe_interval(t), Duration::from_millis(250));
        assert_eq!(beat_interval(t), Duration::from_millis(100));
        assert_eq!(startup_wait(Duration::from_secs(6)), Duration::from_secs(2));
        assert_eq!(
            startup_wait(Duration::from_secs(120)),
            Duration::from_secs(10)
        );
        assert_eq!(startup_wait(Duration::ZERO), Duration::from_millis(100));
        assert_eq!(beat_interval(Duration::MAX), Duration::from_secs(1));
    }

    #[test]
    fn peer_uris() {
        let h = |name: &str, addr: Option<&str>| ControllerHost {
            name: name.into(),
            addr: addr.map(Into::into),
        };
        assert_eq!(uri(&h("a", Some("127.0.0.2")), 7), "http://127.0.0.2:7");
        assert_eq!(uri(&h("b", None), 7), "http://b:7");
        assert_eq!(uri(&h("c", Some("::1")), 7), "http://[::1]:7");
    }
}
