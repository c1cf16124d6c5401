//! Format specifications shared by `squeue -o` and `sinfo -o`:
//! `%[.][size]type` fields with free text between them, and `squeue -O`'s
//! `name[:[.][size]]` lists.
//!
//! A field is a one-character code; each command says which codes it knows,
//! so one parser serves both and an unknown code is refused with the
//! command's own message.

use std::fmt;

/// One piece of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// Text printed as it is, in the header and in every row.
    Literal(String),
    /// A column.
    Field {
        /// The field's code letter (`i` for `%i`).
        code: char,
        /// Width in characters; the value is padded or cut to it. `None`
        /// prints the value whole.
        width: Option<usize>,
        /// Right-justify (the `.` in `%.10i`).
        right: bool,
    },
}

/// A format that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// A `%` code the command does not know.
    #[error("invalid {what} format specification: {code}")]
    UnknownCode { what: &'static str, code: String },
    /// A `-O` name the command does not know.
    #[error("invalid {what} format specification: {name}")]
    UnknownName { what: &'static str, name: String },
    /// A sort key the command does not know.
    #[error("invalid sort specification: {key}")]
    UnknownSortKey { key: String },
}

/// Widths beyond this are clamped; nobody needs a column this wide and it
/// keeps `%99999999999i` from allocating gigabytes.
pub(crate) const MAX_WIDTH: usize = 4096;

/// Parses a `%`-format. `known` says whether a code letter is a field.
/// An unknown code is an error ([`parse_lenient`] goes on instead).
pub fn parse(
    spec: &str,
    what: &'static str,
    known: impl Fn(char) -> bool,
) -> Result<Vec<Item>, FormatError> {
    let (items, unknown) = parse_lenient(spec, known);
    match unknown.into_iter().next() {
        Some(code) => Err(FormatError::UnknownCode { what, code }),
        None => Ok(items),
    }
}

/// [`parse`] as squeue and sinfo read `-o`. The format is cut at every run
/// of `%` (as C's `strtok` cuts it), so `%%` is no escape and a `%` at the
/// end is dropped; text before the first `%` is printed as it is, and
/// every later piece is `[.][size]code` followed by text. A piece whose
/// code is unknown (`-` in `%-20j` among them: Slurm has no left-justify
/// flag) is kept as the text it was written as, and its code returned so
/// that the command can report it, once per place it appears; the code is
/// empty when the piece ends before one (`%5`).
pub fn parse_lenient(spec: &str, known: impl Fn(char) -> bool) -> (Vec<Item>, Vec<String>) {
    let mut items = Vec::new();
    let mut unknown = Vec::new();
    let mut text = String::new();
    let mut pieces = spec.split('%').filter(|p| !p.is_empty());
    if !spec.starts_with('%') {
        text.extend(pieces.next());
    }
    for piece in pieces {
        let (right, rest) = match piece.strip_prefix('.') {
            Some(rest) => (true, rest),
            None => (false, piece),
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let width = rest[..digits].bytes().fold(0usize, |w, d| {
            w.saturating_mul(10)
                .saturating_add(usize::from(d - b'0'))
                .min(MAX_WIDTH)
        });
        let mut after = rest[digits..].chars();
        match after.next() {
            Some(code) if known(code) => {
                if !text.is_empty() {
                    items.push(Item::Literal(std::mem::take(&mut text)));
                }
                // A size of 0 is no size, as in Slurm: the value is whole.
                let width = (width > 0).then_some(width);
                items.push(Item::Field { code, width, right });
                text.push_str(after.as_str());
            }
            code => {
                unknown.push(code.map(String::from).unwrap_or_default());
                text.push('%');
                text.push_str(piece);
            }
        }
    }
    if !text.is_empty() {
        items.push(Item::Literal(text));
    }
    (items, unknown)
}

/// The size of one `-O` field, read as C's `atoi` reads what follows the
/// `:` (and the `.` that right-justifies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongSize {
    /// No `:`: the command's default width, left-justified.
    Default,
    /// `:N`; `None` for a size of 0 or none at all, the whole value.
    Width(Option<usize>),
    /// A negative size (`:-5`). squeue prints the whole value and a space,
    /// sinfo leaves the column out; both still print the field's suffix.
    Negative,
}

/// One comma-separated `name[:[.][size][suffix]]` item of a `-O` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongField<'a> {
    pub name: &'a str,
    pub size: LongSize,
    pub right: bool,
    /// Text printed after the column, in the header and every row: what
    /// follows the size (`|` in `name:10|`).
    pub suffix: &'a str,
}

