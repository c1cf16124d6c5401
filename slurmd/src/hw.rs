//! Hardware detection: CPUs and their topology, memory, boot time, load,
//! and the size of the TmpFS file system.
//!
//! slurmd reports what the host really has at registration and prints it for
//! `slurmd -C`, so administrators can paste the line into slurm.conf. The
//! kernel's text files are parsed by pure functions (testable with sample
//! text from any machine); [`ProcProbe`] reads them under an injectable root,
//! and [`FakeProbe`] stands in for tests that need fixed figures.
//!
//! The live figures are Slurm's: CPULoad is the five-minute load average
//! (the second figure of `/proc/loadavg`, what Slurm takes from
//! `sysinfo`), FreeMem is MemFree (memory nothing uses, page cache not
//! counted), and TmpDisk is the whole size of the TmpFS file system
//! (`statvfs`), not what is free on it.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// What a probe found out about the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwInfo {
    /// Logical CPUs (boards * sockets * cores * threads).
    pub cpus: u32,
    pub boards: u32,
    pub sockets_per_board: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// MemTotal, MiB.
    pub real_memory_mb: u64,
    /// MemFree, MiB: what `scontrol show node` shows as FreeMem.
    pub free_memory_mb: u64,
    /// Kernel boot time, Unix seconds.
    pub boot_time: i64,
    /// Seconds since boot.
    pub uptime_secs: u64,
    /// Five-minute load average times 100 (CPULoad=2.26 is 226).
    pub cpu_load_hundredths: u32,
}

/// A hardware figure that could not be read or made sense of.
#[derive(Debug, Error)]
pub enum HwError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: no {key} line")]
    Missing {
        file: &'static str,
        key: &'static str,
    },
    #[error("{file}: bad value {value:?} for {key}")]
    BadValue {
        file: &'static str,
        key: &'static str,
        value: String,
    },
    #[error("no processors found in {file}")]
    NoCpus { file: &'static str },
    #[error("cannot get the size of the file system of {}: {source}", path.display())]
    FileSystem {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Source of hardware facts; real or fake.
pub trait HwProbe: Send + Sync + fmt::Debug {
    fn probe(&self) -> Result<HwInfo, HwError>;
}

/// Fixed figures, for tests.
#[derive(Debug, Clone)]
pub struct FakeProbe(pub HwInfo);

impl HwProbe for FakeProbe {
    fn probe(&self) -> Result<HwInfo, HwError> {
        Ok(self.0.clone())
    }
}

/// Reads `/proc` and `/sys` under `root` (`/` on a real host).
#[derive(Debug, Clone)]
pub struct ProcProbe {
    root: PathBuf,
}

impl Default for ProcProbe {
    fn default() -> Self {
        Self::new("/")
    }
}

impl ProcProbe {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn read(&self, rel: &str) -> Result<String, HwError> {
        let path = self.root.join(rel);
        std::fs::read_to_string(&path).map_err(|source| HwError::Read { path, source })
    }

    /// (cpu, package, core) from sysfs, when the topology directory exists.
    fn sysfs_topology(&self) -> Option<Vec<CpuPlace>> {
        let dir = self.root.join("sys/devices/system/cpu");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let name = entry.file_name();
            let Some(num) = name.to_str().and_then(|n| n.strip_prefix("cpu")) else {
                continue;
            };
            let Ok(cpu) = num.parse::<u32>() else {
                continue;
            };
            let topo = entry.path().join("topology");
            let read_num = |file: &str| -> Option<i64> {
                std::fs::read_to_string(topo.join(file))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            // Offline CPUs have no topology directory; they are not usable.
            let (Some(package), Some(core)) =
                (read_num("physical_package_id"), read_num("core_id"))
            else {
                continue;
            };
            out.push(CpuPlace { cpu, package, core });
        }
        (!out.is_empty()).then_some(out)
    }
}

impl HwProbe for ProcProbe {
    fn probe(&self) -> Result<HwInfo, HwError> {
        let places = match self.sysfs_topology() {
            Some(p) => p,
            None => parse_cpuinfo(&self.read("proc/cpuinfo")?)?,
        };
        let topo = Topology::from_places(&places).ok_or(HwError::NoCpus {
            file: "/proc/cpuinfo",
        })?;
        let mem = parse_meminfo(&self.read("proc/meminfo")?)?;
        let boot_time = parse_boot_time(&self.read("proc/stat")?)?;
        let uptime_secs = parse_uptime(&self.read("proc/uptime")?)?;
        // Load is a nicety; a missing /proc/loadavg must not stop slurmd.
        let cpu_load_hundredths = self
            .read("proc/loadavg")
            .ok()
            .and_then(|t| parse_loadavg(&t))
            .unwrap_or(0);
        Ok(HwInfo {
            cpus: topo.cpus,
            boards: 1,
            sockets_per_board: topo.sockets,
            cores_per_socket: topo.cores_per_socket,
            threads_per_core: topo.threads_per_core,
            real_memory_mb: mem.total_mb,
            free_memory_mb: mem.free_mb,
            boot_time,
            uptime_secs,
            cpu_load_hundredths,
        })
    }
}

/// Where one logical CPU sits: its package (socket) and core id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPlace {
    pub cpu: u32,
    pub package: i64,
    pub core: i64,
}

/// CPU counts derived from the places of every logical CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    pub cpus: u32,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
}

