//! Command-line reading the way GNU `getopt_long` does it, shared by every
//! command (`sbatch`, `squeue`, `sinfo`, `scancel`, `scontrol`).
//!
//! Users and wrapper scripts rely on glibc's exact behaviour, not on a
//! tidier dialect: long names may be shortened while they stay
//! unambiguous, `--opt=value` and `--opt value` are the same, short options
//! bundle (`-hl`, `-vvN2`, `-ofoo`), optional arguments exist only in the
//! attached form (`--exclusive=user`, `-kfoo`), `--` ends the options, and
//! operands may sit between options (glibc permutes them to the end) unless
//! the command stops at its first operand (`sbatch job.sh --its-own-flag`).
//! The error texts are glibc's, down to quoting the whole word
//! (`unrecognized option '--bogus=1'`) and listing, for an ambiguous prefix,
//! the first match and every match that is a different option.
//!
//! The engine only splits words; each command maps the keys to its own
//! option values. [`Getopt`] yields one option at a time, so a command can
//! act on `--version` or `--help` the moment it is read, before a later
//! word would have been refused, exactly as the C commands exit from inside
//! their `getopt_long` loop. [`split`] reads everything at once.

use std::fmt;

pub use slurm_common::signal::parse_signal;

use crate::output::Output;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    No,
    Required,
    /// Only in the attached form (`--exclusive=user`, `-kfoo`).
    Optional,
}

/// A long option: its full name, whether it takes a value, and the key the
/// command maps it by. Aliases share a key.
#[derive(Debug, Clone, Copy)]
pub struct LongOpt<K> {
    pub name: &'static str,
    pub has_arg: HasArg,
    pub key: K,
}

/// A short option.
#[derive(Debug, Clone, Copy)]
pub struct ShortOpt<K> {
    pub letter: char,
    pub has_arg: HasArg,
    pub key: K,
}

/// One recognised option occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<K> {
    pub key: K,
    /// The value, when one was given.
    pub value: Option<String>,
    /// How the user spelled it (`--time`, `-t`), for error messages.
    pub spelled: String,
}

/// What the arguments hold: the options in order, then the operands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<K> {
    pub options: Vec<Found<K>>,
    pub operands: Vec<String>,
}

/// An argument getopt refuses, worded as glibc words it (the program name
/// and `: ` come first when printed; see [`report`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GetoptError {
    /// The word after `--`, value included, as the user typed it.
    #[error("unrecognized option '--{0}'")]
    UnknownLong(String),
    #[error("invalid option -- '{0}'")]
    UnknownShort(char),
    /// `given` is the word after `--` as typed; `candidates` are the first
    /// matching name and every later match that is a different option.
    #[error(
        "option '--{given}' is ambiguous; possibilities:{}",
        Quoted(candidates)
    )]
    Ambiguous {
        given: String,
        candidates: Vec<&'static str>,
    },
    #[error("option '--{0}' requires an argument")]
    LongNeedsArgument(&'static str),
    #[error("option requires an argument -- '{0}'")]
    ShortNeedsArgument(char),
    #[error("option '--{0}' doesn't allow an argument")]
    TakesNoArgument(&'static str),
}

/// ` '--a' '--b'`, as glibc lists the candidates of an ambiguous prefix.
struct Quoted<'a>(&'a [&'static str]);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for name in self.0 {
            write!(f, " '--{name}'")?;
        }
        Ok(())
    }
}

/// Prints a getopt refusal the way every Slurm command does: the glibc line
/// prefixed with the program as it was called (`argv[0]`: `squeue`,
/// `/usr/bin/squeue`), then the pointer to `--help`, which names `prog`.
/// The exit status is the command's business (1 for most, 255 for
/// `sbatch`).
pub fn report(out: &mut Output<'_>, prog: &str, called_as: &str, e: &GetoptError) {
    out.error_line(&format!("{called_as}: {e}"));
    out.error_line(&format!("Try \"{prog} --help\" for more information"));
}

