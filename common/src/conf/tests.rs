//! slurm.conf as a whole: the reference cluster's file, each syntax feature
//! through the typed layer, each error, and property tests that no input
//! makes any of the three parsers panic.

use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::time::TimeLimit;

const MIN: &str = "ClusterName=c\nSlurmctldHost=h\n";

fn parse(text: &str) -> Parsed<SlurmConf> {
    match SlurmConf::parse(text, "slurm.conf") {
        Ok(p) => p,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn conf(extra: &str) -> SlurmConf {
    let p = parse(&format!("{MIN}{extra}"));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    p.conf
}

fn err(extra: &str) -> ConfError {
    match SlurmConf::parse(&format!("{MIN}{extra}"), "slurm.conf") {
        Ok(_) => panic!("expected an error for {extra:?}"),
        Err(e) => e,
    }
}

fn names(nodes: &[NodeConf]) -> Vec<&str> {
    nodes.iter().map(|n| n.name.as_str()).collect()
}

// --- the reference cluster -------------------------------------------------

/// A copy of the slurm.conf of the reference Slurm 22.05 cluster.
const REF_SLURM_CONF: &str = include_str!("testdata/ref-slurm.conf");

#[test]
fn reference_slurm_conf_parses_without_warnings() {
    let p = SlurmConf::parse(REF_SLURM_CONF, "/etc/slurm/slurm.conf").unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let c = p.conf;
    assert_eq!(c.cluster_name, "ref");
    assert_eq!(
        c.slurmctld_hosts,
        vec![ControllerHost {
            name: "vm".into(),
            addr: Some("127.0.0.1".into())
        }]
    );
    assert_eq!(c.slurmctld_hosts[0].to_string(), "vm(127.0.0.1)");
    assert_eq!(c.slurmctld_port, PortRange::single(6817));
    assert_eq!(c.slurmd_port, 6818);
    assert_eq!(c.slurm_user, "slurm");
    assert_eq!(c.auth_type, AuthPlugin::Munge);
    assert_eq!(c.auth_alt_types, vec![AuthPlugin::Jwt]);
    assert_eq!(
        c.auth_alt_parameters.get("jwt_key"),
        Some("/var/spool/slurmctld/jwt_hs256.key")
    );
    assert_eq!(c.cred_type, CredType::Munge);
    assert_eq!(c.state_save_location, "/var/spool/slurmctld");
    assert_eq!(c.slurmd_spool_dir, "/var/spool/slurmd/%n");
    assert_eq!(c.slurmd_pid_file, "/run/slurm/slurmd.%n.pid");
    assert_eq!(
        c.slurmctld_log_file.as_deref(),
        Some("/var/log/slurm/slurmctld.log")
    );
    assert_eq!(c.slurmctld_debug, LogLevel::Info);
    assert_eq!(c.proctrack_type, ProctrackType::Cgroup);
    assert_eq!(
        c.task_plugin,
        vec![TaskPlugin::Affinity, TaskPlugin::Cgroup]
    );
    assert_eq!(c.select_type, SelectType::ConsTres);
    assert_eq!(c.select_type_parameters.to_string(), "CR_CORE");
    assert_eq!(c.scheduler_type, SchedulerType::Backfill);
    assert_eq!(c.mpi_default, MpiPlugin::None);
    assert_eq!(c.mail_prog, "/bin/true");
    assert_eq!(c.return_to_service, ReturnToService::Any);
    assert_eq!(c.max_job_count, 100_000);
    assert_eq!(c.min_job_age, Duration::from_secs(300));
    assert_eq!(c.job_acct_gather_type, JobAcctGatherType::Linux);
    assert_eq!(c.job_acct_gather_frequency.task, Duration::from_secs(30));
    assert_eq!(c.accounting_storage_type, AccountingStorageType::Slurmdbd);
    assert_eq!(c.accounting_storage_host.as_deref(), Some("localhost"));
    assert_eq!(c.accounting_storage_port, 6819);
    assert_eq!(c.job_comp_type, "jobcomp/none");
    assert_eq!(c.slurmctld_timeout, Duration::from_secs(120));
    assert_eq!(c.slurmd_timeout, Duration::from_secs(300));
    assert_eq!(c.inactive_limit, Duration::ZERO);
    assert_eq!(c.kill_wait, Duration::from_secs(30));
    assert_eq!(c.wait_time, Duration::ZERO);

    assert_eq!(names(&c.nodes), vec!["n1", "n2", "n3", "n4"]);
    for (i, n) in c.nodes.iter().enumerate() {
        assert_eq!(n.hostname, "vm");
        assert_eq!(n.addr, "127.0.0.1");
        assert_eq!(usize::from(n.port), 17001 + i);
        assert_eq!(n.cpus, 2);
        assert_eq!((n.boards, n.sockets, n.sockets_per_board), (1, 1, 1));
        assert_eq!((n.cores_per_socket, n.threads_per_core), (2, 1));
        assert_eq!(n.real_memory, 4000);
        assert_eq!(n.tmp_disk, 0);
        assert_eq!(n.weight, 1);
        assert_eq!(n.state, NodeConfState::Unknown);
        assert!(n.features.is_empty() && n.gres.is_empty());
    }
    assert_eq!(c.partitions.len(), 1);
    let part = &c.partitions[0];
    assert_eq!(part.name, "debug");
    assert_eq!(part.nodes, vec!["n1", "n2", "n3", "n4"]);
    assert!(part.default);
    assert_eq!(part.max_time, TimeLimit::Infinite);
    assert_eq!(part.state, PartitionState::Up);
    assert_eq!(
        c.default_partition().map(|p| p.name.as_str()),
        Some("debug")
    );

    // Raw entries: every pair, in order, with its place.
    assert_eq!(c.entries[0].key, "ClusterName");
    assert_eq!(c.entries[0].loc.line, 2);
    assert_eq!(&*c.entries[0].loc.file, "/etc/slurm/slurm.conf");
    assert!(c
        .entries
        .iter()
        .any(|e| e.key == "Waittime" && e.value == "0"));
    let node_line = c.entries.iter().find(|e| e.key == "Port").unwrap();
    assert_eq!(node_line.value, "[17001-17004]");
}

#[test]
fn defaults_match_the_reference_clusters_show_config() {
    // Values `scontrol show config` printed for keys the file does not set.
    let c = parse(REF_SLURM_CONF).conf;
    assert_eq!(c.tree_width, 16);
    assert_eq!(c.message_timeout, Duration::from_secs(10));
    assert_eq!(c.tcp_timeout, Duration::from_secs(2));
    assert_eq!(c.batch_start_timeout, Duration::from_secs(10));
    assert_eq!(c.eio_timeout, Duration::from_secs(60));
    assert_eq!(c.max_array_size, 1001);
    assert_eq!(c.max_step_count, 40_000);
    assert_eq!(c.max_tasks_per_node, 512);
    assert_eq!((c.first_job_id, c.max_job_id), (1, 67_043_328));
    assert_eq!(c.priority_type, PriorityType::Basic);
    assert_eq!(c.preempt_type, PreemptType::None);
    assert_eq!(c.preempt_mode.to_string(), "OFF");
    assert_eq!(c.preempt_exempt_time, Duration::ZERO);
    assert_eq!(c.scheduler_time_slice, Duration::from_secs(30));
    assert_eq!(c.suspend_time, None);
    assert_eq!(c.resume_timeout, Duration::from_secs(60));
    assert_eq!(c.suspend_timeout, Duration::from_secs(30));
    assert_eq!(c.unkillable_step_timeout, Duration::from_secs(60));
    assert_eq!(c.over_time_limit, TimeLimit::Minutes(0));
    assert_eq!(c.topology_plugin, TopologyPlugin::None);
    assert_eq!(c.enforce_part_limits, EnforcePartLimits::No);
    assert_eq!(c.propagate_resource_limits, PropagateLimits::All);
    assert!(c.health_check_node_state.any);
    assert!(c.job_requeue);
    assert!(!c.disable_root_jobs);
    assert!(!c.track_wckey);
    assert_eq!(c.def_mem, None);
    assert_eq!(c.max_mem, None);
    assert_eq!(c.slurmd_user, "root");
    assert_eq!(c.tmp_fs, "/tmp");
    assert_eq!(c.prolog_epilog_timeout, None);
    assert_eq!(c.private_data, vec![]);
    assert!(c.accounting_storage_enforce.is_none());
    assert_eq!(
        c.tracked_tres().join(","),
        "cpu,mem,energy,node,billing,fs/disk,vmem,pages"
    );
    let p = &c.partitions[0];
    assert_eq!(p.default_time, None);
    assert_eq!(p.max_nodes, None);
    assert_eq!(p.min_nodes, 0);
    assert_eq!(p.max_cpus_per_node, None);
    assert_eq!((p.priority_job_factor, p.priority_tier), (1, 1));
    assert_eq!(p.over_subscribe, OverSubscribe::No);
    assert_eq!(p.preempt_mode.to_string(), "OFF");
    assert_eq!(p.grace_time, Duration::ZERO);
    assert_eq!(p.over_time_limit, None);
    assert_eq!(p.select_type_parameters, None);
    assert_eq!((p.def_mem, p.max_mem), (None, None));
    assert_eq!(p.allow_groups, None);
    assert_eq!(p.allow_accounts, None);
    assert_eq!(p.allow_qos, None);
    assert_eq!(p.alloc_nodes, None);
    assert!(!p.hidden && !p.root_only && !p.req_resv && !p.exclusive_user && !p.lln);
}

#[test]
fn example_configs_parse_without_warnings() {
    let slurm = SlurmConf::parse(
        include_str!("../../../etc/slurm.conf.example"),
        "slurm.conf.example",
    )
    .unwrap();
    assert!(slurm.warnings.is_empty(), "{:?}", slurm.warnings);
    assert!(!slurm.conf.nodes.is_empty());
    assert!(slurm.conf.default_partition().is_some());
    let gres = GresConf::parse(
        include_str!("../../../etc/gres.conf.example"),
        "gres.conf.example",
    )
    .unwrap();
    assert!(gres.warnings.is_empty(), "{:?}", gres.warnings);
    assert!(!gres.conf.records.is_empty());
    let cgroup = CgroupConf::parse(
        include_str!("../../../etc/cgroup.conf.example"),
        "cgroup.conf.example",
    )
    .unwrap();
    assert!(cgroup.warnings.is_empty(), "{:?}", cgroup.warnings);
}

// --- top-level keys ----------------------------------------------------------

#[test]
fn keys_are_case_insensitive_and_last_scalar_wins() {
    let c = conf("messagetimeout=20\nMESSAGETIMEOUT=30\nsElEcTtYpE=select/cons_tres\n");
    assert_eq!(c.message_timeout, Duration::from_secs(30));
    assert_eq!(c.select_type, SelectType::ConsTres);
}

#[test]
fn several_top_level_pairs_on_one_line() {
    let c = conf("KillWait=5 TreeWidth=16\n");
    assert_eq!(c.kill_wait, Duration::from_secs(5));
    assert_eq!(c.tree_width, 16);
}

#[test]
fn cluster_name_is_lowercased() {
    let c = parse("ClusterName=MyCluster\nSlurmctldHost=h").conf;
    assert_eq!(c.cluster_name, "mycluster");
}

#[test]
fn slurmctld_host_lines_accumulate_primary_then_backups() {
    let c =
        parse("ClusterName=c\nSlurmctldHost=a(10.0.0.1)\nSlurmctldHost=b\nSlurmctldHost=c(c-ib)\n")
            .conf;
    let hosts: Vec<String> = c.slurmctld_hosts.iter().map(ToString::to_string).collect();
    assert_eq!(hosts, vec!["a(10.0.0.1)", "b", "c(c-ib)"]);
    assert_eq!(
        c.primary_controller().map(|h| h.contact()),
        Some("10.0.0.1")
    );
    let backups: Vec<&str> = c.backup_controllers().iter().map(|h| h.contact()).collect();
    assert_eq!(backups, vec!["b", "c-ib"]);
}

#[test]
fn a_controller_named_localhost_is_this_host_reached_at_localhost() {
    let me = crate::host::short_hostname();
    let c =
        parse("ClusterName=c\nSlurmctldHost=localhost\nSlurmctldHost=LocalHost(127.0.0.1)\n").conf;
    let hosts: Vec<String> = c.slurmctld_hosts.iter().map(ToString::to_string).collect();
    assert_eq!(
        hosts,
        vec![format!("{me}(localhost)"), format!("{me}(127.0.0.1)")]
    );
    let c = parse("ClusterName=c\nControlMachine=localhost\n").conf;
    assert_eq!(c.slurmctld_hosts[0].contact(), "localhost");
    assert_eq!(c.slurmctld_hosts[0].name, me);
}

#[test]
fn legacy_control_machine_keys() {
    let c =
        parse("ClusterName=c\nControlMachine=m1\nControlAddr=10.0.0.1\nBackupController=m2\n").conf;
    assert_eq!(
        c.slurmctld_hosts,
        vec![
            ControllerHost {
                name: "m1".into(),
                addr: Some("10.0.0.1".into())
            },
            ControllerHost {
                name: "m2".into(),
                addr: None
            },
        ]
    );
    let e =
        SlurmConf::parse("ClusterName=c\nSlurmctldHost=a\nControlMachine=b\n", "s").unwrap_err();
    assert!(
        matches!(e, ConfError::Conflict { key: "ControlMachine", ref loc, .. } if loc.line == 3),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "s:3: ControlMachine cannot be combined with SlurmctldHost"
    );
}

#[test]
fn required_keys() {
    let e = SlurmConf::parse("SlurmctldHost=h\n", "/etc/slurm/slurm.conf").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/etc/slurm/slurm.conf: ClusterName needs to be specified"
    );
    let e = SlurmConf::parse("ClusterName=c\n", "/etc/slurm/slurm.conf").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/etc/slurm/slurm.conf: SlurmctldHost needs to be specified"
    );
    assert!(e.loc().is_none());
}

