//! `scontrol write config [FILE]`: the running configuration as a
//! slurm.conf, saved beside the one in use.
//!
//! An administrator who changed partitions or nodes with `scontrol update`
//! keeps the result this way. As Slurm 22.05 does, the file is
//! `<base>.<time>`, where base is FILE, else `$SLURM_CONF_OUT`, else
//! `$SLURM_CONF`, else the default slurm.conf, and time is when the
//! controller last read its configuration (so saving twice without a
//! change writes the same file). Its layout follows Slurm's: the settings
//! in groups, unset ones commented out, then one NodeName line per set of
//! alike nodes and one PartitionName line per partition.
//!
//! [`render`] is pure; [`run`] asks the controller and writes the file.

use std::io::Write as _;

use slurm_common::hostlist;
use slurm_common::time::format_duration_sacct;
use slurm_proto::v1;

use super::EnvLookup;
use crate::client::{Controller, DEFAULT_CONF_PATH};
use crate::format::Ctx;
use crate::output::Output;

/// Settings that are facts of the running daemon, not configuration.
const NOT_WRITTEN: &[&str] = &[
    "BOOT_TIME",
    "HASH_VAL",
    "MULTIPLE_SLURMD",
    "NEXT_JOB_ID",
    "SLURM_CONF",
    "SLURM_VERSION",
];

/// Programs: their value is written whole (it may hold arguments).
const WHOLE_VALUES: &[&str] = &[
    "Epilog",
    "EpilogSlurmctld",
    "HealthCheckProgram",
    "MailProg",
    "Prolog",
    "PrologSlurmctld",
    "RebootProgram",
    "ResumeProgram",
    "ResvEpilog",
    "ResvProlog",
    "SrunEpilog",
    "SrunProlog",
    "SuspendProgram",
    "TaskEpilog",
    "TaskProlog",
    "UnkillableStepProgram",
];

/// The groups, in Slurm's order, with the keys each takes; every other
/// key goes to OTHER, written last.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "CONTROL",
        &[
            "ControlMachine",
            "ControlAddr",
            "ClusterName",
            "SlurmUser",
            "SlurmdUser",
            "SlurmctldHost",
            "SlurmctldPort",
            "SlurmdPort",
            "BackupAddr",
            "BackupController",
        ],
    ),
    (
        "LOGGING & OTHER PATHS",
        &[
            "StateSaveLocation",
            "SlurmdSpoolDir",
            "SlurmctldLogFile",
            "SlurmdLogFile",
            "SlurmctldPidFile",
            "SlurmdPidFile",
            "SlurmSchedLogFile",
            "SlurmEventHandlerLogfile",
        ],
    ),
    (
        "ACCOUNTING",
        &[
            "AccountingStorageBackupHost",
            "AccountingStorageEnforce",
            "AccountingStorageHost",
            "AccountingStoragePort",
            "AccountingStorageType",
            "AccountingStorageUser",
            "AccountingStoreFlags",
            "AcctGatherEnergyType",
            "AcctGatherFilesystemType",
            "AcctGatherInterconnectType",
            "AcctGatherNodeFreq",
            "AcctGatherProfileType",
            "JobAcctGatherFrequency",
            "JobAcctGatherType",
        ],
    ),
    (
        "SCHEDULING & ALLOCATION",
        &[
            "SelectType",
            "SelectTypeParameters",
            "SchedulerParameters",
            "SchedulerTimeSlice",
            "SchedulerType",
            "SlurmSchedLogLevel",
            "PreemptMode",
            "PreemptParameters",
            "PreemptType",
            "PreemptExemptTime",
            "PriorityType",
            "FastSchedule",
        ],
    ),
    ("TOPOLOGY", &["TopologyPlugin"]),
    (
        "TIMERS",
        &[
            "SlurmctldTimeout",
            "SlurmdTimeout",
            "InactiveLimit",
            "MinJobAge",
            "KillWait",
            "BatchStartTimeout",
            "CompleteWait",
            "EpilogMsgTime",
            "GetEnvTimeout",
            "Waittime",
        ],
    ),
    (
        "POWER",
        &[
            "SuspendExcNodes",
            "SuspendExcParts",
            "SuspendExcStates",
            "SuspendProgram",
            "SuspendRate",
            "SuspendTime",
            "SuspendTimeout",
            "ResumeProgram",
            "ResumeRate",
            "ResumeTimeout",
        ],
    ),
    ("DEBUG", &["SlurmctldDebug", "SlurmdDebug", "DebugFlags"]),
    (
        "EPILOG & PROLOG",
        &[
            "Epilog",
            "Prolog",
            "SrunProlog",
            "SrunEpilog",
            "TaskEpilog",
            "TaskProlog",
        ],
    ),
    ("PROCESS TRACKING", &["ProctrackType"]),
    ("RESOURCE CONFINEMENT", &["TaskPlugin", "TaskPluginParam"]),
];

