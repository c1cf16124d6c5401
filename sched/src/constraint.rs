//! `--constraint` expressions over node features, with Slurm 22.05's
//! grammar.
//!
//! * A feature name (`gpu`); AND (`a&b`, or the older `a,b`); OR (`a|b`);
//!   `&` binds tighter than `|`, so `a&b|c` is `(a&b)|c`. Each node must
//!   satisfy the expression on its own.
//! * Parentheses group (`(a|b)&c`), one level deep: `((a))` is refused,
//!   as Slurm refuses it.
//! * A node count (`a*2`, `(a&b)*2`): at least that many of the job's
//!   nodes satisfy the counted part; it says nothing about the others.
//!   Counts are refused inside parentheses (`(a*2)`).
//! * One bracketed group, either a matching OR (`[a|b]`: every node
//!   satisfies the same one alternative) or multiple counts (`[a*2&b*4]`:
//!   two nodes with `a` and four other nodes with `b`). Brackets may hold
//!   parentheses and sit inside them, but not nest or repeat.
//!
//! Slurm's quirks are kept where scripts could rely on them: a trailing
//! operator at the end of the whole expression is ignored (`a&`), and so are
//! name characters right after a count or a closing bracket (`a*2x`,
//! `[a|b]c`).
//!
//! Parsing is bounded: at most [`MAX_LEN`] bytes, and the nesting rules
//! above keep the recursion at three levels.

use std::fmt;

use thiserror::Error;

/// Longest expression accepted, in bytes.
pub const MAX_LEN: usize = 4096;
/// Largest node count a feature may carry (Slurm reads it as an `int`).
pub const MAX_COUNT: u32 = i32::MAX as u32;

/// A parsed `--constraint`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Constraint {
    Feature(String),
    /// Every part holds (two or more parts).
    And(Vec<Constraint>),
    /// At least one part holds (two or more parts).
    Or(Vec<Constraint>),
    /// `x*N`: at least N of the job's nodes satisfy `x`. A node is not
    /// required to.
    Count(Box<Constraint>, u32),
    /// `[a|b]`: every node of the job satisfies the same alternative.
    Matching(Vec<Constraint>),
    /// `[a*2&b*4]`: for each part, that many nodes of the job satisfy it,
    /// no node counting for two parts; every node satisfies some part.
    Counts(Vec<(Constraint, u32)>),
}

/// A node-count demand of a constraint on the job's allocation as a whole
/// ([`Constraint::node_counts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountNeed<'a> {
    /// What the counted nodes satisfy.
    pub what: &'a Constraint,
    pub count: u32,
    /// Nodes counted for one part of a bracketed `[a*2&b*4]` do not count
    /// for another.
    pub distinct: bool,
}

/// Why a `--constraint` string was refused. Positions are byte offsets.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConstraintError {
    #[error("empty constraint")]
    Empty,
    #[error("constraint is {len} bytes long, the limit is {max}")]
    TooLong { len: usize, max: usize },
    #[error("unexpected {found:?} at byte {pos} of constraint {input:?}")]
    Unexpected {
        input: String,
        pos: usize,
        found: char,
    },
    #[error("constraint {input:?} ends where a feature name was expected")]
    UnexpectedEnd { input: String },
    #[error("unclosed {open:?} at byte {pos} of constraint {input:?}")]
    Unclosed {
        input: String,
        pos: usize,
        open: char,
    },
    #[error("parentheses inside parentheses (byte {pos} of constraint {input:?}) are not allowed")]
    NestedParentheses { input: String, pos: usize },
    #[error("constraint {input:?} has a second bracketed group at byte {pos}; one is allowed")]
    SecondBracket { input: String, pos: usize },
    #[error("the node count at byte {pos} of constraint {input:?} is not a number from 1 to {max}", max = MAX_COUNT)]
    BadCount { input: String, pos: usize },
    #[error("a node count is not allowed {place} (byte {pos} of constraint {input:?})")]
    CountNotAllowed {
        input: String,
        pos: usize,
        place: &'static str,
    },
    #[error("the brackets at byte {pos} of constraint {input:?} must hold features joined by | or features with counts joined by &")]
    BadBracket { input: String, pos: usize },
}

