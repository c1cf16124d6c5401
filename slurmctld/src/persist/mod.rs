//! Durable controller state in StateSaveLocation.
//!
//! Today that is one append-only event journal ([`Journal`]) plus the
//! `clustername` file that stops a controller from adopting another
//! cluster's state directory, as Slurm does, and the job scripts and
//! environments ([`scripts`]). Snapshots (to bound replay
//! time) will live beside the journal, with their own version number.

pub(crate) mod crc;
mod journal;
pub mod scripts;

pub use journal::{
    check_cluster_name, Journal, JournalError, Replay, HEADER_LEN, JOURNAL_FILE, JOURNAL_MAGIC,
    JOURNAL_VERSION,
};
pub use scripts::{JobFiles, ScriptError, ScriptLog, ScriptRef, ScriptSpace};
