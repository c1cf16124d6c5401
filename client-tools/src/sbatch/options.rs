//! sbatch's options: the table, and how the three sources combine.
//!
//! Users move job scripts between clusters unchanged, so every option is
//! spelled as Slurm 22.05 spells it, with the same short letters, the same
//! abbreviations of long names and the same precedence: the command line
//! beats `#SBATCH` directives, which beat `SBATCH_*` environment variables,
//! which beat the defaults. Everything here is pure: the caller hands in the
//! arguments, the script text, the environment and the current time.
//!
//! Values are checked when they are read, with Slurm's messages, so a bad
//! `--time` fails the same way whether it came from the command line, a
//! directive or `SBATCH_TIMELIMIT`. Options Slurm accepts but this
//! implementation does not act on are read and kept in
//! [`SbatchOpts::ignored`], so scripts written for a full Slurm still submit.

use std::fmt;
use std::io;

use slurm_common::size::parse_mem_mb;
use slurm_common::time::{parse_time_limit, parse_timestamp, TimeError, TimeLimit};

use super::values::NodeFileError;
use super::{directives, values};
use crate::opts::{self, parse_signal, Found, GetoptError, HasArg, LongOpt, Ordering, ShortOpt};

/// Every option sbatch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Account,
    Array,
    Begin,
    Chdir,
    ClusterConstraint,
    Clusters,
    Container,
    Comment,
    Constraint,
    Contiguous,
    CoresPerSocket,
    CpusPerTask,
    Deadline,
    Dependency,
    Distribution,
    Error,
    Exclude,
    Exclusive,
    Export,
    ExportFile,
    Gpus,
    GpusPerNode,
    GpusPerTask,
    Gres,
    Help,
    Hold,
    Input,
    JobName,
    KillOnInvalidDep,
    Licenses,
    MailType,
    Network,
    /// `--prefer`, `--mcs-label`, `--bb`, `--batch`: kept and shown.
    Prefer,
    McsLabel,
    BurstBuffer,
    BatchFeatures,
    /// `--bbf`: a file that must be readable.
    BurstBufferFile,
    MailUser,
    Mem,
    MemPerCpu,
    Mincpus,
    Nice,
    NoKill,
    NoRequeue,
    Nodefile,
    Nodelist,
    Nodes,
    Ntasks,
    NtasksPerCore,
    NtasksPerNode,
    NtasksPerSocket,
    OpenMode,
    Output,
    Overcommit,
    Oversubscribe,
    Parsable,
    Partition,
    Priority,
    Qos,
    Quiet,
    Reboot,
    Requeue,
    Reservation,
    Signal,
    SocketsPerNode,
    TestOnly,
    ThreadsPerCore,
    Time,
    TimeMin,
    Tmp,
    Usage,
    Verbose,
    Version,
    Wait,
    Wckey,
    Wrap,
    Uid,
    Gid,
    /// Kept to be shown (or to refuse what Slurm refuses), without effect
    /// on placement here.
    GpusPerSocket,
    GresFlags,
    NtasksPerGpu,
    Power,
    SpreadJob,
    /// Read and accepted, without effect here.
    Ignored,
    // Accepted without effect here, but their values are checked as
    // Slurm checks them.
    AcctgFreq,
    CoreSpec,
    CpuFreq,
    CpusPerGpu,
    DelayBoot,
    ExtraNodeInfo,
    GetUserEnv,
    GpuBind,
    Hint,
    MemBind,
    MemPerGpu,
    Profile,
    Propagate,
    Switches,
    ThreadSpec,
    WaitAllNodes,
}

macro_rules! long {
    ($name:literal, $arg:ident, $key:ident) => {
        LongOpt {
            name: $name,
            has_arg: HasArg::$arg,
            key: Key::$key,
        }
    };
}

macro_rules! short {
    ($c:literal, $arg:ident, $key:ident) => {
        ShortOpt {
            letter: $c,
            has_arg: HasArg::$arg,
            key: Key::$key,
        }
    };
}

/// Short options of sbatch 22.05.
pub const SHORTS: &[ShortOpt<Key>] = &[
    short!('A', Required, Account),
    short!('a', Required, Array),
    short!('B', Required, ExtraNodeInfo),
    short!('b', Required, Begin),
    short!('C', Required, Constraint),
    short!('c', Required, CpusPerTask),
    short!('D', Required, Chdir),
    short!('d', Required, Dependency),
    short!('e', Required, Error),
    short!('F', Required, Nodefile),
    short!('G', Required, Gpus),
    short!('H', No, Hold),
    short!('h', No, Help),
    short!('i', Required, Input),
    short!('J', Required, JobName),
    short!('k', Optional, NoKill),
    short!('L', Required, Licenses),
    short!('M', Required, Clusters),
    short!('m', Required, Distribution),
    short!('N', Required, Nodes),
    short!('n', Required, Ntasks),
    short!('O', No, Overcommit),
    short!('o', Required, Output),
    short!('p', Required, Partition),
    short!('Q', No, Quiet),
    short!('q', Required, Qos),
    short!('S', Required, CoreSpec),
    short!('s', No, Oversubscribe),
    short!('t', Required, Time),
    short!('V', No, Version),
    short!('v', No, Verbose),
    short!('W', No, Wait),
    short!('w', Required, Nodelist),
    short!('x', Required, Exclude),
];

/// Long options of sbatch 22.05, in alphabetical order (the order of the
/// candidates in getopt's "ambiguous" message).
pub const LONGS: &[LongOpt<Key>] = &[
    long!("account", Required, Account),
    long!("acctg-freq", Required, AcctgFreq),
    long!("array", Required, Array),
    long!("batch", Required, BatchFeatures),
    long!("bb", Required, BurstBuffer),
    long!("bbf", Required, BurstBufferFile),
    long!("begin", Required, Begin),
    long!("chdir", Required, Chdir),
    long!("cluster", Required, Clusters),
    long!("cluster-constraint", Required, ClusterConstraint),
    long!("clusters", Required, Clusters),
    long!("comment", Required, Comment),
    long!("constraint", Required, Constraint),
    long!("container", Required, Container),
    long!("contiguous", No, Contiguous),
    long!("core-spec", Required, CoreSpec),
    long!("cores-per-socket", Required, CoresPerSocket),
    long!("cpu-freq", Required, CpuFreq),
    long!("cpus-per-gpu", Required, CpusPerGpu),
    long!("cpus-per-task", Required, CpusPerTask),
    long!("deadline", Required, Deadline),
    long!("delay-boot", Required, DelayBoot),
    long!("dependency", Required, Dependency),
    long!("distribution", Required, Distribution),
    long!("error", Required, Error),
    long!("exclude", Required, Exclude),
    long!("exclusive", Optional, Exclusive),
    long!("export", Required, Export),
    long!("export-file", Required, ExportFile),
    long!("extra-node-info", Required, ExtraNodeInfo),
    long!("get-user-env", Optional, GetUserEnv),
    long!("gid", Required, Gid),
    long!("gpu-bind", Required, GpuBind),
    long!("gpu-freq", Required, Ignored),
    long!("gpus", Required, Gpus),
    long!("gpus-per-node", Required, GpusPerNode),
    long!("gpus-per-socket", Required, GpusPerSocket),
    long!("gpus-per-task", Required, GpusPerTask),
    long!("gres", Required, Gres),
    long!("gres-flags", Required, GresFlags),
    long!("help", No, Help),
    long!("hint", Required, Hint),
    long!("hold", No, Hold),
    long!("ignore-pbs", No, Ignored),
    long!("input", Required, Input),
    long!("job-name", Required, JobName),
    long!("kill-on-invalid-dep", Required, KillOnInvalidDep),
    long!("licenses", Required, Licenses),
    long!("mail-type", Required, MailType),
    long!("mail-user", Required, MailUser),
    long!("mcs-label", Required, McsLabel),
    long!("mem", Required, Mem),
    long!("mem-bind", Required, MemBind),
    long!("mem-per-cpu", Required, MemPerCpu),
    long!("mem-per-gpu", Required, MemPerGpu),
    long!("mincpus", Required, Mincpus),
    long!("network", Required, Network),
    long!("nice", Optional, Nice),
    long!("no-kill", Optional, NoKill),
    long!("no-requeue", No, NoRequeue),
    long!("nodefile", Required, Nodefile),
    long!("nodelist", Required, Nodelist),
    long!("nodes", Required, Nodes),
    long!("ntasks", Required, Ntasks),
    long!("ntasks-per-core", Required, NtasksPerCore),
    long!("ntasks-per-gpu", Required, NtasksPerGpu),
    long!("ntasks-per-node", Required, NtasksPerNode),
    long!("ntasks-per-socket", Required, NtasksPerSocket),
    long!("open-mode", Required, OpenMode),
    long!("output", Required, Output),
    long!("overcommit", No, Overcommit),
    long!("oversubscribe", No, Oversubscribe),
    long!("parsable", No, Parsable),
    long!("partition", Required, Partition),
    long!("power", Required, Power),
    long!("prefer", Required, Prefer),
    long!("priority", Required, Priority),
    long!("profile", Required, Profile),
    long!("propagate", Optional, Propagate),
    long!("qos", Required, Qos),
    long!("quiet", No, Quiet),
    long!("reboot", No, Reboot),
    long!("requeue", No, Requeue),
    long!("reservation", Required, Reservation),
    long!("signal", Required, Signal),
    long!("sockets-per-node", Required, SocketsPerNode),
    long!("spread-job", No, SpreadJob),
    long!("switches", Required, Switches),
    long!("test-only", No, TestOnly),
    long!("thread-spec", Required, ThreadSpec),
    long!("threads-per-core", Required, ThreadsPerCore),
    long!("time", Required, Time),
    long!("time-min", Required, TimeMin),
    long!("tmp", Required, Tmp),
    long!("uid", Required, Uid),
    long!("usage", No, Usage),
    long!("use-min-nodes", No, Ignored),
    long!("verbose", No, Verbose),
    long!("version", No, Version),
    long!("wait", No, Wait),
    long!("wait-all-nodes", Required, WaitAllNodes),
    long!("wckey", Required, Wckey),
    long!("wrap", Required, Wrap),
];

