//! slurmstepd: runs one batch job; started by slurmd only.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match slurmd::stepd::run::parse_args(&args) {
        Ok(a) => slurmd::stepd::run::run(a),
        Err(e) => {
            eprintln!("slurmstepd: {e} (slurmstepd is started by slurmd only)");
            1
        }
    };
    std::process::exit(code);
}
