//! `--output`/`--error`/`--input` file name patterns, expanded as Slurm's
//! batch step expands them.
//!
//! Users write these patterns in thousands of existing scripts, so every
//! letter keeps Slurm's meaning, including the odd ones: for a batch script
//! `%J` is the bare job id, `%s` is `batch`, and `%a` of a job that is not an
//! array is 4294967294. A number between `%` and the letter zero-pads
//! numeric values (`%4j` -> `0042`). A backslash anywhere turns expansion off
//! and is itself removed. Unknown letters are kept as written.

/// Values the pattern letters stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternValues<'a> {
    pub job_id: u32,
    /// `%A`: the array's master job id, else the job id.
    pub array_job_id: u32,
    /// `%a`: the array task id, else [`NOT_AN_ARRAY_TASK`].
    pub array_task_id: u32,
    pub job_name: &'a str,
    pub user_name: &'a str,
    /// `%N`: host name of the node running the script.
    pub host_name: &'a str,
    /// `%n`: node index within the job (0 for the batch node).
    pub node_index: u32,
    /// `%t`: task rank (0 for the batch script).
    pub task_id: u32,
}

/// What Slurm substitutes for `%a` in a job that is not part of an array.
pub const NOT_AN_ARRAY_TASK: u32 = 4_294_967_294;

/// Widths above this are clamped, so `%99999999j` cannot allocate gigabytes.
const MAX_WIDTH: usize = 64;

/// Expands `pattern`. Never fails: whatever cannot be interpreted stays as
/// written.
pub fn expand(pattern: &str, v: &PatternValues<'_>) -> String {
    if pattern.contains('\\') {
        return pattern.replace('\\', "");
    }
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut width: usize = 0;
        while let Some(&(_, d)) = chars.peek() {
            let Some(digit) = d.to_digit(10) else { break };
            width = width
                .saturating_mul(10)
                .saturating_add(digit as usize)
                .min(MAX_WIDTH);
            chars.next();
        }
        let Some((i, letter)) = chars.next() else {
            // A trailing '%' (possibly with digits) is kept verbatim.
            out.push_str(&pattern[start..]);
            break;
        };
        let num = |n: u32| format!("{n:0width$}");
        match letter {
            '%' => out.push('%'),
            'j' | 'J' => out.push_str(&num(v.job_id)),
            'A' => out.push_str(&num(v.array_job_id)),
            'a' => out.push_str(&num(v.array_task_id)),
            'n' => out.push_str(&num(v.node_index)),
            't' => out.push_str(&num(v.task_id)),
            's' => out.push_str("batch"),
            'x' => out.push_str(v.job_name),
            'u' => out.push_str(v.user_name),
            'N' => out.push_str(v.host_name),
            _ => out.push_str(&pattern[start..i + letter.len_utf8()]),
        }
    }
    out
}

/// Slurm's default `--output` for a batch job.
pub fn default_output(is_array: bool) -> &'static str {
    if is_array {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn vals() -> PatternValues<'static> {
        PatternValues {
            job_id: 26,
            array_job_id: 26,
            array_task_id: NOT_AN_ARRAY_TASK,
            job_name: "job.sh",
            user_name: "alice",
            host_name: "vm",
            node_index: 0,
            task_id: 0,
        }
    }

    #[test]
    fn golden_named_output() {
        // output_file_naming golden: --output=named-%j-%N.out gave named-26-vm.out
        assert_eq!(expand("named-%j-%N.out", &vals()), "named-26-vm.out");
        assert_eq!(expand(default_output(false), &vals()), "slurm-26.out");
    }

    #[test]
    fn array_default_and_letters() {
        let v = PatternValues {
            job_id: 17,
            array_job_id: 15,
            array_task_id: 1,
            ..vals()
        };
        assert_eq!(expand(default_output(true), &v), "slurm-15_1.out");
        assert_eq!(
            expand("%x.%u.%J.%s.%n.%t.%%", &v),
            "job.sh.alice.17.batch.0.0.%"
        );
        assert_eq!(expand("%a", &vals()), "4294967294");
    }

    #[test]
    fn widths_unknowns_and_escapes() {
        assert_eq!(
            expand(
                "%4j-%2a",
                &PatternValues {
                    array_task_id: 3,
                    ..vals()
                }
            ),
            "0026-03"
        );
        assert_eq!(expand("%q%z", &vals()), "%q%z");
        assert_eq!(expand("out%", &vals()), "out%");
        assert_eq!(expand("out%12", &vals()), "out%12");
        assert_eq!(expand("a\\%j", &vals()), "a%j");
        assert_eq!(expand("%999999999999999999999j", &vals()).len(), MAX_WIDTH);
        assert_eq!(expand("é%jé", &vals()), "é26é");
    }

    proptest! {
        #[test]
        fn never_panics_and_plain_text_is_kept(s in ".*") {
            let out = expand(&s, &vals());
            if !s.contains('%') && !s.contains('\\') {
                prop_assert_eq!(out, s);
            }
        }
    }
}
