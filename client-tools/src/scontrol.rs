//! `scontrol`: view and change the cluster's state, and the hostlist helpers.
//!
//! The work is split in three steps so each can be tested alone and so new
//! commands slot in without touching the others:
//!
//! 1. [`parse_args`] reads the options the way Slurm's `scontrol` does (GNU
//!    `getopt_long`: options may come anywhere, long names may be shortened
//!    while unambiguous, `--version` and `--help` act as soon as they are
//!    read) and leaves the command words.
//! 2. [`Command::parse`] turns the words into a [`Command`]. Keywords and
//!    `show` entities are matched without regard to case and may be
//!    abbreviated down to Slurm's minimum length (`show hostn`, `sho`).
//! 3. [`execute`] runs the command against an [`Output`] and returns the exit
//!    status.
//!
//! Without a command, scontrol reads commands from standard input, one per
//! line, prompting `scontrol: ` only when the input is a terminal; the
//! switches `all`, `details`, `hide`, `oneliner`, `quiet` and `verbose`
//! change the options of the commands that follow, `!!` repeats the last
//! line, and `exit`, `quit` or the end of input close the session. A failed
//! line does not end it.
//!
//! The hostlist commands need no controller and are complete, including
//! Slurm's exit statuses: an invalid expression exits 0 for `hostnames` but
//! 1 for `hostlist`. Commands that need slurmctld are recognised and refused
//! with a clear message until the controller client exists.

use std::ffi::OsString;
use std::io::{self, BufRead, IsTerminal, Write};

use slurm_common::hostlist::{self, HostlistError};

use crate::opts::{self, Getopt, GetoptError, HasArg, LongOpt, Ordering, ShortOpt};
use crate::output::{version_line, Output};

pub mod admin;
pub mod controller;
pub mod errnum;
pub mod local;
pub mod resize;
pub mod slurmd;
pub mod steps;
pub mod suspend;
mod write_config;

use admin::{AdminCommand, AdminKeyword};
use controller::{CtlCommand, CtlError};
use steps::StepCommand;

/// Reads an environment variable; a parameter so tests need not touch the
/// process environment.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// Runs `scontrol` with the process's arguments (the program name first),
/// standard streams and environment, and returns the exit status.
pub fn run(args: Vec<OsString>) -> i32 {
    let prompt = io::stdin().is_terminal();
    let env = |name: &str| std::env::var_os(name);
    crate::output::with_std_streams(|input, stdout, stderr| {
        run_io(&args, &env, input, prompt, stdout, stderr)
    })
}

/// [`run`] with the environment and both output streams handed in, and no
/// input: without a command, the interactive session ends at once.
pub fn run_with(
    args: &[OsString],
    env: EnvLookup<'_>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    run_io(args, env, &mut io::empty(), false, stdout, stderr)
}

/// [`run`] with everything handed in: `input` feeds the interactive mode,
/// and `prompt` says whether it is a terminal (then `scontrol: ` is
/// printed before each command is read).
pub fn run_io(
    args: &[OsString],
    env: EnvLookup<'_>,
    input: &mut dyn BufRead,
    prompt: bool,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let called_as = opts::called_as(args, "scontrol");
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = Output::new(&mut *stdout, &mut *stderr);
    let parsed = parse_args(&args);
    // `-M` is checked as the options are read, before any command.
    if let Ok(Invocation::Run { options, .. }) = &parsed {
        if let Some(code) = refuse_clusters(options, env, &mut out) {
            return finish(code, &mut out);
        }
    }
    let code = match parsed {
        Ok(Invocation::Version) => print(&mut out, &version_line()),
        Ok(Invocation::Help) => print(&mut out, USAGE.strip_suffix('\n').unwrap_or(USAGE)),
        Ok(Invocation::Run { options, words }) if words.is_empty() => {
            return interactive(options, env, input, prompt, stdout, stderr);
        }
        Ok(Invocation::Run { options, words }) => run_words(&words, &options, env, &mut out),
        Err(e) => {
            opts::report(&mut out, "scontrol", &called_as, &e);
            1
        }
    };
    finish(code, &mut out)
}

/// The refusal of `-M` (see [`crate::client::clusters_refusal`]), printed;
/// Some(status) when scontrol must stop.
fn refuse_clusters(options: &Options, env: EnvLookup<'_>, out: &mut Output<'_>) -> Option<i32> {
    let names = options.clusters.as_deref()?;
    // A configuration that cannot be read is reported by the command.
    let config = crate::client::ClientConfig::load_with(env).ok()?;
    crate::client::refused_clusters(out, "scontrol", Some(names), &config.conf).then_some(1)
}

/// Flushes the output; a write failure makes the status 1.
fn finish(code: i32, out: &mut Output<'_>) -> i32 {
    match out.flush() {
        Ok(()) => code,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            1
        }
    }
}

/// Parses and runs one command line and gives its exit status, printing
/// refusals as Slurm words them.
fn run_words(words: &[String], options: &Options, env: EnvLookup<'_>, out: &mut Output<'_>) -> i32 {
    match Command::parse(words) {
        Ok(command) => execute_with(&command, options, env, out),
        Err(e) => {
            report_command_error(&e, options.quiet, out);
            1
        }
    }
}

fn report_command_error(e: &CommandError, quiet: bool, out: &mut Output<'_>) {
    match e {
        CommandError::VersionTooManyArgs => {
            // Slurm prints the version before complaining.
            let _ = print(out, &version_line());
            out.error_line(&e.to_string());
        }
        // `-Q` silences what Slurm's quiet flag silences (see CtlError).
        CommandError::Controller(c) => {
            for line in c.lines_said(quiet) {
                out.error_line(line);
            }
        }
        other => out.error_line(&other.to_string()),
    }
}

// ---------------------------------------------------------------------------
// Interactive mode

/// Splits an input line into words as scontrol does: blanks separate words
/// except inside single or double quotes, and the quotes stay in the word
/// (`Comment="a b"` is one word, quotes included).
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let (mut double, mut single) = (false, false);
    for c in line.chars() {
        if !in_word {
            if c.is_whitespace() {
                continue;
            }
            in_word = true;
            double = false;
            single = false;
        } else if c.is_whitespace() && !double && !single {
            words.push(std::mem::take(&mut word));
            in_word = false;
            continue;
        }
        match c {
            '"' => double = !double,
            '\'' => single = !single,
            _ => {}
        }
        word.push(c);
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The state of an interactive session: the options its toggles change
/// (`oneliner`, `details`, `all`, `hide`, `quiet`, `verbose`), the last
/// line for `!!`, and the exit status so far. As in Slurm the status is
/// sticky: once a command has failed (or a line was empty), the session
/// ends with 1 whatever follows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    pub options: Options,
    pub exit_code: i32,
    last_line: Option<String>,
}

impl Session {
    pub fn new(options: Options) -> Session {
        Session {
            options,
            ..Session::default()
        }
    }

    /// Runs one input line (without its newline); `false` when the session
    /// is over (`exit`, `quit`).
    pub fn line(&mut self, text: &str, env: EnvLookup<'_>, out: &mut Output<'_>) -> bool {
        let text = if text.trim() == "!!" {
            self.last_line.clone().unwrap_or_default()
        } else {
            self.last_line = Some(text.to_owned());
            text.to_owned()
        };
        if text.trim_start().starts_with('#') {
            return true;
        }
        let words = split_words(&text);
        let Some(tag) = words.first() else {
            // Slurm counts an empty line as a failed command.
            self.exit_code = 1;
            return true;
        };
        if let Some(Keyword::Exit | Keyword::Quit) = Keyword::parse(tag) {
            if words.len() > 1 {
                out.error_line(&format!("too many arguments for keyword:{tag}"));
                self.exit_code = 1;
            }
            return false;
        }
        let code = match Command::parse(&words) {
            Ok(Command::Toggle(toggle)) => {
                toggle.apply(&mut self.options);
                0
            }
            Ok(command) => execute_with(&command, &self.options, env, out),
            Err(e) => {
                report_command_error(&e, self.options.quiet, out);
                1
            }
        };
        self.exit_code = self.exit_code.max(code);
        true
    }
}

