//! Plugin choices and flag words of slurm.conf as enums.
//!
//! Slurm names plugins by strings (`select/cons_tres`); here each choice is an
//! enum so that a typo fails when the file is read instead of when a daemon
//! tries to load the plugin, and so that code matches on variants instead of
//! comparing strings. `as_str` gives back Slurm's spelling for display.

use std::fmt;

use super::value::split_list;

/// Defines an enum whose variants are spelled as fixed words (compared
/// without case) in the config, with `parse`, `as_str`, `Display` and
/// `Default`. Extra spellings after `|` are accepted and never printed.
macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        $name:ident, default $default:ident, expected $expected:literal {
            $($body:tt)+
        }
    ) => {
        word_enum! { $(#[$meta])* $name, expected $expected { $($body)+ } }

        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }
    };
    (
        $(#[$meta:meta])*
        $name:ident, expected $expected:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $word:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// The accepted forms, for error messages.
            pub const EXPECTED: &'static str = $expected;
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// Slurm's spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word ),+
                }
            }

            /// Parses one word, ignoring case and surrounding blanks.
            pub fn parse(word: &str) -> Option<Self> {
                let w = word.trim();
                $(
                    if w.eq_ignore_ascii_case($word) $(|| w.eq_ignore_ascii_case($alias))* {
                        return Some($name::$variant);
                    }
                )+
                None
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use word_enum;

word_enum! {
    /// SchedulerType: backfill (default) or strict priority order.
    SchedulerType, default Backfill, expected "sched/backfill or sched/builtin" {
        Backfill => "sched/backfill",
        Builtin => "sched/builtin",
    }
}

word_enum! {
    /// SelectType. 22.05's default is select/linear (whole nodes).
    SelectType, default Linear,
    expected "select/linear, select/cons_res, select/cons_tres or select/cray_aries" {
        Linear => "select/linear",
        ConsRes => "select/cons_res",
        ConsTres => "select/cons_tres",
        CrayAries => "select/cray_aries",
    }
}

impl SelectType {
    /// Whether the plugin allocates below whole nodes (cores, memory, GRES).
    pub fn is_consumable(self) -> bool {
        matches!(self, SelectType::ConsRes | SelectType::ConsTres)
    }
}

word_enum! {
    /// PriorityType. 22.05's default is priority/basic (FIFO by submit order).
    PriorityType, default Basic, expected "priority/basic or priority/multifactor" {
        Basic => "priority/basic",
        Multifactor => "priority/multifactor",
    }
}

word_enum! {
    /// ProctrackType: how the processes of a step are found and killed.
    ProctrackType, default Cgroup,
    expected "proctrack/cgroup, proctrack/linuxproc, proctrack/pgid or proctrack/cray_aries" {
        Cgroup => "proctrack/cgroup",
        LinuxProc => "proctrack/linuxproc",
        Pgid => "proctrack/pgid",
        CrayAries => "proctrack/cray_aries",
    }
}

word_enum! {
    /// One entry of TaskPlugin (a comma list). `task/none` is the empty list.
    TaskPlugin, default None,
    expected "a comma list of task/affinity, task/cgroup, task/cray_aries or task/none" {
        Affinity => "task/affinity",
        Cgroup => "task/cgroup",
        CrayAries => "task/cray_aries",
        None => "task/none",
    }
}

word_enum! {
    /// AuthType / AuthAltTypes. auth/slurm is the built-in key scheme.
    AuthPlugin, default Slurm, expected "auth/munge, auth/slurm, auth/jwt or auth/none" {
        Munge => "auth/munge",
        Slurm => "auth/slurm",
        Jwt => "auth/jwt",
        None => "auth/none",
    }
}

word_enum! {
    /// CredType: how job and step credentials are signed.
    CredType, default Slurm, expected "cred/munge, cred/slurm or cred/none" {
        Munge => "cred/munge",
        Slurm => "cred/slurm",
        None => "cred/none",
    }
}

word_enum! {
    /// AccountingStorageType.
    AccountingStorageType, default None,
    expected "accounting_storage/none or accounting_storage/slurmdbd" {
        None => "accounting_storage/none",
        Slurmdbd => "accounting_storage/slurmdbd",
    }
}

word_enum! {
    /// JobAcctGatherType: per-task usage sampling.
    JobAcctGatherType, default None,
    expected "jobacct_gather/none, jobacct_gather/linux or jobacct_gather/cgroup" {
        None => "jobacct_gather/none",
        Linux => "jobacct_gather/linux",
        Cgroup => "jobacct_gather/cgroup",
    }
}

word_enum! {
    /// PreemptType: which jobs may preempt which.
    PreemptType, default None,
    expected "preempt/none, preempt/partition_prio or preempt/qos" {
        None => "preempt/none",
        PartitionPrio => "preempt/partition_prio",
        Qos => "preempt/qos",
    }
}

word_enum! {
    /// TopologyPlugin. Newer Slurm's `topology/flat` is the same as none.
    TopologyPlugin, default None,
    expected "topology/none, topology/tree, topology/block, topology/3d_torus or topology/hypercube" {
        None => "topology/none" | "topology/flat" | "topology/default",
        Tree => "topology/tree",
        Block => "topology/block",
        ThreeDTorus => "topology/3d_torus",
        Hypercube => "topology/hypercube",
    }
}

word_enum! {
    /// MpiDefault: the `--mpi` plugin used when a step names none.
    MpiPlugin, default None,
    expected "none, pmi2, pmix, pmix_v2, pmix_v3, pmix_v4, pmix_v5 or cray_shasta" {
        None => "none" | "mpi/none",
        Pmi2 => "pmi2" | "mpi/pmi2",
        Pmix => "pmix" | "mpi/pmix",
        PmixV2 => "pmix_v2",
        PmixV3 => "pmix_v3",
        PmixV4 => "pmix_v4",
        PmixV5 => "pmix_v5",
        CrayShasta => "cray_shasta",
    }
}

word_enum! {
    /// SlurmctldDebug / SlurmdDebug, by name or by number 0-9.
    LogLevel, default Info,
    expected "quiet, fatal, error, info, verbose, debug, debug2, debug3, debug4, debug5 or 0-9" {
        Quiet => "quiet" | "0",
        Fatal => "fatal" | "1",
        Error => "error" | "2",
        Info => "info" | "3",
        Verbose => "verbose" | "4",
        Debug => "debug" | "5",
        Debug2 => "debug2" | "6",
        Debug3 => "debug3" | "7",
        Debug4 => "debug4" | "8",
        Debug5 => "debug5" | "9",
    }
}

word_enum! {
    /// EnforcePartLimits: reject at submit instead of leaving jobs pending.
    /// `YES` is the old spelling of `ANY`.
    EnforcePartLimits, default No, expected "NO, ANY, ALL or YES" {
        No => "NO",
        Any => "ANY" | "YES",
        All => "ALL",
    }
}

word_enum! {
    /// ReturnToService: when a DOWN node comes back by itself.
    ReturnToService, default Never, expected "0, 1 or 2" {
        /// Only an administrator returns it.
        Never => "0",
        /// If it was DOWN for not responding.
        NonResponsive => "1",
        /// Any node that registers with a valid configuration.
        Any => "2",
    }
}

word_enum! {
    /// The action part of PreemptMode.
    PreemptModeKind, default Off, expected "OFF, CANCEL, REQUEUE or SUSPEND" {
        Off => "OFF",
        Cancel => "CANCEL",
        Requeue => "REQUEUE",
        Suspend => "SUSPEND",
    }
}

word_enum! {
    /// The resource part of SelectTypeParameters.
    CrResource, default CoreMemory,
    expected "CR_CPU, CR_CPU_Memory, CR_Core, CR_Core_Memory, CR_Socket, CR_Socket_Memory or CR_Memory" {
        Cpu => "CR_CPU",
        CpuMemory => "CR_CPU_Memory",
        Core => "CR_Core",
        CoreMemory => "CR_Core_Memory",
        Socket => "CR_Socket",
        SocketMemory => "CR_Socket_Memory",
        Memory => "CR_Memory",
    }
}

impl CrResource {
    /// Whether memory is a consumable resource.
    pub fn tracks_memory(self) -> bool {
        matches!(
            self,
            CrResource::CpuMemory
                | CrResource::CoreMemory
                | CrResource::SocketMemory
                | CrResource::Memory
        )
    }
}

/// PreemptMode: an action plus the GANG (time slicing) and WITHIN (QOS tiers)
/// modifiers, written as a comma list (`SUSPEND,GANG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PreemptMode {
    pub kind: PreemptModeKind,
    pub gang: bool,
    pub within: bool,
}

impl PreemptMode {
    pub const EXPECTED: &'static str =
        "a comma list of one of OFF, CANCEL, REQUEUE, SUSPEND with optional GANG and WITHIN";

    pub fn parse(v: &str) -> Option<Self> {
        let mut mode = PreemptMode::default();
        let mut kind_seen = false;
        let items = split_list(v);
        if items.is_empty() {
            return None;
        }
        for item in items {
            if item.eq_ignore_ascii_case("GANG") {
                mode.gang = true;
            } else if item.eq_ignore_ascii_case("WITHIN") {
                mode.within = true;
            } else {
                let kind = PreemptModeKind::parse(&item)?;
                if kind_seen && kind != mode.kind {
                    return None;
                }
                kind_seen = true;
                mode.kind = kind;
            }
        }
        Some(mode)
    }
}

impl fmt::Display for PreemptMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.gang {
            parts.push("GANG");
        }
        if self.within {
            parts.push("WITHIN");
        }
        if self.kind != PreemptModeKind::Off || parts.is_empty() {
            parts.push(self.kind.as_str());
        }
        f.write_str(&parts.join(","))
    }
}

