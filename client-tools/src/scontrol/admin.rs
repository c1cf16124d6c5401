//! The administrators' `scontrol` commands and the ones about this host:
//! `errnumstr`, `show daemons`, `show aliases`, `shutdown`, `completing`,
//! `write batch_script`, `write config`, `setdebug` and `setdebugflags`.
//!
//! Parsing ([`parse`]) is pure and refuses what Slurm 22.05 refuses, with
//! its words; numbers are read the way its C library calls read them
//! (`strtol`, `strtoul`, `atoll`), so odd input (`setdebug -1`, `write
//! batch_script 5_1`, `errnumstr 99999999999`) does what it does there.
//! `errnumstr`, `show daemons` and `show aliases` need no controller:
//! the last two read slurm.conf and compare it with this host's name.
//!
//! Two of Slurm's exit statuses look like slips but scripts may lean on
//! them, so they are kept: `write batch_script` exits 0 when the script
//! could not be had (after saying so), and `setdebug` with a number that
//! reads as -1 does nothing and exits 0.

use std::io::Write as _;

use slurm_common::conf::{debug_flag, LogLevel, SlurmConf};
use slurm_common::hostlist;
use slurm_proto::v1;

use super::controller::CtlError;
use super::{errnum, EnvLookup, Options};
use crate::client::{block_on, short_hostname, ClientConfig, Controller};
use crate::format::Ctx;
use crate::output::Output;

/// The keywords served here, as [`super::Keyword`] names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminKeyword {
    Completing,
    Errnumstr,
    SetDebug,
    SetDebugFlags,
    Shutdown,
    Abort,
    Write,
    SchedLogLevel,
    Reboot,
    CancelReboot,
    Token,
}

/// One parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminCommand {
    /// `errnumstr N`.
    Errnumstr { number: i32 },
    /// `show daemons`: which daemons slurm.conf runs on this host.
    ShowDaemons,
    /// `show aliases [HOST]`: the NodeNames of HOST (default this host).
    ShowAliases { host: Option<String> },
    /// `shutdown [slurmctld|controller]`.
    Shutdown { controller_only: bool },
    /// `abort`: the controller stops at once, with a core file.
    Abort,
    /// `completing`: the jobs still completing and their nodes.
    Completing,
    /// `write batch_script JOBID [FILE|-]`.
    WriteBatchScript { job_id: u32, file: Option<String> },
    /// `write config [FILE]`.
    WriteConfig { file: Option<String> },
    /// `setdebug LEVEL`: a SlurmctldDebug number (may lie outside 0-9, as
    /// Slurm sends it; the controller brings it into range).
    SetDebug { level: i32 },
    /// `setdebugflags +NAME,...` or `-NAME,...`, names in Slurm's spelling.
    SetDebugFlags {
        add: Vec<String>,
        remove: Vec<String>,
    },
    /// Accepted, and nothing to do (`write batch_script` without a job,
    /// `setdebug -1`).
    Nothing,
    /// `schedloglevel 0|1|enable|disable`: there is no scheduler log to
    /// turn on or off (Slurm's answer without SlurmSchedLogFile).
    SchedLogLevel,
    /// `reboot [asap] [nextstate=...] [reason=...] ALL|NODES`: nodes are
    /// not rebooted here.
    Reboot,
    /// `cancel_reboot NODES`: no node is ever waiting for a reboot.
    CancelReboot { nodes: String },
    /// `token [lifespan=N] [username=NAME]`: there is no auth/jwt.
    Token,
}

fn refuse(line: String) -> CtlError {
    CtlError::new(vec![line])
}

fn too_many(tag: &str) -> CtlError {
    refuse(format!("too many arguments for keyword:{tag}"))
}

fn too_few(tag: &str) -> CtlError {
    refuse(format!("too few arguments for keyword:{tag}"))
}

