//! slurm-sched: scheduling as pure functions.
//!
//! `schedule(view, queue, now) -> Plan`: the controller hands in an immutable
//! view of nodes and partitions plus the pending queue, and gets back the jobs
//! to start, where, and a pending Reason (Slurm's names) for every job left
//! waiting. No clock reads, no randomness, no I/O: the same inputs always give
//! the same plan, which is what makes journal replay and property tests work.