/// Where a sequence of terms is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Top,
    Paren,
    Bracket,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
}

fn is_name_char(c: char) -> bool {
    !"&,|()[]*".contains(c)
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    in_paren: bool,
    seen_bracket: bool,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<char> {
        self.input[self.pos..].chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    fn skip_while(&mut self, keep: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&keep) {
            self.bump();
        }
    }

    fn unexpected(&self) -> ConstraintError {
        match self.peek() {
            Some(found) => ConstraintError::Unexpected {
                input: self.input.to_string(),
                pos: self.pos,
                found,
            },
            None => ConstraintError::UnexpectedEnd {
                input: self.input.to_string(),
            },
        }
    }

    /// Terms joined by operators, up to the end of the input (`Top`) or
    /// the closing `)` or `]`, which is consumed.
    fn sequence(&mut self, ctx: Ctx, open_pos: usize) -> Result<Constraint, ConstraintError> {
        let mut terms: Vec<(Constraint, Option<u32>)> = Vec::new();
        let mut ops: Vec<Op> = Vec::new();
        loop {
            terms.push(self.term(ctx)?);
            match (self.peek(), ctx) {
                (None, Ctx::Top) => break,
                (None, _) => {
                    return Err(ConstraintError::Unclosed {
                        input: self.input.to_string(),
                        pos: open_pos,
                        open: if ctx == Ctx::Paren { '(' } else { '[' },
                    })
                }
                (Some(')'), Ctx::Paren) | (Some(']'), Ctx::Bracket) => {
                    self.bump();
                    break;
                }
                (Some('&' | ','), _) => ops.push(Op::And),
                (Some('|'), _) => ops.push(Op::Or),
                _ => return Err(self.unexpected()),
            }
            self.bump();
            // A dangling operator ends the whole expression harmlessly.
            if ctx == Ctx::Top && self.peek().is_none() {
                break;
            }
        }
        if ctx == Ctx::Bracket {
            return bracket(terms, &ops).ok_or_else(|| ConstraintError::BadBracket {
                input: self.input.to_string(),
                pos: open_pos,
            });
        }
        let terms = terms.into_iter().map(|(c, n)| match n {
            Some(n) => Constraint::Count(Box::new(c), n),
            None => c,
        });
        Ok(combine(terms, &ops))
    }

    /// One operand and the count after it, if any.
    fn term(&mut self, ctx: Ctx) -> Result<(Constraint, Option<u32>), ConstraintError> {
        let start = self.pos;
        let group = self.peek() == Some('(');
        let inner = match self.peek() {
            Some('(') => {
                if self.in_paren {
                    return Err(ConstraintError::NestedParentheses {
                        input: self.input.to_string(),
                        pos: start,
                    });
                }
                self.bump();
                self.in_paren = true;
                let inner = self.sequence(Ctx::Paren, start)?;
                self.in_paren = false;
                inner
            }
            Some('[') => {
                if self.seen_bracket {
                    return Err(ConstraintError::SecondBracket {
                        input: self.input.to_string(),
                        pos: start,
                    });
                }
                self.seen_bracket = true;
                self.bump();
                let inner = self.sequence(Ctx::Bracket, start)?;
                if self.peek() == Some('*') {
                    return Err(ConstraintError::CountNotAllowed {
                        input: self.input.to_string(),
                        pos: self.pos,
                        place: "after brackets",
                    });
                }
                self.skip_while(is_name_char);
                return Ok((inner, None));
            }
            Some(c) if is_name_char(c) => {
                self.skip_while(is_name_char);
                Constraint::Feature(self.input[start..self.pos].to_string())
            }
            _ => return Err(self.unexpected()),
        };
        if self.peek() != Some('*') {
            // Like Slurm, ignore name characters right after `)`.
            if group {
                self.skip_while(is_name_char);
            }
            return Ok((inner, None));
        }
        let star = self.pos;
        self.bump();
        let digits_start = self.pos;
        self.skip_while(|c| c.is_ascii_digit());
        let count = self.input[digits_start..self.pos]
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=u64::from(MAX_COUNT)).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| ConstraintError::BadCount {
                input: self.input.to_string(),
                pos: star,
            })?;
        if ctx == Ctx::Paren {
            return Err(ConstraintError::CountNotAllowed {
                input: self.input.to_string(),
                pos: star,
                place: "inside parentheses",
            });
        }
        // Slurm reads the number and ignores what follows it up to the next
        // operator or bracket.
        self.skip_while(|c| is_name_char(c) || c == '*');
        Ok((inner, Some(count)))
    }
}

