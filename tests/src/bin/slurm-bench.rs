//! `slurm-bench [--quick] [--json FILE]`: measures a local cluster against
//! the performance targets (see `slurm_testkit::bench`).

use std::io::Write;

fn main() {
    let mut quick = false;
    let mut json = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--json" => match args.next() {
                Some(f) => json = Some(f),
                None => fail("--json expects a file name"),
            },
            "-h" | "--help" => {
                println!("usage: slurm-bench [--quick] [--json FILE]");
                return;
            }
            other => fail(&format!("unrecognized argument '{other}'")),
        }
    }
    let mut out = std::io::stdout();
    if let Err(e) = slurm_testkit::local::ensure_bins(&mut out) {
        fail(&format!("{e:#}"));
    }
    let sizes = if quick {
        slurm_testkit::bench::Sizes::quick()
    } else {
        slurm_testkit::bench::Sizes::full()
    };
    let mut progress = |m: &str| {
        let _ = writeln!(std::io::stderr(), "slurm-bench: {m}");
    };
    let figs = match slurm_testkit::bench::run_all(&sizes, &mut progress) {
        Ok(f) => f,
        Err(e) => fail(&format!("{e:#}")),
    };
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
