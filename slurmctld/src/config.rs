//! `scontrol show config`: the running configuration as ordered key/values.
//!
//! The keys and their order are Slurm's. Values come from the typed
//! configuration where the meaning matters (durations print as `N sec`,
//! booleans as Slurm prints them), else from the line as written, else
//! `(null)` for an unset option. Keys we do not implement at all are left
//! out rather than shown with invented values.

use std::time::Duration;

use slurm_common::conf::SlurmConf;
use slurm_proto::v1::ConfigEntry;

use crate::VERSION;

/// Facts only the running daemon knows.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub conf_path: String,
    pub boot_time: String,
    pub next_job_id: u32,
    pub slurm_user: String,
}

fn secs(d: Duration) -> String {
    format!("{} sec", d.as_secs())
}

fn yes_no(b: bool) -> String {
    if b { "Yes" } else { "No" }.to_string()
}

fn raw(conf: &SlurmConf, key: &str) -> Option<String> {
    conf.entries
        .iter()
        .rev()
        .find(|e| e.key.eq_ignore_ascii_case(key))
        .map(|e| e.value.clone())
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(null)".to_string())
}

/// The entries in Slurm's order.
pub fn entries(conf: &SlurmConf, rt: &Runtime) -> Vec<ConfigEntry> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, v: String| out.push((k.to_string(), v));
    let r = |k: &str| raw(conf, k).unwrap_or_else(|| "(null)".to_string());

    push(
        "AccountingStorageBackupHost",
        opt(&conf.accounting_storage_backup_host),
    );
    push("AccountingStorageHost", opt(&conf.accounting_storage_host));
    push(
        "AccountingStoragePort",
        conf.accounting_storage_port.to_string(),
    );
    push("AccountingStorageType", r("AccountingStorageType"));
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

    out.into_iter()
        .map(|(key, value)| ConfigEntry { key, value })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_from_the_conf() {
        let conf = SlurmConf::parse(crate::core::tests::CONF, "slurm.conf")
            .unwrap()
            .conf;
        let rt = Runtime {
            conf_path: "/etc/slurm/slurm.conf".into(),
            boot_time: "2026-11-21T07:01:00".into(),
            next_job_id: 2,
            slurm_user: "root(0)".into(),
        };
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
}