/// The program as it was called (`argv[0]`), or `prog` without one.
pub fn called_as(args: &[std::ffi::OsString], prog: &str) -> String {
    args.first()
        .map_or_else(|| prog.to_owned(), |a| a.to_string_lossy().into_owned())
}

/// Where operands may appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// Options end at the first operand (getopt's `+`): the rest, that
    /// operand included, are operands.
    StopAtOperand,
    /// Operands and options mix; all options are read (glibc's default).
    Permute,
}

/// Why a long name matched no single option.
enum Miss {
    Unknown,
    Ambiguous(Vec<&'static str>),
}

fn lookup<'t, K: Copy + PartialEq>(
    longs: &'t [LongOpt<K>],
    name: &str,
) -> Result<&'t LongOpt<K>, Miss> {
    if let Some(exact) = longs.iter().find(|o| o.name == name) {
        return Ok(exact);
    }
    let mut matches = longs.iter().filter(|o| o.name.starts_with(name));
    let Some(first) = matches.next() else {
        return Err(Miss::Unknown);
    };
    // Entries naming the same option (an alias with the same key and
    // argument) do not make a prefix ambiguous; glibc lists only the first
    // match and the entries that differ from it.
    let differing: Vec<&'static str> = matches
        .filter(|o| o.key != first.key || o.has_arg != first.has_arg)
        .map(|o| o.name)
        .collect();
    if differing.is_empty() {
        Ok(first)
    } else {
        Err(Miss::Ambiguous(
            std::iter::once(first.name).chain(differing).collect(),
        ))
    }
}

/// Finds a long option by its full name or an unambiguous prefix.
pub fn find_long<'t, K: Copy + PartialEq>(
    longs: &'t [LongOpt<K>],
    given: &str,
) -> Result<&'t LongOpt<K>, GetoptError> {
    lookup(longs, given).map_err(|miss| match miss {
        Miss::Unknown => GetoptError::UnknownLong(given.to_owned()),
        Miss::Ambiguous(candidates) => GetoptError::Ambiguous {
            given: given.to_owned(),
            candidates,
        },
    })
}

/// Reads options one at a time, as a `getopt_long` loop does. After the
/// last option (or the first error) it yields `None`; [`Getopt::into_operands`]
/// then gives the operands.
pub struct Getopt<'a, K> {
    args: &'a [String],
    shorts: &'a [ShortOpt<K>],
    longs: &'a [LongOpt<K>],
    ordering: Ordering,
    /// Index of the next argument to read.
    next: usize,
    /// Inside a bundle of short options: the argument and the byte offset
    /// of the next letter.
    cluster: Option<(usize, usize)>,
    operands: Vec<String>,
    stop_before: Option<&'a dyn Fn(&str) -> bool>,
    done: bool,
}

impl<'a, K: Copy + PartialEq> Getopt<'a, K> {
    /// Reads `args` (without the program name).
    pub fn new(
        args: &'a [String],
        shorts: &'a [ShortOpt<K>],
        longs: &'a [LongOpt<K>],
        ordering: Ordering,
    ) -> Self {
        Getopt {
            args,
            shorts,
            longs,
            ordering,
            next: 0,
            cluster: None,
            operands: Vec::new(),
            stop_before: None,
            done: false,
        }
    }

    /// Ends option reading before the first argument `stop` accepts: it and
    /// everything after it are operands. `scontrol` uses this so the flags
    /// of `setdebugflags -Backfill` are not read as its own options.
    pub fn stop_before(mut self, stop: &'a dyn Fn(&str) -> bool) -> Self {
        self.stop_before = Some(stop);
        self
    }

    /// The operands: those passed over so far, then every argument not read.
    pub fn into_operands(self) -> Vec<String> {
        let mut operands = self.operands;
        if let Some(rest) = self.args.get(self.next..) {
            operands.extend(rest.iter().cloned());
        }
        operands
    }