/// Reads commands from `input`, one per line, until `exit`, `quit` or the
/// end of input, and gives the session's exit status. With `prompt` (the
/// input is a terminal) `scontrol: ` is printed before each line is read,
/// and a newline when the input ends, as Slurm does.
pub fn interactive(
    options: Options,
    env: EnvLookup<'_>,
    input: &mut dyn BufRead,
    prompt: bool,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let mut session = Session::new(options);
    let mut buf = Vec::new();
    loop {
        if prompt {
            let _ = stdout
                .write_all(b"scontrol: ")
                .and_then(|()| stdout.flush());
        }
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => {
                if prompt {
                    let _ = stdout.write_all(b"\n");
                }
                break;
            }
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        let mut out = Output::new(&mut *stdout, &mut *stderr);
        let go_on = session.line(text, env, &mut out);
        let closed = out.stdout_closed();
        if out.flush().is_err() {
            session.exit_code = 1;
            break;
        }
        if !go_on || closed {
            break;
        }
    }
    session.exit_code
}

/// Prints one line; 1 if standard output is unusable.
fn print(out: &mut Output<'_>, text: &str) -> i32 {
    match out.line(text) {
        Ok(()) => 0,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            1
        }
    }
}

/// `scontrol help`, `--help` and `--usage`: Slurm 22.05's text.
const USAGE: &str = include_str!("help/scontrol.txt");

// ---------------------------------------------------------------------------
// Options

/// Options accepted before or between the command words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub all: bool,
    pub details: u32,
    pub federation: bool,
    pub future: bool,
    pub hide: bool,
    pub local: bool,
    pub oneliner: bool,
    pub quiet: bool,
    pub sibling: bool,
    pub verbose: u32,
    pub clusters: Option<String>,
    pub uid: Option<String>,
}

/// What the arguments ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// `-V`/`--version` was read.
    Version,
    /// `-h`/`--help`/`--usage` was read.
    Help,
    /// A command (no words means interactive mode).
    Run {
        options: Options,
        words: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opt {
    All,
    Clusters,
    Details,
    Federation,
    Future,
    Help,
    Hide,
    Local,
    Oneliner,
    Quiet,
    Sibling,
    Uid,
    Verbose,
    Version,
}

const fn short(letter: char, has_arg: HasArg, key: Opt) -> ShortOpt<Opt> {
    ShortOpt {
        letter,
        has_arg,
        key,
    }
}

const fn long(name: &'static str, has_arg: HasArg, key: Opt) -> LongOpt<Opt> {
    LongOpt { name, has_arg, key }
}

const SHORT_OPTIONS: &[ShortOpt<Opt>] = &[
    short('a', HasArg::No, Opt::All),
    short('d', HasArg::No, Opt::Details),
    short('F', HasArg::No, Opt::Future),
    short('h', HasArg::No, Opt::Help),
    short('M', HasArg::Required, Opt::Clusters),
    short('o', HasArg::No, Opt::Oneliner),
    short('Q', HasArg::No, Opt::Quiet),
    short('u', HasArg::Required, Opt::Uid),
    short('v', HasArg::No, Opt::Verbose),
    short('V', HasArg::No, Opt::Version),
];

/// scontrol's long options, in the order Slurm declares them (the order
/// matters for the "ambiguous" message).
const LONG_OPTIONS: &[LongOpt<Opt>] = &[
    long("all", HasArg::No, Opt::All),
    long("cluster", HasArg::Required, Opt::Clusters),
    long("clusters", HasArg::Required, Opt::Clusters),
    long("details", HasArg::No, Opt::Details),
    long("federation", HasArg::No, Opt::Federation),
    long("future", HasArg::No, Opt::Future),
    long("help", HasArg::No, Opt::Help),
    long("hide", HasArg::No, Opt::Hide),
    long("local", HasArg::No, Opt::Local),
    long("oneliner", HasArg::No, Opt::Oneliner),
    long("quiet", HasArg::No, Opt::Quiet),
    long("sibling", HasArg::No, Opt::Sibling),
    long("uid", HasArg::Required, Opt::Uid),
    long("usage", HasArg::No, Opt::Help),
    long("verbose", HasArg::No, Opt::Verbose),
    long("version", HasArg::No, Opt::Version),
];

/// Words that end option reading: Slurm stops before `setdebugflags` (any
/// word starting with `setdebug`, in any case) so `-Backfill` stays a flag
/// name.
fn ends_options(word: &str) -> bool {
    word.get(..8)
        .is_some_and(|w| w.eq_ignore_ascii_case("setdebug"))
}

/// Reads options and command words. Options may appear anywhere before a
/// `--`; `--version` and `--help` take effect the moment they are read.
pub fn parse_args(args: &[String]) -> Result<Invocation, GetoptError> {
    let mut options = Options::default();
    let stop = ends_options;
    let mut getopt =
        Getopt::new(args, SHORT_OPTIONS, LONG_OPTIONS, Ordering::Permute).stop_before(&stop);
    for found in &mut getopt {
        let found = found?;
        if let Some(done) = apply(&mut options, found.key, found.value) {
            return Ok(done);
        }
    }
    Ok(Invocation::Run {
        options,
        words: getopt.into_operands(),
    })
}

/// Records one option; returns the final answer for `--version`/`--help`.
fn apply(options: &mut Options, opt: Opt, value: Option<String>) -> Option<Invocation> {
    match opt {
        Opt::All => options.all = true,
        Opt::Clusters => options.clusters = value,
        Opt::Details => options.details += 1,
        Opt::Federation => options.federation = true,
        Opt::Future => options.future = true,
        Opt::Help => return Some(Invocation::Help),
        Opt::Hide => {
            options.hide = true;
            options.all = false;
            options.details = 0;
        }
        Opt::Local => options.local = true,
        Opt::Oneliner => options.oneliner = true,
        Opt::Quiet => options.quiet = true,
        Opt::Sibling => options.sibling = true,
        Opt::Uid => options.uid = value,
        Opt::Verbose => {
            options.quiet = false;
            options.verbose += 1;
        }
        Opt::Version => return Some(Invocation::Version),
    }
    None
}

// ---------------------------------------------------------------------------
// Commands

/// Matches `tag` against `name` as Slurm does: ignoring case, at least `min`
/// characters, and no longer than the name.
fn abbreviates(tag: &str, name: &str, min: usize) -> bool {
    tag.len() >= min
        && tag.len() <= name.len()
        && name.as_bytes()[..tag.len()].eq_ignore_ascii_case(tag.as_bytes())
}

/// The first word of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    Exit,
    Help,
    Quit,
    Show,
    Version,
    Ping,
    Hold,
    Uhold,
    Release,
    Requeue,
    RequeueHold,
    Update,
    /// `create PartitionName=...`.
    Create,
    /// `delete PartitionName=...`.
    Delete,
    Reconfigure,
    /// `takeover [INDEX]`: a backup controller takes control.
    Takeover,
    /// `suspend JOB_LIST...`, `resume JOB_LIST...`, `top JOB_LIST`.
    Suspend,
    Resume,
    Top,
    /// `errnumstr`, `shutdown`, `completing`, `write`, `setdebug`,
    /// `setdebugflags` (see [`admin`]).
    Admin(AdminKeyword),
    /// A switch of the interactive mode.
    Toggle(Toggle),
    /// `listpids`, `pidinfo`, `notify`, `wait_job` (see [`steps`]).
    ListPids,
    PidInfo,
    Notify,
    WaitJob,
    /// A keyword Slurm knows that needs the controller (not served yet).
    NeedsController(&'static str),
}

/// The switches of the interactive mode: each changes an option for the
/// commands that follow (on the command line they change nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    /// `all`: also show hidden partitions (`-a`).
    All,
    /// `details`: show more details (`-d`).
    Details,
    /// `hide`: undo `all` and `details`.
    Hide,
    /// `oneliner`: one record per line (`-o`).
    Oneliner,
    /// `quiet`: print only errors (`-Q`).
    Quiet,
    /// `verbose`: more messages (`-v`).
    Verbose,
}

impl Toggle {
    pub const fn name(self) -> &'static str {
        match self {
            Toggle::All => "all",
            Toggle::Details => "details",
            Toggle::Hide => "hide",
            Toggle::Oneliner => "oneliner",
            Toggle::Quiet => "quiet",
            Toggle::Verbose => "verbose",
        }
    }

    /// Changes `options` as Slurm's switch does.
    pub fn apply(self, options: &mut Options) {
        match self {
            Toggle::All => options.all = true,
            Toggle::Details => options.details = 1,
            Toggle::Hide => {
                options.hide = true;
                options.all = false;
                options.details = 0;
            }
            Toggle::Oneliner => options.oneliner = true,
            Toggle::Quiet => {
                options.quiet = true;
                options.verbose = 0;
            }
            Toggle::Verbose => {
                options.quiet = false;
                options.verbose = options.verbose.max(1);
            }
        }
    }
}

