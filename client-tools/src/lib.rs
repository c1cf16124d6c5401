//! The user commands. Each binary in `src/bin/` is thin: it hands its
//! arguments to a `run` function here and exits with the code it returns.

pub mod scontrol;