    fn finish_with_rest(&mut self) {
        if let Some(rest) = self.args.get(self.next..) {
            self.operands.extend(rest.iter().cloned());
        }
        self.next = self.args.len();
        self.done = true;
    }

    fn fail(&mut self, e: GetoptError) -> Option<Result<Found<K>, GetoptError>> {
        self.done = true;
        self.cluster = None;
        Some(Err(e))
    }

    /// Takes the next argument as an option's value.
    fn take_next(&mut self) -> Option<String> {
        let value = self.args.get(self.next)?.clone();
        self.next += 1;
        Some(value)
    }

    fn long(&mut self, text: &str) -> Option<Result<Found<K>, GetoptError>> {
        let (name, attached) = match text.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (text, None),
        };
        let opt = match lookup(self.longs, name) {
            Ok(opt) => *opt,
            Err(Miss::Unknown) => return self.fail(GetoptError::UnknownLong(text.to_owned())),
            Err(Miss::Ambiguous(candidates)) => {
                return self.fail(GetoptError::Ambiguous {
                    given: text.to_owned(),
                    candidates,
                })
            }
        };
        let value = match (opt.has_arg, attached) {
            (HasArg::No, Some(_)) => return self.fail(GetoptError::TakesNoArgument(opt.name)),
            (HasArg::No, None) => None,
            (HasArg::Optional, attached) => attached,
            (HasArg::Required, Some(v)) => Some(v),
            (HasArg::Required, None) => match self.take_next() {
                Some(v) => Some(v),
                None => return self.fail(GetoptError::LongNeedsArgument(opt.name)),
            },
        };
        Some(Ok(Found {
            key: opt.key,
            value,
            spelled: format!("--{}", opt.name),
        }))
    }

    fn short(&mut self, index: usize, offset: usize) -> Option<Result<Found<K>, GetoptError>> {
        let args = self.args;
        let word = args.get(index).map(String::as_str).unwrap_or("");
        let rest = word.get(offset..).unwrap_or("");
        let Some(c) = rest.chars().next() else {
            self.cluster = None;
            return self.next();
        };
        let tail = &rest[c.len_utf8()..];
        self.cluster = (!tail.is_empty()).then_some((index, offset + c.len_utf8()));
        let Some(opt) = self.shorts.iter().find(|o| o.letter == c).copied() else {
            return self.fail(GetoptError::UnknownShort(c));
        };
        let value = match opt.has_arg {
            HasArg::No => None,
            HasArg::Optional => {
                self.cluster = None;
                (!tail.is_empty()).then(|| tail.to_owned())
            }
            HasArg::Required => {
                self.cluster = None;
                if !tail.is_empty() {
                    Some(tail.to_owned())
                } else {
                    match self.take_next() {
                        Some(v) => Some(v),
                        None => return self.fail(GetoptError::ShortNeedsArgument(c)),
                    }
                }
            }
        };
        Some(Ok(Found {
            key: opt.key,
            value,
            spelled: format!("-{c}"),
        }))
    }
}

impl<K: Copy + PartialEq> Iterator for Getopt<'_, K> {
    type Item = Result<Found<K>, GetoptError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some((index, offset)) = self.cluster {
            return self.short(index, offset);
        }
        let args = self.args;
        loop {
            let Some(arg) = args.get(self.next) else {
                self.done = true;
                return None;
            };
            if self.stop_before.is_some_and(|stop| stop(arg)) {
                self.finish_with_rest();
                return None;
            }
            self.next += 1;
            if arg == "--" {
                self.finish_with_rest();
                return None;
            }
            if let Some(long) = arg.strip_prefix("--") {
                return self.long(long);
            }
            if arg.len() > 1 && arg.starts_with('-') {
                return self.short(self.next - 1, 1);
            }
            // An operand ("-" alone is one too).
            self.operands.push(arg.clone());
            if self.ordering == Ordering::StopAtOperand {
                self.finish_with_rest();
                return None;
            }
        }
    }
}

