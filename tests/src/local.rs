//! `slurm-local`: a cluster on this machine in one command, for trying the
//! project out and for developing against.
//!
//! Unlike [`LocalCluster`](crate::LocalCluster), the daemons outlive the
//! command: they run detached (own process group, stdin closed, output in
//! `<dir>/log`), their pids are written to `<dir>/run/slurm-local.pids`,
//! and `slurm-local stop` ends them and every job they started.
//!
//! The binaries are taken from the directory of `slurm-local` itself.
//! `cargo run --bin slurm-local` only builds this package's binaries, so
//! when a daemon or command is missing there, slurm-local builds the whole
//! workspace once (`cargo build --bins --workspace`, same profile as
//! itself) before going on; Cargo offers no stable way for one package to
//! depend on another's binaries.
//!
//! The demo's over-time job asks for `--time=1`: Slurm counts time limits in
//! whole minutes, so the job can only reach TIMEOUT after a minute. The demo
//! waits for it at most [`TIMEOUT_JOB_WAIT`] and says so while it waits;
//! the other demo jobs finish within seconds.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use slurm_proto::v1::JobState;

use crate::bins::bin_dir;
use crate::cluster_dir::{ClusterDir, ClusterSpec};
use crate::local_cluster::{
    clean_slurm_env, controller_up, idle_nodes, job_states, kill_cluster_processes, log_tails,
    Daemon, START_TIMEOUT,
};
use crate::process::send_signal;
use crate::wait::wait_until;

/// Every binary slurm-local starts or points the user at.
pub const NEEDED_BINS: &[&str] = &[
    "slurmctld",
    "slurmd",
    "slurmstepd",
    "sbatch",
    "squeue",
    "sinfo",
    "scancel",
    "scontrol",
];

/// File in `<dir>/run` listing `name pid` of each daemon started.
const PIDS_FILE: &str = "slurm-local.pids";

/// Longest wait for the demo's over-time job (1 minute limit, then the
/// controller's time-limit check and the kill).
pub const TIMEOUT_JOB_WAIT: Duration = Duration::from_secs(100);

/// Longest wait for the other demo jobs.
const DEMO_JOB_WAIT: Duration = Duration::from_secs(60);

const USAGE: &str = "\
usage: slurm-local [--nodes N] [--cpus C] [--mem MB] [--dir DIR] [--demo]
       slurm-local stop [--dir DIR]

Starts slurmctld and N slurmd (default 4) on 127.0.0.1, detached, with their
configuration, key, state and logs in DIR (default $TMPDIR/slurm-local-$USER),
and prints how to point the commands at them. Each node gets C CPUs (default:
this machine's) and MB of memory (default: this machine's memory / N).
--demo then submits sample batch jobs and shows squeue, sinfo and their output.
`slurm-local stop` ends the daemons and their jobs.
";

/// Options of `slurm-local` (start).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartOptions {
    pub nodes: Option<usize>,
    pub cpus: Option<u32>,
    pub mem_mb: Option<u64>,
    pub dir: Option<PathBuf>,
    pub demo: bool,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    Start(StartOptions),
    Stop { dir: Option<PathBuf> },
    Help,
}

/// Parses the arguments after the program name.
pub fn parse_args(args: &[String]) -> Result<Invocation> {
    let mut it = args.iter().map(String::as_str).peekable();
    let stop = it.peek() == Some(&"stop");
    if stop {
        it.next();
    }
    let mut o = StartOptions::default();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let mut value = |name: &str| -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .map(str::to_string)
                    .with_context(|| format!("{name} expects a value")),
            }
        };
        match flag {
            "-h" | "--help" => return Ok(Invocation::Help),
            "--dir" => o.dir = Some(PathBuf::from(value("--dir")?)),
            "--nodes" | "-N" if !stop => {
                o.nodes = Some(number("--nodes", &value("--nodes")?, 1, 1024)?)
            }
            "--cpus" if !stop => o.cpus = Some(number("--cpus", &value("--cpus")?, 1, 100_000)?),
            "--mem" if !stop => o.mem_mb = Some(number("--mem", &value("--mem")?, 1, 1 << 40)?),
            "--demo" if !stop && inline.is_none() => o.demo = true,
            _ => bail!("unrecognized argument '{arg}'\n{USAGE}"),
        }
    }
    Ok(if stop {
        Invocation::Stop { dir: o.dir }
    } else {
        Invocation::Start(o)
    })
}

