//! Log set-up shared by slurmd and slurmstepd: to the log file when one is
//! configured (opened for appending, so both daemons can share it), else to
//! standard error.

use std::path::Path;

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `verbosity` counts `-v` flags on top of
/// `info`. An unopenable log file falls back to standard error and says so.
pub fn init(log_file: Option<&Path>, verbosity: u8) {
    let level = match verbosity {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("SLURMD_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if let Some(path) = log_file {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(file) => {
                let _ = builder
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(file))
                    .try_init();
                return;
            }
            Err(e) => {
                let _ = builder.with_writer(std::io::stderr).try_init();
                tracing::warn!(path = %path.display(), error = %e, "cannot open log file; logging to stderr");
                return;
            }
        }
    }
    let _ = builder.with_writer(std::io::stderr).try_init();
}
