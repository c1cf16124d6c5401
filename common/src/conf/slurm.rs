//! slurm.conf as a typed struct.
//!
//! The ~80 parameters a Slurm-compatible cluster acts on (those marked S and
//! ★ in the project's slurm.conf reference) and a few more that are cheap to
//! type are fields of [`SlurmConf`], with Slurm 22.05's documented defaults.
//! Every other parameter Slurm 22.05 or later documents is accepted without a
//! warning and kept, like everything else, in [`SlurmConf::entries`] (the raw
//! ordered list that `scontrol show config` prints). A key nobody documents
//! is a warning, so that a typo is visible without stopping the daemons.
//!
//! Record lines (`NodeName=`, `PartitionName=`, `NodeSet=`, `DownNodes=`,
//! `FrontendName=`) take the rest of their line; their order in the file
//! does not matter, except that `DEFAULT` lines apply to the lines after them.
//! Scalars given twice keep the last value; `SlurmctldHost` lines accumulate
//! (primary first, then backups in order).

use std::time::Duration;

use super::keys::{pick_cluster_mem, Pending};
use super::lexer::{self, IncludeSource, Line};
use super::node::{self, DownNodes, NodeBuilder, NodeConf, NodeSet};
use super::options::{
    AccountingEnforce, AcctGatherFrequency, HealthCheckNodeState, License, OptionList, PrivateData,
    PrologFlags, PropagateLimits, Rlimit, SchedulerParameters, TresWeight,
};
use super::partition::{ClusterDefaults, MemPer, PartitionBuilder, PartitionConf};
use super::plugins::{
    AccountingStorageType, AuthPlugin, CredType, EnforcePartLimits, JobAcctGatherType, LogLevel,
    MpiPlugin, PreemptMode, PreemptType, PriorityFlag, PriorityType, ProctrackType,
    ReturnToService, SchedulerType, SelectType, SelectTypeParameters, TaskPlugin, TopologyPlugin,
};
use super::{ConfError, ConfWarning, Parsed, SourceLoc, WarningKind};
use crate::time::TimeLimit;

/// One `Key=Value` exactly as written, with its place, in file order
/// (includes spliced in where they were included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub key: String,
    pub value: String,
    pub loc: SourceLoc,
}

/// A controller from `SlurmctldHost=name(addr)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerHost {
    pub name: String,
    /// The address to contact it at, when it differs from the name.
    pub addr: Option<String>,
}

impl ControllerHost {
    pub const EXPECTED: &'static str = "a host name, optionally followed by (address)";

    pub fn parse(v: &str) -> Option<Self> {
        let v = v.trim();
        let (name, addr) = match v.split_once('(') {
            Some((n, rest)) => {
                let addr = rest.strip_suffix(')')?.trim();
                if addr.is_empty() || addr.contains(['(', ')']) {
                    return None;
                }
                (n.trim(), Some(addr.to_string()))
            }
            None => (v, None),
        };
        if name.is_empty() || name.contains([')', ',', ' ']) {
            return None;
        }
        Some(ControllerHost {
            name: name.to_string(),
            addr,
        })
    }

    /// Where to connect: the address if given, else the name.
    pub fn contact(&self) -> &str {
        self.addr.as_deref().unwrap_or(&self.name)
    }
}

