//! slurmctld: parse the command line, load slurm.conf, set up logging and
//! the runtime, then hand over to `slurmctld::server::run`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use slurm_common::conf::SlurmConf;
use slurmctld::{cli, server};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cli = match cli::parse(&args) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("slurmctld: {msg}");
            eprint!("{}", cli::USAGE);
            return ExitCode::from(1);
        }
    };
    if cli.help {
        print!("{}", cli::USAGE);
        return ExitCode::SUCCESS;
    }
    if cli.version {
        println!("slurm-wlm {}", slurmctld::VERSION);
        return ExitCode::SUCCESS;
    }
    match real_main(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("slurmctld: fatal: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn real_main(cli: &cli::Cli) -> Result<()> {
    let conf_path = server::conf_path(cli.conf.as_deref());
    let text = conf_path.display().to_string();
    let parsed = SlurmConf::load(&text).with_context(|| format!("cannot load {text}"))?;
    let conf = parsed.conf;
    if !cli.foreground {
        daemonize()?;
    }
    init_logging(cli, &conf)?;
    for w in &parsed.warnings {
        tracing::warn!("{}: {:?}", w.loc.file, w.kind);
    }
    // One worker per two CPUs (1 to 4). Changes are made by one task (the
    // owner) and written by a thread of their own, so more workers add
    // little but cross-thread wake-ups between the RPC tasks and the owner:
    // on 2 CPUs one worker instead of two took sequential sbatch from
    // 751-777 to 823-847 jobs/s (8 submitters: 1,641-1,667 to 1,711-1,725)
    // with squeue at 10,000 jobs unchanged (8.3-8.6 ms). squeue's answer is
    // streamed in parts that yield between them (rpc::jobs), so a large
    // queue listing does not hold the owner up either.
    let workers = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).clamp(1, 4));
    // Two malloc arenas serve every thread (a query burst on one worker
    // then leaves its freed memory where the next burst can reuse it), and
    // large blocks go back to the system when freed (see memory.rs).
    slurmctld::memory::tune_allocator(2);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(server::run(server::Settings {
        conf_path,
        conf,
        ignore_state_errors: cli.ignore_state_errors,
    }))
}

fn init_logging(cli: &cli::Cli, conf: &SlurmConf) -> Result<()> {
    let filter = slurmctld::logging::start_filter(conf.slurmctld_debug, cli.verbose);
    let file = match (&cli.log_file, cli.foreground) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => conf.slurmctld_log_file.as_ref().map(PathBuf::from),
    };
    slurmctld::logging::init(filter, file.as_deref())?;
    Ok(())
}

/// Detaches from the terminal: fork, the parent exits, the child starts a
/// new session with stdio on /dev/null. Runs before any thread exists.
fn daemonize() -> Result<()> {
    // SAFETY: called before the runtime or any other thread is started, so
    // the child is a faithful copy of a single-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork failed");
    }
    if pid > 0 {
        std::process::exit(0);
    }
    // SAFETY: plain syscalls without pointers (setsid) or with a valid
    // NUL-terminated path (open); descriptors are checked before use.
    unsafe {
        libc::setsid();
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if fd >= 0 {
            libc::dup2(fd, 0);
            libc::dup2(fd, 1);
            libc::dup2(fd, 2);
            if fd > 2 {
                libc::close(fd);
            }
        }
    }
    Ok(())
}
