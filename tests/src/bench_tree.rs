//! The fan-out tree at scale: how long reaching every node takes, and how
//! many connections the controller holds while it does, for several
//! TreeWidth values against a flat fan-out (TreeWidth ≥ node count).
//!
//! Thousands of nodes on one machine come from slurmd's emulation mode, one
//! process serving every node of the list on its own port with the real
//! protocol and the real relays: `slurmd -D --emulate 'n[1-1000]' -f
//! slurm.conf` (`slurmd::emulate`). Per width, a fresh cluster measures:
//!
//! * **ping all nodes**: the controller's own ping rounds (every
//!   SlurmdTimeout/3, here every 2 s), as it logs them at debug level
//!   (`ping round done ... elapsed_ms=N peak_forwards=M`); the median of a
//!   few rounds in which every node answered;
//! * **1,000-node job**: from `sbatch -N <nodes>` until the job is COMPLETED,
//!   and until every node is idle again (the terminate reached all of them
//!   through the tree);
//! * **controller connections**: the most established TCP connections from
//!   slurmctld to slurmd ports seen at once (sampled from `/proc` every few
//!   milliseconds), and the most Forward calls the agent had in flight
//!   (its own count, from the same log line).
//!
//! It is a program's function, not a test: it prints figures. The targets
//! are this project's own expectations for a loopback run, not Slurm's.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::bench::{Figure, Goal};
use crate::cluster_dir::{ClusterDir, ClusterSpec};
use crate::local_cluster::{
    clean_slurm_env, idle_nodes, job_states, kill_cluster_processes, parse_submitted, require_bin,
    Daemon,
};
use crate::process::ChildGuard;
use crate::wait::wait_until;

/// What one run measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeBenchSizes {
    /// Emulated nodes.
    pub nodes: usize,
    /// TreeWidth values to compare; a width of at least `nodes` is the flat
    /// fan-out.
    pub widths: Vec<u32>,
    /// Ping rounds to take the median of.
    pub ping_rounds: usize,
}

impl TreeBenchSizes {
    /// The comparison: 1,000 nodes, widths 16 and 32, and flat.
    pub fn full() -> Self {
        Self {
            nodes: 1_000,
            widths: vec![16, 32, 1_000],
            ping_rounds: 3,
        }
    }

    /// A small run (to check the harness itself).
    pub fn quick() -> Self {
        Self {
            nodes: 40,
            widths: vec![4, 40],
            ping_rounds: 2,
        }
    }
}

/// How long a cluster of emulated nodes may take to come up.
const UP_TIMEOUT: Duration = Duration::from_secs(180);
/// How long one job or a few ping rounds may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs every width of `sizes` and returns its figures, five per width.
/// A width whose cluster does not come up yields figures without values
/// and the reason; the others go on.
pub fn run_tree_bench(sizes: &TreeBenchSizes) -> Vec<Figure> {
    let mut out = Vec::new();
    for &width in &sizes.widths {
        let label = if width as usize >= sizes.nodes {
            format!("flat ({} nodes)", sizes.nodes)
        } else {
            format!("TreeWidth={width}, {} nodes", sizes.nodes)
        };
        let m = measure_width(sizes, width);
        let (ping, job, idle, conns, forwards) = match m {
            Ok(m) => (
                Ok(m.ping_ms),
                Ok(m.job_ms),
                Ok(m.idle_ms),
                Ok(m.max_connections as f64),
                m.peak_forwards
                    .map(|p| p as f64)
                    .ok_or_else(|| "no ping round logged it".to_string()),
            ),
            Err(e) => {
                let note = format!("{e:#}").lines().next().unwrap_or("").to_string();
                (
                    Err(note.clone()),
                    Err(note.clone()),
                    Err(note.clone()),
                    Err(note.clone()),
                    Err(note),
                )
            }
        };
        let target_conns = f64::from(width.min(u32::try_from(sizes.nodes).unwrap_or(u32::MAX)));
        out.push(fig(
            format!("ping all nodes, {label}"),
            "ms",
            Goal::AtMost(1_000.0),
            ping,
        ));
        out.push(fig(
            format!("{}-node job to COMPLETED, {label}", sizes.nodes),
            "ms",
            Goal::AtMost(10_000.0),
            job,
        ));
        out.push(fig(
            format!("{}-node job until nodes idle, {label}", sizes.nodes),
            "ms",
            Goal::AtMost(15_000.0),
            idle,
        ));
        // The relays of the first hop, plus the job's batch host.
        out.push(fig(
            format!("max controller connections, {label}"),
            "conns",
            Goal::AtMost(target_conns + 1.0),
            conns,
        ));
        out.push(fig(
            format!("max Forward calls in flight, {label}"),
            "calls",
            Goal::AtMost(target_conns),
            forwards,
        ));
    }
    out
}

