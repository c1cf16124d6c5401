//! Wire-level checks of the generated code: messages survive an encode and
//! decode unchanged (including the difference between an unset optional
//! field and a zero), and a real tonic client and server on loopback carry
//! the credential metadata and ErrorCode statuses both ways.

use prost::Message;
use slurm_proto::v1;
use slurm_proto::{
    auth_credential, set_auth_credential, ErrorCode, SlurmNodeReports, SlurmNodeReportsClient,
    SlurmNodeReportsServer,
};
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

fn full_job_description() -> v1::JobDescription {
    v1::JobDescription {
        user_id: 1000,
        group_id: 1000,
        user_name: "alice".into(),
        submit_host: "login1".into(),
        submit_sid: 4242,
        submit_line: "sbatch -N2 job.sh".into(),
        script: "#!/bin/sh\nsrun hostname\n".into(),
        argv: vec!["a".into(), "b c".into()],
        environment: vec!["PATH=/usr/bin".into(), "HOME=/home/alice".into()],
        work_dir: "/home/alice".into(),
        name: "job.sh".into(),
        export_spec: "ALL".into(),
        command_path: "/home/alice/job.sh".into(),
        partitions: vec!["debug".into(), "batch".into()],
        account: "physics".into(),
        qos: "normal".into(),
        time_limit: Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(90)),
        }),
        time_min_minutes: Some(30),
        begin_time: 1_700_000_000,
        min_nodes: Some(2),
        max_nodes: Some(4),
        ntasks: Some(8),
        ntasks_per_node: Some(4),
        cpus_per_task: Some(1),
        memory: Some(v1::job_description::Memory::MemPerCpuMb(2000)),
        sharing: v1::NodeSharing::Exclusive as i32,
        required_nodes: "n[1-2]".into(),
        excluded_nodes: "n9".into(),
        constraint: "intel&ib".into(),
        gres: "gpu:2".into(),
        hold: true,
        nice: Some(0),
        dependency: "afterok:12:13".into(),
        requeue: Some(false),
        comment: "ünïcödé comment".into(),
        array_spec: "0-15%4".into(),
        stdout_path: "out-%A_%a.txt".into(),
        open_mode: v1::OpenMode::Append as i32,
        ..Default::default()
    }
}

#[test]
fn submit_job_request_round_trips() {
    let request = v1::SubmitJobRequest {
        job: Some(full_job_description()),
    };
    let bytes = request.encode_to_vec();
    let decoded = v1::SubmitJobRequest::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(decoded, request);

    let job = decoded.job.expect("job present");
    // Explicit zeros and falses are kept apart from "not given".
    assert_eq!(job.nice, Some(0));
    assert_eq!(job.requeue, Some(false));
    assert_eq!(job.priority, None);
    assert_eq!(job.tmp_disk_mb, None);
    assert_eq!(job.sharing(), v1::NodeSharing::Exclusive);
    assert_eq!(job.open_mode(), v1::OpenMode::Append);
}

#[test]
fn unset_fields_are_absent_after_decoding() {
    let bytes = v1::JobDescription::default().encode_to_vec();
    assert!(bytes.is_empty(), "a default message encodes to nothing");
    let job = v1::JobDescription::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(job.min_nodes, None);
    assert_eq!(job.memory, None);
    assert_eq!(job.time_limit, None);
    assert_eq!(job.sharing(), v1::NodeSharing::Unspecified);
}

#[test]
fn forward_request_round_trips() {
    let request = v1::ForwardRequest {
        message: Some(v1::NodeMessage {
            body: Some(v1::node_message::Body::TerminateJob(
                v1::NodeTerminateJobRequest {
                    job_id: 7,
                    reason: v1::JobState::Timeout as i32,
                    time: 1_700_000_100,
                    nodes: "n[1-64]".into(),
                    kill_wait_secs: 30,
                    ..Default::default()
                },
            )),
        }),
        nodes: "n[2-64]".into(),
        tree_width: 16,
        timeout_ms: 10_000,
    };
    let decoded = v1::ForwardRequest::decode(request.encode_to_vec().as_slice()).expect("decodes");
    assert_eq!(decoded, request);
}

