//! slurm-testkit: what end-to-end tests and benchmarks need to run the real
//! binaries: finding them, free loopback ports, a temporary cluster directory
//! with a generated slurm.conf and key, child processes that die with the test,
//! and polling with a deadline (tests never sleep to wait).
//!
//! `LocalCluster` (N slurmd and a slurmctld on loopback) is assembled from these
//! pieces; `slurm-local` (module `local`) starts the same daemons detached, and
//! `slurm-bench` (module `bench`) measures a cluster against the targets.

pub mod bench;
pub mod bench_ha;
pub mod bench_recovery;
pub mod bench_tree;
pub mod bins;
pub mod cluster_dir;
pub mod e2e;
pub mod fuzz;
pub mod golden;
pub mod local;
pub mod local_cluster;
pub mod netns;
pub mod ports;
pub mod process;
pub mod scripts;
pub mod wait;

pub use bins::{bin_dir, bin_path, commands_dir, COMMANDS_DIR_ENV};
pub use cluster_dir::{ClusterDir, ClusterSpec};
pub use local_cluster::LocalCluster;
pub use ports::free_loopback_port;
pub use process::ChildGuard;
pub use wait::{wait_until, WaitError};
