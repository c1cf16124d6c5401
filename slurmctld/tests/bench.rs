//! Figures for the controller alone (ignored: run in a release build):
//!
//! ```text
//! cargo test --release -p slurmctld --test bench -- --ignored --nocapture
//! ```
//!
//! Starts the real slurmctld binary on loopback, submits held jobs over gRPC
//! with many requests in flight, and prints the submission rate, the
//! controller's VmRSS and the time a SIGKILLed controller takes to answer
//! again. `BENCH_JOBS` and `BENCH_IN_FLIGHT` change the sizes.

#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_common::auth::{unix_now, Authenticator, Claims, SlurmKeyAuth};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1;
use slurm_proto::SlurmControllerClient;
use slurm_testkit::{wait_until, ChildGuard, ClusterDir, ClusterSpec};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn vm_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// User + system CPU seconds of `pid` so far.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which ends with the last ')').
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // SAFETY: no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / hz
}

fn credential(auth: &SlurmKeyAuth) -> String {
    // SAFETY: no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let claims = Claims::new(Uid::new(uid), Gid::new(gid), "localhost", unix_now(), 3600);
    auth.create(&claims).unwrap()
}

fn start(
    dir: &ClusterDir,
    rt: &tokio::runtime::Runtime,
    endpoint: &str,
    token: &str,
) -> (ChildGuard, Duration) {
    let log = dir.root().join("log").join("slurmctld.log");
    let began = Instant::now();
    let mut child = ChildGuard::spawn(
        "slurmctld",
        Command::new(env!("CARGO_BIN_EXE_slurmctld"))
            .arg("-D")
            .arg("-f")
            .arg(dir.conf_path())
            .arg("-L")
            .arg(&log),
    )
    .unwrap();
    wait_until("slurmctld to answer ping", Duration::from_secs(60), || {
        if let Ok(Some(status)) = child.try_status() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("slurmctld exited early with {status}: {text}");
        }
        rt.block_on(async {
            let mut c = SlurmControllerClient::connect(endpoint.to_string())
                .await
                .ok()?;
            let mut r = tonic::Request::new(v1::PingRequest {});
            slurm_proto::set_auth_credential(r.metadata_mut(), token).ok()?;
            c.ping(r).await.ok()
        })
        .map(|_| ())
    })
    .unwrap();
    (child, began.elapsed())
}

#[test]
#[ignore = "benchmark: run with --release --ignored --nocapture"]
fn held_jobs_rss_submit_rate_restart() {
    let jobs = env_usize("BENCH_JOBS", 10_000);
    let in_flight = env_usize("BENCH_IN_FLIGHT", 256);
    let dir = ClusterDir::create(ClusterSpec::default()).unwrap();
    let auth = SlurmKeyAuth::load(&dir.key_path()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let endpoint = format!("http://127.0.0.1:{}", dir.slurmctld_port);
    let token = credential(&auth);
    let (mut ctld, _) = start(&dir, &rt, &endpoint, &token);
    let pid = ctld.pid().unwrap();
    let idle_kb = vm_rss_kb(pid);

    // SAFETY: no preconditions.
    let uid = unsafe { libc::getuid() };
    let job = v1::JobDescription {
        user_id: uid,
        user_name: "bench".into(),
        script: format!("#!/bin/sh\n# {}\ntrue\n", "x".repeat(200)),
        environment: (0..40)
            .map(|i| format!("VAR_{i}=value_{i}_{}", "y".repeat(40)))
            .collect(),
        name: "bench".into(),
        work_dir: "/tmp".into(),
        hold: true,
        ..Default::default()
    };
    let cpu_before = cpu_secs(pid);
    let elapsed = rt.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(endpoint.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let next = Arc::new(AtomicUsize::new(0));
        let began = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..in_flight {
            let mut client = SlurmControllerClient::new(channel.clone());
            let (next, job, token) = (next.clone(), job.clone(), token.clone());
            set.spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < jobs {
                    let mut r = tonic::Request::new(v1::SubmitJobRequest {
                        job: Some(job.clone()),
                    });
                    slurm_proto::set_auth_credential(r.metadata_mut(), &token).unwrap();
                    client.submit_job(r).await.unwrap();
                }
            });
        }
        while let Some(r) = set.join_next().await {
            r.unwrap();
        }
        began.elapsed()
    });
    let rss_kb = vm_rss_kb(pid);
    let cpu = cpu_secs(pid) - cpu_before;
    // Steady state: the controller hands freed request buffers back after
    // a moment of idleness. (A measurement interval, not a wait for an
    // outcome.)
    std::thread::sleep(Duration::from_millis(600));
    let settled_kb = vm_rss_kb(pid);
    println!(
        "submit: {jobs} jobs, {in_flight} in flight: {:.0} jobs/s ({:.2} s); slurmctld used {:.2} CPU s ({:.0} us/job)",
        jobs as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        cpu,
        cpu * 1e6 / jobs as f64
    );
    println!(
        "VmRSS: idle {:.1} MB, with {jobs} held jobs {:.1} MB right after, {:.1} MB settled",
        idle_kb as f64 / 1024.0,
        rss_kb as f64 / 1024.0,
        settled_kb as f64 / 1024.0
    );

    ctld.kill().unwrap();
    let (mut ctld, up) = start(&dir, &rt, &endpoint, &token);
    let pid = ctld.pid().unwrap();
    let up_kb = vm_rss_kb(pid);
    std::thread::sleep(Duration::from_millis(600));
    println!(
        "restart with {jobs} jobs: answered ping after {:.3} s, VmRSS {:.1} MB, {:.1} MB settled",
        up.as_secs_f64(),
        up_kb as f64 / 1024.0,
        vm_rss_kb(pid) as f64 / 1024.0
    );
    let log = std::fs::read_to_string(dir.root().join("log").join("slurmctld.log")).unwrap();
    if let Some(line) = log.lines().rev().find(|l| l.contains("state recovered")) {
        println!("{line}");
    }
    ctld.terminate(Duration::from_secs(10)).unwrap();
}
