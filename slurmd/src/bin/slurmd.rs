//! slurmd: the node daemon. Thin main: arguments, then `daemon::run`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match slurmd::daemon::parse_args(&args) {
        Ok(a) => slurmd::daemon::run(a),
        Err(e) => {
            eprintln!("{}", e.0);
            eprint!("{}", slurmd::daemon::USAGE);
            1
        }
    };
    std::process::exit(code);
}