#[test]
fn ports_and_ranges() {
    let c = conf("SlurmctldPort=6817-6820\nSlurmdPort=7000\n");
    assert_eq!(
        c.slurmctld_port,
        PortRange {
            first: 6817,
            last: 6820
        }
    );
    assert_eq!(c.slurmctld_port.len(), 4);
    assert_eq!(c.slurmctld_port.to_string(), "6817-6820");
    assert_eq!(c.slurmd_port, 7000);
    for bad in [
        "SlurmctldPort=6820-6817",
        "SlurmctldPort=0",
        "SlurmdPort=70000",
        "SlurmdPort=x",
    ] {
        assert!(matches!(err(bad), ConfError::InvalidValue { .. }), "{bad}");
    }
}

#[test]
fn typed_plugins_and_lists() {
    let c = conf(
        "SelectTypeParameters=CR_Core_Memory,CR_ONE_TASK_PER_CORE\n\
         PriorityType=priority/multifactor\n\
         PriorityWeightAge=1000 PriorityWeightFairshare=10000 PriorityWeightQOS=5\n\
         PriorityWeightTRES=CPU=1000,Mem=2000,GRES/gpu=3000\n\
         PriorityDecayHalfLife=14-0\nPriorityMaxAge=1-0\n\
         PriorityFlags=ACCRUE_ALWAYS,MAX_TRES\n\
         PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND,GANG\n\
         PreemptExemptTime=00:05:00\n\
         AccountingStorageEnforce=limits,qos\nAccountingStorageTRES=gres/gpu,license/x\n\
         GresTypes=gpu,shard\nLicenses=matlab:4,fluent\n\
         TaskPlugin=task/none\nMpiDefault=pmix\n\
         SchedulerParameters=bf_interval=1,sched_interval=1\n\
         SlurmctldParameters=enable_configless\nSlurmdParameters=config_overrides\n\
         PrologFlags=Contain\nPrivateData=jobs,usage\n\
         HealthCheckProgram=/usr/sbin/nhc\nHealthCheckInterval=300\nHealthCheckNodeState=IDLE,CYCLE\n\
         DefMemPerCPU=2G\nMaxMemPerNode=UNLIMITED\nOverTimeLimit=UNLIMITED\n\
         PropagateResourceLimitsExcept=MEMLOCK\nPrologEpilogTimeout=120\n\
         SuspendTime=600\nSlurmdDebug=debug2\nDebugFlags=Backfill,Gres\n",
    );
    assert_eq!(
        c.select_type_parameters.resource,
        Some(CrResource::CoreMemory)
    );
    assert!(c.select_type_parameters.one_task_per_core);
    assert_eq!(c.priority_type, PriorityType::Multifactor);
    assert_eq!(
        (
            c.priority_weight_age,
            c.priority_weight_fairshare,
            c.priority_weight_qos
        ),
        (1000, 10_000, 5)
    );
    assert_eq!(c.priority_weight_tres.len(), 3);
    assert_eq!(c.priority_weight_tres[2].tres, "GRES/gpu");
    assert_eq!(c.priority_decay_half_life, Duration::from_secs(14 * 86_400));
    assert_eq!(c.priority_max_age, Duration::from_secs(86_400));
    assert_eq!(
        c.priority_flags,
        vec![PriorityFlag::AccrueAlways, PriorityFlag::MaxTres]
    );
    assert_eq!(c.preempt_type, PreemptType::PartitionPrio);
    assert_eq!(c.preempt_mode.kind, PreemptModeKind::Suspend);
    assert!(c.preempt_mode.gang);
    assert_eq!(c.preempt_exempt_time, Duration::from_secs(300));
    let e = c.accounting_storage_enforce;
    assert!(e.limits && e.qos && e.associations && !e.wckeys);
    assert_eq!(
        c.tracked_tres().last().map(String::as_str),
        Some("license/x")
    );
    assert_eq!(c.gres_types, vec!["gpu", "shard"]);
    assert_eq!(c.licenses[1].count, 1);
    assert!(c.task_plugin.is_empty());
    assert_eq!(c.mpi_default, MpiPlugin::Pmix);
    assert_eq!(c.scheduler_parameters.bf_interval, Duration::from_secs(1));
    assert!(c.slurmctld_parameters.has("enable_configless"));
    assert!(c.slurmd_parameters.has("config_overrides"));
    assert!(c.prolog_flags.contain && c.prolog_flags.alloc);
    assert_eq!(c.private_data, vec![PrivateData::Jobs, PrivateData::Usage]);
    assert_eq!(c.health_check_program.as_deref(), Some("/usr/sbin/nhc"));
    assert_eq!(c.health_check_interval, Duration::from_secs(300));
    assert!(c.health_check_node_state.idle && c.health_check_node_state.cycle);
    assert_eq!(c.def_mem, Some(MemPer::Cpu(2048)));
    assert_eq!(c.max_mem, None);
    assert_eq!(c.over_time_limit, TimeLimit::Infinite);
    assert_eq!(c.propagate_resource_limits_except, vec![Rlimit::Memlock]);
    assert_eq!(c.prolog_epilog_timeout, Some(Duration::from_secs(120)));
    assert_eq!(c.suspend_time, Some(Duration::from_secs(600)));
    assert_eq!(c.slurmd_debug, LogLevel::Debug2);
    assert_eq!(c.debug_flags, vec!["Backfill", "Gres"]);
}

