//! Issue "failover": a primary and a backup slurmctld on hosts of their own
//! (ctl1, ctl2: each finds its role from its host name), sharing one
//! StateSaveLocation, with two slurmd hosts and a login host where the
//! commands run. What users see is checked: sbatch keeps working, no
//! acknowledged job is lost or run twice, running jobs finish and are
//! recorded, and `scontrol ping` says who is up. Where the network is cut,
//! the window in which both controllers answer Ping as in control is
//! measured (each asked from a host that reaches it) and bounded.
//!
//! Needs root and iproute2; set SLURM_TEST_SKIP_NETNS=1 to skip (the tests
//! then print "skipped" and pass). Needs the workspace binaries
//! (`cargo build --workspace --bins`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use slurm_client_tools::client::{block_on, ClientConfig, Controller};
use slurm_proto::v1::{PingReply, PingRequest};
use slurm_testkit::local_cluster::job_states;
use slurm_testkit::netns::{self, NetCluster, NetClusterSpec, Preflight, LOGIN_HOST};

const SLURMCTLD_TIMEOUT: u32 = 5;
/// The takeover bound of the issue: SlurmctldTimeout plus two seconds.
const TAKEOVER_LIMIT: Duration = Duration::from_secs(7);
const WAIT: Duration = Duration::from_secs(60);
/// The longest both controllers may answer Ping as in control. The taker
/// waits two fence periods (2 x SlurmctldTimeout/50) after writing the
/// epoch, so none is expected; the bound leaves room for a loaded host.
const BOTH_IN_CONTROL_LIMIT: Duration = Duration::from_millis(500);
/// How long one Ping of the hand-over measurement may take.
const SAMPLE_TIMEOUT: Duration = Duration::from_millis(500);

fn run_here(test: &str) -> bool {
    match netns::preflight() {
        Ok(Preflight::Run) => true,
        Ok(Preflight::Skip(why)) => {
            println!("{test}: skipped ({why})");
            false
        }
        Err(e) => panic!("{test}: {e:#}"),
    }
}

fn ha_cluster(test: &str, prefix: &str, message_timeout: Option<u32>) -> Option<NetCluster> {
    if !run_here(test) {
        return None;
    }
    let c = NetCluster::start(
        prefix,
        NetClusterSpec {
            controllers: vec!["ctl1".to_string(), "ctl2".to_string()],
            nodes: 2,
            cpus_per_node: 2,
            slurmctld_timeout: Some(SLURMCTLD_TIMEOUT),
            message_timeout,
            ..NetClusterSpec::default()
        },
    )
    .unwrap_or_else(|e| panic!("{test}: cluster did not start: {e:#}"));
    // The backup is up, in standby.
    c.wait_for("the backup to answer in standby", WAIT, |c| {
        let pings = c.ping_each().ok()?;
        let backup = pings.iter().find(|(n, _)| n == "ctl2")?.1.as_ref()?;
        (!backup.in_control).then_some(())
    })
    .unwrap_or_else(|e| panic!("{test}: {e:#}"));
    Some(c)
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn scontrol_ping(c: &NetCluster) -> String {
    let o = c.run("scontrol", &["ping"]).expect("scontrol ping");
    stdout(&o)
}

/// `scontrol show job <id>` field `key` (e.g. JobState), if shown.
fn job_field(c: &NetCluster, id: u32, key: &str) -> Option<String> {
    let o = c.run("scontrol", &["show", "job", &id.to_string()]).ok()?;
    let want = format!("{key}=");
    stdout(&o)
        .split_whitespace()
        .find_map(|w| w.strip_prefix(want.as_str()).map(str::to_string))
}

fn wait_job_state(c: &NetCluster, id: u32, states: &[&str]) -> String {
    c.wait_for(&format!("job {id} to be one of {states:?}"), WAIT, |c| {
        job_field(c, id, "JobState").filter(|s| states.contains(&s.as_str()))
    })
    .unwrap_or_else(|e| panic!("{e:#}"))
}

fn write_script(c: &NetCluster, name: &str, body: &str) {
    std::fs::write(c.submit_dir().join(name), body).expect("script");
}

/// A job script that appends `<job id> <host>` to `shared/starts` when it
/// starts and `<job id>` to `shared/ends` when it is done.
fn marker_script(c: &NetCluster, name: &str, sleep_secs: u32) {
    let shared = c.shared_dir();
    let shared = shared.display();
    write_script(
        c,
        name,
        &format!(
            "#!/bin/sh\necho \"$SLURM_JOB_ID $(uname -n)\" >> {shared}/starts\nsleep {sleep_secs}\necho \"$SLURM_JOB_ID\" >> {shared}/ends\n"
        ),
    );
}

/// Job ids in a marker file, with how many times each appears.
fn marker_counts(c: &NetCluster, file: &str) -> BTreeMap<u32, usize> {
    let text = std::fs::read_to_string(c.shared_dir().join(file)).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(id) = line.split_whitespace().next().and_then(|w| w.parse().ok()) {
            *out.entry(id).or_insert(0) += 1;
        }
    }
    out
}

