//! `sinfo`: show partitions and their nodes.
//!
//! Options are read as Slurm reads them (see [`crate::squeue::getopt`]);
//! partitions and nodes come from `GetPartitions` and `GetNodes`, and
//! [`crate::format::sinfo`] groups and renders them.

use std::ffi::OsString;
use std::io::{self, Write};

use slurm_common::hostlist;
use slurm_proto::v1::{GetNodesRequest, GetPartitionsRequest, NodeInfo, PartitionInfo};

use crate::client::{self, ClientConfig, Controller, EnvLookup};
use crate::format::scontrol::node_state;
use crate::format::sinfo::{self as render, View};
use crate::format::{self, Ctx, Item};
use crate::output::{version_line, Output};
use crate::squeue::getopt::{self, Arg, Spec};

const fn spec(long: &'static str, short: Option<char>, arg: Arg) -> Spec {
    Spec { long, short, arg }
}

const SPECS: &[Spec] = &[
    spec("all", Some('a'), Arg::No),
    spec("clusters", Some('M'), Arg::Required),
    spec("dead", Some('d'), Arg::No),
    spec("exact", Some('e'), Arg::No),
    spec("federation", None, Arg::No),
    spec("format", Some('o'), Arg::Required),
    spec("Format", Some('O'), Arg::Required),
    spec("help", None, Arg::No),
    spec("hide", None, Arg::No),
    spec("iterate", Some('i'), Arg::Required),
    spec("json", None, Arg::No),
    spec("list-reasons", Some('R'), Arg::No),
    spec("local", None, Arg::No),
    spec("long", Some('l'), Arg::No),
    spec("Node", Some('N'), Arg::No),
    spec("noconvert", None, Arg::No),
    spec("noheader", Some('h'), Arg::No),
    spec("nodes", Some('n'), Arg::Required),
    spec("partition", Some('p'), Arg::Required),
    spec("reservation", Some('T'), Arg::No),
    spec("responding", Some('r'), Arg::No),
    spec("sort", Some('S'), Arg::Required),
    spec("states", Some('t'), Arg::Required),
    spec("summarize", Some('s'), Arg::No),
    spec("usage", None, Arg::No),
    spec("verbose", Some('v'), Arg::No),
    spec("version", Some('V'), Arg::No),
    spec("yaml", None, Arg::No),
];

const USAGE: &str = "Usage: sinfo [-adelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format] [--federation] [--local]
             [--json=data_parser] [--yaml=data_parser]";

/// What the command line asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub dead: bool,
    pub format: Option<String>,
    pub help: bool,
    pub json: bool,
    pub reasons: bool,
    pub long: bool,
    pub node_oriented: bool,
    pub no_header: bool,
    pub nodes: Option<String>,
    pub partitions: Vec<String>,
    pub responding: bool,
    pub states: Vec<String>,
    pub summarize: bool,
    pub version: bool,
}

/// Reads the options (arguments without the program name) and
/// `SINFO_FORMAT`/`SINFO_PARTITION`.
pub fn parse_options(args: &[String], env: EnvLookup<'_>) -> Result<Options, getopt::OptError> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| !v.is_empty())
    };
    let split = |v: Option<String>| -> Vec<String> {
        v.unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut o = Options {
        format: var("SINFO_FORMAT"),
        partitions: split(var("SINFO_PARTITION")),
        ..Options::default()
    };
    let (opts, _words) = getopt::parse(args, SPECS)?;
    for (name, value) in opts {
        match name {
            "dead" => o.dead = true,
            "format" => o.format = value,
            "help" | "usage" => o.help = true,
            "json" => o.json = true,
            "list-reasons" => o.reasons = true,
            "long" => o.long = true,
            "Node" => o.node_oriented = true,
            "noheader" => o.no_header = true,
            "nodes" => o.nodes = value,
            "partition" => o.partitions = split(value),
            "responding" => o.responding = true,
            "states" => {
                o.states = split(value)
                    .into_iter()
                    .map(|s| s.to_ascii_lowercase())
                    .collect()
            }
            "summarize" => o.summarize = true,
            "version" => o.version = true,
            _ => {}
        }
    }
    Ok(o)
}