/// SelectTypeParameters: which resources are consumable plus modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SelectTypeParameters {
    /// None when unset (select/linear) or when only modifiers were given.
    pub resource: Option<CrResource>,
    pub one_task_per_core: bool,
    pub core_default_dist_block: bool,
    pub lln: bool,
    pub pack_nodes: bool,
}

impl SelectTypeParameters {
    pub const EXPECTED: &'static str = "a comma list of one CR_CPU, CR_CPU_Memory, CR_Core, \
        CR_Core_Memory, CR_Socket, CR_Socket_Memory or CR_Memory and the modifiers \
        CR_ONE_TASK_PER_CORE, CR_CORE_DEFAULT_DIST_BLOCK, CR_LLN, CR_Pack_Nodes";

    pub fn parse(v: &str) -> Option<Self> {
        let mut p = SelectTypeParameters::default();
        let items = split_list(v);
        if items.is_empty() {
            return None;
        }
        for item in items {
            let upper = item.to_ascii_uppercase();
            match upper.as_str() {
                "CR_ONE_TASK_PER_CORE" => p.one_task_per_core = true,
                "CR_CORE_DEFAULT_DIST_BLOCK" => p.core_default_dist_block = true,
                "CR_LLN" => p.lln = true,
                "CR_PACK_NODES" => p.pack_nodes = true,
                _ => {
                    let r = CrResource::parse(&item)?;
                    if p.resource.is_some_and(|old| old != r) {
                        return None;
                    }
                    p.resource = Some(r);
                }
            }
        }
        Some(p)
    }

