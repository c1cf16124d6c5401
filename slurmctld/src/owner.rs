//! The owner task: the one task that changes the controller, and the group
//! commit that makes its changes durable before anyone hears of them.
//!
//! Commands wait in a queue. The owner takes everything queued at once,
//! handles it, schedules, and gives the batch's scripts and events to a
//! blocking thread that writes and syncs them. While that write is under
//! way the owner goes on handling what arrives, so the disk's flush and the
//! controller's work overlap instead of taking turns; what was handled
//! meanwhile is written as one batch as soon as the previous one is on disk.
//!
//! ```text
//!  queue ──> handle + schedule ──> batch N+1 accumulates ──┐ batch N durable:
//!  disk  ─────────── write + fdatasync of batch N ─────────┤ publish N's view,
//!                                                          │ answer N, send N's actions,
//!                                                          └ start writing N+1
//! ```
//!
//! Why this loses nothing and shows nothing that could be lost:
//! - one batch is written at a time, in order, so the journal's order is
//!   the order in which the state changed;
//! - a reply, a published view (what squeue reads) and an action sent to a
//!   slurmd each wait for the batch whose changes they show to be durable,
//!   and batches land in order, so whatever a client or a node has heard of
//!   survives a crash;
//! - the copy of the state a snapshot file is made from is taken when its
//!   batch's write starts, so it holds exactly what the journal holds;
//! - every write happens between two checks of the HA fence, and nothing
//!   is answered if the epoch was lost meanwhile ([`crate::ha`]).

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use slurm_common::auth::unix_now;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinError, JoinHandle};

use crate::agent::Agent;
use crate::core::{Action, Command, Controller, Event, Reply, Snapshot};
use crate::ha::Fence;
use crate::persist::{scripts, JobFiles, PendingSnapshot, SnapshotWritten, StateStore, StoreError};
use crate::rpc::{Envelope, Shared};

/// Most commands handled into one group commit.
pub(crate) const MAX_BATCH: usize = 4096;

/// How long after a burst of commands free memory is handed back.
const TRIM_AFTER_IDLE: Duration = Duration::from_millis(250);

/// Longest sleep of the timer: bounds the effect of a wall clock that
/// jumps while the controller sleeps.
const MAX_TIMER_SLEEP: Duration = Duration::from_secs(60);

/// Handled but not yet durable: what the batch's write will release.
#[derive(Default)]
struct Batch {
    commands: usize,
    events: Vec<Event>,
    actions: Vec<Action>,
    files: Vec<JobFiles>,
    replies: Vec<(oneshot::Sender<Reply>, Reply)>,
    freed: Vec<u32>,
    /// Something was handled since the last view was published.
    touched: bool,
}

impl Batch {
    /// Nothing to write, to answer or to send.
    fn is_idle(&self) -> bool {
        self.events.is_empty()
            && self.replies.is_empty()
            && self.actions.is_empty()
            && self.freed.is_empty()
    }
}

/// What the writer thread gives back: the store, whether the batch is
/// durable (and the epoch still ours), and a snapshot begun after it.
type Written = (
    StateStore,
    Result<(), String>,
    Option<Result<PendingSnapshot, StoreError>>,
);

/// A batch on its way to disk, with what waits for it.
struct InFlight {
    task: JoinHandle<Written>,
    replies: Vec<(oneshot::Sender<Reply>, Reply)>,
    actions: Vec<Action>,
    freed: Vec<u32>,
    /// The state after the batch, published once it is durable.
    view: Snapshot,
    events: usize,
}

/// A snapshot being written off the runtime.
type SnapshotTask = JoinHandle<Result<SnapshotWritten, StoreError>>;

/// Whether the owner goes on after a batch landed.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Go,
    /// The epoch was lost: everything waiting was refused.
    Stop,
}