/// Keywords with the shortest abbreviation Slurm 22.05 accepts, checked in
/// this order. Those served here were measured; the others are matched by
/// their full name until they are implemented.
const KEYWORDS: &[(&str, usize, Keyword)] = &[
    ("exit", 2, Keyword::Exit),
    ("help", 2, Keyword::Help),
    ("quit", 4, Keyword::Quit),
    ("show", 3, Keyword::Show),
    ("version", 4, Keyword::Version),
    ("ping", 3, Keyword::Ping),
    ("hold", 4, Keyword::Hold),
    ("uhold", 5, Keyword::Uhold),
    ("release", 3, Keyword::Release),
    ("requeuehold", 11, Keyword::RequeueHold),
    ("requeue", 3, Keyword::Requeue),
    ("reconfigure", 3, Keyword::Reconfigure),
    ("takeover", 8, Keyword::Takeover),
    ("update", 1, Keyword::Update),
    ("create", 2, Keyword::Create),
    ("delete", 3, Keyword::Delete),
    ("errnumstr", 2, Keyword::Admin(AdminKeyword::Errnumstr)),
    ("completing", 2, Keyword::Admin(AdminKeyword::Completing)),
    ("shutdown", 8, Keyword::Admin(AdminKeyword::Shutdown)),
    ("abort", 5, Keyword::Admin(AdminKeyword::Abort)),
    ("write", 5, Keyword::Admin(AdminKeyword::Write)),
    (
        "setdebugflags",
        9,
        Keyword::Admin(AdminKeyword::SetDebugFlags),
    ),
    ("setdebug", 2, Keyword::Admin(AdminKeyword::SetDebug)),
    (
        "schedloglevel",
        13,
        Keyword::Admin(AdminKeyword::SchedLogLevel),
    ),
    ("reboot", 6, Keyword::Admin(AdminKeyword::Reboot)),
    (
        "cancel_reboot",
        13,
        Keyword::Admin(AdminKeyword::CancelReboot),
    ),
    ("token", 5, Keyword::Admin(AdminKeyword::Token)),
    ("suspend", 2, Keyword::Suspend),
    ("resume", 3, Keyword::Resume),
    ("top", 3, Keyword::Top),
    ("listpids", 1, Keyword::ListPids),
    ("pidinfo", 3, Keyword::PidInfo),
    ("notify", 1, Keyword::Notify),
    ("wait_job", 2, Keyword::WaitJob),
    ("all", 2, Keyword::Toggle(Toggle::All)),
    ("details", 1, Keyword::Toggle(Toggle::Details)),
    ("hide", 2, Keyword::Toggle(Toggle::Hide)),
    ("oneliner", 1, Keyword::Toggle(Toggle::Oneliner)),
    ("quiet", 4, Keyword::Toggle(Toggle::Quiet)),
    ("verbose", 4, Keyword::Toggle(Toggle::Verbose)),
];

const CONTROLLER_KEYWORDS: &[&str] = &["cluster", "fsdampeningfactor", "holdu"];

impl Keyword {
    pub fn parse(tag: &str) -> Option<Keyword> {
        KEYWORDS
            .iter()
            .find(|(name, min, _)| abbreviates(tag, name, *min))
            .map(|&(_, _, k)| k)
            .or_else(|| {
                CONTROLLER_KEYWORDS
                    .iter()
                    .find(|name| name.eq_ignore_ascii_case(tag))
                    .map(|&name| Keyword::NeedsController(name))
            })
    }
}

/// What `show` can display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    Hostnames,
    Hostlist,
    HostlistSorted,
    Jobs,
    Nodes,
    Partitions,
    Config,
    Licenses,
    /// `show daemons`, `show aliases`: read from slurm.conf (see [`admin`]).
    Daemons,
    Aliases,
    /// An entity that lives in the controller (not served yet).
    NeedsController(&'static str),
}

/// `show` entities with the shortest abbreviation Slurm 22.05 accepts,
/// checked in this order (`show a` is `aliases`).
const ENTITIES: &[(&str, usize, Entity)] = &[
    ("aliases", 1, Entity::Aliases),
    ("assoc_mgr", 2, Entity::NeedsController("assoc_mgr")),
    ("bbstat", 2, Entity::NeedsController("bbstat")),
    ("burstbuffer", 2, Entity::NeedsController("burstbuffer")),
    ("config", 1, Entity::Config),
    ("daemons", 1, Entity::Daemons),
    ("dwstat", 2, Entity::NeedsController("dwstat")),
    ("federation", 1, Entity::NeedsController("federation")),
    ("frontend", 2, Entity::NeedsController("frontend")),
    ("hostnames", 5, Entity::Hostnames),
    ("hostlistsorted", 9, Entity::HostlistSorted),
    ("hostlist", 5, Entity::Hostlist),
    ("jobs", 1, Entity::Jobs),
    ("jobid", 4, Entity::Jobs),
    ("licenses", 2, Entity::Licenses),
    ("nodes", 1, Entity::Nodes),
    ("partitions", 2, Entity::Partitions),
    ("partitionname", 10, Entity::Partitions),
    ("reservations", 1, Entity::NeedsController("reservation")),
    ("slurmd", 2, Entity::NeedsController("slurmd")),
    ("steps", 2, Entity::NeedsController("step")),
    ("topology", 1, Entity::NeedsController("topology")),
];

impl Entity {
    pub fn parse(tag: &str) -> Option<Entity> {
        ENTITIES
            .iter()
            .find(|(name, min, _)| abbreviates(tag, name, *min))
            .map(|&(_, _, e)| e)
    }
}

/// One parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// No words: Slurm reads commands from standard input.
    Interactive,
    Exit,
    Help,
    Version,
    /// `show hostnames [EXPR]`; without EXPR, `$SLURM_NODELIST`.
    ShowHostnames {
        expr: Option<String>,
    },
    /// `show hostlist|hostlistsorted ARG`; ARG is an expression or, when it
    /// starts with `/`, a file of host names. Slurm needs ARG.
    ShowHostlist {
        arg: Option<String>,
        sorted: bool,
    },
    /// `show ENTITY [ID]` for an entity held by the controller.
    Show {
        entity: &'static str,
        id: Option<String>,
    },
    /// Any other keyword Slurm knows.
    NeedsController {
        keyword: &'static str,
    },
    /// A command served by slurmctld.
    Controller(Box<CtlCommand>),
    /// A command of [`admin`].
    Admin(AdminCommand),
    /// A command of [`steps`].
    Step(StepCommand),
    /// `show slurmd [WORD]`: the word is ignored (see [`slurmd`]).
    ShowSlurmd,
    /// A switch of the interactive mode.
    Toggle(Toggle),
}

impl CommandError {
    /// The refusal naming the keyword as it was typed (`too few arguments
    /// for keyword:wa`), as Slurm names it in its argument-count messages.
    fn naming(self, tag: &str) -> CommandError {
        match self {
            CommandError::TooFewArguments(_) => CommandError::TooFewArguments(tag.to_owned()),
            CommandError::TooManyArguments(_) => CommandError::TooManyArguments(tag.to_owned()),
            CommandError::TooManyArgumentsFor(_) => {
                CommandError::TooManyArgumentsFor(tag.to_owned())
            }
            CommandError::TooFewArgumentsFor(_) => CommandError::TooFewArgumentsFor(tag.to_owned()),
            other => other,
        }
    }
}

/// A command line Slurm refuses, worded as Slurm words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("invalid keyword: {0}")]
    InvalidKeyword(String),
    #[error("too few arguments for keyword:{0}")]
    TooFewArguments(String),
    #[error("too many arguments for keyword:{0}")]
    TooManyArguments(String),
    /// The wording Slurm uses for `verbose`.
    #[error("too many arguments for {0} keyword")]
    TooManyArgumentsFor(String),
    /// The wording Slurm uses for `create`, `delete` and `update`.
    #[error("too few arguments for {0} keyword")]
    TooFewArgumentsFor(String),
    /// Slurm ends this message with a space.
    #[error("invalid entity:{0} for keyword:show ")]
    InvalidEntity(String),
    /// `pidinfo` names the keyword as typed.
    #[error("missing argument for keyword:{0}")]
    MissingArgument(String),
    #[error("too many arguments for version keyword")]
    VersionTooManyArgs,
    /// A controller command refused before sending (one line each).
    #[error("{0}")]
    Controller(CtlError),
}

