//! The user commands. Each binary in `src/bin/` is thin: it hands its
//! arguments to a `run` function here and exits with the code it returns.

pub mod client;
pub mod format;
pub mod opts;
pub mod output;
pub mod sbatch;
pub mod scancel;
pub mod scontrol;
pub mod sinfo;
pub mod squeue;