/// `SBATCH_*` input variables and the option each stands for. Variables
/// of flags (no value) set the flag whenever they are present.
pub const ENV_VARS: &[(&str, Key)] = &[
    ("SBATCH_ACCOUNT", Key::Account),
    ("SBATCH_ARRAY_INX", Key::Array),
    ("SBATCH_CLUSTERS", Key::Clusters),
    ("SBATCH_CONSTRAINT", Key::Constraint),
    ("SBATCH_DEADLINE", Key::Deadline),
    ("SBATCH_DISTRIBUTION", Key::Distribution),
    ("SBATCH_ERROR", Key::Error),
    ("SBATCH_EXCLUSIVE", Key::Exclusive),
    ("SBATCH_EXPORT", Key::Export),
    ("SBATCH_GPUS", Key::Gpus),
    ("SBATCH_GPUS_PER_NODE", Key::GpusPerNode),
    ("SBATCH_GPUS_PER_TASK", Key::GpusPerTask),
    ("SBATCH_GRES", Key::Gres),
    ("SBATCH_INPUT", Key::Input),
    ("SBATCH_JOB_NAME", Key::JobName),
    ("SBATCH_MEM_PER_CPU", Key::MemPerCpu),
    ("SBATCH_MEM_PER_NODE", Key::Mem),
    ("SBATCH_NO_KILL", Key::NoKill),
    ("SBATCH_NO_REQUEUE", Key::NoRequeue),
    ("SBATCH_OPEN_MODE", Key::OpenMode),
    ("SBATCH_OUTPUT", Key::Output),
    ("SBATCH_OVERCOMMIT", Key::Overcommit),
    ("SBATCH_PARTITION", Key::Partition),
    ("SBATCH_QOS", Key::Qos),
    ("SBATCH_REQUEUE", Key::Requeue),
    ("SBATCH_RESERVATION", Key::Reservation),
    ("SBATCH_SIGNAL", Key::Signal),
    ("SBATCH_THREADS_PER_CORE", Key::ThreadsPerCore),
    ("SBATCH_TIMELIMIT", Key::Time),
    ("SBATCH_WAIT", Key::Wait),
    ("SBATCH_WCKEY", Key::Wckey),
    ("SLURM_CLUSTERS", Key::Clusters),
];

/// Why the options cannot be used. Each ends sbatch before anything is
/// submitted, with the status Slurm's sbatch gives it
/// ([`OptError::exit_status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptError {
    /// getopt refused an argument: printed as `sbatch: <error>` followed by
    /// the "Try" line.
    Getopt(GetoptError),
    /// A value Slurm refuses with status 255: each line printed as
    /// `sbatch: error: <line>`.
    Invalid(String),
    /// A value Slurm refuses with status 1 (numeric values, `--hint`,
    /// `--propagate`, GRES): printed as [`OptError::Invalid`] is.
    Refused(String),
    /// Options that cannot go together: `sbatch: fatal: <text>`, status 1.
    Fatal(String),
    /// A `--begin` or `--deadline` time Slurm refuses, status 255. Slurm's
    /// time parser prints its own line first, without prefix
    /// ([`TimeError::slurm_notice`]); then `sbatch: error: Invalid --begin
    /// specification` follows.
    BadTime {
        option: &'static str,
        error: TimeError,
    },
    /// `--hint=help` and the like: the text on standard output, then the
    /// status.
    Help { text: &'static str, status: i32 },
    /// getopt refused a word of an `#SBATCH` line (1-based line number).
    Directive { line: usize, error: GetoptError },
}

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Getopt(e) => write!(f, "{e}"),
            Self::Invalid(text) | Self::Refused(text) | Self::Fatal(text) => f.write_str(text),
            Self::Help { text, .. } => f.write_str(text),
            Self::BadTime { option, .. } => write!(f, "Invalid {option} specification"),
            Self::Directive { line, error } => {
                write!(f, "invalid #SBATCH directive at line {line}: {error}")
            }
        }
    }
}

impl std::error::Error for OptError {}

impl OptError {
    /// The status sbatch exits with.
    pub fn exit_status(&self) -> i32 {
        match self {
            Self::Refused(_) | Self::Fatal(_) => 1,
            Self::Help { status, .. } => *status,
            Self::Getopt(_) | Self::Invalid(_) | Self::BadTime { .. } | Self::Directive { .. } => {
                255
            }
        }
    }
}

impl From<GetoptError> for OptError {
    fn from(e: GetoptError) -> Self {
        OptError::Getopt(e)
    }
}

fn invalid(text: impl Into<String>) -> OptError {
    OptError::Invalid(text.into())
}

fn refused(text: impl Into<String>) -> OptError {
    OptError::Refused(text.into())
}

/// A memory request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    PerNode(u64),
    PerCpu(u64),
}

/// How nodes may be shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    Exclusive,
    ExclusiveUser,
    ExclusiveMcs,
    Oversubscribe,
}

/// `--open-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    Append,
    Truncate,
}

/// Whether an option accepted without effect changes what the job gets
/// (resources, placement, storage, identity) rather than only tuning how
/// it runs: ignoring one of these is worth a warning.
pub fn ignoring_changes_the_job(spelled: &str) -> bool {
    matches!(
        spelled,
        "--core-spec"
            | "-S"
            | "--cpus-per-gpu"
            | "--gpus-per-socket"
            | "--mem-per-gpu"
            | "--ntasks-per-gpu"
            | "--thread-spec"
    )
}

