//! `sinfo`'s table: partitions and their nodes, grouped the way Slurm
//! groups them.
//!
//! A row stands for the nodes of one partition that show the same values in
//! every column that is not a node aggregate (node list, counts, A/I/O/T
//! totals). So the default view shows one row per partition and node state,
//! and `-N` shows one row per node.
//!
//! Rows are then ordered by the `-S` keys, read character by character as
//! sinfo reads them (`#P,-t` by default, `N` with `-N`), each key a stable
//! sort so the first key decides first. `-O` names map onto the same field
//! codes as `-o` letters; the few `-O` fields with no letter get codes from
//! Unicode's private-use area, which no `-o` string can select.

use std::cmp::Ordering;
use std::fmt::Write as _;

use slurm_common::hostlist;
use slurm_common::state::NodeBaseState;
use slurm_common::time::format_duration_squeue;
use slurm_proto::v1::{self, NodeInfo, PartitionInfo};

use super::scontrol::node_state;
use super::spec::{self, FormatError, Item, LongSize};
use super::{pad, write_scaled, BaseUnit, Ctx, Units};

/// The default layout.
pub const DEFAULT_FORMAT: &str = "%9P %.5a %.10l %.6D %.6t %N";
/// `sinfo -l`.
pub const LONG_FORMAT: &str = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
/// `sinfo -N`.
pub const NODE_FORMAT: &str = "%9N %.6D %.9P %6t";
/// `sinfo -N -l`.
pub const NODE_LONG_FORMAT: &str = "%9N %.6D %.9P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E";
/// `sinfo -s`.
pub const SUMMARY_FORMAT: &str = "%9P %.5a %.10l %.16F %N";
/// `sinfo -R`.
pub const REASON_FORMAT: &str = "%20E %9u %19H %N";
/// `sinfo -R -l`.
pub const REASON_LONG_FORMAT: &str = "%20E %12U %19H %6t %N";

/// Slurm 22.05's `-o` letters (no `%i`: its reservation field came later).
const CODES: &str = "AaBbCcDdEeFfGgHhILlMmNnOoPpRrSsTtUuVvwXYZz";

/// `-O allocmem`: memory allocated on the node, MB.
pub const ALLOC_MEM: char = '\u{e000}';
/// `-O port`: the slurmd port.
pub const PORT: char = '\u{e001}';
/// `-O comment`: the node's comment.
pub const COMMENT: char = '\u{e002}';
/// `-O gresused`: generic resources in use.
pub const GRES_USED: char = '\u{e003}';
/// `-O statecomplete`: the base state and every flag (`idle+drain`).
pub const STATE_COMPLETE: char = '\u{e004}';
/// `-O extra`: the node's extra data, which this controller does not keep.
pub const EXTRA: char = '\u{e005}';

/// Whether `code` is a sinfo field.
pub fn is_code(code: char) -> bool {
    CODES.contains(code)
}

/// Parses an `-o`/`--format` string. `%all` (any case) is every field,
/// separated by `|`, as in Slurm.
pub fn parse_format(spec: &str) -> Result<Vec<Item>, FormatError> {
    let (items, unknown) = parse_format_lenient(spec);
    match unknown.into_iter().next() {
        Some(code) => Err(FormatError::UnknownCode { what: "node", code }),
        None => Ok(items),
    }
}

/// [`parse_format`] as sinfo reads `-o`: unknown codes are kept as text
/// and returned, to be reported.
pub fn parse_format_lenient(spec: &str) -> (Vec<Item>, Vec<String>) {
    if spec.eq_ignore_ascii_case("%all") {
        return (all_fields(), Vec::new());
    }
    spec::parse_lenient(spec, is_code)
}

/// The fields of `%all` and `-O all`: every lower-case letter, then every
/// upper-case one, each whole and followed by Slurm's separator (`|` after
/// a lower-case field, ` |` after an upper-case one, a blank after the
/// last).
fn all_fields() -> Vec<Item> {
    let mut items = Vec::new();
    for code in ('a'..='z').chain('A'..='Z').filter(|c| is_code(*c)) {
        items.push(Item::Field {
            code,
            width: None,
            right: false,
        });
        let separator = match code {
            'Z' => " ",
            c if c.is_ascii_uppercase() => " |",
            _ => "|",
        };
        items.push(Item::Literal(separator.to_owned()));
    }
    items
}

/// `-O` names (compared without regard to case) and the field each shows.
const LONG_NAMES: &[(&str, char)] = &[
    ("allocmem", ALLOC_MEM),
    ("allocnodes", 'S'),
    ("available", 'a'),
    ("cluster", 'V'),
    ("comment", COMMENT),
    ("cores", 'Y'),
    ("cpus", 'c'),
    ("cpusload", 'O'),
    ("cpusstate", 'C'),
    ("defaulttime", 'L'),
    ("disk", 'd'),
    ("extra", EXTRA),
    ("features", 'f'),
    ("features_act", 'b'),
    ("freemem", 'e'),
    ("gres", 'G'),
    ("gresused", GRES_USED),
    ("groups", 'g'),
    ("maxcpuspernode", 'B'),
    ("memory", 'm'),
    ("nodeaddr", 'o'),
    ("nodeai", 'A'),
    ("nodeaiot", 'F'),
    ("nodehost", 'n'),
    ("nodelist", 'N'),
    ("nodes", 'D'),
    ("oversubscribe", 'h'),
    ("partition", 'P'),
    ("partitionname", 'R'),
    ("port", PORT),
    ("preemptmode", 'M'),
    ("priorityjobfactor", 'I'),
    ("prioritytier", 'p'),
    ("reason", 'E'),
    ("root", 'r'),
    ("share", 'h'),
    ("size", 's'),
    ("socketcorethread", 'z'),
    ("sockets", 'X'),
    ("statecompact", 't'),
    ("statecomplete", STATE_COMPLETE),
    ("statelong", 'T'),
    ("threads", 'Z'),
    ("time", 'l'),
    ("timestamp", 'H'),
    ("user", 'u'),
    ("userlong", 'U'),
    ("version", 'v'),
    ("weight", 'w'),
];