#[test]
fn select_type_parameters_default_depends_on_select_type() {
    assert_eq!(conf("").select_type_parameters.resource, None);
    assert_eq!(
        conf("SelectType=select/cons_tres")
            .select_type_parameters
            .resource,
        Some(CrResource::CoreMemory)
    );
}

#[test]
fn def_mem_per_cpu_wins_over_per_node_with_a_warning() {
    let p = parse(&format!("{MIN}DefMemPerNode=1000\nDefMemPerCPU=100\n"));
    assert_eq!(p.conf.def_mem, Some(MemPer::Cpu(100)));
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].loc.line, 3);
    assert!(
        matches!(p.warnings[0].kind, WarningKind::Ignored { ref key, .. } if key == "DefMemPerNode")
    );
    assert_eq!(conf("DefMemPerNode=1000").def_mem, Some(MemPer::Node(1000)));
    assert_eq!(conf("DefMemPerCPU=0").def_mem, None);
}

#[test]
fn unknown_keys_warn_with_place_and_known_ones_do_not() {
    let p = parse(&format!(
        "{MIN}FastSchedule=1\nSwitchType=switch/none\nJobCompHost=db\n"
    ));
    assert_eq!(p.warnings.len(), 1);
    let w = &p.warnings[0];
    assert_eq!(w.loc, SourceLoc::new("slurm.conf", 3));
    assert_eq!(
        w.kind,
        WarningKind::UnknownKey {
            key: "FastSchedule".into()
        }
    );
    assert_eq!(
        w.to_string(),
        "slurm.conf:3: unknown parameter \"FastSchedule\" ignored"
    );
    // Unknown keys are still in the raw entries.
    assert!(p.conf.entries.iter().any(|e| e.key == "FastSchedule"));
}

