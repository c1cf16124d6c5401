//! The checks `squeue`, `sinfo` and `scancel` make on option values before
//! they ask the controller anything.
//!
//! Scripts depend on which values the C commands refuse and which they let
//! through, so these follow the C library calls those commands use rather
//! than a stricter grammar: numbers are read as `strtol`/`atoi` read them
//! (leading blanks and a sign allowed, digits, the rest left over; `atoi`
//! keeps the low 32 bits), users may be names or existing uids, and a host
//! list is refused only where Slurm's own host list reader gives up
//! (a bad bracket range, more than 65,536 hosts in one range, text after
//! a `]`), not where a stricter reader would.

pub use crate::opts::strtol;

/// C's `atoi`: `strtol` kept to an `int` (the low 32 bits), so a number too
/// big for `long` reads as -1 and `5000000000` as 705032704.
pub fn atoi(s: &str) -> i32 {
    // Truncation is the point: this is what the C cast does.
    #[allow(clippy::cast_possible_truncation)]
    let n = strtol(s).0 as i32;
    n
}

/// Resolves a user as Slurm's `uid_from_string` does: a login name, or a
/// number (all of the text, `strtol`-style) that is the uid of an existing
/// user. `by_name` looks a name up; `exists` says whether a uid has a user.
pub fn uid_from_string(
    s: &str,
    by_name: &dyn Fn(&str) -> Option<u32>,
    exists: &dyn Fn(u32) -> bool,
) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    let (n, rest, any) = strtol(s);
    if any && rest.is_empty() {
        return u32::try_from(n).ok().filter(|uid| exists(*uid));
    }
    by_name(s)
}

/// Why a host list is refused. Only a bad bracket range has a line of its
/// own before the command's "invalid entry" line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistCheckError {
    /// A bracket item that is not `N`, `N-` or `N-M` with `N <= M`.
    #[error("_parse_single_range: Invalid range: `{range}'")]
    InvalidRange { range: String },
    /// A bracket item naming more than [`MAX_RANGE_HOSTS`] hosts.
    #[error("_parse_single_range: Too many hosts in range `{range}'")]
    TooManyHosts { range: String },
    /// Text after a `]` that is not a separator (`n[1-2]a`, `n[[1]]`).
    #[error("text after ']' in host list")]
    AfterBracket,
}

impl HostlistCheckError {
    /// The lines the commands print (each after `prog: error: `): the range
    /// line when there is one, then `'EXPR' invalid entry for --OPTION`.
    pub fn lines(&self, expr: &str, option: &str) -> Vec<String> {
        let last = format!("'{expr}' invalid entry for --{option}");
        match self {
            Self::AfterBracket => vec![last],
            _ => vec![self.to_string(), last],
        }
    }
}

/// Most hosts one bracket range may name.
pub const MAX_RANGE_HOSTS: u64 = 65_536;

/// Separators between host names outside brackets.
fn is_separator(c: char) -> bool {
    matches!(c, ',' | ' ' | '\t')
}

/// The words of a host list: split at separators outside brackets; a `[`
/// without a later `]` is an ordinary character.
fn host_words(expr: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = None;
    let mut i = 0;
    while i < expr.len() {
        let Some(c) = expr[i..].chars().next() else {
            break;
        };
        if is_separator(c) {
            if let Some(s) = start.take() {
                words.push(&expr[s..i]);
            }
            i += c.len_utf8();
            continue;
        }
        start.get_or_insert(i);
        if c == '[' {
            if let Some(close) = expr[i..].find(']') {
                i += close + 1;
                continue;
            }
        }
        i += c.len_utf8();
    }
    if let Some(s) = start {
        words.push(&expr[s..]);
    }
    words
}

/// Reads one bracket item (`N`, `N-`, `N-M`).
fn check_range(item: &str) -> Result<(), HostlistCheckError> {
    let invalid = || HostlistCheckError::InvalidRange {
        range: item.to_owned(),
    };
    let (lo_text, hi_text) = match item.split_once('-') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (item, None),
    };
    let (lo, rest, any) = strtol(lo_text);
    if !any || !rest.is_empty() {
        return Err(invalid());
    }
    let hi = match hi_text {
        None | Some("") => lo,
        Some(h) if h.starts_with('-') => return Err(invalid()),
        Some(h) => {
            let (hi, rest, any) = strtol(h);
            if !any || !rest.is_empty() {
                return Err(invalid());
            }
            hi
        }
    };
    if lo < 0 || hi < lo {
        return Err(invalid());
    }
    let hosts = u64::try_from(hi - lo).unwrap_or(u64::MAX).saturating_add(1);
    if hosts > MAX_RANGE_HOSTS {
        return Err(HostlistCheckError::TooManyHosts {
            range: item.to_owned(),
        });
    }
    Ok(())
}

/// Checks a `-w`/`-n` host list the way Slurm's reader does: each word's
/// last `[` opens the ranges, its first `]` after that closes them and
/// must end the word.
pub fn check_hostlist(expr: &str) -> Result<(), HostlistCheckError> {
    for word in host_words(expr) {
        let Some(open) = word.rfind('[') else {
            continue;
        };
        let inner = &word[open + 1..];
        let Some(close) = inner.find(']') else {
            continue;
        };
        if close + 1 != inner.len() {
            return Err(HostlistCheckError::AfterBracket);
        }
        for item in inner[..close].split(',') {
            check_range(item)?;
        }
    }
    Ok(())
}

