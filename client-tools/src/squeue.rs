//! `squeue`: list the jobs in the queue.
//!
//! Options are read as Slurm reads them (GNU `getopt_long`: long names may be
//! shortened while unambiguous, short options may be bundled), then the jobs
//! come from one `GetJobs` call and [`crate::format::squeue`] renders them.
//! The controller already filters; the same filter is applied again here so
//! the output never depends on how strict a controller version is.
//!
//! A queue of 10,000 jobs must print in a few milliseconds, and decoding the
//! reply into 10,000 `JobInfo` values used to cost more than everything
//! else. So the reply is taken undecoded, in the parts StreamJobs sends it
//! in ([`client::stream_raw`]), and read one record at a time into a single
//! reused `JobInfo` ([`crate::format::reply::JobRecords`]); each job that
//! passes the filter is rendered into its row at once, and only its sort
//! keys are kept ([`render::SortKeys`]). So the first jobs are rendered
//! while the controller still encodes the last ones. The rows are put in
//! order at the end. `--json` and `--yaml` need every job at once and
//! decode every part.
//!
//! Two of Slurm's displays need more than one record at a time. Pending
//! tasks split off an array (held or cancelled one by one) are shown on
//! the array's pending line unless `-r` or `--array-unique`, so pending
//! array records are held back and combined after the last one; and
//! `-P` shows a job once per partition it may run in, ordered by each
//! partition's PriorityTier before the job priority, so the tiers are
//! asked for (`GetPartitions`) when a priority sort needs them.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io::Write;

use prost::bytes::Bytes;
use prost::Message;
use slurm_proto::v1::{
    ArrayTaskSelector, GetJobsReply, GetJobsRequest, GetNodesRequest, GetPartitionsRequest,
    JobFilter, JobInfo, NodeInfo, PartitionInfo,
};
use slurm_proto::ErrorCode;

mod steps;

use crate::client::{self, ClientConfig, Controller, EnvLookup, RpcError};
use crate::format::reply::{JobRecords, ReplyError};
use crate::format::squeue::{self as render, StateFilter};
pub use crate::format::TaskListLimit;
use crate::format::{self, checks, yaml, Ctx, Dump, TimeFormat, Units, Zone};
use crate::opts::{self, Getopt, GetoptError, HasArg, LongOpt, Ordering, ShortOpt};
use crate::output::{version_line, Output};

/// Every option squeue reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Account,
    All,
    Array,
    ArrayUnique,
    Clusters,
    Format,
    FormatLong,
    Help,
    Hide,
    Iterate,
    Jobs,
    Json,
    Licenses,
    Long,
    Me,
    Name,
    NoHeader,
    Nodelist,
    NoConvert,
    Partition,
    Priority,
    Qos,
    Reservation,
    Sort,
    Start,
    States,
    Steps,
    Usage,
    User,
    Verbose,
    Version,
    Yaml,
    Federation,
    Local,
    Sibling,
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

/// squeue 22.05's short options (`A:ahi:j::lL:n:M:O:o:p:Pq:R:rs::S:t:u:U:vVw:`).
const SHORTS: &[ShortOpt<Key>] = &[
    short('A', HasArg::Required, Key::Account),
    short('a', HasArg::No, Key::All),
    short('h', HasArg::No, Key::NoHeader),
    short('i', HasArg::Required, Key::Iterate),
    short('j', HasArg::Optional, Key::Jobs),
    short('l', HasArg::No, Key::Long),
    short('L', HasArg::Required, Key::Licenses),
    short('n', HasArg::Required, Key::Name),
    short('M', HasArg::Required, Key::Clusters),
    short('O', HasArg::Required, Key::FormatLong),
    short('o', HasArg::Required, Key::Format),
    short('p', HasArg::Required, Key::Partition),
    short('P', HasArg::No, Key::Priority),
    short('q', HasArg::Required, Key::Qos),
    short('R', HasArg::Required, Key::Reservation),
    short('r', HasArg::No, Key::Array),
    short('s', HasArg::Optional, Key::Steps),
    short('S', HasArg::Required, Key::Sort),
    short('t', HasArg::Required, Key::States),
    short('u', HasArg::Required, Key::User),
    short('U', HasArg::Required, Key::Account),
    short('v', HasArg::No, Key::Verbose),
    short('V', HasArg::No, Key::Version),
    short('w', HasArg::Required, Key::Nodelist),
];

/// squeue 22.05's long options, in its declaration order (the order of the
/// candidates in getopt's "ambiguous" message).
const LONGS: &[LongOpt<Key>] = &[
    long("accounts", HasArg::Required, Key::Account),
    long("all", HasArg::No, Key::All),
    long("array", HasArg::No, Key::Array),
    long("array-unique", HasArg::No, Key::ArrayUnique),
    long("Format", HasArg::Required, Key::FormatLong),
    long("format", HasArg::Required, Key::Format),
    long("federation", HasArg::No, Key::Federation),
    long("help", HasArg::No, Key::Help),
    long("hide", HasArg::No, Key::Hide),
    long("iterate", HasArg::Required, Key::Iterate),
    long("jobs", HasArg::Optional, Key::Jobs),
    long("json", HasArg::No, Key::Json),
    long("local", HasArg::No, Key::Local),
    long("long", HasArg::No, Key::Long),
    long("licenses", HasArg::Required, Key::Licenses),
    long("cluster", HasArg::Required, Key::Clusters),
    long("clusters", HasArg::Required, Key::Clusters),
    long("me", HasArg::No, Key::Me),
    long("name", HasArg::Required, Key::Name),
    long("noconvert", HasArg::No, Key::NoConvert),
    long("node", HasArg::Required, Key::Nodelist),
    long("nodes", HasArg::Required, Key::Nodelist),
    long("nodelist", HasArg::Required, Key::Nodelist),
    long("noheader", HasArg::No, Key::NoHeader),
    long("partitions", HasArg::Required, Key::Partition),
    long("priority", HasArg::No, Key::Priority),
    long("qos", HasArg::Required, Key::Qos),
    long("reservation", HasArg::Required, Key::Reservation),
    long("sib", HasArg::No, Key::Sibling),
    long("sibling", HasArg::No, Key::Sibling),
    long("sort", HasArg::Required, Key::Sort),
    long("start", HasArg::No, Key::Start),
    long("steps", HasArg::Optional, Key::Steps),
    long("states", HasArg::Required, Key::States),
    long("usage", HasArg::No, Key::Usage),
    long("user", HasArg::Required, Key::User),
    long("users", HasArg::Required, Key::User),
    long("verbose", HasArg::No, Key::Verbose),
    long("version", HasArg::No, Key::Version),
    long("yaml", HasArg::No, Key::Yaml),
];

/// squeue 22.05's usage text (its last line starts with a tab).
/// `--help`: every option, grouped and explained as Slurm 22.05 prints them.
const HELP: &str = include_str!("help/squeue.txt");

const USAGE: &str = "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [-p partitions] [--qos qos]
              [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
\t      [-ahjlrsv]";

/// The states squeue 22.05 lists after refusing a `-t` word.
const VALID_STATES: &str = "PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,\
NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,\
RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED";

/// A command line squeue refuses before asking the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqueueError {
    /// Printed as `squeue: <getopt text>` and the "Try" line.
    Getopt(GetoptError),
    /// Printed as is: every line for standard error (the warnings printed
    /// before the refusal come first), then the usage on standard output
    /// when `usage` is set.
    Refused { lines: Vec<String>, usage: bool },
}

impl std::fmt::Display for SqueueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Getopt(e) => write!(f, "{e}"),
            Self::Refused { lines, .. } => f.write_str(&lines.join("\n")),
        }
    }
}

impl std::error::Error for SqueueError {}

impl From<GetoptError> for SqueueError {
    fn from(e: GetoptError) -> Self {
        SqueueError::Getopt(e)
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub accounts: Vec<String>,
    /// `-r`/`SQUEUE_ARRAY`: every array task on a line of its own.
    pub array: bool,
    /// `--array-unique`/`SQUEUE_ARRAY_UNIQUE`: pending tasks split off an
    /// array stay on lines of their own instead of joining the array's
    /// pending line.
    pub array_unique: bool,
    /// `--noconvert`: sizes in the unit they are kept in (`2048M`).
    pub noconvert: bool,
    /// `-P`/`--priority`/`SQUEUE_PRIORITY`: a job listed once per partition
    /// it may run in, and sorted by partition PriorityTier before priority.
    pub priority: bool,
    pub format: Option<String>,
    pub format_long: Option<String>,
    pub help: bool,
    pub usage: bool,
    pub job_ids: Vec<String>,
    /// `--json` or `--yaml`, whichever came last.
    pub dump: Option<Dump>,
    /// `SLURM_BITSTR_LEN`: how long a combined task list may get.
    pub task_list_limit: TaskListLimit,
    /// `SLURM_TIME_FORMAT`: how timestamps are written.
    pub time_format: TimeFormat,
    /// `-L`: jobs asking for any of these licenses.
    pub licenses: Vec<String>,
    pub long: bool,
    /// `-a`/`SQUEUE_ALL` (`--hide` takes it back): jobs of hidden
    /// partitions too. Naming jobs or partitions, or `--json`/`--yaml`,
    /// shows them as well.
    pub all: bool,
    pub me: bool,
    pub names: Vec<String>,
    pub no_header: bool,
    pub nodelist: String,
    pub partitions: Vec<String>,
    pub qos: Vec<String>,
    pub reservations: Vec<String>,
    pub sort: Option<String>,
    pub start: bool,
    pub states: Option<String>,
    pub users: Vec<String>,
    pub version: bool,
    /// `-i`/`--iterate` as given; checked by [`Plan::new`].
    pub iterate: Option<String>,
    /// The uids of the `-u` users that exist; `users_given` says whether
    /// `-u` (or `SQUEUE_USERS`) asked for users at all, so that naming only
    /// unknown users selects nothing, as in Slurm.
    pub uids: Vec<u32>,
    pub users_given: bool,
    /// `-s`/`--steps`: the step view.
    pub step_view: bool,
    /// The `-s` list, when one was given (checked).
    pub steps: Option<String>,
    /// `-o` and `-O` as given on the command line (not from
    /// `SQUEUE_FORMAT*`, which the step view ignores).
    pub cli_format: Option<String>,
    pub cli_format_long: Option<String>,
    /// `-M`/`--clusters` as given; checked against `ClusterName`.
    pub clusters: Option<String>,
    /// List filters given with no item: they select no job.
    pub empty_lists: Vec<ListFilter>,
    /// Lines already meant for standard error (unknown users) when the
    /// command goes on.
    pub warnings: Vec<String>,
    /// `-v`, counted: the options are printed before the report
    /// ([`option_dump`]), with the date and what the controller sent.
    pub verbose: u8,
    /// `--federation`, `--local`, `--sibling`: accepted (a lone cluster has
    /// nothing to federate) and shown by `-v`.
    pub federation: bool,
    pub local: bool,
    pub sibling: bool,
    /// Whether `-j` was given, with or without ids.
    pub job_flag: bool,
    /// The last value of each list option as written (`-j`, `-L`, `-n`,
    /// `-p`, `-R`, `-u`, or the `SQUEUE_*` variable), for `-v`.
    pub given: BTreeMap<&'static str, String>,
}

/// The lines squeue prints for an unknown `-u` user; like Slurm it goes on.
fn resolve_users(o: &mut Options, value: &str) {
    o.given.insert("users", value.to_owned());
    o.users = list(Some(value.to_owned()));
    o.users_given = true;
    o.uids.clear();
    for user in value.split(',').filter(|u| !u.is_empty()) {
        match checks::uid_from_string(user, &client::uid_for_name, &|uid| {
            client::user_name(uid).is_some()
        }) {
            Some(uid) => o.uids.push(uid),
            None => {
                // Slurm's message ends in a newline of its own.
                o.warnings
                    .push(format!("squeue: error: Invalid user: {user}"));
                o.warnings.push(String::new());
            }
        }
    }
}

/// Checks a `-j` list as squeue reads it: each id is C's `strtol` kept to
/// an `int`, and must be positive; what follows the number (`.0`, `_3`,
/// `+1`) is not checked here.
fn check_job_list(value: &str) -> Result<(), String> {
    for id in value.split(',').filter(|i| !i.is_empty()) {
        if checks::atoi(id) <= 0 {
            return Err(format!("squeue: error: Invalid job id: {id}"));
        }
    }
    Ok(())
}

/// Checks a `-s` list: each item needs a job part and a step part around
/// a `.` (empty parts are skipped, as `strtok` skips them).
fn check_step_list(value: &str) -> Result<(), String> {
    for item in value.split(',').filter(|i| !i.is_empty()) {
        let mut parts = item.split('.').filter(|p| !p.is_empty());
        if let (Some(job), None) = (parts.next(), parts.next()) {
            return Err(format!("squeue: error: Invalid job_step id: {job}.??"));
        }
    }
    Ok(())
}

/// A comma-separated list as Slurm splits it: items kept as written
/// (` debug` is no partition name), empty ones skipped.
fn list(value: Option<String>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The three lines squeue prints for a state it does not know (Slurm's
/// last message ends in a newline of its own).
fn bad_state_lines(word: &str) -> Vec<String> {
    vec![
        format!("squeue: error: Invalid job state specified: {word}"),
        format!("squeue: error: Valid job states include: {VALID_STATES}"),
        String::new(),
    ]
}

/// The list filters that select no job at all when given with no item
/// (`-A ""`, `--jobs=`, `SQUEUE_QOS=`), as in Slurm, where such a list
/// exists but matches nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFilter {
    Accounts,
    Jobs,
    Licenses,
    Names,
    Nodes,
    Partitions,
    Qos,
    Reservations,
}

impl Options {
    /// Sets a list filter from its option's value; the last one given
    /// counts.
    fn set_list(&mut self, which: ListFilter, value: &str) {
        let shown = match which {
            ListFilter::Licenses => Some("licenses"),
            ListFilter::Names => Some("names"),
            ListFilter::Partitions => Some("partitions"),
            ListFilter::Reservations => Some("reservation"),
            _ => None,
        };
        if let Some(key) = shown {
            self.given.insert(key, value.to_owned());
        }
        let items = list(Some(value.to_owned()));
        self.note_empty(which, items.is_empty());
        let field = match which {
            ListFilter::Accounts => &mut self.accounts,
            ListFilter::Licenses => &mut self.licenses,
            ListFilter::Names => &mut self.names,
            ListFilter::Partitions => &mut self.partitions,
            ListFilter::Qos => &mut self.qos,
            ListFilter::Reservations => &mut self.reservations,
            ListFilter::Jobs => &mut self.job_ids,
            ListFilter::Nodes => return,
        };
        *field = items;
    }

    /// Records whether filter `which` was last given with no item.
    fn note_empty(&mut self, which: ListFilter, empty: bool) {
        self.empty_lists.retain(|w| *w != which);
        if empty {
            self.empty_lists.push(which);
        }
    }
}

/// Reads the options (arguments without the program name) and the
/// `SQUEUE_*` environment variables they override. Values squeue checks
/// while reading (`-t`, `-u`, `-w`, `-i`, an attached `-j`/`-s`) are
/// checked in command-line order, so the first bad one is the one
/// reported, as in Slurm; then `-l` with `-o`, then the operands.
pub fn parse_options(args: &[String], env: EnvLookup<'_>) -> Result<Options, SqueueError> {
    // Flags Slurm sets when the variable exists at all, even empty.
    let set = |name: &str| env(name).is_some();
    let raw = |name: &str| env(name).map(|v| v.to_string_lossy().into_owned());
    let mut o = Options {
        all: set("SQUEUE_ALL"),
        array: set("SQUEUE_ARRAY"),
        array_unique: set("SQUEUE_ARRAY_UNIQUE"),
        priority: set("SQUEUE_PRIORITY"),
        // Set but empty still counts: no fields, no sort keys.
        format: raw("SQUEUE_FORMAT"),
        format_long: raw("SQUEUE_FORMAT2"),
        sort: raw("SQUEUE_SORT"),
        task_list_limit: TaskListLimit::from_env(
            env("SLURM_BITSTR_LEN")
                .as_deref()
                .map(|v| v.to_string_lossy())
                .as_deref(),
        ),
        time_format: TimeFormat::from_env(raw("SLURM_TIME_FORMAT").as_deref()),
        ..Options::default()
    };
    for (name, which) in [
        ("SQUEUE_ACCOUNT", ListFilter::Accounts),
        ("SQUEUE_LICENSES", ListFilter::Licenses),
        ("SQUEUE_NAMES", ListFilter::Names),
        ("SQUEUE_PARTITION", ListFilter::Partitions),
        ("SQUEUE_QOS", ListFilter::Qos),
    ] {
        if let Some(value) = raw(name) {
            o.set_list(which, &value);
        }
    }
    if let Some(users) = raw("SQUEUE_USERS") {
        resolve_users(&mut o, &users);
    }
    // Checked once the options are read, unless `-t` replaced it.
    let env_states = raw("SQUEUE_STATES");
    o.states.clone_from(&env_states);
    let refuse = |o: &Options, lines: Vec<String>| SqueueError::Refused {
        lines: o.warnings.iter().cloned().chain(lines).collect(),
        usage: false,
    };
    let (mut dash_o, mut job_flag, mut step_flag) = (false, false, false);
    // Whether `-j` came with a value (`--jobs=`), which may name no job.
    let mut job_value = false;
    let mut getopt = Getopt::new(args, SHORTS, LONGS, Ordering::Permute);
    for found in &mut getopt {
        let found = found?;
        let value = found.value;
        let text = value.as_deref().unwrap_or("");
        match found.key {
            Key::Account => o.set_list(ListFilter::Accounts, text),
            Key::All => o.all = true,
            Key::Hide => o.all = false,
            Key::Licenses => o.set_list(ListFilter::Licenses, text),
            Key::Clusters => o.clusters = value,
            Key::Array => o.array = true,
            Key::ArrayUnique => o.array_unique = true,
            Key::NoConvert => o.noconvert = true,
            Key::Priority => o.priority = true,
            Key::Format => {
                dash_o = true;
                o.format.clone_from(&value);
                o.cli_format = value;
                o.format_long = None;
                o.cli_format_long = None;
            }
            Key::FormatLong => {
                o.format_long.clone_from(&value);
                o.cli_format_long = value;
                o.format = None;
                o.cli_format = None;
            }
            // squeue answers these the moment it reads them.
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
                    // Slurm's message ends in a newline of its own.
                    let lines = vec![format!("squeue: error: --iterate={text}"), String::new()];
                    return Err(refuse(&o, lines));
                }
                o.iterate = value;
            }
            Key::Jobs => {
                job_flag = true;
                o.job_flag = true;
                if let Some(v) = &value {
                    o.given.insert("jobs", v.clone());
                    check_job_list(v).map_err(|line| refuse(&o, vec![line]))?;
                    job_value = true;
                }
                o.job_ids.extend(list(value));
            }
            Key::Json => o.dump = Some(Dump::Json),
            Key::Yaml => o.dump = Some(Dump::Yaml),
            Key::Long => o.long = true,
            Key::Me => {
                o.me = true;
                o.given.insert("users", client::current_uid().to_string());
            }
            Key::Name => o.set_list(ListFilter::Names, text),
            Key::NoHeader => o.no_header = true,
            Key::Nodelist => {
                if let Err(e) = checks::check_hostlist(text) {
                    let lines = e.lines(text, "nodelist");
                    let lines = lines.iter().map(|l| format!("squeue: error: {l}"));
                    return Err(refuse(&o, lines.collect()));
                }
                o.note_empty(ListFilter::Nodes, text.is_empty());
                o.nodelist = value.unwrap_or_default();
            }
            Key::Partition => o.set_list(ListFilter::Partitions, text),
            Key::Qos => o.set_list(ListFilter::Qos, text),
            Key::Reservation => o.set_list(ListFilter::Reservations, text),
            Key::Sort => o.sort = value,
            Key::Start => o.start = true,
            Key::States => {
                if let Err(e) = render::parse_states(text) {
                    return Err(refuse(&o, bad_state_lines(&e.word)));
                }
                o.states = value;
            }
            Key::Steps => {
                step_flag = true;
                o.step_view = true;
                if let Some(v) = &value {
                    check_step_list(v).map_err(|line| refuse(&o, vec![line]))?;
                }
                o.steps = value;
            }
            Key::Verbose => o.verbose = o.verbose.saturating_add(1),
            Key::Federation => o.federation = true,
            Key::Local => o.local = true,
            Key::Sibling => o.sibling = true,
            Key::User => resolve_users(&mut o, text),
        }
    }
    if o.long && dash_o {
        let line = "squeue: fatal: Options -o(--format) and -l(--long) are mutually \
                    exclusive. Please remove one and retry.";
        return Err(refuse(&o, vec![line.to_owned()]));
    }
    o.note_empty(ListFilter::Jobs, job_value && o.job_ids.is_empty());
    if let Some(states) = env_states.as_ref().filter(|_| o.states == env_states) {
        if let Err(e) = render::parse_states(states) {
            return Err(refuse(&o, bad_state_lines(&e.word)));
        }
    }
    // One bare word may hold the `-j` ids (`squeue -j 5`: -j's value is
    // optional, so it is not attached) or else the `-s` steps; any other
    // bare word is refused.
    let mut operands = getopt.into_operands().into_iter();
    if let Some(first) = operands.next() {
        let rest = if job_flag {
            check_job_list(&first).map_err(|line| refuse(&o, vec![line]))?;
            o.given.insert("jobs", first.clone());
            o.job_ids = list(Some(first));
            o.note_empty(ListFilter::Jobs, o.job_ids.is_empty());
            operands.next()
        } else if step_flag {
            check_step_list(&first).map_err(|line| refuse(&o, vec![line]))?;
            o.steps = Some(first);
            operands.next()
        } else {
            Some(first)
        };
        if let Some(word) = rest {
            return Err(SqueueError::Refused {
                lines: o
                    .warnings
                    .iter()
                    .cloned()
                    .chain([format!("squeue: error: Unrecognized option: {word}")])
                    .collect(),
                usage: true,
            });
        }
    }
    Ok(o)
}

