//! `squeue -P`, `squeue --array-unique`, and `--noconvert` in `squeue` and
//! `sinfo`, through the real binaries against an in-process fake slurmctld
//! on loopback: the jobs come from `StreamJobs`, the partitions' tiers and
//! the nodes from `GetPartitions` and `GetNodes`, as from a controller.

mod common;

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::{check_credential, FakeServer};
use slurm_common::auth::SlurmKeyAuth;
use slurm_proto::v1;
use slurm_proto::SlurmController;
use tonic::{Request, Response, Status};

/// What the fake serves, and how often the partitions were asked for.
#[derive(Default)]
struct State {
    jobs: Vec<v1::JobInfo>,
    partitions: Vec<v1::PartitionInfo>,
    nodes: Vec<v1::NodeInfo>,
    partition_calls: usize,
}

struct Fake {
    auth: SlurmKeyAuth,
    state: Arc<Mutex<State>>,
}

impl Fake {
    fn check<T>(&self, request: &Request<T>) -> Result<(), Status> {
        check_credential(&self.auth, request).map(|_| ())
    }
}

controller_impl! {
    Fake {
        type StreamJobsStream = slurm_proto::JobsReplyStream;

        async fn stream_jobs(
            &self,
            request: Request<v1::GetJobsRequest>,
        ) -> Result<Response<Self::StreamJobsStream>, Status> {
            self.check(&request)?;
            // One job per message, as a long reply is cut.
            let parts: Vec<Result<v1::GetJobsReply, Status>> = self
                .state
                .lock()
                .expect("lock")
                .jobs
                .iter()
                .map(|job| {
                    Ok(v1::GetJobsReply {
                        jobs: vec![job.clone()],
                        last_update: 1,
                        unchanged: false,
                    })
                })
                .collect();
            Ok(Response::new(Box::pin(tonic::codegen::tokio_stream::iter(
                parts,
            ))))
        }

        async fn get_partitions(
            &self,
            request: Request<v1::GetPartitionsRequest>,
        ) -> Result<Response<v1::GetPartitionsReply>, Status> {
            self.check(&request)?;
            let mut state = self.state.lock().expect("lock");
            state.partition_calls += 1;
            Ok(Response::new(v1::GetPartitionsReply {
                partitions: state.partitions.clone(),
                last_update: 1,
                unchanged: false,
            }))
        }

        async fn get_nodes(
            &self,
            request: Request<v1::GetNodesRequest>,
        ) -> Result<Response<v1::GetNodesReply>, Status> {
            self.check(&request)?;
            Ok(Response::new(v1::GetNodesReply {
                nodes: self.state.lock().expect("lock").nodes.clone(),
                ..v1::GetNodesReply::default()
            }))
        }
    }
    submit_job(v1::SubmitJobRequest) -> v1::SubmitJobReply;
    get_jobs(v1::GetJobsRequest) -> v1::GetJobsReply;
    get_config(v1::GetConfigRequest) -> v1::GetConfigReply;
    cancel_job(v1::CancelJobRequest) -> v1::JobActionReply;
    signal_job(v1::SignalJobRequest) -> v1::JobActionReply;
    hold_job(v1::HoldJobRequest) -> v1::JobActionReply;
    release_job(v1::ReleaseJobRequest) -> v1::JobActionReply;
    requeue_job(v1::RequeueJobRequest) -> v1::JobActionReply;
    update_job(v1::UpdateJobRequest) -> v1::JobActionReply;
    update_partition(v1::UpdatePartitionRequest) -> v1::UpdatePartitionReply;
    create_partition(v1::CreatePartitionRequest) -> v1::CreatePartitionReply;
    delete_partition(v1::DeletePartitionRequest) -> v1::DeletePartitionReply;
    update_node(v1::UpdateNodeRequest) -> v1::UpdateNodeReply;
    ping(v1::PingRequest) -> v1::PingReply;
    reconfigure(v1::ReconfigureRequest) -> v1::ReconfigureReply;
    shutdown(v1::ShutdownRequest) -> v1::ShutdownReply;
    takeover(v1::TakeoverRequest) -> v1::TakeoverReply;
    get_licenses(v1::GetLicensesRequest) -> v1::GetLicensesReply;
    get_batch_script(v1::GetBatchScriptRequest) -> v1::GetBatchScriptReply;
    set_debug_level(v1::SetDebugLevelRequest) -> v1::SetDebugLevelReply;
    set_debug_flags(v1::SetDebugFlagsRequest) -> v1::SetDebugFlagsReply;
    suspend_job(v1::SuspendJobRequest) -> v1::JobActionReply;
    top_job(v1::TopJobRequest) -> v1::TopJobReply;
}

/// The fake serving `state` on loopback.
struct Cluster {
    server: FakeServer,
    state: Arc<Mutex<State>>,
}

impl Cluster {
    fn start(state: State) -> Cluster {
        let state = Arc::new(Mutex::new(state));
        let conf_text = |port: u16| {
            format!(
                "ClusterName=ref\nSlurmctldHost=vm(127.0.0.1)\nSlurmctldPort={port}\n\
                 AuthType=auth/slurm\nMessageTimeout=5\n\
                 NodeName=n1 CPUs=2048 RealMemory=2048\n\
                 PartitionName=a Nodes=n1 PriorityTier=10\n\
                 PartitionName=b Nodes=n1 Default=YES\n"
            )
        };
        let server = FakeServer::start(conf_text, |auth| Fake {
            auth,
            state: state.clone(),
        });
        Cluster { server, state }
    }

