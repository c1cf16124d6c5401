//! The line protocol slurmd speaks with a job's slurmstepd over the unix
//! socket in the job's spool directory.
//!
//! A socket (rather than signals to the slurmstepd pid) lets a request carry
//! arguments (KillWait, the reason shown in the job's error file), gives an
//! acknowledgement, and cannot reach a recycled pid.
//!
//! ```text
//! slurmd -> stepd   signal <signo>
//!                   terminate <kill_wait_secs> <reason> <unix_time>
//! stepd -> slurmd   ok                 request accepted
//!                   error <text>       request refused
//!                   done               (terminate only) every process ended
//! ```
//!
//! The connection closes after `ok` for `signal` and after `done` for
//! `terminate`; an early EOF after `ok` also means the job's processes are
//! gone (slurmstepd exited).

use std::path::Path;

use thiserror::Error;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::spool::SOCKET_FILE;

/// Longest request line accepted.
pub const MAX_LINE: usize = 256;

/// Why the job is being ended, for the `*** JOB ... ***` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Cancelled,
    Timeout,
    Preempted,
    NodeFail,
    Deadline,
    /// Requeued while running (`scontrol requeue`).
    Requeue,
    /// A normal end (clean-up after completion): no message.
    Other,
}

impl EndReason {
    pub fn as_word(self) -> &'static str {
        match self {
            EndReason::Cancelled => "cancelled",
            EndReason::Timeout => "timeout",
            EndReason::Preempted => "preempted",
            EndReason::NodeFail => "node_fail",
            EndReason::Deadline => "deadline",
            EndReason::Requeue => "requeue",
            EndReason::Other => "other",
        }
    }

    pub fn from_word(w: &str) -> Option<Self> {
        Some(match w {
            "cancelled" => EndReason::Cancelled,
            "timeout" => EndReason::Timeout,
            "preempted" => EndReason::Preempted,
            "node_fail" => EndReason::NodeFail,
            "deadline" => EndReason::Deadline,
            "requeue" => EndReason::Requeue,
            "other" => EndReason::Other,
            _ => return None,
        })
    }

    /// From the wire's JobState number.
    pub fn from_job_state(state: i32) -> Self {
        use slurm_proto::v1::JobState;
        match JobState::try_from(state) {
            Ok(JobState::Cancelled) => EndReason::Cancelled,
            Ok(JobState::Timeout) => EndReason::Timeout,
            Ok(JobState::Preempted) => EndReason::Preempted,
            Ok(JobState::NodeFail) => EndReason::NodeFail,
            Ok(JobState::Deadline) => EndReason::Deadline,
            // Back to the queue: the controller requeued it.
            Ok(JobState::Pending) => EndReason::Requeue,
            _ => EndReason::Other,
        }
    }

    /// The tail Slurm appends after `CANCELLED AT <time>`.
    pub fn suffix(self) -> Option<&'static str> {
        match self {
            EndReason::Cancelled => Some(""),
            EndReason::Timeout => Some(" DUE TO TIME LIMIT"),
            EndReason::Preempted => Some(" DUE TO PREEMPTION"),
            EndReason::NodeFail => Some(" DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS"),
            EndReason::Deadline => Some(" DUE TO DEADLINE"),
            EndReason::Requeue => Some(" DUE TO JOB REQUEUE"),
            EndReason::Other => None,
        }
    }
}

/// A request to slurmstepd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// The job's whole process group (`scancel -s`).
    Signal { signal: i32 },
    /// The batch shell alone, not its children (`scancel -b`, `sbatch
    /// --signal=B:`).
    SignalBatch { signal: i32 },
    Terminate {
        kill_wait_secs: u32,
        reason: EndReason,
        time: i64,
    },
}

/// A line that is not a valid request.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("bad control request {line:?}: {detail}")]
pub struct ParseError {
    pub line: String,
    pub detail: &'static str,
}

impl Request {
    pub fn to_line(&self) -> String {
        match self {
            Request::Signal { signal } => format!("signal {signal}\n"),
            Request::SignalBatch { signal } => format!("signal-batch {signal}\n"),
            Request::Terminate {
                kill_wait_secs,
                reason,
                time,
            } => format!("terminate {kill_wait_secs} {} {time}\n", reason.as_word()),
        }
    }

