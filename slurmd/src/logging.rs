//! Log set-up shared by slurmd and slurmstepd: to the log file when one is
//! configured (opened for appending, so both daemons can share it), else to
//! standard error.
//!
//! The level is slurm.conf's SlurmdDebug unless the command line (`-v`) or
//! the `SLURMD_LOG` environment variable (a tracing filter, for
//! developers) sets one; only a level from slurm.conf follows a
//! reconfiguration, so an operator who started slurmd with `-vv` to chase a
//! problem keeps that level.

use std::path::Path;

use slurm_common::conf::LogLevel;
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

/// Changes the level of the installed subscriber on reconfiguration.
pub struct LogControl {
    handle: reload::Handle<EnvFilter, Registry>,
    /// Set by `-v` or SLURMD_LOG: slurm.conf does not change it.
    fixed: bool,
}

impl std::fmt::Debug for LogControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogControl")
            .field("fixed", &self.fixed)
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
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(file) => return install(filter, fixed, std::sync::Mutex::new(file), false),
            Err(e) => {
                let control = install(filter, fixed, std::io::stderr, true);
                tracing::warn!(path = %path.display(), error = %e, "cannot open log file; logging to stderr");
                return control;
            }
        }
    }
    install(filter, fixed, std::io::stderr, true)
}

fn install<W>(filter: EnvFilter, fixed: bool, writer: W, ansi: bool) -> Option<LogControl>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let (filter, handle) = reload::Layer::new(filter);
    let output = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(writer);
    tracing_subscriber::registry()
        .with(filter)
        .with(output)
        .try_init()
        .ok()
        .map(|()| LogControl { handle, fixed })
}

#[cfg(test)]
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
}
