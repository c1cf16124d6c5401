//! `squeue`'s table: the `-o` field codes, the `-O` long names, the default
//! and `-l`/`--start` layouts, sorting and the state filter.

use std::collections::HashMap;
use std::fmt::Write as _;

use slurm_common::state::{JobState, JobStateCode};
use slurm_common::time::format_time_limit;
use slurm_proto::v1::{job_info::Memory, JobInfo, NodeSharing};

use super::spec::{self, FormatError, Item, SortKey};
use super::{
    base_state, common_limit, limit_minutes, or_null, pad, pad_tail, push_u64, reason_text,
    shown_state, shows_reason, write_job_id, write_scaled, write_tres, BaseUnit, Ctx, Units,
};

/// The default layout.
pub const DEFAULT_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
/// `squeue -l`.
pub const LONG_FORMAT: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
/// `squeue --start`.
pub const START_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";
/// The default order: partition, state, then priority highest first.
pub const DEFAULT_SORT: &str = "P,t,-p";
/// The order of `squeue --start`: expected start time.
pub const START_SORT: &str = "S";

/// The field codes `-o` accepts.
const CODES: &str = "AaBbCcDdEeFfGgHhIiJjKkLlMmNnOoPpQqRrSsTtUuVvWwXxYyZz";

/// Whether `code` is a job field.
pub fn is_code(code: char) -> bool {
    CODES.contains(code)
}

/// Parses an `-o`/`--format` string. `%all` (any case) is every field,
/// separated by `|`, as in Slurm.
pub fn parse_format(spec: &str) -> Result<Vec<Item>, FormatError> {
    if spec.eq_ignore_ascii_case("%all") {
        return Ok(all_fields());
    }
    spec::parse(spec, "job", is_code)
}

/// Parses an `-o`/`--format` string as squeue does: unknown codes are
/// kept as text and returned, to be reported.
pub fn parse_format_lenient(spec: &str) -> (Vec<Item>, Vec<String>) {
    if spec.eq_ignore_ascii_case("%all") {
        return (all_fields(), Vec::new());
    }
    spec::parse_lenient(spec, is_code)
}

/// The fields of `-o %all`: every lower-case letter, then every upper-case
/// one, each whole, with `|` between them.
fn all_fields() -> Vec<Item> {
    let mut items = Vec::new();
    for code in ('a'..='z').chain('A'..='Z').filter(|c| is_code(*c)) {
        if !items.is_empty() {
            items.push(Item::Literal("|".to_owned()));
        }
        items.push(Item::Field {
            code,
            width: None,
            right: false,
        });
    }
    items
}

/// Fields that only `-O` names, with no `-o` letter. Their codes are taken
/// from Unicode's private use area, which no `-o` format can reach (`-o`
/// takes only the letters of [`CODES`]); everything else (headers, values,
/// widths) treats them like the letters.
mod long_only {
    pub const ACCRUE_TIME: char = '\u{E000}';
    pub const ADMIN_COMMENT: char = '\u{E001}';
    pub const ALLOC_NODES: char = '\u{E002}';
    pub const ALLOC_SID: char = '\u{E003}';
    pub const ASSOC_ID: char = '\u{E004}';
    pub const BATCH_FLAG: char = '\u{E005}';
    pub const BOARDS_PER_NODE: char = '\u{E006}';
    pub const BURST_BUFFER: char = '\u{E007}';
    pub const BURST_BUFFER_STATE: char = '\u{E008}';
    pub const CLUSTER: char = '\u{E009}';
    pub const CLUSTER_FEATURES: char = '\u{E00A}';
    pub const CONTAINER: char = '\u{E00B}';
    pub const CPUS_PER_TASK: char = '\u{E00C}';
    pub const CPUS_PER_TRES: char = '\u{E00D}';
    pub const DEADLINE: char = '\u{E00E}';
    pub const DELAY_BOOT: char = '\u{E00F}';
    pub const DERIVED_EC: char = '\u{E010}';
    pub const ELIGIBLE_TIME: char = '\u{E011}';
    pub const EXIT_CODE: char = '\u{E012}';
    pub const HET_JOB_ID: char = '\u{E013}';
    pub const HET_JOB_ID_SET: char = '\u{E014}';
    pub const HET_JOB_OFFSET: char = '\u{E015}';
    pub const LAST_SCHED_EVAL: char = '\u{E016}';
    pub const MAX_CPUS: char = '\u{E017}';
    pub const MAX_NODES: char = '\u{E018}';
    pub const MCS_LABEL: char = '\u{E019}';
    pub const MEM_PER_TRES: char = '\u{E01A}';
    pub const TIME_MIN: char = '\u{E01B}';
    pub const NETWORK: char = '\u{E01C}';
    pub const NTASKS_PER_BOARD: char = '\u{E01D}';
    pub const NTASKS_PER_CORE: char = '\u{E01E}';
    pub const NTASKS_PER_NODE: char = '\u{E01F}';
    pub const NTASKS_PER_SOCKET: char = '\u{E020}';
    pub const TASKS: char = '\u{E021}';
    pub const ORIGIN: char = '\u{E022}';
    pub const ORIGIN_RAW: char = '\u{E023}';
    pub const PENDING_TIME: char = '\u{E024}';
    pub const PREEMPT_TIME: char = '\u{E025}';
    pub const PREFER: char = '\u{E026}';
    pub const PROFILE: char = '\u{E027}';
    pub const REBOOT: char = '\u{E028}';
    pub const REQ_SWITCH: char = '\u{E029}';
    pub const REQUEUE: char = '\u{E02A}';
    pub const RESIZE_TIME: char = '\u{E02B}';
    pub const RESTART_COUNT: char = '\u{E02C}';
    pub const ACTIVE_SIBLINGS: char = '\u{E02D}';
    pub const ACTIVE_SIBLINGS_RAW: char = '\u{E02E}';
    pub const VIABLE_SIBLINGS: char = '\u{E02F}';
    pub const VIABLE_SIBLINGS_RAW: char = '\u{E030}';
    pub const SOCKETS_PER_BOARD: char = '\u{E031}';
    pub const STDERR: char = '\u{E032}';
    pub const STDIN: char = '\u{E033}';
    pub const STDOUT: char = '\u{E034}';
    pub const SYSTEM_COMMENT: char = '\u{E035}';
    pub const TRES_ALLOC: char = '\u{E036}';
    pub const TRES_BIND: char = '\u{E037}';
    pub const TRES_FREQ: char = '\u{E038}';
    pub const TRES_PER_JOB: char = '\u{E039}';
    pub const TRES_PER_SOCKET: char = '\u{E03A}';
    pub const TRES_PER_TASK: char = '\u{E03B}';
    pub const WAIT4SWITCH: char = '\u{E03C}';
}

use long_only as lo;

/// Whether field `code` writes a timestamp.
pub fn is_time_code(code: char) -> bool {
    matches!(
        code,
        'e' | 'S'
            | 'V'
            | lo::ACCRUE_TIME
            | lo::DEADLINE
            | lo::ELIGIBLE_TIME
            | lo::LAST_SCHED_EVAL
            | lo::PREEMPT_TIME
    )
}

