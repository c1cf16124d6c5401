//! Links the commands as position-dependent executables.
//!
//! A command is a short process that scripts run thousands of times a
//! minute, so its start-up is most of its cost. A position-independent
//! executable makes the dynamic loader apply a relocation to every pointer
//! in the program's data before `main` (about 2,700 for `sbatch`), touching
//! and copying the pages they sit on; linked at a fixed address it needs
//! about 120. The commands run with the caller's privileges only, so a fixed
//! load address gives nothing away that the daemons (still PIE) protect.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    // `-no-pie` is understood by the GNU and LLVM toolchains on Linux.
    if target.contains("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
