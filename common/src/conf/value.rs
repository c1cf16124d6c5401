//! Value parsers shared by the three files, and the one place that turns a
//! bad value into a [`ConfError::InvalidValue`] naming file, line, key, value
//! and the expected form.

use std::time::Duration;

use super::lexer::Pair;
use super::{ConfError, ConfWarning, SourceLoc, WarningKind};
use crate::time::TimeLimit;

pub(crate) const EXPECT_TIME_LIMIT: &str =
    "a time limit (minutes, [days-]hours:minutes:seconds, UNLIMITED)";
pub(crate) const EXPECT_DURATION_MIN: &str = "a duration (minutes, [days-]hours:minutes:seconds)";
pub(crate) const EXPECT_DURATION_SEC: &str =
    "a duration ([days-]hours:minutes:seconds, minutes:seconds or minutes)";
pub(crate) const EXPECT_SECONDS: &str = "a whole number of seconds";
pub(crate) const EXPECT_BOOL: &str = "YES or NO";
pub(crate) const EXPECT_U16: &str = "a whole number from 0 to 65535";
pub(crate) const EXPECT_U32: &str = "a whole number from 0 to 4294967295";
pub(crate) const EXPECT_U64: &str = "a whole number";
pub(crate) const EXPECT_MEM: &str = "a memory size in MB (optionally with a K, M, G or T suffix)";
pub(crate) const EXPECT_MEM_LIMIT: &str =
    "a memory size in MB (optionally with a K, M, G or T suffix), 0 or UNLIMITED";
pub(crate) const EXPECT_HOSTLIST: &str = "a host list such as n[1-4,7],gpu01";
pub(crate) const EXPECT_PORT: &str = "a port number from 1 to 65535";
pub(crate) const EXPECT_PORTS: &str = "a port or port range such as 6818, 7000-7003 or [7000-7003]";
pub(crate) const EXPECT_ID_LIST: &str = "a list of numbers and ranges such as 0-3,8";
pub(crate) const EXPECT_NAME: &str = "a non-empty name";
pub(crate) const EXPECT_PERCENT: &str = "a percentage such as 100 or 50.5";

/// Lists built from ranges are capped so that `0-4294967295` fails instead of
/// allocating gigabytes.
pub(crate) const MAX_LIST_LEN: usize = 1 << 16;

/// One key's value with where it came from; the `key` is the canonical
/// spelling used in messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field<'a> {
    pub key: &'static str,
    pub value: &'a str,
    pub loc: &'a SourceLoc,
}

impl<'a> Field<'a> {
    pub fn new(key: &'static str, value: &'a str, loc: &'a SourceLoc) -> Self {
        Self { key, value, loc }
    }

    pub fn invalid(&self, expected: &'static str) -> ConfError {
        ConfError::InvalidValue {
            loc: self.loc.clone(),
            key: self.key.to_string(),
            value: self.value.to_string(),
            expected,
        }
    }

    /// Runs a plain parser and attaches the context on failure.
    pub fn with<T>(
        &self,
        expected: &'static str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, ConfError> {
        parse(self.value).ok_or_else(|| self.invalid(expected))
    }

    /// The value as a string; empty means unset.
    pub fn string(&self) -> Option<String> {
        let v = self.value.trim();
        (!v.is_empty()).then(|| v.to_string())
    }

    /// A required non-empty name.
    pub fn name(&self) -> Result<String, ConfError> {
        self.string().ok_or_else(|| self.invalid(EXPECT_NAME))
    }

    pub fn bool(&self) -> Result<bool, ConfError> {
        self.with(EXPECT_BOOL, parse_bool)
    }

    pub fn u16(&self) -> Result<u16, ConfError> {
        self.with(EXPECT_U16, |v| v.parse().ok())
    }

    pub fn u32(&self) -> Result<u32, ConfError> {
        self.with(EXPECT_U32, |v| v.parse().ok())
    }

    pub fn u64(&self) -> Result<u64, ConfError> {
        self.with(EXPECT_U64, |v| v.parse().ok())
    }

