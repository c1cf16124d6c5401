//! `slurm-bench [--quick] [--only SECTIONS] [--commands DIR] [--json FILE]`:
//! measures the real binaries against the performance targets and prints a
//! table (and JSON). `--commands` runs the user commands from DIR (for
//! example the static musl build, `target/x86_64-unknown-linux-musl/release`)
//! and the daemons from the usual place. Sections: `jobs` (submission, queries, memory, restart;
//! `slurm_testkit::bench`; `submit` and `queue` are its two halves on their
//! own, `api` the API submissions of `submit` alone), `recovery` (restart with a large state),
//! `ha` (takeover with a backup controller), `tree` (emulated nodes and
//! the TreeWidth fan-out). All of them by default.

use std::io::Write;

const SECTIONS: &[&str] = &["jobs", "submit", "queue", "api", "recovery", "ha", "tree"];

type PartFn = for<'a, 'b> fn(
    &'a slurm_testkit::bench::Sizes,
    &'b mut dyn FnMut(&str),
) -> anyhow::Result<Vec<slurm_testkit::bench::Figure>>;

fn main() {
    let mut quick = false;
    let mut json = None;
    // `api` is inside `submit`, which is inside `jobs`: not a default.
    let mut only: Vec<String> = SECTIONS
        .iter()
        .filter(|s| **s != "api")
        .map(|s| (*s).to_string())
        .collect();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--json" => match args.next() {
                Some(f) => json = Some(f),
                None => fail("--json expects a file name"),
            },
            "--commands" => match args.next() {
                Some(dir) => {
                    if !std::path::Path::new(&dir).join("sbatch").is_file() {
                        fail(&format!("--commands: no sbatch in {dir}"));
                    }
                    // Read by the clusters the sections start, in this
                    // process and its children; set before any thread.
                    std::env::set_var(slurm_testkit::COMMANDS_DIR_ENV, dir);
                }
                None => fail("--commands expects a directory"),
            },
            "--only" => match args.next() {
                Some(list) => {
                    only = list.split(',').map(|s| s.trim().to_string()).collect();
                    if let Some(bad) = only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                        fail(&format!(
                            "unknown section '{bad}' (sections: {})",
                            SECTIONS.join(",")
                        ));
                    }
                }
                None => fail("--only expects a list of sections"),
            },
            "-h" | "--help" => {
                println!(
                    "usage: slurm-bench [--quick] [--only {}] [--commands DIR] [--json FILE]",
                    SECTIONS.join(",")
                );
                return;
            }
            other => fail(&format!("unrecognized argument '{other}'")),
        }
    }
    let mut out = std::io::stdout();
    if let Err(e) = slurm_testkit::local::ensure_bins(&mut out) {
        fail(&format!("{e:#}"));
    }
    let mut progress = |m: &str| {
        let _ = writeln!(std::io::stderr(), "slurm-bench: {m}");
    };
    let chosen = std::env::var_os(slurm_testkit::COMMANDS_DIR_ENV).is_some_and(|d| !d.is_empty());
    match slurm_testkit::commands_dir() {
        Ok(dir) if chosen => progress(&format!("commands from {}", dir.display())),
        // The sbatch figures depend on the commands' build: glibc's start-up
        // alone costs each command about 0.8 ms on a virtual machine.
        Ok(dir) => progress(&format!(
            "commands from {} (the daemons' build); for the sbatch figures build the \
             static musl commands and pass --commands (README, \"Faster commands\")",
            dir.display()
        )),
        Err(_) => {}
    }
    let wants = |s: &str| only.iter().any(|o| o == s);
    let mut figs = Vec::new();
    if wants("jobs") {
        let sizes = if quick {
            slurm_testkit::bench::Sizes::quick()
        } else {
            slurm_testkit::bench::Sizes::full()
        };
        match slurm_testkit::bench::run_all(&sizes, &mut progress) {
            Ok(f) => figs.extend(f),
            Err(e) => fail(&format!("{e:#}")),
        }
    }
    // `submit` and `queue` are parts of `jobs`, on their own; `api` is a
    // part of `submit`.
    for (part, run) in [
        ("submit", slurm_testkit::bench::run_submit as PartFn),
        ("queue", slurm_testkit::bench::run_queue),
        ("api", slurm_testkit::bench::run_api),
    ] {
        let inside = wants("jobs") || (part == "api" && wants("submit"));
        if wants(part) && !inside {
            let sizes = if quick {
                slurm_testkit::bench::Sizes::quick()
            } else {
                slurm_testkit::bench::Sizes::full()
            };
            match run(&sizes, &mut progress) {
                Ok(f) => figs.extend(f),
                Err(e) => fail(&format!("{e:#}")),
            }
        }
    }
    if wants("recovery") {
        figs.extend(slurm_testkit::bench::run_recovery(quick, &mut progress));
    }
    if wants("ha") {
        figs.extend(slurm_testkit::bench::run_ha(quick, &mut progress));
    }
    if wants("tree") {
        progress("fan-out tree with emulated nodes");
        let sizes = if quick {
            slurm_testkit::bench_tree::TreeBenchSizes::quick()
        } else {
            slurm_testkit::bench_tree::TreeBenchSizes::full()
        };
        figs.extend(slurm_testkit::bench_tree::run_tree_bench(&sizes));
    }
    print!("{}", slurm_testkit::bench::render_table(&figs));
    if let Some(path) = json {
        if let Err(e) = std::fs::write(&path, slurm_testkit::bench::render_json(&figs, quick)) {
            fail(&format!("cannot write {path}: {e}"));
        }
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("slurm-bench: error: {msg}");
    std::process::exit(2)
}
