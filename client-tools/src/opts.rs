//! Command-line reading the way GNU `getopt_long` does it, for the commands
//! whose users expect exactly that: long names may be shortened while they
//! stay unambiguous, `--opt=value` and `--opt value` are the same, short
//! options bundle (`-vvN2`), and `--` ends the options.
//!
//! The engine only splits arguments; each command maps the keys to its own
//! option values. `sbatch` stops at the first operand (everything after the
//! script name belongs to the script); `scancel` lets operands and options
//! mix. The error texts are getopt's, which users and wrappers recognise.

use std::fmt;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    No,
    Required,
    /// Only in the attached form (`--exclusive=user`, `-kfoo`).
    Optional,
}

/// A long option: its full name, whether it takes a value, and the key the
/// command maps it by.
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
/// and `: ` come first when printed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetoptError {
    UnknownLong(String),
    UnknownShort(char),
    Ambiguous {
        given: String,
        candidates: Vec<&'static str>,
    },
    LongNeedsArgument(&'static str),
    ShortNeedsArgument(char),
    TakesNoArgument(&'static str),
}

impl fmt::Display for GetoptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownLong(name) => write!(f, "unrecognized option '--{name}'"),
            Self::UnknownShort(c) => write!(f, "invalid option -- '{c}'"),
            Self::Ambiguous { given, candidates } => {
                write!(f, "option '--{given}' is ambiguous; possibilities:")?;
                for c in candidates {
                    write!(f, " '--{c}'")?;
                }
                Ok(())
            }
            Self::LongNeedsArgument(name) => write!(f, "option '--{name}' requires an argument"),
            Self::ShortNeedsArgument(c) => write!(f, "option requires an argument -- '{c}'"),
            Self::TakesNoArgument(name) => write!(f, "option '--{name}' doesn't allow an argument"),
        }
    }
}

impl std::error::Error for GetoptError {}

/// Where operands may appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// Options end at the first operand (getopt's `+`): the rest, that
    /// operand included, are operands.
    StopAtOperand,
    /// Operands and options mix; all options are read.
    Permute,
}

/// Finds a long option by its full name or an unambiguous prefix. Prefixes
/// naming several entries with the same key (aliases) are not ambiguous.
pub fn find_long<'t, K: Copy + PartialEq>(
    longs: &'t [LongOpt<K>],
    given: &str,
) -> Result<&'t LongOpt<K>, GetoptError> {
    if let Some(exact) = longs.iter().find(|o| o.name == given) {
        return Ok(exact);
    }
    let matches: Vec<&LongOpt<K>> = longs
        .iter()
        .filter(|o| !given.is_empty() && o.name.starts_with(given))
        .collect();
    match matches.as_slice() {
        [] => Err(GetoptError::UnknownLong(given.to_owned())),
        [first, rest @ ..]
            if rest
                .iter()
                .all(|o| o.key == first.key && o.has_arg == first.has_arg) =>
        {
            Ok(first)
        }
        _ => Err(GetoptError::Ambiguous {
            given: given.to_owned(),
            candidates: matches.iter().map(|o| o.name).collect(),
        }),
    }
}

/// Splits `args` (without the program name) into options and operands.
pub fn split<K: Copy + PartialEq>(
    args: &[String],
    shorts: &[ShortOpt<K>],
    longs: &[LongOpt<K>],
    ordering: Ordering,
) -> Result<Split<K>, GetoptError> {
    let mut options = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((g, v)) => (g, Some(v.to_owned())),
                None => (long, None),
            };
            let opt = find_long(longs, given)?;
            let value = match opt.has_arg {
                HasArg::No if attached.is_some() => {
                    return Err(GetoptError::TakesNoArgument(opt.name))
                }
                HasArg::No => None,
                HasArg::Optional => attached,
                HasArg::Required => match attached {
                    Some(v) => Some(v),
                    None if i < args.len() => {
                        i += 1;
                        Some(args[i - 1].clone())
                    }
                    None => return Err(GetoptError::LongNeedsArgument(opt.name)),
                },
            };
            options.push(Found {
                key: opt.key,
                value,
                spelled: format!("--{}", opt.name),
            });
            continue;
        }
        let Some(bundle) = arg.strip_prefix('-').filter(|s| !s.is_empty()) else {
            operands.push(arg.clone());
            if ordering == Ordering::StopAtOperand {
                operands.extend(args[i..].iter().cloned());
                break;
            }
            continue;
        };
        for (pos, c) in bundle.char_indices() {
            let opt = shorts
                .iter()
                .find(|o| o.letter == c)
                .ok_or(GetoptError::UnknownShort(c))?;
            let rest = &bundle[pos + c.len_utf8()..];
            let spelled = format!("-{c}");
            match opt.has_arg {
                HasArg::No => options.push(Found {
                    key: opt.key,
                    value: None,
                    spelled,
                }),
                HasArg::Optional => {
                    let value = (!rest.is_empty()).then(|| rest.to_owned());
                    options.push(Found {
                        key: opt.key,
                        value,
                        spelled,
                    });
                    break;
                }
                HasArg::Required => {
                    let value = if !rest.is_empty() {
                        rest.to_owned()
                    } else if i < args.len() {
                        i += 1;
                        args[i - 1].clone()
                    } else {
                        return Err(GetoptError::ShortNeedsArgument(c));
                    };
                    options.push(Found {
                        key: opt.key,
                        value: Some(value),
                        spelled,
                    });
                    break;
                }
            }
        }
    }
    Ok(Split { options, operands })
}