/// Parses the arguments of `keyword`, written `tag` by the user (Slurm
/// repeats the word as typed in its messages).
pub fn parse(keyword: AdminKeyword, tag: &str, args: &[String]) -> Result<AdminCommand, CtlError> {
    match keyword {
        AdminKeyword::Errnumstr => {
            let [arg] = args else {
                return Err(refuse(format!("one arguments required for keyword:{tag}")));
            };
            match c_strtol(arg) {
                // `int` in Slurm: the low 32 bits.
                Some(n) => Ok(AdminCommand::Errnumstr { number: n as i32 }),
                None => Err(refuse(format!(
                    "numeric arguments required for keyword:{tag}"
                ))),
            }
        }
        AdminKeyword::Completing if !args.is_empty() => Err(too_many(tag)),
        AdminKeyword::Completing => Ok(AdminCommand::Completing),
        AdminKeyword::Shutdown => match args {
            [] => Ok(AdminCommand::Shutdown {
                controller_only: false,
            }),
            [arg] if arg == "slurmctld" || arg == "controller" => Ok(AdminCommand::Shutdown {
                controller_only: true,
            }),
            [arg] => Err(refuse(format!("invalid shutdown argument:{arg}"))),
            _ => Err(too_many(tag)),
        },
        // Slurm 22.05 reads no argument of `abort`, and says nothing of
        // them.
        AdminKeyword::Abort => Ok(AdminCommand::Abort),
        AdminKeyword::Write => parse_write(tag, args),
        AdminKeyword::SetDebug => match args {
            [] => Err(too_few(tag)),
            [arg] => parse_level(arg),
            _ => Err(too_many(tag)),
        },
        AdminKeyword::SetDebugFlags => match args {
            [] => Err(too_few(tag)),
            [arg] => parse_flags(arg),
            _ => Err(too_many(tag)),
        },
        AdminKeyword::SchedLogLevel => match args {
            [] => Err(too_few(tag)),
            [arg] => {
                let word = ["enable", "disable"]
                    .iter()
                    .any(|w| arg.eq_ignore_ascii_case(w));
                if word || matches!(c_strtol(arg), Some(0 | 1)) {
                    Ok(AdminCommand::SchedLogLevel)
                } else {
                    Err(refuse(format!("invalid schedlog level: {arg}")))
                }
            }
            _ => Err(too_many(tag)),
        },
        AdminKeyword::Reboot => {
            let option = |a: &str| {
                a.eq_ignore_ascii_case("asap")
                    || ["nextstate=", "reason="].iter().any(|p| {
                        a.get(..p.len())
                            .is_some_and(|head| head.eq_ignore_ascii_case(p))
                    })
            };
            if args.iter().all(|a| option(a)) {
                return Err(refuse(
                    "Missing node list. Specify ALL|<NodeList>".to_owned(),
                ));
            }
            Ok(AdminCommand::Reboot)
        }
        AdminKeyword::CancelReboot => match args.first() {
            None => Err(refuse(format!("missing argument for keyword:{tag}"))),
            Some(nodes) => Ok(AdminCommand::CancelReboot {
                nodes: nodes.clone(),
            }),
        },
        AdminKeyword::Token => {
            let known = |a: &str| {
                ["lifespan=", "username="].iter().any(|p| {
                    a.get(..p.len())
                        .is_some_and(|head| head.eq_ignore_ascii_case(p))
                })
            };
            match args.iter().find(|a| !known(a)) {
                Some(bad) => Err(refuse(format!("Invalid option: `{bad}`"))),
                None => Ok(AdminCommand::Token),
            }
        }
    }
}

/// `write batch_script JOBID [FILE]` or `write config [FILE]`.
fn parse_write(tag: &str, args: &[String]) -> Result<AdminCommand, CtlError> {
    let Some((what, rest)) = args.split_first() else {
        return Err(too_few(tag));
    };
    if super::abbreviates(what, "batch_script", 5) {
        match rest {
            // Slurm accepts this and does nothing.
            [] => Ok(AdminCommand::Nothing),
            [id] | [id, _] => Ok(AdminCommand::WriteBatchScript {
                // `uint32_t` from `atoll`: the low 32 bits.
                job_id: c_atoll(id) as u32,
                file: rest.get(1).cloned(),
            }),
            _ => Err(too_many(tag)),
        }
    } else if what.eq_ignore_ascii_case("config") {
        match rest {
            [] | [_] => Ok(AdminCommand::WriteConfig {
                file: rest.first().cloned(),
            }),
            _ => Err(too_many(tag)),
        }
    } else {
        Err(refuse(format!("invalid write argument:{what}")))
    }
}

/// `setdebug LEVEL`: a number up to 9 (read as `strtoul` does, so `-5`
/// passes and `-1` means nothing), else a level name.
fn parse_level(arg: &str) -> Result<AdminCommand, CtlError> {
    let number = c_strtoul(arg).map(|n| n as i32).filter(|&n| n <= 9);
    let level = match number {
        Some(n) => n,
        None => LogLevel::ALL
            .iter()
            .position(|l| l.as_str().eq_ignore_ascii_case(arg))
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| CtlError::hushable(vec![format!("invalid debug level: {arg}")]))?,
    };
    if level == -1 {
        return Ok(AdminCommand::Nothing);
    }
    Ok(AdminCommand::SetDebug { level })
}