/// The options after every source has been applied. `None` or empty means
/// "not given": the controller applies its defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SbatchOpts {
    pub account: Option<String>,
    pub array: Option<String>,
    pub begin_time: Option<i64>,
    pub chdir: Option<String>,
    pub clusters: Option<String>,
    pub comment: Option<String>,
    pub constraint: Option<String>,
    pub contiguous: bool,
    pub cores_per_socket: Option<u32>,
    /// `--cpus-per-gpu` (checked, then ignored: GPUs are not counted per
    /// CPU).
    pub cpus_per_gpu: Option<u32>,
    pub cpus_per_task: Option<u32>,
    /// `--cpu-freq` as given (checked; shown, not applied).
    pub cpu_freq: Option<String>,
    /// `--delay-boot`, minutes (shown, not applied).
    pub delay_boot: Option<u32>,
    /// `--gpus-per-socket` as given (checked against GresTypes, then
    /// ignored).
    pub gpus_per_socket: Option<String>,
    /// `--gres-flags`: `Some(true)` for enforce-binding, `Some(false)` for
    /// disable-binding (shown, not applied).
    pub gres_enforce_binding: Option<bool>,
    /// `--ntasks-per-gpu` (checked, then ignored).
    pub ntasks_per_gpu: Option<u32>,
    /// `--power` flags, upper case (`LEVEL`); shown, not applied.
    pub power: Option<String>,
    /// `--spread-job`: as many nodes as the tasks and the partition allow.
    pub spread_job: bool,
    /// Lines sbatch prints as it reads the options (`sbatch: error:
    /// Ignoring unrecognized power option (x)`), without the prefix.
    pub notices: Vec<String>,
    pub deadline: Option<i64>,
    pub dependency: Option<String>,
    pub distribution: Option<String>,
    pub error: Option<String>,
    pub exclude: Option<String>,
    pub export: Option<String>,
    pub export_file: Option<String>,
    /// Whether `-B` was given (a `--hint` is then ignored).
    pub extra_node_info: bool,
    pub gpus: Option<String>,
    pub gpus_per_node: Option<String>,
    pub gpus_per_task: Option<String>,
    pub gres: Option<String>,
    /// `--get-user-env` (its timeout and mode are checked, not kept).
    pub get_user_env: bool,
    pub hold: bool,
    pub input: Option<String>,
    pub job_name: Option<String>,
    pub kill_on_invalid_dep: Option<bool>,
    pub licenses: Option<String>,
    pub network: Option<String>,
    /// `--switches`: the count and the wait in seconds when one was given
    /// in a form that reads (Slurm takes an unreadable wait as none).
    pub switches: Option<(u32, Option<u32>)>,
    /// `--container` and `--cluster-constraint` as given (kept and shown).
    pub container: Option<String>,
    pub cluster_constraint: Option<String>,
    /// `--acctg-freq` and `--profile` as given: passed on to the job's
    /// environment (`SLURM_ACCTG_FREQ`, `SLURM_PROFILE`), without effect.
    pub acctg_freq: Option<String>,
    pub profile: Option<String>,
    /// `--gpu-bind` as given: kept (`TresBind=gpu:...`) and passed on to
    /// the job's environment (`SLURM_GPU_BIND`).
    pub gpu_bind: Option<String>,
    /// `--prefer`, `--mcs-label`, `--bb` and `--batch` as given.
    pub prefer: Option<String>,
    pub mcs_label: Option<String>,
    pub burst_buffer: Option<String>,
    pub batch_features: Option<String>,
    /// `--propagate` as given (empty for the bare flag): which of sbatch's
    /// resource limits the job gets; `None`: slurm.conf decides.
    pub propagate: Option<String>,
    pub mail_type: Option<String>,
    pub mail_user: Option<String>,
    pub memory: Option<Memory>,
    /// `--mem-per-gpu`, MB (checked, then ignored).
    pub mem_per_gpu: Option<u64>,
    pub mincpus: Option<u32>,
    pub nice: Option<i32>,
    /// `--no-kill[=off]`: the job goes on when one of its nodes fails.
    pub no_kill: bool,
    pub nodelist: Option<String>,
    /// `--nodes=min[-max]`.
    pub nodes: Option<(u32, Option<u32>)>,
    pub ntasks: Option<u32>,
    pub ntasks_per_core: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    pub ntasks_per_socket: Option<u32>,
    pub open_mode: Option<OpenMode>,
    pub output: Option<String>,
    pub overcommit: bool,
    pub parsable: bool,
    pub partition: Option<String>,
    pub priority: Option<u32>,
    pub qos: Option<String>,
    pub quiet: bool,
    pub reboot: bool,
    pub requeue: Option<bool>,
    pub reservation: Option<String>,
    pub sharing: Option<Sharing>,
    pub signal: Option<String>,
    pub sockets_per_node: Option<u32>,
    pub test_only: bool,
    pub threads_per_core: Option<u32>,
    /// `--hint`, as given (the job sees it as `SLURM_HINT`).
    pub hint: Option<String>,
    pub time: Option<TimeLimit>,
    pub time_min: Option<TimeLimit>,
    pub tmp_mb: Option<u64>,
    pub verbose: u32,
    pub wait: bool,
    pub wckey: Option<String>,
    pub wrap: Option<String>,
    /// Every option given, from any source, by its long name, with its
    /// value as `sbatch -v` lists it ("defined options").
    pub defined: std::collections::BTreeMap<&'static str, String>,
    /// `--uid` / `--gid` as given (a name or a number; root only).
    pub uid: Option<String>,
    pub gid: Option<String>,
    /// Options accepted without effect, as spelled.
    pub ignored: Vec<String>,
}

/// What the command line asks for before any script is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    Help,
    Usage,
    Version,
    Submit(CommandLine),
}

/// The command line split into sbatch's options, the script and its
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    pub options: Vec<Found<Key>>,
    /// The script file; `None` reads the script from standard input (or
    /// uses `--wrap`).
    pub script: Option<String>,
    pub script_args: Vec<String>,
    /// The `--wrap` command, when given on the command line.
    pub wrap: Option<String>,
}

/// Reads the command line (without the program name), as Slurm's first
/// pass over it does: options in order, each value checked as it is read
/// (so `--time=abc --bogus` fails on the time), `--help`, `--usage` and
/// `--version` winning as soon as they are reached. `read_file` and `now`
/// serve the checks, as in [`resolve`].
pub fn parse_command_line(
    args: &[String],
    read_file: ReadFile<'_>,
    now: i64,
) -> Result<Invocation, OptError> {
    let mut getopt = opts::Getopt::new(args, SHORTS, LONGS, Ordering::StopAtOperand);
    let mut options = Vec::new();
    let mut checked = SbatchOpts::default();
    for found in &mut getopt {
        let found = found?;
        match found.key {
            Key::Help => return Ok(Invocation::Help),
            Key::Usage => return Ok(Invocation::Usage),
            Key::Version => return Ok(Invocation::Version),
            _ => {}
        }
        apply_found(&mut checked, &found, read_file, now)?;
        options.push(found);
    }
    let wrap = checked.wrap.take();
    let mut operands = getopt.into_operands().into_iter();
    let script = operands.next();
    Ok(Invocation::Submit(CommandLine {
        options,
        script,
        script_args: operands.collect(),
        wrap,
    }))
}

/// How the options read a file they name (a node file): its bytes, or why
/// it could not be opened. Handed in, so that reading options stays pure;
/// sbatch's own is `sbatch::read_node_file`.
pub type ReadFile<'a> = &'a dyn Fn(&str) -> io::Result<Vec<u8>>;

/// Combines the sources as Slurm 22.05 does: the `#SBATCH` lines of
/// `script` (when there is one), then `env` (`SBATCH_*`), then the command
/// line, each overriding what came before. One exception: a kind of memory
/// request from the environment gives way to another kind the script asks
/// for (`SBATCH_MEM_PER_CPU` with `#SBATCH --mem`: `--mem` counts).
/// `read_file` reads the node files options name; `now` resolves relative
/// times (`--begin=now+1hour`).
pub fn resolve(
    cli: &CommandLine,
    script: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    read_file: ReadFile<'_>,
    now: i64,
) -> Result<SbatchOpts, OptError> {
    let mut o = SbatchOpts::default();
    // The kinds of memory request the script and the command line make
    // (those of the environment give way to them).
    let mut memory_kinds: Vec<Key> = Vec::new();
    let note_memory = |kinds: &mut Vec<Key>, key: Key| {
        if matches!(key, Key::Mem | Key::MemPerCpu | Key::MemPerGpu) && !kinds.contains(&key) {
            kinds.push(key);
        }
    };
    if let Some(text) = script {
        for (line, words) in directives::parse(text) {
            let split = opts::split(&words, SHORTS, LONGS, Ordering::Permute)
                .map_err(|error| OptError::Directive { line, error })?;
            for found in split.options {
                apply_found(&mut o, &found, read_file, now)?;
                note_memory(&mut memory_kinds, found.key);
            }
        }
    }
    let script_memory = o.memory;
    for (name, key) in ENV_VARS {
        if let Some(value) = env(name) {
            let has_arg = LONGS
                .iter()
                .find(|l| l.key == *key)
                .map_or(HasArg::No, |l| l.has_arg);
            // A flag's variable sets the flag whatever its value.
            let value = match has_arg {
                HasArg::Required => Some(value),
                HasArg::Optional => (!value.is_empty()).then_some(value),
                HasArg::No => None,
            };
            apply(&mut o, *key, value.as_deref(), name, read_file, now)?;
        }
    }
    let env_kind = o.memory.map(|m| match m {
        Memory::PerNode(_) => Key::Mem,
        Memory::PerCpu(_) => Key::MemPerCpu,
    });
    if env_kind.is_some_and(|k| !memory_kinds.is_empty() && !memory_kinds.contains(&k)) {
        o.memory = script_memory;
    }
    for found in &cli.options {
        apply_found(&mut o, found, read_file, now)?;
        note_memory(&mut memory_kinds, found.key);
    }
    if memory_kinds.len() > 1 {
        return Err(OptError::Fatal(
            "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.".into(),
        ));
    }
    if let (Some(deadline), Some(begin)) = (o.deadline, o.begin_time) {
        if deadline < begin {
            return Err(refused(
                "Incompatible begin and deadline time specification",
            ));
        }
    }
    Ok(o)
}

/// Everything at once, for tests and tools: the command line, then the
/// script text given (if any), then `env`.
pub fn parse(
    args: &[String],
    script: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    read_file: ReadFile<'_>,
    now: i64,
) -> Result<Option<SbatchOpts>, OptError> {
    match parse_command_line(args, read_file, now)? {
        Invocation::Submit(cli) => resolve(&cli, script, env, read_file, now).map(Some),
        _ => Ok(None),
    }
}

fn apply_found(
    o: &mut SbatchOpts,
    found: &Found<Key>,
    read_file: ReadFile<'_>,
    now: i64,
) -> Result<(), OptError> {
    apply(
        o,
        found.key,
        found.value.as_deref(),
        &found.spelled,
        read_file,
        now,
    )
}

/// `--begin` and `--deadline`. Slurm's time parser answers 0 for a
/// failure, so sbatch refuses the epoch itself (`1970-01-01` in UTC), with
/// no position line.
fn timestamp(value: &str, option: &'static str, now: i64) -> Result<i64, OptError> {
    match parse_timestamp(value, now) {
        Ok(0) => Err(invalid(format!("Invalid {option} specification"))),
        Ok(t) => Ok(t),
        Err(error) => Err(OptError::BadTime { option, error }),
    }
}

