//! Runs of hosts and how Slurm merges and prints them.
//!
//! A compressed hostlist is a sequence of runs: a bare name (`login`) or a
//! prefix with consecutive numbers printed at a minimum width (`n` 1..=3,
//! width 2: `n01 n02 n03`). Compression appends one run at a time and merges
//! it into the last run when Slurm would; printing puts neighbouring runs
//! with the same prefix into one bracket (`n[1-3,5]`).

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::fmt::Write as _;

use super::natural;

/// Numbers `lo..=hi`, each printed with at least `width` digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Numbers {
    pub lo: u64,
    pub hi: u64,
    pub width: usize,
}

/// A bare host name, or a prefix followed by a range of numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub prefix: String,
    pub numbers: Option<Numbers>,
}

impl Run {
    /// Splits one host name into prefix and numeric suffix (`gpu01` is `gpu`,
    /// 1, width 2). A name without trailing digits, or whose trailing digits
    /// do not fit in 64 bits, is kept whole as a bare name: Slurm would clamp
    /// such a number, which silently renames the host.
    pub fn from_name(name: &str) -> Run {
        let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
        let split = name.len() - digits;
        let (prefix, suffix) = name.split_at(split);
        match suffix.parse::<u64>() {
            Ok(n) if digits > 0 => Run {
                prefix: prefix.to_owned(),
                numbers: Some(Numbers {
                    lo: n,
                    hi: n,
                    width: digits,
                }),
            },
            _ => Run {
                prefix: name.to_owned(),
                numbers: None,
            },
        }
    }

    /// The run split into one run per host, keeping prefix and width.
    pub fn into_singles(self) -> impl Iterator<Item = Run> {
        let (lo, hi, width) = match self.numbers {
            Some(n) => (n.lo, n.hi, Some(n.width)),
            None => (0, 0, None),
        };
        (lo..=hi).map(move |v| Run {
            prefix: self.prefix.clone(),
            numbers: width.map(|width| Numbers {
                lo: v,
                hi: v,
                width,
            }),
        })
    }

    /// Hosts in the run (1 for a bare name).
    pub fn count(&self) -> u64 {
        match self.numbers {
            Some(n) => n.hi.saturating_sub(n.lo).saturating_add(1),
            None => 1,
        }
    }

    /// Appends every host name of the run to `out`, in order.
    pub fn push_names(&self, out: &mut Vec<String>) {
        match self.numbers {
            None => out.push(self.prefix.clone()),
            Some(n) => {
                for v in n.lo..=n.hi {
                    out.push(format!("{}{:0w$}", self.prefix, v, w = n.width));
                }
            }
        }
    }
}

pub(crate) fn decimal_digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Zeros needed to print `n` with `width` digits.
fn padding(n: u64, width: usize) -> usize {
    width.saturating_sub(decimal_digits(n))
}

/// Slurm's rule for joining numbers of different widths into one run: the
/// widths are interchangeable when at least one of the two numbers prints the
/// same under either width (`n9` and `n10` join as `n[9-10]`; `n9` and `n010`
/// do not). On success the width that mattered is copied to the other side.
fn widths_combine(n: u64, wn: &mut usize, m: u64, wm: &mut usize) -> bool {
    if *wn == *wm {
        return true;
    }
    let n_same = padding(n, *wn) == padding(n, *wm);
    let m_same = padding(m, *wm) == padding(m, *wn);
    match (n_same, m_same) {
        (false, false) => false,
        (false, true) => {
            *wm = *wn;
            true
        }
        (true, _) => {
            *wn = *wm;
            true
        }
    }
}

/// Joins `next` onto `prev` when `next` continues it: same prefix, numbers
/// consecutive, compatible widths. Returns `next` back when it does not.
fn join(prev: &mut Run, next: Run) -> Option<Run> {
    if prev.prefix != next.prefix {
        return Some(next);
    }
    let (Some(p), Some(mut q)) = (prev.numbers.as_mut(), next.numbers) else {
        return Some(next);
    };
    if p.hi.checked_add(1) != Some(q.lo) || !widths_combine(p.lo, &mut p.width, q.lo, &mut q.width)
    {
        return Some(next);
    }
    p.hi = q.hi;
    None
}