fn number<T: TryFrom<u64>>(name: &str, v: &str, min: u64, max: u64) -> Result<T> {
    let n: u64 = v
        .parse()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .with_context(|| format!("{name} expects a whole number from {min} to {max}, got '{v}'"))?;
    T::try_from(n)
        .ok()
        .with_context(|| format!("{name} value {n} is too large"))
}

/// `$TMPDIR/slurm-local-<user>` (TMPDIR defaulting to /tmp): outside any
/// checkout, the same for every run of one user, so `stop` finds it.
pub fn default_dir() -> PathBuf {
    let tmp = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let user = std::env::var("USER")
        .ok()
        .filter(|u| {
            !u.is_empty()
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
        // SAFETY: getuid cannot fail and has no preconditions.
        .unwrap_or_else(|| unsafe { libc::getuid() }.to_string());
    tmp.join(format!("slurm-local-{user}"))
}

/// `MemTotal` of /proc/meminfo in MiB.
pub fn parse_mem_total_mb(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb / 1024)
}

/// The cluster shape: what was asked, else N=4 nodes each with this
/// machine's CPU count and an N-th of its memory.
pub fn spec_for(o: &StartOptions) -> ClusterSpec {
    let nodes = o.nodes.unwrap_or(4);
    let cpus = o.cpus.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .unwrap_or(1)
    });
    let mem = o.mem_mb.unwrap_or_else(|| {
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| parse_mem_total_mb(&m))
            .unwrap_or(4096);
        (total / nodes as u64).max(1)
    });
    ClusterSpec {
        cluster_name: "local".to_string(),
        nodes,
        cpus_per_node: cpus,
        real_memory_mb: mem,
        partition: "debug".to_string(),
        extra_lines: Vec::new(),
    }
}

/// Runs slurm-local; returns the exit code. Progress and results go to `out`.
pub fn run(args: &[String], out: &mut dyn Write) -> Result<i32> {
    match parse_args(args)? {
        Invocation::Help => {
            write!(out, "{USAGE}")?;
            Ok(0)
        }
        Invocation::Stop { dir } => {
            stop(&dir.unwrap_or_else(default_dir), out)?;
            Ok(0)
        }
        Invocation::Start(o) => start(&o, out),
    }
}