/// `--time` and `--time-min` as Slurm's sbatch reads them: no blanks
/// around the value, and days with nothing after the dash (`1-`) are whole
/// days.
fn job_time(value: &str) -> Option<TimeLimit> {
    if value.trim() != value {
        return None;
    }
    match value.strip_suffix('-') {
        Some(days) if !days.is_empty() && days.bytes().all(|b| b.is_ascii_digit()) => {
            parse_time_limit(&format!("{days}-0")).ok()
        }
        _ => parse_time_limit(value).ok(),
    }
}

/// The node list of a node file, as Slurm's sbatch reads it.
fn nodes_from_file(path: &str, read_file: ReadFile<'_>) -> Result<String, NodeFileError> {
    let bytes = read_file(path).map_err(|e| NodeFileError::Open {
        path: path.to_owned(),
        reason: slurm_common::os_error_text(&e),
    })?;
    values::node_file(path, &bytes)
}

/// A positive count as Slurm's numeric options read it.
fn count(value: &str, name: &str) -> Result<u32, OptError> {
    values::count_from(value, name, 1)
}

fn text(value: Option<&str>) -> Option<String> {
    value.map(str::to_owned)
}

/// The largest `--nice` adjustment either way.
const NICE_LIMIT: u32 = 2_147_483_645;
/// `--priority` must stay below this (Slurm's `NO_VAL - 1`).
const PRIORITY_LIMIT: u32 = u32::MAX - 1;
/// The priority `--priority=top` asks for.
const PRIORITY_TOP: u32 = u32::MAX - 2;

/// Records one option. `spelled` names it in messages about ignored
/// options.
fn apply(
    o: &mut SbatchOpts,
    key: Key,
    value: Option<&str>,
    spelled: &str,
    read_file: ReadFile<'_>,
    now: i64,
) -> Result<(), OptError> {
    let v = value.unwrap_or("");
    match key {
        Key::Account => o.account = text(value),
        Key::Array => o.array = text(value),
        Key::Begin => o.begin_time = Some(timestamp(v, "--begin", now)?),
        Key::Chdir => o.chdir = text(value),
        Key::Clusters => o.clusters = text(value),
        Key::Comment => o.comment = text(value),
        Key::Constraint => o.constraint = text(value),
        Key::Contiguous => o.contiguous = true,
        Key::CoresPerSocket => o.cores_per_socket = Some(count(v, "--cores-per-socket")?),
        Key::CpusPerTask => o.cpus_per_task = Some(count(v, "--cpus-per-task")?),
        Key::Deadline => o.deadline = Some(timestamp(v, "--deadline", now)?),
        Key::Dependency => o.dependency = text(value),
        Key::Distribution => {
            values::distribution(v)?;
            o.distribution = text(value);
        }
        Key::Error => o.error = text(value),
        Key::Exclude => o.exclude = text(value),
        Key::Exclusive => {
            o.sharing = Some(match value.map(str::to_ascii_lowercase).as_deref() {
                None | Some("") => Sharing::Exclusive,
                Some("user") => Sharing::ExclusiveUser,
                Some("mcs") => Sharing::ExclusiveMcs,
                Some(_) => return Err(invalid("Invalid --exclusive specification")),
            });
        }
        Key::Export => o.export = text(value),
        Key::ExportFile => o.export_file = text(value),
        Key::Gpus => o.gpus = text(value),
        Key::GpusPerNode => o.gpus_per_node = text(value),
        Key::GpusPerTask => o.gpus_per_task = text(value),
        // `none` alone asks for no generic resource.
        Key::Gres if v.trim().eq_ignore_ascii_case("none") => o.gres = None,
        Key::Gres => o.gres = text(value),
        Key::Help | Key::Usage | Key::Version => {}
        Key::Hold => o.hold = true,
        Key::NoKill => {
            o.no_kill = match value.map(str::to_ascii_lowercase).as_deref() {
                None | Some("" | "set") => true,
                Some("off" | "no") => false,
                Some(_) => return Err(invalid("Invalid --no-kill specification")),
            };
        }
        Key::Input => o.input = text(value),
        Key::JobName => o.job_name = text(value),
        Key::KillOnInvalidDep => {
            o.kill_on_invalid_dep = Some(match v.to_ascii_lowercase().as_str() {
                "yes" => true,
                "no" => false,
                _ => return Err(invalid("Invalid --kill-on-invalid-dep specification")),
            });
        }
        Key::Licenses => o.licenses = text(value),
        Key::Network => o.network = text(value),
        Key::Switches => o.switches = Some(values::switches(v)?),
        Key::Container => o.container = text(value),
        Key::ClusterConstraint => o.cluster_constraint = text(value),
        Key::Prefer => o.prefer = text(value),
        Key::McsLabel => o.mcs_label = text(value),
        Key::BurstBuffer => o.burst_buffer = text(value),
        Key::BatchFeatures => o.batch_features = text(value),
        Key::BurstBufferFile => {
            // Read for the burst buffer plugin, which has nothing to stage
            // here; a file that cannot be read is refused as Slurm does.
            if std::fs::File::open(v).is_err() {
                return Err(refused("Invalid --bbf specification"));
            }
        }
        Key::MailType => {
            o.mail_type = values::mail_type(v)?;
        }
        Key::MailUser => o.mail_user = text(value),
        Key::Mem => {
            let mb = parse_mem_mb(v.trim()).map_err(|_| invalid("Invalid --mem specification"))?;
            o.memory = Some(Memory::PerNode(mb));
        }
        Key::MemPerCpu => {
            let mb = parse_mem_mb(v.trim())
                .map_err(|_| invalid("Invalid --mem-per-cpu specification"))?;
            o.memory = Some(Memory::PerCpu(mb));
        }
        Key::Mincpus => o.mincpus = Some(count(v, "--mincpus")?),
        // Read as C's strtol reads it: "abc" is 0, "5x" is 5.
        Key::Nice => {
            let nice = value.map_or(100, |s| opts::strtol(s).0);
            o.nice = i32::try_from(nice)
                .ok()
                .filter(|n| n.unsigned_abs() <= NICE_LIMIT)
                .ok_or_else(|| {
                    invalid(format!(
                        "Invalid --nice value, out of range (+/- {NICE_LIMIT})"
                    ))
                })
                .map(Some)?;
        }
        Key::NoRequeue => o.requeue = Some(false),
        // Slurm's sbatch reads the file itself and sends its hosts as the
        // node list, so `-F` and `-w` overwrite each other, the last one
        // winning.
        Key::Nodefile => {
            let nodes = nodes_from_file(v, read_file).map_err(|e| {
                if e.is_fatal() {
                    OptError::Refused(e.slurm_text())
                } else {
                    invalid(format!("{}\nInvalid --nodefile node file", e.slurm_text()))
                }
            })?;
            o.nodelist = Some(nodes);
        }
        // A value holding a `/` names a node file, and a bad one ends sbatch
        // with status 1 and Slurm's line about the file alone.
        Key::Nodelist if v.contains('/') => {
            let nodes =
                nodes_from_file(v, read_file).map_err(|e| OptError::Refused(e.slurm_text()))?;
            o.nodelist = Some(nodes);
        }
        Key::Nodelist => o.nodelist = text(value),
        Key::Nodes => o.nodes = Some(values::node_count(v)?),
        Key::Ntasks => o.ntasks = Some(count(v, "--ntasks")?),
        Key::NtasksPerCore => o.ntasks_per_core = Some(count(v, "--ntasks-per-core")?),
        Key::NtasksPerNode => o.ntasks_per_node = Some(count(v, "--ntasks-per-node")?),
        Key::NtasksPerSocket => o.ntasks_per_socket = Some(count(v, "--ntasks-per-socket")?),
        Key::OpenMode => {
            let lower = v.to_ascii_lowercase();
            o.open_mode = Some(if !lower.is_empty() && "append".starts_with(&lower) {
                OpenMode::Append
            } else if !lower.is_empty() && "truncate".starts_with(&lower) {
                OpenMode::Truncate
            } else {
                return Err(invalid("Invalid --open-mode specification"));
            });
        }
        Key::Output => o.output = text(value),
        Key::Overcommit => o.overcommit = true,
        Key::Oversubscribe => o.sharing = Some(Sharing::Oversubscribe),
        Key::Parsable => o.parsable = true,
        Key::Partition => o.partition = text(value),
        // `top`, or a number read as C's strtoll reads it ("abc" is 0);
        // 0 leaves the priority to the controller.
        Key::Priority => {
            o.priority = if v.eq_ignore_ascii_case("top") {
                Some(PRIORITY_TOP)
            } else {
                let p = opts::strtol(v).0;
                if p < 0 {
                    return Err(invalid("Priority must be >= 0"));
                }
                if p >= i64::from(PRIORITY_LIMIT) {
                    return Err(invalid(format!("Priority must be < {PRIORITY_LIMIT}")));
                }
                u32::try_from(p).ok().filter(|p| *p > 0)
            };
        }
        Key::Qos => o.qos = text(value),
        Key::Quiet => o.quiet = true,
        Key::Reboot => o.reboot = true,
        Key::Requeue => o.requeue = Some(true),
        Key::Reservation => o.reservation = text(value),
        Key::Signal => {
            check_signal_spec(v)?;
            o.signal = text(value);
        }
        Key::SocketsPerNode => o.sockets_per_node = Some(count(v, "--sockets-per-node")?),
        Key::TestOnly => o.test_only = true,
        Key::ThreadsPerCore => o.threads_per_core = Some(count(v, "--threads-per-core")?),
        Key::Time => {
            let t = job_time(v).ok_or_else(|| invalid("Invalid --time specification"))?;
            o.time = Some(t.for_job_request());
        }
        Key::TimeMin => {
            let t = job_time(v).ok_or_else(|| invalid("Invalid --time-min specification"))?;
            o.time_min = Some(t.for_job_request());
        }
        Key::Tmp => {
            let mb = parse_mem_mb(v.trim()).map_err(|_| invalid("Invalid --tmp specification"))?;
            o.tmp_mb = Some(mb);
        }
        Key::Verbose => o.verbose += 1,
        Key::Wait => o.wait = true,
        Key::Wckey => o.wckey = text(value),
        Key::Wrap => o.wrap = text(value),
        Key::Uid => o.uid = text(value),
        Key::Gid => o.gid = text(value),
        Key::Ignored => o.ignored.push(spelled.to_owned()),
        Key::Propagate => {
            values::propagate(v)?;
            o.propagate = Some(v.to_owned());
        }
        Key::GetUserEnv => {
            check_ignored(key, v)?;
            o.get_user_env = true;
        }
        Key::CpuFreq => {
            values::cpu_freq(v)?;
            o.cpu_freq = text(value);
        }
        Key::DelayBoot => o.delay_boot = Some(values::delay_boot(v)?),
        Key::GpusPerSocket => {
            o.gpus_per_socket = text(value);
            o.ignored.push(spelled.to_owned());
        }
        Key::GresFlags => o.gres_enforce_binding = Some(values::gres_flags(v)?),
        Key::NtasksPerGpu => {
            o.ntasks_per_gpu = Some(count(v, "--ntasks-per-gpu")?);
            o.ignored.push(spelled.to_owned());
        }
        Key::Power => {
            let (flags, notices) = values::power(v);
            o.power = flags;
            o.notices.extend(notices);
        }
        Key::SpreadJob => o.spread_job = true,
        // Sockets, cores and threads; `*` leaves a count as it was.
        Key::ExtraNodeInfo => {
            let [sockets, cores, threads] = values::extra_node_info(v)?;
            o.extra_node_info = true;
            o.sockets_per_node = sockets.or(o.sockets_per_node);
            o.cores_per_socket = cores.or(o.cores_per_socket);
            o.threads_per_core = threads.or(o.threads_per_core);
        }
        Key::CpusPerGpu => {
            o.cpus_per_gpu = Some(count(v, "--cpus-per-gpu")?);
            o.ignored.push(spelled.to_owned());
        }
        Key::MemPerGpu => {
            let mb = parse_mem_mb(v.trim())
                .map_err(|_| invalid("Invalid --mem-per-gpu specification"))?;
            o.mem_per_gpu = Some(mb);
            o.ignored.push(spelled.to_owned());
        }
        Key::Hint => {
            // Passed on to the job (SLURM_HINT), without effect on where
            // it runs.
            values::hint(v)?;
            o.hint = text(value);
            o.ignored.push(spelled.to_owned());
        }
        Key::AcctgFreq => {
            values::acctg_freq(v)?;
            o.acctg_freq = text(value);
        }
        Key::GpuBind => {
            values::gpu_bind(v)?;
            o.gpu_bind = text(value);
        }
        Key::Profile => {
            values::profile(v)?;
            o.profile = text(value);
        }
        Key::CoreSpec | Key::MemBind | Key::ThreadSpec | Key::WaitAllNodes => {
            check_ignored(key, v)?;
            o.ignored.push(spelled.to_owned());
        }
    }
    if let Some(name) = long_name(key) {
        let shown = defined_value(o, key, value);
        o.defined.insert(name, shown);
    }
    Ok(())
}