#[test]
fn invalid_values_are_errors_naming_the_key_and_form() {
    let cases = [
        ("MessageTimeout=ten", "MessageTimeout"),
        ("MessageTimeout=-1", "MessageTimeout"),
        ("TreeWidth=0", "TreeWidth"),
        ("TreeWidth=99999", "TreeWidth"),
        ("SelectType=cons_tres", "SelectType"),
        (
            "SelectTypeParameters=CR_Core,CR_Socket",
            "SelectTypeParameters",
        ),
        ("SchedulerType=sched/wiki", "SchedulerType"),
        ("PriorityType=priority/fancy", "PriorityType"),
        ("AuthType=auth/kerberos", "AuthType"),
        ("AuthAltTypes=auth/jwt,auth/x", "AuthAltTypes"),
        ("ProctrackType=proctrack/none", "ProctrackType"),
        ("TaskPlugin=task/affinity,task/bogus", "TaskPlugin"),
        ("JobAcctGatherType=linux", "JobAcctGatherType"),
        (
            "AccountingStorageType=accounting_storage/mysql",
            "AccountingStorageType",
        ),
        ("PreemptType=preempt/everything", "PreemptType"),
        ("PreemptMode=CANCEL,REQUEUE", "PreemptMode"),
        ("PriorityDecayHalfLife=UNLIMITED", "PriorityDecayHalfLife"),
        ("PriorityWeightAge=99999999999", "PriorityWeightAge"),
        ("PriorityWeightTRES=CPU", "PriorityWeightTRES"),
        ("PriorityFlags=MAX_TRES,NOPE", "PriorityFlags"),
        ("DefMemPerCPU=lots", "DefMemPerCPU"),
        ("MaxMemPerNode=5Q", "MaxMemPerNode"),
        ("DisableRootJobs=perhaps", "DisableRootJobs"),
        ("MaxArraySize=4000002", "MaxArraySize"),
        ("MaxJobId=0", "MaxJobId"),
        ("ReturnToService=3", "ReturnToService"),
        ("EnforcePartLimits=SOME", "EnforcePartLimits"),
        (
            "AccountingStorageEnforce=everything",
            "AccountingStorageEnforce",
        ),
        ("AccountingStoragePort=70000", "AccountingStoragePort"),
        ("JobAcctGatherFrequency=gpu=3", "JobAcctGatherFrequency"),
        ("PropagateResourceLimits=CORES", "PropagateResourceLimits"),
        ("PrologFlags=Contain,Later", "PrologFlags"),
        ("PrivateData=secrets", "PrivateData"),
        ("HealthCheckNodeState=SLEEPY", "HealthCheckNodeState"),
        ("SlurmctldDebug=loud", "SlurmctldDebug"),
        ("MpiDefault=openmpi", "MpiDefault"),
        ("TopologyPlugin=topology/star", "TopologyPlugin"),
        ("Licenses=matlab:many", "Licenses"),
        (
            "SchedulerParameters=bf_interval=soon",
            "SchedulerParameters",
        ),
        ("OverTimeLimit=1:00:00", "OverTimeLimit"),
        ("SlurmctldHost=a(b", "SlurmctldHost"),
        ("ClusterName=", "ClusterName"),
        ("SchedulerTimeSlice=1", "SchedulerTimeSlice"),
        ("PreemptExemptTime=soon", "PreemptExemptTime"),
    ];
    for (line, key) in cases {
        let e = err(&format!("{line}\n"));
        match &e {
            ConfError::InvalidValue { key: k, loc, .. } => {
                assert_eq!(k, key, "{line}");
                assert_eq!(loc.line, 3, "{line}");
            }
            other => panic!("{line}: unexpected {other}"),
        }
        assert!(
            e.to_string().starts_with("slurm.conf:3: invalid value "),
            "{e}"
        );
    }
}

#[test]
fn max_time_error_message_matches_the_documented_form() {
    let mut text = String::from(MIN);
    for i in 3..12 {
        text.push_str(&format!("# line {i}\n"));
    }
    text.push_str("PartitionName=p MaxTime=abc\n");
    let e = SlurmConf::parse(&text, "/etc/slurm/slurm.conf").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/etc/slurm/slurm.conf:12: invalid value \"abc\" for MaxTime: expected a time limit \
         (minutes, [days-]hours:minutes:seconds, UNLIMITED)"
    );
}

// --- node lines --------------------------------------------------------------

#[test]
fn node_lines_expand_in_config_order_with_defaults() {
    let c = conf(
        "NodeName=DEFAULT CPUs=8 RealMemory=16000 Features=ib\n\
         NodeName=b[1-2] Weight=5\n\
         NodeName=a1 RealMemory=32000 Features=ib,bigmem Gres=gpu:a100:4,shard:8\n\
         NodeName=DEFAULT RealMemory=100\n\
         NodeName=z1\n",
    );
    assert_eq!(names(&c.nodes), vec!["b1", "b2", "a1", "z1"]);
    let b1 = c.node("b1").unwrap();
    assert_eq!((b1.cpus, b1.real_memory, b1.weight), (8, 16_000, 5));
    assert_eq!(b1.features, vec!["ib"]);
    assert_eq!(b1.hostname, "b1");
    assert_eq!(b1.addr, "b1");
    assert_eq!(b1.port, 6818);
    assert_eq!(b1.loc.line, 4);
    let a1 = c.node("a1").unwrap();
    assert_eq!(a1.real_memory, 32_000);
    assert_eq!(a1.weight, 1);
    assert_eq!(a1.features, vec!["ib", "bigmem"]);
    assert_eq!(a1.gres.len(), 2);
    assert_eq!(a1.gres[0].name, "gpu");
    assert_eq!(a1.gres[0].gres_type.as_deref(), Some("a100"));
    assert_eq!(a1.gres[0].count, 4);
    assert_eq!(a1.gres[1].name, "shard");
    assert_eq!(a1.gres[1].count, 8);
    let z1 = c.node("z1").unwrap();
    assert_eq!((z1.cpus, z1.real_memory), (8, 100));
}

#[test]
fn node_addr_and_hostname_map_by_position() {
    let c = conf("NodeName=n[1-3] NodeHostname=h[1-3] NodeAddr=10.0.0.[1-3]\n");
    let got: Vec<(&str, &str, &str)> = c
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.hostname.as_str(), n.addr.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("n1", "h1", "10.0.0.1"),
            ("n2", "h2", "10.0.0.2"),
            ("n3", "h3", "10.0.0.3")
        ]
    );
    // NodeAddr defaults to NodeHostname.
    let c = conf("NodeName=n[1-2] NodeHostname=h[7-8]\n");
    assert_eq!(c.nodes[1].addr, "h8");
}

