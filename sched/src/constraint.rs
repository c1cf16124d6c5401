//! `--constraint` expressions over node features.
//!
//! Supported: a feature name (`gpu`), AND (`a&b`), OR (`a|b`) and
//! parentheses. `&` binds tighter than `|`, so `a&b|c` is `(a&b)|c`. Each
//! allocated node must satisfy the whole expression on its own. Slurm's
//! matching OR (`[a|b]`, all nodes alike) and feature counts (`a*2`) are
//! refused with [`ConstraintError::Unsupported`] rather than read as
//! something else.
//!
//! Parsing is iterative over a bounded input, so no string can exhaust the
//! stack or memory: at most [`MAX_LEN`] bytes and [`MAX_DEPTH`] nested
//! parentheses.

use std::fmt;

use thiserror::Error;

/// Longest expression accepted, in bytes.
pub const MAX_LEN: usize = 4096;
/// Deepest parenthesis nesting accepted.
pub const MAX_DEPTH: usize = 32;

/// A parsed `--constraint`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Constraint {
    Feature(String),
    /// Every part holds (two or more parts).
    And(Vec<Constraint>),
    /// At least one part holds (two or more parts).
    Or(Vec<Constraint>),
}

/// Why a `--constraint` string was refused. Positions are byte offsets.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConstraintError {
    #[error("empty constraint")]
    Empty,
    #[error("constraint is {len} bytes long, the limit is {max}")]
    TooLong { len: usize, max: usize },
    #[error("constraint nests parentheses deeper than {max} at byte {pos}")]
    TooDeep { pos: usize, max: usize },
    #[error("unexpected {found:?} at byte {pos} of constraint {input:?}")]
    Unexpected {
        input: String,
        pos: usize,
        found: char,
    },
    #[error("constraint {input:?} ends where a feature name was expected")]
    UnexpectedEnd { input: String },
    #[error("unclosed parenthesis at byte {pos} of constraint {input:?}")]
    Unclosed { input: String, pos: usize },
    #[error("{what} (at byte {pos} of constraint {input:?}) is not supported")]
    Unsupported {
        input: String,
        pos: usize,
        what: &'static str,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Name(&'a str),
    And,
    Or,
    Open,
    Close,
}

fn is_name_char(c: char) -> bool {
    !(c.is_whitespace() || c.is_control() || "&|()[]*!,".contains(c))
}

fn tokenize(input: &str) -> Result<Vec<(usize, Tok<'_>)>, ConstraintError> {
    let mut out = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        let tok = match c {
            '&' => Tok::And,
            '|' => Tok::Or,
            '(' => Tok::Open,
            ')' => Tok::Close,
            '[' | ']' => {
                return Err(ConstraintError::Unsupported {
                    input: input.to_string(),
                    pos,
                    what: "matching OR with brackets",
                })
            }
            '*' => {
                return Err(ConstraintError::Unsupported {
                    input: input.to_string(),
                    pos,
                    what: "a feature count",
                })
            }
            c if is_name_char(c) => {
                let mut end = pos + c.len_utf8();
                while let Some(&(p, n)) = chars.peek() {
                    if !is_name_char(n) {
                        break;
                    }
                    end = p + n.len_utf8();
                    chars.next();
                }
                Tok::Name(&input[pos..end])
            }
            other => {
                return Err(ConstraintError::Unexpected {
                    input: input.to_string(),
                    pos,
                    found: other,
                })
            }
        };
        out.push((pos, tok));
    }
    Ok(out)
}

/// One open level of the parse: the finished AND-groups of an OR, and the
/// AND-group being built.
#[derive(Default)]
struct Level {
    open_pos: usize,
    alternatives: Vec<Constraint>,
    conjuncts: Vec<Constraint>,
}

impl Level {
    fn close_conjunction(&mut self) {
        let parts = std::mem::take(&mut self.conjuncts);
        self.alternatives.push(join(parts, Op::And));
    }

