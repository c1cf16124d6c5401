//! Cluster licenses: slurm.conf `Licenses=` and jobs' `--licenses`.
//!
//! A license is a cluster-wide count (not tied to a node) that a job holds
//! from its start until it ends, as Slurm's local licenses are. The
//! configuration gives the totals ([`CtlConfig::licenses`]); what is in use
//! is never stored: it is the sum over the jobs that run now, so it cannot
//! drift from the job table, and replay, snapshots and `scontrol
//! reconfigure` need nothing of their own.
//!
//! * At submission the request must parse and every license must be
//!   configured with at least the count asked for, or the job is refused
//!   with Slurm's "Invalid license specification" ([`validate`]). The
//!   request is kept normalized (each name once, counts added, in the order
//!   first given) and shown so: `Licenses=foo:2,bar:1`.
//! * A scheduling pass gets the totals and the use of running jobs
//!   ([`Controller::license_views`]); a pending job whose licenses are not
//!   all free waits with Reason=Licenses and holds back nobody
//!   (`slurm_sched::plan`).
//! * `scontrol show licenses` reads [`license_report`] from a snapshot.
//!
//! Slurm 22.05 has no alternatives in a request (`a|b`, a later addition):
//! such a request is refused rather than read as one odd name.

use std::fmt::Write as _;

use slurm_common::conf::License;
use slurm_sched::{LicenseNeed, LicenseView};
use thiserror::Error;

use super::{Controller, CtlConfig, Job, Snapshot};

/// One license of a job's request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LicenseAsk {
    pub name: Box<str>,
    pub count: u32,
}

/// Why a `--licenses` value is refused (ESLURM_INVALID_LICENSES).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LicenseRequestError {
    #[error("license item {item:?} is not name[:count]")]
    Malformed { item: String },
    #[error("license alternatives ('|') are not supported: {spec:?}")]
    Alternatives { spec: String },
    #[error("license {name:?} is not configured (Licenses=)")]
    Unknown { name: String },
    #[error("{count} {name} licenses asked for, {total} configured")]
    TooMany {
        name: String,
        count: u32,
        total: u32,
    },
}

/// Parses a job's `--licenses` (`foo:2,bar`, count 1 when not given).
/// Items are separated by `,` or `;`; empty items are skipped; a name given
/// twice is counted once with the counts added. Spaces, an empty name or
/// count, a count that is not a plain number of at most 32 bits, and a sum
/// that overflows are malformed.
pub fn parse_request(spec: &str) -> Result<Vec<LicenseAsk>, LicenseRequestError> {
    if spec.contains('|') {
        return Err(LicenseRequestError::Alternatives {
            spec: spec.to_string(),
        });
    }
    let malformed = |item: &str| LicenseRequestError::Malformed {
        item: item.to_string(),
    };
    let mut out: Vec<LicenseAsk> = Vec::new();
    for item in spec.split([',', ';']).filter(|i| !i.is_empty()) {
        if item.chars().any(char::is_whitespace) {
            return Err(malformed(item));
        }
        let (name, count) = match item.split_once(':') {
            Some((name, count)) => {
                let plain = !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit());
                let count = plain
                    .then(|| count.parse::<u32>().ok())
                    .flatten()
                    .ok_or_else(|| malformed(item))?;
                (name, count)
            }
            None => (item, 1),
        };
        if name.is_empty() {
            return Err(malformed(item));
        }
        match out.iter_mut().find(|a| &*a.name == name) {
            Some(a) => a.count = a.count.checked_add(count).ok_or_else(|| malformed(item))?,
            None => out.push(LicenseAsk {
                name: name.into(),
                count,
            }),
        }
    }
    Ok(out)
}

/// Checks a parsed request against the configured licenses.
pub fn validate(asks: &[LicenseAsk], configured: &[License]) -> Result<(), LicenseRequestError> {
    for a in asks {
        let Some(l) = configured.iter().find(|l| l.name == *a.name) else {
            return Err(LicenseRequestError::Unknown {
                name: a.name.to_string(),
            });
        };
        if a.count > l.count {
            return Err(LicenseRequestError::TooMany {
                name: a.name.to_string(),
                count: a.count,
                total: l.count,
            });
        }
    }
    Ok(())
}

/// A request as Slurm shows it (`Licenses=`, squeue `%W`): `name:count`
/// joined by commas; empty for none.
pub fn display(asks: &[LicenseAsk]) -> String {
    let mut out = String::new();
    for (i, a) in asks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}:{}", a.name, a.count);
    }
    out
}

/// One configured license and its use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LicenseUse {
    pub name: String,
    pub total: u32,
    pub used: u32,
}

