//! `sinfo`: show partitions and their nodes.
//!
//! Options are read by [`crate::opts`] as Slurm's `getopt_long` reads them;
//! partitions and nodes come from `GetPartitions` and `GetNodes`, and
//! [`crate::format::sinfo`] groups, orders (`-S`) and renders them, with
//! the `-o` letters or the `-O` names. With `-i` the report repeats, each
//! one under the date line, until the command is interrupted.

use std::ffi::OsString;
use std::io::Write;

use slurm_common::hostlist;
use slurm_proto::v1::{GetNodesRequest, GetPartitionsRequest, NodeInfo, PartitionInfo};

use crate::client::{self, ClientConfig, Controller, EnvLookup};
use crate::format::scontrol::node_state;
use crate::format::sinfo::{self as render, SortKey, View};
use crate::format::{self, checks, yaml, Ctx, Dump, Item, TimeFormat, Units, Zone};
use crate::opts::{self, Getopt, GetoptError, HasArg, LongOpt, Ordering, ShortOpt};
use crate::output::{version_line, Output};
use crate::squeue::{Pacer, SystemPacer};

/// Every option sinfo reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    All,
    Clusters,
    Dead,
    Exact,
    Format,
    FormatLong,
    Help,
    Hide,
    Iterate,
    Json,
    Long,
    Node,
    NoConvert,
    NoHeader,
    Nodes,
    Partition,
    Reasons,
    Reservation,
    Responding,
    Sort,
    States,
    Summarize,
    Usage,
    Verbose,
    Version,
    Yaml,
    /// Read and accepted, with no effect here.
    Ignored,
}

const fn short(letter: char, has_arg: HasArg, key: Key) -> ShortOpt<Key> {
    ShortOpt {
        letter,
        has_arg,
        key,
    }
}

const fn long(name: &'static str, has_arg: HasArg, key: Key) -> LongOpt<Key> {
    LongOpt { name, has_arg, key }
}

/// sinfo 22.05's short options (`adehi:lM:n:No:O:p:rRsS:t:TvV`).
const SHORTS: &[ShortOpt<Key>] = &[
    short('a', HasArg::No, Key::All),
    short('d', HasArg::No, Key::Dead),
    short('e', HasArg::No, Key::Exact),
    short('h', HasArg::No, Key::NoHeader),
    short('i', HasArg::Required, Key::Iterate),
    short('l', HasArg::No, Key::Long),
    short('M', HasArg::Required, Key::Clusters),
    short('n', HasArg::Required, Key::Nodes),
    short('N', HasArg::No, Key::Node),
    short('o', HasArg::Required, Key::Format),
    short('O', HasArg::Required, Key::FormatLong),
    short('p', HasArg::Required, Key::Partition),
    short('r', HasArg::No, Key::Responding),
    short('R', HasArg::No, Key::Reasons),
    short('s', HasArg::No, Key::Summarize),
    short('S', HasArg::Required, Key::Sort),
    short('t', HasArg::Required, Key::States),
    short('T', HasArg::No, Key::Reservation),
    short('v', HasArg::No, Key::Verbose),
    short('V', HasArg::No, Key::Version),
];

/// sinfo 22.05's long options, in its declaration order (the order of the
/// candidates in getopt's "ambiguous" message).
const LONGS: &[LongOpt<Key>] = &[
    long("all", HasArg::No, Key::All),
    long("dead", HasArg::No, Key::Dead),
    long("exact", HasArg::No, Key::Exact),
    long("federation", HasArg::No, Key::Ignored),
    long("help", HasArg::No, Key::Help),
    long("hide", HasArg::No, Key::Hide),
    long("iterate", HasArg::Required, Key::Iterate),
    long("json", HasArg::No, Key::Json),
    long("local", HasArg::No, Key::Ignored),
    long("long", HasArg::No, Key::Long),
    long("cluster", HasArg::Required, Key::Clusters),
    long("clusters", HasArg::Required, Key::Clusters),
    long("nodes", HasArg::Required, Key::Nodes),
    long("noconvert", HasArg::No, Key::NoConvert),
    long("noheader", HasArg::No, Key::NoHeader),
    long("Node", HasArg::No, Key::Node),
    long("format", HasArg::Required, Key::Format),
    long("Format", HasArg::Required, Key::FormatLong),
    long("partition", HasArg::Required, Key::Partition),
    long("responding", HasArg::No, Key::Responding),
    long("list-reasons", HasArg::No, Key::Reasons),
    long("summarize", HasArg::No, Key::Summarize),
    long("sort", HasArg::Required, Key::Sort),
    long("states", HasArg::Required, Key::States),
    long("reservation", HasArg::No, Key::Reservation),
    long("usage", HasArg::No, Key::Usage),
    long("verbose", HasArg::No, Key::Verbose),
    long("version", HasArg::No, Key::Version),
    long("yaml", HasArg::No, Key::Yaml),
];

/// sinfo 22.05's usage text.
/// `--help`: every option, grouped and explained as Slurm 22.05 prints them.
const HELP: &str = include_str!("help/sinfo.txt");

const USAGE: &str = "Usage: sinfo [-abdelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format] [--federation] [--local]";

/// The `-t` names sinfo 22.05 accepts, each also by any prefix (`alloc`,
/// `mix`, `d`), in the order a prefix is resolved, with the state each
/// stands for here. The first 23 are the ones it lists after refusing a
/// word; the rest are its short forms.
const NODE_STATE_NAMES: &[(&str, &str)] = &[
    ("unknown", "unknown"),
    ("down", "down"),
    ("idle", "idle"),
    ("allocated", "allocated"),
    ("?", "?"),
    ("mixed", "mixed"),
    ("future", "future"),
    ("drain", "drain"),
    ("drained", "drained"),
    ("draining", "draining"),
    ("no_respond", "no_respond"),
    ("reserved", "reserved"),
    ("perfctrs", "perfctrs"),
    ("cloud", "cloud"),
    ("completing", "completing"),
    ("powering_down", "powering_down"),
    ("powered_down", "powered_down"),
    ("power_down", "power_down"),
    ("powering_up", "powering_up"),
    ("fail", "fail"),
    ("maint", "maint"),
    ("reboot", "reboot"),
    ("reboot^", "reboot^"),
    ("planned", "planned"),
    ("plnd", "planned"),
    ("resv", "reserved"),
    ("drng", "draining"),
    ("futr", "future"),
    ("npc", "perfctrs"),
    ("boot^", "reboot^"),
];

