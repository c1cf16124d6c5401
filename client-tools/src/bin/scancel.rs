//! `scancel`: see [`slurm_client_tools::scancel`].

fn main() {
    std::process::exit(slurm_client_tools::scancel::run(
        std::env::args_os().collect(),
    ));
}
