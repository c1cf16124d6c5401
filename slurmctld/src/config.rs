//! `scontrol show config`: the running configuration as ordered key/values.
//!
//! The keys and their order are Slurm's. Values come from the typed
//! configuration where the meaning matters (durations print as `N sec`,
//! booleans as Slurm prints them), else from the line as written, else
//! Slurm's default for an unset option (`(null)` where Slurm has none), so
//! that the list has every key of `scontrol show config`, in its order.

use std::time::Duration;

use slurm_common::conf::{AccountingStorageType, CgroupConf, ProctrackType, SlurmConf, TaskPlugin};
use slurm_proto::v1::ConfigEntry;

use crate::VERSION;

/// Facts only the running daemon knows.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub conf_path: String,
    pub boot_time: String,
    pub next_job_id: u32,
    pub slurm_user: String,
    /// The login name of the user the daemon runs as: Slurm's
    /// `AccountingStorageUser` when accounting does not go to slurmdbd and
    /// slurm.conf names none.
    pub process_user: String,
}

fn secs(d: Duration) -> String {
    format!("{} sec", d.as_secs())
}

fn yes_no(b: bool) -> String {
    if b { "Yes" } else { "No" }.to_string()
}

fn raw(conf: &SlurmConf, key: &str) -> Option<String> {
    conf.raw_entry(key).map(|e| e.value.clone())
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(null)".to_string())
}