/// `setdebugflags +NAME[,NAME...]` or `-NAME[,NAME...]`.
fn parse_flags(arg: &str) -> Result<AdminCommand, CtlError> {
    let (add, list) = match arg.as_bytes().first() {
        Some(b'+') => (true, &arg[1..]),
        Some(b'-') => (false, &arg[1..]),
        _ => {
            return Err(CtlError::hushable(vec![
                format!("invalid debug flag: {arg}"),
                "Usage: setdebugflags [+|-]NAME".to_string(),
            ]))
        }
    };
    let mut names = Vec::new();
    for token in list.split(',').filter(|t| !t.is_empty()) {
        match debug_flag(token) {
            Some(name) => names.push(name.to_string()),
            None => {
                // -Q leaves the second line unsaid, not the first (an
                // error log line).
                return Err(CtlError::partly_hushable(
                    vec![
                        format!("scontrol: error: Invalid DebugFlag: {token}"),
                        format!("invalid debug flag: {arg}"),
                    ],
                    1,
                ));
            }
        }
    }
    Ok(if add {
        AdminCommand::SetDebugFlags {
            add: names,
            remove: Vec::new(),
        }
    } else {
        AdminCommand::SetDebugFlags {
            add: Vec::new(),
            remove: names,
        }
    })
}

/// The C library's blanks (`isspace`).
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Splits `s` as `strtol` reads it: blanks, a sign, digits. Returns
/// (negative, digits, rest after the digits); no digits gives `None`.
fn c_number(s: &str) -> Option<(bool, &str, &str)> {
    let t = s.trim_start_matches(is_c_space);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = t.bytes().take_while(u8::is_ascii_digit).count();
    (end > 0).then(|| (negative, &t[..end], &t[end..]))
}

/// `strtol(s, &end, 10)` with `*end == '\0'` required: the whole word is
/// a number (an empty word reads as 0, as in C). Out of range saturates.
pub fn c_strtol(s: &str) -> Option<i64> {
    if s.is_empty() {
        return Some(0);
    }
    let (negative, digits, rest) = c_number(s)?;
    if !rest.is_empty() {
        return None;
    }
    let magnitude = digits.parse::<i128>().unwrap_or(i128::MAX);
    let value = if negative { -magnitude } else { magnitude };
    Some(i64::try_from(value).unwrap_or(if negative { i64::MIN } else { i64::MAX }))
}

/// `strtoul(s, &end, 10)` with `*end == '\0'` required. A minus sign
/// negates in unsigned arithmetic; out of range gives the largest value.
pub fn c_strtoul(s: &str) -> Option<u64> {
    if s.is_empty() {
        return Some(0);
    }
    let (negative, digits, rest) = c_number(s)?;
    if !rest.is_empty() {
        return None;
    }
    let value = digits.parse::<u64>().unwrap_or(u64::MAX);
    Some(if negative && value != u64::MAX {
        value.wrapping_neg()
    } else {
        value
    })
}

/// `atoll(s)`: the number at the start of `s`, 0 when there is none.
pub fn c_atoll(s: &str) -> i64 {
    match c_number(s) {
        Some((negative, digits, _)) => {
            let magnitude = digits.parse::<i128>().unwrap_or(i128::MAX);
            let value = if negative { -magnitude } else { magnitude };
            i64::try_from(value).unwrap_or(if negative { i64::MIN } else { i64::MAX })
        }
        None => 0,
    }
}

/// `show daemons`: `slurmctld` when `host` (or `localhost`) is a
/// SlurmctldHost, `slurmd` when it is a node's NodeHostname; Slurm's
/// spacing, and `(null)` for neither.
pub fn daemons_line(conf: &SlurmConf, host: &str) -> &'static str {
    let me = |name: &str| name == host || name == "localhost";
    let ctld = conf.slurmctld_hosts.iter().any(|h| me(&h.name));
    let slurmd = conf.nodes.iter().any(|n| me(&n.hostname));
    match (ctld, slurmd) {
        (true, true) => "slurmctld slurmd",
        (true, false) => "slurmctld ",
        (false, true) => "slurmd",
        (false, false) => "(null)",
    }
}

/// `show aliases`: the NodeNames whose NodeHostname is `host`, in
/// slurm.conf order, separated by blanks; `None` when there are none
/// (Slurm then prints nothing, not even a newline).
pub fn aliases_line(conf: &SlurmConf, host: &str) -> Option<String> {
    let names: Vec<&str> = conf
        .nodes
        .iter()
        .filter(|n| n.hostname == host)
        .map(|n| n.name.as_str())
        .collect();
    (!names.is_empty()).then(|| names.join(" "))
}

/// slurm.conf, for a command answered without the controller; `None`
/// once the reason it cannot be read is printed.
fn local_config(env: EnvLookup<'_>, out: &mut Output<'_>) -> Option<ClientConfig> {
    match ClientConfig::load_with(env) {
        Ok(c) => Some(c),
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            None
        }
    }
}

