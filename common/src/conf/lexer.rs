//! The syntax shared by Slurm's config files, without any knowledge of keys.
//!
//! `slurm.conf`, `gres.conf` and `cgroup.conf` all use the same line format,
//! so the lexer is separate from the meaning of the keys:
//!
//! * `#` starts a comment, except inside a quoted value; `\#` is a literal `#`.
//! * A trailing `\` joins the next physical line (after comments are removed,
//!   so a backslash inside a comment does not continue the line). Lines are
//!   joined without adding a space, so `Nodes=n1,\` + `n2` reads `Nodes=n1,n2`.
//! * A line holds one or more `Key=Value` pairs separated by blanks; blanks
//!   around `=` are allowed. A value that starts with `"` or `'` runs to the
//!   matching quote and may contain blanks and `#`.
//! * `Include <path>` (keyword case-insensitive) splices in other files at that
//!   point. A relative path is taken from the including file's directory, a
//!   path with `*`, `?` or `[` is a glob (files read in sorted order), includes
//!   nest, and a file that includes itself, directly or not, is an error
//!   rather than a hang.
//!
//! Keys are returned as written; the typed layers compare them without case.
//! Where a line was written is kept on every [`Line`] so that every later
//! error can name the file and line.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use super::{ConfError, SourceLoc};

/// Include nesting deeper than this is refused (it is almost surely a loop
/// that the cycle check could not see, e.g. through ever-new file names).
pub const MAX_INCLUDE_DEPTH: usize = 32;

/// One `Key=Value` pair, the key as written, the value without its quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub key: String,
    pub value: String,
}

/// One logical line: all its pairs and where it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub loc: SourceLoc,
    pub pairs: Vec<Pair>,
}

impl Line {
    /// The first pair; every line the lexer returns has one.
    pub fn first(&self) -> Option<&Pair> {
        self.pairs.first()
    }
}

/// Where `Include` finds files. The lexer joins relative patterns with the
/// including file's directory before calling [`IncludeSource::expand`].
pub trait IncludeSource {
    /// The files a pattern names, in the order they are to be read. A pattern
    /// without glob characters names itself (whether or not it exists; the
    /// read reports that). A glob that matches nothing returns an empty list.
    fn expand(&mut self, pattern: &str) -> io::Result<Vec<String>>;
    /// The whole text of one file.
    fn read(&mut self, name: &str) -> io::Result<String>;
    /// A name that is equal for two names of the same file, for cycle checks.
    fn identity(&mut self, name: &str) -> String {
        name.to_string()
    }
}

/// True when `pattern` uses glob syntax.
fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Reads includes from the real filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsIncludes;

