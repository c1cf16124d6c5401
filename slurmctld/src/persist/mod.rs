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
