//! `--signal=[{R|B}:]<sig>[@<sig_time>]`: a signal sent to a running job
//! `sig_time` seconds (60 when not given) before its time limit ends, so
//! that it can save its work.
//!
//! The send is driven by the controller's timer, never by polling: the time
//! it is due (the end of the time limit less `sig_time`) is one of the
//! deadlines [`Controller::next_deadline`] reports, and the tick at or after
//! it sends it. A job without a time limit never gets it. It is sent once
//! per run: the send is journaled ([`Event::JobSignalSent`]), so a
//! controller that restarts right after does not send it again, and a
//! requeued job that runs again gets it again (a start clears the mark).
//!
//! Who receives it, as in Slurm:
//! * with `B:`, only the batch shell (not its children): the batch host's
//!   slurmd is asked for a batch-only signal, which is what `scancel -b`
//!   means;
//! * without it, every job step but not the batch shell. The controller
//!   keeps no steps yet (batch jobs only), so there is nobody to signal and
//!   it is logged; once steps are tracked, [`Controller::signal_targets`]
//!   is where they come in.
//!
//! `R:` lets the job overlap a reservation with MaxStartDelay; there are no
//! reservations, so it is accepted and changes nothing.

use slurm_common::state::JobState;
use slurm_proto::v1;
use thiserror::Error;

use super::{Action, Controller, Event, Job, Outcome};

/// `sig_time` when the spec gives none.
pub const DEFAULT_SIG_TIME_SECS: u16 = 60;

/// A parsed `--signal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobSignal {
    /// Linux signal number, 1 to 64.
    pub signal: u32,
    /// Seconds before the end of the time limit.
    pub secs_before: u16,
    /// `B:`: the batch shell only.
    pub batch_only: bool,
    /// `R:`: may overlap a reservation's MaxStartDelay.
    pub reservation: bool,
}

/// Why a `--signal` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SignalSpecError {
    #[error("signal spec {spec:?} has flags other than R and B before ':'")]
    Flags { spec: String },
    #[error("signal {name:?} is neither a number from 1 to 64 nor a signal name")]
    Signal { name: String },
    #[error("signal time {value:?} is not a number of seconds from 0 to 65535")]
    Time { value: String },
}

/// Parses `--signal`; `None` for an empty spec (no signal).
pub fn parse(spec: &str) -> Result<Option<JobSignal>, SignalSpecError> {
    if spec.is_empty() {
        return Ok(None);
    }
    let (flags, rest) = match spec.split_once(':') {
        Some((flags, rest)) => (flags, rest),
        None => ("", spec),
    };
    if (spec.contains(':') && flags.is_empty()) || !flags.chars().all(|c| matches!(c, 'R' | 'B')) {
        return Err(SignalSpecError::Flags {
            spec: spec.to_string(),
        });
    }
    let (sig, time) = match rest.split_once('@') {
        Some((sig, time)) => (sig, Some(time)),
        None => (rest, None),
    };
    let signal =
        slurm_common::signal::parse_signal(sig).ok_or_else(|| SignalSpecError::Signal {
            name: sig.to_string(),
        })?;
    let secs_before = match time {
        None => DEFAULT_SIG_TIME_SECS,
        Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            t.parse::<u16>().map_err(|_| SignalSpecError::Time {
                value: t.to_string(),
            })?
        }
        Some(t) => {
            return Err(SignalSpecError::Time {
                value: t.to_string(),
            })
        }
    };
    Ok(Some(JobSignal {
        signal,
        secs_before,
        batch_only: flags.contains('B'),
        reservation: flags.contains('R'),
    }))
}

/// When the `--signal` of `job` is due: its time limit's end less
/// `sig_time`, while it runs and has not had it in this run; `None` for a
/// job without one, without a time limit, or that had it already.
pub fn due(job: &Job) -> Option<i64> {
    let sig = job.spec.extras().signal?;
    if job.status.state != JobState::Running || job.signal_sent {
        return None;
    }
    let end = job.deadline()?;
    Some(end.saturating_sub(i64::from(sig.secs_before)))
}

impl Controller {
    /// The earliest time a `--signal` is due (possibly already).
    pub(super) fn next_signal_due(&self) -> Option<i64> {
        self.jobs().filter_map(due).min()
    }

    /// Sends every `--signal` due at `now` (the timer's tick).
    pub(super) fn send_due_signals(&mut self, out: &mut Outcome, now: i64) {
        let due_now: Vec<u32> = self
            .jobs()
            .filter(|j| due(j).is_some_and(|d| d <= now))
            .map(|j| j.id.get())
            .collect();
        for job_id in due_now {
            if !self.emit(out, Event::JobSignalSent { job_id, time: now }) {
                continue;
            }
            out.actions.extend(self.signal_targets(job_id));
        }
    }

    /// The deliveries of job `job_id`'s `--signal`: with `B:` its batch
    /// shell on the batch host; without, each step other than the batch
    /// step. The controller tracks no steps yet, so that is none (logged).
    fn signal_targets(&self, job_id: u32) -> Vec<Action> {
        let Some(job) = self.job(job_id) else {
            return Vec::new();
        };
        let Some(sig) = job.spec.extras().signal else {
            return Vec::new();
        };
        if !sig.batch_only {
            tracing::info!(
                job_id,
                signal = sig.signal,
                "--signal due; the job has no steps to signal and the batch shell is signalled only with B:"
            );
            return Vec::new();
        }
        let Some(batch_host) = job.alloc.first() else {
            return Vec::new();
        };
        tracing::info!(
            job_id,
            signal = sig.signal,
            "--signal due; signalling the batch shell"
        );
        vec![Action::SignalJob {
            job_id,
            nodes: vec![batch_host.node_index],
            request: v1::NodeSignalJobRequest {
                job_id,
                step_id: None,
                signal: sig.signal,
                batch_only: true,
                full: false,
            },
        }]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sig(signal: u32, secs_before: u16, batch_only: bool, reservation: bool) -> JobSignal {
        JobSignal {
            signal,
            secs_before,
            batch_only,
            reservation,
        }
    }

    #[test]
    fn specs_slurm_documents() {
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("USR1").unwrap(), Some(sig(10, 60, false, false)));
        assert_eq!(parse("B:USR1@50").unwrap(), Some(sig(10, 50, true, false)));
        assert_eq!(parse("R:10@0").unwrap(), Some(sig(10, 0, false, true)));
        assert_eq!(
            parse("RB:sigterm@65535").unwrap(),
            Some(sig(15, 65535, true, true))
        );
        assert_eq!(parse("BR:64").unwrap(), Some(sig(64, 60, true, true)));
    }

    #[test]
    fn hostile_specs_are_refused() {
        for bad in [
            "X:USR1",
            ":USR1",
            "B:",
            "B:USR1@",
            "USR1@-1",
            "USR1@65536",
            "USR1@1e3",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        for bad in [
            "0",
            "65",
            "99999999999999999999",
            "USR3",
            "ＵＳＲ1",
            "SIG",
            "B:USR1:2",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            parse("USR1@99999999999999999999999")
                .unwrap_err()
                .to_string(),
            "signal time \"99999999999999999999999\" is not a number of seconds from 0 to 65535"
        );
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused(s in "\\PC{0,24}") {
            if let Ok(Some(j)) = parse(&s) {
                prop_assert!((1..=64).contains(&j.signal));
            }
        }
    }
}
