//! Figures for the controller alone (ignored: run in a release build):
//!
//! ```text
//! cargo test --release -p slurmctld --test bench -- --ignored --nocapture
//! ```
//!
//! `held_jobs_rss_submit_rate_restart` starts the real slurmctld binary on
//! loopback, submits held jobs over gRPC with many requests in flight, and
//! prints the submission rate, the controller's VmRSS and the time a
//! SIGKILLed controller takes to answer again. `BENCH_JOBS` and
//! `BENCH_IN_FLIGHT` change the sizes.
//!
//! `recovery_100k_jobs` builds a state of `BENCH_RECOVERY_JOBS` (100,000)
//! jobs through the library (pending, held, running, completed, failed and
//! cancelled), snapshots it, and prints how long recovery takes in process
//! and how long the real binary takes from start to answering Ping, with
//! the snapshot alone and with a journal tail of `BENCH_RECOVERY_TAIL`
//! (50,000, the default snapshot interval) events after it. Target: 1 s
//! for 100,000 jobs in a release build.

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

/// Submits through the library, as the owner task does (handle, schedule,
/// commit), in batches.
struct Builder {
    ctl: slurmctld::core::Controller,
    store: slurmctld::persist::StateStore,
    now: i64,
    events: usize,
}

impl Builder {
    fn batch(&mut self, cmds: Vec<slurmctld::core::Command>) -> Vec<slurmctld::core::Reply> {
        let mut events = Vec::new();
        let mut files = Vec::new();
        let mut replies = Vec::new();
        for cmd in cmds {
            let out = self.ctl.handle(cmd, self.now);
            events.extend(out.events);
            files.extend(out.job_files);
            replies.push(out.reply);
        }
        events.extend(self.ctl.schedule(self.now).events);
        self.store.commit(&files, &events).unwrap();
        self.events += events.len();
        replies
    }
}

fn submitted_ids(replies: &[slurmctld::core::Reply]) -> Vec<u32> {
    replies
        .iter()
        .filter_map(|r| match r {
            slurmctld::core::Reply::Submitted { job_id, .. } => Some(*job_id),
            _ => None,
        })
        .collect()
}

fn recovery_line(log: &std::path::Path) -> String {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| l.contains("state recovered"))
        .unwrap_or("")
        .to_string()
}