impl Command {
    pub fn parse(words: &[String]) -> Result<Command, CommandError> {
        let Some((tag, args)) = words.split_first() else {
            return Ok(Command::Interactive);
        };
        let keyword =
            Keyword::parse(tag).ok_or_else(|| CommandError::InvalidKeyword(tag.clone()))?;
        Self::parse_keyword(keyword, tag, args).map_err(|e| e.naming(tag))
    }

    fn parse_keyword(
        keyword: Keyword,
        tag: &str,
        args: &[String],
    ) -> Result<Command, CommandError> {
        match keyword {
            Keyword::Exit | Keyword::Quit | Keyword::Help if !args.is_empty() => {
                let name = match keyword {
                    Keyword::Exit => "exit",
                    Keyword::Quit => "quit",
                    _ => "help",
                };
                Err(CommandError::TooManyArguments(name.into()))
            }
            Keyword::Exit | Keyword::Quit => Ok(Command::Exit),
            Keyword::Help => Ok(Command::Help),
            Keyword::Version if !args.is_empty() => Err(CommandError::VersionTooManyArgs),
            Keyword::Version => Ok(Command::Version),
            Keyword::NeedsController(keyword) => Ok(Command::NeedsController { keyword }),
            Keyword::Toggle(Toggle::Verbose) if !args.is_empty() => {
                Err(CommandError::TooManyArgumentsFor("verbose".into()))
            }
            // Slurm reads no argument of `all` and `hide`, so it refuses none.
            Keyword::Toggle(toggle @ (Toggle::All | Toggle::Hide)) => Ok(Command::Toggle(toggle)),
            Keyword::Toggle(toggle) if !args.is_empty() => {
                Err(CommandError::TooManyArguments(toggle.name().into()))
            }
            Keyword::Toggle(toggle) => Ok(Command::Toggle(toggle)),
            Keyword::Admin(admin) => admin::parse(admin, tag, args)
                .map(Command::Admin)
                .map_err(CommandError::Controller),
            Keyword::Show => Self::parse_show(args),
            Keyword::ListPids => match args {
                [_, _, _, ..] => Err(CommandError::TooManyArguments("listpids".into())),
                _ => Ok(Command::Step(StepCommand::ListPids {
                    job: args.first().cloned(),
                    node: args.get(1).cloned(),
                })),
            },
            Keyword::PidInfo => match args {
                [] => Err(CommandError::MissingArgument(tag.to_owned())),
                [word] => Ok(Command::Step(StepCommand::PidInfo { word: word.clone() })),
                _ => Err(CommandError::TooManyArguments("pidinfo".into())),
            },
            Keyword::WaitJob => match args {
                [] => Err(CommandError::TooFewArguments("wait_job".into())),
                [word] => Ok(Command::Step(StepCommand::WaitJob { word: word.clone() })),
                _ => Err(CommandError::TooManyArguments("wait_job".into())),
            },
            Keyword::Notify => match args {
                [word, message @ ..] if !message.is_empty() => {
                    Ok(Command::Step(StepCommand::Notify {
                        word: word.clone(),
                        message: message.join(" "),
                    }))
                }
                _ => Err(CommandError::TooFewArguments("notify".into())),
            },
            // Slurm lets one word follow `reconfigure` (and ignores it).
            Keyword::Ping if !args.is_empty() => Err(CommandError::TooManyArguments("ping".into())),
            Keyword::Reconfigure if args.len() > 1 => {
                Err(CommandError::TooManyArguments("reconfigure".into()))
            }
            Keyword::Ping => Ok(Command::Controller(Box::new(CtlCommand::Ping))),
            Keyword::Reconfigure => Ok(Command::Controller(Box::new(CtlCommand::Reconfigure))),
            Keyword::Hold
            | Keyword::Uhold
            | Keyword::Release
            | Keyword::Requeue
            | Keyword::RequeueHold
                if args.is_empty() =>
            {
                Err(CommandError::TooFewArguments(
                    match keyword {
                        Keyword::Hold => "hold",
                        Keyword::Uhold => "uhold",
                        Keyword::Release => "release",
                        Keyword::Requeue => "requeue",
                        _ => "requeuehold",
                    }
                    .into(),
                ))
            }
            Keyword::Hold | Keyword::Uhold => {
                let words = controller::parse_job_words(args);
                Ok(Command::Controller(Box::new(CtlCommand::Hold {
                    words,
                    user: keyword == Keyword::Uhold,
                })))
            }
            Keyword::Release => {
                let words = controller::parse_job_words(args);
                Ok(Command::Controller(Box::new(CtlCommand::Release { words })))
            }
            Keyword::Requeue | Keyword::RequeueHold => {
                let words = controller::parse_job_words(args);
                Ok(Command::Controller(Box::new(CtlCommand::Requeue {
                    words,
                    hold: keyword == Keyword::RequeueHold,
                })))
            }
            Keyword::Suspend | Keyword::Resume => {
                suspend::parse_suspend(tag, keyword == Keyword::Resume, args)
                    .map(|c| Command::Controller(Box::new(c)))
                    .map_err(CommandError::Controller)
            }
            Keyword::Top => suspend::parse_top(tag, args)
                .map(|c| Command::Controller(Box::new(c)))
                .map_err(CommandError::Controller),
            Keyword::Takeover => controller::parse_takeover(args)
                .map(|c| Command::Controller(Box::new(c)))
                .map_err(CommandError::Controller),
            Keyword::Create if args.is_empty() => {
                Err(CommandError::TooFewArgumentsFor("create".into()))
            }
            Keyword::Create => controller::parse_create(args)
                .map(|c| Command::Controller(Box::new(c)))
                .map_err(CommandError::Controller),
            Keyword::Delete if args.is_empty() => {
                Err(CommandError::TooFewArgumentsFor("delete".into()))
            }
            Keyword::Delete => controller::parse_delete(args)
                .map(|c| Command::Controller(Box::new(c)))
                .map_err(CommandError::Controller),
            Keyword::Update if args.is_empty() => {
                Err(CommandError::TooFewArgumentsFor("update".into()))
            }
            Keyword::Update => controller::parse_update(args, slurm_common::auth::unix_now())
                .map(|c| Command::Controller(Box::new(c)))
                .map_err(CommandError::Controller),
        }
    }

    fn parse_show(args: &[String]) -> Result<Command, CommandError> {
        // `show ENTITY ID` or `show ENTITY=ID` (a word after the latter is
        // ignored, as Slurm ignores it).
        // `show assoc_mgr` takes any number of KEY=VALUE words.
        if let [word, rest @ ..] = args {
            if matches!(
                Entity::parse(word),
                Some(Entity::NeedsController("assoc_mgr"))
            ) {
                let words = (!rest.is_empty()).then(|| rest.join(" "));
                return Ok(Command::Controller(Box::new(CtlCommand::ShowNone {
                    entity: "assoc_mgr",
                    name: words,
                })));
            }
        }
        let (word, tag, id) = match args {
            [] => return Err(CommandError::TooFewArguments("show".into())),
            [_, _, _, ..] => return Err(CommandError::TooManyArguments("show".into())),
            [word, rest @ ..] => match word.split_once('=') {
                Some((tag, id)) => (word, tag, Some(id.to_owned())),
                None => (word, word.as_str(), rest.first().cloned()),
            },
        };
        match Entity::parse(tag).ok_or_else(|| CommandError::InvalidEntity(word.clone()))? {
            Entity::Hostnames => Ok(Command::ShowHostnames { expr: id }),
            Entity::Hostlist => Ok(Command::ShowHostlist {
                arg: id,
                sorted: false,
            }),
            Entity::HostlistSorted => Ok(Command::ShowHostlist {
                arg: id,
                sorted: true,
            }),
            Entity::Jobs => Ok(Command::Controller(Box::new(CtlCommand::ShowJobs { id }))),
            Entity::Nodes => Ok(Command::Controller(Box::new(CtlCommand::ShowNodes {
                name: id,
            }))),
            Entity::Partitions => Ok(Command::Controller(Box::new(CtlCommand::ShowPartitions {
                name: id,
            }))),
            Entity::Config => Ok(Command::Controller(Box::new(CtlCommand::ShowConfig))),
            Entity::Licenses => Ok(Command::Controller(Box::new(CtlCommand::ShowLicenses {
                name: id,
            }))),
            Entity::Daemons if id.is_some() => Err(CommandError::TooManyArguments("show".into())),
            Entity::Daemons => Ok(Command::Admin(AdminCommand::ShowDaemons)),
            Entity::Aliases => Ok(Command::Admin(AdminCommand::ShowAliases { host: id })),
            Entity::NeedsController(
                entity @ ("reservation" | "frontend" | "topology" | "burstbuffer" | "bbstat"
                | "dwstat" | "federation" | "assoc_mgr"),
            ) => Ok(Command::Controller(Box::new(CtlCommand::ShowNone {
                entity,
                name: id,
            }))),
            Entity::NeedsController("step") => Ok(Command::Step(StepCommand::ShowStep { id })),
            Entity::NeedsController("slurmd") => Ok(Command::ShowSlurmd),
            Entity::NeedsController(entity) => Ok(Command::Show { entity, id }),
        }
    }
}

