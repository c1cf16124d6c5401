//! Primary and backup controllers (active-passive), as Slurm does it: the
//! SlurmctldHost entries in order, the first one the primary, all sharing
//! StateSaveLocation.
//!
//! - [`machine`]: the decisions as a pure state machine (when to claim,
//!   take, stop), unit-tested without sockets or files;
//! - [`epoch`]: the fencing epoch file and the [`Fence`] the active
//!   controller checks;
//! - [`heartbeat`]: the file the active controller rewrites so the others
//!   can tell it is alive;
//! - [`shell`]: the thin async part: timers, pings, RelinquishControl calls,
//!   witness pings to slurmd, file reads and writes, answers to the
//!   Takeover/RelinquishControl RPCs.
//!
//! # Roles
//!
//! A controller finds its index in SlurmctldHost by its short host name
//! (or `$SLURMCTLD_HOSTNAME`, see [`local_name`]); an entry named
//! `localhost` matches any host, so a single-host slurm.conf keeps working.
//! A backup starts in standby: it listens, answers Ping (in_control=false)
//! and refuses everything else with ESLURM_IN_STANDBY_MODE, so commands and
//! slurmd move on to the next controller. It does not read or write the
//! journal while in standby.
//!
//! # Taking control
//!
//! 1. ask every peer to relinquish (RelinquishControl); a peer that acts
//!    stops taking requests, makes what it accepted durable, stops, and
//!    only then answers. A peer that does not answer matters only when it
//!    owns the epoch: control is then taken without its consent, and only
//!    once it is *gone* (next section);
//! 2. write `epoch + 1`, owned by this controller, durably;
//! 3. only then read the state (journal) from StateSaveLocation, and act
//!    (after a forced take, only once the old owner has had two fence
//!    periods to notice, see below).
//!
//! # When the owner is gone
//!
//! A standby pings the controller in charge every SlurmctldTimeout/20 and
//! reads the heartbeat file as often. The owner is gone when it has not
//! answered a ping for SlurmctldTimeout (counted from the last answer
//! seen, on the standby's own clock) and either
//!
//! - its heartbeat file has not changed for SlurmctldTimeout either: it
//!   does not act (or cannot reach the state, so cannot act durably), or
//! - the standby reaches a *witness*: a slurmd of the cluster answered a
//!   PingNode within the last SlurmctldTimeout/4.
//!
//! RPC silence alone proves nothing about the owner: it is just as well
//! explained by the standby itself being cut off. A backup on the wrong
//! side of a partition that took the epoch would fence a healthy primary
//! (which still reaches the shared state and would obey the epoch), and
//! leave the cluster run by a controller that reaches no node. The
//! witness breaks the symmetry: a backup that reaches a slurmd is on the
//! side where the work is, and the owner it cannot reach cannot reach it
//! back. Where slurm.conf has no node there is no witness, and a backup
//! takes over only from an owner silent on disk too. The witness may sit
//! on the owner's side too (an asymmetric cut): then the backup still
//! takes over, which is safe (the epoch fences the old owner) and leaves
//! a controller that reaches both the nodes and the backup's clients.
//!
//! # A deposed controller stops at once
//!
//! The controller in charge checks the epoch file before every heartbeat,
//! every SlurmctldTimeout/50, and steps down (standby: no writes, no job
//! starts, Ping says not in control) as soon as the file names another
//! owner. Where there is a peer, it also steps down, giving its fence up,
//! when it has not managed to renew the heartbeat for SlurmctldTimeout/2:
//! a peer may take over once the heartbeat is stale for SlurmctldTimeout,
//! and this one must have stopped well before that (a hung file system, a
//! lost mount).
//!
//! A controller that took the epoch without consent waits two heartbeat
//! periods after writing it before it answers as in control; a deposed
//! owner that still runs has checked its fence in that time. So the two
//! never both answer Ping as in control, barring a scheduler stall longer
//! than a beat on the old owner; and even then the old owner acts on
//! nothing (every batch is checked, below).
//!
//! # Control back
//!
//! A primary that lost control without giving it away (its fence failed,
//! it stepped down, or it restarted while a backup holds the epoch) asks
//! the backup to relinquish once it reaches the backup (it answers a ping
//! as in control) and a witness: a primary that sees the backup but no
//! node must not pull control to the side without the nodes. One that
//! gave control away on request (`scontrol takeover` on the backup) does
//! not ask it back, as in Slurm. Each change of hands goes through a new
//! epoch, so at most one controller is in charge at the end.
//!
//! # Why no acknowledged change is lost
//!
//! The active controller holds a [`Fence`] for its epoch `e`. For every
//! batch it (a) checks the epoch file, (b) appends the batch to the journal
//! and fsyncs it, (c) checks the epoch file again, and only when (c) still
//! names `e` does it answer the clients and send actions to the nodes. If
//! any check fails it answers nothing as success (clients get
//! ESLURM_IN_STANDBY_MODE and retry elsewhere), starts no job, writes
//! nothing more and drops to standby. The heartbeat is written only after
//! a check too.
//!
//! Let a change be acknowledged by the controller of epoch `e`. Its check
//! (c) read `e` after its fsync (b) completed. The controller taking epoch
//! `e + 1` writes the epoch file (step 2) *before* it reads the journal
//! (step 3). Since (c) did not see `e + 1`, (c) happened before that write,
//! so (b) happened before that write, which happened before step 3: the
//! taker's read of the journal finds the change, and the same argument,
//! one epoch at a time, carries it to every later owner. ("The journal"
//! is the state directory as recovery reads it: the snapshot and the
//! journal generations after it; a snapshot is begun only right after a
//! batch whose check (c) passed.) Nothing here depends on clocks; it needs
//! a StateSaveLocation whose reads see completed writes (a local disk, or
//! a shared file system with close-to-open consistency, which Slurm
//! requires too).
//!
//! A change the old owner made durable but did not acknowledge (its check
//! (c) failed) may or may not be found by the taker; either is correct,
//! since no client was told it happened (the client retries, as with any
//! failed call).
//!
//! The checks alone do not stop a deposed controller whose check (a)
//! passed and whose write then lands *after* the taker's read: the journal
//! would hold a batch the new owner never saw, replayed at the next start
//! before the new owner's own (same job ids: the acknowledged job would
//! lose). So a controller that takes the epoch from another one (not on
//! a restart of the previous owner itself) writes a snapshot of what it
//! recovered before it acts: it starts a new journal generation and
//! removes the older ones, and a late append can then only reach a
//! generation that is never replayed again (or an unlinked file). Every
//! snapshot checks the fence again right before it replaces the current
//! one, a controller that lost its fence takes no final snapshot, and
//! script segments are removed only after a check too. What remains is a
//! deposed controller that stalls for the whole takeover between a passing
//! check and a write of its own that is not an append: starting a journal
//! generation (which may be the number the new owner has just started),
//! replacing the snapshot, removing what a snapshot covers, or writing a
//! script segment.
//! That needs a process frozen at exactly that point for longer than the
//! takeover, which a peer begins without the old owner's consent only
//! after SlurmctldTimeout of silence.