impl std::fmt::Display for ControllerHost {
    /// `name(addr)` as `scontrol show config` prints `SlurmctldHost[n]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.addr {
            Some(a) => write!(f, "{}({a})", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// A port or an inclusive range of ports (`SlurmctldPort=6817-6820`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

impl PortRange {
    pub const EXPECTED: &'static str = "a port or a port range such as 6817 or 6817-6820";

    pub const fn single(port: u16) -> Self {
        PortRange {
            first: port,
            last: port,
        }
    }

    pub fn parse(v: &str) -> Option<Self> {
        let v = v.trim();
        let port = |s: &str| s.trim().parse::<u16>().ok().filter(|p| *p != 0);
        match v.split_once('-') {
            Some((a, b)) => {
                let (first, last) = (port(a)?, port(b)?);
                (first <= last).then_some(PortRange { first, last })
            }
            None => port(v).map(PortRange::single),
        }
    }

    /// Number of ports in the range.
    pub fn len(&self) -> usize {
        usize::from(self.last.saturating_sub(self.first)) + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn ports(&self) -> impl Iterator<Item = u16> {
        self.first..=self.last
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

/// TRES that accounting always tracks, whatever AccountingStorageTRES says,
/// in the order `scontrol show config` prints them.
pub const ALWAYS_TRACKED_TRES: &[&str] = &[
    "cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages",
];

/// slurm.conf, typed. Durations are [`Duration`]s, memory is in MB, `None`
/// means unset or unlimited as each field's doc says.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmConf {
    // --- identity, HA, ports, users, state ---
    /// ClusterName, lowercased.
    pub cluster_name: String,
    /// SlurmctldHost lines: primary first, then backups.
    pub slurmctld_hosts: Vec<ControllerHost>,
    pub slurmctld_addr: Option<String>,
    pub slurmctld_port: PortRange,
    pub slurmd_port: u16,
    pub slurm_user: String,
    pub slurmd_user: String,
    pub state_save_location: String,
    /// May contain `%n` / `%h`.
    pub slurmd_spool_dir: String,
    pub slurmctld_pid_file: String,
    pub slurmd_pid_file: String,
    pub slurmctld_parameters: OptionList,
    pub slurmd_parameters: OptionList,
    pub plugin_dir: Option<String>,
    pub first_job_id: u32,
    pub max_job_id: u32,
    pub max_job_count: u32,
    pub max_array_size: u32,
    pub max_step_count: u32,
    pub max_tasks_per_node: u32,
    /// 0: finished jobs are never purged.
    pub min_job_age: Duration,
    /// None: the number of nodes in the file.
    pub max_node_count: Option<u32>,
    pub tmp_fs: String,

    // --- communication and time limits ---
    pub message_timeout: Duration,
    pub tcp_timeout: Duration,
    pub tree_width: u16,
    /// 0: never set silent nodes DOWN.
    pub slurmd_timeout: Duration,
    pub slurmctld_timeout: Duration,
    pub batch_start_timeout: Duration,
    pub eio_timeout: Duration,
    pub topology_plugin: TopologyPlugin,
    pub kill_wait: Duration,
    /// 0: off.
    pub inactive_limit: Duration,
    /// Minutes a job may overrun its limit.
    pub over_time_limit: TimeLimit,
    /// 0: off.
    pub wait_time: Duration,
    pub complete_wait: Duration,
    pub unkillable_step_timeout: Duration,
    pub unkillable_step_program: Option<String>,

    // --- authentication ---
    pub auth_type: AuthPlugin,
    pub auth_alt_types: Vec<AuthPlugin>,
    pub auth_alt_parameters: OptionList,
    pub auth_info: OptionList,
    pub cred_type: CredType,
    pub private_data: Vec<PrivateData>,
    pub disable_root_jobs: bool,

    // --- scheduling ---
    pub scheduler_type: SchedulerType,
    pub scheduler_parameters: SchedulerParameters,
    pub scheduler_time_slice: Duration,
    pub enforce_part_limits: EnforcePartLimits,
    pub licenses: Vec<License>,
    pub return_to_service: ReturnToService,
    pub job_requeue: bool,
    pub job_submit_plugins: Vec<String>,
    pub dependency_parameters: OptionList,

    // --- resource selection, memory, GRES ---
    pub select_type: SelectType,
    /// With Slurm's default for the SelectType when unset.
    pub select_type_parameters: SelectTypeParameters,
    /// DefMemPerCPU / DefMemPerNode; None: unlimited.
    pub def_mem: Option<MemPer>,
    /// MaxMemPerCPU / MaxMemPerNode; None: unlimited.
    pub max_mem: Option<MemPer>,
    pub def_cpu_per_gpu: Option<u64>,
    /// MB.
    pub def_mem_per_gpu: Option<u64>,
    pub gres_types: Vec<String>,

    // --- priority ---
    pub priority_type: PriorityType,
    pub priority_weight_age: u32,
    pub priority_weight_fairshare: u32,
    pub priority_weight_job_size: u32,
    pub priority_weight_partition: u32,
    pub priority_weight_qos: u32,
    pub priority_weight_assoc: u32,
    pub priority_weight_tres: Vec<TresWeight>,
    /// 0: no decay.
    pub priority_decay_half_life: Duration,
    pub priority_max_age: Duration,
    pub priority_calc_period: Duration,
    pub priority_favor_small: bool,
    pub priority_flags: Vec<PriorityFlag>,
    pub fair_share_dampening_factor: u16,

    // --- preemption ---
    pub preempt_type: PreemptType,
    pub preempt_mode: PreemptMode,
    pub preempt_exempt_time: Duration,

    // --- accounting ---
    pub accounting_storage_type: AccountingStorageType,
    pub accounting_storage_host: Option<String>,
    pub accounting_storage_backup_host: Option<String>,
    pub accounting_storage_port: u16,
    /// Extra TRES as configured (see [`SlurmConf::tracked_tres`]).
    pub accounting_storage_tres: Vec<String>,
    pub accounting_storage_enforce: AccountingEnforce,
    pub track_wckey: bool,
    pub job_comp_type: String,
    pub job_comp_loc: Option<String>,
    pub job_acct_gather_type: JobAcctGatherType,
    pub job_acct_gather_frequency: AcctGatherFrequency,
    pub job_acct_gather_params: Vec<String>,

    // --- node daemon and launch ---
    pub proctrack_type: ProctrackType,
    /// Empty: task/none.
    pub task_plugin: Vec<TaskPlugin>,
    pub task_plugin_param: Option<String>,
    pub launch_parameters: OptionList,
    pub mpi_default: MpiPlugin,
    pub mpi_params: OptionList,
    pub propagate_resource_limits: PropagateLimits,
    pub propagate_resource_limits_except: Vec<Rlimit>,
    pub kill_on_bad_exit: bool,

    // --- prolog, epilog, health check, mail ---
    pub prolog: Option<String>,
    pub epilog: Option<String>,
    pub prolog_slurmctld: Option<String>,
    pub epilog_slurmctld: Option<String>,
    pub prolog_flags: PrologFlags,
    /// None: wait forever.
    pub prolog_epilog_timeout: Option<Duration>,
    pub task_prolog: Option<String>,
    pub task_epilog: Option<String>,
    pub srun_prolog: Option<String>,
    pub srun_epilog: Option<String>,
    pub health_check_program: Option<String>,
    /// 0: off.
    pub health_check_interval: Duration,
    pub health_check_node_state: HealthCheckNodeState,
    pub mail_prog: String,
    pub mail_domain: Option<String>,
    pub reboot_program: Option<String>,

    // --- power saving ---
    /// None: nodes are never suspended.
    pub suspend_time: Option<Duration>,
    pub suspend_timeout: Duration,
    pub resume_timeout: Duration,
    pub suspend_program: Option<String>,
    pub resume_program: Option<String>,

    // --- logging ---
    pub slurmctld_debug: LogLevel,
    pub slurmd_debug: LogLevel,
    /// None: syslog.
    pub slurmctld_log_file: Option<String>,
    /// None: syslog. May contain `%n` / `%h`.
    pub slurmd_log_file: Option<String>,
    pub debug_flags: Vec<String>,

    // --- records ---
    /// One entry per node, in config order.
    pub nodes: Vec<NodeConf>,
    pub node_sets: Vec<NodeSet>,
    pub partitions: Vec<PartitionConf>,
    pub down_nodes: Vec<DownNodes>,

    /// Every pair as written, in order.
    pub entries: Vec<RawEntry>,
    /// [`conf_hash`] of the main file as read (includes not counted), so
    /// the controller can tell a node whose slurm.conf differs from its
    /// own; empty for text parsed without a file.
    pub file_hash: String,
}

/// slurmdbd's port when `AccountingStoragePort` is unset or 0.
pub const SLURMDBD_PORT: u16 = 6819;

impl Default for SlurmConf {
    /// Slurm 22.05's defaults; ClusterName and SlurmctldHost (required in a
    /// file) are empty.
    fn default() -> Self {
        SlurmConf {
            cluster_name: String::new(),
            slurmctld_hosts: Vec::new(),
            slurmctld_addr: None,
            slurmctld_port: PortRange::single(6817),
            slurmd_port: 6818,
            slurm_user: "root".into(),
            slurmd_user: "root".into(),
            state_save_location: "/var/spool".into(),
            slurmd_spool_dir: "/var/spool/slurmd".into(),
            slurmctld_pid_file: "/var/run/slurmctld.pid".into(),
            slurmd_pid_file: "/var/run/slurmd.pid".into(),
            slurmctld_parameters: OptionList::default(),
            slurmd_parameters: OptionList::default(),
            plugin_dir: None,
            first_job_id: 1,
            max_job_id: 67_043_328,
            max_job_count: 10_000,
            max_array_size: 1001,
            max_step_count: 40_000,
            max_tasks_per_node: 512,
            min_job_age: Duration::from_secs(300),
            max_node_count: None,
            tmp_fs: "/tmp".into(),

            message_timeout: Duration::from_secs(10),
            tcp_timeout: Duration::from_secs(2),
            // Newer Slurm's default (22.05 had 50): a controller reaches at
            // most 16 nodes itself unless slurm.conf says otherwise.
            tree_width: 16,
            slurmd_timeout: Duration::from_secs(300),
            slurmctld_timeout: Duration::from_secs(120),
            batch_start_timeout: Duration::from_secs(10),
            eio_timeout: Duration::from_secs(60),
            topology_plugin: TopologyPlugin::None,
            kill_wait: Duration::from_secs(30),
            inactive_limit: Duration::ZERO,
            over_time_limit: TimeLimit::Minutes(0),
            wait_time: Duration::ZERO,
            complete_wait: Duration::ZERO,
            unkillable_step_timeout: Duration::from_secs(60),
            unkillable_step_program: None,

            auth_type: AuthPlugin::Slurm,
            auth_alt_types: Vec::new(),
            auth_alt_parameters: OptionList::default(),
            auth_info: OptionList::default(),
            cred_type: CredType::Slurm,
            private_data: Vec::new(),
            disable_root_jobs: false,

            scheduler_type: SchedulerType::Backfill,
            scheduler_parameters: SchedulerParameters::default(),
            scheduler_time_slice: Duration::from_secs(30),
            enforce_part_limits: EnforcePartLimits::No,
            licenses: Vec::new(),
            return_to_service: ReturnToService::Never,
            job_requeue: true,
            job_submit_plugins: Vec::new(),
            dependency_parameters: OptionList::default(),

            select_type: SelectType::Linear,
            select_type_parameters: SelectTypeParameters::default_for(SelectType::Linear),
            def_mem: None,
            max_mem: None,
            def_cpu_per_gpu: None,
            def_mem_per_gpu: None,
            gres_types: Vec::new(),

            priority_type: PriorityType::Basic,
            priority_weight_age: 0,
            priority_weight_fairshare: 0,
            priority_weight_job_size: 0,
            priority_weight_partition: 0,
            priority_weight_qos: 0,
            priority_weight_assoc: 0,
            priority_weight_tres: Vec::new(),
            priority_decay_half_life: Duration::from_secs(7 * 86_400),
            priority_max_age: Duration::from_secs(7 * 86_400),
            priority_calc_period: Duration::from_secs(5 * 60),
            priority_favor_small: false,
            priority_flags: Vec::new(),
            fair_share_dampening_factor: 1,

            preempt_type: PreemptType::None,
            preempt_mode: PreemptMode::default(),
            preempt_exempt_time: Duration::ZERO,

            accounting_storage_type: AccountingStorageType::None,
            accounting_storage_host: None,
            accounting_storage_backup_host: None,
            accounting_storage_port: SLURMDBD_PORT,
            accounting_storage_tres: Vec::new(),
            accounting_storage_enforce: AccountingEnforce::default(),
            track_wckey: false,
            job_comp_type: "jobcomp/none".into(),
            job_comp_loc: None,
            job_acct_gather_type: JobAcctGatherType::None,
            job_acct_gather_frequency: AcctGatherFrequency::default(),
            job_acct_gather_params: Vec::new(),

            proctrack_type: ProctrackType::Cgroup,
            task_plugin: Vec::new(),
            task_plugin_param: None,
            launch_parameters: OptionList::default(),
            mpi_default: MpiPlugin::None,
            mpi_params: OptionList::default(),
            propagate_resource_limits: PropagateLimits::All,
            propagate_resource_limits_except: Vec::new(),
            kill_on_bad_exit: false,

            prolog: None,
            epilog: None,
            prolog_slurmctld: None,
            epilog_slurmctld: None,
            prolog_flags: PrologFlags::default(),
            prolog_epilog_timeout: None,
            task_prolog: None,
            task_epilog: None,
            srun_prolog: None,
            srun_epilog: None,
            health_check_program: None,
            health_check_interval: Duration::ZERO,
            health_check_node_state: HealthCheckNodeState::default(),
            mail_prog: "/bin/mail".into(),
            mail_domain: None,
            reboot_program: None,

            suspend_time: None,
            suspend_timeout: Duration::from_secs(30),
            resume_timeout: Duration::from_secs(60),
            suspend_program: None,
            resume_program: None,

            slurmctld_debug: LogLevel::Info,
            slurmd_debug: LogLevel::Info,
            slurmctld_log_file: None,
            slurmd_log_file: None,
            debug_flags: Vec::new(),

            nodes: Vec::new(),
            node_sets: Vec::new(),
            partitions: Vec::new(),
            down_nodes: Vec::new(),
            entries: Vec::new(),
            file_hash: String::new(),
        }
    }
}

/// The hash slurmd sends with its registration and the controller
/// compares with its own: 64-bit FNV-1a of the file's bytes, as 16 hex
/// digits. Any change to the file changes it (whitespace and comments
/// too, as Slurm's own check would see a differing file); it is a
/// consistency check, not a security one.
pub fn conf_hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Keys that start a record taking the rest of the line.
const RECORD_KEYS: &[&str] = &[
    "NodeName",
    "PartitionName",
    "NodeSet",
    "DownNodes",
    "FrontendName",
];

impl SlurmConf {
    /// Parses text that must not use `Include`. `origin` names the text in
    /// messages (usually its path).
    pub fn parse(text: &str, origin: &str) -> Result<Parsed<SlurmConf>, ConfError> {
        Self::from_lines(lexer::lex(text, origin)?, origin)
    }

    /// Parses text, resolving `Include` through `source`.
    pub fn parse_with(
        text: &str,
        origin: &str,
        source: &mut dyn IncludeSource,
    ) -> Result<Parsed<SlurmConf>, ConfError> {
        Self::from_lines(lexer::lex_with(text, origin, source)?, origin)
    }

    /// Reads `path` and its includes through `source`.
    pub fn load_with(
        path: &str,
        source: &mut dyn IncludeSource,
    ) -> Result<Parsed<SlurmConf>, ConfError> {
        let text = source.read(path).map_err(|e| ConfError::Io {
            path: path.to_string(),
            source: e,
        })?;
        let mut parsed = Self::from_lines(lexer::lex_with(&text, path, source)?, path)?;
        parsed.conf.file_hash = conf_hash(text.as_bytes());
        Ok(parsed)
    }

    /// Reads slurm.conf (and its includes) from the filesystem.
    pub fn load(path: &str) -> Result<Parsed<SlurmConf>, ConfError> {
        Self::load_with(path, &mut lexer::FsIncludes)
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeConf> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The partition called `name`.
    pub fn partition(&self, name: &str) -> Option<&PartitionConf> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// The partition jobs go to when they name none (the last Default=YES).
    pub fn default_partition(&self) -> Option<&PartitionConf> {
        self.partitions.iter().rev().find(|p| p.default)
    }

    /// The last pair written for `key` (any case), as it stands in the file:
    /// how keys kept untyped are read.
    pub fn raw_entry(&self, key: &str) -> Option<&RawEntry> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.key.eq_ignore_ascii_case(key))
    }

    /// The primary controller (first SlurmctldHost).
    pub fn primary_controller(&self) -> Option<&ControllerHost> {
        self.slurmctld_hosts.first()
    }

    /// Backup controllers in takeover order.
    pub fn backup_controllers(&self) -> &[ControllerHost] {
        self.slurmctld_hosts.get(1..).unwrap_or(&[])
    }

    /// The TRES accounting tracks: the fixed ones, then the configured extras.
    pub fn tracked_tres(&self) -> Vec<String> {
        let mut out: Vec<String> = ALWAYS_TRACKED_TRES.iter().map(|s| s.to_string()).collect();
        for t in &self.accounting_storage_tres {
            if !out.iter().any(|o| o.eq_ignore_ascii_case(t)) {
                out.push(t.clone());
            }
        }
        out
    }

    fn from_lines(lines: Vec<Line>, origin: &str) -> Result<Parsed<SlurmConf>, ConfError> {
        let mut conf = SlurmConf::default();
        let mut warnings = Vec::new();
        let mut pending = Pending::default();
        let mut node_builder = NodeBuilder::default();
        let mut part_builder = PartitionBuilder::default();

        for line in &lines {
            let loc = &line.loc;
            for pair in &line.pairs {
                conf.entries.push(RawEntry {
                    key: pair.key.clone(),
                    value: pair.value.clone(),
                    loc: loc.clone(),
                });
            }
            let mut i = 0;
            while i < line.pairs.len() {
                let pair = &line.pairs[i];
                let record = RECORD_KEYS
                    .iter()
                    .copied()
                    .find(|k| k.eq_ignore_ascii_case(&pair.key));
                if let Some(kind) = record {
                    let rest = &line.pairs[i..];
                    match kind {
                        "NodeName" => node_builder.add_line(rest, loc, &mut warnings)?,
                        "PartitionName" => part_builder.add_line(rest, loc, &mut warnings)?,
                        "NodeSet" => pending.node_sets.push((rest.to_vec(), loc.clone())),
                        "DownNodes" => pending.down_nodes.push((rest.to_vec(), loc.clone())),
                        // Front-end nodes only exist on retired Cray systems.
                        _ => warnings.push(ConfWarning {
                            loc: loc.clone(),
                            kind: WarningKind::Ignored {
                                key: pair.key.clone(),
                                reason: "front-end nodes are not supported",
                            },
                        }),
                    }
                    break;
                }
                conf.apply(&pair.key, &pair.value, loc, &mut pending, &mut warnings)?;
                i += 1;
            }
        }
        conf.settle(origin, pending, node_builder, part_builder, &mut warnings)?;
        Ok(Parsed { conf, warnings })
    }

    /// Cross-key rules, defaults that depend on other keys, and records.
    fn settle(
        &mut self,
        origin: &str,
        pending: Pending,
        nodes: NodeBuilder,
        parts: PartitionBuilder,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<(), ConfError> {
        if let Some((name, loc)) = pending.control_machine {
            if pending.slurmctld_host_loc.is_some() {
                return Err(ConfError::Conflict {
                    loc,
                    key: "ControlMachine",
                    other: "SlurmctldHost",
                });
            }
            self.slurmctld_hosts.push(ControllerHost {
                name,
                addr: pending.control_addr,
            });
            if let Some(b) = pending.backup_controller {
                self.slurmctld_hosts.push(ControllerHost {
                    name: b,
                    addr: pending.backup_addr,
                });
            }
        }
        // As Slurm: a controller named `localhost` is this host, reached at
        // localhost unless an address is given (shown `vm(localhost)`).
        for host in &mut self.slurmctld_hosts {
            if host.name.eq_ignore_ascii_case("localhost") {
                host.addr.get_or_insert_with(|| host.name.clone());
                host.name = crate::host::short_hostname();
            }
        }
        if self.slurmctld_hosts.is_empty() {
            return Err(ConfError::MissingKey {
                file: origin.to_string(),
                key: "SlurmctldHost",
            });
        }
        if self.cluster_name.is_empty() {
            return Err(ConfError::MissingKey {
                file: origin.to_string(),
                key: "ClusterName",
            });
        }
        self.select_type_parameters = pending
            .select_type_parameters
            .unwrap_or_else(|| SelectTypeParameters::default_for(self.select_type));

        self.def_mem = pick_cluster_mem(
            pending.def_mem_per_cpu,
            pending.def_mem_per_node,
            "DefMemPerNode",
            warnings,
        );
        self.max_mem = pick_cluster_mem(
            pending.max_mem_per_cpu,
            pending.max_mem_per_node,
            "MaxMemPerNode",
            warnings,
        );

        self.nodes = nodes.finish(self.slurmd_port);
        for (pairs, loc) in &pending.node_sets {
            let set = node::node_set(pairs, loc, &self.nodes, warnings)?;
            if self.node_sets.iter().any(|s| s.name == set.name) {
                return Err(ConfError::DuplicateNodeSet {
                    loc: loc.clone(),
                    nodeset: set.name,
                });
            }
            self.node_sets.push(set);
        }
        self.partitions = parts.finish(
            &self.nodes,
            &self.node_sets,
            ClusterDefaults {
                def_mem: self.def_mem,
                max_mem: self.max_mem,
                preempt_mode: self.preempt_mode,
            },
            warnings,
        )?;
        for (pairs, loc) in &pending.down_nodes {
            let down = node::down_nodes(pairs, loc, &self.nodes, warnings)?;
            for n in self
                .nodes
                .iter_mut()
                .filter(|n| down.nodes.contains(&n.name))
            {
                n.state = down.state;
                if down.reason.is_some() {
                    n.reason.clone_from(&down.reason);
                }
            }
            self.down_nodes.push(down);
        }
        Ok(())
    }
}