/// Width of a `-O` field given without one.
const LONG_DEFAULT_WIDTH: usize = 20;

/// What `-O` asked for: the columns, and the names sinfo does not know.
/// Slurm reports each unknown name (`Invalid job format specification:
/// NAME`, in its words) and goes on without that column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LongFormat {
    pub items: Vec<Item>,
    pub unknown: Vec<String>,
}

/// Parses an `-O`/`--Format` list: comma-separated `name[:[.][size][suffix]]`
/// (see [`spec::long_fields`]). Without `:` a field is 20 wide and
/// left-justified; `:.` right-justifies; a size of 0 (or `name:`) is the
/// whole value; a negative size or an unknown name leaves the column out,
/// as sinfo does, but not its suffix, which follows the column in every
/// line; `all` is `%all`.
pub fn parse_long_format(spec: &str) -> LongFormat {
    let mut format = LongFormat::default();
    for field in spec::long_fields(spec) {
        if field.name.eq_ignore_ascii_case("all") {
            format.items.extend(all_fields());
            continue;
        }
        let lower = field.name.to_ascii_lowercase();
        let right = field.right;
        match LONG_NAMES.iter().find(|(n, _)| *n == lower) {
            // An unknown name leaves no column, but its suffix.
            None => format.unknown.push(field.name.to_owned()),
            Some(&(_, code)) => match field.size {
                LongSize::Default => format.items.push(Item::Field {
                    code,
                    width: Some(LONG_DEFAULT_WIDTH),
                    right,
                }),
                LongSize::Width(width) => format.items.push(Item::Field { code, width, right }),
                LongSize::Negative => {}
            },
        }
        if !field.suffix.is_empty() {
            format.items.push(Item::Literal(field.suffix.to_owned()));
        }
    }
    format
}

/// One `-S` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub code: char,
    /// `-`: largest first.
    pub descending: bool,
    /// `#P`: partitions in configuration order instead of by name.
    pub config_order: bool,
}

/// The order without `-S`: partitions as configured, then node state
/// (highest first).
pub const DEFAULT_SORT: &str = "#P,-t";
/// The order of `-N` without `-S`: node name.
pub const NODE_SORT: &str = "N";

/// The letters `-S` sorts by.
const SORT_CODES: &str = "aAcdDEfFghlmMnNoOpPrRstTwXYZz";

/// Reads an `-S`/`--sort` list as sinfo does: every sort letter is a key,
/// made descending by a `-` or configuration-ordered by a `#` just before
/// it; commas, `+` and any other character are passed over. Nothing is
/// refused, as in Slurm.
pub fn parse_sort(spec: &str) -> Vec<SortKey> {
    let mut keys = Vec::new();
    let mut previous = None;
    for c in spec.chars() {
        if SORT_CODES.contains(c) {
            keys.push(SortKey {
                code: c,
                descending: previous == Some('-'),
                config_order: previous == Some('#'),
            });
        }
        previous = Some(c);
    }
    keys
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
    /// How CPU counts, node counts of `JOB_SIZE`, sockets, cores, threads,
    /// ports and partition priorities are shown (`--noconvert`: as kept).
    /// Memory, disk and weights are never scaled, as in Slurm.
    pub units: Units,
}

fn header(code: char) -> &'static str {
    match code {
        'a' => "AVAIL",
        'A' => "NODES(A/I)",
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
        'v' => "VERSION",
        'w' => "WEIGHT",
        'X' => "SOCKETS",
        'Y' => "CORES",
        'Z' => "THREADS",
        'z' => "S:C:T",
        ALLOC_MEM => "ALLOCMEM",
        PORT => "PORT",
        COMMENT => "COMMENT",
        GRES_USED => "GRES_USED",
        STATE_COMPLETE => "STATECOMPLETE",
        EXTRA => "EXTRA",
        _ => "",
    }
}