/// Controller `index`'s Ping answer, asked from lab host `from`; `None`
/// when it does not answer within [`SAMPLE_TIMEOUT`].
fn ping_from(c: &NetCluster, from: &str, index: usize) -> Option<PingReply> {
    let conf = c.conf_path();
    let conf = conf.as_path();
    c.host(from)
        .ok()?
        .run(move || {
            let config = ClientConfig::load_path(conf).ok()?;
            let ctl = Controller::new(&config).ok()?;
            let addr = ctl.controllers().get(index)?.clone();
            block_on(async {
                tokio::time::timeout(
                    SAMPLE_TIMEOUT,
                    ctl.call_one(&addr, |mut cl| async move { cl.ping(PingRequest {}).await }),
                )
                .await
                .ok()?
                .ok()
            })
        })
        .ok()
        .flatten()
}

/// A hand-over seen through Pings: the primary asked from its own host
/// (the only one that reaches it once cut), the backup from the login
/// host. Times are from the cut, taken when each answer came back.
#[derive(Debug, Default)]
struct Handover {
    /// First answer of the backup saying it is in control.
    backup_in_control: Option<Duration>,
    /// First answer of the primary saying it is not (or no answer).
    primary_stood_down: Option<Duration>,
    /// Last answer of the primary saying it is in control.
    primary_last_in_control: Option<Duration>,
    samples: u32,
    /// Longest time between two samples of the same controller.
    worst_gap: Duration,
}

impl Handover {
    /// How long both said they were in control, as far as the samples
    /// show.
    fn both_in_control(&self) -> Duration {
        match (self.primary_last_in_control, self.backup_in_control) {
            (Some(p), Some(b)) => p.saturating_sub(b),
            _ => Duration::ZERO,
        }
    }
}