/// Runs a parsed command with default options and returns its exit status.
pub fn execute(command: &Command, env: EnvLookup<'_>, out: &mut Output<'_>) -> i32 {
    execute_with(command, &Options::default(), env, out)
}

/// Runs a parsed command and returns its exit status.
pub fn execute_with(
    command: &Command,
    options: &Options,
    env: EnvLookup<'_>,
    out: &mut Output<'_>,
) -> i32 {
    // Slurm's `-Q` silences the errors of the commands that show or act
    // on jobs, nodes and partitions, not those of updates of nodes and
    // partitions, nor of the other commands.
    let hushed = options.quiet
        && match command {
            Command::Controller(c) => c.hushed_by_quiet(),
            Command::Step(c) => matches!(c, steps::StepCommand::ShowStep { .. }),
            _ => false,
        };
    if hushed {
        return out.hushing_errors(|out| dispatch(command, options, env, out));
    }
    dispatch(command, options, env, out)
}

fn dispatch(command: &Command, options: &Options, env: EnvLookup<'_>, out: &mut Output<'_>) -> i32 {
    match command {
        Command::Controller(c) => controller::execute(c, options, env, out),
        Command::Admin(c) => admin::execute(c, options, env, out),
        Command::Step(c) => steps::execute(c, options, env, out),
        Command::ShowSlurmd => slurmd::execute(options, env, out),
        Command::Exit => 0,
        Command::Help => print(out, USAGE.strip_suffix('\n').unwrap_or(USAGE)),
        Command::Version => print(out, &version_line()),
        Command::ShowHostnames { expr } => show_hostnames(expr.as_deref(), env, out),
        Command::ShowHostlist { arg, sorted } => show_hostlist(arg.as_deref(), *sorted, out),
        // Interactive mode reads its own input (see [`interactive`]); here
        // it has none, and a switch changes nothing after the last command.
        Command::Interactive | Command::Toggle(_) => 0,
        Command::Show { entity, .. } => {
            out.error_line(&format!(
                "scontrol: error: show {entity}: not supported yet: this scontrol cannot reach slurmctld"
            ));
            1
        }
        Command::NeedsController { keyword } => {
            out.error_line(&format!(
                "scontrol: error: {keyword}: not supported yet: this scontrol cannot reach slurmctld"
            ));
            1
        }
    }
}

/// `show hostnames`: one name per line. Slurm exits 0 even when the
/// expression is invalid or missing.
fn show_hostnames(expr: Option<&str>, env: EnvLookup<'_>, out: &mut Output<'_>) -> i32 {
    let from_env;
    let expr = match expr {
        Some(e) => e,
        None => match env("SLURM_NODELIST") {
            Some(v) => {
                from_env = v.to_string_lossy().into_owned();
                &from_env
            }
            None => {
                out.error_line("scontrol: error: host list is empty");
                return 0;
            }
        },
    };
    match hostlist::expand(expr) {
        Ok(names) => {
            for name in &names {
                if let Err(e) = out.line(name) {
                    out.error_line(&format!("scontrol: error: {e}"));
                    return 1;
                }
                if out.stdout_closed() {
                    break;
                }
            }
            0
        }
        Err(e) => {
            report_invalid(&e, out);
            0
        }
    }
}

/// `show hostlist` and `show hostlistsorted`.
fn show_hostlist(arg: Option<&str>, sorted: bool, out: &mut Output<'_>) -> i32 {
    let Some(arg) = arg else {
        out.error_line("invalid encode argument");
        return 1;
    };
    let expr = if arg.starts_with('/') {
        match read_host_file(arg, HOST_FILE_LIMIT) {
            Ok(expr) => expr,
            Err(message) => {
                out.error_line(&message);
                return 1;
            }
        }
    } else {
        arg.to_owned()
    };
    let spelled = if sorted {
        hostlist::compress_expr_sorted(&expr)
    } else {
        hostlist::compress_expr(&expr)
    };
    match spelled {
        Ok(s) => print(out, &s),
        Err(e) => {
            report_invalid(&e, out);
            1
        }
    }
}

/// Largest host file `show hostlist` reads. Slurm reads the first MiB and
/// silently cuts the rest, even inside a name; a file too large is refused
/// here instead.
const HOST_FILE_LIMIT: u64 = 64 * 1024 * 1024;

/// Reads a file of host names as Slurm does: every line followed by a comma.
fn read_host_file(path: &str, limit: u64) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|_| format!("Can not open {path}"))?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|_| format!("Error reading {path}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("Error reading {path}: larger than {limit} bytes"));
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut expr = String::with_capacity(text.len() + 1);
    for line in text.split_terminator('\n') {
        expr.push_str(line);
        expr.push(',');
    }
    Ok(expr)
}