/// The meaning of a bracketed group: all `|` without counts is a matching
/// OR, all `&` with a count on every part is multiple counts, one part is
/// either. `None` for any other mix.
fn bracket(terms: Vec<(Constraint, Option<u32>)>, ops: &[Op]) -> Option<Constraint> {
    let counted = terms.iter().filter(|t| t.1.is_some()).count();
    if ops.iter().all(|&o| o == Op::And) && counted == terms.len() {
        let parts = terms
            .into_iter()
            .map(|(c, n)| n.map(|n| (c, n)))
            .collect::<Option<Vec<_>>>()?;
        return Some(Constraint::Counts(parts));
    }
    if ops.iter().all(|&o| o == Op::Or) && counted == 0 {
        return Some(Constraint::Matching(
            terms.into_iter().map(|(c, _)| c).collect(),
        ));
    }
    None
}

/// Joins operands by their operators, `&` first.
fn combine(terms: impl IntoIterator<Item = Constraint>, ops: &[Op]) -> Constraint {
    let mut alternatives = Vec::new();
    let mut conjuncts = Vec::new();
    for (i, t) in terms.into_iter().enumerate() {
        conjuncts.push(t);
        if ops.get(i) == Some(&Op::Or) {
            alternatives.push(join(std::mem::take(&mut conjuncts), Op::And));
        }
    }
    if !conjuncts.is_empty() {
        alternatives.push(join(conjuncts, Op::And));
    }
    join(alternatives, Op::Or)
}

/// One part stands alone; several are combined, flattening parts joined by
/// the same operator (`(a&b)&c` is `a&b&c`).
fn join(parts: Vec<Constraint>, op: Op) -> Constraint {
    let mut flat = Vec::with_capacity(parts.len());
    for p in parts {
        match (p, op) {
            (Constraint::And(inner), Op::And) | (Constraint::Or(inner), Op::Or) => {
                flat.extend(inner)
            }
            (other, _) => flat.push(other),
        }
    }
    match (flat.len(), op) {
        (1, _) => flat.swap_remove(0),
        (_, Op::And) => Constraint::And(flat),
        (_, Op::Or) => Constraint::Or(flat),
    }
}

/// An expression as Slurm keeps and shows it: the older comma written as
/// `&` (`a,b` is shown `a&b`), the rest as given.
pub fn as_kept(text: &str) -> String {
    text.replace(',', "&")
}

impl Constraint {
    /// Parses a `--constraint` value.
    pub fn parse(input: &str) -> Result<Constraint, ConstraintError> {
        if input.len() > MAX_LEN {
            return Err(ConstraintError::TooLong {
                len: input.len(),
                max: MAX_LEN,
            });
        }
        if input.is_empty() {
            return Err(ConstraintError::Empty);
        }
        let mut p = Parser {
            input,
            pos: 0,
            in_paren: false,
            seen_bracket: false,
        };
        p.sequence(Ctx::Top, 0)
    }

