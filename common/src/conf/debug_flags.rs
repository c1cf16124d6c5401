//! DebugFlags names (slurm.conf `DebugFlags=`, `scontrol setdebugflags`):
//! one list, so that the command and the controller accept the same names
//! and keep Slurm's spelling whatever case they were typed in.

/// Slurm 22.05's DebugFlags names, in its spelling.
pub const DEBUG_FLAGS: &[&str] = &[
    "Accrue",
    "Agent",
    "Backfill",
    "BackfillMap",
    "BurstBuffer",
    "Cgroup",
    "CPU_Bind",
    "CpuFrequency",
    "Data",
    "DB_Archive",
    "DB_Assoc",
    "DB_Event",
    "DB_Job",
    "DB_QOS",
    "DB_Query",
    "DB_Reservation",
    "DB_Resource",
    "DB_Step",
    "DB_TRES",
    "DB_Usage",
    "DB_WCKey",
    "Dependency",
    "Elasticsearch",
    "Energy",
    "ExtSensors",
    "Federation",
    "FrontEnd",
    "Gang",
    "Gres",
    "Hetjob",
    "Interconnect",
    "Jag",
    "JobAccountGather",
    "JobContainer",
    "License",
    "Network",
    "NetworkRaw",
    "NodeFeatures",
    "NO_CONF_HASH",
    "Power",
    "Priority",
    "Profile",
    "Protocol",
    "Reservation",
    "Route",
    "Script",
    "SelectType",
    "Steps",
    "Switch",
    "Task",
    "TimeCray",
    "TraceJobs",
    "Trigger",
    "Triggers",
    "WorkQueue",
];

/// The DebugFlags name `name` is (compared without regard to case), in
/// Slurm's spelling; `None` for a word that is none.
pub fn debug_flag(name: &str) -> Option<&'static str> {
    DEBUG_FLAGS
        .iter()
        .find(|f| f.eq_ignore_ascii_case(name))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_is_one_word_once_and_found_in_any_case() {
        let mut seen = std::collections::HashSet::new();
        for f in DEBUG_FLAGS {
            assert!(f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
            assert!(seen.insert(f.to_ascii_lowercase()), "{f} twice");
            assert_eq!(debug_flag(&f.to_ascii_lowercase()), Some(*f));
        }
        assert_eq!(debug_flag("backfill"), Some("Backfill"));
        for bad in ["", "Back fill", "Backfil", "Backfill,Gres"] {
            assert_eq!(debug_flag(bad), None, "{bad}");
        }
    }
}