/// The binaries' directory, after building the workspace if one of
/// [`NEEDED_BINS`] is missing there.
pub fn ensure_bins(out: &mut dyn Write) -> Result<PathBuf> {
    let bins = bin_dir()?;
    let missing = |b: &Path| -> Vec<&str> {
        NEEDED_BINS
            .iter()
            .copied()
            .filter(|n| !b.join(n).is_file())
            .collect()
    };
    let first = missing(&bins);
    if first.is_empty() {
        return Ok(bins);
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let release = bins.file_name() == Some("release".as_ref());
    writeln!(
        out,
        "slurm-local: {} not built yet; building the workspace binaries once (cargo build{} --bins --workspace) ...",
        first.join(", "),
        if release { " --release" } else { "" }
    )?;
    out.flush()?;
    let mut cmd = Command::new(&cargo);
    cmd.arg("build");
    if release {
        cmd.arg("--release");
    }
    cmd.args(["--bins", "--workspace", "--manifest-path"])
        .arg(&manifest);
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", Path::new(&cargo).display()))?;
    if !status.success() {
        bail!("building the workspace binaries failed ({status})");
    }
    let still = missing(&bins);
    if !still.is_empty() {
        bail!(
            "after building, {} still missing in {}",
            still.join(", "),
            bins.display()
        );
    }
    Ok(bins)
}

fn start(o: &StartOptions, out: &mut dyn Write) -> Result<i32> {
    let dir = o.dir.clone().unwrap_or_else(default_dir);
    let conf = dir.join("slurm.conf");
    if conf.exists() {
        if controller_up(&conf) {
            writeln!(
                out,
                "slurm-local: a cluster is already running in {}",
                dir.display()
            )?;
            let bins = ensure_bins(out)?;
            print_exports(out, &conf, &bins)?;
            if o.demo {
                demo(&dir, &conf, &bins, out)?;
            }
            return Ok(0);
        }
        // A stopped (or crashed) earlier cluster: only a directory that
        // slurm-local made is removed.
        let text = std::fs::read_to_string(&conf).unwrap_or_default();
        if !text.starts_with("# generated by slurm-testkit") {
            bail!(
                "{} holds a slurm.conf that slurm-local did not write; pick another --dir",
                dir.display()
            );
        }
        stop_pids(&dir, Duration::from_secs(2));
        kill_cluster_processes(&conf);
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the old cluster in {}", dir.display()))?;
    }
    let bins = ensure_bins(out)?;
    let spec = spec_for(o);
    let cdir = ClusterDir::create_at(&dir, spec.clone())?;
    let conf = cdir.conf_path();
    writeln!(
        out,
        "slurm-local: starting slurmctld and {} slurmd ({} CPUs, {} MB each) in {}",
        spec.nodes,
        spec.cpus_per_node,
        spec.real_memory_mb,
        cdir.root().display()
    )?;
    let mut daemons = vec![Daemon::Controller];
    daemons.extend(cdir.node_names().into_iter().map(Daemon::Node));
    let mut pids = String::new();
    let mut children = Vec::new();
    for d in &daemons {
        let mut cmd = d.command(&bins, &conf, &cdir.log_dir())?;
        // Own process group: a Ctrl-C in this terminal must not reach them.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", d.name()))?;
        pids.push_str(&format!("{} {}\n", d.name(), child.id()));
        children.push((d.name(), child));
        std::fs::write(cdir.run_dir().join(PIDS_FILE), &pids)
            .with_context(|| format!("cannot write {}", cdir.run_dir().display()))?;
    }
    // A daemon that exits while we wait ends the wait at once.
    let exited = |children: &mut Vec<(String, std::process::Child)>| -> Option<String> {
        children.iter_mut().find_map(|(name, c)| {
            let status = c.try_wait().ok()??;
            Some(format!("{name} exited ({status})"))
        })
    };
    let mut dead = None;
    let mut probe = |check: &dyn Fn() -> bool| {
        if let Some(d) = exited(&mut children) {
            dead = Some(d);
            return Some(());
        }
        check().then_some(())
    };
    let deadline = START_TIMEOUT;
    let up = wait_until("slurmctld to answer", deadline, || {
        probe(&|| controller_up(&conf))
    })
    .and_then(|()| {
        wait_until("every node to be idle", deadline, || {
            probe(&|| idle_nodes(&conf) == Some(spec.nodes))
        })
    })
    .map_err(|e| e.to_string())
    .and_then(|()| dead.take().map_or(Ok(()), Err));
    if let Err(e) = up {
        let logs = log_tails(&cdir.log_dir());
        stop_pids(cdir.root(), Duration::from_secs(2));
        kill_cluster_processes(&conf);
        bail!("the cluster did not come up: {e}\n{logs}");
    }
    writeln!(out, "slurm-local: cluster up: {} nodes idle", spec.nodes)?;
    print_exports(out, &conf, &bins)?;
    if o.demo {
        demo(cdir.root(), &conf, &bins, out)?;
    }
    writeln!(
        out,
        "\nStop it with: {} stop --dir {}",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "slurm-local".into()),
        cdir.root().display()
    )?;
    Ok(0)
}

fn print_exports(out: &mut dyn Write, conf: &Path, bins: &Path) -> Result<()> {
    writeln!(out, "\nPoint the commands at it:\n")?;
    writeln!(out, "export SLURM_CONF={}", conf.display())?;
    writeln!(out, "export PATH={}:$PATH", bins.display())?;
    Ok(())
}

/// Kills the daemons listed in the pids file: SIGTERM, then SIGKILL after
/// `grace`. Returns how many were listed.
fn stop_pids(dir: &Path, grace: Duration) -> usize {
    let text = std::fs::read_to_string(dir.join("run").join(PIDS_FILE)).unwrap_or_default();
    let pids: Vec<u32> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    for &p in &pids {
        send_signal(p, libc::SIGTERM);
    }
    let _ = wait_until("daemons to exit", grace, || {
        pids.iter().all(|&p| !send_signal(p, 0)).then_some(())
    });
    for &p in &pids {
        send_signal(p, libc::SIGKILL);
    }
    pids.len()
}

