//! The commands against an in-process fake slurmctld on loopback: what they
//! send (credentials included), what they print and how they exit, compared
//! with the reference outputs where one exists. The fake answers like the
//! reference cluster; the real controller is exercised by the end-to-end
//! tests of the workspace.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::{check_credential, FakeServer};
use slurm_common::auth::SlurmKeyAuth;
use slurm_proto::v1;
use slurm_proto::{ErrorCode, SlurmController};
use tonic::{Request, Response, Status};

/// What the fake saw.
#[derive(Default)]
struct Seen {
    submitted: Vec<v1::JobDescription>,
    cancels: Vec<v1::CancelJobRequest>,
    signals: Vec<v1::SignalJobRequest>,
    holds: Vec<v1::HoldJobRequest>,
    updates: Vec<v1::UpdateJobRequest>,
    node_updates: Vec<v1::UpdateNodeRequest>,
    partition_updates: Vec<v1::UpdatePartitionRequest>,
    suspends: Vec<v1::SuspendJobRequest>,
    uids: Vec<u32>,
    /// Submissions to partition "full" refused so far (EAGAIN once).
    full_refusals: u32,
}

struct Fake {
    auth: SlurmKeyAuth,
    seen: Arc<Mutex<Seen>>,
}

impl Fake {
    fn check<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let claims = check_credential(&self.auth, request)?;
        self.seen.lock().expect("lock").uids.push(claims.uid.0);
        Ok(())
    }
}

fn results(filter: Option<&v1::JobFilter>) -> v1::JobActionReply {
    let ids = filter.map(|f| f.job_ids.clone()).unwrap_or_default();
    v1::JobActionReply {
        results: ids
            .into_iter()
            .map(|id| v1::JobActionResult {
                job_id: id,
                array_task_id: None,
                error_code: if id == 999_999 {
                    ErrorCode::InvalidJobId.number()
                } else {
                    0
                },
                error_detail: String::new(),
            })
            .collect(),
    }
}