/// `-O` names (lower case, as they are matched) and the field each shows:
/// every name of squeue 22.05's job table, hidden aliases included.
const LONG_NAMES: &[(&str, char)] = &[
    ("account", 'a'),
    ("accruetime", lo::ACCRUE_TIME),
    ("admin_comment", lo::ADMIN_COMMENT),
    ("allocnodes", lo::ALLOC_NODES),
    ("allocsid", lo::ALLOC_SID),
    ("arrayjobid", 'F'),
    ("arraytaskid", 'K'),
    ("associd", lo::ASSOC_ID),
    ("batchflag", lo::BATCH_FLAG),
    ("batchhost", 'B'),
    ("boardspernode", lo::BOARDS_PER_NODE),
    ("burstbuffer", lo::BURST_BUFFER),
    ("burstbufferstate", lo::BURST_BUFFER_STATE),
    ("cluster", lo::CLUSTER),
    ("clusterfeature", lo::CLUSTER_FEATURES),
    ("command", 'o'),
    ("comment", 'k'),
    ("container", lo::CONTAINER),
    ("contiguous", 'O'),
    ("cores", 'I'),
    ("corespec", 'X'),
    ("cpuspertask", lo::CPUS_PER_TASK),
    ("cpus-per-task", lo::CPUS_PER_TASK),
    ("cpus-per-tres", lo::CPUS_PER_TRES),
    ("deadline", lo::DEADLINE),
    ("delayboot", lo::DELAY_BOOT),
    ("dependency", 'E'),
    ("derivedec", lo::DERIVED_EC),
    ("eligibletime", lo::ELIGIBLE_TIME),
    ("endtime", 'e'),
    ("excnodes", 'x'),
    ("exit_code", lo::EXIT_CODE),
    ("feature", 'f'),
    ("gres", 'b'),
    ("groupid", 'G'),
    ("groupname", 'g'),
    ("hetjobid", lo::HET_JOB_ID),
    ("hetjobidset", lo::HET_JOB_ID_SET),
    ("hetjoboffset", lo::HET_JOB_OFFSET),
    ("jobarrayid", 'i'),
    ("jobid", 'A'),
    ("lastschedeval", lo::LAST_SCHED_EVAL),
    ("licenses", 'W'),
    ("maxcpus", lo::MAX_CPUS),
    ("maxnodes", lo::MAX_NODES),
    ("mcslabel", lo::MCS_LABEL),
    ("mem-per-tres", lo::MEM_PER_TRES),
    ("mincpus", 'c'),
    ("minmemory", 'm'),
    ("mintime", lo::TIME_MIN),
    ("mintmpdisk", 'd'),
    ("name", 'j'),
    ("network", lo::NETWORK),
    ("nice", 'y'),
    ("nodelist", 'N'),
    ("ntperboard", lo::NTASKS_PER_BOARD),
    ("ntpercore", lo::NTASKS_PER_CORE),
    ("ntpernode", lo::NTASKS_PER_NODE),
    ("ntpersocket", lo::NTASKS_PER_SOCKET),
    ("numcpus", 'C'),
    ("numnodes", 'D'),
    ("numtasks", lo::TASKS),
    ("origin", lo::ORIGIN),
    ("originraw", lo::ORIGIN_RAW),
    ("oversubscribe", 'h'),
    ("packjobid", lo::HET_JOB_ID),
    ("packjobidset", lo::HET_JOB_ID_SET),
    ("packjoboffset", lo::HET_JOB_OFFSET),
    ("partition", 'P'),
    ("pendingtime", lo::PENDING_TIME),
    ("preempttime", lo::PREEMPT_TIME),
    ("prefer", lo::PREFER),
    ("priority", 'p'),
    ("prioritylong", 'Q'),
    ("profile", lo::PROFILE),
    ("qos", 'q'),
    ("reason", 'r'),
    ("reasonlist", 'R'),
    ("reboot", lo::REBOOT),
    ("reqnodes", 'n'),
    ("reqswitch", lo::REQ_SWITCH),
    ("requeue", lo::REQUEUE),
    ("reservation", 'v'),
    ("resizetime", lo::RESIZE_TIME),
    ("restartcnt", lo::RESTART_COUNT),
    ("schednodes", 'Y'),
    ("sct", 'z'),
    ("selectjobinfo", 's'),
    ("shared", 'h'),
    ("siblingsactive", lo::ACTIVE_SIBLINGS),
    ("siblingsactiveraw", lo::ACTIVE_SIBLINGS_RAW),
    ("siblingsviable", lo::VIABLE_SIBLINGS),
    ("siblingsviableraw", lo::VIABLE_SIBLINGS_RAW),
    ("sockets", 'H'),
    ("sperboard", lo::SOCKETS_PER_BOARD),
    ("starttime", 'S'),
    ("state", 'T'),
    ("statecompact", 't'),
    ("stderr", lo::STDERR),
    ("stdin", lo::STDIN),
    ("stdout", lo::STDOUT),
    ("submittime", 'V'),
    ("system_comment", lo::SYSTEM_COMMENT),
    ("threads", 'J'),
    ("timeleft", 'L'),
    ("timelimit", 'l'),
    ("timeused", 'M'),
    ("tres", lo::TRES_ALLOC),
    ("tres-alloc", lo::TRES_ALLOC),
    ("tres-bind", lo::TRES_BIND),
    ("tres-freq", lo::TRES_FREQ),
    ("tres-per-job", lo::TRES_PER_JOB),
    ("tres-per-node", 'b'),
    ("tres-per-socket", lo::TRES_PER_SOCKET),
    ("tres-per-task", lo::TRES_PER_TASK),
    ("userid", 'U'),
    ("username", 'u'),
    ("wait4switch", lo::WAIT4SWITCH),
    ("wckey", 'w'),
    ("workdir", 'Z'),
];

/// The field a `-O` name (any case) shows.
fn long_code(name: &str) -> Option<char> {
    LONG_NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, c)| *c)
}

/// Parses an `-O`/`--Format` list (`JobID:.10,Name,State:8`).
pub fn parse_long_format(spec: &str) -> Result<Vec<Item>, FormatError> {
    spec::parse_long(spec, "job", 20, long_code)
}

/// [`parse_long_format`] as squeue reads it: names it does not know are
/// returned, to be reported, and leave only their suffix.
pub fn parse_long_format_lenient(spec: &str) -> (Vec<Item>, Vec<String>) {
    spec::parse_long_lenient(spec, 20, long_code)
}

/// The codes `-S` sorts by.
const SORT_CODES: &str = "BCDdeGgHIiJjLlMmNPpQSTtUuVvz";
/// Codes `-S` accepts and does not sort by, as Slurm 22.05.
const SORT_NO_OPS: &str = "cfhnO";

/// An `-S` list as squeue reads it: character by character from the end,
/// each letter a key (reversed when a `-` comes right before it), `,`,
/// `+` and `-` skipped, and `cluster` one key. So `ij` sorts by id then
/// name, and `-` or an empty list sorts by nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortSpec {
    /// The keys, most significant first.
    pub keys: Vec<SortKey>,
    /// How many vestigial `b` (gres) keys were met before any bad one:
    /// each is noted (`squeue: Invalid sort specification: b`) and skipped.
    pub gres_notes: usize,
    /// The first character, counting from the end, that is no key: Slurm
    /// stops there with `Invalid sort specification`, after the header.
    pub invalid: Option<char>,
}

/// Reads an `-S`/`--sort` list (`P,t,-p`); see [`SortSpec`].
pub fn parse_sort_spec(spec: &str) -> SortSpec {
    const CLUSTER: &str = "cluster";
    let chars: Vec<char> = spec.chars().collect();
    let mut out = SortSpec::default();
    let mut i = chars.len();
    while i > 0 {
        i -= 1;
        let c = chars[i];
        if matches!(c, ',' | '+' | '-') {
            continue;
        }
        let word_start = i + 1 >= CLUSTER.len();
        let word_start = word_start.then(|| i + 1 - CLUSTER.len());
        if let Some(start) = word_start.filter(|&st| {
            chars[st..=i]
                .iter()
                .zip(CLUSTER.chars())
                .all(|(a, b)| a.eq_ignore_ascii_case(&b))
        }) {
            // Every job of a report comes from this one cluster.
            i = start;
            continue;
        }
        if c == 'b' {
            out.gres_notes += 1;
        } else if SORT_CODES.contains(c) {
            let descending = i > 0 && chars[i - 1] == '-';
            out.keys.push(SortKey {
                code: c,
                descending,
            });
        } else if !SORT_NO_OPS.contains(c) {
            out.invalid = Some(c);
            break;
        }
    }
    out.keys.reverse();
    out
}

/// [`parse_sort_spec`], a key it does not know being an error.
pub fn parse_sort(spec: &str) -> Result<Vec<SortKey>, FormatError> {
    let parsed = parse_sort_spec(spec);
    match parsed.invalid {
        Some(key) => Err(FormatError::UnknownSortKey {
            key: key.to_string(),
        }),
        None => Ok(parsed.keys),
    }
}

/// Column title of a field.
fn header(code: char) -> &'static str {
    match code {
        'A' => "JOBID",
        'a' => "ACCOUNT",
        'B' => "EXEC_HOST",
        'b' => "TRES_PER_NODE",
        'C' => "CPUS",
        'c' => "MIN_CPUS",
        'D' => "NODES",
        'd' => "MIN_TMP_DISK",
        'E' => "DEPENDENCY",
        'e' => "END_TIME",
        'F' => "ARRAY_JOB_ID",
        'f' => "FEATURES",
        'G' => "GROUP",
        'g' => "GROUP",
        'H' => "SOCKETS_PER_NODE",
        'h' => "OVER_SUBSCRIBE",
        'I' => "CORES_PER_SOCKET",
        'i' => "JOBID",
        'J' => "THREADS_PER_CORE",
        'j' => "NAME",
        'K' => "ARRAY_TASK_ID",
        'k' => "COMMENT",
        'L' => "TIME_LEFT",
        'l' => "TIME_LIMIT",
        'M' => "TIME",
        'm' => "MIN_MEMORY",
        'N' => "NODELIST",
        'n' => "REQ_NODES",
        'O' => "CONTIGUOUS",
        'o' => "COMMAND",
        'P' => "PARTITION",
        'p' => "PRIORITY",
        'Q' => "PRIORITY",
        'q' => "QOS",
        'R' => "NODELIST(REASON)",
        'r' => "REASON",
        'S' => "START_TIME",
        // Slurm 22.05 has no select plugin data to show: no title, no value.
        's' => "",
        'T' => "STATE",
        't' => "ST",
        'U' => "UID",
        'u' => "USER",
        'V' => "SUBMIT_TIME",
        'v' => "RESERVATION",
        'W' => "LICENSES",
        'w' => "WCKEY",
        'X' => "CORE_SPEC",
        'x' => "EXC_NODES",
        'Y' => "SCHEDNODES",
        'y' => "NICE",
        'Z' => "WORK_DIR",
        'z' => "S:C:T",
        code => long_only_header(code),
    }
}

