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
    UnknownCode { what: &'static str, code: char },
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
/// `%%` is a literal percent sign; a `%` at the very end is kept as text.
/// An unknown code is an error ([`parse_lenient`] goes on instead).
pub fn parse(
    spec: &str,
    what: &'static str,
    known: impl Fn(char) -> bool,
) -> Result<Vec<Item>, FormatError> {
    let (items, unknown) = parse_lenient(spec, known);
    match unknown.first() {
        Some(&code) => Err(FormatError::UnknownCode { what, code }),
        None => Ok(items),
    }
}

/// [`parse`] as squeue and sinfo read `-o`: an unknown code is kept as
/// the text it was written as (`%10+`), and returned so that the command
/// can report it, once per place it appears.
pub fn parse_lenient(spec: &str, known: impl Fn(char) -> bool) -> (Vec<Item>, Vec<char>) {
    let mut items = Vec::new();
    let mut unknown = Vec::new();
    let mut text = String::new();
    let mut chars = spec.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        let mut right = false;
        while let Some(&(_, flag)) = chars.peek() {
            match flag {
                '.' => right = true,
                '-' | '#' => {}
                _ => break,
            }
            chars.next();
        }
        let mut width: Option<usize> = None;
        while let Some(d) = chars.peek().and_then(|(_, c)| c.to_digit(10)) {
            let w = width
                .unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(d as usize);
            width = Some(w.min(MAX_WIDTH));
            chars.next();
        }
        // A size of 0 is no size, as in Slurm: the value is printed whole.
        let width = width.filter(|w| *w > 0);
        match chars.next() {
            None => text.push('%'),
            Some((_, '%')) => text.push('%'),
            Some((_, code)) if known(code) => {
                if !text.is_empty() {
                    items.push(Item::Literal(std::mem::take(&mut text)));
                }
                items.push(Item::Field { code, width, right });
            }
            Some((end, code)) => {
                unknown.push(code);
                text.push_str(&spec[at..end + code.len_utf8()]);
            }
        }
    }
    if !text.is_empty() {
        items.push(Item::Literal(text));
    }
    (items, unknown)
}

/// Parses a `-O` list: comma-separated `name[:[.][size][suffix]]`.
/// `lookup` maps a name (any case) to a field code; a field without a size
/// is `default_width` wide and left-justified.
pub fn parse_long(
    spec: &str,
    what: &'static str,
    default_width: usize,
    lookup: impl Fn(&str) -> Option<char>,
) -> Result<Vec<Item>, FormatError> {
    let mut items = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        let (name, modifier) = match part.split_once(':') {
            Some((n, m)) => (n, Some(m)),
            None => (part, None),
        };
        let code = lookup(name.trim()).ok_or_else(|| FormatError::UnknownName {
            what,
            name: name.to_owned(),
        })?;
        let mut width = Some(default_width);
        let mut right = false;
        let mut suffix = "";
        if let Some(m) = modifier {
            let m = match m.strip_prefix('.') {
                Some(rest) => {
                    right = true;
                    rest
                }
                None => m,
            };
            let digits = m.bytes().take_while(u8::is_ascii_digit).count();
            // The size is read as C's atoi: `name:` and `name:0` are size
            // 0, which prints the value whole.
            let w = m[..digits]
                .parse::<usize>()
                .unwrap_or(if digits > 0 { MAX_WIDTH } else { 0 });
            width = (w > 0).then(|| w.min(MAX_WIDTH));
            suffix = &m[digits..];
        }
        items.push(Item::Field { code, width, right });
        if !suffix.is_empty() {
            items.push(Item::Literal(suffix.to_owned()));
        }
    }
    Ok(items)
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

/// Parses a sort list such as `P,t,-p` or `+i`. A `#` (sinfo's "in
/// configuration order") is accepted and ignored.
pub fn parse_sort(spec: &str, known: impl Fn(char) -> bool) -> Result<Vec<SortKey>, FormatError> {
    let mut keys = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut descending = false;
        let mut rest = part;
        loop {
            if let Some(r) = rest.strip_prefix('-') {
                descending = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix('+') {
                descending = false;
                rest = r;
            } else if let Some(r) = rest.strip_prefix('#') {
                rest = r;
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        match (chars.next(), chars.next()) {
            (Some(code), None) if known(code) => keys.push(SortKey { code, descending }),
            _ => {
                return Err(FormatError::UnknownSortKey {
                    key: part.to_owned(),
                })
            }
        }
    }
    Ok(keys)
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
        let items = parse("%.18i %-10j%5D|%R", "job", any).unwrap();
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
    fn percent_escapes_and_trailing_percent() {
        let items = parse("a%%b%", "job", any).unwrap();
        assert_eq!(items, vec![Item::Literal("a%b%".into())]);
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

    #[test]
    fn sort_keys() {
        let keys = parse_sort("P,t,-p", any).unwrap();
        assert_eq!(keys.len(), 3);
        assert!(keys[2].descending);
        assert!(parse_sort("xy", any).is_err());
        assert!(parse_sort("", any).unwrap().is_empty());
    }
}