/// Values that need the typed configuration or the running daemon, by key.
fn typed(conf: &SlurmConf, rt: &Runtime) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, v: String| out.push((k.to_string(), v));
    let r = |k: &str| raw(conf, k).unwrap_or_else(|| "(null)".to_string());

    push(
        "AccountingStorageBackupHost",
        opt(&conf.accounting_storage_backup_host),
    );
    // Slurm fills the storage defaults by type: slurmdbd's port and a user
    // it does not use (`N/A`), or, without slurmdbd, port 0 and the user the
    // daemon runs as. The host is `localhost` either way.
    let dbd = conf.accounting_storage_type == AccountingStorageType::Slurmdbd;
    push(
        "AccountingStorageHost",
        conf.accounting_storage_host
            .clone()
            .unwrap_or_else(|| "localhost".to_string()),
    );
    push(
        "AccountingStoragePort",
        match raw(conf, "AccountingStoragePort") {
            Some(v) if v.trim() == "0" => "0".to_string(),
            Some(_) => conf.accounting_storage_port.to_string(),
            None if dbd => conf.accounting_storage_port.to_string(),
            None => "0".to_string(),
        },
    );
    push(
        "AccountingStorageUser",
        raw(conf, "AccountingStorageUser").unwrap_or_else(|| {
            if dbd {
                "N/A".to_string()
            } else {
                rt.process_user.clone()
            }
        }),
    );
    push("MaxDBDMsgs", max_dbd_msgs(conf, dbd));
    push(
        "AccountingStorageType",
        raw(conf, "AccountingStorageType").unwrap_or_else(|| "accounting_storage/none".to_string()),
    );
    push("AuthAltTypes", r("AuthAltTypes"));
    push("AuthInfo", r("AuthInfo"));
    push("AuthType", r("AuthType"));
    push("BatchStartTimeout", secs(conf.batch_start_timeout));
    push("BOOT_TIME", rt.boot_time.clone());
    push("ClusterName", conf.cluster_name.clone());
    push("CompleteWait", secs(conf.complete_wait));
    push(
        "DebugFlags",
        if conf.debug_flags.is_empty() {
            "(null)".to_string()
        } else {
            conf.debug_flags.join(",")
        },
    );
    push("DisableRootJobs", yes_no(conf.disable_root_jobs));
    push("EioTimeout", conf.eio_timeout.as_secs().to_string());
    push(
        "EnforcePartLimits",
        r("EnforcePartLimits").replace("(null)", "NO"),
    );
    push("Epilog", opt(&conf.epilog));
    push("EpilogSlurmctld", opt(&conf.epilog_slurmctld));
    push("FirstJobId", conf.first_job_id.to_string());
    push("HealthCheckInterval", secs(conf.health_check_interval));
    push("HealthCheckProgram", opt(&conf.health_check_program));
    push("InactiveLimit", secs(conf.inactive_limit));
    push("JobRequeue", u8::from(conf.job_requeue).to_string());
    push("KillOnBadExit", u8::from(conf.kill_on_bad_exit).to_string());
    push("KillWait", secs(conf.kill_wait));
    push("MailProg", conf.mail_prog.clone());
    push("MaxArraySize", conf.max_array_size.to_string());
    push("MaxJobCount", conf.max_job_count.to_string());
    push("MaxJobId", conf.max_job_id.to_string());
    push("MaxStepCount", conf.max_step_count.to_string());
    push("MaxTasksPerNode", conf.max_tasks_per_node.to_string());
    push("MessageTimeout", secs(conf.message_timeout));
    push("MinJobAge", secs(conf.min_job_age));
    push("NEXT_JOB_ID", rt.next_job_id.to_string());
    push("Prolog", opt(&conf.prolog));
    push("PrologSlurmctld", opt(&conf.prolog_slurmctld));
    push(
        "ReturnToService",
        r("ReturnToService").replace("(null)", "1"),
    );
    push("SchedulerParameters", r("SchedulerParameters"));
    push(
        "SchedulerType",
        r("SchedulerType").replace("(null)", "sched/backfill"),
    );
    push(
        "SelectType",
        r("SelectType").replace("(null)", "select/cons_tres"),
    );
    push(
        "SelectTypeParameters",
        r("SelectTypeParameters").to_ascii_uppercase(),
    );
    push("SlurmUser", rt.slurm_user.clone());
    push(
        "SlurmctldDebug",
        r("SlurmctldDebug").replace("(null)", "info"),
    );
    for (i, host) in conf.slurmctld_hosts.iter().enumerate() {
        push(&format!("SlurmctldHost[{i}]"), host.to_string());
    }
    push("SlurmctldLogFile", opt(&conf.slurmctld_log_file));
    push("SlurmctldPort", {
        let p = &conf.slurmctld_port;
        if p.first == p.last {
            p.first.to_string()
        } else {
            format!("{}-{}", p.first, p.last)
        }
    });
    push("SlurmctldTimeout", secs(conf.slurmctld_timeout));
    push("SlurmdDebug", r("SlurmdDebug").replace("(null)", "info"));
    push("SlurmdLogFile", opt(&conf.slurmd_log_file));
    push("SlurmdPidFile", conf.slurmd_pid_file.clone());
    push("SlurmdPort", conf.slurmd_port.to_string());
    push("SlurmdSpoolDir", conf.slurmd_spool_dir.clone());
    push("SlurmdTimeout", secs(conf.slurmd_timeout));
    push("SlurmctldPidFile", conf.slurmctld_pid_file.clone());
    push("SLURM_CONF", rt.conf_path.clone());
    push("SLURM_VERSION", VERSION.to_string());
    push("StateSaveLocation", conf.state_save_location.clone());
    push("TCPTimeout", secs(conf.tcp_timeout));
    push("TmpFS", conf.tmp_fs.clone());
    push("TreeWidth", conf.tree_width.to_string());
    push("WaitTime", secs(conf.wait_time));
    push(
        "MaxNodeCount",
        conf.nodes
            .iter()
            .filter(|n| !n.name.eq_ignore_ascii_case("DEFAULT"))
            .count()
            .to_string(),
    );
    push("SlurmdUser", "root(0)".to_string());
    out
}

/// MaxDBDMsgs: as written, else without slurmdbd 0 (no queue), else
/// room for two messages per job and four per node, at least 10000.
fn max_dbd_msgs(conf: &SlurmConf, dbd: bool) -> String {
    if let Some(v) = raw(conf, "MaxDBDMsgs") {
        return v;
    }
    if !dbd {
        return "0".to_string();
    }
    let nodes = conf
        .nodes
        .iter()
        .filter(|n| !n.name.eq_ignore_ascii_case("DEFAULT"))
        .count() as u64;
    let want = u64::from(conf.max_job_count) * 2 + nodes * 4;
    want.max(10_000).to_string()
}

/// Whether `scontrol show config` ends with the `Cgroup Support
/// Configuration:` section: Slurm's controller reads cgroup.conf, and so
/// reports it, only where a cgroup plugin is in use (ProctrackType or
/// TaskPlugin); with `proctrack/linuxproc` and `task/none` it prints none.
pub fn shows_cgroup(conf: &SlurmConf) -> bool {
    conf.proctrack_type == ProctrackType::Cgroup || conf.task_plugin.contains(&TaskPlugin::Cgroup)
}