/// Column title of a field that only `-O` names (Slurm's spelling, typo
/// in `VIALBLE_SIBLINGS_RAW` included).
fn long_only_header(code: char) -> &'static str {
    match code {
        lo::ACCRUE_TIME => "ACCRUE_TIME",
        lo::ADMIN_COMMENT => "ADMIN_COMMENT",
        lo::ALLOC_NODES => "ALLOC_NODES",
        lo::ALLOC_SID => "ALLOC_SID",
        lo::ASSOC_ID => "ASSOC_ID",
        lo::BATCH_FLAG => "BATCH_FLAG",
        lo::BOARDS_PER_NODE => "BOARDS_PER_NODE",
        lo::BURST_BUFFER => "BURST_BUFFER",
        lo::BURST_BUFFER_STATE => "BURST_BUFFER_STATE",
        lo::CLUSTER => "CLUSTER",
        lo::CLUSTER_FEATURES => "CLUSTER_FEATURES",
        lo::CONTAINER => "CONTAINER",
        lo::CPUS_PER_TASK => "CPUS_PER_TASK",
        lo::CPUS_PER_TRES => "CPUS_PER_TRES",
        lo::DEADLINE => "DEADLINE",
        lo::DELAY_BOOT => "DELAY_BOOT",
        lo::DERIVED_EC => "DERIVED_EC",
        lo::ELIGIBLE_TIME => "ELIGIBLE_TIME",
        lo::EXIT_CODE => "EXIT_CODE",
        lo::HET_JOB_ID => "HET_JOB_ID",
        lo::HET_JOB_ID_SET => "HET_JOB_ID_SET",
        lo::HET_JOB_OFFSET => "HET_JOB_OFFSET",
        lo::LAST_SCHED_EVAL => "LAST_SCHED_EVAL",
        lo::MAX_CPUS => "MAX_CPUS",
        lo::MAX_NODES => "MAX_NODES",
        lo::MCS_LABEL => "MCSLABEL",
        lo::MEM_PER_TRES => "MEM_PER_TRES",
        lo::TIME_MIN => "TIME_MIN",
        lo::NETWORK => "NETWORK",
        lo::NTASKS_PER_BOARD => "NTASKS_PER_BOARD",
        lo::NTASKS_PER_CORE => "NTASKS_PER_CORE",
        lo::NTASKS_PER_NODE => "NTASKS_PER_NODE",
        lo::NTASKS_PER_SOCKET => "NTASKS_PER_SOCKET",
        lo::TASKS => "TASKS",
        lo::ORIGIN => "ORIGIN",
        lo::ORIGIN_RAW => "ORIGIN_RAW",
        lo::PENDING_TIME => "PENDING_TIME",
        lo::PREEMPT_TIME => "PREEMPT_TIME",
        lo::PREFER => "PREFER",
        lo::PROFILE => "PROFILE",
        lo::REBOOT => "REBOOT",
        lo::REQ_SWITCH => "REQ_SWITCH",
        lo::REQUEUE => "REQUEUE",
        lo::RESIZE_TIME => "RESIZE_TIME",
        lo::RESTART_COUNT => "RESTART_COUNT",
        lo::ACTIVE_SIBLINGS => "ACTIVE_SIBLINGS",
        lo::ACTIVE_SIBLINGS_RAW => "ACTIVE_SIBLINGS_RAW",
        lo::VIABLE_SIBLINGS => "VIABLE_SIBLINGS",
        lo::VIABLE_SIBLINGS_RAW => "VIALBLE_SIBLINGS_RAW",
        lo::SOCKETS_PER_BOARD => "SOCKETS_PER_BOARD",
        lo::STDERR => "STDERR",
        lo::STDIN => "STDIN",
        lo::STDOUT => "STDOUT",
        lo::SYSTEM_COMMENT => "SYSTEM_COMMENT",
        lo::TRES_ALLOC => "TRES_ALLOC",
        lo::TRES_BIND => "TRES_BIND",
        lo::TRES_FREQ => "TRES_FREQ",
        lo::TRES_PER_JOB => "TRES_PER_JOB",
        lo::TRES_PER_SOCKET => "TRES_PER_SOCKET",
        lo::TRES_PER_TASK => "TRES_PER_TASK",
        lo::WAIT4SWITCH => "WAIT4SWITCH",
        _ => "",
    }
}

/// `0:00`, `1:05`, `1:02:03`, `1-02:03:04` without a temporary string
/// (the same text as `slurm_common::time::format_duration_squeue`).
pub(crate) fn write_duration(out: &mut String, secs: u64) {
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    let two = |out: &mut String, v: u64| {
        out.push(char::from(b'0' + (v / 10) as u8));
        out.push(char::from(b'0' + (v % 10) as u8));
    };
    if d > 0 {
        push_u64(out, d);
        out.push('-');
        two(out, h);
        out.push(':');
        two(out, m);
    } else if h > 0 {
        push_u64(out, h);
        out.push(':');
        two(out, m);
    } else {
        push_u64(out, m);
    }
    out.push(':');
    two(out, s);
}

fn write_time(out: &mut String, unix: i64, ctx: &Ctx) {
    if unix <= 0 {
        out.push_str("N/A");
    } else {
        out.push_str(&ctx.timestamp(unix));
    }
}

/// `%m`: the per-node or per-CPU request alike, in megabytes.
fn write_memory(out: &mut String, job: &JobInfo, units: Units) {
    let mb = match job.memory {
        Some(Memory::MemPerNodeMb(mb) | Memory::MemPerCpuMb(mb)) => mb,
        None => 0,
    };
    write_scaled(out, mb, BaseUnit::Mega, units);
}

fn sharing_word(job: &JobInfo) -> &'static str {
    match NodeSharing::try_from(job.sharing).unwrap_or(NodeSharing::Unspecified) {
        NodeSharing::Exclusive => "NO",
        NodeSharing::ExclusiveUser => "USER",
        NodeSharing::ExclusiveMcs => "MCS",
        NodeSharing::Oversubscribe => "YES",
        NodeSharing::Shared | NodeSharing::Unspecified => "OK",
    }
}

/// Appends the value of field `code` for `job`, sizes scaled as Slurm
/// scales them by default.
pub fn write_value(out: &mut String, code: char, job: &JobInfo, ctx: &Ctx) {
    write_value_in(out, code, job, ctx, Units::Scaled);
}

/// [`write_value`] with sizes and counts shown in `units` (`--noconvert`:
/// [`Units::Original`]); only `%c`, `%d` and `%m` go through the unit
/// conversion, as in Slurm.
pub fn write_value_in(out: &mut String, code: char, job: &JobInfo, ctx: &Ctx, units: Units) {
    match code {
        'A' => {
            let _ = write!(out, "{}", job.job_id);
        }
        'a' => out.push_str(or_null(&job.account)),
        'B' => out.push_str(if job.batch_host.is_empty() {
            "n/a"
        } else {
            &job.batch_host
        }),
        'b' => out.push_str(if job.gres.is_empty() {
            "N/A"
        } else {
            &job.gres
        }),
        'C' => push_u64(out, job.num_cpus.into()),
        'c' => write_scaled(
            out,
            job.min_cpus_per_node.max(1).into(),
            BaseUnit::Count,
            units,
        ),
        'D' => push_u64(out, job.num_nodes.into()),
        'd' => write_scaled(out, job.min_tmp_disk_mb, BaseUnit::Mega, units),
        'E' => out.push_str(or_null(&job.dependency)),
        // A job that started without a time limit has no end: NONE (a
        // pending one without a planned end shows N/A).
        'e' if job.end_time <= 0 && job.start_time > 0 && base_state(job) != JobState::Pending => {
            out.push_str("NONE");
        }
        'e' => write_time(out, job.end_time, ctx),
        'F' => {
            let _ = write!(out, "{}", job.array_job_id.unwrap_or(job.job_id));
        }
        'f' => out.push_str(or_null(&job.features)),
        'G' => {
            let _ = write!(out, "{}", job.group_id);
        }
        'g' => {
            if job.group_name.is_empty() {
                let _ = write!(out, "{}", job.group_id);
            } else {
                out.push_str(&job.group_name);
            }
        }
        'H' | 'I' | 'J' => out.push('*'),
        'h' => out.push_str(sharing_word(job)),
        'i' => write_job_id(out, job, ctx),
        'j' => out.push_str(&job.name),
        'K' => match (job.array_task_id, job.array_task_spec.is_empty()) {
            (Some(t), _) => {
                let _ = write!(out, "{t}");
            }
            (None, false) => out.push_str(&ctx.task_lists.cut(&job.array_task_spec)),
            (None, true) => out.push_str("N/A"),
        },
        'k' => out.push_str(or_null(&job.comment)),
        'L' => match limit_minutes(job.time_limit.as_ref()) {
            None => out.push_str("UNLIMITED"),
            Some(m) => {
                let left = (u64::from(m) * 60).saturating_sub(job.run_time_secs);
                write_duration(out, left);
            }
        },
        'l' => out.push_str(&format_time_limit(common_limit(job.time_limit.as_ref()))),
        'M' => write_duration(out, job.run_time_secs),
        'm' => write_memory(out, job, units),
        'N' => out.push_str(&job.nodes),
        'n' => out.push_str(&job.required_nodes),
        'O' => out.push_str(if job.contiguous { "1" } else { "0" }),
        'o' => out.push_str(or_null(&job.command)),
        'P' => out.push_str(&job.partition),
        'p' => {
            // Slurm 22.05: the priority over 0xffffffff, 14 decimals.
            let _ = write!(out, "{:.14}", f64::from(job.priority) / f64::from(u32::MAX));
        }
        'Q' => push_u64(out, job.priority.into()),
        'q' => out.push_str(or_null(&job.qos)),
        'R' => {
            if shows_reason(job) {
                out.push('(');
                out.push_str(reason_text(job));
                out.push(')');
            } else {
                out.push_str(&job.nodes);
            }
        }
        // As %R: the description when the controller gave one.
        'r' => out.push_str(reason_text(job)),
        'S' => write_time(out, job.start_time, ctx),
        's' => {}
        'T' => out.push_str(shown_state(job).long_name()),
        't' => out.push_str(shown_state(job).short_code()),
        'U' => {
            let _ = write!(out, "{}", job.user_id);
        }
        'u' => {
            if job.user_name.is_empty() {
                let _ = write!(out, "{}", job.user_id);
            } else {
                out.push_str(&job.user_name);
            }
        }
        'V' => write_time(out, job.submit_time, ctx),
        'v' => out.push_str(or_null(&job.reservation)),
        'W' => out.push_str(or_null(&job.licenses)),
        'w' => out.push_str(or_null(&job.wckey)),
        'X' => out.push_str("N/A"),
        'x' => out.push_str(&job.excluded_nodes),
        'Y' => out.push_str(or_null(&job.scheduled_nodes)),
        'y' => {
            let _ = write!(out, "{}", job.nice);
        }
        'Z' => out.push_str(&job.work_dir),
        'z' => out.push_str("*:*:*"),
        code => write_long_only(out, code, job, ctx),
    }
}