/// Splits `args` (without the program name) into options and operands,
/// stopping at the first refusal.
pub fn split<K: Copy + PartialEq>(
    args: &[String],
    shorts: &[ShortOpt<K>],
    longs: &[LongOpt<K>],
    ordering: Ordering,
) -> Result<Split<K>, GetoptError> {
    let mut getopt = Getopt::new(args, shorts, longs, ordering);
    let mut options = Vec::new();
    for found in &mut getopt {
        options.push(found?);
    }
    Ok(Split {
        options,
        operands: getopt.into_operands(),
    })
}

/// A number as C's `atoi` reads it, which is how Slurm's commands read
/// `--iterate` and `-O` widths: leading blanks, an optional sign, then as
/// many digits as there are; anything else ends the number (`"5s"` is 5,
/// `"abc"` is 0). Values beyond `i64` saturate instead of overflowing.
pub fn atoi(s: &str) -> i64 {
    strtol(s).0
}

/// What C's `strtol(s, &end, 10)` gives: the value (saturated at the `i64`
/// limits, as glibc saturates at `LONG_MIN`/`LONG_MAX`), the text after the
/// number, and whether any digit was read (when none was, the rest is the
/// whole input, as `end == s` in C).
pub fn strtol(s: &str) -> (i64, &str, bool) {
    let body = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, unsigned) = match body.as_bytes().first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return (0, s, false);
    }
    let mut n: i64 = 0;
    for b in unsigned.bytes().take(digits) {
        let d = i64::from(b - b'0');
        n = n.saturating_mul(10);
        n = if negative {
            n.saturating_sub(d)
        } else {
            n.saturating_add(d)
        };
    }
    (n, &unsigned[digits..], true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum K {
        Time,
        Parsable,
        Partition,
        Verbose,
        Version,
        Excl,
        Cluster,
        Constraint,
        Keep,
        Header,
        Long,
        Output,
    }

    const fn s(letter: char, has_arg: HasArg, key: K) -> ShortOpt<K> {
        ShortOpt {
            letter,
            has_arg,
            key,
        }
    }

    const fn l(name: &'static str, has_arg: HasArg, key: K) -> LongOpt<K> {
        LongOpt { name, has_arg, key }
    }

    const SHORTS: &[ShortOpt<K>] = &[
        s('t', HasArg::Required, K::Time),
        s('p', HasArg::Required, K::Partition),
        s('v', HasArg::No, K::Verbose),
        s('V', HasArg::No, K::Version),
        s('k', HasArg::Optional, K::Keep),
        s('h', HasArg::No, K::Header),
        s('l', HasArg::No, K::Long),
        s('o', HasArg::Required, K::Output),
    ];
    const LONGS: &[LongOpt<K>] = &[
        l("cluster", HasArg::Required, K::Cluster),
        l("cluster-constraint", HasArg::Required, K::Constraint),
        l("clusters", HasArg::Required, K::Cluster),
        l("exclusive", HasArg::Optional, K::Excl),
        l("parsable", HasArg::No, K::Parsable),
        l("partition", HasArg::Required, K::Partition),
        l("time", HasArg::Required, K::Time),
        l("verbose", HasArg::No, K::Verbose),
        l("version", HasArg::No, K::Version),
    ];

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    type Keys = Vec<(K, Option<String>)>;

    fn keys(s: &str, o: Ordering) -> (Keys, Vec<String>) {
        let sp = split(&words(s), SHORTS, LONGS, o).unwrap();
        (
            sp.options.into_iter().map(|f| (f.key, f.value)).collect(),
            sp.operands,
        )
    }

    fn v(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    fn err(s: &str) -> String {
        split(&words(s), SHORTS, LONGS, Ordering::Permute)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn forms_of_values() {
        let (o, rest) = keys("--time=5 --time 6 -t7 -t 8 -vvp x", Ordering::Permute);
        assert_eq!(
            o,
            vec![
                (K::Time, v("5")),
                (K::Time, v("6")),
                (K::Time, v("7")),
                (K::Time, v("8")),
                (K::Verbose, None),
                (K::Verbose, None),
                (K::Partition, v("x")),
            ]
        );
        assert!(rest.is_empty());
        // A required value may itself look like an option.
        let (o, _) = keys("-t -v --time --", Ordering::Permute);
        assert_eq!(o, vec![(K::Time, v("-v")), (K::Time, v("--"))]);
        // `--time=` is an empty value, not a missing one.
        let (o, _) = keys("--time=", Ordering::Permute);
        assert_eq!(o, vec![(K::Time, v(""))]);
    }

    #[test]
    fn short_clusters() {
        let (o, _) = keys("-hl -ofoo -o bar -hlo%i", Ordering::Permute);
        assert_eq!(
            o,
            vec![
                (K::Header, None),
                (K::Long, None),
                (K::Output, v("foo")),
                (K::Output, v("bar")),
                (K::Header, None),
                (K::Long, None),
                (K::Output, v("%i")),
            ]
        );
    }

    #[test]
    fn optional_values_only_attached() {
        let (o, rest) = keys(
            "--exclusive --exclusive=user --excl x -k -kfoo -vk",
            Ordering::Permute,
        );
        assert_eq!(
            o,
            vec![
                (K::Excl, None),
                (K::Excl, v("user")),
                (K::Excl, None),
                (K::Keep, None),
                (K::Keep, v("foo")),
                (K::Verbose, None),
                (K::Keep, None),
            ]
        );
        assert_eq!(rest, words("x"));
    }

    #[test]
    fn abbreviations_and_ambiguity() {
        let (o, _) = keys("--parti=a --pars --clusters b --t=1", Ordering::Permute);
        assert_eq!(o[0].0, K::Partition);
        assert_eq!(o[1].0, K::Parsable);
        assert_eq!(o[2].0, K::Cluster);
        assert_eq!(o[3].0, K::Time);
        assert_eq!(
            err("--par"),
            "option '--par' is ambiguous; possibilities: '--parsable' '--partition'"
        );
        // Only the first match and the matches that are other options are
        // listed; the alias `clusters` is not.
        assert_eq!(
            err("--clu=a"),
            "option '--clu=a' is ambiguous; possibilities: '--cluster' '--cluster-constraint'"
        );
        // An exact name wins over longer names it prefixes.
        let (o, _) = keys("--cluster x", Ordering::Permute);
        assert_eq!(o, vec![(K::Cluster, v("x"))]);
        let (o, _) = keys("--cluster-c=y", Ordering::Permute);
        assert_eq!(o, vec![(K::Constraint, v("y"))]);
        assert_eq!(find_long(LONGS, "vers").unwrap().name, "version");
        assert!(matches!(
            find_long(LONGS, "ver"),
            Err(GetoptError::Ambiguous { .. })
        ));
    }

    #[test]
    fn operand_ordering() {
        let (o, rest) = keys("-v job.sh -t 5 a", Ordering::StopAtOperand);
        assert_eq!(o.len(), 1);
        assert_eq!(rest, words("job.sh -t 5 a"));
        let (o, rest) = keys("-v 12 -t 5 13", Ordering::Permute);
        assert_eq!(o.len(), 2);
        assert_eq!(rest, words("12 13"));
        let (o, rest) = keys("a -v -- -t b", Ordering::Permute);
        assert_eq!((o.len(), rest), (1, words("a -t b")));
        let (_, rest) = keys("- x", Ordering::Permute);
        assert_eq!(rest, words("- x"));
        let (o, rest) = keys("--", Ordering::Permute);
        assert!(o.is_empty() && rest.is_empty());
    }

    #[test]
    fn one_option_at_a_time() {
        // --version acts before the bad word after it is looked at.
        let args = words("-V2 --bogus");
        let mut g = Getopt::new(&args, SHORTS, LONGS, Ordering::Permute);
        assert_eq!(g.next().unwrap().unwrap().key, K::Version);
        assert_eq!(
            g.next().unwrap().unwrap_err(),
            GetoptError::UnknownShort('2')
        );
        assert!(g.next().is_none());
        // The options end before a word the command reserves.
        let args = words("-v setdebugflags -Backfill x");
        let stop = |w: &str| w.starts_with("setdebug");
        let mut g = Getopt::new(&args, SHORTS, LONGS, Ordering::Permute).stop_before(&stop);
        assert_eq!(g.next().unwrap().unwrap().key, K::Verbose);
        assert!(g.next().is_none());
        assert_eq!(g.into_operands(), words("setdebugflags -Backfill x"));
    }

    #[test]
    fn errors_as_glibc() {
        assert_eq!(
            err("--bogus-option"),
            "unrecognized option '--bogus-option'"
        );
        assert_eq!(err("--bogus=1"), "unrecognized option '--bogus=1'");
        assert_eq!(err("-z"), "invalid option -- 'z'");
        assert_eq!(err("-vz"), "invalid option -- 'z'");
        assert_eq!(err("-vt"), "option requires an argument -- 't'");
        assert_eq!(err("--time"), "option '--time' requires an argument");
        assert_eq!(err("--tim"), "option '--time' requires an argument");
        assert_eq!(
            err("--verbose=2"),
            "option '--verbose' doesn't allow an argument"
        );
        assert_eq!(
            err("--verb=2"),
            "option '--verbose' doesn't allow an argument"
        );
        // An empty name is a prefix of every option.
        assert!(err("--=x").starts_with(
            "option '--=x' is ambiguous; possibilities: '--cluster' '--cluster-constraint' '--exclusive'"
        ));
        assert_eq!(err("-é"), "invalid option -- 'é'");
        let empty: &[LongOpt<K>] = &[];
        assert_eq!(
            split(&words("--x"), SHORTS, empty, Ordering::Permute).unwrap_err(),
            GetoptError::UnknownLong("x".into())
        );
    }

    #[test]
    fn report_prints_two_lines() {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let mut out = Output::new(&mut o, &mut e);
        report(
            &mut out,
            "squeue",
            "/usr/bin/squeue",
            &GetoptError::UnknownShort('z'),
        );
        assert_eq!(
            String::from_utf8(e).unwrap(),
            "/usr/bin/squeue: invalid option -- 'z'\nTry \"squeue --help\" for more information\n"
        );
        assert!(o.is_empty());
    }

    /// Arbitrary words never panic the engine (a small deterministic fuzz:
    /// the crate has no property-testing dependency).
    #[test]
    fn arbitrary_words_never_panic() {
        const PIECES: &[&str] = &[
            "-", "--", "=", "t", "v", "k", "é", "x", "par", "clu", "1", "", "-h", "--time", "ß",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rand = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..5000 {
            let count = rand(5);
            let args: Vec<String> = (0..count)
                .map(|_| (0..rand(4)).map(|_| PIECES[rand(PIECES.len())]).collect())
                .collect();
            for ordering in [Ordering::Permute, Ordering::StopAtOperand] {
                if let Ok(sp) = split(&args, SHORTS, LONGS, ordering) {
                    assert!(sp.operands.len() <= args.len());
                }
            }
        }
    }

    #[test]
    fn atoi_as_c() {
        assert_eq!(atoi("5"), 5);
        assert_eq!(atoi("  12s"), 12);
        assert_eq!(atoi("+3"), 3);
        assert_eq!(atoi("-4"), -4);
        assert_eq!(atoi("abc"), 0);
        assert_eq!(atoi(""), 0);
        assert_eq!(atoi("99999999999999999999999"), i64::MAX);
        assert_eq!(atoi("-99999999999999999999999"), i64::MIN);
        assert_eq!(atoi("٣"), 0);
    }
}