/// The host names Slurm reads from a list [`check_hostlist`] accepts: a
/// word whose last `[` has no `]` after it is read as the text before its
/// first `[` and a `]` (`n[1-3` names the host `n]`), a word with brackets
/// as its ranges give, any other word as it is.
pub fn slurm_host_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    for word in host_words(expr) {
        match word.rfind('[') {
            Some(open) if !word[open..].contains(']') => {
                let first = word.find('[').unwrap_or(open);
                names.push(format!("{}]", &word[..first]));
            }
            Some(_) => match slurm_common::hostlist::expand(word) {
                Ok(expanded) => names.extend(expanded),
                Err(_) => names.push(word.to_owned()),
            },
            None => names.push(word.to_owned()),
        }
    }
    names
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strtol_reads_like_c() {
        assert_eq!(strtol("  +12x"), (12, "x", true));
        assert_eq!(strtol("-3"), (-3, "", true));
        assert_eq!(strtol("abc"), (0, "abc", false));
        assert_eq!(strtol(""), (0, "", false));
        assert_eq!(strtol("99999999999999999999").0, i64::MAX);
        assert_eq!(strtol("-99999999999999999999").0, i64::MIN);
    }

    #[test]
    fn atoi_keeps_the_low_32_bits() {
        assert_eq!(atoi("5"), 5);
        assert_eq!(atoi("5000000000"), 705_032_704);
        assert_eq!(atoi("99999999999999999999"), -1);
        assert_eq!(atoi("4294967296"), 0);
        assert_eq!(atoi("x"), 0);
    }

    #[test]
    fn users_are_names_or_existing_uids() {
        let by_name = |n: &str| (n == "root").then_some(0);
        let exists = |uid: u32| uid == 0 || uid == 1000;
        let uid = |s: &str| uid_from_string(s, &by_name, &exists);
        assert_eq!(uid("root"), Some(0));
        assert_eq!(uid("0"), Some(0));
        assert_eq!(uid("+0"), Some(0));
        assert_eq!(uid("00"), Some(0));
        assert_eq!(uid("1000"), Some(1000));
        for bad in [
            "",
            " root",
            "root,",
            "99999",
            "-1",
            "0x0",
            "4294967295",
            "nosuch",
        ] {
            assert_eq!(uid(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn host_lists_slurm_reads() {
        for good in [
            "n1",
            "n[1-2]",
            "n[1-",
            "n]",
            "[1-2]",
            "n[1-]",
            "n[01-002]",
            "n[1-2]x[3-4]",
            "n[1-2],,m",
            "n[ 1-2]",
            "n[+1]",
            "n[1-65536]",
            "n[0-65535]",
            "n[99999999999999999999]",
            "n[1-2][",
            "é",
            "",
            "a b",
        ] {
            assert_eq!(check_hostlist(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn host_lists_slurm_refuses() {
        let range = |r: &str| {
            Err(HostlistCheckError::InvalidRange {
                range: r.to_owned(),
            })
        };
        assert_eq!(check_hostlist("n[a-b]"), range("a-b"));
        assert_eq!(check_hostlist("n[3-1]"), range("3-1"));
        assert_eq!(check_hostlist("n[]"), range(""));
        assert_eq!(check_hostlist("n[1,,2]"), range(""));
        assert_eq!(check_hostlist("n[1--2]"), range("1--2"));
        assert_eq!(check_hostlist("n[-2]"), range("-2"));
        assert_eq!(check_hostlist("n[1-2 ]"), range("1-2 "));
        assert_eq!(check_hostlist("n[0x1-2]"), range("0x1-2"));
        assert_eq!(check_hostlist("n[é]"), range("é"));
        assert_eq!(check_hostlist("n[1-2][a-b]"), range("a-b"));
        assert_eq!(
            check_hostlist("n[0-65536]"),
            Err(HostlistCheckError::TooManyHosts {
                range: "0-65536".to_owned()
            })
        );
        for after in ["n[1-2]a", "n[[1]]", "n[1-2]]", "n[]]", "a,n[1-2]a"] {
            assert_eq!(
                check_hostlist(after),
                Err(HostlistCheckError::AfterBracket),
                "{after:?}"
            );
        }
    }

    #[test]
    fn host_names_as_slurm_reads_them() {
        let names = |e: &str| slurm_host_names(e);
        assert_eq!(names("n[1-"), ["n]"]);
        assert_eq!(names("vm,n[1-2"), ["vm", "n]"]);
        assert_eq!(names("n1-2]"), ["n1-2]"]);
        assert_eq!(names("n[1-2],m3 x"), ["n1", "n2", "m3", "x"]);
    }

    #[test]
    fn refusal_lines() {
        let e = check_hostlist("n[a-b]").unwrap_err();
        assert_eq!(
            e.lines("n[a-b]", "nodelist"),
            [
                "_parse_single_range: Invalid range: `a-b'",
                "'n[a-b]' invalid entry for --nodelist"
            ]
        );
        let e = check_hostlist("n[1-2]a").unwrap_err();
        assert_eq!(
            e.lines("n[1-2]a", "nodes"),
            ["'n[1-2]a' invalid entry for --nodes"]
        );
    }

    proptest! {
        #[test]
        fn any_text_is_answered(s in "\\PC{0,40}") {
            let _ = check_hostlist(&s);
            let _ = atoi(&s);
            let _ = uid_from_string(&s, &|_| None, &|_| false);
        }

        #[test]
        fn plain_ranges_are_accepted(lo in 0u64..100_000, len in 0u64..65_536) {
            let expr = format!("n[{lo}-{}]", lo + len);
            prop_assert_eq!(check_hostlist(&expr), Ok(()));
        }
    }
}
