//! slurm-proto: the wire between daemons and commands.
//!
//! One crate owns every `.proto` file (package `slurm.v1`, under `proto/`) so
//! that the whole protocol is reviewed in one place and evolves by the same
//! append-only rules. The generated code is in [`v1`] and is never edited by
//! hand. Around it sit:
//!
//! * [`ErrorCode`]: the one error vocabulary, mapped to gRPC, HTTP and
//!   command exit codes, with Slurm's numbers and texts;
//! * [`convert`]: checked conversions from wire values to domain types;
//! * the authentication metadata convention ([`AUTH_METADATA_KEY`]).
//!
//! Services: [`v1::slurm_controller_server::SlurmController`] (commands to
//! slurmctld), [`v1::slurm_node_reports_server::SlurmNodeReports`] (slurmd to
//! slurmctld), [`v1::slurm_node_server::SlurmNode`] (slurmctld to slurmd,
//! with tree fan-out through `Forward`) and
//! [`v1::slurm_dbd_server::SlurmDbd`] (accounting).

pub mod convert;
pub mod error;

/// Code generated from `proto/slurm/v1/*.proto` by tonic-prost-build.
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod v1 {
    tonic::include_proto!("slurm.v1");
}

pub use error::{ErrorCode, ERRNO_METADATA_KEY};
pub use v1::slurm_controller_client::SlurmControllerClient;
pub use v1::slurm_controller_server::{SlurmController, SlurmControllerServer};
pub use v1::slurm_dbd_client::SlurmDbdClient;
pub use v1::slurm_dbd_server::{SlurmDbd, SlurmDbdServer};
pub use v1::slurm_node_client::SlurmNodeClient;
pub use v1::slurm_node_reports_client::SlurmNodeReportsClient;
pub use v1::slurm_node_reports_server::{SlurmNodeReports, SlurmNodeReportsServer};
pub use v1::slurm_node_server::{SlurmNode, SlurmNodeServer};
pub use v1::slurmd_info_client::SlurmdInfoClient;
pub use v1::slurmd_info_server::{SlurmdInfo, SlurmdInfoServer};

/// The reply stream of `StreamJobs`, as a `SlurmController` implements it.
pub type JobsReplyStream = std::pin::Pin<
    Box<
        dyn tonic::codegen::tokio_stream::Stream<Item = Result<v1::GetJobsReply, tonic::Status>>
            + Send,
    >,
>;

/// The reply stream of `SubmitJobs`, as a `SlurmController` implements it.
pub type SubmitJobsReplyStream = std::pin::Pin<
    Box<
        dyn tonic::codegen::tokio_stream::Stream<Item = Result<v1::SubmitJobsReply, tonic::Status>>
            + Send,
    >,
>;

use tonic::metadata::{AsciiMetadataValue, MetadataMap};

/// gRPC metadata key carrying the caller's credential (an auth/slurm token
/// or a munge credential, as text) on every request.
pub const AUTH_METADATA_KEY: &str = "x-slurm-auth";

/// A credential that cannot travel as gRPC metadata.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthMetadataError {
    #[error("credential of {len} bytes is not printable ascii and cannot be sent as metadata")]
    NotAscii { len: usize },
}

/// Puts `credential` into `metadata` under [`AUTH_METADATA_KEY`], replacing
/// any credential already there.
pub fn set_auth_credential(
    metadata: &mut MetadataMap,
    credential: &str,
) -> Result<(), AuthMetadataError> {
    // The http crate would also take bytes above 0x7f, which the receiving
    // side then cannot read back as text; refuse them here.
    let printable = credential.bytes().all(|b| (0x20..0x7f).contains(&b));
    let value = AsciiMetadataValue::try_from(credential)
        .ok()
        .filter(|_| printable)
        .ok_or(AuthMetadataError::NotAscii {
            len: credential.len(),
        })?;
    metadata.insert(AUTH_METADATA_KEY, value);
    Ok(())
}

/// The credential under [`AUTH_METADATA_KEY`], if present and readable.
pub fn auth_credential(metadata: &MetadataMap) -> Option<&str> {
    metadata
        .get(AUTH_METADATA_KEY)
        .and_then(|value| value.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_credential_round_trip() {
        let mut metadata = MetadataMap::new();
        assert_eq!(auth_credential(&metadata), None);
        set_auth_credential(&mut metadata, "slurm:v1:abc.def").expect("ascii credential");
        assert_eq!(auth_credential(&metadata), Some("slurm:v1:abc.def"));
        set_auth_credential(&mut metadata, "other").expect("ascii credential");
        assert_eq!(auth_credential(&metadata), Some("other"));
    }

    #[test]
    fn auth_credential_rejects_unsendable_text() {
        let mut metadata = MetadataMap::new();
        assert_eq!(
            set_auth_credential(&mut metadata, "caf\u{e9}"),
            Err(AuthMetadataError::NotAscii { len: 5 })
        );
        assert!(set_auth_credential(&mut metadata, "line\nbreak").is_err());
        assert_eq!(auth_credential(&metadata), None);
    }
}