/// What squeue 22.05 prints first with `-v`: its options between two
/// rules, then two empty lines. Values are as written (`(null)` for one
/// not given); `--start` shows the format, sort and states it implies.
pub fn option_dump(o: &Options) -> String {
    let given = |key: &str| o.given.get(key).cloned();
    let or_null = |v: Option<String>| v.unwrap_or_else(|| "(null)".to_owned());
    let implied = |v: &Option<String>, by_start: &str| {
        v.clone().or_else(|| o.start.then(|| by_start.to_owned()))
    };
    let format = match (&o.format, &o.format_long) {
        (None, Some(_)) => None,
        (f, _) => implied(f, crate::format::squeue::START_FORMAT),
    };
    let flag = |b: bool| u8::from(b).to_string();
    let iterate = o.iterate.as_deref().map_or(0, checks::atoi);
    let rows: [(&str, String); 22] = [
        ("all         ", o.all.to_string()),
        ("array       ", o.array.to_string()),
        ("federation  ", o.federation.to_string()),
        ("format      ", or_null(format)),
        ("iterate     ", iterate.to_string()),
        ("job_flag    ", flag(o.job_flag)),
        ("jobs        ", or_null(given("jobs"))),
        ("licenses    ", or_null(given("licenses"))),
        ("local       ", o.local.to_string()),
        ("names       ", or_null(given("names"))),
        ("nodes       ", o.nodelist.clone()),
        ("partitions  ", or_null(given("partitions"))),
        ("priority    ", o.priority.to_string()),
        ("reservation ", or_null(given("reservation"))),
        // One space more than the others, as squeue prints it.
        ("sibling      ", o.sibling.to_string()),
        ("sort        ", or_null(implied(&o.sort, "S"))),
        ("start_flag  ", flag(o.start)),
        ("states      ", or_null(implied(&o.states, "PD"))),
        ("step_flag   ", flag(o.step_view)),
        ("steps       ", or_null(o.steps.clone())),
        ("users       ", or_null(given("users"))),
        ("verbose     ", o.verbose.to_string()),
    ];
    let rule = "-----------------------------\n";
    let mut text = rule.to_owned();
    for (name, value) in rows {
        text.push_str(&format!("{name}= {value}\n"));
    }
    text.push_str(rule);
    text.push_str("\n\n");
    text
}

/// A `-j` entry that is not a job id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid job id: {0}")]
pub struct JobIdError(pub String);

/// Splits `-j` entries into plain ids and array task selectors. The id is
/// read as squeue reads it (C's `strtol` kept to an `int`, positive); an
/// `_` right after it starts the task id, and anything else after either
/// number (`.0`, `+1`, `-3`) is ignored, as squeue ignores it.
fn job_selectors(ids: &[String]) -> Result<(Vec<u32>, Vec<ArrayTaskSelector>), JobIdError> {
    let mut plain = Vec::new();
    let mut tasks = Vec::new();
    for id in ids {
        let (_, rest, _) = checks::strtol(id);
        let job = u32::try_from(checks::atoi(id))
            .ok()
            .filter(|j| *j > 0)
            .ok_or_else(|| JobIdError(id.clone()))?;
        match rest.strip_prefix('_') {
            // One task, read as `strtol` reads it (`11_2.0` is task 2,
            // `11_[1-3]` task 0); a number out of range names no task.
            Some(spec) => tasks.push(ArrayTaskSelector {
                array_job_id: job,
                task_spec: u32::try_from(checks::strtol(spec).0)
                    .unwrap_or(u32::MAX)
                    .to_string(),
            }),
            None => plain.push(job),
        }
    }
    Ok((plain, tasks))
}

/// The clock and the pause between `--iterate` reports. Injected so tests
/// run several reports without sleeping.
pub trait Pacer {
    /// The current time, Unix seconds.
    fn now(&mut self) -> i64;
    /// Waits `seconds` before the next report; `false` ends the reports.
    fn pause(&mut self, seconds: u64) -> bool;
}

/// The host's clock and a real sleep: reports go on until the process is
/// interrupted, as Slurm's do.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemPacer;

impl Pacer for SystemPacer {
    fn now(&mut self) -> i64 {
        slurm_common::auth::unix_now()
    }

    fn pause(&mut self, seconds: u64) -> bool {
        std::thread::sleep(std::time::Duration::from_secs(seconds));
        true
    }
}

/// Runs `squeue` with the process's arguments, streams and environment.
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
    let called_as = opts::called_as(args, "squeue");
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let opts = match parse_options(&args, env) {
        Ok(o) => o,
        Err(SqueueError::Getopt(e)) => {
            opts::report(&mut out, "squeue", &called_as, &e);
            return 1;
        }
        Err(SqueueError::Refused { lines, usage }) => {
            for line in &lines {
                out.error_line(line);
            }
            if usage {
                let _ = out.block("squeue", USAGE);
            }
            return 1;
        }
    };
    for line in &opts.warnings {
        out.error_line(line);
    }
    if opts.version {
        return out.block("squeue", &version_line());
    }
    if opts.help {
        return out.block("squeue", HELP);
    }
    if opts.usage {
        return out.block("squeue", USAGE);
    }
    let plan = match Plan::new(&opts) {
        Ok(p) => p,
        Err(message) => {
            out.error_line(&format!("squeue: error: {message}"));
            return 1;
        }
    };
    if opts.verbose > 0 && out.block("squeue", &option_dump(&opts)) != 0 {
        return 1;
    }
    let config = match ClientConfig::load_with(env) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("squeue: error: {e}"));
            return 1;
        }
    };
    // The step view loads no job records, so no selection plugin either.
    let plugin_lines = match opts.verbose {
        0 => Vec::new(),
        _ if plan.steps.is_some() => Vec::new(),
        _ => client::select_plugin_lines("squeue", &config.conf),
    };
    if crate::client::refused_clusters(&mut out, "squeue", opts.clusters.as_deref(), &config.conf) {
        return 1;
    }
    let controller = match Controller::new(&config) {
        Ok(c) => c,
        Err(e) => {
            out.error_line(&format!("squeue: error: {e}"));
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
            out.error_line(&format!("squeue: error: cannot start the I/O runtime: {e}"));
            return 1;
        }
    };
    let runtime = &runtime;
    // Both fetchers use the one connection, each only while its call is
    // made (the job stream, once open, no longer needs the controller).
    let controller = RefCell::new(controller);
    let mut fetch = |request: &GetJobsRequest| -> Result<Box<dyn ReplyParts + '_>, RpcError> {
        let stream = runtime.block_on(controller.borrow_mut().call_channel(|channel| {
            client::stream_raw(channel, STREAM_JOBS_PATH, request.clone())
        }))?;
        Ok(Box::new(StreamedParts { runtime, stream }))
    };
    let mut tiers = || -> Result<Tiers, RpcError> {
        let reply = runtime.block_on(controller.borrow_mut().call(|mut c| async move {
            c.get_partitions(GetPartitionsRequest::default()).await
        }))?;
        Ok(Tiers::from_partitions(&reply.partitions))
    };
    if !opts.nodelist.is_empty() {
        // As Slurm: every name `-w` gives must be a node of the cluster.
        let nodes = runtime.block_on(
            controller
                .borrow_mut()
                .call(|mut c| async move { c.get_nodes(GetNodesRequest::default()).await }),
        );
        match nodes {
            Ok(reply) => {
                if let Some(name) = unknown_node(&opts.nodelist, &reply.nodes) {
                    out.error_line(&format!("squeue: error: Invalid node name {name}"));
                    return 1;
                }
            }
            Err(e) => {
                out.error_line(&format!("squeue: error: slurm_load_node: {e}"));
                return 1;
            }
        }
    }
    let mut sources = Sources {
        jobs: &mut fetch,
        tiers: &mut tiers,
        first_notes: plugin_lines,
    };
    report_loop(&plan, &mut sources, pacer, Zone::System, &mut out)
}

/// The first name of the `-w` hostlist that is no node in `nodes`, as
/// Slurm reads the list (`n[1-` is the node `n]`).
fn unknown_node(hostlist: &str, nodes: &[NodeInfo]) -> Option<String> {
    let names = crate::format::checks::slurm_host_names(hostlist);
    let known: std::collections::HashSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    names.into_iter().find(|n| !known.contains(n.as_str()))
}

/// The method squeue calls; its reply comes in parts, each read record by
/// record ([`JobRecords`]).
const STREAM_JOBS_PATH: &str = "/slurm.v1.SlurmController/StreamJobs";

/// The parts of one answer as they arrive: each an encoded `GetJobsReply`
/// with the next jobs (their concatenation is the whole reply).
pub trait ReplyParts {
    /// The next part; `None` after the last.
    fn next_part(&mut self) -> Result<Option<Bytes>, RpcError>;
}

/// Parts given at once (tests, and any caller with a whole reply).
impl ReplyParts for std::vec::IntoIter<Bytes> {
    fn next_part(&mut self) -> Result<Option<Bytes>, RpcError> {
        Ok(self.next())
    }
}

/// The messages of a StreamJobs call, each waited for on `runtime`.
struct StreamedParts<'r> {
    runtime: &'r tokio::runtime::Runtime,
    stream: tonic::Streaming<Bytes>,
}

impl ReplyParts for StreamedParts<'_> {
    fn next_part(&mut self) -> Result<Option<Bytes>, RpcError> {
        self.runtime
            .block_on(self.stream.message())
            .map_err(|status| RpcError::from_status(&status))
    }
}

/// Asks the controller for the jobs of a request: the parts of its
/// answer as they come.
pub type FetchParts<'a> =
    dyn FnMut(&GetJobsRequest) -> Result<Box<dyn ReplyParts + 'a>, RpcError> + 'a;

/// Asks the controller for every partition's PriorityTier.
pub type FetchTiers<'a> = dyn FnMut() -> Result<Tiers, RpcError> + 'a;

/// Where a report's data comes from: the jobs, and the partitions' tiers
/// that `-P` sorts by (asked for only then, after the jobs, as Slurm does).
pub struct Sources<'s, 'a> {
    pub jobs: &'s mut FetchParts<'a>,
    pub tiers: &'s mut FetchTiers<'a>,
    /// Lines for standard error as the first answer is asked for, after
    /// what standard output has so far (`-v`'s plugin lines).
    pub first_notes: Vec<String>,
}

/// Each partition's PriorityTier, by which `-P` orders the rows of a
/// priority sort. A partition the controller did not list counts as tier
/// 1, Slurm's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tiers(HashMap<String, u32>);

impl Tiers {
    pub fn from_partitions(partitions: &[PartitionInfo]) -> Tiers {
        Tiers(
            partitions
                .iter()
                .map(|p| (p.name.clone(), p.priority_tier))
                .collect(),
        )
    }