/// Width of the `#` rules around a group title.
const RULE: usize = 48;

/// A group title centred between `#` rules.
fn group_header(out: &mut String, title: &str) {
    let rule = "#".repeat(RULE);
    let left = (RULE.saturating_sub(title.len()) / 2).saturating_sub(1);
    let right = left + RULE.saturating_sub(title.len()) % 2;
    out.push_str("#\n");
    out.push_str(&rule);
    out.push_str("\n#");
    out.push_str(&" ".repeat(left));
    out.push_str(title);
    out.push_str(&" ".repeat(right));
    out.push_str("#\n");
    out.push_str(&rule);
    out.push('\n');
}

/// Whether `show config` shows `value` for a setting left unset.
fn unset(key: &str, value: &str) -> bool {
    let is = |v: &str| value.eq_ignore_ascii_case(v);
    value.is_empty()
        || is("(null type)")
        || is("(null)")
        || is("N/A")
        || (key.eq_ignore_ascii_case("DefMemPerNode") && is("UNLIMITED"))
        || ((key.eq_ignore_ascii_case("SlurmctldSyslogDebug")
            || key.eq_ignore_ascii_case("SlurmdSyslogDebug"))
            && is("unknown"))
        || (key.eq_ignore_ascii_case("CpuFreqDef") && is("Unknown"))
}

/// One setting as a slurm.conf line: `#Key=` when unset; else the value
/// up to its unit (`60 sec` is `60`), quoted if it still holds a blank.
/// `SlurmctldHost[0]` is written `SlurmctldHost`.
fn setting_line(key: &str, value: &str) -> String {
    let key = key.split('[').next().unwrap_or(key);
    let value = if unset(key, value) {
        None
    } else if WHOLE_VALUES.iter().any(|k| k.eq_ignore_ascii_case(key)) {
        Some(value)
    } else {
        value.split([' ', '(']).find(|part| !part.is_empty())
    };
    match value {
        Some(v) => {
            if v.contains(' ') {
                format!("{key}=\"{v}\"")
            } else {
                format!("{key}={v}")
            }
        }
        _ => format!("#{key}="),
    }
}

/// The attributes of a node line after its name, as Slurm writes them.
fn node_attributes(n: &v1::NodeInfo, slurmd_port: Option<u32>) -> String {
    let mut s = String::new();
    if !n.node_hostname.is_empty() && n.node_hostname != n.name {
        s.push_str(&format!(" NodeHostName={}", n.node_hostname));
    }
    if !n.node_addr.is_empty() && n.node_addr != n.name {
        s.push_str(&format!(" NodeAddr={}", n.node_addr));
    }
    if n.sockets > 0 {
        s.push_str(&format!(" Sockets={}", n.sockets));
    }
    if n.cores_per_socket > 0 {
        s.push_str(&format!(" CoresPerSocket={}", n.cores_per_socket));
    }
    if n.threads_per_core > 0 {
        s.push_str(&format!(" ThreadsPerCore={}", n.threads_per_core));
    }
    if !n.gres.is_empty() {
        s.push_str(&format!(" Gres={}", n.gres.join(",")));
    }
    if n.real_memory_mb > 1 {
        s.push_str(&format!(" RealMemory={}", n.real_memory_mb));
    }
    if n.tmp_disk_mb > 0 {
        s.push_str(&format!(" TmpDisk={}", n.tmp_disk_mb));
    }
    if n.weight != 1 {
        s.push_str(&format!(" Weight={}", n.weight));
    }
    if !n.features.is_empty() {
        s.push_str(&format!(" Feature={}", n.features.join(",")));
    }
    if n.port != 0 && Some(n.port) != slurmd_port {
        s.push_str(&format!(" Port={}", n.port));
    }
    s
}

/// A time limit as a partition line writes it; `None` when unset.
fn limit(t: Option<&v1::TimeLimit>) -> Option<String> {
    match t?.limit? {
        v1::time_limit::Limit::Unlimited(_) => Some("UNLIMITED".to_string()),
        v1::time_limit::Limit::Minutes(m) => Some(format_duration_sacct(u64::from(m) * 60)),
    }
}

