//! Multi-host tests on one machine: every host is a Linux network namespace
//! with an address of its own, wired to a private bridge, and every process
//! started on it also gets a UTS namespace carrying the host's name.
//!
//! Loopback clusters cannot show what depends on a real network: a
//! controller that finds its role from its host name, a relay tree whose
//! hops are separate machines, a host whose cable is pulled while its
//! processes keep running. Namespaces give each of those its own address,
//! routing table and host name at the cost of a few `ip` commands, and need
//! neither containers nor virtual machines.
//!
//! ```text
//!   lab namespace  <prefix>-<pid>-<n>.hub      one namespace per host
//!   +--------------------------------+        +---------------------+
//!   | br0 -- v0 ---------------------+--------+ eth0 10.X.0.1/16 ctl1|
//!   |     \- v1 ---------------------+--------+ eth0 10.X.0.2/16 n1  |
//!   |      \ ...   (cut = v<i> down) |        +---------------------+
//!   +--------------------------------+
//! ```
//!
//! The bridge lives in a namespace of its own, so the machine's interfaces
//! and routes are never touched; two labs never share a wire, so their
//! addresses cannot clash even when tests run in parallel (each lab still
//! takes its own `10.X.0.0/16`). Names carry the process id: a lab whose
//! process died (a crashed run) is found by its prefix and swept away when
//! the next lab with that prefix starts.
//!
//! Names resolve without DNS: the lab writes a hosts file listing every
//! host, and each spawned process sees it bind-mounted over `/etc/hosts` in
//! a mount namespace of its own (propagation to the machine is cut first).
//! slurm.conf written by [`NetCluster`] uses addresses anyway
//! (`NodeAddr=`, `SlurmctldHost=name(addr)`).
//!
//! Running needs root (namespaces, veth pairs, mounts) and iproute2's `ip`.
//! Tests call [`preflight`]: without root they fail and say so, unless
//! `SLURM_TEST_SKIP_NETNS=1` is set, in which case they report "skipped" and
//! pass.
//!
//! [`NetCluster`] builds a Slurm cluster on a lab: controllers and nodes on
//! hosts of their own, a login host for the commands, one shared
//! StateSaveLocation (the same filesystem, as failover needs), and a
//! per-host directory mounted at `<root>/local` standing in for each host's
//! local disk (pid files, logs, spool).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fmt::Write as _;
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use slurm_client_tools::client::{block_on, ClientConfig, Controller};
use slurm_proto::v1::{PingReply, PingRequest};

use crate::bins::bin_dir;
use crate::local_cluster::{clean_slurm_env, log_tails, parse_submitted, require_bin};
use crate::process::{send_signal, ChildGuard};
use crate::wait::wait_until;

/// Set to `1` to skip every network-namespace test (they print "skipped"
/// and pass); meant for machines where the tests cannot run as root.
pub const SKIP_ENV: &str = "SLURM_TEST_SKIP_NETNS";

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";

/// The bridge in the lab namespace and the interface in each host.
const BRIDGE: &str = "br0";
const HOST_IF: &str = "eth0";

/// Longest host name accepted (well under HOST_NAME_MAX, and short enough
/// for readable namespace names).
const MAX_HOST_NAME: usize = 32;
const MAX_PREFIX: usize = 24;

/// Hosts one lab can hold in its /16.
const MAX_HOSTS: usize = 250 * 250;

/// How long killed processes get to disappear at teardown.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);

/// What a network-namespace test should do on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preflight {
    /// Root and `ip` are there: run.
    Run,
    /// Skipping was asked for; the text says why (print it with "skipped").
    Skip(String),
}

/// Decides whether network-namespace tests can run. `Err` (with a message
/// saying what is missing and how to skip) when they cannot and skipping was
/// not asked for.
pub fn preflight() -> Result<Preflight> {
    let skip = std::env::var(SKIP_ENV).ok();
    preflight_with(skip.as_deref(), effective_uid(), ip_available())
}

fn preflight_with(skip: Option<&str>, euid: u32, has_ip: bool) -> Result<Preflight> {
    if skip.map(str::trim) == Some("1") {
        return Ok(Preflight::Skip(format!("{SKIP_ENV}=1 is set")));
    }
    if euid != 0 {
        bail!(
            "network-namespace tests need root (they create network namespaces, veth pairs, \
             a bridge and mounts) and this process runs as uid {euid}: run them as root, or set \
             {SKIP_ENV}=1 to skip them"
        );
    }
    if !has_ip {
        bail!(
            "network-namespace tests need iproute2's `ip` in PATH (e.g. apt-get install iproute2), \
             or set {SKIP_ENV}=1 to skip them"
        );
    }
    Ok(Preflight::Run)
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn ip_available() -> bool {
    Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs `ip args`, failing with its stderr.
fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run ip {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "ip {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn check_name(what: &str, name: &str, max: usize) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-');
    if !ok {
        bail!(
            "bad {what} {name:?}: use 1 to {max} characters a-z, 0-9 and '-', starting with a letter"
        );
    }
    Ok(())
}

/// The process id that created namespace `ns`, when `ns` belongs to a lab
/// with `prefix` (`<prefix>-<pid>-...`).
fn owner_pid(prefix: &str, ns: &str) -> Option<u32> {
    let rest = ns.strip_prefix(prefix)?.strip_prefix('-')?;
    let pid = rest.split(['-', '.']).next()?;
    pid.parse().ok()
}

/// `10.<subnet>.0.0/16`, host `index` (0-based): `10.<subnet>.<hi>.<lo>`
/// with `lo` in 1..=250, so neither the network nor the broadcast address is
/// ever handed out.
fn host_address(subnet: u8, index: usize) -> Option<Ipv4Addr> {
    if index >= MAX_HOSTS {
        return None;
    }
    let hi = u8::try_from(index / 250).ok()?;
    let lo = u8::try_from(index % 250 + 1).ok()?;
    Some(Ipv4Addr::new(10, subnet, hi, lo))
}

/// The inode that names network namespace file `path` (a bind mount of an
/// nsfs inode, as `/proc/<pid>/ns/net` shows `net:[<inode>]`).
fn netns_inode(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// Pids of the processes whose network namespace has inode `ino`.
fn pids_in_netns(ino: u64) -> Vec<u32> {
    let want = format!("net:[{ino}]");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/net"))
                .map(|l| l.as_os_str() == want.as_str())
                .unwrap_or(false)
        })
        .collect()
}

/// SIGKILLs every process living in namespace `ns` (a name under
/// /run/netns) until none is left or the timeout passes, then deletes the
/// namespace. Errors are reported, never raised: this runs at teardown.
fn destroy_namespace(ns: &str) -> Result<()> {
    let path = Path::new(NETNS_DIR).join(ns);
    if let Some(ino) = netns_inode(&path) {
        let gone = wait_until(&format!("processes in {ns} to end"), REAP_TIMEOUT, || {
            let pids = pids_in_netns(ino);
            for &p in &pids {
                send_signal(p, libc::SIGKILL);
            }
            pids.is_empty().then_some(())
        });
        if let Err(e) = gone {
            bail!("{e}");
        }
    }
    if path.exists() {
        ip(&["netns", "delete", ns])?;
    }
    Ok(())
}

/// Namespaces left by labs with `prefix` whose process is gone.
fn stale_namespaces(prefix: &str) -> Vec<String> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|ns| match owner_pid(prefix, ns) {
            Some(pid) => pid != me && !Path::new(&format!("/proc/{pid}")).exists(),
            None => false,
        })
        .collect()
}

