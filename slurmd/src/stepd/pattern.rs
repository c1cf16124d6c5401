//! `--output`/`--error`/`--input` file name patterns, expanded as Slurm's
//! batch step expands them.
//!
//! Users write these patterns in thousands of existing scripts, so every
//! letter keeps Slurm's meaning, including the odd ones: for a batch script
//! `%J` is the bare job id, `%s` is `batch`, and `%a` of a job that is not an
//! array is 4294967294. A number between `%` and the letter zero-pads
//! numeric values (`%4j` -> `0042`). A backslash anywhere turns expansion off
//! and escapes the character after it. Unknown letters are kept as written.
//! Slurm expands the whole path, so a relative pattern is joined to the
//! working directory first and a `%` in that directory's name counts too.

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

/// Slurm pads to at most ten digits; wider requests get ten.
const MAX_WIDTH: usize = 10;

/// Expands `pattern`. Never fails: whatever cannot be interpreted stays as
/// written, the way Slurm's scanner leaves it:
///
/// - `%%` is one `%`; a `%` before anything else is kept (`%q`, `%-`, a
///   trailing `%`).
/// - A width whose letter is not a field keeps only its last digit, and the
///   character after the digits is read afresh: `%10q` gives `0q`, `%2%j`
///   gives `2` and then the job id.
/// - With a backslash anywhere nothing is expanded; each backslash stands
///   for the character after it (`\\` is one backslash, a lone trailing
///   one disappears).
pub fn expand(pattern: &str, v: &PatternValues<'_>) -> String {
    if pattern.contains('\\') {
        return unescape(pattern);
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c != '%' {
            out.push(c);
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut width: usize = 0;
        while let Some(digit) = chars.get(j).and_then(|d| d.to_digit(10)) {
            width = width
                .saturating_mul(10)
                .saturating_add(digit as usize)
                .min(MAX_WIDTH);
            j += 1;
        }
        let has_width = j > i + 1;
        match chars.get(j).and_then(|&l| field(l, width, v)) {
            Some(value) => {
                out.push_str(&value);
                i = j + 1;
            }
            None if !has_width && chars.get(j) == Some(&'%') => {
                out.push('%');
                i = j + 1;
            }
            None => {
                // Keep the last digit (or the '%' itself) and read the next
                // character as ordinary text.
                out.push(chars[j - 1]);
                i = j;
            }
        }
    }
    out
}

/// The value of field `letter`, numbers zero-padded to `width`; `None` for
/// a letter that names no field.
fn field(letter: char, width: usize, v: &PatternValues<'_>) -> Option<String> {
    let num = |n: u32| format!("{n:0width$}");
    Some(match letter {
        'j' | 'J' => num(v.job_id),
        'A' => num(v.array_job_id),
        'a' => num(v.array_task_id),
        'n' => num(v.node_index),
        't' => num(v.task_id),
        's' => "batch".to_string(),
        'x' => v.job_name.to_string(),
        'u' => v.user_name.to_string(),
        'N' => v.host_name.to_string(),
        _ => return None,
    })
}

/// A pattern with a backslash: each backslash takes the next character
/// literally.
fn unescape(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
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
        assert_eq!(expand("a\\%j", &vals()), "a%j");
        assert_eq!(expand("%999999999999999999999j", &vals()), "0000000026");
        assert_eq!(
            expand("%12j-%0j-%3x-%3t", &vals()),
            "0000000026-26-job.sh-000"
        );
        assert_eq!(expand("é%jé", &vals()), "é26é");
    }

    /// What Slurm 22.05 named the files of job 26 (job name `job.sh`) for
    /// these `--output` values.
    #[test]
    fn odd_patterns_read_as_slurm_reads_them() {
        for (pattern, want) in [
            ("out%", "out%"),
            ("out%12", "out2"),
            ("p-%3", "p-3"),
            ("p-%10q", "p-0q"),
            ("p-%5q", "p-5q"),
            ("p-%2%j", "p-226"),
            ("p-%2%%j", "p-2%j"),
            ("p-%1%", "p-1%"),
            ("p-%%5j", "p-%5j"),
            ("p-%-%.txt", "p-%-%.txt"),
            ("e\\\\x\\q%j", "e\\xq%j"),
            ("p-%j\\\\", "p-%j\\"),
            ("p-\\", "p-"),
        ] {
            assert_eq!(expand(pattern, &vals()), want, "{pattern}");
        }
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
