//! The one error vocabulary shared by daemons, commands and the REST API.
//!
//! Users and scripts match on Slurm's error texts ("Invalid job id
//! specified"), and REST clients read Slurm's error numbers (2017), so every
//! error a daemon reports to a client is an [`ErrorCode`] carrying Slurm's
//! number and exact wording where Slurm has one. One code maps to:
//!
//! * a [`tonic::Code`] for gRPC, with the number itself in the
//!   [`ERRNO_METADATA_KEY`] metadata so a client recovers the exact code;
//! * an HTTP status for slurmrestd;
//! * a command-line exit code.
//!
//! The HTTP and exit-code mappings copy real Slurm rather than REST taste:
//! captured Slurm 22.05 output shows slurmrestd answering `500` for every
//! error the controller reports (an unknown job, a submission without a
//! script, a bad token) and commands exiting `1` for every such error. Only
//! slurmrestd's own request-parsing errors get `4xx`.
//!
//! Numbers are Slurm 22.05's (`slurm_errno.h`); they have been stable across
//! Slurm releases. Codes Slurm has no equivalent for live in a private range
//! starting at [`PRIVATE_RANGE_START`] and have [`ErrorCode::slurm_name`]
//! `None`. Per-item failures inside replies (`JobActionResult.error_code`,
//! `NodeResult.error_code`) carry the same numbers; see
//! [`ErrorCode::from_number`].

use std::fmt;

use tonic::metadata::{MetadataMap, MetadataValue};

/// gRPC metadata key carrying [`ErrorCode::number`] on an error status.
pub const ERRNO_METADATA_KEY: &str = "x-slurm-errno";

/// First number of the range used for codes that Slurm itself lacks.
pub const PRIVATE_RANGE_START: i32 = 30_000;

/// Exit code of a command that failed because of an [`ErrorCode`]. Slurm's
/// commands exit 1 for every error the controller reports (usage errors that
/// never reach a daemon exit 255, and are not [`ErrorCode`]s).
pub const CLI_EXIT_FAILURE: i32 = 1;