    pub fn port(&self) -> Result<u16, ConfError> {
        self.with(EXPECT_PORT, |v| v.parse().ok().filter(|p: &u16| *p != 0))
    }

    /// A plain count of seconds (MessageTimeout=10).
    pub fn secs(&self) -> Result<Duration, ConfError> {
        self.with(EXPECT_SECONDS, |v| {
            v.parse::<u32>()
                .ok()
                .map(|s| Duration::from_secs(u64::from(s)))
        })
    }

    /// A Slurm time limit (partition MaxTime=, DefaultTime=).
    pub fn time_limit(&self) -> Result<TimeLimit, ConfError> {
        self.with(EXPECT_TIME_LIMIT, |v| crate::time::parse_time_limit(v).ok())
    }

    /// A Slurm time string with minute resolution that must be finite
    /// (PriorityDecayHalfLife=7-0).
    pub fn minutes_duration(&self) -> Result<Duration, ConfError> {
        self.with(
            EXPECT_DURATION_MIN,
            |v| match crate::time::parse_time_limit(v).ok()? {
                TimeLimit::Minutes(m) => Some(Duration::from_secs(u64::from(m) * 60)),
                TimeLimit::Infinite => None,
            },
        )
    }

    /// A Slurm time string with second resolution (PreemptExemptTime=).
    pub fn secs_duration(&self) -> Result<Duration, ConfError> {
        self.with(EXPECT_DURATION_SEC, |v| {
            crate::time::parse_duration_secs(v)
                .ok()
                .map(Duration::from_secs)
        })
    }

    pub fn mem_mb(&self) -> Result<u64, ConfError> {
        self.with(EXPECT_MEM, |v| crate::size::parse_mem_mb(v).ok())
    }

    /// A memory limit where 0 and UNLIMITED mean "no limit" (None).
    pub fn mem_limit(&self) -> Result<Option<u64>, ConfError> {
        self.with(EXPECT_MEM_LIMIT, |v| {
            if is_unlimited(v) {
                return Some(None);
            }
            let mb = crate::size::parse_mem_mb(v).ok()?;
            Some((mb != 0).then_some(mb))
        })
    }

    /// A host list expanded to names.
    pub fn hostlist(&self) -> Result<Vec<String>, ConfError> {
        self.with(EXPECT_HOSTLIST, |v| {
            let v = v.trim();
            if v.is_empty() {
                return None;
            }
            crate::hostlist::expand(v).ok().filter(|h| !h.is_empty())
        })
    }

    pub fn id_list(&self) -> Result<Vec<u32>, ConfError> {
        self.with(EXPECT_ID_LIST, parse_id_list)
    }

    pub fn percent(&self) -> Result<f64, ConfError> {
        self.with(EXPECT_PERCENT, parse_percent)
    }
}

pub(crate) fn lookup<T: Copy>(table: &[(&str, T)], word: &str) -> Option<T> {
    table
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(word))
        .map(|(_, v)| *v)
}

pub(crate) fn is_unlimited(v: &str) -> bool {
    let v = v.trim();
    v.eq_ignore_ascii_case("UNLIMITED") || v.eq_ignore_ascii_case("INFINITE")
}

pub(crate) fn parse_bool(v: &str) -> Option<bool> {
    const TABLE: &[(&str, bool)] = &[
        ("yes", true),
        ("true", true),
        ("1", true),
        ("no", false),
        ("false", false),
        ("0", false),
    ];
    lookup(TABLE, v.trim())
}

pub(crate) fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `0-3,8,10-11` into the numbers, in the order written.
pub(crate) fn parse_id_list(v: &str) -> Option<Vec<u32>> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for item in v.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (digits(a)?, digits(b)?),
            None => {
                let n = digits(item)?;
                (n, n)
            }
        };
        let lo = u32::try_from(lo).ok()?;
        let hi = u32::try_from(hi).ok()?;
        if hi < lo || (hi - lo) as usize >= MAX_LIST_LEN.saturating_sub(out.len()) {
            return None;
        }
        out.extend(lo..=hi);
    }
    Some(out)
}

