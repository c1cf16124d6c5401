//! Reading hostlist expressions into runs of hosts.
//!
//! An expression is a list of names separated by commas or whitespace
//! (space, tab, newline); separators inside brackets belong to the bracket.
//! A name holds zero or more bracket groups, each a comma list of `N` or
//! `N-M`; text may sit before and between groups but not after the last one
//! (`a-[1-2]b` is invalid in Slurm). Several groups form a cartesian product
//! (see [`push_pattern`] for its order). The lower bound's digit count is
//! the printed width (`[01-3]` gives `01 02 03`, `[1-010]` gives `1 .. 10`).
//!
//! Everything is validated and counted before any name is built, so a huge
//! expression is refused with an error instead of exhausting memory.

use super::run::{decimal_digits, Numbers, Run};
use super::{HostlistError, MAX_EXPANDED_BYTES, MAX_HOSTS, MAX_RANGE_HOSTS};

/// A validated expression: its names, in order, and how many hosts they make.
#[derive(Debug)]
pub(crate) struct Parsed<'a> {
    tokens: Vec<Token<'a>>,
    pub hosts: u64,
}

#[derive(Debug)]
enum Token<'a> {
    /// A name without brackets, taken as written.
    Name(&'a str),
    /// Text and bracket groups: `rack[1-2]-n[01-04]`.
    Pattern(Vec<Group<'a>>),
}

/// The text before a bracket and the ranges inside it.
#[derive(Debug)]
struct Group<'a> {
    text: &'a str,
    ranges: Vec<Numbers>,
}

impl Group<'_> {
    fn count(&self) -> u64 {
        self.ranges
            .iter()
            .fold(0u64, |acc, r| acc.saturating_add(r.hi - r.lo + 1))
    }

    /// The longest number the group prints.
    fn max_digits(&self) -> usize {
        self.ranges
            .iter()
            .map(|r| r.width.max(decimal_digits(r.hi)))
            .max()
            .unwrap_or(0)
    }
}

fn is_separator(b: u8) -> bool {
    matches!(b, b',' | b' ' | b'\t' | b'\n')
}

/// Splits at separators outside brackets; empty names are skipped.
fn split_names(expr: &str) -> impl Iterator<Item = &str> {
    let mut rest = expr;
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        let mut depth = 0usize;
        let end = rest
            .bytes()
            .position(|b| match b {
                b'[' => {
                    depth += 1;
                    false
                }
                b']' => {
                    depth = depth.saturating_sub(1);
                    false
                }
                b => depth == 0 && is_separator(b),
            })
            .unwrap_or(rest.len());
        let name = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        if !name.is_empty() {
            return Some(name);
        }
    })
}

/// Parses and counts `expr`, refusing it when it is invalid or too large.
pub(crate) fn parse(expr: &str) -> Result<Parsed<'_>, HostlistError> {
    let mut tokens = Vec::new();
    let mut hosts = 0u64;
    let mut bytes = 0u64;
    for name in split_names(expr) {
        let token = parse_name(expr, name)?;
        let (n, len) = match &token {
            Token::Name(s) => (1, s.len()),
            Token::Pattern(groups) => groups.iter().fold((1u64, 0usize), |(n, len), g| {
                (
                    n.saturating_mul(g.count()),
                    len.saturating_add(g.text.len())
                        .saturating_add(g.max_digits()),
                )
            }),
        };
        hosts = hosts.saturating_add(n);
        if hosts > MAX_HOSTS as u64 {
            return Err(HostlistError::TooManyHosts {
                expr: expr.to_owned(),
                limit: MAX_HOSTS,
            });
        }
        bytes = bytes.saturating_add(n.saturating_mul(len as u64));
        if bytes > MAX_EXPANDED_BYTES as u64 {
            return Err(HostlistError::TooLong {
                expr: expr.to_owned(),
                limit: MAX_EXPANDED_BYTES,
            });
        }
        tokens.push(token);
    }
    Ok(Parsed { tokens, hosts })
}

fn parse_name<'a>(expr: &str, name: &'a str) -> Result<Token<'a>, HostlistError> {
    let unbalanced = || HostlistError::UnbalancedBrackets {
        expr: expr.to_owned(),
        name: name.to_owned(),
    };
    let mut pieces: Vec<(&str, &str)> = Vec::new();
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let text = &rest[..open];
        let after = &rest[open + 1..];
        let close = after.find(']').ok_or_else(unbalanced)?;
        let inner = &after[..close];
        if text.contains(']') || inner.contains('[') {
            return Err(unbalanced());
        }
        pieces.push((text, inner));
        rest = &after[close + 1..];
    }
    if rest.contains(']') {
        return Err(unbalanced());
    }
    if pieces.is_empty() {
        return Ok(Token::Name(name));
    }
    if !rest.is_empty() {
        return Err(HostlistError::TextAfterBracket {
            expr: expr.to_owned(),
            name: name.to_owned(),
        });
    }
    // Slurm reads the last group first, then the ones before it from right
    // to left; report the same bad range it would.
    let mut groups = Vec::with_capacity(pieces.len());
    for &(text, inner) in pieces.iter().rev() {
        let ranges = inner
            .split(',')
            .map(|r| parse_range(expr, r))
            .collect::<Result<Vec<_>, _>>()?;
        groups.push(Group { text, ranges });
    }
    groups.reverse();
    Ok(Token::Pattern(groups))
}

