//! `NodeName=`, `NodeSet=` and `DownNodes=` lines of slurm.conf.
//!
//! One NodeName line describes many nodes (`NodeName=n[1-4]`); this module
//! expands it into one [`NodeConf`] per node, in config order, so that the
//! controller never deals with host lists when it looks up a node.
//! `NodeHostname=`, `NodeAddr=` and `Port=` may be lists too: they map onto the
//! names by position, a single value is shared by all of them (several slurmd
//! on one host), and any other count is an error.
//!
//! `NodeName=DEFAULT` lines set defaults for the lines that follow them. They
//! are parsed (and checked) where they are written, so an error in a default
//! points at the DEFAULT line.
//!
//! CPU topology follows Slurm: Boards, SocketsPerBoard (or Sockets),
//! CoresPerSocket and ThreadsPerCore default to 1, CPUs defaults to their
//! product, CPUs alone means that many single-core sockets, and a CPUs value
//! that matches none of Sockets, Sockets*Cores or Sockets*Cores*Threads is
//! replaced by the full product (with a warning, as Slurm logs an error and
//! goes on).

use std::fmt;

use super::gres::GresSpec;
use super::lexer::Pair;
use super::plugins::word_enum;
use super::value::{parse_port_list, record_attrs, Field, EXPECT_PORTS};
use super::{ConfError, ConfWarning, SourceLoc, WarningKind};

word_enum! {
    /// The State= a node starts in (slurm.conf NodeName and DownNodes lines).
    NodeConfState, default Unknown,
    expected "CLOUD, DOWN, DRAIN, FAIL, FAILING, FUTURE, IDLE or UNKNOWN" {
        Unknown => "UNKNOWN",
        Cloud => "CLOUD",
        Down => "DOWN",
        Drain => "DRAIN",
        Fail => "FAIL",
        Failing => "FAILING",
        Future => "FUTURE",
        Idle => "IDLE",
    }
}

/// One node, after expansion of its NodeName line and the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConf {
    pub loc: SourceLoc,
    pub name: String,
    /// NodeHostname (defaults to the name).
    pub hostname: String,
    /// NodeAddr (defaults to the hostname).
    pub addr: String,
    pub bcast_addr: Option<String>,
    /// Port= if given, else SlurmdPort.
    pub port: u16,
    /// Schedulable logical CPUs.
    pub cpus: u32,
    pub boards: u16,
    /// Sockets in total (SocketsPerBoard * Boards).
    pub sockets: u16,
    pub sockets_per_board: u16,
    pub cores_per_socket: u16,
    pub threads_per_core: u16,
    /// MB.
    pub real_memory: u64,
    /// MB.
    pub tmp_disk: u64,
    pub weight: u32,
    pub features: Vec<String>,
    pub gres: Vec<GresSpec>,
    pub state: NodeConfState,
    pub reason: Option<String>,
    pub core_spec_count: Option<u16>,
    pub cpu_spec_list: Option<Vec<u32>>,
    /// MB reserved for system daemons.
    pub mem_spec_limit: Option<u64>,
    pub cpu_bind: Option<String>,
}

/// `NodeSet=name Feature=f` or `NodeSet=name Nodes=list`: a name for a group of
/// nodes, usable in a partition's Nodes=.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSet {
    pub loc: SourceLoc,
    pub name: String,
    pub feature: Option<String>,
    /// The resolved members, in node config order.
    pub nodes: Vec<String>,
}

/// `DownNodes=list State= Reason=`: nodes to start DOWN (or DRAIN, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct DownNodes {
    pub loc: SourceLoc,
    pub nodes: Vec<String>,
    pub state: NodeConfState,
    pub reason: Option<String>,
}

impl fmt::Display for NodeConf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NodeName={} CPUs={} RealMemory={}",
            self.name, self.cpus, self.real_memory
        )
    }
}

