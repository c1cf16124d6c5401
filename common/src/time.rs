//! Slurm's time vocabulary: time limits, durations and wall-clock timestamps.
//!
//! Users type these strings (`--time=1-12`, `--begin=now+1hour`,
//! `sacct -S 2026-11-21T07:00`) and every command prints them; scripts and
//! workflow tools parse the output back. Getting a character wrong breaks
//! them, so each printed form here is named after the column that uses it.
//!
//! Three kinds of value:
//!
//! * [`TimeLimit`]: whole minutes or infinite, the unit of `--time`,
//!   `MaxTime`, `DefaultTime` and `TimeLimit=`. Seconds given by the user are
//!   rounded up to the next minute, as Slurm does.
//! * durations in seconds (elapsed time, run time), printed in two styles:
//!   [`format_duration_squeue`] (`0:00`, `1:02:03`) and
//!   [`format_duration_sacct`] (`00:00:00`, `1-02:03:04`).
//! * timestamps in Unix seconds, shown in the local zone as
//!   `2026-11-21T07:01:01` ([`format_timestamp`]) and read from the many forms
//!   `--begin` accepts ([`parse_timestamp`]).
//!
//! Timestamps are read exactly as Slurm 22.05 reads them, quirks included
//! (`2026-02-30` is 2 March, `Today` is refused because `T` separates
//! fields), and a refusal carries the byte position Slurm reports, because
//! the commands print it (`Invalid time specification (pos=3): now+x`) and
//! a script that works, or fails, under Slurm must do the same here.
//!
//! The local zone is behind the [`LocalZone`] trait so tests can pin a fixed
//! offset; the current time is always passed in, never read here.
//!
//! Display of absent timestamps is left to callers because Slurm's words differ
//! by field: `scontrol show job` prints `Unknown` for an unset
//! `StartTime`/`EndTime`/`EligibleTime`/`AccrueTime`, `N/A` for `Deadline` and
//! `TimeMin`, `None` for `SuspendTime`; `squeue`'s `START_TIME` prints `N/A`;
//! `sacct` prints `Unknown` for an unset `Start`/`End`. A time limit that was
//! never set prints `NONE` in `scontrol show partition` (`DefaultTime=NONE`)
//! and `n/a` in `sinfo`.

use chrono::{
    Datelike, Days, Duration, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Timelike,
};
use thiserror::Error;

/// Why a time string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TimeError {
    /// Not one of the time-limit forms (`M`, `M:S`, `H:M:S`, `D-H[:M[:S]]`,
    /// `UNLIMITED`). Commands report it as `Invalid --time specification`.
    #[error("invalid time specification {input:?}")]
    InvalidTimeLimit { input: String },
    /// Not a timestamp `--begin` accepts. `pos` is the byte offset Slurm
    /// reports for the same input ([`TimeError::slurm_notice`]); it can be
    /// -1 and can lie past the end of the input, as Slurm's can.
    #[error("invalid time specification {input:?} at byte {pos}: {problem}")]
    InvalidTimestamp {
        input: String,
        pos: isize,
        problem: TimestampProblem,
    },
    /// A timestamp without a date or a time in it (empty, blanks, `-`):
    /// refused without a position, as Slurm refuses it.
    #[error("time specification {input:?} names no date or time")]
    EmptyTimestamp { input: String },
    /// A number in the input is too large for the value it describes.
    #[error("time specification {input:?} is out of range")]
    Overflow { input: String },
}

impl TimeError {
    /// The line Slurm's commands print on standard error, without any
    /// prefix, before their own complaint about the option:
    /// `Invalid time specification (pos=0): garbage`. Only a refused
    /// timestamp has one.
    pub fn slurm_notice(&self) -> Option<String> {
        match self {
            TimeError::InvalidTimestamp { input, pos, .. } => {
                Some(format!("Invalid time specification (pos={pos}): {input}"))
            }
            _ => None,
        }
    }
}

/// What was wrong where a timestamp was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum TimestampProblem {
    /// A character that starts no field: a letter that begins no known word,
    /// or anything after `now` other than an offset.
    #[error("unexpected character")]
    UnexpectedChar,
    /// The `{+|-}count[unit]` after `now` has no count or an unknown unit.
    #[error("bad offset after now")]
    BadOffset,
    #[error("month, day or year malformed or out of range")]
    BadDate,
    #[error("hour, minute or second malformed or out of range")]
    BadTimeOfDay,
    /// `utsN` whose N is not a number of at least 1000000.
    #[error("bad unix time after uts")]
    BadUnixTime,
    /// `now` after the start of the input, where Slurm loses track of the
    /// position.
    #[error("now not at the start")]
    MisplacedNow,
}

// ---------------------------------------------------------------------------
// Time limits
// ---------------------------------------------------------------------------

/// A job or partition time limit, counted in minutes as Slurm stores it.
///
/// `Minutes(0)` is kept distinct from `Infinite` because what zero means
/// depends on where it is written: on a job (`--time=0`) Slurm documents it
/// as no limit ([`TimeLimit::for_job_request`]); in `slurm.conf` it stays as
/// written. Finite limits order below `Infinite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimeLimit {
    Minutes(u32),
    Infinite,
}

impl TimeLimit {
    /// Reads `--time`/`-t` as a job request: Slurm documents that a limit of
    /// zero asks for no limit at all.
    pub fn for_job_request(self) -> TimeLimit {
        match self {
            TimeLimit::Minutes(0) => TimeLimit::Infinite,
            other => other,
        }
    }

    /// Length in seconds; `None` for an infinite limit.
    pub fn as_secs(self) -> Option<u64> {
        match self {
            TimeLimit::Minutes(m) => Some(u64::from(m) * 60),
            TimeLimit::Infinite => None,
        }
    }
}

/// Largest finite limit. Slurm keeps minutes in a `u32` whose two top values
/// mean infinite and unset, so neither may arrive as a real limit.
pub const MAX_LIMIT_MINUTES: u32 = u32::MAX - 2;

impl std::str::FromStr for TimeLimit {
    type Err = TimeError;

    fn from_str(s: &str) -> Result<TimeLimit, TimeError> {
        parse_time_limit(s)
    }
}

/// Parses a time limit as `--time`, `--time-min`, `MaxTime=` and
/// `DefaultTime=` accept it.
///
/// Forms: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`; `UNLIMITED`,
/// `INFINITE` or `-1` for no limit (case-insensitive). Fields are not range
/// checked (`90` and `0:90:00` are both an hour and a half), and seconds round
/// up to the next whole minute (`0:30` is one minute). `0` is
/// `Minutes(0)`; a job request maps it with [`TimeLimit::for_job_request`].
pub fn parse_time_limit(s: &str) -> Result<TimeLimit, TimeError> {
    let trimmed = s.trim();
    if trimmed == "-1"
        || trimmed.eq_ignore_ascii_case("unlimited")
        || trimmed.eq_ignore_ascii_case("infinite")
    {
        return Ok(TimeLimit::Infinite);
    }
    let secs = parse_duration_secs(s)?;
    let minutes = secs.div_ceil(60);
    match u32::try_from(minutes) {
        Ok(m) if m <= MAX_LIMIT_MINUTES => Ok(TimeLimit::Minutes(m)),
        _ => Err(TimeError::Overflow {
            input: s.to_owned(),
        }),
    }
}

/// Parses the duration forms of [`parse_time_limit`] to whole seconds,
/// without rounding and without the infinite words.
pub fn parse_duration_secs(s: &str) -> Result<u64, TimeError> {
    let invalid = || TimeError::InvalidTimeLimit {
        input: s.to_owned(),
    };
    let overflow = || TimeError::Overflow {
        input: s.to_owned(),
    };
    let t = s.trim();
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b':')
    {
        return Err(invalid());
    }
    let field = |f: &str| -> Result<u64, TimeError> {
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        // All digits, so a parse failure means the number is too big.
        f.parse::<u64>().map_err(|_| overflow())
    };
    let (days, rest) = match t.split_once('-') {
        Some((d, rest)) => (Some(field(d)?), rest),
        None => (None, t),
    };
    let parts = rest
        .split(':')
        .map(field)
        .collect::<Result<Vec<u64>, TimeError>>()?;
    // Each form as (days, hours, minutes, seconds).
    let (d, h, m, sec) = match (days, parts.as_slice()) {
        (None, [m]) => (0, 0, *m, 0),
        (None, [m, s]) => (0, 0, *m, *s),
        (None, [h, m, s]) => (0, *h, *m, *s),
        (Some(d), [h]) => (d, *h, 0, 0),
        (Some(d), [h, m]) => (d, *h, *m, 0),
        (Some(d), [h, m, s]) => (d, *h, *m, *s),
        _ => return Err(invalid()),
    };
    d.checked_mul(86_400)
        .and_then(|total| total.checked_add(h.checked_mul(3_600)?))
        .and_then(|total| total.checked_add(m.checked_mul(60)?))
        .and_then(|total| total.checked_add(sec))
        .ok_or_else(overflow)
}

/// A time limit as `squeue` (`%l`, `TIME_LIMIT`) prints it: `UNLIMITED`,
/// `5:00`, `1:00:00`, `1-00:00:00`.
pub fn format_time_limit(limit: TimeLimit) -> String {
    match limit {
        TimeLimit::Infinite => "UNLIMITED".to_owned(),
        TimeLimit::Minutes(m) => format_duration_squeue(u64::from(m) * 60),
    }
}

