//! Who acts: the primary/backup decisions as a pure state machine.
//!
//! Time is a monotonic millisecond count handed in with every input; the
//! machine reads no clock, touches no file and sends nothing. It returns
//! [`Action`]s, which the shell ([`super::shell`]) carries out and whose
//! outcomes come back as inputs.
//!
//! ```text
//!        Started (backup; or primary while a backup holds the epoch)
//!                    │                        Started (primary) / TakeoverRequested
//!                    v   owner gone, no lower peer up │
//!  ┌──────────> Standby ───── or may reclaim ──────> Claiming ──(a lower peer refuses)──> Standby
//!  │                 ^                                   │ every peer answered
//!  │                 │                    ┌──────────────┴───────────────┐
//!  │                 │   owner unanswered and not gone        otherwise   │
//!  │                 │                    v                              v
//!  │                 │              AwaitStale ──(owner gone)─────────> Taking
//!  │                 │                    └─(owner answers ping)─> Claiming │
//!  │                 │                                       Activated │    │ TakeFailed
//!  │                 │ Stopped                                         v    └──> Standby
//!  │             Stopping <── RelinquishRequested | ControlLost ────── Active
//!  └─────────────────┘      | heartbeat not renewed for SlurmctldTimeout/2
//! ```
//!
//! Vocabulary:
//! - *owner*: the other controller the epoch file names, if any;
//! - *RPC-silent*: for SlurmctldTimeout, no peer answered a ping as in
//!   control and none asked us to relinquish;
//! - *stale heartbeat*: the heartbeat file did not change for
//!   SlurmctldTimeout (on our clock);
//! - *witness*: a slurmd of the cluster that answered PingNode within the
//!   last quarter of SlurmctldTimeout: proof that this controller is not
//!   the one cut off (see [`super`] for why that matters);
//! - *owner gone*: RPC-silent, and the heartbeat is stale or a witness
//!   answered. Without nodes in slurm.conf there is no witness, so RPC
//!   evidence alone never suffices;
//! - *lower peer up*: a controller earlier in SlurmctldHost answered a ping
//!   (in any role) within SlurmctldTimeout; it takes over before us, as in
//!   Slurm, where backup N acts only when every earlier controller is gone;
//! - *claim*: ask every peer but a gone owner to relinquish; a peer that
//!   answers has stopped acting and will not claim for SlurmctldTimeout.
//!   A peer that does not answer matters only when it owns the current
//!   epoch: then the claimant waits until it is gone. Two claimants: the
//!   lower index wins. A take from a gone owner is *forced*: the shell
//!   then waits [`settle_time`] before acting, so that an owner still
//!   running has met the new epoch at one of its fence checks;
//! - *reclaim*: a primary that lost control without giving it away (its
//!   fence failed, it stepped down, or it restarted while a backup holds
//!   the epoch) asks for it back, but only once the owner answers its
//!   pings as in control and a witness answers: a primary that reaches
//!   the backup but no node must not pull control to the wrong side.

use super::epoch::EpochRecord;
use super::heartbeat::Heartbeat;

/// Monotonic milliseconds.
pub type Millis = u64;

/// How often a standby controller pings its peers, reads the heartbeat
/// and epoch files, and (while the owner is silent) asks a witness: a
/// twentieth of SlurmctldTimeout, within 100 ms and 1 s. Short, because
/// the owner's silence is counted from the last answer seen.
pub fn probe_interval(timeout: Millis) -> Millis {
    (timeout / 20).clamp(100, 1_000)
}

/// How often the controller in charge checks the epoch and rewrites the
/// heartbeat: a fiftieth of SlurmctldTimeout, within 50 ms and 1 s. It
/// bounds how long a deposed controller keeps answering Ping as in
/// control.
pub fn beat_interval(timeout: Millis) -> Millis {
    (timeout / 50).clamp(50, 1_000)
}

/// How long a controller that took the epoch without the owner's consent
/// waits (from the epoch write) before it acts: two beats, so a deposed
/// owner that still runs has checked its fence and stopped by then.
pub fn settle_time(timeout: Millis) -> Millis {
    beat_interval(timeout).saturating_mul(2)
}

/// What a ping of a peer found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    InControl { epoch: u64 },
    Standby,
    Unreachable,
}

/// A peer's answer to RelinquishControl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerAnswer {
    /// It does not act (any more) and will not claim for SlurmctldTimeout.
    Released,
    /// It claims control itself and has priority.
    Refused,
    /// No answer within MessageTimeout.
    Unreachable,
}

/// Why a takeover request was not carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A controller earlier in SlurmctldHost claims control.
    PreemptedBy(usize),
    /// Control is changing hands right now; ask again.
    Busy,
    /// Writing the epoch failed or lost a race.
    NotTaken,
}

/// What a controller that wants control back still waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimWait {
    /// The controller in charge to answer a ping as in control.
    Owner,
    /// A slurmd to answer.
    Witness,
}

/// Inputs; `now` is monotonic milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The daemon started; `epoch` is the file's content.
    Started {
        now: Millis,
        epoch: Option<EpochRecord>,
    },
    /// The periodic timer ([`probe_interval`] in standby, [`beat_interval`]
    /// in control), or a deadline of [`Machine::next_deadline`].
    Tick { now: Millis },
    /// A ping of `peer` came back.
    PeerSeen {
        now: Millis,
        peer: usize,
        state: PeerState,
    },
    /// The heartbeat and epoch files as read now.
    FilesRead {
        now: Millis,
        heartbeat: Option<Heartbeat>,
        epoch: Option<EpochRecord>,
    },
    /// A round of witness pings ended: `reached` when a slurmd answered.
    WitnessSeen { now: Millis, reached: bool },
    /// The heartbeat was written (after a fence check that passed).
    BeatWritten { now: Millis },
    /// `scontrol takeover` reached this controller.
    TakeoverRequested { now: Millis },
    /// Peer `from` is about to take control and asks us to stop.
    RelinquishRequested { now: Millis, from: usize },
    /// Our RelinquishControl call to `peer` ended.
    RelinquishAnswered {
        now: Millis,
        peer: usize,
        answer: PeerAnswer,
    },
    /// The epoch is ours and the state recovered: acting now.
    Activated { now: Millis, epoch: u64 },
    /// Taking control failed (epoch write raced or failed).
    TakeFailed { now: Millis },
    /// The fence found the epoch taken by another controller.
    ControlLost { now: Millis },
    /// The owner task has stopped (after `StopActing`, or on its own
    /// after a failed fence check).
    Stopped { now: Millis },
}