controller_impl! {
    Fake {
        async fn submit_job(
            &self,
            request: Request<v1::SubmitJobRequest>,
        ) -> Result<Response<v1::SubmitJobReply>, Status> {
            self.check(&request)?;
            let job = request.into_inner().job.unwrap_or_default();
            if job.partitions == ["nope"] {
                return Err(
                    ErrorCode::InvalidPartitionName.to_status("invalid partition specified: nope")
                );
            }
            let mut seen = self.seen.lock().expect("lock");
            if job.partitions == ["full"] && seen.full_refusals == 0 {
                seen.full_refusals += 1;
                return Err(ErrorCode::TryAgain.to_status(""));
            }
            seen.submitted.push(job);
            Ok(Response::new(v1::SubmitJobReply {
                job_id: u32::try_from(seen.submitted.len()).unwrap_or(0) + 1,
                user_messages: Vec::new(),
                estimate: None,
            }))
        }

        async fn get_jobs(
            &self,
            request: Request<v1::GetJobsRequest>,
        ) -> Result<Response<v1::GetJobsReply>, Status> {
            self.check(&request)?;
            let ids = request
                .into_inner()
                .filter
                .map(|f| f.job_ids)
                .unwrap_or_default();
            if ids == [999_999] {
                return Err(ErrorCode::InvalidJobId.into());
            }
            // Every job has ended, with the exit status of `exit 7`, but for
            // those from 100 up, which run.
            let jobs = ids
                .into_iter()
                .map(|id| v1::JobInfo {
                    job_id: id,
                    state: if id >= 100 {
                        v1::JobState::Running as i32
                    } else {
                        v1::JobState::Failed as i32
                    },
                    exit_code: Some(v1::ExitCode {
                        status: 7,
                        signal: 0,
                        core_dumped: false,
                    }),
                    ..Default::default()
                })
                .collect();
            Ok(Response::new(v1::GetJobsReply {
                jobs,
                last_update: 0,
                unchanged: false,
            }))
        }

        type StreamJobsStream = slurm_proto::JobsReplyStream;

        async fn stream_jobs(
            &self,
            _: Request<v1::GetJobsRequest>,
        ) -> Result<Response<Self::StreamJobsStream>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn cancel_job(
            &self,
            request: Request<v1::CancelJobRequest>,
        ) -> Result<Response<v1::JobActionReply>, Status> {
            self.check(&request)?;
            let r = request.into_inner();
            let reply = results(r.filter.as_ref());
            self.seen.lock().expect("lock").cancels.push(r);
            Ok(Response::new(reply))
        }

        async fn signal_job(
            &self,
            request: Request<v1::SignalJobRequest>,
        ) -> Result<Response<v1::JobActionReply>, Status> {
            self.check(&request)?;
            let r = request.into_inner();
            let reply = results(r.filter.as_ref());
            self.seen.lock().expect("lock").signals.push(r);
            Ok(Response::new(reply))
        }

        async fn hold_job(
            &self,
            request: Request<v1::HoldJobRequest>,
        ) -> Result<Response<v1::JobActionReply>, Status> {
            self.check(&request)?;
            let r = request.into_inner();
            let reply = results(r.filter.as_ref());
            self.seen.lock().expect("lock").holds.push(r);
            Ok(Response::new(reply))
        }

        async fn release_job(
            &self,
            request: Request<v1::ReleaseJobRequest>,
        ) -> Result<Response<v1::JobActionReply>, Status> {
            self.check(&request)?;
            Ok(Response::new(results(request.into_inner().filter.as_ref())))
        }

        async fn requeue_job(
            &self,
            request: Request<v1::RequeueJobRequest>,
        ) -> Result<Response<v1::JobActionReply>, Status> {
            self.check(&request)?;
            Ok(Response::new(results(request.into_inner().filter.as_ref())))
        }

        async fn update_job(
            &self,
            request: Request<v1::UpdateJobRequest>,
        ) -> Result<Response<v1::JobActionReply>, Status> {
            self.check(&request)?;
            let r = request.into_inner();
            let reply = results(r.filter.as_ref());
            self.seen.lock().expect("lock").updates.push(r);
            Ok(Response::new(reply))
        }

        async fn update_partition(
            &self,
            request: Request<v1::UpdatePartitionRequest>,
        ) -> Result<Response<v1::UpdatePartitionReply>, Status> {
            self.check(&request)?;
            let r = request.into_inner();
            if r.name == "nope" {
                return Err(ErrorCode::InvalidPartitionName.into());
            }
            self.seen.lock().expect("lock").partition_updates.push(r);
            Ok(Response::new(v1::UpdatePartitionReply {}))
        }

        async fn create_partition(
            &self,
            request: Request<v1::CreatePartitionRequest>,
        ) -> Result<Response<v1::CreatePartitionReply>, Status> {
            self.check(&request)?;
            Err(Status::unimplemented("create_partition is not faked"))
        }

        async fn delete_partition(
            &self,
            request: Request<v1::DeletePartitionRequest>,
        ) -> Result<Response<v1::DeletePartitionReply>, Status> {
            self.check(&request)?;
            Err(Status::unimplemented("delete_partition is not faked"))
        }

        async fn update_node(
            &self,
            request: Request<v1::UpdateNodeRequest>,
        ) -> Result<Response<v1::UpdateNodeReply>, Status> {
            self.check(&request)?;
            let r = request.into_inner();
            if r.nodes == "n9" {
                return Err(ErrorCode::InvalidNodeName.into());
            }
            self.seen.lock().expect("lock").node_updates.push(r);
            Ok(Response::new(v1::UpdateNodeReply {}))
        }

        async fn ping(
            &self,
            request: Request<v1::PingRequest>,
        ) -> Result<Response<v1::PingReply>, Status> {
            self.check(&request)?;
            Ok(Response::new(v1::PingReply {
                role: v1::ControllerRole::Primary as i32,
                index: 0,
                in_control: true,
                epoch: 1,
                hostname: "vm".into(),
                version: "22.05.8".into(),
                start_time: 0,
            }))
        }

        async fn reconfigure(
            &self,
            request: Request<v1::ReconfigureRequest>,
        ) -> Result<Response<v1::ReconfigureReply>, Status> {
            self.check(&request)?;
            Ok(Response::new(v1::ReconfigureReply {}))
        }

        async fn suspend_job(
            &self,
            request: Request<v1::SuspendJobRequest>,
        ) -> Result<Response<v1::JobActionReply>, Status> {
            self.check(&request)?;
            let r = request.into_inner();
            let reply = results(r.filter.as_ref());
            self.seen.lock().expect("lock").suspends.push(r);
            Ok(Response::new(reply))
        }

        async fn top_job(
            &self,
            request: Request<v1::TopJobRequest>,
        ) -> Result<Response<v1::TopJobReply>, Status> {
            self.check(&request)?;
            let ids = request.into_inner().filter.unwrap_or_default().job_ids;
            if ids.contains(&999_999) {
                return Err(ErrorCode::InvalidJobId.into());
            }
            Ok(Response::new(v1::TopJobReply {}))
        }
    }
    get_nodes(v1::GetNodesRequest) -> v1::GetNodesReply;
    get_partitions(v1::GetPartitionsRequest) -> v1::GetPartitionsReply;
    get_config(v1::GetConfigRequest) -> v1::GetConfigReply;
    shutdown(v1::ShutdownRequest) -> v1::ShutdownReply;
    takeover(v1::TakeoverRequest) -> v1::TakeoverReply;
    get_licenses(v1::GetLicensesRequest) -> v1::GetLicensesReply;
    get_batch_script(v1::GetBatchScriptRequest) -> v1::GetBatchScriptReply;
    set_debug_level(v1::SetDebugLevelRequest) -> v1::SetDebugLevelReply;
    set_debug_flags(v1::SetDebugFlagsRequest) -> v1::SetDebugFlagsReply;
}

