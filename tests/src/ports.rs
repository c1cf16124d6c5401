//! Free loopback ports for daemons under test.
//!
//! A daemon under test is told its port in slurm.conf before it starts, so
//! a port has to be chosen free and then left unbound until the daemon binds
//! it. Two things can take it in between:
//!
//! * an outgoing connection of any process: the kernel gives those local
//!   ports from its ephemeral range (`ip_local_port_range`), the same range
//!   a bind to port 0 draws from. Ports are therefore chosen outside it.
//! * another test process choosing the same number (nextest runs each test
//!   in a process of its own). Each port handed out is claimed with an
//!   exclusive `flock` on a file named after it in a shared directory, held
//!   until this process exits; a claimed port is skipped by the others.
//!
//!
//! Whether anything outside the tests holds a port is tried with a bind
//! that never listens (see `port_in_use`): a probe socket is copied into
//! every child that another thread forks while it is open.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

/// Ports handed out by this process, with the claims that keep them.
static GIVEN: Mutex<Option<(HashSet<u16>, Vec<File>)>> = Mutex::new(None);

/// Lowest port ever chosen (below it: well-known and registered services).
const LOWEST: u16 = 10_000;

/// A TCP port on 127.0.0.1 that is free, outside the kernel's ephemeral
/// range, and not handed out before by this or another test process.
pub fn free_loopback_port() -> Result<u16> {
    let (first, last) = match ephemeral_range() {
        Some((lo, _)) if lo > LOWEST.saturating_add(1000) => (LOWEST, lo - 1),
        Some((_, hi)) if hi < 64_000 => (hi + 1, u16::MAX),
        // No room outside the ephemeral range: let the kernel choose.
        _ => return kernel_port(),
    };
    let dir = claims_dir()?;
    let span = u32::from(last - first) + 1;
    let start = seed() % span;
    let mut guard = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let (given, claims) = guard.get_or_insert_with(Default::default);
    for step in 0..span {
        let port = first + ((start + step) % span) as u16;
        if given.contains(&port) {
            continue;
        }
        let Some(claim) = claim(&dir, port)? else {
            continue;
        };
        // Claimed: now make sure no socket of the machine uses it.
        if port_in_use(port) {
            continue;
        }
        given.insert(port);
        claims.push(claim);
        return Ok(port);
    }
    bail!("no free loopback port in {first}..={last}")
}

/// Where the claim files live (shared by every test process of the host).
fn claims_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join("slurm-rs-test-ports");
    match std::fs::DirBuilder::new().mode(0o1777).create(&dir) {
        Ok(()) => {
            // The umask may have narrowed the mode; tests of other users
            // claim ports here too.
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777));
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
    }
    Ok(dir)
}

/// Takes the claim on `port`; `None` while another process holds it.
fn claim(dir: &std::path::Path, port: u16) -> Result<Option<File>> {
    let path = dir.join(port.to_string());
    let file = match OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o666)
        .open(&path)
    {
        Ok(f) => f,
        // Another user's claim file that this user may not open.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    // SAFETY: flock on a descriptor this function owns; no memory is passed.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    Ok(locked.then_some(file))
}

/// Whether a listener, or a socket bound without `SO_REUSEADDR`, holds
/// `port` on 127.0.0.1 (or on every address).
///
/// Tried with a bind that never listens, with `SO_REUSEADDR` set: while
/// another thread forks, a copy of the probe lives on in the child until it
/// execs, and only a socket in that state keeps out no one — the daemon's
/// listener (which sets `SO_REUSEADDR`, as tokio and std do) still binds
/// and listens beside it. A probe that listened would keep it out.
fn port_in_use(port: u16) -> bool {
    // SAFETY: plain socket calls on a descriptor this function creates and
    // closes; the option and address point at locals that outlive the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return true;
        }
        let one: libc::c_int = 1;
        let set = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            std::ptr::addr_of!(one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
        let bound = set == 0
            && libc::bind(
                fd,
                std::ptr::addr_of!(addr).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ) == 0;
        libc::close(fd);
        !bound
    }
}

/// The kernel's ephemeral port range, from procfs.
fn ephemeral_range() -> Option<(u16, u16)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    parse_range(&text)
}

fn parse_range(text: &str) -> Option<(u16, u16)> {
    let mut it = text.split_whitespace().map(str::parse::<u16>);
    let (lo, hi) = (it.next()?.ok()?, it.next()?.ok()?);
    (lo <= hi).then_some((lo, hi))
}

/// Where a search starts: spread over the range so that concurrent test
/// processes rarely try the same ports.
fn seed() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    nanos ^ std::process::id().wrapping_mul(2_654_435_761)
}

/// A port the kernel chose, not handed out before by this process.
fn kernel_port() -> Result<u16> {
    for _ in 0..64 {
        let listener =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot bind a loopback port")?;
        let port = listener.local_addr().context("no local address")?.port();
        drop(listener);
        let mut guard = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if guard.get_or_insert_with(Default::default).0.insert(port) {
            return Ok(port);
        }
    }
    bail!("no fresh loopback port after 64 tries")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_outside_the_ephemeral_range() {
        // Each port is bound the moment it is given, as a daemon would: the
        // allocator's promise is about that moment, not about later, when
        // any process of the machine may take a port it sees free.
        let mut held = Vec::new();
        let ports: Vec<u16> = (0..50)
            .map(|_| {
                let p = free_loopback_port().unwrap();
                held.push(TcpListener::bind((Ipv4Addr::LOCALHOST, p)).unwrap());
                p
            })
            .collect();
        let unique: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(unique.len(), ports.len());
        if let Some((lo, hi)) = ephemeral_range() {
            if lo > LOWEST + 1000 || hi < 64_000 {
                assert!(ports.iter().all(|p| *p < lo || *p > hi), "{ports:?}");
            }
        }
        assert_eq!(held.len(), ports.len());
    }

    #[test]
    fn a_port_claimed_elsewhere_is_not_claimed_again() {
        let dir = tempfile::tempdir().unwrap();
        let held = claim(dir.path(), 12345).unwrap().expect("first claim");
        // A second open file description is what another process has.
        assert!(claim(dir.path(), 12345).unwrap().is_none());
        drop(held);
        assert!(claim(dir.path(), 12345).unwrap().is_some());
    }

    #[test]
    fn a_port_with_a_listener_is_in_use_and_one_given_out_is_not() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(port_in_use(port));
        drop(listener);
        let given = free_loopback_port().unwrap();
        assert!(!port_in_use(given));
    }

    #[test]
    fn probing_a_port_leaves_it_free_while_other_threads_fork() {
        // A probe is copied into each child forked while it is open; a
        // copy must not make the port look taken (nor keep a daemon out).
        let port = free_loopback_port().unwrap();
        let spawned = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spawner = {
            let (spawned, stop) = (spawned.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::process::Command::new("true").status();
                    spawned.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
        };
        let mut taken = 0;
        let mut probes = 0;
        while spawned.load(std::sync::atomic::Ordering::Relaxed) < 200 {
            probes += 1;
            taken += usize::from(port_in_use(port));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spawner.join().unwrap();
        assert_eq!(
            taken, 0,
            "port {port} looked taken {taken} times in {probes} probes"
        );
        let _listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
        assert!(port_in_use(port));
    }

    #[test]
    fn ranges_are_read_as_procfs_writes_them() {
        assert_eq!(parse_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_range("1024 65535"), Some((1024, 65535)));
        assert_eq!(parse_range("60999 32768"), None);
        assert_eq!(parse_range(""), None);
        assert_eq!(parse_range("x y"), None);
    }
}
