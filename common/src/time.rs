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

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone};
use thiserror::Error;

/// Why a time string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TimeError {
    /// Not one of the time-limit forms (`M`, `M:S`, `H:M:S`, `D-H[:M[:S]]`,
    /// `UNLIMITED`). Commands report it as `Invalid --time specification`.
    #[error("invalid time specification {input:?}")]
    InvalidTimeLimit { input: String },
    /// Not one of the timestamp forms `--begin` accepts.
    #[error("invalid time specification {input:?}: {problem}")]
    InvalidTimestamp {
        input: String,
        problem: TimestampProblem,
    },
    /// A number in the input is too large for the value it describes.
    #[error("time specification {input:?} is out of range")]
    Overflow { input: String },
}

/// The precise reason a timestamp was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum TimestampProblem {
    #[error("empty")]
    Empty,
    #[error("unrecognised word")]
    UnknownWord,
    #[error("unknown unit after now+count")]
    UnknownUnit,
    #[error("month, day or year out of range")]
    BadDate,
    #[error("hour, minute or second out of range")]
    BadTimeOfDay,
    #[error("AM/PM without a time of day")]
    StrayMeridiem,
    #[error("more than one date or time of day")]
    Repeated,
    #[error("now cannot be combined with a date or time")]
    NowCombined,
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
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S").to_string(),
        None => "Unknown".to_owned(),
    }
}

