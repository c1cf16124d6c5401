//! Slurm's compressed per-node count lists: `2(x3),1`.
//!
//! `SLURM_JOB_CPUS_PER_NODE`, `SLURM_TASKS_PER_NODE` and
//! `SLURM_STEP_TASKS_PER_NODE` list one count per allocated node, in node
//! order, with runs of equal counts written `count(xrepeat)`: CPUs `[2, 2]`
//! are `2(x2)`, tasks `[2, 1]` are `2,1`, a single node is a bare number.
//!
//! The scheduler writes them for the allocations it makes, slurmd for the
//! job's environment, scontrol for a resized job's environment files, and
//! srun reads `SLURM_TASKS_PER_NODE` back inside an allocation.

use thiserror::Error;

/// Longest list [`expand_counts`] produces, so a hostile `1(x4294967295)`
/// cannot exhaust memory. Far above any real node count.
pub const MAX_EXPANDED: usize = 1 << 20;

/// Writes counts in Slurm's compressed form: `[2, 2, 2, 1]` is `2(x3),1`.
/// An empty list is an empty string.
pub fn compress_counts(counts: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < counts.len() {
        let value = counts[i];
        let run = counts[i..].iter().take_while(|&&c| c == value).count();
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&value.to_string());
        if run > 1 {
            out.push_str(&format!("(x{run})"));
        }
        i += run;
    }
    out
}

/// Why a compressed count list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LayoutError {
    #[error("bad count list {input:?}: item {item:?} is not N or N(xM)")]
    BadItem { input: String, item: String },
    #[error("count list {input:?} expands to more than {max} entries")]
    TooLong { input: String, max: usize },
}

/// Reads Slurm's compressed form back: `2(x3),1` is `[2, 2, 2, 1]`. An empty
/// string is an empty list.
pub fn expand_counts(input: &str) -> Result<Vec<u32>, LayoutError> {
    let mut out = Vec::new();
    if input.is_empty() {
        return Ok(out);
    }
    let bad = |item: &str| LayoutError::BadItem {
        input: input.to_string(),
        item: item.to_string(),
    };
    for item in input.split(',') {
        let (value, repeat) = match item.split_once("(x") {
            Some((v, rest)) => {
                let r = rest.strip_suffix(')').ok_or_else(|| bad(item))?;
                (v, parse_number(r).ok_or_else(|| bad(item))?)
            }
            None => (item, 1),
        };
        let value = parse_number(value).ok_or_else(|| bad(item))?;
        let value = u32::try_from(value).map_err(|_| bad(item))?;
        if repeat == 0 {
            return Err(bad(item));
        }
        let room = MAX_EXPANDED - out.len();
        let repeat = usize::try_from(repeat).unwrap_or(usize::MAX);
        if repeat > room {
            return Err(LayoutError::TooLong {
                input: input.to_string(),
                max: MAX_EXPANDED,
            });
        }
        out.extend(std::iter::repeat_n(value, repeat));
    }
    Ok(out)
}

/// Plain ASCII decimal digits only (no sign, no spaces), as Slurm writes them.
fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_forms() {
        // env_nodes2_ntasks4.out: SLURM_JOB_CPUS_PER_NODE=2(x2), SLURM_TASKS_PER_NODE=2(x2)
        assert_eq!(compress_counts(&[2, 2]), "2(x2)");
        // env_nodes1_ntasks2.out and env_plain_job.out
        assert_eq!(compress_counts(&[2]), "2");
        assert_eq!(compress_counts(&[1]), "1");
    }

    #[test]
    fn mixed_runs() {
        assert_eq!(compress_counts(&[2, 2, 2, 1]), "2(x3),1");
        assert_eq!(compress_counts(&[2, 1]), "2,1");
        assert_eq!(compress_counts(&[1, 2, 2, 1, 1]), "1,2(x2),1(x2)");
        assert_eq!(compress_counts(&[]), "");
        assert_eq!(compress_counts(&[u32::MAX]), "4294967295");
    }

    #[test]
    fn expand_examples() {
        assert_eq!(expand_counts("2(x3),1"), Ok(vec![2, 2, 2, 1]));
        assert_eq!(expand_counts("4"), Ok(vec![4]));
        assert_eq!(expand_counts(""), Ok(vec![]));
    }

    #[test]
    fn expand_rejects_garbage() {
        for bad in [
            ",",
            "2,",
            "x",
            "2(x)",
            "2(x0)",
            "2(3)",
            "2(x3",
            "-1",
            "+1",
            " 1",
            "1 ",
            "2(x3)(x2)",
            "4294967296",
            "١",
            "2(x٣)",
        ] {
            assert!(
                matches!(expand_counts(bad), Err(LayoutError::BadItem { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(
            expand_counts("1(x4294967295)"),
            Err(LayoutError::TooLong { .. })
        ));
        assert!(matches!(
            expand_counts("1(x99999999999999999999999)"),
            Err(LayoutError::BadItem { .. })
        ));
    }

    proptest! {
        #[test]
        fn round_trip(counts in prop::collection::vec(0u32..5, 0..40)) {
            prop_assert_eq!(expand_counts(&compress_counts(&counts)), Ok(counts));
        }

        #[test]
        fn expand_never_panics(s in "[0-9(x),]{0,30}|.{0,30}") {
            let _ = expand_counts(&s);
        }
    }
}
