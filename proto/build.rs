//! Compiles every `.proto` file of package `slurm.v1` into one Rust module.
//!
//! protoc comes from the `protoc-bin-vendored` crate, so building needs no
//! system protobuf compiler. Generated code lands in `OUT_DIR` and is never
//! edited by hand.

use std::error::Error;
use std::path::Path;

/// Every file of the package, relative to the crate root. A new file must be
/// added here so that it is compiled and watched.
const PROTOS: &[&str] = &[
    "proto/slurm/v1/common.proto",
    "proto/slurm/v1/controller.proto",
    "proto/slurm/v1/slurmd_ctl.proto",
    "proto/slurm/v1/node.proto",
    "proto/slurm/v1/accounting.proto",
];

fn main() -> Result<(), Box<dyn Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // prost-build reads the compiler from PROTOC. Build scripts are single
    // threaded, so setting the variable here races with nothing.
    std::env::set_var("PROTOC", protoc);

    for proto in PROTOS {
        if !Path::new(proto).is_file() {
            return Err(format!("missing proto file {proto}").into());
        }
        println!("cargo:rerun-if-changed={proto}");
    }
    println!("cargo:rerun-if-changed=build.rs");

    tonic_prost_build::configure()
        // Our own rerun-if-changed lines above are the complete list.
        .emit_rerun_if_changed(false)
        .compile_protos(PROTOS, &["proto"])?;
    Ok(())
}
