//! `squeue --yaml` and `sinfo --yaml` as Slurm 22.05 prints them.
//!
//! Slurm builds one document and hands it either to its JSON serializer or
//! to libyaml, so both dumps hold the same data. Here the JSON text that
//! [`super::json`] lays out (by hand, for its byte layout) is read back
//! into a [`Value`] and written as YAML, so the two can never disagree and
//! a field added to the JSON appears in the YAML too.
//!
//! The YAML layout is what libyaml's emitter produces with Slurm's
//! settings, and scripts compare it as text:
//!
//! - `%YAML 1.1`, then `--- !!map`, and `...` after the last node;
//! - every node tagged (`!!map`, `!!seq`, `!!str`, `!!int`, `!!float`,
//!   `!!bool`, `!!null`), keys included; because the tag says what a
//!   scalar is, a string such as `true` or `123` needs no quotes;
//! - block style, two spaces per level, a sequence under a key at the
//!   key's own indentation, `[]` and `{}` for empty collections;
//! - a string plain when YAML allows it, else in single quotes, else in
//!   double quotes with escapes; anything outside printable ASCII is
//!   escaped (`\xE9`, `\u65E5`), because Slurm leaves libyaml's unicode
//!   output off;
//! - lines folded at a space once they pass column 80 (not in keys);
//! - an empty string written as `!!null null` (its JSON is `""`), and a
//!   float as C's `%lf` writes it (`0.000000`).

use std::fmt::Write as _;

/// A JSON or YAML document: the tree both dumps are written from.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// Wide enough for every `i64` and `u64` field.
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Value>),
    /// Members in document order: Slurm's field order is part of the
    /// output.
    Map(Vec<(String, Value)>),
}

/// Why a JSON text could not be read: it is not JSON, or goes beyond
/// what [`from_json`] accepts. Offsets are in bytes from the start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("json document: expected {expected} at byte {offset}, found {found}")]
    Unexpected {
        offset: usize,
        expected: &'static str,
        found: String,
    },
    #[error("json document: bad escape in a string at byte {offset}")]
    BadEscape { offset: usize },
    #[error("json document: integer {text} at byte {offset} is out of range")]
    IntOutOfRange { offset: usize, text: String },
    #[error("json document: nested deeper than {limit} levels at byte {offset}")]
    TooDeep { offset: usize, limit: usize },
}

/// How deep [`from_json`] lets arrays and objects nest. Slurm's documents
/// nest fewer than ten levels; the limit keeps the recursion of reading and
/// writing bounded whatever the text.
pub const MAX_DEPTH: usize = 128;

/// The YAML of a JSON text: [`from_json`], then [`write`].
pub fn json_to_yaml(json: &str) -> Result<String, ReadError> {
    Ok(write(&from_json(json)?))
}

/// Reads one JSON value (RFC 8259), surrounded by white space only.
pub fn from_json(text: &str) -> Result<Value, ReadError> {
    let mut r = Reader { text, at: 0 };
    let value = r.value(0)?;
    r.skip_space();
    if r.at < text.len() {
        return Err(r.unexpected("the end of the document"));
    }
    Ok(value)
}

