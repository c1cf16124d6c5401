//! `sbatch`: see [`slurm_client_tools::sbatch`].

fn main() {
    std::process::exit(slurm_client_tools::sbatch::run(
        std::env::args_os().collect(),
    ));
}
