//! slurmctld: the controller.
//!
//! Layout (filled in as the work lands):
//! - `core/`: `Controller::handle(Event, now) -> Vec<Action>`, deterministic;
//! - `persist/`: journal and snapshots in StateSaveLocation;
//! - `ha/`: primary/backup roles;
//! - `agent/`: fan-out to slurmd through the TreeWidth tree;
//! - `rpc/`: tonic services;
//! - `dbd/`: the spool of accounting records for slurmdbd.