impl Topology {
    /// Counts sockets, cores and threads. Uneven hosts (a socket with fewer
    /// cores) are rounded down the way Slurm's own arithmetic does, so the
    /// product never exceeds the CPUs present. `None` for no CPUs.
    pub fn from_places(places: &[CpuPlace]) -> Option<Self> {
        let cpus = u32::try_from(places.len()).ok().filter(|n| *n > 0)?;
        let sockets: BTreeSet<i64> = places.iter().map(|p| p.package).collect();
        let cores: BTreeSet<(i64, i64)> = places.iter().map(|p| (p.package, p.core)).collect();
        let sockets = u32::try_from(sockets.len()).ok()?.max(1);
        let cores = u32::try_from(cores.len()).ok()?.max(1);
        let threads_per_core = (cpus / cores).max(1);
        let cores_per_socket = (cores / sockets).max(1);
        Some(Self {
            cpus,
            sockets,
            cores_per_socket,
            threads_per_core,
        })
    }
}

/// Places from `/proc/cpuinfo`. Architectures without `physical id`/`core
/// id` lines (some ARM kernels) get one socket and one core per CPU.
pub fn parse_cpuinfo(text: &str) -> Result<Vec<CpuPlace>, HwError> {
    let mut out = Vec::new();
    let mut cur: Option<CpuPlace> = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let num = |key: &'static str| {
            value.parse::<i64>().map_err(|_| HwError::BadValue {
                file: "/proc/cpuinfo",
                key,
                value: value.to_string(),
            })
        };
        match key {
            "processor" => {
                out.extend(cur.take());
                let cpu = num("processor")?;
                let cpu = u32::try_from(cpu).map_err(|_| HwError::BadValue {
                    file: "/proc/cpuinfo",
                    key: "processor",
                    value: value.to_string(),
                })?;
                cur = Some(CpuPlace {
                    cpu,
                    package: 0,
                    core: i64::from(cpu),
                });
            }
            "physical id" => {
                if let Some(c) = cur.as_mut() {
                    c.package = num("physical id")?;
                }
            }
            "core id" => {
                if let Some(c) = cur.as_mut() {
                    c.core = num("core id")?;
                }
            }
            _ => {}
        }
    }
    out.extend(cur);
    if out.is_empty() {
        return Err(HwError::NoCpus {
            file: "/proc/cpuinfo",
        });
    }
    Ok(out)
}

/// Memory figures from `/proc/meminfo`, MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemInfo {
    pub total_mb: u64,
    /// MemFree: unused memory, page cache and buffers not counted (Slurm
    /// 22.05's FreeMem, which is the kernel's free RAM).
    pub free_mb: u64,
}

/// MemTotal (required) and MemFree (0 when absent), in MiB (the file
/// counts kB, meaning KiB).
pub fn parse_meminfo(text: &str) -> Result<MemInfo, HwError> {
    let field = |key: &'static str| -> Result<Option<u64>, HwError> {
        let Some(line) = text
            .lines()
            .find(|l| l.split_once(':').is_some_and(|(k, _)| k.trim() == key))
        else {
            return Ok(None);
        };
        let value = line.split_once(':').map_or("", |(_, v)| v).trim();
        let digits = value.strip_suffix("kB").unwrap_or(value).trim();
        digits
            .parse::<u64>()
            .map(|kib| Some(kib / 1024))
            .map_err(|_| HwError::BadValue {
                file: "/proc/meminfo",
                key,
                value: value.to_string(),
            })
    };
    let total_mb = field("MemTotal")?.ok_or(HwError::Missing {
        file: "/proc/meminfo",
        key: "MemTotal",
    })?;
    let free_mb = field("MemFree")?.unwrap_or(0);
    Ok(MemInfo { total_mb, free_mb })
}

