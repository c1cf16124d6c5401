//! Log set-up shared by slurmd and slurmstepd: to the log file when one is
//! configured (opened for appending, so both daemons can share it), else to
//! standard error.
//!
//! The level is slurm.conf's SlurmdDebug unless the command line (`-v`) or
//! the `SLURMD_LOG` environment variable (a tracing filter, for
//! developers) sets one; only a level from slurm.conf follows a
//! reconfiguration, so an operator who started slurmd with `-vv` to chase a
//! problem keeps that level.
//!
//! The file is reopened, as Slurm's slurmd does, on SIGUSR2 and on every
//! reconfiguration, so that logrotate can move it away and have slurmd
//! write to a fresh one. A reconfiguration that changes SlurmdLogFile
//! moves the log to the new file ([`after_reconfigure`]), unless the file
//! in use was not slurm.conf's (`slurmd -L`). Logging to standard error
//! (no SlurmdLogFile at start) stays so until a restart: a file taken then
//! would get the terminal's colour codes.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use slurm_common::conf::LogLevel;
use thiserror::Error;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::reload;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry};

/// The tracing filter for a SlurmdDebug level. tracing has no level
/// between info and debug, so `verbose` is info; `debug2` and finer are
/// trace.
pub fn directive(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Quiet => "off",
        LogLevel::Fatal | LogLevel::Error => "error",
        LogLevel::Info | LogLevel::Verbose => "info",
        LogLevel::Debug => "debug",
        LogLevel::Debug2 | LogLevel::Debug3 | LogLevel::Debug4 | LogLevel::Debug5 => "trace",
    }
}

/// The filter for `verbosity` `-v` flags on top of info.
fn verbose_directive(verbosity: u8) -> &'static str {
    match verbosity {
        0 => "info",
        1 => "debug",
        _ => "trace",
    }
}

/// A log file that could not be opened; the log stays where it was.
#[derive(Debug, Error)]
#[error("cannot open log file {}: {source}", path.display())]
pub struct LogFileError {
    pub path: PathBuf,
    pub source: io::Error,
}

fn open_log(path: &Path) -> Result<File, LogFileError> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| LogFileError {
            path: path.to_path_buf(),
            source,
        })
}

/// Where log lines go now.
#[derive(Debug)]
enum Sink {
    File { path: PathBuf, file: File },
    Stderr,
}

/// The sink, shared by the subscriber (which writes) and [`LogControl`]
/// (which swaps the file).
#[derive(Debug, Clone)]
struct SharedSink(Arc<Mutex<Sink>>);

impl SharedSink {
    fn lock(&self) -> MutexGuard<'_, Sink> {
        // A writer that panicked mid-line leaves the sink usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One event's write, holding the sink so lines never interleave.
pub struct SinkWriter<'a>(MutexGuard<'a, Sink>);

impl Write for SinkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut *self.0 {
            Sink::File { file, .. } => file.write(buf),
            Sink::Stderr => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut *self.0 {
            Sink::File { file, .. } => file.flush(),
            Sink::Stderr => io::stderr().flush(),
        }
    }
}

impl<'a> MakeWriter<'a> for SharedSink {
    type Writer = SinkWriter<'a>;

    fn make_writer(&'a self) -> SinkWriter<'a> {
        SinkWriter(self.lock())
    }
}

/// What a reconfiguration does to the log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogFileChange {
    /// Logging to standard error: nothing to reopen.
    None,
    /// Reopen the file in use (logrotate may have moved it).
    Reopen(PathBuf),
    /// SlurmdLogFile changed: log to `to` from now on.
    Move { from: PathBuf, to: PathBuf },
}

/// Decides what a reconfiguration does to the log: `current` is the file
/// written now, `running` and `new` are SlurmdLogFile (expanded) before and
/// after the re-read. The log moves only when the file in use is the one
/// slurm.conf named (not one given with `-L`) and the file names another;
/// a SlurmdLogFile removed from the file keeps the one in use.
pub fn after_reconfigure(
    current: Option<&Path>,
    running: Option<&Path>,
    new: Option<&Path>,
) -> LogFileChange {
    let Some(current) = current else {
        return LogFileChange::None;
    };
    match new {
        Some(to) if running == Some(current) && to != current => LogFileChange::Move {
            from: current.to_path_buf(),
            to: to.to_path_buf(),
        },
        _ => LogFileChange::Reopen(current.to_path_buf()),
    }
}

