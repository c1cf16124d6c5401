//! `scontrol show job|node|partition|config|licenses` records.
//!
//! A record is a list of lines of `Key=Value` pairs. Slurm prints the lines
//! indented by three spaces, or joined by single spaces with `-o`
//! (`--oneliner`); both layouts come from the same list so they never drift
//! apart.

use std::fmt::Write as _;

use slurm_common::state::{NodeBaseState, NodeFlag, NodeState};
use slurm_common::time::{format_duration_sacct, format_time_limit_scontrol, TimeLimit};
use slurm_proto::v1::{
    self, job_info::Memory, partition_info, GetConfigReply, JobInfo, LicenseInfo, NodeInfo,
    NodeSharing, PartitionInfo,
};

use super::{common_limit, or_null, shown_state, write_tres, Ctx};

/// Slurm's "no value" task id, printed in default output names of array
/// masters (`slurm-15_4294967294.out`) and as the ArrayTaskId of an array
/// record whose every task was cancelled.
const NO_VAL: u32 = 4_294_967_294;

/// What `Reason=` shows for a job: its description (Slurm's state_desc,
/// e.g. "launch failed requeued held") when it has one, with each white
/// space character replaced by `_` as scontrol prints it, so the record
/// stays a list of `Key=Value` words; else its reason's name.
pub fn shown_reason(job: &JobInfo) -> std::borrow::Cow<'_, str> {
    if !job.state_description.is_empty() {
        // C's isspace in the C locale: bytes of other characters stay.
        let underscored = job
            .state_description
            .chars()
            .map(|c| match c {
                ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r' => '_',
                other => other,
            })
            .collect();
        std::borrow::Cow::Owned(underscored)
    } else if job.state_reason.is_empty() {
        std::borrow::Cow::Borrowed("None")
    } else {
        std::borrow::Cow::Borrowed(&job.state_reason)
    }
}

/// Builds one record, switching between the two layouts.
struct Record<'o> {
    out: &'o mut String,
    oneliner: bool,
    line_start: bool,
}

impl<'o> Record<'o> {
    fn new(out: &'o mut String, oneliner: bool) -> Self {
        Record {
            out,
            oneliner,
            line_start: true,
        }
    }

    /// Starts a new line (a space with `-o`).
    fn line(&mut self) {
        if self.oneliner {
            self.out.push(' ');
        } else {
            self.out.push_str("\n   ");
        }
        self.line_start = true;
    }

    /// Appends `key=` and leaves the value to the caller, with a space
    /// before it unless it opens a line.
    fn key(&mut self, key: &str) -> &mut String {
        if !self.line_start {
            self.out.push(' ');
        }
        self.line_start = false;
        self.out.push_str(key);
        self.out.push('=');
        self.out
    }

    fn kv(&mut self, key: &str, value: &str) {
        self.key(key).push_str(value);
    }

    fn kv_num(&mut self, key: &str, value: impl std::fmt::Display) {
        let out = self.key(key);
        let _ = write!(out, "{value}");
    }
}

fn time_or(unix: i64, none: &str, ctx: &Ctx) -> String {
    if unix <= 0 {
        none.to_owned()
    } else {
        ctx.timestamp(unix)
    }
}

fn name_id(out: &mut String, name: &str, id: u32) {
    if name.is_empty() {
        let _ = write!(out, "{id}({id})");
    } else {
        let _ = write!(out, "{name}({id})");
    }
}

/// Expands an output file pattern as scontrol does (`%j`, `%A`, `%a`, `%u`,
/// `%x`) and puts a relative path under the work directory. Like Slurm
/// 22.05's scontrol it leaves `%%` and `%N` as written.
pub fn expand_path(pattern: &str, job: &JobInfo) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    if !pattern.starts_with('/') && !job.work_dir.is_empty() {
        out.push_str(&job.work_dir);
        if !job.work_dir.ends_with('/') {
            out.push('/');
        }
    }
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('j') => {
                let _ = write!(out, "{}", job.job_id);
            }
            Some('A') => {
                let _ = write!(out, "{}", job.array_job_id.unwrap_or(job.job_id));
            }
            Some('a') => {
                let _ = write!(out, "{}", job.array_task_id.unwrap_or(NO_VAL));
            }
            Some('u') => out.push_str(&job.user_name),
            Some('x') => out.push_str(&job.name),
            // Slurm 22.05 leaves `%N` as written, even once the job has
            // a batch host.
            Some('N') => out.push_str("%N"),
            Some('%') => out.push_str("%%"),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

fn default_output(job: &JobInfo) -> String {
    if job.array_job_id.is_some() {
        expand_path("slurm-%A_%a.out", job)
    } else {
        expand_path("slurm-%j.out", job)
    }
}

fn sharing(job: &JobInfo) -> &'static str {
    match NodeSharing::try_from(job.sharing).unwrap_or(NodeSharing::Unspecified) {
        NodeSharing::Exclusive => "NO",
        NodeSharing::ExclusiveUser => "USER",
        NodeSharing::ExclusiveMcs => "MCS",
        NodeSharing::Oversubscribe => "YES",
        NodeSharing::Shared | NodeSharing::Unspecified => "OK",
    }
}

