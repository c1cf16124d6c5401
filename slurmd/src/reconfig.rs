//! Reconfiguration: a running slurmd taking a re-read slurm.conf
//! (`scontrol reconfigure`, which the controller passes on to every node,
//! and SIGHUP).
//!
//! An administrator edits slurm.conf to give a node a feature, more memory
//! or a new controller, and expects that to hold without restarting
//! slurmd, whose restart would be visible to jobs and to the controller.
//! Settings fall in two groups:
//!
//! * What the process was built around at start-up cannot change while it
//!   runs: the address and port it listens on, its node name, its spool and
//!   pid files, its credentials. A new value in the file is reported with a
//!   warning naming the key, and the running value is kept until slurmd
//!   restarts.
//! * Everything else is taken: the node's sizes, features and GRES (what it
//!   registers with), the controllers and their port, MessageTimeout,
//!   SlurmdTimeout, KillWait, SlurmUser, the health check, SlurmdDebug and
//!   SlurmdLogFile (as Slurm's slurmd reopens its log on every
//!   reconfiguration; slurmstepd of the next launch writes there too), the
//!   Prolog and Epilog (the next job runs the new ones), PropagatePrioProcess
//!   (the next job's slurmstepd reads it).
//!
//! What to take and what to keep is decided here, purely, from the running
//! setup and the new parse ([`reload_node`], [`process_changes`]); the
//! daemon reads the file, swaps the result in whole and registers again. A
//! file that does not parse, or no longer defines this node, changes
//! nothing: the error is logged and slurmd runs on as it was.

use std::path::PathBuf;
use std::sync::Arc;

use slurm_common::conf::{NodeConf, SlurmConf};
use thiserror::Error;

use crate::config::NodeSetup;

/// A key whose new value waits for a restart of slurmd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptKey {
    pub key: &'static str,
    /// The value in force.
    pub running: String,
    /// The value slurm.conf gives now.
    pub file: String,
}

/// Why a re-read slurm.conf was not taken for a node.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReconfigError {
    #[error("node {name} is not defined in {path} any more; keeping the running configuration")]
    NodeGone { name: String, path: String },
}

/// A node's setup after a re-read of slurm.conf.
#[derive(Debug, Clone)]
pub struct NodeReload {
    pub setup: NodeSetup,
    /// This node's keys that changed and are in force now (process-wide
    /// keys are in [`process_changes`]).
    pub changed: Vec<&'static str>,
    /// This node's keys that changed in the file and wait for a restart.
    pub kept: Vec<KeptKey>,
}

/// What a reconfiguration did to one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReconfigOutcome {
    /// The re-read configuration is in force.
    Taken {
        changed: Vec<&'static str>,
        kept: Vec<KeptKey>,
    },
    /// The node had this configuration already (a reload for another
    /// request, or another node of the process, read it).
    Current,
    /// The configuration could not be used; the running one stays.
    Refused,
}

