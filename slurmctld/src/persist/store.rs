//! The state directory as a whole: recovery at startup, group commits, and
//! snapshots with journal generations.
//!
//! ```text
//! StateSaveLocation/
//!   clustername            which cluster this state belongs to
//!   snapshot               the whole state after journal generations < G   (optional)
//!   journal.G, journal.G+1 events after it, oldest first; the last one is appended to
//!   scripts/seg.N          job scripts and environments (persist::scripts)
//! ```
//!
//! Recovery loads the snapshot (or starts from slurm.conf when there is
//! none) and replays the generations from G on, in order. A snapshot is
//! taken in two halves so that the owner task never waits for it:
//!
//! 1. [`StateStore::begin_snapshot`] (in the commit's blocking call, right
//!    after a batch is durable): start journal generation G+1, durable with
//!    its directory entry, and keep a copy of the state (cheap: job records
//!    are shared). Later batches go to G+1.
//! 2. [`PendingSnapshot::write`] (its own blocking task): the snapshot for
//!    G+1 is written to a temporary file, synced, renamed over `snapshot`,
//!    the directory synced; only then are generations < G+1 removed.
//!
//! A crash between any two steps leaves a directory that recovers to the
//! same state: before the rename, the old snapshot and every generation
//! since it are all there (G and G+1 are both replayed); after it, the new
//! snapshot and G+1 (older generations left behind are removed at the next
//! start). `snapshot.tmp` is never read.
//!
//! Damage (a corrupt record in the middle of a journal, in a closed
//! generation, or in the snapshot) stops startup with the file and byte
//! offset. `slurmctld -i` ([`RecoverOptions::ignore_damage`]) instead keeps
//! what is valid and renames the damaged files to `<name>.damaged.<time>`:
//!
//! * damaged snapshot: the records before the damage are kept (META, nodes,
//!   jobs in id order); the jobs after it are lost, node allocation counters
//!   are recounted from the jobs kept, and the journal generations that
//!   follow the snapshot are replayed (their events for lost jobs are
//!   skipped). Damage in META itself loses the whole snapshot.
//! * damaged journal generation: its events before the damaged record are
//!   kept; that record, the rest of the file and every later generation are
//!   lost, i.e. every change acknowledged after that point (submissions,
//!   completions, cancels, node updates). Job ids handed out after it may be
//!   handed out again.
//!
//! Then a snapshot of the recovered state is written at once, so the
//! directory is consistent again before anything new is accepted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_common::conf::SlurmConf;
use thiserror::Error;

use super::journal::{
    check_cluster_name, io_err, journal_path, list_generations, read_journal, sync_dir, Journal,
    JournalError, LEGACY_JOURNAL_FILE,
};
use super::scripts::{self, JobFiles, ScriptError, ScriptLog};
use super::snapshot::{
    snapshot_path, write_snapshot, write_until, SnapshotPolicy, SnapshotWritten, Step, SNAPSHOT_TMP,
};
use crate::core::snapshot::{self as codec, SnapshotError};
use crate::core::{Controller, CtlConfig, Event};

#[derive(Debug, Error)]
pub enum StoreError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("{path}: {source}")]
    Snapshot {
        path: PathBuf,
        #[source]
        source: SnapshotError,
    },
    #[error(transparent)]
    Scripts(#[from] ScriptError),
    #[error("{dir}: journal generation {missing} is missing (generations {first}..={last} are needed after the snapshot)")]
    MissingGeneration {
        dir: PathBuf,
        missing: u64,
        first: u64,
        last: u64,
    },
    #[error("a snapshot is already being written")]
    SnapshotBusy,
    #[error("{path}: holds generation {found}, newer than this snapshot's {ours}; not replaced")]
    Superseded {
        path: PathBuf,
        found: u64,
        ours: u64,
    },
    #[error("snapshot not committed: {0}")]
    Refused(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// Damage that `slurmctld -i` can set aside.
    pub fn is_damage(&self) -> bool {
        match self {
            StoreError::Journal(e) => e.is_damage(),
            StoreError::Snapshot { source, .. } => source.is_damage(),
            StoreError::MissingGeneration { .. } => true,
            StoreError::Scripts(_)
            | StoreError::SnapshotBusy
            | StoreError::Superseded { .. }
            | StoreError::Refused(_) => false,
        }
    }
}

/// How to recover.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecoverOptions {
    /// `slurmctld -i`: set damaged files aside and start from what is valid.
    pub ignore_damage: bool,
    pub policy: SnapshotPolicy,
}

