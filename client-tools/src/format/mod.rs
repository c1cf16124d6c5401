//! Pure renderers for the query commands (`squeue`, `sinfo`, `scontrol
//! show`).
//!
//! They take the controller's reply messages plus the current time and a
//! time zone, and return text. Keeping them free of I/O and of the clock is
//! what lets the golden tests compare them byte for byte with real Slurm's
//! output without a cluster. Each renderer appends to one `String` and
//! reuses one scratch buffer per row, so 10,000 jobs render in a few
//! milliseconds.

pub mod checks;
pub mod job_fields;
pub mod json;
pub mod reply;
pub mod scontrol;
pub mod sinfo;
pub mod spec;
pub mod squeue;
pub mod yaml;

use std::fmt::Write as _;

use slurm_common::size::{format_size_exact, SizeUnit};
use slurm_common::time::{format_ctime_in, format_timestamp_in, FixedZone, SystemZone};
use slurm_proto::v1::{JobInfo, JobState, JobStateFlag, TimeLimit, TresList};

pub use spec::{FormatError, Item};

/// `--json` or `--yaml`: the whole state as one document instead of a
/// table. Whichever option comes last wins, as in Slurm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dump {
    Json,
    Yaml,
}

impl Dump {
    /// The document [`json`] wrote, in this dump's form.
    pub fn write(self, json: String) -> Result<String, yaml::ReadError> {
        match self {
            Dump::Json => Ok(json),
            Dump::Yaml => yaml::json_to_yaml(&json),
        }
    }
}

/// What every renderer needs besides the data: the time the reply is shown
/// at (Unix seconds), the zone timestamps are printed in, and how long an
/// array's task list may get (`SLURM_BITSTR_LEN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    pub now: i64,
    pub zone: Zone,
    pub task_lists: TaskListLimit,
    /// `SLURM_TIME_FORMAT`.
    pub time_format: TimeFormat,
}

impl Ctx {
    /// Shown at `now` with timestamps in UTC: what tests compare.
    pub fn utc(now: i64) -> Ctx {
        Ctx::new(now, Zone::Fixed(FixedZone::UTC))
    }

    /// Shown at `now` in `zone`, with `SLURM_BITSTR_LEN` unset.
    pub fn new(now: i64, zone: Zone) -> Ctx {
        Ctx {
            now,
            zone,
            task_lists: TaskListLimit::default(),
            time_format: TimeFormat::Standard,
        }
    }
}

/// How long an array's task list may get, as `SLURM_BITSTR_LEN` says:
/// Slurm writes the list into a buffer of that many bytes, terminating NUL
/// included, and marks a cut list with `...` ([`slurm_common::tasklist::cut`]).
/// 0 means no limit. Unset, the buffer is 64 bytes, and squeue's `%i` of an
/// array record (`15_[...]`) is moreover cut to 31 characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskListLimit {
    pub bytes: u32,
    /// Whether `SLURM_BITSTR_LEN` was set at all.
    pub set: bool,
}

impl Default for TaskListLimit {
    fn default() -> Self {
        TaskListLimit {
            bytes: 64,
            set: false,
        }
    }
}

impl TaskListLimit {
    /// The limit `SLURM_BITSTR_LEN` sets (`None`: unset). Slurm reads it
    /// with C's `atoi`: leading blanks and a sign, then digits, the rest
    /// ignored (`20x` is 20). So text that is not a number reads as 0 and
    /// lifts the limit, as does an empty value, while a negative number
    /// keeps the default size; both are what Slurm 22.05 does, and a script
    /// setting the variable expects Slurm's reading of it.
    pub fn from_env(value: Option<&str>) -> TaskListLimit {
        let Some(value) = value else {
            return TaskListLimit::default();
        };
        let bytes = u32::try_from(checks::atoi(value)).unwrap_or(64);
        TaskListLimit { bytes, set: true }
    }