/// Reads decimal digits, clamping to `u64::MAX` as C's `strtoul` does; the
/// flag says whether it clamped.
fn clamped_number(digits: &str) -> Option<(u64, bool)> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(match digits.parse::<u64>() {
        Ok(n) => (n, false),
        Err(_) => (u64::MAX, true),
    })
}

/// One `N`, `N-M` or (as Slurm accepts it) `N-` inside a bracket.
fn parse_range(expr: &str, text: &str) -> Result<Numbers, HostlistError> {
    let invalid = || HostlistError::InvalidRange {
        expr: expr.to_owned(),
        range: text.to_owned(),
    };
    let (lo_text, hi_text) = match text.split_once('-') {
        Some((lo, hi)) if !hi.is_empty() => (lo, hi),
        Some((lo, _)) => (lo, lo),
        None => (text, text),
    };
    let (lo, lo_clamped) = clamped_number(lo_text).ok_or_else(invalid)?;
    let (hi, hi_clamped) = clamped_number(hi_text).ok_or_else(invalid)?;
    if lo > hi {
        return Err(invalid());
    }
    if hi - lo >= MAX_RANGE_HOSTS {
        return Err(HostlistError::RangeTooLarge {
            expr: expr.to_owned(),
            range: text.to_owned(),
            limit: MAX_RANGE_HOSTS,
        });
    }
    if lo_clamped || hi_clamped {
        return Err(invalid());
    }
    Ok(Numbers {
        lo,
        hi,
        width: lo_text.len(),
    })
}

impl Parsed<'_> {
    /// The runs of hosts in order, before any merging.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs = Vec::new();
        for token in &self.tokens {
            match token {
                Token::Name(name) => runs.push(Run::from_name(name)),
                Token::Pattern(groups) => push_pattern(groups, &mut runs),
            }
        }
        runs
    }
}

/// Emits the product of `groups` in Slurm's order. The last group becomes
/// numbered runs and varies fastest; the others are spelled into prefixes,
/// the one just before the last varying slowest and the first one fastest
/// (Slurm peels groups off from the right and recurses into the left part:
/// `[1-2]x[1-2]-[1]` gives `1x1-1 2x1-1 1x2-1 2x2-1`). Iterative (an
/// odometer over the outer groups), so the number of groups in one name
/// cannot exhaust the stack.
fn push_pattern(groups: &[Group<'_>], runs: &mut Vec<Run>) {
    let Some((last, outer)) = groups.split_last() else {
        return;
    };
    // Position in each outer group: (index of range, current value).
    let mut odometer: Vec<(usize, u64)> = outer
        .iter()
        .map(|g| (0, g.ranges.first().map_or(0, |r| r.lo)))
        .collect();
    loop {
        let mut prefix = String::new();
        for (g, &(ri, v)) in outer.iter().zip(&odometer) {
            prefix.push_str(g.text);
            let width = g.ranges.get(ri).map_or(0, |r| r.width);
            prefix.push_str(&format!("{v:0width$}"));
        }
        prefix.push_str(last.text);
        for r in &last.ranges {
            runs.push(Run {
                prefix: prefix.clone(),
                numbers: Some(*r),
            });
        }
        // Advance the first outer group; carry into the ones after it.
        let mut i = 0;
        loop {
            if i == odometer.len() {
                return;
            }
            let ranges = &outer[i].ranges;
            let (ri, v) = &mut odometer[i];
            match ranges.get(*ri) {
                Some(r) if *v < r.hi => {
                    *v += 1;
                    break;
                }
                _ if *ri + 1 < ranges.len() => {
                    *ri += 1;
                    *v = ranges[*ri].lo;
                    break;
                }
                _ => {
                    *ri = 0;
                    *v = ranges.first().map_or(0, |r| r.lo);
                    i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn names(expr: &str) -> Vec<&str> {
        split_names(expr).collect()
    }

    #[test]
    fn separators_outside_brackets_split() {
        assert_eq!(names("a,b c\td\ne"), ["a", "b", "c", "d", "e"]);
        assert_eq!(names("n[1,3],m"), ["n[1,3]", "m"]);
        assert_eq!(names(",,a,,"), ["a"]);
        assert_eq!(names("n[1, 3] m"), ["n[1, 3]", "m"]);
        assert_eq!(names("n[1-3"), ["n[1-3"]);
        assert_eq!(names("a\rb"), ["a\rb"]);
        assert!(names("").is_empty());
    }

    #[test]
    fn range_forms() {
        let r = parse_range("x", "01-3").unwrap();
        assert_eq!((r.lo, r.hi, r.width), (1, 3, 2));
        let r = parse_range("x", "1-010").unwrap();
        assert_eq!((r.lo, r.hi, r.width), (1, 10, 1));
        let r = parse_range("x", "7-").unwrap();
        assert_eq!((r.lo, r.hi), (7, 7));
        for bad in [
            "",
            "-1",
            "1--3",
            "5-1",
            "a-b",
            "1x2",
            "+1",
            " 1",
            "1-+3",
            "99999999999999999999",
        ] {
            assert!(
                matches!(
                    parse_range("x", bad),
                    Err(HostlistError::InvalidRange { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_range("x", "1-99999999999999999999"),
            Err(HostlistError::RangeTooLarge { .. })
        ));
        assert!(parse_range("x", "0-65535").is_ok());
        assert!(matches!(
            parse_range("x", "0-65536"),
            Err(HostlistError::RangeTooLarge { .. })
        ));
        let top = parse_range("x", "18446744073709551614-18446744073709551615").unwrap();
        assert_eq!(top.hi, u64::MAX);
    }
}