    /// Whether a node with `features` may be one of the job's nodes. A
    /// count holds for any node; a matching OR holds for a node that
    /// satisfies one of its alternatives (which one, the whole allocation
    /// decides: [`Self::alternatives`]).
    pub fn matches(&self, features: &[String]) -> bool {
        match self {
            Constraint::Feature(f) => features.iter().any(|x| x == f),
            Constraint::And(parts) => parts.iter().all(|p| p.matches(features)),
            Constraint::Or(parts) | Constraint::Matching(parts) => {
                parts.iter().any(|p| p.matches(features))
            }
            Constraint::Count(..) => true,
            Constraint::Counts(parts) => parts.iter().any(|(p, _)| p.matches(features)),
        }
    }

    /// The expression once a matching OR has chosen each of its
    /// alternatives in turn, in their order; the expression alone when it
    /// has none.
    pub fn alternatives(&self) -> Vec<Constraint> {
        match self.matching_len() {
            Some(n) => (0..n).map(|k| self.choose(k)).collect(),
            None => vec![self.clone()],
        }
    }

    /// Whether the expression holds a matching OR (`[a|b]`).
    pub fn has_matching_or(&self) -> bool {
        self.matching_len().is_some()
    }

    fn matching_len(&self) -> Option<usize> {
        match self {
            Constraint::Matching(alts) => Some(alts.len()),
            Constraint::And(parts) | Constraint::Or(parts) => {
                parts.iter().find_map(Constraint::matching_len)
            }
            Constraint::Count(inner, _) => inner.matching_len(),
            Constraint::Counts(parts) => parts.iter().find_map(|(p, _)| p.matching_len()),
            Constraint::Feature(_) => None,
        }
    }

    /// This expression with its matching OR replaced by alternative `k`.
    fn choose(&self, k: usize) -> Constraint {
        match self {
            Constraint::Matching(alts) => alts.get(k).cloned().unwrap_or_else(|| self.clone()),
            Constraint::And(parts) => Constraint::And(parts.iter().map(|p| p.choose(k)).collect()),
            Constraint::Or(parts) => Constraint::Or(parts.iter().map(|p| p.choose(k)).collect()),
            Constraint::Count(inner, n) => Constraint::Count(Box::new(inner.choose(k)), *n),
            Constraint::Counts(parts) => {
                Constraint::Counts(parts.iter().map(|(p, n)| (p.choose(k), *n)).collect())
            }
            Constraint::Feature(_) => self.clone(),
        }
    }

    /// What the job's nodes must hold together: each `x*N` and each part of
    /// a bracketed `[a*N&b*M]`, in order of appearance.
    pub fn node_counts(&self) -> Vec<CountNeed<'_>> {
        let mut out = Vec::new();
        let mut todo = vec![self];
        while let Some(c) = todo.pop() {
            match c {
                Constraint::Count(inner, n) => out.push(CountNeed {
                    what: inner,
                    count: *n,
                    distinct: false,
                }),
                Constraint::Counts(parts) => out.extend(parts.iter().map(|(p, n)| CountNeed {
                    what: p,
                    count: *n,
                    distinct: true,
                })),
                Constraint::And(parts) | Constraint::Or(parts) | Constraint::Matching(parts) => {
                    todo.extend(parts.iter().rev())
                }
                Constraint::Feature(_) => {}
            }
        }
        out
    }

    /// Every feature name mentioned, in order of appearance.
    pub fn feature_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut todo = vec![self];
        while let Some(c) = todo.pop() {
            match c {
                Constraint::Feature(f) => out.push(f.as_str()),
                Constraint::And(parts) | Constraint::Or(parts) | Constraint::Matching(parts) => {
                    todo.extend(parts.iter().rev());
                }
                Constraint::Count(inner, _) => todo.push(inner),
                Constraint::Counts(parts) => todo.extend(parts.iter().rev().map(|(p, _)| p)),
            }
        }
        out
    }
}