/// A fake controller serving on loopback, with what it saw.
struct Cluster {
    server: FakeServer,
    seen: Arc<Mutex<Seen>>,
}

impl Cluster {
    /// `backup_first`: list an unreachable controller before the fake, to
    /// check that the commands move on to the next one.
    fn start(backup_first: bool) -> Cluster {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let conf_text = |port: u16| {
            // With slurmdbd, so that `-M ref` names this cluster.
            let mut conf_text = String::from(
                "ClusterName=ref\nAccountingStorageType=accounting_storage/slurmdbd\n",
            );
            if backup_first {
                // Same port, an address nothing listens on.
                conf_text.push_str("SlurmctldHost=gone(127.0.0.2)\n");
            }
            conf_text.push_str(&format!(
                "SlurmctldHost=vm(127.0.0.1)\nSlurmctldPort={port}\nAuthType=auth/slurm\n\
                 MessageTimeout=5\nNodeName=n[1-4] CPUs=2 RealMemory=4000\n\
                 PartitionName=debug Nodes=n[1-4] Default=YES\n"
            ));
            conf_text
        };
        let server = FakeServer::start(conf_text, |auth| Fake {
            auth,
            seen: seen.clone(),
        });
        Cluster { server, seen }
    }

    fn run(&self, bin: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .current_dir(self.server.path())
            .env("SLURM_CONF", self.server.conf())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SBATCH_") {
                cmd.env_remove(k);
            }
        }
        let mut child = cmd.spawn().expect("spawn");
        {
            use std::io::Write;
            let mut input = child.stdin.take().expect("stdin");
            if let Some(text) = stdin {
                input.write_all(text.as_bytes()).expect("write stdin");
            }
        }
        child.wait_with_output().expect("wait")
    }

    fn path(&self) -> &Path {
        self.server.path()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const SBATCH: &str = env!("CARGO_BIN_EXE_sbatch");
const SCANCEL: &str = env!("CARGO_BIN_EXE_scancel");
const SCONTROL: &str = env!("CARGO_BIN_EXE_scontrol");

/// Core and thread specialization without `AllowSpecResourcesUsage`: as
/// Slurm 22.05, an error line each and the job is submitted without them;
/// `--bb` is kept (no burst buffer plugin needed) without a word.
#[test]
fn sbatch_reports_specialization_it_is_not_allowed() {
    let c = Cluster::start(false);
    let o = c.run(
        SBATCH,
        &[
            "--core-spec=1",
            "--thread-spec=1",
            "--bb=a",
            "--bb=b",
            "--wrap=true",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "Submitted batch job 2\n");
    assert_eq!(
        text(&o.stderr),
        "sbatch: error: Ignoring -S since it's not allowed by configuration \
         (AllowSpecResourcesUsage = No)\n\
         sbatch: error: Ignoring --thread-spec since it's not allowed by configuration \
         (AllowSpecResourcesUsage = No)\n"
    );
}

#[test]
fn sbatch_submits_and_reports() {
    let c = Cluster::start(false);
    let o = c.run(SBATCH, &["--wrap=sleep 300"], None);
    assert_eq!(
        (text(&o.stdout), text(&o.stderr)),
        ("Submitted batch job 2\n".into(), String::new())
    );
    assert_eq!(o.status.code(), Some(0));
    let o = c.run(SBATCH, &["--parsable", "--wrap=sleep 300"], None);
    assert_eq!(text(&o.stdout), "3\n");
    let o = c.run(
        SBATCH,
        &["--parsable", "--clusters=ref", "--wrap=sleep 300"],
        None,
    );
    assert_eq!(text(&o.stdout), "4;ref\n");
    let o = c.run(
        SBATCH,
        &[],
        Some("#!/bin/bash\n#SBATCH -J fromstdin -N 2\ntrue\n"),
    );
    assert_eq!(text(&o.stdout), "Submitted batch job 5\n");
    std::fs::write(
        c.path().join("job.sh"),
        "#!/bin/sh\n#SBATCH -p debug\necho $1\n",
    )
    .expect("script");
    let o = c.run(SBATCH, &["-t", "10", "job.sh", "arg1"], None);
    assert_eq!(
        text(&o.stdout),
        "Submitted batch job 6\n",
        "{}",
        text(&o.stderr)
    );

    let seen = c.seen.lock().expect("lock");
    let jobs = &seen.submitted;
    assert_eq!(jobs[0].name, "wrap");
    assert!(jobs[0].script.contains("sleep 300"));
    assert_eq!(jobs[0].time_limit, None);
    assert_eq!(jobs[3].name, "fromstdin");
    assert_eq!(jobs[3].min_nodes, Some(2));
    assert_eq!(jobs[4].name, "job.sh");
    assert_eq!(jobs[4].argv, ["arg1"]);
    assert_eq!(jobs[4].partitions, ["debug"]);
    assert!(jobs[4].command_path.ends_with("/job.sh"));
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    assert!(seen.uids.iter().all(|u| *u == uid));
    assert_eq!(jobs[4].user_id, uid);
}

#[test]
fn sbatch_refusal_and_wait() {
    let c = Cluster::start(false);
    let o = c.run(SBATCH, &["--partition=nope", "--wrap=true"], None);
    assert_eq!(
        text(&o.stderr),
        "sbatch: error: invalid partition specified: nope\n\
         sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    // The reference case sbatch_wait_exit: the job's exit status.
    let o = c.run(SBATCH, &["--wait", "--wrap=exit 7"], None);
    assert_eq!(text(&o.stdout), "Submitted batch job 2\n");
    assert_eq!(o.status.code(), Some(7));
    // A controller at MaxJobCount: said once, tried again after a second.
    let o = c.run(SBATCH, &["--partition=full", "--wrap=true"], None);
    assert_eq!(
        text(&o.stderr),
        "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying.\n"
    );
    assert_eq!(text(&o.stdout), "Submitted batch job 3\n");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn commands_try_the_next_controller() {
    let c = Cluster::start(true);
    let o = c.run(SBATCH, &["--parsable", "--wrap=true"], None);
    assert_eq!(text(&o.stdout), "2\n", "{}", text(&o.stderr));
    let o = c.run(SCONTROL, &["ping"], None);
    assert_eq!(
        text(&o.stdout),
        "Slurmctld(primary) at gone is DOWN\nSlurmctld(backup) at vm is UP\n"
    );
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn scancel_reports_like_slurm() {
    let c = Cluster::start(false);
    let o = c.run(SCANCEL, &["999999"], None);
    assert_eq!((text(&o.stderr), o.status.code()), (String::new(), Some(0)));
    let o = c.run(SCANCEL, &["-v", "999999"], None);
    assert_eq!(
        text(&o.stderr),
        "scancel: Terminating job 999999\n\
         scancel: error: Kill job error on job id 999999: Invalid job id specified\n"
    );
    assert_eq!(o.status.code(), Some(0));
    let o = c.run(SCANCEL, &["2"], None);
    assert_eq!((text(&o.stderr), o.status.code()), (String::new(), Some(0)));
    let o = c.run(SCANCEL, &["-s", "USR1", "103,104"], None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // A signal for jobs that have ended is refused before it is sent.
    let o = c.run(SCANCEL, &["-s", "USR1", "3"], None);
    assert_eq!(
        (text(&o.stderr), o.status.code()),
        (
            "scancel: error: Kill job error on job id 3: Invalid job id specified\n".to_owned(),
            Some(1)
        )
    );
    let seen = c.seen.lock().expect("lock");
    assert_eq!(seen.cancels.len(), 3);
    assert_eq!(seen.signals.len(), 1);
    assert_eq!(seen.signals[0].signal, 10);
    assert_eq!(
        seen.signals[0].filter.as_ref().map(|f| f.job_ids.clone()),
        Some(vec![103, 104])
    );
}

#[test]
fn scontrol_controller_commands() {
    let c = Cluster::start(false);
    let o = c.run(SCONTROL, &["ping"], None);
    assert_eq!(text(&o.stdout), "Slurmctld(primary) at vm is UP\n");
    for args in [
        &["hold", "8"][..],
        &["release", "8"],
        &["uhold", "8"],
        &["reconfigure"],
    ] {
        let o = c.run(SCONTROL, args, None);
        assert_eq!(
            (text(&o.stdout), text(&o.stderr), o.status.code()),
            (String::new(), String::new(), Some(0)),
            "{args:?}"
        );
    }
    let o = c.run(SCONTROL, &["show", "job", "999999"], None);
    assert_eq!(
        text(&o.stderr),
        "slurm_load_jobs error: Invalid job id specified\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = c.run(
        SCONTROL,
        &["update", "JobId=5", "TimeLimit=10", "Comment=x y"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = c.run(SCONTROL, &["update", "NodeName=n9", "State=RESUME"], None);
    assert_eq!(
        text(&o.stderr),
        "slurm_update error: Invalid node name specified\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = c.run(
        SCONTROL,
        &["update", "NodeName=n1", "State=DRAIN", "Reason=maint"],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    let o = c.run(
        SCONTROL,
        &["update", "PartitionName=nope", "State=UP"],
        None,
    );
    assert_eq!(
        text(&o.stderr),
        "slurm_update error: Invalid partition name specified\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = c.run(
        SCONTROL,
        &[
            "update",
            "PartitionName=debug",
            "State=DRAIN",
            "MaxTime=1:00:00",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let seen = c.seen.lock().expect("lock");
    assert_eq!(seen.partition_updates.len(), 1);
    assert_eq!(seen.partition_updates[0].name, "debug");
    assert_eq!(seen.partition_updates[0].attributes.len(), 2);
    assert_eq!(seen.holds.len(), 2);
    assert!(!seen.holds[0].user_hold && seen.holds[1].user_hold);
    assert_eq!(seen.updates[0].comment.as_deref(), Some("x y"));
    assert_eq!(seen.node_updates[0].reason.as_deref(), Some("maint"));
}

#[test]
fn scontrol_suspend_resume_and_top() {
    let c = Cluster::start(false);
    let run = |args: &[&str]| {
        let o = c.run(SCONTROL, args, None);
        (text(&o.stderr), o.status.code())
    };
    // Each argument on its own; the bad ones are named, the good ones go.
    assert_eq!(
        run(&["suspend", "5", "999999", "JobId=abc"]),
        (
            "Invalid job id specified for job 999999\n\
             Invalid job id specified for job abc\n"
                .into(),
            Some(1)
        )
    );
    assert_eq!(run(&["resume", "job=6,7"]), (String::new(), Some(0)));
    assert_eq!(
        run(&["top", "5,999999"]),
        (
            "Invalid job id specified for job 5,999999\n".into(),
            Some(1)
        )
    );
    assert_eq!(run(&["top", "5"]), (String::new(), Some(0)));
    let seen = c.seen.lock().expect("lock");
    let sent: Vec<(Vec<u32>, bool)> = seen
        .suspends
        .iter()
        .map(|r| (r.filter.clone().unwrap_or_default().job_ids, r.resume))
        .collect();
    assert_eq!(
        sent,
        vec![(vec![5], false), (vec![999_999], false), (vec![6, 7], true)]
    );
}