/// Samples both controllers from `cut` until the backup is in control and
/// the primary is not.
fn watch_handover(c: &NetCluster, cut: Instant) -> Handover {
    let mut h = Handover::default();
    let mut last_sample = cut.elapsed();
    c.wait_for(
        "the backup in control and the primary stood down",
        WAIT,
        |c| {
            let primary_in = ping_from(c, "ctl1", 0).is_some_and(|p| p.in_control);
            let at = cut.elapsed();
            if primary_in {
                h.primary_last_in_control = Some(at);
            } else {
                h.primary_stood_down.get_or_insert(at);
            }
            let backup = ping_from(c, LOGIN_HOST, 1);
            let at = cut.elapsed();
            if backup.as_ref().is_some_and(|b| b.in_control) {
                h.backup_in_control.get_or_insert(at);
            }
            h.samples += 1;
            h.worst_gap = h.worst_gap.max(at.saturating_sub(last_sample));
            last_sample = at;
            let backup_in = backup.is_some_and(|b| b.in_control);
            (!primary_in && backup_in).then_some(())
        },
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    h
}

/// One sbatch run by the load generator.
#[derive(Debug, Clone)]
struct Attempt {
    start: Instant,
    end: Instant,
    id: Option<u32>,
}

#[test]
fn backup_takes_over_a_killed_primary_under_load() {
    let test = "backup_takes_over_a_killed_primary_under_load";
    let Some(c) = ha_cluster(test, "hakill", None) else {
        return;
    };
    assert_eq!(
        scontrol_ping(&c),
        "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n"
    );
    // Two jobs that run across the takeover.
    marker_script(&c, "long.sh", 8);
    let long: Vec<u32> = (0..2)
        .map(|_| {
            c.sbatch(&["-o", "/dev/null", "long.sh"])
                .unwrap_or_else(|e| panic!("sbatch: {e:#}"))
        })
        .collect();
    for &id in &long {
        wait_job_state(&c, id, &["RUNNING"]);
    }
    write_script(&c, "true.sh", "#!/bin/sh\nexit 0\n");

    let attempts: Mutex<Vec<Attempt>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let (killed_at, ping_takeover) = std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    let id = c.sbatch(&["--parsable", "-o", "/dev/null", "true.sh"]).ok();
                    let end = Instant::now();
                    attempts
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(Attempt { start, end, id });
                }
            });
        }
        let acked_since = |t: Option<Instant>| {
            attempts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .filter(|a| a.id.is_some() && t.is_none_or(|t| a.start >= t))
                .count()
        };
        let under_load = c.wait_for("submissions to flow", WAIT, |_| {
            (acked_since(None) >= 20).then_some(())
        });
        let killed_at = Instant::now();
        let outcome = under_load.and_then(|_| c.kill("ctl1")).and_then(|_| {
            let ping = c.wait_for("the backup to be in control", WAIT, |c| {
                (c.controller_in_control().ok()?.as_deref() == Some("ctl2"))
                    .then(|| killed_at.elapsed())
            })?;
            c.wait_for("submissions accepted by the backup", WAIT, |_| {
                (acked_since(Some(killed_at)) >= 10).then_some(())
            })?;
            Ok(ping)
        });
        stop.store(true, Ordering::Relaxed);
        (killed_at, outcome)
    });
    let ping_takeover = ping_takeover.unwrap_or_else(|e| panic!("{e:#}"));
    let attempts = attempts.into_inner().unwrap_or_else(|p| p.into_inner());

    // Takeover: from the kill to the end of the first sbatch that started
    // after it and was accepted.
    let takeover = attempts
        .iter()
        .filter(|a| a.id.is_some() && a.start >= killed_at)
        .map(|a| a.end.duration_since(killed_at))
        .min()
        .expect("a submission after the kill");
    let failed_after = attempts
        .iter()
        .filter(|a| a.id.is_none() && a.start >= killed_at)
        .count();
    assert!(
        takeover <= TAKEOVER_LIMIT,
        "first submission accepted {takeover:?} after the kill (limit {TAKEOVER_LIMIT:?})\n{}",
        c.logs()
    );
    assert_eq!(
        scontrol_ping(&c),
        "Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    );

    // No acknowledged job lost, and no id handed out twice.
    let acked: Vec<u32> = attempts
        .iter()
        .filter_map(|a| a.id)
        .chain(long.iter().copied())
        .collect();
    let unique: BTreeSet<u32> = acked.iter().copied().collect();
    assert_eq!(
        unique.len(),
        acked.len(),
        "a job id was acknowledged twice: {acked:?}"
    );
    let ids: Vec<u32> = unique.iter().copied().collect();
    let known: BTreeSet<u32> = c
        .probe(|conf| job_states(conf, &ids))
        .expect("probe")
        .expect("the backup answers")
        .iter()
        .map(|j| j.id)
        .collect();
    let lost: Vec<u32> = unique.difference(&known).copied().collect();
    assert!(
        lost.is_empty(),
        "acknowledged jobs the backup does not know: {lost:?}"
    );

    // The jobs that ran across the takeover kept running and their end is
    // recorded by the backup.
    for &id in &long {
        let s = job_field(&c, id, "JobState").unwrap_or_default();
        assert!(
            s == "RUNNING" || s == "COMPLETED",
            "job {id} is {s} after the takeover"
        );
        assert_eq!(
            wait_job_state(&c, id, &["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED"]),
            "COMPLETED"
        );
        assert_eq!(
            job_field(&c, id, "Restarts").as_deref(),
            Some("0"),
            "job {id} was requeued"
        );
    }
    let starts = marker_counts(&c, "starts");
    let ends = marker_counts(&c, "ends");
    for &id in &long {
        assert_eq!(starts.get(&id), Some(&1), "job {id} starts: {starts:?}");
        assert_eq!(ends.get(&id), Some(&1), "job {id} ends: {ends:?}");
    }
    println!(
        "{test}: takeover {} ms (first accepted sbatch), backup in control (ping) after {} ms; \
         {} submissions acknowledged, {} refused after the kill",
        takeover.as_millis(),
        ping_takeover.as_millis(),
        unique.len(),
        failed_after
    );
}

/// The network-only partition of the issue: the isolated primary still
/// reaches StateSaveLocation (same filesystem).
#[test]
fn an_isolated_primary_stops_and_one_controller_stays_in_charge() {
    let test = "an_isolated_primary_stops_and_one_controller_stays_in_charge";
    partition(test, "hacut", false);
}

/// The partition as it happens where StateSaveLocation is a network file
/// system: the cut primary loses the shared state with the network.
#[test]
fn a_primary_cut_from_network_and_storage_stops_and_one_controller_stays_in_charge() {
    let test = "a_primary_cut_from_network_and_storage_stops_and_one_controller_stays_in_charge";
    partition(test, "hanfs", true);
}

