//! A short no-panic fuzz pass over every parser on each test run. The long
//! runs (1,000,000 inputs per target) use the `slurm-fuzz` program.

use slurm_testkit::fuzz::{run, Target};

fn fuzz(target: Target) {
    let seed = std::env::var("SLURM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let report = run(target, 20_000, seed);
    assert!(report.ok(), "{}", report.to_json());
    assert_eq!(report.inputs, 20_000);
    // The generator must reach past the error paths, or the run proves little.
    assert!(report.accepted > 200, "{}", report.to_json());
}

#[test]
fn hostlist_parser_never_panics() {
    fuzz(Target::Hostlist);
}

#[test]
fn config_parsers_never_panic() {
    fuzz(Target::SlurmConf);
}

#[test]
fn time_and_size_parsers_never_panic() {
    fuzz(Target::Time);
}