/// Linux signal names without the `SIG` prefix, by number.
const SIGNALS: &[(&str, u32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("TRAP", 5),
    ("ABRT", 6),
    ("IOT", 6),
    ("BUS", 7),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
    ("STKFLT", 16),
    ("CHLD", 17),
    ("CONT", 18),
    ("STOP", 19),
    ("TSTP", 20),
    ("TTIN", 21),
    ("TTOU", 22),
    ("URG", 23),
    ("XCPU", 24),
    ("XFSZ", 25),
    ("VTALRM", 26),
    ("PROF", 27),
    ("WINCH", 28),
    ("IO", 29),
    ("POLL", 29),
    ("PWR", 30),
    ("SYS", 31),
];

/// A signal given by number (1-64) or by name, with or without `SIG`, in
/// any case (`USR1`, `sigusr1`, `10`), as Slurm's commands read them.
pub fn parse_signal(s: &str) -> Option<u32> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let upper = s.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, num)| num)
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
        Excl,
        Cluster,
    }

    const SHORTS: &[ShortOpt<K>] = &[
        ShortOpt {
            letter: 't',
            has_arg: HasArg::Required,
            key: K::Time,
        },
        ShortOpt {
            letter: 'p',
            has_arg: HasArg::Required,
            key: K::Partition,
        },
        ShortOpt {
            letter: 'v',
            has_arg: HasArg::No,
            key: K::Verbose,
        },
    ];
    const LONGS: &[LongOpt<K>] = &[
        LongOpt {
            name: "cluster",
            has_arg: HasArg::Required,
            key: K::Cluster,
        },
        LongOpt {
            name: "clusters",
            has_arg: HasArg::Required,
            key: K::Cluster,
        },
        LongOpt {
            name: "exclusive",
            has_arg: HasArg::Optional,
            key: K::Excl,
        },
        LongOpt {
            name: "parsable",
            has_arg: HasArg::No,
            key: K::Parsable,
        },
        LongOpt {
            name: "partition",
            has_arg: HasArg::Required,
            key: K::Partition,
        },
        LongOpt {
            name: "time",
            has_arg: HasArg::Required,
            key: K::Time,
        },
        LongOpt {
            name: "verbose",
            has_arg: HasArg::No,
            key: K::Verbose,
        },
    ];

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn keys(s: &str, o: Ordering) -> (Vec<(K, Option<String>)>, Vec<String>) {
        let sp = split(&words(s), SHORTS, LONGS, o).unwrap();
        (
            sp.options.into_iter().map(|f| (f.key, f.value)).collect(),
            sp.operands,
        )
    }

    #[test]
    fn forms_of_values() {
        let (o, rest) = keys("--time=5 --time 6 -t7 -t 8 -vvp x", Ordering::Permute);
        let v = |s: &str| Some(s.to_owned());
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
        let (o, _) = keys("--exclusive --exclusive=user --excl", Ordering::Permute);
        assert_eq!(
            o,
            vec![(K::Excl, None), (K::Excl, v("user")), (K::Excl, None)]
        );
    }

    #[test]
    fn abbreviations_and_ambiguity() {
        let (o, _) = keys("--parti=a --pars --clus b --t=1", Ordering::Permute);
        assert_eq!(o[0].0, K::Partition);
        assert_eq!(o[1].0, K::Parsable);
        assert_eq!(o[2].0, K::Cluster);
        assert_eq!(o[3].0, K::Time);
        let e = split(&words("--par"), SHORTS, LONGS, Ordering::Permute).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option '--par' is ambiguous; possibilities: '--parsable' '--partition'"
        );
    }

    #[test]
    fn operand_ordering() {
        let (o, rest) = keys("-v job.sh -t 5 a", Ordering::StopAtOperand);
        assert_eq!(o.len(), 1);
        assert_eq!(rest, words("job.sh -t 5 a"));
        let (o, rest) = keys("-v 12 -t 5 13", Ordering::Permute);
        assert_eq!(o.len(), 2);
        assert_eq!(rest, words("12 13"));
        let (o, rest) = keys("-v -- -t", Ordering::Permute);
        assert_eq!((o.len(), rest), (1, words("-t")));
        let (_, rest) = keys("- x", Ordering::Permute);
        assert_eq!(rest, words("- x"));
    }

    #[test]
    fn errors_as_glibc() {
        let e = |s: &str| {
            split(&words(s), SHORTS, LONGS, Ordering::Permute)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(e("--bogus-option"), "unrecognized option '--bogus-option'");
        assert_eq!(e("-z"), "invalid option -- 'z'");
        assert_eq!(e("-vt"), "option requires an argument -- 't'");
        assert_eq!(e("--time"), "option '--time' requires an argument");
        assert_eq!(
            e("--verbose=2"),
            "option '--verbose' doesn't allow an argument"
        );
        assert_eq!(e("--=x"), "unrecognized option '--'");
        assert_eq!(e("-é"), "invalid option -- 'é'");
    }

    #[test]
    fn signals_by_name_and_number() {
        assert_eq!(parse_signal("USR1"), Some(10));
        assert_eq!(parse_signal("sigterm"), Some(15));
        assert_eq!(parse_signal("SIGKILL"), Some(9));
        assert_eq!(parse_signal("9"), Some(9));
        assert_eq!(parse_signal("0"), None);
        assert_eq!(parse_signal("65"), None);
        assert_eq!(parse_signal("99999999999999999999"), None);
        assert_eq!(parse_signal("FOO"), None);
        assert_eq!(parse_signal(""), None);
    }
}