    /// `list` cut to the limit.
    pub fn cut(self, list: &str) -> std::borrow::Cow<'_, str> {
        if self.bytes == 0 || list.len() < self.bytes as usize {
            return std::borrow::Cow::Borrowed(list);
        }
        let mut owned = list.to_owned();
        slurm_common::tasklist::cut(&mut owned, self.bytes);
        std::borrow::Cow::Owned(owned)
    }
}

/// The most characters squeue shows of an array record's id (`15_[...]`)
/// while `SLURM_BITSTR_LEN` is unset.
const ARRAY_ID_WIDTH: usize = 31;

/// The zone timestamps are printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// The host's zone (`TZ`, else `/etc/localtime`): what the commands use.
    System,
    /// A fixed offset: what tests use.
    Fixed(FixedZone),
}

impl Ctx {
    /// The commands' context: the host's zone at `now`, and task lists
    /// as the process's `SLURM_BITSTR_LEN` says.
    pub fn system(now: i64) -> Ctx {
        let bitstr = std::env::var("SLURM_BITSTR_LEN").ok();
        let time_format = std::env::var("SLURM_TIME_FORMAT").ok();
        Ctx {
            task_lists: TaskListLimit::from_env(bitstr.as_deref()),
            time_format: TimeFormat::from_env(time_format.as_deref()),
            ..Ctx::new(now, Zone::System)
        }
    }

    /// `2026-11-21T07:01:01`, or as `SLURM_TIME_FORMAT` asks.
    pub fn timestamp(&self, unix: i64) -> String {
        let format = match self.time_format {
            TimeFormat::Standard | TimeFormat::Invalid(_) => {
                return match self.zone {
                    Zone::System => format_timestamp_in(unix, &SystemZone),
                    Zone::Fixed(z) => format_timestamp_in(unix, &z),
                };
            }
            TimeFormat::Custom(format) => format,
            TimeFormat::Relative => {
                let (Some(when), Some(today)) = (
                    broken_down(unix, self.zone),
                    broken_down(self.now, self.zone),
                ) else {
                    return "Unknown".to_owned();
                };
                relative_format(&when, &today)
            }
        };
        strftime(format, unix, self.zone).unwrap_or_else(|| "Unknown".to_owned())
    }

    /// The `-l` date line: `Sat Nov 21 07:01:06 2026`.
    pub fn ctime_now(&self) -> String {
        match self.zone {
            Zone::System => format_ctime_in(self.now, &SystemZone),
            Zone::Fixed(z) => format_ctime_in(self.now, &z),
        }
    }
}

/// How timestamps are written, as `SLURM_TIME_FORMAT` says: unset, empty
/// or `standard` is `2026-11-21T07:01:01`; `relative` is short and relative
/// to today (`12:26:38`, `Ystday 20:13`, `Sat 02:17`, `18 Jun 13:14`,
/// `19 Jan 2003`); anything else with a `%` and under 32 bytes is a
/// strftime(3) format. Slurm refuses the rest (with an error, once) and
/// writes the standard form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TimeFormat {
    #[default]
    Standard,
    Relative,
    Custom(&'static str),
    Invalid(&'static str),
}

/// Longest `SLURM_TIME_FORMAT` Slurm takes, and longest text it writes
/// from one: its buffers are 32 bytes, the last for the NUL.
const TIME_TEXT_MAX: usize = 31;

impl TimeFormat {
    /// Reads the variable's value.
    pub fn from_env(value: Option<&str>) -> TimeFormat {
        match value {
            None | Some("" | "standard") => TimeFormat::Standard,
            Some("relative") => TimeFormat::Relative,
            Some(v) if v.contains('%') && v.len() <= TIME_TEXT_MAX => TimeFormat::Custom(intern(v)),
            Some(v) => TimeFormat::Invalid(intern(v)),
        }
    }

    /// The line Slurm prints (after `<command>: error: `) for a value it
    /// refuses.
    pub fn error(self) -> Option<String> {
        match self {
            TimeFormat::Invalid(v) => Some(format!("invalid SLURM_TIME_FORMAT = '{v}'")),
            _ => None,
        }
    }
}

/// A process-long copy of a format text, so that [`Ctx`] stays `Copy`.
/// Each distinct text is kept once; a process sees one or two.
fn intern(text: &str) -> &'static str {
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<Vec<&'static str>>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| Mutex::new(Vec::new()));
    let mut seen = match seen.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(&known) = seen.iter().find(|k| **k == text) {
        return known;
    }
    let kept: &'static str = Box::leak(text.to_owned().into_boxed_str());
    seen.push(kept);
    kept
}