/// The long name of `key`, the first one listed for it.
fn long_name(key: Key) -> Option<&'static str> {
    if matches!(key, Key::Ignored | Key::Help | Key::Usage | Key::Version) {
        return None;
    }
    LONGS.iter().find(|l| l.key == key).map(|l| l.name)
}

/// How `sbatch -v` shows an option just applied to `o`: flags as `set`,
/// times and dates as Slurm writes them, the rest as given.
fn defined_value(o: &SbatchOpts, key: Key, value: Option<&str>) -> String {
    let limit = |t: Option<TimeLimit>| t.map(slurm_common::time::format_time_limit_scontrol);
    let shown = match key {
        Key::Time => limit(o.time),
        Key::TimeMin => limit(o.time_min),
        Key::Begin => o.begin_time.map(slurm_common::time::format_timestamp),
        Key::Deadline => o.deadline.map(slurm_common::time::format_timestamp),
        Key::CpuFreq => o
            .cpu_freq
            .as_deref()
            .map(|f| values::CpuFreq::read(f).env()),
        Key::Verbose => Some(o.verbose.to_string()),
        Key::Requeue => Some("requeue".to_owned()),
        Key::NoRequeue => Some("no-requeue".to_owned()),
        Key::NoKill => Some(if o.no_kill { "set" } else { "unset" }.to_owned()),
        Key::Exclusive if value.is_none() => Some("exclusive".to_owned()),
        Key::OpenMode => o.open_mode.map(|m| match m {
            OpenMode::Append => "a".to_owned(),
            OpenMode::Truncate => "t".to_owned(),
        }),
        _ => None,
    };
    shown
        .or_else(|| value.map(str::to_owned))
        .unwrap_or_else(|| "set".to_owned())
}

/// Checks the value of an option accepted without effect.
fn check_ignored(key: Key, v: &str) -> Result<(), OptError> {
    match key {
        Key::CoreSpec => values::count_from(v, "--core-spec", 0).map(|_| ()),
        Key::GetUserEnv => values::get_user_env(v),
        Key::Hint => values::hint(v),
        Key::MemBind => values::mem_bind(v),
        Key::ThreadSpec => count(v, "--thread-spec").map(|_| ()),
        Key::WaitAllNodes => values::wait_all_nodes(v),
        _ => Ok(()),
    }
}