/// Changes the installed subscriber: its level on reconfiguration, its
/// file on reconfiguration and SIGUSR2. Clones share the subscriber.
#[derive(Clone)]
pub struct LogControl {
    handle: reload::Handle<EnvFilter, Registry>,
    /// Set by `-v` or SLURMD_LOG: slurm.conf does not change it.
    fixed: bool,
    sink: SharedSink,
}

impl std::fmt::Debug for LogControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogControl")
            .field("fixed", &self.fixed)
            .field("file", &self.file())
            .finish()
    }
}

impl LogControl {
    /// Logs at `level` from now on, unless the level was fixed at start.
    pub fn set_level(&self, level: LogLevel) {
        if self.fixed {
            return;
        }
        if let Err(e) = self.handle.reload(EnvFilter::new(directive(level))) {
            tracing::warn!(error = %e, "cannot change the log level");
        }
    }

    /// The file written now; `None` for standard error.
    pub fn file(&self) -> Option<PathBuf> {
        file_of(&self.sink)
    }

    /// Opens the file in use again (SIGUSR2, logrotate). When it cannot be
    /// opened the old handle stays and the error says why.
    pub fn reopen(&self) -> Result<(), LogFileError> {
        reopen(&self.sink)
    }

    /// Applies a re-read slurm.conf: `running` and `new` are SlurmdLogFile,
    /// expanded, before and after. Logs what it did or could not do.
    pub fn reconfigure(&self, running: Option<&Path>, new: Option<&Path>) {
        apply(&self.sink, running, new);
    }
}

fn file_of(sink: &SharedSink) -> Option<PathBuf> {
    match &*sink.lock() {
        Sink::File { path, .. } => Some(path.clone()),
        Sink::Stderr => None,
    }
}

fn reopen(sink: &SharedSink) -> Result<(), LogFileError> {
    let Some(path) = file_of(sink) else {
        return Ok(());
    };
    switch_to(sink, &path)
}

/// Opens `path` (outside the lock: a slow file system must not stall
/// other threads' logging) and makes it the sink.
fn switch_to(sink: &SharedSink, path: &Path) -> Result<(), LogFileError> {
    let file = open_log(path)?;
    *sink.lock() = Sink::File {
        path: path.to_path_buf(),
        file,
    };
    Ok(())
}

fn apply(sink: &SharedSink, running: Option<&Path>, new: Option<&Path>) -> LogFileChange {
    let change = after_reconfigure(file_of(sink).as_deref(), running, new);
    let result = match &change {
        LogFileChange::None => Ok(()),
        LogFileChange::Reopen(_) => reopen(sink),
        LogFileChange::Move { from, to } => switch_to(sink, to).map(|()| {
            tracing::info!(from = %from.display(), to = %to.display(), "SlurmdLogFile changed; logging to the new file");
        }),
    };
    if let Err(e) = result {
        tracing::error!(error = %e, "log file not reopened; logging on to the file in use");
    }
    change
}

/// Installs the global subscriber at `level` (SlurmdDebug), or at info plus
/// `verbosity` when `-v` was given. An unopenable log file falls back to
/// standard error and says so. `None` when a subscriber was installed
/// already.
pub fn init(log_file: Option<&Path>, verbosity: u8, level: LogLevel) -> Option<LogControl> {
    let (filter, fixed) = match EnvFilter::try_from_env("SLURMD_LOG") {
        Ok(f) => (f, true),
        Err(_) if verbosity > 0 => (EnvFilter::new(verbose_directive(verbosity)), true),
        Err(_) => (EnvFilter::new(directive(level)), false),
    };
    if let Some(path) = log_file {
        match open_log(path) {
            Ok(file) => {
                let sink = Sink::File {
                    path: path.to_path_buf(),
                    file,
                };
                return install(filter, fixed, sink);
            }
            Err(e) => {
                let control = install(filter, fixed, Sink::Stderr);
                tracing::warn!(error = %e, "logging to stderr");
                return control;
            }
        }
    }
    install(filter, fixed, Sink::Stderr)
}

fn install(filter: EnvFilter, fixed: bool, sink: Sink) -> Option<LogControl> {
    let ansi = matches!(sink, Sink::Stderr);
    let sink = SharedSink(Arc::new(Mutex::new(sink)));
    let (filter, handle) = reload::Layer::new(filter);
    let output = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(sink.clone());
    tracing_subscriber::registry()
        .with(filter)
        .with(output)
        .try_init()
        .ok()
        .map(|()| LogControl {
            handle,
            fixed,
            sink,
        })
}