/// `unix` as the calendar fields of `zone`.
// The conversions to `time_t` are identities where it has 64 bits.
#[allow(clippy::useless_conversion)]
fn broken_down(unix: i64, zone: Zone) -> Option<libc::tm> {
    // SAFETY: all-zero bytes are a valid `tm` (a null zone name included).
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let done = match zone {
        Zone::System => {
            let t = unix.try_into().ok()?;
            // SAFETY: both pointers refer to live values of the right type.
            !unsafe { libc::localtime_r(&t, &mut tm) }.is_null()
        }
        Zone::Fixed(z) => {
            let t = unix
                .checked_add(i64::from(z.offset_secs))?
                .try_into()
                .ok()?;
            // SAFETY: as above.
            let ok = !unsafe { libc::gmtime_r(&t, &mut tm) }.is_null();
            tm.tm_gmtoff = i64::from(z.offset_secs);
            ok
        }
    };
    done.then_some(tm)
}

/// The `relative` format for a time, by its distance in days from today.
fn relative_format(when: &libc::tm, today: &libc::tm) -> &'static str {
    let day = |t: &libc::tm| 1000 * (i64::from(t.tm_year) + 1900) + i64::from(t.tm_yday);
    match day(when) - day(today) {
        -1 => "Ystday %H:%M",
        0 => "%H:%M:%S",
        1 => "Tomorr %H:%M",
        d if !(-365..=365).contains(&d) => "%-d %b %Y",
        d if !(-1..=6).contains(&d) => "%-d %b %H:%M",
        _ => "%a %H:%M",
    }
}

/// C's strftime(3) of `unix` in `zone`, cut to what Slurm's buffer holds.
fn strftime(format: &str, unix: i64, zone: Zone) -> Option<String> {
    let tm = broken_down(unix, zone)?;
    let format = if cfg!(target_env = "gnu") {
        std::ffi::CString::new(format).ok()?
    } else {
        std::ffi::CString::new(gnu_hours(format, &tm)).ok()?
    };
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its length, `format` is NUL-terminated
    // and `tm` is a filled-in `tm`; strftime writes at most `buf.len()`.
    let len = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), &tm) };
    let text = buf.get(..len.min(TIME_TEXT_MAX)).unwrap_or_default();
    Some(String::from_utf8_lossy(text).into_owned())
}

/// `format` with glibc's `%k`, `%l` and `%P` (hours padded with spaces, and
/// `am`/`pm`) written out, for C libraries whose strftime lacks them (musl
/// writes nothing at all for such a format). A flag between `%` and the
/// letter works as in glibc: `-` no padding, `0` zeros, `_` spaces.
fn gnu_hours(format: &str, tm: &libc::tm) -> String {
    let mut out = String::with_capacity(format.len());
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let spec = &rest[at + 1..];
        let (flag, letter) = match spec.chars().next() {
            Some(f @ ('-' | '0' | '_')) => (Some(f), spec[1..].chars().next()),
            other => (None, other),
        };
        let used = 1 + usize::from(flag.is_some()) + letter.map_or(0, char::len_utf8);
        let hour12 = match tm.tm_hour % 12 {
            0 => 12,
            h => h,
        };
        let text = match letter {
            Some('k') => Some(hour_text(tm.tm_hour, flag)),
            Some('l') => Some(hour_text(hour12, flag)),
            Some('P') => Some(if tm.tm_hour < 12 { "am" } else { "pm" }.to_owned()),
            _ => None,
        };
        match text {
            Some(t) => out.push_str(&t),
            None => out.push_str(&rest[at..(at + used).min(rest.len())]),
        }
        rest = &rest[(at + used).min(rest.len())..];
    }
    out.push_str(rest);
    out
}

