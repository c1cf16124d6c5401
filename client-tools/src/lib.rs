//! The user commands. Each binary in `src/bin/` is thin: it hands its
//! arguments to a `run` function here and exits with the code it returns.

pub mod arena;
pub mod client;
pub mod format;
pub mod h2call;
#[cfg(all(target_env = "musl", target_arch = "x86_64"))]
pub mod memcpy;
pub mod opts;
pub mod output;
pub mod sbatch;
pub mod scancel;
pub mod scontrol;
pub mod sinfo;
pub mod squeue;

#[cfg(test)]
mod tests {
    /// The commands link the unwinder statically (`build.rs`); a panic
    /// must still unwind to its catcher rather than abort the process.
    #[test]
    fn panics_unwind_with_the_static_unwinder() {
        let caught = std::panic::catch_unwind(|| {
            let v: Vec<u8> = Vec::new();
            v.get(1).copied().unwrap_or_else(|| panic!("boom"))
        });
        assert!(caught.is_err());
    }
}