/// Fields whose value sums up the nodes of a row instead of telling rows
/// apart.
fn is_aggregate(code: char) -> bool {
    matches!(code, 'N' | 'D' | 'F' | 'A' | 'C' | 'n' | 'o')
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

/// `JOB_SIZE`: the partition's node limits, `1-infinite`, `2-8`, or one
/// number when both are the same. As in Slurm, a minimum of 0 shows as 1
/// unless the maximum is 0 too.
fn write_job_size(out: &mut String, p: &PartitionInfo, units: Units) {
    let count = |out: &mut String, n: u32| write_scaled(out, n.into(), BaseUnit::Count, units);
    let min = if p.min_nodes < 1 && p.max_nodes != Some(0) {
        1
    } else {
        p.min_nodes
    };
    match p.max_nodes {
        Some(max) if max == min => count(out, max),
        Some(max) => {
            count(out, min);
            out.push('-');
            count(out, max);
        }
        None => {
            count(out, min);
            out.push_str("-infinite");
        }
    }
}

/// Appends the value of a per-row field, taken from the partition and the
/// row's first node.
fn write_value(
    out: &mut String,
    code: char,
    p: &PartitionInfo,
    node: &NodeInfo,
    ctx: &Ctx,
    units: Units,
) {
    let count = |out: &mut String, n: u32| write_scaled(out, n.into(), BaseUnit::Count, units);
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
        // Set to nothing by an update: empty, not (null).
        'b' if node.active_features_cleared => {}
        'b' => list_or_null(out, &node.active_features),
        'c' => count(out, node.cpus),
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
        'I' => count(out, p.priority_job_factor),
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
        'p' => count(out, p.priority_tier),
        'R' => out.push_str(&p.name),
        'r' => out.push_str(if p.root_only { "yes" } else { "no" }),
        'S' => {
            if p.allow_alloc_nodes.is_empty() {
                out.push_str("all");
            } else {
                out.push_str(&p.allow_alloc_nodes.join(","));
            }
        }
        's' => write_job_size(out, p, units),
        'T' => out.push_str(&node_state(node).sinfo_long()),
        't' => out.push_str(&node_state(node).sinfo_short()),
        // %u: who set the reason; %U: the name and the uid.
        'U' | 'u' => {
            if node.reason.is_empty() {
                out.push_str("Unknown");
            } else if node.reason_user.is_empty() {
                let _ = write!(out, "{}", node.reason_uid);
            } else if code == 'u' {
                out.push_str(&node.reason_user);
            } else {
                let _ = write!(out, "{}({})", node.reason_user, node.reason_uid);
            }
        }
        'V' => out.push_str("N/A"),
        'v' => out.push_str(if node.version.is_empty() {
            "N/A"
        } else {
            &node.version
        }),
        'w' => {
            let _ = write!(out, "{}", node.weight);
        }
        'X' => count(out, node.sockets),
        'Y' => count(out, node.cores_per_socket),
        'Z' => count(out, node.threads_per_core),
        'z' => {
            count(out, node.sockets);
            out.push(':');
            count(out, node.cores_per_socket);
            out.push(':');
            count(out, node.threads_per_core);
        }
        ALLOC_MEM => {
            let _ = write!(out, "{}", node.memory_allocated_mb);
        }
        PORT => count(out, node.port),
        COMMENT => out.push_str(super::or_null(&node.comment)),
        EXTRA => out.push_str("(null)"),
        GRES_USED => list_or_null(out, &node.gres_used),
        STATE_COMPLETE => out.push_str(&node_state(node).display_long().to_ascii_lowercase()),
        _ => {}
    }
}

/// A default partition's name too long for its column still ends in `*`:
/// Slurm writes the mark over the last character that fits.
fn keep_default_mark(value: &mut String, code: char, p: &PartitionInfo, width: Option<usize>) {
    let Some(width) = width.filter(|w| *w > 0) else {
        return;
    };
    if code != 'P' || !p.is_default || value.chars().count() <= width {
        return;
    }
    let kept: String = value.chars().take(width - 1).collect();
    *value = kept;
    value.push('*');
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
            let (a, i, o) = node_counts(nodes);
            let _ = write!(out, "{a}/{i}/{o}/{}", nodes.len());
        }
        'A' => {
            let (a, i, _) = node_counts(nodes);
            let _ = write!(out, "{a}/{i}");
        }
        'C' => {
            // CPUs in use count as allocated even on a draining node; the
            // rest are idle, or other where the node takes no new job.
            let (mut a, mut i, mut o, mut t) = (0u64, 0u64, 0u64, 0u64);
            for n in nodes {
                let total = u64::from(n.cpus);
                t += total;
                let alloc = u64::from(n.cpus_allocated).min(total);
                a += alloc;
                if is_other(n) {
                    o += total - alloc;
                } else {
                    i += total - alloc;
                }
            }
            let _ = write!(out, "{a}/{i}/{o}/{t}");
        }
        _ => {}
    }
}

/// Allocated, idle and other nodes (the A, I and O of A/I/O/T). A node
/// running jobs is allocated whatever else it is (a draining node, as in
/// Slurm); one that runs none and takes none is other.
fn node_counts(nodes: &[&NodeInfo]) -> (usize, usize, usize) {
    let (mut a, mut i, mut o) = (0, 0, 0);
    for n in nodes {
        let base = node_state(n).base;
        if matches!(base, NodeBaseState::Allocated | NodeBaseState::Mixed) {
            a += 1;
        } else if is_other(n) {
            o += 1;
        } else {
            i += 1;
        }
    }
    (a, i, o)
}

/// A node's state as Slurm's number (base state plus flag bits), by which
/// `-t` sorts rows: a drained idle node sorts above a mixed one.
fn state_rank(node: &NodeInfo) -> u32 {
    use slurm_common::state::NodeFlag as F;
    let state = node_state(node);
    let base = match state.base {
        NodeBaseState::Unknown => 0,
        NodeBaseState::Down => 1,
        NodeBaseState::Idle => 2,
        NodeBaseState::Allocated => 3,
        NodeBaseState::Error => 4,
        NodeBaseState::Mixed => 5,
        NodeBaseState::Future => 6,
    };
    state
        .flags
        .iter()
        .map(|flag| match flag {
            F::Reserved => 0x20,
            F::Cloud => 0x80,
            F::Drain => 0x200,
            F::Completing => 0x400,
            F::NotResponding => 0x800,
            F::PoweredDown => 0x1000,
            F::Fail => 0x2000,
            F::PoweringUp => 0x4000,
            F::Maint => 0x8000,
            F::RebootRequested => 0x1_0000,
            F::PoweringDown => 0x4_0000,
            F::DynamicFuture => 0x8_0000,
            F::RebootIssued => 0x10_0000,
            F::Planned => 0x20_0000,
            F::InvalidReg => 0x40_0000,
            F::PowerDown => 0x80_0000,
            F::DynamicNorm => 0x400_0000,
        })
        .fold(base, |acc, bit| acc | bit)
}