/// A two-digit field padded as strftime's flag says (spaces by default).
fn hour_text(value: i32, flag: Option<char>) -> String {
    match flag {
        Some('-') => value.to_string(),
        Some('0') => format!("{value:02}"),
        _ => format!("{value:2}"),
    }
}

/// How the commands show the sizes and counts Slurm passes through its unit
/// conversion (squeue's `MIN_MEMORY`, `MIN_TMP_DISK`, `MIN_CPUS`; sinfo's
/// `CPUS`, `JOB_SIZE`, `S:C:T`, ...). A per-report choice rather than a
/// field of [`Ctx`], so the renderers that never convert stay unaware of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Units {
    /// Scaled to the largest unit that keeps the value exact, half units
    /// allowed (`2048M` as `2G`, `1536M` as `1.50G`): Slurm's default.
    #[default]
    Scaled,
    /// In the unit the value is kept in (`2048M`): `--noconvert`.
    Original,
}

/// The unit a value handed to [`write_scaled`] is kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseUnit {
    /// A plain count (CPUs, nodes): no suffix until scaled.
    Count,
    /// Megabytes (memory, disk): `M` even when not scaled.
    Mega,
}

/// Appends `value` as Slurm's unit conversion writes it: `0` for zero, else
/// the number with its unit letter (none for a plain count; `K`, `M`, `G`,
/// `T`, `P`, `?` past peta), scaled by 1024 while the value is at least 1024
/// and a multiple of 512 when `units` is [`Units::Scaled`]. A fraction left
/// by a half unit prints with two decimals (`1.50G`). Slurm hands the value
/// over as a C `float`, so values past 2^24 lose their low bits the same
/// way here.
pub fn write_scaled(out: &mut String, value: u64, base: BaseUnit, units: Units) {
    // The float round trip is deliberate: it is what Slurm prints.
    let mut num = f64::from(value as f32);
    if num < 1.0 {
        out.push('0');
        return;
    }
    let mut step = match base {
        BaseUnit::Count => 0usize,
        BaseUnit::Mega => 2,
    };
    if units == Units::Scaled {
        // `as u64` truncates as C's cast does (and saturates, never wraps).
        while num >= 1024.0 && (num as u64) % 512 == 0 {
            num /= 1024.0;
            step += 1;
        }
    }
    let whole = num as u64;
    if whole as f64 == num {
        push_u64(out, whole);
    } else {
        let _ = write!(out, "{num:.2}");
    }
    match step {
        0 => {}
        1 => out.push('K'),
        2 => out.push('M'),
        3 => out.push('G'),
        4 => out.push('T'),
        5 => out.push('P'),
        _ => out.push('?'),
    }
}

/// Appends `value` padded or cut to `width` characters (`None`: as it is),
/// right-justified when `right`.
pub(crate) fn pad(out: &mut String, value: &str, width: Option<usize>, right: bool) {
    let Some(width) = width else {
        out.push_str(value);
        return;
    };
    let len = if value.is_ascii() {
        value.len()
    } else {
        value.chars().count()
    };
    if len >= width {
        if value.is_ascii() {
            out.push_str(&value[..width]);
        } else {
            out.extend(value.chars().take(width));
        }
        return;
    }
    const SPACES: &str = "                                                                ";
    let push_spaces = |out: &mut String, mut n: usize| {
        while n > 0 {
            let k = n.min(SPACES.len());
            out.push_str(&SPACES[..k]);
            n -= k;
        }
    };
    if right {
        push_spaces(out, width - len);
        out.push_str(value);
    } else {
        out.push_str(value);
        push_spaces(out, width - len);
    }
}

