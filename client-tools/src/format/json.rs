//! `squeue --json` and `sinfo --json` as Slurm 22.05 prints them
//! (data_parser v0.0.38): two-space indentation, `/` escaped as `\/`,
//! empty arrays opened and closed on separate lines, and the fields in
//! Slurm's order. Written by hand because the layout, not just the data, is
//! what scripts and tests compare.

use std::fmt::Write as _;

use slurm_common::hostlist;
use slurm_proto::v1::{job_info::Memory, JobInfo, NodeInfo, NodeSharing};

use super::scontrol::node_state;
use super::{base_state, limit_minutes, shown_state, write_tres, Ctx};

/// A JSON text under construction.
struct W {
    out: String,
    /// Per open container: whether it has a member yet.
    open: Vec<bool>,
}

impl W {
    fn new(capacity: usize) -> Self {
        W {
            out: String::with_capacity(capacity),
            open: Vec::new(),
        }
    }

    fn indent(&mut self) {
        for _ in 0..self.open.len() {
            self.out.push_str("  ");
        }
    }

    /// Starts a member: comma, newline, indentation, key.
    fn member(&mut self, key: Option<&str>) {
        if let Some(has) = self.open.last_mut() {
            if *has {
                self.out.push(',');
            }
            *has = true;
            self.out.push('\n');
        }
        self.indent();
        if let Some(key) = key {
            string(&mut self.out, key);
            self.out.push_str(": ");
        }
    }

    fn open(&mut self, key: Option<&str>, bracket: char) {
        self.member(key);
        self.out.push(bracket);
        self.open.push(false);
    }

    fn close(&mut self, bracket: char) {
        self.open.pop();
        self.out.push('\n');
        self.indent();
        self.out.push(bracket);
    }

    fn raw(&mut self, key: &str, value: impl std::fmt::Display) {
        self.member(Some(key));
        let _ = write!(self.out, "{value}");
    }

    fn str(&mut self, key: &str, value: &str) {
        self.member(Some(key));
        string(&mut self.out, value);
    }

    fn opt(&mut self, key: &str, value: Option<impl std::fmt::Display>) {
        match value {
            Some(v) => self.raw(key, v),
            None => self.raw(key, "null"),
        }
    }

    fn strings(&mut self, key: &str, values: &[&str]) {
        self.open(Some(key), '[');
        for v in values {
            self.member(None);
            string(&mut self.out, v);
        }
        self.close(']');
    }

    fn meta(&mut self) {
        self.open(Some("meta"), '{');
        self.open(Some("plugin"), '{');
        self.str("type", "openapi/v0.0.38");
        self.str("name", "Slurm OpenAPI v0.0.38");
        self.close('}');
        self.open(Some("Slurm"), '{');
        self.open(Some("version"), '{');
        self.raw("major", 22);
        self.raw("micro", 8);
        self.raw("minor", 5);
        self.close('}');
        self.str("release", crate::output::SLURM_VERSION);
        self.close('}');
        self.close('}');
        self.open(Some("errors"), '[');
        self.close(']');
    }
}

fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn billing(job: &JobInfo) -> Option<u64> {
    job.tres_allocated
        .as_ref()
        .filter(|t| !t.items.is_empty())
        .and_then(|t| t.items.iter().find(|i| i.r#type == "billing"))
        .map(|i| i.count)
}

/// The job flags Slurm 22.05 shows, in its order: `--spread-job`, `-c`
/// given (more than one CPU per task here), a job that runs, `--mem` or
/// `--mem-per-cpu` given.
fn job_flags(job: &JobInfo) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if job.spread_job {
        flags.push("SPREAD_JOB");
    }
    if job.cpus_per_task > 1 {
        flags.push("JOB_CPUS_SET");
    }
    if base_state(job).holds_resources() {
        flags.push("JOB_WAS_RUNNING");
    }
    if job.memory.is_some() {
        flags.push("JOB_MEM_SET");
    }
    flags
}

/// A job that runs without a time limit ends a year after its start in
/// Slurm's record (`scontrol` shows Unknown).
fn end_time(job: &JobInfo) -> i64 {
    const YEAR: i64 = 365 * 24 * 3600;
    let runs = base_state(job).holds_resources();
    if runs && job.end_time == 0 && job.start_time > 0 {
        job.start_time.saturating_add(YEAR)
    } else {
        job.end_time
    }
}

/// `standard_output` and `standard_error` as the job gave them, made
/// absolute against its working directory: empty for Slurm's defaults
/// (`slurm-%j.out`, errors joining the output) or for none at all, patterns
/// left unexpanded.
fn output_paths(job: &JobInfo) -> (String, String) {
    let given = |default: bool, path: &str| {
        if default || path.is_empty() {
            String::new()
        } else {
            crate::sbatch::absolute(path, &job.work_dir)
        }
    };
    (
        given(job.stdout_default, &job.stdout_path),
        given(job.stderr_default, &job.stderr_path),
    )
}

fn write_job(w: &mut W, job: &JobInfo, group: &str) {
    w.open(None, '{');
    w.str("account", &job.account);
    w.raw("accrue_time", job.accrue_time);
    w.str(
        "admin_comment",
        job.admin_comment.as_deref().unwrap_or_default(),
    );
    w.raw("array_job_id", job.array_job_id.unwrap_or(0));
    w.opt("array_task_id", job.array_task_id);
    w.raw("array_max_tasks", job.array_task_throttle);
    w.str("array_task_string", &job.array_task_spec);
    w.raw("association_id", 0);
    w.str("batch_features", "");
    w.raw("batch_flag", job.batch);
    w.str("batch_host", &job.batch_host);
    w.strings("flags", &job_flags(job));
    w.str("burst_buffer", &job.burst_buffer);
    w.str("burst_buffer_state", "");
    w.str("cluster", &job.cluster);
    w.str("cluster_features", &job.cluster_features);
    w.str("command", &job.command);
    w.str("comment", &job.comment);
    w.str("container", &job.container);
    w.raw("contiguous", job.contiguous);
    w.raw("core_spec", "null");
    w.raw("thread_spec", "null");
    w.raw("cores_per_socket", "null");
    w.opt("billable_tres", billing(job).map(|b| format!("{b}.0")));
    // Slurm 22.05 leaves it null whatever `-c` asked (see JOB_CPUS_SET).
    w.raw("cpus_per_task", "null");
    // Slurm 22.05 spells the first key `cpu_frequency_minumum` when it
    // has a value.
    let freq = crate::sbatch::values::CpuFreq::read(&job.cpu_freq);
    let code = |f: &Option<String>| f.as_deref().map(crate::sbatch::values::CpuFreq::freq_code);
    match code(&freq.min) {
        Some(min) => w.raw("cpu_frequency_minumum", min),
        None => w.raw("cpu_frequency_minimum", "null"),
    }
    w.opt("cpu_frequency_maximum", code(&freq.max));
    w.opt(
        "cpu_frequency_governor",
        freq.governor
            .map(crate::sbatch::values::CpuFreq::governor_code),
    );
    w.str("cpus_per_tres", "");
    w.raw("deadline", job.deadline);
    w.raw("delay_boot", 0);
    w.str("dependency", &job.dependency);
    w.raw(
        "derived_exit_code",
        job.derived_exit_code.map_or(0, |e| e.status),
    );
    w.raw("eligible_time", job.eligible_time);
    w.raw("end_time", end_time(job));
    w.str("excluded_nodes", &job.excluded_nodes);
    w.raw("exit_code", job.exit_code.map_or(0, |e| e.status));
    w.str("features", &job.features);
    w.str("federation_origin", "");
    w.str("federation_siblings_active", "");
    w.str("federation_siblings_viable", "");
    w.strings("gres_detail", &[]);
    w.raw("group_id", job.group_id);
    w.str("group_name", group);
    w.raw("job_id", job.job_id);
    if !job.nodes.is_empty() {
        let names = hostlist::expand(&job.nodes).unwrap_or_default();
        let per_node = if names.is_empty() {
            0
        } else {
            job.num_cpus as usize / names.len()
        };
        w.open(Some("job_resources"), '{');
        w.str("nodes", &job.nodes);
        // The CPUs the job asked for (Slurm 22.05 counts an `--exclusive`
        // job's tasks here, not the whole nodes it holds).
        let asked = job
            .tres_requested
            .as_ref()
            .and_then(|t| t.items.iter().find(|i| i.r#type == "cpu"))
            .map_or(u64::from(job.num_cpus), |i| i.count);
        w.raw("allocated_cores", asked);
        w.raw("allocated_hosts", names.len());
        w.open(Some("allocated_nodes"), '[');
        for name in &names {
            let alloc = job
                .resources
                .as_ref()
                .and_then(|r| r.nodes.iter().find(|n| n.node == *name));
            w.open(None, '{');
            w.open(Some("sockets"), '{');
            // Each allocated core under its socket, by the node's layout
            // (socket 0 and a core per id when it is not known).
            let ids: Vec<u32> = match alloc {
                Some(a) if !a.cpu_ids.is_empty() => a.cpu_ids.clone(),
                _ => (0..u32::try_from(per_node.max(1)).unwrap_or(1)).collect(),
            };
            let (cores, threads) =
                alloc.map_or((0, 0), |a| (a.cores_per_socket, a.threads_per_core));
            let mut placed: Vec<(u32, u32)> = ids
                .iter()
                .map(|&id| {
                    if cores == 0 || threads == 0 {
                        (0, id)
                    } else {
                        let core = id / threads;
                        (core / cores, core % cores)
                    }
                })
                .collect();
            placed.sort_unstable();
            placed.dedup();
            for group in placed.chunk_by(|a, b| a.0 == b.0) {
                w.open(Some(&group[0].0.to_string()), '{');
                w.open(Some("cores"), '{');
                for (_, core) in group {
                    w.str(&core.to_string(), "allocated");
                }
                w.close('}');
                w.close('}');
            }
            w.close('}');
            w.str("nodename", name);
            w.raw("cpus_used", 0);
            w.raw("memory_used", 0);
            w.raw("memory_allocated", alloc.map_or(0, |a| a.memory_mb));
            w.close('}');
        }
        w.close(']');
        w.close('}');
    }
    w.str("job_state", shown_state(job).long_name());
    w.raw("last_sched_evaluation", job.last_sched_eval);
    w.str("licenses", &job.licenses);
    w.raw("max_cpus", 0);
    // A job that has started shows none, as Slurm's record then has none.
    let waits = base_state(job) == slurm_common::state::JobState::Pending;
    w.raw("max_nodes", if waits { job.max_nodes } else { 0 });
    w.str("mcs_label", &job.mcs_label);
    w.str("memory_per_tres", "");
    w.str("name", &job.name);
    w.str("nodes", &job.nodes);
    w.opt("nice", (job.nice != 0).then_some(job.nice));
    w.raw("tasks_per_core", "null");
    w.raw("tasks_per_node", job.ntasks_per_node);
    w.raw("tasks_per_socket", "null");
    w.raw("tasks_per_board", 0);
    w.raw("cpus", job.num_cpus);
    w.raw("node_count", job.num_nodes);
    w.raw("tasks", job.num_tasks);
    w.raw("het_job_id", 0);
    w.str("het_job_id_set", "");
    w.raw("het_job_offset", 0);
    w.str("partition", &job.partition);
    w.str("prefer", &job.prefer);
    match job.memory {
        Some(Memory::MemPerNodeMb(m)) => {
            w.raw("memory_per_node", m);
            w.raw("memory_per_cpu", "null");
        }
        Some(Memory::MemPerCpuMb(m)) => {
            w.raw("memory_per_node", "null");
            w.raw("memory_per_cpu", m);
        }
        None => {
            w.raw("memory_per_node", "null");
            w.raw("memory_per_cpu", "null");
        }
    }
    w.raw("minimum_cpus_per_node", job.min_cpus_per_node);
    w.raw("minimum_tmp_disk_per_node", job.min_tmp_disk_mb);
    w.raw("preempt_time", job.preempt_time);
    w.raw("pre_sus_time", job.pre_suspend_secs);
    w.raw("priority", job.priority);
    if job.profile.is_empty() {
        w.raw("profile", "null");
    } else {
        w.strings("profile", &job.profile.split(',').collect::<Vec<_>>());
    }
    w.str("qos", &job.qos);
    w.raw("reboot", job.reboot);
    w.str("required_nodes", &job.required_nodes);
    w.raw("requeue", job.requeue);
    w.raw("resize_time", job.resize_time);
    w.raw("restart_cnt", job.restart_count);
    w.str("resv_name", &job.reservation);
    match NodeSharing::try_from(job.sharing).unwrap_or(NodeSharing::Unspecified) {
        NodeSharing::Exclusive => w.str("shared", "none"),
        NodeSharing::ExclusiveUser => w.str("shared", "user"),
        NodeSharing::ExclusiveMcs => w.str("shared", "mcs"),
        NodeSharing::Oversubscribe => w.str("shared", "oversubscribe"),
        NodeSharing::Shared | NodeSharing::Unspecified => w.raw("shared", "null"),
    }
    w.strings("show_flags", &["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"]);
    w.raw("sockets_per_board", 0);
    w.raw("sockets_per_node", "null");
    w.raw("start_time", job.start_time);
    w.str("state_description", &job.state_description);
    w.str(
        "state_reason",
        if job.state_reason.is_empty() {
            "None"
        } else {
            &job.state_reason
        },
    );
    let (stdout, stderr) = output_paths(job);
    w.str("standard_error", &stderr);
    let stdin = if job.stdin_path.is_empty() && job.batch {
        "/dev/null"
    } else {
        &job.stdin_path
    };
    w.str("standard_input", stdin);
    w.str("standard_output", &stdout);
    w.raw("submit_time", job.submit_time);
    w.raw("suspend_time", job.suspend_time);
    w.str("system_comment", "");
    w.opt("time_limit", limit_minutes(job.time_limit.as_ref()));
    w.raw("time_minimum", job.time_min_minutes.unwrap_or(0));
    w.raw("threads_per_core", "null");
    w.str("tres_bind", &job.tres_bind);
    w.str("tres_freq", "");
    w.str("tres_per_job", "");
    w.str("tres_per_node", &job.gres);
    w.str("tres_per_socket", "");
    w.str("tres_per_task", "");
    let mut tres = String::new();
    write_tres(&mut tres, job.tres_requested.as_ref());
    w.str("tres_req_str", &tres);
    tres.clear();
    write_tres(&mut tres, job.tres_allocated.as_ref());
    w.str("tres_alloc_str", &tres);
    w.raw("user_id", job.user_id);
    w.str("user_name", &job.user_name);
    w.str("wckey", &job.wckey);
    w.str("current_working_directory", &job.work_dir);
    w.close('}');
}

/// `squeue --json`. Group names the records lack are looked up with
/// `group_name`, once per group.
pub fn jobs(jobs: &[&JobInfo], _ctx: &Ctx, group_name: fn(u32) -> Option<String>) -> String {
    let mut w = W::new(512 + jobs.len() * 3000);
    w.open(None, '{');
    w.meta();
    w.open(Some("jobs"), '[');
    let mut groups: std::collections::HashMap<u32, String> = std::collections::HashMap::new();
    for job in jobs {
        let group: &str = if job.group_name.is_empty() {
            groups
                .entry(job.group_id)
                .or_insert_with(|| group_name(job.group_id).unwrap_or_default())
        } else {
            &job.group_name
        };
        write_job(&mut w, job, group);
    }
    w.close(']');
    w.close('}');
    w.out.push('\n');
    w.out
}

fn write_node(w: &mut W, node: &NodeInfo) {
    let state = node_state(node);
    w.open(None, '{');
    w.str("architecture", &node.arch);
    w.str("burstbuffer_network_address", "");
    w.raw("boards", node.boards);
    w.raw("boot_time", node.boot_time);
    w.str("comment", &node.comment);
    w.raw("cores", node.cores_per_socket);
    w.raw("cpu_binding", 0);
    w.raw("cpu_load", node.cpu_load_hundredths.unwrap_or(0));
    w.str("extra", "");
    w.raw("free_memory", node.free_memory_mb.unwrap_or(0));
    w.raw("cpus", node.cpus);
    w.raw("last_busy", node.last_busy_time);
    w.str("features", &node.features.join(","));
    w.str("active_features", &node.active_features.join(","));
    w.str("gres", &node.gres.join(","));
    w.str("gres_drained", "N/A");
    w.str("gres_used", &node.gres_used.join(","));
    w.str("mcs_label", &node.mcs_label);
    w.str("name", &node.name);
    w.str("next_state_after_reboot", "invalid");
    w.str("address", &node.node_addr);
    w.str("hostname", &node.node_hostname);
    w.str("state", &state.base.name().to_ascii_lowercase());
    let flags: Vec<&str> = state.flags.iter().map(|f| f.name()).collect();
    w.strings("state_flags", &flags);
    w.strings("next_state_after_reboot_flags", &[]);
    w.str("operating_system", &node.os);
    w.opt("owner", node.owner_uid);
    let parts: Vec<&str> = node.partitions.iter().map(String::as_str).collect();
    w.strings("partitions", &parts);
    w.raw("port", node.port);
    w.raw("real_memory", node.real_memory_mb);
    w.str("reason", &node.reason);
    w.raw("reason_changed_at", node.reason_time);
    if node.reason_user.is_empty() {
        w.raw("reason_set_by_user", "null");
    } else {
        w.str("reason_set_by_user", &node.reason_user);
    }
    w.raw("slurmd_start_time", node.slurmd_start_time);
    w.raw("sockets", node.sockets);
    w.raw("threads", node.threads_per_core);
    w.raw("temporary_disk", node.tmp_disk_mb);
    w.raw("weight", node.weight);
    let mut tres = String::new();
    write_tres(&mut tres, node.tres_configured.as_ref());
    w.str("tres", &tres);
    w.str("slurmd_version", &node.version);
    w.raw("alloc_memory", node.memory_allocated_mb);
    w.raw("alloc_cpus", node.cpus_allocated);
    w.raw("idle_cpus", node.cpus.saturating_sub(node.cpus_allocated));
    tres.clear();
    write_tres(&mut tres, node.tres_allocated.as_ref());
    if tres.is_empty() {
        w.raw("tres_used", "null");
    } else {
        w.str("tres_used", &tres);
    }
    let weighted = node
        .tres_allocated
        .as_ref()
        .and_then(|t| t.items.iter().find(|i| i.r#type == "cpu"))
        .map_or(0, |i| i.count);
    w.raw("tres_weighted", format!("{weighted}.0"));
    w.close('}');
}

/// `sinfo --json`.
pub fn nodes(nodes: &[NodeInfo], _ctx: &Ctx) -> String {
    let mut w = W::new(512 + nodes.len() * 1500);
    w.open(None, '{');
    w.meta();
    w.open(Some("nodes"), '[');
    for node in nodes {
        write_node(&mut w, node);
    }
    w.close(']');
    w.close('}');
    w.out.push('\n');
    w.out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use slurm_proto::v1;

    fn ctx() -> Ctx {
        Ctx::utc(0)
    }

    #[test]
    fn a_gres_job_has_its_tres_per_node() {
        let gpu = JobInfo {
            job_id: 7,
            gres: "gres:gpu:1".into(),
            ..JobInfo::default()
        };
        let plain = JobInfo {
            job_id: 8,
            ..JobInfo::default()
        };
        let out = jobs(&[&gpu, &plain], &ctx(), |_| None);
        let values: Vec<&str> = out
            .lines()
            .filter(|l| l.trim_start().starts_with("\"tres_per_node\":"))
            .map(str::trim)
            .collect();
        assert_eq!(
            values,
            [
                r#""tres_per_node": "gres:gpu:1","#,
                r#""tres_per_node": "","#
            ]
        );
    }

    /// Allocated cores under their sockets by the node's layout, as Slurm
    /// 22.05 lists them (two sockets of one core: CPU 1 is socket 1's
    /// core 0); two threads of one core list the core once.
    #[test]
    fn allocated_cores_sit_under_their_sockets() {
        let node = |name: &str, ids: Vec<u32>, cores: u32, threads: u32| v1::NodeAllocation {
            node: name.into(),
            cpu_ids: ids,
            cores_per_socket: cores,
            threads_per_core: threads,
            ..v1::NodeAllocation::default()
        };
        let job = JobInfo {
            job_id: 7,
            nodes: "n[1-2]".into(),
            num_cpus: 4,
            resources: Some(v1::JobResources {
                nodes: vec![node("n1", vec![0, 1], 1, 1), node("n2", vec![2, 3], 2, 2)],
            }),
            ..JobInfo::default()
        };
        let out = jobs(&[&job], &ctx(), |_| None);
        let compact: String = out.split_whitespace().collect();
        assert!(
            compact.contains(
                r#""sockets":{"0":{"cores":{"0":"allocated"}},"1":{"cores":{"0":"allocated"}}},"nodename":"n1""#
            ),
            "{compact}"
        );
        assert!(
            compact.contains(r#""sockets":{"0":{"cores":{"1":"allocated"}}},"nodename":"n2""#),
            "{compact}"
        );
    }

    /// Output paths as the job gave them: empty for Slurm's defaults, as
    /// given otherwise, even when they spell a default (`-o slurm-%j.out`)
    /// or when `-e` names the output's file.
    #[test]
    fn output_paths_show_what_was_given() {
        let value = |job: &JobInfo, key: &str| -> String {
            jobs(&[job], &ctx(), |_| None)
                .lines()
                .map(str::trim)
                .find_map(|l| l.strip_prefix(&format!("\"{key}\": ")))
                .unwrap_or_default()
                .to_owned()
        };
        let mut job = JobInfo {
            job_id: 3,
            work_dir: "/w".into(),
            stdout_path: "/w/slurm-%j.out".into(),
            stderr_path: "/w/slurm-%j.out".into(),
            stdout_default: true,
            stderr_default: true,
            ..JobInfo::default()
        };
        assert_eq!(value(&job, "standard_output"), "\"\",");
        assert_eq!(value(&job, "standard_error"), "\"\",");
        job.stdout_default = false;
        job.stderr_default = false;
        assert_eq!(value(&job, "standard_output"), "\"\\/w\\/slurm-%j.out\",");
        assert_eq!(value(&job, "standard_error"), "\"\\/w\\/slurm-%j.out\",");
        // A relative path is made absolute, as Slurm shows it.
        job.stdout_path = "o-%j".into();
        assert_eq!(value(&job, "standard_output"), "\"\\/w\\/o-%j\",");
    }

    /// Slurm 22.05 keeps --cpu-freq as numbers (named frequencies and
    /// governors as flag values) and misspells the minimum's key when it
    /// has one; --profile is a list of names.
    #[test]
    fn cpu_frequency_and_profile_as_slurm() {
        let lines = |job: &JobInfo| -> Vec<String> {
            jobs(&[job], &ctx(), |_| None)
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("\"cpu_frequency") || l.starts_with("\"profile"))
                .map(str::to_owned)
                .collect()
        };
        let job = JobInfo {
            cpu_freq: "low-high:performance".into(),
            profile: "Energy,Task".into(),
            ..JobInfo::default()
        };
        assert_eq!(
            lines(&job),
            [
                r#""cpu_frequency_minumum": 2147483649,"#,
                r#""cpu_frequency_maximum": 2147483651,"#,
                r#""cpu_frequency_governor": 2181038080,"#,
                r#""profile": ["#,
            ]
        );
        let job = JobInfo {
            cpu_freq: "2000".into(),
            ..JobInfo::default()
        };
        assert_eq!(
            lines(&job),
            [
                r#""cpu_frequency_minimum": null,"#,
                r#""cpu_frequency_maximum": 2000,"#,
                r#""cpu_frequency_governor": null,"#,
                r#""profile": null,"#,
            ]
        );
    }

    #[test]
    fn nodes_carry_boot_and_slurmd_start_times() {
        let node = NodeInfo {
            name: "n1".into(),
            boot_time: 1_795_242_561,
            slurmd_start_time: 1_795_244_461,
            gres: vec!["gpu:a100:2".into()],
            ..NodeInfo::default()
        };
        let out = nodes(&[node], &ctx());
        for want in [
            r#""boot_time": 1795242561,"#,
            r#""slurmd_start_time": 1795244461,"#,
            r#""gres": "gpu:a100:2","#,
        ] {
            assert!(out.lines().any(|l| l.trim() == want), "{want} in {out}");
        }
    }
}
