//! slurmctld's log, with a level that can change while it runs.
//!
//! `scontrol setdebug` changes the level of a running controller, as
//! Slurm's does, so a problem can be chased without a restart that would
//! lose it. The level therefore sits in a reloadable filter in front of the
//! formatter, and its handle is kept for the RPC that changes it.
//!
//! Why a process-wide handle ([`set_level`] reads a `OnceLock`): the
//! subscriber it controls is itself the process's global default, set once
//! by the binary; the handle is a property of that global, not of a
//! controller instance. Code that runs without the daemon's logging (the
//! library in tests) has no handle, and [`set_level`] says so.
//!
//! tracing has no level between info and debug, and none below debug, so
//! Slurm's ten levels fold into six filters (see [`filter_for`]).

use std::path::Path;
use std::sync::OnceLock;

use slurm_common::conf::LogLevel;
use thiserror::Error;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::reload;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Registry;

/// Why the log could not be set up or changed.
#[derive(Debug, Error)]
pub enum LogError {
    #[error("cannot open log file {}: {source}", path.display())]
    OpenFile {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("a global log subscriber is already installed")]
    AlreadyInstalled,
    #[error("this process did not set up slurmctld's log; its level cannot change")]
    NotInstalled,
    #[error("the log filter is gone: {0}")]
    Reload(String),
}

static HANDLE: OnceLock<reload::Handle<LevelFilter, Registry>> = OnceLock::new();

/// The filter for a SlurmctldDebug level: quiet shows nothing, fatal and
/// error only errors, info and verbose info (and warnings), debug debug,
/// debug2 to debug5 everything.
pub fn filter_for(level: LogLevel) -> LevelFilter {
    match level {
        LogLevel::Quiet => LevelFilter::OFF,
        LogLevel::Fatal | LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Info | LogLevel::Verbose => LevelFilter::INFO,
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Debug2 | LogLevel::Debug3 | LogLevel::Debug4 | LogLevel::Debug5 => {
            LevelFilter::TRACE
        }
    }
}

/// The filter for SlurmctldDebug raised by `verbose` `-v` flags, one
/// filter step each.
pub fn start_filter(level: LogLevel, verbose: u8) -> LevelFilter {
    const STEPS: [LevelFilter; 6] = [
        LevelFilter::OFF,
        LevelFilter::ERROR,
        LevelFilter::WARN,
        LevelFilter::INFO,
        LevelFilter::DEBUG,
        LevelFilter::TRACE,
    ];
    let base = filter_for(level);
    let at = STEPS.iter().position(|f| *f == base).unwrap_or(3);
    STEPS[at.saturating_add(usize::from(verbose)).min(STEPS.len() - 1)]
}

/// Installs the process's log: to `file` (appended to, no colours) or to
/// standard error, at `filter`, which [`set_level`] changes later.
pub fn init(filter: LevelFilter, file: Option<&Path>) -> Result<(), LogError> {
    let (layer, handle) = reload::Layer::new(filter);
    let registry = tracing_subscriber::registry().with(layer);
    let installed = match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| LogError::OpenFile {
                    path: path.to_path_buf(),
                    source,
                })?;
            registry
                .with(
                    tracing_subscriber::fmt::layer()
                        .with_target(false)
                        .with_ansi(false)
                        .with_writer(std::sync::Mutex::new(f)),
                )
                .try_init()
        }
        None => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_target(false)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    installed.map_err(|_| LogError::AlreadyInstalled)?;
    HANDLE.set(handle).map_err(|_| LogError::AlreadyInstalled)
}

/// Changes the level of the log [`init`] installed.
pub fn set_level(level: LogLevel) -> Result<(), LogError> {
    let handle = HANDLE.get().ok_or(LogError::NotInstalled)?;
    handle
        .reload(filter_for(level))
        .map_err(|e| LogError::Reload(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_levels_fold_into_tracing_filters() {
        assert_eq!(filter_for(LogLevel::Quiet), LevelFilter::OFF);
        assert_eq!(filter_for(LogLevel::Fatal), LevelFilter::ERROR);
        assert_eq!(filter_for(LogLevel::Verbose), LevelFilter::INFO);
        assert_eq!(filter_for(LogLevel::Debug), LevelFilter::DEBUG);
        assert_eq!(filter_for(LogLevel::Debug5), LevelFilter::TRACE);
    }

    #[test]
    fn each_v_flag_is_one_step_more() {
        assert_eq!(start_filter(LogLevel::Info, 0), LevelFilter::INFO);
        assert_eq!(start_filter(LogLevel::Info, 1), LevelFilter::DEBUG);
        assert_eq!(start_filter(LogLevel::Error, 1), LevelFilter::WARN);
        assert_eq!(start_filter(LogLevel::Debug2, 3), LevelFilter::TRACE);
        assert_eq!(start_filter(LogLevel::Quiet, 0), LevelFilter::OFF);
    }

    #[test]
    fn without_init_the_level_cannot_change() {
        // Unit tests never install the daemon's subscriber.
        assert!(matches!(
            set_level(LogLevel::Debug),
            Err(LogError::NotInstalled)
        ));
    }
}