/// Labs made by this process so far (part of every lab's name).
static LAB_COUNTER: AtomicU32 = AtomicU32::new(0);

/// A private network: one bridge, any number of [`Host`]s. Dropping it
/// kills every process in its namespaces and deletes them.
#[derive(Debug)]
pub struct NetLab {
    /// `<prefix>-<pid>-<n>`: every namespace name starts with it.
    id: String,
    hub: String,
    subnet: u8,
    hosts: Vec<Host>,
    dir: tempfile::TempDir,
    hosts_file: PathBuf,
}

impl NetLab {
    /// Creates the lab namespace with its bridge, after sweeping namespaces
    /// that dead processes left with the same `prefix` (a-z, 0-9, '-').
    pub fn new(prefix: &str) -> Result<NetLab> {
        check_name("lab prefix", prefix, MAX_PREFIX)?;
        if let Preflight::Skip(why) = preflight()? {
            bail!("network-namespace tests are skipped ({why}); call preflight() first");
        }
        for ns in stale_namespaces(prefix) {
            destroy_namespace(&ns)
                .with_context(|| format!("cannot clean up the stale namespace {ns}"))?;
        }
        let n = LAB_COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let id = format!("{prefix}-{pid}-{n}");
        // Labs never share a wire; distinct subnets still keep a mix-up
        // (an address pasted from another lab's log) from reaching anything.
        let subnet = u8::try_from((pid.wrapping_mul(7).wrapping_add(n)) % 254 + 1).unwrap_or(1);
        let dir = tempfile::Builder::new()
            .prefix("slurm-netlab-")
            .tempdir()
            .context("cannot create the lab directory")?;
        let hosts_file = dir.path().join("hosts");
        let hub = format!("{id}.hub");
        let lab = NetLab {
            id,
            hub,
            subnet,
            hosts: Vec::new(),
            dir,
            hosts_file,
        };
        lab.write_hosts_file()?;
        ip(&["netns", "add", &lab.hub])?;
        ip(&["-n", &lab.hub, "link", "set", "lo", "up"])?;
        ip(&["-n", &lab.hub, "link", "add", BRIDGE, "type", "bridge"])?;
        ip(&["-n", &lab.hub, "link", "set", BRIDGE, "up"])?;
        Ok(lab)
    }

    /// The name every namespace of this lab starts with.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Adds a host named `name` (a-z, 0-9, '-'): a namespace with loopback
    /// up and `eth0` on the bridge with the next free address.
    pub fn host(&mut self, name: &str) -> Result<Host> {
        check_name("host name", name, MAX_HOST_NAME)?;
        if self.hosts.iter().any(|h| h.name == name) {
            bail!("lab {} already has a host {name}", self.id);
        }
        let index = self.hosts.len();
        let addr = host_address(self.subnet, index)
            .with_context(|| format!("lab {} is full ({MAX_HOSTS} hosts)", self.id))?;
        let netns = format!("{}-{name}", self.id);
        let port = format!("v{index}");
        let host = Host {
            name: name.to_string(),
            netns: netns.clone(),
            addr,
            hub: self.hub.clone(),
            hub_port: port.clone(),
            hosts_file: self.hosts_file.clone(),
            binds: Vec::new(),
        };
        ip(&["netns", "add", &netns])?;
        // Recorded before the wiring, so a failure halfway is still torn down.
        self.hosts.push(host.clone());
        let cidr = format!("{addr}/16");
        let hub = self.hub.as_str();
        let steps: [&[&str]; 7] = [
            &["-n", &netns, "link", "set", "lo", "up"],
            &[
                "-n", hub, "link", "add", &port, "type", "veth", "peer", "name", HOST_IF, "netns",
                &netns,
            ],
            &["-n", hub, "link", "set", &port, "master", BRIDGE],
            &["-n", hub, "link", "set", &port, "up"],
            &["-n", &netns, "addr", "add", &cidr, "dev", HOST_IF],
            &["-n", &netns, "link", "set", HOST_IF, "up"],
            &["-n", &netns, "route", "add", "default", "dev", HOST_IF],
        ];
        for args in steps {
            ip(args)?;
        }
        self.write_hosts_file()?;
        Ok(host)
    }