/// What `reboot` and `cancel_reboot` answer, nodes never being rebooted
/// here: Slurm's words when RebootProgram is not set (for `reboot`), or
/// when no named node waits for a reboot (for `cancel_reboot`, after the
/// names are checked).
pub fn reboot_lines(command: &AdminCommand, conf: &SlurmConf) -> Vec<String> {
    match command {
        AdminCommand::CancelReboot { nodes } => {
            let known = hostlist::expand(nodes).is_ok_and(|names| {
                names
                    .iter()
                    .all(|name| conf.nodes.iter().any(|n| n.name == *name))
            });
            vec![if known {
                "slurm_update error: Invalid node state specified".to_owned()
            } else {
                "slurm_update error: Invalid node name specified".to_owned()
            }]
        }
        _ if conf.raw_entry("RebootProgram").is_none() => vec![
            "scontrol: error: RebootProgram isn't defined".to_owned(),
            "scontrol_reboot_nodes error: Unspecified error".to_owned(),
        ],
        _ => vec!["scontrol: error: reboot: rebooting nodes is not supported".to_owned()],
    }
}

/// `completing`: one line per job with the COMPLETING flag, in the
/// controller's order: its end, how long it has been completing, and its
/// nodes still completing or down (each list sorted, shown only when not
/// empty). Every field is followed by a blank, as in Slurm.
pub fn completing_lines(jobs: &[v1::JobInfo], nodes: &[v1::NodeInfo], ctx: &Ctx) -> String {
    use std::collections::HashMap;
    let by_name: HashMap<&str, &v1::NodeInfo> =
        nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let completing_flag = v1::JobStateFlag::Completing as i32;
    let mut out = String::new();
    for job in jobs
        .iter()
        .filter(|j| j.state_flags.contains(&completing_flag))
    {
        let mut completing = Vec::new();
        let mut down = Vec::new();
        for name in hostlist::expand(&job.nodes).unwrap_or_default() {
            let Some(node) = by_name.get(name.as_str()) else {
                continue;
            };
            if node
                .state_flags
                .contains(&(v1::NodeStateFlag::Completing as i32))
            {
                completing.push(name);
            } else if node.state == v1::NodeState::Down as i32 {
                down.push(name);
            }
        }
        out.push_str(&format!("JobId={} ", job.job_id));
        out.push_str(&format!("EndTime={} ", ctx.timestamp(job.end_time)));
        let since = ctx.now.saturating_sub(job.end_time);
        let since = u64::try_from(since).map_or_else(
            |_| "INVALID".to_string(),
            slurm_common::time::format_duration_sacct,
        );
        out.push_str(&format!("CompletingTime={since} "));
        if !completing.is_empty() {
            out.push_str(&format!(
                "Nodes(COMPLETING)={} ",
                hostlist::compress_sorted(&completing)
            ));
        }
        if !down.is_empty() {
            out.push_str(&format!(
                "Nodes(DOWN)={} ",
                hostlist::compress_sorted(&down)
            ));
        }
        out.push('\n');
    }
    out
}

/// Prints one line; 1 when standard output cannot be written.
fn print(out: &mut Output<'_>, text: &str) -> i32 {
    match out.line(text) {
        Ok(()) => 0,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            1
        }
    }
}

/// The C library's text for an I/O error, as `%m` prints it.
fn os_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => errnum::text(n),
        None => e.to_string(),
    }
}

/// Runs a parsed command and returns its exit status.
pub fn execute(
    command: &AdminCommand,
    options: &Options,
    env: EnvLookup<'_>,
    out: &mut Output<'_>,
) -> i32 {
    match command {
        AdminCommand::Nothing => 0,
        AdminCommand::Errnumstr { number } => print(out, &errnum::text(*number)),
        AdminCommand::SchedLogLevel => {
            out.error_line(
                "slurm_set_schedlog_level error: Requested operation is presently disabled",
            );
            1
        }
        AdminCommand::Token => {
            out.error_line("Error fetching token");
            1
        }
        AdminCommand::Reboot | AdminCommand::CancelReboot { .. } => {
            let Some(config) = local_config(env, out) else {
                return 1;
            };
            for line in reboot_lines(command, &config.conf) {
                out.error_line(&line);
            }
            1
        }
        AdminCommand::ShowDaemons | AdminCommand::ShowAliases { .. } => {
            let Some(config) = local_config(env, out) else {
                return 1;
            };
            let me = short_hostname();
            match command {
                AdminCommand::ShowAliases { host } => {
                    match aliases_line(&config.conf, host.as_deref().unwrap_or(&me)) {
                        Some(line) => print(out, &line),
                        None => 0,
                    }
                }
                _ => print(out, daemons_line(&config.conf, &me)),
            }
        }
        _ => match super::controller::connect(env, out) {
            Some(mut controller) => block_on(run(command, options, env, &mut controller, out)),
            None => 1,
        },
    }
}

