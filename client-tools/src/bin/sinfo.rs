//! `sinfo`: see [`slurm_client_tools::sinfo`].

fn main() {
    std::process::exit(slurm_client_tools::sinfo::run(
        std::env::args_os().collect(),
    ));
}