/// The list sinfo 22.05 prints after refusing a `-t` word.
const VALID_NODE_STATES: &str = "unknown,down,idle,allocated,?,mixed,future,drain,drained,\
draining,no_respond,reserved,perfctrs,cloud,completing,powering_down,powered_down,power_down,\
powering_up,fail,maint,reboot,reboot^,unknown";

/// The state a `-t` word stands for: the first name it is a prefix of,
/// in any case.
fn node_state_word(word: &str) -> Option<&'static str> {
    NODE_STATE_NAMES
        .iter()
        .find(|(name, _)| {
            name.len() >= word.len()
                && name.as_bytes()[..word.len()].eq_ignore_ascii_case(word.as_bytes())
        })
        .map(|&(_, state)| state)
}

/// Reads `-t`: `all` (any case) as the whole value selects every node;
/// else a comma list of states, each possibly `a&b` (nodes in both). Empty
/// items are skipped. The error is the word refused.
pub fn parse_node_states(value: &str) -> Result<Vec<String>, String> {
    if value.eq_ignore_ascii_case("all") {
        return Ok(Vec::new());
    }
    let mut states = Vec::new();
    for item in value.split(',').filter(|i| !i.is_empty()) {
        let mut all_of = Vec::new();
        for word in item.split('&').filter(|w| !w.is_empty()) {
            all_of.push(node_state_word(word).ok_or_else(|| word.to_owned())?);
        }
        if !all_of.is_empty() {
            states.push(all_of.join("&"));
        }
    }
    Ok(states)
}

/// A command line sinfo refuses before asking the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinfoError {
    /// Printed as `sinfo: <getopt text>` and the "Try" line.
    Getopt(GetoptError),
    /// The lines printed on standard error, as they are.
    Refused(Vec<String>),
}

impl std::fmt::Display for SinfoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Getopt(e) => write!(f, "{e}"),
            Self::Refused(lines) => f.write_str(&lines.join("\n")),
        }
    }
}

impl std::error::Error for SinfoError {}