/// Appends `run`, merging it into the last run when it continues it.
pub(crate) fn push(runs: &mut Vec<Run>, run: Run) {
    let leftover = match runs.last_mut() {
        Some(last) => join(last, run),
        None => Some(run),
    };
    if let Some(run) = leftover {
        runs.push(run);
    }
}

/// Merges neighbouring runs from the back, as Slurm does after sorting.
pub(crate) fn collapse(runs: Vec<Run>) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::with_capacity(runs.len());
    for mut prev in runs.into_iter().rev() {
        if let Some(next) = out.pop() {
            if let Some(unjoined) = join(&mut prev, next) {
                out.push(unjoined);
            }
        }
        out.push(prev);
    }
    out.reverse();
    out
}

/// Slurm's comparison of two runs: prefix in natural order, a bare name
/// before numbered names with the same prefix, then by lower bound when the
/// widths are compatible and by width when they are not (`n[1-2]` before
/// `n[01-02]`). Like Slurm's it adjusts compatible widths as it goes and is
/// not transitive for odd mixes of widths, so it is only used by [`sort`],
/// which cannot be upset by that.
fn slurm_cmp(a: &mut Run, b: &mut Run) -> Ordering {
    natural::compare(&a.prefix, &b.prefix)
        .then_with(|| a.numbers.is_some().cmp(&b.numbers.is_some()))
        .then_with(|| match (a.numbers.as_mut(), b.numbers.as_mut()) {
            (Some(x), Some(y)) => {
                if widths_combine(x.lo, &mut x.width, y.lo, &mut y.width) {
                    x.lo.cmp(&y.lo)
                } else {
                    x.width.cmp(&y.width)
                }
            }
            _ => Ordering::Equal,
        })
}

/// Sorts runs the way Slurm's hostlist sort does. Slurm hands its
/// comparison to the C library's `qsort`, which in glibc is a top-down merge
/// sort (left half `n / 2`, ties taken from the left). Doing exactly the
/// same steps gives the same order even where the comparison is not a total
/// order, and never fails on any input.
pub(crate) fn sort(mut runs: Vec<Run>) -> Vec<Run> {
    if runs.len() <= 1 {
        return runs;
    }
    let right = runs.split_off(runs.len() / 2);
    let mut left = VecDeque::from(sort(runs));
    let mut right = VecDeque::from(sort(right));
    let mut out = Vec::with_capacity(left.len() + right.len());
    while let (Some(l), Some(r)) = (left.front_mut(), right.front_mut()) {
        let next = if slurm_cmp(l, r) == Ordering::Greater {
            right.pop_front()
        } else {
            left.pop_front()
        };
        out.extend(next);
    }
    out.extend(left);
    out.extend(right);
    out
}

/// Whether Slurm could merge or split `a` and `b` against each other: same
/// prefix, both numbered, compatible widths.
fn compatible(a: &Run, b: &Run) -> bool {
    match (a.numbers, b.numbers) {
        (Some(mut x), Some(mut y)) => {
            a.prefix == b.prefix && widths_combine(x.lo, &mut x.width, y.lo, &mut y.width)
        }
        _ => false,
    }
}

/// Resolves overlapping runs after sorting (`n[1-5],n[3-7]`).
///
/// Slurm splits each overlapping pair into the part before, single hosts for
/// the overlap (twice) and the part after, and repeats until nothing
/// overlaps; merging afterwards then gives `n[1-3,3-4,4-5,5-7]`. That loop
/// is quadratic. Its outcome is the same as taking every block of
/// neighbouring compatible runs that holds an overlap apart into single
/// hosts, ordered by number, which is what is done here; blocks without an
/// overlap are left untouched, as Slurm leaves them.
pub(crate) fn coalesce(runs: Vec<Run>) -> Vec<Run> {
    let mut out = Vec::with_capacity(runs.len());
    let mut block: Vec<Run> = Vec::new();
    let mut overlaps = false;
    let flush = |block: &mut Vec<Run>, overlaps: bool, out: &mut Vec<Run>| {
        if overlaps {
            let mut singles: Vec<Run> = block.drain(..).flat_map(Run::into_singles).collect();
            // Stable, so equal numbers keep the order of their runs.
            singles.sort_by_key(|r| r.numbers.map_or(0, |n| n.lo));
            out.extend(singles);
        } else {
            out.append(block);
        }
    };
    for run in runs {
        match block.last() {
            Some(last) if compatible(last, &run) => {
                if let (Some(p), Some(q)) = (last.numbers, run.numbers) {
                    overlaps |= p.hi > q.lo;
                }
            }
            Some(_) => {
                flush(&mut block, overlaps, &mut out);
                overlaps = false;
            }
            None => {}
        }
        block.push(run);
    }
    flush(&mut block, overlaps, &mut out);
    out
}

