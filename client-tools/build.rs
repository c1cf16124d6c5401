//! Links the glibc build of the commands as position-dependent
//! executables, with the unwinder linked in statically. (The musl build is
//! static already, and stays a static PIE: its start file needs that.)
//!
//! A command is a short process that scripts run thousands of times a
//! minute, so its start-up is most of its cost. A position-independent
//! executable makes the dynamic loader apply a relocation to every pointer
//! in the program's data before `main` (about 2,700 for `sbatch`), touching
//! and copying the pages they sit on; linked at a fixed address it needs
//! about 120. The commands run with the caller's privileges only, so a fixed
//! load address gives nothing away that the daemons (still PIE) protect.
//!
//! The shared libgcc_s (the unwinder Rust's standard library links) runs a
//! constructor that probes the CPU with CPUID at every start; under a
//! hypervisor each CPUID traps, and it is a fourth library to map and
//! relocate. A `libgcc_s.so` linker script in OUT_DIR that names the static
//! `libgcc_eh` makes both the standard library's `-lgcc_s` and the
//! compiler driver's resolve to the static unwinder (`sbatch --version`:
//! 1.03 -> 0.97 ms per run).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    // `-no-pie` is understood by the GNU and LLVM toolchains on Linux. A
    // static musl program starts through the static-PIE start file, which
    // a fixed address would break.
    if target.contains("linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        static_libgcc();
    }
}

fn static_libgcc() {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    // Only where the toolchain has the static unwinder; the shared one
    // works everywhere else.
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let found = std::process::Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|p| p.is_absolute() && p.is_file());
    if !found {
        return;
    }
    let script = out.join("libgcc_s.so");
    if std::fs::write(&script, "INPUT(-lgcc_eh)\n").is_ok() {
        println!("cargo:rustc-link-search=native={}", out.display());
        // Everything this package links, its test programs too, so that
        // the tests exercise the unwinder the commands ship with.
        println!("cargo:rustc-link-arg=-static-libgcc");
    }
}
