//! `sinfo`'s table: partitions and their nodes, grouped the way Slurm
//! groups them.
//!
//! A row stands for the nodes of one partition that show the same values in
//! every column that is not a node aggregate (node list, counts, A/I/O/T
//! totals). So the default view shows one row per partition and node state,
//! and `-N` shows one row per node.

use std::fmt::Write as _;

use slurm_common::hostlist;
use slurm_common::state::NodeBaseState;
use slurm_common::time::format_duration_squeue;
use slurm_proto::v1::{self, NodeInfo, PartitionInfo};

use super::scontrol::node_state;
use super::spec::{self, FormatError, Item, SortKey};
use super::{pad, Ctx};

/// The default layout.
pub const DEFAULT_FORMAT: &str = "%9P %.5a %.10l %.6D %.6t %N";
/// `sinfo -l`.
pub const LONG_FORMAT: &str = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
/// `sinfo -N`.
pub const NODE_FORMAT: &str = "%9N %.6D %.9P %.6t";
/// `sinfo -N -l`.
pub const NODE_LONG_FORMAT: &str = "%9N %.6D %.9P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E";
/// `sinfo -s`.
pub const SUMMARY_FORMAT: &str = "%9P %.5a %.10l %.16F %N";
/// `sinfo -R`.
pub const REASON_FORMAT: &str = "%20E %9U %19H %N";
/// `sinfo -R -l`.
pub const REASON_LONG_FORMAT: &str = "%20E %12U %19H %6t %N";

const CODES: &str = "aBbCcDdEeFfGgHhIiLlMmNnOoPpRrSsTtUuVwXYZz";

/// Whether `code` is a sinfo field.
pub fn is_code(code: char) -> bool {
    CODES.contains(code)
}

/// Parses an `-o`/`--format` string.
pub fn parse_format(spec: &str) -> Result<Vec<Item>, FormatError> {
    spec::parse(spec, "node", is_code)
}

/// Parses an `-S`/`--sort` list.
pub fn parse_sort(spec: &str) -> Result<Vec<SortKey>, FormatError> {
    spec::parse_sort(spec, is_code)
}

/// How rows are formed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct View {
    /// `-N`: one row per node and partition.
    pub node_oriented: bool,
    /// `-R`: only nodes that have a reason (down, drained, failing).
    pub reasons_only: bool,
    /// Print the header line.
    pub header: bool,
    /// `-l`: the date line above the header.
    pub date_line: bool,
}

fn header(code: char) -> &'static str {
    match code {
        'a' => "AVAIL",
        'B' => "MAX_CPUS_PER_NODE",
        'b' => "ACTIVE_FEATURES",
        'C' => "CPUS(A/I/O/T)",
        'c' => "CPUS",
        'D' => "NODES",
        'd' => "TMP_DISK",
        'E' => "REASON",
        'e' => "FREE_MEM",
        'F' => "NODES(A/I/O/T)",
        'f' => "AVAIL_FEATURES",
        'G' => "GRES",
        'g' => "GROUPS",
        'H' => "TIMESTAMP",
        'h' => "OVERSUBSCRIBE",
        'I' => "PRIO_JOB_FACTOR",
        'i' => "RESERVATION",
        'L' => "DEFAULTTIME",
        'l' => "TIMELIMIT",
        'M' => "PREEMPT_MODE",
        'm' => "MEMORY",
        'N' => "NODELIST",
        'n' => "HOSTNAMES",
        'O' => "CPU_LOAD",
        'o' => "NODE_ADDR",
        'P' | 'R' => "PARTITION",
        'p' => "PRIO_TIER",
        'r' => "ROOT",
        'S' => "ALLOCNODES",
        's' => "JOB_SIZE",
        'T' | 't' => "STATE",
        'U' | 'u' => "USER",
        'V' => "CLUSTER",
        'w' => "WEIGHT",
        'X' => "SOCKETS",
        'Y' => "CORES",
        'Z' => "THREADS",
        'z' => "S:C:T",
        _ => "",
    }
}

