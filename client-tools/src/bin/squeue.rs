//! `squeue`: see [`slurm_client_tools::squeue`].

fn main() {
    std::process::exit(slurm_client_tools::squeue::run(
        std::env::args_os().collect(),
    ));
}
