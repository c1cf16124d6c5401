//! The snapshot file, `<StateSaveLocation>/snapshot`, and when to write one.
//!
//! The bytes are made by `core::snapshot`; this module makes them durable
//! in an order after which a crash at any point leaves a directory that
//! recovers to the same state (see `persist::store` for the whole protocol):
//!
//! ```text
//! 1. write snapshot.tmp, fsync it          crash: snapshot.tmp is ignored and removed
//! 2. rename snapshot.tmp -> snapshot       crash: old or new snapshot, both with their journals
//! 3. fsync the directory                   from here the new snapshot is durable
//! 4. remove journal generations it covers, and script segments no job uses
//! ```
//!
//! When: after [`SnapshotPolicy::every_events`] journaled events, or once the
//! current journal generation passes [`SnapshotPolicy::journal_bytes`], and at
//! clean shutdown. The defaults bound a restart to loading one snapshot and
//! replaying at most ~50,000 events (well under a second for 100,000 jobs in
//! a release build), while a snapshot of a large state (tens of MB for
//! 100,000 jobs) is written at most once per 50,000 changes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use thiserror::Error;

use super::journal::{io_err, journal_path, list_generations, sync_dir};
use super::store::StoreError;
use crate::core::{snapshot, Controller};

pub const SNAPSHOT_FILE: &str = "snapshot";
/// Where a snapshot is written before it is renamed into place.
pub const SNAPSHOT_TMP: &str = "snapshot.tmp";

/// Default: a snapshot after this many journaled events.
pub const SNAPSHOT_EVERY_EVENTS: u64 = 50_000;
/// Default: a snapshot once the current journal generation is this large.
pub const SNAPSHOT_JOURNAL_BYTES: u64 = 64 * 1024 * 1024;
/// Environment variable that overrides [`SNAPSHOT_EVERY_EVENTS`] (a
/// positive number of events). A knob for tests and operators who want
/// snapshots more (or less) often; not a slurm.conf parameter, since Slurm
/// has none for it.
pub const SNAPSHOT_EVERY_ENV: &str = "SLURMCTLD_SNAPSHOT_EVERY";

/// When the owner takes a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotPolicy {
    pub every_events: u64,
    pub journal_bytes: u64,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        SnapshotPolicy {
            every_events: SNAPSHOT_EVERY_EVENTS,
            journal_bytes: SNAPSHOT_JOURNAL_BYTES,
        }
    }
}

/// A value of [`SNAPSHOT_EVERY_ENV`] that is not a positive integer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{SNAPSHOT_EVERY_ENV}={value:?} is not a positive number of events")]
pub struct PolicyError {
    pub value: String,
}

impl SnapshotPolicy {
    /// The defaults, with `every` (the value of [`SNAPSHOT_EVERY_ENV`], if
    /// set) as the event count.
    pub fn with_every(every: Option<&str>) -> Result<SnapshotPolicy, PolicyError> {
        let mut p = SnapshotPolicy::default();
        if let Some(v) = every {
            match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => p.every_events = n,
                _ => {
                    return Err(PolicyError {
                        value: v.to_string(),
                    })
                }
            }
        }
        Ok(p)
    }

    /// [`Self::with_every`] from the process environment.
    pub fn from_env() -> Result<SnapshotPolicy, PolicyError> {
        let v = std::env::var_os(SNAPSHOT_EVERY_ENV).map(|v| v.to_string_lossy().into_owned());
        SnapshotPolicy::with_every(v.as_deref())
    }
}

/// A snapshot that reached the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotWritten {
    /// The journal generation that continues it.
    pub generation: u64,
    pub jobs: usize,
    pub bytes: u64,
    /// Encoding, writing and syncing.
    pub elapsed: Duration,
    /// Journal generations it made obsolete and that were removed.
    pub removed_journals: usize,
}

/// How far [`write_until`] goes: every step up to and including this one.
/// The steps in order; production code always runs to [`Step::Cleaned`],
/// crash-point tests stop earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Step {
    /// `snapshot.tmp` written and synced.
    TempSynced,
    /// Renamed over `snapshot` (not yet known durable).
    Renamed,
    /// The directory synced: the snapshot is durable.
    DirSynced,
    /// Covered journals and unused script segments removed.
    Cleaned,
}