/// Fields whose value sums up the nodes of a row instead of telling rows
/// apart.
fn is_aggregate(code: char) -> bool {
    matches!(code, 'N' | 'D' | 'F' | 'C' | 'n' | 'o')
}

fn time_or(unix: i64, none: &str, ctx: &Ctx) -> String {
    if unix <= 0 {
        none.to_owned()
    } else {
        ctx.timestamp(unix)
    }
}

fn limit_sinfo(limit: Option<&v1::TimeLimit>, none: &str) -> String {
    match limit.and_then(|l| l.limit) {
        None => none.to_owned(),
        Some(v1::time_limit::Limit::Unlimited(_)) => "infinite".to_owned(),
        Some(v1::time_limit::Limit::Minutes(m)) => format_duration_squeue(u64::from(m) * 60),
    }
}

fn list_or_null(out: &mut String, items: &[String]) {
    if items.is_empty() {
        out.push_str("(null)");
    } else {
        out.push_str(&items.join(","));
    }
}

/// A node counts as "other" (the O of A/I/O/T) when it cannot run jobs.
fn is_other(node: &NodeInfo) -> bool {
    let state = node_state(node);
    !state.is_schedulable()
}

/// Appends the value of a per-row field, taken from the partition and the
/// row's first node.
fn write_value(out: &mut String, code: char, p: &PartitionInfo, node: &NodeInfo, ctx: &Ctx) {
    match code {
        'a' => out.push_str(
            match v1::PartitionState::try_from(p.state).unwrap_or(v1::PartitionState::Up) {
                v1::PartitionState::Unspecified | v1::PartitionState::Up => "up",
                v1::PartitionState::Down => "down",
                v1::PartitionState::Drain => "drain",
                v1::PartitionState::Inactive => "inact",
            },
        ),
        'B' => match p.max_cpus_per_node {
            Some(n) => {
                let _ = write!(out, "{n}");
            }
            None => out.push_str("UNLIMITED"),
        },
        'b' => list_or_null(out, &node.active_features),
        'c' => {
            let _ = write!(out, "{}", node.cpus);
        }
        'd' => {
            let _ = write!(out, "{}", node.tmp_disk_mb);
        }
        'E' => out.push_str(if node.reason.is_empty() {
            "none"
        } else {
            &node.reason
        }),
        'e' => match node.free_memory_mb {
            Some(m) => {
                let _ = write!(out, "{m}");
            }
            None => out.push_str("N/A"),
        },
        'f' => list_or_null(out, &node.features),
        'G' => list_or_null(out, &node.gres),
        'g' => {
            if p.allow_groups.is_empty() {
                out.push_str("all");
            } else {
                out.push_str(&p.allow_groups.join(","));
            }
        }
        'H' => out.push_str(&time_or(node.reason_time, "Unknown", ctx)),
        'h' => {
            use v1::over_subscribe::Mode;
            let os = p.oversubscribe.unwrap_or_default();
            match Mode::try_from(os.mode).unwrap_or(Mode::Unspecified) {
                Mode::Unspecified | Mode::No => out.push_str("NO"),
                Mode::Exclusive => out.push_str("EXCLUSIVE"),
                Mode::Yes => {
                    let _ = write!(out, "YES:{}", os.max_share);
                }
                Mode::Force => {
                    let _ = write!(out, "FORCE:{}", os.max_share);
                }
            }
        }
        'I' => {
            let _ = write!(out, "{}", p.priority_job_factor);
        }
        'i' => out.push_str("none"),
        'L' => out.push_str(&limit_sinfo(p.default_time.as_ref(), "n/a")),
        'l' => out.push_str(&limit_sinfo(p.max_time.as_ref(), "infinite")),
        'M' => out.push_str(if p.preempt_mode.is_empty() {
            "OFF"
        } else {
            &p.preempt_mode
        }),
        'm' => {
            let _ = write!(out, "{}", node.real_memory_mb);
        }
        'O' => match node.cpu_load_hundredths {
            Some(l) => {
                let _ = write!(out, "{}.{:02}", l / 100, l % 100);
            }
            None => out.push_str("N/A"),
        },
        'P' => {
            out.push_str(&p.name);
            if p.is_default {
                out.push('*');
            }
        }
        'p' => {
            let _ = write!(out, "{}", p.priority_tier);
        }
        'R' => out.push_str(&p.name),
        'r' => out.push_str(if p.root_only { "yes" } else { "no" }),
        'S' => {
            if p.allow_alloc_nodes.is_empty() {
                out.push_str("all");
            } else {
                out.push_str(&p.allow_alloc_nodes.join(","));
            }
        }
        's' => {
            let _ = write!(out, "{}-", p.min_nodes.max(1));
            match p.max_nodes {
                Some(n) => {
                    let _ = write!(out, "{n}");
                }
                None => out.push_str("infinite"),
            }
        }
        'T' => out.push_str(&node_state(node).sinfo_long()),
        't' => out.push_str(&node_state(node).sinfo_short()),
        'U' | 'u' => {
            if node.reason.is_empty() {
                out.push_str("Unknown");
            } else if node.reason_user.is_empty() {
                let _ = write!(out, "{}", node.reason_uid);
            } else {
                let _ = write!(out, "{}({})", node.reason_user, node.reason_uid);
            }
        }
        'V' => out.push_str("N/A"),
        'w' => {
            let _ = write!(out, "{}", node.weight);
        }
        'X' => {
            let _ = write!(out, "{}", node.sockets);
        }
        'Y' => {
            let _ = write!(out, "{}", node.cores_per_socket);
        }
        'Z' => {
            let _ = write!(out, "{}", node.threads_per_core);
        }
        'z' => {
            let _ = write!(
                out,
                "{}:{}:{}",
                node.sockets, node.cores_per_socket, node.threads_per_core
            );
        }
        _ => {}
    }
}

