//! slurmctld: parse the command line, load slurm.conf, set up logging and
//! the runtime, then hand over to `slurmctld::server::run`.

use std::process::ExitCode;

use anyhow::{Context, Result};
use slurm_common::conf::{LogLevel, SlurmConf};
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
    // One worker per CPU (at most 4): more only adds cross-thread wake-ups
    // between the RPC tasks and the owner task.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
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
    let base: u8 = match conf.slurmctld_debug {
        LogLevel::Quiet | LogLevel::Fatal | LogLevel::Error => 0,
        LogLevel::Info => 2,
        LogLevel::Verbose => 2,
        LogLevel::Debug => 3,
        _ => 4,
    };
    let level = match base.saturating_add(cli.verbose) {
        0 => tracing::Level::ERROR,
        1 => tracing::Level::WARN,
        2 => tracing::Level::INFO,
        3 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let file = match (&cli.log_file, cli.foreground) {
        (Some(p), _) => Some(p.display().to_string()),
        (None, true) => None,
        (None, false) => conf.slurmctld_log_file.clone(),
    };
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false);
    match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| format!("cannot open log file {path}"))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(f))
                .init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
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
