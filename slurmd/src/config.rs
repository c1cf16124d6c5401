//! What slurmd and slurmstepd take from slurm.conf: which node this daemon
//! is, where its spool, pid and log files live, how to authenticate, and
//! where the controllers are.
//!
//! Several slurmd may run on one host (test clusters, `slurmd -N n1`), so
//! every per-node path goes through `%n` (node name) and `%h` (host name)
//! expansion, and the node is chosen by `-N` or else by the host name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use slurm_common::auth::{self, AuthInfo, AuthType, Authenticator};
use slurm_common::conf::{AuthPlugin, NodeConf, SelectType, SlurmConf};
use thiserror::Error;

/// A configuration slurmd cannot run with.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot load {path}: {source}")]
    Load {
        path: String,
        source: slurm_common::conf::ConfError,
    },
    #[error("node {name} is not defined in {path}")]
    UnknownNode { name: String, path: String },
    #[error("no node in {path} matches this host ({host}); use -N to name one")]
    NoNodeForHost { host: String, path: String },
    #[error("AuthType={value} is not supported by slurmd (use auth/slurm or auth/munge)")]
    UnsupportedAuth { value: String },
    #[error("authentication setup failed: {source}")]
    Auth { source: auth::AuthError },
    #[error("no SlurmctldHost in {path}")]
    NoController { path: String },
}

/// The configuration file, resolved for one node.
#[derive(Debug, Clone)]
pub struct NodeSetup {
    pub conf: Arc<SlurmConf>,
    /// Absolute path of slurm.conf (SLURM_CONF for jobs).
    pub conf_path: PathBuf,
    pub node: NodeConf,
    pub spool_dir: PathBuf,
    pub pid_file: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
}

impl NodeSetup {
    /// Loads `conf_path` and picks the node: `wanted` (`-N`), else the one
    /// whose NodeName or NodeHostname is `short_host`.
    pub fn load(
        conf_path: &Path,
        wanted: Option<&str>,
        short_host: &str,
    ) -> Result<Self, ConfigError> {
        let (conf, abs) = load_conf(conf_path)?;
        Self::from_shared(conf, abs, wanted, short_host)
    }

    /// [`load`](Self::load) for an already parsed configuration.
    pub fn from_conf(
        conf: SlurmConf,
        conf_path: PathBuf,
        wanted: Option<&str>,
        short_host: &str,
    ) -> Result<Self, ConfigError> {
        Self::from_shared(Arc::new(conf), conf_path, wanted, short_host)
    }

    /// [`from_conf`](Self::from_conf) for a configuration shared with
    /// other nodes of this process.
    pub fn from_shared(
        conf: Arc<SlurmConf>,
        conf_path: PathBuf,
        wanted: Option<&str>,
        short_host: &str,
    ) -> Result<Self, ConfigError> {
        let shown = conf_path.display().to_string();
        let node = select_node(&conf, wanted, short_host)
            .map_err(|e| match e {
                NodeChoice::Unknown(name) => ConfigError::UnknownNode {
                    name,
                    path: shown.clone(),
                },
                NodeChoice::NoMatch => ConfigError::NoNodeForHost {
                    host: short_host.to_string(),
                    path: shown.clone(),
                },
            })?
            .clone();
        Ok(Self::for_node(conf, conf_path, node, short_host))
    }

    /// The setup of `node` (one of `conf`'s nodes): its paths expanded.
    pub fn for_node(
        conf: Arc<SlurmConf>,
        conf_path: PathBuf,
        node: NodeConf,
        short_host: &str,
    ) -> Self {
        let expand = |t: &str| PathBuf::from(expand_node_path(t, &node.name, short_host));
        let spool_dir = expand(&conf.slurmd_spool_dir);
        let pid_file = (!conf.slurmd_pid_file.is_empty()).then(|| expand(&conf.slurmd_pid_file));
        let log_file = conf.slurmd_log_file.as_deref().map(expand);
        Self {
            conf,
            conf_path,
            node,
            spool_dir,
            pid_file,
            log_file,
        }
    }