/// Appends an aggregate field over the nodes of a row.
fn write_aggregate(out: &mut String, code: char, nodes: &[&NodeInfo]) {
    match code {
        'N' => out.push_str(&hostlist::compress(nodes.iter().map(|n| n.name.as_str()))),
        'n' => out.push_str(&hostlist::compress(
            nodes.iter().map(|n| n.node_hostname.as_str()),
        )),
        'o' => out.push_str(&hostlist::compress(
            nodes.iter().map(|n| n.node_addr.as_str()),
        )),
        'D' => {
            let _ = write!(out, "{}", nodes.len());
        }
        'F' => {
            let (mut a, mut i, mut o) = (0usize, 0usize, 0usize);
            for n in nodes {
                let base = node_state(n).base;
                if is_other(n) {
                    o += 1;
                } else if matches!(base, NodeBaseState::Allocated | NodeBaseState::Mixed) {
                    a += 1;
                } else {
                    i += 1;
                }
            }
            let _ = write!(out, "{a}/{i}/{o}/{}", nodes.len());
        }
        'C' => {
            let (mut a, mut i, mut o, mut t) = (0u64, 0u64, 0u64, 0u64);
            for n in nodes {
                let total = u64::from(n.cpus);
                t += total;
                if is_other(n) {
                    o += total;
                } else {
                    let alloc = u64::from(n.cpus_allocated).min(total);
                    a += alloc;
                    i += total - alloc;
                }
            }
            let _ = write!(out, "{a}/{i}/{o}/{t}");
        }
        _ => {}
    }
}

/// Slurm's numbers for base node states, by which `-t` sorts rows.
fn state_rank(node: &NodeInfo) -> u8 {
    match node_state(node).base {
        NodeBaseState::Unknown => 0,
        NodeBaseState::Down => 1,
        NodeBaseState::Idle => 2,
        NodeBaseState::Allocated => 3,
        NodeBaseState::Error => 4,
        NodeBaseState::Mixed => 5,
        NodeBaseState::Future => 6,
    }
}