/// Whether `node` is shown in `-R`: it carries a reason or cannot run jobs.
/// Whether `sinfo -R` lists the node: it has a reason, or is down,
/// draining or failing (a node that only does not respond is not listed,
/// as in Slurm).
fn has_reason(node: &NodeInfo) -> bool {
    use slurm_common::state::{NodeBaseState, NodeFlag};
    let state = node_state(node);
    !node.reason.is_empty()
        || state.base == NodeBaseState::Down
        || state.has(NodeFlag::Drain)
        || state.has(NodeFlag::Fail)
}

struct Row<'a> {
    part_index: usize,
    partition: &'a PartitionInfo,
    /// The row's nodes; for a partition none of whose nodes is shown, a
    /// blank node that stands for none (see `empty`).
    nodes: Vec<&'a NodeInfo>,
    key: String,
    /// The partition's line when it shows no node: Slurm still lists the
    /// partition, with 0 nodes, state `n/a` and blank node values.
    empty: bool,
}

/// The node values of a partition's line that shows no node, as Slurm
/// 22.05 prints them: numbers 0, lists `(null)`, state `n/a`, and the
/// reason set by root (uid 0) at an unknown time.
fn write_blank_node_value(
    out: &mut String,
    code: char,
    p: &PartitionInfo,
    blank: &NodeInfo,
    ctx: &Ctx,
    units: Units,
) {
    match code {
        't' | 'T' => out.push_str("n/a"),
        'u' => out.push_str("root"),
        'U' => out.push_str("root(0)"),
        _ => write_value(out, code, p, blank, ctx, units),
    }
}

/// Compares host names as sinfo does: at the first differing character,
/// two digits compare as the numbers that start there (`n9` < `n10`),
/// anything else as plain strings.
pub fn compare_names(a: &str, b: &str) -> Ordering {
    let number = |s: &str| -> u64 {
        s.bytes().take_while(u8::is_ascii_digit).fold(0u64, |n, d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        })
    };
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let Some(i) = x.iter().zip(y).position(|(p, q)| p != q) else {
        return x.len().cmp(&y.len());
    };
    if x[i].is_ascii_digit() && y[i].is_ascii_digit() {
        number(&a[i..]).cmp(&number(&b[i..]))
    } else {
        a.cmp(b)
    }
}

/// The row's first name in name order, for the `N`, `n` and `o` keys.
fn first_name<'n>(nodes: &[&'n NodeInfo], name: impl Fn(&'n NodeInfo) -> &'n str) -> &'n str {
    nodes
        .iter()
        .map(|n| name(n))
        .min_by(|a, b| compare_names(a, b))
        .unwrap_or("")
}

/// The smallest of a number over the row's nodes (Slurm's `min_*`).
fn min_of(nodes: &[&NodeInfo], value: impl Fn(&NodeInfo) -> u64) -> u64 {
    nodes.iter().map(|n| value(n)).min().unwrap_or(0)
}

/// Slurm's partition state numbers, by which `a` sorts.
fn avail_rank(p: &PartitionInfo) -> u8 {
    match v1::PartitionState::try_from(p.state).unwrap_or(v1::PartitionState::Up) {
        v1::PartitionState::Inactive => 0,
        v1::PartitionState::Down => 1,
        v1::PartitionState::Drain => 2,
        v1::PartitionState::Unspecified | v1::PartitionState::Up => 3,
    }
}

/// Slurm's `max_share` number, by which `h` sorts.
fn share_rank(p: &PartitionInfo) -> u32 {
    use v1::over_subscribe::Mode;
    let os = p.oversubscribe.unwrap_or_default();
    match Mode::try_from(os.mode).unwrap_or(Mode::Unspecified) {
        Mode::Exclusive => 0,
        Mode::Unspecified | Mode::No => 1,
        Mode::Yes => os.max_share,
        Mode::Force => os.max_share | 0x8000,
    }
}

/// The text after a reason's last `@` (its time stamp), by which `E` sorts.
fn reason_time_text(node: &NodeInfo) -> &str {
    node.reason
        .rsplit_once('@')
        .map_or(node.reason.as_str(), |(_, t)| t)
}

