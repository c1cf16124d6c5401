//! The real slurmctld binary on loopback, with an in-process fake slurmd:
//! submit over gRPC with a credential, launch, completion, authentication,
//! kill -9 and restart, graceful SIGTERM. No sleeps: every wait polls with
//! a deadline.

#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use slurm_common::auth::{unix_now, Authenticator, Claims, SlurmKeyAuth};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1;
use slurm_proto::{ErrorCode, SlurmControllerClient, SlurmNodeReportsClient};
use slurm_testkit::{wait_until, ChildGuard, ClusterDir, ClusterSpec};
use tokio::runtime::Runtime;
use tonic::transport::Channel;

const WAIT: Duration = Duration::from_secs(20);

struct Cluster {
    dir: ClusterDir,
    rt: Runtime,
    auth: SlurmKeyAuth,
}

impl Cluster {
    fn new() -> Cluster {
        let dir = ClusterDir::create(ClusterSpec::default()).unwrap();
        let auth = SlurmKeyAuth::load(&dir.key_path()).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        Cluster { dir, rt, auth }
    }

    fn start(&self) -> ChildGuard {
        let log = self.dir.root().join("log").join("slurmctld.log");
        let mut child = ChildGuard::spawn(
            "slurmctld",
            Command::new(env!("CARGO_BIN_EXE_slurmctld"))
                .arg("-D")
                .arg("-f")
                .arg(self.dir.conf_path())
                .arg("-L")
                .arg(&log),
        )
        .unwrap();
        wait_until("slurmctld to answer ping", WAIT, || {
            if let Ok(Some(status)) = child.try_status() {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("slurmctld exited early with {status}: {text}");
            }
            self.rt
                .block_on(async {
                    let mut c = self.client().await.ok()?;
                    c.ping(self.req(v1::PingRequest {})).await.ok()
                })
                .map(|_| ())
        })
        .unwrap();
        child
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.dir.slurmctld_port)
    }

    async fn client(&self) -> Result<SlurmControllerClient<Channel>, tonic::transport::Error> {
        SlurmControllerClient::connect(self.endpoint()).await
    }

    async fn reports(&self) -> SlurmNodeReportsClient<Channel> {
        SlurmNodeReportsClient::connect(self.endpoint())
            .await
            .unwrap()
    }

    fn req<T>(&self, msg: T) -> tonic::Request<T> {
        // SAFETY: no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let claims = Claims::new(Uid::new(uid), Gid::new(gid), "localhost", unix_now(), 300);
        let token = self.auth.create(&claims).unwrap();
        let mut r = tonic::Request::new(msg);
        slurm_proto::set_auth_credential(r.metadata_mut(), &token).unwrap();
        r
    }

    fn submit(&self) -> u32 {
        self.rt.block_on(async {
            let mut c = self.client().await.unwrap();
            // SAFETY: no preconditions.
            let uid = unsafe { libc::getuid() };
            let job = v1::JobDescription {
                user_id: uid,
                script: "#!/bin/sh\ntrue\n".into(),
                environment: vec!["A=1".into(), "PATH=/bin".into()],
                name: "wrap".into(),
                work_dir: "/tmp".into(),
                ..Default::default()
            };
            c.submit_job(self.req(v1::SubmitJobRequest { job: Some(job) }))
                .await
                .unwrap()
                .into_inner()
                .job_id
        })
    }

    fn jobs(&self) -> Vec<v1::JobInfo> {
        self.rt.block_on(async {
            let mut c = self.client().await.unwrap();
            c.get_jobs(self.req(v1::GetJobsRequest::default()))
                .await
                .unwrap()
                .into_inner()
                .jobs
        })
    }

    fn job_state(&self, id: u32) -> Option<v1::JobState> {
        self.jobs()
            .into_iter()
            .find(|j| j.job_id == id)
            .map(|j| v1::JobState::try_from(j.state).unwrap())
    }
}

/// (job id, script, environment) of each launch.
type Launches = Arc<Mutex<Vec<(u32, String, Vec<String>)>>>;

/// A slurmd that records what it is asked to do.
#[derive(Debug, Clone, Default)]
struct FakeSlurmd {
    launched: Arc<Mutex<Vec<(u32, bool)>>>,
    /// (job id, script, environment) of every launch.
    scripts: Launches,
}