/// `0-3,6`: ascending ids with runs collapsed.
fn write_id_ranges(out: &mut String, ids: &[u32]) {
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end.wrapping_add(1) && ids[i + 1] > end {
            i += 1;
            end = ids[i];
        }
        if !out.ends_with('=') {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
}

/// One job record.
pub fn write_job(out: &mut String, job: &JobInfo, oneliner: bool, ctx: &Ctx) {
    write_job_detailed(out, job, oneliner, false, ctx);
}

/// One job record; `details` (`scontrol -d`) adds the `DerivedExitCode`
/// line and, for a job with an allocation, the `JOB_GRES` line before the
/// per-node lines.
///
/// An array record left with no task shows `ArrayTaskId=4294967294`.
pub fn write_job_detailed(
    out: &mut String,
    job: &JobInfo,
    oneliner: bool,
    details: bool,
    ctx: &Ctx,
) {
    let mut r = Record::new(out, oneliner);
    r.kv_num("JobId", job.job_id);
    if let Some(master) = job.array_job_id {
        r.kv_num("ArrayJobId", master);
        match job.array_task_id {
            Some(task) => r.kv_num("ArrayTaskId", task),
            // An array record whose tasks were all cancelled out of it:
            // Slurm prints its "no value" number.
            None if job.array_task_spec.is_empty() => {
                r.kv_num("ArrayTaskId", NO_VAL);
            }
            None => r.kv("ArrayTaskId", &ctx.task_lists.cut(&job.array_task_spec)),
        }
        if job.array_task_throttle > 0 {
            r.kv_num("ArrayTaskThrottle", job.array_task_throttle);
        }
    }
    r.kv("JobName", &job.name);
    r.line();
    name_id(r.key("UserId"), &job.user_name, job.user_id);
    name_id(r.key("GroupId"), &job.group_name, job.group_id);
    r.kv(
        "MCS_label",
        if job.mcs_label.is_empty() {
            "N/A"
        } else {
            &job.mcs_label
        },
    );
    r.line();
    r.kv_num("Priority", job.priority);
    r.kv_num("Nice", job.nice);
    r.kv("Account", or_null(&job.account));
    r.kv("QOS", or_null(&job.qos));
    r.line();
    r.kv("JobState", shown_state(job).long_name());
    r.kv("Reason", &shown_reason(job));
    r.kv("Dependency", or_null(&job.dependency));
    r.line();
    r.kv_num("Requeue", u8::from(job.requeue));
    r.kv_num("Restarts", job.restart_count);
    r.kv_num("BatchFlag", u8::from(job.batch));
    r.kv_num("Reboot", u8::from(job.reboot));
    let exit = job.exit_code.unwrap_or_default();
    let _ = write!(r.key("ExitCode"), "{}:{}", exit.status, exit.signal);
    r.line();
    if details {
        let derived = job.derived_exit_code.unwrap_or_default();
        let _ = write!(
            r.key("DerivedExitCode"),
            "{}:{}",
            derived.status,
            derived.signal
        );
        r.line();
    }
    r.kv("RunTime", &format_duration_sacct(job.run_time_secs));
    r.kv(
        "TimeLimit",
        &format_time_limit_scontrol(common_limit(job.time_limit.as_ref())),
    );
    match job.time_min_minutes {
        Some(m) if m > 0 => r.kv(
            "TimeMin",
            &format_time_limit_scontrol(TimeLimit::Minutes(m)),
        ),
        _ => r.kv("TimeMin", "N/A"),
    }
    r.line();
    r.kv("SubmitTime", &time_or(job.submit_time, "Unknown", ctx));
    r.kv("EligibleTime", &time_or(job.eligible_time, "Unknown", ctx));
    r.line();
    r.kv("AccrueTime", &time_or(job.accrue_time, "Unknown", ctx));
    r.line();
    // Only for a job that lost a failed node (`--no-kill`).
    if job.resize_time != 0 {
        r.kv("ResizeTime", &time_or(job.resize_time, "Unknown", ctx));
        r.line();
    }
    r.kv("StartTime", &time_or(job.start_time, "Unknown", ctx));
    r.kv("EndTime", &time_or(job.end_time, "Unknown", ctx));
    r.kv("Deadline", &time_or(job.deadline, "N/A", ctx));
    r.line();
    r.kv("SuspendTime", &time_or(job.suspend_time, "None", ctx));
    r.kv_num("SecsPreSuspend", job.pre_suspend_secs);
    r.kv(
        "LastSchedEval",
        &time_or(job.last_sched_eval, "Unknown", ctx),
    );
    r.kv(
        "Scheduler",
        if job.scheduled_by.is_empty() {
            "Main"
        } else {
            &job.scheduled_by
        },
    );
    r.line();
    r.kv("Partition", or_null(&job.partition));
    let _ = write!(
        r.key("AllocNode:Sid"),
        "{}:{}",
        or_null(&job.alloc_node),
        job.alloc_sid
    );
    r.line();
    r.kv("ReqNodeList", or_null(&job.required_nodes));
    r.kv("ExcNodeList", or_null(&job.excluded_nodes));
    r.line();
    r.kv("NodeList", &job.nodes);
    if !job.batch_host.is_empty() {
        r.line();
        r.kv("BatchHost", &job.batch_host);
    }
    if !job.batch_features.is_empty() {
        r.line();
        r.kv("BatchFeatures", &job.batch_features);
    }
    r.line();
    {
        let out = r.key("NumNodes");
        // The requested range while the job waits (`-N 3` is `3-3`), the
        // count no higher than its top (`-n 5 -N 1` is `1-1` where squeue
        // counts 3 nodes); once it has run, or ended without running, the
        // count alone.
        if job.max_nodes > 0 && job.state == v1::JobState::Pending as i32 {
            let _ = write!(
                out,
                "{}-{}",
                job.num_nodes.min(job.max_nodes),
                job.max_nodes
            );
        } else {
            let _ = write!(out, "{}", job.num_nodes);
        }
    }
    {
        let out = r.key("NumCPUs");
        let _ = write!(out, "{}", job.num_cpus);
        // A range set by `scontrol update NumCPUs=MIN-MAX`, while pending.
        if job.max_cpus > 0 && job.state == v1::JobState::Pending as i32 {
            let _ = write!(out, "-{}", job.max_cpus);
        }
    }
    // 0: never set (a job refused at submission that asked for no count,
    // shown N/A), or none at all (`-N 0` held: shown 0).
    if job.num_tasks == 0 && job.state != v1::JobState::Pending as i32 {
        r.kv("NumTasks", "N/A");
    } else {
        r.kv_num("NumTasks", job.num_tasks);
    }
    r.kv_num("CPUs/Task", job.cpus_per_task.max(1));
    // Boards and sockets per board are never asked for (`-B` and
    // --sockets-per-node set Socks/Node= instead).
    let _ = write!(
        r.key("ReqB:S:C:T"),
        "0:0:{}:{}",
        count_or_any(job.cores_per_socket),
        count_or_any(job.threads_per_core)
    );
    r.line();
    {
        let allocated = job.tres_allocated.as_ref().filter(|t| !t.items.is_empty());
        match allocated.or(job.tres_requested.as_ref()) {
            // A job that asks for no node (`-N 0`) has none.
            None => r.kv("TRES", "(null)"),
            tres => write_tres(r.key("TRES"), tres),
        }
    }
    r.line();
    r.kv("Socks/Node", &count_or_any(job.sockets_per_node));
    let _ = write!(
        r.key("NtasksPerN:B:S:C"),
        "{}:0:{}:{}",
        job.ntasks_per_node,
        count_or_any(job.ntasks_per_socket),
        count_or_any(job.ntasks_per_core)
    );
    r.kv("CoreSpec", "*");
    if let Some(resources) = job.resources.as_ref().filter(|r| !r.nodes.is_empty()) {
        r.line();
        r.kv("JOB_GRES", &job_gres(&job.gres));
        // Nodes in a row with the same CPU ids, memory and GRES share a
        // line (`Nodes=n[1-2] CPU_IDs=0 Mem=1000`), as Slurm prints them.
        let same = |a: &v1::NodeAllocation, b: &v1::NodeAllocation| {
            (&a.cpu_ids, a.memory_mb, &a.gres) == (&b.cpu_ids, b.memory_mb, &b.gres)
        };
        for group in resources.nodes.chunk_by(|a, b| same(a, b)) {
            let node = &group[0];
            r.line();
            r.out.push_str("  ");
            let names = slurm_common::hostlist::compress(group.iter().map(|n| n.node.as_str()));
            r.kv("Nodes", &names);
            write_id_ranges(r.key("CPU_IDs"), &node.cpu_ids);
            r.kv_num("Mem", node.memory_mb);
            r.kv("GRES", &node.gres.join(","));
        }
    }
    r.line();
    r.kv_num("MinCPUsNode", job.min_cpus_per_node.max(1));
    match job.memory {
        Some(Memory::MemPerNodeMb(mb)) => r.kv("MinMemoryNode", &mb_exact(mb)),
        Some(Memory::MemPerCpuMb(mb)) => r.kv("MinMemoryCPU", &mb_exact(mb)),
        None => r.kv("MinMemoryNode", "0"),
    }
    r.kv("MinTmpDiskNode", &mb_exact(job.min_tmp_disk_mb));
    r.line();
    r.kv("Features", or_null(&job.features));
    let delay = u64::from(job.delay_boot_minutes.unwrap_or(0)).saturating_mul(60);
    r.kv("DelayBoot", &format_duration_sacct(delay));
    if !job.cluster_features.is_empty() {
        r.line();
        r.kv("ClusterFeatures", &job.cluster_features);
    }
    if !job.prefer.is_empty() {
        r.line();
        r.kv("Prefer", &job.prefer);
    }
    r.line();
    r.kv("OverSubscribe", sharing(job));
    r.kv_num("Contiguous", u8::from(job.contiguous));
    r.kv("Licenses", or_null(&job.licenses));
    r.kv("Network", or_null(&job.network));
    r.line();
    r.kv("Command", or_null(&job.command));
    r.line();
    r.kv("WorkDir", &job.work_dir);
    if let Some(comment) = &job.admin_comment {
        // Shown once set, even empty, with a space after it as Comment=.
        r.line();
        r.kv("AdminComment", comment);
        r.out.push(' ');
    }
    if !job.comment.is_empty() {
        r.line();
        // Slurm writes this one with a space after the value, so the
        // line ends in a space (two spaces before `StdErr=` with `-o`).
        r.kv("Comment", &job.comment);
        r.out.push(' ');
    }
    let stdout = if job.stdout_path.is_empty() {
        default_output(job)
    } else {
        expand_path(&job.stdout_path, job)
    };
    let stderr = if job.stderr_path.is_empty() {
        stdout.clone()
    } else {
        expand_path(&job.stderr_path, job)
    };
    r.line();
    r.kv("StdErr", &stderr);
    r.line();
    if job.stdin_path.is_empty() {
        r.kv("StdIn", "/dev/null");
    } else {
        r.kv("StdIn", &expand_path(&job.stdin_path, job));
    }
    r.line();
    r.kv("StdOut", &stdout);
    if !job.burst_buffer.is_empty() {
        r.line();
        r.kv("BurstBuffer", &job.burst_buffer);
    }
    if job.req_switch > 0 {
        r.line();
        let wait = format_duration_sacct(job.wait4switch_seconds.into());
        r.kv("Switches", &format!("{}@{wait}", job.req_switch));
    }
    if !job.cpu_freq.is_empty() {
        r.line();
        r.out.push_str(&cpu_freq_shown(&job.cpu_freq));
        r.line_start = false;
    }
    r.line();
    r.kv("Power", &job.power);
    // --gpu-bind, then the --gpus, --gres (and --gpus-per-node) and
    // --gpus-per-task requests, with Slurm's `gres:` prefix (the
    // controller sends them so), each on a line of its own after Power=
    // as in 22.05.
    for (key, value) in [
        ("TresBind", &job.tres_bind),
        ("TresPerJob", &job.tres_per_job),
        ("TresPerNode", &job.gres),
        ("TresPerTask", &job.tres_per_task),
    ] {
        if !value.is_empty() {
            r.line();
            r.kv(key, value);
        }
    }
    // Slurm 22.05 opens one line for these three and writes them with
    // nothing between them (`GresEnforceBind=YesKillOInInvalidDependent=No`).
    let yes_no = |b: bool| if b { "Yes" } else { "No" };
    let mut flags = String::new();
    if let Some(enforce) = job.gres_enforce_binding {
        let _ = write!(flags, "GresEnforceBind={}", yes_no(enforce));
    }
    if let Some(kill) = job.kill_on_invalid_dep {
        let _ = write!(flags, "KillOInInvalidDependent={}", yes_no(kill));
    }
    if job.spread_job {
        flags.push_str("SpreadJob=Yes");
    }
    if !flags.is_empty() {
        r.line();
        r.out.push_str(&flags);
        r.line_start = false;
    }
    // Slurm keeps the events as flags: the line is there only when some
    // event is asked for (a --mail-user alone shows nothing), in its order.
    let mail_events = match crate::sbatch::values::mail_type(&job.mail_type) {
        Ok(events) => events,
        Err(_) => Some(job.mail_type.clone()).filter(|t| !t.is_empty()),
    };
    if let Some(events) = mail_events {
        r.line();
        r.kv("MailUser", or_null(&job.mail_user));
        r.kv("MailType", &events);
    }
    if !job.container.is_empty() {
        r.line();
        r.kv("Container", &job.container);
    }
    r.line();
    out.push('\n');
}

/// A `--cpu-freq` value (`[min-]max[:governor]` or a governor alone) as
/// Slurm 22.05 shows it: `CPU_min_freq=Low CPU_max_freq=High
/// Governor=Performance`, each frequency followed by a space.
fn cpu_freq_shown(spec: &str) -> String {
    let freq = crate::sbatch::values::CpuFreq::read(spec);
    let mut out = String::new();
    if let Some(min) = &freq.min {
        let _ = write!(out, "CPU_min_freq={min} ");
    }
    if let Some(max) = &freq.max {
        let _ = write!(out, "CPU_max_freq={max} ");
    }
    if let Some(g) = freq.governor {
        let _ = write!(out, "Governor={g}");
    }
    out
}

/// A requested count, or `*` when none was given.
fn count_or_any(count: Option<u32>) -> String {
    count.map_or_else(|| "*".to_owned(), |n| n.to_string())
}

/// The `JOB_GRES=` value: the generic resources of the job without the
/// `gres:` prefix of the TRES spelling; `(null)` for none.
fn job_gres(gres: &str) -> String {
    if gres.is_empty() {
        return "(null)".to_owned();
    }
    gres.split(',')
        .map(|g| g.strip_prefix("gres:").unwrap_or(g))
        .collect::<Vec<_>>()
        .join(",")
}

/// `scontrol show job`: every record, each followed by a blank line
/// (nothing between records with `-o`).
pub fn show_jobs(jobs: &[JobInfo], oneliner: bool, ctx: &Ctx) -> String {
    show_jobs_detailed(jobs, oneliner, false, ctx)
}

/// [`show_jobs`], with the lines of `scontrol -d` when `details`.
pub fn show_jobs_detailed(jobs: &[JobInfo], oneliner: bool, details: bool, ctx: &Ctx) -> String {
    let mut out = String::with_capacity(jobs.len() * 1100);
    for job in jobs {
        write_job_detailed(&mut out, job, oneliner, details, ctx);
        if !oneliner {
            out.push('\n');
        }
    }
    out
}

/// Converts a node's wire state to the shared vocabulary.
pub fn node_state(node: &NodeInfo) -> NodeState {
    use v1::NodeState as W;
    use v1::NodeStateFlag as F;
    let base = match W::try_from(node.state).unwrap_or(W::Unknown) {
        W::Unspecified | W::Unknown => NodeBaseState::Unknown,
        W::Down => NodeBaseState::Down,
        W::Idle => NodeBaseState::Idle,
        W::Allocated => NodeBaseState::Allocated,
        W::Mixed => NodeBaseState::Mixed,
        W::Future => NodeBaseState::Future,
        W::Error => NodeBaseState::Error,
    };
    let mut state = NodeState::new(base);
    for flag in &node.state_flags {
        let f = match F::try_from(*flag).unwrap_or(F::Unspecified) {
            F::Unspecified => continue,
            F::Drain => NodeFlag::Drain,
            F::Completing => NodeFlag::Completing,
            F::NotResponding => NodeFlag::NotResponding,
            F::Fail => NodeFlag::Fail,
            F::Maint => NodeFlag::Maint,
            F::Reserved => NodeFlag::Reserved,
            F::PoweredDown => NodeFlag::PoweredDown,
            F::PoweringUp => NodeFlag::PoweringUp,
            F::PoweringDown => NodeFlag::PoweringDown,
            F::RebootRequested => NodeFlag::RebootRequested,
            F::RebootIssued => NodeFlag::RebootIssued,
            F::Cloud => NodeFlag::Cloud,
            F::InvalidReg => NodeFlag::InvalidReg,
            F::Planned => NodeFlag::Planned,
            F::DynamicFuture => NodeFlag::DynamicFuture,
            F::DynamicNorm => NodeFlag::DynamicNorm,
            F::PowerDown => NodeFlag::PowerDown,
        };
        state = state.with(f);
    }
    state
}

fn list_or_null(out: &mut String, items: &[String]) {
    if items.is_empty() {
        out.push_str("(null)");
    } else {
        out.push_str(&items.join(","));
    }
}

/// One node record.
pub fn write_node(out: &mut String, node: &NodeInfo, oneliner: bool, ctx: &Ctx) {
    let mut r = Record::new(out, oneliner);
    r.kv("NodeName", &node.name);
    r.kv("Arch", or_null(&node.arch));
    r.kv_num("CoresPerSocket", node.cores_per_socket);
    r.out.push(' ');
    r.line();
    r.kv_num("CPUAlloc", node.cpus_allocated);
    r.kv_num("CPUEfctv", node.cpus_effective);
    r.kv_num("CPUTot", node.cpus);
    match node.cpu_load_hundredths {
        Some(l) => {
            let _ = write!(r.key("CPULoad"), "{}.{:02}", l / 100, l % 100);
        }
        None => r.kv("CPULoad", "N/A"),
    }
    r.line();
    list_or_null(r.key("AvailableFeatures"), &node.features);
    r.line();
    if node.active_features_cleared {
        r.kv("ActiveFeatures", "");
    } else {
        list_or_null(r.key("ActiveFeatures"), &node.active_features);
    }
    r.line();
    list_or_null(r.key("Gres"), &node.gres);
    r.line();
    r.kv("NodeAddr", &node.node_addr);
    r.kv("NodeHostName", &node.node_hostname);
    r.kv_num("Port", node.port);
    r.kv("Version", or_null(&node.version));
    r.line();
    r.kv("OS", or_null(&node.os));
    r.out.push(' ');
    r.line();
    r.kv_num("RealMemory", node.real_memory_mb);
    r.kv_num("AllocMem", node.memory_allocated_mb);
    match node.free_memory_mb {
        Some(m) => r.kv_num("FreeMem", m),
        None => r.kv("FreeMem", "N/A"),
    }
    r.kv_num("Sockets", node.sockets);
    r.kv_num("Boards", node.boards);
    r.line();
    r.kv("State", &node_state(node).display_long());
    r.kv_num("ThreadsPerCore", node.threads_per_core);
    r.kv_num("TmpDisk", node.tmp_disk_mb);
    r.kv_num("Weight", node.weight);
    match node.owner_uid {
        Some(uid) => r.kv_num("Owner", uid),
        None => r.kv("Owner", "N/A"),
    }
    r.kv(
        "MCS_label",
        if node.mcs_label.is_empty() {
            "N/A"
        } else {
            &node.mcs_label
        },
    );
    r.line();
    r.kv("Partitions", &node.partitions.join(","));
    r.out.push(' ');
    r.line();
    r.kv("BootTime", &time_or(node.boot_time, "None", ctx));
    r.kv(
        "SlurmdStartTime",
        &time_or(node.slurmd_start_time, "None", ctx),
    );
    r.line();
    r.kv(
        "LastBusyTime",
        &time_or(node.last_busy_time, "Unknown", ctx),
    );
    r.line();
    write_tres(r.key("CfgTRES"), node.tres_configured.as_ref());
    r.line();
    write_tres(r.key("AllocTRES"), node.tres_allocated.as_ref());
    r.line();
    r.kv("CapWatts", "n/a");
    r.line();
    r.kv("CurrentWatts", "0");
    r.kv("AveWatts", "0");
    r.line();
    r.kv("ExtSensorsJoules", "n/s");
    r.kv("ExtSensorsWatts", "0");
    r.kv("ExtSensorsTemp", "n/s");
    if !node.comment.is_empty() {
        r.line();
        r.kv("Comment", &node.comment);
    }
    if !node.reason.is_empty() {
        r.line();
        let user = if node.reason_user.is_empty() {
            node.reason_uid.to_string()
        } else {
            node.reason_user.clone()
        };
        let when = time_or(node.reason_time, "Unknown", ctx);
        let _ = write!(r.key("Reason"), "{} [{user}@{when}]", node.reason);
    }
    out.push('\n');
}

/// `scontrol show node`: every record, each followed by a blank line
/// (nothing between records with `-o`).
pub fn show_nodes(nodes: &[NodeInfo], oneliner: bool, ctx: &Ctx) -> String {
    let mut out = String::with_capacity(nodes.len() * 800);
    for node in nodes {
        write_node(&mut out, node, oneliner, ctx);
        if !oneliner {
            out.push('\n');
        }
    }
    out
}

fn yes_no(v: bool) -> &'static str {
    if v {
        "YES"
    } else {
        "NO"
    }
}