    /// Position of this node in slurm.conf and the number of nodes there
    /// (spreads HealthCheckNodeState=CYCLE runs over the interval).
    pub fn node_slot(&self) -> (usize, usize) {
        let index = self
            .conf
            .nodes
            .iter()
            .position(|n| n.name == self.node.name)
            .unwrap_or(0);
        (index, self.conf.nodes.len())
    }

    /// The authenticator AuthType names, with its key beside slurm.conf.
    pub fn authenticator(&self) -> Result<Arc<dyn Authenticator>, ConfigError> {
        let auth_type = match self.conf.auth_type {
            AuthPlugin::Slurm => AuthType::Slurm,
            AuthPlugin::Munge => AuthType::Munge,
            other => {
                return Err(ConfigError::UnsupportedAuth {
                    value: format!("{other:?}"),
                })
            }
        };
        let info = self.auth_info()?;
        let boxed = auth::authenticator_for(auth_type, &info.key_path(&self.conf_path), &info)
            .map_err(|source| ConfigError::Auth { source })?;
        Ok(Arc::from(boxed))
    }

    pub fn auth_info(&self) -> Result<AuthInfo, ConfigError> {
        AuthInfo::parse(&self.conf.auth_info.to_string())
            .map_err(|source| ConfigError::Auth { source })
    }

    /// gRPC endpoints of the controllers, primary first.
    pub fn controller_endpoints(&self) -> Result<Vec<String>, ConfigError> {
        controller_endpoints(&self.conf, &self.conf_path)
    }

    /// Whether registration should report the configured sizes instead of
    /// the detected ones (SlurmdParameters=config_overrides).
    pub fn config_overrides(&self) -> bool {
        self.conf.slurmd_parameters.has("config_overrides")
    }

    /// Address and port to listen on: NodeAddr (a name other than an IP
    /// address is resolved by the system) and the node's Port.
    pub fn listen_addr(&self) -> String {
        format!("{}:{}", bracket_v6(&self.node.addr), self.node.port)
    }
}

/// Parses slurm.conf at `conf_path`; the configuration and the file's
/// absolute path.
pub fn load_conf(conf_path: &Path) -> Result<(Arc<SlurmConf>, PathBuf), ConfigError> {
    let abs = std::path::absolute(conf_path).unwrap_or_else(|_| conf_path.to_path_buf());
    let shown = abs.display().to_string();
    let load_err = |source| ConfigError::Load {
        path: shown.clone(),
        source,
    };
    let parsed = SlurmConf::load(&shown).map_err(load_err)?;
    check_stepd_keys(&parsed.conf).map_err(load_err)?;
    Ok((Arc::new(parsed.conf), abs))
}

/// Checks the keys slurm.conf keeps untyped but slurmstepd acts on, so that
/// a bad value stops slurmd at start-up (and a reconfiguration) rather than
/// every job launch.
pub fn check_stepd_keys(conf: &SlurmConf) -> Result<(), slurm_common::conf::ConfError> {
    crate::stepd::prio::PrioPropagation::from_conf(conf).map(|_| ())
}

/// gRPC endpoints of `conf`'s controllers (read from `conf_path`), primary
/// first.
pub fn controller_endpoints(
    conf: &SlurmConf,
    conf_path: &Path,
) -> Result<Vec<String>, ConfigError> {
    let port = conf.slurmctld_port.first;
    let list: Vec<String> = conf
        .slurmctld_hosts
        .iter()
        .map(|h| format!("http://{}:{port}", bracket_v6(h.contact())))
        .collect();
    if list.is_empty() {
        return Err(ConfigError::NoController {
            path: conf_path.display().to_string(),
        });
    }
    Ok(list)
}

fn bracket_v6(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Why no node was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeChoice {
    Unknown(String),
    NoMatch,
}

/// The node named `wanted`, else the first whose NodeName or NodeHostname
/// is `short_host` (NodeName first, as Slurm tries it).
pub fn select_node<'a>(
    conf: &'a SlurmConf,
    wanted: Option<&str>,
    short_host: &str,
) -> Result<&'a NodeConf, NodeChoice> {
    if let Some(name) = wanted {
        return conf
            .node(name)
            .ok_or_else(|| NodeChoice::Unknown(name.to_string()));
    }
    conf.node(short_host)
        .or_else(|| {
            conf.nodes.iter().find(|n| {
                n.hostname == short_host || n.hostname.split('.').next() == Some(short_host)
            })
        })
        .ok_or(NodeChoice::NoMatch)
}