#[test]
fn node_addr_count_mismatch_is_an_error() {
    let e = err("NodeName=n[1-3] NodeAddr=10.0.0.[1-2]\n");
    assert!(
        matches!(
            e,
            ConfError::CountMismatch {
                key: "NodeAddr",
                count: 2,
                names: 3,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "slurm.conf:3: NodeAddr has 2 values for 3 NodeName entries (need 1 or 3)"
    );
    assert!(matches!(
        err("NodeName=n[1-3] NodeHostname=a,b\n"),
        ConfError::CountMismatch {
            key: "NodeHostname",
            ..
        }
    ));
    assert!(matches!(
        err("NodeName=n[1-3] Port=7000-7001\n"),
        ConfError::CountMismatch { key: "Port", .. }
    ));
}

#[test]
fn ports_per_node_single_shared_and_default_from_slurmd_port() {
    let c = conf(
        "NodeName=a[1-2] Port=7000-7001\nNodeName=b[1-2] Port=[7100]\nNodeName=c1\nSlurmdPort=9000\n",
    );
    let ports: Vec<u16> = c.nodes.iter().map(|n| n.port).collect();
    assert_eq!(ports, vec![7000, 7001, 7100, 7100, 9000]);
}

#[test]
fn cpu_topology_defaults() {
    let c = conf(
        "NodeName=t1 Boards=2 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=2\n\
         NodeName=t2 CPUs=6\n\
         NodeName=t3 CPUs=16 CoresPerSocket=4 ThreadsPerCore=2\n\
         NodeName=t4\n\
         NodeName=t5 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 CPUs=16\n\
         NodeName=t6 Procs=3\n",
    );
    let t1 = c.node("t1").unwrap();
    assert_eq!((t1.sockets, t1.sockets_per_board, t1.cpus), (4, 2, 32));
    let t2 = c.node("t2").unwrap();
    assert_eq!(
        (
            t2.sockets,
            t2.cores_per_socket,
            t2.threads_per_core,
            t2.cpus
        ),
        (6, 1, 1, 6)
    );
    let t3 = c.node("t3").unwrap();
    assert_eq!((t3.sockets, t3.cpus), (2, 16));
    let t4 = c.node("t4").unwrap();
    assert_eq!(
        (t4.boards, t4.sockets, t4.cpus, t4.real_memory),
        (1, 1, 1, 1)
    );
    // CPUs = Sockets*Cores (threads not scheduled) is accepted as written.
    assert_eq!(c.node("t5").unwrap().cpus, 16);
    assert_eq!(c.node("t6").unwrap().cpus, 3);
}

#[test]
fn cpus_not_matching_topology_are_reset_with_a_warning() {
    let p = parse(&format!(
        "{MIN}NodeName=x CPUs=7 Sockets=2 CoresPerSocket=2\n"
    ));
    assert_eq!(p.conf.nodes[0].cpus, 4);
    assert_eq!(
        p.warnings[0].kind,
        WarningKind::CpusMismatch {
            node: "x".into(),
            configured: 7,
            computed: 4
        }
    );
}

#[test]
fn node_state_reason_and_specialisation() {
    let c = conf(
        "NodeName=d1 State=DRAIN Reason=\"bad dimm\" MemSpecLimit=1024 CpuSpecList=0-1 \
         CoreSpecCount=2 TmpDisk=100000 CpuBind=cores BcastAddr=10.1.0.1\n\
         NodeName=f1 State=future\n",
    );
    let d1 = c.node("d1").unwrap();
    assert_eq!(d1.state, NodeConfState::Drain);
    assert_eq!(d1.reason.as_deref(), Some("bad dimm"));
    assert_eq!(d1.mem_spec_limit, Some(1024));
    assert_eq!(d1.cpu_spec_list, Some(vec![0, 1]));
    assert_eq!(d1.core_spec_count, Some(2));
    assert_eq!(d1.tmp_disk, 100_000);
    assert_eq!(d1.cpu_bind.as_deref(), Some("cores"));
    assert_eq!(d1.bcast_addr.as_deref(), Some("10.1.0.1"));
    assert_eq!(c.node("f1").unwrap().state, NodeConfState::Future);
}

#[test]
fn node_line_errors() {
    assert!(matches!(
        err("NodeName=n1\nNodeName=n[0-2]\n"),
        ConfError::DuplicateNode { ref node, .. } if node == "n1"
    ));
    assert!(matches!(
        err("NodeName= CPUs=2\n"),
        ConfError::MissingName {
            line_key: "NodeName",
            ..
        }
    ));
    let cases = [
        ("NodeName=n[1-", "NodeName"),
        ("NodeName=n1 CPUs=many", "CPUs"),
        ("NodeName=n1 CoresPerSocket=0", "CoresPerSocket"),
        ("NodeName=n1 RealMemory=4X", "RealMemory"),
        ("NodeName=n1 Gres=gpu:a:b:c", "Gres"),
        ("NodeName=n1 State=SLEEPING", "State"),
        ("NodeName=n1 Port=99999", "Port"),
        ("NodeName=n1 Weight=-1", "Weight"),
        ("NodeName=n1 CpuSpecList=3-1", "CpuSpecList"),
        ("NodeName=DEFAULT Sockets=x", "Sockets"),
        ("NodeName=n1 Boards=65535 SocketsPerBoard=65535", "Sockets"),
    ];
    for (line, key) in cases {
        match err(&format!("{line}\n")) {
            ConfError::InvalidValue { key: k, .. } => assert_eq!(k, key, "{line}"),
            other => panic!("{line}: unexpected {other}"),
        }
    }
}

#[test]
fn unknown_node_attribute_warns() {
    let p = parse(&format!("{MIN}NodeName=n1 Colour=blue\n"));
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(
        p.warnings[0].kind,
        WarningKind::UnknownKey {
            key: "Colour".into()
        }
    );
    assert_eq!(p.conf.nodes.len(), 1);
}

#[test]
fn front_end_lines_are_ignored_with_a_warning() {
    let p = parse(&format!("{MIN}FrontendName=fe1 FrontendAddr=10.0.0.9\n"));
    assert!(p.conf.nodes.is_empty());
    assert!(matches!(
        p.warnings[0].kind,
        WarningKind::Ignored { ref key, .. } if key == "FrontendName"
    ));
}

#[test]
fn record_key_in_the_middle_of_a_line_takes_the_rest() {
    let c = conf("KillWait=3 NodeName=n1 CPUs=4\n");
    assert_eq!(c.kill_wait, Duration::from_secs(3));
    assert_eq!(c.nodes[0].cpus, 4);
}

#[test]
fn continuation_lines_in_node_definitions() {
    let c =
        conf("NodeName=n[1-2] \\\n   CPUs=4 \\\n   RealMemory=2000\nPartitionName=p Nodes=ALL\n");
    assert_eq!(c.nodes[1].real_memory, 2000);
    assert_eq!(c.partitions[0].loc.line, 6);
}

// --- node sets and down nodes -----------------------------------------------

#[test]
fn node_sets_by_feature_and_list() {
    let c = conf(
        "NodeName=g[1-2] Features=gpu\nNodeName=c[1-3]\n\
         NodeSet=gpus Feature=gpu\nNodeSet=some Nodes=c[1-2]\n\
         PartitionName=gp Nodes=gpus,c3\n",
    );
    assert_eq!(c.node_sets[0].nodes, vec!["g1", "g2"]);
    assert_eq!(c.node_sets[1].nodes, vec!["c1", "c2"]);
    assert_eq!(c.partition("gp").unwrap().nodes, vec!["g1", "g2", "c3"]);
    assert!(matches!(
        err("NodeName=a1\nNodeSet=s Nodes=b1\n"),
        ConfError::UnknownNode {
            what: "NodeSet",
            ..
        }
    ));
    assert!(matches!(
        err("NodeName=a1\nNodeSet=s Nodes=a1\nNodeSet=s Nodes=a1\n"),
        ConfError::DuplicateNodeSet { .. }
    ));
}

#[test]
fn partition_members_follow_node_order_without_duplicates() {
    let c = conf(
        "NodeName=b[1-3]\nNodeName=a[1-2]\nNodeSet=s Nodes=a2,b1\n\
         PartitionName=p Nodes=a1,b3,s,b1,a1\nPartitionName=q Nodes=b2,ALL\n",
    );
    assert_eq!(
        c.partition("p").unwrap().nodes,
        vec!["b1", "b3", "a1", "a2"]
    );
    assert_eq!(
        c.partition("q").unwrap().nodes,
        vec!["b1", "b2", "b3", "a1", "a2"]
    );
}

#[test]
fn down_nodes_set_initial_state() {
    let c = conf("NodeName=n[1-3]\nDownNodes=n[2-3] State=DRAIN Reason=\"rack power\"\n");
    assert_eq!(c.node("n1").unwrap().state, NodeConfState::Unknown);
    assert_eq!(c.node("n2").unwrap().state, NodeConfState::Drain);
    assert_eq!(c.node("n3").unwrap().reason.as_deref(), Some("rack power"));
    assert_eq!(c.down_nodes[0].nodes, vec!["n2", "n3"]);
    let c = conf("NodeName=n1\nDownNodes=n1\n");
    assert_eq!(c.nodes[0].state, NodeConfState::Down);
    assert!(matches!(
        err("NodeName=n1\nDownNodes=n9\n"),
        ConfError::UnknownNode {
            what: "DownNodes",
            ..
        }
    ));
}

// --- partitions --------------------------------------------------------------

#[test]
fn partitions_with_defaults_and_attributes() {
    let c = conf(
        "PartitionName=early Nodes=n1\n\
         NodeName=n[1-4] CPUs=4\n\
         PartitionName=DEFAULT MaxTime=1-00:00:00 State=UP PriorityTier=2\n\
         PartitionName=batch Nodes=n[1-3] Default=YES DefaultTime=30 MaxNodes=2 MinNodes=1 \
         OverSubscribe=FORCE:2 AllowGroups=hpc,staff AllowAccounts=ALL DenyQos=low \
         Hidden=YES RootOnly=no ExclusiveUser=yes LLN=YES GraceTime=60 PriorityJobFactor=10 \
         PreemptMode=REQUEUE QOS=part MaxCPUsPerNode=UNLIMITED DefMemPerCPU=500 \
         TRESBillingWeights=CPU=1.0,Mem=0.25G SelectTypeParameters=CR_Socket \
         OverTimeLimit=5 AllocNodes=login[1-2] Alternate=early State=DRAIN\n\
         PartitionName=all Nodes=ALL Shared=EXCLUSIVE MaxTime=INFINITE\n",
    );
    let early = c.partition("early").unwrap();
    assert_eq!(early.max_time, TimeLimit::Infinite);
    assert_eq!(early.priority_tier, 1);
    let b = c.partition("batch").unwrap();
    assert_eq!(b.nodes, vec!["n1", "n2", "n3"]);
    assert_eq!(b.nodes_expr.as_deref(), Some("n[1-3]"));
    assert!(b.default);
    assert_eq!(b.max_time, TimeLimit::Minutes(1440));
    assert_eq!(b.default_time, Some(TimeLimit::Minutes(30)));
    assert_eq!((b.max_nodes, b.min_nodes), (Some(2), 1));
    assert_eq!(b.over_subscribe, OverSubscribe::Force(2));
    assert_eq!(
        b.allow_groups,
        Some(vec!["hpc".to_string(), "staff".to_string()])
    );
    assert_eq!(b.allow_accounts, None);
    assert_eq!(b.deny_qos, vec!["low"]);
    assert!(b.hidden && !b.root_only && b.exclusive_user && b.lln);
    assert_eq!(b.grace_time, Duration::from_secs(60));
    assert_eq!((b.priority_tier, b.priority_job_factor), (2, 10));
    assert_eq!(b.preempt_mode.kind, PreemptModeKind::Requeue);
    assert_eq!(b.qos.as_deref(), Some("part"));
    assert_eq!(b.max_cpus_per_node, None);
    assert_eq!(b.def_mem, Some(MemPer::Cpu(500)));
    assert_eq!(b.tres_billing_weights.len(), 2);
    assert_eq!(
        b.select_type_parameters.map(|s| s.resource),
        Some(Some(CrResource::Socket))
    );
    assert_eq!(b.over_time_limit, Some(TimeLimit::Minutes(5)));
    assert_eq!(b.alloc_nodes, Some(vec!["login[1-2]".to_string()]));
    assert_eq!(b.alternate.as_deref(), Some("early"));
    assert_eq!(b.state, PartitionState::Drain);
    let all = c.partition("all").unwrap();
    assert_eq!(all.nodes, vec!["n1", "n2", "n3", "n4"]);
    assert_eq!(all.over_subscribe, OverSubscribe::Exclusive);
    assert_eq!(all.priority_tier, 2);
    assert_eq!(
        c.default_partition().map(|p| p.name.as_str()),
        Some("batch")
    );
}

#[test]
fn partitions_inherit_cluster_memory_and_preempt_mode() {
    let c = conf(
        "DefMemPerCPU=1000\nMaxMemPerNode=64000\nPreemptMode=CANCEL\nNodeName=n1\n\
         PartitionName=a Nodes=n1\nPartitionName=b Nodes=n1 DefMemPerNode=2000 MaxMemPerNode=0\n",
    );
    let a = c.partition("a").unwrap();
    assert_eq!(a.def_mem, Some(MemPer::Cpu(1000)));
    assert_eq!(a.max_mem, Some(MemPer::Node(64_000)));
    assert_eq!(a.preempt_mode.kind, PreemptModeKind::Cancel);
    let b = c.partition("b").unwrap();
    assert_eq!(b.def_mem, Some(MemPer::Node(2000)));
    assert_eq!(b.max_mem, None);
}

#[test]
fn partition_warnings() {
    let p = parse(&format!(
        "{MIN}NodeName=n1\nPartitionName=a Nodes=n1 Default=YES\nPartitionName=b Default=YES \
         MaxTime=10 DefaultTime=20 AllowAccounts=x DenyAccounts=y\n"
    ));
    let kinds: Vec<&WarningKind> = p.warnings.iter().map(|w| &w.kind).collect();
    assert!(kinds.contains(&&WarningKind::MultipleDefaultPartitions {
        first: "a".into(),
        last: "b".into()
    }));
    assert!(kinds.contains(&&WarningKind::DefaultTimeExceedsMaxTime {
        partition: "b".into()
    }));
    assert!(kinds
        .iter()
        .any(|k| matches!(k, WarningKind::Ignored { key, .. } if key == "DenyAccounts")));
    let b = p.conf.partition("b").unwrap();
    assert_eq!(b.default_time, None);
    assert!(b.deny_accounts.is_empty());
    assert_eq!(
        p.conf.default_partition().map(|p| p.name.as_str()),
        Some("b")
    );
    let p = parse(&format!(
        "{MIN}PartitionName=c MaxTime=10 DefaultTime=UNLIMITED\n"
    ));
    assert_eq!(
        p.warnings[0].kind,
        WarningKind::DefaultTimeExceedsMaxTime {
            partition: "c".into()
        }
    );
}

#[test]
fn partition_errors() {
    let e = err("NodeName=n[1-2]\nPartitionName=p Nodes=n[1-3]\n");
    assert!(
        matches!(e, ConfError::UnknownNode { what: "PartitionName", ref owner, ref node, .. }
            if owner == "p" && node == "n3"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "slurm.conf:4: PartitionName p names unknown node n3"
    );
    assert!(matches!(
        err("PartitionName=p\nPartitionName=p\n"),
        ConfError::DuplicatePartition { .. }
    ));
    assert!(matches!(
        err("PartitionName= Nodes=ALL\n"),
        ConfError::MissingName {
            line_key: "PartitionName",
            ..
        }
    ));
    let cases = [
        ("PartitionName=p Default=maybe", "Default"),
        ("PartitionName=p State=OPEN", "State"),
        ("PartitionName=p DefaultTime=soon", "DefaultTime"),
        ("PartitionName=p MaxNodes=lots", "MaxNodes"),
        ("PartitionName=p OverSubscribe=SOMETIMES", "OverSubscribe"),
        ("PartitionName=p Shared=YES:x", "OverSubscribe"),
        ("PartitionName=p PriorityTier=70000", "PriorityTier"),
        ("PartitionName=p PreemptMode=NICELY", "PreemptMode"),
        ("PartitionName=p DefMemPerCPU=x", "DefMemPerCPU"),
        (
            "PartitionName=p TRESBillingWeights=CPU",
            "TRESBillingWeights",
        ),
        ("PartitionName=p GraceTime=1:00", "GraceTime"),
        ("PartitionName=p Nodes=n[", "Nodes"),
        ("PartitionName=DEFAULT MaxTime=x", "MaxTime"),
    ];
    for (line, key) in cases {
        match err(&format!("{line}\n")) {
            ConfError::InvalidValue { key: k, .. } => assert_eq!(k, key, "{line}"),
            other => panic!("{line}: unexpected {other}"),
        }
    }
}

// --- includes -----------------------------------------------------------------

#[test]
fn include_through_memory_source() {
    let mut src = MemoryIncludes::new()
        .with("/etc/slurm/nodes.d/a.conf", "NodeName=a[1-2] CPUs=2")
        .with("/etc/slurm/nodes.d/b.conf", "NodeName=b1\nKillWait=9")
        .with(
            "/etc/slurm/parts.conf",
            "PartitionName=all Nodes=ALL Default=YES",
        );
    let main =
        "ClusterName=c\nSlurmctldHost=h\nKillWait=1\nInclude nodes.d/*.conf\nInclude parts.conf\n";
    let p = SlurmConf::parse_with(main, "/etc/slurm/slurm.conf", &mut src).unwrap();
    let c = p.conf;
    assert_eq!(names(&c.nodes), vec!["a1", "a2", "b1"]);
    assert_eq!(c.kill_wait, Duration::from_secs(9));
    assert_eq!(c.partitions[0].nodes.len(), 3);
    let kw = c.entries.iter().rfind(|e| e.key == "KillWait").unwrap();
    assert_eq!(kw.loc, SourceLoc::new("/etc/slurm/nodes.d/b.conf", 2));
    assert_eq!(&*c.nodes[0].loc.file, "/etc/slurm/nodes.d/a.conf");
}

#[test]
fn include_in_pure_parse_is_an_error() {
    assert!(matches!(
        err("Include nodes.conf\n"),
        ConfError::IncludeUnavailable { .. }
    ));
}

#[test]
fn errors_in_included_files_name_that_file() {
    let mut src = MemoryIncludes::new().with("/c/bad.conf", "\n\nTreeWidth=wide");
    let e = SlurmConf::parse_with(
        "ClusterName=c\nSlurmctldHost=h\nInclude bad.conf",
        "/c/slurm.conf",
        &mut src,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/c/bad.conf:3: invalid value \"wide\" for TreeWidth"),
        "{e}"
    );
}

#[test]
fn load_from_disk_with_relative_glob_includes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("slurm.conf.d")).unwrap();
    std::fs::write(
        root.join("slurm.conf"),
        "ClusterName=Disk\nSlurmctldHost=h\nInclude slurm.conf.d/*.conf\nPartitionName=p Nodes=ALL\n",
    )
    .unwrap();
    std::fs::write(root.join("slurm.conf.d/10-nodes.conf"), "NodeName=n[1-2]\n").unwrap();
    std::fs::write(
        root.join("slurm.conf.d/20-more.conf"),
        "NodeName=m1\nInclude ../extra.inc\n",
    )
    .unwrap();
    std::fs::write(root.join("extra.inc"), "SlurmdTimeout=42\n").unwrap();
    let path = root.join("slurm.conf").to_string_lossy().into_owned();
    let p = SlurmConf::load(&path).unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(p.conf.cluster_name, "disk");
    assert_eq!(names(&p.conf.nodes), vec!["n1", "n2", "m1"]);
    assert_eq!(p.conf.slurmd_timeout, Duration::from_secs(42));
    assert_eq!(p.conf.partitions[0].nodes.len(), 3);

    std::fs::write(root.join("gres.conf"), "Name=gpu File=/dev/nvidia[0-1]\n").unwrap();
    let g = GresConf::load(&root.join("gres.conf").to_string_lossy()).unwrap();
    assert_eq!(g.conf.records[0].count, 2);
    std::fs::write(root.join("cgroup.conf"), "ConstrainCores=yes\n").unwrap();
    let cg = CgroupConf::load(&root.join("cgroup.conf").to_string_lossy()).unwrap();
    assert!(cg.conf.constrain_cores);
    assert!(matches!(
        SlurmConf::load(&root.join("missing.conf").to_string_lossy()).unwrap_err(),
        ConfError::Io { .. }
    ));
}