/// The value of a field that only `-O` names. What this controller does
/// not keep (burst buffers, federation, heterogeneous jobs, TRES
/// binding) is shown as Slurm shows it unset.
fn write_long_only(out: &mut String, code: char, job: &JobInfo, ctx: &Ctx) {
    let flag = |on: bool| if on { "1" } else { "0" };
    let exit_status = |e: Option<&slurm_proto::v1::ExitCode>| {
        // The raw wait(2) status, as Slurm prints it here.
        e.map_or(0, |e| (e.status & 0xff) << 8 | (e.signal & 0x7f))
    };
    match code {
        lo::ACCRUE_TIME => write_time(out, job.accrue_time, ctx),
        lo::ELIGIBLE_TIME => write_time(out, job.eligible_time, ctx),
        lo::DEADLINE => write_time(out, job.deadline, ctx),
        lo::LAST_SCHED_EVAL => write_time(out, job.last_sched_eval, ctx),
        lo::PREEMPT_TIME => write_time(out, job.preempt_time, ctx),
        lo::ADMIN_COMMENT => out.push_str(job.admin_comment.as_deref().unwrap_or("(null)")),
        lo::BURST_BUFFER => out.push_str(or_null(&job.burst_buffer)),
        lo::PREFER => out.push_str(or_null(&job.prefer)),
        lo::BURST_BUFFER_STATE | lo::SYSTEM_COMMENT => out.push_str("(null)"),
        lo::ALLOC_NODES => out.push_str(or_null(&job.alloc_node)),
        lo::ALLOC_SID => push_u64(out, job.alloc_sid.into()),
        lo::CLUSTER_FEATURES => out.push_str(or_null(&job.cluster_features)),
        lo::CONTAINER => out.push_str(or_null(&job.container)),
        lo::TRES_BIND => out.push_str(or_na(&job.tres_bind)),
        lo::REQ_SWITCH => push_u64(out, job.req_switch.into()),
        lo::ASSOC_ID | lo::BOARDS_PER_NODE | lo::NTASKS_PER_BOARD => out.push('0'),
        lo::SOCKETS_PER_BOARD => out.push('0'),
        lo::BATCH_FLAG => out.push_str(flag(job.batch)),
        lo::REBOOT => out.push_str(flag(job.reboot)),
        lo::REQUEUE => out.push_str(flag(job.requeue)),
        lo::CLUSTER => out.push_str(or_null(&job.cluster)),
        // Slurm counts one CPU per task when none was asked for.
        lo::CPUS_PER_TASK => push_u64(out, job.cpus_per_task.max(1).into()),
        // 0: never set (a job refused at submission), Slurm's NO_VAL.
        lo::TASKS => push_u64(
            out,
            if job.num_tasks == 0 {
                u64::from(u32::MAX - 1)
            } else {
                job.num_tasks.into()
            },
        ),
        lo::MAX_CPUS => push_u64(out, job.num_cpus.into()),
        lo::MAX_NODES => push_u64(
            out,
            if job.max_nodes > 0 {
                job.max_nodes
            } else {
                job.num_nodes
            }
            .into(),
        ),
        lo::NTASKS_PER_NODE => push_u64(out, job.ntasks_per_node.into()),
        lo::NTASKS_PER_CORE => match job.ntasks_per_core {
            Some(n) => push_u64(out, n.into()),
            None => out.push_str("N/A"),
        },
        lo::NTASKS_PER_SOCKET => match job.ntasks_per_socket {
            Some(n) => push_u64(out, n.into()),
            None => out.push_str("N/A"),
        },
        lo::CPUS_PER_TRES
        | lo::MEM_PER_TRES
        | lo::HET_JOB_ID
        | lo::HET_JOB_ID_SET
        | lo::HET_JOB_OFFSET
        | lo::RESIZE_TIME
        | lo::TRES_FREQ
        | lo::TRES_PER_SOCKET => out.push_str("N/A"),
        lo::DELAY_BOOT => out.push_str("0:00"),
        lo::WAIT4SWITCH => write_duration(out, job.wait4switch_seconds.into()),
        lo::TIME_MIN => write_duration(out, u64::from(job.time_min_minutes.unwrap_or(0)) * 60),
        lo::DERIVED_EC => push_u64(out, exit_status(job.derived_exit_code.as_ref()).into()),
        lo::EXIT_CODE => push_u64(out, exit_status(job.exit_code.as_ref()).into()),
        lo::MCS_LABEL => out.push_str(or_null(&job.mcs_label)),
        lo::NETWORK => out.push_str(or_null(&job.network)),
        lo::ORIGIN
        | lo::ORIGIN_RAW
        | lo::ACTIVE_SIBLINGS
        | lo::ACTIVE_SIBLINGS_RAW
        | lo::VIABLE_SIBLINGS
        | lo::VIABLE_SIBLINGS_RAW => out.push_str("NA"),
        // Seconds from submission to start, or to now while pending.
        lo::PENDING_TIME => {
            let until = if base_state(job) == JobState::Pending {
                ctx.now
            } else {
                job.start_time
            };
            let secs = if job.submit_time > 0 && until > job.submit_time {
                until - job.submit_time
            } else {
                0
            };
            let _ = write!(out, "{secs}");
        }
        lo::PROFILE => out.push_str(if job.profile.is_empty() {
            "NotSet"
        } else {
            &job.profile
        }),
        lo::RESTART_COUNT => push_u64(out, job.restart_count.into()),
        lo::STDERR => write_std_path(out, &job.stderr_path, job),
        lo::STDOUT => write_std_path(out, &job.stdout_path, job),
        lo::STDIN => out.push_str(or_null(&job.stdin_path)),
        // What was allocated, or while pending what was asked for.
        lo::TRES_ALLOC => {
            let alloc = job.tres_allocated.as_ref().filter(|t| !t.items.is_empty());
            write_tres(out, alloc.or(job.tres_requested.as_ref()));
        }
        lo::TRES_PER_JOB => out.push_str(or_na(&job.tres_per_job)),
        lo::TRES_PER_TASK => out.push_str(or_na(&job.tres_per_task)),
        _ => {}
    }
}

fn or_na(value: &str) -> &str {
    if value.is_empty() {
        "N/A"
    } else {
        value
    }
}

/// A job's output or error file as squeue shows it: as given, or for a
/// batch job given none `<workdir>/slurm-<jobid>.out`. Patterns are not
/// expanded. The paths sbatch fills in when none is given (`slurm-%j.out`,
/// `slurm-%A_%a.out` in the working directory) count as none given, since
/// Slurm's sbatch leaves them unset.
fn write_std_path(out: &mut String, path: &str, job: &JobInfo) {
    let default = path
        .strip_prefix(job.work_dir.as_str())
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|file| file == "slurm-%j.out" || file == "slurm-%A_%a.out");
    if !path.is_empty() && !default {
        out.push_str(path);
    } else if job.batch {
        let _ = write!(out, "{}/slurm-{}.out", job.work_dir, job.job_id);
    }
}

