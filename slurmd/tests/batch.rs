//! slurmd and slurmstepd end to end: the real binaries, a fake controller
//! in the test (a SlurmNodeReports server recording what it is told), and
//! LaunchBatch/TerminateJob calls signed like the controller signs them.
//!
//! Waiting is done on channels fed by the fake controller (with a
//! deadline), or by polling with a deadline for files; never by sleeping.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_common::auth::{generate_key, unix_now, Authenticator, Claims, SlurmKeyAuth};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1::{
    EpilogCompleteReply, EpilogCompleteRequest, JobCompleteReply, JobCompleteRequest, JobState,
    LaunchBatchRequest, NodeTerminateJobRequest, PingNodeRequest, PrologCompleteReply,
    PrologCompleteRequest, RegisterNodeReply, RegisterNodeRequest,
};
use slurm_proto::{SlurmNodeClient, SlurmNodeReports, SlurmNodeReportsServer};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

const DEADLINE: Duration = Duration::from_secs(30);

fn free_port() -> u16 {
    slurm_testkit::free_loopback_port().expect("free port")
}

/// Polls `probe` with a growing pause until it yields or `DEADLINE` passes.
fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

async fn next<T>(rx: &mut UnboundedReceiver<T>, what: &str) -> T {
    tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap_or_else(|| panic!("channel closed waiting for {what}"))
}

/// Kills its process when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[derive(Clone)]
struct FakeController {
    registers: UnboundedSender<RegisterNodeRequest>,
    completes: UnboundedSender<JobCompleteRequest>,
    epilogs: UnboundedSender<EpilogCompleteRequest>,
    prologs: UnboundedSender<PrologCompleteRequest>,
    auth: Arc<SlurmKeyAuth>,
}

impl FakeController {
    fn check<T>(&self, r: &Request<T>) -> Result<(), Status> {
        let token = slurm_proto::auth_credential(r.metadata())
            .ok_or_else(|| Status::unauthenticated("no credential"))?;
        self.auth
            .verify_now(token)
            .map_err(|e| Status::unauthenticated(e.to_string()))?;
        Ok(())
    }
}

#[tonic::async_trait]
impl SlurmNodeReports for FakeController {
    async fn register_node(
        &self,
        r: Request<RegisterNodeRequest>,
    ) -> Result<Response<RegisterNodeReply>, Status> {
        self.check(&r)?;
        let _ = self.registers.send(r.into_inner());
        Ok(Response::new(RegisterNodeReply::default()))
    }

    async fn job_complete(
        &self,
        r: Request<JobCompleteRequest>,
    ) -> Result<Response<JobCompleteReply>, Status> {
        self.check(&r)?;
        let _ = self.completes.send(r.into_inner());
        Ok(Response::new(JobCompleteReply {}))
    }

    async fn epilog_complete(
        &self,
        r: Request<EpilogCompleteRequest>,
    ) -> Result<Response<EpilogCompleteReply>, Status> {
        self.check(&r)?;
        let _ = self.epilogs.send(r.into_inner());
        Ok(Response::new(EpilogCompleteReply {}))
    }

    async fn prolog_complete(
        &self,
        r: Request<PrologCompleteRequest>,
    ) -> Result<Response<PrologCompleteReply>, Status> {
        self.check(&r)?;
        let _ = self.prologs.send(r.into_inner());
        Ok(Response::new(PrologCompleteReply {}))
    }
}

struct Cluster {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    conf: PathBuf,
    slurmd_port: u16,
    /// Ports of further nodes n2, n3, ... (only started on request).
    other_ports: Vec<u16>,
    auth: Arc<SlurmKeyAuth>,
    registers: UnboundedReceiver<RegisterNodeRequest>,
    completes: UnboundedReceiver<JobCompleteRequest>,
    epilogs: UnboundedReceiver<EpilogCompleteRequest>,
    prologs: UnboundedReceiver<PrologCompleteRequest>,
}

impl Cluster {
    async fn start() -> Self {
        Self::start_nodes(1).await
    }

    async fn start_nodes(count: usize) -> Self {
        Self::start_with(count, |_| String::new()).await
    }