#[test]
#[ignore = "benchmark: run with --release --ignored --nocapture"]
fn recovery_100k_jobs() {
    use slurmctld::core::{Caller, Command, CtlConfig};
    use slurmctld::persist::{RecoverOptions, SnapshotPolicy, StateStore};

    let jobs = env_usize("BENCH_RECOVERY_JOBS", 100_000);
    let tail = env_usize("BENCH_RECOVERY_TAIL", 50_000);
    // Room for a tenth of the jobs running at once, and for the jobs of a
    // batch that are to complete.
    let per_batch = 2_000;
    let nodes = (jobs / 10 + per_batch / 5) / 64 + 1;
    let dir = ClusterDir::create(ClusterSpec {
        nodes,
        cpus_per_node: 64,
        real_memory_mb: 256_000,
        ..ClusterSpec::default()
    })
    .unwrap();
    let conf = slurm_common::conf::SlurmConf::parse(
        &std::fs::read_to_string(dir.conf_path()).unwrap(),
        "slurm.conf",
    )
    .unwrap()
    .conf;
    // SAFETY: no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let cfg = || CtlConfig::from_conf(&conf, vec![uid]);
    let opts = RecoverOptions {
        ignore_damage: false,
        policy: SnapshotPolicy {
            every_events: u64::MAX,
            journal_bytes: u64::MAX,
        },
    };
    let state = dir.state_dir();
    let r = StateStore::recover(&state, &conf, cfg(), &opts).unwrap();
    let mut b = Builder {
        ctl: r.controller,
        store: r.store,
        now: unix_now(),
        events: 0,
    };
    let caller = Caller { uid, gid };
    let registrations = (1..=nodes)
        .map(|i| Command::RegisterNode {
            caller: Caller::ROOT,
            request: Box::new(v1::RegisterNodeRequest {
                node_name: format!("n{i}"),
                ..Default::default()
            }),
        })
        .collect();
    b.batch(registrations);
    let desc = |kind: usize| v1::JobDescription {
        user_id: uid,
        group_id: gid,
        user_name: "bench".into(),
        script: format!("#!/bin/sh\n# {}\nsleep 1000\n", "x".repeat(100)),
        environment: (0..20).map(|i| format!("VAR_{i}=value_{i}")).collect(),
        name: format!("bench{kind}"),
        work_dir: "/tmp".into(),
        stdout_path: "/tmp/slurm-%j.out".into(),
        hold: matches!(kind, 4 | 5 | 8),
        begin_time: if kind < 4 { unix_now() + 86_400 } else { 0 },
        ..Default::default()
    };
    let built = Instant::now();
    // Kinds by id modulo 10: 0-3 pending (--begin tomorrow), 4-5 held,
    // 6 running, 7 completed, 8 cancelled, 9 failed.
    let mut made = 0;
    while made < jobs {
        let n = per_batch.min(jobs - made);
        let kinds: Vec<usize> = (made..made + n).map(|i| i % 10).collect();
        let cmds = kinds
            .iter()
            .map(|&k| Command::Submit {
                caller,
                desc: Box::new(desc(k)),
            })
            .collect();
        let ids = submitted_ids(&b.batch(cmds));
        assert_eq!(ids.len(), n);
        let mut ends = Vec::new();
        for (id, k) in ids.iter().zip(&kinds) {
            match k {
                7 | 9 => ends.push(Command::JobComplete {
                    caller: Caller::ROOT,
                    request: v1::JobCompleteRequest {
                        job_id: *id,
                        exit_code: Some(v1::ExitCode {
                            status: u32::from(*k == 9),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                }),
                8 => ends.push(Command::Cancel {
                    caller,
                    filter: v1::JobFilter {
                        job_ids: vec![*id],
                        ..Default::default()
                    },
                    signal: None,
                }),
                _ => {}
            }
        }
        b.batch(ends);
        made += n;
    }
    let mut counts = std::collections::BTreeMap::new();
    for j in b.ctl.jobs() {
        *counts.entry(format!("{:?}", j.state())).or_insert(0usize) += 1;
    }
    println!(
        "built {jobs} jobs ({} events) in {:.2} s: {counts:?}",
        b.events,
        built.elapsed().as_secs_f64()
    );
    let written = b.store.snapshot_now(&b.ctl).unwrap();
    println!(
        "snapshot: {:.1} MB written in {:.3} s",
        written.bytes as f64 / 1e6,
        written.elapsed.as_secs_f64()
    );
    let ctl_before = b.ctl.clone();
    drop(b);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let auth = SlurmKeyAuth::load(&dir.key_path()).unwrap();
    let endpoint = format!("http://127.0.0.1:{}", dir.slurmctld_port);
    let token = credential(&auth);
    let log = dir.root().join("log").join("slurmctld.log");

    // Snapshot only.
    let started = Instant::now();
    let r = StateStore::recover(&state, &conf, cfg(), &opts).unwrap();
    let in_process = started.elapsed();
    assert_eq!(r.controller.jobs().count(), ctl_before.jobs().count());
    assert_eq!(r.report.events, 0);
    drop(r);
    let (mut ctld, up) = start(&dir, &rt, &endpoint, &token);
    println!(
        "recovery from the snapshot alone: in process {:.3} s; slurmctld start to ping answered {:.3} s",
        in_process.as_secs_f64(),
        up.as_secs_f64()
    );
    println!("  {}", recovery_line(&log));
    ctld.kill().unwrap();

    // Snapshot and a journal tail of `tail` events (held submissions).
    let r = StateStore::recover(&state, &conf, cfg(), &opts).unwrap();
    let mut b = Builder {
        ctl: r.controller,
        store: r.store,
        now: unix_now(),
        events: 0,
    };
    while b.events < tail {
        let n = 2_000.min(tail - b.events);
        let cmds = (0..n)
            .map(|_| Command::Submit {
                caller,
                desc: Box::new(desc(4)),
            })
            .collect();
        b.batch(cmds);
    }
    let total = b.ctl.jobs().count();
    drop(b);
    let started = Instant::now();
    let r = StateStore::recover(&state, &conf, cfg(), &opts).unwrap();
    let in_process = started.elapsed();
    assert_eq!(r.controller.jobs().count(), total);
    assert_eq!(r.report.events, tail);
    drop(r);
    let (mut ctld, up) = start(&dir, &rt, &endpoint, &token);
    println!(
        "recovery from the snapshot and a tail of {tail} events ({total} jobs): in process {:.3} s; slurmctld start to ping answered {:.3} s",
        in_process.as_secs_f64(),
        up.as_secs_f64()
    );
    println!("  {}", recovery_line(&log));
    ctld.terminate(Duration::from_secs(60)).unwrap();
    println!("  {}", {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .rev()
            .find(|l| l.contains("snapshot written"))
            .unwrap_or("(no snapshot at shutdown)")
            .to_string()
    });
}