/// A time limit as `sinfo` (`TIMELIMIT`, `%l`) prints it: `infinite`,
/// `30:00`, `1-00:00:00`.
pub fn format_time_limit_sinfo(limit: TimeLimit) -> String {
    match limit {
        TimeLimit::Infinite => "infinite".to_owned(),
        TimeLimit::Minutes(m) => format_duration_squeue(u64::from(m) * 60),
    }
}

/// A time limit as `scontrol show job` (`TimeLimit=`), `scontrol show
/// partition` (`MaxTime=`, `DefaultTime=`) and `sacct` (`Timelimit`) print
/// it: `UNLIMITED`, `00:30:00`, `1-00:00:00`.
pub fn format_time_limit_scontrol(limit: TimeLimit) -> String {
    match limit {
        TimeLimit::Infinite => "UNLIMITED".to_owned(),
        TimeLimit::Minutes(m) => format_duration_sacct(u64::from(m) * 60),
    }
}

// ---------------------------------------------------------------------------
// Durations
// ---------------------------------------------------------------------------

fn split_secs(secs: u64) -> (u64, u64, u64, u64) {
    (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60)
}

/// A duration in the short style of `squeue`'s `TIME` (`%M`) and `sinfo`:
/// `0:00`, `1:05`, `1:02:03`, `1-02:03:04`.
pub fn format_duration_squeue(secs: u64) -> String {
    let (d, h, m, s) = split_secs(secs);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// A duration in the fixed style of `sacct`'s `Elapsed` and `scontrol`'s
/// `RunTime=`: `00:00:00`, `01:02:03`, `1-02:03:04`.
pub fn format_duration_sacct(secs: u64) -> String {
    let (d, h, m, s) = split_secs(secs);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// CPU time as `sacct` prints `TotalCPU`, `UserCPU` and `SystemCPU`: like
/// [`format_duration_sacct`], except that under an hour with a fraction of a
/// second it shows milliseconds instead of hours: `00:00.004`, `01:02.500`,
/// `00:00:00`, `01:02:03`. `micros` is the sub-second part (below 1,000,000;
/// larger values are folded into the seconds).
pub fn format_cpu_time_sacct(secs: u64, micros: u32) -> String {
    let secs = secs.saturating_add(u64::from(micros / 1_000_000));
    let millis = micros % 1_000_000 / 1_000;
    let (d, h, m, s) = split_secs(secs);
    if d == 0 && h == 0 && millis > 0 {
        format!("{m:02}:{s:02}.{millis:03}")
    } else {
        format_duration_sacct(secs)
    }
}

/// Same as [`format_duration_squeue`]; the name used by elapsed-time columns.
pub fn format_elapsed(secs: u64) -> String {
    format_duration_squeue(secs)
}

// ---------------------------------------------------------------------------
// Time zones
// ---------------------------------------------------------------------------

/// Conversion between Unix seconds and local wall-clock time.
pub trait LocalZone {
    /// The local wall-clock time at `unix`; `None` when out of range.
    fn to_local(&self, unix: i64) -> Option<NaiveDateTime>;
    /// The Unix time of a local wall-clock time; `None` only when out of
    /// range. When the clock is set back and the time occurs twice, the
    /// earlier instant. When it never occurs (skipped by a forward change), it
    /// is read with the offset in force before the change, as C's `mktime`
    /// does, which lands as far past the change as the time was past its
    /// start: 02:30 in a 02:00-03:00 gap is 03:30.
    fn to_unix(&self, local: NaiveDateTime) -> Option<i64>;
}

/// A zone at a constant offset from UTC, for tests and for `TZ=UTC` hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedZone {
    /// Seconds east of UTC.
    pub offset_secs: i32,
}

impl FixedZone {
    pub const UTC: FixedZone = FixedZone { offset_secs: 0 };

    pub fn east(offset_secs: i32) -> FixedZone {
        FixedZone { offset_secs }
    }
}

impl LocalZone for FixedZone {
    fn to_local(&self, unix: i64) -> Option<NaiveDateTime> {
        let shifted = unix.checked_add(i64::from(self.offset_secs))?;
        chrono::DateTime::from_timestamp(shifted, 0).map(|dt| dt.naive_utc())
    }

    fn to_unix(&self, local: NaiveDateTime) -> Option<i64> {
        local
            .and_utc()
            .timestamp()
            .checked_sub(i64::from(self.offset_secs))
    }
}

/// The host's zone (`TZ`, else `/etc/localtime`), as the commands use it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemZone;

impl LocalZone for SystemZone {
    fn to_local(&self, unix: i64) -> Option<NaiveDateTime> {
        let utc = chrono::DateTime::from_timestamp(unix, 0)?;
        Some(utc.with_timezone(&chrono::Local).naive_local())
    }

    fn to_unix(&self, local: NaiveDateTime) -> Option<i64> {
        match chrono::Local.from_local_datetime(&local) {
            chrono::LocalResult::Single(dt) => return Some(dt.timestamp()),
            // chrono does not promise an order for the two readings.
            chrono::LocalResult::Ambiguous(a, b) => return Some(a.timestamp().min(b.timestamp())),
            chrono::LocalResult::None => {}
        }
        // In a gap: no zone moves its clock twice within a day.
        let before = local.checked_sub_signed(Duration::days(1))?;
        let offset = chrono::Local
            .offset_from_local_datetime(&before)
            .earliest()?
            .fix()
            .local_minus_utc();
        local.and_utc().timestamp().checked_sub(i64::from(offset))
    }
}

// ---------------------------------------------------------------------------
// Timestamps: formatting
// ---------------------------------------------------------------------------

/// A timestamp in Slurm's ISO style in the host's zone:
/// `2026-11-21T07:01:01` (`scontrol` `SubmitTime=`, `sacct` `Start`).
pub fn format_timestamp(unix: i64) -> String {
    format_timestamp_in(unix, &SystemZone)
}

/// [`format_timestamp`] in a given zone. An instant beyond the calendar's
/// range (about 262,000 years from now) prints as `Unknown`.
pub fn format_timestamp_in(unix: i64, zone: &impl LocalZone) -> String {
    match zone.to_local(unix) {
        // The year as C's %Y writes it: all its digits, with no sign past
        // 9999 (chrono's %Y writes `+10193`).
        Some(t) => format!("{:04}-{}", t.year(), t.format("%m-%dT%H:%M:%S")),
        None => "Unknown".to_owned(),
    }
}

/// A timestamp in C's `ctime` style, the header line of `squeue -l` and
/// `sinfo -l`: `Sat Nov 21 07:01:06 2026`.
pub fn format_ctime_in(unix: i64, zone: &impl LocalZone) -> String {
    match zone.to_local(unix) {
        // The year as in format_timestamp_in.
        Some(t) => format!("{} {:04}", t.format("%a %b %e %H:%M:%S"), t.year()),
        None => "Unknown".to_owned(),
    }
}

/// [`format_ctime_in`] in the host's zone.
pub fn format_ctime(unix: i64) -> String {
    format_ctime_in(unix, &SystemZone)
}

// ---------------------------------------------------------------------------
// Timestamps: parsing
// ---------------------------------------------------------------------------

/// Which way an incomplete timestamp is completed.
///
/// `--begin=16:00` at 17:00 means tomorrow (a start time lies ahead), while
/// `sacct -S 16:00` at 17:00 means today at 16:00 (a search window lies
/// behind). The same choice decides the year of a date written without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lean {
    Future,
    Past,
}

/// Parses a timestamp as `--begin`, `--deadline` and `scontrol update
/// StartTime=` accept it, in the host's zone, completing partial forms
/// towards the future. `now` is the current Unix time.
pub fn parse_timestamp(s: &str, now: i64) -> Result<i64, TimeError> {
    parse_timestamp_in(s, now, Lean::Future, &SystemZone)
}

/// As [`parse_timestamp`], completing partial forms towards the past, as
/// `sacct -S/-E` and `sreport` do.
pub fn parse_timestamp_past(s: &str, now: i64) -> Result<i64, TimeError> {
    parse_timestamp_in(s, now, Lean::Past, &SystemZone)
}

