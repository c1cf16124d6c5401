//! slurm-common: the vocabulary every daemon and command shares.
//!
//! Everything here is plain data and pure parsing: `parse(&str)` first, file
//! reading at the edge (`load(path)`). No async runtime, no RPC, no database.

pub mod auth;
pub mod conf;
pub mod host;
pub mod hostlist;
pub mod ids;
pub mod reason;
pub mod rlimit;
pub mod signal;
pub mod size;
pub mod state;
pub mod tasklist;
pub mod time;
pub mod tree;
pub mod users;