    /// Runs `bin` with `args` and the `env` variables, none of the caller's
    /// `SQUEUE_*`/`SINFO_*` ones.
    fn run(&self, bin: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .current_dir(self.server.path())
            .env("SLURM_CONF", self.server.conf())
            .stdin(std::process::Stdio::null());
        for (k, _) in std::env::vars_os() {
            let k_text = k.to_string_lossy();
            if k_text.starts_with("SQUEUE_") || k_text.starts_with("SINFO_") {
                cmd.env_remove(&k);
            }
        }
        cmd.envs(env.iter().copied());
        cmd.output().expect("run")
    }

    fn partition_calls(&self) -> usize {
        self.state.lock().expect("lock").partition_calls
    }
}

const SQUEUE: &str = env!("CARGO_BIN_EXE_squeue");
const SINFO: &str = env!("CARGO_BIN_EXE_sinfo");

/// Standard output, after checking the command said nothing else and
/// succeeded.
fn stdout_of(out: &Output) -> String {
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pending(id: u32, partition: &str, priority: u32) -> v1::JobInfo {
    v1::JobInfo {
        job_id: id,
        name: "job".into(),
        user_id: 0,
        user_name: "root".into(),
        partition: partition.into(),
        priority,
        state: v1::JobState::Pending as i32,
        state_reason: "Priority".into(),
        ..v1::JobInfo::default()
    }
}

fn partition(name: &str, tier: u32) -> v1::PartitionInfo {
    v1::PartitionInfo {
        name: name.into(),
        priority_tier: tier,
        ..v1::PartitionInfo::default()
    }
}

#[test]
fn squeue_priority_lists_a_job_per_partition_by_tier() {
    let cluster = Cluster::start(State {
        jobs: vec![pending(1, "a,b", 100), pending(2, "b", 200)],
        partitions: vec![partition("a", 10), partition("b", 1)],
        ..State::default()
    });
    let fmt = ["-h", "-S", "p", "-o", "%i %P"];
    // Without -P: one line per job, and no partitions asked for.
    let out = cluster.run(SQUEUE, &fmt, &[]);
    assert_eq!(stdout_of(&out), "1 a,b\n2 b\n");
    assert_eq!(cluster.partition_calls(), 0);
    // With -P: a line per partition, the tier ahead of the priority.
    let with_p = [&["-P"][..], &fmt[..]].concat();
    let out = cluster.run(SQUEUE, &with_p, &[]);
    assert_eq!(stdout_of(&out), "1 b\n2 b\n1 a\n");
    assert_eq!(cluster.partition_calls(), 1);
    let out = cluster.run(SQUEUE, &fmt, &[("SQUEUE_PRIORITY", "")]);
    assert_eq!(stdout_of(&out), "1 b\n2 b\n1 a\n");
    assert_eq!(cluster.partition_calls(), 2);
    // Not sorted by priority: the tiers are not needed.
    let out = cluster.run(SQUEUE, &["-P", "-h", "-S", "i", "-o", "%i %P"], &[]);
    assert_eq!(stdout_of(&out), "1 a\n1 b\n2 b\n");
    assert_eq!(cluster.partition_calls(), 2);
}

#[test]
fn squeue_array_unique_keeps_split_tasks_apart() {
    let mut meta = pending(15, "b", 1);
    meta.array_job_id = Some(15);
    meta.array_task_spec = "0-1,3%2".into();
    let mut held = pending(17, "b", 0);
    held.array_job_id = Some(15);
    held.array_task_id = Some(2);
    held.state_reason = "JobHeldUser".into();
    let cluster = Cluster::start(State {
        jobs: vec![meta, held],
        ..State::default()
    });
    let fmt = ["-h", "-o", "%i %R"];
    let out = cluster.run(SQUEUE, &fmt, &[]);
    assert_eq!(stdout_of(&out), "15_[0-3] (Priority,JobHeldUser)\n");
    let apart = "15_[0-1,3%2] (Priority)\n15_2 (JobHeldUser)\n";
    let unique = [&["--array-unique"][..], &fmt[..]].concat();
    assert_eq!(stdout_of(&cluster.run(SQUEUE, &unique, &[])), apart);
    let env = [("SQUEUE_ARRAY_UNIQUE", "1")];
    assert_eq!(stdout_of(&cluster.run(SQUEUE, &fmt, &env)), apart);
}

#[test]
fn noconvert_shows_sizes_as_kept() {
    let mut job = pending(3, "b", 1);
    job.memory = Some(v1::job_info::Memory::MemPerNodeMb(2048));
    job.min_tmp_disk_mb = 1024;
    let node = v1::NodeInfo {
        name: "n1".into(),
        state: v1::NodeState::Idle as i32,
        cpus: 2048,
        real_memory_mb: 2048,
        partitions: vec!["b".into()],
        ..v1::NodeInfo::default()
    };
    let cluster = Cluster::start(State {
        jobs: vec![job],
        partitions: vec![partition("b", 1)],
        nodes: vec![node],
        ..State::default()
    });
    let fmt = ["-h", "-o", "%i %m %d"];
    assert_eq!(stdout_of(&cluster.run(SQUEUE, &fmt, &[])), "3 2G 1G\n");
    let plain = [&["--noconvert"][..], &fmt[..]].concat();
    assert_eq!(
        stdout_of(&cluster.run(SQUEUE, &plain, &[])),
        "3 2048M 1024M\n"
    );
    // sinfo scales CPU counts, never memory.
    let fmt = ["-h", "-N", "-o", "%N %c %m"];
    assert_eq!(stdout_of(&cluster.run(SINFO, &fmt, &[])), "n1 2K 2048\n");
    let plain = [&["--noconvert"][..], &fmt[..]].concat();
    assert_eq!(
        stdout_of(&cluster.run(SINFO, &plain, &[])),
        "n1 2048 2048\n"
    );
}