macro_rules! error_codes {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $number:literal, $symbol:expr, $message:literal, $grpc:ident;
    )*) => {
        /// An error as Slurm names it. See the module documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// Slurm's error number (or a number in the private range).
            pub const fn number(self) -> i32 {
                match self { $( ErrorCode::$variant => $number, )* }
            }

            /// Slurm's symbolic name (`ESLURM_INVALID_JOB_ID`); `None` for
            /// codes Slurm does not have.
            pub const fn slurm_name(self) -> Option<&'static str> {
                match self { $( ErrorCode::$variant => $symbol, )* }
            }

            /// The text Slurm prints for this error, word for word.
            pub const fn message(self) -> &'static str {
                match self { $( ErrorCode::$variant => $message, )* }
            }

            /// The gRPC status code this error travels as.
            pub const fn grpc_code(self) -> tonic::Code {
                match self { $( ErrorCode::$variant => tonic::Code::$grpc, )* }
            }

            /// The code with this number, if it is one of ours.
            pub fn from_number(number: i32) -> Option<ErrorCode> {
                match number {
                    $( $number => Some(ErrorCode::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    // --- general -----------------------------------------------------------
    /// Slurm's catch-all `SLURM_ERROR`; also what an unknown number decodes to.
    Unspecified = -1, Some("SLURM_ERROR"), "Unspecified error", Unknown;
    /// The controller holds MaxJobCount jobs (the system's EAGAIN): sbatch
    /// waits and tries again.
    TryAgain = 11, Some("EAGAIN"), "Resource temporarily unavailable", ResourceExhausted;
    /// The system's EACCES, which Slurm answers to a non-operator's
    /// `scontrol setdebug` and `setdebugflags`.
    PermissionDenied = 13, Some("EACCES"), "Permission denied", PermissionDenied;
    /// A message of the wrong kind for the endpoint.
    UnexpectedMessage = 1000, Some("SLURM_UNEXPECTED_MSG_ERROR"),
        "Unexpected message received", Internal;
    /// A peer (a node, a relay) could not be connected to.
    CommunicationConnection = 1001, Some("SLURM_COMMUNICATIONS_CONNECTION_ERROR"),
        "Communication connection failure", Unavailable;
    CommunicationSend = 1002, Some("SLURM_COMMUNICATIONS_SEND_ERROR"),
        "Message send failure", Unavailable;
    CommunicationReceive = 1003, Some("SLURM_COMMUNICATIONS_RECEIVE_ERROR"),
        "Message receive failure", Unavailable;
    /// Client and server speak different protocol versions.
    ProtocolVersion = 1005, Some("SLURM_PROTOCOL_VERSION_ERROR"),
        "Incompatible versions of client and server code", FailedPrecondition;
    /// The request's credential is missing, malformed or does not verify.
    ProtocolAuthentication = 1007, Some("SLURM_PROTOCOL_AUTHENTICATION_ERROR"),
        "Protocol authentication error", Unauthenticated;
    /// No controller could be reached.
    ControllerConnect = 1800, Some("SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR"),
        "Unable to contact slurm controller (connect failure)", Unavailable;
    ControllerSend = 1801, Some("SLURMCTLD_COMMUNICATIONS_SEND_ERROR"),
        "Unable to contact slurm controller (send failure)", Unavailable;
    ControllerReceive = 1802, Some("SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR"),
        "Unable to contact slurm controller (receive failure)", Unavailable;

    // --- controller --------------------------------------------------------
    InvalidPartitionName = 2000, Some("ESLURM_INVALID_PARTITION_NAME"),
        "Invalid partition name specified", NotFound;
    DefaultPartitionNotSet = 2001, Some("ESLURM_DEFAULT_PARTITION_NOT_SET"),
        "No partition specified or system default partition", FailedPrecondition;
    AccessDenied = 2002, Some("ESLURM_ACCESS_DENIED"),
        "Access/permission denied", PermissionDenied;
    PartitionGroupDenied = 2003, Some("ESLURM_JOB_MISSING_REQUIRED_PARTITION_GROUP"),
        "User's group not permitted to use this partition", PermissionDenied;
    RequestedNodesNotInPartition = 2004, Some("ESLURM_REQUESTED_NODES_NOT_IN_PARTITION"),
        "Requested nodes not in this partition", InvalidArgument;
    TooManyRequestedCpus = 2005, Some("ESLURM_TOO_MANY_REQUESTED_CPUS"),
        "More processors requested than permitted", InvalidArgument;
    InvalidNodeCount = 2006, Some("ESLURM_INVALID_NODE_COUNT"),
        "Node count specification invalid", InvalidArgument;
    JobScriptMissing = 2009, Some("ESLURM_JOB_SCRIPT_MISSING"),
        "Job script not specified", InvalidArgument;
    InvalidUserId = 2010, Some("ESLURM_USER_ID_MISSING"),
        "Invalid user id", InvalidArgument;
    DuplicateJobId = 2011, Some("ESLURM_DUPLICATE_JOB_ID"),
        "Duplicate job id", AlreadyExists;
    PathnameTooLong = 2012, Some("ESLURM_PATHNAME_TOO_LONG"),
        "Pathname of a file, directory or other parameter too long", InvalidArgument;
    /// The request can never be satisfied by any node of the partition.
    RequestedNodeConfigUnavailable = 2014, Some("ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE"),
        "Requested node configuration is not available", InvalidArgument;
    RequestedPartConfigUnavailable = 2015, Some("ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE"),
        "Requested partition configuration not available now", FailedPrecondition;
    NodesBusy = 2016, Some("ESLURM_NODES_BUSY"),
        "Requested nodes are busy", ResourceExhausted;
    InvalidJobId = 2017, Some("ESLURM_INVALID_JOB_ID"),
        "Invalid job id specified", NotFound;
    InvalidNodeName = 2018, Some("ESLURM_INVALID_NODE_NAME"),
        "Invalid node name specified", NotFound;
    WritingToFile = 2019, Some("ESLURM_WRITING_TO_FILE"),
        "I/O error writing script/environment to file", Internal;
    TransitionStateNoUpdate = 2020, Some("ESLURM_TRANSITION_STATE_NO_UPDATE"),
        "Job can not be altered now, try again later", FailedPrecondition;
    AlreadyDone = 2021, Some("ESLURM_ALREADY_DONE"),
        "Job/step already completing or completed", FailedPrecondition;
    BadDistribution = 2023, Some("ESLURM_BAD_DIST"),
        "Task distribution specification invalid", InvalidArgument;
    JobPending = 2024, Some("ESLURM_JOB_PENDING"),
        "Job is pending execution", FailedPrecondition;
    BadTaskCount = 2025, Some("ESLURM_BAD_TASK_COUNT"),
        "Task count specification invalid", InvalidArgument;
    /// The controller could not create a job credential.
    JobCredentialCreation = 2026, Some("ESLURM_INVALID_JOB_CREDENTIAL"),
        "Error generating job credential", Internal;
    /// A backup controller that is not in control was asked to act.
    InStandbyMode = 2027, Some("ESLURM_IN_STANDBY_MODE"),
        "Slurm backup controller in standby mode", Unavailable;
    InvalidNodeState = 2028, Some("ESLURM_INVALID_NODE_STATE"),
        "Invalid node state specified", InvalidArgument;
    InvalidFeature = 2029, Some("ESLURM_INVALID_FEATURE"),
        "Invalid feature specification", InvalidArgument;
    ActiveFeatureNotSubset = 2031, Some("ESLURM_ACTIVE_FEATURE_NOT_SUBSET"),
        "Active features not subset of available features", InvalidArgument;
    NotSupported = 2036, Some("ESLURM_NOT_SUPPORTED"),
        "Requested operation not supported on this system", Unimplemented;
    Disabled = 2037, Some("ESLURM_DISABLED"),
        "Requested operation is presently disabled", FailedPrecondition;
    Dependency = 2038, Some("ESLURM_DEPENDENCY"),
        "Job dependency problem", InvalidArgument;
    BatchOnly = 2039, Some("ESLURM_BATCH_ONLY"),
        "Only batch jobs are accepted or processed", FailedPrecondition;
    JobHeld = 2042, Some("ESLURM_JOB_HELD"),
        "Job is in held state, pending scheduler release", FailedPrecondition;
    InvalidTaskMemory = 2044, Some("ESLURM_INVALID_TASK_MEMORY"),
        "Memory required by task is not available", InvalidArgument;
    InvalidAccount = 2045, Some("ESLURM_INVALID_ACCOUNT"),
        "Invalid account or account/partition combination specified", InvalidArgument;
    InvalidLicenses = 2048, Some("ESLURM_INVALID_LICENSES"),
        "Invalid license specification", InvalidArgument;
    /// Submission refused by an association or QOS limit.
    AccountingPolicy = 2050, Some("ESLURM_ACCOUNTING_POLICY"),
        "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
        ResourceExhausted;
    InvalidTimeLimit = 2051, Some("ESLURM_INVALID_TIME_LIMIT"),
        "Requested time limit is invalid (missing or exceeds some limit)", InvalidArgument;
    ReservationAccess = 2052, Some("ESLURM_RESERVATION_ACCESS"),
        "Access denied to requested reservation", PermissionDenied;
    ReservationInvalid = 2053, Some("ESLURM_RESERVATION_INVALID"),
        "Requested reservation is invalid", InvalidArgument;
    InvalidTimeValue = 2054, Some("ESLURM_INVALID_TIME_VALUE"),
        "Invalid time specified", InvalidArgument;
    InvalidQos = 2066, Some("ESLURM_INVALID_QOS"),
        "Invalid qos specification", InvalidArgument;
    NodeNotAvailable = 2068, Some("ESLURM_NODE_NOT_AVAIL"),
        "Required node not available (down, drained or reserved)", FailedPrecondition;
    InvalidCpuCount = 2069, Some("ESLURM_INVALID_CPU_COUNT"),
        "CPU count specification invalid", InvalidArgument;
    PartitionNotAvailable = 2070, Some("ESLURM_PARTITION_NOT_AVAIL"),
        "Required partition not available (inactive or drain)", FailedPrecondition;
    CircularDependency = 2071, Some("ESLURM_CIRCULAR_DEPENDENCY"),
        "Circular job dependency", InvalidArgument;
    InvalidGres = 2072, Some("ESLURM_INVALID_GRES"),
        "Invalid generic resource (gres) specification", InvalidArgument;
    JobNotPending = 2073, Some("ESLURM_JOB_NOT_PENDING"),
        "Job is no longer pending execution", FailedPrecondition;
    /// A partition with jobs that have not ended cannot be deleted.
    PartitionInUse = 2075, Some("ESLURM_PARTITION_IN_USE"),
        "Partition is in use", FailedPrecondition;
    JobSuspended = 2077, Some("ESLURM_JOB_SUSPENDED"),
        "Job is current suspended, requested operation disabled", FailedPrecondition;
    CanNotStartImmediately = 2078, Some("ESLURM_CAN_NOT_START_IMMEDIATELY"),
        "Job can not start immediately", ResourceExhausted;
    InvalidArray = 2081, Some("ESLURM_INVALID_ARRAY"),
        "Invalid job array specification", InvalidArgument;
    /// Hold or release of a job that has ended.
    JobFinished = 2084, Some("ESLURM_JOB_FINISHED"),
        "Job has already finished", FailedPrecondition;
    JobNotRunning = 2085, Some("ESLURM_JOB_NOT_RUNNING"),
        "Job is not running", FailedPrecondition;
    JobNotPendingNorRunning = 2086, Some("ESLURM_JOB_NOT_PENDING_NOR_RUNNING"),
        "Job is not pending nor running", FailedPrecondition;
    JobNotSuspended = 2087, Some("ESLURM_JOB_NOT_SUSPENDED"),
        "Job is not suspended", FailedPrecondition;
    Internal = 2090, Some("ESLURM_INTERNAL"),
        "Slurm internal error, contact system administrator", Internal;
    PartitionDown = 2101, Some("ESLURM_PARTITION_DOWN"),
        "Partition in DOWN state", FailedPrecondition;
    SubmissionsDisabled = 2105, Some("ESLURM_SUBMISSIONS_DISABLED"),
        "System submissions disabled", FailedPrecondition;
    InvalidGroupId = 2113, Some("ESLURM_GROUP_ID_MISSING"),
        "Invalid group id", InvalidArgument;
    BatchConstraint = 2114, Some("ESLURM_BATCH_CONSTRAINT"),
        "Job --batch option is invalid or not a subset of --constraints", InvalidArgument;
    InvalidNice = 2123, Some("ESLURM_INVALID_NICE"),
        "Invalid --nice value", InvalidArgument;
    /// `--time-min` over the job's time limit or its `--deadline`.
    InvalidTimeMin = 2124, Some("ESLURM_INVALID_TIME_MIN_LIMIT"),
        "Invalid time-min specification (exceeds job's time or other limits)", InvalidArgument;
    InvalidPrefer = 2133, Some("ESLURM_INVALID_PREFER"),
        "Invalid preferred feature specification", InvalidArgument;

    // --- slurmd ------------------------------------------------------------
    KillTaskFailed = 4001, Some("ESLURMD_KILL_TASK_FAILED"),
        "Kill task failed", Internal;
    /// The job credential presented to slurmd does not verify.
    InvalidJobCredential = 4004, Some("ESLURMD_INVALID_JOB_CREDENTIAL"),
        "Invalid job credential", PermissionDenied;
    UidNotFound = 4005, Some("ESLURMD_UID_NOT_FOUND"),
        "User not found on host", FailedPrecondition;
    CredentialExpired = 4007, Some("ESLURMD_CREDENTIAL_EXPIRED"),
        "Job credential expired", PermissionDenied;
    CredentialRevoked = 4008, Some("ESLURMD_CREDENTIAL_REVOKED"),
        "Job credential revoked", PermissionDenied;
    CredentialReplayed = 4009, Some("ESLURMD_CREDENTIAL_REPLAYED"),
        "Job credential replayed", PermissionDenied;
    CreateBatchDir = 4010, Some("ESLURMD_CREATE_BATCH_DIR_ERROR"),
        "Slurmd could not create a batch directory or file", Internal;
    SetupEnvironment = 4014, Some("ESLURMD_SETUP_ENVIRONMENT_ERROR"),
        "Slurmd could not set up environment for batch job", Internal;
    SetUidOrGid = 4016, Some("ESLURMD_SET_UID_OR_GID_ERROR"),
        "Slurmd could not set UID or GID", Internal;
    ExecveFailed = 4020, Some("ESLURMD_EXECVE_FAILED"),
        "Slurmd could not execve job", Internal;
    IoError = 4021, Some("ESLURMD_IO_ERROR"),
        "Slurmd could not connect IO", Internal;
    PrologFailed = 4022, Some("ESLURMD_PROLOG_FAILED"),
        "Job prolog failed", Internal;
    EpilogFailed = 4023, Some("ESLURMD_EPILOG_FAILED"),
        "Job epilog failed", Internal;

    // --- transport, authentication, accounting, REST -----------------------
    /// A send or receive did not finish in time.
    SocketTimeout = 5004, Some("SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT"),
        "Socket timed out on send/recv operation", DeadlineExceeded;
    AuthCredentialInvalid = 6000, Some("ESLURM_AUTH_CRED_INVALID"),
        "Invalid authentication credential", Unauthenticated;
    DbConnection = 7000, Some("ESLURM_DB_CONNECTION"),
        "Unable to connect to database", Unavailable;
    RestInvalidQuery = 9000, Some("ESLURM_REST_INVALID_QUERY"),
        "Query empty or not RFC7320 compliant", InvalidArgument;
    RestFailParsing = 9001, Some("ESLURM_REST_FAIL_PARSING"),
        "Failure during parsing", InvalidArgument;
    RestInvalidJobsDesc = 9002, Some("ESLURM_REST_INVALID_JOBS_DESC"),
        "Jobs description entry not found, empty or not dictionary or list", InvalidArgument;
    RestEmptyResult = 9003, Some("ESLURM_REST_EMPTY_RESULT"),
        "Nothing found with query", NotFound;

    // --- ours (no Slurm equivalent) ----------------------------------------
    /// A gRPC message that lacks a required field or holds a value outside
    /// its range (an enum left UNSPECIFIED, job id 0, ...).
    MalformedRequest = 30001, None,
        "Malformed request (missing or out of range field)", InvalidArgument;
    /// The daemon is stopping and accepts no new work.
    ShuttingDown = 30002, None,
        "Daemon is shutting down", Unavailable;
}

impl ErrorCode {
    /// The HTTP status slurmrestd answers with for this error: Slurm answers
    /// 500 for every error it gets from the controller, and 4xx only for
    /// errors in parsing the HTTP request itself.
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::RestInvalidQuery
            | ErrorCode::RestFailParsing
            | ErrorCode::RestInvalidJobsDesc => 400,
            ErrorCode::RestEmptyResult => 404,
            _ => 500,
        }
    }

    /// Exit code of a command that fails with this error
    /// ([`CLI_EXIT_FAILURE`] for every code, as Slurm's commands do).
    pub const fn cli_exit_code(self) -> i32 {
        CLI_EXIT_FAILURE
    }

    /// Whether Slurm itself defines this code.
    pub const fn is_slurm(self) -> bool {
        self.slurm_name().is_some()
    }

    /// The code with this number; numbers we do not know (from a newer peer,
    /// say) become [`ErrorCode::Unspecified`].
    pub fn from_number_or_unspecified(number: i32) -> ErrorCode {
        ErrorCode::from_number(number).unwrap_or(ErrorCode::Unspecified)
    }

    /// A gRPC status for this error. `detail` is context for logs and
    /// verbose output (which job, which limit); when empty, Slurm's text is
    /// used as the status message so that generic gRPC tools still show
    /// something meaningful. The number travels in [`ERRNO_METADATA_KEY`].
    pub fn to_status(self, detail: impl Into<String>) -> tonic::Status {
        let detail = detail.into();
        let message = if detail.is_empty() {
            self.message().to_owned()
        } else {
            detail
        };
        let mut metadata = MetadataMap::new();
        metadata.insert(ERRNO_METADATA_KEY, MetadataValue::from(self.number()));
        tonic::Status::with_metadata(self.grpc_code(), message, metadata)
    }

    /// Recovers the code and the detail text of a status made by
    /// [`ErrorCode::to_status`]. A status without a usable number (from the
    /// transport, or from a foreign server) is classified by its gRPC code:
    /// callers that know their peer may refine the result, for example a
    /// command turning [`ErrorCode::CommunicationConnection`] into
    /// [`ErrorCode::ControllerConnect`].
    pub fn from_status(status: &tonic::Status) -> (ErrorCode, String) {
        let from_metadata = status
            .metadata()
            .get(ERRNO_METADATA_KEY)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.trim().parse::<i32>().ok())
            .map(ErrorCode::from_number_or_unspecified);
        let code = from_metadata.unwrap_or_else(|| ErrorCode::from_grpc_code(status.code()));
        (code, status.message().to_owned())
    }

    /// Best guess for a gRPC status that carries no Slurm number.
    pub const fn from_grpc_code(code: tonic::Code) -> ErrorCode {
        match code {
            tonic::Code::Unavailable => ErrorCode::CommunicationConnection,
            tonic::Code::DeadlineExceeded => ErrorCode::SocketTimeout,
            tonic::Code::Unauthenticated => ErrorCode::ProtocolAuthentication,
            tonic::Code::PermissionDenied => ErrorCode::AccessDenied,
            tonic::Code::Unimplemented => ErrorCode::NotSupported,
            tonic::Code::InvalidArgument => ErrorCode::MalformedRequest,
            tonic::Code::Internal => ErrorCode::Internal,
            _ => ErrorCode::Unspecified,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ErrorCode {}

impl From<ErrorCode> for tonic::Status {
    fn from(code: ErrorCode) -> Self {
        code.to_status("")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn numbers_are_unique_and_round_trip() {
        let mut seen = HashSet::new();
        for &code in ErrorCode::ALL {
            assert!(
                seen.insert(code.number()),
                "duplicate number {}",
                code.number()
            );
            assert_eq!(ErrorCode::from_number(code.number()), Some(code));
        }
    }

    #[test]
    fn every_code_has_text_and_consistent_range() {
        let mut texts = HashSet::new();
        for &code in ErrorCode::ALL {
            let text = code.message();
            assert!(!text.is_empty(), "{code:?} has no text");
            assert!(
                !text.ends_with('\n') && text.trim() == text,
                "{code:?}: {text:?}"
            );
            assert!(texts.insert(text), "{code:?} repeats the text {text:?}");
            if code.is_slurm() {
                assert!(code.number() < PRIVATE_RANGE_START, "{code:?}");
            } else {
                assert!(code.number() >= PRIVATE_RANGE_START, "{code:?}");
            }
            assert_ne!(code.grpc_code(), tonic::Code::Ok, "{code:?} maps to Ok");
            assert!((400..600).contains(&code.http_status()), "{code:?}");
            assert_ne!(code.cli_exit_code(), 0, "{code:?}");
        }
    }

    #[test]
    fn slurm_texts_match_real_slurm() {
        // Texts and numbers as real Slurm 22.05 prints and reports them.
        let cases = [
            (ErrorCode::InvalidJobId, 2017, "Invalid job id specified"),
            (ErrorCode::JobScriptMissing, 2009, "Job script not specified"),
            (ErrorCode::InvalidPartitionName, 2000, "Invalid partition name specified"),
            (
                ErrorCode::RequestedNodeConfigUnavailable,
                2014,
                "Requested node configuration is not available",
            ),
            (ErrorCode::InvalidArray, 2081, "Invalid job array specification"),
            (ErrorCode::PartitionInUse, 2075, "Partition is in use"),
            (ErrorCode::InvalidTaskMemory, 2044, "Memory required by task is not available"),
            (
                ErrorCode::InvalidTimeLimit,
                2051,
                "Requested time limit is invalid (missing or exceeds some limit)",
            ),
            (ErrorCode::InvalidNodeCount, 2006, "Node count specification invalid"),
            (
                ErrorCode::InvalidTimeMin,
                2124,
                "Invalid time-min specification (exceeds job's time or other limits)",
            ),
            (ErrorCode::AccessDenied, 2002, "Access/permission denied"),
            (ErrorCode::Dependency, 2038, "Job dependency problem"),
            (ErrorCode::AlreadyDone, 2021, "Job/step already completing or completed"),
            (ErrorCode::DuplicateJobId, 2011, "Duplicate job id"),
            (ErrorCode::InvalidUserId, 2010, "Invalid user id"),
            (ErrorCode::InvalidNodeName, 2018, "Invalid node name specified"),
            (ErrorCode::InStandbyMode, 2027, "Slurm backup controller in standby mode"),
            (
                ErrorCode::ControllerConnect,
                1800,
                "Unable to contact slurm controller (connect failure)",
            ),
            (
                ErrorCode::AccountingPolicy,
                2050,
                "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
            ),
        ];
        for (code, number, text) in cases {
            assert_eq!(code.number(), number, "{code:?}");
            assert_eq!(code.message(), text, "{code:?}");
            assert_eq!(code.to_string(), text, "{code:?}");
        }
    }

    #[test]
    fn status_round_trip_keeps_code_and_detail() {
        for &code in ErrorCode::ALL {
            let status = code.to_status("job 999999 not found");
            assert_eq!(status.code(), code.grpc_code());
            let (back, detail) = ErrorCode::from_status(&status);
            assert_eq!(back, code);
            assert_eq!(detail, "job 999999 not found");
        }
    }

    #[test]
    fn empty_detail_falls_back_to_slurm_text() {
        let status = tonic::Status::from(ErrorCode::InvalidJobId);
        assert_eq!(status.message(), "Invalid job id specified");
        assert_eq!(status.code(), tonic::Code::NotFound);
        assert_eq!(ErrorCode::from_status(&status).0, ErrorCode::InvalidJobId);
    }

    #[test]
    fn status_without_number_is_classified_by_grpc_code() {
        let status = tonic::Status::unavailable("tcp connect error");
        let (code, detail) = ErrorCode::from_status(&status);
        assert_eq!(code, ErrorCode::CommunicationConnection);
        assert_eq!(detail, "tcp connect error");
        assert_eq!(
            ErrorCode::from_status(&tonic::Status::not_found("x")).0,
            ErrorCode::Unspecified
        );
    }

    #[test]
    fn unknown_or_garbled_number_in_metadata() {
        let mut metadata = MetadataMap::new();
        metadata.insert(ERRNO_METADATA_KEY, MetadataValue::from(424_242));
        let status = tonic::Status::with_metadata(tonic::Code::NotFound, "m", metadata);
        assert_eq!(ErrorCode::from_status(&status).0, ErrorCode::Unspecified);

        let mut metadata = MetadataMap::new();
        metadata.insert(ERRNO_METADATA_KEY, MetadataValue::from_static("twenty"));
        let status = tonic::Status::with_metadata(tonic::Code::PermissionDenied, "m", metadata);
        // Unparseable numbers fall back to the gRPC code.
        assert_eq!(ErrorCode::from_status(&status).0, ErrorCode::AccessDenied);
    }

    #[test]
    fn from_number_rejects_unknown_numbers() {
        for number in [0, 1, 999, 2007, 2040, 29_999, 30_000, i32::MIN, i32::MAX] {
            assert_eq!(ErrorCode::from_number(number), None, "{number}");
        }
        assert_eq!(
            ErrorCode::from_number_or_unspecified(12345),
            ErrorCode::Unspecified
        );
    }

    #[test]
    fn http_and_cli_mappings_follow_slurm() {
        // Captured 22.05 slurmrestd: unknown job and missing script are 500.
        assert_eq!(ErrorCode::InvalidJobId.http_status(), 500);
        assert_eq!(ErrorCode::JobScriptMissing.http_status(), 500);
        assert_eq!(ErrorCode::RestFailParsing.http_status(), 400);
        assert_eq!(ErrorCode::RestEmptyResult.http_status(), 404);
        // squeue -j 999999 and sbatch --partition=nope exit 1.
        assert_eq!(ErrorCode::InvalidJobId.cli_exit_code(), 1);
        assert_eq!(ErrorCode::InvalidPartitionName.cli_exit_code(), 1);
    }
}