/// The `btime` line of `/proc/stat`: boot time, Unix seconds.
pub fn parse_boot_time(text: &str) -> Result<i64, HwError> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .ok_or(HwError::Missing {
            file: "/proc/stat",
            key: "btime",
        })?;
    line.trim().parse().map_err(|_| HwError::BadValue {
        file: "/proc/stat",
        key: "btime",
        value: line.trim().to_string(),
    })
}

/// First field of `/proc/uptime`, whole seconds.
pub fn parse_uptime(text: &str) -> Result<u64, HwError> {
    let first = text.split_whitespace().next().ok_or(HwError::Missing {
        file: "/proc/uptime",
        key: "uptime",
    })?;
    let whole = first.split('.').next().unwrap_or(first);
    whole.parse().map_err(|_| HwError::BadValue {
        file: "/proc/uptime",
        key: "uptime",
        value: first.to_string(),
    })
}

/// The five-minute load average of `/proc/loadavg` (its second figure)
/// times 100, digits past the hundredths dropped; `None` when the text has
/// no such figure or it is not a plain non-negative decimal that fits.
pub fn parse_loadavg(text: &str) -> Option<u32> {
    let five = text.split_whitespace().nth(1)?;
    parse_hundredths(five)
}

/// `"2.26"` as 226: digits, optionally a dot and more digits.
fn parse_hundredths(figure: &str) -> Option<u32> {
    let (whole, frac) = figure.split_once('.').unwrap_or((figure, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) {
        return None;
    }
    let whole: u32 = whole.parse().ok()?;
    let mut hundredths = 0;
    for (i, b) in frac.bytes().take(2).enumerate() {
        let weight = if i == 0 { 10 } else { 1 };
        hundredths += u32::from(b - b'0') * weight;
    }
    whole.checked_mul(100)?.checked_add(hundredths)
}

/// Size in MiB of a file system of `blocks` blocks of `fragment_size`
/// bytes (statvfs `f_blocks` and `f_frsize`), rounded down.
pub fn fs_size_mb(blocks: u64, fragment_size: u64) -> u64 {
    let bytes = u128::from(blocks) * u128::from(fragment_size);
    u64::try_from(bytes / (1024 * 1024)).unwrap_or(u64::MAX)
}

/// Size in MiB of the file system holding `path` (TmpFS), as slurmd
/// reports it for TmpDisk. A path that does not exist is 0, as in Slurm:
/// the node then simply has no temporary space to offer.
pub fn tmp_disk_mb(path: &Path) -> Result<u64, HwError> {
    use std::os::unix::ffi::OsStrExt;
    let err = |source| HwError::FileSystem {
        path: path.to_path_buf(),
        source,
    };
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| err(std::io::Error::from(std::io::ErrorKind::InvalidInput)))?;
    // SAFETY: statvfs is plain old data; the call fills it or fails.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is a valid NUL-terminated string and `st` a valid,
    // writable statvfs for the duration of the call.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut st) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(0);
        }
        return Err(err(e));
    }
    // The field widths differ between targets; both fit in u64.
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
    Ok(fs_size_mb(st.f_blocks as u64, st.f_frsize as u64))
}

/// `days-hh:mm:ss`, as slurmd -C prints UpTime.
pub fn format_uptime(secs: u64) -> String {
    let days = secs / 86_400;
    let rest = secs % 86_400;
    format!(
        "{days}-{:02}:{:02}:{:02}",
        rest / 3600,
        (rest % 3600) / 60,
        rest % 60
    )
}

/// The two lines `slurmd -C` prints, each ending in a newline.
pub fn format_node_line(node_name: &str, hw: &HwInfo) -> String {
    format!(
        "NodeName={node_name} CPUs={} Boards={} SocketsPerBoard={} CoresPerSocket={} \
         ThreadsPerCore={} RealMemory={}\nUpTime={}\n",
        hw.cpus,
        hw.boards,
        hw.sockets_per_board,
        hw.cores_per_socket,
        hw.threads_per_core,
        hw.real_memory_mb,
        format_uptime(hw.uptime_secs)
    )
}

pub use slurm_common::host::{host_name, short_hostname as short_host_name};

