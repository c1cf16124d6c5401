//! slurmd and slurmstepd: the compute-node agent.
//!
//! slurmd registers its node with the controller, serves the controller's
//! requests (launch, signal, terminate, ping) and starts one detached
//! `slurmstepd` per batch job, so that restarting slurmd never touches
//! running jobs. slurmstepd turns the job's launch request into a plan
//! (environment, files, identity: pure code in [`stepd`]), executes it
//! through a narrow syscall seam, waits, and reports completion.
//!
//! Each node is a value ([`daemon::Node`]) over what the process shares
//! ([`daemon::Host`]), so one slurmd can also serve many node names at once
//! ([`emulate`], for testing the controller at scale). [`health`] runs
//! HealthCheckProgram and drains a node that fails it. [`prolog`] runs the
//! site's Prolog before a job starts on the node and its Epilog after the
//! job ends there. [`reconfig`] decides what a re-read slurm.conf changes
//! in a running slurmd.

pub mod client;
pub mod config;
pub mod control;
pub mod daemon;
pub mod emulate;
pub mod forward;
pub mod health;
pub mod host;
pub mod hw;
pub mod jobs;
pub mod logging;
pub mod prolog;
pub mod reconfig;
pub mod sack;
pub mod spool;
pub mod stepd;
pub mod users;

/// Errors of the daemons' set-up, for their `run` functions.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Client(#[from] client::ClientError),
    #[error(transparent)]
    Hw(#[from] hw::HwError),
    #[error(transparent)]
    Health(#[from] health::HealthError),
    #[error(transparent)]
    Emulate(#[from] emulate::EmulateError),
    #[error("cannot listen on {addr}: {detail}")]
    Listen { addr: String, detail: String },
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write pid file {}: {source}", path.display())]
    PidFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the async runtime: {source}")]
    Runtime { source: std::io::Error },
}