impl IncludeSource for FsIncludes {
    fn expand(&mut self, pattern: &str) -> io::Result<Vec<String>> {
        if !is_glob(pattern) {
            return Ok(vec![pattern.to_string()]);
        }
        let paths = glob::glob(pattern)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let mut names = Vec::new();
        for entry in paths {
            let path = entry.map_err(|e| io::Error::new(e.error().kind(), e.to_string()))?;
            if path.is_file() {
                names.push(path.to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn read(&mut self, name: &str) -> io::Result<String> {
        std::fs::read_to_string(name)
    }

    fn identity(&mut self, name: &str) -> String {
        std::fs::canonicalize(name)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| name.to_string())
    }
}

/// Files held in memory, for tests and for configs received over the wire
/// (configless mode ships slurm.conf and its includes together).
#[derive(Debug, Default, Clone)]
pub struct MemoryIncludes {
    files: HashMap<String, String>,
}

impl MemoryIncludes {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a file.
    pub fn with(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.files.insert(name.into(), text.into());
        self
    }

    pub fn insert(&mut self, name: impl Into<String>, text: impl Into<String>) {
        self.files.insert(name.into(), text.into());
    }
}

impl IncludeSource for MemoryIncludes {
    fn expand(&mut self, pattern: &str) -> io::Result<Vec<String>> {
        if !is_glob(pattern) {
            return Ok(vec![pattern.to_string()]);
        }
        let pat = glob::Pattern::new(pattern)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: true,
        };
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter(|k| pat.matches_with(k, options))
            .cloned()
            .collect();
        names.sort();
        Ok(names)
    }

    fn read(&mut self, name: &str) -> io::Result<String> {
        self.files
            .get(name)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }
}

/// Lexes text that must not contain `Include` (pure: no file access).
pub fn lex(text: &str, origin: &str) -> Result<Vec<Line>, ConfError> {
    let mut ctx = Ctx {
        source: None,
        stack: vec![origin.to_string()],
        root_resolved: true,
    };
    let mut out = Vec::new();
    lex_into(text, Arc::from(origin), &mut ctx, &mut out)?;
    Ok(out)
}

/// Lexes text whose `Include` lines are resolved through `source`.
pub fn lex_with(
    text: &str,
    origin: &str,
    source: &mut dyn IncludeSource,
) -> Result<Vec<Line>, ConfError> {
    let mut ctx = Ctx {
        source: Some(source),
        stack: vec![origin.to_string()],
        root_resolved: false,
    };
    let mut out = Vec::new();
    lex_into(text, Arc::from(origin), &mut ctx, &mut out)?;
    Ok(out)
}

/// Reads `path` through `source` and lexes it with its includes.
pub fn load_with(path: &str, source: &mut dyn IncludeSource) -> Result<Vec<Line>, ConfError> {
    let text = source.read(path).map_err(|e| ConfError::Io {
        path: path.to_string(),
        source: e,
    })?;
    lex_with(&text, path, source)
}

struct Ctx<'a> {
    source: Option<&'a mut dyn IncludeSource>,
    /// Identities of the files being read, outermost first.
    stack: Vec<String>,
    /// Whether `stack[0]` is the outermost file's identity yet, rather than
    /// its name: it is resolved at the first `Include`, since most files
    /// include nothing and resolving a path costs a system call for each of
    /// its components (every command reads slurm.conf).
    root_resolved: bool,
}

fn lex_into(
    text: &str,
    file: Arc<str>,
    ctx: &mut Ctx<'_>,
    out: &mut Vec<Line>,
) -> Result<(), ConfError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut physical = text.split('\n').enumerate().peekable();
    while let Some((idx, raw)) = physical.next() {
        let start = line_number(idx);
        let mut logical = strip_comment(raw.strip_suffix('\r').unwrap_or(raw));
        while logical.trim_end().ends_with('\\') {
            // Drop the backslash (only it: blanks before it separate pairs).
            let cut = logical.trim_end().len() - 1;
            let joined = logical.to_mut();
            joined.truncate(cut);
            match physical.next() {
                Some((_, next)) => {
                    joined.push_str(&strip_comment(next.strip_suffix('\r').unwrap_or(next)))
                }
                None => break,
            }
        }
        let loc = SourceLoc {
            file: Arc::clone(&file),
            line: start,
        };
        match tokenize(&logical, &loc)? {
            Tokens::Empty => {}
            Tokens::Pairs(pairs) => out.push(Line { loc, pairs }),
            Tokens::Include(pattern) => include(&pattern, &loc, ctx, out)?,
        }
    }
    Ok(())
}

fn line_number(idx: usize) -> u32 {
    u32::try_from(idx.saturating_add(1)).unwrap_or(u32::MAX)
}

fn include(
    pattern: &str,
    loc: &SourceLoc,
    ctx: &mut Ctx<'_>,
    out: &mut Vec<Line>,
) -> Result<(), ConfError> {
    let Some(source) = ctx.source.as_deref_mut() else {
        return Err(ConfError::IncludeUnavailable {
            loc: loc.clone(),
            pattern: pattern.to_string(),
        });
    };
    if !ctx.root_resolved {
        if let Some(root) = ctx.stack.first_mut() {
            *root = source.identity(root);
        }
        ctx.root_resolved = true;
    }
    let joined = if Path::new(pattern).is_absolute() {
        pattern.to_string()
    } else {
        match Path::new(&*loc.file).parent() {
            Some(dir) if !dir.as_os_str().is_empty() => {
                dir.join(pattern).to_string_lossy().into_owned()
            }
            _ => pattern.to_string(),
        }
    };
    let names = source.expand(&joined).map_err(|e| ConfError::IncludeRead {
        loc: loc.clone(),
        path: joined.clone(),
        source: e,
    })?;
    if names.is_empty() {
        return Err(ConfError::IncludeNotFound {
            loc: loc.clone(),
            pattern: joined,
        });
    }
    for name in names {
        if ctx.stack.len() >= MAX_INCLUDE_DEPTH {
            return Err(ConfError::IncludeTooDeep {
                loc: loc.clone(),
                max: MAX_INCLUDE_DEPTH,
            });
        }
        let Some(source) = ctx.source.as_deref_mut() else {
            return Err(ConfError::IncludeUnavailable {
                loc: loc.clone(),
                pattern: pattern.to_string(),
            });
        };
        let identity = source.identity(&name);
        if ctx.stack.contains(&identity) {
            return Err(ConfError::IncludeCycle {
                loc: loc.clone(),
                path: name,
            });
        }
        let text = source.read(&name).map_err(|e| ConfError::IncludeRead {
            loc: loc.clone(),
            path: name.clone(),
            source: e,
        })?;
        ctx.stack.push(identity);
        let result = lex_into(&text, Arc::from(name.as_str()), ctx, out);
        ctx.stack.pop();
        result?;
    }
    Ok(())
}