/// How Slurm prints a number written in slurm.conf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Plain,
    Sec,
    Min,
    Usec,
    NodesPerMin,
    Percent,
}

impl Unit {
    fn render(self, raw: &str) -> String {
        let suffix = match self {
            Unit::Plain => return raw.to_string(),
            Unit::Sec => "sec",
            Unit::Min => "min",
            Unit::Usec => "usec",
            Unit::NodesPerMin => "nodes/min",
            Unit::Percent => "percent",
        };
        if raw.parse::<u64>().is_ok() {
            format!("{raw} {suffix}")
        } else {
            raw.to_string()
        }
    }
}

/// Every key `scontrol show config` prints, in Slurm's order, with how a
/// value written in slurm.conf is shown and what Slurm shows when the key
/// is not set.
const KEYS: &[(&str, Unit, &str)] = &[
    ("AccountingStorageBackupHost", Unit::Plain, "(null)"),
    ("AccountingStorageEnforce", Unit::Plain, "none"),
    ("AccountingStorageHost", Unit::Plain, "localhost"),
    ("AccountingStorageExternalHost", Unit::Plain, "(null)"),
    ("AccountingStorageParameters", Unit::Plain, "(null)"),
    ("AccountingStoragePort", Unit::Plain, "0"),
    (
        "AccountingStorageTRES",
        Unit::Plain,
        "cpu,mem,energy,node,billing,fs/disk,vmem,pages",
    ),
    (
        "AccountingStorageType",
        Unit::Plain,
        "accounting_storage/none",
    ),
    ("AccountingStorageUser", Unit::Plain, "root"),
    ("AccountingStoreFlags", Unit::Plain, "(null)"),
    (
        "AcctGatherEnergyType",
        Unit::Plain,
        "acct_gather_energy/none",
    ),
    (
        "AcctGatherFilesystemType",
        Unit::Plain,
        "acct_gather_filesystem/none",
    ),
    (
        "AcctGatherInterconnectType",
        Unit::Plain,
        "acct_gather_interconnect/none",
    ),
    ("AcctGatherNodeFreq", Unit::Sec, "0 sec"),
    (
        "AcctGatherProfileType",
        Unit::Plain,
        "acct_gather_profile/none",
    ),
    ("AllowSpecResourcesUsage", Unit::Plain, "No"),
    ("AuthAltTypes", Unit::Plain, "(null)"),
    ("AuthAltParameters", Unit::Plain, "(null)"),
    ("AuthInfo", Unit::Plain, "(null)"),
    ("AuthType", Unit::Plain, "auth/munge"),
    ("BatchStartTimeout", Unit::Sec, "10 sec"),
    (
        "BcastExclude",
        Unit::Plain,
        "/lib,/usr/lib,/lib64,/usr/lib64",
    ),
    ("BcastParameters", Unit::Plain, "(null)"),
    ("BOOT_TIME", Unit::Plain, "2026-11-21T07:01:00"),
    ("BurstBufferType", Unit::Plain, "(null)"),
    ("CliFilterPlugins", Unit::Plain, "(null)"),
    ("ClusterName", Unit::Plain, "(null)"),
    ("CommunicationParameters", Unit::Plain, "(null)"),
    ("CompleteWait", Unit::Sec, "0 sec"),
    ("CoreSpecPlugin", Unit::Plain, "core_spec/none"),
    ("CpuFreqDef", Unit::Plain, "Unknown"),
    (
        "CpuFreqGovernors",
        Unit::Plain,
        "OnDemand,Performance,UserSpace",
    ),
    ("CredType", Unit::Plain, "cred/munge"),
    ("DebugFlags", Unit::Plain, "(null)"),
    ("DefMemPerNode", Unit::Plain, "UNLIMITED"),
    ("DependencyParameters", Unit::Plain, "(null)"),
    ("DisableRootJobs", Unit::Plain, "No"),
    ("EioTimeout", Unit::Plain, "60"),
    ("EnforcePartLimits", Unit::Plain, "NO"),
    ("Epilog", Unit::Plain, "(null)"),
    ("EpilogMsgTime", Unit::Usec, "2000 usec"),
    ("EpilogSlurmctld", Unit::Plain, "(null)"),
    ("ExtSensorsType", Unit::Plain, "ext_sensors/none"),
    ("ExtSensorsFreq", Unit::Sec, "0 sec"),
    ("FederationParameters", Unit::Plain, "(null)"),
    ("FirstJobId", Unit::Plain, "1"),
    ("GetEnvTimeout", Unit::Sec, "2 sec"),
    ("GresTypes", Unit::Plain, "(null)"),
    ("GpuFreqDef", Unit::Plain, "high,memory=high"),
    ("GroupUpdateForce", Unit::Plain, "1"),
    ("GroupUpdateTime", Unit::Sec, "600 sec"),
    ("HASH_VAL", Unit::Plain, "Match"),
    ("HealthCheckInterval", Unit::Sec, "0 sec"),
    ("HealthCheckNodeState", Unit::Plain, "ANY"),
    ("HealthCheckProgram", Unit::Plain, "(null)"),
    ("InactiveLimit", Unit::Sec, "0 sec"),
    (
        "InteractiveStepOptions",
        Unit::Plain,
        "--interactive --preserve-env --pty $SHELL",
    ),
    ("JobAcctGatherFrequency", Unit::Plain, "30"),
    ("JobAcctGatherType", Unit::Plain, "jobacct_gather/none"),
    ("JobAcctGatherParams", Unit::Plain, "(null)"),
    ("JobCompHost", Unit::Plain, "localhost"),
    ("JobCompLoc", Unit::Plain, "/var/log/slurm_jobcomp.log"),
    ("JobCompPort", Unit::Plain, "0"),
    ("JobCompType", Unit::Plain, "jobcomp/none"),
    ("JobCompUser", Unit::Plain, "root"),
    ("JobContainerType", Unit::Plain, "job_container/none"),
    ("JobCredentialPrivateKey", Unit::Plain, "(null)"),
    ("JobCredentialPublicCertificate", Unit::Plain, "(null)"),
    ("JobDefaults", Unit::Plain, "(null)"),
    ("JobFileAppend", Unit::Plain, "0"),
    ("JobRequeue", Unit::Plain, "1"),
    ("JobSubmitPlugins", Unit::Plain, "(null)"),
    ("KillOnBadExit", Unit::Plain, "0"),
    ("KillWait", Unit::Sec, "30 sec"),
    ("LaunchParameters", Unit::Plain, "(null)"),
    ("LaunchType", Unit::Plain, "launch/slurm"),
    ("Licenses", Unit::Plain, "(null)"),
    ("LogTimeFormat", Unit::Plain, "iso8601_ms"),
    ("MailDomain", Unit::Plain, "(null)"),
    ("MailProg", Unit::Plain, "/bin/mail"),
    ("MaxArraySize", Unit::Plain, "1001"),
    ("MaxDBDMsgs", Unit::Plain, "0"),
    ("MaxJobCount", Unit::Plain, "10000"),
    ("MaxJobId", Unit::Plain, "67043328"),
    ("MaxMemPerNode", Unit::Plain, "UNLIMITED"),
    ("MaxNodeCount", Unit::Plain, "4"),
    ("MaxStepCount", Unit::Plain, "40000"),
    ("MaxTasksPerNode", Unit::Plain, "512"),
    ("MCSPlugin", Unit::Plain, "mcs/none"),
    ("MCSParameters", Unit::Plain, "(null)"),
    ("MessageTimeout", Unit::Sec, "10 sec"),
    ("MinJobAge", Unit::Sec, "300 sec"),
    ("MpiDefault", Unit::Plain, "none"),
    ("MpiParams", Unit::Plain, "(null)"),
    ("MULTIPLE_SLURMD", Unit::Plain, "Yes"),
    ("NEXT_JOB_ID", Unit::Plain, "2"),
    ("NodeFeaturesPlugins", Unit::Plain, "(null)"),
    ("OverTimeLimit", Unit::Min, "0 min"),
    (
        "PluginDir",
        Unit::Plain,
        "/usr/lib/x86_64-linux-gnu/slurm-wlm",
    ),
    ("PlugStackConfig", Unit::Plain, "(null)"),
    ("PowerParameters", Unit::Plain, "(null)"),
    ("PowerPlugin", Unit::Plain, ""),
    ("PreemptMode", Unit::Plain, "OFF"),
    ("PreemptType", Unit::Plain, "preempt/none"),
    ("PreemptExemptTime", Unit::Plain, "00:00:00"),
    ("PrEpParameters", Unit::Plain, "(null)"),
    ("PrEpPlugins", Unit::Plain, "prep/script"),
    ("PriorityParameters", Unit::Plain, "(null)"),
    ("PrioritySiteFactorParameters", Unit::Plain, "(null)"),
    ("PrioritySiteFactorPlugin", Unit::Plain, "(null)"),
    ("PriorityType", Unit::Plain, "priority/basic"),
    ("PrivateData", Unit::Plain, "none"),
    ("ProctrackType", Unit::Plain, "proctrack/cgroup"),
    ("Prolog", Unit::Plain, "(null)"),
    ("PrologEpilogTimeout", Unit::Plain, "65534"),
    ("PrologSlurmctld", Unit::Plain, "(null)"),
    ("PrologFlags", Unit::Plain, "(null)"),
    ("PropagatePrioProcess", Unit::Plain, "0"),
    ("PropagateResourceLimits", Unit::Plain, "ALL"),
    ("PropagateResourceLimitsExcept", Unit::Plain, "(null)"),
    ("RebootProgram", Unit::Plain, "(null)"),
    ("ReconfigFlags", Unit::Plain, "(null)"),
    ("RequeueExit", Unit::Plain, "(null)"),
    ("RequeueExitHold", Unit::Plain, "(null)"),
    ("ResumeFailProgram", Unit::Plain, "(null)"),
    ("ResumeProgram", Unit::Plain, "(null)"),
    ("ResumeRate", Unit::NodesPerMin, "300 nodes/min"),
    ("ResumeTimeout", Unit::Sec, "60 sec"),
    ("ResvEpilog", Unit::Plain, "(null)"),
    ("ResvOverRun", Unit::Min, "0 min"),
    ("ResvProlog", Unit::Plain, "(null)"),
    ("ReturnToService", Unit::Plain, "1"),
    ("RoutePlugin", Unit::Plain, "route/default"),
    ("SchedulerParameters", Unit::Plain, "(null)"),
    ("SchedulerTimeSlice", Unit::Sec, "30 sec"),
    ("SchedulerType", Unit::Plain, "sched/backfill"),
    ("ScronParameters", Unit::Plain, "(null)"),
    ("SelectType", Unit::Plain, "select/cons_tres"),
    ("SelectTypeParameters", Unit::Plain, "(null)"),
    ("SlurmUser", Unit::Plain, "slurm(64030)"),
    ("SlurmctldAddr", Unit::Plain, "(null)"),
    ("SlurmctldDebug", Unit::Plain, "info"),
    ("SlurmctldHost[0]", Unit::Plain, "vm(127.0.0.1)"),
    ("SlurmctldLogFile", Unit::Plain, "(null)"),
    ("SlurmctldPort", Unit::Plain, "6817"),
    ("SlurmctldSyslogDebug", Unit::Plain, "(null)"),
    ("SlurmctldPrimaryOffProg", Unit::Plain, "(null)"),
    ("SlurmctldPrimaryOnProg", Unit::Plain, "(null)"),
    ("SlurmctldTimeout", Unit::Sec, "120 sec"),
    ("SlurmctldParameters", Unit::Plain, "(null)"),
    ("SlurmdDebug", Unit::Plain, "info"),
    ("SlurmdLogFile", Unit::Plain, "(null)"),
    ("SlurmdParameters", Unit::Plain, "(null)"),
    ("SlurmdPidFile", Unit::Plain, "/var/run/slurmd.pid"),
    ("SlurmdPort", Unit::Plain, "6818"),
    ("SlurmdSpoolDir", Unit::Plain, "/var/spool/slurmd"),
    ("SlurmdSyslogDebug", Unit::Plain, "(null)"),
    ("SlurmdTimeout", Unit::Sec, "300 sec"),
    ("SlurmdUser", Unit::Plain, "root(0)"),
    ("SlurmSchedLogFile", Unit::Plain, "(null)"),
    ("SlurmSchedLogLevel", Unit::Plain, "0"),
    ("SlurmctldPidFile", Unit::Plain, "/var/run/slurmctld.pid"),
    ("SlurmctldPlugstack", Unit::Plain, "(null)"),
    ("SLURM_CONF", Unit::Plain, "/etc/slurm/slurm.conf"),
    ("SLURM_VERSION", Unit::Plain, "22.05.8"),
    ("SrunEpilog", Unit::Plain, "(null)"),
    ("SrunPortRange", Unit::Plain, "0-0"),
    ("SrunProlog", Unit::Plain, "(null)"),
    ("StateSaveLocation", Unit::Plain, "/var/spool"),
    ("SuspendExcNodes", Unit::Plain, "(null)"),
    ("SuspendExcParts", Unit::Plain, "(null)"),
    ("SuspendProgram", Unit::Plain, "(null)"),
    ("SuspendRate", Unit::NodesPerMin, "60 nodes/min"),
    ("SuspendTime", Unit::Plain, "INFINITE"),
    ("SuspendTimeout", Unit::Sec, "30 sec"),
    ("SwitchParameters", Unit::Plain, "(null)"),
    ("SwitchType", Unit::Plain, "switch/none"),
    ("TaskEpilog", Unit::Plain, "(null)"),
    ("TaskPlugin", Unit::Plain, "(null)"),
    ("TaskPluginParam", Unit::Plain, "(null type)"),
    ("TaskProlog", Unit::Plain, "(null)"),
    ("TCPTimeout", Unit::Sec, "2 sec"),
    ("TmpFS", Unit::Plain, "/tmp"),
    ("TopologyParam", Unit::Plain, "(null)"),
    ("TopologyPlugin", Unit::Plain, "topology/none"),
    ("TrackWCKey", Unit::Plain, "No"),
    ("TreeWidth", Unit::Plain, "50"),
    ("UsePam", Unit::Plain, "No"),
    ("UnkillableStepProgram", Unit::Plain, "(null)"),
    ("UnkillableStepTimeout", Unit::Sec, "60 sec"),
    ("VSizeFactor", Unit::Percent, "0 percent"),
    ("WaitTime", Unit::Sec, "0 sec"),
    ("X11Parameters", Unit::Plain, "(null)"),
];

