//! `slurm-local`: starts a cluster on this machine (see `slurm_testkit::local`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout();
    match slurm_testkit::local::run(&args, &mut out) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("slurm-local: error: {e:#}");
            std::process::exit(1);
        }
    }
}