pub(crate) const NODE_KEYS: &[&str] = &[
    "NodeName",
    "NodeHostname",
    "NodeAddr",
    "BcastAddr",
    "Boards",
    "CoreSpecCount",
    "CoresPerSocket",
    "CpuBind",
    "CPUs",
    "CpuSpecList",
    "Features",
    "Gres",
    "MemSpecLimit",
    "Port",
    "RealMemory",
    "Reason",
    "Sockets",
    "SocketsPerBoard",
    "State",
    "ThreadsPerCore",
    "TmpDisk",
    "Weight",
    // Known, kept only in the raw entries.
    "Parameters",
    "RestrictedCoresPerGPU",
    "SuspendTime",
    "ResumeTimeout",
    "SuspendTimeout",
    "Topology",
    "TRESWeights",
];

const NODE_ALIASES: &[(&str, &str)] = &[("Feature", "Features"), ("Procs", "CPUs")];

/// The attributes of a NodeName line before defaults and expansion; every
/// field is None when the line does not set it.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeTemplate {
    hostnames: Option<Vec<String>>,
    addrs: Option<Vec<String>>,
    ports: Option<Vec<u16>>,
    bcast_addr: Option<String>,
    cpus: Option<u32>,
    boards: Option<u16>,
    sockets: Option<u16>,
    sockets_per_board: Option<u16>,
    cores_per_socket: Option<u16>,
    threads_per_core: Option<u16>,
    real_memory: Option<u64>,
    tmp_disk: Option<u64>,
    weight: Option<u32>,
    features: Option<Vec<String>>,
    gres: Option<Vec<GresSpec>>,
    state: Option<NodeConfState>,
    reason: Option<String>,
    core_spec_count: Option<u16>,
    cpu_spec_list: Option<Vec<u32>>,
    mem_spec_limit: Option<u64>,
    cpu_bind: Option<String>,
}

macro_rules! overlay_fields {
    ($base:expr, $over:expr, $($field:ident),+ $(,)?) => {
        NodeTemplate {
            $( $field: $over.$field.clone().or_else(|| $base.$field.clone()) ),+
        }
    };
}

impl NodeTemplate {
    /// `over`'s values where set, else `self`'s.
    fn overlay(&self, over: &NodeTemplate) -> NodeTemplate {
        overlay_fields!(
            self,
            over,
            hostnames,
            addrs,
            ports,
            bcast_addr,
            cpus,
            boards,
            sockets,
            sockets_per_board,
            cores_per_socket,
            threads_per_core,
            real_memory,
            tmp_disk,
            weight,
            features,
            gres,
            state,
            reason,
            core_spec_count,
            cpu_spec_list,
            mem_spec_limit,
            cpu_bind,
        )
    }