    /// A cluster of `count` nodes whose slurm.conf ends with what `extra`
    /// makes of the cluster's root directory.
    async fn start_with(count: usize, extra: impl FnOnce(&Path) -> String) -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("slurmd-test-")
            .tempdir()
            .expect("tmp");
        let root = tmp.path().to_path_buf();
        // Jobs of other users must be able to reach their script and files.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        for d in ["spool", "log", "run", "work"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::set_permissions(root.join("work"), std::fs::Permissions::from_mode(0o1777))
            .expect("chmod");
        let ctl_port = free_port();
        let slurmd_port = free_port();
        let other_ports: Vec<u16> = (1..count).map(|_| free_port()).collect();
        let mut node_lines = String::new();
        for (i, port) in other_ports.iter().enumerate() {
            node_lines.push_str(&format!(
                "NodeName=n{} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=2 RealMemory=4000\n",
                i + 2
            ));
        }
        let r = root.display();
        let conf_text = format!(
            "ClusterName=ref\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={ctl_port}\n\
             AuthType=auth/slurm\nSlurmdSpoolDir={r}/spool/%n\nSlurmdPidFile={r}/run/slurmd.%n.pid\n\
             SlurmdLogFile={r}/log/slurmd.%n.log\nSelectType=select/cons_tres\nKillWait=5\n\
             SlurmdParameters=config_overrides\n\
             NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={slurmd_port} CPUs=2 RealMemory=4000\n\
             {node_lines}PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n{}",
            extra(&root)
        );
        let conf = root.join("slurm.conf");
        std::fs::write(&conf, conf_text).expect("write conf");
        let key = root.join("slurm.key");
        generate_key(&key).expect("key");
        let auth = Arc::new(SlurmKeyAuth::load(&key).expect("load key"));

