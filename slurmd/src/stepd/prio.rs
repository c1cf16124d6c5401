//! PropagatePrioProcess: which scheduling priority (nice value) the batch
//! script runs at.
//!
//! sbatch records the nice value of the submitting shell in the job's
//! environment as `SLURM_PRIO_PROCESS`. slurm.conf decides what slurmstepd
//! does with it:
//!
//! | value | the script runs at |
//! |-------|--------------------|
//! | 0 (default) | slurmstepd's own nice value, inherited from slurmd |
//! | 1 | the submitter's nice value, but, unless root submitted the job, never a better priority (lower nice) than slurmstepd's |
//! | 2 | the submitter's nice value, and always at least one worse than slurmstepd's |
//!
//! The decision is the pure [`task_nice`]; the exec layer applies it in the
//! child after it dropped to the job's user, so that the kernel's rule (an
//! unprivileged process cannot lower its nice value) holds as a second
//! line. A value the kernel refuses leaves the job at the priority it
//! inherited: a job never fails over its priority.

use slurm_common::conf::{ConfError, SlurmConf};

/// The slurm.conf key.
pub const KEY: &str = "PropagatePrioProcess";

/// The environment variable sbatch puts the submitter's nice value in.
pub const PRIO_VAR: &str = "SLURM_PRIO_PROCESS";

/// The best (lowest) nice value Linux knows.
pub const NICE_MIN: i32 = -20;
/// The worst (highest) nice value Linux knows.
pub const NICE_MAX: i32 = 19;

/// What the accepted values say, for the error message.
const EXPECTED: &str = "0, 1 or 2";

/// PropagatePrioProcess.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrioPropagation {
    /// 0: the job keeps slurmstepd's priority.
    #[default]
    Off,
    /// 1: the submitter's nice value, no better than slurmstepd's unless
    /// root submitted the job.
    Submitter,
    /// 2: the submitter's nice value, always worse than slurmstepd's.
    Nicer,
}

impl PrioPropagation {
    /// The value as slurm.conf writes it: `0`, `1` or `2` (surrounding
    /// blanks and leading zeros allowed); anything else is `None`.
    pub fn parse(value: &str) -> Option<Self> {
        let v = value.trim();
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match v.trim_start_matches('0') {
            "" => Some(Self::Off),
            "1" => Some(Self::Submitter),
            "2" => Some(Self::Nicer),
            _ => None,
        }
    }

    /// Its number in slurm.conf.
    pub fn number(self) -> u8 {
        match self {
            Self::Off => 0,
            Self::Submitter => 1,
            Self::Nicer => 2,
        }
    }

    /// The value `conf` gives (the last one written, as for every scalar
    /// key; the default when absent). slurm.conf keeps this key untyped, so
    /// it is checked here, with the file and line of the bad value.
    pub fn from_conf(conf: &SlurmConf) -> Result<Self, ConfError> {
        let Some(entry) = conf.raw_entry(KEY) else {
            return Ok(Self::default());
        };
        Self::parse(&entry.value).ok_or_else(|| ConfError::InvalidValue {
            loc: entry.loc.clone(),
            key: KEY.to_string(),
            value: entry.value.clone(),
            expected: EXPECTED,
        })
    }
}

/// The submitter's nice value from the job's `NAME=value` environment (the
/// last `SLURM_PRIO_PROCESS` wins); `None` when it is missing or not a
/// number that fits an `i32`.
pub fn requested_nice<S: AsRef<str>>(environment: &[S]) -> Option<i32> {
    environment
        .iter()
        .rev()
        .find_map(|e| e.as_ref().strip_prefix(PRIO_VAR)?.strip_prefix('='))
        .and_then(|v| v.trim().parse::<i32>().ok())
}

/// The nice value to give the job, or `None` to leave it at the one it
/// inherits from slurmstepd (`own`). `requested` is the submitter's value
/// ([`requested_nice`]); `root_job`: root submitted the job, so mode 1 may
/// give it a better priority than slurmstepd's. Every input is first
/// brought into Linux's range, so the result always lies in
/// `NICE_MIN..=NICE_MAX`.
pub fn task_nice(
    mode: PrioPropagation,
    own: i32,
    requested: Option<i32>,
    root_job: bool,
) -> Option<i32> {
    let requested = requested?.clamp(NICE_MIN, NICE_MAX);
    let own = own.clamp(NICE_MIN, NICE_MAX);
    match mode {
        PrioPropagation::Off => None,
        PrioPropagation::Submitter if root_job => Some(requested),
        PrioPropagation::Submitter => Some(requested.max(own)),
        PrioPropagation::Nicer => Some(requested.max(own + 1).min(NICE_MAX)),
    }
}

