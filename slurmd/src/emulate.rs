//! Emulation: one slurmd process serving many nodes of slurm.conf
//! (`slurmd -D --emulate 'n[1-1000]'`).
//!
//! Testing the controller at the scale of a real cluster (thousands of
//! nodes, fan-out trees, registration storms) on one machine needs the
//! nodes to be cheap, yet they must speak the real protocol. So each
//! emulated node is an ordinary [`Node`]: its own listener on its NodeAddr:Port
//! (slurm.conf gives port ranges, `NodeName=n[1-1000] Port=[20001-21000]`,
//! or addresses, `NodeAddr=127.0.1.[1-250]`), the real SlurmNode service,
//! the real tree relay ([`crate::forward`]), its own spool directory, and
//! real slurmstepd processes for batch jobs. What the nodes share lives in
//! one [`Host`]: credentials, a single controller connection, a bound on
//! registrations in flight (so a thousand nodes starting together queue
//! here instead of stampeding the controller) and on health programs.
//!
//! Emulated nodes report the hardware slurm.conf gives them (as of the
//! latest reconfiguration), not the host's: a thousand 64-CPU nodes on a
//! small machine is the point. A
//! SlurmdSpoolDir without `%n` gets the node name appended, so the nodes'
//! job directories never mix.
//!
//! The process needs about [`fds_per_node`] open files per node; slurmd
//! raises its soft RLIMIT_NOFILE to the hard limit at start and says so
//! when that is still too few.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use slurm_common::conf::SlurmConf;
use thiserror::Error;

use crate::config::{load_conf, NodeSetup};

/// A node list --emulate cannot serve.
#[derive(Debug, Error)]
pub enum EmulateError {
    #[error("bad node list {expr:?} for --emulate: {detail}")]
    BadList { expr: String, detail: String },
    #[error("--emulate needs at least one node name")]
    Empty,
    #[error("node {name} is not defined in {path}")]
    UnknownNode { name: String, path: String },
    #[error(
        "nodes {first} and {second} both listen on {addr}; emulated nodes need a Port= or NodeAddr= each"
    )]
    SameAddress {
        first: String,
        second: String,
        addr: String,
    },
}

/// Open files one emulated node costs: its listener, the controller's
/// connection to it, and a relay connection in each direction.
pub const FDS_PER_NODE: u64 = 4;

/// Open files the process needs beyond its nodes (logs, the controller
/// connection, the runtime, health program pipes).
pub const BASE_FDS: u64 = 64;

/// The node names of `expr`: a hostlist expression, or `ALL` for every
/// node of `conf`. Order kept, repeats dropped.
pub fn node_names(expr: &str, conf: &SlurmConf) -> Result<Vec<String>, EmulateError> {
    let expr = expr.trim();
    let names = if expr.eq_ignore_ascii_case("all") {
        conf.nodes.iter().map(|n| n.name.clone()).collect()
    } else {
        slurm_common::hostlist::expand(expr).map_err(|e| EmulateError::BadList {
            expr: expr.to_string(),
            detail: e.to_string(),
        })?
    };
    let mut seen = HashSet::with_capacity(names.len());
    let names: Vec<String> = names
        .into_iter()
        .filter(|n| !n.is_empty() && seen.insert(n.clone()))
        .collect();
    if names.is_empty() {
        return Err(EmulateError::Empty);
    }
    Ok(names)
}

/// The setup of each of `names`, sharing `conf`. Fails on a name slurm.conf
/// does not define and on two nodes with the same listen address.
pub fn setups(
    conf: Arc<SlurmConf>,
    conf_path: &Path,
    names: &[String],
    short_host: &str,
) -> Result<Vec<NodeSetup>, EmulateError> {
    let by_name: HashMap<&str, usize> = conf
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let shared_spool = !conf.slurmd_spool_dir.contains("%n");
    let mut out = Vec::with_capacity(names.len());
    let mut addrs: HashMap<String, String> = HashMap::with_capacity(names.len());
    for name in names {
        let Some(node) = by_name.get(name.as_str()).and_then(|&i| conf.nodes.get(i)) else {
            return Err(EmulateError::UnknownNode {
                name: name.clone(),
                path: conf_path.display().to_string(),
            });
        };
        let mut setup = NodeSetup::for_node(
            Arc::clone(&conf),
            conf_path.to_path_buf(),
            node.clone(),
            short_host,
        );
        if shared_spool {
            setup.spool_dir = setup.spool_dir.join(name);
        }
        let addr = setup.listen_addr();
        if let Some(first) = addrs.insert(addr.clone(), name.clone()) {
            return Err(EmulateError::SameAddress {
                first,
                second: name.clone(),
                addr,
            });
        }
        out.push(setup);
    }
    Ok(out)
}

/// Loads slurm.conf and resolves `expr` (see [`node_names`]).
pub fn load(
    conf_path: &Path,
    expr: &str,
    short_host: &str,
) -> Result<Vec<NodeSetup>, crate::Error> {
    let (conf, abs) = load_conf(conf_path)?;
    let names = node_names(expr, &conf)?;
    Ok(setups(conf, &abs, &names, short_host)?)
}