/// Splits a `-O` list into its fields (empty items are skipped). The size
/// is C's `atoi` kept to an `int`: blanks and a sign may lead, and a size
/// that wraps to a negative `int` is negative, as in Slurm.
pub fn long_fields(spec: &str) -> impl Iterator<Item = LongField<'_>> {
    spec.split(',').filter(|p| !p.is_empty()).map(|part| {
        let Some((name, modifier)) = part.split_once(':') else {
            return LongField {
                name: part,
                size: LongSize::Default,
                right: false,
                suffix: "",
            };
        };
        let (right, size_text) = match modifier.strip_prefix('.') {
            Some(rest) => (true, rest),
            None => (false, modifier),
        };
        let (_, suffix, _) = crate::opts::strtol(size_text);
        let size = match super::checks::atoi(size_text) {
            n if n < 0 => LongSize::Negative,
            n => LongSize::Width(
                usize::try_from(n)
                    .ok()
                    .filter(|w| *w > 0)
                    .map(|w| w.min(MAX_WIDTH)),
            ),
        };
        LongField {
            name,
            size,
            right,
            suffix,
        }
    })
}

/// Parses a squeue `-O` list: comma-separated `name[:[.][size][suffix]]`.
/// `lookup` maps a name (any case) to a field code; a field without a size
/// is `default_width` wide and left-justified. An unknown name is an error
/// ([`parse_long_lenient`] goes on instead).
pub fn parse_long(
    spec: &str,
    what: &'static str,
    default_width: usize,
    lookup: impl Fn(&str) -> Option<char>,
) -> Result<Vec<Item>, FormatError> {
    let (items, unknown) = parse_long_lenient(spec, default_width, lookup);
    match unknown.into_iter().next() {
        Some(name) => Err(FormatError::UnknownName { what, name }),
        None => Ok(items),
    }
}

/// [`parse_long`] as squeue reads `-O`: a name it does not know is
/// returned, to be reported, and leaves no column, but its suffix is still
/// printed, as in Slurm (`bogus:5|` prints `|`).
pub fn parse_long_lenient(
    spec: &str,
    default_width: usize,
    lookup: impl Fn(&str) -> Option<char>,
) -> (Vec<Item>, Vec<String>) {
    let mut items = Vec::new();
    let mut unknown = Vec::new();
    for field in long_fields(spec) {
        let right = field.right;
        match lookup(field.name.trim()) {
            None => unknown.push(field.name.to_owned()),
            Some(code) => {
                let width = match field.size {
                    LongSize::Default => Some(default_width),
                    LongSize::Width(w) => w,
                    LongSize::Negative => None,
                };
                items.push(Item::Field { code, width, right });
            }
        }
        let gap = match (lookup(field.name.trim()), field.size) {
            (Some(_), LongSize::Negative) => " ",
            _ => "",
        };
        let text = format!("{gap}{}", field.suffix);
        if text.is_empty() {
            continue;
        }
        match items.last_mut() {
            Some(Item::Literal(last)) => last.push_str(&text),
            _ => items.push(Item::Literal(text)),
        }
    }
    (items, unknown)
}

/// One key of a `-S` sort list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub code: char,
    pub descending: bool,
}

impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.descending {
            write!(f, "-{}", self.code)
        } else {
            write!(f, "{}", self.code)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn any(c: char) -> bool {
        c.is_ascii_alphabetic()
    }

    #[test]
    fn parses_width_and_justification() {
        let items = parse("%.18i %10j%5D|%R", "job", any).unwrap();
        assert_eq!(
            items,
            vec![
                Item::Field {
                    code: 'i',
                    width: Some(18),
                    right: true
                },
                Item::Literal(" ".into()),
                Item::Field {
                    code: 'j',
                    width: Some(10),
                    right: false
                },
                Item::Field {
                    code: 'D',
                    width: Some(5),
                    right: false
                },
                Item::Literal("|".into()),
                Item::Field {
                    code: 'R',
                    width: None,
                    right: false
                },
            ]
        );
    }

    #[test]
    fn percent_runs_cut_the_format_as_strtok_does() {
        // No `%%` escape: a run of `%` is one cut, a trailing `%` is dropped.
        let (items, unknown) = parse_lenient("a%%i|%%%j|%%", any);
        assert!(unknown.is_empty());
        let field = |code| Item::Field {
            code,
            width: None,
            right: false,
        };
        assert_eq!(
            items,
            vec![
                Item::Literal("a".into()),
                field('i'),
                Item::Literal("|".into()),
                field('j'),
                Item::Literal("|".into()),
            ]
        );
        assert_eq!(parse_lenient("%", any), (vec![], vec![]));
        assert_eq!(parse_lenient("", any), (vec![], vec![]));
    }

    #[test]
    fn minus_is_no_flag_but_an_unknown_code() {
        // squeue -o "%-20j %.-5i|%5": every piece is kept as written.
        let (items, unknown) = parse_lenient("%-20j %.-5i|%5", any);
        assert_eq!(items, vec![Item::Literal("%-20j %.-5i|%5".into())]);
        assert_eq!(unknown, vec!["-", "-", ""]);
        let (items, unknown) = parse_lenient("%10-|%.|%i", any);
        assert_eq!(unknown, vec!["-", "|"]);
        assert_eq!(items[0], Item::Literal("%10-|%.|".into()));
    }

    #[test]
    fn long_sizes_read_as_atoi() {
        let sizes: Vec<_> = long_fields("a,b:,c:0,d: 5,e:+4,f:-5,g:.-2x,h:4294967291,i:-,j:3x5")
            .map(|f| (f.name, f.size, f.right, f.suffix))
            .collect();
        assert_eq!(
            sizes,
            vec![
                ("a", LongSize::Default, false, ""),
                ("b", LongSize::Width(None), false, ""),
                ("c", LongSize::Width(None), false, ""),
                ("d", LongSize::Width(Some(5)), false, ""),
                ("e", LongSize::Width(Some(4)), false, ""),
                ("f", LongSize::Negative, false, ""),
                ("g", LongSize::Negative, true, "x"),
                // The int cast wraps it to -5.
                ("h", LongSize::Negative, false, ""),
                ("i", LongSize::Width(None), false, "-"),
                ("j", LongSize::Width(Some(3)), false, "x5"),
            ]
        );
    }

    #[test]
    fn squeue_long_negative_size_is_whole_value_and_a_space() {
        let items = parse_long("name:-5y", "job", 20, |_| Some('j')).unwrap();
        assert_eq!(
            items,
            vec![
                Item::Field {
                    code: 'j',
                    width: None,
                    right: false
                },
                Item::Literal(" y".into()),
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn any_format_parses_without_panic(spec in "\\PC{0,40}") {
            let (items, unknown) = parse_lenient(&spec, any);
            // Every unknown piece is kept as text, so its `%` is printed.
            let percents = items
                .iter()
                .map(|i| match i {
                    Item::Literal(t) => t.matches('%').count(),
                    Item::Field { .. } => 0,
                })
                .sum::<usize>();
            proptest::prop_assert!(percents >= unknown.len());
            let _ = long_fields(&spec).count();
        }

        #[test]
        fn fields_and_text_round_trip(
            parts in proptest::collection::vec(("[a-z]", "[ |:]{0,3}"), 0..6)
        ) {
            let spec: String = parts.iter().map(|(c, t)| format!("%{c}{t}")).collect();
            let (items, unknown) = parse_lenient(&spec, any);
            proptest::prop_assert!(unknown.is_empty());
            let fields = items.iter().filter(|i| matches!(i, Item::Field { .. })).count();
            proptest::prop_assert_eq!(fields, parts.len());
        }
    }

    #[test]
    fn unknown_code_is_refused() {
        let err = parse("%+", "job", any).unwrap_err();
        assert_eq!(err.to_string(), "invalid job format specification: +");
    }

    #[test]
    fn huge_width_is_clamped() {
        let items = parse("%99999999999999999999999i", "job", any).unwrap();
        assert_eq!(
            items,
            vec![Item::Field {
                code: 'i',
                width: Some(MAX_WIDTH),
                right: false
            }]
        );
    }

    #[test]
    fn long_format_sizes_and_suffix() {
        let look = |n: &str| match n.to_ascii_lowercase().as_str() {
            "jobid" => Some('A'),
            "name" => Some('j'),
            _ => None,
        };
        let items = parse_long("JobID:.6,name:4|,Name", "job", 20, look).unwrap();
        assert_eq!(
            items,
            vec![
                Item::Field {
                    code: 'A',
                    width: Some(6),
                    right: true
                },
                Item::Field {
                    code: 'j',
                    width: Some(4),
                    right: false
                },
                Item::Literal("|".into()),
                Item::Field {
                    code: 'j',
                    width: Some(20),
                    right: false
                },
            ]
        );
        assert!(parse_long("nope", "job", 20, look).is_err());
    }

    #[test]
    fn zero_width_prints_whole() {
        let whole = Item::Field {
            code: 'i',
            width: None,
            right: false,
        };
        assert_eq!(parse("%0i", "job", any).unwrap(), vec![whole.clone()]);
        assert_eq!(
            parse_long("x:0", "job", 20, |_| Some('i')).unwrap(),
            vec![whole.clone()]
        );
        assert_eq!(
            parse_long("x:", "job", 20, |_| Some('i')).unwrap(),
            vec![whole]
        );
    }
}