/// The timestamp parser behind [`parse_timestamp`], with the zone and the
/// completion direction given.
///
/// The input is read the way Slurm 22.05 reads it: one pass from left to
/// right, in which blanks, `-` and an upper-case `T` separate fields, and
/// each field sets a date, a time of day, or both, the last one given
/// winning. The fields:
///
/// * `YYYY-MM-DD` (known by its `-` at the fifth and eighth bytes; the day
///   may be one digit)
/// * `MM[/.]DD[[/.]YY]` or `MMDD[YY]`, a two-digit year being 20YY (`00`
///   counts as no year)
/// * `HH:MM[:SS]` (minutes and seconds exactly two digits), optionally
///   followed by `AM`/`PM`, attached or after blanks
/// * `today`, `tomorrow`, `midnight`, `noon`, `fika` (15:00), `teatime`
///   (16:00), matched case-insensitively as prefixes, so `noonish` fails
///   at its `i`
/// * `now[{+|-}count[unit]]`, only at the very start; unit is one of
///   `second`, `minute`, `hour`, `day`, `week`, singular or plural, blanks
///   allowed around the count; after a unit, further fields may follow
/// * `utsN`: the Unix time N itself, N at least 1000000, and nothing else
///
/// A day of month beyond the month's end runs on into the next month
/// (`2026-02-30` is 2 March). A date without a time means its midnight. A
/// time without a date means today, except that for [`Lean::Future`] it
/// means tomorrow unless its hour and minute lie after the current ones
/// (seconds are not compared). A date without a year is in the current
/// year, except that for [`Lean::Future`] it moves to the next year unless
/// month, day, hour and minute lie ahead of now, and for [`Lean::Past`] it
/// moves to the previous year when its month lies ahead of the current one.
///
/// An input without any field (empty, blanks, `-`) is
/// [`TimeError::EmptyTimestamp`]. Other refusals carry Slurm's `pos`: the
/// byte offset it reports for the same input, which can be -1 (`0/1`, a
/// one-digit month of zero) or, after a misplaced `now`, lie beyond the
/// end. Where Slurm reads past the end of the string (a `now` that does
/// not start the input) the input is refused here; where its arithmetic
/// overflows (`now+99999999999999999999`) this is
/// [`TimeError::Overflow`].
pub fn parse_timestamp_in(
    s: &str,
    now: i64,
    lean: Lean,
    zone: &impl LocalZone,
) -> Result<i64, TimeError> {
    let invalid = |pos: isize, problem| TimeError::InvalidTimestamp {
        input: s.to_owned(),
        pos,
        problem,
    };
    let overflow = || TimeError::Overflow {
        input: s.to_owned(),
    };
    // Slurm's string ends at the first NUL.
    let bytes = s.as_bytes();
    let text = Text(bytes.split(|&b| b == 0).next().unwrap_or_default());
    if text.starts_with_word(0, "uts") {
        return unix_seconds(&text.0[3..]).ok_or_else(|| invalid(0, TimestampProblem::BadUnixTime));
    }
    let clock = Clock { now, zone };
    let mut fields = Fields::default();
    let mut pos: isize = 0;
    while !is_end(text.at(pos)) {
        pos = scan_field(text, pos, &clock, &mut fields).map_err(|e| match e {
            ScanError::At(pos, problem) => invalid(pos, problem),
            ScanError::Overflow => overflow(),
        })?;
    }
    resolve(&fields, &clock, lean, s)
}

/// The bytes of the input up to its first NUL. Reads outside it give 0, as
/// the terminator would.
#[derive(Debug, Clone, Copy)]
struct Text<'a>(&'a [u8]);

impl Text<'_> {
    fn at(self, i: isize) -> u8 {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.0.get(i))
            .copied()
            .unwrap_or(0)
    }

    fn digit(self, i: isize) -> Option<u32> {
        let b = self.at(i);
        b.is_ascii_digit().then(|| u32::from(b - b'0'))
    }

    /// Whether `word` (ASCII) starts at `i`, ignoring case.
    fn starts_with_word(self, i: isize, word: &str) -> bool {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.0.get(i..i.checked_add(word.len())?))
            .is_some_and(|s| s.eq_ignore_ascii_case(word.as_bytes()))
    }

    fn len(self) -> isize {
        isize::try_from(self.0.len()).unwrap_or(isize::MAX)
    }
}

/// Where the whole input, or the number after `now+`, ends.
fn is_end(b: u8) -> bool {
    b == 0 || b == b'\n'
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// C's `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// `utsN`: strtol's reading of N (leading white space and a sign allowed),
/// which must be the whole rest and at least 1000000.
fn unix_seconds(rest: &[u8]) -> Option<i64> {
    let start = rest
        .iter()
        .position(|b| !is_space(*b))
        .unwrap_or(rest.len());
    let body = rest.get(start..)?;
    let (negative, digits) = match body.first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) || negative {
        return None;
    }
    // Too large for strtol is clamped to LONG_MAX, which Slurm refuses.
    let n: i64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    (1_000_000..i64::MAX).contains(&n).then_some(n)
}

/// The current time and the zone, with the local readings Slurm takes of
/// them.
struct Clock<'z, Z> {
    now: i64,
    zone: &'z Z,
}

impl<Z: LocalZone> Clock<'_, Z> {
    /// The local wall-clock time `delta` seconds from now.
    fn local(&self, delta: i64) -> Option<NaiveDateTime> {
        self.zone.to_local(self.now.checked_add(delta)?)
    }
}

/// A calendar day as the fields give it: the day may exceed the month's
/// length and is carried into the following months when resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MonthDay {
    month: u32,
    day: u32,
}

/// What the fields read so far set; later fields overwrite earlier ones.
#[derive(Debug, Default)]
struct Fields {
    time: Option<NaiveTime>,
    date: Option<MonthDay>,
    /// Only ever set together with `date`, but a date without a year keeps
    /// the year set before it (`today 12/25` is this year's Christmas).
    year: Option<i32>,
    /// The instant `now[+offset]` named, while no later field has changed
    /// it: taken as it is rather than back from its wall-clock reading,
    /// which is ambiguous in the hour a clock is set back.
    instant: Option<i64>,
}

impl Fields {
    fn set_day(&mut self, t: NaiveDateTime) {
        self.date = Some(MonthDay {
            month: t.month(),
            day: t.day(),
        });
        self.year = Some(t.year());
        self.instant = None;
    }

    fn set_time(&mut self, t: NaiveTime) {
        self.time = Some(t);
        self.instant = None;
    }
}

enum ScanError {
    /// Refused, with Slurm's position.
    At(isize, TimestampProblem),
    Overflow,
}

type Scan<T> = Result<T, ScanError>;

fn at(pos: isize, problem: TimestampProblem) -> ScanError {
    ScanError::At(pos, problem)
}

/// Reads the field (or separator) at `pos` into `fields`; returns where the
/// next one starts.
fn scan_field<Z: LocalZone>(
    text: Text<'_>,
    pos: isize,
    clock: &Clock<'_, Z>,
    fields: &mut Fields,
) -> Scan<isize> {
    let c = text.at(pos);
    if is_blank(c) || c == b'-' || c == b'T' {
        return Ok(pos + 1);
    }
    const NAMED_TIMES: [(&str, u32); 4] =
        [("midnight", 0), ("noon", 12), ("fika", 15), ("teatime", 16)];
    for (word, hour) in NAMED_TIMES {
        if text.starts_with_word(pos, word) {
            fields.set_time(NaiveTime::from_hms_opt(hour, 0, 0).unwrap_or(NaiveTime::MIN));
            return Ok(pos + word.len() as isize);
        }
    }
    for (word, days) in [("today", 0), ("tomorrow", 1)] {
        if text.starts_with_word(pos, word) {
            let day = clock.local(days * 86_400).ok_or(ScanError::Overflow)?;
            fields.set_day(day);
            return Ok(pos + word.len() as isize);
        }
    }
    if text.starts_with_word(pos, "now") {
        return scan_now(text, pos, clock, fields);
    }
    if !c.is_ascii_digit() {
        return Err(at(pos, TimestampProblem::UnexpectedChar));
    }
    if text.at(pos + 1) == b':' || text.at(pos + 2) == b':' {
        let (next, time) = scan_clock_time(text, pos)?;
        fields.set_time(time);
        return Ok(next);
    }
    let (next, date, year) = scan_date(text, pos)?;
    fields.date = Some(date);
    fields.instant = None;
    if year.is_some() {
        fields.year = year;
    }
    Ok(next)
}

/// `now[{+|-}count[unit]]` at `pos`. Sets every field to the instant named.
fn scan_now<Z: LocalZone>(
    text: Text<'_>,
    pos: isize,
    clock: &Clock<'_, Z>,
    fields: &mut Fields,
) -> Scan<isize> {
    let mut i = pos + 3;
    while is_blank(text.at(i)) {
        i += 1;
    }
    if pos != 0 {
        // Slurm adds the offset of what follows `now` to the position of
        // `now` instead of setting it, and reads on past the end of the
        // string from there: refused, at the position it goes on from.
        return Err(at(pos + i, TimestampProblem::MisplacedNow));
    }
    let c = text.at(i);
    let (next, delta) = match c {
        b'+' | b'-' => {
            let (next, count) = scan_offset(text, i)?;
            let delta = if c == b'-' {
                count.checked_neg()
            } else {
                Some(count)
            };
            (next, delta.ok_or(ScanError::Overflow)?)
        }
        c if is_end(c) => (i, 0),
        _ => return Err(at(i, TimestampProblem::UnexpectedChar)),
    };
    let instant = clock.now.checked_add(delta).ok_or(ScanError::Overflow)?;
    let t = clock.zone.to_local(instant).ok_or(ScanError::Overflow)?;
    fields.set_day(t);
    fields.set_time(t.time());
    fields.instant = Some(instant);
    Ok(next)
}