/// Reopens `log`'s file on every SIGUSR2, as Slurm's daemons do for
/// logrotate, for the rest of the process's life. Must run inside a
/// runtime; without the signal (an unusual platform) it logs why and
/// returns.
pub async fn reopen_on_sigusr2(log: LogControl) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut usr2 = match signal(SignalKind::user_defined2()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot handle SIGUSR2; the log file is reopened on reconfiguration only");
            return;
        }
    };
    while usr2.recv().await.is_some() {
        tracing::info!("Logrotate signal (SIGUSR2) received");
        if let Err(e) = log.reopen() {
            tracing::error!(error = %e, "log file not reopened; logging on to the file in use");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn slurm_levels_map_to_tracing_filters() {
        assert_eq!(directive(LogLevel::Quiet), "off");
        assert_eq!(directive(LogLevel::Error), "error");
        assert_eq!(directive(LogLevel::default()), "info");
        assert_eq!(directive(LogLevel::Verbose), "info");
        assert_eq!(directive(LogLevel::Debug), "debug");
        assert_eq!(directive(LogLevel::Debug5), "trace");
        for l in LogLevel::ALL {
            assert!(EnvFilter::try_new(directive(*l)).is_ok(), "{l:?}");
        }
        assert_eq!(verbose_directive(0), "info");
        assert_eq!(verbose_directive(2), "trace");
    }

    #[test]
    fn a_reconfiguration_reopens_or_moves_the_file() {
        let p = |s: &str| PathBuf::from(s);
        let (a, b, l) = (p("/log/a"), p("/log/b"), p("/cli/l"));
        // The file slurm.conf named: reopened, or moved to the new name.
        assert_eq!(
            after_reconfigure(Some(&a), Some(&a), Some(&a)),
            LogFileChange::Reopen(a.clone())
        );
        assert_eq!(
            after_reconfigure(Some(&a), Some(&a), Some(&b)),
            LogFileChange::Move {
                from: a.clone(),
                to: b.clone()
            }
        );
        // Removed from slurm.conf: the file in use stays.
        assert_eq!(
            after_reconfigure(Some(&a), Some(&a), None),
            LogFileChange::Reopen(a.clone())
        );
        // `slurmd -L`: the command line's file stays whatever slurm.conf says.
        assert_eq!(
            after_reconfigure(Some(&l), Some(&a), Some(&b)),
            LogFileChange::Reopen(l.clone())
        );
        assert_eq!(
            after_reconfigure(Some(&l), None, Some(&b)),
            LogFileChange::Reopen(l)
        );
        // Standard error stays standard error.
        assert_eq!(after_reconfigure(None, None, Some(&b)), LogFileChange::None);
    }

    fn write_line(sink: &SharedSink, text: &str) {
        let mut w = sink.make_writer();
        writeln!(w, "{text}").unwrap();
    }

    #[test]
    fn reopening_follows_logrotate_and_moving_follows_slurm_conf() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("slurmd.log");
        let sink = SharedSink(Arc::new(Mutex::new(Sink::File {
            path: log.clone(),
            file: open_log(&log).unwrap(),
        })));
        write_line(&sink, "before");
        // logrotate moves the file away; lines still go to the moved one
        // until the reopen, then to a fresh file at the name.
        let rotated = dir.path().join("slurmd.log.1");
        std::fs::rename(&log, &rotated).unwrap();
        write_line(&sink, "still old");
        reopen(&sink).unwrap();
        write_line(&sink, "fresh");
        assert_eq!(
            std::fs::read_to_string(&rotated).unwrap(),
            "before\nstill old\n"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "fresh\n");

        // SlurmdLogFile changed: the next lines go to the new file.
        let moved = dir.path().join("new.log");
        assert_eq!(
            apply(&sink, Some(&log), Some(&moved)),
            LogFileChange::Move {
                from: log.clone(),
                to: moved.clone()
            }
        );
        write_line(&sink, "moved");
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "moved\n");
        assert_eq!(file_of(&sink), Some(moved.clone()));

        // A file that cannot be opened leaves the log where it was.
        let nowhere = dir.path().join("no/such/dir/x.log");
        apply(&sink, Some(&moved), Some(&nowhere));
        write_line(&sink, "kept");
        assert_eq!(file_of(&sink), Some(moved.clone()));
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "moved\nkept\n");
        let e = switch_to(&sink, &nowhere).unwrap_err();
        assert!(e.to_string().starts_with("cannot open log file "), "{e}");
    }

    #[test]
    fn standard_error_has_nothing_to_reopen() {
        let sink = SharedSink(Arc::new(Mutex::new(Sink::Stderr)));
        assert!(reopen(&sink).is_ok());
        assert_eq!(file_of(&sink), None);
        assert_eq!(apply(&sink, None, None), LogFileChange::None);
    }
}