    fn finish(mut self) -> Constraint {
        self.close_conjunction();
        join(self.alternatives, Op::Or)
    }
}

/// Which operator a group of parts is joined with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
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

impl Constraint {
    /// Parses a `--constraint` value.
    pub fn parse(input: &str) -> Result<Constraint, ConstraintError> {
        if input.len() > MAX_LEN {
            return Err(ConstraintError::TooLong {
                len: input.len(),
                max: MAX_LEN,
            });
        }
        let toks = tokenize(input)?;
        if toks.is_empty() {
            return Err(ConstraintError::Empty);
        }
        let unexpected = |pos: usize| ConstraintError::Unexpected {
            input: input.to_string(),
            pos,
            found: input[pos..].chars().next().unwrap_or(' '),
        };
        let mut stack: Vec<Level> = vec![Level::default()];
        // True when the next token must start an operand (name or `(`).
        let mut want_operand = true;
        for &(pos, tok) in &toks {
            match (tok, want_operand) {
                (Tok::Name(n), true) => {
                    if let Some(top) = stack.last_mut() {
                        top.conjuncts.push(Constraint::Feature(n.to_string()));
                    }
                    want_operand = false;
                }
                (Tok::Open, true) => {
                    if stack.len() > MAX_DEPTH {
                        return Err(ConstraintError::TooDeep {
                            pos,
                            max: MAX_DEPTH,
                        });
                    }
                    stack.push(Level {
                        open_pos: pos,
                        ..Level::default()
                    });
                }
                (Tok::And, false) => want_operand = true,
                (Tok::Or, false) => {
                    if let Some(top) = stack.last_mut() {
                        top.close_conjunction();
                    }
                    want_operand = true;
                }
                (Tok::Close, false) if stack.len() > 1 => {
                    if let Some(level) = stack.pop() {
                        let inner = level.finish();
                        if let Some(top) = stack.last_mut() {
                            top.conjuncts.push(inner);
                        }
                    }
                }
                _ => return Err(unexpected(pos)),
            }
        }
        if want_operand {
            return Err(ConstraintError::UnexpectedEnd {
                input: input.to_string(),
            });
        }
        if stack.len() > 1 {
            let pos = stack.last().map_or(0, |l| l.open_pos);
            return Err(ConstraintError::Unclosed {
                input: input.to_string(),
                pos,
            });
        }
        match stack.pop() {
            Some(level) => Ok(level.finish()),
            None => Err(ConstraintError::Empty),
        }
    }

    /// Whether a node with `features` satisfies the expression.
    pub fn matches(&self, features: &[String]) -> bool {
        match self {
            Constraint::Feature(f) => features.iter().any(|x| x == f),
            Constraint::And(parts) => parts.iter().all(|p| p.matches(features)),
            Constraint::Or(parts) => parts.iter().any(|p| p.matches(features)),
        }
    }

    /// Every feature name mentioned, in order of appearance.
    pub fn feature_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut todo = vec![self];
        while let Some(c) = todo.pop() {
            match c {
                Constraint::Feature(f) => out.push(f.as_str()),
                Constraint::And(parts) | Constraint::Or(parts) => {
                    todo.extend(parts.iter().rev());
                }
            }
        }
        out
    }
}