/// Sorts, resolves overlaps and merges, as `hostlistsorted` does.
pub(crate) fn sorted(runs: Vec<Run>) -> Vec<Run> {
    collapse(coalesce(sort(runs)))
}

/// Two neighbouring runs share one bracket when they have the same prefix
/// and both are numbered; widths do not matter (`n[1,01]`).
fn same_bracket(a: &Run, b: &Run) -> bool {
    a.prefix == b.prefix && a.numbers.is_some() && b.numbers.is_some()
}

/// Prints runs as Slurm's ranged string: `gpu[01-02],n[1-3,5],login`.
pub(crate) fn format(runs: &[Run]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < runs.len() {
        if i > 0 {
            out.push(',');
        }
        let first = &runs[i];
        let bracket = first.count() > 1
            || runs
                .get(i + 1)
                .is_some_and(|next| same_bracket(first, next));
        out.push_str(&first.prefix);
        if bracket {
            out.push('[');
        }
        loop {
            if let Some(n) = runs[i].numbers {
                // Writing to a String cannot fail.
                let _ = write!(out, "{:0w$}", n.lo, w = n.width);
                if n.hi > n.lo {
                    let _ = write!(out, "-{:0w$}", n.hi, w = n.width);
                }
            }
            i += 1;
            if i < runs.len() && same_bracket(&runs[i - 1], &runs[i]) {
                out.push(',');
            } else {
                break;
            }
        }
        if bracket {
            out.push(']');
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn runs_of(names: &[&str]) -> Vec<Run> {
        let mut runs = Vec::new();
        for name in names {
            push(&mut runs, Run::from_name(name));
        }
        runs
    }

    #[test]
    fn from_name_splits_numeric_suffix() {
        let r = Run::from_name("gpu007");
        assert_eq!(r.prefix, "gpu");
        assert_eq!(
            r.numbers,
            Some(Numbers {
                lo: 7,
                hi: 7,
                width: 3
            })
        );
        assert_eq!(Run::from_name("n1b").numbers, None);
        assert_eq!(Run::from_name("").numbers, None);
        assert_eq!(Run::from_name("123").prefix, "");
        let huge = Run::from_name("n99999999999999999999");
        assert_eq!(huge.numbers, None);
        assert_eq!(huge.prefix, "n99999999999999999999");
    }

    #[test]
    fn widths_combine_follows_slurm() {
        let (mut a, mut b) = (1, 2);
        assert!(widths_combine(9, &mut a, 10, &mut b));
        assert_eq!((a, b), (1, 1));
        let (mut a, mut b) = (1, 3);
        assert!(!widths_combine(9, &mut a, 10, &mut b));
        let (mut a, mut b) = (1, 2);
        assert!(!widths_combine(1, &mut a, 2, &mut b));
    }

    #[test]
    fn format_matches_slurm() {
        assert_eq!(format(&runs_of(&["n1", "n2", "n3", "n5"])), "n[1-3,5]");
        assert_eq!(format(&runs_of(&["n1", "n01"])), "n[1,01]");
        assert_eq!(format(&runs_of(&["n1", "n", "n2"])), "n1,n,n2");
        assert_eq!(format(&runs_of(&["n9", "n10"])), "n[9-10]");
        assert_eq!(format(&runs_of(&["n9", "n010"])), "n[9,010]");
        assert_eq!(format(&runs_of(&["n007"])), "n007");
        assert_eq!(format(&runs_of(&["1", "2", "3"])), "[1-3]");
        assert_eq!(format(&runs_of(&[])), "");
    }

    #[test]
    fn collapse_merges_from_the_back() {
        let runs = collapse(vec![
            Run::from_name("n1"),
            Run::from_name("n1"),
            Run::from_name("n2"),
            Run::from_name("n2"),
        ]);
        assert_eq!(format(&runs), "n[1,1-2,2]");
    }
}
