//! Primary and backup slurmctld on one host (127.0.0.1 and 127.0.0.2, told
//! apart by `SLURMCTLD_HOSTNAME`), sharing StateSaveLocation, with
//! SlurmctldTimeout=5: the real binary, real clients, kill -9. A fake
//! slurmd answers PingNode for node n1 when the test says so: the
//! witness a controller must reach before it asks for control back. No
//! sleeps: every wait polls with a deadline.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_proto::v1;
use slurm_proto::ErrorCode;
use slurm_testkit::bench_ha::{first_ack_sent_after, held_job, HaPair};
use slurm_testkit::{wait_until, ClusterSpec};

const TIMEOUT_S: u32 = 5;
const WAIT: Duration = Duration::from_secs(60);
/// How often a standby pings the controller in charge
/// (`slurmctld::ha::shell::probe_interval`).
const PROBE: Duration = Duration::from_millis(250);

fn pair() -> HaPair {
    HaPair::create(
        std::path::Path::new(env!("CARGO_BIN_EXE_slurmctld")),
        ClusterSpec {
            nodes: 1,
            ..ClusterSpec::default()
        },
        TIMEOUT_S,
        2,
    )
    .unwrap()
}

/// A slurmd for node n1 that answers PingNode while `up`, and otherwise
/// never answers (as a host that cannot be reached).
#[derive(Debug, Clone)]
struct Witness {
    up: Arc<AtomicBool>,
}

impl Witness {
    fn start(pair: &HaPair) -> Witness {
        let w = Witness {
            up: Arc::new(AtomicBool::new(true)),
        };
        let port = pair.dir.slurmd_ports[0];
        let server = w.clone();
        let listener = pair
            .rt
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", port)))
            .unwrap();
        pair.rt.spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(slurm_proto::SlurmNodeServer::new(server))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await;
        });
        w
    }

    fn set(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
    }
}

#[tonic::async_trait]
impl slurm_proto::SlurmNode for Witness {
    async fn launch_batch(
        &self,
        _r: tonic::Request<v1::LaunchBatchRequest>,
    ) -> Result<tonic::Response<v1::LaunchBatchReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("witness only"))
    }
    async fn signal_job(
        &self,
        _r: tonic::Request<v1::NodeSignalJobRequest>,
    ) -> Result<tonic::Response<v1::NodeSignalJobReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("witness only"))
    }
    async fn terminate_job(
        &self,
        _r: tonic::Request<v1::NodeTerminateJobRequest>,
    ) -> Result<tonic::Response<v1::NodeTerminateJobReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("witness only"))
    }
    async fn ping_node(
        &self,
        _r: tonic::Request<v1::PingNodeRequest>,
    ) -> Result<tonic::Response<v1::PingNodeReply>, tonic::Status> {
        if !self.up.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(tonic::Response::new(v1::PingNodeReply {
            node_name: "n1".into(),
            ..Default::default()
        }))
    }
    async fn reconfigure(
        &self,
        _r: tonic::Request<v1::ReconfigureNodeRequest>,
    ) -> Result<tonic::Response<v1::ReconfigureNodeReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("witness only"))
    }
    async fn forward(
        &self,
        _r: tonic::Request<v1::ForwardRequest>,
    ) -> Result<tonic::Response<v1::ForwardReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("witness only"))
    }
}

fn missing(pair: &HaPair, acked: &[u32]) -> Vec<u32> {
    let known = pair.job_ids().unwrap();
    acked
        .iter()
        .copied()
        .filter(|id| !known.contains(id))
        .collect()
}

/// A call that only the controller in charge may answer, sent to
/// controller `i` alone.
fn direct_submit(pair: &HaPair, i: usize) -> Result<u32, ErrorCode> {
    let c = pair.client().unwrap();
    let addr = c.controllers()[i].clone();
    let job = held_job(pair.dir.root());
    pair.rt
        .block_on(c.call_one(&addr, |mut cl| async move {
            cl.submit_job(v1::SubmitJobRequest { job: Some(job) }).await
        }))
        .map(|r| r.job_id)
        .map_err(|e| e.code)
}

