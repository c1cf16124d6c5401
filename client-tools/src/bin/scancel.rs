//! `scancel`: see [`slurm_client_tools::scancel`].
//!
//! The C `main` is declared here directly, skipping the Rust start-up
//! (see [`slurm_client_tools::output::run_as_main`]).

#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
#[global_allocator]
static ALLOC: slurm_client_tools::arena::Arena = slurm_client_tools::arena::Arena::new();

#[cfg(not(test))]
#[no_mangle]
extern "C" fn main(argc: std::ffi::c_int, argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    // SAFETY: these are the C `main`'s own arguments.
    unsafe { slurm_client_tools::output::run_as_main(slurm_client_tools::scancel::run, argc, argv) }
}
