//! `scontrol`: see [`slurm_client_tools::scontrol`].

fn main() {
    std::process::exit(slurm_client_tools::scontrol::run(
        std::env::args_os().collect(),
    ));
}