/// What woke the owner; lives on the stack for one turn of the loop.
#[allow(clippy::large_enum_variant)]
enum Wake {
    Landed(std::result::Result<Written, JoinError>),
    Command(Envelope),
    Tick,
    Trim,
    Stop,
}

struct Owner {
    ctl: Controller,
    /// None while a batch is being written (the writer has it).
    store: Option<StateStore>,
    state_dir: PathBuf,
    shared: Weak<Shared>,
    agent: Agent,
    fence: Arc<Fence>,
    /// At most one snapshot is written at a time, beside the commits.
    snapshot_task: Option<SnapshotTask>,
    acc: Batch,
    flight: Option<InFlight>,
    last_tick: i64,
    wake: tokio::time::Instant,
}

/// The one task that owns the controller, until `done` (shutdown, or
/// control given up) or until `fence` fails.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn owner_loop(
    mut ctl: Controller,
    store: StateStore,
    state_dir: PathBuf,
    rx: &mut mpsc::Receiver<Envelope>,
    shared: Arc<Shared>,
    agent: Agent,
    mut done: watch::Receiver<bool>,
    fence: Arc<Fence>,
) -> Result<()> {
    // Weak: the owner must not keep the shared parts (and the command
    // queue's sender in them) alive on its own.
    let shared_weak = Arc::downgrade(&shared);
    drop(shared);
    {
        // Segments a crash kept after their last job was purged.
        let dir = state_dir.clone();
        let space = ctl.script_space().clone();
        ctl.take_freed_segments();
        // Removing files is writing: only while the epoch is ours.
        let f = Arc::clone(&fence);
        tokio::task::spawn_blocking(move || {
            if f.check().is_ok() {
                scripts::remove_unused(&dir, &space);
            }
        });
    }
    // The timer sleeps until the controller's next deadline (time limit,
    // --begin, stuck cleanup, MinJobAge purge), recomputed whenever one may
    // have moved; nothing polls.
    let last_tick = unix_now();
    let wake = wake_instant(ctl.next_deadline(last_tick), last_tick);
    let mut owner = Owner {
        ctl,
        store: Some(store),
        state_dir,
        shared: shared_weak,
        agent,
        fence,
        snapshot_task: None,
        acc: Batch::default(),
        flight: None,
        last_tick,
        wake,
    };
    // Memory freed by a burst of requests goes back to the system once the
    // controller has been idle a moment (see `crate::memory`).
    let mut trim_at: Option<tokio::time::Instant> = Some(tokio::time::Instant::now());
    loop {
        let room = owner.acc.commands < MAX_BATCH;
        let wake = tokio::select! {
            biased;
            r = landed(&mut owner.flight) => Wake::Landed(r),
            // Before the queue: a steady stream of commands must not hold
            // back time limits and purges.
            _ = tokio::time::sleep_until(owner.wake) => Wake::Tick,
            env = rx.recv(), if room => match env {
                Some(env) => Wake::Command(env),
                // Every sender is gone: stop as on shutdown.
                None => Wake::Stop,
            },
            _ = sleep_until_some(trim_at) => Wake::Trim,
            _ = done.wait_for(|v| *v) => Wake::Stop,
        };
        match wake {
            Wake::Landed(r) => {
                if owner.land(r)? == Flow::Stop {
                    return Ok(());
                }
                owner.start();
            }
            Wake::Command(env) => {
                let mut batch = vec![env];
                while owner.acc.commands + batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(env) => batch.push(env),
                        Err(_) => break,
                    }
                }
                if trim_at.is_none() {
                    trim_at = Some(tokio::time::Instant::now() + TRIM_AFTER_IDLE);
                }
                owner.handle(batch, false);
                if owner.flight.is_none() {
                    owner.start();
                }
            }
            Wake::Tick => {
                owner.handle(Vec::new(), true);
                if owner.flight.is_none() {
                    owner.start();
                }
            }
            Wake::Trim => {
                trim_at = None;
                tokio::task::spawn_blocking(crate::memory::trim_now);
            }
            Wake::Stop => return owner.stop(rx).await,
        }
    }
}

