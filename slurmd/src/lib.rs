//! slurmd and slurmstepd: the compute-node agent.
//!
//! Registration with detected hardware, relay of tree messages, and the step
//! launch pipeline (prolog -> cgroup -> gres -> exec as user -> I/O -> epilog).
