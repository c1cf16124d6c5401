//! Natural ordering of host name prefixes, as Slurm sorts them.
//!
//! `hostlistsorted` orders prefixes so that `rack2-` comes before `rack10-`,
//! while a run of digits that starts with `0` is compared digit by digit from
//! the left (`r0` < `r00` < `r001` < `r01` < `r1`). Bytes are compared as C's
//! signed `char`, so non-ASCII bytes sort before every ASCII byte.
//!
//! The order is expressed as a sort key instead of a comparison function: a
//! key derives `Ord`, so it is a total order by construction and sorting can
//! never be handed an inconsistent comparator, whatever the input.

use std::cmp::Ordering;

/// One element of a natural sort key.
///
/// The variants are declared in ascending order: a byte below `'0'` (or a
/// non-ASCII byte, which is negative as a signed `char`) sorts before any
/// digit, and a byte above `'9'` sorts after any digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part<'a> {
    Low(i8),
    Digits(DigitRun<'a>),
    High(u8),
}

/// A maximal run of ASCII digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DigitRun<'a>(&'a [u8]);

impl DigitRun<'_> {
    fn zero_led(&self) -> bool {
        self.0.first() == Some(&b'0')
    }
}

impl Ord for DigitRun<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.zero_led() || other.zero_led() {
            // Left-aligned: digit by digit, the shorter run first on a tie.
            self.0.cmp(other.0)
        } else {
            // Right-aligned: the longer number is larger, then digit by digit.
            self.0
                .len()
                .cmp(&other.0.len())
                .then_with(|| self.0.cmp(other.0))
        }
    }
}

impl PartialOrd for DigitRun<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The natural sort key of `s`, built lazily; equal keys mean equal strings.
fn key(s: &str) -> impl Iterator<Item = Part<'_>> {
    let bytes = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        let b = *bytes.get(i)?;
        if b.is_ascii_digit() {
            let start = i;
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            return Some(Part::Digits(DigitRun(&bytes[start..i])));
        }
        i += 1;
        Some(if b > b'9' && b.is_ascii() {
            Part::High(b)
        } else {
            Part::Low(b as i8)
        })
    })
}

/// Compares two prefixes in Slurm's natural order.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    key(a).cmp(key(b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sorted(mut v: Vec<&str>) -> Vec<&str> {
        v.sort_by(|a, b| compare(a, b));
        v
    }

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(
            sorted(vec!["rack10-n", "rack2-n", "rack1-n"]),
            ["rack1-n", "rack2-n", "rack10-n"]
        );
        assert_eq!(sorted(vec!["x10y", "x2y", "x1y"]), ["x1y", "x2y", "x10y"]);
    }

    #[test]
    fn leading_zeros_compare_from_the_left() {
        // Observed with Slurm 22.05's hostlistsorted.
        assert_eq!(
            sorted(vec![
                "r10n", "r2n", "r1n", "r010n", "r01n", "r001n", "r00n", "r0n"
            ]),
            ["r0n", "r00n", "r001n", "r01n", "r010n", "r1n", "r2n", "r10n"]
        );
    }

    #[test]
    fn bytes_compare_as_signed_chars() {
        assert_eq!(
            sorted(vec!["z", "a", "~", "A", "-", "_", "é"]),
            ["é", "-", "A", "_", "a", "z", "~"]
        );
        // A digit against a letter is a plain byte comparison.
        assert_eq!(compare("a1", "a-"), Ordering::Greater);
        assert_eq!(compare("a1", "ab"), Ordering::Less);
        assert_eq!(compare("a", "a1"), Ordering::Less);
    }

    proptest! {
        #[test]
        fn equal_only_for_equal_strings(a in "[a0-9é-]{0,6}", b in "[a0-9é-]{0,6}") {
            prop_assert_eq!(compare(&a, &b) == Ordering::Equal, a == b);
            prop_assert_eq!(compare(&a, &b), compare(&b, &a).reverse());
        }
    }
}