/// The calling process's nice value.
pub fn own_nice() -> std::io::Result<i32> {
    // getpriority answers -1 both for nice -1 and for a failure; only errno
    // tells them apart, so it is cleared first.
    // SAFETY: errno is thread-local; getpriority has no memory arguments.
    let value = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, 0)
    };
    if value == -1 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error().is_some_and(|n| n != 0) {
            return Err(e);
        }
    }
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use PrioPropagation::{Nicer, Off, Submitter};

    #[test]
    fn values_of_the_key() {
        for (v, want) in [
            ("0", Some(Off)),
            ("1", Some(Submitter)),
            ("2", Some(Nicer)),
            (" 2 ", Some(Nicer)),
            ("00", Some(Off)),
            ("01", Some(Submitter)),
            ("3", None),
            ("yes", None),
            ("", None),
            ("-1", None),
            ("+1", None),
            ("1.0", None),
            ("99999999999999999999999", None),
            ("١", None),
        ] {
            assert_eq!(PrioPropagation::parse(v), want, "{v:?}");
        }
        for p in [Off, Submitter, Nicer] {
            assert_eq!(PrioPropagation::parse(&p.number().to_string()), Some(p));
        }
    }

    fn conf(text: &str) -> SlurmConf {
        let text = format!("ClusterName=c\nSlurmctldHost=ctl\n{text}");
        SlurmConf::parse(&text, "slurm.conf").unwrap().conf
    }

    #[test]
    fn from_conf_takes_the_last_value_and_names_a_bad_one() {
        assert_eq!(PrioPropagation::from_conf(&conf("")).unwrap(), Off);
        assert_eq!(
            PrioPropagation::from_conf(&conf("PropagatePrioProcess=2\n")).unwrap(),
            Nicer
        );
        assert_eq!(
            PrioPropagation::from_conf(&conf("propagateprioprocess=2\nPropagatePrioProcess=1\n"))
                .unwrap(),
            Submitter
        );
        for bad in ["3", "yes"] {
            let e = PrioPropagation::from_conf(&conf(&format!("PropagatePrioProcess={bad}\n")))
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "slurm.conf:3: invalid value \"{bad}\" for PropagatePrioProcess: expected 0, 1 or 2"
                )
            );
        }
    }

    #[test]
    fn requested_value_from_the_environment() {
        let env = |v: &[&str]| requested_nice(v);
        assert_eq!(env(&["SLURM_PRIO_PROCESS=7"]), Some(7));
        assert_eq!(env(&["SLURM_PRIO_PROCESS=-3"]), Some(-3));
        assert_eq!(
            env(&["SLURM_PRIO_PROCESS=1", "A=b", "SLURM_PRIO_PROCESS=5"]),
            Some(5)
        );
        assert_eq!(env(&["A=b"]), None);
        assert_eq!(env(&[]), None);
        assert_eq!(env(&["SLURM_PRIO_PROCESS="]), None);
        assert_eq!(env(&["SLURM_PRIO_PROCESS=x"]), None);
        assert_eq!(env(&["SLURM_PRIO_PROCESS=99999999999"]), None);
        assert_eq!(env(&["SLURM_PRIO_PROCESS_X=4"]), None);
        assert_eq!(env(&["SLURM_PRIO_PROCESS"]), None);
        assert_eq!(env(&["SLURM_PRIO_PROCESS=é"]), None);
    }

    #[test]
    fn decision_table() {
        // (mode, own, requested, root_job) -> nice
        let cases = [
            (Off, 0, Some(7), false, None),
            (Off, 0, Some(-5), true, None),
            (Submitter, 0, None, false, None),
            (Nicer, 0, None, false, None),
            (Submitter, 0, Some(7), false, Some(7)),
            // Never better than slurmstepd's, unless root submitted.
            (Submitter, 5, Some(2), false, Some(5)),
            (Submitter, 5, Some(2), true, Some(2)),
            (Submitter, -10, Some(-15), false, Some(-10)),
            (Submitter, 0, Some(-20), true, Some(-20)),
            // Always one worse than slurmstepd's.
            (Nicer, 0, Some(0), false, Some(1)),
            (Nicer, 0, Some(0), true, Some(1)),
            (Nicer, 0, Some(7), false, Some(7)),
            (Nicer, -5, Some(-10), false, Some(-4)),
            (Nicer, 19, Some(0), false, Some(19)),
            // Out of Linux's range: brought back into it.
            (Submitter, 0, Some(100), false, Some(19)),
            (Submitter, 0, Some(-100), true, Some(-20)),
            (Nicer, 40, Some(i32::MIN), false, Some(19)),
            (Nicer, i32::MIN, Some(i32::MIN), false, Some(-19)),
        ];
        for (mode, own, requested, root, want) in cases {
            assert_eq!(
                task_nice(mode, own, requested, root),
                want,
                "{mode:?} own={own} requested={requested:?} root={root}"
            );
        }
    }

    #[test]
    fn own_nice_reads_this_process() {
        let n = own_nice().unwrap();
        assert!((NICE_MIN..=NICE_MAX).contains(&n), "{n}");
    }

    fn mode() -> impl Strategy<Value = PrioPropagation> {
        prop_oneof![Just(Off), Just(Submitter), Just(Nicer)]
    }

    proptest! {
        #[test]
        fn the_result_is_always_a_linux_nice_value(
            mode in mode(),
            own in any::<i32>(),
            requested in proptest::option::of(any::<i32>()),
            root in any::<bool>(),
        ) {
            let got = task_nice(mode, own, requested, root);
            if let Some(n) = got {
                prop_assert!((NICE_MIN..=NICE_MAX).contains(&n));
            }
            // Nothing to apply without a request, or when propagation is off.
            prop_assert_eq!(got.is_none(), requested.is_none() || mode == Off);
            let own_c = own.clamp(NICE_MIN, NICE_MAX);
            match (mode, got) {
                // A non-root job never gets a better priority than slurmstepd.
                (Submitter, Some(n)) if !root => prop_assert!(n >= own_c),
                // Mode 2 is worse than slurmstepd wherever Linux allows it.
                (Nicer, Some(n)) => prop_assert!(n > own_c || n == NICE_MAX),
                _ => {}
            }
        }

        #[test]
        fn any_environment_text_is_handled(value in ".*") {
            let entry = format!("{PRIO_VAR}={value}");
            let got = requested_nice(&[entry]);
            prop_assert_eq!(got, value.trim().parse::<i32>().ok());
        }

        #[test]
        fn any_conf_value_is_accepted_or_refused(value in ".*") {
            let parsed = PrioPropagation::parse(&value);
            if let Some(p) = parsed {
                prop_assert!(p.number() <= 2);
            }
        }
    }
}