impl fmt::Display for Constraint {
    /// Canonical text: `&` and `|` without spaces, parentheses only where
    /// needed. It parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn joined(f: &mut fmt::Formatter<'_>, parts: &[Constraint], sep: &str) -> fmt::Result {
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                operand(f, p, sep == "&")?;
            }
            Ok(())
        }
        /// A part of an AND (`in_and`) or an OR: an OR inside an AND needs
        /// parentheses, as does a group carrying a count.
        fn operand(f: &mut fmt::Formatter<'_>, c: &Constraint, in_and: bool) -> fmt::Result {
            match c {
                Constraint::Or(_) if in_and => write!(f, "({c})"),
                _ => write!(f, "{c}"),
            }
        }
        fn counted(f: &mut fmt::Formatter<'_>, c: &Constraint, n: u32) -> fmt::Result {
            match c {
                Constraint::Feature(_) => write!(f, "{c}*{n}"),
                _ => write!(f, "({c})*{n}"),
            }
        }
        match self {
            Constraint::Feature(name) => f.write_str(name),
            Constraint::And(parts) => joined(f, parts, "&"),
            Constraint::Or(parts) => joined(f, parts, "|"),
            Constraint::Count(inner, n) => counted(f, inner, *n),
            Constraint::Matching(parts) => {
                f.write_str("[")?;
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str("|")?;
                    }
                    match p {
                        Constraint::Feature(_) => write!(f, "{p}")?,
                        _ => write!(f, "({p})")?,
                    }
                }
                f.write_str("]")
            }
            Constraint::Counts(parts) => {
                f.write_str("[")?;
                for (i, (p, n)) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str("&")?;
                    }
                    counted(f, p, *n)?;
                }
                f.write_str("]")
            }
        }
    }
}

impl std::str::FromStr for Constraint {
    type Err = ConstraintError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Constraint::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feat(s: &str) -> Constraint {
        Constraint::Feature(s.to_string())
    }