/// uname machine and "sysname release version", for Arch= and OS=.
pub fn uname() -> (String, String) {
    // SAFETY: utsname is plain old data; uname fills it or fails.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return (String::new(), String::new());
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (
        field(&u.machine),
        format!(
            "{} {} {}",
            field(&u.sysname),
            field(&u.release),
            field(&u.version)
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const CPUINFO_2C_HT: &str = "\
processor\t: 0
physical id\t: 0
core id\t\t: 0
processor\t: 1
physical id\t: 0
core id\t\t: 1
processor\t: 2
physical id\t: 0
core id\t\t: 0
processor\t: 3
physical id\t: 0
core id\t\t: 1
";

    #[test]
    fn cpuinfo_hyperthreads_give_two_threads_per_core() {
        let places = parse_cpuinfo(CPUINFO_2C_HT).unwrap();
        assert_eq!(places.len(), 4);
        let t = Topology::from_places(&places).unwrap();
        assert_eq!(
            t,
            Topology {
                cpus: 4,
                sockets: 1,
                cores_per_socket: 2,
                threads_per_core: 2
            }
        );
    }

    #[test]
    fn cpuinfo_two_sockets() {
        let text = (0..8)
            .map(|i| {
                format!(
                    "processor : {i}\nphysical id : {}\ncore id : {}\n\n",
                    i / 4,
                    i % 4
                )
            })
            .collect::<String>();
        let t = Topology::from_places(&parse_cpuinfo(&text).unwrap()).unwrap();
        assert_eq!(
            (t.cpus, t.sockets, t.cores_per_socket, t.threads_per_core),
            (8, 2, 4, 1)
        );
    }

    #[test]
    fn cpuinfo_without_topology_lines_is_one_core_per_cpu() {
        let t = Topology::from_places(&parse_cpuinfo("processor: 0\n\nprocessor: 1\n").unwrap())
            .unwrap();
        assert_eq!(
            (t.cpus, t.sockets, t.cores_per_socket, t.threads_per_core),
            (2, 1, 2, 1)
        );
    }

    #[test]
    fn cpuinfo_errors() {
        assert!(matches!(parse_cpuinfo(""), Err(HwError::NoCpus { .. })));
        assert!(matches!(
            parse_cpuinfo("processor : x\n"),
            Err(HwError::BadValue {
                key: "processor",
                ..
            })
        ));
        assert!(parse_cpuinfo("processor : 99999999999999999999\n").is_err());
    }

    /// A real machine's /proc/meminfo, shortened: lots of page cache, so
    /// MemAvailable is far above MemFree.
    const MEMINFO: &str = "\
MemTotal:       32780028 kB
MemFree:        23264584 kB
MemAvailable:   30501876 kB
Buffers:          265388 kB
Cached:          6942116 kB
SwapCached:            0 kB
";

    #[test]
    fn meminfo_in_mib_with_memfree_as_free_memory() {
        assert_eq!(
            parse_meminfo(MEMINFO).unwrap(),
            MemInfo {
                total_mb: 32011,
                free_mb: 22719
            }
        );
        let m = parse_meminfo("MemTotal: 2048 kB\nMemFree: 1024 kB\n").unwrap();
        assert_eq!(
            m,
            MemInfo {
                total_mb: 2,
                free_mb: 1
            }
        );
        // Order does not matter, nor does a missing MemFree.
        assert_eq!(
            parse_meminfo("MemAvailable: 4096 kB\nMemTotal: 8192 kB\n").unwrap(),
            MemInfo {
                total_mb: 8,
                free_mb: 0
            }
        );
        assert!(matches!(
            parse_meminfo("MemFree: 1 kB"),
            Err(HwError::Missing { .. })
        ));
        assert!(matches!(
            parse_meminfo("MemTotal: lots kB"),
            Err(HwError::BadValue { .. })
        ));
    }

    #[test]
    fn boot_uptime_load() {
        assert_eq!(
            parse_boot_time("cpu 1 2\nbtime 1700000000\n").unwrap(),
            1_700_000_000
        );
        assert!(parse_boot_time("cpu 1\n").is_err());
        assert_eq!(parse_uptime("3723.55 100.0\n").unwrap(), 3723);
        assert!(parse_uptime("").is_err());
    }

    #[test]
    fn loadavg_gives_the_five_minute_figure_in_hundredths() {
        assert_eq!(parse_loadavg("0.52 2.26 0.30 1/100 42\n"), Some(226));
        assert_eq!(parse_loadavg("1 12.5 1"), Some(1250));
        assert_eq!(parse_loadavg("0.00 0.00 0.00 1/99 7"), Some(0));
        assert_eq!(parse_loadavg("0 3 0"), Some(300));
        // Digits past the hundredths are dropped, not rounded.
        assert_eq!(parse_loadavg("0 0.999 0"), Some(99));
        for bad in [
            "",
            "0.52",
            "0.52 x 1",
            "0 -1.00 0",
            "0 .5 0",
            "0 1.2.3 0",
            "0 1.é 0",
            "0 99999999999.00 0",
            "0 42949672.96 0",
        ] {
            assert_eq!(parse_loadavg(bad), None, "{bad:?}");
        }
        assert_eq!(parse_loadavg("0 42949672.95 0"), Some(u32::MAX));
    }

    proptest::proptest! {
        /// Any load the kernel can print comes back as its hundredths.
        #[test]
        fn loadavg_round_trips(one in 0u32..100_000, five in 0u32..100_000) {
            let text = format!(
                "{}.{:02} {}.{:02} 0.00 1/2 3\n",
                one / 100, one % 100, five / 100, five % 100
            );
            proptest::prop_assert_eq!(parse_loadavg(&text), Some(five));
        }

        /// Arbitrary text never panics.
        #[test]
        fn loadavg_takes_any_text(text in "\\PC*") {
            let _ = parse_loadavg(&text);
        }
    }

    #[test]
    fn file_system_size_in_mib() {
        assert_eq!(fs_size_mb(0, 4096), 0);
        assert_eq!(fs_size_mb(256, 4096), 1);
        assert_eq!(fs_size_mb(255, 4096), 0);
        assert_eq!(fs_size_mb(10 * 1024 * 1024, 4096), 40 * 1024);
        assert_eq!(fs_size_mb(u64::MAX, u64::MAX), u64::MAX);
    }

    #[test]
    fn tmp_disk_of_a_real_directory_and_of_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        assert!(tmp_disk_mb(dir.path()).unwrap() > 0);
        assert_eq!(tmp_disk_mb(&dir.path().join("missing")).unwrap(), 0);
        assert!(matches!(
            tmp_disk_mb(Path::new("/tmp/a\0b")),
            Err(HwError::FileSystem { .. })
        ));
    }

    #[test]
    fn node_line_matches_slurmd_c() {
        let hw = HwInfo {
            cpus: 2,
            boards: 1,
            sockets_per_board: 1,
            cores_per_socket: 2,
            threads_per_core: 1,
            real_memory_mb: 3915,
            free_memory_mb: 0,
            boot_time: 0,
            uptime_secs: 3723,
            cpu_load_hundredths: 0,
        };
        assert_eq!(
            format_node_line("vm", &hw),
            "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=3915\nUpTime=0-01:02:03\n"
        );
        assert_eq!(format_uptime(2 * 86_400 + 59), "2-00:00:59");
    }

    #[test]
    fn proc_probe_reads_a_fake_root() {
        let dir = tempfile::tempdir().unwrap();
        let proc_dir = dir.path().join("proc");
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(proc_dir.join("cpuinfo"), CPUINFO_2C_HT).unwrap();
        std::fs::write(proc_dir.join("meminfo"), MEMINFO).unwrap();
        std::fs::write(proc_dir.join("stat"), "btime 100\n").unwrap();
        std::fs::write(proc_dir.join("uptime"), "5.0 1.0\n").unwrap();
        let hw = ProcProbe::new(dir.path()).probe().unwrap();
        // No /proc/loadavg: a load of 0, not a failure.
        assert_eq!(hw.cpu_load_hundredths, 0);
        std::fs::write(proc_dir.join("loadavg"), "0.10 2.26 1.00 2/300 99\n").unwrap();
        let hw = ProcProbe::new(dir.path()).probe().unwrap();
        assert_eq!((hw.cpu_load_hundredths, hw.free_memory_mb), (226, 22719));
        assert_eq!(
            (hw.cpus, hw.cores_per_socket, hw.threads_per_core),
            (4, 2, 2)
        );
        assert_eq!(
            (hw.real_memory_mb, hw.boot_time, hw.uptime_secs),
            (32011, 100, 5)
        );
    }

    #[test]
    fn real_host_probe_works() {
        let hw = ProcProbe::default().probe().unwrap();
        assert!(hw.cpus >= 1 && hw.real_memory_mb > 0);
        assert_eq!(
            hw.cpus,
            hw.boards * hw.sockets_per_board * hw.cores_per_socket * hw.threads_per_core
        );
    }
}