pub mod epoch;
pub mod heartbeat;
pub mod machine;
pub mod shell;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use slurm_common::conf::ControllerHost;
use tokio::sync::{mpsc, oneshot};

pub use epoch::{EpochRecord, Fence, FenceError, EPOCH_FILE};
pub use heartbeat::{Heartbeat, HEARTBEAT_FILE};
pub use machine::{Machine, ReclaimWait, Refusal};
pub use shell::{Shell, ShellConfig};

/// Overrides the host name a controller looks for in SlurmctldHost. Only
/// for running several controllers on one host (tests on 127.0.0.1 and
/// 127.0.0.2); Slurm itself has no such switch and uses the host name.
pub const HOSTNAME_ENV: &str = "SLURMCTLD_HOSTNAME";

/// The name this controller looks for in SlurmctldHost: `override_name`
/// (the value of [`HOSTNAME_ENV`]) when set and not empty, else `hostname`
/// up to its first dot.
pub fn local_name(override_name: Option<&str>, hostname: &str) -> String {
    match override_name.map(str::trim) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => short(hostname).to_string(),
    }
}

fn short(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// This controller's index in SlurmctldHost: the entry named `name` (or
/// whose short name is `name`), else the first entry named `localhost`.
pub fn controller_index(hosts: &[ControllerHost], name: &str) -> Option<usize> {
    hosts
        .iter()
        .position(|h| h.name == name)
        .or_else(|| hosts.iter().position(|h| short(&h.name) == short(name)))
        .or_else(|| hosts.iter().position(|h| h.name == "localhost"))
}

/// A RelinquishControl answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    pub released: bool,
    pub epoch: u64,
}

