//! `sbatch`: submit a batch script.
//!
//! The steps, each testable alone:
//!
//! 1. [`options::parse_command_line`] splits the arguments (options stop at
//!    the script name; what follows is the script's own arguments).
//! 2. [`read_script`] gets the script from the file, standard input or
//!    `--wrap`, and [`check_script`] refuses what Slurm refuses.
//! 3. [`options::resolve`] merges `SBATCH_*`, `#SBATCH` and the command line.
//! 4. [`build_job`] turns the options into the wire's `JobDescription`,
//!    leaving unset what the user did not ask for, so the controller
//!    applies the partition and configuration defaults.
//! 5. The job is submitted; with `--wait`, sbatch follows it to its end and
//!    exits with its exit code.
//!
//! Everything up to the submission needs no configuration and no
//! controller, so bad options and bad scripts fail fast and identically
//! everywhere.

pub mod directives;
pub mod options;
pub mod values;

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use slurm_common::auth::unix_now;
use slurm_common::time::{format_timestamp, TimeLimit};
use slurm_proto::v1;
use slurm_proto::ErrorCode;

use crate::client::{
    self, block_on, current_gid, current_uid, print_error, session_id, short_hostname, user_name,
    ClientConfig, Controller, RpcError,
};
use crate::output::{version_line, Output};
use options::{CommandLine, Invocation, Memory, OpenMode, OptError, SbatchOpts, Sharing};

const PROG: &str = "sbatch";

/// Exit status of option errors (Slurm exits -1 there).
pub const EXIT_USAGE: i32 = 255;
/// Exit status of every other failure.
pub const EXIT_ERROR: i32 = 1;

/// Runs `sbatch` with the process's arguments (the program name first).
pub fn run(args: Vec<OsString>) -> i32 {
    crate::output::with_std_streams(|stdin, stdout, stderr| {
        run_with(&args, stdin, &mut Output::new(stdout, stderr))
    })
}

/// What `sbatch -v` prints of the options: each one given, from any
/// source, by name, as Slurm lists them.
fn defined_options(o: &options::SbatchOpts) -> Vec<String> {
    let rule = format!("{PROG}: {:-<20} {:-<20}", "", "");
    let mut lines = vec![format!("{PROG}: defined options"), rule.clone()];
    for (name, value) in &o.defined {
        lines.push(format!("{PROG}: {name:<20}: {value}"));
    }
    lines.push(rule);
    lines.push(format!("{PROG}: end of defined options"));
    lines
}

/// [`run`] with standard input and the output streams handed in.
pub fn run_with(args: &[OsString], stdin: &mut dyn Read, out: &mut Output<'_>) -> i32 {
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // getopt names the program as it was called (`/usr/bin/sbatch: ...`).
    let called_as = crate::opts::called_as(args, PROG);
    let now = unix_now();
    let cli = match options::parse_command_line(&words, &read_node_file, now) {
        Ok(Invocation::Help) => return out.block(PROG, HELP),
        Ok(Invocation::Usage) => return out.block(PROG, USAGE),
        Ok(Invocation::Version) => return out.block(PROG, &version_line()),
        Ok(Invocation::Submit(cli)) => cli,
        Err(e) => return report_opt_error_as(out, &e, &called_as),
    };
    let script = match read_script(&cli, stdin) {
        Ok(s) => s,
        Err(lines) => {
            for line in lines {
                print_error(out, PROG, line);
            }
            return EXIT_ERROR;
        }
    };
    // The environment is read once: for the `SBATCH_*` variables (where,
    // as with `std::env::var`, a value that is not UTF-8 counts as unset)
    // and for the job's own environment.
    let environ: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let env = |name: &str| {
        environ
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.to_str())
            .map(str::to_owned)
    };
    let mut opts = match options::resolve(&cli, Some(&script.text), &env, &read_node_file, now) {
        Ok(o) => o,
        Err(e) => return report_opt_error(out, &e),
    };
    for notice in &opts.notices {
        print_error(out, PROG, notice);
    }
    if let Err(e) = nodes_from_list(&mut opts) {
        return report_opt_error(out, &e);
    }
    if let Some(warning) = fit_nodes_to_tasks(&mut opts) {
        out.error_line(&format!("{PROG}: Warning: {warning}"));
    }
    // As Slurm's: after the node count is settled, which it shows.
    if opts.verbose > 0 {
        for line in defined_options(&opts) {
            out.error_line(&line);
        }
    }
    let process_env: Vec<(String, String)> = environ
        .iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".to_owned());
    let host = short_hostname();
    let (uid, gid) = match submit_identity(&opts, current_uid(), current_gid()) {
        Ok(ids) => ids,
        Err(e) => return report_opt_error(out, &e),
    };
    let context = SubmitContext {
        uid,
        gid,
        user_name: user_name(uid).unwrap_or_else(|| uid.to_string()),
        host,
        sid: session_id(),
        cwd,
        submit_line: words_to_line(&words),
        env: process_env,
        prio_process: process_priority(),
        umask: process_umask(),
    };
    let job = match build_job(&opts, &cli, &script, &context) {
        Ok(j) => j,
        Err(e) => return report_opt_error(out, &e),
    };
    let config = match ClientConfig::load() {
        Ok(c) => c,
        Err(e) => {
            print_error(out, PROG, e);
            return EXIT_ERROR;
        }
    };
    if opts.verbose > 0 {
        for line in client::select_plugin_lines(PROG, &config.conf) {
            out.error_line(&line);
        }
    }
    if let Err(e) = values::gres_kinds(&opts, &config.conf.gres_types) {
        return report_opt_error(out, &e);
    }
    if let Some(freq) = &opts.cpu_freq {
        let allowed = config.conf.raw_entry("CpuFreqGovernors");
        if let Err(e) = values::cpu_freq_allowed(freq, allowed.map(|e| e.value.as_str())) {
            return report_opt_error(out, &e);
        }
    }
    if crate::client::refused_clusters(out, PROG, opts.clusters.as_deref(), &config.conf) {
        return EXIT_ERROR;
    }
    // Only for a job that is going to be submitted: an option refused
    // above is reported alone, as Slurm (which knows them all) does.
    let mut warned: Vec<&str> = Vec::new();
    let spec_allowed = config
        .conf
        .raw_entry("AllowSpecResourcesUsage")
        .is_some_and(|e| matches!(e.value.to_ascii_lowercase().as_str(), "yes" | "1"));
    for spelled in &opts.ignored {
        if warned.contains(&spelled.as_str()) {
            continue;
        }
        // As Slurm, when the configuration does not allow them (the
        // default): an error line, and the job goes on without them.
        let spec = match spelled.as_str() {
            "-S" | "--core-spec" => Some("-S"),
            "--thread-spec" => Some("--thread-spec"),
            _ => None,
        };
        if let Some(name) = spec.filter(|_| !spec_allowed) {
            warned.push(spelled);
            out.error_line(&format!(
                "{PROG}: error: Ignoring {name} since it's not allowed by configuration \
                 (AllowSpecResourcesUsage = No)"
            ));
            continue;
        }
        if options::ignoring_changes_the_job(spelled) {
            warned.push(spelled);
            out.error_line(&format!(
                "{PROG}: warning: {spelled} is not supported and was ignored"
            ));
        }
    }
    let mut job = job;
    add_rlimits(&mut job, &opts, &config.conf);
    let mut controller = match Controller::new(&config) {
        Ok(c) => c,
        Err(e) => {
            print_error(out, PROG, e);
            return EXIT_ERROR;
        }
    };
    submit(&mut controller, &config, &opts, job, out)
}

/// `-w`/`-F` and `-x` as Slurm's sbatch takes them: each list sorted,
/// without duplicates and compressed (`n4,n3` is `n[3-4]`), and the job
/// asks for at least as many nodes as `-w` names (`-w n[3-4]` alone is
/// two nodes, shown without a maximum); a maximum below the count is
/// refused (`invalid number of nodes (-N 2-1)`). A list that does not
/// read is left to the controller to refuse.
pub fn nodes_from_list(opts: &mut SbatchOpts) -> Result<(), OptError> {
    if let Some(names) = opts
        .exclude
        .as_deref()
        .and_then(|l| slurm_common::hostlist::expand(l).ok())
        .filter(|n| !n.is_empty())
    {
        opts.exclude = Some(slurm_common::hostlist::compress_unique(&names));
    }
    let Some(list) = opts.nodelist.as_deref() else {
        return Ok(());
    };
    let Ok(names) = slurm_common::hostlist::expand(list) else {
        return Ok(());
    };
    if names.is_empty() {
        return Ok(());
    }
    let canonical = slurm_common::hostlist::compress_unique(&names);
    let count = slurm_common::hostlist::count(&canonical)
        .ok()
        .and_then(|c| u32::try_from(c).ok())
        .unwrap_or(u32::MAX);
    opts.nodelist = Some(canonical);
    opts.nodes = match opts.nodes {
        // A maximum of 0 stands for none (`core`'s reading of `-N 2-0`).
        None => Some((count, Some(0))),
        Some((given, max)) => {
            let min = given.max(count);
            // A single count (`-N 1`) is its own maximum.
            if let Some(m) = max.or(Some(given)).filter(|&m| m != 0 && m < min) {
                return Err(OptError::Refused(format!(
                    "invalid number of nodes (-N {min}-{m})"
                )));
            }
            Some((min, max))
        }
    };
    Ok(())
}

/// Fewer tasks than nodes: Slurm's sbatch asks for as many nodes as
/// tasks (`-N 2-3 -n 1` becomes `-N 1`), keeps the first that many nodes
/// of a `-w` list, and says so; the text after `sbatch: Warning: ` is
/// returned.
pub fn fit_nodes_to_tasks(opts: &mut SbatchOpts) -> Option<String> {
    let (min, _) = opts.nodes?;
    let ntasks = opts.ntasks?;
    if ntasks >= min {
        return None;
    }
    opts.nodes = Some((ntasks, Some(ntasks)));
    opts.defined.insert("nodes", ntasks.to_string());
    if let Some(names) = opts
        .nodelist
        .as_deref()
        .and_then(|l| slurm_common::hostlist::expand(l).ok())
    {
        let kept = names
            .iter()
            .take(usize::try_from(ntasks).unwrap_or(usize::MAX));
        let kept = slurm_common::hostlist::compress(kept);
        if opts.defined.contains_key("nodelist") {
            opts.defined.insert("nodelist", kept.clone());
        }
        opts.nodelist = Some(kept);
    }
    Some(format!(
        "can't run {ntasks} processes on {min} nodes, setting nnodes to {ntasks}"
    ))
}