    fn feats(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_name() {
        assert_eq!(Constraint::parse("gpu"), Ok(feat("gpu")));
        assert_eq!(Constraint::parse("ib-fdr.v2"), Ok(feat("ib-fdr.v2")));
        // Any other character is part of a name, which then matches no node.
        assert_eq!(Constraint::parse("a b"), Ok(feat("a b")));
    }

    #[test]
    fn and_or_precedence() {
        assert_eq!(
            Constraint::parse("a&b|c"),
            Ok(Constraint::Or(vec![
                Constraint::And(vec![feat("a"), feat("b")]),
                feat("c")
            ]))
        );
        assert_eq!(
            Constraint::parse("a|b&c"),
            Ok(Constraint::Or(vec![
                feat("a"),
                Constraint::And(vec![feat("b"), feat("c")])
            ]))
        );
        assert_eq!(
            Constraint::parse("a&(b|c)"),
            Ok(Constraint::And(vec![
                feat("a"),
                Constraint::Or(vec![feat("b"), feat("c")])
            ]))
        );
        assert_eq!(
            Constraint::parse("(a)&b&c"),
            Ok(Constraint::And(vec![feat("a"), feat("b"), feat("c")]))
        );
        // The older comma is an AND.
        assert_eq!(Constraint::parse("a,b"), Constraint::parse("a&b"));
    }

    #[test]
    fn per_node_matching() {
        let c = Constraint::parse("a&(b|c)").unwrap();
        assert!(c.matches(&feats(&["a", "c"])));
        assert!(c.matches(&feats(&["b", "a"])));
        assert!(!c.matches(&feats(&["a"])));
        assert!(!c.matches(&feats(&["b", "c"])));
        assert!(!c.matches(&[]));
        // Features are case-sensitive, as in Slurm.
        assert!(!feat("GPU").matches(&feats(&["gpu"])));
        // A count asks nothing of each node; brackets ask one of their parts.
        let c = Constraint::parse("a*2&b").unwrap();
        assert!(c.matches(&feats(&["b"])));
        assert!(!c.matches(&feats(&["a"])));
        let c = Constraint::parse("[a|b]").unwrap();
        assert!(c.matches(&feats(&["b"])));
        assert!(!c.matches(&feats(&["c"])));
        let c = Constraint::parse("[a*1&b*2]").unwrap();
        assert!(c.matches(&feats(&["a"])) && c.matches(&feats(&["b"])));
        assert!(!c.matches(&feats(&["c"])));
    }

    /// Every expression here was given to Slurm 22.05's sbatch on a node
    /// with features `fa,fb`: these it queued.
    #[test]
    fn what_slurm_accepts() {
        for s in [
            "[fa|fb]",
            "fa*2",
            "fa,fb",
            "fa|",
            "[fa*1&fb*1]",
            "(fa|fb)&fa",
            "fa&fb|fa",
            "(fa)",
            "[fa]",
            "fa|fb&fa",
            "[fa|fb]&fa",
            "fa&[fa|fb]",
            "fa&",
            "fa*1&fb",
            "fa,fb*2",
            "[fa*1&fb*1]&fa",
            "fa&(fb)",
            "(fa)&(fb)",
            "(fa&fb)|(fa)",
            "[fa*2]",
            "fa*2|fb",
            "fa*2&fb*1",
            "fa*99",
            "fa*1x",
            "[fa|fb|fa]",
            "[(fa)|fb]",
            "([fa|fb])",
            "fa,",
            "fa|fb,",
            "[fa|fb],",
            "fa&fb&",
            "fa|(fb&fa)",
            "fa|(fb|fa)",
            "(fa|fb)|(fa&fb)",
            "[(fa&fb)*1&fa*1]",
            "[(fa&fb)|fa]",
            "(fa|fb)*2",
            "fa|(fb)",
            "[fa|(fb&fa)]",
            "(fa&[fa|fb])",
            "[fa|fb]&(fa|fb)",
            "fa*1*2",
            "[fa*1,fb*1]",
            "[fa|fb],fa",
            "(fa,fb)",
            "fa*2 ",
            "fa*1&",
            "[fa|fb]&",
            "[fa|fb]|",
            "(fa&fb)*2",
            "[fa|fb]fa",
            "(fa)fb",
            "fa*01",
            "fa*2147483647",
        ] {
            let c = Constraint::parse(s);
            assert!(c.is_ok(), "{s}: {c:?}");
            let names = c.unwrap_or_else(|_| feat("")).feature_names().join(",");
            assert!(
                names.split(',').all(|n| n == "fa" || n == "fb"),
                "{s}: {names}"
            );
        }
    }

    /// ... and these it refused as an invalid feature specification.
    #[test]
    fn what_slurm_refuses() {
        for s in [
            "[fa&fb]",
            "fa*",
            "fa*0",
            "[fa|fb]*2",
            "[fa*2|fb]",
            "[(fa|fb)&fa]",
            "&fa",
            "|fa",
            "fa||fb",
            "fa&|fb",
            "[fa|fb][fa]",
            "[fa|fb]|[fa]",
            "[fa|fb]&[fa]",
            "((fa))",
            "(fa*2)",
            "[fa&fb*2]",
            "fa*-1",
            "fa**2",
            "(fa",
            "fa)",
            "fa)(",
            "[fa",
            "fa]",
            "[]",
            "()",
            "fa,|fb",
            "fa,,fb",
            ",fa",
            "fa&(",
            "[fa*1|fb*1]",
            "[fa*1&fb]",
            "[fa&fb*1]",
            "[fa|fb&fa]",
            "[fa&fb|fa]",
            "[fa|fb|]",
            "[fa*1&]",
            "(fa|)",
            "fa[fb]",
            "fa(fb)",
            "fa*1(fb)",
            "fa*00",
            "fa*1000000000000",
            "fa*2147483648",
            "",
        ] {
            assert!(Constraint::parse(s).is_err(), "{s} was accepted");
        }
    }

    #[test]
    fn errors_say_what_and_where() {
        assert_eq!(Constraint::parse(""), Err(ConstraintError::Empty));
        assert!(matches!(
            Constraint::parse("&a"),
            Err(ConstraintError::Unexpected {
                pos: 0,
                found: '&',
                ..
            })
        ));
        assert!(matches!(
            Constraint::parse("(a|b"),
            Err(ConstraintError::Unclosed {
                pos: 0,
                open: '(',
                ..
            })
        ));
        assert!(matches!(
            Constraint::parse("a&[b|c"),
            Err(ConstraintError::Unclosed {
                pos: 2,
                open: '[',
                ..
            })
        ));
        assert!(matches!(
            Constraint::parse("a&(b|"),
            Err(ConstraintError::UnexpectedEnd { .. })
        ));
        assert!(matches!(
            Constraint::parse("a&((b))"),
            Err(ConstraintError::NestedParentheses { pos: 3, .. })
        ));
        assert!(matches!(
            Constraint::parse("[a]&[b]"),
            Err(ConstraintError::SecondBracket { pos: 4, .. })
        ));
        assert!(matches!(
            Constraint::parse("a*0"),
            Err(ConstraintError::BadCount { pos: 1, .. })
        ));
        assert!(matches!(
            Constraint::parse("(a*2)"),
            Err(ConstraintError::CountNotAllowed { pos: 2, .. })
        ));
        assert!(matches!(
            Constraint::parse("x&[a&b]"),
            Err(ConstraintError::BadBracket { pos: 2, .. })
        ));
        let long = "a".repeat(MAX_LEN + 1);
        assert!(matches!(
            Constraint::parse(&long),
            Err(ConstraintError::TooLong { .. })
        ));
        let msg = Constraint::parse("a&((b))").unwrap_err().to_string();
        assert!(msg.contains("byte 3") && msg.contains("a&((b))"), "{msg}");
    }

    #[test]
    fn non_ascii_names() {
        assert_eq!(Constraint::parse("größe"), Ok(feat("größe")));
        assert!(matches!(
            Constraint::parse("é&&x"),
            Err(ConstraintError::Unexpected { pos: 3, .. })
        ));
    }

    #[test]
    fn counts_and_brackets_are_read_as_slurm_means_them() {
        assert_eq!(
            Constraint::parse("a*2&b"),
            Ok(Constraint::And(vec![
                Constraint::Count(Box::new(feat("a")), 2),
                feat("b")
            ]))
        );
        assert_eq!(
            Constraint::parse("[a*2&(b|c)*3]"),
            Ok(Constraint::Counts(vec![
                (feat("a"), 2),
                (Constraint::Or(vec![feat("b"), feat("c")]), 3)
            ]))
        );
        assert_eq!(
            Constraint::parse("[a|b&c|d]x").map_err(|_| ()),
            Err(()),
            "a bracket mixes no operators"
        );
        assert_eq!(
            Constraint::parse("[a|(b&c)]"),
            Ok(Constraint::Matching(vec![
                feat("a"),
                Constraint::And(vec![feat("b"), feat("c")])
            ]))
        );
        // Slurm ignores what follows a count or a closing bracket.
        assert_eq!(Constraint::parse("a*2x"), Constraint::parse("a*2"));
        assert_eq!(Constraint::parse("[a|b]c"), Constraint::parse("[a|b]"));
    }

    #[test]
    fn alternatives_of_a_matching_or() {
        let c = Constraint::parse("x&[a|b&c]").ok();
        assert_eq!(c, None, "mixed operators in brackets");
        let c = Constraint::parse("x&[a|(b&c)]").unwrap();
        let alts: Vec<String> = c.alternatives().iter().map(|a| a.to_string()).collect();
        assert_eq!(alts, vec!["x&a", "x&b&c"]);
        let c = Constraint::parse("x|y").unwrap();
        assert_eq!(c.alternatives(), vec![c.clone()]);
    }

    #[test]
    fn node_counts_in_order() {
        let c = Constraint::parse("a*2&(b|c)*3").unwrap();
        let needs: Vec<(String, u32, bool)> = c
            .node_counts()
            .iter()
            .map(|n| (n.what.to_string(), n.count, n.distinct))
            .collect();
        assert_eq!(
            needs,
            vec![("a".into(), 2, false), ("b|c".into(), 3, false)]
        );
        let c = Constraint::parse("x&[a*1&b*4]").unwrap();
        let needs: Vec<(String, u32, bool)> = c
            .node_counts()
            .iter()
            .map(|n| (n.what.to_string(), n.count, n.distinct))
            .collect();
        assert_eq!(needs, vec![("a".into(), 1, true), ("b".into(), 4, true)]);
        assert!(Constraint::parse("a&b").unwrap().node_counts().is_empty());
    }

    #[test]
    fn kept_text_writes_the_comma_as_and() {
        assert_eq!(as_kept("a,b*2|[c,d]"), "a&b*2|[c&d]");
        assert_eq!(as_kept("a&b"), "a&b");
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "a",
            "a&b",
            "a|b",
            "a&(b|c)",
            "a|b&c",
            "(a|b)&(c|d)",
            "a*2",
            "(a|b)*2&c",
            "[a|b]",
            "[a|(b&c)]&d",
            "[a*1&(b|c)*2]",
            "x|[a|b]&y",
        ] {
            let c = Constraint::parse(s).unwrap();
            assert_eq!(Constraint::parse(&c.to_string()), Ok(c.clone()), "{s}");
        }
        assert_eq!(Constraint::parse("(a|b)&c").unwrap().to_string(), "(a|b)&c");
        assert_eq!(Constraint::parse("(a&b)|c").unwrap().to_string(), "a&b|c");
        assert_eq!(Constraint::parse("a,b*2").unwrap().to_string(), "a&b*2");
    }