#[test]
fn failover_under_load_failback_and_takeover() {
    let mut pair = pair();
    let witness = Witness::start(&pair);
    pair.start(0).unwrap();
    pair.start(1).unwrap();
    pair.wait_in_control(0, WAIT).unwrap();

    // The backup listens, answers Ping as a standby backup and refuses the
    // rest, and has not touched the state.
    let ping = pair.ping(1).unwrap();
    assert_eq!(ping.role, v1::ControllerRole::Backup as i32);
    assert_eq!(ping.index, 1);
    assert!(!ping.in_control);
    assert_eq!(direct_submit(&pair, 1), Err(ErrorCode::InStandbyMode));
    assert!(!pair.log(1).contains("state recovered"), "{}", pair.log(1));
    let first_epoch = pair.ping(0).unwrap().epoch;
    assert!(first_epoch >= 1);

    // kill -9 the primary while clients submit.
    let load = pair.start_load(4);
    wait_until("submissions before the kill", WAIT, || {
        (load.acked().len() >= 100).then_some(())
    })
    .unwrap();
    let killed_at = Instant::now();
    pair.kill(0).unwrap();
    // Only a submission sent after the kill is surely answered by the
    // backup.
    let first_after = wait_until("the backup to accept a submission", WAIT, || {
        first_ack_sent_after(&load.acked(), killed_at)
    })
    .unwrap_or_else(|e| panic!("{e}\nbackup log:\n{}", pair.log(1)));
    let takeover = first_after - killed_at;
    println!(
        "takeover: {:.3} s from kill -9 to the first submission the backup accepted (SlurmctldTimeout={TIMEOUT_S})",
        takeover.as_secs_f64()
    );
    // Silence is counted from the last answer the backup saw, which is up
    // to a probe period before the kill.
    let earliest = Duration::from_secs(u64::from(TIMEOUT_S)) - PROBE - Duration::from_millis(300);
    assert!(
        takeover >= earliest,
        "the backup took over before SlurmctldTimeout: {takeover:?}"
    );
    wait_until("submissions after the kill", WAIT, || {
        (load.acked().iter().filter(|a| a.sent > killed_at).count() >= 100).then_some(())
    })
    .unwrap();
    let (acked, failed) = load.stop(&pair.rt);
    println!(
        "{} submissions acknowledged, {} calls failed during the takeover",
        acked.len(),
        failed
    );
    let acked: Vec<u32> = acked.iter().map(|a| a.job_id).collect();
    assert_eq!(pair.in_control(), vec![1]);
    let backup_epoch = pair.ping(1).unwrap().epoch;
    assert!(backup_epoch > first_epoch);
    assert_eq!(
        missing(&pair, &acked),
        Vec::<u32>::new(),
        "acknowledged jobs lost at takeover"
    );

    // The primary returns while no slurmd answers it: it reaches the
    // backup, but does not ask for control back.
    witness.set(false);
    pair.start(0).unwrap();
    wait_until("the primary to wait for a witness", WAIT, || {
        pair.log(0).contains("no slurmd does").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\nprimary log:\n{}", pair.log(0)));
    assert_eq!(pair.in_control(), vec![1]);
    // With a slurmd in reach it takes control back; the backup stands
    // down.
    let reachable = Instant::now();
    witness.set(true);
    pair.wait_in_control(0, WAIT).unwrap();
    println!(
        "failback: {:.3} s from a witness answering to the primary being in control",
        reachable.elapsed().as_secs_f64()
    );
    let primary_epoch = pair.ping(0).unwrap().epoch;
    assert!(primary_epoch > backup_epoch);
    for _ in 0..5 {
        assert_eq!(
            pair.in_control(),
            vec![0],
            "exactly one controller in charge"
        );
    }
    assert_eq!(direct_submit(&pair, 1), Err(ErrorCode::InStandbyMode));
    let id = direct_submit(&pair, 0).unwrap();
    assert_eq!(
        missing(&pair, &acked),
        Vec::<u32>::new(),
        "acknowledged jobs lost at failback"
    );

    // scontrol takeover: the backup takes control at once.
    let asked = Instant::now();
    pair.takeover(1).unwrap();
    pair.wait_in_control(1, WAIT).unwrap();
    println!(
        "takeover on request: {:.3} s",
        asked.elapsed().as_secs_f64()
    );
    assert!(asked.elapsed() < Duration::from_secs(u64::from(TIMEOUT_S)));
    assert!(pair.ping(1).unwrap().epoch > primary_epoch);
    // The primary is still up, in standby.
    let p = pair.ping(0).unwrap();
    assert!(!p.in_control);
    assert_eq!(direct_submit(&pair, 0), Err(ErrorCode::InStandbyMode));
    let mut all = acked;
    all.push(id);
    all.push(pair.submit().unwrap());
    assert_eq!(missing(&pair, &all), Vec::<u32>::new());

    // scontrol shutdown stops both controllers, not only the one in charge.
    pair.shutdown(1).unwrap();
    for i in [1, 0] {
        assert!(
            pair.wait_exit(i, WAIT).unwrap().success(),
            "{}",
            pair.log(i)
        );
    }
}

#[test]
fn a_primary_that_cannot_renew_its_heartbeat_steps_down() {
    let mut pair = pair();
    pair.start(0).unwrap();
    pair.wait_in_control(0, WAIT).unwrap();
    let mut acked = vec![pair.submit().unwrap()];
    let first_epoch = pair.ping(0).unwrap().epoch;

    // A directory where the heartbeat goes: every rewrite (a rename over
    // it) fails, while the epoch still reads as this controller's.
    let hb = pair.dir.state_dir().join("heartbeat");
    std::fs::remove_file(&hb).unwrap();
    std::fs::create_dir(&hb).unwrap();
    std::fs::write(hb.join("blocker"), "").unwrap();
    let blocked = Instant::now();
    let stepped = wait_until("the primary to step down", WAIT, || {
        pair.ping(0)
            .filter(|p| !p.in_control)
            .map(|_| blocked.elapsed())
    })
    .unwrap();
    println!(
        "stepped down {:.3} s after the heartbeat could no longer be written",
        stepped.as_secs_f64()
    );
    // Half of SlurmctldTimeout after the last beat (up to a beat period
    // before the block), and well before a backup could take over.
    let half = Duration::from_secs(u64::from(TIMEOUT_S)) / 2;
    assert!(stepped >= half - Duration::from_millis(200), "{stepped:?}");
    assert!(
        stepped < Duration::from_secs(u64::from(TIMEOUT_S)),
        "{stepped:?}"
    );
    assert_eq!(direct_submit(&pair, 0), Err(ErrorCode::InStandbyMode));
    assert!(pair.log(0).contains("giving up control"), "{}", pair.log(0));

    // Once the heartbeat can be written again it takes control back (no
    // backup runs), with a new epoch and every acknowledged job.
    std::fs::remove_dir_all(&hb).unwrap();
    pair.wait_in_control(0, WAIT).unwrap();
    assert!(pair.ping(0).unwrap().epoch > first_epoch);
    acked.push(pair.submit().unwrap());
    assert_eq!(missing(&pair, &acked), Vec::<u32>::new());
    pair.stop(0).unwrap();
}

#[test]
fn a_backup_alone_takes_control_after_slurmctld_timeout() {
    let mut pair = pair();
    let began = Instant::now();
    pair.start(1).unwrap();
    assert!(!pair.ping(1).unwrap().in_control);
    pair.wait_in_control(1, WAIT).unwrap();
    assert!(began.elapsed() >= Duration::from_secs(u64::from(TIMEOUT_S) - 1));
    let id = pair.submit().unwrap();
    assert!(pair.job_ids().unwrap().contains(&id));
    pair.stop(1).unwrap();
}

#[test]
fn a_controller_whose_epoch_is_taken_acknowledges_nothing() {
    let mut pair = pair();
    pair.start(0).unwrap();
    pair.wait_in_control(0, WAIT).unwrap();
    let mut acked = vec![pair.submit().unwrap(), pair.submit().unwrap()];

    // Another controller (never started) claims the next epoch.
    let state = pair.dir.state_dir();
    let epoch = std::fs::read_to_string(state.join("epoch")).unwrap();
    let n: u64 = epoch
        .split_whitespace()
        .find_map(|w| w.strip_prefix("epoch="))
        .unwrap()
        .parse()
        .unwrap();
    std::fs::write(
        state.join("epoch"),
        format!("epoch={} owner=1 host=ha-b\n", n + 1),
    )
    .unwrap();
    // The next change is refused (it may be durable, but nobody is told it
    // happened), and the controller drops to standby.
    assert_eq!(direct_submit(&pair, 0), Err(ErrorCode::InStandbyMode));
    wait_until("the deposed primary to drop to standby", WAIT, || {
        pair.ping(0).filter(|p| !p.in_control).map(|_| ())
    })
    .unwrap();
    // The claimed owner never beats: after SlurmctldTimeout of silence the
    // primary takes control again, with a newer epoch and every
    // acknowledged job.
    pair.wait_in_control(0, WAIT).unwrap();
    assert!(pair.ping(0).unwrap().epoch > n + 1);
    acked.push(pair.submit().unwrap());
    assert_eq!(missing(&pair, &acked), Vec::<u32>::new());
    pair.stop(0).unwrap();
}

/// The figures of `slurm_testkit::bench_ha::measure` (ignored: slow, and
/// meant for a release build).
#[test]
#[ignore]
fn ha_figures() {
    let sizes = slurm_testkit::bench_ha::HaSizes {
        throughput_jobs: 1_000,
        before_kill: 100,
        after_kill: 100,
        ..Default::default()
    };
    let f = slurm_testkit::bench_ha::measure(
        std::path::Path::new(env!("CARGO_BIN_EXE_slurmctld")),
        &sizes,
    )
    .unwrap();
    println!("{f:#?}");
    assert_eq!(f.lost, 0);
}