struct Reader<'a> {
    text: &'a str,
    /// Always at a character boundary.
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn unexpected(&self, expected: &'static str) -> ReadError {
        let found = match self.text.get(self.at..).and_then(|s| s.chars().next()) {
            Some(c) => format!("{c:?}"),
            None => "the end of the document".to_owned(),
        };
        ReadError::Unexpected {
            offset: self.at,
            expected,
            found,
        }
    }

    /// Takes `byte` (after white space) or fails naming `expected`.
    fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), ReadError> {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ReadError> {
        self.skip_space();
        match self.peek() {
            Some(b'{') | Some(b'[') if depth >= MAX_DEPTH => Err(ReadError::TooDeep {
                offset: self.at,
                limit: MAX_DEPTH,
            }),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'n') => self.word("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected("a value")),
        }
    }

    fn word(&mut self, word: &'static str, value: Value) -> Result<Value, ReadError> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.unexpected(word))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ReadError> {
        self.at += 1;
        let mut members = Vec::new();
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Map(members));
        }
        loop {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected("a member name"));
            }
            let key = self.string()?;
            self.expect(b':', "':'")?;
            members.push((key, self.value(depth + 1)?));
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Map(members));
                }
                _ => return Err(self.unexpected("',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ReadError> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Seq(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Seq(items));
                }
                _ => return Err(self.unexpected("',' or ']'")),
            }
        }
    }

    /// A string, the opening quote at `self.at`.
    fn string(&mut self) -> Result<String, ReadError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            // Copy the run up to the next quote, backslash or control
            // character at once: all three are ASCII, so the cut is at a
            // character boundary.
            let rest = &self.text[self.at..];
            let run = rest
                .bytes()
                .position(|b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(rest.len());
            out.push_str(&rest[..run]);
            self.at += run;
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => out.push(self.escape()?),
                _ => return Err(self.unexpected("'\"'")),
            }
        }
    }

    /// The character of the escape at `self.at` (the backslash).
    fn escape(&mut self) -> Result<char, ReadError> {
        let start = self.at;
        let bad = ReadError::BadEscape { offset: start };
        let c = match self.text.as_bytes().get(start + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let high = self.hex4(start + 2).ok_or(bad.clone())?;
                self.at = start + 6;
                let code = if (0xD800..0xDC00).contains(&high) {
                    // A high surrogate must be followed by `\u` and a low one.
                    if !self.text[self.at..].starts_with("\\u") {
                        return Err(bad);
                    }
                    let low = self.hex4(self.at + 2).ok_or(bad.clone())?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(bad);
                    }
                    self.at += 6;
                    0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    high
                };
                return char::from_u32(code).ok_or(bad);
            }
            _ => return Err(bad),
        };
        self.at = start + 2;
        Ok(c)
    }

    /// The four hex digits at byte `at`.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.text.get(at..at.checked_add(4)?)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(digits, 16).ok()
    }

    fn number(&mut self) -> Result<Value, ReadError> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let mut at = start;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        let int_start = at;
        if !digits(&mut at) || (bytes[int_start] == b'0' && at - int_start > 1) {
            self.at = int_start;
            return Err(self.unexpected("a number"));
        }
        let mut float = false;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            float = true;
            if !digits(&mut at) {
                self.at = at;
                return Err(self.unexpected("a digit"));
            }
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            float = true;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            if !digits(&mut at) {
                self.at = at;
                return Err(self.unexpected("a digit"));
            }
        }
        let text = &self.text[start..at];
        self.at = at;
        if float {
            // Any text of this shape parses; one too large is infinite.
            return text
                .parse()
                .map(Value::Float)
                .map_err(|_| ReadError::Unexpected {
                    offset: start,
                    expected: "a number",
                    found: text.to_owned(),
                });
        }
        text.parse()
            .map(Value::Int)
            .map_err(|_| ReadError::IntOutOfRange {
                offset: start,
                text: text.to_owned(),
            })
    }
}

/// Where libyaml folds a line: at a space once the column passes this.
const WIDTH: usize = 80;

/// libyaml writes a key as `? key` instead of `key:` when the key and its
/// tag are longer than this, or the key spans lines.
const MAX_SIMPLE_KEY: usize = 128;

/// The document as Slurm's YAML dump writes it. Collections are written
/// recursively, so the stack grows with the depth of the tree (at most
/// [`MAX_DEPTH`] for one [`from_json`] read).
pub fn write(doc: &Value) -> String {
    let mut w = Writer {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
    };
    w.indicator("%YAML", true, false, false);
    w.indicator("1.1", true, false, false);
    w.indent(0);
    w.indicator("---", true, false, false);
    w.node(doc, None, false);
    w.indent(0);
    w.indicator("...", true, false, false);
    w.indent(0);
    w.out
}

/// libyaml's output state, kept as it keeps it so that the same
/// decisions (a new line or not, a space or not, where to fold) come out.
struct Writer {
    out: String,
    /// Characters on the current line; everything written is ASCII.
    column: usize,
    /// Whether the last character written was white space (or nothing).
    whitespace: bool,
    /// Whether only indentation (or indicators like `- `) is on the line.
    indention: bool,
}

/// The indentation of a node's children: `parent` is the indentation of
/// the collection holding it (`None` at the top); `scalar` for the lines a
/// scalar folds onto; `indentless` for a sequence written at its key's
/// indentation.
fn child_indent(parent: Option<usize>, scalar: bool, indentless: bool) -> usize {
    match parent {
        None if scalar => 2,
        None => 0,
        Some(p) if indentless => p,
        Some(p) => p + 2,
    }
}

