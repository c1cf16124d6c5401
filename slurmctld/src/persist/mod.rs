//! Durable controller state in StateSaveLocation.
//!
//! * [`StateStore`] (`store`): the directory as a whole: recovery at
//!   startup, group commits, snapshots and journal generations, and what
//!   `slurmctld -i` does with damaged files;
//! * `journal`: the append-only event journal, one file per generation;
//! * `snapshot`: the snapshot file and when to write one (the bytes come
//!   from `core::snapshot`);
//! * [`scripts`]: job scripts and environments, out of the journal;
//! * the `clustername` file, which stops a controller from adopting another
//!   cluster's state directory, as Slurm does ([`check_cluster_name`]).

pub(crate) mod crc;
mod journal;
pub mod scripts;
mod snapshot;
mod store;

pub use journal::{
    check_cluster_name, journal_path, list_generations, parse_generation, read_journal, Journal,
    JournalError, Replay, HEADER_LEN, JOURNAL_MAGIC, JOURNAL_PREFIX, JOURNAL_VERSION,
    LEGACY_JOURNAL_FILE,
};
pub use scripts::{JobFiles, ScriptError, ScriptLog, ScriptRef, ScriptSpace};
pub use snapshot::{
    snapshot_path, write_snapshot, PolicyError, SnapshotPolicy, SnapshotWritten,
    SNAPSHOT_EVERY_ENV, SNAPSHOT_EVERY_EVENTS, SNAPSHOT_FILE, SNAPSHOT_JOURNAL_BYTES, SNAPSHOT_TMP,
};
pub use store::{
    PendingSnapshot, RecoverOptions, Recovered, RecoveryReport, StateStore, StoreError,
};

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// How far past its last record an append-only file (a journal
/// generation, a script segment) is written ahead with zeros.
///
/// `fdatasync` after an append must also commit the new file size and
/// blocks to the filesystem's own journal; bytes rewritten in place need
/// only their data flushed. Measured on ext4 (virtio disk): 0.19 ms for a
/// 2 kB append against 0.12 ms for the same bytes written over zeros.
pub const ZERO_AHEAD: u64 = 1024 * 1024;

/// Writes zeros over `from..to` of `file`, in 64 kB writes. Returns `to`.
pub(crate) fn fill_zeros(file: &File, from: u64, to: u64) -> io::Result<u64> {
    let zeros = vec![0u8; 64 * 1024];
    let mut at = from;
    while at < to {
        let n = usize::try_from((to - at).min(zeros.len() as u64)).unwrap_or(zeros.len());
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(to.max(from))
}