fn is_quote(c: char) -> bool {
    c == '"' || c == '\''
}

/// Removes a `#` comment, honouring quoted values and `\#` escapes. A quote
/// opens a quoted section only at the start of a token or value, so an
/// apostrophe inside a word (`Reason=can't`) is an ordinary character.
/// A line without `#` is returned as it is, without a copy.
fn strip_comment(line: &str) -> Cow<'_, str> {
    if !line.contains('#') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut prev: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None => {
                if c == '#' {
                    if prev == Some('\\') {
                        out.pop();
                        out.push('#');
                        // An escaped '#' must not make the next char look escaped.
                        prev = Some('#');
                        continue;
                    }
                    break;
                }
                if is_quote(c) && prev.is_none_or(|p| p == '=' || p.is_whitespace()) {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
        prev = Some(c);
    }
    Cow::Owned(out)
}

enum Tokens {
    Empty,
    Pairs(Vec<Pair>),
    Include(String),
}

/// Splits one comment-free logical line into pairs (or an Include).
fn tokenize(line: &str, loc: &SourceLoc) -> Result<Tokens, ConfError> {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut pairs = Vec::new();
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let key_start = i;
        while i < chars.len() && chars[i] != '=' && !chars[i].is_whitespace() {
            i += 1;
        }
        let key: String = chars[key_start..i].iter().collect();
        let mut j = i;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if j >= chars.len() || chars[j] != '=' {
            if pairs.is_empty() && key.eq_ignore_ascii_case("include") {
                let mut k = i;
                let path = read_value(&chars, &mut k, loc)?;
                let trailing = chars[k..].iter().any(|c| !c.is_whitespace());
                if path.is_empty() || trailing {
                    return Err(ConfError::ExpectedKeyValue {
                        loc: loc.clone(),
                        token: key,
                    });
                }
                return Ok(Tokens::Include(path));
            }
            let token = if key.is_empty() {
                chars[key_start..].iter().collect()
            } else {
                key
            };
            return Err(ConfError::ExpectedKeyValue {
                loc: loc.clone(),
                token,
            });
        }
        if key.is_empty() {
            return Err(ConfError::ExpectedKeyValue {
                loc: loc.clone(),
                token: chars[key_start..].iter().take(40).collect(),
            });
        }
        let spaced_key = j > i;
        i = j + 1;
        let mut k = i;
        while k < chars.len() && chars[k].is_whitespace() {
            k += 1;
        }
        // `Key= Other=x` is an empty value followed by another pair, not the
        // value "Other=x"; `Key = a=b` (blanks on both sides) keeps "a=b".
        if k > i && !spaced_key && next_token_is_pair(&chars[k..]) {
            k = i;
        }
        i = k;
        let value = if i < chars.len() && chars[i].is_whitespace() {
            String::new()
        } else {
            read_value(&chars, &mut i, loc)?
        };
        pairs.push(Pair { key, value });
    }
    if pairs.is_empty() {
        Ok(Tokens::Empty)
    } else {
        Ok(Tokens::Pairs(pairs))
    }
}

/// Whether the text starts with an unquoted `word=`.
fn next_token_is_pair(rest: &[char]) -> bool {
    match rest.first() {
        Some(c) if is_quote(*c) => false,
        _ => rest
            .iter()
            .take_while(|c| !c.is_whitespace())
            .any(|c| *c == '='),
    }
}