/// What recovery did, for the log.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// Generation and job count of the snapshot loaded.
    pub snapshot: Option<(u64, usize)>,
    /// Journal generations replayed, oldest first.
    pub generations: Vec<u64>,
    pub events: usize,
    /// Events that did not apply (logged one by one).
    pub skipped: usize,
    /// Bytes of a torn final record dropped.
    pub dropped_tail: u64,
    /// Script records a segment had lost, put back from the journal.
    pub scripts_repaired: usize,
    /// Generations older than the snapshot, removed.
    pub stale_removed: usize,
    /// Damaged files renamed aside (`-i`), with what was wrong.
    pub set_aside: Vec<(PathBuf, String)>,
    /// Job allocation slices on nodes no longer in slurm.conf.
    pub dropped_allocs: usize,
    pub elapsed: Duration,
}

/// A recovered state directory.
#[derive(Debug)]
pub struct Recovered {
    pub store: StateStore,
    pub controller: Controller,
    pub report: RecoveryReport,
}

/// The open state directory: the current journal generation, the script
/// log, and when the next snapshot is due. Owned by one task; its methods
/// block (call them off the async runtime).
#[derive(Debug)]
pub struct StateStore {
    dir: PathBuf,
    journal: Journal,
    scripts: ScriptLog,
    policy: SnapshotPolicy,
    /// Events journaled since the last snapshot was begun.
    since_snapshot: u64,
    /// Set while a [`PendingSnapshot`] exists.
    busy: Arc<AtomicBool>,
}

/// A snapshot whose journal generation has started; [`Self::write`] makes
/// it durable.
#[derive(Debug)]
pub struct PendingSnapshot {
    dir: PathBuf,
    generation: u64,
    state: Controller,
    busy: Arc<AtomicBool>,
}

impl Drop for PendingSnapshot {
    fn drop(&mut self) {
        self.busy.store(false, Ordering::Release);
    }
}

impl PendingSnapshot {
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Writes the snapshot and removes the generations it covers.
    /// Blocking; may run beside [`StateStore::commit`].
    pub fn write(self) -> Result<SnapshotWritten, StoreError> {
        write_snapshot(&self.dir, &self.state, self.generation)
    }

    /// [`Self::write`], with `check` run right before the snapshot replaces
    /// the current one (a controller checks that it still holds control):
    /// an error there leaves the directory as it was, and is returned as
    /// [`StoreError::Refused`].
    pub fn write_checked<E>(
        self,
        mut check: impl FnMut() -> Result<(), E>,
    ) -> Result<SnapshotWritten, StoreError>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        write_until(
            &self.dir,
            &self.state,
            self.generation,
            Step::Cleaned,
            &mut || check().map_err(|e| StoreError::Refused(Box::new(e))),
        )
    }
}