/// Ports: `6818`, `7000-7003`, `[7000-7003]`, `[7000,7002-7003]`.
pub(crate) fn parse_port_list(v: &str) -> Option<Vec<u16>> {
    let v = v.trim();
    let inner = match v.strip_prefix('[') {
        Some(rest) => rest.strip_suffix(']')?,
        None => v,
    };
    let ids = parse_id_list(inner)?;
    ids.into_iter()
        .map(|p| u16::try_from(p).ok().filter(|p| *p != 0))
        .collect()
}

pub(crate) fn parse_percent(v: &str) -> Option<f64> {
    let v = v.trim();
    let v = v.strip_suffix('%').unwrap_or(v);
    let p: f64 = v.parse().ok()?;
    (p.is_finite() && p >= 0.0).then_some(p)
}

/// A count with an optional binary suffix (`4`, `100K`, `2G`), as GRES
/// counts are written.
pub(crate) fn parse_count(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mult) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let mult: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'P' => 1 << 50,
                _ => return None,
            };
            (&v[..i], mult)
        }
        _ => (v, 1),
    };
    digits(num)?.checked_mul(mult)
}

/// The attributes of one record line (NodeName=, PartitionName=, ...) under
/// their canonical spelling, last one winning within the line. `aliases` maps
/// other accepted spellings to canonical ones. Unknown keys become warnings.
pub(crate) fn record_attrs<'a>(
    pairs: &'a [Pair],
    known: &[&'static str],
    aliases: &[(&str, &'static str)],
    loc: &SourceLoc,
    warnings: &mut Vec<ConfWarning>,
) -> Vec<(&'static str, &'a str)> {
    let mut out: Vec<(&'static str, &'a str)> = Vec::new();
    for pair in pairs {
        let canonical = known
            .iter()
            .copied()
            .find(|k| k.eq_ignore_ascii_case(&pair.key))
            .or_else(|| {
                aliases
                    .iter()
                    .find(|(a, _)| a.eq_ignore_ascii_case(&pair.key))
                    .map(|(_, k)| *k)
            });
        match canonical {
            Some(k) => {
                out.retain(|(old, _)| *old != k);
                out.push((k, pair.value.as_str()));
            }
            None => warnings.push(ConfWarning {
                loc: loc.clone(),
                kind: WarningKind::UnknownKey {
                    key: pair.key.clone(),
                },
            }),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn id_lists() {
        assert_eq!(parse_id_list("0-3,8"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse_id_list("5"), Some(vec![5]));
        assert_eq!(parse_id_list("3-1"), None);
        assert_eq!(parse_id_list("0-4294967295"), None);
        assert_eq!(parse_id_list(""), None);
        assert_eq!(parse_id_list("a"), None);
    }

    #[test]
    fn port_lists() {
        assert_eq!(parse_port_list("6818"), Some(vec![6818]));
        assert_eq!(
            parse_port_list("[17001-17003]"),
            Some(vec![17001, 17002, 17003])
        );
        assert_eq!(parse_port_list("7000-7001"), Some(vec![7000, 7001]));
        assert_eq!(parse_port_list("[7000,7005]"), Some(vec![7000, 7005]));
        assert_eq!(parse_port_list("70000"), None);
        assert_eq!(parse_port_list("0"), None);
        assert_eq!(parse_port_list("[7000"), None);
    }

    #[test]
    fn counts_with_suffixes() {
        assert_eq!(parse_count("4"), Some(4));
        assert_eq!(parse_count("2K"), Some(2048));
        assert_eq!(parse_count("1g"), Some(1 << 30));
        assert_eq!(parse_count("4X"), None);
        assert_eq!(parse_count("K"), None);
        assert_eq!(parse_count("99999999999P"), None);
        assert_eq!(parse_count("é"), None);
    }

    #[test]
    fn bools_and_percent() {
        assert_eq!(parse_bool("YES"), Some(true));
        assert_eq!(parse_bool("no"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
        assert_eq!(parse_percent("100.0%"), Some(100.0));
        assert_eq!(parse_percent("-1"), None);
        assert_eq!(parse_percent("NaN"), None);
    }
}
