//! cgroup.conf: how slurmd/slurmstepd confine jobs (cores, memory, devices).
//!
//! Only slurmd and slurmstepd act on it, but `scontrol show config` prints it
//! too, so it is parsed here with the same lexer and diagnostics as
//! slurm.conf. Defaults are Slurm 22.05's.

use std::time::Duration;

use super::lexer::{self, IncludeSource, Line};
use super::plugins::word_enum;
use super::value::Field;
use super::{ConfError, ConfWarning, Parsed, WarningKind};

word_enum! {
    /// CgroupPlugin: which cgroup hierarchy to drive.
    CgroupPlugin, default Autodetect, expected "autodetect, cgroup/v1 or cgroup/v2" {
        Autodetect => "autodetect",
        V1 => "cgroup/v1",
        V2 => "cgroup/v2",
    }
}

/// The whole of cgroup.conf. Percentages are of the job's allocated memory
/// (Allowed*) or of the node's RealMemory (Max*).
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupConf {
    pub plugin: CgroupPlugin,
    pub mountpoint: String,
    pub automount: bool,
    pub constrain_cores: bool,
    pub constrain_devices: bool,
    pub constrain_ram_space: bool,
    pub constrain_swap_space: bool,
    pub constrain_kmem_space: bool,
    pub allowed_ram_space: f64,
    pub allowed_swap_space: f64,
    /// Bytes; None: unset.
    pub allowed_kmem_space: Option<f64>,
    pub max_ram_percent: f64,
    pub max_swap_percent: f64,
    pub max_kmem_percent: f64,
    /// MB.
    pub min_ram_space: u64,
    /// MB.
    pub min_kmem_space: u64,
    /// None: leave the kernel's value.
    pub memory_swappiness: Option<u8>,
    pub ignore_systemd: bool,
    pub ignore_systemd_on_failure: bool,
    pub enable_controllers: bool,
    pub signal_children_processes: bool,
    pub systemd_timeout: Duration,
}

impl Default for CgroupConf {
    fn default() -> Self {
        CgroupConf {
            plugin: CgroupPlugin::Autodetect,
            mountpoint: "/sys/fs/cgroup".to_string(),
            automount: false,
            constrain_cores: false,
            constrain_devices: false,
            constrain_ram_space: false,
            constrain_swap_space: false,
            constrain_kmem_space: false,
            allowed_ram_space: 100.0,
            allowed_swap_space: 0.0,
            allowed_kmem_space: None,
            max_ram_percent: 100.0,
            max_swap_percent: 100.0,
            max_kmem_percent: 100.0,
            min_ram_space: 30,
            min_kmem_space: 30,
            memory_swappiness: None,
            ignore_systemd: false,
            ignore_systemd_on_failure: false,
            enable_controllers: false,
            signal_children_processes: false,
            systemd_timeout: Duration::from_millis(1000),
        }
    }
}

/// Keys still accepted by Slurm but without effect.
const OBSOLETE: &[&str] = &[
    "CgroupReleaseAgentDir",
    "TaskAffinity",
    "AllowedDevicesFile",
];

const PERCENT_0_100: &str = "a percentage from 0 to 100";

impl CgroupConf {
    /// Parses text that must not use `Include`.
    pub fn parse(text: &str, origin: &str) -> Result<Parsed<CgroupConf>, ConfError> {
        Self::from_lines(lexer::lex(text, origin)?)
    }

    /// Parses text, resolving `Include` through `source`.
    pub fn parse_with(
        text: &str,
        origin: &str,
        source: &mut dyn IncludeSource,
    ) -> Result<Parsed<CgroupConf>, ConfError> {
        Self::from_lines(lexer::lex_with(text, origin, source)?)
    }

    /// Reads cgroup.conf (and its includes) from the filesystem.
    pub fn load(path: &str) -> Result<Parsed<CgroupConf>, ConfError> {
        Self::from_lines(lexer::load_with(path, &mut lexer::FsIncludes)?)
    }

    fn from_lines(lines: Vec<Line>) -> Result<Parsed<CgroupConf>, ConfError> {
        let mut c = CgroupConf::default();
        let mut warnings = Vec::new();
        for line in &lines {
            for pair in &line.pairs {
                c.apply(&pair.key, &pair.value, line, &mut warnings)?;
            }
        }
        Ok(Parsed { conf: c, warnings })
    }