impl Writer {
    fn push(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.len();
    }

    fn push_char(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn newline(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Goes to column `indent`, on a new line unless the current one holds
    /// only indentation up to there.
    fn indent(&mut self, indent: usize) {
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.newline();
        }
        while self.column < indent {
            self.push_char(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn indicator(&mut self, text: &str, need_space: bool, is_space: bool, is_indention: bool) {
        if need_space && !self.whitespace {
            self.push_char(' ');
        }
        self.push(text);
        self.whitespace = is_space;
        self.indention = self.indention && is_indention;
    }

    fn tag(&mut self, suffix: &str) {
        if !self.whitespace {
            self.push_char(' ');
        }
        self.push("!!");
        self.push(suffix);
        self.whitespace = false;
        self.indention = false;
    }

    /// Writes `v`, held by a collection at indentation `parent` (`None` at
    /// the top); `in_map` when it is a mapping's value.
    fn node(&mut self, v: &Value, parent: Option<usize>, in_map: bool) {
        let scalar_indent = child_indent(parent, true, false);
        match v {
            Value::Null => self.plain_scalar("null", "null"),
            Value::Bool(b) => self.plain_scalar("bool", if *b { "true" } else { "false" }),
            Value::Int(i) => self.plain_scalar("int", &i.to_string()),
            Value::Float(f) => self.plain_scalar("float", &c_float(*f)),
            // Slurm writes an empty string as null.
            Value::Str(s) if s.is_empty() => self.plain_scalar("null", "null"),
            Value::Str(s) => {
                self.tag("str");
                self.string(s, scalar_indent, false);
            }
            Value::Seq(items) if items.is_empty() => {
                self.tag("seq");
                self.indicator("[", true, true, false);
                self.indicator("]", false, false, false);
            }
            Value::Map(members) if members.is_empty() => {
                self.tag("map");
                self.indicator("{", true, true, false);
                self.indicator("}", false, false, false);
            }
            Value::Seq(items) => {
                self.tag("seq");
                // Under a key the items start at the key's column
                // (`key: !!seq` then `- item`); the tag just written is
                // what makes libyaml choose this even after `? key`.
                let indent = child_indent(parent, false, in_map);
                for item in items {
                    self.indent(indent);
                    self.indicator("-", true, false, true);
                    self.node(item, Some(indent), false);
                }
            }
            Value::Map(members) => {
                self.tag("map");
                let indent = child_indent(parent, false, false);
                for (key, value) in members {
                    self.indent(indent);
                    let style = Style::of(key);
                    if style.multiline || key.len() + "!!str".len() > MAX_SIMPLE_KEY {
                        self.indicator("?", true, false, true);
                        self.tag("str");
                        self.string(key, indent + 2, false);
                        self.indent(indent);
                        self.indicator(":", true, false, true);
                    } else {
                        self.tag("str");
                        self.string(key, indent + 2, true);
                        self.indicator(":", false, false, false);
                    }
                    self.node(value, Some(indent), true);
                }
            }
        }
    }

    fn plain_scalar(&mut self, tag: &str, text: &str) {
        self.tag(tag);
        self.plain(text, 0, false);
    }

    /// A string in the first style that can hold it; `indent` is where
    /// folded lines continue, and a simple key is never folded.
    fn string(&mut self, s: &str, indent: usize, simple_key: bool) {
        let style = Style::of(s);
        if style.plain && !(s.is_empty() && simple_key) {
            self.plain(s, indent, !simple_key);
        } else if style.single_quoted {
            self.single_quoted(s, indent, !simple_key);
        } else {
            self.double_quoted(s, indent, !simple_key);
        }
    }

    /// Plain text (no line breaks, no leading or trailing space).
    fn plain(&mut self, s: &str, indent: usize, fold: bool) {
        if !self.whitespace {
            self.push_char(' ');
        }
        if self.column + s.len() <= WIDTH {
            // No space in it can be past the width: nothing to fold.
            self.push(s);
            self.whitespace = false;
            self.indention = false;
            return;
        }
        let mut after_space = false;
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c == ' ' {
                let next_is_space = chars.peek() == Some(&' ');
                if fold && !after_space && self.column > WIDTH && !next_is_space {
                    self.indent(indent);
                } else {
                    self.push_char(' ');
                }
                after_space = true;
            } else {
                self.push_char(c);
                self.indention = false;
                after_space = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    /// `'text'`: quotes doubled, a line break written as an empty line.
    fn single_quoted(&mut self, s: &str, indent: usize, fold: bool) {
        self.indicator("'", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let (mut after_space, mut after_break) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let inner = i > 0 && i + 1 < chars.len() && chars[i + 1] != ' ';
                if fold && !after_space && self.column > WIDTH && inner {
                    self.indent(indent);
                } else {
                    self.push_char(' ');
                }
                after_space = true;
            } else if c == '\n' {
                // The first break of a run is doubled: a single one would
                // read back as a space.
                if !after_break {
                    self.newline();
                }
                self.newline();
                self.indention = true;
                after_break = true;
            } else {
                if after_break {
                    self.indent(indent);
                }
                if c == '\'' {
                    self.push_char('\'');
                }
                self.push_char(c);
                self.indention = false;
                after_space = false;
                after_break = false;
            }
        }
        if after_break {
            self.indent(indent);
        }
        self.indicator("'", false, false, false);
    }

    /// `"text"` with escapes; a fold keeps a following space as `\ `.
    fn double_quoted(&mut self, s: &str, indent: usize, fold: bool) {
        self.indicator("\"", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let mut after_space = false;
        for (i, &c) in chars.iter().enumerate() {
            if needs_escape(c) {
                self.escape(c);
                after_space = false;
            } else if c == ' ' {
                let inner = i > 0 && i + 1 < chars.len();
                if fold && !after_space && self.column > WIDTH && inner {
                    self.indent(indent);
                    if chars[i + 1] == ' ' {
                        self.push_char('\\');
                    }
                } else {
                    self.push_char(' ');
                }
                after_space = true;
            } else {
                self.push_char(c);
                after_space = false;
            }
        }
        self.indicator("\"", false, false, false);
    }

    fn escape(&mut self, c: char) {
        let short = match c {
            '\0' => Some('0'),
            '\u{7}' => Some('a'),
            '\u{8}' => Some('b'),
            '\t' => Some('t'),
            '\n' => Some('n'),
            '\u{b}' => Some('v'),
            '\u{c}' => Some('f'),
            '\r' => Some('r'),
            '\u{1b}' => Some('e'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            '\u{85}' => Some('N'),
            '\u{a0}' => Some('_'),
            '\u{2028}' => Some('L'),
            '\u{2029}' => Some('P'),
            _ => None,
        };
        let start = self.out.len();
        let _ = match (short, u32::from(c)) {
            (Some(s), _) => write!(self.out, "\\{s}"),
            (None, v @ 0..=0xFF) => write!(self.out, "\\x{v:02X}"),
            (None, v @ 0x100..=0xFFFF) => write!(self.out, "\\u{v:04X}"),
            (None, v) => write!(self.out, "\\U{v:08X}"),
        };
        self.column += self.out.len() - start;
    }
}

/// Whether a double-quoted string writes `c` as an escape: everything but
/// printable ASCII, and the quote and backslash.
fn needs_escape(c: char) -> bool {
    !matches!(c, ' '..='~') || c == '"' || c == '\\'
}

/// A float as C's `%lf` writes it.
fn c_float(f: f64) -> String {
    if f.is_nan() {
        "nan".to_owned()
    } else {
        format!("{f:.6}")
    }
}

/// Which styles can hold a string, by libyaml's rules for block context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Style {
    plain: bool,
    single_quoted: bool,
    multiline: bool,
}

/// Line breaks as YAML counts them (only `\n` is printable ASCII; the
/// others are escaped anyway).
fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// White space, a break, or the end of the text (NUL included, as C sees
/// it).
fn is_blank_or_end(c: Option<char>) -> bool {
    match c {
        None | Some(' ' | '\t' | '\0') => true,
        Some(c) => is_break(c),
    }
}

impl Style {
    fn of(s: &str) -> Style {
        if s.is_empty() {
            return Style {
                plain: true,
                single_quoted: true,
                multiline: false,
            };
        }
        // `---` and `...` open or close a document.
        let mut indicator = s.starts_with("---") || s.starts_with("...");
        let (mut special, mut breaks) = (false, false);
        let (mut leading_space, mut trailing_space) = (false, false);
        let (mut leading_break, mut trailing_break) = (false, false);
        let (mut break_then_space, mut space_then_break) = (false, false);
        let (mut prev_space, mut prev_break) = (false, false);
        let mut preceded_by_blank = true;
        let mut chars = s.chars().peekable();
        let mut first = true;
        while let Some(c) = chars.next() {
            let next = chars.peek().copied();
            let followed_by_blank = is_blank_or_end(next);
            let last = next.is_none();
            if first {
                match c {
                    '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\''
                    | '"' | '%' | '@' | '`' => indicator = true,
                    '?' | ':' | '-' if followed_by_blank => indicator = true,
                    _ => {}
                }
            } else {
                match c {
                    ':' if followed_by_blank => indicator = true,
                    '#' if preceded_by_blank => indicator = true,
                    _ => {}
                }
            }
            if !matches!(c, '\n' | ' '..='~') {
                special = true;
            }
            if is_break(c) {
                breaks = true;
            }
            if c == ' ' {
                leading_space |= first;
                trailing_space |= last;
                break_then_space |= prev_break;
                (prev_space, prev_break) = (true, false);
            } else if is_break(c) {
                leading_break |= first;
                trailing_break |= last;
                space_then_break |= prev_space;
                (prev_space, prev_break) = (false, true);
            } else {
                (prev_space, prev_break) = (false, false);
            }
            preceded_by_blank = is_blank_or_end(Some(c));
            first = false;
        }
        let mixed = break_then_space || space_then_break;
        Style {
            plain: !(indicator
                || special
                || breaks
                || mixed
                || leading_space
                || trailing_space
                || leading_break
                || trailing_break),
            single_quoted: !(mixed || special),
            multiline: breaks,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn s(v: &str) -> Value {
        Value::Str(v.to_owned())
    }

    fn map(members: &[(&str, Value)]) -> Value {
        Value::Map(
            members
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    /// The text after `!!str k: !!str ` of `{k: value}`, up to the `...`.
    fn value_text(value: &str) -> String {
        let out = write(&map(&[("k", s(value))]));
        let body = out
            .strip_prefix("%YAML 1.1\n--- !!map\n!!str k: !!str ")
            .unwrap();
        body.strip_suffix("\n...\n").unwrap().to_owned()
    }

    #[test]
    fn strings_are_written_as_slurm_writes_them() {
        // Each pair was printed by Slurm 22.05's squeue --yaml for a job
        // whose comment was the first text (there, continued lines were
        // indented two levels deeper).
        let cases = [
            ("yes", "yes"),
            ("true", "true"),
            ("null", "null"),
            ("~", "~"),
            ("1.5", "1.5"),
            ("123", "123"),
            (" lead", "' lead'"),
            ("tr ", "'tr '"),
            ("we: ird#na \"me", "'we: ird#na \"me'"),
            ("- x", "'- x'"),
            ("-x", "-x"),
            (":x", ":x"),
            ("x:", "'x:'"),
            ("x: y", "'x: y'"),
            ("#x", "'#x'"),
            ("x #y", "'x #y'"),
            ("x#y", "x#y"),
            ("[a]", "'[a]'"),
            ("a,b", "a,b"),
            ("'q'", "'''q'''"),
            ("%x", "'%x'"),
            ("@x", "'@x'"),
            ("`x", "'`x'"),
            ("---", "'---'"),
            ("...", "'...'"),
            ("a'b", "a'b"),
            ("a\tb", "\"a\\tb\""),
            ("\\x", "\\x"),
            ("ctl\u{1}", "\"ctl\\x01\""),
            ("?x", "?x"),
            ("? x", "'? x'"),
            ("a]", "a]"),
            ("{a", "'{a'"),
            ("!x", "'!x'"),
            ("&x", "'&x'"),
            ("*x", "'*x'"),
            ("|x", "'|x'"),
            (">x", "'>x'"),
            ("\"x", "'\"x'"),
            ("x\"", "x\""),
            ("-", "'-'"),
            (":", "':'"),
            ("a:b", "a:b"),
            ("a :b", "a :b"),
            ("/usr/bin/a b", "/usr/bin/a b"),
            ("=x", "=x"),
            ("\t", "\"\\t\""),
            ("é ü", "\"\\xE9 \\xFC\""),
            ("日本語", "\"\\u65E5\\u672C\\u8A9E\""),
            ("a\nb", "'a\n\n  b'"),
            ("a\n\nb", "'a\n\n\n  b'"),
            ("a \nb", "\"a \\nb\""),
            ("a\n b", "\"a\\n b\""),
        ];
        for (value, want) in cases {
            assert_eq!(value_text(value), want, "{value:?}");
        }
    }

    #[test]
    fn long_lines_fold_at_the_first_space_past_column_80() {
        // As Slurm printed it for a job map's `comment` (two levels in).
        let text = "Nodes required for job are DOWN, DRAINED or reserved for jobs \
                    in higher priority partitions and more words here to pass the width";
        let doc = map(&[("jobs", Value::Seq(vec![map(&[("comment", s(text))])]))]);
        let out = write(&doc);
        assert!(out.contains(
            "\n  !!str comment: !!str Nodes required for job are DOWN, DRAINED or reserved \
             for jobs\n    in higher priority partitions and more words here to pass the \
             width\n"
        ));
        // Keys are never folded, nor is a word longer than the line.
        let long = "x".repeat(100);
        assert_eq!(value_text(&long), long);
    }

    #[test]
    fn folds_in_quotes_keep_every_space() {
        let words = ["word"; 30].join(" ");
        let quoted = value_text(&format!("{words} "));
        assert!(
            quoted.starts_with('\'') && quoted.contains("\n  word"),
            "{quoted}"
        );
        let doubled = value_text(&format!("\t{}", ["ab"; 40].join("  ")));
        assert!(doubled.contains("\n  \\ ab"), "{doubled}");
    }

    #[test]
    fn layout_follows_libyaml() {
        let doc = map(&[
            (
                "meta",
                map(&[("n", Value::Int(-2)), ("f", Value::Float(1.0))]),
            ),
            ("errors", Value::Seq(vec![])),
            ("empty", Value::Map(vec![])),
            (
                "list",
                Value::Seq(vec![
                    s("a"),
                    s(""),
                    Value::Null,
                    Value::Bool(true),
                    Value::Seq(vec![s("b"), Value::Seq(vec![])]),
                    map(&[("k", Value::Bool(false))]),
                ]),
            ),
        ]);
        let want = "%YAML 1.1
--- !!map
!!str meta: !!map
  !!str n: !!int -2
  !!str f: !!float 1.000000
!!str errors: !!seq []
!!str empty: !!map {}
!!str list: !!seq
- !!str a
- !!null null
- !!null null
- !!bool true
- !!seq
  - !!str b
  - !!seq []
- !!map
  !!str k: !!bool false
...
";
        assert_eq!(write(&doc), want);
    }

    #[test]
    fn other_roots_and_odd_keys() {
        assert_eq!(write(&s("x")), "%YAML 1.1\n--- !!str x\n...\n");
        assert_eq!(
            write(&Value::Seq(vec![Value::Int(1)])),
            "%YAML 1.1\n--- !!seq\n- !!int 1\n...\n"
        );
        assert_eq!(
            write(&map(&[("", Value::Int(1)), ("a b", Value::Int(2))])),
            "%YAML 1.1\n--- !!map\n!!str '': !!int 1\n!!str a b: !!int 2\n...\n"
        );
        // A key too long or on more than one line is written as `? key`.
        let long = "k".repeat(124);
        let seq = Value::Seq(vec![Value::Int(1)]);
        assert_eq!(
            write(&map(&[(&long, seq.clone()), ("a\nb", Value::Int(2))])),
            format!(
                "%YAML 1.1\n--- !!map\n? !!str {long}\n: !!seq\n- !!int 1\n\
                 ? !!str 'a\n\n  b'\n: !!int 2\n...\n"
            )
        );
        let just_short = "k".repeat(123);
        assert!(write(&map(&[(&just_short, seq)])).contains(&format!("\n!!str {just_short}: ")));
    }

    #[test]
    fn floats_are_written_as_c_writes_them() {
        assert_eq!(c_float(0.0), "0.000000");
        assert_eq!(c_float(2.5e-7), "0.000000");
        assert_eq!(c_float(-1.25), "-1.250000");
        assert_eq!(c_float(1e20), "100000000000000000000.000000");
        assert_eq!(c_float(f64::INFINITY), "inf");
        assert_eq!(c_float(f64::NAN), "nan");
    }

    #[test]
    fn json_is_read_in_document_order() {
        let doc = from_json(
            r#" {"b": [1, -2, 3.5, 1e2, true, false, null, "x\/y\"\\\u00e9\ud83d\ude00\n"],
                "a": {}, "c": [], "d": 18446744073709551615} "#,
        )
        .unwrap();
        assert_eq!(
            doc,
            Value::Map(vec![
                (
                    "b".into(),
                    Value::Seq(vec![
                        Value::Int(1),
                        Value::Int(-2),
                        Value::Float(3.5),
                        Value::Float(100.0),
                        Value::Bool(true),
                        Value::Bool(false),
                        Value::Null,
                        s("x/y\"\\é😀\n"),
                    ])
                ),
                ("a".into(), Value::Map(vec![])),
                ("c".into(), Value::Seq(vec![])),
                ("d".into(), Value::Int(i128::from(u64::MAX))),
            ])
        );
    }

    #[test]
    fn bad_json_is_refused_with_its_place() {
        let cases: &[(&str, ReadError)] = &[
            (
                "",
                ReadError::Unexpected {
                    offset: 0,
                    expected: "a value",
                    found: "the end of the document".into(),
                },
            ),
            (
                "{\"a\" 1}",
                ReadError::Unexpected {
                    offset: 5,
                    expected: "':'",
                    found: "'1'".into(),
                },
            ),
            (
                "[1,]",
                ReadError::Unexpected {
                    offset: 3,
                    expected: "a value",
                    found: "']'".into(),
                },
            ),
            (
                "[1] x",
                ReadError::Unexpected {
                    offset: 4,
                    expected: "the end of the document",
                    found: "'x'".into(),
                },
            ),
            (
                "[01]",
                ReadError::Unexpected {
                    offset: 1,
                    expected: "a number",
                    found: "'0'".into(),
                },
            ),
            ("\"\\ud800\"", ReadError::BadEscape { offset: 1 }),
            ("\"\\q\"", ReadError::BadEscape { offset: 1 }),
            ("\"\\u12\"", ReadError::BadEscape { offset: 1 }),
            (
                "1000000000000000000000000000000000000000000",
                ReadError::IntOutOfRange {
                    offset: 0,
                    text: "1000000000000000000000000000000000000000000".into(),
                },
            ),
            (
                "\"a\u{1}\"",
                ReadError::Unexpected {
                    offset: 2,
                    expected: "'\"'",
                    found: "'\\u{1}'".into(),
                },
            ),
            (
                "[é",
                ReadError::Unexpected {
                    offset: 1,
                    expected: "a value",
                    found: "'é'".into(),
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(from_json(text).as_ref(), Err(want), "{text:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(
            from_json(&deep),
            Err(ReadError::TooDeep {
                offset: MAX_DEPTH,
                limit: MAX_DEPTH
            })
        );
        assert!(from_json(&format!(
            "{}{}",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        ))
        .is_ok());
        assert_eq!(
            ReadError::BadEscape { offset: 3 }.to_string(),
            "json document: bad escape in a string at byte 3"
        );
    }

    /// Reads back the scalar `text` as a YAML reader would: plain,
    /// `'single'` or `"double"`, with lines folded.
    fn read_scalar(text: &str) -> String {
        if let Some(inner) = text.strip_prefix('\'') {
            let inner = inner.strip_suffix('\'').unwrap();
            fold(inner, false).replace("''", "'")
        } else if text.starts_with('"') {
            let inner = &text[1..text.len() - 1];
            fold(inner, true)
        } else {
            fold(text, false)
        }
    }

    /// YAML's flow folding: a break between two lines reads as a space, each
    /// empty line as a break, and the indentation of a continued line is
    /// dropped. In double quotes, escapes are decoded and `\` at the end of
    /// a line joins it to the next.
    fn fold(text: &str, escapes: bool) -> String {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if escapes => match chars.next().unwrap() {
                    '\n' => while chars.next_if(|c| *c == ' ').is_some() {},
                    'x' => out.push(hex(&mut chars, 2)),
                    'u' => out.push(hex(&mut chars, 4)),
                    'U' => out.push(hex(&mut chars, 8)),
                    e => out.push(match e {
                        '0' => '\0',
                        'a' => '\u{7}',
                        'b' => '\u{8}',
                        't' => '\t',
                        'n' => '\n',
                        'v' => '\u{b}',
                        'f' => '\u{c}',
                        'r' => '\r',
                        'e' => '\u{1b}',
                        'N' => '\u{85}',
                        '_' => '\u{a0}',
                        'L' => '\u{2028}',
                        'P' => '\u{2029}',
                        ' ' | '"' | '\\' | '/' => e,
                        other => panic!("unknown escape \\{other} in {text:?}"),
                    }),
                },
                '\n' => {
                    let mut empty = 0;
                    loop {
                        while chars.next_if(|c| *c == ' ').is_some() {}
                        if chars.next_if(|c| *c == '\n').is_none() {
                            break;
                        }
                        empty += 1;
                    }
                    if empty == 0 {
                        out.push(' ');
                    }
                    for _ in 0..empty {
                        out.push('\n');
                    }
                }
                c => out.push(c),
            }
        }
        out
    }

    fn hex(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize) -> char {
        let digits: String = chars.take(n).collect();
        char::from_u32(u32::from_str_radix(&digits, 16).unwrap()).unwrap()
    }

    fn any_string() -> impl Strategy<Value = String> {
        prop_oneof![
            // The characters YAML treats specially, in any mix.
            proptest::collection::vec(
                prop_oneof![
                    Just(' '),
                    Just('\n'),
                    Just('\t'),
                    Just('\''),
                    Just('"'),
                    Just('\\'),
                    Just(':'),
                    Just('#'),
                    Just('-'),
                    Just('a'),
                    Just('é'),
                    Just('\u{2028}'),
                    Just('\0'),
                    Just('\u{1F600}'),
                ],
                0..12
            )
            .prop_map(|v| v.into_iter().collect()),
            // Long lines of words, to fold.
            proptest::collection::vec("[a-z]{1,12}| |  |\n|'|\t", 0..60).prop_map(|v| v.concat()),
            any::<String>(),
        ]
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i128>().prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            any_string().prop_map(Value::Str),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Seq),
                proptest::collection::vec((any_string(), inner), 0..6).prop_map(Value::Map),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any document is written, framed as a document, in ASCII.
        #[test]
        fn any_document_is_written(doc in any_value()) {
            let out = write(&doc);
            prop_assert!(out.starts_with("%YAML 1.1\n--- !!"), "{}", out);
            prop_assert!(out.ends_with("\n...\n"), "{}", out);
            prop_assert!(out.is_ascii());
        }

        /// Every non-empty string reads back as it was, in whatever style
        /// and however folded, as a value, a sequence item and a key.
        #[test]
        fn strings_read_back(text in any_string(), depth in 0usize..4) {
            prop_assume!(!text.is_empty());
            let mut doc = map(&[("k", s(&text))]);
            let mut item = Value::Seq(vec![s(&text)]);
            for _ in 0..depth {
                doc = map(&[("m", doc)]);
                item = Value::Seq(vec![item]);
            }
            let prefix = |out: &str, marker: &str| -> String {
                let at = out.find(marker).unwrap() + marker.len();
                out[at..out.len() - "\n...\n".len()].to_owned()
            };
            let out = write(&doc);
            prop_assert_eq!(read_scalar(&prefix(&out, "!!str k: !!str ")), text.clone());
            let out = write(&item);
            prop_assert_eq!(read_scalar(&prefix(&out, "- !!str ")), text.clone());
            let out = write(&map(&[(&text, Value::Null)]));
            let key = prefix(&out, "--- !!map\n");
            let key = if let Some(complex) = key.strip_prefix("? !!str ") {
                complex.strip_suffix("\n: !!null null").unwrap().to_owned()
            } else {
                key.strip_prefix("!!str ").unwrap()
                    .strip_suffix(": !!null null").unwrap().to_owned()
            };
            prop_assert_eq!(read_scalar(&key), text);
        }

        /// Any text is read or refused, never a panic.
        #[test]
        fn any_text_is_read_or_refused(text in any::<String>()) {
            let _ = from_json(&text);
        }
    }
}