/// Outputs, to be carried out in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Ping every peer and read the heartbeat and epoch files.
    Probe,
    /// Ping a few slurmd; report with [`Input::WitnessSeen`].
    AskWitness,
    /// Ask these peers to relinquish control.
    AskRelinquish { peers: Vec<usize> },
    /// Write epoch + 1 as ours, recover the state, start acting; when
    /// `forced` (the owner did not consent), act only [`settle_time`]
    /// after the epoch write.
    TakeControl { forced: bool },
    /// Check the fence, then rewrite the heartbeat.
    WriteHeartbeat,
    /// Give the claim up: the fence fails from now on (no write, no
    /// answer, no job start). Followed by `StopActing`.
    GiveUp,
    /// Stop acting: stop taking requests, flush what was accepted, stop.
    StopActing,
    /// Answer the RelinquishControl call of peer `to`.
    AnswerRelinquish { to: usize, released: bool },
    /// Answer the pending Takeover calls.
    AnswerTakeover { result: Result<(), Refusal> },
}

/// Where the machine is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Not started yet.
    Idle,
    /// Watching the controller in charge.
    Standby,
    /// Waiting for the answers of the peers asked to relinquish.
    Claiming {
        waiting: Vec<usize>,
        unanswered: Vec<usize>,
    },
    /// Wants control, but the epoch owner did not answer: waits until it
    /// is gone.
    AwaitStale,
    /// `TakeControl` emitted, waiting for `Activated` or `TakeFailed`.
    Taking,
    /// In control.
    Active { epoch: u64 },
    /// `StopActing` emitted, waiting for `Stopped`.
    Stopping,
}

/// The decision logic of one controller.
#[derive(Debug, Clone)]
pub struct Machine {
    me: usize,
    count: usize,
    timeout: Millis,
    /// Whether slurm.conf has nodes to ask as witnesses.
    witnesses: bool,
    phase: Phase,
    /// Last RPC evidence that another controller acts (or is about to).
    rpc_alive: Millis,
    /// When the heartbeat file was last seen to change.
    hb_alive: Millis,
    last_heartbeat: Option<Heartbeat>,
    epoch_seen: Option<EpochRecord>,
    /// When each peer last answered a ping, in any role.
    peer_seen: Vec<Option<Millis>>,
    /// When each peer last answered a ping as in control.
    peer_control: Vec<Option<Millis>>,
    /// When a witness last answered.
    witness_at: Option<Millis>,
    /// In control: when the heartbeat was last written.
    last_beat: Millis,
    /// Asks for control back once the owner and a witness answer.
    reclaim: bool,
    /// Relinquish requests answered once the current change completes.
    deferred: Vec<usize>,
    takeover_pending: bool,
}

impl Machine {
    /// Controller `me` of `count`, with SlurmctldTimeout `timeout`, and no
    /// witness (see [`Machine::with_witnesses`]).
    pub fn new(me: usize, count: usize, timeout: Millis) -> Machine {
        let count = count.max(me + 1);
        Machine {
            me,
            count,
            timeout: timeout.max(1),
            witnesses: false,
            phase: Phase::Idle,
            rpc_alive: 0,
            hb_alive: 0,
            last_heartbeat: None,
            epoch_seen: None,
            peer_seen: vec![None; count],
            peer_control: vec![None; count],
            witness_at: None,
            last_beat: 0,
            reclaim: false,
            deferred: Vec::new(),
            takeover_pending: false,
        }
    }