    /// The tier of partition `name`.
    pub fn of(&self, name: &str) -> u32 {
        self.0.get(name).copied().unwrap_or(1)
    }
}

/// Why a report could not be made: the call failed (before or while the
/// jobs came), what came cannot be read, or the `--json` document written
/// from it could not be read back for `--yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportError {
    Rpc(RpcError),
    Reply(ErrorCode),
    /// The partitions' tiers (`-P`) could not be had.
    Tiers(RpcError),
    Dump(yaml::ReadError),
}

impl ReportError {
    /// The line squeue prints for it.
    pub fn line(&self) -> String {
        match self {
            ReportError::Rpc(e) => format!("slurm_load_jobs error: {e}"),
            ReportError::Reply(code) => format!("slurm_load_jobs error: {}", code.message()),
            ReportError::Tiers(e) => format!("slurm_load_partitions: {e}"),
            ReportError::Dump(e) => format!("squeue: error: {e}"),
        }
    }
}

impl From<ErrorCode> for ReportError {
    fn from(code: ErrorCode) -> Self {
        ReportError::Reply(code)
    }
}

/// Asks for the jobs and prints the report; with `--iterate`, again after
/// every pause until the pacer says stop or the reader goes away. Each
/// report starts with the date line when Slurm prints one (`-l` or
/// `--iterate`, unless `--noheader`), and an iterated report ends with an
/// empty line. A failed report is reported and the next one is tried; the
/// exit status is 1 when any failed.
pub fn report_loop(
    plan: &Plan,
    sources: &mut Sources<'_, '_>,
    pacer: &mut dyn Pacer,
    zone: Zone,
    out: &mut Output<'_>,
) -> i32 {
    let mut code = 0;
    let mut format_noted = false;
    loop {
        let ctx = Ctx {
            time_format: plan.opts.time_format,
            ..Ctx::new(pacer.now(), zone)
        };
        if plan.date_line && plan.dump.is_none() {
            if let Err(e) = out.line(&ctx.ctime_now()) {
                out.error_line(&format!("squeue: error: {e}"));
                return 1;
            }
        }
        if !sources.first_notes.is_empty() {
            let _ = out.flush();
            for line in std::mem::take(&mut sources.first_notes) {
                out.error_line(&line);
            }
        }
        let counted = std::cell::Cell::new((0u64, 0i64));
        let fetched = (sources.jobs)(&plan.request)
            .map_err(ReportError::Rpc)
            .map(|inner| Counted {
                inner,
                seen: (plan.opts.verbose > 0).then_some(&counted),
            });
        let shown = match &plan.steps {
            Some(steps) => fetched.and_then(|mut parts| steps.render_parts(&mut parts, &ctx)),
            None => fetched
                .and_then(|mut parts| {
                    let tiers = if plan.needs_tiers() {
                        (sources.tiers)().map_err(ReportError::Tiers)?
                    } else {
                        Tiers::default()
                    };
                    plan.render_parts(&mut parts, &ctx, &tiers)
                })
                .or_else(|e| plan.unless_named_none(e, &ctx)),
        }
        .map_err(|e| e.line());
        // What the table is printed with: whether it has a header, and
        // how many `b` sort keys to note (none in a document).
        let (header, notes) = match (&plan.steps, plan.dump) {
            (Some(steps), _) => (steps.header, steps.gres_notes),
            (None, None) => (plan.header, plan.sort_notes),
            (None, Some(_)) => (plan.header, 0),
        };
        match shown {
            Ok(text) => {
                if !format_noted {
                    // Slurm reads the format once it has the jobs, so a
                    // failed load reports nothing about it.
                    match &plan.steps {
                        Some(steps) => steps.format_faults().for_each(|l| out.error_line(&l)),
                        None if plan.dump.is_none() => plan.note_format_faults(out),
                        None => {}
                    }
                    format_noted = true;
                }
                if let (None, None, Some(key)) = (&plan.steps, plan.dump, plan.bad_sort_key) {
                    // Slurm sorts after printing the header, and stops at a
                    // key it does not know.
                    if print_sorted(out, &plan.header_text(), header, notes) != 0 {
                        return 1;
                    }
                    let _ = out.flush();
                    out.error_line(&format!("squeue: error: Invalid sort specification: {key}"));
                    return 1;
                }
                if plan.opts.verbose > 0 && plan.dump.is_none() {
                    let (jobs, last_update) = counted.get();
                    // The step view counts the steps it lists.
                    let records = match &plan.steps {
                        Some(_) => text.lines().count().saturating_sub(usize::from(header)) as u64,
                        None => jobs,
                    };
                    // One job asked for by id comes without the time.
                    let last_update = if plan.single_id { 0 } else { last_update };
                    let line = format!("last_update_time={last_update} records={records}");
                    if out.line(&line).is_err() {
                        return 1;
                    }
                }
                if print_sorted(out, &text, header, notes) != 0 {
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

/// The parts of an answer, passed on as they come; with `-v`, the job
/// records and the latest `last_update` they held are counted in `seen`
/// (none: nothing is counted, a report without `-v` pays nothing).
struct Counted<'c, 'a> {
    inner: Box<dyn ReplyParts + 'a>,
    seen: Option<&'c std::cell::Cell<(u64, i64)>>,
}

impl ReplyParts for Counted<'_, '_> {
    fn next_part(&mut self) -> Result<Option<Bytes>, RpcError> {
        let part = self.inner.next_part()?;
        if let (Some(bytes), Some(seen)) = (&part, self.seen) {
            let (jobs, last) = seen.get();
            let (more, update) = count_records(bytes);
            seen.set((jobs + more, update.unwrap_or(last).max(last)));
        }
        Ok(part)
    }
}

/// The job records (field 1) and the `last_update` (field 2) of an
/// encoded `GetJobsReply`, read from its top-level fields only. A
/// malformed part stops the count; rendering reports it.
fn count_records(bytes: &[u8]) -> (u64, Option<i64>) {
    fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*at)?;
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    let (mut at, mut jobs, mut last) = (0, 0, None);
    while at < bytes.len() {
        let Some(key) = varint(bytes, &mut at) else {
            break;
        };
        let skip = match key & 7 {
            0 => match varint(bytes, &mut at) {
                Some(v) if key >> 3 == 2 => {
                    last = Some(v as i64);
                    0
                }
                Some(_) => 0,
                None => break,
            },
            1 => 8,
            5 => 4,
            2 => {
                let Some(len) = varint(bytes, &mut at) else {
                    break;
                };
                if key >> 3 == 1 {
                    jobs += 1;
                }
                usize::try_from(len).unwrap_or(usize::MAX)
            }
            _ => break,
        };
        at = at.saturating_add(skip);
    }
    (jobs, last)
}

/// Prints a report whose sort list held `notes` vestigial `b` keys. Slurm
/// prints the header, then notes each `b` as it sorts, then the rows.
fn print_sorted(out: &mut Output<'_>, text: &str, header: bool, notes: usize) -> i32 {
    let (head, rows) = match text.split_once('\n') {
        Some((head, rows)) if header && notes > 0 => (&text[..head.len() + 1], rows),
        _ => ("", text),
    };
    if !head.is_empty() {
        if out.block("squeue", head) != 0 {
            return 1;
        }
        if let Err(e) = out.flush() {
            out.error_line(&format!("squeue: error: {e}"));
            return 1;
        }
    }
    for _ in 0..notes {
        out.error_line("squeue: Invalid sort specification: b");
    }
    out.block("squeue", rows)
}

/// Everything decided from the options before asking the controller.
#[derive(Debug, Clone)]
pub struct Plan {
    pub request: GetJobsRequest,
    /// `-s`: the step view, which replaces the job view (not under
    /// `--json`/`--yaml`, which dump the jobs).
    steps: Option<steps::StepPlan>,
    items: Vec<format::Item>,
    sort: Vec<format::spec::SortKey>,
    states: StateFilter,
    single_id: bool,
    header: bool,
    date_line: bool,
    start: bool,
    dump: Option<Dump>,
    /// `SLURM_BITSTR_LEN`, for task lists combined here.
    task_list_limit: TaskListLimit,
    array: bool,
    /// `--array-unique`: pending tasks are not combined into their array's
    /// line.
    array_unique: bool,
    /// `-P`: a row per partition of a job, tiers before priority.
    priority: bool,
    units: Units,
    uids: Vec<u32>,
    /// Whether users were asked for (none of them may exist).
    users_given: bool,
    /// Seconds between reports (`--iterate`).
    iterate: Option<u64>,
    /// `-O` names squeue does not know: each is reported and left out,
    /// and the report goes on, as in Slurm.
    pub unknown_fields: Vec<String>,
    /// `-o` codes squeue does not know: each is reported and printed as
    /// written, and the report goes on, as in Slurm.
    pub unknown_codes: Vec<String>,
    /// Looks up a group's name for `%g` when the record has none: the
    /// controller sends ids, and squeue names groups from the local group
    /// database, as Slurm's does. Injected so tests need no such database.
    pub group_name: fn(u32) -> Option<String>,
    /// `b` keys in `-S`: each noted, then skipped.
    sort_notes: usize,
    /// Arrays named only by tasks (`-j 11_2,11_4`, not `-j 11`): the tasks
    /// picked. A pending array line shows just those, as in Slurm.
    picked_tasks: HashMap<u32, Vec<u32>>,
    /// A `-S` character that is no key: the report stops after its header.
    bad_sort_key: Option<char>,
    opts: Options,
}

/// An `-O` list: a name squeue does not know goes to `unknown` and leaves
/// only its suffix.
fn long_format(
    spec: &str,
    unknown: &mut Vec<String>,
) -> Result<Vec<format::Item>, format::spec::FormatError> {
    let (items, mut names) = render::parse_long_format_lenient(spec);
    unknown.append(&mut names);
    Ok(items)
}

impl Plan {
    /// Checks the options; the error is the message squeue prints after
    /// `squeue: error: `.
    pub fn new(o: &Options) -> Result<Plan, String> {
        let iterate = match &o.iterate {
            None => None,
            // Read as C's atoi; Slurm's message ends in a newline of its
            // own, hence the empty line after it.
            Some(v) => match u64::try_from(checks::atoi(v)) {
                Ok(seconds) if seconds > 0 => Some(seconds),
                _ => return Err(format!("--iterate={v}\n")),
            },
        };
        let mut unknown_fields = Vec::new();
        let mut unknown_codes = Vec::new();
        let items = match (&o.format, &o.format_long) {
            (Some(f), _) => {
                let (items, unknown) = render::parse_format_lenient(f);
                unknown_codes = unknown;
                Ok(items)
            }
            (None, Some(f)) => long_format(f, &mut unknown_fields),
            (None, None) if o.start => render::parse_format(render::START_FORMAT),
            (None, None) if o.long => render::parse_format(render::LONG_FORMAT),
            (None, None) => render::parse_format(render::DEFAULT_FORMAT),
        }
        .map_err(|e| capitalize(&e.to_string()))?;
        let sort_spec = match &o.sort {
            Some(s) => s.as_str(),
            None if o.start => render::START_SORT,
            None => render::DEFAULT_SORT,
        };
        let sort_spec = render::parse_sort_spec(sort_spec);
        let sort = sort_spec.keys;
        let states = match &o.states {
            Some(s) => render::parse_states(s).map_err(|e| capitalize(&e.to_string()))?,
            None => StateFilter::Default,
        };
        let (job_ids, array_tasks) = job_selectors(&o.job_ids).map_err(|e| e.to_string())?;
        let mut picked_tasks: HashMap<u32, Vec<u32>> = HashMap::new();
        for sel in array_tasks
            .iter()
            .filter(|s| !job_ids.contains(&s.array_job_id))
        {
            if let Ok(task) = sel.task_spec.parse::<u32>() {
                picked_tasks.entry(sel.array_job_id).or_default().push(task);
            }
        }
        let mut uids = o.uids.clone();
        if o.me {
            uids.push(client::current_uid());
        }
        let single_id = job_ids.len() == 1 && array_tasks.is_empty();
        // Slurm 22.05's `--json`/`--yaml` dump every job the controller
        // holds, whatever the selection options say (they are still parsed
        // and checked): the request names none.
        let dump_all = o.dump.is_some();
        let filter = (!dump_all).then(|| JobFilter {
            job_ids,
            array_tasks,
            user_ids: uids.clone(),
            states: Vec::new(),
            names: o.names.clone(),
            partitions: o.partitions.clone(),
            accounts: o.accounts.clone(),
            qos: o.qos.clone(),
            reservations: o.reservations.clone(),
            nodelist: o.nodelist.clone(),
            wckeys: Vec::new(),
        });
        let steps = match o.step_view && !dump_all {
            true => Some(steps::StepPlan::new(o)?),
            false => None,
        };
        // The step view reads the job records whole, and selects itself.
        let filter = if steps.is_some() { None } else { filter };
        let everything = o.dump.is_some() || steps.is_some();
        let hide_hidden = !o.all && !dump_all && o.job_ids.is_empty() && o.partitions.is_empty();
        Ok(Plan {
            steps,
            request: GetJobsRequest {
                filter,
                changed_since: 0,
                detail: false,
                hide_hidden,
                fields: with_license_field(
                    format::job_fields::for_report(&items, &sort, everything),
                    &o.licenses,
                ),
            },
            items,
            sort,
            states,
            single_id: single_id && !dump_all,
            header: !o.no_header,
            // Slurm's date line comes with -l, --iterate and -v, never
            // without the header.
            date_line: !o.no_header && (o.long || iterate.is_some() || o.verbose > 0),
            start: o.start,
            dump: o.dump,
            task_list_limit: o.task_list_limit,
            array: o.array,
            array_unique: o.array_unique,
            priority: o.priority,
            units: if o.noconvert {
                Units::Original
            } else {
                Units::Scaled
            },
            users_given: o.users_given || o.me,
            uids,
            iterate,
            unknown_fields,
            unknown_codes,
            sort_notes: sort_spec.gres_notes,
            picked_tasks,
            bad_sort_key: sort_spec.invalid,
            group_name: client::group_name,
            opts: o.clone(),
        })
    }

    /// A controller that finds none of the named jobs says so; Slurm's
    /// squeue reports that only for a single plain id (`-j 5`), and for
    /// several ids or array tasks shows an empty list.
    fn unless_named_none(&self, e: ReportError, ctx: &Ctx) -> Result<String, ReportError> {
        let none_found = match &e {
            ReportError::Rpc(rpc) => rpc.code == ErrorCode::InvalidJobId,
            ReportError::Reply(code) => *code == ErrorCode::InvalidJobId,
            ReportError::Tiers(_) | ReportError::Dump(_) => false,
        };
        if none_found && !self.single_id {
            self.render(&[], ctx)
        } else {
            Err(e)
        }
    }

    /// Narrows a pending array line to the tasks `-j` picked of it
    /// (`11_2`, or `11_[2,4]` without the throttle); `false` when it holds
    /// none of them. Other records are left as they are.
    fn keep_picked_tasks(&self, job: &mut JobInfo) -> bool {
        if job.array_task_id.is_some() || job.array_task_spec.is_empty() {
            return true;
        }
        let array_id = job.array_job_id.unwrap_or(job.job_id);
        let Some(picked) = self.picked_tasks.get(&array_id) else {
            return true;
        };
        let Some(tasks) = array_task_ids(&job.array_task_spec) else {
            return true;
        };
        let kept: Vec<u32> = tasks.into_iter().filter(|t| picked.contains(t)).collect();
        match kept.as_slice() {
            [] => false,
            [one] => {
                job.array_task_id = Some(*one);
                job.array_task_spec.clear();
                job.array_task_throttle = 0;
                true
            }
            _ => {
                job.array_task_spec = ranges(kept);
                job.array_task_throttle = 0;
                true
            }
        }
    }

    /// Reports the `-o` codes and `-O` names squeue does not know, and an
    /// unusable `SLURM_TIME_FORMAT` when a time is shown (Slurm says so
    /// once, when it first writes a time).
    fn note_format_faults(&self, out: &mut Output<'_>) {
        for name in &self.unknown_fields {
            out.error_line(&format!(
                "squeue: error: Invalid job format specification: {name}"
            ));
        }
        for code in &self.unknown_codes {
            out.error_line(&format!(
                "squeue: error: Invalid job format specification: {code}"
            ));
        }
        if let Some(line) = self.opts.time_format.error().filter(|_| self.shows_time()) {
            out.error_line(&format!("squeue: error: {line}"));
        }
    }

    /// Whether a row shows a time (`%V`, `%S`, `-O EligibleTime`, ...).
    fn shows_time(&self) -> bool {
        self.items.iter().any(|i| match i {
            format::Item::Field { code, .. } => render::is_time_code(*code),
            format::Item::Literal(_) => false,
        })
    }

    /// The header line, empty under `--noheader`.
    fn header_text(&self) -> String {
        let mut text = String::new();
        if self.header {
            render::render_header(&mut text, &self.items);
        }
        text
    }

    /// Whether a row shows or sorts by a group name (`%g`).
    fn shows_group_name(&self) -> bool {
        let shown = self
            .items
            .iter()
            .any(|i| matches!(i, format::Item::Field { code: 'g', .. }));
        shown || self.sort.iter().any(|k| k.code == 'g')
    }

    /// Whether a report needs the partitions' tiers: `-P` with a sort on
    /// priority.
    pub fn needs_tiers(&self) -> bool {
        self.priority
            && self.dump.is_none()
            && self.sort.iter().any(|k| matches!(k.code, 'p' | 'Q'))
    }

    /// Whether pending tasks split off an array join the array's pending
    /// line: unless `-r` shows every task or `--array-unique` asks not to.
    fn combines_tasks(&self) -> bool {
        !self.array && !self.array_unique
    }

    /// Whether `-p` (if given) names partition `name`.
    fn partition_listed(&self, name: &str) -> bool {
        self.opts.partitions.is_empty() || self.opts.partitions.iter().any(|p| p == name)
    }

    fn admits(&self, job: &JobInfo) -> bool {
        let o = &self.opts;
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        o.empty_lists.is_empty()
            && self.states.admits(job)
            && (!self.start || format::base_state(job) == slurm_common::state::JobState::Pending)
            && (!self.users_given || self.uids.contains(&job.user_id))
            && any(&o.names, &job.name)
            && (o.partitions.is_empty()
                || job.partition.split(',').any(|p| self.partition_listed(p)))
            && any(&o.accounts, &job.account)
            && any(&o.qos, &job.qos)
            && any(&o.reservations, &job.reservation)
            && (o.licenses.is_empty()
                || license_names(&job.licenses).any(|n| o.licenses.iter().any(|x| x == n)))
    }

    /// Filters, sorts and renders the controller's jobs: the header and the
    /// rows (the date line is [`report_loop`]'s, printed before asking). A
    /// single `-j` id that matches nothing is Slurm's "Invalid job id
    /// specified".
    pub fn render(&self, jobs: &[JobInfo], ctx: &Ctx) -> Result<String, ReportError> {
        if let Some(dump) = self.dump {
            return self.render_dump(dump, jobs, ctx);
        }
        let mut next = jobs.iter();
        self.render_each(
            |job: &mut JobInfo| Ok(next.next().map(|j| job.clone_from(j)).is_some()),
            ctx,
            &Tiers::default(),
        )
    }

    /// [`Plan::render`] from the parts of the encoded reply as they come,
    /// read one record at a time: the report of their concatenation
    /// ([`Plan::render_reply`]). `-P` sorts by the partitions' `tiers`.
    pub fn render_parts(
        &self,
        parts: &mut dyn ReplyParts,
        ctx: &Ctx,
        tiers: &Tiers,
    ) -> Result<String, ReportError> {
        // What a reply prost cannot decode gives inside tonic.
        let malformed = ReportError::Reply(ErrorCode::from_grpc_code(tonic::Code::Internal));
        if let Some(dump) = self.dump {
            let mut jobs = Vec::new();
            while let Some(part) = parts.next_part().map_err(ReportError::Rpc)? {
                let reply = GetJobsReply::decode(part).map_err(|_| malformed.clone())?;
                jobs.extend(reply.jobs);
            }
            return self.render_dump(dump, &jobs, ctx);
        }
        let (mut part, mut at) = (Bytes::new(), 0);
        self.render_each(
            |job: &mut JobInfo| loop {
                let mut records = JobRecords::resume(&part, at);
                let more = records.next_into(job).map_err(|_| malformed.clone())?;
                at = records.offset();
                if more {
                    return Ok(true);
                }
                match parts.next_part().map_err(ReportError::Rpc)? {
                    Some(next) => (part, at) = (next, 0),
                    None => return Ok(false),
                }
            },
            ctx,
            tiers,
        )
    }

    /// [`Plan::render`] from the encoded `GetJobsReply`, read one record
    /// at a time. A reply that cannot be read is the error a reply tonic
    /// cannot decode gives.
    pub fn render_reply(&self, reply: &[u8], ctx: &Ctx) -> Result<String, ReportError> {
        // What a reply prost cannot decode gives inside tonic.
        let malformed = ErrorCode::from_grpc_code(tonic::Code::Internal);
        if let Some(dump) = self.dump {
            let jobs = GetJobsReply::decode(reply).map_err(|_| malformed)?.jobs;
            return self.render_dump(dump, &jobs, ctx);
        }
        let mut records = JobRecords::new(reply);
        self.render_each(
            |job: &mut JobInfo| {
                records
                    .next_into(job)
                    .map_err(|_: ReplyError| ReportError::Reply(malformed))
            },
            ctx,
            &Tiers::default(),
        )
    }

    /// `--json` or `--yaml`: one document, written as JSON first (the
    /// YAML is read back from it, so both hold the same). As in Slurm
    /// 22.05 it holds every job as the controller keeps it: the selection
    /// options, `-r` and the default hiding of finished jobs do not apply.
    fn render_dump(&self, dump: Dump, jobs: &[JobInfo], ctx: &Ctx) -> Result<String, ReportError> {
        let shown: Vec<&JobInfo> = jobs.iter().collect();
        dump.write(format::json::jobs(&shown, ctx, self.group_name))
            .map_err(ReportError::Dump)
    }

    /// The table, from jobs that `next` puts one at a time into a reused
    /// record (`false`: no more). Each admitted job is rendered at once and
    /// its sort keys kept; the rows are put in order at the end. Pending
    /// array records are held back instead when tasks are combined, since
    /// a task may come before its array's record; they are combined and
    /// rendered after the last record, each keeping its place for ties.
    fn render_each<E: From<ErrorCode>>(
        &self,
        mut next: impl FnMut(&mut JobInfo) -> Result<bool, E>,
        ctx: &Ctx,
        tiers: &Tiers,
    ) -> Result<String, E> {
        let mut table = Table {
            plan: self,
            ctx: Ctx {
                task_lists: self.task_list_limit,
                ..*ctx
            },
            tiers,
            rows: String::new(),
            ends: Vec::new(),
            keys: render::SortKeys::new(&self.sort),
        };
        let mut job = JobInfo::default();
        let mut held: Vec<(u32, JobInfo)> = Vec::new();
        let mut seq: u32 = 0;
        let mut any = false;
        let mut groups: HashMap<u32, Option<String>> = HashMap::new();
        let name_groups = self.shows_group_name();
        while next(&mut job)? {
            if !self.keep_picked_tasks(&mut job) {
                continue;
            }
            any = true;
            if name_groups && job.group_name.is_empty() {
                let lookup = self.group_name;
                if let Some(name) = groups
                    .entry(job.group_id)
                    .or_insert_with(|| lookup(job.group_id))
                {
                    job.group_name.clone_from(name);
                }
            }
            let at = seq;
            seq = seq.saturating_add(1);
            if self.array && job.array_task_id.is_none() && !job.array_task_spec.is_empty() {
                // `-r`: one row per task of a still-pending array record.
                if let Some(ids) = array_task_ids(&job.array_task_spec) {
                    job.array_task_spec.clear();
                    for id in ids {
                        job.array_task_id = Some(id);
                        table.add(&mut job, at);
                    }
                    continue;
                }
            }
            if self.combines_tasks() && is_pending_array_part(&job) && self.admits(&job) {
                held.push((at, job.clone()));
                continue;
            }
            table.add(&mut job, at);
        }
        for (at, mut job) in combine_pending_tasks(held) {
            table.add(&mut job, at);
        }
        if self.single_id && !any {
            return Err(ErrorCode::InvalidJobId.into());
        }
        Ok(table.finish())
    }
}

/// The rows of a report as they are rendered, and what they sort by.
struct Table<'a> {
    plan: &'a Plan,
    /// The caller's, with the plan's `SLURM_BITSTR_LEN`.
    ctx: Ctx,
    /// The partitions' tiers, for `-P`.
    tiers: &'a Tiers,
    /// Every row, newline included, in the order the jobs came.
    rows: String,
    /// Where each row ends in `rows`.
    ends: Vec<usize>,
    keys: render::SortKeys,
}

impl Table<'_> {
    /// Adds the row of `job` (with `-P`, a row per partition it lists that
    /// `-p` selects) if the job is shown; `seq` is the place it came in.
    /// `job` is left as it was given.
    fn add(&mut self, job: &mut JobInfo, seq: u32) {
        if !self.plan.admits(job) {
            return;
        }
        if !self.plan.priority {
            self.push_row(job, seq, 0);
            return;
        }
        let all = std::mem::take(&mut job.partition);
        for name in all.split(',').filter(|p| !p.is_empty()) {
            if !self.plan.partition_listed(name) {
                continue;
            }
            job.partition.clear();
            job.partition.push_str(name);
            let tier = self.tiers.of(name);
            self.push_row(job, seq, tier);
        }
        job.partition = all;
    }

    fn push_row(&mut self, job: &JobInfo, seq: u32, tier: u32) {
        if self.ends.is_empty() {
            // Rows are about as wide as the header; leave some room for
            // longer values so the buffer rarely grows.
            self.rows.reserve(4096);
        }
        render::render_row_in(
            &mut self.rows,
            job,
            &self.plan.items,
            &self.ctx,
            self.plan.units,
        );
        self.ends.push(self.rows.len());
        self.keys.push_at(job, seq, tier);
    }

    /// The header (if shown) and the rows in sorted order.
    fn finish(self) -> String {
        let mut out = String::new();
        if self.plan.header {
            render::render_header(&mut out, &self.plan.items);
        }
        let order = self.keys.order();
        if order.iter().enumerate().all(|(i, &j)| i == j as usize) {
            if out.is_empty() {
                return self.rows;
            }
            out.push_str(&self.rows);
            return out;
        }
        out.reserve(self.rows.len());
        for j in order {
            let j = j as usize;
            let start = if j == 0 { 0 } else { self.ends[j - 1] };
            out.push_str(&self.rows[start..self.ends[j]]);
        }
        out
    }
}

/// Whether `job` is a pending part of an array: its record of tasks not
/// started yet (`15_[0-3]`) or a task split off it (`15_2`).
fn is_pending_array_part(job: &JobInfo) -> bool {
    job.array_job_id.is_some()
        && (job.array_task_id.is_some() || !job.array_task_spec.is_empty())
        && format::base_state(job) == slurm_common::state::JobState::Pending
}

/// Combines pending tasks split off an array back into the array's
/// pending record, as squeue shows them unless `-r` or `--array-unique`:
/// a pending task with the same array id, name and partition as a pending
/// array record joins its task list (which is then written as Slurm writes
/// a set, `0-3,7`, without the `%N` throttle), and a reason of its own is
/// added to the record's (`Priority,JobHeldUser`). Everything else, and any
/// record whose task list is too large to expand ([`array_task_ids`]), is
/// left as it is. Order is kept; combined tasks are dropped. Lists are cut
/// to `SLURM_BITSTR_LEN` when shown, not here.
pub fn combine_pending_tasks(mut jobs: Vec<(u32, JobInfo)>) -> Vec<(u32, JobInfo)> {
    let is_meta = |j: &JobInfo| {
        j.array_task_id.is_none() && !j.array_task_spec.is_empty() && is_pending_array_part(j)
    };
    if !jobs.iter().any(|(_, j)| is_meta(j)) {
        return jobs;
    }
    // The pending split tasks of each array, in the order they came.
    let mut tasks_of: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, (_, job)) in jobs.iter().enumerate() {
        if let (Some(array), Some(_)) = (job.array_job_id, job.array_task_id) {
            if is_pending_array_part(job) {
                tasks_of.entry(array).or_default().push(i);
            }
        }
    }
    let mut gone = vec![false; jobs.len()];
    for m in 0..jobs.len() {
        if !is_meta(&jobs[m].1) {
            continue;
        }
        let Some(tasks) = jobs[m].1.array_job_id.and_then(|a| tasks_of.get(&a)) else {
            continue;
        };
        let Some(mut ids) = array_task_ids(&jobs[m].1.array_task_spec) else {
            continue;
        };
        let mut combined = 0usize;
        for &t in tasks {
            let (meta, task) = (&jobs[m].1, &jobs[t].1);
            if gone[t] || task.name != meta.name || task.partition != meta.partition {
                continue;
            }
            let task_reason = reason_name(task).to_owned();
            let task_id = task.array_task_id;
            let differs = task.state_reason != meta.state_reason;
            let meta = &mut jobs[m].1;
            if differs {
                if meta.state_description.is_empty() {
                    meta.state_description = reason_name(meta).to_owned();
                }
                if !meta.state_description.split(',').any(|r| r == task_reason) {
                    meta.state_description.push(',');
                    meta.state_description.push_str(&task_reason);
                }
            }
            ids.extend(task_id);
            gone[t] = true;
            combined += 1;
        }
        if combined > 0 {
            jobs[m].1.array_task_spec = ranges(ids);
        }
    }
    jobs.into_iter()
        .zip(gone)
        .filter_map(|(job, gone)| (!gone).then_some(job))
        .collect()
}

/// A job's reason as Slurm names it (`None` when there is none).
fn reason_name(job: &JobInfo) -> &str {
    if job.state_reason.is_empty() {
        "None"
    } else {
        &job.state_reason
    }
}

/// Task ids as Slurm writes them (`0-3,5,7-9`, `0-98:2`), ascending
/// without duplicates.
fn ranges(mut ids: Vec<u32>) -> String {
    ids.sort_unstable();
    ids.dedup();
    slurm_common::tasklist::format(&ids)
}

/// Most tasks `-r` shows for one pending array record; a bigger spec is
/// shown as one line, as without `-r`.
const MAX_EXPANDED_TASKS: usize = 100_000;

/// Task ids of an array spec such as `0-3%2`, `1,5-9:2`; `None` when the
/// spec is malformed or names too many tasks.
pub fn array_task_ids(spec: &str) -> Option<Vec<u32>> {
    let spec = spec.split('%').next().unwrap_or("");
    let spec = spec.trim_start_matches('[').trim_end_matches(']');
    let mut ids = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        let (range, step) = match part.split_once(':') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let v = range.parse::<u32>().ok()?;
                (v, v)
            }
        };
        if hi < lo {
            return None;
        }
        let mut id = lo;
        loop {
            ids.push(id);
            if ids.len() > MAX_EXPANDED_TASKS {
                return None;
            }
            match id.checked_add(step) {
                Some(next) if next <= hi => id = next,
                _ => break,
            }
        }
    }
    Some(ids)
}