/// One PartitionName line.
fn partition_line(p: &v1::PartitionInfo) -> String {
    use v1::partition_info::{DefaultMemory, MaxMemory};
    let mut s = format!("PartitionName={}", p.name);
    let list = |s: &mut String, key: &str, v: &[String]| {
        let all = matches!(v, [one] if one.eq_ignore_ascii_case("ALL"));
        if !v.is_empty() && !all {
            s.push_str(&format!(" {key}={}", v.join(",")));
        }
    };
    list(&mut s, "AllocNodes", &p.allow_alloc_nodes);
    list(&mut s, "AllowAccounts", &p.allow_accounts);
    list(&mut s, "AllowGroups", &p.allow_groups);
    list(&mut s, "AllowQos", &p.allow_qos);
    if p.is_default {
        s.push_str(" Default=YES");
    }
    match p.default_memory {
        Some(DefaultMemory::DefMemPerCpuMb(mb)) => s.push_str(&format!(" DefMemPerCPU={mb}")),
        Some(DefaultMemory::DefMemPerNodeMb(mb)) => s.push_str(&format!(" DefMemPerNode={mb}")),
        None => {}
    }
    if p.allow_accounts.is_empty() && !p.deny_accounts.is_empty() {
        s.push_str(&format!(" DenyAccounts={}", p.deny_accounts.join(",")));
    }
    if p.allow_qos.is_empty() && !p.deny_qos.is_empty() {
        s.push_str(&format!(" DenyQos={}", p.deny_qos.join(",")));
    }
    if let Some(t) = limit(p.default_time.as_ref()) {
        s.push_str(&format!(" DefaultTime={t}"));
    }
    if p.disable_root_jobs {
        s.push_str(" DisableRootJobs=YES");
    }
    if p.exclusive_user {
        s.push_str(" ExclusiveUser=YES");
    }
    if p.grace_time_secs > 0 {
        s.push_str(&format!(" GraceTime={}", p.grace_time_secs));
    }
    if p.hidden {
        s.push_str(" Hidden=YES");
    }
    if p.lln {
        s.push_str(" LLN=YES");
    }
    if let Some(n) = p.max_cpus_per_node {
        s.push_str(&format!(" MaxCPUsPerNode={n}"));
    }
    match p.max_memory {
        Some(MaxMemory::MaxMemPerCpuMb(mb)) => s.push_str(&format!(" MaxMemPerCPU={mb}")),
        Some(MaxMemory::MaxMemPerNodeMb(mb)) => s.push_str(&format!(" MaxMemPerNode={mb}")),
        None => {}
    }
    if let Some(n) = p.max_nodes {
        s.push_str(&format!(" MaxNodes={n}"));
    }
    match limit(p.max_time.as_ref()) {
        Some(t) if t != "UNLIMITED" => s.push_str(&format!(" MaxTime={t}")),
        _ => {}
    }
    if p.min_nodes != 1 {
        s.push_str(&format!(" MinNodes={}", p.min_nodes));
    }
    if !p.nodes.is_empty() {
        s.push_str(&format!(" Nodes={}", p.nodes));
    }
    if !p.preempt_mode.is_empty() {
        s.push_str(&format!(" PreemptMode={}", p.preempt_mode));
    }
    if p.priority_job_factor != 1 {
        s.push_str(&format!(" PriorityJobFactor={}", p.priority_job_factor));
    }
    if p.priority_tier != 1 {
        s.push_str(&format!(" PriorityTier={}", p.priority_tier));
    }
    if !p.qos.is_empty() {
        s.push_str(&format!(" QOS={}", p.qos));
    }
    if p.req_resv {
        s.push_str(" ReqResv=YES");
    }
    if p.root_only {
        s.push_str(" RootOnly=YES");
    }
    let params = p.select_type_parameters.to_ascii_uppercase();
    if params.contains("CR_CORE") {
        s.push_str(" SelectTypeParameters=CR_CORE");
    } else if params.contains("CR_SOCKET") {
        s.push_str(" SelectTypeParameters=CR_SOCKET");
    }
    if let Some(o) = &p.oversubscribe {
        use v1::over_subscribe::Mode;
        match Mode::try_from(o.mode) {
            Ok(Mode::Exclusive) => s.push_str(" OverSubscribe=EXCLUSIVE"),
            Ok(Mode::Force) => s.push_str(&format!(" OverSubscribe=FORCE:{}", o.max_share)),
            Ok(Mode::Yes) if o.max_share != 1 => {
                s.push_str(&format!(" OverSubscribe=YES:{}", o.max_share));
            }
            _ => {}
        }
    }
    s.push_str(match v1::PartitionState::try_from(p.state) {
        Ok(v1::PartitionState::Up) => " State=UP",
        Ok(v1::PartitionState::Down) => " State=DOWN",
        Ok(v1::PartitionState::Inactive) => " State=INACTIVE",
        Ok(v1::PartitionState::Drain) => " State=DRAIN",
        _ => " State=UNKNOWN",
    });
    if !p.billing_weights.is_empty() {
        s.push_str(&format!(" TRESBillingWeights={}", p.billing_weights));
    }
    s
}