    /// The number Slurm's plugins are given for these parameters (its
    /// CR_* bits: CR_Core_Memory is 20), as `sbatch -v` shows it.
    pub fn bits(&self) -> u32 {
        let resource = match self.resource {
            None => 0,
            Some(CrResource::Cpu) => 0x1,
            Some(CrResource::Socket) => 0x2,
            Some(CrResource::Core) => 0x4,
            Some(CrResource::Memory) => 0x10,
            Some(CrResource::CpuMemory) => 0x11,
            Some(CrResource::SocketMemory) => 0x12,
            Some(CrResource::CoreMemory) => 0x14,
        };
        let flag = |on: bool, bit: u32| if on { bit } else { 0 };
        resource
            | flag(self.one_task_per_core, 0x100)
            | flag(self.pack_nodes, 0x200)
            | flag(self.core_default_dist_block, 0x1000)
            | flag(self.lln, 0x4000)
    }

    /// The value Slurm 22.05 uses when the key is absent.
    pub fn default_for(select: SelectType) -> Self {
        SelectTypeParameters {
            resource: select.is_consumable().then_some(CrResource::CoreMemory),
            ..Default::default()
        }
    }
}

impl fmt::Display for SelectTypeParameters {
    /// Upper case as `scontrol show config` prints it (`CR_CORE_MEMORY`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(r) = self.resource {
            parts.push(r.as_str().to_ascii_uppercase());
        }
        for (on, word) in [
            (self.one_task_per_core, "CR_ONE_TASK_PER_CORE"),
            (self.core_default_dist_block, "CR_CORE_DEFAULT_DIST_BLOCK"),
            (self.lln, "CR_LLN"),
            (self.pack_nodes, "CR_PACK_NODES"),
        ] {
            if on {
                parts.push(word.to_string());
            }
        }
        if parts.is_empty() {
            f.write_str("NONE")
        } else {
            f.write_str(&parts.join(","))
        }
    }
}