    pub fn parse(line: &str) -> Result<Self, ParseError> {
        let err = |detail| ParseError {
            line: line.chars().take(MAX_LINE).collect(),
            detail,
        };
        let mut words = line.split_whitespace();
        let req = match words.next() {
            Some(word @ ("signal" | "signal-batch")) => {
                let signal: i32 = words
                    .next()
                    .and_then(|w| w.parse().ok())
                    .filter(|s| (1..=64).contains(s))
                    .ok_or_else(|| err("signal needs a number from 1 to 64"))?;
                if word == "signal" {
                    Request::Signal { signal }
                } else {
                    Request::SignalBatch { signal }
                }
            }
            Some("terminate") => {
                let kill_wait_secs = words
                    .next()
                    .and_then(|w| w.parse().ok())
                    .ok_or_else(|| err("terminate needs KillWait seconds"))?;
                let reason = words
                    .next()
                    .and_then(EndReason::from_word)
                    .ok_or_else(|| err("terminate needs a reason word"))?;
                let time = words
                    .next()
                    .and_then(|w| w.parse().ok())
                    .ok_or_else(|| err("terminate needs a unix time"))?;
                Request::Terminate {
                    kill_wait_secs,
                    reason,
                    time,
                }
            }
            _ => return Err(err("unknown request")),
        };
        if words.next().is_some() {
            return Err(err("trailing words"));
        }
        Ok(req)
    }
}

/// What the client side saw.
#[derive(Debug, Error)]
pub enum SendError {
    #[error("no slurmstepd listening at {path}: {source}")]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("slurmstepd at {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("slurmstepd at {path} refused the request: {text}")]
    Refused { path: String, text: String },
}

impl SendError {
    /// The connection closed before slurmstepd answered: it is going away
    /// (or was not serving yet), not refusing.
    pub fn is_eof(&self) -> bool {
        matches!(self, SendError::Refused { text, .. } if text.is_empty())
    }
}

/// An accepted terminate request; [`Pending::finished`] resolves once the
/// job's processes are gone.
#[derive(Debug)]
pub struct Pending {
    reader: BufReader<UnixStream>,
}

impl Pending {
    pub async fn finished(mut self) {
        let mut line = String::new();
        // "done" or EOF both mean the processes ended; an error means the
        // stepd died, which also ends its processes' supervision.
        let _ = self.reader.read_line(&mut line).await;
    }
}

/// Sends `req` to the slurmstepd of `job_dir` and waits for its `ok`.
pub async fn send(job_dir: &Path, req: Request) -> Result<Pending, SendError> {
    let path = job_dir.join(SOCKET_FILE);
    let shown = path.display().to_string();
    let stream = UnixStream::connect(&path)
        .await
        .map_err(|source| SendError::Connect {
            path: shown.clone(),
            source,
        })?;
    let mut reader = BufReader::new(stream);
    let io = |source| SendError::Io {
        path: shown.clone(),
        source,
    };
    reader
        .get_mut()
        .write_all(req.to_line().as_bytes())
        .await
        .map_err(io)?;
    let mut line = String::new();
    reader.read_line(&mut line).await.map_err(io)?;
    let line = line.trim_end();
    if line == "ok" {
        return Ok(Pending { reader });
    }
    Err(SendError::Refused {
        path: shown,
        text: line.strip_prefix("error ").unwrap_or(line).to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        for r in [
            Request::Signal { signal: 10 },
            Request::SignalBatch { signal: 12 },
            Request::Terminate {
                kill_wait_secs: 30,
                reason: EndReason::Timeout,
                time: 1_700_000_000,
            },
        ] {
            assert_eq!(Request::parse(&r.to_line()).unwrap(), r);
        }
    }

    #[test]
    fn rejects_bad_lines() {
        for bad in [
            "",
            "signal",
            "signal 0",
            "signal 65",
            "signal x",
            "kill 9",
            "terminate 1 nope 2",
            "terminate 1 other",
            "signal 9 extra",
        ] {
            assert!(Request::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reasons() {
        use slurm_proto::v1::JobState;
        assert_eq!(
            EndReason::from_job_state(JobState::Timeout as i32),
            EndReason::Timeout
        );
        assert_eq!(EndReason::from_job_state(9999), EndReason::Other);
        assert_eq!(EndReason::Timeout.suffix(), Some(" DUE TO TIME LIMIT"));
        for r in [EndReason::Cancelled, EndReason::Other, EndReason::Deadline] {
            assert_eq!(EndReason::from_word(r.as_word()), Some(r));
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = Request::parse(&s);
        }
    }
}