/// `slurm-local stop`.
pub fn stop(dir: &Path, out: &mut dyn Write) -> Result<()> {
    let conf = dir.join("slurm.conf");
    if !conf.exists() {
        bail!("no slurm-local cluster in {}", dir.display());
    }
    let conf = conf.canonicalize().unwrap_or(conf);
    let daemons = stop_pids(dir, Duration::from_secs(5));
    let others = kill_cluster_processes(&conf);
    writeln!(
        out,
        "slurm-local: stopped {daemons} daemons and {others} leftover processes of {}",
        dir.display()
    )?;
    Ok(())
}

/// The demo's scripts: (file name, text, what it shows).
fn demo_scripts(nodes: usize) -> Vec<(&'static str, String, &'static str)> {
    let multi = nodes.clamp(1, 2);
    vec![
        (
            "hello.sh",
            "#!/bin/sh\n#SBATCH --job-name=hello\n#SBATCH --ntasks=1\necho \"hello from $(hostname) as job $SLURM_JOB_ID on node $SLURMD_NODENAME\"\n".to_string(),
            "a plain job",
        ),
        (
            "multinode.sh",
            format!("#!/bin/sh\n#SBATCH --job-name=multinode\n#SBATCH --nodes={multi}\necho \"job $SLURM_JOB_ID has $SLURM_JOB_NUM_NODES nodes: $SLURM_JOB_NODELIST\"\n"),
            "a multi-node job",
        ),
        (
            "fail.sh",
            "#!/bin/sh\n#SBATCH --job-name=failing\necho \"about to fail with exit code 3\"\nexit 3\n".to_string(),
            "a failing job (FAILED, ExitCode=3:0)",
        ),
        (
            "overtime.sh",
            "#!/bin/sh\n#SBATCH --job-name=overtime\n#SBATCH --time=1\necho \"sleeping past my 1 minute limit\"\nsleep 600\n".to_string(),
            "a job over its 1 minute time limit (TIMEOUT)",
        ),
    ]
}

fn tool(
    bins: &Path,
    conf: &Path,
    cwd: &Path,
    name: &str,
    args: &[&str],
) -> Result<std::process::Output> {
    let mut cmd = Command::new(bins.join(name));
    clean_slurm_env(&mut cmd);
    cmd.env("SLURM_CONF", conf)
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {name}"))
}

fn show(
    out: &mut dyn Write,
    bins: &Path,
    conf: &Path,
    cwd: &Path,
    name: &str,
    args: &[&str],
) -> Result<()> {
    writeln!(out, "\n$ {name} {}", args.join(" "))?;
    let o = tool(bins, conf, cwd, name, args)?;
    out.write_all(&o.stdout)?;
    out.write_all(&o.stderr)?;
    Ok(())
}

fn demo(root: &Path, conf: &Path, bins: &Path, out: &mut dyn Write) -> Result<()> {
    let nodes = idle_nodes(conf).unwrap_or(1).max(1);
    let work = root.join("demo");
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    writeln!(
        out,
        "\nDemo: submitting sample jobs from {}",
        work.display()
    )?;
    let mut jobs = Vec::new();
    for (file, text, what) in demo_scripts(nodes) {
        std::fs::write(work.join(file), text).with_context(|| format!("cannot write {file}"))?;
        writeln!(out, "\n$ sbatch {file}    # {what}")?;
        let o = tool(bins, conf, &work, "sbatch", &[file])?;
        out.write_all(&o.stdout)?;
        out.write_all(&o.stderr)?;
        let id = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .last()
            .and_then(|t| t.parse::<u32>().ok());
        match id {
            Some(id) if o.status.success() => jobs.push((file, id)),
            _ => writeln!(out, "(submission failed, going on)")?,
        }
    }
    show(out, bins, conf, &work, "squeue", &[])?;
    show(out, bins, conf, &work, "sinfo", &[])?;
    let quick: Vec<u32> = jobs
        .iter()
        .filter(|(f, _)| *f != "overtime.sh")
        .map(|j| j.1)
        .collect();
    writeln!(out, "\nWaiting for the first jobs to finish ...")?;
    wait_jobs(conf, &quick, DEMO_JOB_WAIT);
    if let Some(&(_, id)) = jobs.iter().find(|(f, _)| *f == "overtime.sh") {
        writeln!(
            out,
            "Waiting for job {id} to reach its 1 minute limit (at most {} s; time limits are whole minutes) ...",
            TIMEOUT_JOB_WAIT.as_secs()
        )?;
        out.flush()?;
        let start = Instant::now();
        if !wait_jobs(conf, &[id], TIMEOUT_JOB_WAIT) {
            writeln!(
                out,
                "job {id} still running after {:?}; not waiting longer",
                start.elapsed()
            )?;
        }
    }
    show(out, bins, conf, &work, "squeue", &["-t", "all"])?;
    show(out, bins, conf, &work, "sinfo", &[])?;
    if let Some((_, id)) = jobs.iter().find(|(f, _)| *f == "fail.sh") {
        show(
            out,
            bins,
            conf,
            &work,
            "scontrol",
            &["show", "job", &id.to_string()],
        )?;
    }
    for (file, id) in &jobs {
        let p = work.join(format!("slurm-{id}.out"));
        writeln!(out, "\n==> {} ({file}) <==", p.display())?;
        match std::fs::read_to_string(&p) {
            Ok(t) => write!(out, "{t}")?,
            Err(e) => writeln!(out, "(not there: {e})")?,
        }
    }
    Ok(())
}