/// Reports an invalid expression with Slurm's lines: its log line for a bad
/// range, then `Invalid hostlist: EXPR`. Limits Slurm does not have get a
/// line saying which limit was hit.
fn report_invalid(err: &HostlistError, out: &mut Output<'_>) {
    match err {
        HostlistError::InvalidRange { range, .. } => out.error_line(&format!(
            "scontrol: error: _parse_single_range: Invalid range: `{range}'"
        )),
        HostlistError::RangeTooLarge { range, .. } => out.error_line(&format!(
            "scontrol: error: _parse_single_range: Too many hosts in range `{range}'"
        )),
        HostlistError::TextAfterBracket { .. } | HostlistError::UnbalancedBrackets { .. } => {}
        other => out.error_line(&format!("scontrol: error: {other}")),
    }
    out.error_line(&format!("Invalid hostlist: {}", err.expr()));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    /// `-Q` silences the refusals Slurm 22.05's silences while reading a
    /// command (an unreadable job id, a debug level or flag it does not
    /// know), not the others; the exit status stays 1.
    #[test]
    fn quiet_silences_some_refusals() {
        for line in [
            "-Q update JobId=abc TimeLimit=5",
            "-Q top abc",
            "-Q setdebug bogus",
            "-Q setdebugflags bogus",
        ] {
            let args: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(sc(&args, None), (String::new(), String::new(), 1), "{line}");
        }
        let (_, err, code) = sc(&["-Q", "update", "JobId=5", "Bogus=5"], None);
        assert_eq!(code, 1);
        assert!(err.contains("Update of this parameter is not supported: Bogus=5"));
    }

    /// Runs scontrol with `args` and `SLURM_NODELIST` set to `nodelist`.
    fn sc(args: &[&str], nodelist: Option<&str>) -> (String, String, i32) {
        let argv: Vec<OsString> = std::iter::once("scontrol")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let env = |name: &str| {
            (name == "SLURM_NODELIST")
                .then(|| nodelist.map(OsString::from))
                .flatten()
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(&argv, &env, &mut out, &mut err);
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
            code,
        )
    }

    #[test]
    fn options_anywhere_and_abbreviated() {
        let inv = parse_args(&words("-dv show --one hostnames -Mc1 n1 --uid 5")).unwrap();
        let Invocation::Run { options, words: w } = inv else {
            panic!("{inv:?}")
        };
        assert_eq!(w, ["show", "hostnames", "n1"]);
        assert_eq!(options.details, 1);
        assert_eq!(options.verbose, 1);
        assert!(options.oneliner);
        assert_eq!(options.clusters.as_deref(), Some("c1"));
        assert_eq!(options.uid.as_deref(), Some("5"));
        assert_eq!(parse_args(&words("--vers x")), Ok(Invocation::Version));
        assert_eq!(parse_args(&words("show -V2")), Ok(Invocation::Version));
        assert_eq!(parse_args(&words("--usage")), Ok(Invocation::Help));
        assert_eq!(parse_args(&words("--clu=a")).map(|_| ()), Ok(()));
        let Ok(Invocation::Run { words: w, .. }) = parse_args(&words("show hostnames -- -n1"))
        else {
            panic!()
        };
        assert_eq!(w, ["show", "hostnames", "-n1"]);
    }

    #[test]
    fn option_errors_as_getopt_words_them() {
        let e = |s: &str| parse_args(&words(s)).unwrap_err().to_string();
        assert_eq!(e("--foo"), "unrecognized option '--foo'");
        assert_eq!(e("-z"), "invalid option -- 'z'");
        assert_eq!(e("-M"), "option requires an argument -- 'M'");
        assert_eq!(e("--uid"), "option '--uid' requires an argument");
        assert_eq!(
            e("--ver"),
            "option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
        );
        assert_eq!(e("--help=x"), "option '--help' doesn't allow an argument");
    }

    #[test]
    fn keyword_and_entity_abbreviations() {
        assert_eq!(Keyword::parse("SHO"), Some(Keyword::Show));
        assert_eq!(Keyword::parse("sh"), None);
        assert_eq!(Keyword::parse("vers"), Some(Keyword::Version));
        assert_eq!(Keyword::parse("ver"), None);
        assert_eq!(Keyword::parse("versions"), None);
        assert_eq!(Keyword::parse("update"), Some(Keyword::Update));
        assert_eq!(Keyword::parse("cr"), Some(Keyword::Create));
        assert_eq!(Keyword::parse("c"), None);
        assert_eq!(Keyword::parse("DELETE"), Some(Keyword::Delete));
        assert_eq!(Keyword::parse("del"), Some(Keyword::Delete));
        assert_eq!(Keyword::parse("de"), Some(Keyword::Toggle(Toggle::Details)));
        assert_eq!(Keyword::parse("u"), Some(Keyword::Update));
        assert_eq!(Keyword::parse("uh"), None);
        assert_eq!(Keyword::parse("uhold"), Some(Keyword::Uhold));
        assert_eq!(Keyword::parse("requeue"), Some(Keyword::Requeue));
        assert_eq!(Keyword::parse("requeueh"), None);
        assert_eq!(Keyword::parse("requeuehold"), Some(Keyword::RequeueHold));
        assert_eq!(Keyword::parse("pi"), None);
        assert_eq!(Keyword::parse("pin"), Some(Keyword::Ping));
        assert_eq!(Keyword::parse("rel"), Some(Keyword::Release));
        assert_eq!(Keyword::parse("re"), None);
        assert_eq!(
            Keyword::parse("shutdown"),
            Some(Keyword::Admin(AdminKeyword::Shutdown))
        );
        assert_eq!(Keyword::parse("shutdow"), None);
        assert_eq!(
            Keyword::parse("se"),
            Some(Keyword::Admin(AdminKeyword::SetDebug))
        );
        assert_eq!(
            Keyword::parse("SETDEBUGF"),
            Some(Keyword::Admin(AdminKeyword::SetDebugFlags))
        );
        assert_eq!(
            Keyword::parse("co"),
            Some(Keyword::Admin(AdminKeyword::Completing))
        );
        assert_eq!(Keyword::parse("wri"), None);
        assert_eq!(Keyword::parse("e"), None);
        assert_eq!(Entity::parse("jobs"), Some(Entity::Jobs));
        assert_eq!(Entity::parse("job"), Some(Entity::Jobs));
        assert_eq!(Entity::parse("node"), Some(Entity::Nodes));
        assert_eq!(Entity::parse("part"), Some(Entity::Partitions));
        assert_eq!(Entity::parse("p"), None);
        assert_eq!(Entity::parse("conf"), Some(Entity::Config));
        assert_eq!(Entity::parse("hostn"), Some(Entity::Hostnames));
        assert_eq!(Entity::parse("HOSTNAMES"), Some(Entity::Hostnames));
        assert_eq!(Entity::parse("host"), None);
        assert_eq!(Entity::parse("hostl"), Some(Entity::Hostlist));
        assert_eq!(Entity::parse("hostlis"), Some(Entity::Hostlist));
        assert_eq!(Entity::parse("hostlists"), Some(Entity::HostlistSorted));
        assert_eq!(Entity::parse("hostlistx"), None);
        assert_eq!(Entity::parse("hostnamesx"), None);
        assert_eq!(Entity::parse("j"), Some(Entity::Jobs));
        // Plural forms Slurm 22.05 takes, as it takes `jobs` and `nodes`.
        let step = Some(Entity::NeedsController("step"));
        assert_eq!(Entity::parse("steps"), step);
        assert_eq!(Entity::parse("step"), step);
        assert_eq!(Entity::parse("stepsx"), None);
        let resv = Some(Entity::NeedsController("reservation"));
        assert_eq!(Entity::parse("reservations"), resv);
        assert_eq!(Entity::parse("res"), resv);
    }

    #[test]
    fn show_takes_entity_equals_id_as_slurm_does() {
        let p = |s: &str| Command::parse(&words(s));
        let job = |id: &str| {
            Ok(Command::Controller(Box::new(CtlCommand::ShowJobs {
                id: Some(id.into()),
            })))
        };
        assert_eq!(p("show job=12"), job("12"));
        assert_eq!(p("show JobId=12"), job("12"));
        assert_eq!(p("show jobi=12"), job("12"));
        assert_eq!(p("show jobid 12"), job("12"));
        // The word after ENTITY=ID is not looked at; a third is too many.
        assert_eq!(p("show job=12 13"), job("12"));
        assert_eq!(
            p("show job=12 13 14"),
            Err(CommandError::TooManyArguments("show".into()))
        );
        assert_eq!(p("show job="), job(""));
        assert_eq!(
            p("show PartitionName=debug"),
            Ok(Command::Controller(Box::new(CtlCommand::ShowPartitions {
                name: Some("debug".into())
            })))
        );
        assert_eq!(
            p("show node=n1"),
            Ok(Command::Controller(Box::new(CtlCommand::ShowNodes {
                name: Some("n1".into())
            })))
        );
        assert_eq!(
            p("show nodename=n1"),
            Err(CommandError::InvalidEntity("nodename=n1".into()))
        );
        assert_eq!(
            p("show jobidx=6"),
            Err(CommandError::InvalidEntity("jobidx=6".into()))
        );
    }

    #[test]
    fn command_shapes() {
        let p = |s: &str| Command::parse(&words(s));
        assert_eq!(p(""), Ok(Command::Interactive));
        assert_eq!(
            p("show hostnames"),
            Ok(Command::ShowHostnames { expr: None })
        );
        assert_eq!(p("show"), Err(CommandError::TooFewArguments("show".into())));
        assert_eq!(
            p("show hostnames a b"),
            Err(CommandError::TooManyArguments("show".into()))
        );
        assert_eq!(
            p("show host n1"),
            Err(CommandError::InvalidEntity("host".into()))
        );
        assert_eq!(p("foo"), Err(CommandError::InvalidKeyword("foo".into())));
        assert_eq!(
            p("exit x"),
            Err(CommandError::TooManyArguments("exit".into()))
        );
        assert_eq!(p("version x"), Err(CommandError::VersionTooManyArgs));
        assert_eq!(
            p("show job 12"),
            Ok(Command::Controller(Box::new(CtlCommand::ShowJobs {
                id: Some("12".into())
            })))
        );
        assert_eq!(
            p("show reservation"),
            Ok(Command::Controller(Box::new(CtlCommand::ShowNone {
                entity: "reservation",
                name: None
            })))
        );
        assert_eq!(
            p("show assoc_mgr users=a flags=qos"),
            Ok(Command::Controller(Box::new(CtlCommand::ShowNone {
                entity: "assoc_mgr",
                name: Some("users=a flags=qos".into())
            })))
        );
        assert_eq!(p("show slurmd"), Ok(Command::ShowSlurmd));
        assert_eq!(p("show sl vm2"), Ok(Command::ShowSlurmd));
        assert_eq!(p("show slurmd=x"), Ok(Command::ShowSlurmd));
        assert_eq!(
            p("show slurmd a b"),
            Err(CommandError::TooManyArguments("show".into()))
        );
        assert_eq!(p("show s"), Err(CommandError::InvalidEntity("s".into())));
        assert_eq!(
            p("update"),
            Err(CommandError::TooFewArgumentsFor("update".into()))
        );
        assert_eq!(
            p("ping x"),
            Err(CommandError::TooManyArguments("ping".into()))
        );
        assert_eq!(p("hold"), Err(CommandError::TooFewArguments("hold".into())));
        assert_eq!(
            p("create"),
            Err(CommandError::TooFewArgumentsFor("create".into()))
        );
        assert_eq!(
            p("delete"),
            Err(CommandError::TooFewArgumentsFor("delete".into()))
        );
        assert_eq!(
            p("delete PartitionName=x"),
            Ok(Command::Controller(Box::new(CtlCommand::DeletePartition {
                name: "x".into(),
                word: "PartitionName=x".into()
            })))
        );
        assert!(matches!(
            p("create PartitionName=x Nodes=n1"),
            Ok(Command::Controller(c)) if matches!(*c, CtlCommand::CreatePartition(_))
        ));
        assert_eq!(
            p("hold 8"),
            Ok(Command::Controller(Box::new(CtlCommand::Hold {
                words: vec![controller::JobWord {
                    word: "8".into(),
                    filter: Some(slurm_proto::v1::JobFilter {
                        job_ids: vec![8],
                        ..Default::default()
                    }),
                }],
                user: false
            })))
        );
    }

    #[test]
    fn hostnames_reads_slurm_nodelist() {
        assert_eq!(
            sc(&["show", "hostnames"], Some("x[1-2]")),
            ("x1\nx2\n".into(), "".into(), 0)
        );
        assert_eq!(
            sc(&["show", "hostnames"], Some("")),
            ("".into(), "".into(), 0)
        );
        assert_eq!(
            sc(&["show", "hostnames"], None),
            ("".into(), "scontrol: error: host list is empty\n".into(), 0)
        );
    }

    #[test]
    fn invalid_expressions_and_exit_statuses() {
        let (out, err, code) = sc(&["show", "hostnames", "n[5-1]"], None);
        assert_eq!((out.as_str(), code), ("", 0));
        assert_eq!(
            err,
            "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]\n"
        );
        let (_, err, code) = sc(&["show", "hostlist", "n[1-3]x"], None);
        assert_eq!((err.as_str(), code), ("Invalid hostlist: n[1-3]x\n", 1));
        let (_, err, code) = sc(&["show", "hostlistsorted", "n[1-3"], None);
        assert_eq!(code, 1);
        assert_eq!(err, "Invalid hostlist: n[1-3\n");
        let (_, err, code) = sc(&["show", "hostnames", "n[0-65535]-[0-65535]"], None);
        assert_eq!(code, 0);
        assert!(err.starts_with("scontrol: error: hostlist \"n[0-65535]-[0-65535]\" names more than 1000000 hosts\n"), "{err}");
        assert_eq!(
            sc(&["show", "hostlist"], None),
            ("".into(), "invalid encode argument\n".into(), 1)
        );
    }

    #[test]
    fn hostlist_reads_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "n3\nn1 , n2\n\nn5").unwrap();
        let p = path.to_str().unwrap();
        assert_eq!(
            sc(&["show", "hostlist", p], None),
            ("n[3,1-2,5]\n".into(), "".into(), 0)
        );
        assert_eq!(
            sc(&["show", "hostlistsorted", p], None),
            ("n[1-3,5]\n".into(), "".into(), 0)
        );
        std::fs::write(&path, "n[5-1]\n").unwrap();
        let (_, err, code) = sc(&["show", "hostlist", p], None);
        assert_eq!(code, 1);
        assert!(err.ends_with("Invalid hostlist: n[5-1],\n"), "{err}");
        let missing = dir.path().join("missing");
        let m = missing.to_str().unwrap();
        assert_eq!(
            sc(&["show", "hostlist", m], None),
            ("".into(), format!("Can not open {m}\n"), 1)
        );
        let d = dir.path().to_str().unwrap();
        assert_eq!(
            sc(&["show", "hostlist", d], None),
            ("".into(), format!("Error reading {d}\n"), 1)
        );
        assert_eq!(
            read_host_file(p, 4),
            Err(format!("Error reading {p}: larger than 4 bytes"))
        );
        assert_eq!(read_host_file(p, 7).as_deref(), Ok("n[5-1],"));
        // hostnames never reads files.
        assert_eq!(sc(&["show", "hostnames", p], None).0, format!("{p}\n"));
    }

    #[test]
    fn version_and_other_commands() {
        assert_eq!(
            sc(&["-V"], None),
            ("slurm-wlm 22.05.8\n".into(), "".into(), 0)
        );
        assert_eq!(
            sc(&["vers"], None),
            ("slurm-wlm 22.05.8\n".into(), "".into(), 0)
        );
        assert_eq!(
            sc(&["version", "x"], None),
            (
                "slurm-wlm 22.05.8\n".into(),
                "too many arguments for version keyword\n".into(),
                1
            )
        );
        assert_eq!(sc(&["quit"], None), ("".into(), "".into(), 0));
        let (out, err, code) = sc(&["--foo"], None);
        assert_eq!((out.as_str(), code), ("", 1));
        assert_eq!(
            err,
            "scontrol: unrecognized option '--foo'\nTry \"scontrol --help\" for more information\n"
        );
        let (out, _, code) = sc(&["--help"], None);
        assert_eq!(code, 0);
        assert_eq!(out, USAGE);
    }

    /// `show slurmd` when nothing listens where this host's slurmd should:
    /// Slurm's two lines, the second left out with `-Q`.
    #[test]
    fn show_slurmd_with_the_slurmd_down() {
        let dir = tempfile::tempdir().unwrap();
        slurm_common::auth::generate_key(&dir.path().join("slurm.key")).unwrap();
        // A port nothing listens on: bound, then let go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = dir.path().join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=c\nSlurmctldHost=h\nAuthType=auth/slurm\n\
                 NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={port}\n"
            ),
        )
        .unwrap();
        let run = |args: &[&str]| {
            let argv: Vec<OsString> = std::iter::once("scontrol")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect();
            let env = |name: &str| (name == "SLURM_CONF").then(|| conf.clone().into_os_string());
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let code = run_with(&argv, &env, &mut out, &mut err);
            (
                String::from_utf8(out).unwrap(),
                String::from_utf8(err).unwrap(),
                code,
            )
        };
        assert_eq!(
            run(&["show", "slurmd"]),
            (
                String::new(),
                "scontrol: error: slurm_slurmd_info: Connection refused
\
                 slurm_load_slurmd_status: Connection refused
"
                .into(),
                1
            )
        );
        assert_eq!(
            run(&["-Q", "show", "slurmd", "anything"]),
            (
                String::new(),
                "scontrol: error: slurm_slurmd_info: Connection refused
"
                .into(),
                1
            )
        );
    }

    #[test]
    fn broken_pipe_ends_quietly() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from(io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(io::Error::from(io::ErrorKind::BrokenPipe))
            }
        }
        let argv: Vec<OsString> = ["scontrol", "show", "hostnames", "n[1-1000]"]
            .into_iter()
            .map(OsString::from)
            .collect();
        let mut err = Vec::new();
        let code = run_with(&argv, &|_| None, &mut Closed, &mut err);
        assert_eq!(code, 0);
        assert!(err.is_empty());
    }

    /// Runs scontrol with `args` and `input` on standard input.
    fn session(args: &[&str], input: &str, prompt: bool) -> (String, String, i32) {
        let argv: Vec<OsString> = std::iter::once("scontrol")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let mut input = input.as_bytes();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_io(&argv, &|_| None, &mut input, prompt, &mut out, &mut err);
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
            code,
        )
    }

    #[test]
    fn interactive_reads_commands_until_quit() {
        let (out, err, code) = session(
            &[],
            "show hostnames n[1-2]\nvers\nquit\nshow hostnames never\n",
            false,
        );
        assert_eq!(out, "n1\nn2\nslurm-wlm 22.05.8\n");
        assert_eq!((err.as_str(), code), ("", 0));
        // The end of input ends it too; a terminal gets prompts and a
        // final newline.
        let (out, _, code) = session(&["-o"], "show hostlist a1,a2\n", true);
        assert_eq!(out, "scontrol: a[1-2]\nscontrol: \n");
        assert_eq!(code, 0);
        let (out, err, code) = session(&[], "", false);
        assert_eq!((out.as_str(), err.as_str(), code), ("", "", 0));
    }

    #[test]
    fn an_error_does_not_end_the_session() {
        let (out, err, code) = session(
            &[],
            "bogus\nshow hostlist n[1-3\nshow hostnames x1\nexit\n",
            false,
        );
        assert_eq!(out, "x1\n");
        assert_eq!(err, "invalid keyword: bogus\nInvalid hostlist: n[1-3\n");
        // As in Slurm, a failure makes the session's status 1.
        assert_eq!(code, 1);
        let (_, err, code) = session(&[], "exit now\nshow hostnames x1\n", false);
        assert_eq!(
            (err.as_str(), code),
            ("too many arguments for keyword:exit\n", 1)
        );
        // An empty line counts as a failed command, as in Slurm; comments
        // are skipped.
        assert_eq!(session(&[], "\n", false).2, 1);
        assert_eq!(session(&[], "# nothing\n", false).2, 0);
    }

    #[test]
    fn bang_bang_repeats_the_last_line() {
        let (out, _, code) = session(&[], "show hostnames y[1-2]\n!!\n", false);
        assert_eq!((out.as_str(), code), ("y1\ny2\ny1\ny2\n", 0));
    }

    #[test]
    fn switches_change_the_session_options() {
        let env = |_: &str| None;
        let mut s = Session::new(Options::default());
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        for line in ["oneliner", "det", "al", "verb"] {
            assert!(s.line(line, &env, &mut out));
        }
        assert!(s.options.oneliner && s.options.all);
        assert_eq!((s.options.details, s.options.verbose), (1, 1));
        assert!(s.line("quie", &env, &mut out));
        assert!(s.options.quiet);
        assert_eq!(s.options.verbose, 0);
        assert!(s.line("HIDE", &env, &mut out));
        assert!(!s.options.all);
        assert_eq!(s.options.details, 0);
        assert_eq!(s.exit_code, 0);
        assert!(s.line("oneliner x", &env, &mut out));
        assert!(s.line("verbose x", &env, &mut out));
        assert!(!s.line("quit", &env, &mut out));
        assert_eq!(s.exit_code, 1);
        assert_eq!(
            String::from_utf8(e).unwrap(),
            "too many arguments for keyword:oneliner\ntoo many arguments for verbose keyword\n"
        );
        assert!(o.is_empty());
        // On the command line a switch is accepted and changes nothing.
        assert_eq!(sc(&["oneliner"], None), ("".into(), "".into(), 0));
    }

    #[test]
    fn words_split_as_scontrol_splits_them() {
        assert_eq!(split_words("  show  job 5 "), ["show", "job", "5"]);
        assert_eq!(
            split_words("update JobId=5 Comment=\"a b\" Name='x y'z"),
            ["update", "JobId=5", "Comment=\"a b\"", "Name='x y'z"]
        );
        assert_eq!(split_words("a\t\"unbalanced b"), ["a", "\"unbalanced b"]);
        assert!(split_words("").is_empty());
        assert_eq!(split_words("größe ü"), ["größe", "ü"]);
    }

    /// Abbreviations and argument counts measured on Slurm 22.05: the
    /// shortest accepted words, and the keyword named as typed.
    #[test]
    fn step_keywords_abbreviate_and_refuse_as_slurm_22_05() {
        let e = |line: &str| Command::parse(&words(line)).unwrap_err().to_string();
        assert_eq!(e("pi"), "invalid keyword: pi");
        assert_eq!(e("pi 1"), "invalid keyword: pi");
        assert_eq!(e("pin x"), "too many arguments for keyword:pin");
        assert_eq!(e("pid"), "missing argument for keyword:pid");
        assert_eq!(e("pid 1 2"), "too many arguments for keyword:pid");
        assert_eq!(e("l 1 2 3"), "too many arguments for keyword:l");
        assert_eq!(e("li 1 2 3"), "too many arguments for keyword:li");
        assert_eq!(e("n"), "too few arguments for keyword:n");
        assert_eq!(e("no 1"), "too few arguments for keyword:no");
        assert_eq!(e("w 1"), "invalid keyword: w");
        assert_eq!(e("wa"), "too few arguments for keyword:wa");
        assert_eq!(e("wa 1 2"), "too many arguments for keyword:wa");
        assert_eq!(e("ex 1"), "too many arguments for keyword:ex");
        assert_eq!(e("sho"), "too few arguments for keyword:sho");
        assert_eq!(e("sho a b c"), "too many arguments for keyword:sho");
        assert_eq!(e("verb 1"), "too many arguments for verb keyword");
        assert_eq!(e("cr"), "too few arguments for cr keyword");
        assert_eq!(e("rel"), "too few arguments for keyword:rel");
        assert_eq!(e("rec 1 2"), "too many arguments for keyword:rec");
        for invalid in ["ho", "hol", "uho", "requeuehol"] {
            assert_eq!(e(invalid), format!("invalid keyword: {invalid}"));
        }
        assert_eq!(
            e("requeuehold"),
            "too few arguments for keyword:requeuehold"
        );
        assert!(matches!(
            Command::parse(&words("l")),
            Ok(Command::Step(StepCommand::ListPids {
                job: None,
                node: None
            }))
        ));
        assert_eq!(
            Command::parse(&words("rec 1")),
            Ok(Command::Controller(Box::new(CtlCommand::Reconfigure)))
        );
        assert_eq!(
            Command::parse(&words("al 1 2 3")),
            Ok(Command::Toggle(Toggle::All))
        );
        assert_eq!(
            Command::parse(&words("hi 1")),
            Ok(Command::Toggle(Toggle::Hide))
        );
    }

    #[test]
    fn options_stop_before_setdebugflags() {
        let inv = parse_args(&words("-v setdebugflags -Backfill")).unwrap();
        let Invocation::Run { options, words: w } = inv else {
            panic!("{inv:?}")
        };
        assert_eq!(options.verbose, 1);
        assert_eq!(w, ["setdebugflags", "-Backfill"]);
        assert!(parse_args(&words("-v sh -Backfill")).is_err());
    }

    #[test]
    fn step_keywords_parse_and_refuse_as_slurm_does() {
        let p = |ws: &[&str]| Command::parse(&ws.iter().map(|w| w.to_string()).collect::<Vec<_>>());
        assert_eq!(
            p(&["li", "5", "vm2"]),
            Ok(Command::Step(StepCommand::ListPids {
                job: Some("5".into()),
                node: Some("vm2".into())
            }))
        );
        assert_eq!(
            p(&["listpids", "1", "2", "3"]),
            Err(CommandError::TooManyArguments("listpids".into()))
        );
        assert_eq!(
            p(&["pid"]).unwrap_err().to_string(),
            "missing argument for keyword:pid"
        );
        assert_eq!(
            p(&["pidinfo", "1", "2"]).unwrap_err().to_string(),
            "too many arguments for keyword:pidinfo"
        );
        assert_eq!(
            p(&["wa"]).unwrap_err().to_string(),
            "too few arguments for keyword:wa"
        );
        assert_eq!(
            p(&["WAIT_JOB", "1", "2"]).unwrap_err().to_string(),
            "too many arguments for keyword:WAIT_JOB"
        );
        assert_eq!(
            p(&["no", "5"]).unwrap_err().to_string(),
            "too few arguments for keyword:no"
        );
        assert_eq!(
            p(&["notify", "5", "a", "b"]),
            Ok(Command::Step(StepCommand::Notify {
                word: "5".into(),
                message: "a b".into()
            }))
        );
        assert_eq!(
            p(&["sho", "st", "5"]),
            Ok(Command::Step(StepCommand::ShowStep {
                id: Some("5".into())
            }))
        );
        assert_eq!(
            p(&["show", "step=5"]),
            Ok(Command::Step(StepCommand::ShowStep {
                id: Some("5".into())
            }))
        );
    }
}