/// The `{+|-}count[unit]` after `now`, the sign at `sign`; returns where
/// the next field starts and the offset in seconds. Blanks may stand
/// anywhere before the unit; the unit ends the offset.
fn scan_offset(text: Text<'_>, sign: isize) -> Scan<(isize, i64)> {
    // Longer names first, so that `hours` is not read as `hour` + `s`.
    const UNITS: [(&str, i64); 10] = [
        ("seconds", 1),
        ("second", 1),
        ("minutes", 60),
        ("minute", 60),
        ("hours", 3_600),
        ("hour", 3_600),
        ("days", 86_400),
        ("day", 86_400),
        ("weeks", 604_800),
        ("week", 604_800),
    ];
    let mut count: i64 = 0;
    let mut digits = 0usize;
    let mut i = sign + 1;
    while !is_end(text.at(i)) {
        if is_space(text.at(i)) {
            i += 1;
            continue;
        }
        if let Some((name, secs)) = UNITS.iter().find(|(n, _)| text.starts_with_word(i, n)) {
            i += name.len() as isize;
            count = count.checked_mul(*secs).ok_or(ScanError::Overflow)?;
            break;
        }
        let Some(d) = text.digit(i) else {
            return Err(at(i - 1, TimestampProblem::BadOffset));
        };
        count = count
            .checked_mul(10)
            .and_then(|c| c.checked_add(i64::from(d)))
            .ok_or(ScanError::Overflow)?;
        digits += 1;
        i += 1;
    }
    if digits == 0 {
        return Err(at(sign, TimestampProblem::BadOffset));
    }
    Ok((i, count))
}

/// Two digits at `i` (the second is required): the value.
fn two_digits(text: Text<'_>, i: isize, problem: TimestampProblem) -> Scan<u32> {
    let tens = text.digit(i).ok_or(at(i, problem))?;
    let ones = text.digit(i + 1).ok_or(at(i + 1, problem))?;
    Ok(tens * 10 + ones)
}

/// `H[H]:MM[:SS]` at `pos` (a digit), then blanks and an optional AM/PM.
fn scan_clock_time(text: Text<'_>, pos: isize) -> Scan<(isize, NaiveTime)> {
    use TimestampProblem::BadTimeOfDay as Bad;
    let mut i = pos;
    let mut hour = text.digit(i).ok_or(at(i, Bad))?;
    i += 1;
    if text.at(i) != b':' {
        hour = hour * 10 + text.digit(i).ok_or(at(i, Bad))?;
        i += 1;
    }
    if hour > 23 {
        return Err(at(i - 2, Bad));
    }
    if text.at(i) != b':' {
        return Err(at(i, Bad));
    }
    let minute = two_digits(text, i + 1, Bad)?;
    i += 3;
    if minute > 59 {
        return Err(at(i - 2, Bad));
    }
    let mut second = 0;
    if text.at(i) == b':' {
        second = two_digits(text, i + 1, Bad)?;
        i += 3;
        if second > 59 {
            return Err(at(i - 2, Bad));
        }
    }
    while is_space(text.at(i)) {
        i += 1;
    }
    if text.starts_with_word(i, "pm") {
        hour = match hour + 12 {
            24 => 12,
            h if h > 23 => return Err(at(i, Bad)),
            h => h,
        };
        i += 2;
    } else if text.starts_with_word(i, "am") {
        hour = match hour {
            12 => 0,
            h if h > 11 => return Err(at(i, Bad)),
            h => h,
        };
        i += 2;
    }
    let time = NaiveTime::from_hms_opt(hour, minute, second).ok_or(at(pos, Bad))?;
    Ok((i, time))
}

/// A date at `pos` (a digit): `YYYY-MM-DD` when `-` stands 4 and 7 bytes
/// on, else `MM[/.]DD[[/.]YY]`. Returns where the next field starts, the
/// month and day, and the year when one was written.
fn scan_date(text: Text<'_>, pos: isize) -> Scan<(isize, MonthDay, Option<i32>)> {
    use TimestampProblem::BadDate as Bad;
    // A month or day of one or two digits, whose first character Slurm
    // takes as a digit without looking (so in `2026-:a-05` the `:` is 10),
    // checked against `1..=max`.
    let one_or_two = |i: &mut isize, max: i32| -> Scan<u32> {
        // C's char is signed: bytes above 127 give values below zero.
        let mut v = i32::from(text.at(*i) as i8) - i32::from(b'0');
        *i += 1;
        if let Some(d) = text.digit(*i) {
            v = v * 10 + d as i32;
            *i += 1;
        }
        match u32::try_from(v) {
            Ok(n) if (1..=max).contains(&v) => Ok(n),
            _ => Err(at(*i - 2, Bad)),
        }
    };
    let mut i = pos;
    if text.len() - pos >= 7 && text.at(pos + 4) == b'-' && text.at(pos + 7) == b'-' {
        let mut year: i32 = 0;
        for _ in 0..4 {
            year = year * 10 + text.digit(i).ok_or(at(i, Bad))? as i32;
            i += 1;
        }
        i += 1;
        let month = one_or_two(&mut i, 12)?;
        i += 1;
        if text.digit(i).is_none() {
            return Err(at(i, Bad));
        }
        let day = one_or_two(&mut i, 31)?;
        return Ok((i, MonthDay { month, day }, Some(year)));
    }
    let is_sep = |b: u8| b == b'/' || b == b'.';
    let month = one_or_two(&mut i, 12)?;
    if is_sep(text.at(i)) {
        i += 1;
    }
    if text.digit(i).is_none() {
        return Err(at(i, Bad));
    }
    let day = one_or_two(&mut i, 31)?;
    if is_sep(text.at(i)) {
        i += 1;
    }
    let mut year = None;
    if text.digit(i).is_some() {
        let yy = two_digits(text, i, Bad)?;
        i += 2;
        // `00` cannot be told from no year at all.
        year = (yy != 0).then(|| 2000 + yy as i32);
    }
    Ok((i, MonthDay { month, day }, year))
}