/// Appends the header line of `items`.
pub fn render_header(out: &mut String, items: &[Item]) {
    for item in items {
        match item {
            Item::Literal(text) => out.push_str(text),
            Item::Field { code, width, right } => pad(out, header(*code), *width, *right),
        }
    }
    trim_newline(out);
}

fn trim_newline(out: &mut String) {
    out.push('\n');
}

/// Appends one line per job.
pub fn render_rows(out: &mut String, jobs: &[&JobInfo], items: &[Item], ctx: &Ctx) {
    for job in jobs {
        render_row(out, job, items, ctx);
    }
}

/// Appends the line of one job, newline included.
pub fn render_row(out: &mut String, job: &JobInfo, items: &[Item], ctx: &Ctx) {
    render_row_in(out, job, items, ctx, Units::Scaled);
}

/// [`render_row`] with sizes shown in `units`.
pub fn render_row_in(out: &mut String, job: &JobInfo, items: &[Item], ctx: &Ctx, units: Units) {
    for item in items {
        match item {
            Item::Literal(text) => out.push_str(text),
            Item::Field { code, width, right } => {
                let start = out.len();
                write_value_in(out, *code, job, ctx, units);
                pad_tail(out, start, *width, *right);
            }
        }
    }
    out.push('\n');
}

/// Renders the table: optional date line (`-l`), optional header, rows.
pub fn render(
    jobs: &[&JobInfo],
    items: &[Item],
    header: bool,
    date_line: bool,
    ctx: &Ctx,
) -> String {
    render_in(jobs, items, header, date_line, ctx, Units::Scaled)
}

/// [`render`] with sizes shown in `units`.
pub fn render_in(
    jobs: &[&JobInfo],
    items: &[Item],
    header: bool,
    date_line: bool,
    ctx: &Ctx,
    units: Units,
) -> String {
    let mut out = String::with_capacity(128);
    if header || !jobs.is_empty() {
        let mut head = String::with_capacity(128);
        render_header(&mut head, items);
        // Rows are about as wide as the header; leave some room for
        // longer values so the buffer rarely grows.
        out.reserve((head.len() + 16) * (jobs.len() + 2));
    }
    if date_line {
        out.push_str(&ctx.ctime_now());
        out.push('\n');
    }
    if header {
        render_header(&mut out, items);
    }
    for job in jobs {
        render_row_in(&mut out, job, items, ctx, units);
    }
    out
}

/// One job's value for a sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum KeyVal<'a> {
    Int(u64),
    Str(&'a str),
}

/// Maps an i64 onto a u64 of the same order.
fn ordered(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// One job's value for sort key `code`. `tier` is the PriorityTier of the
/// partition the row stands for with `-P` (0 without it): priority sorts by
/// the tier first, then by the job's priority, as in Slurm.
fn key_of(job: &JobInfo, code: char, tier: u32) -> KeyVal<'_> {
    use KeyVal::{Int, Str};
    match code {
        'A' | 'i' => {
            Int((u64::from(job.array_job_id.unwrap_or(job.job_id)) << 32) | u64::from(job.job_id))
        }
        'a' => Str(&job.account),
        'B' => Str(&job.batch_host),
        'C' => Int(job.num_cpus.into()),
        'c' => Int(job.min_cpus_per_node.into()),
        'D' => Int(job.num_nodes.into()),
        'd' => Int(job.min_tmp_disk_mb),
        'E' => Str(&job.dependency),
        'e' => Int(ordered(job.end_time)),
        'f' => Str(&job.features),
        'G' => Int(job.group_id.into()),
        'g' => Str(&job.group_name),
        'j' => Str(&job.name),
        'k' => Str(&job.comment),
        'L' | 'l' => Int(limit_minutes(job.time_limit.as_ref())
            .unwrap_or(u32::MAX)
            .into()),
        'M' => Int(job.run_time_secs),
        'N' => Str(&job.nodes),
        'n' => Str(&job.required_nodes),
        'P' => Str(&job.partition),
        'p' | 'Q' => Int((u64::from(tier) << 32) | u64::from(job.priority)),
        'q' => Str(&job.qos),
        'R' | 'r' => Str(&job.state_reason),
        'T' => Str(shown_state(job).long_name()),
        't' => Str(shown_state(job).short_code()),
        'U' => Int(job.user_id.into()),
        'u' => Str(&job.user_name),
        'V' => Int(ordered(job.submit_time)),
        'v' => Str(&job.reservation),
        'w' => Str(&job.wckey),
        'x' => Str(&job.excluded_nodes),
        'Y' => Str(&job.scheduled_nodes),
        'y' => Int(ordered(job.nice.into())),
        'Z' => Str(&job.work_dir),
        _ => Int(0),
    }
}

/// Sorts jobs by `keys`; ties go latest start first, then newest job
/// first when the start is unknown and oldest first when it is known (or
/// when sorting by start time), as in Slurm. See [`SortKeys`].
pub fn sort_jobs(jobs: &mut [&JobInfo], keys: &[SortKey]) {
    if jobs.len() < 2 {
        return;
    }
    let mut collected = SortKeys::new(keys);
    for job in jobs.iter() {
        collected.push(job);
    }
    let sorted: Vec<&JobInfo> = collected
        .order()
        .iter()
        .map(|&i| jobs[i as usize])
        .collect();
    jobs.copy_from_slice(&sorted);
}

/// The sort keys of a report, gathered one job at a time so the jobs
/// themselves need not be kept: squeue renders each row as its record is
/// decoded, and sorts the rows afterwards by these keys.
///
/// Every key becomes a number per job: integers as they are, strings their
/// rank among the key's distinct values (usually a handful of partitions,
/// states or users, so each is stored once and a job keeps only its index).
#[derive(Debug, Clone)]
pub struct SortKeys {
    keys: Vec<SortKey>,
    columns: Vec<Column>,
    /// Per row, its job id: rows equal in every key go by it, highest
    /// first when their start is unknown (Slurm 22.05 lists waiting jobs
    /// of equal priority, user or submit time newest first), lowest first
    /// when it is known (running array tasks, jobs waiting for a begin
    /// time) or when the jobs are sorted by start time.
    ids: Vec<u32>,
    /// Per row, the place its job came in: rows of one record (the tasks
    /// `-r` shows of a pending array) keep that order. Usually the row's
    /// own index; rows held back (pending array tasks combined at the end)
    /// keep the place their record had.
    seqs: Vec<u32>,
    /// Per row, its job's start time (planned, for a pending job; 0 for
    /// none): Slurm 22.05 lists jobs latest start first before it sorts
    /// by the keys, so rows equal in every key go by it.
    starts: Vec<i64>,
    len: usize,
}

/// One key's values, job by job.
#[derive(Debug, Clone)]
enum Column {
    /// Not known yet: no job seen.
    Empty,
    Int(Vec<u64>),
    Text(TextColumn),
}

/// Distinct strings of a key and, per job, the index of its string.
#[derive(Debug, Clone, Default)]
struct TextColumn {
    ids: Vec<u32>,
    /// The distinct strings, by index.
    strings: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
    /// The index of the last job's string: consecutive jobs mostly share a
    /// partition or state.
    last: Option<u32>,
}

impl TextColumn {
    fn push(&mut self, text: &str) {
        let id = match self.last {
            Some(id) if *self.strings[id as usize] == *text => id,
            _ => match self.index.get(text) {
                Some(id) => *id,
                None => {
                    let id = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
                    self.strings.push(Box::from(text));
                    self.index.insert(Box::from(text), id);
                    id
                }
            },
        };
        self.last = Some(id);
        self.ids.push(id);
    }

    /// Each job's rank among the distinct strings.
    fn ranks(&self) -> Vec<u64> {
        let mut by_text: Vec<(&str, u32)> = self
            .strings
            .iter()
            .enumerate()
            .map(|(id, t)| (&**t, id as u32))
            .collect();
        by_text.sort_unstable();
        let mut rank = vec![0u64; by_text.len()];
        for (r, (_, id)) in by_text.iter().enumerate() {
            rank[*id as usize] = r as u64;
        }
        self.ids.iter().map(|id| rank[*id as usize]).collect()
    }
}

impl SortKeys {
    pub fn new(keys: &[SortKey]) -> SortKeys {
        SortKeys {
            keys: keys.to_vec(),
            columns: vec![Column::Empty; keys.len()],
            ids: Vec::new(),
            seqs: Vec::new(),
            starts: Vec::new(),
            len: 0,
        }
    }

    /// How many jobs were pushed.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records the keys of the next job.
    pub fn push(&mut self, job: &JobInfo) {
        let seq = u32::try_from(self.len).unwrap_or(u32::MAX);
        self.push_at(job, seq, 0);
    }

