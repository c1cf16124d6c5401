//! `slurm-fuzz [--inputs N] [--seed S] [--json FILE] [TARGET...]`: feeds N
//! generated inputs (default 1,000,000) to each parser and reports counts; exits
//! 1 if any input made a parser panic or broke a property.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use slurm_testkit::fuzz::{run, Target};

fn main() -> ExitCode {
    match real_main() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("slurm-fuzz: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<bool> {
    let mut inputs = 1_000_000u64;
    let mut seed = 1u64;
    let mut json_path = None;
    let mut targets = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--inputs" => inputs = args.next().context("--inputs needs a number")?.parse()?,
            "--seed" => seed = args.next().context("--seed needs a number")?.parse()?,
            "--json" => json_path = Some(args.next().context("--json needs a file")?),
            name => match Target::from_name(name) {
                Some(t) => targets.push(t),
                None => bail!("unknown target {name:?} (hostlist, slurm.conf, time)"),
            },
        }
    }
    if targets.is_empty() {
        targets = Target::ALL.to_vec();
    }
    let mut all_ok = true;
    let mut json = Vec::new();
    for target in targets {
        let r = run(target, inputs, seed);
        println!(
            "{:<11} inputs {:>9}  accepted {:>9}  panics {}  violations {}  {:.1} s",
            r.target, r.inputs, r.accepted, r.panics, r.violations, r.seconds
        );
        for f in &r.findings {
            println!("    {f}");
        }
        all_ok &= r.ok();
        json.push(r.to_json());
    }
    let json = format!("[{}]\n", json.join(","));
    match json_path {
        Some(p) => std::fs::write(&p, json).with_context(|| format!("cannot write {p}"))?,
        None => print!("{json}"),
    }
    Ok(all_ok)
}