fn partition(test: &str, prefix: &str, with_storage: bool) {
    // MessageTimeout=2: commands give up on the unreachable primary fast.
    let Some(c) = ha_cluster(test, prefix, Some(2)) else {
        return;
    };
    marker_script(&c, "block.sh", 6);
    marker_script(&c, "quick.sh", 1);
    let sbatch = |script: &str| {
        c.sbatch(&["-o", "/dev/null", script])
            .unwrap_or_else(|e| panic!("sbatch {script}: {e:#}"))
    };
    // Every CPU busy, and jobs waiting in the primary's queue: work the
    // isolated primary could be tempted to start a second time.
    let mut jobs: Vec<u32> = (0..4).map(|_| sbatch("block.sh")).collect();
    for &id in &jobs {
        wait_job_state(&c, id, &["RUNNING"]);
    }
    jobs.extend((0..4).map(|_| sbatch("quick.sh")));

    let primary = c.host("ctl1").expect("ctl1").clone();
    primary.cut().expect("cut");
    if with_storage {
        c.cut_storage("ctl1").expect("cut the shared storage");
    }
    let cut = Instant::now();
    // The backup takes control (it reaches the nodes), and the isolated
    // primary, asked from its own host, stops claiming it (it still
    // reaches itself, and maybe the shared state directory).
    let handover = watch_handover(&c, cut);
    let takeover = handover.backup_in_control.unwrap_or_default();
    let stepped_down = handover.primary_stood_down.unwrap_or_default();
    let both = handover.both_in_control();
    assert!(
        both <= BOTH_IN_CONTROL_LIMIT,
        "both controllers answered as in control for {both:?}: {handover:?}\n{}",
        c.logs()
    );
    assert!(
        takeover <= TAKEOVER_LIMIT,
        "the backup took control {takeover:?} after the cut\n{}",
        c.logs()
    );
    assert_eq!(
        scontrol_ping(&c),
        "Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    );
    jobs.extend((0..2).map(|_| sbatch("quick.sh")));
    for &id in &jobs {
        assert_eq!(
            wait_job_state(&c, id, &["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED"]),
            "COMPLETED",
            "job {id}"
        );
    }

    if with_storage {
        c.restore_storage("ctl1")
            .expect("restore the shared storage");
    }
    primary.restore().expect("restore");
    let restored = Instant::now();
    // The deposed primary asks for control back once it reaches the
    // backup and a slurmd; control changes hands without a moment where
    // both claim it.
    let failback = c
        .wait_for("the primary back in control, alone", WAIT, |c| {
            let pings = c.ping_each().ok()?;
            let leaders: Vec<&String> = pings
                .iter()
                .filter(|(_, r)| r.as_ref().is_some_and(|r| r.in_control))
                .map(|(n, _)| n)
                .collect();
            assert!(leaders.len() <= 1, "two controllers in control: {pings:?}");
            let all_up = pings.iter().all(|(_, r)| r.is_some());
            (all_up && leaders == ["ctl1"]).then(|| restored.elapsed())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(
        scontrol_ping(&c),
        "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n"
    );
    // Work goes on after the partition heals.
    let after: Vec<u32> = (0..2).map(|_| sbatch("quick.sh")).collect();
    for &id in &after {
        assert_eq!(
            wait_job_state(&c, id, &["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED"]),
            "COMPLETED",
            "job {id}"
        );
    }
    jobs.extend(after);

    // Every job ran exactly once, and ids were never reused.
    let unique: BTreeSet<u32> = jobs.iter().copied().collect();
    assert_eq!(
        unique.len(),
        jobs.len(),
        "a job id was acknowledged twice: {jobs:?}"
    );
    let starts = marker_counts(&c, "starts");
    let twice: Vec<(&u32, &usize)> = starts.iter().filter(|(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "jobs started more than once: {twice:?}");
    let ran: BTreeSet<u32> = starts.keys().copied().collect();
    assert_eq!(ran, unique, "jobs that ran vs jobs acknowledged");
    let in_charge = c
        .controller_in_control()
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(in_charge.is_some(), "no controller in control at the end");
    println!(
        "{test}: backup in control {} ms after the cut, isolated primary stood down after {} ms, \
         both in control for {} ms ({} samples, up to {} ms apart), \
         primary back in control {} ms after the restore",
        takeover.as_millis(),
        stepped_down.as_millis(),
        both.as_millis(),
        handover.samples,
        handover.worst_gap.as_millis(),
        failback.as_millis()
    );
}