        let (reg_tx, registers) = unbounded_channel();
        let (done_tx, completes) = unbounded_channel();
        let (epi_tx, epilogs) = unbounded_channel();
        let (pro_tx, prologs) = unbounded_channel();
        let fake = FakeController {
            registers: reg_tx,
            completes: done_tx,
            epilogs: epi_tx,
            prologs: pro_tx,
            auth: auth.clone(),
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", ctl_port))
            .await
            .expect("bind controller");
        tokio::spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(SlurmNodeReportsServer::new(fake))
                .serve_with_incoming(incoming)
                .await;
        });
        Cluster {
            _tmp: tmp,
            root,
            conf,
            slurmd_port,
            other_ports,
            auth,
            registers,
            completes,
            epilogs,
            prologs,
        }
    }

    fn start_slurmd(&self) -> Guard {
        self.start_slurmd_as("n1")
    }

    fn start_slurmd_as(&self, node: &str) -> Guard {
        let child = Command::new(env!("CARGO_BIN_EXE_slurmd"))
            .args(["-D", "-N", node, "-f"])
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start slurmd");
        Guard(child)
    }

    fn signed<T>(&self, body: T) -> Request<T> {
        // SAFETY: geteuid/getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let claims = Claims::new(Uid::new(uid), Gid::new(gid), "localhost", unix_now(), 300);
        let token = self.auth.create(&claims).expect("token");
        let mut r = Request::new(body);
        slurm_proto::set_auth_credential(r.metadata_mut(), &token).expect("metadata");
        r
    }

    async fn node_client(&self) -> SlurmNodeClient<Channel> {
        let ep = format!("http://127.0.0.1:{}", self.slurmd_port);
        SlurmNodeClient::connect(ep)
            .await
            .expect("connect to slurmd")
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    fn job_dir(&self, job_id: u32) -> PathBuf {
        self.root.join("spool/n1").join(format!("job{job_id:05}"))
    }

    fn launch(&self, job_id: u32, script: &str, uid: u32, gid: u32) -> LaunchBatchRequest {
        LaunchBatchRequest {
            job_id,
            name: "job.sh".into(),
            user_id: uid,
            group_id: gid,
            user_name: String::new(),
            script: script.into(),
            argv: vec!["world".into()],
            environment: vec!["PATH=/usr/bin:/bin".into(), "FROM_SUBMIT=yes".into()],
            work_dir: self.work().display().to_string(),
            nodes: "n1".into(),
            cpus_per_node: vec![1],
            partition: "debug".into(),
            account: "root".into(),
            qos: "normal".into(),
            cluster_name: "ref".into(),
            submit_host: "localhost".into(),
            submit_dir: self.work().display().to_string(),
            ..Default::default()
        }
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn own_ids() -> (u32, u32) {
    // SAFETY: geteuid/getegid cannot fail.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_job_runs_reports_and_cleans_up() {
    let mut c = Cluster::start().await;
    let _slurmd = c.start_slurmd();
    let reg = next(&mut c.registers, "RegisterNode").await;
    assert_eq!(reg.node_name, "n1");
    assert_eq!(reg.version, "22.05.8");
    // config_overrides: the configured sizes, whatever this host has.
    assert_eq!((reg.cpus, reg.real_memory_mb), (2, 4000));
    assert!(reg.running_jobs.is_empty());
    // Arch and OS as scontrol show node prints them (uname -m, uname -srv).
    let (arch, os) = slurmd::hw::uname();
    assert!(!arch.is_empty() && !arch.contains(' '), "{arch:?}");
    assert_eq!(
        (reg.arch.as_str(), reg.os.as_str()),
        (arch.as_str(), os.as_str())
    );
    assert!(reg.os.starts_with("Linux "), "{:?}", reg.os);

    let mut node = c.node_client().await;
    let (uid, gid) = own_ids();
    let script = "#!/bin/sh\necho \"hello $SLURM_JOB_ID $1 $FROM_SUBMIT $SLURM_JOB_NODELIST $ENVIRONMENT\"\necho oops >&2\nexit 3\n";
    node.launch_batch(c.signed(c.launch(5, script, uid, gid)))
        .await
        .expect("launch accepted");
    let done = next(&mut c.completes, "JobComplete").await;
    assert_eq!(done.job_id, 5);
    assert_eq!(done.node_name, "n1");
    assert_eq!(done.launch_error, 0);
    let exit = done.exit_code.expect("exit code");
    assert_eq!((exit.status, exit.signal), (3, 0));
    let out = read(&c.work().join("slurm-5.out")).expect("output file");
    assert_eq!(out, "hello 5 world yes n1 BATCH\noops\n");
    wait_for("job dir removal", || (!c.job_dir(5).exists()).then_some(()));

    // After completion the controller terminates the job everywhere; with
    // nothing left to kill the node answers with EpilogComplete at once.
    node.terminate_job(c.signed(NodeTerminateJobRequest {
        job_id: 5,
        reason: JobState::Completed as i32,
        ..Default::default()
    }))
    .await
    .expect("terminate");
    let epi = next(&mut c.epilogs, "EpilogComplete").await;
    assert_eq!(
        (epi.job_id, epi.node_name.as_str(), epi.error_code),
        (5, "n1", 0)
    );

    let ping = node
        .ping_node(c.signed(PingNodeRequest {}))
        .await
        .expect("ping")
        .into_inner();
    assert_eq!(ping.node_name, "n1");
    assert!(ping.running_job_ids.is_empty());
    assert!(ping.launching_job_ids.is_empty());
    // An empty list that is complete: the controller may rely on it.
    assert!(ping.reports_jobs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_kills_a_long_job_that_survived_a_slurmd_restart() {
    let mut c = Cluster::start().await;
    let slurmd = c.start_slurmd();
    next(&mut c.registers, "first RegisterNode").await;
    let (uid, gid) = own_ids();
    let mut node = c.node_client().await;
    node.launch_batch(c.signed(c.launch(6, "#!/bin/sh\necho started\nsleep 600\n", uid, gid)))
        .await
        .expect("launch accepted");
    let out = c.work().join("slurm-6.out");
    wait_for("job output", || {
        read(&out).filter(|t| t.contains("started"))
    });

    // Pings report it as running once its launch is over (the script may
    // write before slurmd has noted the end of the launch).
    let start = Instant::now();
    let ping = loop {
        let ping = node
            .ping_node(c.signed(PingNodeRequest {}))
            .await
            .expect("ping")
            .into_inner();
        if ping.launching_job_ids.is_empty() {
            break ping;
        }
        assert_eq!(ping.launching_job_ids, vec![6]);
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for the launch to end"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(ping.running_job_ids, vec![6]);
    assert!(ping.reports_jobs);

    // slurmd dies hard and comes back: the job keeps running and is reported.
    drop(slurmd);
    let _slurmd = c.start_slurmd();
    let reg = next(&mut c.registers, "RegisterNode after restart").await;
    let running: Vec<u32> = reg.running_jobs.iter().map(|j| j.job_id).collect();
    assert_eq!(running, vec![6]);

    let mut node = c.node_client().await;
    node.terminate_job(c.signed(NodeTerminateJobRequest {
        job_id: 6,
        reason: JobState::Cancelled as i32,
        time: unix_now(),
        kill_wait_secs: 5,
        ..Default::default()
    }))
    .await
    .expect("terminate");
    let done = next(&mut c.completes, "JobComplete").await;
    assert_eq!(done.job_id, 6);
    assert_eq!(done.exit_code.expect("exit").signal, libc::SIGTERM as u32);
    let epi = next(&mut c.epilogs, "EpilogComplete").await;
    assert_eq!(epi.job_id, 6);
    let text = read(&out).expect("output");
    assert!(
        text.contains("slurmstepd-n1: error: *** JOB 6 ON n1 CANCELLED AT "),
        "{text}"
    );
    wait_for("job dir removal", || (!c.job_dir(6).exists()).then_some(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_launch_failures() {
    let mut c = Cluster::start().await;
    let _slurmd = c.start_slurmd();
    next(&mut c.registers, "RegisterNode").await;
    let mut node = c.node_client().await;
    let (uid, gid) = own_ids();

    // No credential at all.
    let err = node
        .launch_batch(Request::new(c.launch(7, "#!/bin/sh\n", uid, gid)))
        .await
        .expect_err("unauthenticated launch");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);

    // A job credential bound to another job.
    let (euid, egid) = own_ids();
    let cred = c
        .auth
        .create(
            &Claims::new(Uid::new(euid), Gid::new(egid), "localhost", unix_now(), 300)
                .with_payload(b"job_id=99".to_vec()),
        )
        .expect("cred");
    let mut req = c.launch(8, "#!/bin/sh\n", uid, gid);
    req.credential = cred.into_bytes();
    let err = node
        .launch_batch(c.signed(req))
        .await
        .expect_err("wrong job credential");
    assert!(
        err.message().contains("credential is for job 99"),
        "{err:?}"
    );

    // An output file that cannot be created: the launch is accepted and the
    // failure arrives as JobComplete with a launch error.
    let mut req = c.launch(9, "#!/bin/sh\necho hi\n", uid, gid);
    req.stdout_path = "/nonexistent-dir/out".into();
    node.launch_batch(c.signed(req))
        .await
        .expect("launch accepted");
    let done = next(&mut c.completes, "JobComplete").await;
    assert_eq!(done.job_id, 9);
    assert_eq!(done.launch_error, slurm_proto::ErrorCode::IoError.number());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_slurmd_runs_jobs_as_their_user() {
    let (euid, _) = own_ids();
    let nobody = slurmd::users::uid_of("nobody");
    let (Some((uid, gid)), 0) = (nobody, euid) else {
        eprintln!("needs root and a user called nobody; skipped");
        return;
    };
    let mut c = Cluster::start().await;
    let _slurmd = c.start_slurmd();
    next(&mut c.registers, "RegisterNode").await;
    let mut node = c.node_client().await;
    node.launch_batch(c.signed(c.launch(
        10,
        "#!/bin/sh\nid -u\nid -g\necho $SLURM_JOB_USER\n",
        uid,
        gid,
    )))
    .await
    .expect("launch accepted");
    let done = next(&mut c.completes, "JobComplete").await;
    assert_eq!(done.exit_code.expect("exit").status, 0);
    let out = c.work().join("slurm-10.out");
    let text = read(&out).expect("output");
    assert_eq!(text, format!("{uid}\n{gid}\nnobody\n"));
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&out).expect("stat");
    assert_eq!((meta.uid(), meta.gid()), (uid, gid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_job_reaches_the_script() {
    let mut c = Cluster::start().await;
    let _slurmd = c.start_slurmd();
    next(&mut c.registers, "RegisterNode").await;
    let mut node = c.node_client().await;
    let (uid, gid) = own_ids();
    // USR1 would end the wait (and the script); USR2 ends the script.
    let script = "#!/bin/sh\ntrap 'echo got-usr1' USR1\ntrap 'echo got-usr2; exit 0' USR2\n\
                  echo ready\nsleep 600 &\nwait\necho after-wait\n";
    node.launch_batch(c.signed(c.launch(11, script, uid, gid)))
        .await
        .expect("launch accepted");
    let out = c.work().join("slurm-11.out");
    wait_for("trap installed", || {
        read(&out).filter(|t| t.contains("ready"))
    });
    // Without -b or -f the signal is for the job's steps, and a batch job
    // has none besides its shell: nothing happens.
    node.signal_job(c.signed(slurm_proto::v1::NodeSignalJobRequest {
        job_id: 11,
        signal: libc::SIGUSR1 as u32,
        ..Default::default()
    }))
    .await
    .expect("signal for the steps");
    // `scancel -f`: the shell and its children.
    node.signal_job(c.signed(slurm_proto::v1::NodeSignalJobRequest {
        job_id: 11,
        signal: libc::SIGUSR2 as u32,
        full: true,
        ..Default::default()
    }))
    .await
    .expect("signal");
    let done = next(&mut c.completes, "JobComplete").await;
    let exit = done.exit_code.expect("exit");
    assert_eq!((done.job_id, exit.status, exit.signal), (11, 0, 0));
    assert_eq!(read(&out).expect("output"), "ready\ngot-usr2\n");
    // A job this node does not run: nothing to signal, not an error.
    node.signal_job(c.signed(slurm_proto::v1::NodeSignalJobRequest {
        job_id: 12345,
        signal: libc::SIGUSR1 as u32,
        ..Default::default()
    }))
    .await
    .expect("signal to an unknown job");
    // Numbers that are no signal reach nothing, and the node answers (an
    // error would read as a node that did not).
    for signal in [0, 99, u32::MAX] {
        node.signal_job(c.signed(slurm_proto::v1::NodeSignalJobRequest {
            job_id: 1,
            signal,
            full: true,
            ..Default::default()
        }))
        .await
        .unwrap_or_else(|e| panic!("signal {signal}: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_reaches_every_node_and_reports_the_unreachable() {
    use slurm_proto::v1::{node_message, node_reply, ForwardRequest, NodeMessage};
    let mut c = Cluster::start_nodes(4).await;
    let _n1 = c.start_slurmd_as("n1");
    let _n2 = c.start_slurmd_as("n2");
    let _n3 = c.start_slurmd_as("n3");
    // n4 is configured but never started.
    let mut registered = Vec::new();
    for _ in 0..3 {
        registered.push(next(&mut c.registers, "RegisterNode").await.node_name);
    }
    registered.sort();
    assert_eq!(registered, vec!["n1", "n2", "n3"]);
    assert_eq!(c.other_ports.len(), 3);

    let mut node = c.node_client().await;
    let reply = node
        .forward(c.signed(ForwardRequest {
            message: Some(NodeMessage {
                body: Some(node_message::Body::Ping(PingNodeRequest {})),
            }),
            nodes: "n[1-4]".into(),
            tree_width: 2,
            timeout_ms: 5000,
        }))
        .await
        .expect("forward")
        .into_inner();
    let mut got: Vec<(String, i32)> = reply
        .results
        .iter()
        .map(|r| (r.node.clone(), r.error_code))
        .collect();
    got.sort();
    let conn = slurm_proto::ErrorCode::CommunicationConnection.number();
    assert_eq!(
        got,
        vec![
            ("n1".to_string(), 0),
            ("n2".to_string(), 0),
            ("n3".to_string(), 0),
            ("n4".to_string(), conn)
        ]
    );
    for r in reply.results.iter().filter(|r| r.error_code == 0) {
        match r.reply.as_ref().and_then(|x| x.body.as_ref()) {
            Some(node_reply::Body::Ping(p)) => assert_eq!(p.node_name, r.node),
            other => panic!("unexpected reply {other:?}"),
        }
    }
}

/// The next message on `rx` about `job_id`, skipping the others (a job
/// ended before its launch arrived gets an early EpilogComplete as well).
async fn next_for<T>(
    rx: &mut UnboundedReceiver<T>,
    job_id: u32,
    id_of: impl Fn(&T) -> u32,
    what: &str,
) -> T {
    loop {
        let m = next(rx, what).await;
        if id_of(&m) == job_id {
            return m;
        }
    }
}

/// The controller marks a job running when it sends LaunchBatch, so a
/// cancel can race the launch: reach slurmd before it, during it (while
/// slurmstepd starts and has no socket yet), or just after it. Whatever
/// the order, the script must be ended and both JobComplete and
/// EpilogComplete must follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_racing_the_launch_is_never_lost() {
    let mut c = Cluster::start().await;
    let _slurmd = c.start_slurmd();
    next(&mut c.registers, "RegisterNode").await;
    let node = c.node_client().await;
    let (uid, gid) = own_ids();
    for job_id in 100..120u32 {
        let mut req = c.launch(job_id, "#!/bin/sh\nsleep 600\n", uid, gid);
        let cred = Claims::new(Uid::new(uid), Gid::new(gid), "localhost", unix_now(), 300)
            .with_payload(format!("job={job_id}").into_bytes());
        req.credential = c.auth.create(&cred).expect("cred").into_bytes();
        let launch = c.signed(req);
        let terminate = c.signed(NodeTerminateJobRequest {
            job_id,
            reason: JobState::Cancelled as i32,
            time: unix_now(),
            kill_wait_secs: 5,
            ..Default::default()
        });
        let (mut a, mut b) = (node.clone(), node.clone());
        let launch = async move { a.launch_batch(launch).await.map(|_| ()) };
        let terminate = async move { b.terminate_job(terminate).await.map(|_| ()) };
        // Alternate which request leaves first; neither waits for the other.
        let (l, t) = if job_id % 2 == 0 {
            tokio::join!(launch, terminate)
        } else {
            let (t, l) = tokio::join!(terminate, launch);
            (l, t)
        };
        l.unwrap_or_else(|e| panic!("job {job_id}: launch refused: {e:?}"));
        t.unwrap_or_else(|e| panic!("job {job_id}: terminate refused: {e:?}"));

        let done = next_for(&mut c.completes, job_id, |m| m.job_id, "JobComplete").await;
        assert_eq!(done.launch_error, 0, "job {job_id}");
        let exit = done.exit_code.expect("exit code");
        assert_eq!(exit.signal, libc::SIGTERM as u32, "job {job_id}: {exit:?}");
        next_for(&mut c.epilogs, job_id, |m| m.job_id, "EpilogComplete").await;
        wait_for("job dir removal", || {
            (!c.job_dir(job_id).exists()).then_some(())
        });
    }
    // Exactly one JobComplete per launch.
    assert!(c.completes.try_recv().is_err(), "a second JobComplete");
}

/// A batch script that appends "job <id>" to `work/order`: the file and
/// the script.
fn order_script(c: &Cluster) -> (PathBuf, String) {
    let out = c.work().join("order");
    let script = format!(
        "#!/bin/sh\necho \"job $SLURM_JOB_ID\" >> {}\n",
        out.display()
    );
    (out, script)
}

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, body).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prolog_and_epilog_run_around_the_job_and_report_failures() {
    // The Prolog fails for job 13 only; the Epilog for job 12 only. Both
    // log what they were told, one line per run.
    let mut c = Cluster::start_with(1, |root| {
        let log = root.join("scripts.log");
        let record = format!(
            "echo \"$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURMD_NODENAME $SLURM_JOB_USER \
             $SLURM_JOB_ACCOUNT $SLURM_JOB_PARTITION $SLURM_JOB_NODELIST $SLURM_CLUSTER_NAME\" >> {}",
            log.display()
        );
        write_script(
            &root.join("prolog.sh"),
            &format!("#!/bin/sh\n{record}\n[ \"$SLURM_JOB_ID\" != 13 ]\n"),
        );
        write_script(
            &root.join("epilog.sh"),
            &format!("#!/bin/sh\n{record}\n[ \"$SLURM_JOB_ID\" != 12 ]\n"),
        );
        format!(
            "Prolog={r}/prolog.sh\nEpilog={r}/epilog.sh\nPrologEpilogTimeout=30\n",
            r = root.display()
        )
    })
    .await;
    let _slurmd = c.start_slurmd();
    next(&mut c.registers, "RegisterNode").await;
    let mut node = c.node_client().await;
    let (uid, gid) = own_ids();
    let user = slurmd::users::name_of(uid).expect("own user name");
    let log = c.root.join("scripts.log");
    let (out, script) = order_script(&c);

    // A good run: Prolog before the script, Epilog after the terminate,
    // EpilogComplete clean.
    node.launch_batch(c.signed(c.launch(11, &script, uid, gid)))
        .await
        .expect("launch accepted");
    next(&mut c.completes, "JobComplete").await;
    let mut terminate = NodeTerminateJobRequest {
        job_id: 11,
        reason: JobState::Completed as i32,
        user_id: uid,
        group_id: gid,
        nodes: "n[1-2]".into(),
        partition: "debug".into(),
        ..Default::default()
    };
    node.terminate_job(c.signed(terminate.clone()))
        .await
        .expect("terminate");
    let epi = next(&mut c.epilogs, "EpilogComplete").await;
    assert_eq!((epi.job_id, epi.error_code), (11, 0), "{epi:?}");
    assert_eq!(
        read(&log).unwrap_or_default(),
        // The launch's facts win over the terminate's (n1, not n[1-2]).
        format!(
            "prolog_slurmd 11 n1 {user} root debug n1 ref\nepilog_slurmd 11 n1 {user} root debug n1 ref\n"
        )
    );
    assert_eq!(read(&out).as_deref(), Some("job 11\n"));

    // A failing Epilog: EpilogComplete says so.
    std::fs::remove_file(&log).expect("rm log");
    node.launch_batch(c.signed(c.launch(12, &script, uid, gid)))
        .await
        .expect("launch accepted");
    next(&mut c.completes, "JobComplete").await;
    terminate.job_id = 12;
    node.terminate_job(c.signed(terminate.clone()))
        .await
        .expect("terminate");
    let epi = next(&mut c.epilogs, "EpilogComplete").await;
    assert_eq!(epi.job_id, 12);
    assert_eq!(
        epi.error_code,
        slurm_proto::ErrorCode::EpilogFailed.number(),
        "{epi:?}"
    );
    assert!(
        epi.error_detail.contains("epilog.sh failed for job 12")
            && epi.error_detail.ends_with("exit status 1"),
        "{epi:?}"
    );

    // A failing Prolog: the launch is accepted (answered before the Prolog
    // runs), the failure arrives as PrologComplete with
    // ESLURMD_PROLOG_FAILED, and the script never runs (no JobComplete, no
    // output).
    node.launch_batch(c.signed(c.launch(13, &script, uid, gid)))
        .await
        .expect("launch accepted before the prolog runs");
    let failed = next(&mut c.prologs, "PrologComplete").await;
    assert_eq!((failed.job_id, failed.node_name.as_str()), (13, "n1"));
    assert_eq!(
        failed.error_code,
        slurm_proto::ErrorCode::PrologFailed.number(),
        "{failed:?}"
    );
    assert!(
        failed.error_detail.contains("prolog.sh failed for job 13"),
        "{failed:?}"
    );
    assert!(!c.job_dir(13).exists());
    // Successful Prologs are not reported without PrologFlags=Alloc.
    assert!(c.prologs.try_recv().is_err(), "one report");
    // The controller then ends the job on the node: its Epilog runs as
    // after any job, with what the launch said.
    terminate.job_id = 13;
    node.terminate_job(c.signed(terminate))
        .await
        .expect("terminate");
    let epi = next(&mut c.epilogs, "EpilogComplete").await;
    assert_eq!((epi.job_id, epi.error_code), (13, 0), "{epi:?}");
    assert!(c.completes.try_recv().is_err(), "job 13 never ran");
    assert_eq!(read(&out).as_deref(), Some("job 11\njob 12\n"));
    assert!(
        read(&log)
            .unwrap_or_default()
            .ends_with(&format!("prolog_slurmd 13 n1 {user} root debug n1 ref\nepilog_slurmd 13 n1 {user} root debug n1 ref\n")),
        "{:?}",
        read(&log)
    );
}

/// A script that records "$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID
/// $SLURMD_NODENAME" in `log`, waits (at most a minute) for `gate` to
/// exist when the job id is `wait_job`, and fails for `fail_job`.
fn gated_script(log: &Path, gate: &Path, wait_job: u32, fail_job: u32) -> String {
    format!(
        "#!/bin/sh\n\
         echo \"$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURMD_NODENAME\" >> {log}\n\
         if [ \"$SLURM_JOB_ID\" = {wait_job} ]; then\n\
           i=0; while [ ! -e {gate} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n\
         fi\n\
         [ \"$SLURM_JOB_ID\" != {fail_job} ]\n",
        log = log.display(),
        gate = gate.display()
    )
}

fn lines(path: &Path) -> Vec<String> {
    read(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// slurmd answers LaunchBatch once the request is verified, before its
/// Prolog runs: a Prolog that takes long neither delays the answer nor
/// makes the job look missing (it is launching until the script starts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_launch_is_answered_before_a_slow_prolog() {
    let mut c = Cluster::start_with(1, |root| {
        write_script(
            &root.join("prolog.sh"),
            &gated_script(&root.join("prolog.log"), &root.join("go"), 21, 0),
        );
        format!("Prolog={}/prolog.sh\n", root.display())
    })
    .await;
    let _slurmd = c.start_slurmd();
    next(&mut c.registers, "RegisterNode").await;
    let mut node = c.node_client().await;
    let (uid, gid) = own_ids();
    let log = c.root.join("prolog.log");
    let (out, script) = order_script(&c);

    let asked = Instant::now();
    node.launch_batch(c.signed(c.launch(21, &script, uid, gid)))
        .await
        .expect("launch accepted");
    let answered = asked.elapsed();
    // The Prolog runs, and waits for the gate, after the answer.
    wait_for("the prolog to start", || {
        (lines(&log) == ["prolog_slurmd 21 n1"]).then_some(())
    });
    assert!(answered < Duration::from_secs(20), "{answered:?}");
    assert!(
        !c.job_dir(21).exists(),
        "no slurmstepd before the prolog ends"
    );
    let ping = node
        .ping_node(c.signed(PingNodeRequest {}))
        .await
        .expect("ping")
        .into_inner();
    assert_eq!(ping.launching_job_ids, vec![21]);
    // A repeat of the launch is answered and ignored.
    node.launch_batch(c.signed(c.launch(21, &script, uid, gid)))
        .await
        .expect("repeat accepted");
    // Another job's launch is not held up by it either.
    node.launch_batch(c.signed(c.launch(22, &script, uid, gid)))
        .await
        .expect("launch accepted");
    let done = next(&mut c.completes, "JobComplete of job 22").await;
    assert_eq!((done.job_id, done.launch_error), (22, 0));
    assert!(lines(&log).contains(&"prolog_slurmd 22 n1".to_string()));

    std::fs::write(c.root.join("go"), "").expect("open the gate");
    let done = next(&mut c.completes, "JobComplete of job 21").await;
    assert_eq!((done.job_id, done.launch_error), (21, 0));
    assert_eq!(
        read(&out).unwrap_or_default().lines().collect::<Vec<_>>(),
        ["job 22", "job 21"]
    );
    // One Prolog per job, and no report of a success without Alloc.
    assert_eq!(lines(&log).len(), 2, "{:?}", lines(&log));
    assert!(c.prologs.try_recv().is_err());
}

/// PrologFlags=Alloc: LaunchProlog (relayed to every node of the job)
/// runs the Prolog on each node and each reports it, success or failure;
/// the batch launch on a node whose Prolog ran does not run it again, and
/// one whose Prolog is still running waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prolog_flags_alloc_runs_the_prolog_once_on_every_node() {
    use slurm_proto::v1::{
        node_message, node_reply, ForwardRequest, LaunchPrologRequest, NodeMessage,
    };
    let mut c = Cluster::start_with(2, |root| {
        write_script(
            &root.join("prolog.sh"),
            &gated_script(&root.join("prolog.log"), &root.join("go"), 32, 33),
        );
        format!(
            "Prolog={r}/prolog.sh\nPrologFlags=Alloc\n",
            r = root.display()
        )
    })
    .await;
    let _n1 = c.start_slurmd_as("n1");
    let _n2 = c.start_slurmd_as("n2");
    for _ in 0..2 {
        next(&mut c.registers, "RegisterNode").await;
    }
    let mut node = c.node_client().await;
    let (uid, gid) = own_ids();
    let log = c.root.join("prolog.log");
    let (out, script) = order_script(&c);
    let prolog_to_all = |job_id: u32| ForwardRequest {
        message: Some(NodeMessage {
            body: Some(node_message::Body::LaunchProlog(LaunchPrologRequest {
                job_id,
                user_id: uid,
                group_id: gid,
                nodes: "n[1-2]".into(),
                partition: "debug".into(),
                ..Default::default()
            })),
        }),
        nodes: "n2".into(),
        tree_width: 2,
        timeout_ms: 5000,
    };

    // Job 31: both nodes run the Prolog and report success; the launch on
    // n1 then starts the script without a second Prolog.
    let reply = node
        .forward(c.signed(prolog_to_all(31)))
        .await
        .expect("forward")
        .into_inner();
    assert_eq!(reply.results.len(), 2);
    for r in &reply.results {
        assert_eq!(r.error_code, 0, "{r:?}");
        assert!(
            matches!(
                r.reply.as_ref().and_then(|x| x.body.as_ref()),
                Some(node_reply::Body::LaunchProlog(_))
            ),
            "{r:?}"
        );
    }
    for _ in 0..2 {
        let r = next(&mut c.prologs, "PrologComplete of job 31").await;
        assert_eq!((r.job_id, r.error_code), (31, 0), "{r:?}");
    }
    node.launch_batch(c.signed(c.launch(31, &script, uid, gid)))
        .await
        .expect("launch accepted");
    let done = next(&mut c.completes, "JobComplete of job 31").await;
    assert_eq!((done.job_id, done.launch_error), (31, 0));
    let mut ran = lines(&log);
    ran.sort();
    assert_eq!(ran, ["prolog_slurmd 31 n1", "prolog_slurmd 31 n2"]);

    // Job 32: the Prolog waits for the gate; the batch launch waits for it.
    node.forward(c.signed(prolog_to_all(32)))
        .await
        .expect("forward");
    node.launch_batch(c.signed(c.launch(32, &script, uid, gid)))
        .await
        .expect("launch accepted while the prolog runs");
    wait_for("both prologs of job 32", || {
        (lines(&log).len() == 4).then_some(())
    });
    assert!(!c.job_dir(32).exists(), "the script waits for the prolog");
    std::fs::write(c.root.join("go"), "").expect("open the gate");
    let done = next(&mut c.completes, "JobComplete of job 32").await;
    assert_eq!((done.job_id, done.launch_error), (32, 0));
    for _ in 0..2 {
        let r = next(&mut c.prologs, "PrologComplete of job 32").await;
        assert_eq!((r.job_id, r.error_code), (32, 0), "{r:?}");
    }
    assert_eq!(lines(&log).len(), 4, "{:?}", lines(&log));

    // Job 33: the Prolog fails on both nodes, each reports it; the batch
    // launch on n1 does not start the script.
    node.forward(c.signed(prolog_to_all(33)))
        .await
        .expect("forward");
    let mut failed = Vec::new();
    for _ in 0..2 {
        let r = next(&mut c.prologs, "PrologComplete of job 33").await;
        failed.push((r.job_id, r.node_name, r.error_code));
    }
    failed.sort();
    let code = slurm_proto::ErrorCode::PrologFailed.number();
    assert_eq!(
        failed,
        vec![(33, "n1".to_string(), code), (33, "n2".to_string(), code)]
    );
    node.launch_batch(c.signed(c.launch(33, &script, uid, gid)))
        .await
        .expect("launch accepted");
    // Its end arrives; the Epilog-less node answers at once.
    node.terminate_job(c.signed(NodeTerminateJobRequest {
        job_id: 33,
        reason: JobState::Pending as i32,
        ..Default::default()
    }))
    .await
    .expect("terminate");
    let epi = next_for(&mut c.epilogs, 33, |m| m.job_id, "EpilogComplete of job 33").await;
    assert_eq!(epi.error_code, 0);
    assert!(c.completes.try_recv().is_err(), "job 33 never ran");
    assert!(!c.job_dir(33).exists());
    assert_eq!(
        read(&out).unwrap_or_default().lines().collect::<Vec<_>>(),
        ["job 31", "job 32"]
    );
    // Each node reported each Prolog once: the failed one is not reported
    // again for the launch.
    assert!(c.prologs.try_recv().is_err());
    assert_eq!(lines(&log).len(), 6, "{:?}", lines(&log));
}