/// `--signal=[{R|B}:]<sig_num>[@sig_time]`.
fn check_signal_spec(spec: &str) -> Result<(), OptError> {
    let bad = || invalid("Invalid --signal specification");
    let rest = match spec.split_once(':') {
        Some((flags, rest))
            if !flags.is_empty() && flags.chars().all(|c| matches!(c, 'R' | 'B')) =>
        {
            rest
        }
        Some(_) => return Err(bad()),
        None => spec,
    };
    let (sig, time) = match rest.split_once('@') {
        Some((s, t)) => (s, Some(t)),
        None => (rest, None),
    };
    parse_signal(sig).ok_or_else(bad)?;
    if let Some(t) = time {
        let secs: u32 = t.parse().map_err(|_| bad())?;
        if secs > 0xffff {
            return Err(bad());
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn no_files(_: &str) -> io::Result<Vec<u8>> {
        Err(io::Error::from_raw_os_error(libc::ENOENT))
    }

    /// Parses `s` (and `script`) where the files `files` names exist.
    fn with_files(
        s: &str,
        script: Option<&str>,
        files: &[(&str, &str)],
    ) -> Result<SbatchOpts, OptError> {
        let read = |path: &str| {
            files
                .iter()
                .find(|(name, _)| *name == path)
                .map(|(_, text)| text.as_bytes().to_vec())
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
        };
        parse(&args(s), script, &no_env, &read, NOW).map(|o| o.unwrap())
    }

    fn parse_command_line_(words: &[String]) -> Result<Invocation, OptError> {
        parse_command_line(words, &no_files, NOW)
    }

    /// `--no-kill` with no value, empty or `set` asks for it; `off` and
    /// `no` (any case) do not; `sbatch -v` lists it as set or unset.
    #[test]
    fn no_kill_values() {
        for (args, want) in [
            ("-k", true),
            ("--no-kill", true),
            ("--no-kill=", true),
            ("--no-kill=SET", true),
            ("--no-kill=off", false),
            ("-kNo", false),
        ] {
            let o = opts(args);
            assert_eq!(o.no_kill, want, "{args}");
            let shown = if want { "set" } else { "unset" };
            assert_eq!(o.defined.get("no-kill").map(String::as_str), Some(shown));
        }
        assert!(!opts("-J x").no_kill);
    }

    fn opts(s: &str) -> SbatchOpts {
        parse(&args(s), None, &no_env, &no_files, NOW)
            .unwrap()
            .unwrap()
    }

    fn err(s: &str) -> String {
        parse(&args(s), None, &no_env, &no_files, NOW)
            .unwrap_err()
            .to_string()
    }

    /// `sbatch -v`'s list: by long name, from every source, flags as
    /// `set`, times as Slurm writes them (checked against Slurm 22.05).
    #[test]
    fn defined_options_as_sbatch_v_lists_them() {
        let words: Vec<String> = [
            "-v",
            "-H",
            "-t",
            "1-2:03",
            "--no-requeue",
            "--open-mode=append",
            "--exclusive",
            "--cpu-freq=high",
            "-J",
            "x",
        ]
        .iter()
        .map(|w| (*w).to_string())
        .collect();
        let none = |_: &str| -> io::Result<Vec<u8>> { Ok(Vec::new()) };
        let Invocation::Submit(cli) = parse_command_line(&words, &none, 0).unwrap() else {
            panic!("not a submission");
        };
        let script = "#!/bin/sh\n#SBATCH --mem-per-cpu=100\n#SBATCH -J fromscript\ntrue\n";
        let o = resolve(&cli, Some(script), &|_| None, &none, 0).unwrap();
        let listed: Vec<(&str, &str)> = o.defined.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(
            listed,
            [
                ("cpu-freq", "High"),
                ("exclusive", "exclusive"),
                ("hold", "set"),
                ("job-name", "x"),
                ("mem-per-cpu", "100"),
                ("no-requeue", "no-requeue"),
                ("open-mode", "a"),
                ("time", "1-02:03:00"),
                ("verbose", "1"),
            ]
        );
    }

    #[test]
    fn option_table() {
        let o = opts(
            "-J name -o out.%j -e err -i in -p debug,batch -t 1:00:00 -N 2-3 -n 4 \
             --ntasks-per-node=2 -c 2 --mem=2G --exclusive -w n[1-2] -x n3 -C intel -O \
             -D /tmp --hold --parsable -W --comment=hello --test-only --dependency=afterok:5 \
             -A acct --qos=normal --no-requeue --open-mode=append --priority 7 --nice \
             -Q -vv --array=0-3%2 --gres=gpu:1 --signal=B:USR1@60 --mail-type=END \
             --mail-user=a@b --export=NONE",
        );
        assert_eq!(o.job_name.as_deref(), Some("name"));
        assert_eq!(o.output.as_deref(), Some("out.%j"));
        assert_eq!(o.error.as_deref(), Some("err"));
        assert_eq!(o.input.as_deref(), Some("in"));
        assert_eq!(o.partition.as_deref(), Some("debug,batch"));
        assert_eq!(o.time, Some(TimeLimit::Minutes(60)));
        assert_eq!(o.nodes, Some((2, Some(3))));
        assert_eq!(o.ntasks, Some(4));
        assert_eq!(o.ntasks_per_node, Some(2));
        assert_eq!(o.cpus_per_task, Some(2));
        assert_eq!(o.memory, Some(Memory::PerNode(2048)));
        assert_eq!(o.sharing, Some(Sharing::Exclusive));
        assert_eq!(o.nodelist.as_deref(), Some("n[1-2]"));
        assert_eq!(o.exclude.as_deref(), Some("n3"));
        assert_eq!(o.constraint.as_deref(), Some("intel"));
        assert!(o.overcommit && o.hold && o.parsable && o.wait && o.test_only && o.quiet);
        assert_eq!(o.chdir.as_deref(), Some("/tmp"));
        assert_eq!(o.comment.as_deref(), Some("hello"));
        assert_eq!(o.dependency.as_deref(), Some("afterok:5"));
        assert_eq!(o.account.as_deref(), Some("acct"));
        assert_eq!(o.qos.as_deref(), Some("normal"));
        assert_eq!(o.requeue, Some(false));
        assert_eq!(o.open_mode, Some(OpenMode::Append));
        assert_eq!(o.priority, Some(7));
        assert_eq!(o.nice, Some(100));
        assert_eq!(o.verbose, 2);
        assert_eq!(o.array.as_deref(), Some("0-3%2"));
        assert_eq!(o.gres.as_deref(), Some("gpu:1"));
        assert_eq!(o.signal.as_deref(), Some("B:USR1@60"));
        assert_eq!(o.mail_type.as_deref(), Some("END"));
        assert_eq!(o.mail_user.as_deref(), Some("a@b"));
        assert_eq!(o.export.as_deref(), Some("NONE"));
    }

    #[test]
    fn long_forms_and_abbreviations() {
        let o = opts(
            "--job-n x --part p --time 5 --nodes=1 --mem-per-c=100 --exclus=user --begin=now+60",
        );
        assert_eq!(o.job_name.as_deref(), Some("x"));
        assert_eq!(o.partition.as_deref(), Some("p"));
        assert_eq!(o.time, Some(TimeLimit::Minutes(5)));
        assert_eq!(o.nodes, Some((1, None)));
        assert_eq!(o.memory, Some(Memory::PerCpu(100)));
        assert_eq!(o.sharing, Some(Sharing::ExclusiveUser));
        assert_eq!(o.begin_time, Some(NOW + 60));
        assert_eq!(
            err("--par x"),
            "option '--par' is ambiguous; possibilities: '--parsable' '--partition'"
        );
        assert_eq!(opts("-t 0").time, Some(TimeLimit::Infinite));
        assert_eq!(opts("--open-mode=t").open_mode, Some(OpenMode::Truncate));
        // Kept for scontrol show job (CPU_max_freq=High).
        let freq = opts("--cpu-freq=high");
        assert_eq!(freq.cpu_freq.as_deref(), Some("high"));
        assert!(freq.ignored.is_empty());
        assert!(!ignoring_changes_the_job("--cpu-freq"));
        let spelled = opts("--mem-per-gpu=4G -S 1").ignored;
        assert_eq!(spelled, vec!["--mem-per-gpu".to_owned(), "-S".to_owned()]);
        assert!(spelled.iter().all(|s| ignoring_changes_the_job(s)));
    }

    #[test]
    fn script_and_its_arguments() {
        let Invocation::Submit(cli) = parse_command_line_(&args("-N1 job.sh -N 2 x")).unwrap()
        else {
            panic!()
        };
        assert_eq!(cli.script.as_deref(), Some("job.sh"));
        assert_eq!(cli.script_args, args("-N 2 x"));
        assert_eq!(cli.options.len(), 1);
        let Invocation::Submit(cli) = parse_command_line_(&args("--wrap=true")).unwrap() else {
            panic!()
        };
        assert_eq!((cli.script, cli.wrap.as_deref()), (None, Some("true")));
        assert_eq!(
            parse_command_line_(&args("-p x --vers")).unwrap(),
            Invocation::Version
        );
        assert_eq!(
            parse_command_line_(&args("--bogus --help"))
                .unwrap_err()
                .to_string(),
            "unrecognized option '--bogus'"
        );
        // --help counts once reached, whatever follows.
        assert_eq!(
            parse_command_line_(&args("--help --bogus")).unwrap(),
            Invocation::Help
        );
        assert_eq!(parse_command_line_(&args("-h")).unwrap(), Invocation::Help);
        assert_eq!(
            parse_command_line_(&args("--usage")).unwrap(),
            Invocation::Usage
        );
    }

    #[test]
    fn values_refused_with_slurm_texts() {
        assert_eq!(
            err("--bogus-option --wrap=true"),
            "unrecognized option '--bogus-option'"
        );
        assert_eq!(
            err("--time=abc --wrap=true"),
            "Invalid --time specification"
        );
        assert_eq!(err("-t 1:2:3:4"), "Invalid --time specification");
        // Slurm 22.05 refuses blanks around a time and reads `1-` as a day.
        assert_eq!(job_time(" 5"), None);
        assert_eq!(job_time("5 "), None);
        assert_eq!(job_time("1-"), Some(TimeLimit::Minutes(1440)));
        assert_eq!(job_time("-"), None);
        assert_eq!(job_time("1-:"), None);
        assert_eq!(job_time("00005"), Some(TimeLimit::Minutes(5)));
        assert_eq!(job_time("0-0"), parse_time_limit("0").ok());
        assert_eq!(err("-n 0"), "Invalid numeric value \"0\" for --ntasks.");
        assert_eq!(
            err("-c x"),
            "Invalid numeric value \"x\" for --cpus-per-task."
        );
        assert_eq!(
            err("-N 3-1"),
            "Maximum node count 1 is less than minimum node count 3"
        );
        assert_eq!(err("-N abc"), "\"abc\" is not a valid node count");
        assert_eq!(err("--mem=lots"), "Invalid --mem specification");
        assert_eq!(
            err("--mem=99999999999999999999"),
            "Invalid --mem specification"
        );
        assert_eq!(err("--begin=someday"), "Invalid --begin specification");
        assert_eq!(err("--open-mode=x"), "Invalid --open-mode specification");
        assert_eq!(err("--signal=FOO"), "Invalid --signal specification");
        assert_eq!(err("--signal=X:USR1"), "Invalid --signal specification");
        assert_eq!(err("--exclusive=bad"), "Invalid --exclusive specification");
        assert_eq!(err("--no-kill=yes"), "Invalid --no-kill specification");
        assert_eq!(err("-k1"), "Invalid --no-kill specification");
        assert_eq!(
            err("--nice=9999999999"),
            "Invalid --nice value, out of range (+/- 2147483645)"
        );
        assert_eq!(
            err("--nice=-2147483646"),
            "Invalid --nice value, out of range (+/- 2147483645)"
        );
        assert_eq!(err("--priority=-1"), "Priority must be >= 0");
        assert_eq!(
            err("--priority=4294967294"),
            "Priority must be < 4294967294"
        );
        assert_eq!(
            err("--priority=99999999999999999999"),
            "Priority must be < 4294967294"
        );
        assert_eq!(err("-t"), "option requires an argument -- 't'");
    }

    /// `--nice` and `--priority` read numbers as C's strtol does, so text
    /// that is not a number counts as 0, as in Slurm 22.05.
    #[test]
    fn nice_and_priority_read_numbers_as_slurm_does() {
        let nice = |s: &str| opts(&format!("--nice={s}")).nice;
        assert_eq!(nice("abc"), Some(0));
        assert_eq!(nice("-3x"), Some(-3));
        assert_eq!(nice(""), Some(0));
        assert_eq!(nice("-2147483645"), Some(-2_147_483_645));
        assert_eq!(opts("--nice").nice, Some(100));
        let priority = |s: &str| opts(&format!("--priority={s}")).priority;
        // 0 leaves the priority to the controller.
        assert_eq!(priority("abc"), None);
        assert_eq!(priority("0"), None);
        assert_eq!(priority(""), None);
        assert_eq!(priority("7x"), Some(7));
        assert_eq!(priority("+5"), Some(5));
        assert_eq!(priority("TOP"), Some(4_294_967_293));
        assert_eq!(priority("4294967293"), Some(4_294_967_293));
    }

    /// Slurm's first pass over the command line checks each value as it
    /// reads it, before the script is opened: the first bad word wins,
    /// whether getopt or the value check refuses it.
    #[test]
    fn command_line_values_are_checked_in_order() {
        assert_eq!(err("--time=abc --bogus"), "Invalid --time specification");
        assert_eq!(err("--bogus --time=abc"), "unrecognized option '--bogus'");
        assert_eq!(
            parse_command_line_(&args("--time=abc --help"))
                .unwrap_err()
                .to_string(),
            "Invalid --time specification"
        );
        assert_eq!(
            parse_command_line_(&args("--open-mode=x nofile.sh"))
                .unwrap_err()
                .to_string(),
            "Invalid --open-mode specification"
        );
    }

    #[test]
    fn exit_statuses_follow_slurm() {
        let status = |s: &str| {
            parse(&args(s), None, &no_env, &no_files, NOW)
                .unwrap_err()
                .exit_status()
        };
        assert_eq!(status("-n 0"), 1);
        assert_eq!(status("--thread-spec=x"), 1);
        assert_eq!(status("-B 2:x"), 1);
        assert_eq!(status("--hint=foo"), 1);
        assert_eq!(status("--propagate=FOO"), 1);
        assert_eq!(status("-t abc"), 255);
        assert_eq!(status("--distribution=foo"), 255);
        assert_eq!(status("--mail-type=FOO"), 255);
        assert_eq!(status("--bogus"), 255);
        // Checked, then accepted without effect.
        assert_eq!(
            opts("--hint=nomultithread --cpu-freq=high -B 2:*:1").ignored,
            vec!["--hint"]
        );
    }

    #[test]
    fn memory_kinds_exclude_each_other_unless_from_the_environment() {
        let e = parse(
            &args("--mem=1G --mem-per-cpu=1G"),
            None,
            &no_env,
            &no_files,
            NOW,
        )
        .unwrap_err();
        assert_eq!(
            e,
            OptError::Fatal(
                "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.".into()
            )
        );
        assert_eq!(e.exit_status(), 1);
        let script = "#!/bin/sh\n#SBATCH --mem=1G\n";
        assert!(parse(
            &args("--mem-per-gpu=1G x.sh"),
            Some(script),
            &no_env,
            &no_files,
            NOW
        )
        .is_err());
        assert_eq!(
            opts("--mem=1G --mem=2G").memory,
            Some(Memory::PerNode(2048))
        );
        // A kind from SBATCH_* gives way to another from the command line.
        let env = |n: &str| (n == "SBATCH_MEM_PER_CPU").then(|| "100".to_owned());
        let o = parse(&args("--mem=1G x.sh"), None, &env, &no_files, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(o.memory, Some(Memory::PerNode(1024)));
    }

    /// Slurm 22.05's order, as its sbatch man page states and a real
    /// cluster shows: `SBATCH_JOB_NAME=envname sbatch job.sh` with
    /// `#SBATCH -J dirname` in job.sh names the job envname.
    #[test]
    fn precedence_cli_over_env_over_directives() {
        let env = |n: &str| match n {
            "SBATCH_PARTITION" => Some("envpart".to_owned()),
            "SBATCH_TIMELIMIT" => Some("7".to_owned()),
            "SBATCH_JOB_NAME" => Some("envname".to_owned()),
            "SBATCH_ACCOUNT" => Some("envacct".to_owned()),
            "SBATCH_WAIT" => Some(String::new()),
            _ => None,
        };
        let script = "#!/bin/sh\n#SBATCH -p scriptpart -q scriptqos\n#SBATCH --time=8 -J scriptname\necho\n#SBATCH --comment=late\n";
        let o = parse(&args("-J cliname x.sh"), Some(script), &env, &no_files, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(o.partition.as_deref(), Some("envpart"));
        assert_eq!(o.time, Some(TimeLimit::Minutes(7)));
        assert_eq!(o.job_name.as_deref(), Some("cliname"));
        assert_eq!(o.account.as_deref(), Some("envacct"));
        assert_eq!(o.qos.as_deref(), Some("scriptqos"));
        // The directive after the first command is not read.
        assert_eq!(o.comment, None);
        assert!(o.wait);
        let o = parse(
            &args("x.sh"),
            Some("#!/bin/sh\ntrue\n"),
            &env,
            &no_files,
            NOW,
        )
        .unwrap()
        .unwrap();
        assert_eq!(o.partition.as_deref(), Some("envpart"));
        assert_eq!(o.time, Some(TimeLimit::Minutes(7)));
        let bad_env = |n: &str| (n == "SBATCH_TIMELIMIT").then(|| "abc".to_owned());
        assert_eq!(
            parse(&args("x.sh"), None, &bad_env, &no_files, NOW)
                .unwrap_err()
                .to_string(),
            "Invalid --time specification"
        );
        // The script's lines are read before the environment: their
        // errors come first.
        let bad_mode = |n: &str| (n == "SBATCH_OPEN_MODE").then(|| "bogus".to_owned());
        assert_eq!(
            parse(
                &args("x.sh"),
                Some("#!/bin/sh\n#SBATCH -t abc\n"),
                &bad_mode,
                &no_files,
                NOW
            )
            .unwrap_err()
            .to_string(),
            "Invalid --time specification"
        );
    }

    /// A memory request from the environment overrides one of the same
    /// kind in the script, and gives way to one of another kind.
    #[test]
    fn environment_memory_against_the_script() {
        let memory = |var: &str, directive: &str| {
            let env = |n: &str| (n == var).then(|| "200".to_owned());
            let script = format!("#!/bin/sh\n#SBATCH {directive}\n");
            parse(&args("x.sh"), Some(&script), &env, &no_files, NOW)
                .unwrap()
                .unwrap()
                .memory
        };
        assert_eq!(
            memory("SBATCH_MEM_PER_NODE", "--mem=100"),
            Some(Memory::PerNode(200))
        );
        assert_eq!(
            memory("SBATCH_MEM_PER_CPU", "--mem=100"),
            Some(Memory::PerNode(100))
        );
        assert_eq!(
            memory("SBATCH_MEM_PER_NODE", "--mem-per-cpu=100"),
            Some(Memory::PerCpu(100))
        );
        assert_eq!(
            memory("SBATCH_MEM_PER_CPU", "--mem-per-cpu=100"),
            Some(Memory::PerCpu(200))
        );
        assert_eq!(
            memory("SBATCH_MEM_PER_CPU", "-J x"),
            Some(Memory::PerCpu(200))
        );
    }

    #[test]
    fn bad_directive_names_its_line() {
        let e = parse(
            &args("x.sh"),
            Some("#!/bin/sh\n\n#SBATCH --bogus\n"),
            &no_env,
            &no_files,
            NOW,
        )
        .unwrap_err();
        assert_eq!(
            e,
            OptError::Directive {
                line: 3,
                error: GetoptError::UnknownLong("bogus".into())
            }
        );
    }

    #[test]
    fn every_long_option_is_reachable_by_its_full_name() {
        for l in LONGS {
            assert_eq!(opts::find_long(LONGS, l.name).unwrap().name, l.name);
        }
        let mut names: Vec<&str> = LONGS.iter().map(|l| l.name).collect();
        let sorted = {
            let mut s = names.clone();
            s.sort_unstable();
            s
        };
        assert_eq!(names, sorted);
        names.dedup();
        assert_eq!(names.len(), LONGS.len());
    }

    #[test]
    fn gpu_bind_acctg_freq_and_profile_are_kept_and_gres_none_asks_for_nothing() {
        let o = opts("--gpu-bind=verbose,closest --acctg-freq=30 --profile=task");
        assert_eq!(o.gpu_bind.as_deref(), Some("verbose,closest"));
        assert_eq!(o.acctg_freq.as_deref(), Some("30"));
        assert_eq!(o.profile.as_deref(), Some("task"));
        assert!(o.ignored.is_empty(), "{:?}", o.ignored);
        assert_eq!(opts("--gres=gpu:1 --gres=NONE").gres, None);
        assert_eq!(
            opts("--gres=none,gpu:0").gres.as_deref(),
            Some("none,gpu:0")
        );
    }

    #[test]
    fn switches_container_and_cluster_constraint_are_kept_without_a_warning() {
        let o = opts("--switches=2@10:00 --container=/srv/b --cluster-constraint=!a,b");
        assert_eq!(o.switches, Some((2, Some(600))));
        assert_eq!(o.container.as_deref(), Some("/srv/b"));
        assert_eq!(o.cluster_constraint.as_deref(), Some("!a,b"));
        assert!(o.ignored.is_empty(), "{:?}", o.ignored);
        assert_eq!(
            err("--switches=0"),
            "Invalid numeric value \"0\" for --switches."
        );
    }

    #[test]
    fn network_is_kept_and_a_deadline_before_begin_refused() {
        assert_eq!(opts("--network=sn_all").network.as_deref(), Some("sn_all"));
        assert_eq!(
            err("--begin=now+2hour --deadline=now+1hour"),
            "Incompatible begin and deadline time specification"
        );
        assert!(opts("--begin=now+1hour --deadline=now+2hour")
            .deadline
            .is_some());
        // Slurm 22.05 exits 1 here, not 255; equal times are fine.
        let e = parse(
            &args("--begin=now+2hour --deadline=now+1hour"),
            None,
            &no_env,
            &no_files,
            NOW,
        )
        .unwrap_err();
        assert_eq!(e.exit_status(), 1);
        assert!(opts("--begin=now+1hour --deadline=now+1hour")
            .deadline
            .is_some());
    }

    /// `-B 1:1` asks for one socket per node and one core per socket, as
    /// the long options do; the later of the two spellings wins, and `*`
    /// leaves a count alone.
    #[test]
    fn extra_node_info_sets_sockets_cores_and_threads() {
        let layout = |line: &str| {
            let o = opts(line);
            (o.sockets_per_node, o.cores_per_socket, o.threads_per_core)
        };
        assert_eq!(layout("-B 1:1"), (Some(1), Some(1), None));
        assert_eq!(layout("-B 1:1:1"), (Some(1), Some(1), Some(1)));
        assert_eq!(layout("-B *:1"), (None, Some(1), None));
        assert_eq!(layout("-B 1:*:2"), (Some(1), None, Some(2)));
        assert_eq!(
            layout("-B 1:1 --sockets-per-node=2"),
            (Some(2), Some(1), None)
        );
        assert_eq!(layout("--sockets-per-node=1 -B 2"), (Some(2), None, None));
        assert_eq!(
            layout("--cores-per-socket=3 -B 2:*"),
            (Some(2), Some(3), None)
        );
        assert!(opts("-B 1:1").ignored.is_empty());
        // Slurm 22.05 did not read past the third part.
        assert_eq!(layout("-B 1:1:1:x"), (Some(1), Some(1), Some(1)));
    }

    #[test]
    fn gpu_ratios_are_kept_for_the_gres_check() {
        let o = opts("--cpus-per-gpu=2 --mem-per-gpu=1G");
        assert_eq!((o.cpus_per_gpu, o.mem_per_gpu), (Some(2), Some(1024)));
        assert_eq!(o.ignored, vec!["--cpus-per-gpu", "--mem-per-gpu"]);
    }

    #[test]
    fn bad_times_print_slurms_position_line() {
        for (s, option, notice) in [
            (
                "--begin=now+x",
                "--begin",
                "Invalid time specification (pos=3): now+x",
            ),
            (
                "--begin=garbage",
                "--begin",
                "Invalid time specification (pos=0): garbage",
            ),
            (
                "--begin=2026-13-01",
                "--begin",
                "Invalid time specification (pos=5): 2026-13-01",
            ),
            (
                "--deadline=xyz",
                "--deadline",
                "Invalid time specification (pos=0): xyz",
            ),
            ("-b 0", "--begin", "Invalid time specification (pos=-1): 0"),
        ] {
            let e = parse(&args(s), None, &no_env, &no_files, NOW).unwrap_err();
            assert!(
                matches!(&e, OptError::BadTime { option: o, error }
                    if *o == option && error.slurm_notice().as_deref() == Some(notice)),
                "{s}: {e:?}"
            );
            assert_eq!(e.to_string(), format!("Invalid {option} specification"));
            assert_eq!(e.exit_status(), 255);
        }
        // Nothing to point at, or Slurm's failure value 0 itself: no
        // position line.
        for s in ["--begin=", "--begin=-", "--begin=now-1700000000"] {
            let e = parse(&args(s), None, &no_env, &no_files, NOW).unwrap_err();
            let notice = match &e {
                OptError::BadTime { error, .. } => error.slurm_notice(),
                _ => None,
            };
            assert_eq!(notice, None, "{s}");
            assert_eq!(e.to_string(), "Invalid --begin specification", "{s}");
            assert_eq!(e.exit_status(), 255, "{s}");
        }
        assert_eq!(opts("--begin=now+1hour").begin_time, Some(NOW + 3600));
        // From a directive, the same.
        let e = parse(
            &args("x.sh"),
            Some("#!/bin/sh\n#SBATCH --begin=now+x\n"),
            &no_env,
            &no_files,
            NOW,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            OptError::BadTime {
                option: "--begin",
                ..
            }
        ));
    }

    #[test]
    fn a_node_file_becomes_the_node_list() {
        let files = [("hosts", "n2\nn1\n# spare\nn1\n"), ("other", "m1,m2\n")];
        let nodes = |s: &str| with_files(s, None, &files).unwrap().nodelist;
        assert_eq!(nodes("-F hosts"), Some("n[1-2]".to_owned()));
        assert_eq!(nodes("--nodefile=hosts"), Some("n[1-2]".to_owned()));
        assert_eq!(nodes("--nodef hosts"), Some("n[1-2]".to_owned()));
        // -F and -w set the same list: the last one wins.
        assert_eq!(nodes("-F hosts -w n3"), Some("n3".to_owned()));
        assert_eq!(nodes("-w n3 -F hosts"), Some("n[1-2]".to_owned()));
        assert_eq!(nodes("-F hosts -F other"), Some("m[1-2]".to_owned()));
        let o = with_files("x.sh", Some("#!/bin/sh\n#SBATCH -F hosts\n"), &files).unwrap();
        assert_eq!(o.nodelist.as_deref(), Some("n[1-2]"));
        // The command line still beats the directive.
        let o = with_files("-w n7 x.sh", Some("#!/bin/sh\n#SBATCH -F hosts\n"), &files);
        assert_eq!(o.unwrap().nodelist.as_deref(), Some("n7"));
        assert!(with_files("-F hosts", None, &files)
            .unwrap()
            .ignored
            .is_empty());
        assert!(!ignoring_changes_the_job("-F") && !ignoring_changes_the_job("--nodefile"));
    }

    #[test]
    fn a_node_list_holding_a_slash_is_a_node_file() {
        let files = [("./hosts", "n1\nn2\n"), ("/etc/nodes", "n3\n")];
        let nodes = |s: &str| with_files(s, None, &files).unwrap().nodelist;
        assert_eq!(nodes("-w ./hosts"), Some("n[1-2]".to_owned()));
        assert_eq!(nodes("--nodelist=/etc/nodes"), Some("n3".to_owned()));
        assert_eq!(nodes("-w n[1-2]"), Some("n[1-2]".to_owned()));
        // Refused with the file's line alone, status 1.
        let e = with_files("-w n1/x", None, &files).unwrap_err();
        assert_eq!(
            e,
            OptError::Refused(
                "slurm_allocate_resources error opening file n1/x, No such file or directory"
                    .into()
            )
        );
        assert_eq!(e.exit_status(), 1);
        let e = with_files("-w ./empty", None, &[("./empty", "")]).unwrap_err();
        assert_eq!(e, OptError::Refused("Hostlist is empty!".into()));
    }

    #[test]
    fn node_file_refusals_follow_slurm() {
        let refusal = |files: &[(&str, &str)], s: &str| {
            let e = with_files(s, None, files).unwrap_err();
            (e.to_string(), e.exit_status())
        };
        let invalid = |first: &str| (format!("{first}\nInvalid --nodefile node file"), 255);
        assert_eq!(
            refusal(&[], "-F /nonexist"),
            invalid(
                "slurm_allocate_resources error opening file /nonexist, No such file or directory"
            )
        );
        assert_eq!(
            refusal(&[("empty", "")], "-F empty"),
            invalid("Hostlist is empty!")
        );
        assert_eq!(
            refusal(&[("pad", "  n1  \n")], "-F pad"),
            invalid("Invalid hostfile pad contents on line 1")
        );
        let long = format!("n1\nn2\n{}\n", "n".repeat(1100));
        assert_eq!(
            refusal(&[("long", &long)], "-F long"),
            invalid("Line 2, of hostfile long too long")
        );
        // A malformed expression ends sbatch with status 1, as in Slurm
        // (which reports a memory allocation failure there).
        let (text, status) = refusal(&[("bad", "n[2-1]\n")], "-F bad");
        assert_eq!(status, 1);
        assert!(text.starts_with("line 1 of node file bad: "), "{text}");
    }
}