/// The write in flight, or never.
async fn landed(flight: &mut Option<InFlight>) -> std::result::Result<Written, JoinError> {
    match flight {
        Some(f) => (&mut f.task).await,
        None => std::future::pending().await,
    }
}

impl Owner {
    /// Handles `batch` (and the timer when `tick`) and schedules, adding
    /// the outcome to the batch being accumulated.
    fn handle(&mut self, batch: Vec<Envelope>, tick: bool) {
        let now = unix_now();
        let handled_any = !batch.is_empty();
        let first_event = self.acc.events.len();
        let acc = &mut self.acc;
        for (cmd, reply_tx) in batch {
            let out = self.ctl.handle(cmd, now);
            acc.events.extend(out.events);
            acc.actions.extend(out.actions);
            acc.files.extend(out.job_files);
            acc.replies.push((reply_tx, out.reply));
            acc.commands += 1;
        }
        if tick {
            self.last_tick = now;
            let out = self.ctl.handle(Command::Tick, now);
            acc.events.extend(out.events);
            acc.actions.extend(out.actions);
        }
        if acc.events.len() > first_event || tick || handled_any {
            let out = self.ctl.schedule(now);
            acc.events.extend(out.events);
            acc.actions.extend(out.actions);
        }
        if cfg!(debug_assertions) {
            if let Err(e) = self.ctl.sanity_check() {
                tracing::error!(error = %e, "invariant violated");
            }
        }
        acc.freed.extend(self.ctl.take_freed_segments());
        acc.touched = true;
        // A plain submission (no --begin, no --deadline) adds no deadline
        // (unless the pass wants a second look at it, `Controller::
        // second_look`); skip the scan over every job when a batch holds
        // nothing else.
        let deadlines_moved = tick
            || self.ctl.second_look.is_some()
            || acc.events[first_event..].iter().any(|e| {
                !matches!(e, Event::JobSubmitted { desc, .. }
                    if desc.begin_time <= 0 && desc.deadline <= 0)
            });
        if deadlines_moved {
            self.wake = wake_instant(self.ctl.next_deadline(now), self.last_tick);
        }
    }

    /// Starts writing what was accumulated; call only with no write in
    /// flight. A batch with nothing to write, answer or send is only
    /// published.
    fn start(&mut self) {
        if self.flight.is_some() {
            return;
        }
        let acc = std::mem::take(&mut self.acc);
        if acc.is_idle() {
            if acc.touched {
                self.publish(self.ctl.snapshot());
            }
            return;
        }
        let Some(mut store) = self.store.take() else {
            // Unreachable: the store is only away while a write is in
            // flight. Keep the batch rather than lose it.
            tracing::error!("no state store to write a batch to");
            self.acc = acc;
            return;
        };
        let n = acc.events.len();
        // A snapshot copies the state after this batch (cheap: job records
        // are shared) and starts the next journal generation right after
        // the batch is durable; it is written off the owner.
        let snap_state = (n > 0 && self.snapshot_task.is_none() && store.snapshot_due(n))
            .then(|| self.ctl.clone());
        let fence = Arc::clone(&self.fence);
        let (files, events) = (acc.files, acc.events);
        let task = tokio::task::spawn_blocking(move || {
            // Written only while the epoch is ours, and acknowledged only
            // if it still is once durable (see crate::ha). A batch with
            // nothing to write still needs proof that this controller is in
            // charge before it answers or acts.
            let mut r = fence.check().map_err(|e| e.to_string());
            if r.is_ok() && !events.is_empty() {
                // One sync: the journal carries copies of the scripts.
                r = store
                    .commit(&files, &events)
                    .map_err(|e| e.to_string())
                    .and_then(|()| fence.check().map_err(|e| e.to_string()));
            }
            let pending = match (&r, snap_state) {
                (Ok(()), Some(state)) => Some(store.begin_snapshot(state)),
                _ => None,
            };
            (store, r, pending)
        });
        self.flight = Some(InFlight {
            task,
            replies: acc.replies,
            actions: acc.actions,
            freed: acc.freed,
            view: self.ctl.snapshot(),
            events: n,
        });
    }