/// Whether `node` is shown in `-R`: it carries a reason or cannot run jobs.
fn has_reason(node: &NodeInfo) -> bool {
    !node.reason.is_empty() || is_other(node)
}

struct Row<'a> {
    part_index: usize,
    partition: &'a PartitionInfo,
    nodes: Vec<&'a NodeInfo>,
    key: String,
}

/// Renders sinfo's table. `partitions` and `nodes` are in configuration
/// order; a node belongs to the partitions it lists.
pub fn render(
    partitions: &[PartitionInfo],
    nodes: &[NodeInfo],
    items: &[Item],
    view: View,
    ctx: &Ctx,
) -> String {
    let mut rows: Vec<Row<'_>> = Vec::new();
    let mut scratch = String::new();
    let sorts_by_state = items.iter().any(|i| {
        matches!(
            i,
            Item::Field {
                code: 't' | 'T',
                ..
            }
        )
    });
    for (part_index, p) in partitions.iter().enumerate() {
        let first_row = rows.len();
        for node in nodes.iter().filter(|n| n.partitions.contains(&p.name)) {
            if view.reasons_only && !has_reason(node) {
                continue;
            }
            scratch.clear();
            if view.node_oriented {
                scratch.push_str(&node.name);
            }
            for item in items {
                if let Item::Field { code, .. } = item {
                    if !is_aggregate(*code) {
                        write_value(&mut scratch, *code, p, node, ctx);
                        scratch.push('\u{1f}');
                    }
                }
            }
            match rows[first_row..].iter_mut().find(|r| r.key == scratch) {
                Some(row) => row.nodes.push(node),
                None => rows.push(Row {
                    part_index,
                    partition: p,
                    nodes: vec![node],
                    key: scratch.clone(),
                }),
            }
        }
        if !view.node_oriented && sorts_by_state {
            rows[first_row..].sort_by_key(|r| std::cmp::Reverse(state_rank(r.nodes[0])));
        }
    }
    if view.node_oriented {
        // One row per node: nodes in configuration order, each with its
        // partitions in order.
        let position = |name: &str| nodes.iter().position(|n| n.name == name);
        rows.sort_by_key(|r| (position(&r.nodes[0].name), r.part_index));
    }
    if view.reasons_only {
        // -R lists each reason once however many partitions share its nodes.
        let mut seen: Vec<String> = Vec::new();
        let mut merged: Vec<Row<'_>> = Vec::new();
        for row in rows {
            let mut key = String::new();
            for item in items {
                if let Item::Field { code, .. } = item {
                    if !is_aggregate(*code) {
                        write_value(&mut key, *code, row.partition, row.nodes[0], ctx);
                        key.push('\u{1f}');
                    }
                }
            }
            match seen.iter().position(|k| *k == key) {
                Some(i) => {
                    for n in row.nodes {
                        if !merged[i].nodes.iter().any(|m| m.name == n.name) {
                            merged[i].nodes.push(n);
                        }
                    }
                }
                None => {
                    seen.push(key);
                    merged.push(row);
                }
            }
        }
        rows = merged;
    }

    let mut out = String::with_capacity(64 + rows.len() * 80);
    if view.date_line {
        out.push_str(&ctx.ctime_now());
        out.push('\n');
    }
    if view.header {
        for item in items {
            match item {
                Item::Literal(text) => out.push_str(text),
                Item::Field { code, width, right } => pad(&mut out, header(*code), *width, *right),
            }
        }
        out.push('\n');
    }
    for row in &rows {
        for item in items {
            match item {
                Item::Literal(text) => out.push_str(text),
                Item::Field { code, width, right } => {
                    scratch.clear();
                    if is_aggregate(*code) {
                        write_aggregate(&mut scratch, *code, &row.nodes);
                    } else {
                        write_value(&mut scratch, *code, row.partition, row.nodes[0], ctx);
                    }
                    pad(&mut out, &scratch, *width, *right);
                }
            }
        }
        out.push('\n');
    }
    out
}