pub use slurm_common::conf::expand_node_path;

/// Slurm's numeric id of a select plugin (in SLURM_WORKING_CLUSTER).
pub fn select_plugin_id(select: SelectType) -> u32 {
    match select {
        SelectType::Linear => 102,
        SelectType::ConsRes => 101,
        SelectType::ConsTres => 109,
        SelectType::CrayAries => 107,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const CONF: &str = "\
ClusterName=t
SlurmctldHost=ctl(127.0.0.1)
SlurmctldHost=backup
SlurmctldPort=7000
AuthType=auth/slurm
SlurmdSpoolDir=/spool/%n
SlurmdPidFile=/run/slurmd.%n.pid
SlurmdLogFile=/log/%h/slurmd.%n.log
SlurmdParameters=config_overrides
NodeName=n[1-2] NodeHostname=vm NodeAddr=127.0.0.1 Port=[17001-17002] CPUs=2
NodeName=box CPUs=1
PartitionName=debug Nodes=ALL Default=YES
";

    fn conf() -> SlurmConf {
        SlurmConf::parse(CONF, "slurm.conf").unwrap().conf
    }

    #[test]
    fn paths_and_endpoints_for_a_named_node() {
        let s = NodeSetup::from_conf(conf(), "/etc/slurm.conf".into(), Some("n2"), "vm").unwrap();
        assert_eq!(s.node.name, "n2");
        assert_eq!(s.spool_dir, PathBuf::from("/spool/n2"));
        assert_eq!(s.pid_file, Some(PathBuf::from("/run/slurmd.n2.pid")));
        assert_eq!(s.log_file, Some(PathBuf::from("/log/vm/slurmd.n2.log")));
        assert_eq!(s.listen_addr(), "127.0.0.1:17002");
        assert_eq!(
            s.controller_endpoints().unwrap(),
            vec![
                "http://127.0.0.1:7000".to_string(),
                "http://backup:7000".to_string()
            ]
        );
        assert!(s.config_overrides());
    }

    #[test]
    fn node_slot_is_the_place_in_slurm_conf() {
        let c = Arc::new(conf());
        let s = NodeSetup::from_shared(c.clone(), "/x".into(), Some("box"), "vm").unwrap();
        assert_eq!(s.node_slot(), (2, 3));
        let s = NodeSetup::from_shared(c, "/x".into(), Some("n1"), "vm").unwrap();
        assert_eq!(s.node_slot(), (0, 3));
    }

    #[test]
    fn node_choice() {
        let c = conf();
        assert_eq!(select_node(&c, None, "box").unwrap().name, "box");
        assert_eq!(select_node(&c, None, "vm").unwrap().name, "n1");
        assert_eq!(
            select_node(&c, None, "other").unwrap_err(),
            NodeChoice::NoMatch
        );
        assert_eq!(
            select_node(&c, Some("n9"), "vm").unwrap_err(),
            NodeChoice::Unknown("n9".into())
        );
        let e = NodeSetup::from_conf(c, "/x".into(), None, "zz").unwrap_err();
        assert!(e.to_string().contains("use -N"), "{e}");
    }

    /// A bad PropagatePrioProcess stops slurmd (and slurmstepd) at load,
    /// naming the file, line, key and value.
    #[test]
    fn bad_propagate_prio_process_is_a_load_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slurm.conf");
        for bad in ["3", "yes"] {
            std::fs::write(&path, format!("{CONF}PropagatePrioProcess={bad}\n")).unwrap();
            let e = load_conf(&path).unwrap_err();
            let shown = path.display();
            assert_eq!(
                e.to_string(),
                format!(
                    "cannot load {shown}: {shown}:13: invalid value \"{bad}\" for \
                     PropagatePrioProcess: expected 0, 1 or 2"
                )
            );
            assert!(NodeSetup::load(&path, Some("n1"), "vm").is_err());
        }
        std::fs::write(&path, format!("{CONF}PropagatePrioProcess=2\n")).unwrap();
        assert!(load_conf(&path).is_ok());
    }
}