/// Reads one value starting at `*i` (blanks before it already skipped, except
/// for the Include path) up to the next unquoted blank.
fn read_value(chars: &[char], i: &mut usize, loc: &SourceLoc) -> Result<String, ConfError> {
    let mut value = String::new();
    while *i < chars.len() && chars[*i].is_whitespace() && value.is_empty() {
        *i += 1;
    }
    if *i < chars.len() && is_quote(chars[*i]) {
        let q = chars[*i];
        *i += 1;
        let start = *i;
        while *i < chars.len() && chars[*i] != q {
            *i += 1;
        }
        if *i >= chars.len() {
            return Err(ConfError::UnterminatedQuote { loc: loc.clone() });
        }
        value.extend(&chars[start..*i]);
        *i += 1;
    }
    while *i < chars.len() && !chars[*i].is_whitespace() {
        value.push(chars[*i]);
        *i += 1;
    }
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<Vec<(String, String)>> {
        lex(text, "t.conf")
            .unwrap()
            .into_iter()
            .map(|l| l.pairs.into_iter().map(|p| (p.key, p.value)).collect())
            .collect()
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn several_pairs_per_line_and_blank_lines() {
        let got = pairs("\n\nNodeName=n[1-4] CPUs=2   RealMemory=4000\n\n");
        assert_eq!(
            got,
            vec![vec![
                kv("NodeName", "n[1-4]"),
                kv("CPUs", "2"),
                kv("RealMemory", "4000")
            ]]
        );
    }

    #[test]
    fn line_numbers_are_one_based_and_count_blank_lines() {
        let lines = lex("\n# c\nA=1\n\nB=2\n", "f").unwrap();
        assert_eq!(lines[0].loc.line, 3);
        assert_eq!(lines[1].loc.line, 5);
        assert_eq!(&*lines[1].loc.file, "f");
    }

    #[test]
    fn comments_are_removed_but_not_inside_quotes() {
        assert_eq!(pairs("A=1 # trailing"), vec![vec![kv("A", "1")]]);
        assert_eq!(pairs("# whole line\n   # indented"), Vec::<Vec<_>>::new());
        assert_eq!(
            pairs("Reason=\"disk # 3 bad\" State=DOWN"),
            vec![vec![kv("Reason", "disk # 3 bad"), kv("State", "DOWN")]]
        );
        assert_eq!(pairs("A='x # y'"), vec![vec![kv("A", "x # y")]]);
    }

    #[test]
    fn escaped_hash_is_literal() {
        assert_eq!(pairs("A=x\\#y # c"), vec![vec![kv("A", "x#y")]]);
    }

    #[test]
    fn apostrophe_inside_a_word_is_not_a_quote() {
        assert_eq!(
            pairs("Reason=can't # comment"),
            vec![vec![kv("Reason", "can't")]]
        );
    }

    #[test]
    fn quoted_values_keep_spaces() {
        assert_eq!(
            pairs("Reason=\"maintenance by ops\" Feature='a b'"),
            vec![vec![
                kv("Reason", "maintenance by ops"),
                kv("Feature", "a b")
            ]]
        );
        assert_eq!(pairs("A=\"\""), vec![vec![kv("A", "")]]);
    }

    #[test]
    fn blanks_around_equals_are_allowed() {
        assert_eq!(
            pairs("ClusterName = foo\nA= 1 B =2"),
            vec![
                vec![kv("ClusterName", "foo")],
                vec![kv("A", "1"), kv("B", "2")]
            ]
        );
    }

    #[test]
    fn empty_value_before_another_pair() {
        assert_eq!(
            pairs("NodeName= CPUs=2"),
            vec![vec![kv("NodeName", ""), kv("CPUs", "2")]]
        );
        assert_eq!(
            pairs("AuthAltParameters = jwt_key=/k"),
            vec![vec![kv("AuthAltParameters", "jwt_key=/k")]]
        );
        assert_eq!(pairs("A= b"), vec![vec![kv("A", "b")]]);
    }

    #[test]
    fn empty_value_at_end_of_line() {
        assert_eq!(pairs("Gres="), vec![vec![kv("Gres", "")]]);
    }

    #[test]
    fn continuation_joins_lines_and_reports_first_line() {
        let lines = lex(
            "X=0\nNodeName=n1 \\\n  CPUs=4 \\\n  RealMemory=100\nY=1",
            "f",
        )
        .unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].loc.line, 2);
        assert_eq!(
            lines[1]
                .pairs
                .iter()
                .map(|p| p.key.as_str())
                .collect::<Vec<_>>(),
            vec!["NodeName", "CPUs", "RealMemory"]
        );
        assert_eq!(lines[2].loc.line, 5);
    }

    #[test]
    fn continuation_inside_a_value_joins_without_space() {
        assert_eq!(pairs("Nodes=n1,\\\nn2"), vec![vec![kv("Nodes", "n1,n2")]]);
    }

    #[test]
    fn backslash_in_comment_does_not_continue() {
        assert_eq!(
            pairs("A=1 # not a continuation \\\nB=2"),
            vec![vec![kv("A", "1")], vec![kv("B", "2")]]
        );
    }

    #[test]
    fn trailing_backslash_on_last_line_is_dropped() {
        assert_eq!(pairs("A=1 \\"), vec![vec![kv("A", "1")]]);
    }

    #[test]
    fn crlf_and_bom_are_tolerated() {
        assert_eq!(
            pairs("\u{feff}A=1\r\nB=2\r\n"),
            vec![vec![kv("A", "1")], vec![kv("B", "2")]]
        );
    }

    #[test]
    fn unterminated_quote_is_an_error() {
        let err = lex("\nReason=\"oops", "f.conf").unwrap_err();
        assert!(matches!(err, ConfError::UnterminatedQuote { ref loc } if loc.line == 2));
        assert_eq!(err.to_string(), "f.conf:2: unterminated quote");
    }

    #[test]
    fn bare_word_is_an_error() {
        let err = lex("A=1\nfoo bar", "f").unwrap_err();
        assert!(
            matches!(err, ConfError::ExpectedKeyValue { ref token, ref loc } if token == "foo" && loc.line == 2)
        );
        assert!(matches!(
            lex("=value", "f").unwrap_err(),
            ConfError::ExpectedKeyValue { .. }
        ));
    }

    #[test]
    fn include_without_loader_is_an_error() {
        let err = lex("Include other.conf", "f").unwrap_err();
        assert!(
            matches!(err, ConfError::IncludeUnavailable { ref pattern, .. } if pattern == "other.conf")
        );
    }

    #[test]
    fn include_splices_in_place_relative_to_including_dir() {
        let mut src = MemoryIncludes::new()
            .with(
                "/etc/slurm/nodes.conf",
                "NodeName=n1\nInclude sub/parts.conf",
            )
            .with("/etc/slurm/sub/parts.conf", "PartitionName=p")
            .with("/etc/slurm/sub/more.conf", "Z=1");
        let lines = lex_with(
            "A=1\ninclude nodes.conf\nB=2",
            "/etc/slurm/slurm.conf",
            &mut src,
        )
        .unwrap();
        let keys: Vec<(&str, &str, u32)> = lines
            .iter()
            .map(|l| (l.pairs[0].key.as_str(), &*l.loc.file, l.loc.line))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("A", "/etc/slurm/slurm.conf", 1),
                ("NodeName", "/etc/slurm/nodes.conf", 1),
                ("PartitionName", "/etc/slurm/sub/parts.conf", 1),
                ("B", "/etc/slurm/slurm.conf", 3),
            ]
        );
    }

    #[test]
    fn include_glob_reads_matches_in_sorted_order() {
        let mut src = MemoryIncludes::new()
            .with("/c/conf.d/b.conf", "B=1")
            .with("/c/conf.d/a.conf", "A=1")
            .with("/c/conf.d/skip.txt", "S=1");
        let lines = lex_with("Include conf.d/*.conf", "/c/slurm.conf", &mut src).unwrap();
        let keys: Vec<&str> = lines.iter().map(|l| l.pairs[0].key.as_str()).collect();
        assert_eq!(keys, vec!["A", "B"]);
    }

    #[test]
    fn include_glob_matching_nothing_is_an_error() {
        let mut src = MemoryIncludes::new();
        let err = lex_with("Include /none/*.conf", "/c/slurm.conf", &mut src).unwrap_err();
        assert!(matches!(err, ConfError::IncludeNotFound { .. }));
    }

    #[test]
    fn include_of_missing_file_is_an_error() {
        let mut src = MemoryIncludes::new();
        let err = lex_with("\nInclude /none.conf", "/c/slurm.conf", &mut src).unwrap_err();
        assert!(
            matches!(err, ConfError::IncludeRead { ref path, ref loc, .. } if path == "/none.conf" && loc.line == 2)
        );
    }

    #[test]
    fn include_cycles_are_detected() {
        let mut src = MemoryIncludes::new()
            .with("/c/a.conf", "Include b.conf")
            .with("/c/b.conf", "Include a.conf");
        let err = load_with("/c/a.conf", &mut src).unwrap_err();
        assert!(matches!(err, ConfError::IncludeCycle { ref path, .. } if path == "/c/a.conf"));
        let mut selfish = MemoryIncludes::new().with("/c/s.conf", "Include s.conf");
        assert!(matches!(
            load_with("/c/s.conf", &mut selfish).unwrap_err(),
            ConfError::IncludeCycle { .. }
        ));
    }

    /// Records which names are resolved to identities.
    struct CountingIdentity {
        inner: MemoryIncludes,
        resolved: Vec<String>,
    }

    impl IncludeSource for CountingIdentity {
        fn expand(&mut self, pattern: &str) -> io::Result<Vec<String>> {
            self.inner.expand(pattern)
        }
        fn read(&mut self, name: &str) -> io::Result<String> {
            self.inner.read(name)
        }
        fn identity(&mut self, name: &str) -> String {
            self.resolved.push(name.to_string());
            name.to_string()
        }
    }

    #[test]
    fn root_identity_is_resolved_only_when_something_is_included() {
        let mut src = CountingIdentity {
            inner: MemoryIncludes::new().with("/c/x.conf", "X=1"),
            resolved: Vec::new(),
        };
        lex_with("A=1\nB=2", "/c/m.conf", &mut src).unwrap();
        assert!(src.resolved.is_empty());
        let lines = lex_with("A=1\nInclude x.conf\nInclude x.conf", "/c/m.conf", &mut src).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(src.resolved, vec!["/c/m.conf", "/c/x.conf", "/c/x.conf"]);
    }

    #[test]
    fn same_file_included_twice_in_sequence_is_not_a_cycle() {
        let mut src = MemoryIncludes::new().with("/c/x.conf", "X=1");
        let lines = lex_with("Include x.conf\nInclude x.conf", "/c/m.conf", &mut src).unwrap();
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn quoted_include_path() {
        let mut src = MemoryIncludes::new().with("/c/my dir/x.conf", "X=1");
        let lines = lex_with("Include \"my dir/x.conf\"", "/c/m.conf", &mut src).unwrap();
        assert_eq!(lines[0].pairs[0].key, "X");
    }

    #[test]
    fn empty_include_is_an_error() {
        let mut src = MemoryIncludes::new();
        assert!(matches!(
            lex_with("Include", "/c/m.conf", &mut src).unwrap_err(),
            ConfError::ExpectedKeyValue { .. }
        ));
    }

    #[test]
    fn include_with_tempfile_globs_and_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("conf.d")).unwrap();
        std::fs::write(root.join("conf.d/10-a.conf"), "A=1\nInclude ../leaf.conf\n").unwrap();
        std::fs::write(root.join("conf.d/20-b.conf"), "B=2\n").unwrap();
        std::fs::write(root.join("leaf.conf"), "L=3\n").unwrap();
        std::fs::write(root.join("main.conf"), "M=0\nInclude conf.d/*.conf\n").unwrap();
        let main = root.join("main.conf").to_string_lossy().into_owned();
        let lines = load_with(&main, &mut FsIncludes).unwrap();
        let keys: Vec<&str> = lines.iter().map(|l| l.pairs[0].key.as_str()).collect();
        assert_eq!(keys, vec!["M", "A", "L", "B"]);
        assert!(lines[2].loc.file.ends_with("leaf.conf"));
    }

    #[test]
    fn tempfile_include_cycle_through_symlinked_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.conf"), "Include b.conf\n").unwrap();
        std::fs::write(root.join("b.conf"), "Include ./a.conf\n").unwrap();
        let a = root.join("a.conf").to_string_lossy().into_owned();
        assert!(matches!(
            load_with(&a, &mut FsIncludes).unwrap_err(),
            ConfError::IncludeCycle { .. }
        ));
    }

    #[test]
    fn missing_root_file_is_an_io_error() {
        let err = load_with("/definitely/not/here.conf", &mut FsIncludes).unwrap_err();
        assert!(
            matches!(err, ConfError::Io { ref path, .. } if path == "/definitely/not/here.conf")
        );
    }
}