/// [`pad`] for a value already appended to `out` from byte `start` on:
/// the value is padded or cut where it lies, without a copy of its own.
pub(crate) fn pad_tail(out: &mut String, start: usize, width: Option<usize>, right: bool) {
    let Some(width) = width else {
        return;
    };
    let value = &out[start..];
    let (len, cut) = if value.is_ascii() {
        (value.len(), start + width.min(value.len()))
    } else {
        let len = value.chars().count();
        let cut = value
            .char_indices()
            .nth(width)
            .map_or(out.len(), |(i, _)| start + i);
        (len, cut)
    };
    if len >= width {
        out.truncate(cut);
        return;
    }
    const SPACES: &str = "                                                                ";
    let mut missing = width - len;
    while missing > 0 {
        let k = missing.min(SPACES.len());
        if right {
            out.insert_str(start, &SPACES[..k]);
        } else {
            out.push_str(&SPACES[..k]);
        }
        missing -= k;
    }
}

/// The base state of a job; an unknown number reads as PENDING, the state
/// in which a job shows the least.
pub(crate) fn base_state(job: &JobInfo) -> slurm_common::state::JobState {
    use slurm_common::state::JobState as S;
    match JobState::try_from(job.state).unwrap_or(JobState::Pending) {
        JobState::Unspecified | JobState::Pending => S::Pending,
        JobState::Running => S::Running,
        JobState::Suspended => S::Suspended,
        JobState::Completed => S::Completed,
        JobState::Cancelled => S::Cancelled,
        JobState::Failed => S::Failed,
        JobState::Timeout => S::Timeout,
        JobState::NodeFail => S::NodeFail,
        JobState::Preempted => S::Preempted,
        JobState::BootFail => S::BootFail,
        JobState::Deadline => S::Deadline,
        JobState::OutOfMemory => S::OutOfMemory,
    }
}

fn has_flag(job: &JobInfo, flag: JobStateFlag) -> bool {
    job.state_flags.contains(&(flag as i32))
}

/// The state a job is shown in, flags taking precedence over the base
/// state as in Slurm (a cancelled job still cleaning up is COMPLETING).
pub(crate) fn shown_state(job: &JobInfo) -> slurm_common::state::JobStateCode {
    use slurm_common::state::JobStateCode as C;
    if job.state_flags.is_empty() {
        return C::Base(base_state(job));
    }
    const ORDER: [(JobStateFlag, C); 9] = [
        (JobStateFlag::Completing, C::Completing),
        (JobStateFlag::Configuring, C::Configuring),
        (JobStateFlag::StageOut, C::StageOut),
        (JobStateFlag::Resizing, C::Resizing),
        (JobStateFlag::Requeued, C::Requeued),
        (JobStateFlag::RequeueHold, C::RequeueHold),
        (JobStateFlag::SpecialExit, C::SpecialExit),
        (JobStateFlag::Stopped, C::Stopped),
        (JobStateFlag::Signaling, C::Signaling),
    ];
    for (flag, code) in ORDER {
        if has_flag(job, flag) {
            return code;
        }
    }
    if has_flag(job, JobStateFlag::Revoked) {
        return C::Revoked;
    }
    if has_flag(job, JobStateFlag::ResvDelHold) {
        return C::ResvDelHold;
    }
    C::Base(base_state(job))
}

/// `cpu=1,mem=4000M,node=1,billing=1`; empty for an empty list.
pub(crate) fn write_tres(out: &mut String, tres: Option<&TresList>) {
    let Some(tres) = tres else { return };
    for (i, t) in tres.items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&t.r#type);
        if !t.name.is_empty() {
            out.push('/');
            out.push_str(&t.name);
        }
        out.push('=');
        if t.r#type == "mem" {
            out.push_str(&format_size_exact(t.count, SizeUnit::Mega));
        } else {
            let _ = write!(out, "{}", t.count);
        }
    }
}

/// A time limit in minutes, `None` for unlimited (or not set).
pub(crate) fn limit_minutes(limit: Option<&TimeLimit>) -> Option<u32> {
    use slurm_proto::v1::time_limit::Limit;
    match limit.and_then(|l| l.limit) {
        Some(Limit::Minutes(m)) => Some(m),
        _ => None,
    }
}

/// Converts a wire time limit; absent reads as unlimited.
pub(crate) fn common_limit(limit: Option<&TimeLimit>) -> slurm_common::time::TimeLimit {
    match limit_minutes(limit) {
        Some(m) => slurm_common::time::TimeLimit::Minutes(m),
        None => slurm_common::time::TimeLimit::Infinite,
    }
}