async fn run(
    command: &AdminCommand,
    options: &Options,
    env: EnvLookup<'_>,
    c: &mut Controller,
    out: &mut Output<'_>,
) -> i32 {
    match command {
        AdminCommand::Shutdown { .. } | AdminCommand::Abort => {
            let scope = match command {
                AdminCommand::Abort => v1::ShutdownScope::Abort,
                AdminCommand::Shutdown {
                    controller_only: true,
                } => v1::ShutdownScope::Controller,
                _ => v1::ShutdownScope::All,
            };
            let request = v1::ShutdownRequest {
                scope: scope as i32,
            };
            let reply = c
                .call(|mut cl| async move { cl.shutdown(request).await })
                .await;
            status(out, "slurm_shutdown error", reply)
        }
        AdminCommand::SetDebug { level } => {
            let request = v1::SetDebugLevelRequest { level: *level };
            let reply = c
                .call(|mut cl| async move { cl.set_debug_level(request).await })
                .await;
            status(out, "slurm_set_debug_level error", reply)
        }
        AdminCommand::SetDebugFlags { add, remove } => {
            let request = v1::SetDebugFlagsRequest {
                add: add.clone(),
                remove: remove.clone(),
            };
            let reply = c
                .call(|mut cl| {
                    let request = request.clone();
                    async move { cl.set_debug_flags(request).await }
                })
                .await;
            status(out, "slurm_set_debug_flags error", reply)
        }
        AdminCommand::Completing => completing(c, out).await,
        AdminCommand::WriteBatchScript { job_id, file } => {
            write_batch_script(c, *job_id, file.as_deref(), options, out).await
        }
        AdminCommand::WriteConfig { file } => {
            super::write_config::run(c, file.as_deref(), env, out).await
        }
        // Answered without the controller (`execute`).
        AdminCommand::Nothing
        | AdminCommand::Errnumstr { .. }
        | AdminCommand::ShowDaemons
        | AdminCommand::ShowAliases { .. }
        | AdminCommand::SchedLogLevel
        | AdminCommand::Reboot
        | AdminCommand::CancelReboot { .. }
        | AdminCommand::Token => 0,
    }
}

/// 0, or 1 after `prefix: <Slurm's text>`.
fn status<T>(out: &mut Output<'_>, prefix: &str, reply: Result<T, crate::client::RpcError>) -> i32 {
    match reply {
        Ok(_) => 0,
        Err(e) => {
            out.error_line(&format!("{prefix}: {e}"));
            1
        }
    }
}

async fn completing(c: &mut Controller, out: &mut Output<'_>) -> i32 {
    let request = v1::GetJobsRequest {
        hide_hidden: false,
        filter: Some(v1::JobFilter::default()),
        changed_since: 0,
        detail: false,
        fields: Vec::new(),
    };
    let jobs = match c
        .call(|mut cl| {
            let request = request.clone();
            async move { cl.get_jobs(request).await }
        })
        .await
    {
        Ok(r) => r.jobs,
        Err(e) => {
            out.error_line(&format!("slurm_load_jobs error: {e}"));
            return 1;
        }
    };
    let nodes = match super::controller::load_nodes(c).await {
        Ok(nodes) => nodes,
        Err(e) => {
            out.error_line(&format!("slurm_load_nodes error: {e}"));
            return 1;
        }
    };
    let now = slurm_common::auth::unix_now();
    out.block(
        "scontrol",
        &completing_lines(&jobs, &nodes, &Ctx::system(now)),
    )
}