/// The file's text; `time` is the configuration's time as the file name
/// and header show it.
pub fn render(
    entries: &[v1::ConfigEntry],
    nodes: &[v1::NodeInfo],
    partitions: &[v1::PartitionInfo],
    time: &str,
) -> String {
    let mut out = String::new();
    let rule = "#".repeat(56);
    out.push_str(&format!(
        "{rule}\n#  Configuration file for Slurm - {time}  #\n{rule}\n#\n#\n"
    ));
    let mut groups: Vec<Vec<String>> = vec![Vec::new(); GROUPS.len() + 1];
    // A titled section (an entry without a key, such as `Cgroup Support
    // Configuration:`) holds another file's settings: not slurm.conf's.
    for e in entries.iter().take_while(|e| !e.key.is_empty()) {
        if NOT_WRITTEN.contains(&e.key.as_str()) {
            continue;
        }
        let line = setting_line(&e.key, &e.value);
        let key = e.key.split('[').next().unwrap_or(&e.key);
        let group = GROUPS
            .iter()
            .position(|(_, keys)| keys.iter().any(|k| k.eq_ignore_ascii_case(key)))
            .unwrap_or(GROUPS.len());
        groups[group].push(line);
    }
    for (i, lines) in groups.iter().enumerate() {
        group_header(&mut out, GROUPS.get(i).map_or("OTHER", |(title, _)| title));
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
    }

    group_header(&mut out, "NODES");
    let slurmd_port = entries
        .iter()
        .find(|e| e.key == "SlurmdPort")
        .and_then(|e| e.value.trim().parse::<u32>().ok());
    // Alike nodes share a line; as in Slurm, the newest set comes first.
    let mut sets: Vec<(String, Vec<&str>)> = Vec::new();
    for n in nodes.iter().filter(|n| !n.name.is_empty()) {
        let attributes = node_attributes(n, slurmd_port);
        match sets.iter_mut().find(|(a, _)| *a == attributes) {
            Some((_, names)) => names.push(&n.name),
            None => sets.push((attributes, vec![&n.name])),
        }
    }
    for (attributes, names) in sets.iter().rev() {
        out.push_str(&format!(
            "NodeName={}{attributes}\n",
            hostlist::compress(names)
        ));
    }

    group_header(&mut out, "PARTITIONS");
    for p in partitions.iter().filter(|p| !p.name.is_empty()) {
        out.push_str(&partition_line(p));
        out.push('\n');
    }
    out
}

/// Asks the controller for its configuration, nodes and partitions and
/// writes the file; prints `Slurm config saved to PATH`.
pub async fn run(
    c: &mut Controller,
    file: Option<&str>,
    env: EnvLookup<'_>,
    out: &mut Output<'_>,
) -> i32 {
    let config = match c
        .call(|mut cl| async move { cl.get_config(v1::GetConfigRequest {}).await })
        .await
    {
        Ok(r) => r,
        Err(e) => {
            out.error_line(&format!("slurm_load_ctl_conf error: {e}"));
            return 1;
        }
    };
    let nodes = match super::controller::load_nodes(c).await {
        Ok(nodes) => nodes,
        Err(e) => {
            out.error_line(&format!("slurm_load_node error: {e}"));
            return 1;
        }
    };
    let request = v1::GetPartitionsRequest {
        names: Vec::new(),
        changed_since: 0,
    };
    let partitions = match c
        .call(|mut cl| {
            let request = request.clone();
            async move { cl.get_partitions(request).await }
        })
        .await
    {
        Ok(r) => r.partitions,
        Err(e) => {
            out.error_line(&format!("slurm_load_partitions error: {e}"));
            return 1;
        }
    };
    let base = file
        .map(str::to_string)
        .or_else(|| env_path(env, "SLURM_CONF_OUT"))
        .or_else(|| env_path(env, "SLURM_CONF"))
        .unwrap_or_else(|| DEFAULT_CONF_PATH.to_string());
    let ctx = Ctx::system(slurm_common::auth::unix_now());
    let time = ctx.timestamp(config.last_update);
    let path = format!("{base}.{time}");
    let text = render(&config.entries, &nodes, &partitions, &time);
    let written = std::fs::File::create(&path).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.flush()
    });
    match written {
        Ok(()) => match out.line(&format!("Slurm config saved to {path}")) {
            Ok(()) => 0,
            Err(e) => {
                out.error_line(&format!("scontrol: error: {e}"));
                1
            }
        },
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(n) => super::errnum::text(n),
                None => e.to_string(),
            };
            // Slurm says so and still exits 0.
            out.error_line(&format!("Could not create file {path}: {why}"));
            0
        }
    }
}

