//! `squeue --yaml` and `sinfo --yaml` through the real binaries against
//! an in-process fake slurmctld on loopback, `SLURM_BITSTR_LEN` as squeue
//! reads it, and the YAML writer against a document Slurm 22.05 printed.

mod common;

use std::process::{Command, Output};
use std::sync::Arc;

use common::{check_credential, FakeServer};
use slurm_client_tools::format::yaml;
use slurm_common::auth::SlurmKeyAuth;
use slurm_proto::v1;
use slurm_proto::SlurmController;
use tonic::{Request, Response, Status};

/// What the fake serves.
#[derive(Default)]
struct State {
    jobs: Vec<v1::JobInfo>,
    partitions: Vec<v1::PartitionInfo>,
    nodes: Vec<v1::NodeInfo>,
}

struct Fake {
    auth: SlurmKeyAuth,
    state: Arc<State>,
}

controller_impl! {
    Fake {
        type StreamJobsStream = slurm_proto::JobsReplyStream;

        async fn stream_jobs(
            &self,
            request: Request<v1::GetJobsRequest>,
        ) -> Result<Response<Self::StreamJobsStream>, Status> {
            check_credential(&self.auth, &request)?;
            let parts: Vec<Result<v1::GetJobsReply, Status>> = self
                .state
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
            check_credential(&self.auth, &request)?;
            Ok(Response::new(v1::GetPartitionsReply {
                partitions: self.state.partitions.clone(),
                last_update: 1,
                unchanged: false,
            }))
        }

        async fn get_nodes(
            &self,
            request: Request<v1::GetNodesRequest>,
        ) -> Result<Response<v1::GetNodesReply>, Status> {
            check_credential(&self.auth, &request)?;
            Ok(Response::new(v1::GetNodesReply {
                nodes: self.state.nodes.clone(),
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
}

impl Cluster {
    fn start(state: State) -> Cluster {
        let state = Arc::new(state);
        let conf_text = |port: u16| {
            format!(
                "ClusterName=ref\nSlurmctldHost=vm(127.0.0.1)\nSlurmctldPort={port}\n\
                 AuthType=auth/slurm\nMessageTimeout=5\n\
                 NodeName=n1 CPUs=4 RealMemory=2048\n\
                 PartitionName=debug Nodes=n1 Default=YES\n"
            )
        };
        let server = FakeServer::start(conf_text, |auth| Fake { auth, state });
        Cluster { server }
    }

    /// Runs `bin` with `args` and the `env` variables, none of the caller's
    /// `SQUEUE_*`/`SINFO_*`/`SLURM_BITSTR_LEN`.
    fn run(&self, bin: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .current_dir(self.server.path())
            .env("SLURM_CONF", self.server.conf())
            .env_remove("SLURM_BITSTR_LEN")
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

fn pending(id: u32, name: &str) -> v1::JobInfo {
    v1::JobInfo {
        job_id: id,
        name: name.into(),
        user_name: "root".into(),
        partition: "debug".into(),
        state: v1::JobState::Pending as i32,
        state_reason: "Priority".into(),
        ..v1::JobInfo::default()
    }
}

/// Array 15 with every other task of 0-98 pending, and task 1 split off
/// and held.
fn split_array() -> Vec<v1::JobInfo> {
    let mut meta = pending(15, "arr");
    meta.array_job_id = Some(15);
    meta.array_task_spec = (0..50)
        .map(|i| (i * 2).to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut held = pending(16, "arr");
    held.array_job_id = Some(15);
    held.array_task_id = Some(1);
    held.state_reason = "JobHeldUser".into();
    vec![meta, held]
}

fn cluster() -> Cluster {
    let mut odd = pending(3, "we: ird#na \"me");
    odd.comment = " lead".into();
    let mut jobs = vec![pending(2, "plain"), odd];
    jobs.extend(split_array());
    Cluster::start(State {
        jobs,
        partitions: vec![v1::PartitionInfo {
            name: "debug".into(),
            is_default: true,
            nodes: "n1".into(),
            ..v1::PartitionInfo::default()
        }],
        nodes: vec![v1::NodeInfo {
            name: "n1".into(),
            state: v1::NodeState::Idle as i32,
            cpus: 4,
            real_memory_mb: 2048,
            partitions: vec!["debug".into()],
            ..v1::NodeInfo::default()
        }],
    })
}

#[test]
fn squeue_yaml_is_its_json_in_slurms_yaml() {
    let cluster = cluster();
    let json = stdout_of(&cluster.run(SQUEUE, &["--json"], &[]));
    let out = stdout_of(&cluster.run(SQUEUE, &["--yaml"], &[]));
    assert_eq!(out, yaml::json_to_yaml(&json).expect("json reads"));
    assert!(out.starts_with("%YAML 1.1\n--- !!map\n!!str meta: !!map\n  !!str plugin: !!map\n"));
    for line in [
        "!!str errors: !!seq []",
        "!!str jobs: !!seq",
        "  !!str name: !!str plain",
        "  !!str name: !!str 'we: ird#na \"me'",
        "  !!str comment: !!str ' lead'",
        "  !!str account: !!null null",
        "  !!str batch_flag: !!bool false",
        "  !!str job_id: !!int 3",
        "  !!str show_flags: !!seq",
        "  - !!str SHOW_ALL",
    ] {
        assert!(out.lines().any(|l| l == line), "{line:?} in\n{out}");
    }
    assert!(out.ends_with("\n...\n"));
    // The last of --json and --yaml wins, as in Slurm; the format and
    // the header options are ignored.
    let both = cluster.run(SQUEUE, &["--json", "-h", "-o", "%i", "--yaml"], &[]);
    assert_eq!(stdout_of(&both), out);
    let both = cluster.run(SQUEUE, &["--yaml", "--json"], &[]);
    assert_eq!(stdout_of(&both), json);
}

#[test]
fn sinfo_yaml_is_its_json_in_slurms_yaml() {
    let cluster = cluster();
    let json = stdout_of(&cluster.run(SINFO, &["--json"], &[]));
    let out = stdout_of(&cluster.run(SINFO, &["--yaml", "-l"], &[]));
    assert_eq!(out, yaml::json_to_yaml(&json).expect("json reads"));
    for line in [
        "!!str nodes: !!seq",
        "- !!map",
        "  !!str name: !!str n1",
        "  !!str gres_drained: !!str N/A",
        "  !!str partitions: !!seq",
        "  - !!str debug",
        "  !!str cpus: !!int 4",
    ] {
        assert!(out.lines().any(|l| l == line), "{line:?} in\n{out}");
    }
    let both = cluster.run(SINFO, &["--yaml", "--json"], &[]);
    assert_eq!(stdout_of(&both), json);
}

#[test]
fn squeue_cuts_a_combined_task_list_as_slurm_bitstr_len_says() {
    let cluster = cluster();
    let fmt = ["-h", "-n", "arr", "-o", "%i"];
    let full = "15_[0-2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,\
                44,46,48,50,52,54,56,58,60,62,64,66,68,70,72,74,76,78,80,82,84,86,88,\
                90,92,94,96,98]\n";
    // Unset: the list is cut to 63 characters with a `...` mark, and the
    // whole id to 31 characters.
    assert_eq!(
        stdout_of(&cluster.run(SQUEUE, &fmt, &[])),
        format!("{}\n", &full[..31])
    );
    let with = |v: &'static str| [("SLURM_BITSTR_LEN", v)];
    assert_eq!(stdout_of(&cluster.run(SQUEUE, &fmt, &with("0"))), full);
    assert_eq!(
        stdout_of(&cluster.run(SQUEUE, &fmt, &with("10"))),
        "15_[0-2,4,...]\n"
    );
    // Set but negative: the default length, and no cut of the id.
    assert_eq!(
        stdout_of(&cluster.run(SQUEUE, &fmt, &with("-3"))),
        format!("15_[{}...]\n", &full[4..4 + 60])
    );
}

/// `sinfo --json` from Slurm 22.05.8 for one node that never registered.
const SLURM_SINFO_JSON: &str = r#"{
  "meta": {
    "plugin": {
      "type": "openapi\/v0.0.38",
      "name": "Slurm OpenAPI v0.0.38"
    },
    "Slurm": {
      "version": {
        "major": 22,
        "micro": 8,
        "minor": 5
      },
      "release": "22.05.8"
    }
  },
  "errors": [
  ],
  "nodes": [
    {
      "architecture": "",
      "burstbuffer_network_address": "",
      "boards": 1,
      "boot_time": 0,
      "comment": "",
      "cores": 1,
      "cpu_binding": 0,
      "cpu_load": 4294967294,
      "extra": "",
      "free_memory": -2,
      "cpus": 4,
      "last_busy": 0,
      "features": "",
      "active_features": "",
      "gres": "",
      "gres_drained": "N\/A",
      "gres_used": "",
      "mcs_label": "",
      "name": "node1",
      "next_state_after_reboot": "invalid",
      "address": "127.0.0.1",
      "hostname": "node1",
      "state": "unknown",
      "state_flags": [
        "NOT_RESPONDING"
      ],
      "next_state_after_reboot_flags": [
      ],
      "operating_system": "",
      "owner": null,
      "partitions": [
        "debug"
      ],
      "port": 26818,
      "real_memory": 1000,
      "reason": "",
      "reason_changed_at": 0,
      "reason_set_by_user": "root",
      "slurmd_start_time": 0,
      "sockets": 4,
      "threads": 1,
      "temporary_disk": 0,
      "weight": 1,
      "tres": "cpu=4,mem=1000M,billing=4",
      "slurmd_version": "",
      "alloc_memory": 0,
      "alloc_cpus": 0,
      "idle_cpus": 4,
      "tres_used": null,
      "tres_weighted": 0.0
    }
  ]
}"#;

/// `sinfo --yaml` from the same Slurm at the same moment.
const SLURM_SINFO_YAML: &str = r#"%YAML 1.1
--- !!map
!!str meta: !!map
  !!str plugin: !!map
    !!str type: !!str openapi/v0.0.38
    !!str name: !!str Slurm OpenAPI v0.0.38
  !!str Slurm: !!map
    !!str version: !!map
      !!str major: !!int 22
      !!str micro: !!int 8
      !!str minor: !!int 5
    !!str release: !!str 22.05.8
!!str errors: !!seq []
!!str nodes: !!seq
- !!map
  !!str architecture: !!null null
  !!str burstbuffer_network_address: !!null null
  !!str boards: !!int 1
  !!str boot_time: !!int 0
  !!str comment: !!null null
  !!str cores: !!int 1
  !!str cpu_binding: !!int 0
  !!str cpu_load: !!int 4294967294
  !!str extra: !!null null
  !!str free_memory: !!int -2
  !!str cpus: !!int 4
  !!str last_busy: !!int 0
  !!str features: !!null null
  !!str active_features: !!null null
  !!str gres: !!null null
  !!str gres_drained: !!str N/A
  !!str gres_used: !!null null
  !!str mcs_label: !!null null
  !!str name: !!str node1
  !!str next_state_after_reboot: !!str invalid
  !!str address: !!str 127.0.0.1
  !!str hostname: !!str node1
  !!str state: !!str unknown
  !!str state_flags: !!seq
  - !!str NOT_RESPONDING
  !!str next_state_after_reboot_flags: !!seq []
  !!str operating_system: !!null null
  !!str owner: !!null null
  !!str partitions: !!seq
  - !!str debug
  !!str port: !!int 26818
  !!str real_memory: !!int 1000
  !!str reason: !!null null
  !!str reason_changed_at: !!int 0
  !!str reason_set_by_user: !!str root
  !!str slurmd_start_time: !!int 0
  !!str sockets: !!int 4
  !!str threads: !!int 1
  !!str temporary_disk: !!int 0
  !!str weight: !!int 1
  !!str tres: !!str cpu=4,mem=1000M,billing=4
  !!str slurmd_version: !!null null
  !!str alloc_memory: !!int 0
  !!str alloc_cpus: !!int 0
  !!str idle_cpus: !!int 4
  !!str tres_used: !!null null
  !!str tres_weighted: !!float 0.000000
...
"#;

#[test]
fn slurms_json_becomes_slurms_yaml() {
    assert_eq!(
        yaml::json_to_yaml(SLURM_SINFO_JSON).expect("json reads"),
        SLURM_SINFO_YAML
    );
}
