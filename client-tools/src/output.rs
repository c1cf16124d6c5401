//! Where a command's text goes.
//!
//! Commands write through [`Output`] instead of printing, so a test can hand
//! in two buffers and compare them byte for byte with real Slurm's output,
//! and so the rules for a closed pipe live in one place: when the reader goes
//! away (`scontrol show hostnames | head -1`) the command stops writing and
//! ends normally instead of panicking or reporting an error.

use std::ffi::OsString;
use std::io::{self, Write};

/// The Slurm release whose behaviour the commands reproduce.
pub const SLURM_VERSION: &str = "22.05.8";

/// What `--version` prints, without the newline. The package name is the
/// one of the Slurm build the reference outputs were taken from.
pub fn version_line() -> String {
    format!("slurm-wlm {SLURM_VERSION}")
}

/// Runs `body` with the process's standard streams: input locked, output
/// buffered (flushed when `body` returns) and error unbuffered, as every
/// command's `run` wants them.
pub fn with_std_streams(
    body: impl FnOnce(&mut io::StdinLock<'static>, &mut dyn Write, &mut dyn Write) -> i32,
) -> i32 {
    let mut input = io::stdin().lock();
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    let mut stderr = io::stderr().lock();
    let code = body(&mut input, &mut stdout, &mut stderr);
    let _ = stdout.flush();
    code
}

/// Runs a command as the whole process and exits: `run` gets the
/// arguments (the program name first) and its result is the exit status.
///
/// The binaries declare the C `main` themselves instead of a Rust `fn main`:
/// the Rust start-up reads `/proc/self/maps` to find the main thread's stack
/// guard and maps a signal stack for the stack-overflow message, about a
/// tenth of a millisecond that a command run thousands of times a minute
/// pays every time. What of that start-up the commands rely on is done
/// here: SIGPIPE is ignored, so a closed pipe is an error [`Output`]
/// handles; a closed standard descriptor is reopened on `/dev/null`, so a
/// file the command opens never becomes its standard output; a panic ends
/// the process with status 101 after its message, as from a Rust `main`.
/// Only a stack overflow differs: it is a plain SIGSEGV, without a message.
///
/// The arguments are read from `main`'s own `argc` and `argv`: only glibc
/// also hands them to the Rust standard library before `main`, musl does not.
///
/// # Safety
/// `argv` must point to `argc` valid NUL-terminated strings, as the C
/// `main` receives them.
pub unsafe fn run_as_main(
    run: fn(Vec<OsString>) -> i32,
    argc: std::ffi::c_int,
    argv: *const *const std::ffi::c_char,
) -> ! {
    ignore_sigpipe();
    reopen_closed_std_fds();
    // SAFETY: the caller's promise.
    let args = unsafe { main_args(argc, argv) };
    let code = std::panic::catch_unwind(|| run(args)).unwrap_or(101);
    // Flushes Rust's standard output buffer, as returning from main would.
    std::process::exit(code)
}

/// The C `main`'s arguments as Rust strings.
///
/// # Safety
/// As [`run_as_main`].
unsafe fn main_args(argc: std::ffi::c_int, argv: *const *const std::ffi::c_char) -> Vec<OsString> {
    use std::os::unix::ffi::OsStrExt;
    let count = usize::try_from(argc).unwrap_or(0);
    if argv.is_null() {
        return Vec::new();
    }
    (0..count)
        .map(|i| {
            // SAFETY: `i < argc`, and each of those entries is a valid C
            // string (the caller's promise); a null one, which that rules
            // out, reads as empty.
            let arg = unsafe { *argv.add(i) };
            if arg.is_null() {
                return OsString::new();
            }
            // SAFETY: as above.
            let bytes = unsafe { std::ffi::CStr::from_ptr(arg) }.to_bytes();
            std::ffi::OsStr::from_bytes(bytes).to_owned()
        })
        .collect()
}

/// Writes to a closed pipe fail with EPIPE instead of killing the process.
fn ignore_sigpipe() {
    // SAFETY: installing SIG_IGN for SIGPIPE has no preconditions; no
    // handler code runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Reopens descriptors 0, 1 and 2 on `/dev/null` when they are closed.
fn reopen_closed_std_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: the pointer and length describe `fds`, which outlives the call.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    if rc < 0 {
        // Too early in the process to fail for this; the descriptors are
        // most likely open, as they nearly always are.
        return;
    }
    for fd in fds {
        if fd.revents & libc::POLLNVAL != 0 {
            // SAFETY: the path is a NUL-terminated literal. The descriptor
            // opened is the lowest free one, which is `fd.fd`, and it is
            // kept open for the life of the process on purpose.
            unsafe {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}

/// Writing to standard output failed for a reason other than a closed pipe.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard output: {0}")]
pub struct OutputError(#[source] io::Error);

/// A command's standard output and standard error.
pub struct Output<'a> {
    stdout: &'a mut dyn Write,
    stderr: &'a mut dyn Write,
    stdout_closed: bool,
}

impl<'a> Output<'a> {
    pub fn new(stdout: &'a mut dyn Write, stderr: &'a mut dyn Write) -> Self {
        Self {
            stdout,
            stderr,
            stdout_closed: false,
        }
    }

    /// Writes `text` and a newline to standard output. After the reader has
    /// closed the pipe this does nothing and succeeds.
    pub fn line(&mut self, text: &str) -> Result<(), OutputError> {
        if self.stdout_closed {
            return Ok(());
        }
        let result = self
            .stdout
            .write_all(text.as_bytes())
            .and_then(|()| self.stdout.write_all(b"\n"));
        self.check(result)
    }

    /// Runs `f` with an output whose standard error is discarded (what
    /// `scontrol -Q` does to the errors of some commands); standard output
    /// is this one's.
    pub fn hushing_errors<R>(&mut self, f: impl FnOnce(&mut Output<'_>) -> R) -> R {
        let mut sink = io::sink();
        let mut hushed = Output {
            stdout: &mut *self.stdout,
            stderr: &mut sink,
            stdout_closed: self.stdout_closed,
        };
        let result = f(&mut hushed);
        self.stdout_closed = hushed.stdout_closed;
        result
    }

    /// Prints a block of text that ends in one newline (or is empty, which
    /// prints nothing) and gives the command's exit code: 0, or 1 after
    /// `<prog>: error: ...` when standard output cannot be written.
    pub fn block(&mut self, prog: &str, text: &str) -> i32 {
        if text.is_empty() {
            return 0;
        }
        match self.line(text.strip_suffix('\n').unwrap_or(text)) {
            Ok(()) => 0,
            Err(e) => {
                self.error_line(&format!("{prog}: error: {e}"));
                1
            }
        }
    }

    /// Writes `text` and a newline to standard error. Failures are ignored:
    /// there is nowhere left to report them.
    pub fn error_line(&mut self, text: &str) {
        let _ = self
            .stderr
            .write_all(text.as_bytes())
            .and_then(|()| self.stderr.write_all(b"\n"));
    }

    /// Writes `text` to standard error as it is, for the few messages Slurm
    /// leaves without a newline. Failures are ignored.
    pub fn error_text(&mut self, text: &str) {
        let _ = self.stderr.write_all(text.as_bytes());
    }

    /// Whether the reader of standard output has gone away.
    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed
    }

    /// Flushes both streams; a closed pipe is not an error.
    pub fn flush(&mut self) -> Result<(), OutputError> {
        let _ = self.stderr.flush();
        if self.stdout_closed {
            return Ok(());
        }
        let result = self.stdout.flush();
        self.check(result)
    }

    fn check(&mut self, result: io::Result<()>) -> Result<(), OutputError> {
        match result {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.stdout_closed = true;
                Ok(())
            }
            Err(e) => Err(OutputError(e)),
        }
    }
}

/// For tests: runs a command's `run_with` with `args` (the program name
/// first) and no usable slurm.conf, so that a command line that passes its
/// checks stops where the command would load its configuration; gives
/// standard output, standard error and the exit status.
#[cfg(test)]
pub(crate) fn run_without_controller(
    run_with: fn(
        &[std::ffi::OsString],
        crate::client::EnvLookup<'_>,
        &mut dyn Write,
        &mut dyn Write,
    ) -> i32,
    args: &[&str],
) -> (String, String, i32) {
    let argv: Vec<std::ffi::OsString> = args.iter().map(std::ffi::OsString::from).collect();
    let env = |name: &str| {
        (name == "SLURM_CONF").then(|| std::ffi::OsString::from("/nonexistent/slurm.conf"))
    };
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let code = run_with(&argv, &env, &mut o, &mut e);
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("output is UTF-8");
    (text(o), text(e), code)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A writer whose reader has gone away after `room` bytes.
    struct ClosedPipe {
        room: usize,
        written: Vec<u8>,
    }

    impl Write for ClosedPipe {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::from(io::ErrorKind::BrokenPipe));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            self.written.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn hushing_errors_keeps_standard_output_only() {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let mut o = Output::new(&mut stdout, &mut stderr);
        let code = o.hushing_errors(|o| {
            o.error_line("gone");
            o.block("scontrol", "kept\n")
        });
        o.error_line("after");
        assert_eq!(code, 0);
        assert_eq!(stdout, b"kept\n");
        assert_eq!(stderr, b"after\n");
    }

    /// A writer that fails with something other than a closed pipe.
    struct FullDisk;

    impl Write for FullDisk {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::StorageFull))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn blocks_print_once_newline_terminated_and_empty_ones_not_at_all() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut o = Output::new(&mut out, &mut err);
        assert_eq!(o.block("squeue", ""), 0);
        assert_eq!(o.block("squeue", "a\nb\n"), 0);
        assert_eq!(o.block("squeue", "c"), 0);
        assert_eq!(String::from_utf8(out).unwrap(), "a\nb\nc\n");
        assert!(err.is_empty());
    }

    #[test]
    fn a_block_that_cannot_be_written_names_the_command() {
        let (mut out, mut err) = (FullDisk, Vec::new());
        let mut o = Output::new(&mut out, &mut err);
        assert_eq!(o.block("sinfo", "x\n"), 1);
        let err = String::from_utf8(err).unwrap();
        assert!(err.starts_with("sinfo: error: "), "{err}");
    }

    #[test]
    fn lines_go_to_their_streams() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut o = Output::new(&mut out, &mut err);
        o.line("a").unwrap();
        o.error_line("b");
        o.flush().unwrap();
        assert_eq!(out, b"a\n");
        assert_eq!(err, b"b\n");
    }

    #[test]
    fn closed_pipe_stops_output_quietly() {
        let mut pipe = ClosedPipe {
            room: 3,
            written: Vec::new(),
        };
        let mut err = Vec::new();
        let mut o = Output::new(&mut pipe, &mut err);
        o.line("n1").unwrap();
        assert!(!o.stdout_closed());
        o.line("n2").unwrap();
        assert!(o.stdout_closed());
        o.line("n3").unwrap();
        o.flush().unwrap();
        assert_eq!(pipe.written, b"n1\n");
        assert!(err.is_empty());
    }

    #[test]
    fn other_write_errors_are_reported() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from(io::ErrorKind::StorageFull))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let (mut full, mut err) = (Full, Vec::new());
        let mut o = Output::new(&mut full, &mut err);
        let e = o.line("x").unwrap_err();
        assert!(e.to_string().starts_with("cannot write to standard output"));
    }

    #[test]
    fn version_matches_reference() {
        assert_eq!(version_line(), "slurm-wlm 22.05.8");
    }
}