/// What the RPC handlers ask of the HA shell.
#[derive(Debug)]
pub enum Request {
    /// `scontrol takeover`.
    Takeover {
        reply: oneshot::Sender<Result<(), Refusal>>,
    },
    /// A peer is about to take control.
    Relinquish {
        from: usize,
        reply: oneshot::Sender<Released>,
    },
    /// `scontrol shutdown` reached the controller in charge: stop the
    /// others too (answered once they were asked).
    ShutdownPeers {
        scope: i32,
        reply: oneshot::Sender<()>,
    },
}

/// What the RPC handlers see of the HA state: whether this controller acts,
/// its epoch, and the way to the shell.
#[derive(Debug)]
pub struct Link {
    index: usize,
    in_control: AtomicBool,
    epoch: AtomicU64,
    requests: mpsc::Sender<Request>,
}

impl Link {
    /// A link for controller `index` (standby) and the shell's end.
    pub fn new(index: usize) -> (Arc<Link>, mpsc::Receiver<Request>) {
        let (tx, rx) = mpsc::channel(64);
        (
            Arc::new(Link {
                index,
                in_control: AtomicBool::new(false),
                epoch: AtomicU64::new(0),
                requests: tx,
            }),
            rx,
        )
    }

    pub fn index(&self) -> usize {
        self.index
    }

    /// Whether this controller acts (takes requests) now.
    pub fn in_control(&self) -> bool {
        self.in_control.load(Ordering::SeqCst)
    }

    pub fn set_in_control(&self, v: bool) {
        self.in_control.store(v, Ordering::SeqCst);
    }

    /// The epoch held, or last seen in standby.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    pub fn set_epoch(&self, e: u64) {
        self.epoch.store(e, Ordering::SeqCst);
    }

    /// Asks the shell to take control; `Err(Busy)` when it has gone.
    pub async fn takeover(&self) -> Result<(), Refusal> {
        let (reply, rx) = oneshot::channel();
        if self
            .requests
            .send(Request::Takeover { reply })
            .await
            .is_err()
        {
            return Err(Refusal::Busy);
        }
        rx.await.unwrap_or(Err(Refusal::Busy))
    }

    /// Asks every other controller to shut down (`scope` as in the
    /// request); returns once each was asked or MessageTimeout passed.
    pub async fn shutdown_peers(&self, scope: i32) {
        let (reply, rx) = oneshot::channel();
        if self
            .requests
            .send(Request::ShutdownPeers { scope, reply })
            .await
            .is_ok()
        {
            let _ = rx.await;
        }
    }

    /// Asks the shell to stop acting for peer `from`. `None` when the shell
    /// has gone (the daemon is stopping: it does not act).
    pub async fn relinquish(&self, from: usize) -> Option<Released> {
        let (reply, rx) = oneshot::channel();
        self.requests
            .send(Request::Relinquish { from, reply })
            .await
            .ok()?;
        rx.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<ControllerHost> {
        names
            .iter()
            .map(|n| ControllerHost {
                name: (*n).to_string(),
                addr: None,
            })
            .collect()
    }

    #[test]
    fn role_from_the_host_name() {
        let h = hosts(&["a", "b.example.org"]);
        assert_eq!(controller_index(&h, "a"), Some(0));
        assert_eq!(controller_index(&h, "b"), Some(1));
        assert_eq!(controller_index(&h, "b.example.org"), Some(1));
        assert_eq!(controller_index(&h, "c"), None);
        assert_eq!(controller_index(&h, ""), None);
        // localhost matches any host, but a real name comes first.
        let h = hosts(&["localhost", "vm"]);
        assert_eq!(controller_index(&h, "vm"), Some(1));
        assert_eq!(controller_index(&h, "other"), Some(0));
        assert_eq!(controller_index(&[], "vm"), None);
    }

    #[test]
    fn override_wins_over_the_host_name() {
        assert_eq!(local_name(Some("b"), "vm.example.org"), "b");
        assert_eq!(local_name(Some("  "), "vm.example.org"), "vm");
        assert_eq!(local_name(None, "vm"), "vm");
        assert_eq!(local_name(None, ""), "");
        assert_eq!(local_name(None, "ünï.x"), "ünï");
    }

    #[tokio::test]
    async fn link_without_a_shell_does_not_hang() {
        let (link, rx) = Link::new(1);
        drop(rx);
        assert_eq!(link.takeover().await, Err(Refusal::Busy));
        assert_eq!(link.relinquish(0).await, None);
        assert!(!link.in_control());
        link.set_in_control(true);
        link.set_epoch(4);
        assert!(link.in_control());
        assert_eq!(link.epoch(), 4);
    }
}