/// Whether a job shows `(Reason)` instead of its node list.
pub(crate) fn shows_reason(job: &JobInfo) -> bool {
    use slurm_common::state::JobState as S;
    matches!(
        base_state(job),
        S::Pending | S::Timeout | S::OutOfMemory | S::Deadline | S::Failed
    ) && !has_flag(job, JobStateFlag::Completing)
}

/// The reason a job is waiting: the free text when there is one, else the
/// reason's name.
pub(crate) fn reason_text(job: &JobInfo) -> &str {
    if !job.state_description.is_empty() {
        &job.state_description
    } else if job.state_reason.is_empty() {
        "None"
    } else {
        &job.state_reason
    }
}

/// A job's id as squeue's `%i` shows it: `12`, `15_3`, `15_[0-3%2]`
/// (the task list cut as `ctx` says); an array record that still holds a
/// single task shows it as a task (`15_3`), as Slurm does.
pub(crate) fn write_job_id(out: &mut String, job: &JobInfo, ctx: &Ctx) {
    let single = |spec: &str| !spec.is_empty() && spec.bytes().all(|b| b.is_ascii_digit());
    match (job.array_job_id, job.array_task_id) {
        (Some(master), Some(task)) => {
            let _ = write!(out, "{master}_{task}");
        }
        (Some(master), None) if single(&job.array_task_spec) => {
            let _ = write!(out, "{master}_{}", job.array_task_spec);
        }
        (Some(master), None) if !job.array_task_spec.is_empty() => {
            let start = out.len();
            let _ = write!(
                out,
                "{master}_[{}]",
                ctx.task_lists.cut(&job.array_task_spec)
            );
            if !ctx.task_lists.set && out.len() - start > ARRAY_ID_WIDTH {
                let mut end = start + ARRAY_ID_WIDTH;
                while !out.is_char_boundary(end) {
                    end -= 1;
                }
                out.truncate(end);
            }
        }
        _ => push_u64(out, job.job_id.into()),
    }
}

/// Appends a number in decimal without going through `fmt`, which matters
/// when it runs for every cell of 10,000 rows.
pub(crate) fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or("?"));
}

/// Whether a job has its batch step now: a batch job that runs (or is
/// suspended) and is not completing. The controller keeps no record of
/// that step; `squeue -s` and `scontrol show step` show it from the job's.
pub(crate) fn has_batch_step(job: &JobInfo) -> bool {
    let live = job.state == JobState::Running as i32 || job.state == JobState::Suspended as i32;
    live && job.batch && !job.state_flags.contains(&(JobStateFlag::Completing as i32))
}

/// The node a job's batch step runs on: its batch host, else its first
/// node.
pub(crate) fn batch_step_node(job: &JobInfo) -> String {
    if job.batch_host.is_empty() {
        slurm_common::hostlist::expand(&job.nodes)
            .ok()
            .and_then(|n| n.into_iter().next())
            .unwrap_or_default()
    } else {
        job.batch_host.clone()
    }
}