    /// Records the keys of the next row: `seq` is the place its job came
    /// in (ties between rows go by it), `tier` the PriorityTier its
    /// partition sorts by (`-P`; 0 otherwise).
    pub fn push_at(&mut self, job: &JobInfo, seq: u32, tier: u32) {
        self.ids.push(job.job_id);
        self.seqs.push(seq);
        self.starts.push(job.start_time);
        for (key, column) in self.keys.iter().zip(self.columns.iter_mut()) {
            // The start time is kept for every row (`starts`), which its
            // key sorts by.
            if key.code == 'S' {
                continue;
            }
            let value = key_of(job, key.code, tier);
            if matches!(column, Column::Empty) {
                *column = match value {
                    KeyVal::Int(_) => Column::Int(Vec::new()),
                    KeyVal::Str(_) => Column::Text(TextColumn::default()),
                };
            }
            // A code always gives the same kind of value; were it not so, a
            // number would sort as an empty string and a string as zero.
            match (column, value) {
                (Column::Int(v), KeyVal::Int(i)) => v.push(i),
                (Column::Int(v), KeyVal::Str(_)) => v.push(0),
                (Column::Text(t), KeyVal::Str(s)) => t.push(s),
                (Column::Text(t), KeyVal::Int(_)) => t.push(""),
                (Column::Empty, _) => {}
            }
        }
        self.len += 1;
    }

    /// The positions of the pushed jobs in sorted order; ties go by start
    /// time, latest first (none last), then by job id, highest first
    /// (lowest first when the keys hold the start time), then by the place
    /// each job came in, then by the order they were pushed in.
    pub fn order(&self) -> Vec<u32> {
        let n = self.len;
        let Ok(n32) = u32::try_from(n) else {
            // More than four billion rows cannot be held anyway.
            return Vec::new();
        };
        if n < 2 {
            return (0..n32).collect();
        }
        // Column-wise ordinals: ords[k][j].
        let ords: Vec<Vec<u64>> = self
            .keys
            .iter()
            .zip(&self.columns)
            .map(|(key, column)| {
                if key.code == 'S' {
                    // Jobs without a start time come last whichever way
                    // the times are sorted, as in Slurm 22.05.
                    return self
                        .starts
                        .iter()
                        .map(|&t| match (t > 0, key.descending) {
                            (false, _) => u64::MAX,
                            (true, false) => t as u64,
                            (true, true) => (i64::MAX - t) as u64,
                        })
                        .collect();
                }
                let mut col = match column {
                    Column::Int(v) => v.clone(),
                    Column::Text(t) => t.ranks(),
                    Column::Empty => vec![0; n],
                };
                if key.descending {
                    let max = col.iter().copied().max().unwrap_or(0);
                    for v in col.iter_mut() {
                        *v = max - *v;
                    }
                }
                col
            })
            .collect();
        // A stable sort: ties keep the order the jobs were pushed in.
        let mut order: Vec<u32> = (0..n32).collect();
        let (ids, seqs, starts) = (&self.ids, &self.seqs, &self.starts);
        let oldest_first = self.keys.iter().any(|k| k.code == 'S');
        order.sort_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            ords.iter()
                .map(|col| col[a].cmp(&col[b]))
                .find(|o| o.is_ne())
                .unwrap_or_else(|| {
                    // Equal starts: oldest first when they are known
                    // (running jobs, planned starts), newest first when
                    // not, as Slurm 22.05 lists them.
                    let by_id = if oldest_first || starts[a] > 0 {
                        ids[a].cmp(&ids[b])
                    } else {
                        ids[b].cmp(&ids[a])
                    };
                    let by_id = starts[b].cmp(&starts[a]).then(by_id);
                    by_id.then(seqs[a].cmp(&seqs[b]))
                })
        });
        order
    }
}

/// Which states `-t` selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateFilter {
    /// No `-t`: pending, running, suspended, completing and configuring
    /// jobs, whether or not `-j` names them (Slurm 22.05 lists a finished
    /// job only with `-t`).
    Default,
    /// `-t all`.
    All,
    /// The listed states.
    Only(Vec<JobStateCode>),
}

/// A `-t` word that names no state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid job state specified: {word}")]
pub struct StateFilterError {
    pub word: String,
}

/// Parses `-t` as squeue 22.05 does: `all` (any case) as the whole value,
/// else a comma list of state names or codes in any case, read as typed
/// (no blanks trimmed; empty items skipped). `REQUEUE_FED`/`RF` are valid
/// names that no job here ever has, so they select nothing.
pub fn parse_states(spec: &str) -> Result<StateFilter, StateFilterError> {
    if spec.eq_ignore_ascii_case("all") {
        return Ok(StateFilter::All);
    }
    let mut states = Vec::new();
    for word in spec.split(',').filter(|w| !w.is_empty()) {
        if word.eq_ignore_ascii_case("REQUEUE_FED") || word.eq_ignore_ascii_case("RF") {
            continue;
        }
        let refused = || StateFilterError {
            word: word.to_owned(),
        };
        if word.trim() != word {
            return Err(refused());
        }
        states.push(word.parse::<JobStateCode>().map_err(|_| refused())?);
    }
    Ok(StateFilter::Only(states))
}

