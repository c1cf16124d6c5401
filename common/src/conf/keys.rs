//! The top-level keys of slurm.conf: how each one is checked and stored.
//!
//! One `match` over the lower-cased key keeps every key's canonical
//! spelling, expected form and destination field side by side, so adding a
//! key is one arm here plus one field in [`SlurmConf`]. Keys whose meaning
//! depends on other keys (SelectTypeParameters, the DefMem/MaxMem pairs,
//! the legacy ControlMachine family) are collected in [`Pending`] and settled
//! once the whole file has been read.

use std::time::Duration;

use super::lexer::Pair;
use super::options::{
    AccountingEnforce, AcctGatherFrequency, HealthCheckNodeState, License, OptionList, PrivateData,
    PrologFlags, PropagateLimits, Rlimit, SchedulerParameters, TresWeight,
};
use super::partition::{over_time_limit, MemPer};
use super::plugins::{
    AccountingStorageType, AuthPlugin, CredType, EnforcePartLimits, JobAcctGatherType, LogLevel,
    MpiPlugin, PreemptMode, PreemptType, PriorityFlag, PriorityType, ProctrackType,
    ReturnToService, SchedulerType, SelectType, SelectTypeParameters, TaskPlugin, TopologyPlugin,
};
use super::slurm::{ControllerHost, PortRange, SlurmConf};
use super::value::{is_unlimited, split_list, Field};
use super::{ConfError, ConfWarning, SourceLoc, WarningKind};

/// Top-level names Slurm documents (22.05 and later) that are accepted and
/// kept only in the raw entries.
const KNOWN_UNTYPED: &[&str] = &[
    "AccountingStorageExternalHost",
    "AccountingStorageParameters",
    "AccountingStoragePass",
    "AccountingStorageUser",
    "AccountingStoreFlags",
    "AcctGatherEnergyType",
    "AcctGatherFilesystemType",
    "AcctGatherInterconnectType",
    "AcctGatherNodeFreq",
    "AcctGatherProfileType",
    "AllowSpecResourcesUsage",
    "BcastExclude",
    "BcastParameters",
    "BurstBufferType",
    "CertgenParameters",
    "CertgenType",
    "CertmgrParameters",
    "CertmgrType",
    "CliFilterPlugins",
    "CommunicationParameters",
    "CoreSpecPlugin",
    "CpuFreqDef",
    "CpuFreqGovernors",
    "DataParserParameters",
    "DefRuntimePlugin",
    "EpilogMsgTime",
    "EpilogTimeout",
    "ExtSensorsFreq",
    "ExtSensorsType",
    "FederationParameters",
    "GetEnvTimeout",
    "GpuFreqDef",
    "GroupUpdateForce",
    "GroupUpdateTime",
    "HashPlugin",
    "HealthCheckTimeout",
    "HttpParserType",
    "InteractiveStepOptions",
    "JobCompHost",
    "JobCompParams",
    "JobCompPass",
    "JobCompPassScript",
    "JobCompPort",
    "JobCompUser",
    "JobContainerType",
    "JobCredentialPrivateKey",
    "JobCredentialPublicCertificate",
    "JobDefaults",
    "JobFileAppend",
    "LaunchType",
    "LicenseParameters",
    "LogTimeFormat",
    "MaxBatchRequeue",
    "MaxDBDMsgs",
    "MCSParameters",
    "MCSPlugin",
    "MetricsAuthUsers",
    "MetricsParameters",
    "MetricsType",
    "NamespaceType",
    "NodeFeaturesPlugins",
    "PlugStackConfig",
    "PowerParameters",
    "PowerPlugin",
    "PreemptParameters",
    "PrEpParameters",
    "PrEpPlugins",
    "PriorityParameters",
    "PrioritySiteFactorParameters",
    "PrioritySiteFactorPlugin",
    "PriorityUsageResetPeriod",
    "PrologTimeout",
    "PropagatePrioProcess",
    "ReconfigFlags",
    "RequeueExit",
    "RequeueExitHold",
    "ResumeFailProgram",
    "ResumeRate",
    "ResvEpilog",
    "ResvOverRun",
    "ResvProlog",
    "RoutePlugin",
    "ScronParameters",
    "SerializerParameters",
    "SerializerPlugins",
    "SlurmctldHttpAuthParameters",
    "SlurmctldPlugstack",
    "SlurmctldPrimaryOffProg",
    "SlurmctldPrimaryOnProg",
    "SlurmctldSyslogDebug",
    "SlurmdHttpAuthParameters",
    "SlurmdSyslogDebug",
    "SlurmrestdParameters",
    "SlurmSchedLogFile",
    "SlurmSchedLogLevel",
    "SlurmstepdParameters",
    "SrunPortRange",
    "SuspendExcNodes",
    "SuspendExcParts",
    "SuspendExcStates",
    "SuspendRate",
    "SwitchParameters",
    "SwitchType",
    "TLSParameters",
    "TLSType",
    "TopologyParam",
    "UrlParserType",
    "UsePAM",
    "VSizeFactor",
    "X11Parameters",
];