/// Open files `nodes` emulated nodes need.
pub fn fds_needed(nodes: usize) -> u64 {
    u64::try_from(nodes)
        .unwrap_or(u64::MAX)
        .saturating_mul(FDS_PER_NODE)
        .saturating_add(BASE_FDS)
}

/// Where each node's pid file goes, each path once (`%n` in SlurmdPidFile
/// gives one per node; without it they all share one).
pub fn pid_files(setups: &[NodeSetup]) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    setups
        .iter()
        .filter_map(|s| s.pid_file.clone())
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn conf(text: &str) -> Arc<SlurmConf> {
        Arc::new(SlurmConf::parse(text, "slurm.conf").unwrap().conf)
    }

    const BASE: &str = "\
ClusterName=t
SlurmctldHost=ctl(127.0.0.1)
AuthType=auth/slurm
SlurmdSpoolDir=/spool/%n
SlurmdPidFile=/run/slurmd.%n.pid
";

    #[test]
    fn port_ranges_give_each_node_its_port() {
        let c = conf(&format!(
            "{BASE}NodeName=n[1-1000] NodeAddr=127.0.0.1 Port=[20001-21000] CPUs=64 RealMemory=256000\n"
        ));
        let names = node_names("n[1-1000]", &c).unwrap();
        let s = setups(c, Path::new("/etc/slurm.conf"), &names, "vm").unwrap();
        assert_eq!(s.len(), 1000);
        assert_eq!(s[0].listen_addr(), "127.0.0.1:20001");
        assert_eq!(s[999].listen_addr(), "127.0.0.1:21000");
        assert_eq!(s[41].spool_dir, PathBuf::from("/spool/n42"));
        assert_eq!(pid_files(&s).len(), 1000);
        let hw = crate::daemon::configured_hw(&s[3]);
        assert_eq!((hw.cpus, hw.real_memory_mb), (64, 256_000));
    }

    #[test]
    fn addresses_give_each_node_its_address() {
        let c = conf(&format!(
            "{BASE}NodeName=a[1-3] NodeAddr=127.0.1.[1-3] Port=6818 CPUs=1\n"
        ));
        let names = node_names("a[1-3]", &c).unwrap();
        let s = setups(c, Path::new("/c"), &names, "vm").unwrap();
        let addrs: Vec<String> = s.iter().map(NodeSetup::listen_addr).collect();
        assert_eq!(
            addrs,
            ["127.0.1.1:6818", "127.0.1.2:6818", "127.0.1.3:6818"]
        );
    }

    #[test]
    fn shared_listen_address_is_refused() {
        let c = conf(&format!(
            "{BASE}NodeName=n[1-3] NodeAddr=127.0.0.1 CPUs=1\n"
        ));
        let names = node_names("n[1-3]", &c).unwrap();
        let e = setups(c, Path::new("/c"), &names, "vm").unwrap_err();
        assert!(
            matches!(e, EmulateError::SameAddress { ref first, ref second, .. }
            if first == "n1" && second == "n2"),
            "{e}"
        );
        assert!(e.to_string().contains("Port= or NodeAddr="), "{e}");
    }

    #[test]
    fn spool_without_node_name_is_split_per_node() {
        let c = conf(
            "ClusterName=t\nSlurmctldHost=c\nSlurmdSpoolDir=/var/spool/slurmd\nSlurmdPidFile=/run/slurmd.pid\n\
             NodeName=x[1-2] NodeAddr=127.0.0.1 Port=[7001-7002] CPUs=1\n",
        );
        let names = node_names("ALL", &c).unwrap();
        assert_eq!(names, ["x1", "x2"]);
        let s = setups(c, Path::new("/c"), &names, "vm").unwrap();
        assert_eq!(s[1].spool_dir, PathBuf::from("/var/spool/slurmd/x2"));
        assert_eq!(pid_files(&s), vec![PathBuf::from("/run/slurmd.pid")]);
    }

    #[test]
    fn bad_lists() {
        let c = conf(&format!(
            "{BASE}NodeName=n[1-2] NodeAddr=127.0.0.1 Port=[7001-7002] CPUs=1\n"
        ));
        assert!(matches!(
            node_names("n[1-", &c),
            Err(EmulateError::BadList { .. })
        ));
        assert!(matches!(node_names("", &c), Err(EmulateError::Empty)));
        assert!(matches!(node_names("  ", &c), Err(EmulateError::Empty)));
        assert!(node_names("n[1-99999999999]", &c).is_err());
        assert_eq!(node_names("n2,n1,n2", &c).unwrap(), ["n2", "n1"]);
        let names = node_names("n[1-3]", &c).unwrap();
        let e = setups(c, Path::new("/c"), &names, "vm").unwrap_err();
        assert!(matches!(e, EmulateError::UnknownNode { ref name, .. } if name == "n3"));
        let c = conf(BASE);
        assert!(node_names("é[1-2]", &c).is_ok());
        assert!(matches!(node_names("all", &c), Err(EmulateError::Empty)));
    }

    #[test]
    fn fd_budget() {
        assert_eq!(fds_needed(0), BASE_FDS);
        assert_eq!(fds_needed(1000), 1000 * FDS_PER_NODE + BASE_FDS);
        assert_eq!(fds_needed(usize::MAX), u64::MAX);
    }
}