#[test]
fn truncated_message_is_an_error_not_a_panic() {
    let bytes = v1::SubmitJobRequest {
        job: Some(full_job_description()),
    }
    .encode_to_vec();
    for cut in [1, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            v1::SubmitJobRequest::decode(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
}

/// A node-report service that checks the credential and knows only job 1.
struct FakeController;

#[tonic::async_trait]
impl SlurmNodeReports for FakeController {
    async fn register_node(
        &self,
        request: Request<v1::RegisterNodeRequest>,
    ) -> Result<Response<v1::RegisterNodeReply>, Status> {
        if auth_credential(request.metadata()) != Some("good-token") {
            return Err(ErrorCode::ProtocolAuthentication.to_status(""));
        }
        let known = [1];
        let abort_job_ids = request
            .get_ref()
            .running_jobs
            .iter()
            .map(|job| job.job_id)
            .filter(|id| !known.contains(id))
            .collect();
        Ok(Response::new(v1::RegisterNodeReply {
            abort_job_ids,
            ..Default::default()
        }))
    }

    async fn job_complete(
        &self,
        request: Request<v1::JobCompleteRequest>,
    ) -> Result<Response<v1::JobCompleteReply>, Status> {
        let job_id = request.get_ref().job_id;
        if job_id != 1 {
            return Err(ErrorCode::InvalidJobId.to_status(format!("job {job_id} is unknown")));
        }
        Ok(Response::new(v1::JobCompleteReply {}))
    }

    async fn epilog_complete(
        &self,
        _request: Request<v1::EpilogCompleteRequest>,
    ) -> Result<Response<v1::EpilogCompleteReply>, Status> {
        Err(ErrorCode::NotSupported.into())
    }

    async fn prolog_complete(
        &self,
        _request: Request<v1::PrologCompleteRequest>,
    ) -> Result<Response<v1::PrologCompleteReply>, Status> {
        Err(ErrorCode::NotSupported.into())
    }
}

fn with_auth<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    set_auth_credential(request.metadata_mut(), token).expect("ascii token");
    request
}

#[tokio::test]
async fn loopback_server_carries_auth_and_error_codes() {
    let incoming = TcpIncoming::bind("127.0.0.1:0".parse().expect("address")).expect("bind");
    let addr = incoming.local_addr().expect("local address");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(SlurmNodeReportsServer::new(FakeController))
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stop_rx.await;
            }),
    );

    let mut client = SlurmNodeReportsClient::connect(format!("http://{addr}"))
        .await
        .expect("connect");

    let registration = v1::RegisterNodeRequest {
        node_name: "n1".into(),
        cpus: 2,
        running_jobs: vec![
            v1::RunningJob {
                job_id: 1,
                step_ids: vec![4_294_967_294],
            },
            v1::RunningJob {
                job_id: 9,
                step_ids: vec![],
            },
        ],
        ..Default::default()
    };

    // Right credential: the reply comes back.
    let reply = client
        .register_node(with_auth(registration.clone(), "good-token"))
        .await
        .expect("registration accepted")
        .into_inner();
    assert_eq!(reply.abort_job_ids, vec![9]);

    // Wrong credential: the exact ErrorCode survives the trip.
    let status = client
        .register_node(with_auth(registration, "bad-token"))
        .await
        .expect_err("registration refused");
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    let (code, detail) = ErrorCode::from_status(&status);
    assert_eq!(code, ErrorCode::ProtocolAuthentication);
    assert_eq!(detail, "Protocol authentication error");

    // Detail text and Slurm's number both arrive.
    let status = client
        .job_complete(with_auth(
            v1::JobCompleteRequest {
                job_id: 5,
                ..Default::default()
            },
            "t",
        ))
        .await
        .expect_err("unknown job");
    let (code, detail) = ErrorCode::from_status(&status);
    assert_eq!(code, ErrorCode::InvalidJobId);
    assert_eq!(code.number(), 2017);
    assert_eq!(detail, "job 5 is unknown");
    assert_eq!(code.message(), "Invalid job id specified");

    let status = client
        .epilog_complete(with_auth(v1::EpilogCompleteRequest::default(), "t"))
        .await
        .expect_err("not supported");
    assert_eq!(ErrorCode::from_status(&status).0, ErrorCode::NotSupported);

    stop_tx.send(()).expect("server still running");
    server
        .await
        .expect("server task")
        .expect("server exits cleanly");
}