impl StateStore {
    /// Opens the state directory `dir` (created if missing), refuses another
    /// cluster's, and rebuilds the controller: slurm.conf (`conf`, `cfg`),
    /// then the snapshot, then the journal generations after it.
    pub fn recover(
        dir: &Path,
        conf: &SlurmConf,
        cfg: CtlConfig,
        opts: &RecoverOptions,
    ) -> Result<Recovered, StoreError> {
        let started = Instant::now();
        check_cluster_name(dir, &cfg.cluster_name)?;
        let mut report = RecoveryReport::default();
        let tmp = dir.join(SNAPSHOT_TMP);
        match std::fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&tmp)(e).into()),
        }
        migrate_legacy(dir)?;

        // The snapshot.
        let base = Controller::new(conf, cfg);
        let snap_path = snapshot_path(dir);
        let (mut ctl, first) = match std::fs::read(&snap_path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (base, None),
            Err(e) => return Err(io_err(&snap_path)(e).into()),
            Ok(bytes) => {
                let loaded = codec::decode(&bytes, base, opts.ignore_damage).map_err(|source| {
                    StoreError::Snapshot {
                        path: snap_path.clone(),
                        source,
                    }
                })?;
                drop(bytes);
                report.dropped_allocs = loaded.dropped_allocs;
                if let Some(damage) = &loaded.damage {
                    let text = format!("{}: {damage}", snap_path.display());
                    let aside = set_aside(&snap_path)?;
                    tracing::error!(error = %text, aside = %aside.display(), jobs_kept = loaded.jobs, "damaged snapshot set aside (-i)");
                    report.set_aside.push((aside, text));
                }
                if let Some(g) = loaded.generation {
                    report.snapshot = Some((g, loaded.jobs));
                }
                (loaded.controller, loaded.generation)
            }
        };

        // The generations after it.
        let present = list_generations(dir)?;
        let first = first.or_else(|| present.first().copied()).unwrap_or(0);
        for &g in present.iter().filter(|g| **g < first) {
            let path = journal_path(dir, g);
            match std::fs::remove_file(&path) {
                Ok(()) => report.stale_removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&path)(e).into()),
            }
        }
        let tail: Vec<u64> = present.into_iter().filter(|g| *g >= first).collect();
        let mut journal = None;
        let mut copies = Vec::new();
        let mut damaged = !report.set_aside.is_empty();
        for (i, &g) in tail.iter().enumerate() {
            let expected = first + i as u64;
            if g != expected {
                let err = StoreError::MissingGeneration {
                    dir: dir.to_path_buf(),
                    missing: expected,
                    first,
                    last: tail.last().copied().unwrap_or(g),
                };
                if !opts.ignore_damage {
                    return Err(err);
                }
                for &later in &tail[i..] {
                    let path = journal_path(dir, later);
                    let aside = set_aside(&path)?;
                    report.set_aside.push((aside, err.to_string()));
                }
                damaged = true;
                break;
            }
            let last = i + 1 == tail.len();
            let path = journal_path(dir, g);
            let mut replay = read_journal(&path, last)?;
            copies.append(&mut replay.copies);
            report.generations.push(g);
            report.dropped_tail += replay.dropped_tail;
            for e in &replay.events {
                if let Err(err) = ctl.apply(e) {
                    report.skipped += 1;
                    tracing::warn!(error = %err, generation = g, "journal event does not apply; skipped");
                }
            }
            report.events += replay.events.len();
            if let Some(err) = replay.damage {
                if !opts.ignore_damage {
                    return Err(err.into());
                }
                for &later in &tail[i..] {
                    let path = journal_path(dir, later);
                    let aside = set_aside(&path)?;
                    tracing::error!(error = %err, aside = %aside.display(), events_kept = replay.events.len(), "damaged journal set aside (-i)");
                    report.set_aside.push((aside, err.to_string()));
                }
                damaged = true;
                break;
            }
            if last {
                journal = Some(Journal::resume(
                    dir,
                    g,
                    replay.valid_len,
                    replay.zeros_after,
                )?);
            }
        }
        let journal = match journal {
            Some(j) => j,
            None => {
                // No generation yet, or the rest was set aside: continue
                // after the last one replayed.
                let next = report.generations.last().map_or(first, |g| g + 1);
                let next = if damaged {
                    // A set-aside generation's number must not be reused
                    // while its replacement could be confused with it.
                    tail.last().map_or(next, |g| g + 1).max(next)
                } else {
                    next
                };
                Journal::create(dir, next)?
            }
        };
        ctl.take_freed_segments();
        report.scripts_repaired = scripts::repair(dir, &copies, ctl.script_space())?;
        drop(copies);
        let mut store = StateStore {
            dir: dir.to_path_buf(),
            journal,
            scripts: ScriptLog::new(dir),
            policy: opts.policy,
            since_snapshot: report.events as u64,
            busy: Arc::default(),
        };
        if damaged {
            // Make the directory consistent with the state kept before
            // anything new is journaled.
            store.snapshot_now(&ctl)?;
        }
        report.elapsed = started.elapsed();
        Ok(Recovered {
            store,
            controller: ctl,
            report,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The journal generation batches go to.
    pub fn generation(&self) -> u64 {
        self.journal.generation()
    }

    pub fn policy(&self) -> SnapshotPolicy {
        self.policy
    }

    /// Makes a batch durable: the scripts and environments of `files` go
    /// to their segments unsynced, and with a copy into the journal before
    /// `events`; one fdatasync of the journal makes it all durable (see
    /// `persist::scripts`). Returns only after that.
    pub fn commit(&mut self, files: &[JobFiles], events: &[Event]) -> Result<(), StoreError> {
        self.scripts.write_batch(files)?;
        self.journal.append(files, events)?;
        self.since_snapshot = self.since_snapshot.saturating_add(events.len() as u64);
        Ok(())
    }

    /// Whether a snapshot should be begun once `pending` more events are
    /// committed (false while one is being written).
    pub fn snapshot_due(&self, pending: usize) -> bool {
        !self.busy.load(Ordering::Acquire)
            && (self.since_snapshot.saturating_add(pending as u64) >= self.policy.every_events
                || self.journal.len() >= self.policy.journal_bytes)
    }

    /// Events journaled since the last snapshot was begun.
    pub fn events_since_snapshot(&self) -> u64 {
        self.since_snapshot
    }

    /// Starts the next journal generation; `state` (a copy of the
    /// controller after every committed event) goes into the returned
    /// snapshot. Call it only between commits, with `state` equal to what
    /// the journal holds.
    pub fn begin_snapshot(&mut self, state: Controller) -> Result<PendingSnapshot, StoreError> {
        if self.busy.swap(true, Ordering::AcqRel) {
            return Err(StoreError::SnapshotBusy);
        }
        let generation = self.journal.generation().saturating_add(1);
        // Counted from the attempt, so that a failing disk is not retried
        // after every batch.
        self.since_snapshot = 0;
        // The generations this snapshot retires hold the only durable
        // copies of the scripts written since the last sync.
        if let Err(e) = self.scripts.sync() {
            self.busy.store(false, Ordering::Release);
            return Err(e.into());
        }
        match Journal::create(&self.dir, generation) {
            Ok(j) => {
                self.journal = j;
                Ok(PendingSnapshot {
                    dir: self.dir.clone(),
                    generation,
                    state,
                    busy: Arc::clone(&self.busy),
                })
            }
            Err(e) => {
                self.busy.store(false, Ordering::Release);
                Err(e.into())
            }
        }
    }

    /// Takes a snapshot of `ctl` now and waits for it (clean shutdown,
    /// `-i`, a controller taking over). Blocking.
    pub fn snapshot_now(&mut self, ctl: &Controller) -> Result<SnapshotWritten, StoreError> {
        self.begin_snapshot(ctl.clone())?.write()
    }
}

/// A state directory of a build without generations has one `journal`:
/// it becomes generation 0.
fn migrate_legacy(dir: &Path) -> Result<(), StoreError> {
    let legacy = dir.join(LEGACY_JOURNAL_FILE);
    if !legacy.is_file() {
        return Ok(());
    }
    let target = journal_path(dir, 0);
    if !list_generations(dir)?.is_empty() || snapshot_path(dir).exists() {
        // Both layouts: the newer one wins; keep the old file for a human.
        set_aside(&legacy)?;
        return Ok(());
    }
    std::fs::rename(&legacy, &target).map_err(io_err(&target))?;
    sync_dir(dir).map_err(io_err(dir))?;
    Ok(())
}

/// Renames `path` to `<path>.damaged.<unix time>[.n]`; returns the new name.
fn set_aside(path: &Path) -> Result<PathBuf, StoreError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut aside = path.with_file_name(format!("{name}.damaged.{secs}"));
    let mut n = 1;
    while aside.exists() {
        aside = path.with_file_name(format!("{name}.damaged.{secs}.{n}"));
        n += 1;
    }
    std::fs::rename(path, &aside).map_err(io_err(&aside))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir).map_err(io_err(dir))?;
    }
    Ok(aside)
}

#[cfg(test)]
mod tests;