impl From<GetoptError> for SinfoError {
    fn from(e: GetoptError) -> Self {
        SinfoError::Getopt(e)
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub dead: bool,
    /// `-o` or `-O` text, whichever came last.
    pub format: Option<String>,
    /// Whether `-O` was given: from then on the format text is read as `-O`
    /// names, as in Slurm.
    pub format_long: bool,
    /// `SINFO_FORMAT`, used when no option picks a layout.
    pub env_format: Option<String>,
    pub help: bool,
    pub usage: bool,
    /// `--json` or `--yaml`, whichever came last.
    pub dump: Option<Dump>,
    pub reasons: bool,
    pub long: bool,
    pub node_oriented: bool,
    /// `--noconvert`: counts as kept (`1024` CPUs, not `1K`).
    pub noconvert: bool,
    pub no_header: bool,
    pub nodes: Option<String>,
    pub partitions: Vec<String>,
    /// Whether `-p` or `SINFO_PARTITION` was given at all: given with no
    /// name (`-p ""`), it selects no partition, as in Slurm.
    pub partitions_given: bool,
    pub responding: bool,
    pub states: Vec<String>,
    /// `-t` named no state (`-t ""`, `-t ,`): no node is shown.
    pub no_state: bool,
    pub summarize: bool,
    pub version: bool,
    /// `-S`, else `SINFO_SORT`.
    pub sort: Option<String>,
    /// `-i`/`--iterate` as given; checked by [`Plan::new`].
    pub iterate: Option<String>,
    /// `-M`/`--clusters` as given; checked against `ClusterName`.
    pub clusters: Option<String>,
    /// `-T`: the reservations instead of the nodes.
    pub reservation: bool,
    /// `-a`: hidden partitions too (`--hide` undoes it).
    pub all: bool,
    /// The caller sees hidden partitions anyway (root, SlurmUser); set
    /// once slurm.conf is read.
    pub sees_hidden: bool,
    /// The caller's groups, for partitions with AllowGroups: looked up
    /// when a partition needs them.
    pub my_groups: std::cell::OnceCell<Vec<String>>,
    /// `SLURM_TIME_FORMAT`: how timestamps are written.
    pub time_format: TimeFormat,
}

/// Reads the options (arguments without the program name) and
/// `SINFO_FORMAT`, `SINFO_PARTITION` and `SINFO_SORT`. `-t`, `-n` and `-i`
/// are checked as they are read, so the first bad one is reported, as in
/// Slurm; `-l` with `-o` or `-O` is refused after the last option.
pub fn parse_options(args: &[String], env: EnvLookup<'_>) -> Result<Options, SinfoError> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| !v.is_empty())
    };
    // Items kept as written (` debug` names no partition).
    let split = |v: Option<String>| -> Vec<String> {
        v.unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let raw = |name: &str| env(name).map(|v| v.to_string_lossy().into_owned());
    let env_partitions = raw("SINFO_PARTITION");
    let mut o = Options {
        // Set but empty still counts: a layout with no field.
        env_format: raw("SINFO_FORMAT"),
        partitions_given: env_partitions.is_some(),
        partitions: split(env_partitions),
        sort: var("SINFO_SORT"),
        time_format: TimeFormat::from_env(raw("SLURM_TIME_FORMAT").as_deref()),
        ..Options::default()
    };
    let mut format_given = false;
    for found in Getopt::new(args, SHORTS, LONGS, Ordering::Permute) {
        let found = found?;
        let value = found.value;
        let text = value.as_deref().unwrap_or("");
        match found.key {
            Key::All => o.all = true,
            Key::Hide => o.all = false,
            Key::Exact => {}
            Key::Reservation => o.reservation = true,
            Key::Verbose | Key::Ignored => {}
            Key::Clusters => o.clusters = value,
            Key::Dead => o.dead = true,
            Key::Format => {
                format_given = true;
                o.format = value;
            }
            Key::FormatLong => {
                format_given = true;
                o.format = value;
                o.format_long = true;
            }
            // sinfo answers these the moment it reads them.
            Key::Help => {
                o.help = true;
                return Ok(o);
            }
            Key::Usage => {
                o.usage = true;
                return Ok(o);
            }
            Key::Version => {
                o.version = true;
                return Ok(o);
            }
            Key::Iterate => {
                if checks::atoi(text) <= 0 {
                    return Err(SinfoError::Refused(vec![format!(
                        "sinfo: error: Error: invalid entry for --iterate={text}"
                    )]));
                }
                o.iterate = value;
            }
            Key::Json => o.dump = Some(Dump::Json),
            Key::Yaml => o.dump = Some(Dump::Yaml),
            Key::Reasons => o.reasons = true,
            Key::Long => o.long = true,
            Key::Node => o.node_oriented = true,
            Key::NoConvert => o.noconvert = true,
            Key::NoHeader => o.no_header = true,
            Key::Nodes => {
                if let Err(e) = checks::check_hostlist(text) {
                    let lines = e.lines(text, "nodes").into_iter();
                    let lines = lines.map(|l| format!("sinfo: error: {l}"));
                    return Err(SinfoError::Refused(lines.collect()));
                }
                o.nodes = value;
            }
            Key::Partition => {
                o.partitions_given = true;
                o.partitions = split(value);
            }
            Key::Responding => o.responding = true,
            Key::Sort => o.sort = value,
            Key::States => {
                // A list with no state (`-t ""`) matches no node.
                o.no_state =
                    !text.eq_ignore_ascii_case("all") && text.split(['&', ',']).all(str::is_empty);
                o.states = parse_node_states(text).map_err(|word| {
                    SinfoError::Refused(vec![
                        format!("sinfo: error: Bad state string: \"{word}\""),
                        format!("sinfo: error: valid states: {VALID_NODE_STATES}"),
                    ])
                })?;
            }
            Key::Summarize => o.summarize = true,
        }
    }
    if o.long && format_given {
        return Err(SinfoError::Refused(vec![
            "sinfo: fatal: Options -o(--format) and -l(--long) are mutually exclusive. \
             Please remove one and retry."
                .to_owned(),
        ]));
    }
    Ok(o)
}

/// The `-o` layout the options select when no `-O` was given. Like Slurm,
/// `-s`, `-N` and `-R` win over `SINFO_FORMAT`.
pub fn format_for(o: &Options) -> &str {
    if let Some(f) = &o.format {
        return f;
    }
    match (o.reasons, o.summarize, o.node_oriented, o.long) {
        (_, true, _, _) => render::SUMMARY_FORMAT,
        (_, false, true, true) => render::NODE_LONG_FORMAT,
        (_, false, true, false) => render::NODE_FORMAT,
        (true, false, false, false) => render::REASON_FORMAT,
        (true, false, false, true) => render::REASON_LONG_FORMAT,
        (false, false, false, long) => match &o.env_format {
            Some(f) => f,
            None if long => render::LONG_FORMAT,
            None => render::DEFAULT_FORMAT,
        },
    }
}

/// Whether a node matches one `-t` word (`idle`, `alloc`, `mix`, `drain`,
/// `down`, `resp`, ...).
fn state_matches(node: &NodeInfo, word: &str) -> bool {
    let state = node_state(node);
    let short = state.sinfo_short();
    let long = state.sinfo_long();
    let trim = |s: &str| {
        s.trim_end_matches(['*', '~', '#', '!', '%', '$', '@', '^', '-'])
            .to_owned()
    };
    let base = state.base.name().to_ascii_lowercase();
    word == trim(&short)
        || word == trim(&long)
        || word == base
        || (word == "drain" && (long.starts_with("drain")))
        || (word == "no_respond" && state.has(slurm_common::state::NodeFlag::NotResponding))
}

/// Applies `-p`, `-n`, `-t`, `-d` and `-r` to the controller's reply.
pub fn select(
    o: &Options,
    partitions: Vec<PartitionInfo>,
    nodes: Vec<NodeInfo>,
) -> (Vec<PartitionInfo>, Vec<NodeInfo>) {
    let parts: Vec<PartitionInfo> = partitions
        .into_iter()
        .filter(|p| {
            if o.partitions_given || o.all || o.sees_hidden {
                return true;
            }
            // The caller's groups are looked up for the first partition
            // with AllowGroups only.
            !p.hidden
                && (p.allow_groups.is_empty()
                    || !crate::client::groups_denied(
                        &p.allow_groups,
                        o.my_groups.get_or_init(crate::client::my_group_names),
                    ))
        })
        .filter(|p| !o.partitions_given || o.partitions.contains(&p.name))
        .collect();
    let wanted: Option<Vec<String>> = o
        .nodes
        .as_deref()
        .map(|expr| hostlist::expand(expr).unwrap_or_else(|_| vec![expr.to_owned()]));
    let nodes = nodes
        .into_iter()
        // A FUTURE node is not part of the cluster yet: Slurm's sinfo
        // never shows one.
        .filter(|n| node_state(n).base != slurm_common::state::NodeBaseState::Future)
        .filter(|n| wanted.as_ref().is_none_or(|w| w.contains(&n.name)))
        .filter(|_| !o.no_state)
        .filter(|n| {
            o.states.is_empty()
                || o.states
                    .iter()
                    .any(|s| s.split('&').all(|w| state_matches(n, w)))
        })
        .filter(|n| {
            let s = node_state(n);
            // As in Slurm, "dead" is not responding: a node set DOWN by
            // an admin that still answers is not dead.
            let not_responding = s.has(slurm_common::state::NodeFlag::NotResponding);
            (!o.dead || not_responding) && (!o.responding || !not_responding)
        })
        .collect();
    (parts, nodes)
}

/// Everything decided from the options before asking the controller.
#[derive(Debug, Clone)]
pub struct Plan {
    opts: Options,
    items: Vec<Item>,
    sort: Vec<SortKey>,
    /// Seconds between reports (`--iterate`).
    iterate: Option<u64>,
    date_line: bool,
    /// `-O` names sinfo does not know: reported, then left out.
    pub unknown_fields: Vec<String>,
    /// `-o` codes sinfo does not know: each is reported (without sinfo's
    /// usual `sinfo: error: ` prefix, as in Slurm 22.05) and printed as
    /// written, and the report goes on.
    pub unknown_codes: Vec<String>,
}

impl Plan {
    /// Checks the options; the error is the message sinfo prints after
    /// `sinfo: error: `.
    pub fn new(o: &Options) -> Result<Plan, String> {
        let iterate = match &o.iterate {
            None => None,
            Some(v) => match u64::try_from(checks::atoi(v)) {
                Ok(seconds) if seconds > 0 => Some(seconds),
                _ => return Err(format!("Error: invalid entry for --iterate={v}")),
            },
        };
        let (items, unknown_fields, unknown_codes) = if o.format_long {
            let long = render::parse_long_format(o.format.as_deref().unwrap_or(""));
            (long.items, long.unknown, Vec::new())
        } else {
            let (items, unknown) = render::parse_format_lenient(format_for(o));
            (items, Vec::new(), unknown)
        };
        let sort = render::parse_sort(match &o.sort {
            Some(s) => s,
            None if o.node_oriented => render::NODE_SORT,
            None => render::DEFAULT_SORT,
        });
        Ok(Plan {
            opts: o.clone(),
            items,
            sort,
            iterate,
            // Slurm's date line comes with -l and with --iterate, never
            // without the header.
            date_line: !o.no_header && (o.long || iterate.is_some()),
            unknown_fields,
            unknown_codes,
        })
    }