/// `write batch_script`: the file is made before asking (and removed
/// again when the answer is an error), as Slurm does; `-` is standard
/// output.
async fn write_batch_script(
    c: &mut Controller,
    job_id: u32,
    file: Option<&str>,
    options: &Options,
    out: &mut Output<'_>,
) -> i32 {
    let path = file.map_or_else(|| format!("slurm-{job_id}.sh"), str::to_string);
    let mut target = if path == "-" {
        None
    } else {
        match std::fs::File::create(&path) {
            Ok(f) => Some(f),
            Err(e) => {
                // Slurm's status here is 0.
                out.error_line(&format!("failed to open file `{path}`: {}", os_text(&e)));
                return 0;
            }
        }
    };
    let request = v1::GetBatchScriptRequest { job_id };
    let script = match c
        .call(|mut cl| async move { cl.get_batch_script(request).await })
        .await
    {
        Ok(r) => r.script,
        Err(e) => {
            if target.take().is_some() {
                let _ = std::fs::remove_file(&path);
            }
            out.error_line(&format!("job script retrieval failed: {e}"));
            // Slurm reports the failure and exits 0.
            return 0;
        }
    };
    match target.as_mut() {
        None => out.block("scontrol", &script),
        Some(f) => {
            if let Err(e) = f.write_all(script.as_bytes()).and_then(|()| f.flush()) {
                out.error_line(&format!(
                    "scontrol: error: cannot write {path}: {}",
                    os_text(&e)
                ));
                return 1;
            }
            if options.quiet {
                0
            } else {
                print(
                    out,
                    &format!("batch script for job {job_id} written to {path}"),
                )
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn p(keyword: AdminKeyword, tag: &str, args: &str) -> Result<AdminCommand, Vec<String>> {
        parse(keyword, tag, &words(args)).map_err(|e| e.lines)
    }

    #[test]
    fn c_numbers_read_as_the_c_library_reads_them() {
        assert_eq!(c_strtol("5"), Some(5));
        assert_eq!(c_strtol(" 5"), Some(5));
        assert_eq!(c_strtol("+3"), Some(3));
        assert_eq!(c_strtol("007"), Some(7));
        assert_eq!(c_strtol(""), Some(0));
        assert_eq!(c_strtol("-0"), Some(0));
        for bad in ["5 ", "5x", "0x10", "1e3", " ", "+", "-", "x"] {
            assert_eq!(c_strtol(bad), None, "{bad:?}");
        }
        assert_eq!(c_strtol("99999999999999999999"), Some(i64::MAX));
        assert_eq!(c_strtol("-99999999999999999999"), Some(i64::MIN));
        assert_eq!(c_strtoul("-1"), Some(u64::MAX));
        assert_eq!(c_strtoul("-5"), Some(u64::MAX - 4));
        assert_eq!(c_strtoul("99999999999999999999"), Some(u64::MAX));
        assert_eq!(c_atoll("5_1"), 5);
        assert_eq!(c_atoll("x"), 0);
        assert_eq!(c_atoll(" -7y"), -7);
    }

    #[test]
    fn errnumstr_arguments() {
        let e = |s| p(AdminKeyword::Errnumstr, "er", s);
        assert_eq!(e("2017"), Ok(AdminCommand::Errnumstr { number: 2017 }));
        // Slurm keeps the low 32 bits of the long it read.
        assert_eq!(
            e("99999999999"),
            Ok(AdminCommand::Errnumstr {
                number: 1_215_752_191
            })
        );
        assert_eq!(e("4294967295"), Ok(AdminCommand::Errnumstr { number: -1 }));
        assert_eq!(
            e("2147483648"),
            Ok(AdminCommand::Errnumstr { number: i32::MIN })
        );
        assert_eq!(
            e("5x"),
            Err(vec!["numeric arguments required for keyword:er".to_string()])
        );
        assert_eq!(
            e(""),
            Err(vec!["one arguments required for keyword:er".to_string()])
        );
        assert_eq!(
            e("1 2"),
            Err(vec!["one arguments required for keyword:er".to_string()])
        );
    }

    /// Slurm 22.05 reads no argument of `abort`.
    #[test]
    fn abort_takes_any_arguments() {
        for a in ["", "x", "x y"] {
            assert_eq!(p(AdminKeyword::Abort, "abort", a), Ok(AdminCommand::Abort));
        }
        assert_eq!(
            super::super::Keyword::parse("abort"),
            Some(super::super::Keyword::Admin(AdminKeyword::Abort))
        );
        assert_eq!(super::super::Keyword::parse("abor"), None);
    }

    #[test]
    fn shutdown_and_completing_arguments() {
        let s = |a| p(AdminKeyword::Shutdown, "SHUTDOWN", a);
        assert_eq!(
            s(""),
            Ok(AdminCommand::Shutdown {
                controller_only: false
            })
        );
        for a in ["slurmctld", "controller"] {
            assert_eq!(
                s(a),
                Ok(AdminCommand::Shutdown {
                    controller_only: true
                })
            );
        }
        // Slurm matches the words exactly.
        assert_eq!(
            s("SLURMCTLD"),
            Err(vec!["invalid shutdown argument:SLURMCTLD".to_string()])
        );
        assert_eq!(
            s("slurmd"),
            Err(vec!["invalid shutdown argument:slurmd".to_string()])
        );
        assert_eq!(
            s("slurmctld x"),
            Err(vec!["too many arguments for keyword:SHUTDOWN".to_string()])
        );
        assert_eq!(
            p(AdminKeyword::Completing, "com", ""),
            Ok(AdminCommand::Completing)
        );
        assert_eq!(
            p(AdminKeyword::Completing, "com", "x"),
            Err(vec!["too many arguments for keyword:com".to_string()])
        );
    }

    #[test]
    fn write_arguments() {
        let w = |a| p(AdminKeyword::Write, "Write", a);
        assert_eq!(
            w("batch_script 12"),
            Ok(AdminCommand::WriteBatchScript {
                job_id: 12,
                file: None
            })
        );
        assert_eq!(
            w("BATCH 12 -"),
            Ok(AdminCommand::WriteBatchScript {
                job_id: 12,
                file: Some("-".into())
            })
        );
        assert_eq!(
            w("batch_scrip 5_1 out.sh"),
            Ok(AdminCommand::WriteBatchScript {
                job_id: 5,
                file: Some("out.sh".into())
            })
        );
        assert_eq!(w("batch_script"), Ok(AdminCommand::Nothing));
        assert_eq!(
            w("batch_script 1 2 3"),
            Err(vec!["too many arguments for keyword:Write".to_string()])
        );
        assert_eq!(
            w("bat 1"),
            Err(vec!["invalid write argument:bat".to_string()])
        );
        assert_eq!(
            w("batch_scriptx 1"),
            Err(vec!["invalid write argument:batch_scriptx".to_string()])
        );
        assert_eq!(w("CONFIG"), Ok(AdminCommand::WriteConfig { file: None }));
        assert_eq!(
            w("config /tmp/x"),
            Ok(AdminCommand::WriteConfig {
                file: Some("/tmp/x".into())
            })
        );
        assert_eq!(
            w("conf"),
            Err(vec!["invalid write argument:conf".to_string()])
        );
        assert_eq!(
            w("config a b"),
            Err(vec!["too many arguments for keyword:Write".to_string()])
        );
        assert_eq!(
            w("foo 1 2 3"),
            Err(vec!["invalid write argument:foo".to_string()])
        );
        assert_eq!(
            w(""),
            Err(vec!["too few arguments for keyword:Write".to_string()])
        );
    }

    #[test]
    fn setdebug_levels() {
        let s = |a| p(AdminKeyword::SetDebug, "se", a);
        assert_eq!(s("info"), Ok(AdminCommand::SetDebug { level: 3 }));
        assert_eq!(s("DEBUG2"), Ok(AdminCommand::SetDebug { level: 6 }));
        assert_eq!(s("9"), Ok(AdminCommand::SetDebug { level: 9 }));
        assert_eq!(s("quiet"), Ok(AdminCommand::SetDebug { level: 0 }));
        // As Slurm: -5 goes to the controller, -1 does nothing.
        assert_eq!(s("-5"), Ok(AdminCommand::SetDebug { level: -5 }));
        assert_eq!(s("-1"), Ok(AdminCommand::Nothing));
        assert_eq!(s("4294967295"), Ok(AdminCommand::Nothing));
        for bad in ["10", "99", "2x", "debug6", "foo"] {
            assert_eq!(s(bad), Err(vec![format!("invalid debug level: {bad}")]));
        }
        assert_eq!(
            s(""),
            Err(vec!["too few arguments for keyword:se".to_string()])
        );
        assert_eq!(
            s("info x"),
            Err(vec!["too many arguments for keyword:se".to_string()])
        );
    }

    #[test]
    fn setdebugflags_names() {
        let s = |a| p(AdminKeyword::SetDebugFlags, "setdebugflags", a);
        assert_eq!(
            s("+backfill,GRES"),
            Ok(AdminCommand::SetDebugFlags {
                add: vec!["Backfill".into(), "Gres".into()],
                remove: vec![]
            })
        );
        assert_eq!(
            s("-Backfill,,"),
            Ok(AdminCommand::SetDebugFlags {
                add: vec![],
                remove: vec!["Backfill".into()]
            })
        );
        assert_eq!(
            s("+"),
            Ok(AdminCommand::SetDebugFlags {
                add: vec![],
                remove: vec![]
            })
        );
        assert_eq!(
            s("Backfill"),
            Err(vec![
                "invalid debug flag: Backfill".to_string(),
                "Usage: setdebugflags [+|-]NAME".to_string()
            ])
        );
        assert_eq!(
            s("+Backfill,foo,bar"),
            Err(vec![
                "scontrol: error: Invalid DebugFlag: foo".to_string(),
                "invalid debug flag: +Backfill,foo,bar".to_string()
            ])
        );
        assert_eq!(
            s("++Backfill"),
            Err(vec![
                "scontrol: error: Invalid DebugFlag: +Backfill".to_string(),
                "invalid debug flag: ++Backfill".to_string()
            ])
        );
    }

    fn conf(text: &str) -> SlurmConf {
        SlurmConf::parse(text, "slurm.conf").unwrap().conf
    }

    /// Slurm 22.05 with neither SlurmSchedLogFile, RebootProgram nor
    /// auth/jwt configured.
    #[test]
    fn schedloglevel_reboot_and_token_as_slurm_answers_them() {
        let l = |a| p(AdminKeyword::SchedLogLevel, "schedloglevel", a);
        for ok in ["0", "1", "enable", "DISABLE"] {
            assert_eq!(l(ok), Ok(AdminCommand::SchedLogLevel), "{ok}");
        }
        assert_eq!(l("2"), Err(vec!["invalid schedlog level: 2".to_string()]));
        assert_eq!(
            l(""),
            Err(vec![
                "too few arguments for keyword:schedloglevel".to_string()
            ])
        );
        let r = |a| p(AdminKeyword::Reboot, "reboot", a);
        let missing = Err(vec!["Missing node list. Specify ALL|<NodeList>".to_string()]);
        assert_eq!(r(""), missing);
        assert_eq!(r("asap nextstate=resume"), missing);
        assert_eq!(r("asap n1"), Ok(AdminCommand::Reboot));
        let t = |a| p(AdminKeyword::Token, "token", a);
        assert_eq!(t("lifespan=60 username=bob"), Ok(AdminCommand::Token));
        assert_eq!(t("bogus"), Err(vec!["Invalid option: `bogus`".to_string()]));

        let c = conf(
            "ClusterName=c\nSlurmctldHost=vm\nNodeName=n[1-2] CPUs=1\nPartitionName=p Nodes=ALL\n",
        );
        assert_eq!(
            reboot_lines(&AdminCommand::Reboot, &c),
            vec![
                "scontrol: error: RebootProgram isn't defined",
                "scontrol_reboot_nodes error: Unspecified error"
            ]
        );
        let cancel = |nodes: &str| {
            reboot_lines(
                &AdminCommand::CancelReboot {
                    nodes: nodes.into(),
                },
                &c,
            )
        };
        assert_eq!(
            cancel("n[1-2]"),
            vec!["slurm_update error: Invalid node state specified"]
        );
        assert_eq!(
            cancel("n3"),
            vec!["slurm_update error: Invalid node name specified"]
        );
    }

    #[test]
    fn daemons_of_this_host() {
        let both = conf(
            "ClusterName=c\nSlurmctldHost=vm(127.0.0.1)\n\
             NodeName=n1 NodeHostname=vm CPUs=1\nNodeName=n2 NodeHostname=other CPUs=1\n\
             PartitionName=p Nodes=ALL\n",
        );
        assert_eq!(daemons_line(&both, "vm"), "slurmctld slurmd");
        assert_eq!(daemons_line(&both, "other"), "slurmd");
        // A backup controller counts; Slurm leaves a blank after it.
        let ctld = conf(
            "ClusterName=c\nSlurmctldHost=zz\nSlurmctldHost=vm\n\
             NodeName=n1 NodeAddr=vm CPUs=1\nPartitionName=p Nodes=ALL\n",
        );
        assert_eq!(daemons_line(&ctld, "vm"), "slurmctld ");
        assert_eq!(daemons_line(&ctld, "nowhere"), "(null)");
        // localhost always names this host; an address does not.
        let local = conf(
            "ClusterName=c\nSlurmctldHost=zz(localhost)\n\
             NodeName=n1 NodeHostname=localhost CPUs=1\nPartitionName=p Nodes=ALL\n",
        );
        assert_eq!(daemons_line(&local, "vm"), "slurmd");
    }

    #[test]
    fn aliases_of_a_host() {
        let c = conf(
            "ClusterName=c\nSlurmctldHost=vm\n\
             NodeName=n1 NodeHostname=vm CPUs=1\nNodeName=n[2-3] NodeHostname=vm CPUs=1\n\
             NodeName=vm CPUs=1\nNodeName=x NodeHostname=other NodeAddr=vm CPUs=1\n\
             PartitionName=p Nodes=ALL\n",
        );
        assert_eq!(aliases_line(&c, "vm").as_deref(), Some("n1 n2 n3 vm"));
        assert_eq!(aliases_line(&c, "other").as_deref(), Some("x"));
        assert_eq!(aliases_line(&c, "n1"), None);
    }

    #[test]
    fn completing_lines_as_slurm_prints_them() {
        let job = |id: u32, flags: Vec<i32>, nodes: &str| v1::JobInfo {
            job_id: id,
            state: v1::JobState::Completed as i32,
            state_flags: flags,
            nodes: nodes.to_string(),
            end_time: 1_000,
            ..Default::default()
        };
        let node = |name: &str, state: v1::NodeState, flags: Vec<i32>| v1::NodeInfo {
            name: name.to_string(),
            state: state as i32,
            state_flags: flags,
            ..Default::default()
        };
        let c = v1::NodeStateFlag::Completing as i32;
        let jobs = [
            job(7, vec![v1::JobStateFlag::Completing as i32], "n[1-4]"),
            job(8, vec![], "n1"),
        ];
        let nodes = [
            node("n1", v1::NodeState::Idle, vec![c]),
            node("n2", v1::NodeState::Down, vec![]),
            node("n3", v1::NodeState::Idle, vec![]),
            node("n4", v1::NodeState::Mixed, vec![c]),
        ];
        let ctx = Ctx::utc(1_065);
        assert_eq!(
            completing_lines(&jobs, &nodes, &ctx),
            "JobId=7 EndTime=1970-01-01T00:16:40 CompletingTime=00:01:05 \
             Nodes(COMPLETING)=n[1,4] Nodes(DOWN)=n2 \n"
        );
        // No node left completing: the lists are left out.
        let ctx = Ctx::utc(999);
        assert_eq!(
            completing_lines(&jobs[..1], &[], &ctx),
            "JobId=7 EndTime=1970-01-01T00:16:40 CompletingTime=INVALID \n"
        );
        assert_eq!(completing_lines(&jobs[1..], &nodes, &ctx), "");
    }
}