    /// The write in flight ended: on success, what waited for it goes out.
    fn land(&mut self, joined: std::result::Result<Written, JoinError>) -> Result<Flow> {
        let Some(f) = self.flight.take() else {
            return Ok(Flow::Go);
        };
        let (store, result, pending) = joined.context("journal writer task failed")?;
        self.store = Some(store);
        if let Err(e) = result {
            let waiting = f
                .replies
                .into_iter()
                .chain(std::mem::take(&mut self.acc.replies));
            if self.fence.is_lost() {
                refuse_fenced(waiting, &e);
                return Ok(Flow::Stop);
            }
            // The state in memory is ahead of the disk: nothing more may be
            // acknowledged. Fail every waiting client and stop.
            for (tx, _) in waiting {
                let _ = tx.send(Reply::error(
                    slurm_proto::ErrorCode::WritingToFile,
                    e.clone(),
                ));
            }
            bail!("cannot write the journal: {e}");
        }
        if f.events > 0 {
            tracing::trace!(events = f.events, "journal batch committed");
        }
        match pending {
            Some(Ok(p)) => {
                let generation = p.generation();
                tracing::debug!(generation, "snapshot started");
                // The fence is checked again right before the snapshot
                // replaces the current one.
                let fence = Arc::clone(&self.fence);
                self.snapshot_task = Some(tokio::task::spawn_blocking(move || {
                    p.write_checked(|| fence.check())
                }));
            }
            // The journal still has everything: retried later.
            Some(Err(e)) => tracing::error!(error = %e, "cannot start a snapshot"),
            None => {}
        }
        if self.snapshot_task.as_ref().is_some_and(|t| t.is_finished()) {
            if let Some(t) = self.snapshot_task.take() {
                // Finished: the await does not block.
                tokio::spawn(async move { log_snapshot(t.await) });
            }
        }
        self.publish(f.view);
        for (tx, reply) in f.replies {
            let _ = tx.send(reply);
        }
        for action in f.actions {
            self.agent.run(action);
        }
        if !f.freed.is_empty() {
            let dir = self.state_dir.clone();
            let fence = Arc::clone(&self.fence);
            let freed = f.freed;
            tokio::task::spawn_blocking(move || {
                // A deposed controller must not remove a segment the new
                // owner may have filled again.
                if fence.check().is_ok() {
                    for n in freed {
                        scripts::remove_segment(&dir, n);
                    }
                }
            });
        }
        Ok(Flow::Go)
    }

    fn publish(&self, view: Snapshot) {
        if let Some(s) = self.shared.upgrade() {
            s.publish(view);
        }
    }

    /// Shutdown or control given up: handles and writes what is queued,
    /// then takes a final snapshot.
    async fn stop(mut self, rx: &mut mpsc::Receiver<Envelope>) -> Result<()> {
        loop {
            if let Some(f) = self.flight.as_mut() {
                let r = (&mut f.task).await;
                if self.land(r)? == Flow::Stop {
                    return Ok(());
                }
            }
            let mut batch = Vec::new();
            while self.acc.commands + batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(env) => batch.push(env),
                    Err(_) => break,
                }
            }
            if !batch.is_empty() {
                self.handle(batch, false);
            }
            self.start();
            if self.flight.is_none() {
                break;
            }
        }
        let Some(store) = self.store.take() else {
            bail!("the state store was lost before the final snapshot");
        };
        final_snapshot(store, self.ctl, self.snapshot_task, &self.fence).await
    }
}

