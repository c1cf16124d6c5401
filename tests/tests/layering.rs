//! The dependency arrows of ARCHITECTURE.md, checked: `slurm-common` and
//! `slurm-sched` never pull in an async runtime, RPC stack, database or nix
//! (directly or through another crate), and the client tools never depend on a
//! daemon crate.

use std::process::Command;

/// Normal and build dependencies of `package` with every feature on, one crate
/// name per entry, as `cargo tree` resolves them.
fn dependency_names(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "tree",
            "--manifest-path",
            manifest,
            "-p",
            package,
            "--all-features",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "--offline",
        ])
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn assert_free_of(package: &str, forbidden: &[&str]) {
    let deps = dependency_names(package);
    assert!(
        deps.iter().any(|d| d == package),
        "{package} not in its own tree: {deps:?}"
    );
    let found: Vec<&String> = deps
        .iter()
        .filter(|d| forbidden.contains(&d.as_str()))
        .collect();
    assert!(found.is_empty(), "{package} depends on {found:?}");
}

const RUNTIME_CRATES: &[&str] = &["tokio", "tonic", "rusqlite", "nix", "hyper", "axum"];

#[test]
fn common_has_no_runtime_dependencies() {
    assert_free_of("slurm-common", RUNTIME_CRATES);
}

#[test]
fn sched_has_no_runtime_dependencies() {
    assert_free_of("slurm-sched", RUNTIME_CRATES);
}

#[test]
fn client_tools_do_not_depend_on_daemons() {
    assert_free_of(
        "slurm-client-tools",
        &["slurmctld", "slurmd", "slurmdbd", "slurmrestd"],
    );
}

#[test]
fn the_check_sees_real_dependencies() {
    // Guards the guard: if cargo tree's output format changed, the checks above
    // would pass vacuously. slurm-proto really does depend on tonic.
    let deps = dependency_names("slurm-proto");
    assert!(deps.iter().any(|d| d == "tonic"), "{deps:?}");
}