// --- properties -----------------------------------------------------------------

/// Every key the parsers know, plus record keys and node/partition attributes.
fn known_keys() -> Vec<&'static str> {
    let mut keys = vec![
        "ClusterName",
        "SlurmctldHost",
        "ControlMachine",
        "ControlAddr",
        "BackupController",
        "SlurmctldPort",
        "SlurmdPort",
        "SlurmUser",
        "StateSaveLocation",
        "SlurmdSpoolDir",
        "SlurmctldParameters",
        "SlurmdParameters",
        "MaxJobCount",
        "MaxArraySize",
        "MinJobAge",
        "MessageTimeout",
        "TCPTimeout",
        "TreeWidth",
        "SlurmdTimeout",
        "SlurmctldTimeout",
        "BatchStartTimeout",
        "TopologyPlugin",
        "KillWait",
        "InactiveLimit",
        "OverTimeLimit",
        "AuthType",
        "AuthAltTypes",
        "AuthAltParameters",
        "CredType",
        "PrivateData",
        "DisableRootJobs",
        "SchedulerType",
        "SchedulerParameters",
        "EnforcePartLimits",
        "Licenses",
        "ReturnToService",
        "JobRequeue",
        "SelectType",
        "SelectTypeParameters",
        "DefMemPerCPU",
        "DefMemPerNode",
        "MaxMemPerCPU",
        "MaxMemPerNode",
        "GresTypes",
        "PriorityType",
        "PriorityWeightAge",
        "PriorityWeightTRES",
        "PriorityDecayHalfLife",
        "PriorityMaxAge",
        "PriorityFlags",
        "PreemptType",
        "PreemptMode",
        "PreemptExemptTime",
        "AccountingStorageType",
        "AccountingStorageHost",
        "AccountingStoragePort",
        "AccountingStorageTRES",
        "AccountingStorageEnforce",
        "JobAcctGatherType",
        "JobAcctGatherFrequency",
        "ProctrackType",
        "TaskPlugin",
        "MpiDefault",
        "PropagateResourceLimits",
        "Prolog",
        "Epilog",
        "PrologFlags",
        "PrologEpilogTimeout",
        "HealthCheckProgram",
        "HealthCheckInterval",
        "HealthCheckNodeState",
        "SlurmctldDebug",
        "SlurmdDebug",
        "SlurmctldLogFile",
        "SuspendTime",
        "FirstJobId",
        "MaxJobId",
        "SchedulerTimeSlice",
        "Include",
        "FastSchedule",
        // records and their attributes
        "NodeName",
        "PartitionName",
        "NodeSet",
        "DownNodes",
        "FrontendName",
        "NodeAddr",
        "NodeHostname",
        "Port",
        "CPUs",
        "Boards",
        "Sockets",
        "SocketsPerBoard",
        "CoresPerSocket",
        "ThreadsPerCore",
        "RealMemory",
        "Gres",
        "Features",
        "State",
        "Nodes",
        "Default",
        "MaxTime",
        "DefaultTime",
        "OverSubscribe",
        "Feature",
        "CpuSpecList",
        "Weight",
        // gres.conf and cgroup.conf
        "Name",
        "Type",
        "File",
        "Cores",
        "Count",
        "AutoDetect",
        "Flags",
        "Links",
        "CgroupPlugin",
        "ConstrainCores",
        "MaxRAMPercent",
        "MemorySwappiness",
        "MinRAMSpace",
    ];
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("DEFAULT".to_string()),
        Just("ALL".to_string()),
        Just("n[1-4]".to_string()),
        Just("[17001-17004]".to_string()),
        Just("UNLIMITED".to_string()),
        Just("gpu:a100:4,shard:8".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("-1".to_string()),
        Just("n[1-".to_string()),
        Just("\"quoted value\"".to_string()),
        "[0-9]{1,6}",
        "[0-9]{1,3}-[0-9]{1,2}:[0-9]{2}:[0-9]{2}",
        "[a-zA-Z_/,:=0-9\\[\\]\\-]{0,24}",
        "\\PC{0,12}",
    ]
}