fn list_or_all(out: &mut String, items: &[String]) {
    if items.is_empty() {
        out.push_str("ALL");
    } else {
        out.push_str(&items.join(","));
    }
}

fn limit_or(limit: Option<&v1::TimeLimit>, none: &str) -> String {
    match limit.and_then(|l| l.limit) {
        None => none.to_owned(),
        Some(v1::time_limit::Limit::Unlimited(_)) => "UNLIMITED".to_owned(),
        Some(v1::time_limit::Limit::Minutes(m)) => {
            format_time_limit_scontrol(TimeLimit::Minutes(m))
        }
    }
}

/// One partition record.
pub fn write_partition(out: &mut String, p: &PartitionInfo, oneliner: bool) {
    let mut r = Record::new(out, oneliner);
    r.kv("PartitionName", &p.name);
    r.line();
    list_or_all(r.key("AllowGroups"), &p.allow_groups);
    if p.deny_accounts.is_empty() {
        list_or_all(r.key("AllowAccounts"), &p.allow_accounts);
    } else {
        r.kv("DenyAccounts", &p.deny_accounts.join(","));
    }
    if p.deny_qos.is_empty() {
        list_or_all(r.key("AllowQos"), &p.allow_qos);
    } else {
        r.kv("DenyQos", &p.deny_qos.join(","));
    }
    r.line();
    list_or_all(r.key("AllocNodes"), &p.allow_alloc_nodes);
    r.kv("Default", yes_no(p.is_default));
    r.kv("QoS", if p.qos.is_empty() { "N/A" } else { &p.qos });
    r.line();
    r.kv("DefaultTime", &limit_or(p.default_time.as_ref(), "NONE"));
    r.kv("DisableRootJobs", yes_no(p.disable_root_jobs));
    r.kv("ExclusiveUser", yes_no(p.exclusive_user));
    r.kv_num("GraceTime", p.grace_time_secs);
    r.kv("Hidden", yes_no(p.hidden));
    r.line();
    match p.max_nodes {
        Some(n) => r.kv_num("MaxNodes", n),
        None => r.kv("MaxNodes", "UNLIMITED"),
    }
    r.kv("MaxTime", &limit_or(p.max_time.as_ref(), "UNLIMITED"));
    r.kv_num("MinNodes", p.min_nodes);
    r.kv("LLN", yes_no(p.lln));
    match p.max_cpus_per_node {
        Some(n) => r.kv_num("MaxCPUsPerNode", n),
        None => r.kv("MaxCPUsPerNode", "UNLIMITED"),
    }
    r.line();
    r.kv("Nodes", or_null(&p.nodes));
    r.line();
    r.kv_num("PriorityJobFactor", p.priority_job_factor);
    r.kv_num("PriorityTier", p.priority_tier);
    r.kv("RootOnly", yes_no(p.root_only));
    r.kv("ReqResv", yes_no(p.req_resv));
    {
        use v1::over_subscribe::Mode;
        let os = p.oversubscribe.unwrap_or_default();
        let out = r.key("OverSubscribe");
        match Mode::try_from(os.mode).unwrap_or(Mode::Unspecified) {
            Mode::Unspecified | Mode::No => out.push_str("NO"),
            Mode::Exclusive => out.push_str("EXCLUSIVE"),
            Mode::Yes => {
                let _ = write!(out, "YES:{}", os.max_share);
            }
            Mode::Force => {
                let _ = write!(out, "FORCE:{}", os.max_share);
            }
        }
    }
    r.line();
    r.kv(
        "OverTimeLimit",
        &limit_or(p.over_time_limit.as_ref(), "NONE"),
    );
    r.kv(
        "PreemptMode",
        if p.preempt_mode.is_empty() {
            "OFF"
        } else {
            &p.preempt_mode
        },
    );
    r.line();
    let state = match v1::PartitionState::try_from(p.state).unwrap_or(v1::PartitionState::Up) {
        v1::PartitionState::Unspecified | v1::PartitionState::Up => "UP",
        v1::PartitionState::Down => "DOWN",
        v1::PartitionState::Drain => "DRAIN",
        v1::PartitionState::Inactive => "INACTIVE",
    };
    r.kv("State", state);
    r.kv_num("TotalCPUs", p.total_cpus);
    r.kv_num("TotalNodes", p.total_nodes);
    r.kv(
        "SelectTypeParameters",
        if p.select_type_parameters.is_empty() {
            "NONE"
        } else {
            &p.select_type_parameters
        },
    );
    r.line();
    r.kv("JobDefaults", or_null(&p.job_defaults));
    r.line();
    {
        use partition_info::{DefaultMemory, MaxMemory};
        match p.default_memory {
            Some(DefaultMemory::DefMemPerNodeMb(m)) => r.kv_num("DefMemPerNode", m),
            Some(DefaultMemory::DefMemPerCpuMb(m)) => r.kv_num("DefMemPerCPU", m),
            None => r.kv("DefMemPerNode", "UNLIMITED"),
        }
        match p.max_memory {
            Some(MaxMemory::MaxMemPerNodeMb(m)) => r.kv_num("MaxMemPerNode", m),
            Some(MaxMemory::MaxMemPerCpuMb(m)) => r.kv_num("MaxMemPerCPU", m),
            None => r.kv("MaxMemPerNode", "UNLIMITED"),
        }
    }
    r.line();
    // A partition without nodes has no TRES: `(null)`, as Slurm shows it.
    let mut tres = String::new();
    write_tres(&mut tres, p.tres.as_ref());
    r.kv("TRES", if tres.is_empty() { "(null)" } else { &tres });
    if !p.billing_weights.is_empty() {
        r.line();
        r.kv("TRESBillingWeights", &p.billing_weights);
    }
    out.push('\n');
}