/// The epoch was taken over (`why`): nothing waiting is acknowledged; the
/// clients retry at the controller in charge.
fn refuse_fenced(waiting: impl IntoIterator<Item = (oneshot::Sender<Reply>, Reply)>, why: &str) {
    tracing::warn!(error = %why, "control lost: refusing the batch and stopping");
    for (tx, _) in waiting {
        let _ = tx.send(Reply::error(slurm_proto::ErrorCode::InStandbyMode, ""));
    }
}

fn log_snapshot(r: std::result::Result<Result<SnapshotWritten, StoreError>, JoinError>) {
    match r {
        Ok(Ok(w)) => tracing::info!(
            generation = w.generation,
            jobs = w.jobs,
            bytes = w.bytes,
            elapsed_ms = w.elapsed.as_millis() as u64,
            removed_journals = w.removed_journals,
            "snapshot written"
        ),
        // Nothing is lost: the journal generations it would have replaced
        // are kept until a later snapshot succeeds.
        Ok(Err(e)) => tracing::error!(error = %e, "snapshot failed"),
        Err(e) => tracing::error!(error = %e, "snapshot task failed"),
    }
}

/// Clean shutdown: waits for a snapshot under way, then takes one of the
/// final state if anything was journaled since, so the next start replays
/// nothing. Only while `fence` holds: a deposed controller must not start
/// a journal generation or replace the snapshot of the new owner.
async fn final_snapshot(
    mut store: StateStore,
    ctl: Controller,
    running: Option<SnapshotTask>,
    fence: &Arc<Fence>,
) -> Result<()> {
    if let Some(t) = running {
        log_snapshot(t.await);
    }
    if store.events_since_snapshot() == 0 || fence.is_lost() {
        return Ok(());
    }
    let f = Arc::clone(fence);
    log_snapshot(
        tokio::task::spawn_blocking(move || {
            f.check().map_err(|e| StoreError::Refused(Box::new(e)))?;
            store.begin_snapshot(ctl)?.write_checked(|| f.check())
        })
        .await,
    );
    Ok(())
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// When the timer must fire for `deadline` (unix seconds): at the start of
/// that second of wall-clock time, but never for a second that the last
/// tick (`last_tick`) already handled.
fn wake_instant(deadline: Option<i64>, last_tick: i64) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let Some(d) = deadline else {
        return now + MAX_TIMER_SLEEP;
    };
    let target = d.max(last_tick.saturating_add(1));
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let target = Duration::from_secs(u64::try_from(target).unwrap_or(0));
    // A millisecond past the second, so that the tick reads `target`.
    let wait = target
        .saturating_sub(wall)
        .saturating_add(Duration::from_millis(1))
        .min(MAX_TIMER_SLEEP);
    now + wait
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn timer_wakes_at_the_deadline_second() {
        let now = unix_now();
        let base = tokio::time::Instant::now();
        // Five seconds ahead: between four and six seconds from now
        // (`now` is truncated to the second).
        let w = wake_instant(Some(now + 5), now) - base;
        assert!(
            w > Duration::from_secs(4) && w <= Duration::from_secs(6),
            "{w:?}"
        );
        // Nothing due: the longest sleep.
        let w = wake_instant(None, now) - base;
        assert!(w >= MAX_TIMER_SLEEP && w < MAX_TIMER_SLEEP + Duration::from_secs(1));
        // Due already but its second was handled: the next second.
        let w = wake_instant(Some(now - 3), now) - base;
        assert!(w <= Duration::from_millis(1001), "{w:?}");
        // Due and not handled yet: at once.
        let w = wake_instant(Some(now - 3), now - 10) - base;
        assert!(w <= Duration::from_millis(5), "{w:?}");
        // Far ahead: capped, so a wall clock jump is noticed.
        let w = wake_instant(Some(now + 86_400), now) - base;
        assert!(w < MAX_TIMER_SLEEP + Duration::from_secs(1), "{w:?}");
    }
}