fn line_strategy() -> impl Strategy<Value = String> {
    let keys = known_keys();
    prop::collection::vec((prop::sample::select(keys), value_strategy()), 1..5).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| {
                if k == "Include" {
                    format!("Include {v}")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn check_no_panic(text: &str) {
    let mut src = MemoryIncludes::new().with("inc.conf", "KillWait=1\nInclude inc.conf");
    for result in [
        SlurmConf::parse(text, "f").map(|_| ()),
        SlurmConf::parse_with(text, "f", &mut src).map(|_| ()),
        GresConf::parse(text, "f").map(|_| ()),
        CgroupConf::parse(text, "f").map(|_| ()),
    ] {
        if let Err(e) = result {
            // Every located error starts with its location.
            if let Some(loc) = e.loc() {
                assert!(e.to_string().starts_with(&loc.to_string()));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        check_no_panic(&text);
    }

    #[test]
    fn parse_never_panics_on_config_shaped_text(
        text in "([A-Za-z]{1,12}[ ]?=[ ]?[-a-zA-Z0-9_\\[\\],:()\"'#\\\\ ]{0,16}[ \n]{0,2}){0,12}"
    ) {
        check_no_panic(&text);
    }

    #[test]
    fn parse_never_panics_on_real_keys_with_random_values(
        lines in prop::collection::vec(line_strategy(), 0..12)
    ) {
        let text = format!("{MIN}{}", lines.join("\n"));
        check_no_panic(&text);
        check_no_panic(&lines.join("\n"));
    }

    #[test]
    fn known_keys_never_warn_when_their_value_is_valid(
        timeout in 0u32..100_000,
        width in 1u16..=65_533,
        nodes in 1usize..20,
    ) {
        let text = format!(
            "{MIN}MessageTimeout={timeout}\nTreeWidth={width}\nNodeName=n[1-{nodes}] CPUs=2\n\
             PartitionName=p Nodes=n[1-{nodes}]\n"
        );
        let p = SlurmConf::parse(&text, "f").unwrap();
        prop_assert!(p.warnings.is_empty());
        prop_assert_eq!(p.conf.message_timeout, Duration::from_secs(timeout.into()));
        prop_assert_eq!(p.conf.tree_width, width);
        prop_assert_eq!(p.conf.nodes.len(), nodes);
        prop_assert_eq!(p.conf.partitions[0].nodes.len(), nodes);
    }
}

#[test]
fn auth_defaults_to_the_built_in_key_scheme() {
    // auth/slurm needs no extra daemon, so it is the default when unset.
    let c = parse("ClusterName=c\nSlurmctldHost=h\n").conf;
    assert_eq!(c.auth_type, AuthPlugin::Slurm);
    assert_eq!(c.cred_type, CredType::Slurm);
}

#[test]
fn the_file_hash_is_fnv1a_of_the_main_file() {
    // The same figure slurmd computes for the file "a".
    assert_eq!(conf_hash(b"a"), "af63dc4c8601ec8c");
    assert_eq!(conf_hash(b""), "cbf29ce484222325");
    let main = format!("{MIN}Include extra.conf\n");
    let mut src = MemoryIncludes::new()
        .with("/etc/slurm.conf", main.as_str())
        .with("/etc/extra.conf", "KillWait=5\n");
    let c = SlurmConf::load_with("/etc/slurm.conf", &mut src)
        .unwrap()
        .conf;
    assert_eq!(c.file_hash, conf_hash(main.as_bytes()));
    // A change anywhere in the main file changes it; text parsed without a
    // file has none.
    let mut other = MemoryIncludes::new()
        .with("/etc/slurm.conf", format!("{main}# note\n"))
        .with("/etc/extra.conf", "KillWait=5\n");
    let d = SlurmConf::load_with("/etc/slurm.conf", &mut other)
        .unwrap()
        .conf;
    assert_ne!(d.file_hash, c.file_hash);
    assert_eq!(parse(MIN).conf.file_hash, "");
}

proptest! {
    #[test]
    fn the_file_hash_is_sixteen_hex_digits(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let h = conf_hash(&bytes);
        prop_assert_eq!(h.len(), 16);
        prop_assert!(h.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}

/// `scontrol write config` writes `AccountingStoragePort=0` when there is
/// no accounting, as Slurm does; reading it back gives the default port.
#[test]
fn accounting_storage_port_zero_is_the_default() {
    let text = "ClusterName=c\nSlurmctldHost=h\nAccountingStoragePort=0\n\
                NodeName=n1 CPUs=1\nPartitionName=p Nodes=ALL\n";
    let c = SlurmConf::parse(text, "slurm.conf").unwrap().conf;
    assert_eq!(c.accounting_storage_port, 6819);
}

#[test]
fn node_path_expansion() {
    use super::expand_node_path;
    assert_eq!(
        expand_node_path("/a/%n/%h/%%/%x/%", "n1", "vm"),
        "/a/n1/vm/%/%x/%"
    );
    assert_eq!(expand_node_path("", "n1", "vm"), "");
    assert_eq!(expand_node_path("é%n", "n1", "vm"), "én1");
}

#[test]
fn raw_entry_is_the_last_pair_written_in_any_case() {
    let c = parse("ClusterName=c\nSlurmctldHost=h\nGetEnvTimeout=2\ngetenvtimeout=7\n").conf;
    assert_eq!(
        c.raw_entry("GETENVTIMEOUT").map(|e| e.value.as_str()),
        Some("7")
    );
    assert!(c.raw_entry("AllowSpecResourcesUsage").is_none());
}