    /// Every host so far, in creation order.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The host named `name`.
    pub fn get(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The host with address `addr`.
    pub fn host_of(&self, addr: IpAddr) -> Option<&Host> {
        self.hosts.iter().find(|h| IpAddr::V4(h.addr) == addr)
    }

    /// The lab's hosts file (`addr name` lines), as processes see it at
    /// /etc/hosts.
    pub fn hosts_file(&self) -> &Path {
        &self.hosts_file
    }

    /// A directory that lives as long as the lab.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Every TCP connection any host of the lab has open or recently closed
    /// (TIME_WAIT lasts a minute), each named by the hosts at its ends. A
    /// connection both ends see is reported once.
    pub fn connections(&self) -> Result<BTreeSet<Connection>> {
        let mut out = BTreeSet::new();
        for h in &self.hosts {
            for s in h.tcp_sockets()? {
                if s.state == TcpState::Listen {
                    continue;
                }
                if let Some(c) = self.name_connection(h, &s) {
                    out.insert(c);
                }
            }
        }
        // The same connection seen from both ends: keep one, established if
        // either end says so.
        let mut merged: BTreeMap<(String, String, u16, u16), bool> = BTreeMap::new();
        for c in out {
            let e = merged
                .entry((c.from, c.to, c.from_port, c.to_port))
                .or_insert(false);
            *e |= c.established;
        }
        Ok(merged
            .into_iter()
            .map(|((from, to, from_port, to_port), established)| Connection {
                from,
                to,
                from_port,
                to_port,
                established,
            })
            .collect())
    }

    /// Which end of `s` (a socket on `h`) opened the connection is not in
    /// /proc; the end on a listening port is taken as the server. Both ends
    /// must be lab hosts.
    fn name_connection(&self, h: &Host, s: &TcpSocket) -> Option<Connection> {
        let local = self.host_of(s.local.ip())?;
        let remote = self.host_of(s.remote.ip())?;
        if local.name != h.name {
            return None;
        }
        let established = s.state == TcpState::Established;
        // Ephemeral ports are far above the daemons' well-known ones.
        let (from, from_port, to, to_port) = if s.local.port() < s.remote.port() {
            (remote, s.remote.port(), local, s.local.port())
        } else {
            (local, s.local.port(), remote, s.remote.port())
        };
        Some(Connection {
            from: from.name.clone(),
            to: to.name.clone(),
            from_port,
            to_port,
            established,
        })
    }

    fn write_hosts_file(&self) -> Result<()> {
        let mut text =
            String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
        for h in &self.hosts {
            let _ = writeln!(text, "{}\t{}", h.addr, h.name);
        }
        // Written in place: processes already running see the file through
        // a bind mount of this very inode.
        std::fs::write(&self.hosts_file, text)
            .with_context(|| format!("cannot write {}", self.hosts_file.display()))
    }

    /// Kills every process in the lab and deletes its namespaces; the
    /// first error is returned, and the rest is torn down regardless.
    pub fn teardown(&mut self) -> Result<()> {
        let mut first: Option<anyhow::Error> = None;
        for h in self.hosts.drain(..) {
            if let Err(e) = destroy_namespace(&h.netns) {
                first.get_or_insert(e);
            }
        }
        if Path::new(NETNS_DIR).join(&self.hub).exists() {
            if let Err(e) = destroy_namespace(&self.hub) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// One TCP connection between two lab hosts. `from` is the end on the
/// ephemeral port (the one that connected), `to` the end on the service
/// port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Connection {
    pub from: String,
    pub to: String,
    pub from_port: u16,
    pub to_port: u16,
    /// Open (ESTABLISHED) rather than closing or closed.
    pub established: bool,
}

impl Connection {
    fn key(&self) -> (&str, &str, u16, u16) {
        (&self.from, &self.to, self.from_port, self.to_port)
    }
}

/// Host-to-host hops to `port` made in a window: connections present at
/// `after` that were not there at `before` (closed ones stay visible in
/// TIME_WAIT for a minute). A connection opened before the window and
/// reused in it (a pooled channel) is not among them; see [`open_hops`].
/// Each hop is `(from, to)`, once however many connections carried it.
pub fn new_hops(
    before: &BTreeSet<Connection>,
    after: &BTreeSet<Connection>,
    port: u16,
) -> BTreeSet<(String, String)> {
    let old: BTreeSet<_> = before.iter().map(Connection::key).collect();
    after
        .iter()
        .filter(|c| c.to_port == port && !old.contains(&c.key()))
        .map(|c| (c.from.clone(), c.to.clone()))
        .collect()
}

/// Host-to-host hops to `port` with a connection open in `conns`.
pub fn open_hops(conns: &BTreeSet<Connection>, port: u16) -> BTreeSet<(String, String)> {
    conns
        .iter()
        .filter(|c| c.to_port == port && c.established)
        .map(|c| (c.from.clone(), c.to.clone()))
        .collect()
}

/// States of a TCP socket as /proc/net/tcp numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TcpState {
    Established,
    SynSent,
    SynRecv,
    FinWait1,
    FinWait2,
    TimeWait,
    Close,
    CloseWait,
    LastAck,
    Listen,
    Closing,
    NewSynRecv,
    Unknown(u8),
}

impl TcpState {
    fn from_code(code: u8) -> TcpState {
        match code {
            0x01 => TcpState::Established,
            0x02 => TcpState::SynSent,
            0x03 => TcpState::SynRecv,
            0x04 => TcpState::FinWait1,
            0x05 => TcpState::FinWait2,
            0x06 => TcpState::TimeWait,
            0x07 => TcpState::Close,
            0x08 => TcpState::CloseWait,
            0x09 => TcpState::LastAck,
            0x0A => TcpState::Listen,
            0x0B => TcpState::Closing,
            0x0C => TcpState::NewSynRecv,
            other => TcpState::Unknown(other),
        }
    }
}

/// One line of /proc/net/tcp or tcp6. IPv4-mapped IPv6 addresses are given
/// as IPv4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSocket {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: TcpState,
}

/// Parses the text of /proc/net/tcp or /proc/net/tcp6: a header line, then
/// `sl local rem st ...` per socket, addresses in hex as the kernel stores
/// them (each 32-bit word in the machine's byte order) and ports in hex.
/// Lines that do not parse are skipped.
pub fn parse_proc_net_tcp(text: &str) -> Vec<TcpSocket> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let _slot = f.next()?;
            let local = parse_hex_endpoint(f.next()?)?;
            let remote = parse_hex_endpoint(f.next()?)?;
            let state = u8::from_str_radix(f.next()?, 16).ok()?;
            Some(TcpSocket {
                local,
                remote,
                state: TcpState::from_code(state),
            })
        })
        .collect()
}

fn parse_hex_endpoint(s: &str) -> Option<SocketAddr> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    if !addr.is_ascii() {
        return None;
    }
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = addr.get(i * 8..i * 8 + 8)?;
        Some(u32::from_str_radix(w, 16).ok()?.to_ne_bytes())
    };
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            let v6 = Ipv6Addr::from(b);
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// One host of a [`NetLab`]. Cheap to clone; the lab owns the namespace.
#[derive(Debug, Clone)]
pub struct Host {
    name: String,
    netns: String,
    addr: Ipv4Addr,
    hub: String,
    hub_port: String,
    hosts_file: PathBuf,
    /// Extra bind mounts (source, target) every spawned process gets.
    binds: Vec<(PathBuf, PathBuf)>,
}

impl Host {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// The namespace's name (`ip netns exec <this> ...` enters it).
    pub fn netns(&self) -> &str {
        &self.netns
    }

