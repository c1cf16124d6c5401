//! Locating the workspace's built binaries.
//!
//! Integration tests of one package only get `CARGO_BIN_EXE_*` for that
//! package's own binaries, so the kit finds the others in the target directory
//! the test binary itself was built into (`target/<profile>/deps/<test>` ->
//! `target/<profile>/`). `SLURM_BIN_DIR` overrides the search.
//! `SLURM_COMMANDS_DIR` names another directory for the user commands
//! alone (`sbatch`, `squeue`, ...), such as the static musl build of
//! `slurm-client-tools`; the daemons still come from the binary directory.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The directory holding the workspace binaries.
pub fn bin_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("SLURM_BIN_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().context("cannot find the running executable")?;
    let mut dir = exe.parent().map(Path::to_path_buf);
    // Test binaries live in <profile>/deps; ordinary binaries in <profile>.
    if dir.as_deref().and_then(Path::file_name) == Some("deps".as_ref()) {
        dir = dir.and_then(|d| d.parent().map(Path::to_path_buf));
    }
    dir.with_context(|| format!("no parent directory for {}", exe.display()))
}

/// The variable naming the directory of the user commands.
pub const COMMANDS_DIR_ENV: &str = "SLURM_COMMANDS_DIR";

/// The directory the user commands are run from: `SLURM_COMMANDS_DIR`,
/// else [`bin_dir`].
pub fn commands_dir() -> Result<PathBuf> {
    match std::env::var_os(COMMANDS_DIR_ENV) {
        Some(dir) if !dir.is_empty() => std::path::absolute(&dir)
            .with_context(|| format!("{COMMANDS_DIR_ENV}={}", PathBuf::from(&dir).display())),
        _ => bin_dir(),
    }
}

/// Path of the named workspace binary, which must exist (build it first, e.g.
/// `cargo build --workspace --bins`).
pub fn bin_path(name: &str) -> Result<PathBuf> {
    let path = bin_dir()?.join(name);
    if !path.is_file() {
        bail!(
            "binary {name} not found at {}: build the workspace binaries first (cargo build --workspace --bins) or set SLURM_BIN_DIR",
            path.display()
        );
    }
    Ok(path)
}