/// A timestamp in C's `ctime` style, the header line of `squeue -l` and
/// `sinfo -l`: `Sat Nov 21 07:01:06 2026`.
pub fn format_ctime_in(unix: i64, zone: &impl LocalZone) -> String {
    match zone.to_local(unix) {
        Some(t) => t.format("%a %b %e %H:%M:%S %Y").to_string(),
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
/// `sacct -S 16:00` at 15:00 means yesterday (a search window lies behind).
/// The same rule moves a date without a year to the next or previous year.
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
/// Words, separated by blanks, case-insensitive:
///
/// * `YYYY-MM-DD[THH:MM[:SS]]`
/// * `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`, each optionally followed by
///   `-HH:MM[:SS]` (the `sacct` form)
/// * `HH:MM[:SS]`, optionally followed by `AM`/`PM` (attached or as its own
///   word)
/// * `today`, `tomorrow`, `midnight`, `noon`, `elevenses` (11:00), `fika`
///   (15:00), `teatime` (16:00)
/// * `now[{+|-}count[unit]]`, unit one of `seconds` (default), `minutes`,
///   `hours`, `days`, `weeks` or a prefix such as `s`, `min`, `h`, `d`, `w`
///
/// A date without a time means its midnight. A time without a date means
/// today, or the next (for [`Lean::Future`]) or previous ([`Lean::Past`])
/// day when today's occurrence lies on the wrong side of `now`. A date
/// without a year is moved by a year in the same way. Two-digit years are
/// 20YY.
pub fn parse_timestamp_in(
    s: &str,
    now: i64,
    lean: Lean,
    zone: &impl LocalZone,
) -> Result<i64, TimeError> {
    let bad = |problem| TimeError::InvalidTimestamp {
        input: s.to_owned(),
        problem,
    };
    let overflow = || TimeError::Overflow {
        input: s.to_owned(),
    };
    let lower = s.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_ascii_whitespace().collect();
    if words.is_empty() {
        return Err(bad(TimestampProblem::Empty));
    }

    if let Some(rest) = words[0].strip_prefix("now") {
        if words.len() > 1 {
            return Err(bad(TimestampProblem::NowCombined));
        }
        let delta = parse_now_offset(rest).map_err(|e| match e {
            OffsetError::Overflow => overflow(),
            OffsetError::Bad(p) => bad(p),
        })?;
        return now.checked_add(delta).ok_or_else(overflow);
    }

    let mut spec = Spec::default();
    let mut iter = words.iter().peekable();
    while let Some(word) = iter.next() {
        let word = *word;
        // A separate AM/PM word belongs to the time just before it.
        if word == "am" || word == "pm" {
            return Err(bad(TimestampProblem::StrayMeridiem));
        }
        let meridiem_next = match iter.peek() {
            Some(&&"am") => Some(Meridiem::Am),
            Some(&&"pm") => Some(Meridiem::Pm),
            _ => None,
        };
        let consumed_meridiem = parse_word(word, meridiem_next, &mut spec).map_err(bad)?;
        if consumed_meridiem {
            iter.next();
        }
    }
    resolve(&spec, now, lean, zone).map_err(|e| match e {
        ResolveError::Overflow => overflow(),
        ResolveError::Bad(p) => bad(p),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Meridiem {
    Am,
    Pm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DateSpec {
    /// Month and day, with the year when one was written.
    Calendar {
        year: Option<i32>,
        month: u32,
        day: u32,
    },
    /// Days after today (`today` is 0, `tomorrow` 1).
    Relative(i64),
}

#[derive(Debug, Default)]
struct Spec {
    date: Option<DateSpec>,
    time: Option<NaiveTime>,
}

impl Spec {
    fn set_date(&mut self, d: DateSpec) -> Result<(), TimestampProblem> {
        if self.date.replace(d).is_some() {
            return Err(TimestampProblem::Repeated);
        }
        Ok(())
    }

    fn set_time(&mut self, t: NaiveTime) -> Result<(), TimestampProblem> {
        if self.time.replace(t).is_some() {
            return Err(TimestampProblem::Repeated);
        }
        Ok(())
    }
}

/// Reads one word into `spec`; returns whether the following AM/PM word was
/// used.
fn parse_word(
    word: &str,
    meridiem_next: Option<Meridiem>,
    spec: &mut Spec,
) -> Result<bool, TimestampProblem> {
    let named_time = match word {
        "midnight" => Some(0),
        "noon" => Some(12),
        "elevenses" => Some(11),
        "fika" => Some(15),
        "teatime" => Some(16),
        _ => None,
    };
    if let Some(hour) = named_time {
        spec.set_time(hms(hour, 0, 0)?)?;
        return Ok(false);
    }
    match word {
        "today" => return spec.set_date(DateSpec::Relative(0)).map(|()| false),
        "tomorrow" => return spec.set_date(DateSpec::Relative(1)).map(|()| false),
        _ => {}
    }

    // YYYY-MM-DD[THH:MM[:SS]]
    if is_iso_date_prefix(word) {
        let (date, time) = match word.split_once('t') {
            Some((d, t)) => (d, Some(t)),
            None => (word, None),
        };
        let mut fields = date.split('-');
        let (Some(y), Some(m), Some(d), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(TimestampProblem::BadDate);
        };
        spec.set_date(DateSpec::Calendar {
            year: Some(number(y, 4, 4)?),
            month: number(m, 1, 2)?,
            day: number(d, 1, 2)?,
        })?;
        if let Some(t) = time {
            spec.set_time(clock_time(t, None)?)?;
        }
        return Ok(false);
    }

    // A time of day, maybe with AM/PM attached or following.
    if word.contains(':') && !word.contains(['/', '.', '-']) {
        let (body, attached) = strip_meridiem(word);
        let meridiem = attached.or(meridiem_next);
        spec.set_time(clock_time(body, meridiem)?)?;
        return Ok(attached.is_none() && meridiem_next.is_some());
    }

    // MM/DD[/YY], MM.DD[.YY] or MMDD[YY], optionally with -HH:MM[:SS].
    let (date, time) = match word.split_once('-') {
        Some((d, t)) => (d, Some(t)),
        None => (word, None),
    };
    let date = if date.contains(['/', '.']) {
        let sep = if date.contains('/') { '/' } else { '.' };
        let fields: Vec<&str> = date.split(sep).collect();
        match fields.as_slice() {
            [m, d] => DateSpec::Calendar {
                year: None,
                month: number(m, 1, 2)?,
                day: number(d, 1, 2)?,
            },
            [m, d, y] => DateSpec::Calendar {
                year: Some(two_digit_year(y)?),
                month: number(m, 1, 2)?,
                day: number(d, 1, 2)?,
            },
            _ => return Err(TimestampProblem::BadDate),
        }
    } else if date.len() == 4 || date.len() == 6 {
        if !date.bytes().all(|b| b.is_ascii_digit()) {
            return Err(TimestampProblem::UnknownWord);
        }
        // All ASCII digits, so slicing at byte offsets is on char boundaries.
        DateSpec::Calendar {
            month: number(&date[0..2], 2, 2)?,
            day: number(&date[2..4], 2, 2)?,
            year: if date.len() == 6 {
                Some(two_digit_year(&date[4..6])?)
            } else {
                None
            },
        }
    } else {
        return Err(TimestampProblem::UnknownWord);
    };
    spec.set_date(date)?;
    if let Some(t) = time {
        spec.set_time(clock_time(t, None)?)?;
    }
    Ok(false)
}

fn is_iso_date_prefix(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[7] == b'-'
}

/// Parses an unsigned decimal field of `min_len..=max_len` ASCII digits.
fn number<T: std::str::FromStr>(
    s: &str,
    min_len: usize,
    max_len: usize,
) -> Result<T, TimestampProblem> {
    if s.len() < min_len || s.len() > max_len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TimestampProblem::BadDate);
    }
    s.parse().map_err(|_| TimestampProblem::BadDate)
}

fn two_digit_year(s: &str) -> Result<i32, TimestampProblem> {
    let yy: i32 = number(s, 2, 2)?;
    Ok(2000 + yy)
}

fn strip_meridiem(word: &str) -> (&str, Option<Meridiem>) {
    if let Some(body) = word.strip_suffix("am") {
        (body, Some(Meridiem::Am))
    } else if let Some(body) = word.strip_suffix("pm") {
        (body, Some(Meridiem::Pm))
    } else {
        (word, None)
    }
}

fn hms(h: u32, m: u32, s: u32) -> Result<NaiveTime, TimestampProblem> {
    NaiveTime::from_hms_opt(h, m, s).ok_or(TimestampProblem::BadTimeOfDay)
}

/// `HH:MM[:SS]`, on a 12-hour clock when a meridiem is given.
fn clock_time(s: &str, meridiem: Option<Meridiem>) -> Result<NaiveTime, TimestampProblem> {
    let field = |f: &str| -> Result<u32, TimestampProblem> {
        number(f, 1, 2).map_err(|_| TimestampProblem::BadTimeOfDay)
    };
    let fields: Vec<&str> = s.split(':').collect();
    let (h, m, sec) = match fields.as_slice() {
        [h, m] => (field(h)?, field(m)?, 0),
        [h, m, s] => (field(h)?, field(m)?, field(s)?),
        _ => return Err(TimestampProblem::BadTimeOfDay),
    };
    let h = match meridiem {
        None => h,
        Some(_) if h == 0 || h > 12 => return Err(TimestampProblem::BadTimeOfDay),
        Some(Meridiem::Am) => h % 12,
        Some(Meridiem::Pm) => h % 12 + 12,
    };
    hms(h, m, sec)
}

enum OffsetError {
    Bad(TimestampProblem),
    Overflow,
}

/// The part after `now`: empty, or `+N[unit]` / `-N[unit]`, in seconds.
fn parse_now_offset(rest: &str) -> Result<i64, OffsetError> {
    if rest.is_empty() {
        return Ok(0);
    }
    let (sign, body) = match rest.as_bytes()[0] {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return Err(OffsetError::Bad(TimestampProblem::UnknownWord)),
    };
    let digits_end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let (digits, unit) = body.split_at(digits_end);
    if digits.is_empty() {
        return Err(OffsetError::Bad(TimestampProblem::UnknownWord));
    }
    let count: i64 = digits.parse().map_err(|_| OffsetError::Overflow)?;
    let unit_secs = unit_seconds(unit).ok_or(OffsetError::Bad(TimestampProblem::UnknownUnit))?;
    count
        .checked_mul(unit_secs)
        .and_then(|v| v.checked_mul(sign))
        .ok_or(OffsetError::Overflow)
}

/// Seconds in a unit written in full or as a prefix of its name.
fn unit_seconds(unit: &str) -> Option<i64> {
    const UNITS: [(&str, i64, usize); 5] = [
        ("seconds", 1, 1),
        ("minutes", 60, 3),
        ("hours", 3_600, 1),
        ("days", 86_400, 1),
        ("weeks", 604_800, 1),
    ];
    if unit.is_empty() {
        return Some(1);
    }
    UNITS
        .iter()
        .find(|(name, _, shortest)| unit.len() >= *shortest && name.starts_with(unit))
        .map(|(_, secs, _)| *secs)
}

enum ResolveError {
    Bad(TimestampProblem),
    Overflow,
}

fn resolve(spec: &Spec, now: i64, lean: Lean, zone: &impl LocalZone) -> Result<i64, ResolveError> {
    let time = spec.time.unwrap_or(NaiveTime::MIN);
    let step = match lean {
        Lean::Future => 1,
        Lean::Past => -1,
    };
    let date = match spec.date {
        // Complete already: `now` plays no part.
        Some(DateSpec::Calendar {
            year: Some(y),
            month,
            day,
        }) => calendar(y, month, day)?,
        partial => {
            let now_local = zone.to_local(now).ok_or(ResolveError::Overflow)?;
            let today = now_local.date();
            match partial {
                Some(DateSpec::Relative(days)) => today
                    .checked_add_signed(Duration::days(days))
                    .ok_or(ResolveError::Overflow)?,
                // Only the day decides the year: `--begin=1121` on 21
                // November means today, not next year.
                Some(DateSpec::Calendar { month, day, .. }) => {
                    match calendar(today.year(), month, day) {
                        Ok(d) if !on_wrong_side(d, today, lean) => d,
                        // Wrong side of today, or 29 February in a common
                        // year: the nearest fitting year in that direction
                        // (leap years recur within 8 years).
                        _ => (1..=8)
                            .map(|k| calendar(today.year() + step * k, month, day))
                            .find_map(Result::ok)
                            .ok_or(ResolveError::Bad(TimestampProblem::BadDate))?,
                    }
                }
                None if on_wrong_side(today.and_time(time), now_local, lean) => today
                    .checked_add_signed(Duration::days(i64::from(step)))
                    .ok_or(ResolveError::Overflow)?,
                None => today,
            }
        }
    };
    zone.to_unix(date.and_time(time))
        .ok_or(ResolveError::Overflow)
}

fn calendar(year: i32, month: u32, day: u32) -> Result<NaiveDate, ResolveError> {
    NaiveDate::from_ymd_opt(year, month, day).ok_or(ResolveError::Bad(TimestampProblem::BadDate))
}

fn on_wrong_side<T: PartialOrd>(candidate: T, now_local: T, lean: Lean) -> bool {
    match lean {
        Lean::Future => candidate < now_local,
        Lean::Past => candidate > now_local,
    }
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

    fn problem(s: &str) -> TimestampProblem {
        match future(s) {
            Err(TimeError::InvalidTimestamp { input, problem }) => {
                assert_eq!(input, s);
                problem
            }
            other => panic!("{s:?} gave {other:?}"),
        }
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
    }

    #[test]
    fn absolute_dates() {
        assert_eq!(future("2026-11-21T07:01:01"), Ok(NOW));
        assert_eq!(past("2026-11-21T07:01:01"), Ok(NOW));
        assert_eq!(future("2026-11-21"), Ok(MIDNIGHT));
        assert_eq!(future("2026-11-21T08:00"), Ok(MIDNIGHT + 8 * HOUR));
        assert_eq!(future("2026-11-21t08:00:30"), Ok(MIDNIGHT + 8 * HOUR + 30));
        // A date in the past stays there: Slurm starts such a job at once.
        assert_eq!(future("2026-11-20"), Ok(MIDNIGHT - DAY));
        assert_eq!(future("2028-02-29"), Ok(1_835_395_200));
        assert_eq!(future("112227"), Ok(MIDNIGHT + DAY + 365 * DAY));
        assert_eq!(future("11/22/27"), Ok(MIDNIGHT + DAY + 365 * DAY));
        assert_eq!(future("11.22.27"), Ok(MIDNIGHT + DAY + 365 * DAY));
        assert_eq!(
            future("11/22/27-10:00"),
            Ok(MIDNIGHT + 366 * DAY + 10 * HOUR)
        );
    }

    #[test]
    fn dates_without_a_year_lean_towards_the_search() {
        assert_eq!(future("1122"), Ok(MIDNIGHT + DAY));
        assert_eq!(future("11/22"), Ok(MIDNIGHT + DAY));
        assert_eq!(future("11.22"), Ok(MIDNIGHT + DAY));
        assert_eq!(future("1122-10:00:30"), Ok(MIDNIGHT + DAY + 10 * HOUR + 30));
        // Today is today in either direction, whatever its time.
        assert_eq!(future("1121"), Ok(MIDNIGHT));
        assert_eq!(past("1121-23:00"), Ok(MIDNIGHT + 23 * HOUR));
        // Yesterday's date means next year's when looking ahead...
        assert_eq!(future("1120"), Ok(MIDNIGHT - DAY + 365 * DAY));
        // ...and this year's when looking back; tomorrow's, last year's.
        assert_eq!(past("1120"), Ok(MIDNIGHT - DAY));
        assert_eq!(past("1122"), Ok(MIDNIGHT + DAY - 365 * DAY));
        // 29 February waits for a leap year.
        assert_eq!(future("0229"), Ok(1_835_395_200));
        assert_eq!(past("0229"), Ok(1_709_164_800));
    }

    #[test]
    fn times_of_day_lean_towards_the_search() {
        assert_eq!(future("08:00"), Ok(MIDNIGHT + 8 * HOUR));
        assert_eq!(future("8:00"), Ok(MIDNIGHT + 8 * HOUR));
        assert_eq!(future("07:01:01"), Ok(NOW));
        assert_eq!(future("07:01:00"), Ok(NOW - 1 + DAY));
        assert_eq!(future("06:00"), Ok(MIDNIGHT + DAY + 6 * HOUR));
        assert_eq!(past("06:00"), Ok(MIDNIGHT + 6 * HOUR));
        assert_eq!(past("07:01:01"), Ok(NOW));
        assert_eq!(past("08:00"), Ok(MIDNIGHT - DAY + 8 * HOUR));
        assert_eq!(future("8:00am"), Ok(MIDNIGHT + 8 * HOUR));
        assert_eq!(future("8:00 AM"), Ok(MIDNIGHT + 8 * HOUR));
        assert_eq!(future("8:00pm"), Ok(MIDNIGHT + 20 * HOUR));
        assert_eq!(future("8:00:15 PM"), Ok(MIDNIGHT + 20 * HOUR + 15));
        assert_eq!(future("12:30pm"), Ok(MIDNIGHT + 12 * HOUR + 1800));
        assert_eq!(future("12:00am"), Ok(MIDNIGHT + DAY));
        assert_eq!(future("tomorrow 06:00"), Ok(MIDNIGHT + DAY + 6 * HOUR));
        assert_eq!(future("06:00 tomorrow"), Ok(MIDNIGHT + DAY + 6 * HOUR));
        assert_eq!(future("today 06:00"), Ok(MIDNIGHT + 6 * HOUR));
        assert_eq!(future("1122 5:00 pm"), Ok(MIDNIGHT + DAY + 17 * HOUR));
    }

    #[test]
    fn named_times() {
        assert_eq!(future("today"), Ok(MIDNIGHT));
        assert_eq!(past("today"), Ok(MIDNIGHT));
        assert_eq!(future("tomorrow"), Ok(MIDNIGHT + DAY));
        assert_eq!(future("midnight"), Ok(MIDNIGHT + DAY));
        assert_eq!(past("midnight"), Ok(MIDNIGHT));
        assert_eq!(future("noon"), Ok(MIDNIGHT + 12 * HOUR));
        assert_eq!(past("noon"), Ok(MIDNIGHT - DAY + 12 * HOUR));
        assert_eq!(future("elevenses"), Ok(MIDNIGHT + 11 * HOUR));
        assert_eq!(future("fika"), Ok(MIDNIGHT + 15 * HOUR));
        assert_eq!(future("teatime"), Ok(MIDNIGHT + 16 * HOUR));
        assert_eq!(future("TeaTime"), Ok(MIDNIGHT + 16 * HOUR));
        assert_eq!(future("noon tomorrow"), Ok(MIDNIGHT + DAY + 12 * HOUR));
        assert_eq!(future("  teatime   1122 "), Ok(MIDNIGHT + DAY + 16 * HOUR));
    }

    #[test]
    fn now_with_offsets() {
        let cases: &[(&str, i64)] = &[
            ("now", NOW),
            ("NOW", NOW),
            ("now+0", NOW),
            ("now+60", NOW + 60),
            ("now+60seconds", NOW + 60),
            ("now+60s", NOW + 60),
            ("now+60sec", NOW + 60),
            ("now+5minutes", NOW + 300),
            ("now+5min", NOW + 300),
            ("now+1hour", NOW + HOUR),
            ("now+2hours", NOW + 2 * HOUR),
            ("now+1h", NOW + HOUR),
            ("now+2days", NOW + 2 * DAY),
            ("now+1d", NOW + DAY),
            ("now+1week", NOW + 7 * DAY),
            ("now+3weeks", NOW + 21 * DAY),
            ("now-1hour", NOW - HOUR),
            ("now-90", NOW - 90),
        ];
        for (input, want) in cases {
            assert_eq!(future(input), Ok(*want), "input {input:?}");
            assert_eq!(past(input), Ok(*want), "input {input:?}");
        }
    }

    #[test]
    fn malformed_timestamps_say_why() {
        use TimestampProblem as P;
        let cases: &[(&str, TimestampProblem)] = &[
            ("", P::Empty),
            ("   ", P::Empty),
            ("garbage", P::UnknownWord),
            ("yesterday", P::UnknownWord),
            ("12345", P::UnknownWord),
            ("8", P::UnknownWord),
            ("8pm", P::UnknownWord),
            ("nowish", P::UnknownWord),
            ("now+", P::UnknownWord),
            ("now1", P::UnknownWord),
            ("now+hour", P::UnknownWord),
            ("now+1fortnight", P::UnknownUnit),
            ("now+1m", P::UnknownUnit),
            ("now today", P::NowCombined),
            ("2026-13-01", P::BadDate),
            ("2026-02-30", P::BadDate),
            ("2026-11", P::BadTimeOfDay),
            ("2026-1-5", P::BadTimeOfDay),
            ("2026-11-21-01", P::BadDate),
            ("1332", P::BadDate),
            ("11/22/2027", P::BadDate),
            ("11/", P::BadDate),
            ("1/2/3/4", P::BadDate),
            ("25:00", P::BadTimeOfDay),
            ("10:60", P::BadTimeOfDay),
            ("10:00:60", P::BadTimeOfDay),
            ("1:2:3:4", P::BadTimeOfDay),
            ("10:", P::BadTimeOfDay),
            ("13:00pm", P::BadTimeOfDay),
            ("0:30am", P::BadTimeOfDay),
            ("2026-11-21T25:00", P::BadTimeOfDay),
            ("am", P::StrayMeridiem),
            ("noon pm", P::StrayMeridiem),
            ("10:00 am am", P::StrayMeridiem),
            ("noon midnight", P::Repeated),
            ("today tomorrow", P::Repeated),
            ("1122 2026-11-22", P::Repeated),
            ("1122-10:00 noon", P::Repeated),
            ("２０２６-11-21", P::UnknownWord),
            ("١١٢٢", P::UnknownWord),
        ];
        for (input, want) in cases {
            assert_eq!(problem(input), *want, "input {input:?}");
        }
        assert_eq!(
            future("garbage").err().map(|e| e.to_string()),
            Some("invalid time specification \"garbage\": unrecognised word".to_owned())
        );
    }

    #[test]
    fn huge_offsets_overflow() {
        for input in [
            "now+99999999999999999999",
            "now+9223372036854775807weeks",
            "now+9223372036854775807",
            "now-99999999999999999999",
        ] {
            assert_eq!(
                future(input),
                Err(TimeError::Overflow {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        // A `now` outside the calendar cannot anchor a relative date.
        assert!(matches!(
            parse_timestamp_in("today", i64::MAX, Lean::Future, &UTC),
            Err(TimeError::Overflow { .. })
        ));
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
            prop_assert!(ahead >= now && ahead < now + DAY, "{} ahead {}", now, ahead);
            prop_assert!(behind <= now && behind > now - DAY, "{} behind {}", now, behind);
            prop_assert_eq!((ahead - behind).rem_euclid(DAY), 0);
            let local = format_timestamp_in(ahead, &zone);
            prop_assert!(local.ends_with(&format!("T{h:02}:{m:02}:{s:02}")), "{}", local);
        }

        #[test]
        fn now_offsets_add_up(n in 0i64..1_000_000_000_000, now in -1i64 << 40..1 << 40) {
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