/// Waits until every job in `ids` has ended; false on timeout.
fn wait_jobs(conf: &Path, ids: &[u32], timeout: Duration) -> bool {
    wait_until("demo jobs", timeout, || {
        let states = job_states(conf, ids)?;
        let done = states
            .iter()
            .filter(|j| j.done() || j.state == JobState::Unspecified)
            .count();
        (done == ids.len()).then_some(())
    })
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_start_options() {
        let inv = parse_args(&args(&[
            "--nodes", "2", "--cpus=8", "--mem", "1000", "--dir", "/x", "--demo",
        ]))
        .expect("parse");
        assert_eq!(
            inv,
            Invocation::Start(StartOptions {
                nodes: Some(2),
                cpus: Some(8),
                mem_mb: Some(1000),
                dir: Some(PathBuf::from("/x")),
                demo: true,
            })
        );
        assert_eq!(
            parse_args(&[]).expect("parse"),
            Invocation::Start(StartOptions::default())
        );
    }

    #[test]
    fn parses_stop() {
        assert_eq!(
            parse_args(&args(&["stop", "--dir=/y"])).expect("parse"),
            Invocation::Stop {
                dir: Some(PathBuf::from("/y"))
            }
        );
        assert!(parse_args(&args(&["stop", "--demo"])).is_err());
    }

    #[test]
    fn rejects_bad_numbers_and_unknown_flags() {
        for bad in [
            &["--nodes", "0"][..],
            &["--nodes", "x"],
            &["--nodes"],
            &["--cpus", "99999999999999999999999"],
            &["--mem", "-1"],
            &["--frobnicate"],
            &["--demo=yes"],
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reads_mem_total() {
        assert_eq!(
            parse_mem_total_mb("MemFree: 1 kB\nMemTotal:       24684092 kB\n"),
            Some(24105)
        );
        assert_eq!(parse_mem_total_mb("nothing"), None);
        assert_eq!(parse_mem_total_mb("MemTotal: lots kB"), None);
    }

    #[test]
    fn spec_takes_what_was_given_and_splits_memory() {
        let s = spec_for(&StartOptions {
            nodes: Some(3),
            cpus: Some(5),
            mem_mb: Some(700),
            ..StartOptions::default()
        });
        assert_eq!((s.nodes, s.cpus_per_node, s.real_memory_mb), (3, 5, 700));
        let d = spec_for(&StartOptions::default());
        assert_eq!(d.nodes, 4);
        assert!(d.cpus_per_node >= 1 && d.real_memory_mb >= 1);
    }

    #[test]
    fn default_dir_is_per_user_under_tmp() {
        let d = default_dir();
        let name = d.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(
            name.starts_with("slurm-local-") && name.len() > "slurm-local-".len(),
            "{d:?}"
        );
    }

    #[test]
    fn demo_scripts_have_a_shebang_and_sbatch_lines() {
        for (_, text, _) in demo_scripts(4) {
            assert!(text.starts_with("#!/bin/sh\n#SBATCH "), "{text}");
        }
        assert!(demo_scripts(1)[1].1.contains("--nodes=1"));
        assert!(demo_scripts(4)[1].1.contains("--nodes=2"));
    }

    #[test]
    fn stop_without_a_cluster_says_so() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut out = Vec::new();
        let err = stop(tmp.path(), &mut out).expect_err("nothing to stop");
        assert!(err.to_string().contains("no slurm-local cluster"), "{err}");
    }
}