/// How many of each configured license the running jobs of `jobs` hold, in
/// slurm.conf order. A job holds its licenses while RUNNING or SUSPENDED:
/// Slurm gives them back when the job ends, not when its nodes are done.
fn usage<'a>(configured: &[License], jobs: impl Iterator<Item = &'a Job>) -> Vec<LicenseUse> {
    let mut out: Vec<LicenseUse> = configured
        .iter()
        .map(|l| LicenseUse {
            name: l.name.clone(),
            total: l.count,
            used: 0,
        })
        .collect();
    // Nothing to count without licenses: the scan over every job is paid
    // only by clusters that configure some (each submission builds a view).
    if out.is_empty() {
        return out;
    }
    for job in jobs.filter(|j| j.status.state.holds_resources()) {
        for a in job.spec.extras().licenses.iter() {
            if let Some(u) = out.iter_mut().find(|u| *u.name == *a.name) {
                u.used = u.used.saturating_add(a.count);
            }
        }
    }
    out
}

/// What `scontrol show licenses` reports, from a published snapshot.
pub fn license_report(snap: &Snapshot) -> Vec<LicenseUse> {
    usage(&snap.licenses, snap.jobs.values().map(|j| &**j))
}

impl CtlConfig {
    /// The index of license `name` in [`CtlConfig::licenses`].
    fn license_index(&self, name: &str) -> Option<usize> {
        self.licenses.iter().position(|l| l.name == name)
    }
}

impl Controller {
    /// The licenses as a scheduling pass sees them.
    pub(crate) fn license_views(&self) -> Vec<LicenseView> {
        usage(&self.cfg.licenses, self.jobs())
            .into_iter()
            .map(|u| LicenseView {
                name: u.name,
                total: u.total,
                used: u.used,
            })
            .collect()
    }

    /// A job's licenses as indices into [`Controller::license_views`]. A
    /// license no longer configured (slurm.conf changed since the job was
    /// submitted) points past the end: it is never free, and the job waits
    /// with Reason=Licenses rather than run without it.
    pub(crate) fn license_needs(&self, job: &Job) -> Vec<LicenseNeed> {
        job.spec
            .extras()
            .licenses
            .iter()
            .map(|a| LicenseNeed {
                index: self.cfg.license_index(&a.name).unwrap_or(usize::MAX),
                count: a.count,
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ask(name: &str, count: u32) -> LicenseAsk {
        LicenseAsk {
            name: name.into(),
            count,
        }
    }

    fn conf(items: &[(&str, u32)]) -> Vec<License> {
        items
            .iter()
            .map(|(n, c)| License {
                name: (*n).to_string(),
                count: *c,
            })
            .collect()
    }

    #[test]
    fn counts_default_to_one_and_repeats_add_up() {
        assert_eq!(
            parse_request("foo:2,bar;foo").unwrap(),
            vec![ask("foo", 3), ask("bar", 1)]
        );
        assert_eq!(parse_request("").unwrap(), vec![]);
        assert_eq!(parse_request(",,;").unwrap(), vec![]);
        assert_eq!(parse_request("foo:0").unwrap(), vec![ask("foo", 0)]);
        assert_eq!(display(&parse_request("foo:2,bar").unwrap()), "foo:2,bar:1");
        assert_eq!(display(&[]), "");
    }

    #[test]
    fn hostile_requests_are_refused_not_panicked_on() {
        for bad in [
            "foo:",
            ":2",
            "foo:x",
            "foo:-1",
            "foo:+1",
            "foo: 2",
            "foo bar",
            "foo:99999999999999999999",
            "foo:4294967296",
            "foo:4294967295,foo:1",
            "foo:２",
        ] {
            assert!(
                matches!(
                    parse_request(bad),
                    Err(LicenseRequestError::Malformed { .. })
                ),
                "{bad:?} accepted"
            );
        }
        assert!(matches!(
            parse_request("a|b"),
            Err(LicenseRequestError::Alternatives { .. })
        ));
        // A name is any text without separators or spaces.
        assert_eq!(parse_request("licença:2").unwrap(), vec![ask("licença", 2)]);
    }

    #[test]
    fn validation_names_the_license_at_fault() {
        let c = conf(&[("foo", 4), ("bar", 1)]);
        assert_eq!(validate(&[ask("foo", 4), ask("bar", 1)], &c), Ok(()));
        assert_eq!(
            validate(&[ask("baz", 1)], &c),
            Err(LicenseRequestError::Unknown { name: "baz".into() })
        );
        let e = validate(&[ask("foo", 5)], &c).unwrap_err();
        assert_eq!(e.to_string(), "5 foo licenses asked for, 4 configured");
        assert!(validate(&[ask("foo", 1)], &[]).is_err());
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused(s in "\\PC{0,40}") {
            if let Ok(asks) = parse_request(&s) {
                // What is shown parses back to the same request.
                prop_assert_eq!(parse_request(&display(&asks)).unwrap(), asks);
            }
        }
    }
}