impl StateFilter {
    /// Whether a job is listed.
    pub fn admits(&self, job: &JobInfo) -> bool {
        match self {
            StateFilter::All => true,
            StateFilter::Default => {
                let code = shown_state(job);
                matches!(code, JobStateCode::Completing | JobStateCode::Configuring)
                    || matches!(
                        base_state(job),
                        JobState::Pending | JobState::Running | JobState::Suspended
                    )
            }
            StateFilter::Only(codes) => {
                let shown = shown_state(job);
                let base = JobStateCode::Base(base_state(job));
                codes.iter().any(|c| *c == shown || *c == base)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use slurm_common::time::format_duration_squeue;
    use std::cmp::Ordering;

    #[test]
    fn percent_all_is_every_letter_between_bars() {
        let mut header = String::new();
        render_header(&mut header, &parse_format("%all").unwrap());
        // Slurm 22.05's header (`%s` has an empty one).
        assert!(header.starts_with("ACCOUNT|TRES_PER_NODE|MIN_CPUS|MIN_TMP_DISK|END_TIME|"));
        assert!(header.contains("|REASON||ST|USER|"));
        assert!(header.trim_end().ends_with("|SCHEDNODES|WORK_DIR"));
        assert_eq!(header.matches('|').count(), 51);
        assert_eq!(parse_format("%ALL"), parse_format("%all"));
        // Only the whole string: `%i%all` is %i, %a, then "ll".
        let (items, _) = parse_format_lenient("%i%all");
        assert_eq!(items.len(), 3);
    }

    #[test]
    fn every_long_name_has_a_title_and_codes_stay_off_dash_o() {
        for (name, code) in LONG_NAMES {
            assert_eq!(long_code(&name.to_ascii_uppercase()), Some(*code));
            // SelectJobInfo alone has no title in Slurm 22.05.
            assert_eq!(header(*code).is_empty(), *code == 's', "{name}");
            assert!(CODES.contains(*code) || !is_code(*code), "{name}");
        }
        // Names squeue 22.05 refuses, and no trimming of blanks.
        for bad in [
            "corespersocket",
            "exechost",
            "Nodes",
            "ContainerId",
            " name",
        ] {
            assert_eq!(long_code(bad), None, "{bad}");
        }
    }

    #[test]
    fn long_only_fields_render_as_slurm() {
        // squeue -O as Slurm 22.05 printed it for a pending batch job
        // submitted 288 seconds earlier with sbatch's default output.
        let job = JobInfo {
            job_id: 10,
            state: slurm_proto::v1::JobState::Pending as i32,
            batch: true,
            requeue: true,
            num_tasks: 1,
            num_nodes: 1,
            num_cpus: 2,
            cpus_per_task: 2,
            submit_time: 1_000,
            eligible_time: 1_000,
            work_dir: "/tmp/w".into(),
            stdout_path: "/tmp/w/slurm-%j.out".into(),
            stderr_path: "/tmp/w/err-%j".into(),
            stdin_path: "/dev/null".into(),
            tres_requested: Some(slurm_proto::v1::TresList {
                items: vec![slurm_proto::v1::Tres {
                    r#type: "cpu".into(),
                    count: 2,
                    ..Default::default()
                }],
            }),
            ..JobInfo::default()
        };
        let items = parse_long_format(
            "pendingtime:0|,stdout:0|,stderr:0|,stdin:0|,batchflag:0|,requeue:0|,\
             maxnodes:0|,maxcpus:0|,cpus-per-task:0|,numtasks:0|,tres-alloc:0|,\
             accruetime:0|,eligibletime:0|,exit_code:0|,mintime:0|,origin:0|,\
             admin_comment:0|,hetjobid:0|,selectjobinfo:0|,name:-3|",
        )
        .unwrap();
        let out = render(&[&job], &items, true, false, &Ctx::utc(1_288));
        assert_eq!(
            out,
            "PENDING_TIME|STDOUT|STDERR|STDIN|BATCH_FLAG|REQUEUE|MAX_NODES|MAX_CPUS|\
             CPUS_PER_TASK|TASKS|TRES_ALLOC|ACCRUE_TIME|ELIGIBLE_TIME|EXIT_CODE|TIME_MIN|\
             ORIGIN|ADMIN_COMMENT|HET_JOB_ID||NAME |\n\
             288|/tmp/w/slurm-10.out|/tmp/w/err-%j|/dev/null|1|1|1|2|2|1|cpu=2|N/A|\
             1970-01-01T00:16:40|0|0:00|NA|(null)|N/A|| |\n"
        );
    }

    #[test]
    fn switches_container_and_cluster_features_as_slurm() {
        // squeue 22.05 for `--switches=3 --container=/tmp/x
        // --cluster-constraint=foo`, then for a job without them.
        let items = parse_long_format("reqswitch:0|,wait4switch:0|,container:0|,clusterfeature:0|")
            .unwrap();
        let job = JobInfo {
            req_switch: 3,
            wait4switch_seconds: 300,
            container: "/tmp/x".into(),
            cluster_features: "foo".into(),
            ..JobInfo::default()
        };
        let ctx = Ctx::utc(0);
        let mut out = String::new();
        render_row(&mut out, &job, &items, &ctx);
        assert_eq!(out, "3|5:00|/tmp/x|foo|\n");
        let mut out = String::new();
        render_row(&mut out, &JobInfo::default(), &items, &ctx);
        assert_eq!(out, "0|0:00|(null)|(null)|\n");
    }

    #[test]
    fn binding_and_profile_fields_as_slurm() {
        // squeue 22.05 for `--ntasks-per-core=1 --ntasks-per-socket=2
        // --profile=task,energy --gpu-bind=closest`, then for a job
        // without them.
        let items =
            parse_long_format("ntpercore:0|,ntpersocket:0|,profile:0|,tres-bind:0|").unwrap();
        let job = JobInfo {
            ntasks_per_core: Some(1),
            ntasks_per_socket: Some(2),
            profile: "Energy,Task".into(),
            tres_bind: "gpu:closest".into(),
            ..JobInfo::default()
        };
        let ctx = Ctx::utc(0);
        let mut out = String::new();
        render_row(&mut out, &job, &items, &ctx);
        assert_eq!(out, "1|2|Energy,Task|gpu:closest|\n");
        let mut out = String::new();
        render_row(&mut out, &JobInfo::default(), &items, &ctx);
        assert_eq!(out, "N/A|N/A|NotSet|N/A|\n");
    }

    #[test]
    fn end_time_of_a_job_without_a_limit() {
        // Slurm 22.05: NONE once an unlimited job has started, N/A while it
        // waits without a planned end.
        let items = parse_format("%e").unwrap();
        let ctx = Ctx::utc(2_000);
        let row = |state: slurm_proto::v1::JobState, start_time, end_time| {
            let job = JobInfo {
                state: state as i32,
                start_time,
                end_time,
                ..JobInfo::default()
            };
            let mut out = String::new();
            render_row(&mut out, &job, &items, &ctx);
            out
        };
        use slurm_proto::v1::JobState as S;
        assert_eq!(row(S::Running, 1_000, 0), "NONE\n");
        assert_eq!(row(S::Suspended, 1_000, 0), "NONE\n");
        assert_eq!(row(S::Pending, 0, 0), "N/A\n");
        // A requeued job keeps its last start and waits again.
        assert_eq!(row(S::Pending, 1_000, 0), "N/A\n");
        assert_eq!(row(S::Running, 1_000, 1_600), "1970-01-01T00:26:40\n");
    }

    /// Slurm 22.05 with job 1 running (started at 100), 2 and 4 pending
    /// with planned starts (300, 400) and 3, 5, 6 held without one: rows
    /// equal in every key go latest start first, then newest first; by
    /// start time, jobs without one come last either way, oldest first.
    #[test]
    fn ties_go_by_start_time_then_id_as_slurm_lists_them() {
        let jobs: Vec<JobInfo> = [(1, 100), (2, 300), (3, 0), (4, 400), (5, 0), (6, 0)]
            .into_iter()
            .map(|(job_id, start_time)| JobInfo {
                job_id,
                start_time,
                user_name: "alice".into(),
                ..JobInfo::default()
            })
            .collect();
        let sorted = |spec: &str| {
            let mut v: Vec<&JobInfo> = jobs.iter().collect();
            sort_jobs(&mut v, &parse_sort_spec(spec).keys);
            v.iter().map(|j| j.job_id).collect::<Vec<_>>()
        };
        assert_eq!(sorted("S"), [1, 2, 4, 3, 5, 6]);
        assert_eq!(sorted("-S"), [4, 2, 1, 3, 5, 6]);
        assert_eq!(sorted("u"), [4, 2, 1, 6, 5, 3]);
        assert_eq!(sorted(""), [4, 2, 1, 6, 5, 3]);
    }

    #[test]
    fn sort_lists_read_character_by_character_from_the_end() {
        let key = |code, descending| SortKey { code, descending };
        let keys = |spec: &str| parse_sort_spec(spec).keys;
        assert_eq!(
            keys("P,t,-p"),
            vec![key('P', false), key('t', false), key('p', true)]
        );
        // Letters run together are keys of their own.
        assert_eq!(keys("ij"), vec![key('i', false), key('j', false)]);
        assert_eq!(keys("-ij"), vec![key('i', true), key('j', false)]);
        assert_eq!(keys("+j,--i"), vec![key('j', false), key('i', true)]);
        for none in ["", "-", ",,+", "cluster", "-CLUSTER", "c,f,h,n,O"] {
            assert_eq!(parse_sort_spec(none), SortSpec::default(), "{none:?}");
        }
        assert_eq!(keys("cluster,i"), vec![key('i', false)]);
        // From the end: b is noted before x stops the list.
        let spec = parse_sort_spec("i,x,b,b");
        assert_eq!((spec.invalid, spec.gres_notes), (Some('x'), 2));
        assert_eq!(parse_sort_spec(" i").invalid, Some(' '));
        assert_eq!(parse_sort_spec("y,x").invalid, Some('x'));
        for bad in "AaEFKkoqRrsWwXxYyZ1.#".chars() {
            assert_eq!(parse_sort_spec(&bad.to_string()).invalid, Some(bad));
        }
        assert!(parse_sort("x").is_err());
    }

    proptest! {
        #[test]
        fn any_sort_list_reads_without_panic(spec in "\\PC{0,24}") {
            let parsed = parse_sort_spec(&spec);
            prop_assert!(parsed.keys.iter().all(|k| SORT_CODES.contains(k.code)));
        }
    }

    #[test]
    fn built_in_layouts_use_only_codes_slurm_reads() {
        // `--start` once had `%-20Y`, which Slurm reports as a bad code.
        for layout in [DEFAULT_FORMAT, LONG_FORMAT, START_FORMAT] {
            assert!(parse_format(layout).is_ok(), "{layout}");
        }
        let items = parse_format(START_FORMAT).unwrap();
        let mut header = String::new();
        render_header(&mut header, &items);
        assert_eq!(
            header,
            "             JOBID PARTITION     NAME     USER ST          START_TIME  \
             NODES SCHEDNODES           NODELIST(REASON)\n"
        );
    }

    #[test]
    fn durations_match_the_shared_formatter() {
        for secs in [
            0,
            5,
            59,
            60,
            65,
            3_599,
            3_600,
            3_723,
            86_399,
            86_400,
            93_784,
            u64::MAX,
        ] {
            let mut out = String::new();
            write_duration(&mut out, secs);
            assert_eq!(out, format_duration_squeue(secs), "{secs}");
        }
    }

    fn job(id: u32, name: String, priority: u32, submit: i64) -> JobInfo {
        JobInfo {
            job_id: id,
            name,
            priority,
            submit_time: submit,
            ..JobInfo::default()
        }
    }

    fn ids(jobs: &[&JobInfo]) -> Vec<u32> {
        jobs.iter().map(|j| j.job_id).collect()
    }

    #[test]
    fn sorting_many_distinct_names_and_wide_keys() {
        // 40 distinct names (past the small-set scan), reversed.
        let jobs: Vec<JobInfo> = (0..40u32)
            .map(|i| job(i, format!("n{:02}", 39 - i), i, -i64::from(i)))
            .collect();
        let mut refs: Vec<&JobInfo> = jobs.iter().collect();
        sort_jobs(&mut refs, &parse_sort("j").unwrap());
        assert_eq!(ids(&refs)[..3], [39, 38, 37]);
        // Keys too wide to pack: time (64 bits) and priority (32 bits) and
        // name; the comparison path must give the same order rules.
        sort_jobs(&mut refs, &parse_sort("-V,p,j").unwrap());
        assert_eq!(ids(&refs)[..3], [0, 1, 2]);
        sort_jobs(&mut refs, &parse_sort("V").unwrap());
        assert_eq!(ids(&refs)[..3], [39, 38, 37]);
    }

    #[test]
    fn normalized_priority_has_fourteen_decimals_over_the_u32_range() {
        let ctx = crate::format::Ctx::utc(0);
        let shown = |priority| {
            let mut out = String::new();
            let j = JobInfo {
                priority,
                ..JobInfo::default()
            };
            write_value(&mut out, 'p', &j, &ctx);
            out
        };
        // As Slurm 22.05 printed them.
        assert_eq!(shown(4_294_901_758), "0.99998474097810");
        assert_eq!(shown(0), "0.00000000000000");
        assert_eq!(shown(u32::MAX), "1.00000000000000");
    }

    #[test]
    fn tres_per_node_shows_the_gres_request_or_na() {
        let ctx = crate::format::Ctx::utc(0);
        let gpu = JobInfo {
            job_id: 7,
            gres: "gres:gpu:1".into(),
            ..JobInfo::default()
        };
        let plain = JobInfo {
            job_id: 8,
            ..JobInfo::default()
        };
        let short = render(
            &[&gpu, &plain],
            &parse_format("%i|%b").unwrap(),
            true,
            false,
            &ctx,
        );
        assert_eq!(short, "JOBID|TRES_PER_NODE\n7|gres:gpu:1\n8|N/A\n");
        let long = render(
            &[&gpu, &plain],
            &parse_long_format("tres-per-node").unwrap(),
            true,
            false,
            &ctx,
        );
        let rows: Vec<&str> = long.lines().map(str::trim_end).collect();
        assert_eq!(rows, ["TRES_PER_NODE", "gres:gpu:1", "N/A"]);
    }

    #[test]
    fn reason_shows_the_description_when_there_is_one() {
        let ctx = crate::format::Ctx::utc(0);
        let held = JobInfo {
            job_id: 7,
            state_reason: "JobHeldAdmin".into(),
            state_description: "launch failed requeued held".into(),
            ..JobInfo::default()
        };
        let plain = JobInfo {
            job_id: 8,
            state_reason: "Priority".into(),
            ..JobInfo::default()
        };
        let none = JobInfo {
            job_id: 9,
            ..JobInfo::default()
        };
        let out = render(
            &[&held, &plain, &none],
            &parse_format("%i|%r").unwrap(),
            true,
            false,
            &ctx,
        );
        assert_eq!(
            out,
            "JOBID|REASON\n7|launch failed requeued held\n8|Priority\n9|None\n"
        );
    }

    #[test]
    fn priority_keys_put_the_tier_first_and_ties_go_by_arrival() {
        let (low, high) = (job(1, "x".into(), 500, 0), job(2, "x".into(), 100, 0));
        for code in ["-p", "-Q"] {
            let mut keys = SortKeys::new(&parse_sort(code).unwrap());
            keys.push_at(&low, 0, 1);
            keys.push_at(&high, 1, 2);
            assert_eq!(keys.order(), vec![1, 0], "{code}");
        }
        // Without tiers the job priority alone decides.
        let mut keys = SortKeys::new(&parse_sort("-p").unwrap());
        keys.push(&low);
        keys.push(&high);
        assert_eq!(keys.order(), vec![0, 1]);
        // Rows pushed out of their arrival order sort back into it.
        let mut keys = SortKeys::new(&parse_sort("j").unwrap());
        keys.push_at(&low, 5, 0);
        keys.push_at(&low, 2, 0);
        keys.push_at(&low, 5, 0);
        assert_eq!(keys.order(), vec![1, 0, 2]);
    }

    #[test]
    fn sizes_follow_the_units_asked_for() {
        let ctx = crate::format::Ctx::utc(0);
        let job = JobInfo {
            job_id: 7,
            memory: Some(Memory::MemPerCpuMb(3072)),
            min_tmp_disk_mb: 512,
            min_cpus_per_node: 2048,
            ..JobInfo::default()
        };
        let value = |code: char, units: Units| {
            let mut out = String::new();
            write_value_in(&mut out, code, &job, &ctx, units);
            out
        };
        assert_eq!(value('m', Units::Scaled), "3G");
        assert_eq!(value('m', Units::Original), "3072M");
        assert_eq!(value('d', Units::Scaled), "512M");
        assert_eq!(value('c', Units::Scaled), "2K");
        assert_eq!(value('c', Units::Original), "2048");
        let mut plain = String::new();
        write_value(&mut plain, 'm', &job, &ctx);
        assert_eq!(plain, "3G");
        let none = JobInfo::default();
        let mut zero = String::new();
        write_value_in(&mut zero, 'm', &none, &ctx, Units::Original);
        write_value_in(&mut zero, 'd', &none, &ctx, Units::Original);
        write_value_in(&mut zero, 'c', &none, &ctx, Units::Original);
        assert_eq!(zero, "001");
        let items = parse_format("%i %m").unwrap();
        assert_eq!(
            render_in(&[&job], &items, true, false, &ctx, Units::Original),
            "JOBID MIN_MEMORY\n7 3072M\n"
        );
    }

    #[test]
    fn equal_keys_keep_input_order() {
        let jobs: Vec<JobInfo> = (0..5u32).map(|i| job(10 - i, "x".into(), 7, 0)).collect();
        let mut refs: Vec<&JobInfo> = jobs.iter().collect();
        sort_jobs(&mut refs, &parse_sort("-p").unwrap());
        assert_eq!(ids(&refs), vec![10, 9, 8, 7, 6]);
    }

    /// Ties as Slurm 22.05 lists them on two nodes: waiting jobs without
    /// a start newest first, jobs started in the same second (two tasks
    /// of an array, equal priority) oldest first.
    #[test]
    fn ties_go_newest_first_without_a_start_and_oldest_first_with_one() {
        let mut jobs: Vec<JobInfo> = (1..=4u32).map(|i| job(i, "x".into(), 100, 0)).collect();
        for j in &mut jobs[..2] {
            j.state = slurm_proto::v1::JobState::Running as i32;
            j.start_time = 1_000;
        }
        let mut refs: Vec<&JobInfo> = jobs.iter().collect();
        sort_jobs(&mut refs, &parse_sort("P,t,-p").unwrap());
        assert_eq!(ids(&refs), vec![4, 3, 1, 2]);
    }

    fn small_job() -> impl Strategy<Value = JobInfo> {
        let word = || prop::sample::select(vec!["", "a", "b", "debug", "zeta", "ünï"]);
        (
            (any::<u32>(), 0u32..4, word(), word(), word()),
            (
                0i32..13,
                -2i64..3,
                0u64..5,
                proptest::option::of(0u32..3),
                0u32..3,
            ),
            (any::<bool>(), word(), -3i32..3),
        )
            .prop_map(
                |(
                    (id, prio, name, part, user),
                    (state, time, run, limit, nodes),
                    (arr, nl, nice),
                )| {
                    JobInfo {
                        job_id: id,
                        array_job_id: arr.then_some(id / 2),
                        priority: prio,
                        name: name.into(),
                        partition: part.into(),
                        user_name: user.into(),
                        state,
                        submit_time: time,
                        start_time: -time,
                        run_time_secs: run,
                        time_limit: limit.map(|m| slurm_proto::v1::TimeLimit {
                            limit: Some(slurm_proto::v1::time_limit::Limit::Minutes(m)),
                        }),
                        num_nodes: nodes,
                        nodes: nl.into(),
                        nice,
                        ..JobInfo::default()
                    }
                },
            )
    }

    proptest! {
        /// The packed-ordinal sort orders as a plain stable sort comparing
        /// the key values one key after another, then start times and job
        /// ids (highest first for jobs without a start).
        #[test]
        fn sort_matches_a_plain_comparison(
            jobs in proptest::collection::vec(small_job(), 0..40),
            keys in proptest::collection::vec(
                (prop::sample::select(SORT_CODES.chars().collect::<Vec<_>>()), any::<bool>()),
                0..4,
            ),
        ) {
            let keys: Vec<SortKey> = keys
                .into_iter()
                .map(|(code, descending)| SortKey { code, descending })
                .collect();
            let mut got: Vec<&JobInfo> = jobs.iter().collect();
            sort_jobs(&mut got, &keys);
            let mut want: Vec<&JobInfo> = jobs.iter().collect();
            want.sort_by(|a, b| {
                for k in &keys {
                    let o = if k.code == 'S' {
                        // No start time: last, whichever the direction.
                        let (x, y) = (a.start_time, b.start_time);
                        match (x > 0, y > 0) {
                            (true, true) if k.descending => y.cmp(&x),
                            (true, true) => x.cmp(&y),
                            (x_has, y_has) => y_has.cmp(&x_has),
                        }
                    } else {
                        let o = key_of(a, k.code, 0).cmp(&key_of(b, k.code, 0));
                        if k.descending { o.reverse() } else { o }
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                let by_id = if keys.iter().any(|k| k.code == 'S') || a.start_time > 0 {
                    a.job_id.cmp(&b.job_id)
                } else {
                    b.job_id.cmp(&a.job_id)
                };
                b.start_time.cmp(&a.start_time).then(by_id)
            });
            let pos = |v: &[&JobInfo]| -> Vec<usize> {
                v.iter()
                    .map(|j| jobs.iter().position(|x| std::ptr::eq(x, *j)).unwrap())
                    .collect()
            };
            prop_assert_eq!(pos(&got), pos(&want));
        }
    }
}