    fn netns_path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.netns)
    }

    /// Makes `source` appear at `target` (both existing, of the same kind)
    /// for every process spawned on this host from now on: a per-host
    /// directory where other hosts see a shared one, as local disks are.
    pub fn bind(&mut self, source: &Path, target: &Path) {
        self.binds
            .push((source.to_path_buf(), target.to_path_buf()));
    }

    /// Arranges for `cmd` to run on this host: in its network namespace,
    /// in a UTS namespace of its own whose host name is this host's name,
    /// and in a mount namespace where the lab's hosts file is /etc/hosts
    /// (and this host's [`bind`](Self::bind)s are made).
    pub fn enter(&self, cmd: &mut Command) -> Result<()> {
        let ns = File::open(self.netns_path())
            .with_context(|| format!("cannot open {}", self.netns_path().display()))?;
        let hostname = CString::new(self.name.as_str()).context("host name")?;
        let mut binds = Vec::new();
        if Path::new("/etc/hosts").exists() {
            binds.push((
                cstring(&self.hosts_file)?,
                cstring(Path::new("/etc/hosts"))?,
            ));
        }
        for (s, t) in &self.binds {
            binds.push((cstring(s)?, cstring(t)?));
        }
        let root = cstring(Path::new("/"))?;
        // SAFETY: the hook runs in the forked child before exec, where only
        // async-signal-safe calls are allowed: it makes plain system calls
        // on values prepared here (an open descriptor, NUL-terminated
        // strings) and allocates nothing. Propagation to the machine's
        // mounts is cut (MS_SLAVE) before any bind, and a failure stops the
        // spawn before exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::unshare(libc::CLONE_NEWUTS | libc::CLONE_NEWNS) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::sethostname(hostname.as_ptr(), hostname.as_bytes().len()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                for (src, dst) in &binds {
                    if libc::mount(
                        src.as_ptr(),
                        dst.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND,
                        std::ptr::null(),
                    ) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Starts `cmd` on this host; the guard kills it when dropped.
    pub fn spawn(&self, label: &str, cmd: &mut Command) -> Result<ChildGuard> {
        self.enter(cmd)?;
        ChildGuard::spawn(&format!("{label}@{}", self.name), cmd)
    }

    /// Runs `cmd` on this host to completion.
    pub fn output(&self, cmd: &mut Command) -> Result<Output> {
        self.enter(cmd)?;
        cmd.output()
            .with_context(|| format!("cannot run {cmd:?} on {}", self.name))
    }

    /// Runs `f` on a thread that lives in this host's network namespace,
    /// so the sockets it opens are this host's (the host name and mounts
    /// stay the test's). For probes made from inside the lab, such as
    /// gRPC calls to a daemon's address.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        let ns = File::open(self.netns_path())
            .with_context(|| format!("cannot open {}", self.netns_path().display()))?;
        std::thread::scope(|s| {
            let worker = s.spawn(move || {
                // SAFETY: setns takes a valid open descriptor and changes
                // only this thread's network namespace; the thread ends
                // when `f` returns.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(f())
            });
            match worker.join() {
                Ok(r) => r.with_context(|| format!("cannot enter the namespace of {}", self.name)),
                Err(_) => bail!("the probe thread on {} panicked", self.name),
            }
        })
    }

    /// Takes the host's link down at the bridge: its processes keep
    /// running, but nothing reaches it and nothing it sends gets out.
    pub fn cut(&self) -> Result<()> {
        ip(&["-n", &self.hub, "link", "set", &self.hub_port, "down"])
    }

    /// Brings the link back after [`cut`](Self::cut).
    pub fn restore(&self) -> Result<()> {
        ip(&["-n", &self.hub, "link", "set", &self.hub_port, "up"])
    }

    /// Every TCP socket of this host's namespace.
    pub fn tcp_sockets(&self) -> Result<Vec<TcpSocket>> {
        self.run(|| -> Result<Vec<TcpSocket>> {
            let mut all = Vec::new();
            // thread-self: the namespace of this thread, not of the process.
            for f in ["/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"] {
                match std::fs::read_to_string(f) {
                    Ok(text) => all.extend(parse_proc_net_tcp(&text)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e).with_context(|| format!("cannot read {f}")),
                }
            }
            Ok(all)
        })?
    }

    /// Whether a TCP connection from this host to `addr` succeeds within
    /// `timeout` (anything listening there answers).
    pub fn can_connect(&self, addr: SocketAddr, timeout: Duration) -> Result<bool> {
        self.run(|| std::net::TcpStream::connect_timeout(&addr, timeout).is_ok())
    }
}

fn cstring(p: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes())
        .with_context(|| format!("path {} holds a NUL byte", p.display()))
}

// ---------------------------------------------------------------------------
// A Slurm cluster on a lab.