/// The layout the options select.
pub fn format_for(o: &Options) -> &str {
    if let Some(f) = &o.format {
        return f;
    }
    match (o.reasons, o.summarize, o.node_oriented, o.long) {
        (true, _, _, false) => render::REASON_FORMAT,
        (true, _, _, true) => render::REASON_LONG_FORMAT,
        (false, true, _, _) => render::SUMMARY_FORMAT,
        (false, false, true, true) => render::NODE_LONG_FORMAT,
        (false, false, true, false) => render::NODE_FORMAT,
        (false, false, false, true) => render::LONG_FORMAT,
        (false, false, false, false) => render::DEFAULT_FORMAT,
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
        || (word == "alloc" && base == "allocated")
        || (word == "mix" && base == "mixed")
        || (word == "drain" && (long.starts_with("drain")))
        || word == "all"
}

/// Applies `-p`, `-n`, `-t`, `-d` and `-r` to the controller's reply.
pub fn select(
    o: &Options,
    partitions: Vec<PartitionInfo>,
    nodes: Vec<NodeInfo>,
) -> (Vec<PartitionInfo>, Vec<NodeInfo>) {
    let parts: Vec<PartitionInfo> = partitions
        .into_iter()
        .filter(|p| !p.hidden || !o.partitions.is_empty())
        .filter(|p| o.partitions.is_empty() || o.partitions.contains(&p.name))
        .collect();
    let wanted: Option<Vec<String>> = o
        .nodes
        .as_deref()
        .map(|expr| hostlist::expand(expr).unwrap_or_else(|_| vec![expr.to_owned()]));
    let nodes = nodes
        .into_iter()
        .filter(|n| wanted.as_ref().is_none_or(|w| w.contains(&n.name)))
        .filter(|n| o.states.is_empty() || o.states.iter().any(|s| state_matches(n, s)))
        .filter(|n| {
            let s = node_state(n);
            let not_responding = s.has(slurm_common::state::NodeFlag::NotResponding);
            let down = matches!(s.base, slurm_common::state::NodeBaseState::Down);
            (!o.dead || down || not_responding) && (!o.responding || !not_responding)
        })
        .collect();
    (parts, nodes)
}

/// Renders what the options ask for from the controller's reply.
pub fn render_text(
    o: &Options,
    items: &[Item],
    partitions: Vec<PartitionInfo>,
    nodes: Vec<NodeInfo>,
    ctx: &Ctx,
) -> String {
    let (parts, nodes) = select(o, partitions, nodes);
    if o.json {
        return format::json::nodes(&nodes, ctx);
    }
    let view = View {
        node_oriented: o.node_oriented,
        reasons_only: o.reasons,
        header: !o.no_header,
        date_line: o.long,
    };
    render::render(&parts, &nodes, items, view, ctx)
}

/// Runs `sinfo` with the process's arguments, streams and environment.
pub fn run(args: Vec<OsString>) -> i32 {
    let stdout = io::stdout();
    let mut stdout = io::BufWriter::new(stdout.lock());
    let stderr = io::stderr();
    let mut stderr = stderr.lock();
    let code = run_with(&args, &client::process_env, &mut stdout, &mut stderr);
    let _ = stdout.flush();
    code
}

/// [`run`] with the environment and both output streams handed in.
pub fn run_with(
    args: &[OsString],
    env: EnvLookup<'_>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let mut out = Output::new(stdout, stderr);
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let o = match parse_options(&args, env) {
        Ok(o) => o,
        Err(e) => {
            out.error_line(&format!("sinfo: {e}"));
            out.error_line("Try \"sinfo --help\" for more information");
            return 1;
        }
    };
    if o.version {
        return out.block("sinfo", &version_line());
    }
    if o.help {
        return out.block("sinfo", USAGE);
    }
    let items = match render::parse_format(format_for(&o)) {
        Ok(items) => items,
        Err(e) => {
            let mut msg = e.to_string();
            if let Some(first) = msg.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            out.error_line(&format!("sinfo: error: {msg}"));
            return 1;
        }
    };
    let config = match ClientConfig::load_with(env) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("sinfo: error: {e}"));
            return 1;
        }
    };
    let mut controller = match Controller::new(&config) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("sinfo: error: {e}"));
            return 1;
        }
    };
    let fetched = client::block_on(async {
        let parts = controller
            .call(|mut c| async move { c.get_partitions(GetPartitionsRequest::default()).await })
            .await
            .map_err(|e| format!("slurm_load_partitions: {e}"))?;
        let nodes = controller
            .call(|mut c| async move { c.get_nodes(GetNodesRequest::default()).await })
            .await
            .map_err(|e| format!("slurm_load_node: {e}"))?;
        Ok::<_, String>((parts.partitions, nodes.nodes))
    });
    let (parts, nodes) = match fetched {
        Ok(r) => r,
        Err(message) => {
            out.error_line(&message);
            return 1;
        }
    };
    let now = slurm_common::auth::unix_now();
    out.block(
        "sinfo",
        &render_text(&o, &items, parts, nodes, &Ctx::system(now)),
    )
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
}