    fn apply(
        &mut self,
        key: &str,
        value: &str,
        line: &Line,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<(), ConfError> {
        let loc = &line.loc;
        let f = |k: &'static str| Field::new(k, value, loc);
        let pct100 = |k: &'static str| {
            Field::new(k, value, loc).with(PERCENT_0_100, |v| {
                super::value::parse_percent(v).filter(|p| *p <= 100.0)
            })
        };
        match key.to_ascii_lowercase().as_str() {
            "cgroupplugin" => {
                self.plugin = f("CgroupPlugin").with(CgroupPlugin::EXPECTED, CgroupPlugin::parse)?
            }
            "cgroupmountpoint" => {
                self.mountpoint = f("CgroupMountpoint").name()?;
            }
            "cgroupautomount" => self.automount = f("CgroupAutomount").bool()?,
            "constraincores" => self.constrain_cores = f("ConstrainCores").bool()?,
            "constraindevices" => self.constrain_devices = f("ConstrainDevices").bool()?,
            "constrainramspace" => self.constrain_ram_space = f("ConstrainRAMSpace").bool()?,
            "constrainswapspace" => self.constrain_swap_space = f("ConstrainSwapSpace").bool()?,
            "constrainkmemspace" => self.constrain_kmem_space = f("ConstrainKmemSpace").bool()?,
            "allowedramspace" => self.allowed_ram_space = f("AllowedRAMSpace").percent()?,
            "allowedswapspace" => self.allowed_swap_space = f("AllowedSwapSpace").percent()?,
            "allowedkmemspace" => {
                self.allowed_kmem_space =
                    Some(f("AllowedKmemSpace").with("a number of bytes", |v| {
                        v.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|b| b.is_finite() && *b >= 0.0)
                    })?)
            }
            "maxrampercent" => self.max_ram_percent = pct100("MaxRAMPercent")?,
            "maxswappercent" => self.max_swap_percent = pct100("MaxSwapPercent")?,
            "maxkmempercent" => self.max_kmem_percent = pct100("MaxKmemPercent")?,
            "minramspace" => self.min_ram_space = f("MinRAMSpace").mem_mb()?,
            "minkmemspace" => self.min_kmem_space = f("MinKmemSpace").mem_mb()?,
            "memoryswappiness" => {
                self.memory_swappiness = Some(
                    f("MemorySwappiness").with("a whole number from 0 to 100", |v| {
                        v.trim().parse::<u8>().ok().filter(|s| *s <= 100)
                    })?,
                )
            }
            "ignoresystemd" => self.ignore_systemd = f("IgnoreSystemd").bool()?,
            "ignoresystemdonfailure" => {
                self.ignore_systemd_on_failure = f("IgnoreSystemdOnFailure").bool()?
            }
            "enablecontrollers" => self.enable_controllers = f("EnableControllers").bool()?,
            "signalchildrenprocesses" => {
                self.signal_children_processes = f("SignalChildrenProcesses").bool()?
            }
            "systemdtimeout" => {
                self.systemd_timeout = f("SystemdTimeout")
                    .with("a whole number of milliseconds", |v| {
                        v.trim().parse::<u32>().ok()
                    })
                    .map(|ms| Duration::from_millis(u64::from(ms)))?
            }
            _ => {
                let kind = match OBSOLETE.iter().find(|k| k.eq_ignore_ascii_case(key)) {
                    Some(k) => WarningKind::Ignored {
                        key: (*k).to_string(),
                        reason: "obsolete parameter",
                    },
                    None => WarningKind::UnknownKey {
                        key: key.to_string(),
                    },
                };
                warnings.push(ConfWarning {
                    loc: loc.clone(),
                    kind,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_when_empty() {
        let p = CgroupConf::parse("", "cgroup.conf").unwrap();
        assert_eq!(p.conf, CgroupConf::default());
        assert_eq!(p.conf.plugin, CgroupPlugin::Autodetect);
        assert_eq!(p.conf.mountpoint, "/sys/fs/cgroup");
        assert_eq!(p.conf.min_ram_space, 30);
    }

    #[test]
    fn reference_cgroup_conf() {
        // A copy of the cgroup.conf of the reference Slurm 22.05 cluster.
        let text = include_str!("testdata/ref-cgroup.conf");
        let p = CgroupConf::parse(text, "cgroup.conf").unwrap();
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let c = p.conf;
        assert_eq!(c.plugin, CgroupPlugin::V1);
        assert!(c.automount);
        assert!(c.constrain_cores);
        assert!(!c.constrain_ram_space);
        assert!(!c.constrain_devices);
        assert_eq!(c.allowed_ram_space, 100.0);
        assert_eq!(c.allowed_swap_space, 0.0);
    }

    #[test]
    fn values_are_typed() {
        let text = "CgroupPlugin=cgroup/v2 constrainramspace=YES AllowedRAMSpace=95.5\n\
                    MaxSwapPercent=50% MinRAMSpace=1G MemorySwappiness=10\n\
                    CgroupMountpoint=/cg SystemdTimeout=500";
        let c = CgroupConf::parse(text, "c").unwrap().conf;
        assert_eq!(c.plugin, CgroupPlugin::V2);
        assert!(c.constrain_ram_space);
        assert_eq!(c.allowed_ram_space, 95.5);
        assert_eq!(c.max_swap_percent, 50.0);
        assert_eq!(c.memory_swappiness, Some(10));
        assert_eq!(c.mountpoint, "/cg");
        assert_eq!(c.systemd_timeout, Duration::from_millis(500));
    }

    #[test]
    fn bad_values_are_errors() {
        let cases = [
            ("CgroupPlugin=cgroup/v3", "CgroupPlugin"),
            ("ConstrainCores=maybe", "ConstrainCores"),
            ("MaxRAMPercent=101", "MaxRAMPercent"),
            ("AllowedRAMSpace=-5", "AllowedRAMSpace"),
            ("MemorySwappiness=200", "MemorySwappiness"),
            ("CgroupMountpoint=", "CgroupMountpoint"),
        ];
        for (text, key) in cases {
            let err = CgroupConf::parse(text, "c").unwrap_err();
            assert!(
                matches!(err, ConfError::InvalidValue { key: ref k, .. } if k == key),
                "{text}: {err}"
            );
        }
        let err =
            CgroupConf::parse("\nConstrainCores=maybe", "/etc/slurm/cgroup.conf").unwrap_err();
        assert_eq!(
            err.to_string(),
            "/etc/slurm/cgroup.conf:2: invalid value \"maybe\" for ConstrainCores: expected YES or NO"
        );
    }

    #[test]
    fn unknown_and_obsolete_keys_warn() {
        let p = CgroupConf::parse("Frobnicate=1\nTaskAffinity=no", "c").unwrap();
        assert_eq!(p.warnings.len(), 2);
        assert_eq!(
            p.warnings[0].kind,
            WarningKind::UnknownKey {
                key: "Frobnicate".into()
            }
        );
        assert!(matches!(p.warnings[1].kind, WarningKind::Ignored { .. }));
        assert_eq!(p.warnings[1].loc.line, 2);
    }
}