/// The entries in Slurm's order: a value the daemon resolved (typed), else
/// the value as written in slurm.conf, else Slurm's default.
pub fn entries(conf: &SlurmConf, rt: &Runtime) -> Vec<ConfigEntry> {
    let typed = typed(conf, rt);
    let find = |k: &str| {
        typed
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let mut out = Vec::with_capacity(KEYS.len() + 4);
    for &(key, unit, default) in KEYS {
        if key.starts_with("SlurmctldHost[") {
            for (k, v) in typed
                .iter()
                .filter(|(k, _)| k.starts_with("SlurmctldHost["))
            {
                out.push(ConfigEntry {
                    key: k.clone(),
                    value: v.clone(),
                });
            }
            continue;
        }
        let value = find(key)
            .or_else(|| raw(conf, key).map(|v| unit.render(&v)))
            .unwrap_or_else(|| default.to_string());
        out.push(ConfigEntry {
            key: key.to_string(),
            value,
        });
    }
    out
}

/// The `Cgroup Support Configuration:` section that follows (an entry
/// with an empty key is a section line), from cgroup.conf.
pub fn cgroup_entries(cg: &CgroupConf) -> Vec<ConfigEntry> {
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let pct = |p: f64| format!("{p:.1}%");
    let rows: Vec<(&str, String)> = vec![
        ("", "Cgroup Support Configuration:".to_string()),
        (
            "AllowedKmemSpace",
            cg.allowed_kmem_space
                .map_or_else(|| "(null)".to_string(), pct),
        ),
        ("AllowedRAMSpace", pct(cg.allowed_ram_space)),
        ("AllowedSwapSpace", pct(cg.allowed_swap_space)),
        ("CgroupAutomount", yes(cg.automount)),
        ("CgroupMountpoint", cg.mountpoint.clone()),
        ("CgroupPlugin", cg.plugin.as_str().to_string()),
        ("ConstrainCores", yes(cg.constrain_cores)),
        ("ConstrainDevices", yes(cg.constrain_devices)),
        ("ConstrainKmemSpace", yes(cg.constrain_kmem_space)),
        ("ConstrainRAMSpace", yes(cg.constrain_ram_space)),
        ("ConstrainSwapSpace", yes(cg.constrain_swap_space)),
        ("IgnoreSystemd", yes(cg.ignore_systemd)),
        ("IgnoreSystemdOnFailure", yes(cg.ignore_systemd_on_failure)),
        ("MaxKmemPercent", pct(cg.max_kmem_percent)),
        ("MaxRAMPercent", pct(cg.max_ram_percent)),
        ("MaxSwapPercent", pct(cg.max_swap_percent)),
        (
            "MemorySwappiness",
            cg.memory_swappiness
                .map_or_else(|| "(null)".to_string(), |v| v.to_string()),
        ),
        ("MinKmemSpace", format!("{} MB", cg.min_kmem_space)),
        ("MinRAMSpace", format!("{} MB", cg.min_ram_space)),
    ];
    rows.into_iter()
        .map(|(k, value)| ConfigEntry {
            key: k.to_string(),
            value,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a controller started at a fixed time as `process_user` knows.
    fn runtime(process_user: &str) -> Runtime {
        Runtime {
            conf_path: "/etc/slurm/slurm.conf".into(),
            boot_time: "2026-11-21T07:01:00".into(),
            next_job_id: 2,
            slurm_user: "root(0)".into(),
            process_user: process_user.into(),
        }
    }

    #[test]
    fn values_come_from_the_conf() {
        let conf = SlurmConf::parse(crate::core::tests::CONF, "slurm.conf")
            .unwrap()
            .conf;
        let rt = runtime("root");
        let e = entries(&conf, &rt);
        let get = |k: &str| e.iter().find(|x| x.key == k).map(|x| x.value.as_str());
        assert_eq!(get("ClusterName"), Some("ref"));
        assert_eq!(get("MinJobAge"), Some("300 sec"));
        assert_eq!(get("KillWait"), Some("30 sec"));
        assert_eq!(get("SlurmctldHost[0]"), Some("vm"));
        assert_eq!(get("SelectTypeParameters"), Some("CR_CORE"));
        assert_eq!(get("NEXT_JOB_ID"), Some("2"));
        assert_eq!(get("Prolog"), Some("(null)"));
        assert_eq!(get("SLURM_VERSION"), Some("22.05.8"));
    }

    /// Against `scontrol show config` of real Slurm with the same
    /// slurm.conf and cgroup.conf: every line scontrol gets from the
    /// controller, byte for byte.
    #[test]
    fn matches_real_slurm_for_the_reference_config() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/reference/real-slurm");
        let Ok(text) = std::fs::read_to_string(root.join("slurm.conf")) else {
            return; // reference material not present in this checkout
        };
        let golden =
            std::fs::read_to_string(root.join("golden/scontrol_show_config_full.out")).unwrap();
        let conf = SlurmConf::parse(&text, "slurm.conf").unwrap().conf;
        let rt = Runtime {
            conf_path: "/etc/slurm/slurm.conf".into(),
            boot_time: "2026-11-21T07:01:00".into(),
            next_job_id: 2,
            slurm_user: "slurm(64030)".into(),
            process_user: "root".into(),
        };
        let cgroup = CgroupConf::parse(
            &std::fs::read_to_string(root.join("cgroup.conf")).unwrap(),
            "cgroup.conf",
        )
        .unwrap()
        .conf;
        let mut all = entries(&conf, &rt);
        all.extend(cgroup_entries(&cgroup));
        // As scontrol prints them: a section line after a blank line.
        let ours: Vec<String> = all
            .iter()
            .flat_map(|e| {
                if e.key.is_empty() {
                    vec![String::new(), e.value.clone()]
                } else {
                    vec![format!("{:<23} = {}", e.key, e.value)]
                }
            })
            .collect();
        // Up to the controller status lines that scontrol adds itself.
        // One deliberate difference: TreeWidth defaults to 16 (newer
        // Slurm's default), where 22.05 printed 50.
        let want: Vec<String> = golden
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("Slurmctld("))
            .map(|l| {
                if l.starts_with("TreeWidth ") {
                    format!("{:<23} = 16", "TreeWidth")
                } else {
                    l.to_string()
                }
            })
            .collect();
        let want = want.strip_suffix(&[String::new()]).unwrap_or(&want);
        let diff: Vec<String> = want
            .iter()
            .zip(&ours)
            .filter(|(w, o)| w.as_str() != o.as_str())
            .map(|(w, o)| format!("want {w:?}\n got {o:?}"))
            .collect();
        assert!(diff.is_empty(), "{}", diff.join("\n"));
        assert_eq!(ours.len(), want.len());
        assert!(want.len() > 200, "golden has {} lines", want.len());
    }

    /// Without slurmdbd, Slurm 22.05 prints the storage defaults of
    /// `accounting_storage/none` (captured from `scontrol show config` of
    /// a controller with `AccountingStorageType=accounting_storage/none`,
    /// `ProctrackType=proctrack/linuxproc` and `TaskPlugin=task/none`).
    #[test]
    fn accounting_none_shows_the_none_defaults_and_no_cgroup_section() {
        let text = "ClusterName=ref\nSlurmctldHost=vm\n\
                    ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
                    AccountingStorageType=accounting_storage/none\n\
                    NodeName=vm CPUs=2 RealMemory=4000\n\
                    PartitionName=debug Nodes=vm Default=YES\n";
        let conf = SlurmConf::parse(text, "slurm.conf").unwrap().conf;
        let rt = runtime("operator");
        let e = entries(&conf, &rt);
        let get = |k: &str| e.iter().find(|x| x.key == k).map(|x| x.value.as_str());
        assert_eq!(
            get("AccountingStorageType"),
            Some("accounting_storage/none")
        );
        assert_eq!(get("AccountingStorageHost"), Some("localhost"));
        assert_eq!(get("AccountingStoragePort"), Some("0"));
        assert_eq!(get("AccountingStorageUser"), Some("operator"));
        assert_eq!(get("MaxDBDMsgs"), Some("0"));
        assert!(!shows_cgroup(&conf));

        // Set explicitly, the values are shown as written.
        let text = format!(
            "{text}AccountingStorageHost=db1\nAccountingStoragePort=7000\n\
             AccountingStorageUser=acct\nMaxDBDMsgs=12345\n"
        );
        let conf = SlurmConf::parse(&text, "slurm.conf").unwrap().conf;
        let e = entries(&conf, &rt);
        let get = |k: &str| e.iter().find(|x| x.key == k).map(|x| x.value.as_str());
        assert_eq!(get("AccountingStorageHost"), Some("db1"));
        assert_eq!(get("AccountingStoragePort"), Some("7000"));
        assert_eq!(get("AccountingStorageUser"), Some("acct"));
        assert_eq!(get("MaxDBDMsgs"), Some("12345"));

        // Not set at all: Slurm 22.05 names the default plugin.
        let text = text.replace("AccountingStorageType=accounting_storage/none\n", "");
        let conf = SlurmConf::parse(&text, "slurm.conf").unwrap().conf;
        let e = entries(&conf, &rt);
        let get = |k: &str| e.iter().find(|x| x.key == k).map(|x| x.value.as_str());
        assert_eq!(
            get("AccountingStorageType"),
            Some("accounting_storage/none")
        );
    }

    #[test]
    fn slurmdbd_defaults_scale_max_dbd_msgs_with_jobs_and_nodes() {
        let text = "ClusterName=ref\nSlurmctldHost=vm\n\
                    AccountingStorageType=accounting_storage/slurmdbd\n\
                    NodeName=vm[1-3] CPUs=2\nPartitionName=debug Nodes=ALL\n";
        let conf = SlurmConf::parse(text, "slurm.conf").unwrap().conf;
        let rt = runtime("operator");
        let e = entries(&conf, &rt);
        let get = |k: &str| e.iter().find(|x| x.key == k).map(|x| x.value.as_str());
        assert_eq!(get("AccountingStoragePort"), Some("6819"));
        assert_eq!(get("AccountingStorageUser"), Some("N/A"));
        // 2 * 10000 (MaxJobCount's default) + 4 * 3 nodes.
        assert_eq!(get("MaxDBDMsgs"), Some("20012"));
        assert!(shows_cgroup(&conf), "proctrack/cgroup is the default");
    }
}