/// `-r`: one record per task of each still-pending array record (the
/// whole-reply form the streamed report is checked against).
#[cfg(test)]
fn expand_arrays(jobs: &[JobInfo]) -> Vec<JobInfo> {
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let ids = (job.array_task_id.is_none() && !job.array_task_spec.is_empty())
            .then(|| array_task_ids(&job.array_task_spec))
            .flatten();
        match ids {
            Some(ids) => {
                for id in ids {
                    let mut task = job.clone();
                    task.array_task_id = Some(id);
                    task.array_task_spec.clear();
                    out.push(task);
                }
            }
            None => out.push(job.clone()),
        }
    }
    out
}

/// Slurm's messages start with a capital letter; ours are lowercase.
fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The names in a job's `--licenses` ("matlab:2,ansys" or, for either of
/// two, "a|b"), without their counts.
fn license_names(spec: &str) -> impl Iterator<Item = &str> {
    spec.split([',', '|'])
        .map(|item| item.split(':').next().unwrap_or("").trim())
        .filter(|name| !name.is_empty())
}

/// The fields to ask for, with those of `%W` (the licenses) when `-L`
/// filters on them (an empty list asks for every field already).
fn with_license_field(mut fields: Vec<u32>, licenses: &[String]) -> Vec<u32> {
    if !licenses.is_empty() && !fields.is_empty() {
        match format::job_fields::for_code('W') {
            Some(tags) => fields.extend_from_slice(tags),
            // Not a field of its own: ask for everything.
            None => return Vec::new(),
        }
        fields.sort_unstable();
        fields.dedup();
    }
    fields
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn parse(args: &[&str]) -> Result<Options, SqueueError> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        parse_options(&args, &|_| None)
    }

    /// Jobs of hidden partitions: left out unless `-a` (or SQUEUE_ALL;
    /// `--hide` takes it back), `-j`, `-p` or `--json`, as Slurm's squeue.
    #[test]
    fn hidden_partitions_jobs_are_asked_out_unless_shown_all() {
        let hides = |args: &[&str]| {
            Plan::new(&parse(args).unwrap())
                .unwrap()
                .request
                .hide_hidden
        };
        assert!(hides(&[]));
        assert!(hides(&["-a", "--hide"]));
        assert!(hides(&["-u", "root", "-t", "PD"]));
        assert!(!hides(&["-a"]));
        assert!(!hides(&["--hide", "--all"]));
        assert!(!hides(&["-j", "1"]));
        assert!(!hides(&["-p", "debug"]));
        assert!(!hides(&["--json"]));
        let env = |name: &str| (name == "SQUEUE_ALL").then(OsString::new);
        let o = parse_options(&[], &env).unwrap();
        assert!(!Plan::new(&o).unwrap().request.hide_hidden);
    }

    /// Runs squeue up to the point it would ask the controller (no
    /// SLURM_CONF: a command line that passes fails on the missing file).
    fn run_args(args: &[&str]) -> (String, String, i32) {
        let argv: Vec<&str> = std::iter::once("squeue")
            .chain(args.iter().copied())
            .collect();
        crate::output::run_without_controller(run_with, &argv)
    }

    fn refused(args: &[&str]) -> (String, i32) {
        let (out, err, code) = run_args(args);
        assert_eq!(out, "", "{args:?}");
        (err, code)
    }

    const STATES_LINE: &str = "squeue: error: Valid job states include: PENDING,RUNNING,\
SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,\
OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,\
REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED\n";

    #[test]
    fn bad_state_lists_the_valid_ones() {
        for (value, word) in [
            ("foo", "foo"),
            ("pending,foo", "foo"),
            ("ALL,foo", "ALL"),
            ("pd,all", "all"),
            ("pd, r", " r"),
        ] {
            assert_eq!(
                refused(&["-t", value]),
                (
                    format!("squeue: error: Invalid job state specified: {word}\n{STATES_LINE}\n"),
                    1
                ),
                "{value}"
            );
        }
        for good in ["all", "ALL", "pd,,r", "RF", "requeue_fed", "oom", ""] {
            assert!(parse(&["-t", good]).is_ok(), "{good}");
        }
    }

    #[test]
    fn checks_run_in_command_line_order() {
        // The first bad value read is the one reported.
        let (err, code) = refused(&["-t", "foo", "-w", "n[a-b]"]);
        assert!(err.starts_with("squeue: error: Invalid job state specified: foo\n"));
        assert_eq!(code, 1);
        assert_eq!(
            refused(&["-w", "n[a-b]", "-t", "foo", "--bogus"]),
            (
                "squeue: error: _parse_single_range: Invalid range: `a-b'\n\
                 squeue: error: 'n[a-b]' invalid entry for --nodelist\n"
                    .to_owned(),
                1
            )
        );
        assert_eq!(
            refused(&["-w", "n[1-2]a"]),
            (
                "squeue: error: 'n[1-2]a' invalid entry for --nodelist\n".to_owned(),
                1
            )
        );
        assert_eq!(
            refused(&["-jabc", "-i", "0"]),
            ("squeue: error: Invalid job id: abc\n".to_owned(), 1)
        );
        // An operand -j id is checked after every option.
        assert_eq!(
            refused(&["-j", "0", "-i", "0"]),
            ("squeue: error: --iterate=0\n\n".to_owned(), 1)
        );
    }

    #[test]
    fn unknown_users_are_reported_and_select_nothing() {
        let o = parse(&["-u", "no-such-user-here,root"]).unwrap();
        assert_eq!(
            o.warnings,
            vec![
                "squeue: error: Invalid user: no-such-user-here".to_owned(),
                String::new()
            ]
        );
        assert_eq!(o.uids, vec![0]);
        let o = parse(&["-u", "4294967294"]).unwrap();
        assert!(o.users_given && o.uids.is_empty());
        let plan = Plan::new(&o).unwrap();
        let job = JobInfo {
            job_id: 1,
            user_id: 0,
            state: slurm_proto::v1::JobState::Running as i32,
            ..JobInfo::default()
        };
        assert_eq!(
            plan.render(&[job], &Ctx::system(0)).unwrap(),
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
        );
        // The warning comes before a later refusal.
        let (err, _) = refused(&["-u", "no-such-user-here", "-t", "x"]);
        assert!(err.starts_with(
            "squeue: error: Invalid user: no-such-user-here\n\nsqueue: error: Invalid job state"
        ));
    }

    #[test]
    fn licenses_select_the_jobs_asking_for_them() {
        let o = parse(&["-L", "matlab,ansys", "-h", "-o", "%i"]).unwrap();
        let plan = Plan::new(&o).unwrap();
        let tags = format::job_fields::for_code('W').unwrap();
        assert!(tags.iter().all(|t| plan.request.fields.contains(t)));
        // The other fields of the report are still asked for alone.
        assert!(!plan.request.fields.is_empty());
        let job = |id: u32, licenses: &str| JobInfo {
            job_id: id,
            state: slurm_proto::v1::JobState::Pending as i32,
            licenses: licenses.into(),
            ..JobInfo::default()
        };
        let jobs = [
            job(1, "matlab:2"),
            job(2, ""),
            job(3, "other,ansys"),
            job(4, "matlabx:1"),
            job(5, "fluent|ansys:3"),
        ];
        assert_eq!(plan.render(&jobs, &Ctx::system(0)).unwrap(), "5\n3\n1\n");
        // Without -L nothing is filtered on licenses.
        let plan = Plan::new(&parse(&["-h", "-o", "%i"]).unwrap()).unwrap();
        assert_eq!(
            plan.render(&jobs, &Ctx::system(0)).unwrap().lines().count(),
            5
        );
    }

    #[test]
    fn job_ids_read_as_strtol() {
        for (value, bad) in [
            ("0", "0"),
            ("-1", "-1"),
            ("abc", "abc"),
            ("4294967295", "4294967295"),
            ("5,,0", "0"),
        ] {
            assert_eq!(
                refused(&[&format!("--jobs={value}")]),
                (format!("squeue: error: Invalid job id: {bad}\n"), 1),
                "{value}"
            );
        }
        let o = parse(&["-j", "1.0,5x,7+1,8_3"]).unwrap();
        let (plain, tasks) = job_selectors(&o.job_ids).unwrap();
        assert_eq!(plain, vec![1, 5, 7]);
        assert_eq!(tasks[0].array_job_id, 8);
        assert_eq!(tasks[0].task_spec, "3");
        assert!(parse(&["-j", ","]).is_ok());
    }

    #[test]
    fn steps_need_a_step_part() {
        for (args, line) in [
            (&["-s", "abc"][..], "Invalid job_step id: abc.??"),
            (&["--steps=1.2,x"][..], "Invalid job_step id: x.??"),
            (&["-s", ".5"][..], "Invalid job_step id: 5.??"),
        ] {
            assert_eq!(refused(args), (format!("squeue: error: {line}\n"), 1));
        }
        assert!(parse(&["-s", "1.2"]).is_ok());
        assert!(parse(&["-s1..2"]).is_ok());
    }

    #[test]
    fn stray_operands_print_the_usage() {
        for (args, word) in [
            (&["5"][..], "5"),
            (&["-j", "1", "2"][..], "2"),
            (&["--", "-x"][..], "-x"),
            (&["-j", "1_2", "-s", "x"][..], "x"),
        ] {
            let (out, err, code) = run_args(args);
            assert_eq!(err, format!("squeue: error: Unrecognized option: {word}\n"));
            assert_eq!(out, format!("{USAGE}\n"));
            assert_eq!(code, 1);
        }
        assert!(USAGE.ends_with("\n\t      [-ahjlrsv]"));
    }

    #[test]
    fn long_and_format_exclude_each_other() {
        let fatal = "squeue: fatal: Options -o(--format) and -l(--long) are mutually \
                     exclusive. Please remove one and retry.\n";
        assert_eq!(refused(&["-l", "-o", "%i"]), (fatal.to_owned(), 1));
        assert_eq!(refused(&["-o", "%i", "-l", "abc"]), (fatal.to_owned(), 1));
        // -O and SQUEUE_FORMAT are not -o.
        assert!(parse(&["-l", "-O", "jobid"]).is_ok());
        let env = |name: &str| (name == "SQUEUE_FORMAT").then(|| OsString::from("%i"));
        assert!(parse_options(&["-l".to_owned()], &env).is_ok());
    }

    #[test]
    fn iterate_reads_as_atoi() {
        assert_eq!(
            refused(&["-i", "99999999999999999999"]),
            (
                "squeue: error: --iterate=99999999999999999999\n\n".to_owned(),
                1
            )
        );
        assert_eq!(
            parse(&["-i", "5000000000"]).unwrap().iterate.as_deref(),
            Some("5000000000")
        );
    }

    #[test]
    fn long_names_may_be_shortened() {
        let o = parse(&["--noh", "--form=%i", "--sta"]).unwrap_err();
        assert!(matches!(
            o,
            SqueueError::Getopt(GetoptError::Ambiguous { .. })
        ));
        let o = parse(&["--noh", "--form=%i", "--start"]).unwrap();
        assert!(o.no_header && o.start);
        assert_eq!(o.format.as_deref(), Some("%i"));
    }

    #[test]
    fn short_options_bundle_and_take_values() {
        let o = parse(&["-hl", "-tPD", "-u", "root", "-j5,6"]).unwrap();
        assert!(o.no_header && o.long);
        assert_eq!(o.states.as_deref(), Some("PD"));
        assert_eq!(o.users, vec!["root"]);
        assert_eq!(o.job_ids, vec!["5", "6"]);
    }

    #[test]
    fn glibc_messages() {
        assert_eq!(
            parse(&["--bogus"]).unwrap_err().to_string(),
            "unrecognized option '--bogus'"
        );
        assert_eq!(
            parse(&["-z"]).unwrap_err().to_string(),
            "invalid option -- 'z'"
        );
        assert_eq!(
            parse(&["-o"]).unwrap_err().to_string(),
            "option requires an argument -- 'o'"
        );
        assert_eq!(
            parse(&["--long=1"]).unwrap_err().to_string(),
            "option '--long' doesn't allow an argument"
        );
    }

    #[test]
    fn environment_is_overridden_by_options() {
        let env = |name: &str| match name {
            "SQUEUE_FORMAT" => Some(OsString::from("%i")),
            "SQUEUE_SORT" => Some(OsString::from("-i")),
            _ => None,
        };
        let args: Vec<String> = vec!["-O".into(), "JobID".into()];
        let o = parse_options(&args, &env).unwrap();
        assert_eq!(o.format, None);
        assert_eq!(o.format_long.as_deref(), Some("JobID"));
        assert_eq!(o.sort.as_deref(), Some("-i"));
    }

    #[test]
    fn unknown_single_id_is_invalid() {
        let o = parse(&["-j", "999999"]).unwrap();
        let plan = Plan::new(&o).unwrap();
        let ctx = Ctx::system(0);
        assert_eq!(plan.render(&[], &ctx), Err(ErrorCode::InvalidJobId.into()));
        assert_eq!(
            ErrorCode::InvalidJobId.message(),
            "Invalid job id specified"
        );
        let o = parse(&["-u", "root"]).unwrap();
        let plan = Plan::new(&o).unwrap();
        assert!(plan
            .render(&[], &ctx)
            .unwrap()
            .starts_with("             JOBID"));
    }

    #[test]
    fn array_specs_expand() {
        assert_eq!(array_task_ids("0-3%2"), Some(vec![0, 1, 2, 3]));
        assert_eq!(array_task_ids("[1,5-9:2]"), Some(vec![1, 5, 7, 9]));
        assert_eq!(array_task_ids("3-1"), None);
        assert_eq!(array_task_ids("x"), None);
        assert_eq!(array_task_ids("0-4294967295"), None);
        assert_eq!(array_task_ids("4294967295"), Some(vec![u32::MAX]));
    }

    fn report(args: &[&str], env: EnvLookup<'_>, jobs: &[JobInfo], tiers: &Tiers) -> String {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let plan = Plan::new(&parse_options(&args, env).unwrap()).unwrap();
        let mut parts = one_job_parts(jobs.to_vec()).into_iter();
        plan.render_parts(&mut parts, &Ctx::utc(0), tiers).unwrap()
    }

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn new_flags_are_read_from_options_and_environment() {
        let o = parse(&["-P", "--array-unique", "--noconvert"]).unwrap();
        assert!(o.priority && o.array_unique && o.noconvert && !o.array);
        let o = parse(&["--prio", "--array-u", "--noconv"]).unwrap();
        assert!(o.priority && o.array_unique && o.noconvert);
        assert!(matches!(
            parse(&["--array"]).unwrap(),
            Options {
                array: true,
                array_unique: false,
                ..
            }
        ));
        let o = parse(&[]).unwrap();
        assert!(!o.priority && !o.array_unique && !o.noconvert && !o.array);
        // Slurm only asks whether the variables exist: empty counts.
        let env = |name: &str| {
            matches!(
                name,
                "SQUEUE_PRIORITY" | "SQUEUE_ARRAY_UNIQUE" | "SQUEUE_ARRAY"
            )
            .then(OsString::new)
        };
        let o = parse_options(&[], &env).unwrap();
        assert!(o.priority && o.array_unique && o.array && !o.noconvert);
        // No variable turns unit conversion off.
        let env = |name: &str| name.contains("NOCONVERT").then(|| OsString::from("1"));
        assert!(!parse_options(&[], &env).unwrap().noconvert);
    }

    fn sized_job(id: u32, mem_mb: u64, disk_mb: u64, cpus: u32) -> JobInfo {
        JobInfo {
            job_id: id,
            partition: "debug".into(),
            state: slurm_proto::v1::JobState::Pending as i32,
            memory: Some(slurm_proto::v1::job_info::Memory::MemPerNodeMb(mem_mb)),
            min_tmp_disk_mb: disk_mb,
            min_cpus_per_node: cpus,
            ..JobInfo::default()
        }
    }

    #[test]
    fn noconvert_shows_sizes_in_megabytes() {
        let mut per_cpu = sized_job(2, 0, 0, 2);
        per_cpu.memory = Some(slurm_proto::v1::job_info::Memory::MemPerCpuMb(1536));
        let jobs = [
            sized_job(1, 2048, 1024, 1024),
            per_cpu,
            sized_job(3, 4000, 100, 1),
        ];
        let tiers = Tiers::default();
        let args = ["-h", "-S", "i", "-o", "%i %m %d %c"];
        assert_eq!(
            report(&args, &no_env, &jobs, &tiers),
            "1 2G 1G 1K\n2 1.50G 0 2\n3 4000M 100M 1\n"
        );
        let args = ["-h", "--noconvert", "-S", "i", "-o", "%i %m %d %c"];
        assert_eq!(
            report(&args, &no_env, &jobs, &tiers),
            "1 2048M 1024M 1024\n2 1536M 0 2\n3 4000M 100M 1\n"
        );
        // -O minmemory is the same field.
        let args = ["-h", "--noconvert", "-O", "jobid:3,minmemory:8"];
        assert_eq!(report(&args, &no_env, &jobs[..1], &tiers), "1  2048M   \n");
        // The whole-reply path converts alike.
        let plan = Plan::new(&parse(&["-h", "-o", "%m"]).unwrap()).unwrap();
        assert_eq!(plan.render(&jobs[..1], &Ctx::utc(0)).unwrap(), "2G\n");
    }

    /// Array 15 (`0-3%2`) with task 2 held, so split off as job 17: the
    /// shape `scontrol hold 15_2` leaves.
    fn held_task_array() -> Vec<JobInfo> {
        let pending = |id: u32, task: Option<u32>, spec: &str, reason: &str| JobInfo {
            job_id: id,
            array_job_id: Some(15),
            array_task_id: task,
            array_task_spec: spec.into(),
            name: "arr".into(),
            partition: "debug".into(),
            state: slurm_proto::v1::JobState::Pending as i32,
            state_reason: reason.into(),
            ..JobInfo::default()
        };
        // A held task has priority 0, the rest of the array its own.
        vec![
            JobInfo {
                priority: 100,
                ..pending(15, None, "0-1,3%2", "Priority")
            },
            pending(17, Some(2), "", "JobHeldUser"),
        ]
    }

    #[test]
    fn the_last_of_json_and_yaml_wins() {
        assert_eq!(parse(&[]).unwrap().dump, None);
        assert_eq!(parse(&["--json"]).unwrap().dump, Some(Dump::Json));
        assert_eq!(parse(&["--yaml"]).unwrap().dump, Some(Dump::Yaml));
        assert_eq!(parse(&["--json", "--yaml"]).unwrap().dump, Some(Dump::Yaml));
        assert_eq!(parse(&["--yaml", "--json"]).unwrap().dump, Some(Dump::Json));
        assert_eq!(parse(&["--yam"]).unwrap().dump, Some(Dump::Yaml));
    }

    #[test]
    fn yaml_is_the_json_document() {
        let jobs = held_task_array();
        let ctx = Ctx::utc(0);
        let json = Plan::new(&parse(&["--json"]).unwrap()).unwrap();
        let yaml = Plan::new(&parse(&["--yaml"]).unwrap()).unwrap();
        let json = json.render(&jobs, &ctx).unwrap();
        let out = yaml.render(&jobs, &ctx).unwrap();
        assert_eq!(out, format::yaml::json_to_yaml(&json).unwrap());
        assert!(out.starts_with("%YAML 1.1\n--- !!map\n!!str meta: !!map\n"));
        assert!(out.contains("\n  !!str array_task_string: !!str 0-1,3%2\n"));
    }

    /// Slurm 22.05's `--json`/`--yaml` hold every job: selection options
    /// are checked but select nothing, `-r` does not split arrays, and
    /// finished jobs are kept; an unknown `-j` id is no error.
    #[test]
    fn dumps_hold_every_job_whatever_the_selection() {
        let mut jobs = held_task_array();
        let mut done = jobs[0].clone();
        done.job_id = 77;
        done.array_job_id = None;
        done.array_task_spec.clear();
        done.state = slurm_proto::v1::JobState::Cancelled as i32;
        jobs.push(done);
        let ctx = Ctx::utc(0);
        let all = Plan::new(&parse(&["--json"]).unwrap())
            .unwrap()
            .render(&jobs, &ctx)
            .unwrap();
        for dump in ["--json", "--yaml"] {
            for args in [
                &["-j", "9"][..],
                &["-u", "nobody", "-p", "nope", "-t", "PD"],
                &["-r", "-n", "x"],
                &["--me", "-w", "n9"],
            ] {
                let args: Vec<&str> = std::iter::once(dump).chain(args.iter().copied()).collect();
                let plan = Plan::new(&parse(&args).unwrap()).unwrap();
                assert_eq!(plan.request.filter, None, "{args:?}");
                let out = plan.render(&jobs, &ctx).unwrap();
                let json = if dump == "--json" {
                    out
                } else {
                    assert_eq!(out, format::yaml::json_to_yaml(&all).unwrap());
                    all.clone()
                };
                assert_eq!(json, all, "{args:?}");
            }
        }
        assert!(all.contains("\"job_id\": 77"), "{all}");
        assert!(all.contains("\"CANCELLED\""), "{all}");
        // Parsing still refuses what it refuses without --json.
        assert!(parse(&["--json", "-t", "bogus"]).map_or(true, |o| Plan::new(&o).is_err()));
    }

    #[test]
    fn slurm_bitstr_len_is_read_as_atoi_reads_it() {
        let read = |v: Option<&str>| TaskListLimit::from_env(v);
        assert_eq!(
            read(None),
            TaskListLimit {
                bytes: 64,
                set: false
            }
        );
        let set = |bytes| TaskListLimit { bytes, set: true };
        assert_eq!(read(Some("0")), set(0));
        assert_eq!(read(Some("10")), set(10));
        assert_eq!(read(Some(" 20")), set(20));
        assert_eq!(read(Some("20x")), set(20));
        assert_eq!(read(Some("100000")), set(100_000));
        // Not a number: atoi's 0, no limit, as in Slurm.
        assert_eq!(read(Some("garbage")), set(0));
        assert_eq!(read(Some("")), set(0));
        // Negative: the default size.
        assert_eq!(read(Some("-1")), set(64));
        assert_eq!(read(Some("99999999999999999999")), set(64));
    }

    #[test]
    fn task_lists_are_cut_to_the_buffer_with_a_mark() {
        let cut =
            |bytes: u32, text: &str| TaskListLimit { bytes, set: true }.cut(text).into_owned();
        let long: String = (0..100).map(|i| format!("{},", i * 2)).collect();
        assert_eq!(cut(0, &long), long);
        assert_eq!(cut(10, &long), "0,2,4,...");
        assert_eq!(cut(64, &long).len(), 63);
        assert!(cut(64, &long).ends_with("..."));
        assert_eq!(cut(64, "0-3"), "0-3");
        assert_eq!(cut(1, &long), "");
        assert_eq!(cut(2, &long), ".");
        assert_eq!(cut(u32::MAX, &long), long);
    }

    /// [`held_task_array`] with the even tasks of 0-98 pending in the
    /// record and task 1 split off.
    fn every_other_task_and_one_split() -> Vec<JobInfo> {
        let mut jobs = held_task_array();
        jobs[0].array_task_spec = (0..50)
            .map(|i| (i * 2).to_string())
            .collect::<Vec<_>>()
            .join(",");
        jobs[1].array_task_id = Some(1);
        jobs
    }

    #[test]
    fn slurm_bitstr_len_sets_where_a_combined_list_stops() {
        let jobs = every_other_task_and_one_split();
        let fmt = ["-h", "-o", "%K"];
        let tiers = Tiers::default();
        let with = |value: &'static str| {
            move |name: &str| (name == "SLURM_BITSTR_LEN").then(|| OsString::from(value))
        };
        let full = "0-2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,\
                    46,48,50,52,54,56,58,60,62,64,66,68,70,72,74,76,78,80,82,84,86,88,\
                    90,92,94,96,98";
        assert_eq!(
            report(&fmt, &no_env, &jobs, &tiers),
            format!("{}...\n", &full[..60])
        );
        assert_eq!(report(&fmt, &with("0"), &jobs, &tiers), format!("{full}\n"));
        assert_eq!(
            report(&fmt, &with("junk"), &jobs, &tiers),
            format!("{full}\n")
        );
        assert_eq!(report(&fmt, &with("10"), &jobs, &tiers), "0-2,4,...\n");
        assert_eq!(
            report(&fmt, &with("-5"), &jobs, &tiers),
            format!("{}...\n", &full[..60])
        );
        // %i: unset, the whole id stops at 31 characters, bracket and all;
        // set, the cut list is closed by its bracket.
        let id = ["-h", "-o", "%i"];
        assert_eq!(
            report(&id, &no_env, &jobs, &tiers),
            format!("15_[{}\n", &full[..27])
        );
        assert_eq!(report(&id, &with("10"), &jobs, &tiers), "15_[0-2,4,...]\n");
        assert_eq!(
            report(&id, &with("0"), &jobs, &tiers),
            format!("15_[{full}]\n")
        );
    }

    #[test]
    fn pending_tasks_join_their_array_unless_array_unique() {
        let jobs = held_task_array();
        let tiers = Tiers::default();
        let fmt = ["-h", "-o", "%i|%K|%R"];
        assert_eq!(
            report(&fmt, &no_env, &jobs, &tiers),
            "15_[0-3]|0-3|(Priority,JobHeldUser)\n"
        );
        // The task may come before its array's record.
        let reversed: Vec<JobInfo> = jobs.iter().rev().cloned().collect();
        assert_eq!(
            report(&fmt, &no_env, &reversed, &tiers),
            "15_[0-3]|0-3|(Priority,JobHeldUser)\n"
        );
        let unique = "15_[0-1,3%2]|0-1,3%2|(Priority)\n15_2|2|(JobHeldUser)\n";
        let args = ["--array-unique", "-h", "-o", "%i|%K|%R"];
        assert_eq!(report(&args, &no_env, &jobs, &tiers), unique);
        let env = |name: &str| (name == "SQUEUE_ARRAY_UNIQUE").then(OsString::new);
        assert_eq!(report(&fmt, &env, &jobs, &tiers), unique);
        // -r shows every task, the split one where its record came.
        let args = ["-r", "-h", "-o", "%i|%R"];
        assert_eq!(
            report(&args, &no_env, &jobs, &tiers),
            "15_0|(Priority)\n15_1|(Priority)\n15_3|(Priority)\n15_2|(JobHeldUser)\n"
        );
        // The whole-reply path combines alike.
        let plan = Plan::new(&parse(&fmt).unwrap()).unwrap();
        assert_eq!(
            plan.render(&jobs, &Ctx::utc(0)).unwrap(),
            "15_[0-3]|0-3|(Priority,JobHeldUser)\n"
        );
    }

    #[test]
    fn a_reason_inside_another_reasons_name_is_still_added() {
        let mut jobs = held_task_array();
        jobs[0].state_reason = "DependencyNeverSatisfied".into();
        jobs[1].state_reason = "Dependency".into();
        assert_eq!(
            report(&["-h", "-o", "%i|%r"], &no_env, &jobs, &Tiers::default()),
            "15_[0-3]|DependencyNeverSatisfied,Dependency\n"
        );
    }

    #[test]
    fn only_matching_pending_tasks_join() {
        let jobs = held_task_array();
        let with = |f: &dyn Fn(&mut JobInfo)| {
            let mut jobs = jobs.clone();
            f(&mut jobs[1]);
            report(
                &["-h", "-S", "i", "-o", "%i|%r"],
                &no_env,
                &jobs,
                &Tiers::default(),
            )
        };
        let apart = "15_[0-1,3%2]|Priority\n15_2|JobHeldUser\n";
        assert_eq!(with(&|t| t.name = "other".into()), apart);
        assert_eq!(with(&|t| t.partition = "batch".into()), apart);
        assert_eq!(
            with(&|t| t.array_job_id = Some(16)),
            "15_[0-1,3%2]|Priority\n16_2|JobHeldUser\n"
        );
        assert_eq!(
            with(&|t| t.state = slurm_proto::v1::JobState::Running as i32),
            "15_[0-1,3%2]|Priority\n15_2|JobHeldUser\n"
        );
        // Same reason: nothing added to it, and no description made up.
        assert_eq!(
            with(&|t| t.state_reason = "Priority".into()),
            "15_[0-3]|Priority\n"
        );
        // A reason already in the description is not repeated.
        let mut jobs = held_task_array();
        jobs[0].state_description = "Priority,JobHeldUser".into();
        assert_eq!(
            report(&["-h", "-o", "%i|%r"], &no_env, &jobs, &Tiers::default()),
            "15_[0-3]|Priority,JobHeldUser\n"
        );
        // A task filtered out is not combined (-t R keeps neither).
        assert_eq!(
            report(
                &["-h", "-t", "R", "-o", "%i"],
                &no_env,
                &jobs,
                &Tiers::default()
            ),
            ""
        );
    }

    #[test]
    fn combined_task_lists_are_written_as_slurm_writes_sets() {
        assert_eq!(ranges(vec![3, 0, 1, 2, 7, 9, 10, 9]), "0-3,7,9-10");
        assert_eq!(ranges(Vec::new()), "");
        assert_eq!(
            ranges(vec![u32::MAX, u32::MAX - 1]),
            "4294967294-4294967295"
        );
        assert_eq!(ranges((0..50).map(|i| i * 3).collect()), "0-147:3");
        // Every other task of 0-98 and one split task: the whole list (it
        // is cut when shown).
        let jobs = every_other_task_and_one_split();
        let out = combine_pending_tasks(
            jobs.into_iter()
                .enumerate()
                .map(|(i, j)| (i as u32, j))
                .collect(),
        );
        assert_eq!(out.len(), 1);
        assert!(out[0].1.array_task_spec.starts_with("0-2,4,6,"));
        assert!(out[0].1.array_task_spec.ends_with(",96,98"));
        // A task list too large to expand is left alone, and so is its task.
        let mut jobs = held_task_array();
        jobs[0].array_task_spec = "0-4000000".into();
        let out = combine_pending_tasks(jobs.into_iter().map(|j| (0, j)).collect());
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].1.array_task_spec, "0-4000000");
    }

    fn multi_partition_jobs() -> Vec<JobInfo> {
        let job = |id: u32, partition: &str, priority: u32| JobInfo {
            job_id: id,
            partition: partition.into(),
            priority,
            state: slurm_proto::v1::JobState::Pending as i32,
            ..JobInfo::default()
        };
        vec![job(1, "a,b", 100), job(2, "b", 200)]
    }

    fn tiers(pairs: &[(&str, u32)]) -> Tiers {
        let parts: Vec<PartitionInfo> = pairs
            .iter()
            .map(|(name, tier)| PartitionInfo {
                name: (*name).into(),
                priority_tier: *tier,
                ..PartitionInfo::default()
            })
            .collect();
        Tiers::from_partitions(&parts)
    }

    #[test]
    fn priority_lists_a_job_once_per_partition() {
        let jobs = multi_partition_jobs();
        let t = tiers(&[("a", 10), ("b", 1)]);
        let run = |args: &[&str]| report(args, &no_env, &jobs, &t);
        // Default order P,t,-p: by partition, then priority.
        assert_eq!(run(&["-h", "-o", "%i %P"]), "1 a,b\n2 b\n");
        assert_eq!(run(&["-P", "-h", "-o", "%i %P"]), "1 a\n2 b\n1 b\n");
        let env = |name: &str| (name == "SQUEUE_PRIORITY").then(OsString::new);
        assert_eq!(
            report(&["-h", "-o", "%i %P"], &env, &jobs, &t),
            "1 a\n2 b\n1 b\n"
        );
        // A priority sort goes by the partition's tier first.
        assert_eq!(run(&["-h", "-S", "p", "-o", "%i %P"]), "1 a,b\n2 b\n");
        assert_eq!(
            run(&["-P", "-h", "-S", "p", "-o", "%i %P"]),
            "1 b\n2 b\n1 a\n"
        );
        assert_eq!(
            run(&["-P", "-h", "-S", "-Q", "-o", "%i %P"]),
            "1 a\n2 b\n1 b\n"
        );
        // Unknown tiers count as 1, so only the job priority is left.
        let none = Tiers::default();
        assert_eq!(
            report(
                &["-P", "-h", "-S", "p", "-o", "%i %P"],
                &no_env,
                &jobs,
                &none
            ),
            "1 a\n1 b\n2 b\n"
        );
        // -p keeps the listed partitions only.
        assert_eq!(run(&["-P", "-p", "a", "-h", "-o", "%i %P"]), "1 a\n");
        assert_eq!(run(&["-p", "a", "-h", "-o", "%i %P"]), "1 a,b\n");
    }

    #[test]
    fn tiers_are_asked_for_only_when_a_priority_sort_needs_them() {
        let jobs = multi_partition_jobs();
        let t = tiers(&[("a", 10), ("b", 1)]);
        let run = |args: &[&str], answer: Result<Tiers, RpcError>| {
            run_loop_tiered(args, vec![Ok(jobs.clone())], answer)
        };
        let ((out, err, code, _), asks) =
            run(&["-P", "-h", "-S", "p", "-o", "%i %P"], Ok(t.clone()));
        assert_eq!(
            (out.as_str(), err.as_str(), code, asks),
            ("1 b\n2 b\n1 a\n", "", 0, 1)
        );
        let ((out, _, code, _), asks) = run(&["-P", "-h", "-S", "i", "-o", "%i %P"], Ok(t.clone()));
        assert_eq!((out.as_str(), code, asks), ("1 a\n1 b\n2 b\n", 0, 0));
        let ((_, _, _, _), asks) = run(&["-h", "-o", "%i"], Ok(t));
        assert_eq!(asks, 0);
        let down = RpcError::new(ErrorCode::ControllerConnect, "");
        let ((out, err, code, _), asks) = run(&["-P", "-h", "-o", "%i"], Err(down.clone()));
        assert_eq!((out.as_str(), code, asks), ("", 1, 1));
        assert_eq!(err, format!("slurm_load_partitions: {down}\n"));
    }

    #[test]
    fn array_option_shows_one_line_per_task() {
        let master = JobInfo {
            job_id: 15,
            array_job_id: Some(15),
            array_task_spec: "0-1".into(),
            name: "a".into(),
            state: slurm_proto::v1::JobState::Pending as i32,
            ..JobInfo::default()
        };
        let plan = Plan::new(&parse(&["-r", "-h", "-o", "%i"]).unwrap()).unwrap();
        let text = plan.render(&[master], &Ctx::system(0)).unwrap();
        assert_eq!(text, "15_0\n15_1\n");
    }

    #[test]
    fn a_nodelist_naming_no_node_is_found_out() {
        let nodes: Vec<NodeInfo> = ["n1", "n2"]
            .iter()
            .map(|n| NodeInfo {
                name: (*n).into(),
                ..NodeInfo::default()
            })
            .collect();
        assert_eq!(unknown_node("n[1-2]", &nodes), None);
        assert_eq!(unknown_node("n2,nosuch", &nodes).as_deref(), Some("nosuch"));
        assert_eq!(unknown_node("n[1-3]", &nodes).as_deref(), Some("n3"));
    }

    #[test]
    fn bad_specs_are_reported() {
        // Unknown codes and names are reported and the report goes on: a
        // code is printed as written, a name left out.
        let plan = Plan::new(&parse(&["-o", "%i %10+ %.5+|"]).unwrap()).unwrap();
        assert_eq!(plan.unknown_codes, vec!["+", "+"]);
        let job = JobInfo {
            job_id: 7,
            state: slurm_proto::v1::JobState::Pending as i32,
            ..JobInfo::default()
        };
        assert_eq!(
            plan.render(std::slice::from_ref(&job), &Ctx::utc(0))
                .unwrap(),
            "JOBID %10+ %.5+|\n7 %10+ %.5+|\n"
        );
        let plan = Plan::new(&parse(&["-O", "jobid:4,bogus,name:5,junk"]).unwrap()).unwrap();
        assert_eq!(plan.unknown_fields, vec!["bogus", "junk"]);
        assert_eq!(
            plan.render(std::slice::from_ref(&job), &Ctx::utc(0))
                .unwrap(),
            "JOBINAME \n7        \n"
        );
        assert!(parse(&["-t", "nosuch"]).is_err());
        assert!(parse(&["-j", "abc"]).is_err());
        assert!(parse(&["-jabc"]).is_err());
    }

    #[test]
    fn help_and_version_act_when_read() {
        assert!(parse(&["-V", "--bogus"]).unwrap().version);
        assert!(parse(&["--usage", "-z"]).unwrap().usage);
        assert!(parse(&["--bogus", "-V"]).is_err());
        // Aliases Slurm declares.
        let o = parse(&[
            "--users=root",
            "--accounts",
            "a",
            "--partitions=p",
            "--nodes=n1",
        ])
        .unwrap();
        assert_eq!(
            (o.users, o.accounts, o.partitions),
            (
                vec!["root".to_owned()],
                vec!["a".to_owned()],
                vec!["p".to_owned()]
            )
        );
        assert_eq!(o.nodelist, "n1");
    }

    #[test]
    fn iterate_is_checked_as_slurm_does() {
        let plan = |args: &[&str]| Plan::new(&parse(args).unwrap());
        assert_eq!(plan(&["-i", "5"]).unwrap().iterate, Some(5));
        assert_eq!(plan(&["--iterate=7s"]).unwrap().iterate, Some(7));
        for bad in ["0", "abc", "-3"] {
            assert_eq!(
                parse(&["-i", bad]).unwrap_err().to_string(),
                format!("squeue: error: --iterate={bad}\n")
            );
        }
        // atoi keeps the low 32 bits: too big reads as -1.
        assert!(parse(&["-i", "99999999999999999999999"]).is_err());
        assert_eq!(
            plan(&["-i", "5000000000"]).unwrap().iterate,
            Some(705_032_704)
        );
        // The date line comes with -i or -l, and never without a header.
        assert!(plan(&["-i", "5"]).unwrap().date_line);
        assert!(plan(&["-l"]).unwrap().date_line);
        assert!(!plan(&["-l", "-h"]).unwrap().date_line);
        assert!(!plan(&[]).unwrap().date_line);
    }

    /// A clock that moves only when paused, and stops after `reports`.
    struct FakePacer {
        now: i64,
        pauses: Vec<u64>,
        reports: usize,
    }

    impl Pacer for FakePacer {
        fn now(&mut self) -> i64 {
            self.now
        }

        fn pause(&mut self, seconds: u64) -> bool {
            self.pauses.push(seconds);
            self.now += i64::try_from(seconds).unwrap();
            self.pauses.len() < self.reports
        }
    }

    fn running_job(id: u32) -> JobInfo {
        JobInfo {
            job_id: id,
            name: "sleep".into(),
            partition: "debug".into(),
            state: slurm_proto::v1::JobState::Running as i32,
            ..JobInfo::default()
        }
    }

    fn run_loop(
        args: &[&str],
        replies: Vec<Result<Vec<JobInfo>, RpcError>>,
    ) -> (String, String, i32, Vec<u64>) {
        let (report, tier_asks) = run_loop_tiered(args, replies, Ok(Tiers::default()));
        assert_eq!(tier_asks, 0);
        report
    }

    /// [`run_loop`] with the controller's answer for the partitions' tiers;
    /// also says how many times they were asked for.
    fn run_loop_tiered(
        args: &[&str],
        replies: Vec<Result<Vec<JobInfo>, RpcError>>,
        tiers: Result<Tiers, RpcError>,
    ) -> ((String, String, i32, Vec<u64>), usize) {
        let plan = Plan::new(&parse(args).unwrap()).unwrap();
        run_plan(&plan, replies, tiers)
    }

    /// [`run_loop_tiered`] of a plan made beforehand.
    fn run_plan(
        plan: &Plan,
        replies: Vec<Result<Vec<JobInfo>, RpcError>>,
        tiers: Result<Tiers, RpcError>,
    ) -> ((String, String, i32, Vec<u64>), usize) {
        let mut tier_asks = 0;
        let mut fetch_tiers = || {
            tier_asks += 1;
            tiers.clone()
        };
        let mut replies = replies.into_iter();
        let mut asked = 0;
        let mut fetch = |request: &GetJobsRequest| -> Result<Box<dyn ReplyParts>, RpcError> {
            asked += 1;
            assert!(request.filter.is_some());
            let jobs = replies.next().unwrap_or_else(|| Ok(Vec::new()))?;
            // One job per part, as a stream may cut them.
            Ok(Box::new(one_job_parts(jobs).into_iter()))
        };
        let mut pacer = FakePacer {
            // Sat Nov 21 09:00:00 2026 UTC.
            now: 1_795_251_600,
            pauses: Vec::new(),
            reports: 2,
        };
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        let zone = Zone::Fixed(slurm_common::time::FixedZone::UTC);
        let mut sources = Sources {
            jobs: &mut fetch,
            tiers: &mut fetch_tiers,
            first_notes: Vec::new(),
        };
        let code = report_loop(plan, &mut sources, &mut pacer, zone, &mut out);
        let expected_asks = if plan.iterate.is_some() { 2 } else { 1 };
        assert_eq!(asked, expected_asks);
        (
            (
                String::from_utf8(o).unwrap(),
                String::from_utf8(e).unwrap(),
                code,
                pacer.pauses,
            ),
            tier_asks,
        )
    }

    /// `jobs` as StreamJobs may send them: a part per job (one empty part
    /// when there are none).
    fn one_job_parts(jobs: Vec<JobInfo>) -> Vec<Bytes> {
        let part = |jobs: Vec<JobInfo>| {
            let reply = GetJobsReply {
                jobs,
                last_update: 1,
                unchanged: false,
            };
            Bytes::from(reply.encode_to_vec())
        };
        if jobs.is_empty() {
            return vec![part(Vec::new())];
        }
        jobs.into_iter().map(|j| part(vec![j])).collect()
    }

    /// Parts, then a failure of the stream.
    struct FailingParts(std::vec::IntoIter<Bytes>, RpcError);

    impl ReplyParts for FailingParts {
        fn next_part(&mut self) -> Result<Option<Bytes>, RpcError> {
            match self.0.next() {
                Some(part) => Ok(Some(part)),
                None => Err(self.1.clone()),
            }
        }
    }

    #[test]
    fn a_stream_that_fails_midway_is_a_failed_report() {
        for args in [&["-h", "-o", "%i"][..], &["--json"][..]] {
            let plan = Plan::new(&parse(args).unwrap()).unwrap();
            let mut fetch = |_: &GetJobsRequest| -> Result<Box<dyn ReplyParts>, RpcError> {
                let parts = one_job_parts(vec![running_job(4), running_job(5)]);
                let lost = RpcError::new(ErrorCode::SocketTimeout, "");
                Ok(Box::new(FailingParts(parts.into_iter(), lost)))
            };
            let mut pacer = FakePacer {
                now: 0,
                pauses: Vec::new(),
                reports: 1,
            };
            let (mut o, mut e) = (Vec::new(), Vec::new());
            let mut out = Output::new(&mut o, &mut e);
            let mut no_tiers = || -> Result<Tiers, RpcError> { unreachable!("no -P") };
            let mut sources = Sources {
                jobs: &mut fetch,
                tiers: &mut no_tiers,
                first_notes: Vec::new(),
            };
            let code = report_loop(&plan, &mut sources, &mut pacer, Zone::System, &mut out);
            // Nothing of the partial report is printed.
            assert_eq!(String::from_utf8(o).unwrap(), "", "{args:?}");
            assert_eq!(
                String::from_utf8(e).unwrap(),
                format!(
                    "slurm_load_jobs error: {}\n",
                    RpcError::new(ErrorCode::SocketTimeout, "")
                ),
                "{args:?}"
            );
            assert_eq!(code, 1);
        }
    }

    #[test]
    fn iterate_repeats_the_report_with_a_date_line() {
        let (out, err, code, pauses) = run_loop(
            &["-i", "30", "-o", "%i %j"],
            vec![
                Ok(vec![running_job(7)]),
                Ok(vec![running_job(7), running_job(8)]),
            ],
        );
        assert_eq!(
            out,
            "Sat Nov 21 09:00:00 2026\nJOBID NAME\n7 sleep\n\n\
             Sat Nov 21 09:00:30 2026\nJOBID NAME\n8 sleep\n7 sleep\n\n"
        );
        assert_eq!((err.as_str(), code), ("", 0));
        assert_eq!(pauses, vec![30, 30]);
    }

    #[test]
    fn verbose_prints_the_date_and_what_the_controller_sent() {
        let (out, err, code, _) = run_loop(
            &["-v", "-o", "%i"],
            vec![Ok(vec![running_job(7), running_job(8)])],
        );
        assert_eq!(
            out,
            "Sat Nov 21 09:00:00 2026\nlast_update_time=1 records=2\nJOBID\n8\n7\n"
        );
        assert_eq!((err.as_str(), code), ("", 0));
        // Without the header: no date, the count still.
        let (out, _, _, _) = run_loop(&["-v", "-h", "-o", "%i"], vec![Ok(vec![running_job(7)])]);
        assert_eq!(out, "last_update_time=1 records=1\n7\n");
    }

    /// `squeue -v`'s dump, as squeue 22.05 printed it on a test cluster.
    const REAL_DEFAULT_DUMP: &str = "-----------------------------