/// Completes the fields read and converts them to Unix time.
fn resolve<Z: LocalZone>(
    fields: &Fields,
    clock: &Clock<'_, Z>,
    lean: Lean,
    input: &str,
) -> Result<i64, TimeError> {
    let overflow = || TimeError::Overflow {
        input: input.to_owned(),
    };
    if let Some(instant) = fields.instant {
        return Ok(instant);
    }
    let now_local = || clock.local(0).ok_or_else(overflow);
    let (time, date, year) = match (fields.time, fields.date) {
        (None, None) => {
            return Err(TimeError::EmptyTimestamp {
                input: input.to_owned(),
            })
        }
        (None, Some(date)) => (NaiveTime::MIN, date, fields.year),
        (Some(time), Some(date)) => (time, date, fields.year),
        (Some(time), None) => {
            let now = now_local()?;
            let later_today = (time.hour(), time.minute()) > (now.hour(), now.minute());
            let day = if lean == Lean::Past || later_today {
                now
            } else {
                clock.local(86_400).ok_or_else(overflow)?
            };
            let date = MonthDay {
                month: day.month(),
                day: day.day(),
            };
            (time, date, Some(day.year()))
        }
    };
    let year = match year {
        Some(y) => y,
        None => {
            let now = now_local()?;
            let this_year = match lean {
                Lean::Past => date.month <= now.month(),
                Lean::Future => {
                    (date.month, date.day, time.hour(), time.minute())
                        > (now.month(), now.day(), now.hour(), now.minute())
                }
            };
            let step = match (this_year, lean) {
                (true, _) => 0,
                (false, Lean::Past) => -1,
                (false, Lean::Future) => 1,
            };
            now.year().checked_add(step).ok_or_else(overflow)?
        }
    };
    // Days past the month's end run on into the next months, as mktime
    // has them.
    let day = NaiveDate::from_ymd_opt(year, date.month, 1)
        .and_then(|first| first.checked_add_days(Days::new(u64::from(date.day.saturating_sub(1)))))
        .ok_or_else(overflow)?;
    clock.zone.to_unix(day.and_time(time)).ok_or_else(overflow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 2026-11-21T07:01:01 UTC, a Saturday: `SubmitTime=` of the captured
    /// jobs (scontrol_show_job_completed.out, rest_jobs.out).
    const NOW: i64 = 1_795_244_461;
    /// Midnight at the start of NOW's day, UTC.
    const MIDNIGHT: i64 = NOW - (7 * 3600 + 61);
    const HOUR: i64 = 3600;
    const DAY: i64 = 86_400;
    const UTC: FixedZone = FixedZone::UTC;

    fn future(s: &str) -> Result<i64, TimeError> {
        parse_timestamp_in(s, NOW, Lean::Future, &UTC)
    }

    fn past(s: &str) -> Result<i64, TimeError> {
        parse_timestamp_in(s, NOW, Lean::Past, &UTC)
    }

    #[test]
    fn time_limit_forms() {
        let m = TimeLimit::Minutes;
        let cases: &[(&str, TimeLimit)] = &[
            ("0", m(0)),
            ("1", m(1)),
            ("60", m(60)),
            ("90", m(90)),
            ("0:00", m(0)),
            ("0:30", m(1)),
            ("0:59", m(1)),
            ("1:00", m(1)),
            ("1:01", m(2)),
            ("5:00", m(5)),
            ("0:90", m(2)),
            ("1:00:00", m(60)),
            ("1:00:01", m(61)),
            ("0:90:00", m(90)),
            ("48:00:00", m(2880)),
            ("1-0", m(1440)),
            ("1-12", m(2160)),
            ("1-1:30", m(1530)),
            ("1-00:00:00", m(1440)),
            ("2-00:00:01", m(2881)),
            ("0-0:0:0", m(0)),
            (" 30 ", m(30)),
            ("UNLIMITED", TimeLimit::Infinite),
            ("unlimited", TimeLimit::Infinite),
            ("Infinite", TimeLimit::Infinite),
            ("INFINITE", TimeLimit::Infinite),
            ("-1", TimeLimit::Infinite),
        ];
        for (input, want) in cases {
            assert_eq!(parse_time_limit(input), Ok(*want), "input {input:?}");
            assert_eq!(input.parse::<TimeLimit>(), Ok(*want), "input {input:?}");
        }
    }

    #[test]
    fn malformed_time_limits_are_rejected() {
        // err_sbatch_time_abc: `--time=abc` is an invalid specification.
        for input in [
            "",
            " ",
            "abc",
            "-",
            "-2",
            "-0",
            "--1",
            "1-",
            "-5",
            ":",
            "1:",
            ":1",
            "1::2",
            "1:2:3:4",
            "1-2:3:4:5",
            "1-2-3",
            "1.5",
            "1h",
            "1 0",
            "+5",
            "unlimitedx",
            "inf",
            "٣",
            "１:00",
        ] {
            assert_eq!(
                parse_time_limit(input),
                Err(TimeError::InvalidTimeLimit {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        assert_eq!(
            parse_time_limit("abc").err().map(|e| e.to_string()),
            Some("invalid time specification \"abc\"".to_owned())
        );
    }

    #[test]
    fn huge_time_limits_overflow() {
        for input in [
            "4294967294",
            "99999999999999999999",
            "18446744073709551615:00",
            "213503982334601-0",
            "1-99999999999999999:00",
            "3000000-0",
        ] {
            assert_eq!(
                parse_time_limit(input),
                Err(TimeError::Overflow {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        assert_eq!(
            parse_time_limit("4294967293"),
            Ok(TimeLimit::Minutes(MAX_LIMIT_MINUTES))
        );
        assert_eq!(
            parse_duration_secs("18446744073709551615"),
            Err(TimeError::Overflow {
                input: "18446744073709551615".to_owned()
            })
        );
        assert_eq!(parse_duration_secs("0:18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn zero_on_a_job_request_means_no_limit() {
        let zero = parse_time_limit("0").map(TimeLimit::for_job_request);
        assert_eq!(zero, Ok(TimeLimit::Infinite));
        let five = parse_time_limit("5").map(TimeLimit::for_job_request);
        assert_eq!(five, Ok(TimeLimit::Minutes(5)));
        assert_eq!(TimeLimit::Minutes(2).as_secs(), Some(120));
        assert_eq!(TimeLimit::Infinite.as_secs(), None);
        assert!(TimeLimit::Minutes(u32::MAX) < TimeLimit::Infinite);
    }

    #[test]
    fn time_limits_print_per_command() {
        let m = TimeLimit::Minutes;
        // squeue_l.out TIME_LIMIT.
        assert_eq!(format_time_limit(TimeLimit::Infinite), "UNLIMITED");
        assert_eq!(format_time_limit(m(0)), "0:00");
        assert_eq!(format_time_limit(m(5)), "5:00");
        assert_eq!(format_time_limit(m(30)), "30:00");
        assert_eq!(format_time_limit(m(60)), "1:00:00");
        assert_eq!(format_time_limit(m(1439)), "23:59:00");
        assert_eq!(format_time_limit(m(1440)), "1-00:00:00");
        assert_eq!(format_time_limit(m(14 * 1440 + 90)), "14-01:30:00");
        // sinfo.out TIMELIMIT.
        assert_eq!(format_time_limit_sinfo(TimeLimit::Infinite), "infinite");
        assert_eq!(format_time_limit_sinfo(m(30)), "30:00");
        assert_eq!(format_time_limit_sinfo(m(1440)), "1-00:00:00");
        // scontrol_show_job_*.out TimeLimit=, scontrol_show_partition.out MaxTime=.
        assert_eq!(format_time_limit_scontrol(TimeLimit::Infinite), "UNLIMITED");
        assert_eq!(format_time_limit_scontrol(m(30)), "00:30:00");
        assert_eq!(format_time_limit_scontrol(m(60)), "01:00:00");
        assert_eq!(format_time_limit_scontrol(m(1440)), "1-00:00:00");
    }

    #[test]
    fn durations_print_per_command() {
        // squeue_jobs.out TIME.
        assert_eq!(format_duration_squeue(0), "0:00");
        assert_eq!(format_duration_squeue(2), "0:02");
        assert_eq!(format_duration_squeue(65), "1:05");
        assert_eq!(format_duration_squeue(600), "10:00");
        assert_eq!(format_duration_squeue(3723), "1:02:03");
        assert_eq!(format_duration_squeue(93_784), "1-02:03:04");
        assert_eq!(format_duration_squeue(100 * 86_400), "100-00:00:00");
        assert_eq!(format_elapsed(3723), "1:02:03");
        // sacct_j_fmt_parsable2.out Elapsed, scontrol RunTime=.
        assert_eq!(format_duration_sacct(0), "00:00:00");
        assert_eq!(format_duration_sacct(2), "00:00:02");
        assert_eq!(format_duration_sacct(3723), "01:02:03");
        assert_eq!(format_duration_sacct(86_399), "23:59:59");
        assert_eq!(format_duration_sacct(93_784), "1-02:03:04");
        assert_eq!(format_duration_sacct(u64::MAX), "213503982334601-07:00:15");
    }

    #[test]
    fn cpu_times_show_milliseconds_under_an_hour() {
        assert_eq!(format_cpu_time_sacct(0, 0), "00:00:00");
        assert_eq!(format_cpu_time_sacct(0, 4_000), "00:00.004");
        assert_eq!(format_cpu_time_sacct(62, 500_000), "01:02.500");
        assert_eq!(format_cpu_time_sacct(62, 999), "00:01:02");
        assert_eq!(format_cpu_time_sacct(3723, 500_000), "01:02:03");
        assert_eq!(format_cpu_time_sacct(93_784, 1), "1-02:03:04");
        assert_eq!(format_cpu_time_sacct(1, 2_500_000), "00:03.500");
        assert_eq!(
            format_cpu_time_sacct(u64::MAX, u32::MAX),
            format_duration_sacct(u64::MAX)
        );
    }

    #[test]
    fn timestamps_print_in_iso_and_ctime_styles() {
        // scontrol_show_job_completed.out SubmitTime=; rest_jobs.out submit_time.
        assert_eq!(format_timestamp_in(NOW, &UTC), "2026-11-21T07:01:01");
        assert_eq!(
            format_timestamp_in(NOW, &FixedZone::east(-5 * 3600)),
            "2026-11-21T02:01:01"
        );
        assert_eq!(
            format_timestamp_in(NOW, &FixedZone::east(17 * 3600)),
            "2026-11-22T00:01:01"
        );
        assert_eq!(format_timestamp_in(0, &UTC), "1970-01-01T00:00:00");
        assert_eq!(format_timestamp_in(i64::MAX, &UTC), "Unknown");
        // squeue_l.out header line.
        assert_eq!(format_ctime_in(NOW + 5, &UTC), "Sat Nov 21 07:01:06 2026");
        assert_eq!(
            format_ctime_in(NOW - 20 * DAY, &UTC),
            "Sun Nov  1 07:01:01 2026"
        );
        assert_eq!(format_ctime_in(i64::MIN, &UTC), "Unknown");
        // Past 9999 the year has all its digits and no sign, as C's %Y
        // writes it (a --test-only start behind jobs without a limit).
        let far = NaiveDate::from_ymd_opt(26525, 4, 9)
            .and_then(|d| d.and_hms_opt(0, 31, 43))
            .map(|t| t.and_utc().timestamp())
            .expect("a date chrono can hold");
        assert_eq!(format_timestamp_in(far, &UTC), "26525-04-09T00:31:43");
        assert_eq!(format_ctime_in(far, &UTC), "Mon Apr  9 00:31:43 26525");
    }

    /// NOW's day at `h:m:s`, `days` days on, UTC.
    fn day_at(days: i64, h: i64, m: i64, s: i64) -> i64 {
        MIDNIGHT + days * DAY + h * HOUR + m * 60 + s
    }

    /// Midnight UTC of a calendar date.
    fn date(y: i32, m: u32, d: u32) -> i64 {
        match NaiveDate::from_ymd_opt(y, m, d) {
            Some(day) => day.and_time(NaiveTime::MIN).and_utc().timestamp(),
            None => panic!("{y}-{m}-{d} is no date"),
        }
    }

    #[test]
    fn absolute_dates() {
        let cases: &[(&str, i64)] = &[
            ("2026-11-21T07:01:01", NOW),
            ("2026-11-21", MIDNIGHT),
            ("2026-11-21T08:00", day_at(0, 8, 0, 0)),
            ("2026-11-21T08:00:30", day_at(0, 8, 0, 30)),
            // Blanks, `-` and `T` all separate fields, any number of them.
            ("2026-11-21 08:00", day_at(0, 8, 0, 0)),
            ("2026-11-21-08:00", day_at(0, 8, 0, 0)),
            ("2026-11-21TT08:00", day_at(0, 8, 0, 0)),
            ("2026-11-21T", MIDNIGHT),
            ("2026-11-21-", MIDNIGHT),
            ("2026-11-21T10:00pm", day_at(0, 22, 0, 0)),
            ("2026-01-1", date(2026, 1, 1)),
            // A date in the past stays there: Slurm starts such a job at once.
            ("2026-11-20", MIDNIGHT - DAY),
            ("2028-02-29", date(2028, 2, 29)),
            // Days past the end of the month run on, as C's mktime has it.
            ("2026-02-29", date(2026, 3, 1)),
            ("2026-02-31", date(2026, 3, 3)),
            ("2026-04-31", date(2026, 5, 1)),
            ("1970-01-01", 0),
            ("1969-12-31", -DAY),
            ("0000-01-01", date(0, 1, 1)),
            ("9999-12-31", date(9999, 12, 31)),
            ("112227", date(2027, 11, 22)),
            ("11/22/27", date(2027, 11, 22)),
            ("11.22.27", date(2027, 11, 22)),
            ("11/22.27", date(2027, 11, 22)),
            ("1/1/26", date(2026, 1, 1)),
            ("1/2/34", date(2034, 1, 2)),
            ("11/22/27-10:00", date(2027, 11, 22) + 10 * HOUR),
            ("uts1800000000", 1_800_000_000),
            ("UTS 1800000000", 1_800_000_000),
            ("uts+1000000", 1_000_000),
        ];
        for (input, want) in cases {
            assert_eq!(future(input), Ok(*want), "input {input:?}");
            assert_eq!(past(input), Ok(*want), "input {input:?}");
        }
    }

    #[test]
    fn dates_without_a_year_lean_towards_the_search() {
        // Looking ahead, this year only when month, day, hour and minute
        // lie ahead of now: today's date at midnight is next year's.
        let cases: &[(&str, i64, i64)] = &[
            ("1122", day_at(1, 0, 0, 0), day_at(1, 0, 0, 0)),
            ("11/22", day_at(1, 0, 0, 0), day_at(1, 0, 0, 0)),
            ("11.22", day_at(1, 0, 0, 0), day_at(1, 0, 0, 0)),
            ("11/22/", day_at(1, 0, 0, 0), day_at(1, 0, 0, 0)),
            ("123", date(2026, 12, 3), date(2025, 12, 3)),
            ("1.5", date(2027, 1, 5), date(2026, 1, 5)),
            ("1122-10:00:30", day_at(1, 10, 0, 30), day_at(1, 10, 0, 30)),
            ("1121", day_at(365, 0, 0, 0), MIDNIGHT),
            ("11/21 07:02", day_at(0, 7, 2, 0), day_at(0, 7, 2, 0)),
            ("11/21 07:01", day_at(365, 7, 1, 0), day_at(0, 7, 1, 0)),
            ("1120", date(2027, 11, 20), MIDNIGHT - DAY),
            // Looking back, only the month decides.
            ("1225", date(2026, 12, 25), date(2025, 12, 25)),
            ("0101", date(2027, 1, 1), date(2026, 1, 1)),
            // 29 February of a common year is 1 March.
            ("0229", date(2027, 3, 1), date(2026, 3, 1)),
            // A year of `00` is no year.
            ("1/1/00", date(2027, 1, 1), date(2026, 1, 1)),
            ("1/1/01", date(2001, 1, 1), date(2001, 1, 1)),
        ];
        for (input, ahead, behind) in cases {
            assert_eq!(future(input), Ok(*ahead), "input {input:?}");
            assert_eq!(past(input), Ok(*behind), "input {input:?}");
        }
    }

    #[test]
    fn times_of_day_lean_towards_the_search() {
        // Ahead: today only when hour and minute lie after now's; seconds
        // are not compared. Behind: always today.
        let cases: &[(&str, i64, i64)] = &[
            ("08:00", day_at(0, 8, 0, 0), day_at(0, 8, 0, 0)),
            ("8:00", day_at(0, 8, 0, 0), day_at(0, 8, 0, 0)),
            ("07:02", day_at(0, 7, 2, 0), day_at(0, 7, 2, 0)),
            ("07:01:59", day_at(1, 7, 1, 59), day_at(0, 7, 1, 59)),
            ("07:01:00", day_at(1, 7, 1, 0), day_at(0, 7, 1, 0)),
            ("06:00", day_at(1, 6, 0, 0), day_at(0, 6, 0, 0)),
            ("23:59:59", day_at(0, 23, 59, 59), day_at(0, 23, 59, 59)),
            ("00:00", day_at(1, 0, 0, 0), MIDNIGHT),
            ("8:00am", day_at(0, 8, 0, 0), day_at(0, 8, 0, 0)),
            ("8:00 AM", day_at(0, 8, 0, 0), day_at(0, 8, 0, 0)),
            ("8:00  pm", day_at(0, 20, 0, 0), day_at(0, 20, 0, 0)),
            ("8:00\tpm", day_at(0, 20, 0, 0), day_at(0, 20, 0, 0)),
            ("8:00PM", day_at(0, 20, 0, 0), day_at(0, 20, 0, 0)),
            ("8:00:15 PM", day_at(0, 20, 0, 15), day_at(0, 20, 0, 15)),
            ("12:30pm", day_at(0, 12, 30, 0), day_at(0, 12, 30, 0)),
            ("12:00am", day_at(1, 0, 0, 0), MIDNIGHT),
            ("0:30am", day_at(1, 0, 30, 0), day_at(0, 0, 30, 0)),
            ("0:30pm", day_at(0, 12, 30, 0), day_at(0, 12, 30, 0)),
            ("tomorrow 06:00", day_at(1, 6, 0, 0), day_at(1, 6, 0, 0)),
            ("06:00 tomorrow", day_at(1, 6, 0, 0), day_at(1, 6, 0, 0)),
            ("today 06:00", day_at(0, 6, 0, 0), day_at(0, 6, 0, 0)),
            ("1122 5:00 pm", day_at(1, 17, 0, 0), day_at(1, 17, 0, 0)),
            ("11/22T10:00", day_at(1, 10, 0, 0), day_at(1, 10, 0, 0)),
        ];
        for (input, ahead, behind) in cases {
            assert_eq!(future(input), Ok(*ahead), "input {input:?}");
            assert_eq!(past(input), Ok(*behind), "input {input:?}");
        }
    }

    #[test]
    fn named_times_and_later_fields_winning() {
        let cases: &[(&str, i64)] = &[
            ("today", MIDNIGHT),
            ("tomorrow", day_at(1, 0, 0, 0)),
            ("tOmOrrOw", day_at(1, 0, 0, 0)),
            ("midnight", day_at(1, 0, 0, 0)),
            ("Midnight", day_at(1, 0, 0, 0)),
            ("noon", day_at(0, 12, 0, 0)),
            ("NOON", day_at(0, 12, 0, 0)),
            ("fika", day_at(0, 15, 0, 0)),
            ("teatime", day_at(0, 16, 0, 0)),
            ("noon tomorrow", day_at(1, 12, 0, 0)),
            ("teatime   1122 ", day_at(1, 16, 0, 0)),
            ("today\tnoon", day_at(0, 12, 0, 0)),
            ("noon12:00", day_at(0, 12, 0, 0)),
            // Each field overwrites what an earlier one set.
            ("noon midnight", day_at(1, 0, 0, 0)),
            ("today tomorrow", day_at(1, 0, 0, 0)),
            ("tomorrow today", MIDNIGHT),
            ("1122 1123", day_at(2, 0, 0, 0)),
            ("10:00 11:00", day_at(0, 11, 0, 0)),
            ("noon tomorrow 13:00", day_at(1, 13, 0, 0)),
            // A date without a year keeps the year set before it.
            ("today 12/25", date(2026, 12, 25)),
            ("2025-01-01 12/25", date(2025, 12, 25)),
            // Input ends at a newline or a NUL.
            ("noon\ngarbage", day_at(0, 12, 0, 0)),
            ("noon\0garbage", day_at(0, 12, 0, 0)),
        ];
        for (input, want) in cases {
            assert_eq!(future(input), Ok(*want), "input {input:?}");
        }
        assert_eq!(past("midnight"), Ok(MIDNIGHT));
        assert_eq!(past("noon"), Ok(day_at(0, 12, 0, 0)));
    }

    #[test]
    fn now_with_offsets() {
        let cases: &[(&str, i64)] = &[
            ("now", NOW),
            ("NOW", NOW),
            ("now ", NOW),
            ("now+0", NOW),
            ("now-0", NOW),
            ("now+01", NOW + 1),
            ("now+60", NOW + 60),
            ("now+ 60", NOW + 60),
            ("now +60", NOW + 60),
            ("now\t+60", NOW + 60),
            ("now+1 2", NOW + 12),
            ("now+60second", NOW + 60),
            ("now+60seconds", NOW + 60),
            ("now+5minute", NOW + 300),
            ("now+5minutes", NOW + 300),
            ("now+1hour", NOW + HOUR),
            ("Now+1Hour", NOW + HOUR),
            ("now+2HOURS", NOW + 2 * HOUR),
            ("now+1 hour", NOW + HOUR),
            ("now + 1 hour", NOW + HOUR),
            ("now+1\thour", NOW + HOUR),
            ("now+2days", NOW + 2 * DAY),
            ("now+1day", NOW + DAY),
            ("now+1week", NOW + 7 * DAY),
            ("now+3weeks", NOW + 21 * DAY),
            ("now-1hour", NOW - HOUR),
            ("now-90", NOW - 90),
            ("now+1hour ", NOW + HOUR),
            // After a unit, further fields overwrite parts of the instant;
            // a time of day resets the seconds.
            ("now+1hour today", NOW + HOUR),
            ("now+1hour 12/25", date(2026, 12, 25) + 8 * HOUR + 61),
            ("now+1day noon", day_at(1, 12, 0, 0)),
            ("now+1hour 06:00", day_at(0, 6, 0, 0)),
        ];
        for (input, want) in cases {
            assert_eq!(future(input), Ok(*want), "input {input:?}");
            assert_eq!(past(input), Ok(*want), "input {input:?}");
        }
    }

    /// The position and problem of a refused timestamp, checking that
    /// both leanings agree and the notice names the input.
    fn refusal(s: &str) -> (isize, TimestampProblem) {
        let err = future(s);
        assert_eq!(past(s), err, "input {s:?}");
        match err {
            Err(TimeError::InvalidTimestamp {
                input,
                pos,
                problem,
            }) => {
                assert_eq!(input, s);
                (pos, problem)
            }
            other => panic!("{s:?} gave {other:?}"),
        }
    }

    /// Every position here is the one Slurm 22.05's sbatch prints for the
    /// same `--begin` value.
    #[test]
    fn refusals_carry_slurms_position() {
        use TimestampProblem as P;
        let cases: &[(&str, isize, TimestampProblem)] = &[
            // A character that starts no field.
            ("garbage", 0, P::UnexpectedChar),
            ("x10:00", 0, P::UnexpectedChar),
            ("am", 0, P::UnexpectedChar),
            ("elevenses", 0, P::UnexpectedChar),
            ("ö", 0, P::UnexpectedChar),
            ("２", 0, P::UnexpectedChar),
            ("١١٢٢", 0, P::UnexpectedChar),
            // Words are prefixes; an upper-case T is a separator.
            ("noonish", 4, P::UnexpectedChar),
            ("todayx", 5, P::UnexpectedChar),
            ("today+1", 5, P::UnexpectedChar),
            ("tomorrowx", 8, P::UnexpectedChar),
            ("Today", 1, P::UnexpectedChar),
            ("TeaTime", 1, P::UnexpectedChar),
            ("noon pm", 5, P::UnexpectedChar),
            ("midnight5", 9, P::BadDate),
            // now and its offset.
            ("now1", 3, P::UnexpectedChar),
            ("nowx", 3, P::UnexpectedChar),
            ("now x", 4, P::UnexpectedChar),
            ("now today", 4, P::UnexpectedChar),
            ("now 10:00", 4, P::UnexpectedChar),
            ("now+", 3, P::BadOffset),
            ("now-", 3, P::BadOffset),
            ("now+x", 3, P::BadOffset),
            ("now+hour", 3, P::BadOffset),
            ("now--1", 3, P::BadOffset),
            ("now+-1", 3, P::BadOffset),
            ("now+5x", 4, P::BadOffset),
            ("now+1h", 4, P::BadOffset),
            ("now+1m", 4, P::BadOffset),
            ("now+1min", 4, P::BadOffset),
            ("now+1sec", 4, P::BadOffset),
            ("now+60s", 5, P::BadOffset),
            ("now+123x", 6, P::BadOffset),
            ("now+1 h", 5, P::BadOffset),
            ("now+1  x", 6, P::BadOffset),
            ("now+1-2", 4, P::BadOffset),
            ("now+1+2", 4, P::BadOffset),
            ("now+1hourx", 9, P::UnexpectedChar),
            ("now+1hour+1", 9, P::UnexpectedChar),
            ("now+1hourss", 10, P::UnexpectedChar),
            ("now+1hour x", 10, P::UnexpectedChar),
            ("now+1dayx", 8, P::UnexpectedChar),
            ("now+1day2", 9, P::BadDate),
            ("now+1 hour 2", 12, P::BadDate),
            // Slurm reads past the string after a `now` that does not
            // start it; the position is where it goes on reading.
            (" now", 5, P::MisplacedNow),
            ("today now", 15, P::MisplacedNow),
            ("12/25 now", 15, P::MisplacedNow),
            // Times of day: the offending field, or the pair of digits
            // out of range.
            ("25:00", 0, P::BadTimeOfDay),
            ("24:00", 0, P::BadTimeOfDay),
            ("12:61", 3, P::BadTimeOfDay),
            ("9:60", 2, P::BadTimeOfDay),
            ("12:00:61", 6, P::BadTimeOfDay),
            ("10:00:60", 6, P::BadTimeOfDay),
            ("1:", 2, P::BadTimeOfDay),
            ("10:", 3, P::BadTimeOfDay),
            ("1:0", 3, P::BadTimeOfDay),
            ("1:x0", 2, P::BadTimeOfDay),
            ("10::00", 3, P::BadTimeOfDay),
            ("10:00:", 6, P::BadTimeOfDay),
            ("10:00:5", 7, P::BadTimeOfDay),
            ("1:00:0", 6, P::BadTimeOfDay),
            ("13:00pm", 5, P::BadTimeOfDay),
            ("13:00am", 5, P::BadTimeOfDay),
            ("2026-01-01T25:00", 11, P::BadTimeOfDay),
            // What follows a time of day.
            ("16:00 bad", 6, P::UnexpectedChar),
            ("10:00x", 5, P::UnexpectedChar),
            ("10:00ö", 5, P::UnexpectedChar),
            ("8:00 p", 5, P::UnexpectedChar),
            ("8:00 pmx", 7, P::UnexpectedChar),
            ("10:00:00:00", 8, P::UnexpectedChar),
            ("2026-11-21t10:00", 10, P::UnexpectedChar),
            ("2026-11-21T10:00 garbage", 17, P::UnexpectedChar),
            // ISO dates: a `-` 4 and 7 bytes on makes one.
            ("2026-13-01", 5, P::BadDate),
            ("2026-00-01", 5, P::BadDate),
            ("2026-0a-05", 4, P::BadDate),
            ("2026-xy-01", 4, P::BadDate),
            ("2026-:a-05", 7, P::BadDate),
            ("2026-1a-05", 7, P::BadDate),
            ("2026-01-00", 8, P::BadDate),
            ("2026-01-32", 8, P::BadDate),
            ("2026-11-x", 8, P::BadDate),
            ("2026-11-1x", 9, P::UnexpectedChar),
            ("2026-11-21x", 10, P::UnexpectedChar),
            ("202x-11-21", 3, P::BadDate),
            ("2026-11-21T10", 13, P::BadDate),
            // Otherwise a month first.
            ("2026-1-1T", 0, P::BadDate),
            ("2026-1-01", 0, P::BadDate),
            ("2026--11-21", 0, P::BadDate),
            ("20261121", 0, P::BadDate),
            ("9999999999", 0, P::BadDate),
            ("13/01", 0, P::BadDate),
            ("00/01", 0, P::BadDate),
            ("0", -1, P::BadDate),
            ("0/1", -1, P::BadDate),
            ("1", 1, P::BadDate),
            ("9", 1, P::BadDate),
            ("1a", 1, P::BadDate),
            ("8pm", 1, P::BadDate),
            ("8 pm", 1, P::BadDate),
            ("100:00", 1, P::BadDate),
            ("1/0", 1, P::BadDate),
            ("12", 2, P::BadDate),
            ("11x", 2, P::BadDate),
            ("12345", 2, P::BadDate),
            ("01/32", 3, P::BadDate),
            ("11//22", 3, P::BadDate),
            ("11/-22", 3, P::BadDate),
            ("11/x", 3, P::BadDate),
            ("1/2/3", 5, P::BadDate),
            ("11221", 5, P::BadDate),
            ("12/31/2026", 8, P::BadDate),
            ("11/22/2027", 8, P::BadDate),
            ("01/02/03/04", 8, P::UnexpectedChar),
            // utsN.
            ("uts", 0, P::BadUnixTime),
            ("uts999999", 0, P::BadUnixTime),
            ("uts-1800000000", 0, P::BadUnixTime),
            ("uts1800000000x", 0, P::BadUnixTime),
            ("uts1800000000 ", 0, P::BadUnixTime),
            ("uts9223372036854775807", 0, P::BadUnixTime),
            ("uts99999999999999999999", 0, P::BadUnixTime),
        ];
        for (input, pos, problem) in cases {
            assert_eq!(refusal(input), (*pos, *problem), "input {input:?}");
        }
    }

    #[test]
    fn refusals_print_as_slurm_does() {
        let err = future("now+x").err();
        assert_eq!(
            err.as_ref().and_then(TimeError::slurm_notice).as_deref(),
            Some("Invalid time specification (pos=3): now+x")
        );
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("invalid time specification \"now+x\" at byte 3: bad offset after now")
        );
        assert_eq!(
            future("0").err().and_then(|e| e.slurm_notice()).as_deref(),
            Some("Invalid time specification (pos=-1): 0")
        );
        // Nothing to point at: Slurm prints no position line.
        assert_eq!(future("").err().and_then(|e| e.slurm_notice()), None);
        let limit = parse_time_limit("abc").err();
        assert_eq!(limit.and_then(|e| e.slurm_notice()), None);
    }

    #[test]
    fn inputs_without_a_field_are_empty() {
        for input in [
            "",
            " ",
            "\t",
            "-",
            "--",
            "T",
            "TT",
            "T-T",
            "\n",
            "\ngarbage",
            "\0x",
        ] {
            assert_eq!(
                future(input),
                Err(TimeError::EmptyTimestamp {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn huge_offsets_overflow() {
        for input in [
            "now+99999999999999999999",
            "now+9223372036854775807weeks",
            "now+9223372036854775807",
            "now-99999999999999999999",
            "now+999999999999999999",
        ] {
            assert_eq!(
                future(input),
                Err(TimeError::Overflow {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        // A `now` outside the calendar cannot anchor a relative date...
        for input in ["today", "noon", "1122", "now"] {
            assert!(
                matches!(
                    parse_timestamp_in(input, i64::MAX, Lean::Future, &UTC),
                    Err(TimeError::Overflow { .. })
                ),
                "input {input:?}"
            );
        }
        // ...but an absolute date needs none.
        assert_eq!(
            parse_timestamp_in("2026-11-21", i64::MAX, Lean::Future, &UTC),
            Ok(MIDNIGHT)
        );
    }

    #[test]
    fn the_local_zone_decides_the_day() {
        let paris = FixedZone::east(3600);
        assert_eq!(
            parse_timestamp_in("2026-11-21T08:01:01", NOW, Lean::Future, &paris),
            Ok(NOW)
        );
        // 23:30 UTC is already 00:30 tomorrow in Paris: "today" follows Paris.
        let late = MIDNIGHT + 23 * HOUR + 1800;
        assert_eq!(
            parse_timestamp_in("today", late, Lean::Future, &paris),
            Ok(MIDNIGHT + DAY - HOUR)
        );
        assert_eq!(
            parse_timestamp_in("today", late, Lean::Future, &UTC),
            Ok(MIDNIGHT)
        );
        assert_eq!(
            parse_timestamp_in("tomorrow", late, Lean::Future, &paris),
            Ok(MIDNIGHT + 2 * DAY - HOUR)
        );
    }

    #[test]
    fn the_system_zone_round_trips() {
        // Whatever TZ this host has, a printed instant reads back unchanged
        // (the ISO form names a wall-clock time that occurred, so no gap).
        let printed = format_timestamp(NOW);
        assert_eq!(parse_timestamp(&printed, NOW), Ok(NOW));
        assert_eq!(parse_timestamp_past(&printed, NOW), Ok(NOW));
        assert_eq!(parse_timestamp("now+1hour", NOW), Ok(NOW + HOUR));
        assert!(!format_ctime(NOW).is_empty());
    }

    fn offset() -> impl Strategy<Value = FixedZone> {
        (-14 * 3600..=14 * 3600).prop_map(FixedZone::east)
    }

    proptest! {
        #[test]
        fn time_limits_round_trip_through_every_format(m in 0..=MAX_LIMIT_MINUTES) {
            let limit = TimeLimit::Minutes(m);
            prop_assert_eq!(parse_time_limit(&format_time_limit(limit)), Ok(limit));
            prop_assert_eq!(parse_time_limit(&format_time_limit_sinfo(limit)), Ok(limit));
            prop_assert_eq!(parse_time_limit(&format_time_limit_scontrol(limit)), Ok(limit));
        }

        #[test]
        fn durations_round_trip(secs in any::<u64>()) {
            prop_assert_eq!(parse_duration_secs(&format_duration_squeue(secs)), Ok(secs));
            prop_assert_eq!(parse_duration_secs(&format_duration_sacct(secs)), Ok(secs));
        }

        #[test]
        fn seconds_round_up_to_the_next_minute(secs in 0u64..1 << 40) {
            let want = TimeLimit::Minutes(u32::try_from(secs.div_ceil(60)).unwrap_or(u32::MAX));
            let got = parse_time_limit(&format_duration_sacct(secs));
            if secs.div_ceil(60) <= u64::from(MAX_LIMIT_MINUTES) {
                prop_assert_eq!(got, Ok(want));
            } else {
                let is_overflow = matches!(got, Err(TimeError::Overflow { .. }));
                prop_assert!(is_overflow);
            }
        }

        #[test]
        fn iso_timestamps_round_trip(
            t in -30_000_000_000i64..250_000_000_000,
            now in any::<i64>(),
            zone in offset(),
        ) {
            let printed = format_timestamp_in(t, &zone);
            for lean in [Lean::Future, Lean::Past] {
                prop_assert_eq!(parse_timestamp_in(&printed, now, lean, &zone), Ok(t));
            }
        }

        #[test]
        fn times_of_day_land_within_a_day_of_now(
            now in -10_000_000_000i64..10_000_000_000,
            h in 0u32..24,
            m in 0u32..60,
            s in 0u32..60,
            zone in offset(),
        ) {
            let text = format!("{h}:{m:02}:{s:02}");
            let ahead = parse_timestamp_in(&text, now, Lean::Future, &zone);
            let behind = parse_timestamp_in(&text, now, Lean::Past, &zone);
            let (Ok(ahead), Ok(behind)) = (ahead, behind) else {
                return Err(TestCaseError::fail(format!("{text:?} rejected")));
            };
            // Ahead: after now, and tomorrow at the latest (seconds are not
            // compared, so within the same minute tomorrow's can be up to 59
            // seconds more than a day away). Behind: today, either side.
            prop_assert!(ahead > now && ahead < now + DAY + 60, "{} ahead {}", now, ahead);
            prop_assert!((behind - now).abs() < DAY, "{} behind {}", now, behind);
            prop_assert!(ahead == behind || ahead == behind + DAY, "{} {}", ahead, behind);
            let local = format_timestamp_in(ahead, &zone);
            prop_assert!(local.ends_with(&format!("T{h:02}:{m:02}:{s:02}")), "{}", local);
        }

        #[test]
        fn a_stray_character_is_refused_where_it_stands(
            t in -30_000_000_000i64..250_000_000_000,
            junk in "[a-zA-SU-Z!#$%&*,;<=>?@^_|~]",
        ) {
            // After a whole ISO timestamp nothing but a separator may follow.
            let text = format!("{}{junk}", format_timestamp_in(t, &UTC));
            let got = parse_timestamp_in(&text, NOW, Lean::Future, &UTC);
            let is_refused_at_19 = matches!(
                got,
                Err(TimeError::InvalidTimestamp { pos: 19, problem: TimestampProblem::UnexpectedChar, .. })
            );
            prop_assert!(is_refused_at_19, "{:?} gave {:?}", text, got);
        }

        #[test]
        fn positions_stay_within_the_input(s in "[0-9:/.apmtT +-]{0,20}|[ -~]{0,20}") {
            // Only a misplaced `now` sends Slurm's position past the end.
            prop_assume!(!s.to_ascii_lowercase().contains("now"));
            if let Err(TimeError::InvalidTimestamp { pos, .. }) =
                parse_timestamp_in(&s, NOW, Lean::Future, &UTC)
            {
                prop_assert!((-1..=s.len() as isize).contains(&pos), "{:?} at {}", s, pos);
            }
        }

        #[test]
        fn now_offsets_add_up(n in 0i64..100_000_000_000, now in -1i64 << 40..1 << 40) {
            prop_assert_eq!(future_at(&format!("now+{n}"), now), Ok(now + n));
            prop_assert_eq!(future_at(&format!("now-{n}"), now), Ok(now - n));
            prop_assert_eq!(future_at(&format!("now+{n}minutes"), now), Ok(now + 60 * n));
        }

        #[test]
        fn time_limit_parse_never_panics(s in ".*") {
            let _ = parse_time_limit(&s);
        }

        #[test]
        fn time_limit_parse_never_panics_on_limit_like_input(s in "[0-9:\\- ]{0,40}") {
            let _ = parse_time_limit(&s);
        }

        #[test]
        fn timestamp_parse_never_panics(s in ".*", now in any::<i64>(), zone in offset()) {
            let _ = parse_timestamp_in(&s, now, Lean::Future, &zone);
            let _ = parse_timestamp_in(&s, now, Lean::Past, &zone);
            let _ = parse_timestamp(&s, now);
        }

        #[test]
        fn timestamp_parse_never_panics_on_timestamp_like_input(
            s in "[0-9:/.tT+ -]{0,24}|now[+-][0-9]{0,25}[a-z]{0,8}|[0-9]{1,2}:[0-9]{1,2}( ?[ap]m)?",
            now in any::<i64>(),
        ) {
            let _ = parse_timestamp_in(&s, now, Lean::Future, &UTC);
            let _ = parse_timestamp_in(&s, now, Lean::Past, &UTC);
        }

        #[test]
        fn timestamp_parse_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let s = String::from_utf8_lossy(&bytes);
            let _ = parse_timestamp_in(&s, NOW, Lean::Future, &UTC);
            let _ = parse_time_limit(&s);
        }

        #[test]
        fn formatting_never_panics(t in any::<i64>(), zone in offset()) {
            let _ = format_timestamp_in(t, &zone);
            let _ = format_ctime_in(t, &zone);
            let _ = format_timestamp(t);
        }
    }

    fn future_at(s: &str, now: i64) -> Result<i64, TimeError> {
        parse_timestamp_in(s, now, Lean::Future, &UTC)
    }
}