    /// Renders the controller's reply: the header and the rows (the date
    /// line is [`report_loop`]'s, printed before asking), or the
    /// `--json`/`--yaml` document. Only a YAML document can fail: when the
    /// JSON it is read back from cannot be.
    pub fn render(
        &self,
        partitions: Vec<PartitionInfo>,
        nodes: Vec<NodeInfo>,
        ctx: &Ctx,
    ) -> Result<String, yaml::ReadError> {
        let o = &self.opts;
        // As in Slurm 22.05, the document holds every node: `-p`, `-n`,
        // `-t` and the other selections are checked but select nothing.
        if let Some(dump) = o.dump {
            return dump.write(format::json::nodes(&nodes, ctx));
        }
        let (parts, nodes) = select(o, partitions, nodes);
        let view = View {
            node_oriented: o.node_oriented,
            reasons_only: o.reasons,
            header: !o.no_header,
            date_line: false,
            units: if o.noconvert {
                Units::Original
            } else {
                Units::Scaled
            },
        };
        Ok(render::render_sorted(
            &parts,
            &nodes,
            &self.items,
            view,
            &self.sort,
            ctx,
        ))
    }
}

/// What one report needs from the controller.
pub type Reply = (Vec<PartitionInfo>, Vec<NodeInfo>);

/// Asks for partitions and nodes and prints the report; with `--iterate`,
/// again after every pause until the pacer says stop or the reader goes
/// away. Each report starts with the date line when Slurm prints one, and
/// an iterated report ends with an empty line. A failed report is reported
/// (`fetch` gives the whole line) and the next one is tried; the exit
/// status is 1 when any failed.
pub fn report_loop(
    plan: &Plan,
    fetch: &mut dyn FnMut() -> Result<Reply, String>,
    pacer: &mut dyn Pacer,
    zone: Zone,
    out: &mut Output<'_>,
) -> i32 {
    let mut code = 0;
    loop {
        let ctx = Ctx {
            time_format: plan.opts.time_format,
            ..Ctx::new(pacer.now(), zone)
        };
        if plan.date_line && plan.opts.dump.is_none() {
            if let Err(e) = out.line(&ctx.ctime_now()) {
                out.error_line(&format!("sinfo: error: {e}"));
                return 1;
            }
        }
        let shown = fetch().and_then(|(parts, nodes)| {
            plan.render(parts, nodes, &ctx)
                .map_err(|e| format!("sinfo: error: {e}"))
        });
        match shown {
            Ok(text) => {
                if out.block("sinfo", &text) != 0 {
                    return 1;
                }
            }
            Err(line) => {
                out.error_line(&line);
                code = 1;
            }
        }
        let Some(seconds) = plan.iterate else {
            return code;
        };
        if out.line("").is_err() || out.stdout_closed() || !pacer.pause(seconds) {
            return code;
        }
    }
}

/// Runs `sinfo` with the process's arguments, streams and environment.
pub fn run(args: Vec<OsString>) -> i32 {
    crate::output::with_std_streams(|_, stdout, stderr| {
        run_with(&args, &client::process_env, stdout, stderr)
    })
}

/// [`run`] with the environment and both output streams handed in.
pub fn run_with(
    args: &[OsString],
    env: EnvLookup<'_>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    run_paced(args, env, stdout, stderr, &mut SystemPacer)
}

/// [`run_with`] with the clock and the pause between `--iterate` reports
/// handed in.
pub fn run_paced(
    args: &[OsString],
    env: EnvLookup<'_>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    pacer: &mut dyn Pacer,
) -> i32 {
    let mut out = Output::new(stdout, stderr);
    let called_as = opts::called_as(args, "sinfo");
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let o = match parse_options(&args, env) {
        Ok(o) => o,
        Err(SinfoError::Getopt(e)) => {
            opts::report(&mut out, "sinfo", &called_as, &e);
            return 1;
        }
        Err(SinfoError::Refused(lines)) => {
            for line in &lines {
                out.error_line(line);
            }
            return 1;
        }
    };
    if o.version {
        return out.block("sinfo", &version_line());
    }
    if o.help {
        return out.block("sinfo", HELP);
    }
    if o.usage {
        return out.block("sinfo", USAGE);
    }
    let mut plan = match Plan::new(&o) {
        Ok(plan) => plan,
        Err(message) => {
            out.error_line(&format!("sinfo: error: {message}"));
            return 1;
        }
    };
    for name in &plan.unknown_fields {
        out.error_line(&format!(
            "sinfo: error: Invalid job format specification: {name}"
        ));
    }
    for code in &plan.unknown_codes {
        out.error_line(&format!("Invalid node format specification: {code}"));
    }
    let config = match ClientConfig::load_with(env) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("sinfo: error: {e}"));
            return 1;
        }
    };
    if crate::client::refused_clusters(&mut out, "sinfo", o.clusters.as_deref(), &config.conf) {
        return 1;
    }
    plan.opts.sees_hidden = crate::client::sees_hidden_partitions(&config.conf);
    let mut controller = match Controller::new(&config) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("sinfo: error: {e}"));
            return 1;
        }
    };
    // One runtime for every report: the controller's connection lives in it.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            out.error_line(&format!("sinfo: error: cannot start the I/O runtime: {e}"));
            return 1;
        }
    };
    if o.reservation {
        // Reservations are never made here, so the controller has none:
        // Slurm's answer for an empty list, once the controller answered.
        let answered = runtime.block_on(async {
            controller
                .call(|mut c| async move { c.ping(slurm_proto::v1::PingRequest {}).await })
                .await
        });
        return match answered {
            Ok(_) => match out.line("No reservations in the system") {
                Ok(()) => 0,
                Err(e) => {
                    out.error_line(&format!("sinfo: error: {e}"));
                    1
                }
            },
            Err(e) => {
                out.error_line(&format!("slurm_load_reservations: {e}"));
                1
            }
        };
    }
    let mut fetch = || {
        runtime.block_on(async {
            let parts = controller
                .call(
                    |mut c| async move { c.get_partitions(GetPartitionsRequest::default()).await },
                )
                .await
                .map_err(|e| format!("slurm_load_partitions: {e}"))?;
            let nodes = controller
                .call(|mut c| async move { c.get_nodes(GetNodesRequest::default()).await })
                .await
                .map_err(|e| format!("slurm_load_node: {e}"))?;
            Ok::<_, String>((parts.partitions, nodes.nodes))
        })
    };
    report_loop(&plan, &mut fetch, pacer, Zone::System, &mut out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(args: &[&str]) -> Options {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        parse_options(&args, &|_| None).unwrap()
    }

    #[test]
    fn reservation_flag_is_kept() {
        assert!(parse(&["-T"]).reservation);
        assert!(parse(&["--reservation"]).reservation);
        assert!(!parse(&["-N"]).reservation);
    }

    /// Runs sinfo up to the point it would ask the controller.
    fn refused(args: &[&str]) -> (String, String, i32) {
        let argv: Vec<&str> = std::iter::once("sinfo")
            .chain(args.iter().copied())
            .collect();
        crate::output::run_without_controller(run_with, &argv)
    }

    #[test]
    fn dead_means_not_responding_not_down() {
        // An admin's DOWN on a node that answers is not dead (sinfo -d).
        let node = |name: &str, flags: Vec<i32>| NodeInfo {
            name: name.into(),
            state: slurm_proto::v1::NodeState::Down as i32,
            state_flags: flags,
            partitions: vec!["debug".into()],
            ..NodeInfo::default()
        };
        let no_respond = slurm_proto::v1::NodeStateFlag::NotResponding as i32;
        let nodes = vec![node("n1", Vec::new()), node("n2", vec![no_respond])];
        let names = |args: &[&str]| -> Vec<String> {
            select(&parse(args), Vec::new(), nodes.clone())
                .1
                .into_iter()
                .map(|n| n.name)
                .collect()
        };
        assert_eq!(names(&["-d"]), vec!["n2"]);
        assert_eq!(names(&["-r"]), vec!["n1"]);
        assert_eq!(names(&[]), vec!["n1", "n2"]);
    }

    /// Slurm's sinfo never shows a FUTURE node, and `-R` lists the nodes
    /// that are down, draining or failing (or have a reason), not those
    /// that only do not respond.
    #[test]
    fn future_nodes_are_hidden_and_unresponsive_ones_have_no_reason() {
        let node = |name: &str, state: slurm_proto::v1::NodeState, flags: Vec<i32>| NodeInfo {
            name: name.into(),
            state: state as i32,
            state_flags: flags,
            cpus: 2,
            partitions: vec!["debug".into()],
            ..NodeInfo::default()
        };
        let no_respond = slurm_proto::v1::NodeStateFlag::NotResponding as i32;
        let nodes = vec![
            node("n1", slurm_proto::v1::NodeState::Future, Vec::new()),
            node("n2", slurm_proto::v1::NodeState::Idle, vec![no_respond]),
            node("n3", slurm_proto::v1::NodeState::Down, vec![no_respond]),
        ];
        let kept = select(&parse(&["-N"]), Vec::new(), nodes.clone()).1;
        let names: Vec<&str> = kept.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["n2", "n3"]);
        let parts = vec![PartitionInfo {
            name: "debug".into(),
            ..PartitionInfo::default()
        }];
        let items = crate::format::sinfo::parse_format("%N").unwrap();
        let view = View {
            reasons_only: true,
            header: false,
            ..View::default()
        };
        let shown = render::render(&parts, &kept, &items, view, &Ctx::utc(0));
        assert_eq!(shown, "n3\n");
    }

    /// A hidden partition shows with `-a` or `-p`, and to root and
    /// SlurmUser (`sees_hidden`), as Slurm shows it to operators.
    #[test]
    fn hidden_partitions_show_to_operators_or_with_all() {
        let parts = vec![
            PartitionInfo {
                name: "debug".into(),
                ..PartitionInfo::default()
            },
            PartitionInfo {
                name: "secret".into(),
                hidden: true,
                ..PartitionInfo::default()
            },
        ];
        let names = |o: &Options| -> Vec<String> {
            select(o, parts.clone(), Vec::new())
                .0
                .into_iter()
                .map(|p| p.name)
                .collect()
        };
        assert_eq!(names(&parse(&[])), ["debug"]);
        assert_eq!(names(&parse(&["-a"])), ["debug", "secret"]);
        assert_eq!(names(&parse(&["-a", "--hide"])), ["debug"]);
        assert_eq!(names(&parse(&["-p", "secret"])), ["secret"]);
        let operator = Options {
            sees_hidden: true,
            ..parse(&[])
        };
        assert_eq!(names(&operator), ["debug", "secret"]);
        // AllowGroups without a group of the caller's: kept from it alike.
        let mut parts = parts.clone();
        parts[0].allow_groups = vec!["staff".into()];
        let names = |o: &Options| -> Vec<String> {
            select(o, parts.clone(), Vec::new())
                .0
                .into_iter()
                .map(|p| p.name)
                .collect()
        };
        let outsider = Options {
            my_groups: vec!["nogroup".to_string()].into(),
            ..parse(&[])
        };
        assert!(names(&outsider).is_empty());
        let member = Options {
            my_groups: vec!["users".to_string(), "staff".to_string()].into(),
            ..parse(&[])
        };
        assert_eq!(names(&member), ["debug"]);
        assert_eq!(
            names(&Options {
                all: true,
                ..outsider
            }),
            ["debug", "secret"]
        );
    }

    #[test]
    fn empty_partition_and_state_lists_select_nothing() {
        let node = NodeInfo {
            name: "n1".into(),
            state: slurm_proto::v1::NodeState::Idle as i32,
            cpus: 2,
            partitions: vec!["debug".into()],
            ..NodeInfo::default()
        };
        let part = PartitionInfo {
            name: "debug".into(),
            ..PartitionInfo::default()
        };
        let render_env = |args: &[&str], env: &dyn Fn(&str) -> Option<OsString>| {
            let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
            Plan::new(&parse_options(&args, env).unwrap())
                .unwrap()
                .render(vec![part.clone()], vec![node.clone()], &Ctx::utc(0))
                .unwrap()
        };
        let render = |args: &[&str]| render_env(args, &|_| None);
        assert_eq!(render(&["-h", "-o", "%P %D %t"]), "debug 1 idle\n");
        // sinfo -p "", -p ",", -p " debug": no partition.
        for p in ["", ",", " debug"] {
            assert_eq!(render(&["-h", "-o", "%P %D %t", "-p", p]), "", "{p:?}");
        }
        assert_eq!(
            render(&["-h", "-o", "%P", "-p", "", "-p", "debug"]),
            "debug\n"
        );
        let env = |name: &str| (name == "SINFO_PARTITION").then(OsString::new);
        assert_eq!(render_env(&["-h"], &env), "");
        // sinfo -t "": the partition, with no node.
        for t in ["", ",", "&"] {
            assert_eq!(
                render(&["-h", "-o", "%P %D %t", "-t", t]),
                "debug 0 n/a\n",
                "{t:?}"
            );
            assert_eq!(render(&["-h", "-N", "-t", t]), "", "{t:?}");
        }
        assert_eq!(render(&["-h", "-o", "%P %D", "-t", "all"]), "debug 1\n");
        // SINFO_FORMAT set but empty: a layout with no field.
        let env = |name: &str| (name == "SINFO_FORMAT").then(OsString::new);
        assert_eq!(render_env(&[], &env), "\n\n");
    }

    #[test]
    fn noconvert_keeps_counts_as_they_are() {
        assert!(parse(&["--noconvert"]).noconvert);
        assert!(parse(&["--noconv", "-N"]).noconvert);
        assert!(!parse(&["-N"]).noconvert);
        let node = NodeInfo {
            name: "n1".into(),
            state: slurm_proto::v1::NodeState::Idle as i32,
            cpus: 2048,
            real_memory_mb: 2048,
            partitions: vec!["debug".into()],
            ..NodeInfo::default()
        };
        let part = PartitionInfo {
            name: "debug".into(),
            ..PartitionInfo::default()
        };
        let render = |args: &[&str]| {
            Plan::new(&parse(args))
                .unwrap()
                .render(vec![part.clone()], vec![node.clone()], &Ctx::utc(0))
                .unwrap()
        };
        assert_eq!(render(&["-h", "-o", "%N %c %m"]), "n1 2K 2048\n");
        assert_eq!(
            render(&["-h", "--noconvert", "-o", "%N %c %m"]),
            "n1 2048 2048\n"
        );
        assert_eq!(
            render(&["-h", "--noconvert", "-O", "nodelist:3,cpus:5,memory:5"]),
            "n1 2048 2048 \n"
        );
    }

    #[test]
    fn bad_state_words_list_the_valid_ones() {
        for (value, word) in [
            ("foo", "foo"),
            ("idle,foo", "foo"),
            ("down,resp", "resp"),
            ("idle&foo", "foo"),
            ("x&idle", "x"),
            ("idle+drain", "idle+drain"),
            ("DOWN*", "DOWN*"),
            ("nr", "nr"),
            (" idle", " idle"),
        ] {
            assert_eq!(
                refused(&["-t", value]),
                (
                    String::new(),
                    format!(
                        "sinfo: error: Bad state string: \"{word}\"\n\
                         sinfo: error: valid states: {VALID_NODE_STATES}\n"
                    ),
                    1
                ),
                "{value}"
            );
        }
        assert!(VALID_NODE_STATES.starts_with("unknown,down,idle,allocated,?,mixed,"));
        assert!(VALID_NODE_STATES.ends_with(",maint,reboot,reboot^,unknown"));
    }

    #[test]
    fn state_words_are_prefixes() {
        let states = |v: &str| parse_node_states(v).unwrap();
        assert_eq!(states("all"), Vec::<String>::new());
        assert_eq!(states("ALL"), Vec::<String>::new());
        assert_eq!(states("a"), ["allocated"]);
        assert_eq!(states("idle,all"), ["idle", "allocated"]);
        assert_eq!(states("d"), ["down"]);
        assert_eq!(states("dr"), ["drain"]);
        assert_eq!(states("MIX"), ["mixed"]);
        assert_eq!(
            states("drng,resv,boot,plan,no_resp"),
            ["draining", "reserved", "reboot^", "planned", "no_respond"]
        );
        assert_eq!(states("idle&drain"), ["idle&drain"]);
        assert_eq!(states("&,drain&,idle,,down"), ["drain", "idle", "down"]);
        for bad in [
            "inval",
            "failing",
            "power_up",
            "dynamic",
            "idleX",
            "maintenance",
        ] {
            assert_eq!(parse_node_states(bad), Err(bad.to_owned()));
        }
    }

    #[test]
    fn and_states_need_every_part() {
        let node = |state: slurm_proto::v1::NodeState, drain: bool| NodeInfo {
            name: "n1".into(),
            state: state as i32,
            state_flags: if drain {
                vec![slurm_proto::v1::NodeStateFlag::Drain as i32]
            } else {
                Vec::new()
            },
            ..NodeInfo::default()
        };
        let o = parse(&["-t", "idle&drain"]);
        let nodes = vec![
            node(slurm_proto::v1::NodeState::Idle, true),
            node(slurm_proto::v1::NodeState::Idle, false),
        ];
        let (_, kept) = select(&o, Vec::new(), nodes);
        assert_eq!(kept.len(), 1);
        assert!(!kept[0].state_flags.is_empty());
    }

    #[test]
    fn node_lists_are_checked_as_read() {
        assert_eq!(
            refused(&["-n", "n[a-b]", "-t", "foo"]),
            (
                String::new(),
                "sinfo: error: _parse_single_range: Invalid range: `a-b'\n\
                 sinfo: error: 'n[a-b]' invalid entry for --nodes\n"
                    .to_owned(),
                1
            )
        );
        assert_eq!(
            refused(&["-n", "n[0-65536]"]).1,
            "sinfo: error: _parse_single_range: Too many hosts in range `0-65536'\n\
             sinfo: error: 'n[0-65536]' invalid entry for --nodes\n"
        );
    }

    #[test]
    fn long_excludes_o_and_big_o() {
        let fatal = "sinfo: fatal: Options -o(--format) and -l(--long) are mutually \
                     exclusive. Please remove one and retry.\n";
        for args in [&["-l", "-o", "%P"][..], &["-O", "partition", "-l"][..]] {
            assert_eq!(refused(args), (String::new(), fatal.to_owned(), 1));
        }
        let env = |name: &str| (name == "SINFO_FORMAT").then(|| OsString::from("%P"));
        assert!(parse_options(&["-l".to_owned()], &env).is_ok());
    }

    #[test]
    fn iterate_reads_as_atoi() {
        assert_eq!(
            refused(&["-i", "99999999999999999999", "-t", "foo"]),
            (
                String::new(),
                "sinfo: error: Error: invalid entry for --iterate=99999999999999999999\n"
                    .to_owned(),
                1
            )
        );
        let o = parse(&["-i", "5000000000"]);
        assert_eq!(Plan::new(&o).unwrap().iterate, Some(705_032_704));
    }

    #[test]
    fn usage_is_the_2205_text() {
        let (out, err, code) = refused(&["--usage"]);
        assert_eq!((err.as_str(), code), ("", 0));
        assert_eq!(
            out,
            "Usage: sinfo [-abdelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]\n\
             \x20            [-S fields] [-o format] [-O Format] [--federation] [--local]\n"
        );
    }

    #[test]
    fn layouts_follow_options() {
        assert_eq!(format_for(&parse(&[])), render::DEFAULT_FORMAT);
        assert_eq!(format_for(&parse(&["-N", "-l"])), render::NODE_LONG_FORMAT);
        assert_eq!(format_for(&parse(&["-Nl"])), render::NODE_LONG_FORMAT);
        assert_eq!(format_for(&parse(&["-s"])), render::SUMMARY_FORMAT);
        assert_eq!(format_for(&parse(&["-R"])), render::REASON_FORMAT);
        assert_eq!(format_for(&parse(&["--form=%P"])), "%P");
    }

    #[test]
    fn environment_format_is_overridden() {
        let env = |name: &str| (name == "SINFO_FORMAT").then(|| OsString::from("%N"));
        let o = parse_options(&[], &env).unwrap();
        assert_eq!(format_for(&o), "%N");
        let o = parse_options(&["-o".into(), "%P".into()], &env).unwrap();
        assert_eq!(format_for(&o), "%P");
    }

    #[test]
    fn bad_option_message() {
        let err = parse_options(&["--bogus".into()], &|_| None).unwrap_err();
        assert_eq!(err.to_string(), "unrecognized option '--bogus'");
    }

    #[test]
    fn options_act_and_alias_as_slurm() {
        assert!(parse(&["-V", "--bogus"]).version);
        assert!(parse(&["--usage"]).usage);
        assert!(parse(&["--help", "--bogus"]).help);
        let o = parse(&["-S", "-P,N", "-i5", "-O", "nodelist"]);
        assert_eq!(o.sort.as_deref(), Some("-P,N"));
        assert_eq!(o.iterate.as_deref(), Some("5"));
        assert!(o.format_long);
        // -s, -N and -R win over SINFO_FORMAT.
        let env = |name: &str| match name {
            "SINFO_FORMAT" => Some(OsString::from("%N")),
            "SINFO_SORT" => Some(OsString::from("-N")),
            _ => None,
        };
        let o = parse_options(&["-s".into()], &env).unwrap();
        assert_eq!(format_for(&o), render::SUMMARY_FORMAT);
        assert_eq!(o.sort.as_deref(), Some("-N"));
        let o = parse_options(&["--sort=P".into()], &env).unwrap();
        assert_eq!(o.sort.as_deref(), Some("P"));
    }

    #[test]
    fn plan_checks_iterate_and_reads_formats() {
        let plan = |args: &[&str]| Plan::new(&parse(args));
        assert_eq!(plan(&["-i", "3"]).unwrap().iterate, Some(3));
        let refused = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
            parse_options(&args, &|_| None).unwrap_err().to_string()
        };
        assert_eq!(
            refused(&["-i", "x"]),
            "sinfo: error: Error: invalid entry for --iterate=x"
        );
        assert_eq!(
            refused(&["--iterate=0"]),
            "sinfo: error: Error: invalid entry for --iterate=0"
        );
        let p = plan(&["-O", "partition,bogus,nodes:.3"]).unwrap();
        assert_eq!(p.unknown_fields, vec!["bogus".to_owned()]);
        assert_eq!(p.items.len(), 2);
        // An unknown code is reported and printed as written.
        let p = plan(&["-o", "%P %! %5!"]).unwrap();
        assert_eq!(p.unknown_codes, vec!["!", "!"]);
        assert_eq!(
            p.items.last(),
            Some(&crate::format::Item::Literal(" %! %5!".to_owned()))
        );
        assert!(plan(&["-i", "3"]).unwrap().date_line);
        assert!(!plan(&["-i", "3", "-h"]).unwrap().date_line);
        assert_eq!(
            plan(&["-N"]).unwrap().sort,
            render::parse_sort(render::NODE_SORT)
        );
    }

    struct TwoReports {
        now: i64,
        pauses: Vec<u64>,
    }

    impl Pacer for TwoReports {
        fn now(&mut self) -> i64 {
            self.now
        }

        fn pause(&mut self, seconds: u64) -> bool {
            self.pauses.push(seconds);
            self.now += i64::try_from(seconds).unwrap();
            self.pauses.len() < 2
        }
    }

    fn reply() -> Reply {
        let part = PartitionInfo {
            name: "debug".into(),
            is_default: true,
            ..PartitionInfo::default()
        };
        let node = |name: &str| NodeInfo {
            name: name.into(),
            state: slurm_proto::v1::NodeState::Idle as i32,
            cpus: 2,
            partitions: vec!["debug".into()],
            ..NodeInfo::default()
        };
        (vec![part], vec![node("n2"), node("n1")])
    }

    #[test]
    fn iterate_repeats_the_report() {
        let plan = Plan::new(&parse(&["-i", "60", "-N", "-o", "%N %P"])).unwrap();
        let mut calls = 0;
        let mut fetch = || {
            calls += 1;
            if calls == 1 {
                Err(
                    "slurm_load_partitions: Unable to contact slurm controller (connect failure)"
                        .to_owned(),
                )
            } else {
                Ok(reply())
            }
        };
        let mut pacer = TwoReports {
            now: 1_795_251_600,
            pauses: Vec::new(),
        };
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        let zone = Zone::Fixed(slurm_common::time::FixedZone::UTC);
        let code = report_loop(&plan, &mut fetch, &mut pacer, zone, &mut out);
        assert_eq!(code, 1);
        assert_eq!(calls, 2);
        assert_eq!(pacer.pauses, vec![60, 60]);
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "Sat Nov 21 09:00:00 2026\n\nSat Nov 21 09:01:00 2026\nNODELIST PARTITION\nn1 debug*\nn2 debug*\n\n"
        );
        assert_eq!(
            String::from_utf8(e).unwrap(),
            "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n"
        );
    }

    #[test]
    fn sort_option_orders_rows() {
        let plan = Plan::new(&parse(&["-N", "-h", "-S", "-N", "-o", "%N"])).unwrap();
        let (parts, nodes) = reply();
        let text = plan.render(parts, nodes, &Ctx::system(0)).unwrap();
        assert_eq!(text, "n2\nn1\n");
    }

    #[test]
    fn the_last_of_json_and_yaml_wins() {
        assert_eq!(parse(&[]).dump, None);
        assert_eq!(parse(&["--json"]).dump, Some(Dump::Json));
        assert_eq!(parse(&["--yaml"]).dump, Some(Dump::Yaml));
        assert_eq!(parse(&["--json", "--yaml"]).dump, Some(Dump::Yaml));
        assert_eq!(parse(&["--yaml", "--json"]).dump, Some(Dump::Json));
    }

    #[test]
    fn yaml_is_the_json_document() {
        let (parts, nodes) = reply();
        let ctx = Ctx::utc(0);
        let render = |args: &[&str]| {
            Plan::new(&parse(args))
                .unwrap()
                .render(parts.clone(), nodes.clone(), &ctx)
                .unwrap()
        };
        let json = render(&["--json"]);
        let out = render(&["--yaml", "-l"]);
        assert_eq!(out, format::yaml::json_to_yaml(&json).unwrap());
        assert!(out.starts_with("%YAML 1.1\n--- !!map\n!!str meta: !!map\n"));
        assert!(out.contains("\n!!str nodes: !!seq\n- !!map\n  !!str architecture: "));
        assert!(out.ends_with("\n...\n"));
        // Selections do not narrow the document.
        for args in [
            &["--json", "-n", "nope"][..],
            &["--json", "-t", "down"],
            &["--json", "-p", "nope", "-R"],
            &["--json", "-d"],
        ] {
            assert_eq!(render(args), json, "{args:?}");
        }
        assert!(json.contains("\"nodes\": ["), "{json}");
        assert!(!json.contains("\"nodes\": []"), "{json}");
    }
}