/// Appends `value`, or `(null)` when it is empty.
pub(crate) fn or_null(value: &str) -> &str {
    if value.is_empty() {
        "(null)"
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    /// squeue's `%i`: a task, an array record's pending set in brackets,
    /// and an array record holding one task shown as that task.
    #[test]
    fn job_ids_as_squeue_writes_them() {
        let id = |array: Option<u32>, task: Option<u32>, spec: &str| {
            let job = JobInfo {
                job_id: 15,
                array_job_id: array,
                array_task_id: task,
                array_task_spec: spec.into(),
                ..JobInfo::default()
            };
            let mut out = String::new();
            write_job_id(&mut out, &job, &Ctx::utc(0));
            out
        };
        assert_eq!(id(None, None, ""), "15");
        assert_eq!(id(Some(11), Some(3), ""), "11_3");
        assert_eq!(id(Some(15), None, "0-3%2"), "15_[0-3%2]");
        assert_eq!(id(Some(15), None, "1,3"), "15_[1,3]");
        assert_eq!(id(Some(15), None, "5"), "15_5");
    }

    #[test]
    fn slurm_time_format_values() {
        assert_eq!(TimeFormat::from_env(None), TimeFormat::Standard);
        assert_eq!(TimeFormat::from_env(Some("")), TimeFormat::Standard);
        assert_eq!(TimeFormat::from_env(Some("standard")), TimeFormat::Standard);
        assert_eq!(TimeFormat::from_env(Some("relative")), TimeFormat::Relative);
        assert_eq!(TimeFormat::from_env(Some("%s")), TimeFormat::Custom("%s"));
        // No `%`, or 32 bytes and more: refused, with Slurm's words.
        let long = "%Y-%m-%d %H:%M:%S and more texts";
        for bad in ["bogus", "Relative", long] {
            let f = TimeFormat::from_env(Some(bad));
            assert_eq!(f, TimeFormat::Invalid(intern(bad)));
            assert_eq!(
                f.error(),
                Some(format!("invalid SLURM_TIME_FORMAT = '{bad}'"))
            );
        }
        assert_eq!(TimeFormat::Relative.error(), None);
    }

    #[test]
    fn timestamps_follow_slurm_time_format() {
        // 2026-11-22T04:54:03 UTC, a Sunday.
        let t = 1_795_323_243;
        let ctx = |format| Ctx {
            time_format: format,
            ..Ctx::utc(t + 3_600)
        };
        assert_eq!(
            ctx(TimeFormat::Standard).timestamp(t),
            "2026-11-22T04:54:03"
        );
        assert_eq!(
            ctx(TimeFormat::Invalid("x")).timestamp(t),
            "2026-11-22T04:54:03"
        );
        assert_eq!(ctx(TimeFormat::Custom("%s")).timestamp(t), "1795323243");
        assert_eq!(
            ctx(TimeFormat::Custom("%e|%-d|%k %%")).timestamp(t),
            "22|22| 4 %"
        );
        // glibc's hour extensions, written out where strftime lacks them.
        let tm = broken_down(t, Zone::Fixed(FixedZone::UTC)).unwrap();
        assert_eq!(gnu_hours("%e|%-d|%k %%", &tm), "%e|%-d| 4 %%");
        assert_eq!(gnu_hours("%l%P|%-k|%0l|%_k|%", &tm), " 4am|4|04| 4|%");
        assert_eq!(gnu_hours("%%k %-", &tm), "%%k %-");
        // Slurm's buffer keeps 31 bytes.
        let cut = ctx(TimeFormat::Custom("%Y-%m-%d %H:%M:%S and more text")).timestamp(t);
        assert_eq!(cut, "2026-11-22 04:54:03 and more te");
        let rel = ctx(TimeFormat::Relative);
        let day = 86_400;
        assert_eq!(rel.timestamp(t), "04:54:03");
        assert_eq!(rel.timestamp(t - day), "Ystday 04:54");
        assert_eq!(rel.timestamp(t + day), "Tomorr 04:54");
        assert_eq!(rel.timestamp(t + 3 * day), "Wed 04:54");
        assert_eq!(rel.timestamp(t - 3 * day), "19 Nov 04:54");
        assert_eq!(rel.timestamp(t + 8 * day), "30 Nov 04:54");
        assert_eq!(rel.timestamp(t + 366 * day), "23 Nov 2027");
        // A zone east of UTC moves the day too.
        let east = Ctx {
            zone: Zone::Fixed(FixedZone {
                offset_secs: 20 * 3_600,
            }),
            ..ctx(TimeFormat::Custom("%F %H"))
        };
        assert_eq!(east.timestamp(t), "2026-11-23 00");
    }

    /// `scontrol show job` of a `--gres` job: TresPerNode on a line of its
    /// own after Power=, as Slurm 22.05 prints it; none without `--gres`.
    #[test]
    fn scontrol_shows_tres_per_node_after_power() {
        let ctx = Ctx::utc(0);
        let mut job = slurm_proto::v1::JobInfo {
            job_id: 7,
            work_dir: "/w".into(),
            gres: "gres:gpu:1".into(),
            ..Default::default()
        };
        let mut out = String::new();
        scontrol::write_job(&mut out, &job, false, &ctx);
        assert!(
            out.contains("\n   Power=\n   TresPerNode=gres:gpu:1\n"),
            "{out}"
        );
        let mut one = String::new();
        scontrol::write_job(&mut one, &job, true, &ctx);
        assert!(one.contains(" Power= TresPerNode=gres:gpu:1 "), "{one}");
        job.gres.clear();
        let mut plain = String::new();
        scontrol::write_job(&mut plain, &job, false, &ctx);
        assert!(!plain.contains("TresPerNode"), "{plain}");
    }

    fn scaled(value: u64, base: BaseUnit, units: Units) -> String {
        let mut out = String::new();
        write_scaled(&mut out, value, base, units);
        out
    }

    #[test]
    fn sizes_scale_while_exact_or_half() {
        use BaseUnit::{Count, Mega};
        use Units::{Original, Scaled};
        for (value, base, want) in [
            (0, Mega, "0"),
            (100, Mega, "100M"),
            (1000, Mega, "1000M"),
            (2048, Mega, "2G"),
            (4000, Mega, "4000M"),
            (1536, Mega, "1.50G"),
            (2560, Mega, "2.50G"),
            (1_048_576, Mega, "1T"),
            (1_572_864, Mega, "1.50T"),
            (1_073_741_824, Mega, "1P"),
            (1_099_511_627_776, Mega, "1?"),
            (2, Count, "2"),
            (1000, Count, "1000"),
            (1024, Count, "1K"),
            (1536, Count, "1.50K"),
            (1537, Count, "1537"),
        ] {
            assert_eq!(scaled(value, base, Scaled), want, "{value}");
        }
        assert_eq!(scaled(2048, Mega, Original), "2048M");
        assert_eq!(scaled(0, Mega, Original), "0");
        assert_eq!(scaled(1024, Count, Original), "1024");
        // Past 2^24 the value goes through a C float, as in Slurm.
        assert_eq!(scaled(16_777_217, Mega, Original), "16777216M");
        // 2^64 is past what C can cast back; the cast saturates here.
        assert_eq!(scaled(u64::MAX, Count, Scaled), "18446744073709551615");
        assert_eq!(scaled(1 << 62, Count, Scaled), "4?");
    }

    proptest! {
        /// Scaling never panics and reads back to the value it came from
        /// whenever the value is exact in a float.
        #[test]
        fn scaled_sizes_read_back(value in 0u64..(1 << 24), mega in any::<bool>()) {
            let base = if mega { BaseUnit::Mega } else { BaseUnit::Count };
            let text = scaled(value, base, Units::Scaled);
            let digits_end = text
                .find(|c: char| !c.is_ascii_digit() && c != '.')
                .unwrap_or(text.len());
            let (number, suffix) = text.split_at(digits_end);
            let number: f64 = number.parse().unwrap();
            let steps = match suffix {
                "" => 0,
                "K" => 1,
                "M" => 2,
                "G" => 3,
                "T" => 4,
                _ => return Err(TestCaseError::fail(format!("suffix of {text}"))),
            };
            let from = if mega { 2 } else { 0 };
            let back = number * 1024f64.powi(steps - from);
            prop_assert_eq!(back, value as f64, "{}", text);
            let plain = scaled(value, base, Units::Original);
            let bare = plain.trim_end_matches('M');
            prop_assert_eq!(bare, value.to_string());
        }

        /// Padding in place gives what padding a copy gives.
        #[test]
        fn pad_tail_is_pad(
            before in "\\PC{0,4}",
            value in prop_oneof!["[a-z ]{0,30}", "\\PC{0,30}"],
            width in proptest::option::of(0usize..140),
            right in any::<bool>(),
        ) {
            let mut want = before.clone();
            pad(&mut want, &value, width, right);
            let mut got = before.clone();
            got.push_str(&value);
            pad_tail(&mut got, before.len(), width, right);
            prop_assert_eq!(got, want);
        }
    }
}