    #[test]
    fn feature_names_in_order() {
        let c = Constraint::parse("x&(y|z)&w").unwrap();
        assert_eq!(c.feature_names(), vec!["x", "y", "z", "w"]);
        let c = Constraint::parse("v*2&[(x|y)*1&z*3]").unwrap();
        assert_eq!(c.feature_names(), vec!["v", "x", "y", "z"]);
    }

    /// Expressions the grammar can print: ORs of ANDs whose parts are
    /// features or parenthesised ORs of ANDs of features.
    fn arb_constraint() -> impl Strategy<Value = Constraint> {
        let leaf = || "[a-d]".prop_map(Constraint::Feature);
        let flat = prop::collection::vec(prop::collection::vec(leaf(), 1..3), 1..3)
            .prop_map(|ors| Constraint::Or(ors.into_iter().map(Constraint::And).collect()));
        let operand = prop_oneof![leaf(), flat];
        prop::collection::vec(prop::collection::vec(operand, 1..3), 1..3)
            .prop_map(|ors| Constraint::Or(ors.into_iter().map(Constraint::And).collect()))
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,64}") {
            let _ = Constraint::parse(&s);
        }

        #[test]
        fn parse_never_panics_on_operator_soup(s in "[a&,|() \\[\\]*0-9]{0,40}") {
            if let Ok(c) = Constraint::parse(&s) {
                let _ = c.alternatives();
                let _ = c.node_counts();
                let _ = c.to_string();
            }
        }

        #[test]
        fn printed_form_means_the_same(c in arb_constraint(),
                                       node in prop::sample::subsequence(vec!["a", "b", "c", "d"], 0..=4)) {
            let text = c.to_string();
            let back = Constraint::parse(&text);
            prop_assert!(back.is_ok(), "{} did not parse: {:?}", text, back);
            let back = back.unwrap_or_else(|_| c.clone());
            let node: Vec<String> = node.into_iter().map(String::from).collect();
            prop_assert_eq!(back.matches(&node), c.matches(&node));
        }

        /// Whatever parses prints as something that parses to the same.
        #[test]
        fn parsed_soup_round_trips(s in "[ab&,|()\\[\\]*12]{1,24}") {
            if let Ok(c) = Constraint::parse(&s) {
                let text = c.to_string();
                prop_assert_eq!(Constraint::parse(&text), Ok(c), "{} printed as {}", s, text);
            }
        }
    }
}