all         = false
array       = false
federation  = false
format      = (null)
iterate     = 0
job_flag    = 0
jobs        = (null)
licenses    = (null)
local       = false
names       = (null)
nodes       = \n\
partitions  = (null)
priority    = false
reservation = (null)
sibling      = false
sort        = (null)
start_flag  = 0
states      = (null)
step_flag   = 0
steps       = (null)
users       = (null)
verbose     = 1
-----------------------------


";

    #[test]
    fn the_option_dump_reads_as_squeue_prints_it() {
        assert_eq!(option_dump(&parse(&["-v"]).unwrap()), REAL_DEFAULT_DUMP);
        // Every option shown, as written (real squeue 22.05 printed these).
        let o = parse(&[
            "-v",
            "-v",
            "-a",
            "-r",
            "--federation",
            "-o",
            "%i %j",
            "-j",
            "1,2",
            "-L",
            "lic1",
            "--local",
            "-n",
            "a,b",
            "-w",
            "n1",
            "-p",
            "debug,x",
            "-R",
            "res",
            "-S",
            "i,-P",
            "-t",
            "PD,R",
            "-u",
            "root,daemon",
            "-i",
            "5",
            "--sibling",
        ])
        .unwrap();
        let dump = option_dump(&o);
        for line in [
            "all         = true",
            "array       = true",
            "federation  = true",
            "format      = %i %j",
            "iterate     = 5",
            "job_flag    = 1",
            "jobs        = 1,2",
            "licenses    = lic1",
            "local       = true",
            "names       = a,b",
            "nodes       = n1",
            "partitions  = debug,x",
            "reservation = res",
            "sibling      = true",
            "sort        = i,-P",
            "states      = PD,R",
            "users       = root,daemon",
            "verbose     = 2",
        ] {
            assert!(dump.lines().any(|l| l == line), "{line} in\n{dump}");
        }
        // --start implies its format, sort and pending state; -P and -s
        // show as flags; -O leaves the format unset; --me names the uid.
        let dump = option_dump(&parse(&["-v", "--start", "-P"]).unwrap());
        for line in [
            "format      = %.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R",
            "priority    = true",
            "sort        = S",
            "start_flag  = 1",
            "states      = PD",
        ] {
            assert!(dump.lines().any(|l| l == line), "{line} in\n{dump}");
        }
        let dump = option_dump(&parse(&["-v", "-s", "5.0", "-O", "jobid"]).unwrap());
        assert!(dump.contains("\nformat      = (null)\n"));
        assert!(dump.contains("\nstep_flag   = 1\nsteps       = 5.0\n"));
        let dump = option_dump(&parse(&["-v", "-u", "root", "--me"]).unwrap());
        let me = format!("\nusers       = {}\n", client::current_uid());
        assert!(dump.contains(&me), "{dump}");
    }

    #[test]
    fn records_are_counted_from_the_encoded_reply() {
        let reply = GetJobsReply {
            jobs: vec![running_job(1), running_job(2), running_job(3)],
            last_update: 1_795_000_000,
            unchanged: false,
        };
        let bytes = reply.encode_to_vec();
        assert_eq!(count_records(&bytes), (3, Some(1_795_000_000)));
        assert_eq!(count_records(&[]), (0, None));
        // Cut anywhere: whole records are counted, nothing panics.
        for cut in 0..bytes.len() {
            assert!(count_records(&bytes[..cut]).0 <= 3);
        }
        assert_eq!(count_records(&[0xff; 12]).0, 0);
    }

    #[test]
    fn iterate_survives_a_failed_report() {
        let (out, err, code, _) = run_loop(
            &["-i", "1", "-h", "-o", "%i"],
            vec![
                Err(RpcError::new(ErrorCode::ControllerConnect, "")),
                Ok(vec![running_job(9)]),
            ],
        );
        assert_eq!(out, "\n9\n\n");
        assert_eq!(
            err,
            format!(
                "slurm_load_jobs error: {}\n",
                ErrorCode::ControllerConnect.message()
            )
        );
        assert_eq!(code, 1);
    }

    #[test]
    fn slurm_time_format_is_read_and_a_bad_one_reported_only_with_times() {
        let env = |name: &str| (name == "SLURM_TIME_FORMAT").then(|| OsString::from("%s"));
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<String>>();
        let o = parse_options(&args(&["-o", "%i %V"]), &env).unwrap();
        assert_eq!(o.time_format, TimeFormat::Custom("%s"));
        let job = JobInfo {
            job_id: 7,
            submit_time: 1_795_323_243,
            state: slurm_proto::v1::JobState::Pending as i32,
            ..JobInfo::default()
        };
        let plan = Plan::new(&parse_options(&args(&["-h", "-o", "%i %V"]), &env).unwrap()).unwrap();
        let ((out, _, _, _), _) = run_plan(&plan, vec![Ok(vec![job])], Ok(Tiers::default()));
        assert_eq!(out, "7 1795323243\n");
        // squeue -o "%V" with SLURM_TIME_FORMAT=bogus says so once; -o %i not.
        for (format, shows) in [("%V %S", true), ("%i", false), ("%e", true)] {
            let plan = Plan::new(&parse(&["-o", format]).unwrap()).unwrap();
            assert_eq!(plan.shows_time(), shows, "{format}");
        }
        let plan = Plan::new(&parse(&["-O", "eligibletime"]).unwrap()).unwrap();
        assert!(plan.shows_time());
    }

    /// Slurm 22.05 lists a finished job named with `-j` only when `-t`
    /// asks for its state.
    #[test]
    fn a_named_finished_job_is_listed_only_with_its_state_asked() {
        let job = |state: slurm_proto::v1::JobState| JobInfo {
            job_id: 4,
            state: state as i32,
            ..JobInfo::default()
        };
        let shows =
            |args: &[&str], job: &JobInfo| Plan::new(&parse(args).unwrap()).unwrap().admits(job);
        let done = job(slurm_proto::v1::JobState::Completed);
        let running = job(slurm_proto::v1::JobState::Running);
        assert!(!shows(&["-j", "4"], &done));
        assert!(shows(&["-j", "4"], &running));
        assert!(shows(&["-j", "4", "-t", "all"], &done));
        assert!(shows(&["-j", "4", "-t", "CD"], &done));
    }

    #[test]
    fn a_list_given_with_no_item_selects_no_job() {
        let job = JobInfo {
            job_id: 4,
            name: "run1".into(),
            partition: "debug".into(),
            state: slurm_proto::v1::JobState::Running as i32,
            ..JobInfo::default()
        };
        let shows = |args: &[&str], env: &dyn Fn(&str) -> Option<OsString>| {
            let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
            let plan = Plan::new(&parse_options(&args, env).unwrap()).unwrap();
            plan.admits(&job)
        };
        let none = |_: &str| None;
        for args in [
            &["-A", ""][..],
            &["-p", ","],
            &["-n", ""],
            &["-q", ""],
            &["-R", ""],
            &["-L", ""],
            &["-w", ""],
            &["--jobs="],
            &["-j", ""],
            // Items are kept as written.
            &["-p", " debug"],
            &["-n", " "],
        ] {
            assert!(!shows(args, &none), "{args:?}");
        }
        // The last value given counts.
        assert!(shows(&["-p", "", "-p", "debug"], &none));
        assert!(shows(&["-j"], &none));
        for var in [
            "SQUEUE_ACCOUNT",
            "SQUEUE_NAMES",
            "SQUEUE_PARTITION",
            "SQUEUE_QOS",
            "SQUEUE_LICENSES",
            "SQUEUE_STATES",
        ] {
            let env = |name: &str| (name == var).then(OsString::new);
            assert!(!shows(&[], &env), "{var}");
        }
        let env = |name: &str| (name == "SQUEUE_NAMES").then(|| OsString::from("run1"));
        assert!(shows(&[], &env));
        let env = |name: &str| (name == "SQUEUE_NAMES").then(|| OsString::from("other"));
        assert!(!shows(&[], &env));
        assert!(shows(&["-n", "run1"], &env));
    }

    #[test]
    fn squeue_states_is_checked_unless_t_replaces_it() {
        let env = |name: &str| (name == "SQUEUE_STATES").then(|| OsString::from("bogus"));
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<String>>();
        match parse_options(&args(&[]), &env) {
            Err(SqueueError::Refused {
                lines,
                usage: false,
            }) => {
                assert_eq!(
                    lines[0],
                    "squeue: error: Invalid job state specified: bogus"
                );
                assert_eq!(lines.len(), 3);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_options(&args(&["-t", "R"]), &env)
                .unwrap()
                .states
                .as_deref(),
            Some("R")
        );
        match parse_options(&args(&["-t", "bogus2"]), &env) {
            Err(SqueueError::Refused { lines, .. }) => assert!(lines[0].ends_with("bogus2")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn job_ids_that_find_nothing_are_an_error_only_for_one_plain_id() {
        // squeue -j 11_9 or -j 5,6: an empty list; squeue -j 5: the error.
        for (args, want) in [
            (&["-j", "11_9", "-h", "-o", "%i"][..], Ok(String::new())),
            (&["-j", "5,6", "-h", "-o", "%i"], Ok(String::new())),
            (&["-j", "5", "-h", "-o", "%i"], Err(1)),
        ] {
            let (out, err, code, _) =
                run_loop(args, vec![Err(RpcError::new(ErrorCode::InvalidJobId, ""))]);
            match want {
                Ok(text) => assert_eq!((out, err.as_str(), code), (text, "", 0), "{args:?}"),
                Err(c) => assert_eq!(code, c, "{args:?}"),
            }
        }
    }

    #[test]
    fn a_pending_array_shows_only_the_tasks_picked() {
        let meta = JobInfo {
            job_id: 11,
            array_job_id: Some(11),
            array_task_spec: "1-5%2".into(),
            array_task_throttle: 2,
            state: slurm_proto::v1::JobState::Pending as i32,
            ..JobInfo::default()
        };
        for (args, want) in [
            (&["-j", "11_2"][..], "11_2\n"),
            (&["-j", "11_2,11_4"], "11_[2,4]\n"),
            (&["-j", "11_1,11_2,11_3,11_4,11_5"], "11_[1-5]\n"),
            (&["-j", "11_2.0,11_3-4"], "11_[2-3]\n"),
            (&["-j", "11,11_2"], "11_[1-5%2]\n"),
            (&["-j", "11_9"], ""),
            (&["-j", "11_[1-3]"], ""),
            (&["-j", "11_2", "-r"], "11_2\n"),
        ] {
            let mut all = vec!["-h", "-o", "%i"];
            all.extend_from_slice(args);
            let plan = Plan::new(&parse(&all).unwrap()).unwrap();
            let out = plan.render(std::slice::from_ref(&meta), &Ctx::utc(0));
            assert_eq!(out, Ok(want.to_owned()), "{args:?}");
        }
    }

    #[test]
    fn format_faults_are_reported_once_the_jobs_are_loaded() {
        // squeue -j 8 -o "%+%i" for a purged job: only the load error.
        let (_, err, code, _) = run_loop(
            &["-j", "8", "-o", "%+%i"],
            vec![Err(RpcError::new(ErrorCode::InvalidJobId, ""))],
        );
        assert_eq!(code, 1);
        assert_eq!(err, "slurm_load_jobs error: Invalid job id specified\n");
        // Loaded, over two reports: said once.
        let (out, err, _, _) = run_loop(
            &["-i", "1", "-h", "-o", "%+%i", "-O", "bogus,jobid:3"],
            vec![Ok(vec![running_job(3)]), Ok(vec![running_job(3)])],
        );
        assert_eq!(out, "3  \n\n3  \n\n");
        assert_eq!(
            err,
            "squeue: error: Invalid job format specification: bogus\n"
        );
        let (_, err, _, _) = run_loop(&["-h", "-o", "%+%i"], vec![Ok(vec![running_job(3)])]);
        assert_eq!(err, "squeue: error: Invalid job format specification: +\n");
    }

    #[test]
    fn a_sort_key_squeue_does_not_know_stops_after_the_header() {
        // squeue -S "x,b" -o %i: b is noted, x ends the report with 1.
        let (out, err, code, _) =
            run_loop(&["-S", "x,b", "-o", "%i"], vec![Ok(vec![running_job(3)])]);
        assert_eq!(out, "JOBID\n");
        assert_eq!(
            err,
            "squeue: Invalid sort specification: b\n\
             squeue: error: Invalid sort specification: x\n"
        );
        assert_eq!(code, 1);
        let (out, err, code, _) = run_loop(&["-h", "-S", " i"], vec![Ok(vec![running_job(3)])]);
        assert_eq!((out.as_str(), code), ("", 1));
        assert_eq!(err, "squeue: error: Invalid sort specification:  \n");
        // A failed fetch is reported as such, before any sort.
        let (_, err, _, _) = run_loop(
            &["-S", "x"],
            vec![Err(RpcError::new(ErrorCode::ControllerConnect, ""))],
        );
        assert!(err.starts_with("slurm_load_jobs error: "), "{err}");
    }

    #[test]
    fn without_iterate_one_report() {
        let (out, _, code, pauses) = run_loop(&["-o", "%i"], vec![Ok(vec![running_job(3)])]);
        assert_eq!((out.as_str(), code), ("JOBID\n3\n", 0));
        assert!(pauses.is_empty());
        let (out, err, code, _) = run_loop(&["-j", "999999"], vec![Ok(Vec::new())]);
        assert_eq!(out, "");
        assert_eq!(err, "slurm_load_jobs error: Invalid job id specified\n");
        assert_eq!(code, 1);
    }

    fn any_job() -> impl Strategy<Value = JobInfo> {
        let word = || {
            prop::sample::select(vec![
                "",
                "a",
                "debug",
                "short,debug",
                "zeta",
                "ünïcode-long-name",
            ])
        };
        (
            (
                1u32..50,
                proptest::option::of(1u32..50),
                proptest::option::of(0u32..4),
            ),
            (
                prop::sample::select(vec!["", "0-2", "1,3", "0-3%2", "x"]),
                word(),
                word(),
            ),
            (
                0i32..13,
                proptest::collection::vec(0i32..14, 0..2),
                word(),
                word(),
            ),
            (0u32..3, 0u32..3, any::<u32>(), 0u64..100_000, word()),
        )
            .prop_map(
                |(
                    (id, array, task),
                    (spec, name, part),
                    (state, flags, reason, account),
                    (uid, nodes, prio, run, nl),
                )| {
                    JobInfo {
                        job_id: id,
                        array_job_id: array,
                        array_task_id: task,
                        array_task_spec: spec.into(),
                        name: name.into(),
                        partition: part.into(),
                        user_id: uid,
                        user_name: if uid == 0 {
                            String::new()
                        } else {
                            format!("u{uid}")
                        },
                        state,
                        state_flags: flags,
                        state_reason: reason.into(),
                        account: account.into(),
                        priority: prio,
                        num_nodes: nodes,
                        run_time_secs: run,
                        nodes: nl.into(),
                        memory: Some(slurm_proto::v1::job_info::Memory::MemPerNodeMb(
                            u64::from(prio % 3) * 1536,
                        )),
                        min_tmp_disk_mb: u64::from(nodes) * 1024,
                        ..JobInfo::default()
                    }
                },
            )
    }

    fn any_args() -> impl Strategy<Value = Vec<String>> {
        let pick = |v: Vec<&'static str>| prop::sample::select(v).prop_map(str::to_owned);
        proptest::collection::vec(
            prop_oneof![
                pick(vec![
                    "-h",
                    "-r",
                    "-l",
                    "--start",
                    "-a",
                    "-P",
                    "--array-unique",
                    "--noconvert"
                ]),
                pick(vec!["-t", "-S", "-o", "-u", "-n", "-p", "-A", "-j"]).prop_flat_map(
                    move |opt| {
                        let values = match opt.as_str() {
                            "-t" => vec!["PD", "R,CD", "all", "CG"],
                            "-S" => vec!["i", "-j,P", "-t,u,-M", "p,D", "N,-i"],
                            "-o" => vec![
                                "%i %K %j",
                                "%.4i|%-6j|%.3P|%R|%t",
                                "%A %F %u %U %T %Q",
                                "%i %P %m %d %r",
                            ],
                            "-u" => vec!["1", "2,1"],
                            "-n" => vec!["a,zeta"],
                            "-p" => vec!["debug", "short,zeta"],
                            "-A" => vec!["a"],
                            _ => vec!["5", "7,9", "12_1"],
                        };
                        prop::sample::select(values).prop_map(move |v| format!("{opt}{v}"))
                    }
                ),
            ],
            0..4,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The report from the encoded reply, one reused record at a time,
        /// is the report of the old path: every job decoded, filtered,
        /// sorted, then rendered.
        #[test]
        fn streamed_report_matches_the_whole_reply_path(
            jobs in proptest::collection::vec(any_job(), 0..30),
            args in any_args(),
        ) {
            let Ok(opts) = parse_options(&args, &|_| None) else { return Ok(()) };
            let Ok(plan) = Plan::new(&opts) else { return Ok(()) };
            let ctx = Ctx::utc(1_700_000_000);
            let reply = GetJobsReply { jobs: jobs.clone(), last_update: 0, unchanged: false };
            let got = plan.render_reply(&reply.encode_to_vec(), &ctx);
            let want = if plan.single_id && jobs.is_empty() {
                Err(ReportError::Reply(ErrorCode::InvalidJobId))
            } else {
                let picked: Vec<JobInfo> = jobs
                    .iter()
                    .cloned()
                    .filter_map(|mut j| plan.keep_picked_tasks(&mut j).then_some(j))
                    .collect();
                let all = if plan.array { expand_arrays(&picked) } else { picked };
                let admitted: Vec<(u32, JobInfo)> =
                    all.into_iter().filter(|j| plan.admits(j)).map(|j| (0, j)).collect();
                let combined = if plan.combines_tasks() {
                    combine_pending_tasks(admitted)
                } else {
                    admitted
                };
                let mut rows = Vec::new();
                for (_, job) in combined {
                    if !plan.priority {
                        rows.push(job);
                        continue;
                    }
                    for name in job.partition.split(',').filter(|p| !p.is_empty()) {
                        if plan.partition_listed(name) {
                            rows.push(JobInfo { partition: name.to_owned(), ..job.clone() });
                        }
                    }
                }
                let mut shown: Vec<&JobInfo> = rows.iter().collect();
                render::sort_jobs(&mut shown, &plan.sort);
                Ok(render::render_in(&shown, &plan.items, plan.header, false, &ctx, plan.units))
            };
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(plan.render(&jobs, &ctx), want.clone());
            // In parts, as StreamJobs sends it: the report of the whole.
            let mut parts = one_job_parts(jobs).into_iter();
            let streamed = plan.render_parts(&mut parts, &ctx, &Tiers::default());
            prop_assert_eq!(streamed, want);
        }
    }

    #[test]
    fn group_names_come_from_the_local_group_database() {
        // squeue -o "%i %g": the controller sends only the gid.
        let mut plan = Plan::new(&parse(&["-o", "%i %g", "-S", "i"]).unwrap()).unwrap();
        plan.group_name = |gid| (gid == 50).then(|| "staff".to_owned());
        let job = |job_id, group_id, group_name: &str| JobInfo {
            job_id,
            group_id,
            group_name: group_name.to_owned(),
            state: slurm_proto::v1::JobState::Pending as i32,
            ..JobInfo::default()
        };
        let reply = GetJobsReply {
            jobs: vec![job(1, 50, ""), job(2, 51, ""), job(3, 50, "given")],
            last_update: 0,
            unchanged: false,
        };
        let out = plan.render_reply(&reply.encode_to_vec(), &Ctx::utc(0));
        assert_eq!(out, Ok("JOBID GROUP\n1 staff\n2 51\n3 given\n".to_owned()));
    }

    /// Where both streams go to one place, a `b` sort key is noted after
    /// the header and before the rows, as Slurm prints it.
    #[test]
    fn sort_notes_come_between_header_and_rows() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let text = "HEAD\nrow1\nrow2\n";
        let note = "squeue: Invalid sort specification: b\n";
        for (header, notes, want) in [
            (true, 1, format!("HEAD\n{note}row1\nrow2\n")),
            (true, 2, format!("HEAD\n{note}{note}row1\nrow2\n")),
            (false, 1, format!("{note}HEAD\nrow1\nrow2\n")),
            (true, 0, text.to_owned()),
        ] {
            let sink = Shared::default();
            let mut stdout = std::io::BufWriter::new(sink.clone());
            let mut stderr = sink.clone();
            {
                let mut out = Output::new(&mut stdout, &mut stderr);
                assert_eq!(print_sorted(&mut out, text, header, notes), 0);
            }
            stdout.flush().unwrap();
            let got = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
            assert_eq!(got, want, "header={header} notes={notes}");
        }
    }

    #[test]
    fn a_reply_that_cannot_be_read_is_an_internal_error() {
        let plan = Plan::new(&parse(&[]).unwrap()).unwrap();
        let ctx = Ctx::system(0);
        assert_eq!(
            plan.render_reply(&[0x0a, 0x05, 0x08], &ctx),
            Err(ErrorCode::Internal.into())
        );
        for dump in ["--json", "--yaml"] {
            let plan = Plan::new(&parse(&[dump]).unwrap()).unwrap();
            assert_eq!(
                plan.render_reply(&[0x0a, 0x05, 0x08], &ctx),
                Err(ErrorCode::Internal.into())
            );
        }
    }
}