impl fmt::Display for Constraint {
    /// Canonical text: `&` and `|` without spaces, parentheses only where an
    /// OR sits inside an AND. It parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Constraint::Feature(name) => f.write_str(name),
            Constraint::And(parts) => {
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str("&")?;
                    }
                    match p {
                        Constraint::Or(_) => write!(f, "({p})")?,
                        _ => write!(f, "{p}")?,
                    }
                }
                Ok(())
            }
            Constraint::Or(parts) => {
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str("|")?;
                    }
                    write!(f, "{p}")?;
                }
                Ok(())
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
            Constraint::parse("((a))&b&c"),
            Ok(Constraint::And(vec![feat("a"), feat("b"), feat("c")]))
        );
    }

    #[test]
    fn matching() {
        let c = Constraint::parse("a&(b|c)").unwrap();
        assert!(c.matches(&feats(&["a", "c"])));
        assert!(c.matches(&feats(&["b", "a"])));
        assert!(!c.matches(&feats(&["a"])));
        assert!(!c.matches(&feats(&["b", "c"])));
        assert!(!c.matches(&[]));
        // Features are case-sensitive, as in Slurm.
        assert!(!feat("GPU").matches(&feats(&["gpu"])));
    }

    #[test]
    fn errors() {
        assert_eq!(Constraint::parse(""), Err(ConstraintError::Empty));
        assert!(matches!(
            Constraint::parse("a&"),
            Err(ConstraintError::UnexpectedEnd { .. })
        ));
        assert!(matches!(
            Constraint::parse("&a"),
            Err(ConstraintError::Unexpected {
                pos: 0,
                found: '&',
                ..
            })
        ));
        assert!(matches!(
            Constraint::parse("a b"),
            Err(ConstraintError::Unexpected {
                pos: 1,
                found: ' ',
                ..
            })
        ));
        assert!(matches!(
            Constraint::parse("(a|b"),
            Err(ConstraintError::Unclosed { pos: 0, .. })
        ));
        assert!(matches!(
            Constraint::parse("a)"),
            Err(ConstraintError::Unexpected {
                pos: 1,
                found: ')',
                ..
            })
        ));
        assert!(matches!(
            Constraint::parse("()"),
            Err(ConstraintError::Unexpected { pos: 1, .. })
        ));
        assert!(matches!(
            Constraint::parse("[a|b]"),
            Err(ConstraintError::Unsupported { pos: 0, .. })
        ));
        assert!(matches!(
            Constraint::parse("a*2"),
            Err(ConstraintError::Unsupported { pos: 1, .. })
        ));
        let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
        assert!(matches!(
            Constraint::parse(&deep),
            Err(ConstraintError::TooDeep { .. })
        ));
        let long = "a".repeat(MAX_LEN + 1);
        assert!(matches!(
            Constraint::parse(&long),
            Err(ConstraintError::TooLong { .. })
        ));
        // Error messages follow the house style.
        let msg = Constraint::parse("a&").unwrap_err().to_string();
        assert!(msg.starts_with("constraint"), "{msg}");
    }

    #[test]
    fn non_ascii_names_and_errors() {
        assert_eq!(Constraint::parse("größe"), Ok(feat("größe")));
        assert!(matches!(
            Constraint::parse("é&\u{7}"),
            Err(ConstraintError::Unexpected { pos: 3, .. })
        ));
    }

    #[test]
    fn display_round_trips() {
        for s in ["a", "a&b", "a|b", "a&(b|c)", "a|b&c", "(a|b)&(c|d)"] {
            let c = Constraint::parse(s).unwrap();
            assert_eq!(Constraint::parse(&c.to_string()), Ok(c.clone()), "{s}");
        }
        assert_eq!(Constraint::parse("(a|b)&c").unwrap().to_string(), "(a|b)&c");
        assert_eq!(Constraint::parse("(a&b)|c").unwrap().to_string(), "a&b|c");
    }

    #[test]
    fn feature_names_in_order() {
        let c = Constraint::parse("x&(y|z)&w").unwrap();
        assert_eq!(c.feature_names(), vec!["x", "y", "z", "w"]);
    }

    fn arb_constraint() -> impl Strategy<Value = Constraint> {
        let leaf = "[a-d]".prop_map(Constraint::Feature);
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 2..4).prop_map(Constraint::And),
                prop::collection::vec(inner, 2..4).prop_map(Constraint::Or),
            ]
        })
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,64}") {
            let _ = Constraint::parse(&s);
        }

        #[test]
        fn parse_never_panics_on_operator_soup(s in "[a&|() \\[\\]*]{0,40}") {
            let _ = Constraint::parse(&s);
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
    }
}