word_enum! {
    /// One PriorityFlags word.
    PriorityFlag,
    expected "a comma list of ACCRUE_ALWAYS, CALCULATE_RUNNING, DEPTH_OBLIVIOUS, NO_FAIR_TREE, \
              INCR_ONLY, MAX_TRES, NO_NORMAL_ALL, NO_NORMAL_ASSOC, NO_NORMAL_PART, NO_NORMAL_QOS, \
              NO_NORMAL_TRES, SMALL_RELATIVE_TO_TIME" {
        AccrueAlways => "ACCRUE_ALWAYS",
        CalculateRunning => "CALCULATE_RUNNING",
        DepthOblivious => "DEPTH_OBLIVIOUS",
        NoFairTree => "NO_FAIR_TREE",
        /// The old default; accepted and meaningless.
        FairTree => "FAIR_TREE",
        IncrOnly => "INCR_ONLY",
        MaxTres => "MAX_TRES",
        NoNormalAll => "NO_NORMAL_ALL",
        NoNormalAssoc => "NO_NORMAL_ASSOC",
        NoNormalPart => "NO_NORMAL_PART",
        NoNormalQos => "NO_NORMAL_QOS",
        NoNormalTres => "NO_NORMAL_TRES",
        SmallRelativeToTime => "SMALL_RELATIVE_TO_TIME",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_without_case_and_print_slurm_spelling() {
        assert_eq!(
            SelectType::parse("SELECT/CONS_TRES"),
            Some(SelectType::ConsTres)
        );
        assert_eq!(SelectType::ConsTres.to_string(), "select/cons_tres");
        assert_eq!(SelectType::parse("cons_tres"), None);
        assert_eq!(
            TopologyPlugin::parse("topology/flat"),
            Some(TopologyPlugin::None)
        );
        assert_eq!(LogLevel::parse("7"), Some(LogLevel::Debug3));
        assert_eq!(
            EnforcePartLimits::parse("yes"),
            Some(EnforcePartLimits::Any)
        );
        assert_eq!(MpiPlugin::parse("pmix_v4"), Some(MpiPlugin::PmixV4));
    }

    #[test]
    fn every_variant_round_trips_through_its_word() {
        for v in SelectType::ALL {
            assert_eq!(SelectType::parse(v.as_str()), Some(*v));
        }
        for v in LogLevel::ALL {
            assert_eq!(LogLevel::parse(v.as_str()), Some(*v));
        }
        for v in PriorityFlag::ALL {
            assert_eq!(PriorityFlag::parse(v.as_str()), Some(*v));
        }
    }

    #[test]
    fn preempt_mode_lists() {
        let m = PreemptMode::parse("suspend,GANG").unwrap();
        assert_eq!(m.kind, PreemptModeKind::Suspend);
        assert!(m.gang);
        assert_eq!(m.to_string(), "GANG,SUSPEND");
        assert_eq!(PreemptMode::parse("GANG").unwrap().to_string(), "GANG");
        assert_eq!(PreemptMode::parse("OFF").unwrap().to_string(), "OFF");
        assert_eq!(PreemptMode::parse("CANCEL,REQUEUE"), None);
        assert_eq!(PreemptMode::parse("bogus"), None);
        assert_eq!(PreemptMode::parse(""), None);
    }

    #[test]
    fn select_type_parameters() {
        let p = SelectTypeParameters::parse("CR_Core_Memory,CR_ONE_TASK_PER_CORE").unwrap();
        assert_eq!(p.resource, Some(CrResource::CoreMemory));
        assert!(p.one_task_per_core);
        assert_eq!(p.to_string(), "CR_CORE_MEMORY,CR_ONE_TASK_PER_CORE");
        assert_eq!(
            SelectTypeParameters::parse("CR_Core").unwrap().to_string(),
            "CR_CORE"
        );
        assert_eq!(SelectTypeParameters::parse("CR_Core,CR_CPU"), None);
        assert_eq!(SelectTypeParameters::parse("CR_Bogus"), None);
        // As `sbatch -v` of Slurm 22.05 shows them.
        for (text, bits) in [
            ("CR_CPU", 1),
            ("CR_Core", 4),
            ("CR_Core_Memory", 20),
            ("CR_CPU_Memory", 17),
            ("CR_Socket_Memory", 18),
            ("CR_Memory", 16),
            ("CR_Core,CR_ONE_TASK_PER_CORE", 260),
            ("CR_Core,CR_Pack_Nodes", 516),
            ("CR_Core,CR_CORE_DEFAULT_DIST_BLOCK", 4100),
            ("CR_Core,CR_LLN", 16388),
        ] {
            assert_eq!(
                SelectTypeParameters::parse(text).unwrap().bits(),
                bits,
                "{text}"
            );
        }
        assert_eq!(
            SelectTypeParameters::default_for(SelectType::Linear).to_string(),
            "NONE"
        );
        assert_eq!(
            SelectTypeParameters::default_for(SelectType::ConsTres).resource,
            Some(CrResource::CoreMemory)
        );
    }
}