pub fn snapshot_path(dir: &Path) -> PathBuf {
    dir.join(SNAPSHOT_FILE)
}

/// Writes the snapshot of `ctl`, continued by journal `generation`, and
/// removes what it makes obsolete. Blocking: call it off the async runtime.
/// The caller must have started journal `generation` already (events after
/// this state go there) and must not run two of these at once.
pub fn write_snapshot(
    dir: &Path,
    ctl: &Controller,
    generation: u64,
) -> Result<SnapshotWritten, StoreError> {
    write_until(dir, ctl, generation, Step::Cleaned, &mut || Ok(()))
}

/// `before_rename` runs right before the snapshot replaces the current one
/// (the commit point): an error there leaves everything as it was.
pub(crate) fn write_until(
    dir: &Path,
    ctl: &Controller,
    generation: u64,
    stop: Step,
    before_rename: &mut dyn FnMut() -> Result<(), StoreError>,
) -> Result<SnapshotWritten, StoreError> {
    let started = Instant::now();
    let tmp = dir.join(SNAPSHOT_TMP);
    let file = File::create(&tmp).map_err(io_err(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let bytes = snapshot::write(ctl, generation, &mut w).map_err(io_err(&tmp))?;
    w.flush().map_err(io_err(&tmp))?;
    let file = w.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
    file.sync_all().map_err(io_err(&tmp))?;
    drop(file);
    let mut done = SnapshotWritten {
        generation,
        jobs: ctl.jobs.len(),
        bytes,
        elapsed: Duration::ZERO,
        removed_journals: 0,
    };
    if stop >= Step::Renamed {
        let path = snapshot_path(dir);
        // Never replace a newer snapshot (another controller's, after a
        // takeover): its generations may be all that is left.
        if let Some(found) = current_generation(&path)? {
            if found >= generation {
                let _ = std::fs::remove_file(&tmp);
                return Err(StoreError::Superseded {
                    path,
                    found,
                    ours: generation,
                });
            }
        }
        if let Err(e) = before_rename() {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
    }
    if stop >= Step::DirSynced {
        sync_dir(dir).map_err(io_err(dir))?;
    }
    if stop >= Step::Cleaned {
        done.removed_journals = remove_covered(dir, generation)?;
        super::scripts::remove_unused(dir, &ctl.scripts);
    }
    done.elapsed = started.elapsed();
    Ok(done)
}

/// The generation of the snapshot at `path`, if there is a readable one.
fn current_generation(path: &Path) -> Result<Option<u64>, StoreError> {
    use std::io::Read;
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(path)(e).into()),
    };
    let mut head = Vec::with_capacity(512);
    Read::by_ref(&mut f)
        .take(512)
        .read_to_end(&mut head)
        .map_err(io_err(path))?;
    Ok(snapshot::peek_generation(&head))
}

/// Removes journal generations older than `generation`: a durable snapshot
/// holds everything they said.
pub(crate) fn remove_covered(dir: &Path, generation: u64) -> Result<usize, StoreError> {
    let mut removed = 0;
    for g in list_generations(dir)? {
        if g >= generation {
            break;
        }
        let path = journal_path(dir, g);
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path)(e).into()),
        }
    }
    if removed > 0 {
        // Not needed for correctness (a stale generation is removed again
        // at the next start); keeps the directory tidy after a crash.
        let _ = sync_dir(dir);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_from_the_environment_value() {
        assert_eq!(
            SnapshotPolicy::with_every(None).unwrap(),
            SnapshotPolicy::default()
        );
        assert_eq!(
            SnapshotPolicy::with_every(Some(" 25 "))
                .unwrap()
                .every_events,
            25
        );
        for bad in ["", "0", "-5", "1e3", "x", "99999999999999999999999", "٣"] {
            let err = SnapshotPolicy::with_every(Some(bad)).unwrap_err();
            assert!(err.to_string().contains(SNAPSHOT_EVERY_ENV), "{err}");
        }
    }
}