/// What is gathered while reading and settled once the whole file is read.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) control_machine: Option<(String, SourceLoc)>,
    pub(super) control_addr: Option<String>,
    pub(super) backup_controller: Option<String>,
    pub(super) backup_addr: Option<String>,
    /// Location of the first SlurmctldHost line.
    pub(super) slurmctld_host_loc: Option<SourceLoc>,
    pub(super) select_type_parameters: Option<SelectTypeParameters>,
    pub(super) def_mem_per_cpu: Option<(Option<u64>, SourceLoc)>,
    pub(super) def_mem_per_node: Option<(Option<u64>, SourceLoc)>,
    pub(super) max_mem_per_cpu: Option<(Option<u64>, SourceLoc)>,
    pub(super) max_mem_per_node: Option<(Option<u64>, SourceLoc)>,
    pub(super) node_sets: Vec<(Vec<Pair>, SourceLoc)>,
    pub(super) down_nodes: Vec<(Vec<Pair>, SourceLoc)>,
}

impl SlurmConf {
    /// Applies one top-level `Key=Value`.
    pub(super) fn apply(
        &mut self,
        key: &str,
        value: &str,
        loc: &SourceLoc,
        p: &mut Pending,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<(), ConfError> {
        let f = |k: &'static str| Field::new(k, value, loc);
        let lower = key.to_ascii_lowercase();
        match lower.as_str() {
            // identity, HA, ports, users, state
            "clustername" => self.cluster_name = f("ClusterName").name()?.to_lowercase(),
            "slurmctldhost" => {
                let host =
                    f("SlurmctldHost").with(ControllerHost::EXPECTED, ControllerHost::parse)?;
                if p.slurmctld_host_loc.is_none() {
                    p.slurmctld_host_loc = Some(loc.clone());
                }
                self.slurmctld_hosts.push(host);
            }
            "controlmachine" => {
                p.control_machine = Some((f("ControlMachine").name()?, loc.clone()))
            }
            "controladdr" => p.control_addr = f("ControlAddr").string(),
            "backupcontroller" => p.backup_controller = f("BackupController").string(),
            "backupaddr" => p.backup_addr = f("BackupAddr").string(),
            "slurmctldaddr" => self.slurmctld_addr = f("SlurmctldAddr").string(),
            "slurmctldport" => {
                self.slurmctld_port =
                    f("SlurmctldPort").with(PortRange::EXPECTED, PortRange::parse)?
            }
            "slurmdport" => self.slurmd_port = f("SlurmdPort").port()?,
            "slurmuser" => self.slurm_user = f("SlurmUser").name()?,
            "slurmduser" => self.slurmd_user = f("SlurmdUser").name()?,
            "statesavelocation" => self.state_save_location = f("StateSaveLocation").name()?,
            "slurmdspooldir" => self.slurmd_spool_dir = f("SlurmdSpoolDir").name()?,
            "slurmctldpidfile" => self.slurmctld_pid_file = f("SlurmctldPidFile").name()?,
            "slurmdpidfile" => self.slurmd_pid_file = f("SlurmdPidFile").name()?,
            "slurmctldparameters" => self.slurmctld_parameters = OptionList::parse(value),
            "slurmdparameters" => self.slurmd_parameters = OptionList::parse(value),
            "plugindir" => self.plugin_dir = f("PluginDir").string(),
            "firstjobid" => {
                self.first_job_id = f("FirstJobId")
                    .with("a whole number from 1 to 4294967295", |v| {
                        v.parse::<u32>().ok().filter(|n| *n > 0)
                    })?
            }
            "maxjobid" => {
                self.max_job_id = f("MaxJobId").with("a whole number from 1 to 67043328", |v| {
                    v.parse::<u32>()
                        .ok()
                        .filter(|n| (1..=67_043_328).contains(n))
                })?
            }
            "maxjobcount" => self.max_job_count = f("MaxJobCount").u32()?,
            "maxarraysize" => {
                self.max_array_size = f("MaxArraySize")
                    .with("a whole number from 0 to 4000001", |v| {
                        v.parse::<u32>().ok().filter(|n| *n <= 4_000_001)
                    })?
            }
            "maxstepcount" => self.max_step_count = f("MaxStepCount").u32()?,
            "maxtaskspernode" => self.max_tasks_per_node = f("MaxTasksPerNode").u32()?,
            "minjobage" => self.min_job_age = f("MinJobAge").secs()?,
            "maxnodecount" => self.max_node_count = Some(f("MaxNodeCount").u32()?),
            "tmpfs" => self.tmp_fs = f("TmpFS").name()?,

            // communication and time limits
            "messagetimeout" => self.message_timeout = f("MessageTimeout").secs()?,
            "tcptimeout" => self.tcp_timeout = f("TCPTimeout").secs()?,
            "treewidth" => {
                self.tree_width = f("TreeWidth").with("a whole number from 1 to 65533", |v| {
                    v.parse::<u16>().ok().filter(|n| (1..=65_533).contains(n))
                })?
            }
            "slurmdtimeout" => self.slurmd_timeout = f("SlurmdTimeout").secs()?,
            "slurmctldtimeout" => self.slurmctld_timeout = f("SlurmctldTimeout").secs()?,
            "batchstarttimeout" => self.batch_start_timeout = f("BatchStartTimeout").secs()?,
            "eiotimeout" => self.eio_timeout = f("EioTimeout").secs()?,
            "topologyplugin" => {
                self.topology_plugin =
                    f("TopologyPlugin").with(TopologyPlugin::EXPECTED, TopologyPlugin::parse)?
            }
            "killwait" => self.kill_wait = f("KillWait").secs()?,
            "inactivelimit" => self.inactive_limit = f("InactiveLimit").secs()?,
            "overtimelimit" => self.over_time_limit = over_time_limit(&f("OverTimeLimit"))?,
            "waittime" => self.wait_time = f("WaitTime").secs()?,
            "completewait" => self.complete_wait = f("CompleteWait").secs()?,
            "unkillablesteptimeout" => {
                self.unkillable_step_timeout = f("UnkillableStepTimeout").secs()?
            }
            "unkillablestepprogram" => {
                self.unkillable_step_program = f("UnkillableStepProgram").string()
            }

            // authentication
            "authtype" => {
                self.auth_type = f("AuthType").with(AuthPlugin::EXPECTED, AuthPlugin::parse)?
            }
            "authalttypes" => {
                self.auth_alt_types = f("AuthAltTypes").with(AuthPlugin::EXPECTED, |v| {
                    split_list(v).iter().map(|w| AuthPlugin::parse(w)).collect()
                })?
            }
            "authaltparameters" => self.auth_alt_parameters = OptionList::parse(value),
            "authinfo" => self.auth_info = OptionList::parse(value),
            "credtype" => {
                self.cred_type = f("CredType").with(CredType::EXPECTED, CredType::parse)?
            }
            "privatedata" => {
                self.private_data =
                    f("PrivateData").with(PrivateData::EXPECTED, PrivateData::parse_list)?
            }
            "disablerootjobs" => self.disable_root_jobs = f("DisableRootJobs").bool()?,

            // scheduling
            "schedulertype" => {
                self.scheduler_type =
                    f("SchedulerType").with(SchedulerType::EXPECTED, SchedulerType::parse)?
            }
            "schedulerparameters" => {
                self.scheduler_parameters = f("SchedulerParameters")
                    .with(SchedulerParameters::EXPECTED, SchedulerParameters::parse)?
            }
            "schedulertimeslice" => {
                self.scheduler_time_slice = f("SchedulerTimeSlice").with(
                    "a whole number of seconds from 5 to 65533",
                    |v| {
                        v.parse::<u16>()
                            .ok()
                            .filter(|n| (5..=65_533).contains(n))
                            .map(|n| Duration::from_secs(n.into()))
                    },
                )?
            }
            "enforcepartlimits" => {
                self.enforce_part_limits = f("EnforcePartLimits")
                    .with(EnforcePartLimits::EXPECTED, EnforcePartLimits::parse)?
            }
            "licenses" => {
                self.licenses = f("Licenses").with(License::EXPECTED, License::parse_list)?
            }
            "returntoservice" => {
                self.return_to_service =
                    f("ReturnToService").with(ReturnToService::EXPECTED, ReturnToService::parse)?
            }
            "jobrequeue" => self.job_requeue = f("JobRequeue").bool()?,
            "jobsubmitplugins" => self.job_submit_plugins = split_list(value),
            "dependencyparameters" => self.dependency_parameters = OptionList::parse(value),

            // resource selection
            "selecttype" => {
                self.select_type = f("SelectType").with(SelectType::EXPECTED, SelectType::parse)?
            }
            "selecttypeparameters" => {
                p.select_type_parameters = Some(
                    f("SelectTypeParameters")
                        .with(SelectTypeParameters::EXPECTED, SelectTypeParameters::parse)?,
                )
            }
            "defmempercpu" => {
                p.def_mem_per_cpu = Some((f("DefMemPerCPU").mem_limit()?, loc.clone()))
            }
            "defmempernode" => {
                p.def_mem_per_node = Some((f("DefMemPerNode").mem_limit()?, loc.clone()))
            }
            "maxmempercpu" => {
                p.max_mem_per_cpu = Some((f("MaxMemPerCPU").mem_limit()?, loc.clone()))
            }
            "maxmempernode" => {
                p.max_mem_per_node = Some((f("MaxMemPerNode").mem_limit()?, loc.clone()))
            }
            "defcpupergpu" => self.def_cpu_per_gpu = Some(f("DefCpuPerGPU").u64()?),
            "defmempergpu" => self.def_mem_per_gpu = Some(f("DefMemPerGPU").mem_mb()?),
            "grestypes" => self.gres_types = split_list(value),

            // priority
            "prioritytype" => {
                self.priority_type =
                    f("PriorityType").with(PriorityType::EXPECTED, PriorityType::parse)?
            }
            "priorityweightage" => self.priority_weight_age = f("PriorityWeightAge").u32()?,
            "priorityweightfairshare" => {
                self.priority_weight_fairshare = f("PriorityWeightFairshare").u32()?
            }
            "priorityweightjobsize" => {
                self.priority_weight_job_size = f("PriorityWeightJobSize").u32()?
            }
            "priorityweightpartition" => {
                self.priority_weight_partition = f("PriorityWeightPartition").u32()?
            }
            "priorityweightqos" => self.priority_weight_qos = f("PriorityWeightQOS").u32()?,
            "priorityweightassoc" => self.priority_weight_assoc = f("PriorityWeightAssoc").u32()?,
            "priorityweighttres" => {
                self.priority_weight_tres =
                    f("PriorityWeightTRES").with(TresWeight::EXPECTED, TresWeight::parse_list)?
            }
            "prioritydecayhalflife" => {
                self.priority_decay_half_life = f("PriorityDecayHalfLife").minutes_duration()?
            }
            "prioritymaxage" => self.priority_max_age = f("PriorityMaxAge").minutes_duration()?,
            "prioritycalcperiod" => {
                self.priority_calc_period = f("PriorityCalcPeriod").minutes_duration()?
            }
            "priorityfavorsmall" => self.priority_favor_small = f("PriorityFavorSmall").bool()?,
            "priorityflags" => {
                self.priority_flags = f("PriorityFlags").with(PriorityFlag::EXPECTED, |v| {
                    split_list(v)
                        .iter()
                        .map(|w| PriorityFlag::parse(w))
                        .collect()
                })?
            }
            "fairsharedampeningfactor" => {
                self.fair_share_dampening_factor = f("FairShareDampeningFactor")
                    .with("a whole number from 1 to 65535", |v| {
                        v.parse::<u16>().ok().filter(|n| *n > 0)
                    })?
            }

            // preemption
            "preempttype" => {
                self.preempt_type =
                    f("PreemptType").with(PreemptType::EXPECTED, PreemptType::parse)?
            }
            "preemptmode" => {
                self.preempt_mode =
                    f("PreemptMode").with(PreemptMode::EXPECTED, PreemptMode::parse)?
            }
            "preemptexempttime" => {
                self.preempt_exempt_time = f("PreemptExemptTime").secs_duration()?
            }

            // accounting
            "accountingstoragetype" => {
                self.accounting_storage_type = f("AccountingStorageType").with(
                    AccountingStorageType::EXPECTED,
                    AccountingStorageType::parse,
                )?
            }
            "accountingstoragehost" => {
                self.accounting_storage_host = f("AccountingStorageHost").string()
            }
            "accountingstoragebackuphost" => {
                self.accounting_storage_backup_host = f("AccountingStorageBackupHost").string()
            }
            "accountingstorageport" => {
                // 0, as `scontrol show config` and `write config` print it
                // without accounting, is the default port.
                self.accounting_storage_port = if value.trim() == "0" {
                    super::slurm::SLURMDBD_PORT
                } else {
                    f("AccountingStoragePort").port()?
                }
            }
            "accountingstoragetres" => self.accounting_storage_tres = split_list(value),
            "accountingstorageenforce" => {
                self.accounting_storage_enforce = f("AccountingStorageEnforce")
                    .with(AccountingEnforce::EXPECTED, AccountingEnforce::parse)?
            }
            "trackwckey" => self.track_wckey = f("TrackWCKey").bool()?,
            "jobcomptype" => self.job_comp_type = f("JobCompType").name()?,
            "jobcomploc" => self.job_comp_loc = f("JobCompLoc").string(),
            "jobacctgathertype" => {
                self.job_acct_gather_type = f("JobAcctGatherType")
                    .with(JobAcctGatherType::EXPECTED, JobAcctGatherType::parse)?
            }
            "jobacctgatherfrequency" => {
                self.job_acct_gather_frequency = f("JobAcctGatherFrequency")
                    .with(AcctGatherFrequency::EXPECTED, AcctGatherFrequency::parse)?
            }
            "jobacctgatherparams" => self.job_acct_gather_params = split_list(value),

            // node daemon and launch
            "proctracktype" => {
                self.proctrack_type =
                    f("ProctrackType").with(ProctrackType::EXPECTED, ProctrackType::parse)?
            }
            "taskplugin" => {
                let plugins = f("TaskPlugin").with(TaskPlugin::EXPECTED, |v| {
                    split_list(v)
                        .iter()
                        .map(|w| TaskPlugin::parse(w))
                        .collect::<Option<Vec<_>>>()
                })?;
                self.task_plugin = plugins.into_iter().filter(|t| *t != TaskPlugin::None).fold(
                    Vec::new(),
                    |mut acc, t| {
                        if !acc.contains(&t) {
                            acc.push(t);
                        }
                        acc
                    },
                );
            }
            "taskpluginparam" => self.task_plugin_param = f("TaskPluginParam").string(),
            "launchparameters" => self.launch_parameters = OptionList::parse(value),
            "mpidefault" => {
                self.mpi_default = f("MpiDefault").with(MpiPlugin::EXPECTED, MpiPlugin::parse)?
            }
            "mpiparams" => self.mpi_params = OptionList::parse(value),
            "propagateresourcelimits" => {
                self.propagate_resource_limits = f("PropagateResourceLimits")
                    .with(PropagateLimits::EXPECTED, PropagateLimits::parse)?
            }
            "propagateresourcelimitsexcept" => {
                self.propagate_resource_limits_except = f("PropagateResourceLimitsExcept")
                    .with(Rlimit::EXPECTED, |v| {
                        split_list(v).iter().map(|w| Rlimit::parse(w)).collect()
                    })?
            }
            "killonbadexit" => self.kill_on_bad_exit = f("KillOnBadExit").bool()?,

            // prolog, epilog, health check, mail
            "prolog" => self.prolog = f("Prolog").string(),
            "epilog" => self.epilog = f("Epilog").string(),
            "prologslurmctld" => self.prolog_slurmctld = f("PrologSlurmctld").string(),
            "epilogslurmctld" => self.epilog_slurmctld = f("EpilogSlurmctld").string(),
            "prologflags" => {
                self.prolog_flags =
                    f("PrologFlags").with(PrologFlags::EXPECTED, PrologFlags::parse)?
            }
            "prologepilogtimeout" => {
                self.prolog_epilog_timeout = f("PrologEpilogTimeout").with(
                    "a whole number of seconds (65534 or more: no limit)",
                    |v| {
                        let s = v.parse::<u32>().ok()?;
                        Some((s < 65_534).then(|| Duration::from_secs(s.into())))
                    },
                )?
            }
            "taskprolog" => self.task_prolog = f("TaskProlog").string(),
            "taskepilog" => self.task_epilog = f("TaskEpilog").string(),
            "srunprolog" => self.srun_prolog = f("SrunProlog").string(),
            "srunepilog" => self.srun_epilog = f("SrunEpilog").string(),
            "healthcheckprogram" => self.health_check_program = f("HealthCheckProgram").string(),
            "healthcheckinterval" => {
                self.health_check_interval = f("HealthCheckInterval").secs()?
            }
            "healthchecknodestate" => {
                self.health_check_node_state = f("HealthCheckNodeState")
                    .with(HealthCheckNodeState::EXPECTED, HealthCheckNodeState::parse)?
            }
            "mailprog" => self.mail_prog = f("MailProg").name()?,
            "maildomain" => self.mail_domain = f("MailDomain").string(),
            "rebootprogram" => self.reboot_program = f("RebootProgram").string(),

            // power saving
            "suspendtime" => {
                self.suspend_time =
                    f("SuspendTime").with("a whole number of seconds, NONE or INFINITE", |v| {
                        if is_unlimited(v) || v.eq_ignore_ascii_case("NONE") || v == "-1" {
                            Some(None)
                        } else {
                            v.parse::<u32>()
                                .ok()
                                .map(|s| Some(Duration::from_secs(s.into())))
                        }
                    })?
            }
            "suspendtimeout" => self.suspend_timeout = f("SuspendTimeout").secs()?,
            "resumetimeout" => self.resume_timeout = f("ResumeTimeout").secs()?,
            "suspendprogram" => self.suspend_program = f("SuspendProgram").string(),
            "resumeprogram" => self.resume_program = f("ResumeProgram").string(),

            // logging
            "slurmctlddebug" => {
                self.slurmctld_debug =
                    f("SlurmctldDebug").with(LogLevel::EXPECTED, LogLevel::parse)?
            }
            "slurmddebug" => {
                self.slurmd_debug = f("SlurmdDebug").with(LogLevel::EXPECTED, LogLevel::parse)?
            }
            "slurmctldlogfile" => self.slurmctld_log_file = f("SlurmctldLogFile").string(),
            "slurmdlogfile" => self.slurmd_log_file = f("SlurmdLogFile").string(),
            "debugflags" => self.debug_flags = split_list(value),

            _ => {
                if !KNOWN_UNTYPED.iter().any(|k| k.eq_ignore_ascii_case(key)) {
                    warnings.push(ConfWarning {
                        loc: loc.clone(),
                        kind: WarningKind::UnknownKey {
                            key: key.to_string(),
                        },
                    });
                }
            }
        }
        Ok(())
    }
}

/// DefMemPerCPU wins over DefMemPerNode (and Max likewise), as in Slurm.
pub(super) fn pick_cluster_mem(
    per_cpu: Option<(Option<u64>, SourceLoc)>,
    per_node: Option<(Option<u64>, SourceLoc)>,
    node_key: &str,
    warnings: &mut Vec<ConfWarning>,
) -> Option<MemPer> {
    match (per_cpu, per_node) {
        (Some((c, _)), node) => {
            if let Some((_, loc)) = node {
                warnings.push(ConfWarning {
                    loc,
                    kind: WarningKind::Ignored {
                        key: node_key.to_string(),
                        reason: "the per-CPU value is also set",
                    },
                });
            }
            c.map(MemPer::Cpu)
        }
        (None, Some((n, _))) => n.map(MemPer::Node),
        (None, None) => None,
    }
}