/// Compares two rows by one `-S` key, ascending.
fn compare_rows(x: &Row<'_>, y: &Row<'_>, key: SortKey) -> Ordering {
    let (p, q) = (x.partition, y.partition);
    let (m, n) = (x.nodes[0], y.nodes[0]);
    let minimum = |f: fn(&NodeInfo) -> u64| min_of(&x.nodes, f).cmp(&min_of(&y.nodes, f));
    match key.code {
        'a' => avail_rank(p).cmp(&avail_rank(q)),
        'A' | 'F' => node_counts(&x.nodes).0.cmp(&node_counts(&y.nodes).0),
        'c' => minimum(|n| u64::from(n.cpus)),
        'd' => minimum(|n| n.tmp_disk_mb),
        'D' => x.nodes.len().cmp(&y.nodes.len()),
        'E' => reason_time_text(m).cmp(reason_time_text(n)),
        'f' => m.features.join(",").cmp(&n.features.join(",")),
        'g' => p.allow_groups.join(",").cmp(&q.allow_groups.join(",")),
        'h' => share_rank(p).cmp(&share_rank(q)),
        'l' => {
            let minutes =
                |p: &PartitionInfo| super::limit_minutes(p.max_time.as_ref()).unwrap_or(u32::MAX);
            minutes(p).cmp(&minutes(q))
        }
        'm' => minimum(|n| n.real_memory_mb),
        'M' => p.preempt_mode.cmp(&q.preempt_mode),
        'n' => compare_names(
            first_name(&x.nodes, |n| n.node_hostname.as_str()),
            first_name(&y.nodes, |n| n.node_hostname.as_str()),
        ),
        'N' => compare_names(
            first_name(&x.nodes, |n| n.name.as_str()),
            first_name(&y.nodes, |n| n.name.as_str()),
        ),
        'o' => compare_names(
            first_name(&x.nodes, |n| n.node_addr.as_str()),
            first_name(&y.nodes, |n| n.node_addr.as_str()),
        ),
        'O' => minimum(|n| n.cpu_load_hundredths.map_or(u64::MAX, u64::from)),
        'p' => p.priority_tier.cmp(&q.priority_tier),
        'P' if key.config_order => x.part_index.cmp(&y.part_index),
        'P' => p.name.cmp(&q.name),
        'r' => p.root_only.cmp(&q.root_only),
        'R' => m.reason.cmp(&n.reason),
        's' => {
            let size = |p: &PartitionInfo| match p.max_nodes {
                Some(max) => u64::from(max) + u64::from(p.min_nodes),
                None => u64::MAX,
            };
            size(p).cmp(&size(q))
        }
        't' | 'T' => state_rank(m).cmp(&state_rank(n)),
        'w' => minimum(|n| u64::from(n.weight)),
        'X' => minimum(|n| u64::from(n.sockets)),
        'Y' => minimum(|n| u64::from(n.cores_per_socket)),
        'Z' => minimum(|n| u64::from(n.threads_per_core)),
        'z' => minimum(|n| u64::from(n.sockets))
            .then_with(|| minimum(|n| u64::from(n.cores_per_socket)))
            .then_with(|| minimum(|n| u64::from(n.threads_per_core))),
        _ => Ordering::Equal,
    }
}