    /// Whether there are slurmd to ask as witnesses (nodes in slurm.conf).
    pub fn with_witnesses(mut self, witnesses: bool) -> Machine {
        self.witnesses = witnesses;
        self
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    pub fn is_active(&self) -> bool {
        matches!(self.phase, Phase::Active { .. })
    }

    /// Whether this controller waits to ask for control back.
    pub fn reclaiming(&self) -> bool {
        self.reclaim
    }

    /// The epoch file's content as last seen.
    pub fn epoch_seen(&self) -> Option<&EpochRecord> {
        self.epoch_seen.as_ref()
    }

    /// Every other controller, in SlurmctldHost order.
    pub fn peers(&self) -> Vec<usize> {
        (0..self.count).filter(|&p| p != self.me).collect()
    }

    /// The earliest time after `now` at which a decision may change
    /// without any new input (the owner's silence reaching
    /// SlurmctldTimeout), so the shell can tick right then rather than at
    /// its next period.
    pub fn next_deadline(&self, now: Millis) -> Option<Millis> {
        if !matches!(self.phase, Phase::Standby | Phase::AwaitStale) {
            return None;
        }
        [self.rpc_alive, self.hb_alive]
            .into_iter()
            .map(|t| t.saturating_add(self.timeout))
            .filter(|&d| d > now)
            .min()
    }

    /// The other controller named by the epoch file.
    fn owner(&self) -> Option<usize> {
        let o = usize::try_from(self.epoch_seen.as_ref()?.owner).ok()?;
        (o != self.me && o < self.count).then_some(o)
    }

    fn rpc_silent(&self, now: Millis) -> bool {
        now.saturating_sub(self.rpc_alive) >= self.timeout
    }

    fn heartbeat_stale(&self, now: Millis) -> bool {
        now.saturating_sub(self.hb_alive) >= self.timeout
    }

    fn witness_fresh(&self, now: Millis) -> bool {
        self.witnesses
            && self
                .witness_at
                .is_some_and(|w| now.saturating_sub(w) <= self.timeout / 4)
    }

    /// Whether whoever acts may be taken over from without its consent:
    /// silent over RPC for SlurmctldTimeout, and either silent on disk
    /// too, or this controller shows it is not the one cut off.
    pub fn owner_gone(&self, now: Millis) -> bool {
        self.rpc_silent(now) && (self.heartbeat_stale(now) || self.witness_fresh(now))
    }

    fn lower_peer_up(&self, now: Millis) -> bool {
        self.peer_seen[..self.me]
            .iter()
            .flatten()
            .any(|&t| now.saturating_sub(t) < self.timeout)
    }

    /// A reclaiming controller asks once the owner answers pings as in
    /// control and (where there are nodes) a witness answers.
    fn may_reclaim(&self, now: Millis) -> bool {
        self.reclaim && self.reclaim_blocker(now).is_none()
    }

    fn reclaim_blocker(&self, now: Millis) -> Option<ReclaimWait> {
        let recent = probe_interval(self.timeout).saturating_mul(2);
        let owner_answers = self
            .owner()
            .and_then(|o| self.peer_control[o])
            .is_some_and(|t| now.saturating_sub(t) <= recent);
        if !owner_answers {
            Some(ReclaimWait::Owner)
        } else if self.witnesses && !self.witness_fresh(now) {
            Some(ReclaimWait::Witness)
        } else {
            None
        }
    }

    /// In standby, waiting to ask for control back: what is missing.
    pub fn reclaim_wait(&self, now: Millis) -> Option<ReclaimWait> {
        if self.reclaim && self.phase == Phase::Standby {
            self.reclaim_blocker(now)
        } else {
            None
        }
    }

    fn wants_witness(&self, now: Millis) -> bool {
        self.witnesses
            && (self.reclaim
                || self.phase == Phase::AwaitStale
                || now.saturating_sub(self.rpc_alive) >= probe_interval(self.timeout) * 2)
    }

    fn start_claim(&mut self, now: Millis, out: &mut Vec<Action>) {
        // A gone owner is not asked: it would only cost MessageTimeout.
        let skip = self.owner().filter(|_| self.owner_gone(now));
        let peers: Vec<usize> = self
            .peers()
            .into_iter()
            .filter(|&p| Some(p) != skip)
            .collect();
        let unanswered: Vec<usize> = skip.into_iter().collect();
        if peers.is_empty() {
            self.resolve_claim(now, &unanswered, out);
        } else {
            self.phase = Phase::Claiming {
                waiting: peers.clone(),
                unanswered,
            };
            out.push(Action::AskRelinquish { peers });
        }
    }

    /// Back to watching, with a full SlurmctldTimeout before any claim.
    fn enter_standby(&mut self, now: Millis, out: &mut Vec<Action>, refusal: Refusal) {
        self.phase = Phase::Standby;
        self.rpc_alive = now;
        self.hb_alive = now;
        for to in std::mem::take(&mut self.deferred) {
            out.push(Action::AnswerRelinquish { to, released: true });
        }
        if std::mem::take(&mut self.takeover_pending) {
            out.push(Action::AnswerTakeover {
                result: Err(refusal),
            });
        }
    }

    /// Every claim answer is in: take control, wait for the owner to be
    /// gone, or not.
    fn resolve_claim(&mut self, now: Millis, unanswered: &[usize], out: &mut Vec<Action>) {
        let owner_unanswered = self.owner().is_some_and(|o| unanswered.contains(&o));
        if !owner_unanswered {
            self.phase = Phase::Taking;
            out.push(Action::TakeControl { forced: false });
        } else if self.owner_gone(now) {
            self.phase = Phase::Taking;
            out.push(Action::TakeControl { forced: true });
        } else {
            self.phase = Phase::AwaitStale;
            // Accepted: control follows once the owner is gone.
            if std::mem::take(&mut self.takeover_pending) {
                out.push(Action::AnswerTakeover { result: Ok(()) });
            }
        }
    }

    /// Feeds one input; returns the actions to carry out, in order.
    pub fn step(&mut self, input: Input) -> Vec<Action> {
        let mut out = Vec::new();
        match input {
            Input::Started { now, epoch } => {
                if self.phase != Phase::Idle {
                    return out;
                }
                self.rpc_alive = now;
                self.hb_alive = now;
                self.epoch_seen = epoch;
                if self.me == 0 && self.owner().is_none() {
                    // The primary takes control when it starts (after
                    // asking whoever acts to stop).
                    self.start_claim(now, &mut out);
                } else {
                    // A primary returning while a backup holds the epoch
                    // asks for control back once it reaches the backup
                    // and a witness.
                    self.reclaim = self.me == 0;
                    self.phase = Phase::Standby;
                    out.push(Action::Probe);
                    if self.wants_witness(now) {
                        out.push(Action::AskWitness);
                    }
                }
            }
            Input::Tick { now } => match self.phase {
                Phase::Standby => {
                    out.push(Action::Probe);
                    if self.wants_witness(now) {
                        out.push(Action::AskWitness);
                    }
                    if self.may_reclaim(now) || (self.owner_gone(now) && !self.lower_peer_up(now)) {
                        self.start_claim(now, &mut out);
                    }
                }
                Phase::AwaitStale => {
                    out.push(Action::Probe);
                    if self.wants_witness(now) {
                        out.push(Action::AskWitness);
                    }
                    if self.owner_gone(now) {
                        self.phase = Phase::Taking;
                        out.push(Action::TakeControl { forced: true });
                    }
                }
                Phase::Active { .. } => {
                    if self.count > 1 && now.saturating_sub(self.last_beat) >= self.timeout / 2 {
                        // The heartbeat could not be renewed: a peer may
                        // take over once it is stale, so stop well before.
                        // (A lone controller has nobody to make room for.)
                        self.reclaim = self.me == 0;
                        self.phase = Phase::Stopping;
                        out.push(Action::GiveUp);
                        out.push(Action::StopActing);
                    } else {
                        out.push(Action::WriteHeartbeat);
                    }
                }
                _ => {}
            },
            Input::PeerSeen { now, peer, state } => {
                if peer >= self.count || peer == self.me {
                    return out;
                }
                if state != PeerState::Unreachable {
                    self.peer_seen[peer] = Some(now);
                }
                if let PeerState::InControl { .. } = state {
                    self.rpc_alive = self.rpc_alive.max(now);
                    self.peer_control[peer] = Some(now);
                    if self.phase == Phase::AwaitStale {
                        // The owner is reachable again: ask it.
                        self.start_claim(now, &mut out);
                    }
                }
            }
            Input::FilesRead {
                now,
                heartbeat,
                epoch,
            } => {
                if heartbeat != self.last_heartbeat {
                    if heartbeat.is_some() {
                        self.hb_alive = self.hb_alive.max(now);
                    }
                    self.last_heartbeat = heartbeat;
                }
                if epoch.is_some() {
                    self.epoch_seen = epoch;
                }
            }
            Input::WitnessSeen { now, reached } => {
                if reached {
                    self.witness_at = Some(self.witness_at.map_or(now, |w| w.max(now)));
                }
            }
            Input::BeatWritten { now } => {
                if self.is_active() {
                    self.last_beat = self.last_beat.max(now);
                }
            }
            Input::TakeoverRequested { now } => match self.phase {
                Phase::Standby | Phase::AwaitStale => {
                    self.takeover_pending = true;
                    self.start_claim(now, &mut out);
                }
                Phase::Claiming { .. } | Phase::Taking => self.takeover_pending = true,
                Phase::Active { .. } => out.push(Action::AnswerTakeover { result: Ok(()) }),
                Phase::Idle | Phase::Stopping => out.push(Action::AnswerTakeover {
                    result: Err(Refusal::Busy),
                }),
            },
            Input::RelinquishRequested { now, from } => match self.phase {
                Phase::Idle | Phase::Standby => {
                    self.rpc_alive = self.rpc_alive.max(now);
                    out.push(Action::AnswerRelinquish {
                        to: from,
                        released: true,
                    });
                }
                Phase::Claiming { .. } | Phase::AwaitStale => {
                    if from < self.me {
                        out.push(Action::AnswerRelinquish {
                            to: from,
                            released: true,
                        });
                        self.enter_standby(now, &mut out, Refusal::PreemptedBy(from));
                    } else {
                        out.push(Action::AnswerRelinquish {
                            to: from,
                            released: false,
                        });
                    }
                }
                Phase::Taking | Phase::Stopping => {
                    // Control is given away on request: no reclaim.
                    self.reclaim = false;
                    self.deferred.push(from);
                }
                Phase::Active { .. } => {
                    self.reclaim = false;
                    self.deferred.push(from);
                    self.phase = Phase::Stopping;
                    out.push(Action::StopActing);
                }
            },
            Input::RelinquishAnswered { now, peer, answer } => {
                let Phase::Claiming {
                    waiting,
                    unanswered,
                } = &mut self.phase
                else {
                    return out;
                };
                let Some(at) = waiting.iter().position(|&p| p == peer) else {
                    return out;
                };
                waiting.remove(at);
                match answer {
                    PeerAnswer::Released => {}
                    PeerAnswer::Unreachable => unanswered.push(peer),
                    PeerAnswer::Refused => {
                        self.enter_standby(now, &mut out, Refusal::PreemptedBy(peer));
                        return out;
                    }
                }
                if waiting.is_empty() {
                    let unanswered = std::mem::take(unanswered);
                    self.resolve_claim(now, &unanswered, &mut out);
                }
            }
            Input::Activated { now, epoch } => {
                if self.phase != Phase::Taking {
                    return out;
                }
                self.rpc_alive = now;
                self.last_beat = now;
                self.reclaim = false;
                self.phase = Phase::Active { epoch };
                self.peer_seen.iter_mut().for_each(|p| *p = None);
                self.peer_control.iter_mut().for_each(|p| *p = None);
                out.push(Action::WriteHeartbeat);
                if std::mem::take(&mut self.takeover_pending) {
                    out.push(Action::AnswerTakeover { result: Ok(()) });
                }
                if !self.deferred.is_empty() {
                    self.phase = Phase::Stopping;
                    out.push(Action::StopActing);
                }
            }
            Input::TakeFailed { now } => {
                if self.phase == Phase::Taking {
                    self.enter_standby(now, &mut out, Refusal::NotTaken);
                }
            }
            Input::ControlLost { now: _ } => {
                if matches!(self.phase, Phase::Active { .. } | Phase::Stopping)
                    && self.deferred.is_empty()
                {
                    // Deposed, not asked: a primary asks for control back.
                    self.reclaim = self.me == 0;
                }
                if let Phase::Active { .. } = self.phase {
                    self.phase = Phase::Stopping;
                    out.push(Action::StopActing);
                }
            }
            Input::Stopped { now } => {
                if matches!(self.phase, Phase::Stopping | Phase::Active { .. }) {
                    self.enter_standby(now, &mut out, Refusal::Busy);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T: Millis = 5_000;

    fn epoch(epoch: u64, owner: u32) -> Option<EpochRecord> {
        Some(EpochRecord {
            epoch,
            owner,
            host: String::new(),
        })
    }

    fn hb(seq: u64) -> Option<Heartbeat> {
        Some(Heartbeat {
            epoch: 1,
            owner: 0,
            seq,
            time: 0,
        })
    }

    fn take(forced: bool) -> Action {
        Action::TakeControl { forced }
    }

    fn in_control(now: Millis, peer: usize) -> Input {
        Input::PeerSeen {
            now,
            peer,
            state: PeerState::InControl { epoch: 1 },
        }
    }

    fn witness(now: Millis) -> Input {
        Input::WitnessSeen { now, reached: true }
    }

    fn backup() -> Machine {
        let mut m = Machine::new(1, 2, T);
        assert_eq!(
            m.step(Input::Started {
                now: 0,
                epoch: epoch(1, 0)
            }),
            vec![Action::Probe]
        );
        m
    }

    fn backup_with_witnesses() -> Machine {
        let mut m = Machine::new(1, 2, T).with_witnesses(true);
        assert_eq!(
            m.step(Input::Started {
                now: 0,
                epoch: epoch(1, 0)
            }),
            vec![Action::Probe]
        );
        m
    }

    fn active_backup() -> Machine {
        let mut m = backup();
        // Silent and stale since the start: the owner is not even asked.
        assert_eq!(
            m.step(Input::Tick { now: T }),
            vec![Action::Probe, take(true)]
        );
        assert_eq!(
            m.step(Input::Activated { now: T, epoch: 2 }),
            vec![Action::WriteHeartbeat]
        );
        m
    }

    /// A primary in control whose epoch a backup then took.
    fn deposed_primary(witnesses: bool) -> Machine {
        let mut m = Machine::new(0, 2, T).with_witnesses(witnesses);
        m.step(Input::Started {
            now: 0,
            epoch: epoch(1, 0),
        });
        m.step(Input::RelinquishAnswered {
            now: 1,
            peer: 1,
            answer: PeerAnswer::Released,
        });
        m.step(Input::Activated { now: 2, epoch: 2 });
        assert_eq!(
            m.step(Input::ControlLost { now: 100 }),
            vec![Action::StopActing]
        );
        assert_eq!(m.step(Input::Stopped { now: 110 }), vec![]);
        assert!(m.reclaiming());
        m.step(Input::FilesRead {
            now: 120,
            heartbeat: hb(9),
            epoch: epoch(3, 1),
        });
        m
    }

    #[test]
    fn intervals_scale_with_the_timeout_within_bounds() {
        assert_eq!(probe_interval(5_000), 250);
        assert_eq!(beat_interval(5_000), 100);
        assert_eq!(settle_time(5_000), 200);
        assert_eq!(probe_interval(120_000), 1_000);
        assert_eq!(beat_interval(120_000), 1_000);
        assert_eq!(probe_interval(0), 100);
        assert_eq!(beat_interval(0), 50);
        assert_eq!(settle_time(u64::MAX), 2_000);
        // A deposed owner checks its fence at least twice before the
        // taker acts, and the standby sees several probes per timeout.
        for t in [1_000, 5_000, 60_000, 300_000] {
            assert!(settle_time(t) >= 2 * beat_interval(t));
            assert!(probe_interval(t) * 4 <= t);
        }
    }

    #[test]
    fn a_lone_primary_takes_control_at_once() {
        let mut m = Machine::new(0, 1, T);
        assert_eq!(
            m.step(Input::Started {
                now: 0,
                epoch: None
            }),
            vec![take(false)]
        );
        assert_eq!(
            m.step(Input::Activated { now: 1, epoch: 1 }),
            vec![Action::WriteHeartbeat]
        );
        assert!(m.is_active());
        assert_eq!(m.step(Input::Tick { now: 2 }), vec![Action::WriteHeartbeat]);
    }

    #[test]
    fn primary_cold_start_does_not_wait_for_a_missing_backup() {
        // The epoch is the primary's own (or there is none): a backup that
        // does not answer cannot be acting.
        for e in [None, epoch(3, 0)] {
            let mut m = Machine::new(0, 2, T).with_witnesses(true);
            assert_eq!(
                m.step(Input::Started { now: 0, epoch: e }),
                vec![Action::AskRelinquish { peers: vec![1] }]
            );
            assert_eq!(
                m.step(Input::RelinquishAnswered {
                    now: 10,
                    peer: 1,
                    answer: PeerAnswer::Unreachable
                }),
                vec![take(false)]
            );
        }
    }

    #[test]
    fn a_returning_primary_asks_back_only_with_the_backup_and_a_witness_in_reach() {
        let mut m = Machine::new(0, 2, T).with_witnesses(true);
        assert_eq!(
            m.step(Input::Started {
                now: 0,
                epoch: epoch(4, 1)
            }),
            vec![Action::Probe, Action::AskWitness]
        );
        assert!(m.reclaiming());
        assert_eq!(m.reclaim_wait(10), Some(ReclaimWait::Owner));
        // The backup answers, no witness yet: no request.
        m.step(in_control(50, 1));
        assert_eq!(m.reclaim_wait(60), Some(ReclaimWait::Witness));
        assert_eq!(
            m.step(Input::Tick { now: 250 }),
            vec![Action::Probe, Action::AskWitness]
        );
        // A witness answered long ago only: still none.
        m.step(witness(300));
        m.step(in_control(2_000, 1));
        assert_eq!(
            m.step(Input::Tick { now: 2_100 }),
            vec![Action::Probe, Action::AskWitness]
        );
        // Both in reach now.
        m.step(witness(2_200));
        assert_eq!(
            m.step(Input::Tick { now: 2_250 }),
            vec![
                Action::Probe,
                Action::AskWitness,
                Action::AskRelinquish { peers: vec![1] }
            ]
        );
        assert_eq!(
            m.step(Input::RelinquishAnswered {
                now: 2_400,
                peer: 1,
                answer: PeerAnswer::Released
            }),
            vec![take(false)]
        );
        m.step(Input::Activated {
            now: 2_500,
            epoch: 5,
        });
        assert!(!m.reclaiming());
        assert_eq!(m.reclaim_wait(2_600), None);
    }

    #[test]
    fn a_returning_primary_without_nodes_asks_once_the_backup_answers() {
        let mut m = Machine::new(0, 2, T);
        assert_eq!(
            m.step(Input::Started {
                now: 0,
                epoch: epoch(4, 1)
            }),
            vec![Action::Probe]
        );
        assert_eq!(m.step(Input::Tick { now: 250 }), vec![Action::Probe]);
        m.step(in_control(300, 1));
        assert_eq!(
            m.step(Input::Tick { now: 500 }),
            vec![Action::Probe, Action::AskRelinquish { peers: vec![1] }]
        );
    }

    #[test]
    fn a_returning_primary_takes_over_from_a_gone_backup_without_asking_it() {
        let mut m = Machine::new(0, 2, T);
        m.step(Input::Started {
            now: 0,
            epoch: epoch(4, 1),
        });
        // The backup does not answer but still beats.
        m.step(Input::FilesRead {
            now: 3_000,
            heartbeat: hb(1),
            epoch: epoch(4, 1),
        });
        assert_eq!(m.step(Input::Tick { now: 7_999 }), vec![Action::Probe]);
        // Silent for SlurmctldTimeout after the last change.
        assert_eq!(
            m.step(Input::Tick { now: 8_000 }),
            vec![Action::Probe, take(true)]
        );
    }

    #[test]
    fn await_stale_asks_again_when_the_owner_answers_a_ping() {
        let mut m = backup();
        m.step(Input::TakeoverRequested { now: 10 });
        assert_eq!(
            m.step(Input::RelinquishAnswered {
                now: 20,
                peer: 0,
                answer: PeerAnswer::Unreachable,
            }),
            vec![Action::AnswerTakeover { result: Ok(()) }]
        );
        assert_eq!(m.phase(), &Phase::AwaitStale);
        assert_eq!(
            m.step(in_control(30, 0)),
            vec![Action::AskRelinquish { peers: vec![0] }]
        );
    }

    #[test]
    fn backup_takes_over_after_silence_only() {
        let mut m = backup();
        m.step(in_control(1_000, 0));
        m.step(Input::FilesRead {
            now: 2_000,
            heartbeat: hb(1),
            epoch: epoch(1, 0),
        });
        m.step(Input::FilesRead {
            now: 3_000,
            heartbeat: hb(2),
            epoch: epoch(1, 0),
        });
        // Unreachable pings and an unchanged heartbeat are silence.
        m.step(Input::PeerSeen {
            now: 5_000,
            peer: 0,
            state: PeerState::Unreachable,
        });
        m.step(Input::FilesRead {
            now: 6_000,
            heartbeat: hb(2),
            epoch: epoch(1, 0),
        });
        // The primary answered a ping at 1000 and its heartbeat last
        // changed at 3000.
        assert_eq!(m.next_deadline(7_000), Some(8_000));
        assert_eq!(m.step(Input::Tick { now: 7_999 }), vec![Action::Probe]);
        assert_eq!(
            m.step(Input::Tick { now: 8_000 }),
            vec![Action::Probe, take(true)]
        );
        assert_eq!(m.next_deadline(8_000), None);
    }

    #[test]
    fn either_signal_alone_keeps_the_backup_waiting() {
        // Heartbeat changes without pings.
        let mut m = backup();
        for i in 1..40u64 {
            m.step(Input::FilesRead {
                now: i * 400,
                heartbeat: hb(i),
                epoch: epoch(1, 0),
            });
            assert_eq!(m.step(Input::Tick { now: i * 400 }), vec![Action::Probe]);
        }
        // Pings in control without heartbeat changes.
        let mut m = backup_with_witnesses();
        for i in 1..40u64 {
            m.step(in_control(i * 400, 0));
            m.step(witness(i * 400));
            assert_eq!(m.step(Input::Tick { now: i * 400 }), vec![Action::Probe]);
        }
    }

    #[test]
    fn a_backup_that_reaches_a_witness_takes_over_from_a_primary_that_still_beats() {
        let mut m = backup_with_witnesses();
        m.step(in_control(1_000, 0));
        let mut now = 1_000;
        while now < 6_000 {
            now += 250;
            m.step(Input::FilesRead {
                now,
                heartbeat: hb(now),
                epoch: epoch(1, 0),
            });
            m.step(witness(now));
            let out = m.step(Input::Tick { now });
            if now < 1_500 {
                assert_eq!(out, vec![Action::Probe], "at {now}");
            } else if now < 6_000 {
                // Pings missed: witnesses are asked.
                assert_eq!(out, vec![Action::Probe, Action::AskWitness], "at {now}");
            } else {
                // SlurmctldTimeout after the last answer; the primary is
                // not asked (it would only cost MessageTimeout).
                assert_eq!(
                    out,
                    vec![Action::Probe, Action::AskWitness, take(true)],
                    "at {now}"
                );
            }
        }
    }

    #[test]
    fn a_cut_off_backup_never_fences_a_primary_that_beats() {
        let mut m = backup_with_witnesses();
        for i in 1..=240u64 {
            let now = i * 250;
            m.step(Input::FilesRead {
                now,
                heartbeat: hb(i),
                epoch: epoch(1, 0),
            });
            m.step(Input::WitnessSeen {
                now,
                reached: false,
            });
            m.step(Input::PeerSeen {
                now,
                peer: 0,
                state: PeerState::Unreachable,
            });
            let out = m.step(Input::Tick { now });
            assert!(
                out.iter()
                    .all(|a| matches!(a, Action::Probe | Action::AskWitness)),
                "{out:?} at {now}"
            );
        }
        assert_eq!(m.phase(), &Phase::Standby);
    }

    #[test]
    fn without_nodes_rpc_silence_alone_never_suffices() {
        // A witness answer is ignored when slurm.conf has no node to ask.
        let mut m = backup();
        for i in 1..=120u64 {
            let now = i * 250;
            m.step(Input::FilesRead {
                now,
                heartbeat: hb(i),
                epoch: epoch(1, 0),
            });
            m.step(witness(now));
            assert_eq!(m.step(Input::Tick { now }), vec![Action::Probe]);
        }
    }

    #[test]
    fn an_old_witness_answer_does_not_count() {
        let mut m = backup_with_witnesses();
        m.step(witness(4_000));
        for i in 1..=24u64 {
            m.step(Input::FilesRead {
                now: i * 250,
                heartbeat: hb(i),
                epoch: epoch(1, 0),
            });
        }
        // Silent over RPC since 0, beating, witness 1.25 s old: fine.
        assert!(m.owner_gone(5_250));
        assert!(!m.owner_gone(5_251));
        assert_eq!(
            m.step(Input::Tick { now: 5_300 }),
            vec![Action::Probe, Action::AskWitness]
        );
    }

    #[test]
    fn a_second_backup_defers_to_the_first() {
        let mut m = Machine::new(2, 3, T);
        m.step(Input::Started {
            now: 0,
            epoch: epoch(1, 0),
        });
        m.step(Input::PeerSeen {
            now: 4_000,
            peer: 1,
            state: PeerState::Standby,
        });
        assert_eq!(m.step(Input::Tick { now: 6_000 }), vec![Action::Probe]);
        assert_eq!(
            m.step(Input::Tick { now: 9_000 }),
            vec![Action::Probe, Action::AskRelinquish { peers: vec![1] }]
        );
        assert_eq!(
            m.step(Input::RelinquishAnswered {
                now: 9_010,
                peer: 1,
                answer: PeerAnswer::Released
            }),
            vec![take(true)]
        );
    }

    #[test]
    fn takeover_request_claims_and_answers_once_active() {
        let mut m = backup();
        assert_eq!(
            m.step(Input::TakeoverRequested { now: 100 }),
            vec![Action::AskRelinquish { peers: vec![0] }]
        );
        assert_eq!(
            m.step(Input::RelinquishAnswered {
                now: 110,
                peer: 0,
                answer: PeerAnswer::Released
            }),
            vec![take(false)]
        );
        assert_eq!(
            m.step(Input::Activated { now: 120, epoch: 2 }),
            vec![
                Action::WriteHeartbeat,
                Action::AnswerTakeover { result: Ok(()) }
            ]
        );
        // Asked again while in control: nothing to do.
        assert_eq!(
            m.step(Input::TakeoverRequested { now: 130 }),
            vec![Action::AnswerTakeover { result: Ok(()) }]
        );
    }

    #[test]
    fn takeover_with_an_unreachable_acting_primary_waits_for_silence() {
        let mut m = backup();
        m.step(Input::FilesRead {
            now: 100,
            heartbeat: hb(1),
            epoch: epoch(1, 0),
        });
        m.step(Input::TakeoverRequested { now: 200 });
        assert_eq!(
            m.step(Input::RelinquishAnswered {
                now: 210,
                peer: 0,
                answer: PeerAnswer::Unreachable
            }),
            vec![Action::AnswerTakeover { result: Ok(()) }]
        );
        assert_eq!(m.phase(), &Phase::AwaitStale);
        assert_eq!(m.step(Input::Tick { now: 5_099 }), vec![Action::Probe]);
        assert_eq!(
            m.step(Input::Tick { now: 5_100 }),
            vec![Action::Probe, take(true)]
        );
    }

    #[test]
    fn relinquish_stops_the_active_controller_and_answers_after() {
        let mut m = active_backup();
        assert_eq!(
            m.step(Input::RelinquishRequested {
                now: 9_000,
                from: 0
            }),
            vec![Action::StopActing]
        );
        // Asked twice while stopping: both answered once stopped.
        assert_eq!(
            m.step(Input::RelinquishRequested {
                now: 9_001,
                from: 0
            }),
            vec![]
        );
        assert_eq!(
            m.step(Input::Stopped { now: 9_100 }),
            vec![
                Action::AnswerRelinquish {
                    to: 0,
                    released: true
                },
                Action::AnswerRelinquish {
                    to: 0,
                    released: true
                }
            ]
        );
        assert_eq!(m.phase(), &Phase::Standby);
        // No claim for a full SlurmctldTimeout after giving control away.
        assert_eq!(m.step(Input::Tick { now: 14_000 }), vec![Action::Probe]);
    }

    #[test]
    fn relinquish_during_takeover_is_answered_after_activation() {
        let mut m = backup();
        m.step(Input::TakeoverRequested { now: 0 });
        m.step(Input::RelinquishAnswered {
            now: 1,
            peer: 0,
            answer: PeerAnswer::Released,
        });
        assert_eq!(m.phase(), &Phase::Taking);
        assert_eq!(
            m.step(Input::RelinquishRequested { now: 2, from: 0 }),
            vec![]
        );
        assert_eq!(
            m.step(Input::Activated { now: 3, epoch: 2 }),
            vec![
                Action::WriteHeartbeat,
                Action::AnswerTakeover { result: Ok(()) },
                Action::StopActing
            ]
        );
        assert_eq!(
            m.step(Input::Stopped { now: 4 }),
            vec![Action::AnswerRelinquish {
                to: 0,
                released: true
            }]
        );
    }

    #[test]
    fn two_claimants_the_lower_index_wins() {
        // The backup claims; the primary asks at the same time.
        let mut b = backup();
        b.step(Input::TakeoverRequested { now: 0 });
        assert_eq!(
            b.step(Input::RelinquishRequested { now: 1, from: 0 }),
            vec![
                Action::AnswerRelinquish {
                    to: 0,
                    released: true
                },
                Action::AnswerTakeover {
                    result: Err(Refusal::PreemptedBy(0))
                }
            ]
        );
        assert_eq!(b.phase(), &Phase::Standby);
        // The primary, claiming, refuses the backup, and a refusal sends
        // a claimant back to standby.
        let mut p = Machine::new(0, 2, T);
        p.step(Input::Started {
            now: 0,
            epoch: epoch(1, 0),
        });
        assert_eq!(
            p.step(Input::RelinquishRequested { now: 1, from: 1 }),
            vec![Action::AnswerRelinquish {
                to: 1,
                released: false
            }]
        );
        let mut b = backup();
        b.step(Input::TakeoverRequested { now: 0 });
        assert_eq!(
            b.step(Input::RelinquishAnswered {
                now: 1,
                peer: 0,
                answer: PeerAnswer::Refused
            }),
            vec![Action::AnswerTakeover {
                result: Err(Refusal::PreemptedBy(0))
            }]
        );
    }

    #[test]
    fn lost_control_drops_to_standby() {
        let mut m = active_backup();
        assert_eq!(
            m.step(Input::ControlLost { now: 9_000 }),
            vec![Action::StopActing]
        );
        assert_eq!(m.step(Input::Stopped { now: 9_001 }), vec![]);
        assert_eq!(m.phase(), &Phase::Standby);
        // Only a primary asks for control back.
        assert!(!m.reclaiming());
    }

    #[test]
    fn a_deposed_primary_asks_back_once_it_reaches_the_backup_and_a_witness() {
        let mut m = deposed_primary(true);
        // Cut off: neither the backup nor a witness answers; the backup
        // beats. It waits, however long.
        for i in 1..=100u64 {
            let now = 120 + i * 250;
            m.step(Input::FilesRead {
                now,
                heartbeat: hb(i + 100),
                epoch: epoch(3, 1),
            });
            m.step(Input::WitnessSeen {
                now,
                reached: false,
            });
            assert_eq!(
                m.step(Input::Tick { now }),
                vec![Action::Probe, Action::AskWitness]
            );
        }
        // The backup is reachable again, but no node is: still waiting.
        m.step(in_control(25_200, 1));
        assert_eq!(
            m.step(Input::Tick { now: 25_250 }),
            vec![Action::Probe, Action::AskWitness]
        );
        m.step(witness(25_300));
        assert_eq!(
            m.step(Input::Tick { now: 25_350 }),
            vec![
                Action::Probe,
                Action::AskWitness,
                Action::AskRelinquish { peers: vec![1] }
            ]
        );
    }

    #[test]
    fn a_primary_that_gave_control_away_on_request_does_not_ask_it_back() {
        let mut m = Machine::new(0, 2, T).with_witnesses(true);
        m.step(Input::Started {
            now: 0,
            epoch: None,
        });
        m.step(Input::RelinquishAnswered {
            now: 1,
            peer: 1,
            answer: PeerAnswer::Released,
        });
        m.step(Input::Activated { now: 2, epoch: 1 });
        // scontrol takeover on the backup.
        assert_eq!(
            m.step(Input::RelinquishRequested { now: 100, from: 1 }),
            vec![Action::StopActing]
        );
        m.step(Input::Stopped { now: 110 });
        assert!(!m.reclaiming());
        m.step(Input::FilesRead {
            now: 200,
            heartbeat: hb(1),
            epoch: epoch(2, 1),
        });
        for i in 1..=40u64 {
            let now = 200 + i * 250;
            m.step(in_control(now, 1));
            m.step(witness(now));
            assert_eq!(m.step(Input::Tick { now }), vec![Action::Probe], "at {now}");
        }
    }

    #[test]
    fn an_active_controller_that_cannot_renew_its_heartbeat_steps_down() {
        let mut m = active_backup();
        m.step(Input::BeatWritten { now: 5_100 });
        assert_eq!(
            m.step(Input::Tick { now: 7_599 }),
            vec![Action::WriteHeartbeat]
        );
        assert_eq!(
            m.step(Input::Tick { now: 7_600 }),
            vec![Action::GiveUp, Action::StopActing]
        );
        assert_eq!(m.phase(), &Phase::Stopping);
        assert_eq!(m.step(Input::Stopped { now: 7_700 }), vec![]);
        assert_eq!(m.phase(), &Phase::Standby);
        // A primary that had to step down asks for control back later.
        let mut p = Machine::new(0, 2, T);
        p.step(Input::Started {
            now: 0,
            epoch: None,
        });
        p.step(Input::RelinquishAnswered {
            now: 0,
            peer: 1,
            answer: PeerAnswer::Unreachable,
        });
        p.step(Input::Activated { now: 0, epoch: 1 });
        assert_eq!(
            p.step(Input::Tick { now: 2_500 }),
            vec![Action::GiveUp, Action::StopActing]
        );
        assert!(p.reclaiming());
        // A lone controller has nobody to make room for: it keeps trying.
        let mut lone = Machine::new(0, 1, T);
        lone.step(Input::Started {
            now: 0,
            epoch: None,
        });
        lone.step(Input::Activated { now: 0, epoch: 1 });
        assert_eq!(
            lone.step(Input::Tick { now: 60_000 }),
            vec![Action::WriteHeartbeat]
        );
    }

    #[test]
    fn failed_take_goes_back_to_standby() {
        let mut m = backup();
        m.step(Input::TakeoverRequested { now: 0 });
        m.step(Input::RelinquishAnswered {
            now: 1,
            peer: 0,
            answer: PeerAnswer::Released,
        });
        assert_eq!(
            m.step(Input::TakeFailed { now: 2 }),
            vec![Action::AnswerTakeover {
                result: Err(Refusal::NotTaken)
            }]
        );
        assert_eq!(m.phase(), &Phase::Standby);
    }

    #[test]
    fn stray_inputs_are_ignored() {
        let mut m = backup();
        assert_eq!(
            m.step(Input::RelinquishAnswered {
                now: 1,
                peer: 0,
                answer: PeerAnswer::Released
            }),
            vec![]
        );
        assert_eq!(m.step(Input::Activated { now: 1, epoch: 9 }), vec![]);
        assert_eq!(
            m.step(Input::PeerSeen {
                now: 1,
                peer: 99,
                state: PeerState::Standby
            }),
            vec![]
        );
        assert_eq!(m.step(Input::Stopped { now: 1 }), vec![]);
        assert_eq!(m.step(Input::BeatWritten { now: 1 }), vec![]);
        assert_eq!(m.step(witness(1)), vec![]);
        assert_eq!(
            m.step(Input::Started {
                now: 1,
                epoch: None
            }),
            vec![]
        );
        assert_eq!(m.phase(), &Phase::Standby);
    }

    fn any_input() -> impl Strategy<Value = Input> {
        let now = 0u64..60_000;
        let peer = 0usize..4;
        prop_oneof![
            now.clone().prop_map(|now| Input::Tick { now }),
            (now.clone(), peer.clone(), 0u8..3).prop_map(|(now, peer, s)| Input::PeerSeen {
                now,
                peer,
                state: match s {
                    0 => PeerState::InControl { epoch: 1 },
                    1 => PeerState::Standby,
                    _ => PeerState::Unreachable,
                }
            }),
            (now.clone(), 0u64..4).prop_map(|(now, s)| Input::FilesRead {
                now,
                heartbeat: hb(s),
                epoch: epoch(s, 0)
            }),
            (now.clone(), any::<bool>())
                .prop_map(|(now, reached)| Input::WitnessSeen { now, reached }),
            now.clone().prop_map(|now| Input::BeatWritten { now }),
            now.clone().prop_map(|now| Input::TakeoverRequested { now }),
            (now.clone(), peer.clone())
                .prop_map(|(now, from)| Input::RelinquishRequested { now, from }),
            (now.clone(), peer, 0u8..3).prop_map(|(now, peer, a)| Input::RelinquishAnswered {
                now,
                peer,
                answer: match a {
                    0 => PeerAnswer::Released,
                    1 => PeerAnswer::Refused,
                    _ => PeerAnswer::Unreachable,
                }
            }),
            now.clone()
                .prop_map(|now| Input::Activated { now, epoch: 2 }),
            now.clone().prop_map(|now| Input::TakeFailed { now }),
            now.clone().prop_map(|now| Input::ControlLost { now }),
            now.prop_map(|now| Input::Stopped { now }),
        ]
    }

    /// What a standby sees, in time order: `(gap in ms, what)`.
    fn watch_input() -> impl Strategy<Value = (Millis, u8, u8)> {
        (0u64..700, 0u8..8, 0u8..4)
    }

    proptest! {
        /// Control is only ever taken from the claiming or waiting phases,
        /// only ever activated after TakeControl, and a controller never
        /// answers a relinquish with "released" while it is in control.
        #[test]
        fn safety(me in 0usize..3, inputs in proptest::collection::vec(any_input(), 0..80)) {
            let mut m = Machine::new(me, 3, T).with_witnesses(me != 1);
            m.step(Input::Started { now: 0, epoch: epoch(1, 0) });
            for input in inputs {
                let before = m.phase().clone();
                let out = m.step(input.clone());
                if out.iter().any(|a| matches!(a, Action::TakeControl { .. })) {
                    let allowed = matches!(
                        before,
                        Phase::Standby | Phase::Claiming { .. } | Phase::AwaitStale
                    );
                    prop_assert!(allowed, "TakeControl from {:?}", before);
                    prop_assert_eq!(m.phase(), &Phase::Taking);
                }
                if m.is_active() {
                    let from_taking = matches!(before, Phase::Taking | Phase::Active { .. });
                    prop_assert!(from_taking, "active after {:?}", before);
                }
                for a in &out {
                    if let Action::AnswerRelinquish { released: true, .. } = a {
                        prop_assert!(!m.is_active(), "released while active after {:?}", input);
                        prop_assert!(!matches!(m.phase(), Phase::Taking));
                    }
                }
                if out.contains(&Action::StopActing) {
                    prop_assert_eq!(m.phase(), &Phase::Stopping);
                }
                if out.contains(&Action::GiveUp) {
                    prop_assert_eq!(out.last(), Some(&Action::StopActing));
                }
            }
        }

        /// A take without the owner's consent happens only when no peer
        /// answered a ping as in control for SlurmctldTimeout, and the
        /// heartbeat did not change for SlurmctldTimeout or (with nodes to
        /// ask) a witness answered within a quarter of it: a backup that
        /// is cut off itself never deposes a primary that still beats.
        #[test]
        fn forced_takes_need_a_silent_owner_and_a_stale_heartbeat_or_a_witness(
            me in 0usize..2,
            witnesses in any::<bool>(),
            watched in proptest::collection::vec(watch_input(), 0..300),
        ) {
            let other = 1 - me;
            let mut m = Machine::new(me, 2, T).with_witnesses(witnesses);
            m.step(Input::Started { now: 0, epoch: epoch(1, u32::try_from(other).unwrap_or(0)) });
            let mut now: Millis = 0;
            let mut in_control_at: Option<Millis> = None;
            let mut changed_at: Option<Millis> = None;
            let mut witness_at: Option<Millis> = None;
            let mut last_hb: Option<Heartbeat> = None;
            let mut seq = 0u64;
            for (gap, what, arg) in watched {
                now += gap;
                let input = match what {
                    0 => {
                        in_control_at = Some(now);
                        in_control(now, other)
                    }
                    1 => Input::PeerSeen { now, peer: other, state: PeerState::Unreachable },
                    2 => {
                        // The heartbeat changes (arg > 0) or not.
                        seq += u64::from(arg);
                        let h = hb(seq);
                        if h != last_hb {
                            changed_at = Some(now);
                            last_hb = h.clone();
                        }
                        Input::FilesRead { now, heartbeat: h, epoch: epoch(1, u32::try_from(other).unwrap_or(0)) }
                    }
                    3 => {
                        let reached = arg % 2 == 0;
                        if reached {
                            witness_at = Some(now);
                        }
                        Input::WitnessSeen { now, reached }
                    }
                    4 => Input::RelinquishAnswered {
                        now,
                        peer: other,
                        answer: if arg == 0 { PeerAnswer::Released } else { PeerAnswer::Unreachable },
                    },
                    5 if arg == 0 => Input::TakeoverRequested { now },
                    _ => Input::Tick { now },
                };
                let out = m.step(input);
                if out.contains(&take(true)) {
                    let silent = in_control_at.is_none_or(|t| now - t >= T);
                    let stale = changed_at.is_none_or(|t| now - t >= T);
                    let witnessed = witnesses && witness_at.is_some_and(|t| now - t <= T / 4);
                    prop_assert!(silent, "forced take {} ms after an in-control answer", now - in_control_at.unwrap_or(0));
                    prop_assert!(stale || witnessed, "forced take with a beating owner and no witness at {}", now);
                }
                if m.is_active() {
                    break;
                }
                if m.phase() == &Phase::Taking {
                    m.step(Input::Activated { now, epoch: 2 });
                    break;
                }
            }
        }
    }
}