/// `scontrol show partition`.
pub fn show_partitions(parts: &[PartitionInfo], oneliner: bool) -> String {
    let mut out = String::with_capacity(parts.len() * 700);
    for p in parts {
        write_partition(&mut out, p, oneliner);
        if !oneliner {
            out.push('\n');
        }
    }
    out
}

/// A size in MB as Slurm's scontrol prints it (`convert_num_unit` with
/// CONVERT_NUM_UNIT_EXACT from MB): moved up a unit only while it divides
/// exactly by 1024, so 100 is `100M`, 2048 is `2G`, 1536 stays `1536M`;
/// 0 is `0`.
pub fn mb_exact(mb: u64) -> String {
    if mb == 0 {
        return "0".to_string();
    }
    // Slurm's units end at P.
    const UNITS: [char; 4] = ['M', 'G', 'T', 'P'];
    let (mut value, mut unit) = (mb, 0);
    while value % 1024 == 0 && unit + 1 < UNITS.len() {
        value /= 1024;
        unit += 1;
    }
    format!("{value}{}", UNITS[unit])
}

/// `scontrol show licenses [NAME]`: each license sorted by name, its
/// figures on an indented second line (one line with `-o`); only `name`
/// when given (nothing when it is not configured). "No licenses configured
/// in Slurm." when there are none.
pub fn show_licenses(licenses: &[LicenseInfo], name: Option<&str>, oneliner: bool) -> String {
    if licenses.is_empty() {
        return "No licenses configured in Slurm.\n".to_string();
    }
    let mut sorted: Vec<&LicenseInfo> = licenses.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::new();
    for l in sorted {
        if name.is_some_and(|n| n != l.name) {
            continue;
        }
        let _ = writeln!(
            out,
            "LicenseName={}{}Total={} Used={} Free={} Reserved={} Remote={}",
            l.name,
            if oneliner { " " } else { "\n    " },
            l.total,
            l.used,
            l.total.saturating_sub(l.used),
            l.reserved,
            if l.remote { "yes" } else { "no" },
        );
        if name.is_some() {
            break;
        }
    }
    out
}