/// The task count the job asks for: `-n`, or, as Slurm's sbatch counts
/// it, a task on each socket, core and thread `-B` names, on each node
/// (`-B 2` is two tasks, `-B 1:2 -N 2` four), unless `--ntasks-per-node`
/// gives the count; `--sockets-per-node` and the like alone ask for none.
fn task_count(o: &SbatchOpts) -> Option<u32> {
    o.ntasks.or_else(|| {
        (o.extra_node_info && o.ntasks_per_node.is_none()).then(|| {
            let nodes = o.nodes.map_or(1, |(min, _)| min.max(1));
            node_layout(o)
                .iter()
                .map(|c| c.unwrap_or(1).max(1))
                .fold(nodes, u32::saturating_mul)
        })
    })
}

/// The sockets per node, cores per socket and threads per core the job
/// asks for, with `--hint` applied as Slurm 22.05's sbatch applies it: a
/// hint is ignored next to `-B`, `--ntasks-per-core` or
/// `--threads-per-core`; otherwise it replaces the socket and core
/// counts, its words taken in order (`compute_bound` and `nomultithread`
/// ask for one thread per core, `memory_bound` also for one core per
/// socket, `multithread` for any number of threads).
pub fn node_layout(o: &SbatchOpts) -> [Option<u32>; 3] {
    let given = [o.sockets_per_node, o.cores_per_socket, o.threads_per_core];
    let Some(hint) = o.hint.as_deref() else {
        return given;
    };
    if o.extra_node_info || o.ntasks_per_core.is_some() || o.threads_per_core.is_some() {
        return given;
    }
    let (mut cores, mut threads) = (None, None);
    for word in hint.split(',').map(str::trim) {
        match word.to_ascii_lowercase().as_str() {
            "compute_bound" => (cores, threads) = (None, Some(1)),
            "memory_bound" => (cores, threads) = (Some(1), Some(1)),
            "nomultithread" => threads = Some(1),
            "multithread" => threads = None,
            _ => {}
        }
    }
    [None, cores, threads]
}

/// Adds the `SLURM_RLIMIT_*` variables of the limits the job takes from
/// this process (see [`slurm_common::rlimit`]). Set last, as sbatch sets
/// them in its own environment whatever `--export` says.
fn add_rlimits(
    job: &mut v1::JobDescription,
    opts: &SbatchOpts,
    conf: &slurm_common::conf::SlurmConf,
) {
    let (limits, asked) = slurm_common::rlimit::chosen(
        opts.propagate.as_deref(),
        &conf.propagate_resource_limits,
        &conf.propagate_resource_limits_except,
    );
    for limit in limits {
        if let Some(soft) = slurm_common::rlimit::soft_limit(limit) {
            let (name, value) = slurm_common::rlimit::env_entry(limit, soft, asked);
            let prefix = format!("{name}=");
            job.environment.retain(|e| !e.starts_with(&prefix));
            job.environment.push(format!("{name}={value}"));
        }
    }
}

/// Who the job runs as: the caller, or for root the user (and group) of
/// `--uid` / `--gid`; the caller's group when only `--uid` is given.
fn submit_identity(opts: &SbatchOpts, uid: u32, gid: u32) -> Result<(u32, u32), OptError> {
    if opts.uid.is_none() && opts.gid.is_none() {
        return Ok((uid, gid));
    }
    let which = if opts.uid.is_some() { "--uid" } else { "--gid" };
    if uid != 0 {
        return Err(OptError::Invalid(format!(
            "{which} only permitted by root user"
        )));
    }
    let target = match opts.uid.as_deref() {
        Some(name) => client::uid_for_name(name.trim())
            .ok_or_else(|| OptError::Invalid("Invalid --uid specification".into()))?,
        None => uid,
    };
    let group = match opts.gid.as_deref() {
        Some(name) => client::gid_for_name(name.trim())
            .ok_or_else(|| OptError::Invalid("Invalid --gid specification".into()))?,
        None if target == uid => gid,
        // Slurm keeps the caller's group (the job runs as uid=nobody
        // gid=root for root's `--uid=nobody`), but the user must exist.
        None => client::primary_gid(target)
            .map(|_| gid)
            .ok_or_else(|| OptError::Invalid("Invalid --uid specification".into()))?,
    };
    Ok((target, group))
}

/// Prints an option error as Slurm does and gives its exit status.
fn report_opt_error(out: &mut Output<'_>, e: &OptError) -> i32 {
    report_opt_error_as(out, e, PROG)
}

/// [`report_opt_error`] for sbatch called as `called_as`, the name getopt
/// puts before its complaints about the command line. Those about an
/// `#SBATCH` line name plain `sbatch`, as do the "Try" line and every
/// other message.
fn report_opt_error_as(out: &mut Output<'_>, e: &OptError, called_as: &str) -> i32 {
    match e {
        OptError::Getopt(g) => {
            out.error_line(&format!("{called_as}: {g}"));
            out.error_line(&format!("Try \"{PROG} --help\" for more information"));
        }
        OptError::Directive { error, .. } => {
            out.error_line(&format!("{PROG}: {error}"));
            out.error_line(&format!("Try \"{PROG} --help\" for more information"));
        }
        OptError::Invalid(text) | OptError::Refused(text) => {
            for line in text.lines() {
                print_error(out, PROG, line);
            }
        }
        OptError::Fatal(text) => out.error_line(&format!("{PROG}: fatal: {text}")),
        OptError::BadTime { error, .. } => {
            if let Some(notice) = error.slurm_notice() {
                out.error_line(&notice);
            }
            print_error(out, PROG, e);
        }
        OptError::Help { text, .. } => {
            out.block(PROG, text);
        }
    }
    e.exit_status()
}

/// The arguments as one line, as Slurm records `SubmitLine`.
fn words_to_line(words: &[String]) -> String {
    std::iter::once(PROG)
        .chain(words.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The file mode creation mask sbatch runs with, for `SLURM_UMASK`.
fn process_umask() -> u32 {
    // SAFETY: umask cannot fail; the mask is put back at once.
    unsafe {
        let mask = libc::umask(0);
        libc::umask(mask);
        mask
    }
}

/// The scheduling priority (nice value) sbatch runs at, which the job
/// inherits through `SLURM_PRIO_PROCESS`.
fn process_priority() -> i32 {
    // SAFETY: getpriority only reads the calling process's nice value.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

/// Where the script came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSource {
    File(String),
    Stdin,
    Wrap,
}

/// The batch script and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub text: String,
    pub source: ScriptSource,
}

/// The script `--wrap` stands for.
pub fn wrap_script(command: &str) -> String {
    format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n")
}

/// Reads the script; the error is the lines to print after `sbatch: error: `.
pub fn read_script(cli: &CommandLine, stdin: &mut dyn Read) -> Result<Script, Vec<String>> {
    if let Some(command) = &cli.wrap {
        if cli.script.is_some() {
            return Err(vec![
                "Script arguments not permitted with --wrap option".to_owned()
            ]);
        }
        return Ok(Script {
            text: wrap_script(command),
            source: ScriptSource::Wrap,
        });
    }
    let (bytes, source) = match &cli.script {
        // Only opening can fail, as in Slurm's sbatch: a file that opens
        // but cannot be read (a directory) reads as what was read before
        // the error, which the script check then refuses as empty.
        Some(path) => match std::fs::File::open(path) {
            Ok(mut file) => {
                let mut b = Vec::new();
                let _ = file.read_to_end(&mut b);
                (b, ScriptSource::File(path.clone()))
            }
            Err(_) => return Err(vec![format!("Unable to open file {path}")]),
        },
        None => {
            let mut b = Vec::new();
            if stdin.read_to_end(&mut b).is_err() {
                return Err(vec![
                    "Unable to read batch script from standard input".to_owned()
                ]);
            }
            (b, ScriptSource::Stdin)
        }
    };
    check_script(&bytes)?;
    Ok(Script {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        source,
    })
}

/// Reads a node file (`-F/--nodefile`) for [`options::resolve`]. As in
/// Slurm's sbatch, only opening can fail: a file that opens but cannot be
/// read, such as a directory, reads as what was read before the error
/// (nothing), which the node file check then refuses as naming no hosts.
/// At most one byte more than the largest node file is read.
pub fn read_node_file(path: &str) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let limit = u64::try_from(values::MAX_NODE_FILE_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let mut bytes = Vec::new();
    // Deliberately ignored: see above.
    let _ = file.take(limit).read_to_end(&mut bytes);
    Ok(bytes)
}

/// Refuses scripts Slurm refuses, with its messages.
pub fn check_script(bytes: &[u8]) -> Result<(), Vec<String>> {
    if bytes.is_empty() {
        return Err(vec!["Batch script is empty!".to_owned()]);
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(vec!["Batch script contains only whitespace!".to_owned()]);
    }
    if !bytes.starts_with(b"#!") {
        return Err(vec![
            "This does not look like a batch script.  The first".to_owned(),
            "line must start with #! followed by the path to an interpreter.".to_owned(),
            "For instance: #!/bin/sh".to_owned(),
        ]);
    }
    if bytes.windows(2).any(|w| w == b"\r\n") {
        return Err(vec![
            "Batch script contains DOS line breaks (\\r\\n)".to_owned(),
            "instead of expected UNIX line breaks (\\n).".to_owned(),
        ]);
    }
    if bytes.contains(&0) {
        // Two error lines, as Slurm 22.05 prints it.
        return Err(vec![
            "The Slurm controller does not allow scripts that".to_owned(),
            "contain a NULL character '\\0'.".to_owned(),
        ]);
    }
    Ok(())
}

/// Facts about the submitting process that go into the job.
#[derive(Debug, Clone, Default)]
pub struct SubmitContext {
    pub uid: u32,
    pub gid: u32,
    pub user_name: String,
    pub host: String,
    pub sid: u32,
    /// The submit directory.
    pub cwd: String,
    pub submit_line: String,
    /// sbatch's own environment, in order.
    pub env: Vec<(String, String)>,
    pub prio_process: i32,
    /// The file mode creation mask, for `SLURM_UMASK`.
    pub umask: u32,
}

/// The environment the job gets, per `--export` (`spec`): `ALL` (the
/// default) passes everything; `NONE` (or an empty spec) passes only
/// `SLURM_*` variables; a list passes `SLURM_*` and the names listed (with
/// `ALL` in the list, everything); `NAME=value` entries set values, a comma
/// inside double quotes belonging to the value, quotes kept. `env` is
/// sbatch's environment, or the variables of `--export-file`, which
/// replace it. `extra` is set last.
pub fn job_environment(
    spec: Option<&str>,
    env: &[(String, String)],
    extra: &[(String, String)],
) -> Vec<String> {
    let items: Vec<&str> = match spec {
        None => vec!["ALL"],
        Some(spec) => split_export(spec)
            .into_iter()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect(),
    };
    let all = items.iter().any(|i| i.eq_ignore_ascii_case("ALL"));
    let mut vars: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| all || k.starts_with("SLURM_"))
        .cloned()
        .collect();
    let set = |vars: &mut Vec<(String, String)>, k: &str, v: &str| match vars
        .iter_mut()
        .find(|(name, _)| name == k)
    {
        Some(slot) => slot.1 = v.to_owned(),
        None => vars.push((k.to_owned(), v.to_owned())),
    };
    for item in &items {
        if item.eq_ignore_ascii_case("ALL") || item.eq_ignore_ascii_case("NONE") {
            continue;
        }
        match item.split_once('=') {
            Some((k, v)) => set(&mut vars, k, v),
            None => {
                if let Some((_, v)) = env.iter().find(|(k, _)| k == item) {
                    set(&mut vars, item, v);
                }
            }
        }
    }
    for (k, v) in extra {
        set(&mut vars, k, v);
    }
    vars.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The entries of an `--export` list: split at commas outside double
/// quotes (Slurm 22.05 gave `FOO="a,b",BAR=c` the value `"a,b"`).
fn split_export(spec: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, c) in spec.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&spec[start..]);
    items
}