#[tonic::async_trait]
impl slurm_proto::SlurmNode for FakeSlurmd {
    async fn launch_batch(
        &self,
        request: tonic::Request<v1::LaunchBatchRequest>,
    ) -> Result<tonic::Response<v1::LaunchBatchReply>, tonic::Status> {
        let has_auth = slurm_proto::auth_credential(request.metadata()).is_some();
        let r = request.into_inner();
        self.scripts
            .lock()
            .unwrap()
            .push((r.job_id, r.script.clone(), r.environment.clone()));
        self.launched
            .lock()
            .unwrap()
            .push((r.job_id, has_auth && !r.credential.is_empty()));
        Ok(tonic::Response::new(v1::LaunchBatchReply {}))
    }
    async fn signal_job(
        &self,
        _r: tonic::Request<v1::NodeSignalJobRequest>,
    ) -> Result<tonic::Response<v1::NodeSignalJobReply>, tonic::Status> {
        Ok(tonic::Response::new(v1::NodeSignalJobReply {}))
    }
    async fn terminate_job(
        &self,
        _r: tonic::Request<v1::NodeTerminateJobRequest>,
    ) -> Result<tonic::Response<v1::NodeTerminateJobReply>, tonic::Status> {
        Ok(tonic::Response::new(v1::NodeTerminateJobReply {}))
    }
    async fn ping_node(
        &self,
        _r: tonic::Request<v1::PingNodeRequest>,
    ) -> Result<tonic::Response<v1::PingNodeReply>, tonic::Status> {
        Ok(tonic::Response::new(v1::PingNodeReply::default()))
    }
    async fn reconfigure(
        &self,
        _r: tonic::Request<v1::ReconfigureNodeRequest>,
    ) -> Result<tonic::Response<v1::ReconfigureNodeReply>, tonic::Status> {
        Ok(tonic::Response::new(v1::ReconfigureNodeReply {}))
    }
    /// Answers for itself (n1) only, as a slurmd that does not report its
    /// jobs: the controller pings its nodes as soon as it takes control.
    async fn forward(
        &self,
        r: tonic::Request<v1::ForwardRequest>,
    ) -> Result<tonic::Response<v1::ForwardReply>, tonic::Status> {
        use v1::{node_message, node_reply};
        let body = match r.into_inner().message.and_then(|m| m.body) {
            Some(node_message::Body::Ping(_)) => node_reply::Body::Ping(v1::PingNodeReply {
                node_name: "n1".into(),
                ..Default::default()
            }),
            Some(node_message::Body::SignalJob(_)) => {
                node_reply::Body::SignalJob(Default::default())
            }
            Some(node_message::Body::TerminateJob(_)) => {
                node_reply::Body::TerminateJob(Default::default())
            }
            Some(node_message::Body::Reconfigure(_)) => {
                node_reply::Body::Reconfigure(Default::default())
            }
            Some(node_message::Body::LaunchProlog(_)) => {
                node_reply::Body::LaunchProlog(Default::default())
            }
            Some(node_message::Body::Shutdown(_)) => node_reply::Body::Shutdown(Default::default()),
            None => return Err(tonic::Status::invalid_argument("empty message")),
        };
        Ok(tonic::Response::new(v1::ForwardReply {
            results: vec![v1::NodeResult {
                node: "n1".into(),
                reply: Some(v1::NodeReply { body: Some(body) }),
                ..Default::default()
            }],
        }))
    }
}