/// How long daemons may take to come up in a lab.
pub const NET_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The shape of a multi-host cluster: controllers `controllers` (the first
/// is the primary), nodes `n1..n<nodes>`, each on a host of its own, and a
/// login host for the commands. Timeouts left `None` keep Slurm's defaults.
#[derive(Debug, Clone)]
pub struct NetClusterSpec {
    pub cluster_name: String,
    pub controllers: Vec<String>,
    pub nodes: usize,
    pub cpus_per_node: u32,
    pub real_memory_mb: u64,
    pub partition: String,
    pub tree_width: Option<u16>,
    pub slurmctld_timeout: Option<u32>,
    pub slurmd_timeout: Option<u32>,
    pub message_timeout: Option<u32>,
    /// `-v` flags for slurmctld and slurmd.
    pub slurmctld_verbosity: u8,
    pub slurmd_verbosity: u8,
    /// SLURMD_LOG filter for slurmd (overrides its -v), e.g. to keep the
    /// RPC stack quiet at `-vv`.
    pub slurmd_log_filter: Option<String>,
    /// Extra slurm.conf lines appended verbatim.
    pub extra_lines: Vec<String>,
}

impl Default for NetClusterSpec {
    fn default() -> Self {
        Self {
            cluster_name: "lab".to_string(),
            controllers: vec!["ctl1".to_string()],
            nodes: 2,
            cpus_per_node: 2,
            real_memory_mb: 4000,
            partition: "debug".to_string(),
            tree_width: None,
            slurmctld_timeout: None,
            slurmd_timeout: None,
            message_timeout: None,
            slurmctld_verbosity: 0,
            slurmd_verbosity: 0,
            slurmd_log_filter: None,
            extra_lines: Vec::new(),
        }
    }
}

impl NetClusterSpec {
    pub fn node_names(&self) -> Vec<String> {
        (1..=self.nodes).map(|i| format!("n{i}")).collect()
    }
}

/// The name of the host the commands run on.
pub const LOGIN_HOST: &str = "login";

/// The slurm.conf text for `spec`, with `addrs` giving each host's address
/// and `root` the cluster directory (shared state in `<root>/state`,
/// per-host files under `<root>/local`). Daemons use Slurm's default ports:
/// every host has its own address.
pub fn render_net_conf(
    spec: &NetClusterSpec,
    addrs: &BTreeMap<String, Ipv4Addr>,
    root: &Path,
) -> Result<String> {
    let addr = |name: &str| {
        addrs
            .get(name)
            .copied()
            .with_context(|| format!("no address for host {name}"))
    };
    let root = root.display();
    let mut c = String::new();
    let _ = writeln!(c, "# generated by slurm-testkit (network-namespace lab)");
    let _ = writeln!(c, "ClusterName={}", spec.cluster_name);
    for ctl in &spec.controllers {
        let _ = writeln!(c, "SlurmctldHost={ctl}({})", addr(ctl)?);
    }
    let _ = writeln!(c, "AuthType=auth/slurm");
    let _ = writeln!(c, "StateSaveLocation={root}/state");
    let _ = writeln!(c, "SlurmdSpoolDir={root}/local/spool");
    let _ = writeln!(c, "SlurmctldPidFile={root}/local/run/slurmctld.pid");
    let _ = writeln!(c, "SlurmdPidFile={root}/local/run/slurmd.pid");
    let _ = writeln!(c, "SlurmctldLogFile={root}/local/log/slurmctld.log");
    let _ = writeln!(c, "SlurmdLogFile={root}/local/log/slurmd.log");
    let _ = writeln!(c, "SelectType=select/cons_tres");
    let _ = writeln!(c, "SelectTypeParameters=CR_Core");
    let _ = writeln!(c, "MaxJobCount=100000");
    let _ = writeln!(c, "ReturnToService=2");
    let _ = writeln!(c, "MinJobAge=300");
    let _ = writeln!(c, "KillWait=30");
    if let Some(w) = spec.tree_width {
        let _ = writeln!(c, "TreeWidth={w}");
    }
    if let Some(t) = spec.slurmctld_timeout {
        let _ = writeln!(c, "SlurmctldTimeout={t}");
    }
    if let Some(t) = spec.slurmd_timeout {
        let _ = writeln!(c, "SlurmdTimeout={t}");
    }
    if let Some(t) = spec.message_timeout {
        let _ = writeln!(c, "MessageTimeout={t}");
    }
    let cpus = spec.cpus_per_node;
    if !crate::cluster_dir::host_holds(cpus, spec.real_memory_mb) {
        let _ = writeln!(c, "{}", crate::cluster_dir::OVERRIDES_LINE);
    }
    for name in spec.node_names() {
        let _ = writeln!(
            c,
            "NodeName={name} NodeAddr={} CPUs={cpus} Boards=1 SocketsPerBoard=1 CoresPerSocket={cpus} ThreadsPerCore=1 RealMemory={} State=UNKNOWN",
            addr(&name)?,
            spec.real_memory_mb
        );
    }
    let _ = writeln!(
        c,
        "PartitionName={} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        spec.partition
    );
    for line in &spec.extra_lines {
        let _ = writeln!(c, "{line}");
    }
    Ok(c)
}

/// A Slurm cluster spread over the hosts of a [`NetLab`]. Dropping it kills
/// every daemon and job and deletes the namespaces. Every method takes
/// `&self`, so a test can kill a daemon while other threads submit.
#[derive(Debug)]
pub struct NetCluster {
    /// Running daemons by host name (one per host).
    daemons: Mutex<BTreeMap<String, ChildGuard>>,
    spec: NetClusterSpec,
    hosts: BTreeMap<String, Host>,
    bins: PathBuf,
    root: PathBuf,
    lab: NetLab,
}

impl NetCluster {
    /// Creates the lab (hosts for the controllers, the nodes and
    /// [`LOGIN_HOST`]) and writes slurm.conf, the key and the directories.
    /// Nothing is started.
    pub fn create(prefix: &str, spec: NetClusterSpec) -> Result<NetCluster> {
        if spec.controllers.is_empty() {
            bail!("a cluster needs at least one controller");
        }
        let bins = bin_dir()?;
        for b in ["slurmctld", "slurmd", "slurmstepd"] {
            require_bin(&bins, b)?;
        }
        let mut lab = NetLab::new(prefix)?;
        let root = lab.dir().join("cluster");
        let mut names: Vec<String> = spec.controllers.clone();
        names.extend(spec.node_names());
        names.push(LOGIN_HOST.to_string());
        for sub in ["state", "local", "submit", "shared"] {
            mkdir(&root.join(sub))?;
        }
        let mut hosts = BTreeMap::new();
        for name in &names {
            let mut h = lab.host(name)?;
            let local = root.join("hosts").join(name);
            for sub in ["log", "run", "spool"] {
                mkdir(&local.join(sub))?;
            }
            h.bind(&local, &root.join("local"));
            hosts.insert(name.clone(), h);
        }
        let addrs = hosts
            .iter()
            .map(|(n, h)| (n.clone(), h.addr()))
            .collect::<BTreeMap<_, _>>();
        let conf = root.join("slurm.conf");
        std::fs::write(&conf, render_net_conf(&spec, &addrs, &root)?)
            .with_context(|| format!("cannot write {}", conf.display()))?;
        let key = slurm_common::auth::default_key_path(&conf);
        slurm_common::auth::generate_key(&key)
            .with_context(|| format!("cannot write the key {}", key.display()))?;
        Ok(NetCluster {
            daemons: Mutex::new(BTreeMap::new()),
            spec,
            hosts,
            bins,
            root,
            lab,
        })
    }

    /// Creates the cluster, starts every controller (the primary first,
    /// waiting until it is in control) and every slurmd, and waits until all
    /// nodes are idle.
    pub fn start(prefix: &str, spec: NetClusterSpec) -> Result<NetCluster> {
        let c = Self::create(prefix, spec)?;
        let ctls = c.spec.controllers.clone();
        c.start_controller(&ctls[0])?;
        c.wait_for(
            "the primary controller to be in control",
            NET_START_TIMEOUT,
            |c| c.controller_in_control().ok().flatten(),
        )?;
        for ctl in &ctls[1..] {
            c.start_controller(ctl)?;
        }
        for n in c.spec.node_names() {
            c.start_slurmd(&n)?;
        }
        c.wait_nodes_idle(NET_START_TIMEOUT)?;
        Ok(c)
    }

    pub fn spec(&self) -> &NetClusterSpec {
        &self.spec
    }

    pub fn lab(&self) -> &NetLab {
        &self.lab
    }

    /// The host named `name` (a controller, a node or [`LOGIN_HOST`]).
    pub fn host(&self, name: &str) -> Result<&Host> {
        self.hosts
            .get(name)
            .with_context(|| format!("the cluster has no host {name}"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn conf_path(&self) -> PathBuf {
        self.root.join("slurm.conf")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.root.join("state")
    }

    /// A directory every host sees (job scripts write markers here).
    pub fn shared_dir(&self) -> PathBuf {
        self.root.join("shared")
    }

    /// Where commands run (and job output lands by default).
    pub fn submit_dir(&self) -> PathBuf {
        self.root.join("submit")
    }

    /// What `host` sees at `<root>/local` (its logs, pid files, spool).
    pub fn local_dir(&self, host: &str) -> PathBuf {
        self.root.join("hosts").join(host)
    }

    fn daemon_command(&self, host: &str, bin: &str, args: &[String]) -> Result<Command> {
        let exe = require_bin(&self.bins, bin)?;
        let log = self.local_dir(host).join("log").join(format!("{bin}.out"));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("cannot open log {}", log.display()))?;
        let err = out
            .try_clone()
            .with_context(|| format!("cannot duplicate {}", log.display()))?;
        let mut cmd = Command::new(exe);
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
        clean_slurm_env(&mut cmd);
        cmd.env("SLURM_CONF", self.conf_path())
            .current_dir(&self.root);
        Ok(cmd)
    }

    fn daemons(&self) -> MutexGuard<'_, BTreeMap<String, ChildGuard>> {
        // A panic elsewhere while holding the lock leaves the map intact.
        self.daemons.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn launch(
        &self,
        host: &str,
        bin: &str,
        args: Vec<String>,
        env: Option<(&str, &str)>,
    ) -> Result<()> {
        let mut daemons = self.daemons();
        if daemons.contains_key(host) {
            bail!("{host} already runs a daemon");
        }
        let mut cmd = self.daemon_command(host, bin, &args)?;
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let guard = self.host(host)?.spawn(bin, &mut cmd)?;
        daemons.insert(host.to_string(), guard);
        Ok(())
    }

    /// Starts slurmctld (`-D`) on controller host `name` without waiting.
    pub fn start_controller(&self, name: &str) -> Result<()> {
        if !self.spec.controllers.iter().any(|c| c == name) {
            bail!("{name} is not a controller of this cluster");
        }
        let mut args = vec![
            "-D".to_string(),
            "-f".to_string(),
            path_arg(&self.conf_path()),
        ];
        args.extend(verbosity(self.spec.slurmctld_verbosity));
        self.launch(name, "slurmctld", args, None)
    }

    /// Starts slurmd (`-D -N <name>`) on node host `name` without waiting.
    pub fn start_slurmd(&self, name: &str) -> Result<()> {
        if !self.spec.node_names().iter().any(|n| n == name) {
            bail!("{name} is not a node of this cluster");
        }
        let mut args = vec![
            "-D".to_string(),
            "-N".to_string(),
            name.to_string(),
            "-f".to_string(),
            path_arg(&self.conf_path()),
        ];
        args.extend(verbosity(self.spec.slurmd_verbosity));
        let filter = self.spec.slurmd_log_filter.clone();
        self.launch(
            name,
            "slurmd",
            args,
            filter.as_deref().map(|f| ("SLURMD_LOG", f)),
        )
    }

    /// The pid of the daemon on `host`, if one runs.
    pub fn daemon_pid(&self, host: &str) -> Option<u32> {
        self.daemons().get(host).and_then(ChildGuard::pid)
    }

    /// SIGKILLs the daemon on `host` (a crash) and returns when it is reaped.
    /// Its jobs (slurmstepd, scripts) keep running, as on a real host.
    pub fn kill(&self, host: &str) -> Result<()> {
        let mut d = self
            .daemons()
            .remove(host)
            .with_context(|| format!("no daemon runs on {host}"))?;
        d.kill()?;
        Ok(())
    }

    /// Sends `signal` to the daemon on `host` (SIGSTOP freezes it).
    pub fn signal(&self, host: &str, signal: i32) -> Result<()> {
        let pid = self
            .daemon_pid(host)
            .with_context(|| format!("no daemon runs on {host}"))?;
        if !send_signal(pid, signal) {
            bail!("cannot signal the daemon on {host} (pid {pid})");
        }
        Ok(())
    }

    /// Makes the shared StateSaveLocation vanish for the daemon on `host`,
    /// as a network file system does for a host whose cable is pulled: in
    /// the daemon's mount namespace an empty read-only file system covers
    /// `<root>/state`, so reads by path find nothing and writes fail.
    /// Descriptors it already holds keep working, as they would until the
    /// file system's timeouts strike. Undone by
    /// [`restore_storage`](Self::restore_storage).
    pub fn cut_storage(&self, host: &str) -> Result<()> {
        let state = self.state_dir();
        let state = path_arg(&state);
        self.in_daemon_mounts(
            host,
            &[
                "-t",
                "tmpfs",
                "-o",
                "ro,size=64k,mode=0555",
                "slurm-cut",
                &state,
            ],
            "mount",
        )
    }

    /// Undoes [`cut_storage`](Self::cut_storage).
    pub fn restore_storage(&self, host: &str) -> Result<()> {
        let state = path_arg(&self.state_dir());
        self.in_daemon_mounts(host, &[&state], "umount")
    }

    /// Runs `program args` in the mount namespace of the daemon on `host`.
    fn in_daemon_mounts(&self, host: &str, args: &[&str], program: &str) -> Result<()> {
        let pid = self
            .daemon_pid(host)
            .with_context(|| format!("no daemon runs on {host}"))?;
        let ns_path = format!("/proc/{pid}/ns/mnt");
        let ns = File::open(&ns_path).with_context(|| format!("cannot open {ns_path}"))?;
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null());
        // SAFETY: runs in the forked child before exec, which is single
        // threaded and shares no fs context, as setns(CLONE_NEWNS) needs;
        // one system call on a descriptor opened before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNS) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd
            .output()
            .with_context(|| format!("cannot run {program} in the mounts of {host}"))?;
        if !out.status.success() {
            bail!(
                "{program} {} in the mounts of {host} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// A command (`sbatch`, `squeue`, ...) set up to run on the login host:
    /// `SLURM_CONF` set, the binaries first in PATH, the submit directory
    /// as working directory. Run it with [`Host::output`] or
    /// [`run_command`](Self::run_command).
    pub fn command(&self, name: &str) -> Result<Command> {
        let exe = require_bin(&self.bins, name)?;
        let mut cmd = Command::new(exe);
        clean_slurm_env(&mut cmd);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.bins.clone()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("SLURM_CONF", self.conf_path())
            .env("PATH", std::env::join_paths(dirs).context("PATH")?)
            .current_dir(self.submit_dir())
            .stdin(Stdio::null());
        Ok(cmd)
    }

    /// Runs `cmd` (from [`command`](Self::command)) on the login host.
    pub fn run_command(&self, mut cmd: Command) -> Result<Output> {
        self.host(LOGIN_HOST)?.output(&mut cmd)
    }

    /// Runs command `name args` on the login host to completion.
    pub fn run(&self, name: &str, args: &[&str]) -> Result<Output> {
        let mut cmd = self.command(name)?;
        cmd.args(args);
        self.run_command(cmd)
    }

    /// Runs `sbatch args` on the login host and returns the job id.
    pub fn sbatch(&self, args: &[&str]) -> Result<u32> {
        let o = self.run("sbatch", args)?;
        let stdout = String::from_utf8_lossy(&o.stdout);
        if !o.status.success() {
            bail!(
                "sbatch {args:?} failed ({}): {}{}",
                o.status,
                stdout,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        parse_submitted(&stdout)
            .with_context(|| format!("sbatch {args:?} printed no job id: {stdout:?}"))
    }

    /// Runs `f(slurm.conf)` on a thread in the login host's network
    /// namespace: gRPC probes (e.g. [`crate::local_cluster::job_states`])
    /// reach the daemons from there.
    pub fn probe<T: Send>(&self, f: impl FnOnce(&Path) -> T + Send) -> Result<T> {
        let conf = self.conf_path();
        self.host(LOGIN_HOST)?.run(move || f(&conf))
    }

    /// Asks every controller for its Ping reply, in SlurmctldHost order:
    /// `(name, None)` for one that does not answer within MessageTimeout.
    pub fn ping_each(&self) -> Result<Vec<(String, Option<PingReply>)>> {
        self.ping_each_from(LOGIN_HOST)
    }

    /// [`ping_each`](Self::ping_each) as seen from `host` (a cut host still
    /// reaches itself).
    pub fn ping_each_from(&self, host: &str) -> Result<Vec<(String, Option<PingReply>)>> {
        let conf = self.conf_path();
        let conf = conf.as_path();
        self.host(host)?
            .run(move || -> Result<Vec<(String, Option<PingReply>)>> {
                let config = ClientConfig::load_path(conf)
                    .with_context(|| format!("cannot load {}", conf.display()))?;
                let ctl = Controller::new(&config).context("cannot set up a controller client")?;
                let addrs = ctl.controllers().to_vec();
                Ok(block_on(async {
                    let mut out = Vec::new();
                    for a in &addrs {
                        let reply = ctl
                            .call_one(a, |mut c| async move { c.ping(PingRequest {}).await })
                            .await
                            .ok();
                        out.push((a.name.clone(), reply));
                    }
                    out
                }))
            })?
    }

    /// The name of the controller that answers Ping saying it is in
    /// control; `Ok(None)` when none does; an error when several do.
    pub fn controller_in_control(&self) -> Result<Option<String>> {
        let masters: Vec<String> = self
            .ping_each()?
            .into_iter()
            .filter(|(_, r)| r.as_ref().is_some_and(|r| r.in_control))
            .map(|(n, _)| n)
            .collect();
        match masters.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.clone())),
            many => bail!("several controllers say they are in control: {many:?}"),
        }
    }

    /// Polls `probe` until it answers, failing early when a daemon exits
    /// on its own. Errors carry the daemons' log tails.
    pub fn wait_for<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut(&NetCluster) -> Option<T>,
    ) -> Result<T> {
        let mut died: Option<String> = None;
        let outcome = wait_until(what, timeout, || {
            for (host, d) in self.daemons().iter_mut() {
                if let Ok(Some(status)) = d.try_status() {
                    died = Some(format!("{} on {host} exited ({status})", d.name()));
                    return Some(None);
                }
            }
            probe(self).map(Some)
        });
        match outcome {
            Ok(Some(v)) => Ok(v),
            Ok(None) => bail!(
                "while waiting for {what}: {}\n{}",
                died.unwrap_or_default(),
                self.logs()
            ),
            Err(e) => bail!("{e}\n{}", self.logs()),
        }
    }

    /// Waits until every node is IDLE and responding.
    pub fn wait_nodes_idle(&self, timeout: Duration) -> Result<()> {
        let want = self.spec.nodes;
        self.wait_for(&format!("all {want} nodes to be idle"), timeout, |c| {
            let idle = c.probe(crate::local_cluster::idle_nodes).ok().flatten()?;
            (idle == want).then_some(())
        })
    }

    /// The tails of every log of every host, headed by host.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for name in self.hosts.keys() {
            let dir = self.local_dir(name).join("log");
            let tails = log_tails(&dir);
            if !tails.is_empty() {
                let _ = writeln!(out, "===== host {name} =====");
                out.push_str(&tails);
            }
        }
        out
    }

    /// The whole text of `host`'s log file `file` (e.g. `slurmd.log`,
    /// `slurmctld.out`); empty when there is none yet.
    pub fn log(&self, host: &str, file: &str) -> String {
        let p = self.local_dir(host).join("log").join(file);
        String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned()
    }

    /// Kills every daemon, then everything else in the lab, and deletes
    /// the namespaces.
    pub fn teardown(&mut self) -> Result<()> {
        for (_, mut d) in std::mem::take(&mut *self.daemons()) {
            let _ = d.kill();
        }
        self.lab.teardown()
    }
}

impl Drop for NetCluster {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

fn mkdir(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p).with_context(|| format!("cannot create {}", p.display()))
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn verbosity(n: u8) -> Option<String> {
    (n > 0).then(|| format!("-{}", "v".repeat(usize::from(n))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preflight_fails_without_root_unless_skipping() {
        let err = preflight_with(None, 1000, true).expect_err("not root");
        let text = err.to_string();
        assert!(text.contains("need root"), "{text}");
        assert!(text.contains("SLURM_TEST_SKIP_NETNS=1"), "{text}");
        assert!(matches!(
            preflight_with(Some("1"), 1000, true),
            Ok(Preflight::Skip(_))
        ));
        // Anything but 1 does not skip.
        assert!(preflight_with(Some("0"), 1000, true).is_err());
        assert!(preflight_with(Some(""), 1000, true).is_err());
        assert_eq!(preflight_with(None, 0, true).ok(), Some(Preflight::Run));
        let err = preflight_with(None, 0, false).expect_err("no ip");
        assert!(err.to_string().contains("iproute2"), "{err}");
    }

    #[test]
    fn names_are_checked() {
        for ok in ["n1", "ctl1", "login", "a-b"] {
            assert!(check_name("host", ok, MAX_HOST_NAME).is_ok(), "{ok}");
        }
        for bad in ["", "1n", "N1", "n_1", "n.1", "n-", "é", &"n".repeat(40)] {
            assert!(check_name("host", bad, MAX_HOST_NAME).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn stale_namespaces_are_known_by_prefix_and_pid() {
        assert_eq!(owner_pid("tree", "tree-123-0-n1"), Some(123));
        assert_eq!(owner_pid("tree", "tree-123-0.hub"), Some(123));
        assert_eq!(owner_pid("tree", "treex-123-0-n1"), None);
        assert_eq!(owner_pid("tree", "other-123-0-n1"), None);
        assert_eq!(owner_pid("a-b", "a-b-77-1-ctl1"), Some(77));
        assert_eq!(owner_pid("tree", "tree-"), None);
        assert_eq!(owner_pid("tree", "tree-99999999999-0-n1"), None);
    }

    #[test]
    fn addresses_stay_inside_the_subnet() {
        assert_eq!(host_address(7, 0), Some(Ipv4Addr::new(10, 7, 0, 1)));
        assert_eq!(host_address(7, 249), Some(Ipv4Addr::new(10, 7, 0, 250)));
        assert_eq!(host_address(7, 250), Some(Ipv4Addr::new(10, 7, 1, 1)));
        assert_eq!(host_address(7, MAX_HOSTS), None);
        let all: BTreeSet<_> = (0..1000).filter_map(|i| host_address(3, i)).collect();
        assert_eq!(all.len(), 1000);
    }

    #[test]
    fn proc_net_tcp_is_parsed() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1A0B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n\
   1: 0200070A:D431 0300070A:1AA2 06 00000000:00000000 03:00001234 00000000     0        0 0 3 0\n\
   2: garbage\n";
        let s = parse_proc_net_tcp(v4);
        assert_eq!(s.len(), 2);
        if cfg!(target_endian = "little") {
            assert_eq!(s[0].local, "127.0.0.1:6667".parse().expect("addr"));
            assert_eq!(s[0].state, TcpState::Listen);
            assert_eq!(s[1].local, "10.7.0.2:54321".parse().expect("addr"));
            assert_eq!(s[1].remote, "10.7.0.3:6818".parse().expect("addr"));
            assert_eq!(s[1].state, TcpState::TimeWait);
        }
        let v6 = "header\n   0: 0000000000000000FFFF00000200070A:1AA2 00000000000000000000000001000000:0000 01 x\n";
        let s = parse_proc_net_tcp(v6);
        assert_eq!(s.len(), 1);
        if cfg!(target_endian = "little") {
            assert_eq!(s[0].local, "10.7.0.2:6818".parse().expect("addr"));
            assert_eq!(s[0].remote, "[::1]:0".parse().expect("addr"));
        }
        assert!(parse_proc_net_tcp("").is_empty());
        assert!(parse_proc_net_tcp("h\n 0: 01:02 03:04 zz\n").is_empty());
        assert!(parse_proc_net_tcp("h\n 0: 0100007F:FFFFF 0:0 01\n").is_empty());
    }

    fn conn(from: &str, to: &str, from_port: u16, to_port: u16, established: bool) -> Connection {
        Connection {
            from: from.into(),
            to: to.into(),
            from_port,
            to_port,
            established,
        }
    }

    #[test]
    fn hops_are_new_or_open_connections_to_the_port() {
        let before: BTreeSet<_> = [
            conn("ctl1", "n1", 40000, 6818, true),
            conn("n1", "n2", 40001, 6818, false),
        ]
        .into();
        let after: BTreeSet<_> = [
            conn("ctl1", "n1", 40000, 6818, true),
            conn("n1", "n2", 40001, 6818, false),
            conn("n1", "n3", 40002, 6818, false),
            conn("n1", "n2", 40005, 6818, false),
            conn("n3", "ctl1", 40003, 6817, false),
        ]
        .into();
        let pairs = |v: &[(&str, &str)]| -> BTreeSet<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            new_hops(&before, &after, 6818),
            pairs(&[("n1", "n2"), ("n1", "n3")])
        );
        assert_eq!(open_hops(&after, 6818), pairs(&[("ctl1", "n1")]));
        assert_eq!(new_hops(&after, &after, 6818), pairs(&[]));
    }

    #[test]
    fn conf_names_every_host_by_address() {
        let spec = NetClusterSpec {
            controllers: vec!["ctl1".into(), "ctl2".into()],
            nodes: 2,
            tree_width: Some(2),
            slurmctld_timeout: Some(5),
            slurmd_timeout: Some(5),
            ..NetClusterSpec::default()
        };
        let addrs: BTreeMap<String, Ipv4Addr> = ["ctl1", "ctl2", "n1", "n2"]
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), host_address(9, i).expect("addr")))
            .collect();
        let text = render_net_conf(&spec, &addrs, Path::new("/r")).expect("conf");
        assert!(
            text.contains("SlurmctldHost=ctl1(10.9.0.1)\nSlurmctldHost=ctl2(10.9.0.2)\n"),
            "{text}"
        );
        assert!(
            text.contains("NodeName=n2 NodeAddr=10.9.0.4 CPUs=2"),
            "{text}"
        );
        assert!(text.contains("TreeWidth=2\n"));
        assert!(text.contains("SlurmctldTimeout=5\nSlurmdTimeout=5\n"));
        assert!(text.contains("StateSaveLocation=/r/state\n"));
        assert!(!text.contains("Port="), "default ports: {text}");
        let conf = slurm_common::conf::SlurmConf::parse(&text, "test");
        assert!(conf.is_ok(), "{conf:?}");
        let missing = render_net_conf(&spec, &BTreeMap::new(), Path::new("/r"));
        assert!(missing.is_err());
    }
}