/// The variables of an `--export-file`: `NAME=value` entries separated by
/// NULs only, so a newline belongs to the value it follows.
fn export_file_vars(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|&b| b == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (k, v) = entry.split_once('=')?;
            (!k.is_empty()).then(|| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// Whether the job asks the node for the user's login environment
/// (`SLURM_GET_USER_ENV=1`): with `--get-user-env`, and, as Slurm 22.05's
/// sbatch decides, with any `--export` other than plain `ALL` (`NONE`, a
/// list, even `ALL,NAME=value`).
fn asks_for_user_env(o: &SbatchOpts) -> bool {
    o.get_user_env
        || o.export
            .as_deref()
            .is_some_and(|spec| !spec.eq_ignore_ascii_case("ALL"))
}

/// Makes `path` absolute against `cwd`.
pub(crate) fn absolute(path: &str, cwd: &str) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{}", cwd.trim_end_matches('/'), path)
    }
}

fn time_limit(t: TimeLimit) -> v1::TimeLimit {
    v1::TimeLimit {
        limit: Some(match t {
            TimeLimit::Minutes(m) => v1::time_limit::Limit::Minutes(m),
            TimeLimit::Infinite => v1::time_limit::Limit::Unlimited(true),
        }),
    }
}

fn or_empty(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// The job description for the controller. Only `--export-file` can fail
/// here (the file is read).
pub fn build_job(
    o: &SbatchOpts,
    cli: &CommandLine,
    script: &Script,
    ctx: &SubmitContext,
) -> Result<v1::JobDescription, OptError> {
    let name = o.job_name.clone().unwrap_or_else(|| match &script.source {
        ScriptSource::File(path) => Path::new(path)
            .file_name()
            .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned()),
        ScriptSource::Stdin => "sbatch".to_owned(),
        ScriptSource::Wrap => "wrap".to_owned(),
    });
    let command_path = match &script.source {
        ScriptSource::File(path) => absolute(path, &ctx.cwd),
        _ => String::new(),
    };
    // An --export-file takes the place of sbatch's environment, and with
    // it of the variables sbatch sets in its own environment
    // (SLURM_JOB_NAME, SLURM_EXPORT_ENV), as in Slurm 22.05.
    let file_env = match &o.export_file {
        Some(file) => {
            let text = std::fs::read(file).map_err(|_| {
                OptError::Refused(format!("Could not open user environment file {file}"))
            })?;
            Some(export_file_vars(&text))
        }
        None => None,
    };
    let mut extra: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| extra.push((k.to_owned(), v));
    if file_env.is_none() {
        put("SLURM_JOB_NAME", name.clone());
    }
    put("SLURM_PRIO_PROCESS", ctx.prio_process.to_string());
    // The job creates files as the submitting shell would, unless an
    // enclosing job already set the mask.
    if !ctx.env.iter().any(|(k, _)| k == "SLURM_UMASK") {
        put("SLURM_UMASK", format!("{:04o}", ctx.umask & 0o777));
    }
    put("SLURM_SUBMIT_DIR", ctx.cwd.clone());
    put("SLURM_SUBMIT_HOST", ctx.host.clone());
    let ntasks = task_count(o);
    if let Some(n) = ntasks {
        put("SLURM_NTASKS", n.to_string());
        put("SLURM_NPROCS", n.to_string());
    }
    if let Some(c) = o.cpus_per_task {
        put("SLURM_CPUS_PER_TASK", c.to_string());
    }
    if let Some(n) = o.ntasks_per_node {
        put("SLURM_NTASKS_PER_NODE", n.to_string());
    }
    // `--mem=0` (all of a node's memory) sets no variable, as in Slurm.
    match o.memory {
        Some(Memory::PerNode(mb)) if mb > 0 => put("SLURM_MEM_PER_NODE", mb.to_string()),
        Some(Memory::PerCpu(mb)) if mb > 0 => put("SLURM_MEM_PER_CPU", mb.to_string()),
        _ => {}
    }
    if let Some(d) = &o.distribution {
        put("SLURM_DISTRIBUTION", d.clone());
    }
    if o.overcommit {
        put("SLURM_OVERCOMMIT", "1".to_owned());
    }
    // A hint other than `multithread` means one thread per core, unless
    // asked otherwise.
    if let Some(h) = &o.hint {
        put("SLURM_HINT", h.clone());
    }
    let one_thread = o
        .hint
        .as_deref()
        .is_some_and(|h| !h.eq_ignore_ascii_case("multithread"));
    match o.threads_per_core {
        Some(t) => put("SLURM_THREADS_PER_CORE", t.to_string()),
        None if one_thread => put("SLURM_THREADS_PER_CORE", "1".to_owned()),
        None => {}
    }
    if let Some(mode) = o.open_mode {
        let m = match mode {
            OpenMode::Append => "a",
            OpenMode::Truncate => "t",
        };
        put("SLURM_OPEN_MODE", m.to_owned());
    }
    if let (Some(spec), None) = (&o.export, &file_env) {
        put("SLURM_EXPORT_ENV", spec.clone());
    }
    if asks_for_user_env(o) {
        put("SLURM_GET_USER_ENV", "1".to_owned());
    }
    // Set in sbatch's own environment, so an --export-file leaves them out.
    if file_env.is_none() {
        if let Some(v) = &o.acctg_freq {
            put("SLURM_ACCTG_FREQ", v.clone());
        }
        if let Some(v) = &o.container {
            put("SLURM_CONTAINER", v.clone());
        }
        if let Some(v) = &o.cpu_freq {
            put("SLURM_CPU_FREQ_REQ", values::CpuFreq::read(v).env());
        }
        if let Some(v) = &o.profile {
            put("SLURM_PROFILE", values::profile_env(v));
        }
    }
    let environment = match &file_env {
        // The file's variables stay under a name list too (only NONE
        // drops them); the names are looked up among them.
        Some(vars) => {
            let spec = o.export.as_deref().map(|spec| {
                let none = spec.trim().is_empty() || spec.eq_ignore_ascii_case("NONE");
                if none {
                    spec.to_owned()
                } else {
                    format!("ALL,{spec}")
                }
            });
            job_environment(spec.as_deref(), vars, &extra)
        }
        None => job_environment(o.export.as_deref(), &ctx.env, &extra),
    };
    // A single count is the range from it to itself (`-N 3` is `3-3`), as
    // Slurm's sbatch sends it.
    let layout = node_layout(o);
    let (min_nodes, max_nodes) = match o.nodes {
        // A maximum of 0 (`-N 2-0`) is none.
        Some((min, Some(0))) => (Some(min), None),
        Some((min, max)) => (Some(min), Some(max.unwrap_or(min))),
        None => (None, None),
    };
    Ok(v1::JobDescription {
        user_id: ctx.uid,
        group_id: ctx.gid,
        user_name: ctx.user_name.clone(),
        submit_host: ctx.host.clone(),
        submit_sid: ctx.sid,
        submit_line: ctx.submit_line.clone(),
        // The controller looks them up itself.
        user_groups: Vec::new(),
        script: script.text.clone(),
        argv: cli.script_args.clone(),
        environment,
        work_dir: o
            .chdir
            .as_deref()
            .map_or_else(|| ctx.cwd.clone(), |d| absolute(d, &ctx.cwd)),
        name,
        export_spec: o.export.clone().unwrap_or_else(|| "ALL".to_owned()),
        command_path,
        partitions: o
            .partition
            .as_deref()
            .map(|p| {
                p.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        account: or_empty(&o.account),
        qos: or_empty(&o.qos),
        reservation: or_empty(&o.reservation),
        wckey: or_empty(&o.wckey),
        time_limit: o.time.map(time_limit),
        time_min_minutes: o.time_min.map(|t| match t {
            TimeLimit::Minutes(m) => m,
            TimeLimit::Infinite => u32::MAX - 2,
        }),
        begin_time: o.begin_time.unwrap_or(0),
        deadline: o.deadline.unwrap_or(0),
        min_nodes,
        max_nodes,
        ntasks,
        ntasks_per_node: o.ntasks_per_node,
        cpus_per_task: o.cpus_per_task,
        memory: o.memory.map(|m| match m {
            Memory::PerNode(mb) => v1::job_description::Memory::MemPerNodeMb(mb),
            Memory::PerCpu(mb) => v1::job_description::Memory::MemPerCpuMb(mb),
        }),
        tmp_disk_mb: o.tmp_mb,
        min_cpus_per_node: o.mincpus,
        ntasks_per_socket: o.ntasks_per_socket,
        ntasks_per_core: o.ntasks_per_core,
        sockets_per_node: layout[0],
        cores_per_socket: layout[1],
        threads_per_core: layout[2],
        gres: or_empty(&o.gres),
        gpus: or_empty(&o.gpus),
        gpus_per_node: or_empty(&o.gpus_per_node),
        gpus_per_task: or_empty(&o.gpus_per_task),
        licenses: or_empty(&o.licenses),
        network: or_empty(&o.network),
        switches: o.switches.map(|(n, _)| n),
        switch_wait_seconds: o.switches.and_then(|(_, w)| w),
        container: or_empty(&o.container),
        cluster_constraint: or_empty(&o.cluster_constraint),
        prefer: or_empty(&o.prefer),
        mcs_label: or_empty(&o.mcs_label),
        burst_buffer: or_empty(&o.burst_buffer),
        batch_features: o.batch_features.clone(),
        tres_bind: o
            .gpu_bind
            .as_ref()
            .map(|g| format!("gpu:{g}"))
            .unwrap_or_default(),
        profile: o
            .profile
            .as_deref()
            .map(values::profile_env)
            .unwrap_or_default(),
        sharing: match o.sharing {
            None => v1::NodeSharing::Unspecified,
            Some(Sharing::Exclusive) => v1::NodeSharing::Exclusive,
            Some(Sharing::ExclusiveUser) => v1::NodeSharing::ExclusiveUser,
            Some(Sharing::ExclusiveMcs) => v1::NodeSharing::ExclusiveMcs,
            Some(Sharing::Oversubscribe) => v1::NodeSharing::Oversubscribe,
        } as i32,
        required_nodes: or_empty(&o.nodelist),
        excluded_nodes: or_empty(&o.exclude),
        constraint: or_empty(&o.constraint),
        overcommit: o.overcommit,
        contiguous: o.contiguous,
        distribution: or_empty(&o.distribution),
        hold: o.hold,
        priority: o.priority,
        nice: o.nice,
        dependency: or_empty(&o.dependency),
        requeue: o.requeue,
        no_kill: o.no_kill,
        comment: or_empty(&o.comment),
        array_spec: or_empty(&o.array),
        test_only: o.test_only,
        kill_on_invalid_dep: o.kill_on_invalid_dep,
        signal_spec: or_empty(&o.signal),
        mail_type: or_empty(&o.mail_type),
        mail_user: or_empty(&o.mail_user),
        immediate: false,
        reboot: o.reboot,
        cpu_freq: or_empty(&o.cpu_freq),
        delay_boot_minutes: o.delay_boot,
        power: or_empty(&o.power),
        spread_job: o.spread_job,
        gres_enforce_binding: o.gres_enforce_binding,
        stdin_path: or_empty(&o.input),
        stdout_path: or_empty(&o.output),
        stderr_path: or_empty(&o.error),
        open_mode: match o.open_mode {
            None => v1::OpenMode::Unspecified,
            Some(OpenMode::Append) => v1::OpenMode::Append,
            Some(OpenMode::Truncate) => v1::OpenMode::Truncate,
        } as i32,
    })
}

/// Tries of a submission the controller cannot take yet (EAGAIN), after
/// the first.
const SUBMIT_RETRIES: u64 = 15;

/// The submission's method, called without the async runtime.
const SUBMIT_JOB_PATH: &str = "/slurm.v1.SlurmController/SubmitJob";

/// Submits the job and reports the outcome; with `--wait`, follows it.
///
/// The submission is one call on a blocking connection
/// ([`Controller::call_blocking`]): an async runtime costs a command more
/// than the call itself. `--wait` starts one to follow the job.
fn submit(
    controller: &mut Controller,
    config: &ClientConfig,
    opts: &SbatchOpts,
    job: v1::JobDescription,
    out: &mut Output<'_>,
) -> i32 {
    let request = v1::SubmitJobRequest { job: Some(job) };
    let mut retries = 0;
    let reply = loop {
        let reply = controller.call_blocking::<_, v1::SubmitJobReply>(SUBMIT_JOB_PATH, &request);
        // A controller at MaxJobCount: wait longer each time, as Slurm's
        // sbatch does, saying so once.
        match reply {
            Err(e) if e.code == ErrorCode::TryAgain && retries < SUBMIT_RETRIES => {
                if retries == 0 {
                    print_error(
                        out,
                        PROG,
                        "Slurm temporarily unable to accept job, sleeping and retrying.",
                    );
                }
                retries += 1;
                std::thread::sleep(Duration::from_secs(retries));
            }
            other => break other,
        }
    };
    let reply = match reply {
        Ok(r) => r,
        Err(e) if opts.test_only => {
            report_test_only_error(out, &e);
            return EXIT_ERROR;
        }
        Err(e) => {
            report_submit_error(out, &e);
            return EXIT_ERROR;
        }
    };
    for message in &reply.user_messages {
        out.error_line(&format!("{PROG}: {message}"));
    }
    if opts.test_only {
        let Some(est) = reply.estimate else {
            return 0;
        };
        out.error_line(&format!(
            "{PROG}: Job {} to start at {} using {} processors on nodes {} in partition {}",
            reply.job_id,
            format_timestamp(est.start_time),
            est.cpus,
            est.nodes,
            est.partition
        ));
        return 0;
    }
    if !opts.quiet {
        let cluster = opts
            .clusters
            .as_ref()
            .map(|_| config.conf.cluster_name.as_str());
        let line = match (opts.parsable, cluster) {
            (true, None) => reply.job_id.to_string(),
            (true, Some(c)) => format!("{};{c}", reply.job_id),
            (false, None) => format!("Submitted batch job {}", reply.job_id),
            (false, Some(c)) => format!("Submitted batch job {} on cluster {c}", reply.job_id),
        };
        if let Err(code) = client::print_line(out, PROG, &line) {
            return code;
        }
        let _ = out.flush();
    }
    if opts.wait {
        return block_on(wait_for_job(controller, reply.job_id, out));
    }
    0
}

/// Prints a refused submission: the controller's explanation when it gave
/// one, then Slurm's summary line.
pub fn report_submit_error(out: &mut Output<'_>, e: &RpcError) {
    if let Some(detail) = e.extra_detail() {
        if e.code != ErrorCode::ControllerConnect {
            print_error(out, PROG, detail);
        }
    }
    print_error(out, PROG, format!("Batch job submission failed: {e}"));
}

/// Prints a refused `--test-only` request: the controller's explanation
/// when it gave one, then Slurm's `allocation failure:` line, which has no
/// program prefix.
pub fn report_test_only_error(out: &mut Output<'_>, e: &RpcError) {
    if let Some(detail) = e.extra_detail() {
        if e.code != ErrorCode::ControllerConnect {
            print_error(out, PROG, detail);
        }
    }
    out.error_line(&format!("allocation failure: {e}"));
}

/// Whether a job in this state and with these flags is over.
pub fn job_finished(job: &v1::JobInfo) -> bool {
    let state = v1::JobState::try_from(job.state).unwrap_or(v1::JobState::Unspecified);
    let active = matches!(
        state,
        v1::JobState::Pending | v1::JobState::Running | v1::JobState::Suspended
    );
    let completing = job
        .state_flags
        .contains(&(v1::JobStateFlag::Completing as i32));
    !active && !completing && state != v1::JobState::Unspecified
}

/// sbatch's exit status for a finished job: its exit status, or 1 when a
/// signal ended it (killed, cancelled while running, timed out), as Slurm
/// 22.05's `sbatch --wait` exits.
pub fn exit_status_of(job: &v1::JobInfo) -> i32 {
    let code = job.exit_code.unwrap_or_default();
    if code.signal != 0 {
        1
    } else {
        i32::try_from(code.status.min(255)).unwrap_or(255)
    }
}

/// Follows a job until it ends. The controller is asked again after a
/// delay that grows from 20 ms to 1 s: short jobs are reported at once, long
/// ones cost the controller little.
async fn wait_for_job(controller: &mut Controller, job_id: u32, out: &mut Output<'_>) -> i32 {
    let mut delay = Duration::from_millis(20);
    loop {
        let request = v1::GetJobsRequest {
            hide_hidden: false,
            filter: Some(v1::JobFilter {
                job_ids: vec![job_id],
                ..Default::default()
            }),
            changed_since: 0,
            detail: false,
            // The state and the exit code: what --wait reads.
            fields: vec![20, 21, 33],
        };
        let reply = controller
            .call(|mut c| {
                let request = request.clone();
                async move { c.get_jobs(request).await }
            })
            .await;
        match reply {
            Ok(reply) => {
                let jobs: Vec<&v1::JobInfo> = reply
                    .jobs
                    .iter()
                    .filter(|j| j.job_id == job_id || j.array_job_id == Some(job_id))
                    .collect();
                if !jobs.is_empty() && jobs.iter().all(|j| job_finished(j)) {
                    return jobs.iter().map(|j| exit_status_of(j)).max().unwrap_or(0);
                }
                if jobs.is_empty() {
                    // Already purged: it ended long enough ago to be forgotten.
                    return 0;
                }
            }
            Err(e) if e.code == ErrorCode::InvalidJobId => return 0,
            Err(e) => {
                print_error(out, PROG, format!("slurm_load_jobs: {e}"));
                return EXIT_ERROR;
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

const USAGE: &str = "\
Usage: sbatch [-N nnodes] [-n ntasks]
              [-c ncpus] [-r n] [-p partition] [--hold] [--parsable] [-t minutes]
              [-D path] [--no-kill] [--overcommit]
              [--input file] [--output file] [--error file]
              [--time-min=minutes] [--licenses=names] [--clusters=cluster_names]
              [--chdir=directory] [--oversubscribe] [-m dist] [-J jobname]
              [--verbose] [--gid=group] [--uid=user]
              [--contiguous] [--mincpus=n] [--mem=MB] [--tmp=MB] [-C list]
              [--account=name] [--dependency=type:jobid[+time]] [--comment=name]
              [--mail-type=type] [--mail-user=user] [--nice[=value]] [--wait]
              [--requeue] [--no-requeue] [--ntasks-per-node=n] [--propagate]
              [--nodefile=file] [--nodelist=hosts] [--exclude=hosts]
              [--network=type] [--mem-per-cpu=MB] [--qos=qos] [--gres=list]
              [--mem-bind=...] [--reservation=name] [--mcs-label=mcs]
              [--cpu-freq=min[-max[:gov]]] [--power=flags] [--gres-flags=opts]
              [--switches=max-switches{@max-time-to-wait}] [--reboot]
              [--core-spec=cores] [--thread-spec=threads]
              [--bb=burst_buffer_spec] [--bbf=burst_buffer_file]
              [--array=index_values] [--profile=...] [--ignore-pbs] [--spread-job]
              [--export[=names]] [--export-file=file|fd] [--delay-boot=mins]
              [--use-min-nodes]
              [--cpus-per-gpu=n] [--gpus=n] [--gpu-bind=...] [--gpu-freq=...]
              [--gpus-per-node=n] [--gpus-per-socket=n] [--gpus-per-task=n]
              [--mem-per-gpu=MB]
              executable [args...]
";

const HELP: &str = "\
Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]

Parallel run options:
  -a, --array=indexes         job array index values
  -A, --account=name          charge job to specified account
      --bb=<spec>             burst buffer specifications
      --bbf=<file_name>       burst buffer specification file
  -b, --begin=time            defer job until HH:MM MM/DD/YY
      --comment=name          arbitrary comment
      --cpu-freq=min[-max[:gov]] requested cpu frequency (and governor)
  -c, --cpus-per-task=ncpus   number of cpus required per task
  -d, --dependency=type:jobid[:time] defer job until condition on jobid is satisfied
      --deadline=time         remove the job if no ending possible before
                              this deadline (start > (deadline - time[-min]))
      --delay-boot=mins       delay boot for desired node features
  -D, --chdir=directory       set working directory for batch script
  -e, --error=err             file for batch script's standard error
      --export[=names]        specify environment variables to export
      --export-file=file|fd   specify environment variables file or file
                              descriptor to export
      --get-user-env          load environment from local cluster
      --gid=group_id          group ID to run job as (user root only)
      --gres=list             required generic resources
      --gres-flags=opts       flags related to GRES management
  -H, --hold                  submit job in held state
      --ignore-pbs            Ignore #PBS and #BSUB options in the batch script
  -i, --input=in              file for batch script's standard input
  -J, --job-name=jobname      name of job
  -k, --no-kill               do not kill job on node failure
  -L, --licenses=names        required license, comma separated
  -M, --clusters=names        Comma separated list of clusters to issue
                              commands to.  Default is current cluster.
                              Name of 'all' will submit to run on all clusters.
                              NOTE: SlurmDBD must up.
      --container             Path to OCI container bundle
  -m, --distribution=type     distribution method for processes to nodes
                              (type = block|cyclic|arbitrary)
      --mail-type=type        notify on state change: BEGIN, END, FAIL or ALL
      --mail-user=user        who to send email notification for job state
                              changes
      --mcs-label=mcs         mcs label if mcs plugin mcs/group is used
  -n, --ntasks=ntasks         number of tasks to run
      --nice[=value]          decrease scheduling priority by value
      --no-requeue            if set, do not permit the job to be requeued
      --ntasks-per-node=n     number of tasks to invoke on each node
  -N, --nodes=N               number of nodes on which to run (N = min[-max])
  -o, --output=out            file for batch script's standard output
  -O, --overcommit            overcommit resources
  -p, --partition=partition   partition requested
      --parsable              outputs only the jobid and cluster name (if present),
                              separated by semicolon, only on successful submission.
      --power=flags           power management options
      --priority=value        set the priority of the job to value
      --profile=value         enable acct_gather_profile for detailed data
                              value is all or none or any combination of
                              energy, lustre, network or task
      --propagate[=rlimits]   propagate all [or specific list of] rlimits
  -q, --qos=qos               quality of service
  -Q, --quiet                 quiet mode (suppress informational messages)
      --reboot                reboot compute nodes before starting job
      --requeue               if set, permit the job to be requeued
  -s, --oversubscribe         over subscribe resources with other jobs
  -S, --core-spec=cores       count of reserved cores
      --signal=[[R][B]:]num[@time] send signal when time limit within time seconds
      --spread-job            spread job across as many nodes as possible
      --switches=max-switches{@max-time-to-wait}
                              Optimum switches and max time to wait for optimum
      --thread-spec=threads   count of reserved threads
  -t, --time=minutes          time limit
      --time-min=minutes      minimum time limit (if distinct)
      --uid=user_id           user ID to run job as (user root only)
      --use-min-nodes         if a range of node counts is given, prefer the
                              smaller count
  -v, --verbose               verbose mode (multiple -v's increase verbosity)
  -W, --wait                  wait for completion of submitted job
      --wckey=wckey           wckey to run job under
      --wrap[=command string] wrap command string in a sh script and submit

Constraint options:
      --cluster-constraint=[!]list specify a list of cluster constraints
      --contiguous            demand a contiguous range of nodes
  -C, --constraint=list       specify a list of constraints
  -F, --nodefile=filename     request a specific list of hosts
      --mem=MB                minimum amount of real memory
      --mincpus=n             minimum number of logical processors (threads)
                              per node
      --reservation=name      allocate resources from named reservation
      --tmp=MB                minimum amount of temporary disk
  -w, --nodelist=hosts...     request a specific list of hosts
  -x, --exclude=hosts...      exclude a specific list of hosts

Consumable resources related options:
      --exclusive[=user]      allocate nodes in exclusive mode when
                              cpu consumable resource is enabled
      --exclusive[=mcs]       allocate nodes in exclusive mode when
                              cpu consumable resource is enabled
                              and mcs plugin is enabled
      --mem-per-cpu=MB        maximum amount of real memory per allocated
                              cpu required by the job.
                              --mem >= --mem-per-cpu if --mem is specified.

Affinity/Multi-core options: (when the task/affinity plugin is enabled)
                              For the following 4 options, you are
                              specifying the minimum resources available for
                              the node(s) allocated to the job.
      --sockets-per-node=S    number of sockets per node to allocate
      --cores-per-socket=C    number of cores per socket to allocate
      --threads-per-core=T    number of threads per core to allocate
  -B  --extra-node-info=S[:C[:T]]  combine request of sockets per node,
                              cores per socket and threads per core.
                              Specify an asterisk (*) as a placeholder,
                              a minimum value, or a min-max range.

      --ntasks-per-core=n     number of tasks to invoke on each core
      --ntasks-per-socket=n   number of tasks to invoke on each socket

GPU scheduling options:
      --cpus-per-gpu=n        number of CPUs required per allocated GPU
  -G, --gpus=n                count of GPUs required for the job
      --gpu-bind=...          task to gpu binding options
      --gpu-freq=...          frequency and voltage of GPUs
      --gpus-per-node=n       number of GPUs required per allocated node
      --gpus-per-socket=n     number of GPUs required per allocated socket
      --gpus-per-task=n       number of GPUs required per spawned task
      --mem-per-gpu=n         real memory required per allocated GPU

Help options:
  -h, --help                  show this help message
      --usage                 display brief usage message

Other options:
  -V, --version               output version information and exit

";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every option `--help` and `--usage` name is one the parser takes,
    /// except `-r`, which Slurm 22.05's usage names and its parser refuses.
    #[test]
    fn help_and_usage_name_only_options_that_parse() {
        let mut longs = 0;
        for text in [HELP, USAGE] {
            for word in text.split(|c: char| c.is_whitespace() || c == '[' || c == ',') {
                if let Some(name) = word.strip_prefix("--") {
                    let name = name
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                        .next()
                        .unwrap();
                    if name.is_empty() {
                        continue;
                    }
                    assert!(
                        options::LONGS.iter().any(|o| o.name == name),
                        "--{name} is not an option"
                    );
                    longs += 1;
                } else if let Some(rest) = word.strip_prefix('-') {
                    if let Some(letter) = rest.chars().next().filter(|_| rest.len() == 1) {
                        if letter.is_ascii_alphabetic() && letter != 'r' {
                            assert!(
                                options::SHORTS.iter().any(|o| o.letter == letter),
                                "-{letter} is not an option"
                            );
                        }
                    }
                }
            }
        }
        assert!(longs > 100, "only {longs} long options found");
        assert!(HELP.contains("  -F, --nodefile=filename "));
    }

    #[test]
    fn uid_and_gid_are_for_root_and_must_name_someone() {
        let with = |uid: Option<&str>, gid: Option<&str>| SbatchOpts {
            uid: uid.map(str::to_owned),
            gid: gid.map(str::to_owned),
            ..SbatchOpts::default()
        };
        let text = |r: Result<(u32, u32), OptError>| r.map_err(|e| e.to_string());
        // Without either, the caller.
        assert_eq!(
            text(submit_identity(&with(None, None), 1000, 100)),
            Ok((1000, 100))
        );
        assert_eq!(
            text(submit_identity(&with(Some("0"), None), 1000, 100)),
            Err("--uid only permitted by root user".to_string())
        );
        assert_eq!(
            text(submit_identity(&with(None, Some("0")), 1000, 100)),
            Err("--gid only permitted by root user".to_string())
        );
        // root: a number or a name, root's own group by default.
        assert_eq!(
            text(submit_identity(&with(Some("root"), None), 0, 0)),
            Ok((0, 0))
        );
        if let Some(nobody) = client::uid_for_name("nobody").filter(|u| *u != 0) {
            assert_eq!(
                text(submit_identity(&with(Some("nobody"), None), 0, 0)),
                Ok((nobody, 0))
            );
        }
        assert_eq!(
            text(submit_identity(&with(Some("4242"), Some("77")), 0, 0)),
            Ok((4242, 77))
        );
        assert_eq!(
            text(submit_identity(&with(Some("no-such-user-x"), None), 0, 0)),
            Err("Invalid --uid specification".to_string())
        );
        assert_eq!(
            text(submit_identity(
                &with(Some("0"), Some("no-such-group-x")),
                0,
                0
            )),
            Err("Invalid --gid specification".to_string())
        );
        // A uid the system does not know has no primary group to take.
        assert_eq!(
            text(submit_identity(&with(Some("4242"), None), 0, 0)),
            Err("Invalid --uid specification".to_string())
        );
    }

    fn cli(args: &str) -> CommandLine {
        let words: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        match options::parse_command_line(&words, &read_node_file, 0).unwrap() {
            Invocation::Submit(c) => c,
            other => panic!("{other:?}"),
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn script_checks_with_slurm_texts() {
        assert_eq!(
            check_script(b""),
            Err(vec!["Batch script is empty!".to_owned()])
        );
        assert_eq!(
            check_script(b" \n\t"),
            Err(vec!["Batch script contains only whitespace!".to_owned()])
        );
        let e = check_script(b"echo hi\n").unwrap_err();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0], "This does not look like a batch script.  The first");
        assert_eq!(check_script(b"#!/bin/sh\r\ntrue\r\n").unwrap_err().len(), 2);
        assert_eq!(
            check_script(b"#!/bin/sh\n\0"),
            Err(vec![
                "The Slurm controller does not allow scripts that".to_owned(),
                "contain a NULL character '\\0'.".to_owned(),
            ])
        );
        assert_eq!(check_script(b"#!/bin/sh\ntrue\n"), Ok(()));
    }

    #[test]
    fn script_sources() {
        let s = read_script(&cli("--wrap=true"), &mut &b""[..]).unwrap();
        assert_eq!(s.source, ScriptSource::Wrap);
        assert!(s.text.starts_with("#!/bin/sh\n") && s.text.ends_with("\ntrue\n"));
        let s = read_script(&cli(""), &mut &b"#!/bin/bash\ntrue\n"[..]).unwrap();
        assert_eq!(s.source, ScriptSource::Stdin);
        assert_eq!(
            read_script(&cli(""), &mut &b""[..]),
            Err(vec!["Batch script is empty!".to_owned()])
        );
        assert_eq!(
            read_script(&cli("does-not-exist.sh"), &mut &b""[..]),
            Err(vec!["Unable to open file does-not-exist.sh".to_owned()])
        );
        // A directory opens, and reads as nothing.
        assert_eq!(
            read_script(&cli("/"), &mut &b""[..]),
            Err(vec!["Batch script is empty!".to_owned()])
        );
        assert_eq!(
            read_script(&cli("--wrap=true x.sh"), &mut &b""[..]),
            Err(vec![
                "Script arguments not permitted with --wrap option".to_owned()
            ])
        );
    }

    #[test]
    fn export_modes() {
        let e = env(&[
            ("PATH", "/bin"),
            ("HOME", "/root"),
            ("SLURM_X", "1"),
            ("A", "a"),
        ]);
        assert_eq!(
            job_environment(None, &e, &[]),
            vec!["PATH=/bin", "HOME=/root", "SLURM_X=1", "A=a"]
        );
        assert_eq!(job_environment(Some("NONE"), &e, &[]), vec!["SLURM_X=1"]);
        assert_eq!(
            job_environment(Some("HOME,B=2,MISSING"), &e, &[]),
            vec!["SLURM_X=1", "HOME=/root", "B=2"]
        );
        assert_eq!(
            job_environment(Some("ALL,A=z"), &e, &env(&[("SLURM_Y", "2")])),
            vec!["PATH=/bin", "HOME=/root", "SLURM_X=1", "A=z", "SLURM_Y=2"]
        );
        // As Slurm 22.05: an empty --export passes what NONE passes, and
        // a comma inside quotes is part of the value.
        assert_eq!(job_environment(Some(""), &e, &[]), vec!["SLURM_X=1"]);
        assert_eq!(
            job_environment(Some("A=\"x,y\",B=c"), &e, &[]),
            vec!["SLURM_X=1", "A=\"x,y\"", "B=c"]
        );
        assert_eq!(split_export("a,\"b,c"), vec!["a", "\"b,c"]);
    }

    /// `--export-file` as Slurm 22.05 reads it: NUL-separated entries,
    /// in place of sbatch's environment, without the variables sbatch
    /// sets in its own (SLURM_JOB_NAME, SLURM_EXPORT_ENV); `--export=NONE`
    /// drops them, a name list looks names up in the file.
    #[test]
    fn export_file_replaces_the_environment() {
        assert_eq!(
            export_file_vars(b"FOO=fromfile\nBAR=x y\n\0=v\0NOEQ\0Z=\0"),
            env(&[("FOO", "fromfile\nBAR=x y\n"), ("Z", "")])
        );
        let dir = std::env::temp_dir().join(format!("sbatch-ef-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ef");
        std::fs::write(&file, b"FOO=fromfile\0BAR=x y\0").unwrap();
        let file = file.to_str().unwrap();
        let mut c = ctx();
        c.env = env(&[("PATH", "/bin"), ("QQQ", "2"), ("FOO", "1")]);
        let vars = |args: &str| {
            let cli = cli(args);
            let o = options::resolve(&cli, None, &|_| None, &read_node_file, 0).unwrap();
            let script = read_script(&cli, &mut &b""[..]).unwrap();
            build_job(&o, &cli, &script, &c).unwrap().environment
        };
        let plain = vars(&format!("--export-file={file} --wrap=true"));
        assert!(plain.contains(&"FOO=fromfile".to_owned()), "{plain:?}");
        assert!(plain.contains(&"BAR=x y".to_owned()), "{plain:?}");
        for absent in ["PATH=", "QQQ=", "SLURM_JOB_NAME=", "SLURM_EXPORT_ENV="] {
            assert!(!plain.iter().any(|v| v.starts_with(absent)), "{plain:?}");
        }
        let none = vars(&format!("--export-file={file} --export=NONE --wrap=true"));
        assert!(!none.iter().any(|v| v.starts_with("FOO=")), "{none:?}");
        assert!(
            none.contains(&"SLURM_GET_USER_ENV=1".to_owned()),
            "{none:?}"
        );
        let named = vars(&format!(
            "--export-file={file} --export=QQQ,ZZ=3 --wrap=true"
        ));
        assert!(named.contains(&"ZZ=3".to_owned()), "{named:?}");
        assert!(named.contains(&"FOO=fromfile".to_owned()), "{named:?}");
        assert!(!named.iter().any(|v| v.starts_with("QQQ=")), "{named:?}");
        let without = vars("--wrap=true");
        assert!(
            without.contains(&"SLURM_JOB_NAME=wrap".to_owned()),
            "{without:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn ctx() -> SubmitContext {
        SubmitContext {
            uid: 1000,
            gid: 100,
            user_name: "alice".into(),
            host: "vm".into(),
            sid: 7,
            cwd: "/tmp/slurm-ref".into(),
            submit_line: "sbatch x".into(),
            env: env(&[("PATH", "/bin")]),
            prio_process: 0,
            umask: 0o27,
        }
    }

    fn build(args: &str, script: Script) -> v1::JobDescription {
        let c = cli(args);
        let o = options::resolve(&c, Some(&script.text), &|_| None, &read_node_file, 0).unwrap();
        build_job(&o, &c, &script, &ctx()).unwrap()
    }

    /// `sbatch -v` of Slurm 22.05: the plugin lines, the linear one only
    /// with SelectTypeParameters set; the node count shown is the one
    /// the warning settled.
    #[test]
    fn verbose_plugin_lines_and_settled_counts() {
        let conf = |params: &str| {
            let text = format!(
                "ClusterName=c\nSlurmctldHost=h\nSelectType=select/cons_tres\n{params}\n\
                 NodeName=n1 CPUs=2\nPartitionName=p Nodes=n1 Default=YES\n"
            );
            slurm_common::conf::SlurmConf::parse(&text, "slurm.conf")
                .unwrap()
                .conf
        };
        let lines =
            crate::client::select_plugin_lines(PROG, &conf("SelectTypeParameters=CR_Core_Memory"));
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[2],
            "sbatch: select/linear: init: Linear node selection plugin loaded with argument 20"
        );
        assert!(lines[0].starts_with("sbatch: select/cons_tres:"));
        let unset = crate::client::select_plugin_lines(PROG, &conf(""));
        assert_eq!(unset.len(), 3);
        assert!(!unset.iter().any(|l| l.contains("select/linear")));

        let mut o = options::resolve(
            &cli("-v -N 2-3 -n 1 -w n1,n2 --wrap=true"),
            None,
            &|_| None,
            &read_node_file,
            0,
        )
        .unwrap();
        fit_nodes_to_tasks(&mut o);
        let shown = defined_options(&o);
        assert!(
            shown.contains(&"sbatch: nodes               : 1".to_owned()),
            "{shown:?}"
        );
        assert!(
            shown.contains(&"sbatch: nodelist            : n1".to_owned()),
            "{shown:?}"
        );
    }

    #[test]
    fn fewer_tasks_than_nodes_lowers_the_node_count() {
        let fitted = |line: &str| {
            let mut o = options::resolve(&cli(line), None, &|_| None, &read_node_file, 0).unwrap();
            let warning = fit_nodes_to_tasks(&mut o);
            (o.nodes, warning)
        };
        assert_eq!(
            fitted("-N 2 -n 1 --wrap=true"),
            (
                Some((1, Some(1))),
                Some("can't run 1 processes on 2 nodes, setting nnodes to 1".to_owned())
            )
        );
        assert_eq!(fitted("-N 2-3 -n 1 --wrap=true").0, Some((1, Some(1))));
        assert_eq!(fitted("-N 3 -n 2 --wrap=true").0, Some((2, Some(2))));
        assert_eq!(fitted("-N 2 -n 2 --wrap=true"), (Some((2, None)), None));
        assert_eq!(fitted("-N 2 --wrap=true"), (Some((2, None)), None));
        assert_eq!(fitted("-n 1 --wrap=true"), (None, None));
    }

    /// `-w` as Slurm 22.05's sbatch reads it, on two nodes: sorted, without
    /// duplicates, compressed; as many nodes as it names at least, none
    /// above a maximum smaller than that; `-n` below the count keeps the
    /// first nodes.
    #[test]
    fn a_node_list_sets_the_node_count_as_in_slurm() {
        let fitted = |line: &str| {
            let mut o = options::resolve(&cli(line), None, &|_| None, &read_node_file, 0).unwrap();
            nodes_from_list(&mut o).map(|()| {
                let warning = fit_nodes_to_tasks(&mut o);
                (o.nodelist.clone().unwrap_or_default(), o.nodes, warning)
            })
        };
        let list = |l: &str| l.to_owned();
        let mut o = options::resolve(
            &cli("-x n4,n3,n4 --wrap=true"),
            None,
            &|_| None,
            &read_node_file,
            0,
        )
        .unwrap();
        nodes_from_list(&mut o).unwrap();
        assert_eq!((o.exclude.as_deref(), o.nodes), (Some("n[3-4]"), None));
        assert_eq!(
            fitted("-w n4,n3,n3 --wrap=true").unwrap(),
            (list("n[3-4]"), Some((2, Some(0))), None)
        );
        assert_eq!(
            fitted("-w n[3-4] -N 1-3 --wrap=true").unwrap(),
            (list("n[3-4]"), Some((2, Some(3))), None)
        );
        assert_eq!(
            fitted("-w n[3-4] -N 3 --wrap=true").unwrap(),
            (list("n[3-4]"), Some((3, None)), None)
        );
        let (kept, nodes, warning) = fitted("-w n4,n3 -n 1 --wrap=true").unwrap();
        assert_eq!((kept.as_str(), nodes), ("n3", Some((1, Some(1)))));
        assert_eq!(
            warning.as_deref(),
            Some("can't run 1 processes on 2 nodes, setting nnodes to 1")
        );
        for line in ["-w n[3-4] -N 1 --wrap=true", "-w n[3-4] -N 1-1 --wrap=true"] {
            let e = fitted(line).unwrap_err();
            assert_eq!(e.to_string(), "invalid number of nodes (-N 2-1)");
            assert_eq!(e.exit_status(), 1);
        }
        // Left as written for the controller to judge.
        assert_eq!(fitted("-w n[3- --wrap=true").unwrap().0, "n[3-");
        let job = {
            let mut o = options::resolve(
                &cli("-w n[3-4] --wrap=true"),
                None,
                &|_| None,
                &read_node_file,
                0,
            )
            .unwrap();
            nodes_from_list(&mut o).unwrap();
            let c = cli("-w n[3-4] --wrap=true");
            let script = read_script(&c, &mut &b""[..]).unwrap();
            build_job(&o, &c, &script, &ctx()).unwrap()
        };
        assert_eq!((job.min_nodes, job.max_nodes), (Some(2), None));
    }

    /// What Slurm 22.05 showed as `Socks/Node=` and the cores and threads
    /// of `ReqB:S:C:T=` for each mix of `--hint` and the layout options.
    #[test]
    fn hints_become_core_and_thread_counts_as_in_slurm() {
        let layout = |line: &str| {
            let c = cli(&format!("{line} --wrap=true"));
            let o = options::resolve(&c, None, &|_| None, &read_node_file, 0).unwrap();
            node_layout(&o)
        };
        assert_eq!(layout("--hint=nomultithread"), [None, None, Some(1)]);
        assert_eq!(layout("--hint=compute_bound"), [None, None, Some(1)]);
        assert_eq!(layout("--hint=memory_bound"), [None, Some(1), Some(1)]);
        assert_eq!(layout("--hint=multithread"), [None, None, None]);
        assert_eq!(
            layout("--hint=memory_bound,multithread"),
            [None, Some(1), None]
        );
        // The hint replaces the socket and core counts...
        assert_eq!(
            layout("--cores-per-socket=2 --sockets-per-node=1 --hint=nomultithread"),
            [None, None, Some(1)]
        );
        assert_eq!(
            layout("--hint=memory_bound --cores-per-socket=2"),
            [None, Some(1), Some(1)]
        );
        // ...unless -B, --ntasks-per-core or --threads-per-core is given.
        assert_eq!(layout("-B 1 --hint=nomultithread"), [Some(1), None, None]);
        assert_eq!(
            layout("--hint=memory_bound --threads-per-core=2"),
            [None, None, Some(2)]
        );
        assert_eq!(
            layout("--ntasks-per-core=1 --hint=nomultithread"),
            [None, None, None]
        );
        assert_eq!(
            layout("--ntasks-per-socket=1 --hint=nomultithread"),
            [None, None, Some(1)]
        );
        assert_eq!(layout("-B 1:2:1"), [Some(1), Some(2), Some(1)]);
    }

    #[test]
    fn a_single_node_count_is_sent_as_a_range() {
        let wrap = || Script {
            text: wrap_script("true"),
            source: ScriptSource::Wrap,
        };
        let nodes = |line: &str| {
            let job = build(line, wrap());
            (job.min_nodes, job.max_nodes)
        };
        assert_eq!(nodes("-N 3 --wrap=true"), (Some(3), Some(3)));
        assert_eq!(nodes("-N 1 --wrap=true"), (Some(1), Some(1)));
        assert_eq!(nodes("-N 1-2 --wrap=true"), (Some(1), Some(2)));
        assert_eq!(nodes("--wrap=true"), (None, None));
        // A maximum of 0 is none: at least that many nodes.
        assert_eq!(nodes("-N 2-0 --wrap=true"), (Some(2), None));
        assert_eq!(nodes("-N 0-0 --wrap=true"), (Some(0), Some(0)));
    }

    #[test]
    fn unset_options_stay_unset() {
        let job = build(
            "--wrap=true",
            Script {
                text: wrap_script("true"),
                source: ScriptSource::Wrap,
            },
        );
        assert_eq!(job.name, "wrap");
        assert_eq!(job.command_path, "");
        assert_eq!(job.work_dir, "/tmp/slurm-ref");
        assert!(job.partitions.is_empty());
        assert_eq!(job.time_limit, None);
        assert_eq!(
            (job.min_nodes, job.ntasks, job.memory.is_none()),
            (None, None, true)
        );
        assert_eq!(job.sharing, v1::NodeSharing::Unspecified as i32);
        assert_eq!(job.requeue, None);
        assert_eq!(job.export_spec, "ALL");
        assert_eq!(job.stdout_path, "");
        assert!(job.environment.contains(&"PATH=/bin".to_owned()));
        assert!(job
            .environment
            .contains(&"SLURM_SUBMIT_DIR=/tmp/slurm-ref".to_owned()));
        assert_eq!((job.user_id, job.group_id, job.submit_sid), (1000, 100, 7));
    }

    /// Layout options reach the job as Slurm 22.05's sbatch passes them,
    /// whatever `--export` says; `--mem=0` passes no memory.
    #[test]
    fn layout_options_reach_the_job_environment() {
        let wrap = || Script {
            text: wrap_script("true"),
            source: ScriptSource::Wrap,
        };
        let vars = |args: &str| -> Vec<String> {
            build(args, wrap())
                .environment
                .into_iter()
                .filter(|v| {
                    [
                        "SLURM_DISTRIBUTION=",
                        "SLURM_HINT=",
                        "SLURM_OVERCOMMIT=",
                        "SLURM_THREADS_PER_CORE=",
                        "SLURM_MEM_PER_",
                    ]
                    .iter()
                    .any(|p| v.starts_with(p))
                })
                .collect()
        };
        assert_eq!(
            vars("-m block:cyclic --export=NONE --wrap=true"),
            ["SLURM_DISTRIBUTION=block:cyclic"]
        );
        assert_eq!(vars("--overcommit --wrap=true"), ["SLURM_OVERCOMMIT=1"]);
        assert_eq!(
            vars("--hint=nomultithread --wrap=true"),
            ["SLURM_HINT=nomultithread", "SLURM_THREADS_PER_CORE=1"]
        );
        assert_eq!(
            vars("--hint=compute_bound --wrap=true"),
            ["SLURM_HINT=compute_bound", "SLURM_THREADS_PER_CORE=1"]
        );
        assert_eq!(
            vars("--hint=multithread --wrap=true"),
            ["SLURM_HINT=multithread"]
        );
        assert_eq!(
            vars("--threads-per-core=2 --wrap=true"),
            ["SLURM_THREADS_PER_CORE=2"]
        );
        assert!(vars("--mem=0 --wrap=true").is_empty());
        assert_eq!(vars("--mem=100 --wrap=true"), ["SLURM_MEM_PER_NODE=100"]);
    }

    /// --acctg-freq, --container, --cpu-freq and --profile reach the job
    /// as sbatch spells them; --gpu-bind travels in the description
    /// (TresBind=), and slurmd sets its variable.
    #[test]
    fn accounting_and_frequency_options_reach_the_job_environment() {
        let wrap = || Script {
            text: wrap_script("true"),
            source: ScriptSource::Wrap,
        };
        let job = build(
            "--acctg-freq=task=10 --container=/srv/b --cpu-freq=low-high:performance \
             --profile=task,energy --gpu-bind=closest --export=NONE --wrap=true",
            wrap(),
        );
        for var in [
            "SLURM_ACCTG_FREQ=task=10",
            "SLURM_CONTAINER=/srv/b",
            "SLURM_CPU_FREQ_REQ=Low-High:Performance",
            "SLURM_PROFILE=Energy,Task",
        ] {
            assert!(job.environment.iter().any(|v| v == var), "{var}");
        }
        assert_eq!(job.tres_bind, "gpu:closest");
        assert_eq!(build("--wrap=true", wrap()).tres_bind, "");
    }

    /// The submitting shell's umask travels as `SLURM_UMASK` (octal, four
    /// digits), unless the environment has one already (sbatch inside a
    /// job).
    #[test]
    fn the_umask_travels_unless_already_set() {
        let script = || Script {
            text: "#!/bin/sh\ntrue\n".into(),
            source: ScriptSource::File("job.sh".into()),
        };
        let job = build("job.sh", script());
        assert!(job.environment.contains(&"SLURM_UMASK=0027".to_owned()));
        let c = cli("job.sh");
        let o = options::resolve(&c, Some(&script().text), &|_| None, &read_node_file, 0).unwrap();
        let mut context = ctx();
        context.env.push(("SLURM_UMASK".into(), "0077".into()));
        let job = build_job(&o, &c, &script(), &context).unwrap();
        let masks: Vec<&String> = job
            .environment
            .iter()
            .filter(|e| e.starts_with("SLURM_UMASK="))
            .collect();
        assert_eq!(masks, ["SLURM_UMASK=0077"]);
    }

    #[test]
    fn options_reach_the_description() {
        let script = Script {
            text: "#!/bin/sh\n#SBATCH -N 2 --mem-per-cpu=1G\ntrue\n".into(),
            source: ScriptSource::File("dir/job.sh".into()),
        };
        let job = build(
            "-p a,b -t 2-0 -n 4 -D sub --export=NONE -o o.%j dir/job.sh x y",
            script,
        );
        assert_eq!(job.name, "job.sh");
        assert_eq!(job.command_path, "/tmp/slurm-ref/dir/job.sh");
        assert_eq!(job.work_dir, "/tmp/slurm-ref/sub");
        assert_eq!(job.argv, vec!["x", "y"]);
        assert_eq!(job.partitions, vec!["a", "b"]);
        assert_eq!(job.time_limit, Some(time_limit(TimeLimit::Minutes(2880))));
        // `-N 2` is sent as 2-2, as Slurm's sbatch sends it.
        assert_eq!(
            (job.min_nodes, job.max_nodes, job.ntasks),
            (Some(2), Some(2), Some(4))
        );
        assert_eq!(
            job.memory,
            Some(v1::job_description::Memory::MemPerCpuMb(1024))
        );
        assert_eq!(job.export_spec, "NONE");
        assert!(!job.environment.iter().any(|v| v.starts_with("PATH=")));
        assert!(job.environment.contains(&"SLURM_NTASKS=4".to_owned()));
        assert_eq!(job.stdout_path, "o.%j");
        let stdin = Script {
            text: "#!/bin/sh\n".into(),
            source: ScriptSource::Stdin,
        };
        assert_eq!(build("", stdin).name, "sbatch");
    }

    /// Slurm 22.05's sbatch asks for a task per socket, core and thread
    /// `-B` counts, on each node, unless a task count is given
    /// (SLURM_NTASKS is set then); `--sockets-per-node` alone asks for
    /// none.
    #[test]
    fn extra_node_info_counts_tasks() {
        let wrap = || Script {
            text: wrap_script("true"),
            source: ScriptSource::Wrap,
        };
        let ntasks = |args: &str| {
            let job = build(&format!("{args} --wrap=true"), wrap());
            let env = job
                .environment
                .iter()
                .find_map(|v| v.strip_prefix("SLURM_NTASKS=").map(str::to_owned));
            (job.ntasks, env)
        };
        let some = |n: u32| (Some(n), Some(n.to_string()));
        assert_eq!(ntasks("-B 2"), some(2));
        assert_eq!(ntasks("-B 1"), some(1));
        assert_eq!(ntasks("-B 1:2"), some(2));
        assert_eq!(ntasks("-B 2:1:2"), some(4));
        assert_eq!(ntasks("-B 1:2 -N 2"), some(4));
        assert_eq!(ntasks("-B 2 -N 1-3"), some(2));
        assert_eq!(ntasks("-B 1:2 -n 1"), some(1));
        assert_eq!(ntasks("-B 2 --ntasks-per-node=1"), (None, None));
        assert_eq!(ntasks("--sockets-per-node=2"), (None, None));
        assert_eq!(ntasks("--cores-per-socket=2"), (None, None));
    }

    /// Slurm 22.05 sets `SLURM_GET_USER_ENV=1` for `--get-user-env` and
    /// for every `--export` but plain `ALL`.
    #[test]
    fn export_other_than_all_asks_for_the_user_environment() {
        let script = || Script {
            text: "#!/bin/sh\ntrue\n".into(),
            source: ScriptSource::File("job.sh".into()),
        };
        let asks = |args: &str| {
            build(args, script())
                .environment
                .contains(&"SLURM_GET_USER_ENV=1".to_owned())
        };
        assert!(!asks("job.sh"));
        assert!(!asks("--export=ALL job.sh"));
        assert!(!asks("--export=all job.sh"));
        assert!(asks("--export=NONE job.sh"));
        assert!(asks("--export=FOO,BAR=baz job.sh"));
        assert!(asks("--export=ALL,FOO=1 job.sh"));
        assert!(asks("--get-user-env job.sh"));
        assert!(asks("--get-user-env=10L job.sh"));
    }

    #[test]
    fn finished_jobs_and_exit_status() {
        let mut job = v1::JobInfo {
            state: v1::JobState::Running as i32,
            ..Default::default()
        };
        assert!(!job_finished(&job));
        job.state = v1::JobState::Failed as i32;
        job.state_flags = vec![v1::JobStateFlag::Completing as i32];
        assert!(!job_finished(&job));
        job.state_flags.clear();
        assert!(job_finished(&job));
        job.exit_code = Some(v1::ExitCode {
            status: 7,
            signal: 0,
            core_dumped: false,
        });
        assert_eq!(exit_status_of(&job), 7);
        job.exit_code = Some(v1::ExitCode {
            status: 0,
            signal: 9,
            core_dumped: false,
        });
        assert_eq!(exit_status_of(&job), 1);
    }

    #[test]
    fn submit_errors_as_slurm_prints_them() {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        let err = RpcError::new(
            ErrorCode::InvalidPartitionName,
            "invalid partition specified: nope",
        );
        report_submit_error(&mut out, &err);
        let plain = RpcError::new(ErrorCode::ControllerConnect, "tcp connect error");
        report_submit_error(&mut out, &plain);
        assert_eq!(
            String::from_utf8(e).unwrap(),
            "sbatch: error: invalid partition specified: nope\n\
             sbatch: error: Batch job submission failed: Invalid partition name specified\n\
             sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n"
        );
    }

    /// Runs sbatch with `args` (without the program name) and no standard
    /// input: (stdout, stderr, status).
    fn run_sbatch(args: &[&str]) -> (String, String, i32) {
        let argv: Vec<OsString> = std::iter::once("sbatch")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let status = run_with(
            &argv,
            &mut std::io::empty(),
            &mut Output::new(&mut stdout, &mut stderr),
        );
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        (text(stdout), text(stderr), status)
    }

    /// getopt names sbatch as it was called; the "Try" line says `sbatch`.
    #[test]
    fn command_line_errors_name_the_program_as_called() {
        let argv: Vec<OsString> = ["/usr/bin/sbatch", "--bogus"]
            .iter()
            .map(OsString::from)
            .collect();
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let status = run_with(
            &argv,
            &mut std::io::empty(),
            &mut Output::new(&mut stdout, &mut stderr),
        );
        assert_eq!(status, 255);
        assert_eq!(
            String::from_utf8(stderr).unwrap(),
            "/usr/bin/sbatch: unrecognized option '--bogus'\n\
             Try \"sbatch --help\" for more information\n"
        );
    }

    /// A bad `#SBATCH` line is reported as getopt reports a bad command
    /// line, under the plain name, before any controller is reached.
    #[test]
    fn bad_directives_print_as_getopt_errors() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("job.sh");
        for (line, want) in [
            ("#SBATCH --bogus", "sbatch: unrecognized option '--bogus'"),
            ("#SBATCH -J", "sbatch: option requires an argument -- 'J'"),
            (
                "#SBATCH --ti=5",
                "sbatch: option '--ti=5' is ambiguous; possibilities: '--time' '--time-min'",
            ),
        ] {
            std::fs::write(&job, format!("#!/bin/sh\n{line}\necho hi\n")).unwrap();
            let got = run_sbatch(&[job.to_str().unwrap()]);
            let want = format!("{want}\nTry \"sbatch --help\" for more information\n");
            assert_eq!(got, (String::new(), want, 255), "{line}");
        }
    }

    #[test]
    fn test_only_refusals_print_as_allocation_failures() {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        let err = RpcError::new(
            ErrorCode::InvalidPartitionName,
            "invalid partition specified: nope",
        );
        report_test_only_error(&mut out, &err);
        let bare = RpcError::new(ErrorCode::RequestedNodeConfigUnavailable, "");
        report_test_only_error(&mut out, &bare);
        assert_eq!(
            String::from_utf8(e).unwrap(),
            "sbatch: error: invalid partition specified: nope\n\
             allocation failure: Invalid partition name specified\n\
             allocation failure: Requested node configuration is not available\n"
        );
    }

    #[test]
    fn a_bad_begin_prints_slurms_two_lines() {
        // Refused before any configuration is read or controller reached.
        let got = run_sbatch(&["--begin=now+x", "--wrap", "true"]);
        let want = "Invalid time specification (pos=3): now+x\n\
                    sbatch: error: Invalid --begin specification\n";
        assert_eq!(got, (String::new(), want.to_owned(), 255));
        let got = run_sbatch(&["--deadline=", "--wrap", "true"]);
        let want = "sbatch: error: Invalid --deadline specification\n";
        assert_eq!(got, (String::new(), want.to_owned(), 255));
    }

    #[test]
    fn a_missing_node_file_is_refused_before_submission() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nonexist");
        let missing = missing.to_str().unwrap();
        let got = run_sbatch(&["-F", missing, "--wrap", "true"]);
        let want = format!(
            "sbatch: error: slurm_allocate_resources error opening file {missing}, \
             No such file or directory\nsbatch: error: Invalid --nodefile node file\n"
        );
        assert_eq!(got, (String::new(), want, 255));
    }

    #[test]
    fn node_files_are_read_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = dir.path().join("hosts");
        std::fs::write(&hosts, "n2\nn1\n").unwrap();
        assert_eq!(
            read_node_file(hosts.to_str().unwrap()).unwrap(),
            b"n2\nn1\n"
        );
        // A directory opens but reads as nothing, as with Slurm's fopen.
        let dir_path = dir.path().to_str().unwrap();
        assert_eq!(read_node_file(dir_path).unwrap(), b"");
        let missing = read_node_file(&format!("{dir_path}/nonexist")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
