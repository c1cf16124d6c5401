//! slurmctld: the controller.
//!
//! - [`core`]: `Controller::handle(Command, now) -> Outcome`, deterministic;
//!   `apply(&Event)` is the only mutator and also rebuilds state on replay;
//! - [`persist`]: snapshots and the event journal in StateSaveLocation;
//!   recovery, and what `slurmctld -i` does with damaged state
//!   (`persist::StateStore`);
//! - [`ha`]: primary and backup controllers (standby, takeover, fencing);
//! - [`rpc`]: tonic services that turn requests into commands;
//! - [`agent`]: sends launch/terminate/signal to slurmd, through the TreeWidth tree;
//! - [`ping`]: pings the nodes; silent ones become NOT_RESPONDING, then DOWN;
//! - [`owner`]: the one task that changes the state, and the group commit
//!   that overlaps writing one batch with handling the next;
//! - [`server`]: startup, control changes and shutdown;
//! - [`logging`]: the log, whose level `scontrol setdebug` changes.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod agent;
pub mod cli;
pub mod config;
pub mod core;
pub mod ha;
pub mod logging;
pub mod memory;
mod owner;
pub mod persist;
pub mod ping;
pub mod rpc;
pub mod server;

/// The version every daemon and command reports.
pub const VERSION: &str = "22.05.8";