fn env_path(env: EnvLookup<'_>, name: &str) -> Option<String> {
    env(name)
        .filter(|v| !v.is_empty())
        .map(|v| v.to_string_lossy().into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(key: &str, value: &str) -> v1::ConfigEntry {
        v1::ConfigEntry {
            key: key.to_string(),
            value: value.to_string(),
        }
    }

    #[test]
    fn settings_become_slurm_conf_lines() {
        assert_eq!(
            setting_line("MessageTimeout", "10 sec"),
            "MessageTimeout=10"
        );
        assert_eq!(
            setting_line("SlurmctldHost[0]", "vm(127.0.0.1)"),
            "SlurmctldHost=vm"
        );
        assert_eq!(setting_line("DebugFlags", "(null)"), "#DebugFlags=");
        assert_eq!(setting_line("AuthInfo", ""), "#AuthInfo=");
        assert_eq!(
            setting_line("DefMemPerNode", "UNLIMITED"),
            "#DefMemPerNode="
        );
        assert_eq!(
            setting_line("Prolog", "/etc/prolog --fast"),
            "Prolog=\"/etc/prolog --fast\""
        );
        assert_eq!(setting_line("ClusterName", "ref"), "ClusterName=ref");
    }

    #[test]
    fn group_headers_are_centred() {
        let mut s = String::new();
        group_header(&mut s, "NODES");
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "#");
        assert_eq!(lines[1].len(), 48);
        assert_eq!(lines[2].len(), 48);
        assert_eq!(
            lines[2],
            format!("#{}NODES{}#", " ".repeat(20), " ".repeat(21))
        );
    }

    #[test]
    fn a_whole_file() {
        let node = |name: &str, port: u32| v1::NodeInfo {
            name: name.to_string(),
            node_hostname: "vm".to_string(),
            node_addr: "127.0.0.1".to_string(),
            port,
            sockets: 1,
            cores_per_socket: 2,
            threads_per_core: 1,
            real_memory_mb: 4000,
            weight: 1,
            ..Default::default()
        };
        let partition = v1::PartitionInfo {
            name: "debug".to_string(),
            is_default: true,
            nodes: "n[1-3]".to_string(),
            min_nodes: 1,
            priority_job_factor: 1,
            priority_tier: 1,
            state: v1::PartitionState::Up as i32,
            max_time: Some(v1::TimeLimit {
                limit: Some(v1::time_limit::Limit::Minutes(30)),
            }),
            ..Default::default()
        };
        let text = render(
            &[
                entry("BOOT_TIME", "2024-01-01T00:00:00"),
                entry("ClusterName", "ref"),
                entry("SlurmdPort", "6818"),
                entry("KillWait", "30 sec"),
                entry("SlurmctldDebug", "info"),
                entry("Zebra", "1"),
                entry("", "Cgroup Support Configuration:"),
                entry("CgroupPlugin", "autodetect"),
            ],
            &[node("n1", 6818), node("n2", 6818), node("n3", 17003)],
            &[partition],
            "2024-01-01T00:00:00",
        );
        assert!(text.starts_with(
            "########################################################\n\
             #  Configuration file for Slurm - 2024-01-01T00:00:00  #\n"
        ));
        assert!(!text.contains("BOOT_TIME"));
        assert!(!text.contains("Cgroup"), "{text}");
        let pos = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle}\n{text}"))
        };
        assert!(pos("ClusterName=ref\n") < pos("KillWait=30\n"));
        assert!(pos("SlurmctldDebug=info\n") < pos("Zebra=1\n"));
        assert!(pos("#                    OTHER") < pos("Zebra=1\n"));
        // The newest set of alike nodes comes first.
        assert!(text.contains(
            "NodeName=n3 NodeHostName=vm NodeAddr=127.0.0.1 Sockets=1 CoresPerSocket=2 \
             ThreadsPerCore=1 RealMemory=4000 Port=17003\n\
             NodeName=n[1-2] NodeHostName=vm NodeAddr=127.0.0.1 Sockets=1 CoresPerSocket=2 \
             ThreadsPerCore=1 RealMemory=4000\n"
        ));
        assert!(text
            .ends_with("PartitionName=debug Default=YES MaxTime=00:30:00 Nodes=n[1-3] State=UP\n"));
    }
}