/// Keys and how to show each one's value (values are compared as shown).
type KeyTable<T> = [(&'static str, fn(&T) -> String)];

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

fn secs(d: std::time::Duration) -> String {
    d.as_secs().to_string()
}

/// Process-wide keys that only a restart can change: the files slurmd
/// opened or made at start-up, and the credentials it signs with.
const PROCESS_RESTART_KEYS: &KeyTable<SlurmConf> = &[
    ("SlurmdSpoolDir", |c| c.slurmd_spool_dir.clone()),
    ("SlurmdPidFile", |c| c.slurmd_pid_file.clone()),
    ("AuthType", |c| c.auth_type.as_str().to_string()),
    ("AuthInfo", |c| c.auth_info.to_string()),
];

/// Process-wide keys slurmd (or the slurmstepd of the next launch) uses
/// and takes while running.
const PROCESS_LIVE_KEYS: &KeyTable<SlurmConf> = &[
    ("SlurmctldHost", |c| {
        c.slurmctld_hosts
            .iter()
            .map(|h| match &h.addr {
                Some(a) => format!("{}({a})", h.name),
                None => h.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }),
    ("SlurmctldPort", |c| c.slurmctld_port.to_string()),
    ("MessageTimeout", |c| secs(c.message_timeout)),
    ("SlurmdTimeout", |c| secs(c.slurmd_timeout)),
    ("KillWait", |c| secs(c.kill_wait)),
    ("TreeWidth", |c| c.tree_width.to_string()),
    ("SlurmUser", |c| c.slurm_user.clone()),
    ("SlurmdParameters", |c| c.slurmd_parameters.to_string()),
    ("SlurmdDebug", |c| c.slurmd_debug.as_str().to_string()),
    ("SlurmdLogFile", |c| opt(&c.slurmd_log_file)),
    ("HealthCheckProgram", |c| opt(&c.health_check_program)),
    ("HealthCheckInterval", |c| secs(c.health_check_interval)),
    ("HealthCheckNodeState", |c| {
        format!("{:?}", c.health_check_node_state)
    }),
    ("Prolog", |c| opt(&c.prolog)),
    ("Epilog", |c| opt(&c.epilog)),
    ("PrologEpilogTimeout", |c| {
        c.prolog_epilog_timeout.map(secs).unwrap_or_default()
    }),
    ("PrologFlags", |c| format!("{:?}", c.prolog_flags)),
    ("TaskProlog", |c| opt(&c.task_prolog)),
    ("TaskEpilog", |c| opt(&c.task_epilog)),
    ("TmpFS", |c| c.tmp_fs.clone()),
    // Checked when the file was read (`config::check_stepd_keys`).
    ("PropagatePrioProcess", |c| {
        crate::stepd::prio::PrioPropagation::from_conf(c)
            .map(|p| p.number().to_string())
            .unwrap_or_default()
    }),
];

/// Node keys that only a restart can change: where slurmd listens.
const NODE_RESTART_KEYS: &KeyTable<NodeConf> = &[
    ("NodeAddr", |n| n.addr.clone()),
    ("Port", |n| n.port.to_string()),
];

/// Node keys taken while running: what the node registers with.
const NODE_LIVE_KEYS: &KeyTable<NodeConf> = &[
    ("NodeHostname", |n| n.hostname.clone()),
    ("CPUs", |n| n.cpus.to_string()),
    ("Boards", |n| n.boards.to_string()),
    ("SocketsPerBoard", |n| n.sockets_per_board.to_string()),
    ("CoresPerSocket", |n| n.cores_per_socket.to_string()),
    ("ThreadsPerCore", |n| n.threads_per_core.to_string()),
    ("RealMemory", |n| n.real_memory.to_string()),
    ("TmpDisk", |n| n.tmp_disk.to_string()),
    ("Weight", |n| n.weight.to_string()),
    ("Feature", |n| n.features.join(",")),
    ("Gres", |n| {
        n.gres
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }),
    ("CoreSpecCount", |n| format!("{:?}", n.core_spec_count)),
    ("CpuSpecList", |n| format!("{:?}", n.cpu_spec_list)),
    ("MemSpecLimit", |n| format!("{:?}", n.mem_spec_limit)),
    ("CpuBind", |n| opt(&n.cpu_bind)),
];

/// The keys of `table` whose values differ between `old` and `new`.
fn differing<T>(table: &KeyTable<T>, old: &T, new: &T) -> Vec<&'static str> {
    table
        .iter()
        .filter(|(_, show)| show(old) != show(new))
        .map(|(key, _)| *key)
        .collect()
}

/// [`differing`], with both values.
fn kept<T>(table: &KeyTable<T>, old: &T, new: &T) -> Vec<KeptKey> {
    table
        .iter()
        .filter_map(|(key, show)| {
            let (running, file) = (show(old), show(new));
            (running != file).then_some(KeptKey { key, running, file })
        })
        .collect()
}

/// What changed between two parses of slurm.conf for the whole process:
/// the keys taken, and the keys that wait for a restart.
pub fn process_changes(old: &SlurmConf, new: &SlurmConf) -> (Vec<&'static str>, Vec<KeptKey>) {
    (
        differing(PROCESS_LIVE_KEYS, old, new),
        kept(PROCESS_RESTART_KEYS, old, new),
    )
}

/// The setup of `old`'s node under the re-read `conf`: the node's
/// definition and every setting from `conf`, except where slurmd listens
/// (NodeAddr, Port) and its spool and pid files, which stay as they were.
/// Fails when `conf` no longer defines the node.
///
/// The log file follows SlurmdLogFile; when the name changed and uses
/// `%h`, the host name is read (the one look outside the arguments).
pub fn reload_node(old: &NodeSetup, conf: Arc<SlurmConf>) -> Result<NodeReload, ReconfigError> {
    let name = &old.node.name;
    let Some(fresh) = conf.node(name) else {
        return Err(ReconfigError::NodeGone {
            name: name.clone(),
            path: old.conf_path.display().to_string(),
        });
    };
    let changed = differing(NODE_LIVE_KEYS, &old.node, fresh);
    let kept = kept(NODE_RESTART_KEYS, &old.node, fresh);
    let mut node = fresh.clone();
    node.addr.clone_from(&old.node.addr);
    node.port = old.node.port;
    let log_file = if conf.slurmd_log_file == old.conf.slurmd_log_file {
        old.log_file.clone()
    } else {
        conf.slurmd_log_file.as_deref().map(|t| {
            let host = if t.contains("%h") {
                crate::hw::short_host_name()
            } else {
                String::new()
            };
            PathBuf::from(crate::config::expand_node_path(t, name, &host))
        })
    };
    Ok(NodeReload {
        setup: NodeSetup {
            conf,
            conf_path: old.conf_path.clone(),
            node,
            spool_dir: old.spool_dir.clone(),
            pid_file: old.pid_file.clone(),
            log_file,
        },
        changed,
        kept,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const BASE: &str = "\
ClusterName=t
SlurmctldHost=ctl(127.0.0.1)
SlurmctldPort=7000
AuthType=auth/slurm
SlurmdSpoolDir=/spool/%n
SlurmdLogFile=/log/slurmd.%n.log
MessageTimeout=10
KillWait=30
NodeName=n1 NodeAddr=127.0.0.1 Port=17001 CPUs=2 RealMemory=1000
NodeName=n2 NodeAddr=127.0.0.1 Port=17002 CPUs=2 RealMemory=1000
PartitionName=debug Nodes=ALL Default=YES
";

    fn conf(text: &str) -> Arc<SlurmConf> {
        Arc::new(SlurmConf::parse(text, "slurm.conf").unwrap().conf)
    }

    fn setup(text: &str, node: &str) -> NodeSetup {
        NodeSetup::from_shared(
            conf(text),
            PathBuf::from("/etc/slurm.conf"),
            Some(node),
            "vm",
        )
        .unwrap()
    }

    #[test]
    fn the_node_definition_and_settings_are_taken() {
        let old = setup(BASE, "n1");
        let text = BASE
            .replace(
                "Port=17001 CPUs=2 RealMemory=1000",
                "Port=17001 CPUs=4 RealMemory=1500 Feature=fast,ib Gres=gpu:2",
            )
            .replace("KillWait=30", "KillWait=5\nPropagatePrioProcess=2")
            .replace("ctl(127.0.0.1)", "ctl2(127.0.0.2)");
        let r = reload_node(&old, conf(&text)).unwrap();
        // Without a topology, CPUs= gives the sockets too.
        assert_eq!(
            r.changed,
            vec!["CPUs", "SocketsPerBoard", "RealMemory", "Feature", "Gres"]
        );
        assert!(r.kept.is_empty(), "{:?}", r.kept);
        assert_eq!(r.setup.node.cpus, 4);
        assert_eq!(r.setup.node.real_memory, 1500);
        assert_eq!(r.setup.node.features, vec!["fast", "ib"]);
        assert_eq!(r.setup.conf.kill_wait.as_secs(), 5);
        assert_eq!(
            r.setup.controller_endpoints().unwrap(),
            vec!["http://127.0.0.2:7000".to_string()]
        );
        let (changed, kept) = process_changes(&old.conf, &r.setup.conf);
        assert_eq!(
            changed,
            vec!["SlurmctldHost", "KillWait", "PropagatePrioProcess"]
        );
        assert!(kept.is_empty());
        // The other node's change is not this node's.
        let other = reload_node(&setup(BASE, "n2"), conf(&text)).unwrap();
        assert!(other.changed.is_empty());
    }

    #[test]
    fn where_the_node_listens_and_its_files_are_kept_with_a_warning() {
        let old = setup(BASE, "n1");
        let text = BASE
            .replace(
                "NodeName=n1 NodeAddr=127.0.0.1 Port=17001",
                "NodeName=n1 NodeAddr=127.0.0.9 Port=18001",
            )
            .replace("/spool/%n", "/var/spool/%n")
            .replace("/log/slurmd.%n.log", "/var/log/slurmd.log");
        let r = reload_node(&old, conf(&text)).unwrap();
        assert_eq!(
            r.kept,
            vec![
                KeptKey {
                    key: "NodeAddr",
                    running: "127.0.0.1".into(),
                    file: "127.0.0.9".into()
                },
                KeptKey {
                    key: "Port",
                    running: "17001".into(),
                    file: "18001".into()
                },
            ]
        );
        assert!(r.changed.is_empty());
        assert_eq!(r.setup.listen_addr(), "127.0.0.1:17001");
        assert_eq!(r.setup.spool_dir, PathBuf::from("/spool/n1"));
        assert_eq!(r.setup.conf_path, PathBuf::from("/etc/slurm.conf"));
        // The log file is not one of them: it follows SlurmdLogFile.
        assert_eq!(r.setup.log_file, Some(PathBuf::from("/var/log/slurmd.log")));
        let (changed, kept) = process_changes(&old.conf, &r.setup.conf);
        assert_eq!(changed, vec!["SlurmdLogFile"]);
        let keys: Vec<&str> = kept.iter().map(|k| k.key).collect();
        assert_eq!(keys, vec!["SlurmdSpoolDir"]);
        assert_eq!(kept[0].running, "/spool/%n");
        assert_eq!(kept[0].file, "/var/spool/%n");
    }

    #[test]
    fn the_log_file_follows_slurmd_log_file_per_node() {
        let old = setup(BASE, "n1");
        assert_eq!(old.log_file, Some(PathBuf::from("/log/slurmd.n1.log")));
        // Unchanged: the running name stays as it is.
        let same = reload_node(&old, conf(BASE)).unwrap();
        assert_eq!(same.setup.log_file, old.log_file);
        let text = BASE.replace("/log/slurmd.%n.log", "/new/%n-%%.log");
        let r = reload_node(&old, conf(&text)).unwrap();
        assert_eq!(r.setup.log_file, Some(PathBuf::from("/new/n1-%.log")));
        // Removed: no file named any more (slurmstepd logs as slurmd does).
        let gone = BASE.replace("SlurmdLogFile=/log/slurmd.%n.log\n", "");
        let r = reload_node(&old, conf(&gone)).unwrap();
        assert_eq!(r.setup.log_file, None);
    }

    #[test]
    fn a_node_no_longer_defined_is_refused() {
        let old = setup(BASE, "n2");
        let text = BASE.replace("NodeName=n2 ", "NodeName=n3 ");
        let e = reload_node(&old, conf(&text)).unwrap_err();
        assert_eq!(
            e,
            ReconfigError::NodeGone {
                name: "n2".into(),
                path: "/etc/slurm.conf".into()
            }
        );
        assert!(e.to_string().contains("keeping the running configuration"));
    }

    #[test]
    fn the_same_file_changes_nothing() {
        let old = setup(BASE, "n1");
        let r = reload_node(&old, conf(BASE)).unwrap();
        assert!(r.changed.is_empty() && r.kept.is_empty());
        assert_eq!(process_changes(&old.conf, &r.setup.conf), (vec![], vec![]));
    }

    #[test]
    fn process_settings_are_compared_key_by_key() {
        let old = conf(BASE);
        let text = BASE.replace("MessageTimeout=10", "MessageTimeout=20\nSlurmdDebug=debug2")
            + "HealthCheckProgram=/bin/true\nHealthCheckInterval=60\nAuthInfo=ttl=60\n";
        let (changed, kept) = process_changes(&old, &conf(&text));
        assert_eq!(
            changed,
            vec![
                "MessageTimeout",
                "SlurmdDebug",
                "HealthCheckProgram",
                "HealthCheckInterval"
            ]
        );
        assert_eq!(
            kept,
            vec![KeptKey {
                key: "AuthInfo",
                running: String::new(),
                file: "ttl=60".into()
            }]
        );
    }
}