/// Orders rows by `keys`, the first key deciding first; rows equal on
/// every key keep the order they were found in.
fn sort_rows(rows: &mut [Row<'_>], keys: &[SortKey]) {
    rows.sort_by(|x, y| {
        keys.iter()
            .map(|&key| {
                let o = compare_rows(x, y, key);
                if key.descending {
                    o.reverse()
                } else {
                    o
                }
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
}

/// Renders sinfo's table in its default order (`#P,-t`, or `N` with
/// `-N`). `partitions` and `nodes` are in configuration order; a node
/// belongs to the partitions it lists.
pub fn render(
    partitions: &[PartitionInfo],
    nodes: &[NodeInfo],
    items: &[Item],
    view: View,
    ctx: &Ctx,
) -> String {
    let sort = parse_sort(if view.node_oriented {
        NODE_SORT
    } else {
        DEFAULT_SORT
    });
    render_sorted(partitions, nodes, items, view, &sort, ctx)
}

/// [`render`] with the rows in the order of `sort` (`-S`).
pub fn render_sorted(
    partitions: &[PartitionInfo],
    nodes: &[NodeInfo],
    items: &[Item],
    view: View,
    sort: &[SortKey],
    ctx: &Ctx,
) -> String {
    let blank = NodeInfo {
        free_memory_mb: Some(0),
        cpu_load_hundredths: Some(0),
        ..NodeInfo::default()
    };
    // A partition none of whose nodes is shown still has a row of its own,
    // as in Slurm, when the report shows partitions (`%P`, `%R`), with -R
    // as without.
    let shows_partitions = items.iter().any(|i| {
        matches!(
            i,
            Item::Field {
                code: 'P' | 'R',
                ..
            }
        )
    });
    let mut rows: Vec<Row<'_>> = Vec::new();
    let mut scratch = String::new();
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
                        write_value(&mut scratch, *code, p, node, ctx, view.units);
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
                    empty: false,
                }),
            }
        }
        if rows.len() == first_row && !view.node_oriented && shows_partitions {
            rows.push(Row {
                part_index,
                partition: p,
                nodes: vec![&blank],
                key: String::new(),
                empty: true,
            });
        }
    }
    sort_rows(&mut rows, sort);
    if view.reasons_only {
        // -R lists each reason once however many partitions share its nodes.
        let mut seen: Vec<String> = Vec::new();
        let mut merged: Vec<Row<'_>> = Vec::new();
        for row in rows {
            let mut key = String::new();
            for item in items {
                if let Item::Field { code, .. } = item {
                    if !is_aggregate(*code) {
                        write_value(
                            &mut key,
                            *code,
                            row.partition,
                            row.nodes[0],
                            ctx,
                            view.units,
                        );
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
                        let nodes: &[&NodeInfo] = if row.empty { &[] } else { &row.nodes };
                        write_aggregate(&mut scratch, *code, nodes);
                    } else if row.empty {
                        write_blank_node_value(
                            &mut scratch,
                            *code,
                            row.partition,
                            &blank,
                            ctx,
                            view.units,
                        );
                    } else {
                        write_value(
                            &mut scratch,
                            *code,
                            row.partition,
                            row.nodes[0],
                            ctx,
                            view.units,
                        );
                    }
                    keep_default_mark(&mut scratch, *code, row.partition, *width);
                    pad(&mut out, &scratch, *width, *right);
                }
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ctx() -> Ctx {
        Ctx::utc(1_795_244_461)
    }

    fn node(name: &str, parts: &[&str], alloc: u32, mem: u64) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            node_hostname: format!("h-{name}"),
            node_addr: format!("10.0.0.{}", name.trim_start_matches(char::is_alphabetic)),
            port: 6818,
            version: "22.05.8".into(),
            state: match alloc {
                0 => v1::NodeState::Idle,
                4 => v1::NodeState::Allocated,
                _ => v1::NodeState::Mixed,
            } as i32,
            cpus: 4,
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 1,
            real_memory_mb: mem,
            memory_allocated_mb: u64::from(alloc) * 1000,
            weight: 1,
            cpus_allocated: alloc,
            partitions: parts.iter().map(|p| (*p).to_owned()).collect(),
            ..NodeInfo::default()
        }
    }

    fn partition(name: &str, default: bool) -> PartitionInfo {
        PartitionInfo {
            name: name.into(),
            state: v1::PartitionState::Up as i32,
            is_default: default,
            ..PartitionInfo::default()
        }
    }

    /// `batch` (default) then `debug`, in that configuration order;
    /// n10 is drained.
    fn cluster() -> (Vec<PartitionInfo>, Vec<NodeInfo>) {
        let mut drained = node("n10", &["batch"], 0, 8000);
        drained.state_flags = vec![v1::NodeStateFlag::Drain as i32];
        drained.reason = "bad disk".into();
        let nodes = vec![
            node("n2", &["batch", "debug"], 4, 8000),
            node("n9", &["batch"], 2, 16000),
            drained,
            node("n1", &["batch", "debug"], 0, 8000),
        ];
        (
            vec![partition("batch", true), partition("debug", false)],
            nodes,
        )
    }

    fn table(fmt: &str, sort: Option<&str>, node_oriented: bool) -> String {
        let (parts, nodes) = cluster();
        let items = parse_format(fmt).unwrap();
        let view = View {
            node_oriented,
            header: false,
            ..View::default()
        };
        match sort {
            None => render(&parts, &nodes, &items, view, &ctx()),
            Some(s) => render_sorted(&parts, &nodes, &items, view, &parse_sort(s), &ctx()),
        }
    }

    #[test]
    fn counts_scale_unless_noconvert_and_sizes_never_do() {
        let mut big = node("n1", &["big"], 0, 2048);
        big.cpus = 1024;
        big.sockets = 2;
        big.cores_per_socket = 512;
        big.threads_per_core = 1;
        big.tmp_disk_mb = 1024;
        big.free_memory_mb = Some(4096);
        big.weight = 1024;
        big.port = 6144;
        let mut part = partition("big", false);
        part.min_nodes = 1;
        part.max_nodes = Some(1536);
        part.priority_tier = 2048;
        part.priority_job_factor = 1024;
        let items = parse_format("%c|%s|%z|%X|%Y|%Z|%p|%I|%m|%d|%e|%w|").unwrap();
        let items = [items, parse_long_format("port:5").items].concat();
        let table = |units: Units| {
            let view = View {
                node_oriented: true,
                units,
                ..View::default()
            };
            render(&[part.clone()], &[big.clone()], &items, view, &ctx())
        };
        assert_eq!(
            table(Units::Scaled),
            "1K|1-1.50K|2:512:1|2|512|1|2K|1K|2048|1024|4096|1024|6K   \n"
        );
        assert_eq!(
            table(Units::Original),
            "1024|1-1536|2:512:1|2|512|1|2048|1024|2048|1024|4096|1024|6144 \n"
        );
    }

    #[test]
    fn job_size_is_one_number_when_the_limits_agree() {
        let size = |min: u32, max: Option<u32>| {
            let mut p = partition("p", false);
            p.min_nodes = min;
            p.max_nodes = max;
            let mut out = String::new();
            write_job_size(&mut out, &p, Units::Scaled);
            out
        };
        assert_eq!(size(0, None), "1-infinite");
        assert_eq!(size(2, None), "2-infinite");
        assert_eq!(size(0, Some(4)), "1-4");
        assert_eq!(size(1, Some(1)), "1");
        assert_eq!(size(0, Some(0)), "0");
        assert_eq!(size(2048, Some(2048)), "2K");
        // Slurm passes the count through a C float: 2^32 - 1 reads as 2^32.
        assert_eq!(size(u32::MAX, Some(u32::MAX)), "4G");
    }

    #[test]
    fn gres_column_shows_each_nodes_gres_or_null() {
        let (parts, mut nodes) = cluster();
        nodes[1].gres = vec!["gpu:a100:2".into(), "shard:8".into()];
        let items = parse_format("%N %G").unwrap();
        let view = View {
            node_oriented: true,
            header: true,
            ..View::default()
        };
        let out = render(&parts[..1], &nodes, &items, view, &ctx());
        let rows: Vec<&str> = out.lines().collect();
        assert_eq!(rows[0], "NODELIST GRES");
        assert!(rows.contains(&"n9 gpu:a100:2,shard:8"), "{out}");
        assert!(rows.contains(&"n1 (null)"), "{out}");
    }

    #[test]
    fn sort_spec_is_read_letter_by_letter() {
        let k = |code, descending, config_order| SortKey {
            code,
            descending,
            config_order,
        };
        assert_eq!(
            parse_sort("#P,-t"),
            vec![k('P', false, true), k('t', true, false)]
        );
        assert_eq!(
            parse_sort("-P,N"),
            vec![k('P', true, false), k('N', false, false)]
        );
        assert_eq!(parse_sort("+m"), vec![k('m', false, false)]);
        // Letters sinfo cannot sort by, and anything else, are passed over.
        assert_eq!(parse_sort("xq,é!,"), vec![]);
        assert_eq!(parse_sort(""), vec![]);
    }

    #[test]
    fn default_order_is_partition_then_state_descending() {
        // Drained idle (state number with the DRAIN bit) sorts above
        // mixed, mixed above allocated, allocated above idle.
        assert_eq!(
            table("%P %t %N", None, false),
            "batch* drain n10\nbatch* mix n9\nbatch* alloc n2\nbatch* idle n1\n\
             debug alloc n2\ndebug idle n1\n"
        );
    }

    #[test]
    fn sort_keys_reorder_rows() {
        // Partition name descending, then node name (n9 before n10).
        assert_eq!(
            table("%P %N", Some("-P,N"), true),
            "debug n1\ndebug n2\nbatch* n1\nbatch* n2\nbatch* n9\nbatch* n10\n"
        );
        // Memory descending, then node name.
        assert_eq!(
            table("%N %m", Some("-m,N"), true),
            "n9 16000\nn1 8000\nn1 8000\nn2 8000\nn2 8000\nn10 8000\n"
        );
        // -N sorts by node name by default, each node's partitions in
        // configuration order.
        assert_eq!(
            table("%N %P", None, true),
            "n1 batch*\nn1 debug\nn2 batch*\nn2 debug\nn9 batch*\nn10 batch*\n"
        );
    }

    #[test]
    fn names_compare_with_numbers() {
        assert_eq!(compare_names("n9", "n10"), Ordering::Less);
        assert_eq!(compare_names("n10", "n9"), Ordering::Greater);
        assert_eq!(compare_names("n1", "n1"), Ordering::Equal);
        assert_eq!(compare_names("n1", "n1a"), Ordering::Less);
        assert_eq!(compare_names("a2", "b1"), Ordering::Less);
        assert_eq!(
            compare_names("n99999999999999999999999", "n1"),
            Ordering::Greater
        );
        assert_eq!(compare_names("é1", "é2"), Ordering::Less);
    }

    #[test]
    fn long_format_names_sizes_and_unknowns() {
        let f = parse_long_format("partition,NODES:.4,statecompact:,Bogus:9,cpusstate:12");
        assert_eq!(f.unknown, vec!["Bogus".to_owned()]);
        assert_eq!(
            f.items,
            vec![
                Item::Field {
                    code: 'P',
                    width: Some(20),
                    right: false
                },
                Item::Field {
                    code: 'D',
                    width: Some(4),
                    right: true
                },
                Item::Field {
                    code: 't',
                    width: None,
                    right: false
                },
                Item::Field {
                    code: 'C',
                    width: Some(12),
                    right: false
                },
            ]
        );
        // Every name resolves to a field with a header.
        for (name, code) in LONG_NAMES {
            let f = parse_long_format(name);
            assert!(f.unknown.is_empty(), "{name}");
            assert!(!header(*code).is_empty(), "{name}");
        }
        assert_eq!(parse_long_format(",,"), LongFormat::default());
        // C's atoi wraps this to -1: a negative size, no column.
        let huge = parse_long_format("cpus:99999999999999999999");
        assert_eq!(huge.items, vec![]);
        let huge = parse_long_format("cpus:99999999999");
        assert_eq!(
            huge.items,
            vec![Item::Field {
                code: 'c',
                width: Some(spec::MAX_WIDTH),
                right: false
            }]
        );
    }

    #[test]
    fn a_draining_node_running_jobs_counts_as_allocated() {
        // sinfo -o "%t %C %A %F" on a node drained while its 2 CPUs run
        // jobs, then once they ended: as Slurm 22.05 printed them.
        let mut busy = node("n1", &["batch"], 4, 4000);
        busy.state_flags = vec![v1::NodeStateFlag::Drain as i32];
        let mut half = node("n2", &["batch"], 2, 4000);
        half.state_flags = vec![v1::NodeStateFlag::Drain as i32];
        let mut drained = node("n3", &["batch"], 0, 4000);
        drained.state_flags = vec![v1::NodeStateFlag::Drain as i32];
        let items = parse_format("%C %A %F").unwrap();
        let view = View::default();
        let shown =
            |nodes: &[NodeInfo]| render(&[partition("batch", true)], nodes, &items, view, &ctx());
        assert_eq!(shown(&[busy.clone()]), "4/0/0/4 1/0 1/0/0/1\n");
        assert_eq!(shown(&[half]), "2/0/2/4 1/0 1/0/0/1\n");
        assert_eq!(shown(&[drained]), "0/0/4/4 0/0 0/0/1/1\n");
    }

    #[test]
    fn reasons_show_the_user_name() {
        // sinfo -R: `%9u`, the name alone (`-R -l` has `%12U`, name(uid)).
        let mut n = node("n3", &["batch"], 0, 4000);
        n.reason = "maint x".into();
        n.reason_user = "root".into();
        n.reason_uid = 0;
        n.state_flags = vec![v1::NodeStateFlag::Drain as i32];
        let view = View {
            reasons_only: true,
            header: false,
            ..View::default()
        };
        let items = parse_format(REASON_FORMAT).unwrap();
        let out = render(&[partition("batch", true)], &[n], &items, view, &ctx());
        assert!(
            out.starts_with("maint x              root      "),
            "{out:?}"
        );
    }

    #[test]
    fn no_reservation_field_in_slurm_22_05() {
        // sinfo -o "%i|%P": kept as written and reported; -O reservation
        // is an unknown name; -O extra is known.
        let (items, unknown) = parse_format_lenient("%i|%P");
        assert_eq!(unknown, vec!["i"]);
        assert_eq!(items[0], Item::Literal("%i|".into()));
        assert_eq!(
            parse_long_format("reservation").unknown,
            vec!["reservation"]
        );
        let extra = parse_long_format("extra:0");
        assert!(extra.unknown.is_empty());
        let (parts, nodes) = cluster();
        let view = View {
            header: true,
            ..View::default()
        };
        let out = render(&parts[..1], &nodes[..1], &extra.items, view, &ctx());
        assert_eq!(out.lines().next(), Some("EXTRA"));
        assert!(out.lines().skip(1).all(|l| l == "(null)"), "{out}");
    }

    #[test]
    fn long_format_suffix_follows_and_negative_size_drops_the_column() {
        // sinfo -O "partition:-5y,nodes:-0z,statelong:3x,available:-"
        let f = parse_long_format("partition:-5y,nodes:-0z,statelong:3x,available:-");
        let field = |code, width| Item::Field {
            code,
            width,
            right: false,
        };
        assert_eq!(
            f.items,
            vec![
                Item::Literal("y".into()),
                field('D', None),
                Item::Literal("z".into()),
                field('T', Some(3)),
                Item::Literal("x".into()),
                field('a', None),
                Item::Literal("-".into()),
            ]
        );
    }

    #[test]
    fn long_format_renders_as_slurm() {
        let (parts, nodes) = cluster();
        let f = parse_long_format(
            "partition:8,nodeai:.11,allocmem:9,port:5,version:8,statecomplete:12,nodelist:",
        );
        let view = View {
            header: true,
            ..View::default()
        };
        let out = render(&parts[..1], &nodes, &f.items, view, &ctx());
        assert_eq!(
            out,
            "PARTITIO NODES(A/I)ALLOCMEM PORT VERSION STATECOMPLETNODELIST\n\
             batch*          0/00        6818 22.05.8 idle+drain  n10\n\
             batch*          1/02000     6818 22.05.8 mixed       n9\n\
             batch*          1/04000     6818 22.05.8 allocated   n2\n\
             batch*          0/10        6818 22.05.8 idle        n1\n"
        );
    }

    #[test]
    fn a_partition_showing_no_node_keeps_a_blank_line() {
        let parts = vec![partition("debug", true)];
        let view = |node_oriented, reasons_only| View {
            node_oriented,
            reasons_only,
            header: false,
            ..View::default()
        };
        let shown =
            |fmt: &str, v: View| render(&parts, &[], &parse_format(fmt).unwrap(), v, &ctx());
        // As Slurm 22.05 printed them for `sinfo -t down` on a cluster
        // with no down node.
        assert_eq!(
            shown(DEFAULT_FORMAT, view(false, false)),
            "debug*       up   infinite      0    n/a \n"
        );
        assert_eq!(
            shown(SUMMARY_FORMAT, view(false, false)),
            "debug*       up   infinite          0/0/0/0 \n"
        );
        assert_eq!(
            shown(
                "%P|%c|%m|%D|%t|%T|%N|%z|%C|%F|%A|%e|%O|%E|%G|%f|%d|%w|%H|%u|%U|%v|%n|%o",
                view(false, false)
            ),
            "debug*|0|0|0|n/a|n/a||0:0:0|0/0/0/0|0/0/0/0|0/0|0|0.00|none|(null)|(null)|0|0\
             |Unknown|root|root(0)|N/A||\n"
        );
        // Node lines show nothing for it, nor does a report without the
        // partition (the default -R one, or %D alone); -R with %P does.
        assert_eq!(shown(NODE_FORMAT, view(true, false)), "");
        assert_eq!(shown(REASON_FORMAT, view(false, true)), "");
        assert_eq!(shown("%D %t", view(false, false)), "");
        assert_eq!(shown("%P %D", view(false, true)), "debug* 0\n");
        assert_eq!(shown("%E %R", view(false, true)), "none debug\n");
    }

    #[test]
    fn node_lines_leave_the_state_left_justified() {
        let view = View {
            node_oriented: true,
            header: true,
            ..View::default()
        };
        let (parts, nodes) = cluster();
        let out = render(
            &parts,
            &nodes,
            &parse_format(NODE_FORMAT).unwrap(),
            view,
            &ctx(),
        );
        assert_eq!(
            out.lines().next(),
            Some("NODELIST   NODES PARTITION STATE ")
        );
        assert!(
            out.lines()
                .any(|l| l == "n1             1    batch* idle  "),
            "{out}"
        );
    }

    #[test]
    fn default_mark_survives_a_narrow_column() {
        assert_eq!(
            table("%4P|%.3P|%P", Some("N"), true).lines().next(),
            Some("bat*|ba*|batch*")
        );
        // A name that fits keeps its mark after it.
        assert_eq!(
            table("%7P|", Some("N"), true).lines().next(),
            Some("batch* |")
        );
        assert_eq!(table("%1P|", Some("N"), true).lines().next(), Some("*|"));
    }

    #[test]
    fn all_fields_are_separated_as_in_slurm() {
        let items = parse_format("%ALL").unwrap();
        assert_eq!(items, parse_long_format("all").items);
        assert_eq!(
            items.first(),
            Some(&Item::Field {
                code: 'a',
                width: None,
                right: false
            })
        );
        assert_eq!(items.get(1), Some(&Item::Literal("|".into())));
        assert_eq!(items.last(), Some(&Item::Literal(" ".into())));
        let codes: String = items
            .iter()
            .filter_map(|i| match i {
                Item::Field { code, .. } => Some(*code),
                Item::Literal(_) => None,
            })
            .collect();
        // Every code; Slurm 22.05 has no `%i`.
        assert_eq!(codes.len(), CODES.len());
        assert!(!codes.contains('i'));
        let (parts, nodes) = cluster();
        let view = View {
            header: true,
            ..View::default()
        };
        let out = render(&parts, &nodes, &items, view, &ctx());
        assert!(out.starts_with("AVAIL|ACTIVE_FEATURES|"), "{out}");
    }
}