#[test]
fn submit_launch_complete_restart() {
    let cluster = Cluster::new();
    let mut ctld = cluster.start();

    // Unauthenticated calls are refused with the authentication error.
    let status = cluster.rt.block_on(async {
        let mut c = cluster.client().await.unwrap();
        c.get_jobs(tonic::Request::new(v1::GetJobsRequest::default()))
            .await
            .unwrap_err()
    });
    assert_eq!(
        ErrorCode::from_status(&status).0,
        ErrorCode::ProtocolAuthentication
    );

    // Submit before any node registered: the job waits.
    let first = cluster.submit();
    assert_eq!(first, 1);
    assert_eq!(cluster.job_state(first), Some(v1::JobState::Pending));

    // A fake slurmd for n1 registers; the job is launched there.
    let fake = FakeSlurmd::default();
    let port = cluster.dir.slurmd_ports[0];
    let server = fake.clone();
    cluster.rt.spawn(async move {
        let _ = tonic::transport::Server::builder()
            .add_service(slurm_proto::SlurmNodeServer::new(server))
            .serve(([127, 0, 0, 1], port).into())
            .await;
    });
    cluster.rt.block_on(async {
        let mut r = cluster.reports().await;
        let reply = r
            .register_node(cluster.req(v1::RegisterNodeRequest {
                node_name: "n1".into(),
                hostname: "localhost".into(),
                cpus: 2,
                real_memory_mb: 4000,
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner();
        assert!(reply.abort_job_ids.is_empty());
    });
    let launched = wait_until("the launch at the fake slurmd", WAIT, || {
        let l = fake.launched.lock().unwrap();
        (!l.is_empty()).then(|| l.clone())
    })
    .unwrap();
    assert_eq!(launched, vec![(first, true)]);
    // The script and environment came back from the job's files.
    assert_eq!(
        fake.scripts.lock().unwrap().clone(),
        vec![(
            first,
            "#!/bin/sh\ntrue\n".to_string(),
            vec!["A=1".to_string(), "PATH=/bin".to_string()]
        )]
    );
    assert!(cluster
        .dir
        .state_dir()
        .join("scripts")
        .join("seg.0")
        .is_file());
    assert_eq!(cluster.job_state(first), Some(v1::JobState::Running));

    // The node reports completion.
    cluster.rt.block_on(async {
        let mut r = cluster.reports().await;
        r.job_complete(cluster.req(v1::JobCompleteRequest {
            job_id: first,
            node_name: "n1".into(),
            exit_code: Some(v1::ExitCode::default()),
            ..Default::default()
        }))
        .await
        .unwrap();
        // Then the node's cleanup, which frees its share of the job.
        r.epilog_complete(cluster.req(v1::EpilogCompleteRequest {
            job_id: first,
            node_name: "n1".into(),
            error_code: 0,
            error_detail: String::new(),
        }))
        .await
        .unwrap();
    });
    assert_eq!(cluster.job_state(first), Some(v1::JobState::Completed));

    // A pending job (n1 busy? no: one more job fits), then kill -9.
    let second = cluster.submit();
    assert_eq!(second, 2);
    ctld.kill().unwrap();

    // Restart: every acknowledged job is still there, ids continue.
    let mut ctld = cluster.start();
    assert_eq!(cluster.job_state(first), Some(v1::JobState::Completed));
    assert!(cluster.job_state(second).is_some());
    assert_eq!(cluster.submit(), 3);
    // Job 3, placed after the restart behind job 2's record, starts on n1
    // with its own script and environment.
    let scripts = wait_until("job 3 to launch", WAIT, || {
        let l = fake.scripts.lock().unwrap();
        l.iter().any(|(id, ..)| *id == 3).then(|| l.clone())
    })
    .unwrap();
    for (_, script, env) in &scripts {
        assert_eq!(script, "#!/bin/sh\ntrue\n");
        assert_eq!(env, &vec!["A=1".to_string(), "PATH=/bin".to_string()]);
    }

    // Graceful stop: SIGTERM, exit status 0, pid file removed.
    let status = ctld.terminate(WAIT).unwrap().unwrap();
    assert!(status.success(), "{status}");
    assert!(!cluster
        .dir
        .root()
        .join("run")
        .join("slurmctld.pid")
        .exists());
}

#[test]
fn refusals_carry_slurm_error_codes() {
    let cluster = Cluster::new();
    let _ctld = cluster.start();
    let status = cluster.rt.block_on(async {
        let mut c = cluster.client().await.unwrap();
        let job = v1::JobDescription {
            // SAFETY: no preconditions.
            user_id: unsafe { libc::getuid() },
            script: "#!/bin/sh\ntrue\n".into(),
            partitions: vec!["nope".into()],
            ..Default::default()
        };
        c.submit_job(cluster.req(v1::SubmitJobRequest { job: Some(job) }))
            .await
            .unwrap_err()
    });
    let (code, detail) = ErrorCode::from_status(&status);
    assert_eq!(code, ErrorCode::InvalidPartitionName);
    assert_eq!(detail, "invalid partition specified: nope");

    // scancel of an unknown id: a per-job result, not a failed call.
    let reply = cluster.rt.block_on(async {
        let mut c = cluster.client().await.unwrap();
        c.cancel_job(cluster.req(v1::CancelJobRequest {
            filter: Some(v1::JobFilter {
                job_ids: vec![999_999],
                ..Default::default()
            }),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
    });
    assert_eq!(reply.results.len(), 1);
    assert_eq!(
        reply.results[0].error_code,
        ErrorCode::InvalidJobId.number()
    );

    // Config and ping answer from the running configuration.
    let (config, ping) = cluster.rt.block_on(async {
        let mut c = cluster.client().await.unwrap();
        let config = c
            .get_config(cluster.req(v1::GetConfigRequest {}))
            .await
            .unwrap()
            .into_inner();
        let ping = c
            .ping(cluster.req(v1::PingRequest {}))
            .await
            .unwrap()
            .into_inner();
        (config, ping)
    });
    assert!(config
        .entries
        .iter()
        .any(|e| e.key == "ClusterName" && e.value == "ref"));
    assert_eq!(ping.role, v1::ControllerRole::Primary as i32);
    // SlurmctldHost=localhost names this host, as in Slurm.
    assert_eq!(ping.hostname, slurm_common::host::short_hostname());
}
