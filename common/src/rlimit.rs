//! Resource limits that follow a job from its submit host.
//!
//! As in Slurm, `sbatch` reads its own soft limits and sends those that
//! `--propagate` (or slurm.conf's PropagateResourceLimits, less
//! PropagateResourceLimitsExcept) names as `SLURM_RLIMIT_<NAME>` variables
//! of the job's environment; slurmstepd takes them out again and sets them
//! on the job before it drops root. A value that starts with `U` was asked
//! for by the user (`--propagate`) rather than by the site's default.
//! `RLIM_INFINITY` travels as its number (`18446744073709551615`).

use crate::conf::{PropagateLimits, Rlimit};

/// What comes before the limit's name in the variable.
pub const ENV_PREFIX: &str = "SLURM_RLIMIT_";

/// The limits to send, in Slurm's order, and whether the user chose them:
/// `option` is `--propagate`'s value (`Some("")` for the bare flag, which
/// means ALL), else slurm.conf decides.
pub fn chosen(
    option: Option<&str>,
    conf: &PropagateLimits,
    except: &[Rlimit],
) -> (Vec<Rlimit>, bool) {
    match option {
        Some(v) => {
            let v = v.trim();
            let all = v.is_empty() || v.eq_ignore_ascii_case("ALL");
            let list: Vec<Rlimit> = if all {
                ORDER.to_vec()
            } else if v.eq_ignore_ascii_case("NONE") {
                Vec::new()
            } else {
                let named: Vec<Rlimit> = v
                    .split(',')
                    .filter_map(|w| {
                        let w = w.trim();
                        let w = w.strip_prefix("RLIMIT_").unwrap_or(w);
                        Rlimit::parse(w)
                    })
                    .collect();
                ORDER
                    .iter()
                    .copied()
                    .filter(|l| named.contains(l))
                    .collect()
            };
            (list, true)
        }
        None => (
            ORDER
                .iter()
                .copied()
                .filter(|&l| conf.propagates(l) && !except.contains(&l))
                .collect(),
            false,
        ),
    }
}

/// Slurm's order of the limits.
const ORDER: &[Rlimit] = &[
    Rlimit::Cpu,
    Rlimit::Fsize,
    Rlimit::Data,
    Rlimit::Stack,
    Rlimit::Core,
    Rlimit::Rss,
    Rlimit::Nproc,
    Rlimit::Nofile,
    Rlimit::Memlock,
    Rlimit::As,
];

/// The type glibc gives a limit's number; other C libraries use `int`.
#[cfg(target_env = "gnu")]
pub type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
pub type Resource = libc::c_int;

/// The kernel's number of a limit.
pub fn resource(limit: Rlimit) -> Resource {
    match limit {
        Rlimit::Cpu => libc::RLIMIT_CPU,
        Rlimit::Fsize => libc::RLIMIT_FSIZE,
        Rlimit::Data => libc::RLIMIT_DATA,
        Rlimit::Stack => libc::RLIMIT_STACK,
        Rlimit::Core => libc::RLIMIT_CORE,
        Rlimit::Rss => libc::RLIMIT_RSS,
        Rlimit::Nproc => libc::RLIMIT_NPROC,
        Rlimit::Nofile => libc::RLIMIT_NOFILE,
        Rlimit::Memlock => libc::RLIMIT_MEMLOCK,
        Rlimit::As => libc::RLIMIT_AS,
    }
}

/// This process's soft limit, `None` when it cannot be read.
pub fn soft_limit(limit: Rlimit) -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    (unsafe { libc::getrlimit(resource(limit), &mut r) } == 0).then_some(r.rlim_cur)
}

/// The variable for one limit: its name and value.
pub fn env_entry(limit: Rlimit, soft: u64, asked: bool) -> (String, String) {
    (
        format!("{ENV_PREFIX}{}", limit.as_str()),
        format!("{}{soft}", if asked { "U" } else { "" }),
    )
}

/// One limit read back from the job's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Propagated {
    pub limit: Rlimit,
    pub value: u64,
    /// Asked for with `--propagate`.
    pub asked: bool,
}

/// Reads a variable; `None` when it is not a limit variable. `Some(Err)`
/// names a limit variable whose name or value cannot be read.
pub fn parse_env(name: &str, value: &str) -> Option<Result<Propagated, String>> {
    let which = name.strip_prefix(ENV_PREFIX)?;
    let Some(limit) = Rlimit::parse(which).filter(|l| l.as_str() == which) else {
        return Some(Err(format!("unknown resource limit {name}")));
    };
    let (asked, digits) = match value.strip_prefix('U') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    Some(match digits.parse::<u64>() {
        Ok(value) => Ok(Propagated {
            limit,
            value,
            asked,
        }),
        Err(_) => Err(format!("invalid value {value:?} of {name}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_wins_over_the_configuration() {
        let conf = PropagateLimits::None;
        assert_eq!(chosen(Some(""), &conf, &[]), (ORDER.to_vec(), true));
        assert_eq!(chosen(Some("ALL"), &conf, &[]), (ORDER.to_vec(), true));
        assert_eq!(
            chosen(Some("NONE"), &PropagateLimits::All, &[]),
            (vec![], true)
        );
        assert_eq!(
            chosen(Some("STACK,RLIMIT_CORE"), &conf, &[Rlimit::Core]),
            (vec![Rlimit::Stack, Rlimit::Core], true)
        );
        assert_eq!(chosen(None, &conf, &[]), (vec![], false));
        let (all_but, asked) = chosen(None, &PropagateLimits::All, &[Rlimit::Memlock]);
        assert!(!asked);
        assert_eq!(all_but.len(), 9);
        assert!(!all_but.contains(&Rlimit::Memlock));
        assert_eq!(
            chosen(None, &PropagateLimits::Only(vec![Rlimit::Nofile]), &[]),
            (vec![Rlimit::Nofile], false)
        );
    }

    #[test]
    fn variables_round_trip() {
        for (limit, value, asked) in [
            (Rlimit::Core, 0, false),
            (Rlimit::Stack, u64::MAX, true),
            (Rlimit::Nofile, 1024, false),
        ] {
            let (name, text) = env_entry(limit, value, asked);
            assert_eq!(
                parse_env(&name, &text),
                Some(Ok(Propagated {
                    limit,
                    value,
                    asked
                }))
            );
        }
        assert_eq!(env_entry(Rlimit::Core, 0, true).1, "U0");
        assert_eq!(parse_env("SLURM_JOB_ID", "5"), None);
        assert!(matches!(parse_env("SLURM_RLIMIT_BOGUS", "1"), Some(Err(_))));
        assert!(matches!(parse_env("SLURM_RLIMIT_core", "1"), Some(Err(_))));
        for bad in ["", "U", "-1", "x", "18446744073709551616"] {
            assert!(
                matches!(parse_env("SLURM_RLIMIT_CORE", bad), Some(Err(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn own_limits_can_be_read() {
        for &l in ORDER {
            assert!(soft_limit(l).is_some(), "{l:?}");
        }
    }
}