fn fig(name: String, unit: &'static str, goal: Goal, v: Result<f64, String>) -> Figure {
    let (value, note) = match v {
        Ok(v) => (Some(v), String::new()),
        Err(n) => (None, n),
    };
    Figure {
        name,
        unit,
        value,
        goal,
        note,
    }
}

/// The figures of one width.
#[derive(Debug, Clone, PartialEq)]
pub struct WidthFigures {
    pub ping_ms: f64,
    pub job_ms: f64,
    pub idle_ms: f64,
    /// Established slurmctld -> slurmd connections seen at once.
    pub max_connections: usize,
    /// Forward calls the agent had in flight at once (its own count).
    pub peak_forwards: Option<usize>,
}

/// A cluster of one slurmctld and one emulating slurmd.
struct EmulatedCluster {
    dir: ClusterDir,
    controller: ChildGuard,
    nodes: ChildGuard,
}

impl Drop for EmulatedCluster {
    fn drop(&mut self) {
        let _ = self.nodes.kill();
        let _ = self.controller.kill();
        kill_cluster_processes(&self.dir.conf_path());
    }
}

impl EmulatedCluster {
    fn start(nodes: usize, width: u32) -> Result<Self> {
        let bins = crate::bin_dir()?;
        for b in ["slurmctld", "slurmd", "slurmstepd", "sbatch"] {
            require_bin(&bins, b)?;
        }
        let dir = ClusterDir::create(ClusterSpec {
            nodes,
            cpus_per_node: 1,
            extra_lines: vec![
                format!("TreeWidth={width}"),
                // Ping rounds every 2 s.
                "SlurmdTimeout=6".into(),
                "MessageTimeout=10".into(),
                "SlurmctldDebug=debug".into(),
            ],
            ..ClusterSpec::default()
        })?;
        let conf = dir.conf_path();
        let mut cmd = Daemon::Controller.command(&bins, &conf, &dir.log_dir())?;
        let controller = ChildGuard::spawn("slurmctld", &mut cmd)?;
        let list = slurm_common::hostlist::compress(dir.node_names());
        let log = dir.log_dir().join("slurmd.emulated.out");
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("cannot open {}", log.display()))?;
        let err = out.try_clone().context("log")?;
        let mut cmd = Command::new(require_bin(&bins, "slurmd")?);
        cmd.args(["-D", "--emulate", &list, "-f"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        clean_slurm_env(&mut cmd);
        cmd.env("SLURM_CONF", &conf);
        let nodes_proc = ChildGuard::spawn("slurmd --emulate", &mut cmd)?;
        let cluster = Self {
            dir,
            controller,
            nodes: nodes_proc,
        };
        let want = nodes;
        wait_until(&format!("{want} emulated nodes idle"), UP_TIMEOUT, || {
            (idle_nodes(&conf)? == want).then_some(())
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(cluster)
    }

    fn controller_log(&self) -> PathBuf {
        self.dir.log_dir().join("slurmctld.out")
    }
}

fn measure_width(sizes: &TreeBenchSizes, width: u32) -> Result<WidthFigures> {
    let c = EmulatedCluster::start(sizes.nodes, width)?;
    let pid = c.controller.pid().context("slurmctld has no pid")?;
    let ports: HashSet<u16> = c.dir.slurmd_ports.iter().copied().collect();
    let own: HashSet<u16> = [c.dir.slurmctld_port].into();
    let sampler = ConnSampler::start(pid, ports, own);

    // Ping rounds after every node is up.
    let log = c.controller_log();
    let seen = ping_rounds(&log, sizes.nodes).len();
    let wanted = sizes.ping_rounds.max(1);
    let rounds = wait_until("ping rounds", STEP_TIMEOUT, || {
        let r = ping_rounds(&log, sizes.nodes);
        (r.len() >= seen + wanted).then(|| r[seen..].to_vec())
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut elapsed: Vec<u64> = rounds.iter().map(|r| r.elapsed_ms).collect();
    elapsed.sort_unstable();
    let ping_ms = elapsed[elapsed.len() / 2] as f64;

    // One job on every node.
    let script = c.dir.root().join("tree-bench.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n").context("cannot write the job script")?;
    let bins = crate::commands_dir()?;
    let mut cmd = Command::new(require_bin(&bins, "sbatch")?);
    clean_slurm_env(&mut cmd);
    let n = sizes.nodes.to_string();
    cmd.env("SLURM_CONF", c.dir.conf_path())
        .current_dir(c.dir.root())
        .args(["-N", &n, "--ntasks-per-node=1", "-o", "/dev/null"])
        .arg(&script)
        .stdin(Stdio::null());
    let start = Instant::now();
    let o = cmd.output().context("cannot run sbatch")?;
    if !o.status.success() {
        bail!("sbatch failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let id = parse_submitted(&String::from_utf8_lossy(&o.stdout)).context("no job id")?;
    let conf = c.dir.conf_path();
    wait_until(&format!("job {id} to complete"), STEP_TIMEOUT, || {
        let j = job_states(&conf, &[id])?.into_iter().find(|j| j.id == id)?;
        crate::local_cluster::is_finished(j.state).then_some(())
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let job_ms = start.elapsed().as_secs_f64() * 1e3;
    wait_until("every node idle again", STEP_TIMEOUT, || {
        (idle_nodes(&conf)? == sizes.nodes).then_some(())
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let idle_ms = start.elapsed().as_secs_f64() * 1e3;

    let max_connections = sampler.stop();
    let peak_forwards = ping_rounds(&log, sizes.nodes)
        .iter()
        .filter_map(|r| r.peak_forwards)
        .max();
    Ok(WidthFigures {
        ping_ms,
        job_ms,
        idle_ms,
        max_connections,
        peak_forwards,
    })
}

/// One `ping round done` line of the controller's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingRound {
    pub pinged: usize,
    pub silent: usize,
    pub elapsed_ms: u64,
    pub peak_forwards: Option<usize>,
}

/// The rounds in `log` in which all `nodes` were pinged and answered.
pub fn ping_rounds(log: &Path, nodes: usize) -> Vec<PingRound> {
    let text = std::fs::read(log).unwrap_or_default();
    parse_ping_rounds(&String::from_utf8_lossy(&text))
        .into_iter()
        .filter(|r| r.pinged == nodes && r.silent == 0)
        .collect()
}

/// Every `ping round done` line of a log, colors or not.
pub fn parse_ping_rounds(text: &str) -> Vec<PingRound> {
    text.lines()
        .map(strip_ansi)
        .filter(|l| l.contains("ping round done"))
        .filter_map(|l| {
            Some(PingRound {
                pinged: field(&l, "pinged")?,
                silent: field(&l, "silent")?,
                elapsed_ms: field(&l, "elapsed_ms")?,
                peak_forwards: field(&l, "peak_forwards"),
            })
        })
        .collect()
}

/// The number after ` key=` in a tracing line.
fn field<T: std::str::FromStr>(line: &str, key: &str) -> Option<T> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `line` without terminal color sequences (ESC [ ... letter).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Samples the established connections of one process to a set of ports
/// on a thread of its own, keeping the maximum.
struct ConnSampler {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ConnSampler {
    fn start(pid: u32, ports: HashSet<u16>, own: HashSet<u16>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stop, max) = (stop.clone(), max.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(n) = established_to(pid, &ports, &own) {
                        max.fetch_max(n, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        Self {
            stop,
            max,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.max.load(Ordering::Relaxed)
    }
}

impl Drop for ConnSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Established TCP connections process `pid` made to a port of `ports`
/// (not those it accepted on one of its own ports `own`), from Linux
/// `/proc`; `None` when the process is gone.
pub fn established_to(pid: u32, ports: &HashSet<u16>, own: &HashSet<u16>) -> Option<usize> {
    let mut inodes = HashSet::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        if let Ok(target) = std::fs::read_link(e.path()) {
            let t = target.to_string_lossy();
            if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                if let Ok(n) = n.parse::<u64>() {
                    inodes.insert(n);
                }
            }
        }
    }
    let mut found = HashSet::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        found.extend(established_inodes(&text, &inodes, ports, own));
    }
    Some(found.len())
}

/// Connections of a `/proc/net/tcp` table that are ESTABLISHED, owned by
/// one of `inodes` and made *to* a port of `ports`, by inode. A connection
/// accepted on one of `own` (the process's listening ports) is not one it
/// made, even when the peer's port happens to be in `ports`. Counted by
/// inode because the kernel may list a socket twice when the table changes
/// while it is being read.
pub fn established_inodes(
    table: &str,
    inodes: &HashSet<u64>,
    ports: &HashSet<u16>,
    own: &HashSet<u16>,
) -> HashSet<u64> {
    let port_of = |addr: &str| {
        addr.rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    table
        .lines()
        .skip(1)
        .filter_map(|row| {
            let cols: Vec<&str> = row.split_whitespace().collect();
            let (Some(local), Some(remote), Some(state), Some(inode)) =
                (cols.get(1), cols.get(2), cols.get(3), cols.get(9))
            else {
                return None;
            };
            let inode = inode.parse::<u64>().ok()?;
            (*state == "01"
                && port_of(remote).is_some_and(|p| ports.contains(&p))
                && !port_of(local).is_some_and(|p| own.contains(&p))
                && inodes.contains(&inode))
            .then_some(inode)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ping_rounds_from_a_colored_log() {
        let log = "2024-01-01T00:00:00Z DEBUG \u{1b}[2mping round done\u{1b}[0m \u{1b}[3mpinged\u{1b}[0m\u{1b}[2m=\u{1b}[0m1000 \u{1b}[3masked_to_register\u{1b}[0m\u{1b}[2m=\u{1b}[0m0 \u{1b}[3msilent\u{1b}[0m\u{1b}[2m=\u{1b}[0m0 \u{1b}[3melapsed_ms\u{1b}[0m\u{1b}[2m=\u{1b}[0m87 \u{1b}[3mpeak_forwards\u{1b}[0m\u{1b}[2m=\u{1b}[0m16\n\
                   2024-01-01T00:00:02Z DEBUG ping round done pinged=999 asked_to_register=1 silent=1 elapsed_ms=5000 peak_forwards=17\n\
                   unrelated line elapsed_ms=3\n";
        let rounds = parse_ping_rounds(log);
        assert_eq!(
            rounds,
            vec![
                PingRound {
                    pinged: 1000,
                    silent: 0,
                    elapsed_ms: 87,
                    peak_forwards: Some(16)
                },
                PingRound {
                    pinged: 999,
                    silent: 1,
                    elapsed_ms: 5000,
                    peak_forwards: Some(17)
                },
            ]
        );
    }

    #[test]
    fn counts_established_connections_to_the_ports() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:9C40 0100007F:4E21 01 00000000:00000000 00:00000000 00000000     0        0 111 1 0 20 4 30 10 -1\n\
           1: 0100007F:9C41 0100007F:4E22 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 20 4 30 10 -1\n\
           2: 0100007F:9C42 0100007F:4E21 06 00000000:00000000 00:00000000 00000000     0        0 333 1 0 20 4 30 10 -1\n\
           3: 0100007F:9C43 0100007F:4E23 01 00000000:00000000 00:00000000 00000000     0        0 444 1 0 20 4 30 10 -1\n";
        let inodes: HashSet<u64> = [111, 222, 333, 555].into();
        // 0x4E21 = 20001, 0x4E22 = 20002.
        let ports: HashSet<u16> = [20001, 20002, 20003].into();
        let none = HashSet::new();
        // Row 2 is TIME_WAIT; row 3 belongs to another process.
        let n = |t: &str, own: &HashSet<u16>| established_inodes(t, &inodes, &ports, own).len();
        assert_eq!(n(table, &none), 2);
        assert_eq!(n("", &none), 0);
        // Listed twice while the table changed: one connection.
        let twice = format!(
            "{table}{}\n",
            table.lines().nth(1).expect("the table has a second row")
        );
        assert_eq!(n(&twice, &none), 2);
        // Accepted on its own port 0x9C41 (40001) from a peer whose port is
        // in the set: not one it made.
        assert_eq!(n(table, &[40001].into()), 1);
    }

    /// The harness on a small cluster, by hand: `cargo test -p
    /// slurm-testkit bench_tree -- --ignored --nocapture` (needs the
    /// workspace binaries built).
    #[test]
    #[ignore = "starts daemons; a benchmark, run by hand"]
    fn quick_tree_bench() {
        let figures = run_tree_bench(&TreeBenchSizes::quick());
        eprintln!("{}", crate::bench::render_table(&figures));
        assert!(figures.iter().all(|f| f.value.is_some()), "{figures:?}");
    }

    #[test]
    fn this_process_has_no_connections_to_nowhere() {
        let ports: HashSet<u16> = [1].into();
        let own = HashSet::new();
        assert_eq!(established_to(std::process::id(), &ports, &own), Some(0));
        assert_eq!(established_to(u32::MAX, &ports, &own), None);
    }
}