/// `scontrol show config`: the date line, then `Key = Value` with keys
/// padded to 23 columns. An entry with an empty key is a section line: it
/// is printed after a blank line, as is (`Cgroup Support Configuration:`).
pub fn show_config(reply: &GetConfigReply, ctx: &Ctx) -> String {
    let mut out = String::with_capacity(reply.entries.len() * 48 + 64);
    let _ = writeln!(
        out,
        "Configuration data as of {}",
        time_or(reply.last_update, "Unknown", ctx)
    );
    for entry in &reply.entries {
        if entry.key.is_empty() {
            out.push('\n');
            out.push_str(&entry.value);
            out.push('\n');
        } else {
            let _ = writeln!(out, "{:<23} = {}", entry.key, entry.value);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// ActiveFeatures set to nothing shows empty; none at all, (null).
    #[test]
    fn cleared_active_features_show_empty() {
        let ctx = Ctx::utc(0);
        let mut node = NodeInfo {
            name: "n1".into(),
            ..NodeInfo::default()
        };
        let shown = |node: &NodeInfo| show_nodes(std::slice::from_ref(node), true, &ctx);
        assert!(shown(&node).contains(" ActiveFeatures=(null) "));
        node.active_features_cleared = true;
        assert!(shown(&node).contains(" ActiveFeatures= "));
    }

    #[test]
    fn details_add_derived_exit_code_and_job_gres() {
        let ctx = Ctx::utc(0);
        let mut job = JobInfo {
            job_id: 5,
            derived_exit_code: Some(v1::ExitCode {
                status: 2,
                ..v1::ExitCode::default()
            }),
            resources: Some(v1::JobResources {
                nodes: vec![v1::NodeAllocation {
                    node: "n1".into(),
                    cpu_ids: vec![0, 1],
                    memory_mb: 100,
                    ..v1::NodeAllocation::default()
                }],
            }),
            ..JobInfo::default()
        };
        let detailed = show_jobs_detailed(std::slice::from_ref(&job), false, true, &ctx);
        assert!(detailed.contains("ExitCode=0:0\n   DerivedExitCode=2:0\n   RunTime="));
        assert!(detailed
            .contains("CoreSpec=*\n   JOB_GRES=(null)\n     Nodes=n1 CPU_IDs=0-1 Mem=100 GRES=\n"));
        let plain = show_jobs(std::slice::from_ref(&job), false, &ctx);
        assert!(!plain.contains("DerivedExitCode"));
        job.gres = "gres:gpu:2".into();
        let detailed = show_jobs_detailed(std::slice::from_ref(&job), false, true, &ctx);
        assert!(detailed.contains("JOB_GRES=gpu:2\n"));
        // Without an allocation there is no JOB_GRES line.
        job.resources = Some(v1::JobResources::default());
        let detailed = show_jobs_detailed(&[job], false, true, &ctx);
        assert!(!detailed.contains("JOB_GRES"));
    }

    #[test]
    fn a_long_pending_task_list_is_cut_as_slurm_bitstr_len_says() {
        let job = JobInfo {
            job_id: 124,
            array_job_id: Some(124),
            array_task_spec: "1-2,5,9,12,15,20,22,25,31,37,40,44,50,57,61,70,73,79,84,90,95,99"
                .into(),
            ..JobInfo::default()
        };
        let shown = |ctx: &Ctx| {
            let text = show_jobs(std::slice::from_ref(&job), true, ctx);
            text.split(' ')
                .find(|w| w.starts_with("ArrayTaskId="))
                .unwrap()
                .to_owned()
        };
        // As Slurm 22.05 showed it, unset and with SLURM_BITSTR_LEN=10.
        assert_eq!(
            shown(&Ctx::utc(0)),
            "ArrayTaskId=1-2,5,9,12,15,20,22,25,31,37,40,44,50,57,61,70,73,79,84,90,9..."
        );
        let ten = Ctx {
            task_lists: crate::format::TaskListLimit::from_env(Some("10")),
            ..Ctx::utc(0)
        };
        assert_eq!(shown(&ten), "ArrayTaskId=1-2,5,...");
        // Every task cancelled out of it: Slurm's "no value" number.
        let emptied = JobInfo {
            array_task_spec: String::new(),
            ..job.clone()
        };
        let text = show_jobs(std::slice::from_ref(&emptied), true, &Ctx::utc(0));
        assert!(
            text.starts_with("JobId=124 ArrayJobId=124 ArrayTaskId=4294967294 JobName="),
            "{text}"
        );
    }

    #[test]
    fn id_ranges() {
        let mut out = String::from("CPU_IDs=");
        write_id_ranges(&mut out, &[0, 1, 2, 5, 7, 8, u32::MAX]);
        assert_eq!(out, "CPU_IDs=0-2,5,7-8,4294967295");
    }

    #[test]
    fn reason_shows_the_description_underscored_else_the_reason_name() {
        let job = |reason: &str, desc: &str| JobInfo {
            job_id: 3,
            state_reason: reason.into(),
            state_description: desc.into(),
            ..JobInfo::default()
        };
        let shown = |j: &JobInfo| shown_reason(j).into_owned();
        assert_eq!(
            shown(&job("JobHeldAdmin", "launch failed requeued held")),
            "launch_failed_requeued_held"
        );
        assert_eq!(
            shown(&job("JobHeldUser", "job requeued in held state")),
            "job_requeued_in_held_state"
        );
        assert_eq!(shown(&job("Priority", "")), "Priority");
        assert_eq!(shown(&job("", "")), "None");
        assert_eq!(shown(&job("None", " a\tb\nc\rd\x0be\x0c")), "_a_b_c_d_e_");
        assert_eq!(shown(&job("None", "été\u{a0}x")), "été\u{a0}x");

        // In the record, between JobState= and Dependency=.
        let ctx = Ctx::utc(0);
        let mut out = String::new();
        write_job(
            &mut out,
            &job("JobHeldAdmin", "launch failed requeued held"),
            true,
            &ctx,
        );
        assert!(
            out.contains(" Reason=launch_failed_requeued_held Dependency=(null) "),
            "{out}"
        );
        let mut out = String::new();
        write_job(&mut out, &job("JobHeldAdmin", ""), false, &ctx);
        assert!(out.contains(" Reason=JobHeldAdmin Dependency="), "{out}");
    }

    #[test]
    fn output_patterns_expand_under_work_dir() {
        let job = JobInfo {
            job_id: 7,
            name: "x".into(),
            user_name: "u".into(),
            work_dir: "/w".into(),
            ..JobInfo::default()
        };
        assert_eq!(
            expand_path("o-%j-%x-%u-%a-%%-%q", &job),
            "/w/o-7-x-u-4294967294-%%-%q"
        );
        // As Slurm 22.05 showed `-o 'o_%j_%A_%a_%u_%x_%N_%%.txt'` of a
        // pending job: `%N` and `%%` stay.
        assert_eq!(
            expand_path("o_%j_%A_%a_%u_%x_%N_%%.txt", &job),
            "/w/o_7_7_4294967294_u_x_%N_%%.txt"
        );
        let placed = JobInfo {
            batch_host: "n1".into(),
            ..job.clone()
        };
        // Running or ended, `-o 'o-%N-%j.out'` showed as `o-%N-323.out`.
        assert_eq!(expand_path("%N.out", &placed), "/w/%N.out");
        assert_eq!(expand_path("/abs/%A.out", &job), "/abs/7.out");
        assert_eq!(expand_path("trailing%", &job), "/w/trailing%");
    }

    #[test]
    fn sizes_move_up_a_unit_only_when_exact() {
        assert_eq!(mb_exact(0), "0");
        assert_eq!(mb_exact(100), "100M");
        assert_eq!(mb_exact(1024), "1G");
        assert_eq!(mb_exact(1536), "1536M");
        assert_eq!(mb_exact(3 << 20), "3T");
        assert_eq!(mb_exact(u64::MAX), format!("{}M", u64::MAX));
        assert_eq!(mb_exact(1 << 60), "1073741824P");
    }

    /// The submission options of a job, where Slurm 22.05 puts them.
    #[test]
    fn job_shows_its_submission_options() {
        let ctx = Ctx::utc(0);
        let job = JobInfo {
            job_id: 7,
            work_dir: "/w".into(),
            min_tmp_disk_mb: 100,
            memory: Some(Memory::MemPerNodeMb(2048)),
            licenses: "foo:2,bar:1".into(),
            network: "sn_all".into(),
            deadline: 86_400,
            time_min_minutes: Some(5),
            tres_per_job: "gres:gpu:2".into(),
            gres: "gres:gpu:1".into(),
            tres_per_task: "gres:gpu:1".into(),
            ..JobInfo::default()
        };
        let mut out = String::new();
        write_job(&mut out, &job, false, &ctx);
        for want in [
            " TimeMin=00:05:00\n",
            " Deadline=1970-01-02T00:00:00\n",
            " MinMemoryNode=2G MinTmpDiskNode=100M\n",
            " Licenses=foo:2,bar:1 Network=sn_all\n",
            "\n   Power=\n   TresPerJob=gres:gpu:2\n   TresPerNode=gres:gpu:1\n   TresPerTask=gres:gpu:1\n",
        ] {
            assert!(out.contains(want), "{want:?} not in {out}");
        }
        let mut plain = String::new();
        write_job(&mut plain, &JobInfo::default(), false, &ctx);
        for want in [
            " Deadline=N/A\n",
            " MinTmpDiskNode=0\n",
            " Licenses=(null) Network=(null)\n",
        ] {
            assert!(plain.contains(want), "{want:?} not in {plain}");
        }
        assert!(!plain.contains("TresPer"), "{plain}");
    }

    /// AdminComment= once set (even empty) before Comment=, ending in a
    /// space as Comment= does; NumCPUs=MIN-MAX while pending only.
    #[test]
    fn admin_comment_and_cpu_range() {
        let mut job = JobInfo {
            work_dir: "/w".into(),
            comment: "c".into(),
            ..JobInfo::default()
        };
        job.admin_comment = Some("checked".into());
        job.num_cpus = 2;
        job.max_cpus = 4;
        job.state = v1::JobState::Pending as i32;
        let out = show(&job, false);
        assert!(out.contains(" NumCPUs=2-4 "), "{out}");
        assert!(
            out.contains("\n   AdminComment=checked \n   Comment=c \n"),
            "{out}"
        );
        job.admin_comment = Some(String::new());
        job.state = v1::JobState::Running as i32;
        let out = show(&job, false);
        assert!(out.contains(" NumCPUs=2 "), "{out}");
        assert!(out.contains("\n   AdminComment= \n"), "{out}");
        job.admin_comment = None;
        assert!(!show(&job, false).contains("AdminComment"));
    }

    /// Where Slurm 22.05 puts `--cluster-constraint`, `--switches` and
    /// `--container` (`--switches=3 --container=/tmp/x
    /// --cluster-constraint=foo --cpu-freq=low --mail-type=END`), and that
    /// a job without them has none of the three lines.
    #[test]
    fn cluster_features_switches_and_container_lines() {
        let job = JobInfo {
            cluster_features: "foo".into(),
            req_switch: 3,
            wait4switch_seconds: 300,
            container: "/tmp/x".into(),
            cpu_freq: "low".into(),
            mail_type: "END".into(),
            mail_user: "root".into(),
            ..JobInfo::default()
        };
        assert_shows(
            &show(&job, false),
            &[
                " DelayBoot=00:00:00\n   ClusterFeatures=foo\n   OverSubscribe=",
                "\n   Switches=3@00:05:00\n   CPU_max_freq=Low \n   Power=\n",
                "\n   MailUser=root MailType=END\n   Container=/tmp/x\n   \n",
            ],
        );
        assert_shows(
            &show(&job, true),
            &[" Switches=3@00:05:00 CPU_max_freq=Low  Power= "],
        );
        let plain = show(&JobInfo::default(), false);
        for absent in ["ClusterFeatures=", "Switches=", "Container="] {
            assert!(!plain.contains(absent), "{absent} in {plain}");
        }
    }

    /// `scontrol show job` of `job` (`-o` when `one_line`), at time 0.
    fn show(job: &JobInfo, one_line: bool) -> String {
        let mut out = String::new();
        write_job(&mut out, job, one_line, &Ctx::utc(0));
        out
    }

    fn assert_shows(out: &str, wants: &[&str]) {
        for want in wants {
            assert!(out.contains(want), "{want:?} not in {out}");
        }
    }

    /// `--gres-flags`, `--kill-on-invalid-dep` and `--spread-job` share a
    /// line without separators; `--delay-boot` and `--power` fill their
    /// fields (Slurm 22.05: `--spread-job --gres-flags=enforce-binding
    /// --kill-on-invalid-dep=yes --delay-boot=5 --power=level`).
    #[test]
    fn flags_share_a_line_and_delay_boot_and_power_show() {
        let job = JobInfo {
            spread_job: true,
            gres_enforce_binding: Some(true),
            kill_on_invalid_dep: Some(true),
            delay_boot_minutes: Some(5),
            power: "LEVEL".into(),
            mail_type: "END".into(),
            mail_user: "root".into(),
            ..JobInfo::default()
        };
        assert_shows(
            &show(&job, false),
            &[
                " DelayBoot=00:05:00\n",
                "\n   Power=LEVEL\n   GresEnforceBind=YesKillOInInvalidDependent=YesSpreadJob=Yes\n   MailUser=root MailType=END\n",
            ],
        );
        let two = JobInfo {
            spread_job: true,
            kill_on_invalid_dep: Some(false),
            delay_boot_minutes: Some(2880),
            ..JobInfo::default()
        };
        let mut out = String::new();
        write_job(&mut out, &two, false, &Ctx::utc(0));
        assert!(out.contains(" DelayBoot=2-00:00:00\n"), "{out}");
        assert!(
            out.contains("\n   Power=\n   KillOInInvalidDependent=NoSpreadJob=Yes\n"),
            "{out}"
        );
        let gres = JobInfo {
            gres_enforce_binding: Some(false),
            ..JobInfo::default()
        };
        let mut out = String::new();
        write_job(&mut out, &gres, false, &Ctx::utc(0));
        assert!(
            out.contains("\n   Power=\n   GresEnforceBind=No\n"),
            "{out}"
        );
    }

    /// `--cpu-freq` values as Slurm 22.05 showed them (with the trailing
    /// space after a frequency).
    #[test]
    fn cpu_freq_shows_as_in_slurm() {
        for (given, shown) in [
            (
                "low-high:performance",
                "CPU_min_freq=Low CPU_max_freq=High Governor=Performance",
            ),
            ("2000", "CPU_max_freq=2000 "),
            ("high", "CPU_max_freq=High "),
            ("highm1", "CPU_max_freq=Highm1 "),
            ("1000-2000", "CPU_min_freq=1000 CPU_max_freq=2000 "),
            ("2000-high", "CPU_min_freq=2000 CPU_max_freq=High "),
            ("performance", "Governor=Performance"),
            ("userspace", "Governor=UserSpace"),
        ] {
            assert_eq!(cpu_freq_shown(given), shown, "{given}");
        }
        let job = JobInfo {
            cpu_freq: "medium".into(),
            ..JobInfo::default()
        };
        let mut out = String::new();
        write_job(&mut out, &job, false, &Ctx::utc(0));
        assert!(
            out.contains("\n   CPU_max_freq=Medium \n   Power=\n"),
            "{out}"
        );
        let mut plain = String::new();
        write_job(&mut plain, &JobInfo::default(), false, &Ctx::utc(0));
        assert!(!plain.contains("freq"), "{plain}");
    }

    /// `scontrol show job -d`: nodes in a row with the same CPU ids,
    /// memory and GRES share a line, as Slurm 22.05 prints them.
    #[test]
    fn detail_lines_group_nodes_alike() {
        let ctx = Ctx::utc(0);
        let node = |name: &str, ids: Vec<u32>| v1::NodeAllocation {
            node: name.into(),
            cpu_ids: ids,
            memory_mb: 100,
            ..v1::NodeAllocation::default()
        };
        let job = JobInfo {
            state: v1::JobState::Running as i32,
            resources: Some(v1::JobResources {
                nodes: vec![
                    node("n1", vec![0]),
                    node("n2", vec![0]),
                    node("n3", vec![0, 1]),
                    node("n4", vec![0]),
                ],
            }),
            ..JobInfo::default()
        };
        let shown = show_jobs_detailed(std::slice::from_ref(&job), false, true, &ctx);
        assert!(
            shown.contains(
                "     Nodes=n[1-2] CPU_IDs=0 Mem=100 GRES=\n     Nodes=n3 CPU_IDs=0-1 Mem=100 GRES=\n     Nodes=n4 CPU_IDs=0 Mem=100 GRES=\n"
            ),
            "{shown}"
        );
    }

    /// `-N 3` as Slurm 22.05 shows it: `3-3` while pending, the count
    /// alone afterwards, even for a job cancelled before it ran. A count
    /// above the range (`-n 5 -N 1`, three nodes' CPUs) shows as its top.
    #[test]
    fn the_node_range_shows_only_while_pending() {
        let ctx = Ctx::utc(0);
        let shown = |state: v1::JobState, num_nodes: u32| {
            let job = JobInfo {
                num_nodes,
                max_nodes: 3,
                state: state as i32,
                ..JobInfo::default()
            };
            let mut out = String::new();
            write_job(&mut out, &job, false, &ctx);
            out
        };
        assert!(shown(v1::JobState::Pending, 3).contains(" NumNodes=3-3 "));
        assert!(shown(v1::JobState::Pending, 5).contains(" NumNodes=3-3 "));
        assert!(shown(v1::JobState::Cancelled, 3).contains(" NumNodes=3 "));
        assert!(shown(v1::JobState::Running, 3).contains(" NumNodes=3 "));
    }

    /// `-B`, the socket/core/thread options and --kill-on-invalid-dep, as
    /// Slurm 22.05 showed them (`-B 1:1:1 --ntasks-per-socket=3
    /// --ntasks-per-core=2 --kill-on-invalid-dep=yes --mail-type=END`).
    #[test]
    fn job_shows_its_layout_and_kill_on_invalid_dep() {
        let ctx = Ctx::utc(0);
        let job = JobInfo {
            sockets_per_node: Some(1),
            cores_per_socket: Some(1),
            threads_per_core: Some(1),
            ntasks_per_socket: Some(3),
            ntasks_per_core: Some(2),
            ntasks_per_node: 4,
            kill_on_invalid_dep: Some(true),
            mail_type: "END".into(),
            mail_user: "u".into(),
            ..JobInfo::default()
        };
        let mut out = String::new();
        write_job(&mut out, &job, false, &ctx);
        for want in [
            " ReqB:S:C:T=0:0:1:1
",
            "
   Socks/Node=1 NtasksPerN:B:S:C=4:0:3:2 CoreSpec=*
",
            "
   Power=
   KillOInInvalidDependent=Yes
   MailUser=u MailType=END
",
        ] {
            assert!(out.contains(want), "{want:?} not in {out}");
        }
        let no = JobInfo {
            cores_per_socket: Some(1),
            kill_on_invalid_dep: Some(false),
            ..JobInfo::default()
        };
        let mut out = String::new();
        write_job(&mut out, &no, false, &ctx);
        for want in [
            " ReqB:S:C:T=0:0:1:*
",
            "
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
",
            "
   Power=
   KillOInInvalidDependent=No
",
        ] {
            assert!(out.contains(want), "{want:?} not in {out}");
        }
        let mut plain = String::new();
        write_job(&mut plain, &JobInfo::default(), false, &ctx);
        assert!(
            plain.contains(
                " ReqB:S:C:T=0:0:*:*
"
            ),
            "{plain}"
        );
        assert!(!plain.contains("KillOIn"), "{plain}");
    }

    #[test]
    fn licenses_listing() {
        let lic = |name: &str, total, used| LicenseInfo {
            name: name.into(),
            total,
            used,
            reserved: 0,
            remote: false,
        };
        let all = [lic("foo", 4, 1), lic("bar", 1, 0)];
        assert_eq!(
            show_licenses(&all, None, false),
            "LicenseName=bar\n    Total=1 Used=0 Free=1 Reserved=0 Remote=no\n\
             LicenseName=foo\n    Total=4 Used=1 Free=3 Reserved=0 Remote=no\n"
        );
        assert_eq!(
            show_licenses(&all, Some("foo"), true),
            "LicenseName=foo Total=4 Used=1 Free=3 Reserved=0 Remote=no\n"
        );
        assert_eq!(show_licenses(&all, Some("baz"), false), "");
        assert_eq!(
            show_licenses(&[], None, false),
            "No licenses configured in Slurm.\n"
        );
        // More used than configured (slurm.conf shrank) shows no free ones.
        assert!(show_licenses(&[lic("x", 1, 3)], None, true).contains(" Free=0 "));
    }

    /// Slurm 22.05 shows the mail line only for a job with mail events,
    /// the events in its own order.
    #[test]
    fn mail_line_only_with_events() {
        let ctx = Ctx::utc(0);
        let show = |mail_type: &str, mail_user: &str| {
            let job = JobInfo {
                job_id: 9,
                mail_type: mail_type.into(),
                mail_user: mail_user.into(),
                ..JobInfo::default()
            };
            let mut out = String::new();
            write_job(&mut out, &job, false, &ctx);
            out.lines().find(|l| l.contains("Mail")).map(str::to_owned)
        };
        assert_eq!(show("", "bob"), None);
        assert_eq!(show("NONE", "bob"), None);
        assert_eq!(
            show("END,BEGIN", "bob").as_deref(),
            Some("   MailUser=bob MailType=BEGIN,END")
        );
        assert_eq!(
            show("ALL", "").as_deref(),
            Some("   MailUser=(null) MailType=INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT")
        );
    }

    /// Slurm ends the Comment line with a space: `Comment=x \n` on its own
    /// line, `Comment=x  StdErr=` with `-o`.
    #[test]
    fn comment_is_followed_by_a_space_as_slurm_prints_it() {
        let ctx = Ctx::utc(0);
        let job = JobInfo {
            job_id: 9,
            work_dir: "/w".into(),
            comment: "x".into(),
            ..JobInfo::default()
        };
        let mut out = String::new();
        write_job(&mut out, &job, false, &ctx);
        assert!(
            out.contains("\n   WorkDir=/w\n   Comment=x \n   StdErr=/w/slurm-9.out\n"),
            "{out}"
        );
        let mut one = String::new();
        write_job(&mut one, &job, true, &ctx);
        assert!(
            one.contains(" WorkDir=/w Comment=x  StdErr=/w/slurm-9.out "),
            "{one}"
        );
        let mut none = String::new();
        write_job(&mut none, &JobInfo::default(), false, &ctx);
        assert!(!none.contains("Comment"), "{none}");
    }
}