    fn parse(attrs: &[(&'static str, &str)], loc: &SourceLoc) -> Result<Self, ConfError> {
        let mut t = NodeTemplate::default();
        for &(key, value) in attrs {
            let f = Field::new(key, value, loc);
            match key {
                "NodeHostname" => t.hostnames = Some(f.hostlist()?),
                "NodeAddr" => t.addrs = Some(f.hostlist()?),
                "Port" => t.ports = Some(f.with(EXPECT_PORTS, parse_port_list)?),
                "BcastAddr" => t.bcast_addr = f.string(),
                "CPUs" => t.cpus = Some(f.u32()?),
                "Boards" => t.boards = Some(positive_u16(&f)?),
                "Sockets" => t.sockets = Some(positive_u16(&f)?),
                "SocketsPerBoard" => t.sockets_per_board = Some(positive_u16(&f)?),
                "CoresPerSocket" => t.cores_per_socket = Some(positive_u16(&f)?),
                "ThreadsPerCore" => t.threads_per_core = Some(positive_u16(&f)?),
                "RealMemory" => t.real_memory = Some(f.mem_mb()?),
                "TmpDisk" => t.tmp_disk = Some(f.mem_mb()?),
                "Weight" => t.weight = Some(f.u32()?),
                "Features" => t.features = Some(features(value)),
                "Gres" => t.gres = Some(f.with(GresSpec::EXPECTED, GresSpec::parse_list)?),
                "State" => t.state = Some(f.with(NodeConfState::EXPECTED, NodeConfState::parse)?),
                "Reason" => t.reason = f.string(),
                "CoreSpecCount" => t.core_spec_count = Some(f.u16()?),
                "CpuSpecList" => t.cpu_spec_list = Some(f.id_list()?),
                "MemSpecLimit" => t.mem_spec_limit = Some(f.mem_mb()?),
                "CpuBind" => t.cpu_bind = f.string(),
                _ => {}
            }
        }
        Ok(t)
    }
}

fn positive_u16(f: &Field<'_>) -> Result<u16, ConfError> {
    f.with("a whole number from 1 to 65535", |v| {
        v.parse::<u16>().ok().filter(|n| *n > 0)
    })
}

fn features(v: &str) -> Vec<String> {
    let v = v.trim();
    if v.is_empty() || v.eq_ignore_ascii_case("(null)") {
        return Vec::new();
    }
    super::value::split_list(v)
}

/// Reads NodeName lines in order, keeping the DEFAULT template between them.
#[derive(Debug, Default)]
pub(crate) struct NodeBuilder {
    defaults: NodeTemplate,
    pub nodes: Vec<NodeConf>,
    /// Port= explicitly given, per node index (else SlurmdPort applies).
    explicit_port: Vec<bool>,
    seen: std::collections::HashSet<String>,
}

impl NodeBuilder {
    pub fn add_line(
        &mut self,
        pairs: &[Pair],
        loc: &SourceLoc,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<(), ConfError> {
        let attrs = record_attrs(pairs, NODE_KEYS, NODE_ALIASES, loc, warnings);
        let name_value = attrs
            .iter()
            .find(|(k, _)| *k == "NodeName")
            .map(|(_, v)| *v)
            .unwrap_or("");
        let line = NodeTemplate::parse(&attrs, loc)?;
        if name_value.trim().eq_ignore_ascii_case("DEFAULT") {
            self.defaults = self.defaults.overlay(&line);
            return Ok(());
        }
        if name_value.trim().is_empty() {
            return Err(ConfError::MissingName {
                loc: loc.clone(),
                line_key: "NodeName",
            });
        }
        let names = Field::new("NodeName", name_value, loc).hostlist()?;
        let t = self.defaults.overlay(&line);
        let per_node = |key: &'static str, values: Option<&Vec<String>>| {
            check_count(key, values.map(Vec::len), names.len(), loc)
        };
        per_node("NodeHostname", t.hostnames.as_ref())?;
        per_node("NodeAddr", t.addrs.as_ref())?;
        check_count("Port", t.ports.as_ref().map(Vec::len), names.len(), loc)?;

        let topo = Topology::resolve(&t, name_value, loc, warnings)?;
        self.nodes.reserve(names.len());
        self.explicit_port.reserve(names.len());
        for (i, name) in names.into_iter().enumerate() {
            if !self.seen.insert(name.clone()) {
                return Err(ConfError::DuplicateNode {
                    loc: loc.clone(),
                    node: name,
                });
            }
            let hostname = pick(t.hostnames.as_ref(), i).unwrap_or_else(|| name.clone());
            let addr = pick(t.addrs.as_ref(), i).unwrap_or_else(|| hostname.clone());
            let port = t.ports.as_ref().map(|p| pick_port(p, i));
            self.explicit_port.push(port.is_some());
            self.nodes.push(NodeConf {
                loc: loc.clone(),
                name,
                hostname,
                addr,
                bcast_addr: t.bcast_addr.clone(),
                port: port.unwrap_or(0),
                cpus: topo.cpus,
                boards: topo.boards,
                sockets: topo.sockets,
                sockets_per_board: topo.sockets_per_board,
                cores_per_socket: topo.cores,
                threads_per_core: topo.threads,
                real_memory: t.real_memory.unwrap_or(1),
                tmp_disk: t.tmp_disk.unwrap_or(0),
                weight: t.weight.unwrap_or(1),
                features: t.features.clone().unwrap_or_default(),
                gres: t.gres.clone().unwrap_or_default(),
                state: t.state.unwrap_or_default(),
                reason: t.reason.clone(),
                core_spec_count: t.core_spec_count,
                cpu_spec_list: t.cpu_spec_list.clone(),
                mem_spec_limit: t.mem_spec_limit,
                cpu_bind: t.cpu_bind.clone(),
            });
        }
        Ok(())
    }

    /// Gives nodes without Port= the cluster's SlurmdPort.
    pub fn finish(mut self, slurmd_port: u16) -> Vec<NodeConf> {
        for (node, explicit) in self.nodes.iter_mut().zip(&self.explicit_port) {
            if !explicit {
                node.port = slurmd_port;
            }
        }
        self.nodes
    }
}

fn check_count(
    key: &'static str,
    count: Option<usize>,
    names: usize,
    loc: &SourceLoc,
) -> Result<(), ConfError> {
    match count {
        Some(c) if c != 1 && c != names => Err(ConfError::CountMismatch {
            loc: loc.clone(),
            key,
            count: c,
            names,
        }),
        _ => Ok(()),
    }
}

fn pick(values: Option<&Vec<String>>, i: usize) -> Option<String> {
    let values = values?;
    if values.len() == 1 {
        values.first().cloned()
    } else {
        values.get(i).cloned()
    }
}

fn pick_port(ports: &[u16], i: usize) -> u16 {
    if ports.len() == 1 {
        ports.first().copied().unwrap_or(0)
    } else {
        ports.get(i).copied().unwrap_or(0)
    }
}

struct Topology {
    cpus: u32,
    boards: u16,
    sockets: u16,
    sockets_per_board: u16,
    cores: u16,
    threads: u16,
}

impl Topology {
    fn resolve(
        t: &NodeTemplate,
        names: &str,
        loc: &SourceLoc,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<Topology, ConfError> {
        let boards = t.boards.unwrap_or(1);
        let cores = t.cores_per_socket.unwrap_or(1);
        let threads = t.threads_per_core.unwrap_or(1);
        let too_big = |key: &'static str, value: u64| ConfError::InvalidValue {
            loc: loc.clone(),
            key: key.to_string(),
            value: value.to_string(),
            expected: "a node topology with at most 65535 sockets and 4294967295 CPUs",
        };
        let (sockets, sockets_per_board) = match (t.sockets_per_board, t.sockets) {
            (Some(spb), sockets) => {
                if sockets.is_some() {
                    warnings.push(ConfWarning {
                        loc: loc.clone(),
                        kind: WarningKind::Ignored {
                            key: "Sockets".to_string(),
                            reason: "SocketsPerBoard is also set",
                        },
                    });
                }
                let total = u64::from(spb) * u64::from(boards);
                let total = u16::try_from(total).map_err(|_| too_big("Sockets", total))?;
                (total, spb)
            }
            (None, Some(s)) => (s, (s / boards).max(1)),
            (None, None) => {
                let s = match t.cpus {
                    Some(cpus) => {
                        let per_socket = u32::from(cores) * u32::from(threads);
                        let s = (cpus / per_socket.max(1)).max(1);
                        u16::try_from(s).unwrap_or(u16::MAX)
                    }
                    None => boards,
                };
                (s, (s / boards).max(1))
            }
        };
        let full = u64::from(sockets) * u64::from(cores) * u64::from(threads);
        let full = u32::try_from(full).map_err(|_| too_big("CPUs", full))?;
        let cpus = match t.cpus {
            None => full,
            Some(c) => {
                let s = u32::from(sockets);
                let sc = s * u32::from(cores);
                if c == s || c == sc || c == full {
                    c
                } else {
                    warnings.push(ConfWarning {
                        loc: loc.clone(),
                        kind: WarningKind::CpusMismatch {
                            node: names.to_string(),
                            configured: c,
                            computed: full,
                        },
                    });
                    full
                }
            }
        };
        Ok(Topology {
            cpus,
            boards,
            sockets,
            sockets_per_board,
            cores,
            threads,
        })
    }
}

pub(crate) const NODESET_KEYS: &[&str] = &["NodeSet", "Feature", "Nodes"];
pub(crate) const DOWNNODES_KEYS: &[&str] = &["DownNodes", "Reason", "State"];

/// Resolves a NodeSet line against the nodes already known.
pub(crate) fn node_set(
    pairs: &[Pair],
    loc: &SourceLoc,
    nodes: &[NodeConf],
    warnings: &mut Vec<ConfWarning>,
) -> Result<NodeSet, ConfError> {
    let attrs = record_attrs(
        pairs,
        NODESET_KEYS,
        &[("Features", "Feature")],
        loc,
        warnings,
    );
    let get = |k: &str| attrs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let name = Field::new("NodeSet", get("NodeSet").unwrap_or(""), loc)
        .string()
        .ok_or_else(|| ConfError::MissingName {
            loc: loc.clone(),
            line_key: "NodeSet",
        })?;
    let feature = get("Feature").and_then(|v| Field::new("Feature", v, loc).string());
    let mut members: Vec<String> = Vec::new();
    if let Some(f) = &feature {
        members.extend(
            nodes
                .iter()
                .filter(|n| n.features.iter().any(|x| x == f))
                .map(|n| n.name.clone()),
        );
    }
    if let Some(v) = get("Nodes") {
        let listed = if v.trim().eq_ignore_ascii_case("ALL") {
            nodes.iter().map(|n| n.name.clone()).collect()
        } else {
            Field::new("Nodes", v, loc).hostlist()?
        };
        for n in listed {
            if !nodes.iter().any(|x| x.name == n) {
                return Err(ConfError::UnknownNode {
                    loc: loc.clone(),
                    what: "NodeSet",
                    owner: name,
                    node: n,
                });
            }
            if !members.contains(&n) {
                members.push(n);
            }
        }
    }
    Ok(NodeSet {
        loc: loc.clone(),
        name,
        feature,
        nodes: members,
    })
}

/// Reads a DownNodes line; the nodes must exist.
pub(crate) fn down_nodes(
    pairs: &[Pair],
    loc: &SourceLoc,
    nodes: &[NodeConf],
    warnings: &mut Vec<ConfWarning>,
) -> Result<DownNodes, ConfError> {
    let attrs = record_attrs(pairs, DOWNNODES_KEYS, &[], loc, warnings);
    let get = |k: &str| attrs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let list = get("DownNodes").unwrap_or("");
    if list.trim().is_empty() {
        return Err(ConfError::MissingName {
            loc: loc.clone(),
            line_key: "DownNodes",
        });
    }
    let names = Field::new("DownNodes", list, loc).hostlist()?;
    for n in &names {
        if !nodes.iter().any(|x| &x.name == n) {
            return Err(ConfError::UnknownNode {
                loc: loc.clone(),
                what: "DownNodes",
                owner: list.to_string(),
                node: n.clone(),
            });
        }
    }
    let state = match get("State") {
        Some(v) => {
            Field::new("State", v, loc).with(NodeConfState::EXPECTED, NodeConfState::parse)?
        }
        None => NodeConfState::Down,
    };
    let reason = get("Reason").and_then(|v| Field::new("Reason", v, loc).string());
    Ok(DownNodes {
        loc: loc.clone(),
        nodes: names,
        state,
        reason,
    })
}
