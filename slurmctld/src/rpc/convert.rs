//! Snapshot records to wire messages, for the query RPCs.
//!
//! These run on the RPC tasks, over an immutable snapshot, so building a
//! large reply never delays the owner task.

use slurm_common::state::JobState;
use slurm_common::time::TimeLimit;
use slurm_proto::convert::{job_flags_to_wire, node_flags_to_wire};
use slurm_proto::v1;
use slurm_sched::{MemReq, NodeAlloc};

use crate::core::{effective_limit, Job, NodeRec, PartRec, Snapshot};
use slurm_common::reason::PendingReason;

/// Which `JobInfo` fields a caller reads, by their field numbers (all of
/// them fit below 192). Fields left out stay at their zero value, which
/// protobuf does not send: a `squeue` that shows eight columns gets a reply a
/// tenth the size of the full record, built without the strings it skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobFields([u64; 3]);

impl JobFields {
    /// Every field.
    pub const ALL: JobFields = JobFields([u64::MAX; 3]);

    /// The fields named by `tags`; an empty list means every field. Tags
    /// this version does not know are ignored.
    pub fn from_tags(tags: &[u32]) -> JobFields {
        if tags.is_empty() {
            return JobFields::ALL;
        }
        let mut bits = [0u64; 3];
        for &t in tags {
            if t < 192 {
                bits[(t / 64) as usize] |= 1 << (t % 64);
            }
        }
        JobFields(bits)
    }

    /// Whether field number `tag` is wanted.
    pub fn has(&self, tag: u32) -> bool {
        tag < 192 && self.0[(tag / 64) as usize] & (1 << (tag % 64)) != 0
    }

    /// These fields and field `tag` (ignored from 192 on).
    pub const fn with(self, tag: u32) -> JobFields {
        let mut bits = self.0;
        if tag < 192 {
            bits[(tag / 64) as usize] |= 1 << (tag % 64);
        }
        JobFields(bits)
    }

    /// The fields named by `tags`, for constants.
    pub const fn of(tags: &[u32]) -> JobFields {
        let mut out = JobFields([0; 3]);
        let mut i = 0;
        while i < tags.len() {
            out = out.with(tags[i]);
            i += 1;
        }
        out
    }

    /// Whether every field of `self` is in `other`.
    pub fn is_subset_of(&self, other: JobFields) -> bool {
        self.0
            .iter()
            .zip(other.0)
            .all(|(mine, theirs)| mine & !theirs == 0)
    }
}

/// What a job record shows that is computed from its state rather than
/// copied: worked out once per job for [`job_info_fields`] and for the
/// direct encoder of the GetJobs reply (`rpc::jobs`), so both show the same.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Derived<'a> {
    /// The allocation shown: the current one, or the last one of a
    /// finished job (which still shows where it ran).
    pub alloc: &'a [NodeAlloc],
    pub run_time_secs: u64,
    pub limit: TimeLimit,
    /// StartTime: when it started, or for a pending job waiting for its
    /// begin time (`--begin`, a requeue's delay) that time, as Slurm shows
    /// it, else the start the last pass planned (`core::estimate`); 0
    /// (`Unknown`, squeue `N/A`) for any other pending job.
    pub start_time: i64,
    pub end_time: i64,
    pub num_cpus: u32,
    /// The node count the job's TRES counts: the request while pending.
    pub num_nodes: u32,
    /// The node count shown (NumNodes, squeue's NODES): while pending, the
    /// request raised to what its tasks need on the partition's largest
    /// node, as Slurm shows it (`-n 3` on 2-CPU nodes shows 2).
    pub shown_nodes: u32,
    pub mem_mb: u64,
}

impl<'a> Derived<'a> {
    pub fn of(snap: &'a Snapshot, job: &'a Job, now: i64) -> Derived<'a> {
        let part = job.partition.and_then(|p| snap.partitions.get(p));
        let alloc: &[NodeAlloc] = if job.alloc.is_empty() && job.status.state.is_finished() {
            &job.last_alloc
        } else {
            &job.alloc
        };
        // The time suspended does not count (`core::suspend`).
        let run_time = job.run_secs(now);
        let limit = effective_limit(job, part);
        // Slurm shows a job waiting for its begin time as starting then,
        // and ending a time limit later. For a job that is also held this
        // is not established; it is shown the same way (its release cannot
        // make it start sooner). Once the time has passed, the start the
        // last pass planned (`core::estimate`), or Unknown.
        let start_time = match job.status.state {
            JobState::Pending => job
                .shape
                .begin_time
                .filter(|&b| b > now)
                .or_else(|| snap.planned.get(&job.id.get()).map(|p| p.start_time))
                .unwrap_or(0),
            _ => job.start_time,
        };
        let end_time = match (job.status.state, limit.as_secs()) {
            // Moved by the time suspended; while suspended, the end it had
            // when suspended, as Slurm shows it.
            (JobState::Running | JobState::Suspended, Some(secs)) => job
                .clock_start()
                .saturating_add(i64::try_from(secs).unwrap_or(i64::MAX)),
            (JobState::Pending, Some(secs)) if start_time > 0 => {
                start_time.saturating_add(i64::try_from(secs).unwrap_or(i64::MAX))
            }
            (s, _) if s.is_finished() => job.end_time,
            _ => 0,
        };
        // `-N 0` (refused and recorded FAILED, or held): Slurm counts no
        // node for it, and shows no CPU and no TRES either unless it gave
        // a task count (its TRES then has CPUs and no node or memory).
        let zero_nodes = alloc.is_empty() && job.shape.max_nodes == Some(0);
        let no_node = zero_nodes && !job.shape.ntasks_given;
        let num_cpus: u32 = if no_node {
            0
        } else if alloc.is_empty() {
            job.pending_cpus()
        } else {
            alloc.iter().map(|a| a.cpus).sum()
        };
        let num_nodes = if zero_nodes {
            0
        } else if alloc.is_empty() {
            job.shape.min_nodes
        } else {
            u32::try_from(alloc.len()).unwrap_or(u32::MAX)
        };
        let mem_mb: u64 = if alloc.is_empty() {
            match job.shape.mem {
                Some(MemReq::PerNode(mb)) => mb.saturating_mul(u64::from(num_nodes)),
                Some(MemReq::PerCpu(mb)) => mb.saturating_mul(u64::from(num_cpus)),
                None => 0,
            }
        } else {
            alloc.iter().map(|a| a.mem_mb).sum()
        };
        let shown_nodes = if no_node {
            0
        } else if ran_before(job) {
            u32::try_from(job.last_alloc.len()).unwrap_or(u32::MAX)
        } else if alloc.is_empty() && !job.status.state.is_finished() {
            let shown = nodes_for_tasks(snap, job);
            match tried_range(job) {
                Some(max) => shown.max(max),
                None => shown,
            }
        } else {
            num_nodes
        };
        Derived {
            alloc,
            run_time_secs: u64::try_from(run_time.max(0)).unwrap_or(0),
            limit,
            start_time,
            end_time,
            num_cpus,
            num_nodes,
            shown_nodes,
            mem_mb,
        }
    }

    /// The names of the nodes shown, in allocation order.
    pub fn node_names(&self, snap: &'a Snapshot) -> Vec<&'a str> {
        self.alloc
            .iter()
            .filter_map(|a| snap.nodes.get(a.node_index))
            .map(|n| n.name.as_str())
            .collect()
    }
}

/// The top of a node range (`-N1-2`) that a pass has tried to place and
/// could not (the job waits with Resources or Priority): Slurm then shows
/// the job at that count (`NumNodes=2-2`), though it may still start on
/// fewer. `None` for any other job.
fn tried_range(job: &Job) -> Option<u32> {
    let waits = matches!(
        job.reason,
        PendingReason::Resources | PendingReason::Priority
    );
    let max = job.shape.max_nodes.filter(|&m| m > job.shape.min_nodes)?;
    (job.status.state == JobState::Pending && job.hold.is_none() && waits).then_some(max)
}

/// Whether `job` waits again after a run (requeued): Slurm then shows the
/// node count of that run as its NumNodes, without a range.
fn ran_before(job: &Job) -> bool {
    job.status.state == JobState::Pending && job.alloc.is_empty() && !job.last_alloc.is_empty()
}

/// The memory a job asked for, as the wire has it.
pub(crate) fn memory_of(job: &Job) -> Option<v1::job_info::Memory> {
    job.shape.mem.map(|m| match m {
        MemReq::PerNode(mb) => v1::job_info::Memory::MemPerNodeMb(mb),
        MemReq::PerCpu(mb) => v1::job_info::Memory::MemPerCpuMb(mb),
    })
}

/// BatchHost: the first of the nodes shown (`names`), or the batch host
/// taken out of a `--no-kill` job, which Slurm still shows.
pub(crate) fn batch_host_of<'a>(snap: &'a Snapshot, job: &Job, names: &[&'a str]) -> &'a str {
    job.resize
        .as_ref()
        .and_then(|r| r.batch_host)
        .and_then(|i| snap.nodes.get(i))
        .map(|n| n.name.as_str())
        .or_else(|| names.first().copied())
        .unwrap_or_default()
}

/// SchedNodeList: the nodes a pending job is planned on
/// (`core::estimate`); empty otherwise.
pub(crate) fn scheduled_nodes_of<'a>(snap: &'a Snapshot, job: &Job) -> &'a str {
    match (job.status.state, snap.planned.get(&job.id.get())) {
        (JobState::Pending, Some(p)) => &p.nodes,
        _ => "",
    }
}

/// One job as squeue and scontrol show it. `now` gives RunTime.
pub fn job_info(snap: &Snapshot, job: &Job, now: i64) -> v1::JobInfo {
    job_info_fields(snap, job, now, JobFields::ALL)
}

/// [`job_info`] with only the fields in `want` filled in.
///
/// The GetJobs reply is encoded without this structure for the fields in
/// `rpc::jobs::DIRECT` (see there): a field set here that is in that list
/// must be written there too; the tests compare the two byte for byte.
pub fn job_info_fields(snap: &Snapshot, job: &Job, now: i64, want: JobFields) -> v1::JobInfo {
    macro_rules! pick {
        ($tag:expr, $value:expr) => {
            if want.has($tag) {
                $value
            } else {
                Default::default()
            }
        };
    }
    let d = &job.spec;
    let derived = Derived::of(snap, job, now);
    let alloc = derived.alloc;
    let node_names: Vec<&str> = if want.has(65) || want.has(66) {
        derived.node_names(snap)
    } else {
        Vec::new()
    };
    let (num_cpus, num_nodes, mem_mb) = (derived.num_cpus, derived.num_nodes, derived.mem_mb);
    let tres = if want.has(90) || want.has(91) {
        // A job not yet placed that asks for no memory would get whole
        // nodes' memory: Slurm's TRES counts that (`mem=4000M` per node).
        let whole_node = matches!(job.shape.mem, None | Some(MemReq::PerNode(0)));
        let mem_mb = if alloc.is_empty() && whole_node {
            whole_node_mem_mb(snap, job.partition).saturating_mul(u64::from(num_nodes))
        } else {
            mem_mb
        };
        job_tres(num_cpus, mem_mb, num_nodes)
    } else {
        v1::TresList::default()
    };
    // What a placed job asked for (`tres_req_str`): its tasks' CPUs, not
    // the whole nodes an `--exclusive` job holds, as Slurm 22.05 keeps it.
    let requested = if want.has(90) && !alloc.is_empty() {
        let cpus = job.task_cpus().max(num_nodes);
        let mem = match job.shape.mem {
            None | Some(MemReq::PerNode(0)) => {
                whole_node_mem_mb(snap, job.partition).saturating_mul(u64::from(num_nodes))
            }
            Some(MemReq::PerNode(mb)) => mb.saturating_mul(u64::from(num_nodes)),
            Some(MemReq::PerCpu(mb)) => mb.saturating_mul(u64::from(cpus)),
        };
        job_tres(cpus, mem, num_nodes)
    } else {
        tres.clone()
    };
    let memory = memory_of(job);
    let stdout = if !want.has(113) && !want.has(114) {
        String::new()
    } else if d.stdout_path.is_empty() {
        // Slurm's defaults, expanded where the record is shown: an array's
        // tasks write `slurm-<array job id>_<task id>.out`.
        if job.array.is_some() {
            format!("{}/slurm-%A_%a.out", d.work_dir)
        } else {
            format!("{}/slurm-%j.out", d.work_dir)
        }
    } else {
        d.stdout_path.to_string()
    };
    let stderr = if d.stderr_path.is_empty() {
        stdout.clone()
    } else {
        d.stderr_path.to_string()
    };
    let array = job.array.as_deref();
    // As Slurm 22.05: a job refused at submission (recorded, then FAILED
    // with BadConstraints) never accrued age, and its task count is unset
    // unless it asked for one: AccrueTime=Unknown, NumTasks=N/A.
    let refused_at_submit = job.status.state == JobState::Failed
        && job.reason == PendingReason::BadConstraints
        && job.alloc.is_empty()
        && job.last_alloc.is_empty();
    // `-N 0` held: no task either.
    let no_node = job.shape.max_nodes == Some(0) && job.alloc.is_empty();
    let (shares, share_ids) = if job.alloc.is_empty() && job.status.state.is_finished() {
        (&job.last_alloc, &job.last_cpu_ids)
    } else {
        (&job.alloc, &job.cpu_ids)
    };
    v1::JobInfo {
        job_id: job.id.get(),
        array_job_id: pick!(2, array.map(|a| a.array_job_id)),
        array_task_id: pick!(3, array.and_then(|a| a.task)),
        array_task_spec: pick!(
            4,
            array
                .filter(|a| a.is_meta())
                .map(|a| a.pending_text())
                .unwrap_or_default()
        ),
        // Shown with the tasks left (ArrayTaskThrottle), not on a task.
        array_task_throttle: pick!(5, array.filter(|a| a.is_meta()).map_or(0, |a| a.throttle)),
        name: pick!(6, job.name.clone()),
        user_id: pick!(7, job.uid),
        user_name: pick!(8, d.user_name.to_string()),
        group_id: pick!(9, job.gid),
        mcs_label: pick!(11, d.shown().mcs_label.to_string()),
        state: pick!(20, v1::JobState::from(job.status.state) as i32),
        state_flags: pick!(21, job_flags_to_wire(job.status.flags)),
        state_reason: pick!(22, job.reason.as_str().to_string()),
        state_description: pick!(23, job.reason_detail.clone()),
        dependency: pick!(24, crate::core::depend::shown(job)),
        priority: pick!(25, job.priority()),
        nice: pick!(26, job.nice),
        account: pick!(27, d.account.to_string()),
        qos: pick!(28, d.qos.to_string()),
        requeue: pick!(29, job.requeue),
        restart_count: pick!(30, job.restart_count),
        batch: pick!(31, true),
        exit_code: pick!(
            33,
            Some(v1::ExitCode {
                status: job.exit_status,
                signal: job.exit_signal,
                core_dumped: false,
            })
        ),
        derived_exit_code: pick!(34, Some(v1::ExitCode::default())),
        scheduled_by: pick!(
            35,
            if job.start_time > 0 || job.last_sched_eval > 0 {
                "Main".to_string()
            } else {
                String::new()
            }
        ),
        run_time_secs: pick!(40, derived.run_time_secs),
        time_limit: pick!(41, Some(derived.limit.into())),
        submit_time: pick!(43, job.submit_time),
        eligible_time: pick!(44, job.eligible_time),
        // A job accrues age from when it may run: not yet while it waits
        // for its --begin (Slurm shows Unknown until then).
        accrue_time: pick!(
            45,
            if refused_at_submit {
                0
            } else if job.eligible_time <= now {
                job.eligible_time
            } else {
                0
            }
        ),
        start_time: pick!(46, derived.start_time),
        end_time: pick!(47, derived.end_time),
        suspend_time: pick!(49, job.suspend_shown().0),
        pre_suspend_secs: pick!(50, job.suspend_shown().1),
        last_sched_eval: pick!(51, job.last_sched_eval),
        begin_time: pick!(53, job.shape.begin_time.unwrap_or(0)),
        partition: pick!(60, job.partition_name.clone()),
        alloc_node: pick!(61, d.submit_host.to_string()),
        alloc_sid: pick!(62, d.submit_sid),
        required_nodes: pick!(63, d.required_nodes.to_string()),
        excluded_nodes: pick!(64, d.excluded_nodes.to_string()),
        nodes: pick!(
            65,
            slurm_common::hostlist::compress(node_names.iter().copied())
        ),
        batch_host: pick!(66, batch_host_of(snap, job, &node_names).to_string()),
        scheduled_nodes: pick!(67, scheduled_nodes_of(snap, job).to_string()),
        wckey: pick!(69, d.wckey.to_string()),
        num_nodes: pick!(80, derived.shown_nodes),
        max_nodes: pick!(
            81,
            if ran_before(job) {
                0
            } else {
                job.shape.max_nodes.unwrap_or(0)
            }
        ),
        num_cpus: pick!(82, num_cpus),
        num_tasks: pick!(
            83,
            if (refused_at_submit || no_node) && !job.shape.ntasks_given {
                0
            } else if !job.shape.ntasks_given && !alloc.is_empty() {
                // A task per node it holds (or held), as Slurm counts a
                // job that gave no task count.
                u32::try_from(alloc.len()).unwrap_or(u32::MAX)
            } else if !alloc.is_empty() {
                job.placed_ntasks(alloc.len())
            } else {
                job.shape.ntasks
            }
        ),
        cpus_per_task: pick!(84, job.shape.cpus_per_task),
        ntasks_per_node: pick!(85, job.shape.ntasks_per_node.unwrap_or(0)),
        min_cpus_per_node: pick!(86, job.min_cpus_per_node()),
        memory: pick!(87, memory),
        gres: pick!(93, crate::core::gres::tres_per_node(&d.gres)),
        // --time-min, --deadline, --tmp, --licenses, --gpus, --network
        // (`core::extras`).
        time_min_minutes: pick!(42, d.extras().time_min_minutes),
        deadline: pick!(48, d.extras().deadline),
        min_tmp_disk_mb: pick!(89, d.extras().tmp_disk_mb),
        licenses: pick!(94, d.extras().licenses_shown()),
        tres_per_job: pick!(95, d.extras().tres_per_job.to_string()),
        tres_per_task: pick!(96, d.extras().tres_per_task.to_string()),
        network: pick!(104, d.extras().network.to_string()),
        // --kill-on-invalid-dep, --reboot and the socket/core/thread
        // requests.
        kill_on_invalid_dep: pick!(36, d.shown().kill_on_invalid_dep),
        reboot: pick!(32, d.shown().reboot),
        cpu_freq: pick!(107, d.shown().cpu_freq.to_string()),
        sockets_per_node: pick!(97, d.shown().sockets_per_node),
        cores_per_socket: pick!(98, d.shown().cores_per_socket),
        threads_per_core: pick!(99, d.shown().threads_per_core),
        ntasks_per_socket: pick!(105, d.shown().ntasks_per_socket),
        ntasks_per_core: pick!(106, d.shown().ntasks_per_core),
        spread_job: pick!(37, d.shown().spread_job),
        gres_enforce_binding: pick!(38, d.shown().gres_enforce_binding),
        delay_boot_minutes: pick!(54, d.shown().delay_boot_minutes),
        power: pick!(108, d.shown().power.to_string()),
        req_switch: pick!(120, d.shown().switches.unwrap_or(0)),
        wait4switch_seconds: pick!(121, d.shown().switch_wait_secs),
        container: pick!(122, d.shown().container.to_string()),
        cluster_features: pick!(123, d.shown().cluster_features.to_string()),
        prefer: pick!(130, d.shown().prefer.to_string()),
        tres_bind: pick!(134, d.shown().tres_bind.to_string()),
        profile: pick!(135, d.shown().profile.to_string()),
        resize_time: pick!(136, job.resize.as_ref().map_or(0, |r| r.time)),
        stdout_default: pick!(137, d.stdout_path.is_empty()),
        stderr_default: pick!(138, d.stderr_path.is_empty()),
        burst_buffer: pick!(132, d.shown().burst_buffer.to_string()),
        batch_features: pick!(133, d.shown().batch_features.to_string()),
        admin_comment: pick!(124, d.shown().admin_comment.as_deref().map(str::to_owned)),
        max_cpus: pick!(
            125,
            if job.status.state == JobState::Pending {
                d.shown().max_cpus.unwrap_or(0)
            } else {
                0
            }
        ),
        resources: pick!(
            92,
            Some(v1::JobResources {
                // A finished job shows the nodes it had, as Slurm's
                // `scontrol show job -d` does.
                nodes: node_allocations(&snap.nodes, shares, share_ids),
            })
        ),
        features: pick!(100, d.constraint.to_string()),
        sharing: pick!(101, d.sharing),
        contiguous: pick!(102, d.contiguous),
        overcommit: pick!(103, job.shape.overcommit),
        command: pick!(110, d.command_path.to_string()),
        work_dir: pick!(111, d.work_dir.to_string()),
        stdin_path: pick!(
            112,
            if d.stdin_path.is_empty() {
                "/dev/null".to_string()
            } else {
                d.stdin_path.to_string()
            }
        ),
        stdout_path: pick!(113, stdout),
        stderr_path: pick!(114, stderr),
        comment: pick!(115, job.comment.clone()),
        submit_line: pick!(116, d.submit_line.to_string()),
        mail_type: pick!(117, d.mail_type.to_string()),
        mail_user: pick!(118, d.mail_user.to_string()),
        cluster: pick!(119, snap.cluster_name.clone()),
        tres_requested: pick!(90, (num_cpus > 0).then_some(requested)),
        tres_allocated: pick!(91, (!alloc.is_empty()).then_some(tres)),
        ..v1::JobInfo::default()
    }
}

/// `scontrol show licenses`: every configured license and its use.
pub fn licenses_reply(snap: &Snapshot) -> v1::GetLicensesReply {
    v1::GetLicensesReply {
        licenses: crate::core::licenses::license_report(snap)
            .into_iter()
            .map(|l| v1::LicenseInfo {
                name: l.name,
                total: l.total,
                used: l.used,
                reserved: 0,
                remote: false,
            })
            .collect(),
        last_update: snap.last_update,
    }
}

fn tres(kind: &str, count: u64) -> v1::Tres {
    v1::Tres {
        r#type: kind.to_string(),
        name: String::new(),
        count,
    }
}

/// A job's TRES in Slurm's order: cpu, mem (only when memory is asked for or
/// allocated), node, billing (one per CPU: no TRESBillingWeights yet).
fn job_tres(cpus: u32, mem_mb: u64, nodes: u32) -> v1::TresList {
    let mut items = vec![tres("cpu", u64::from(cpus))];
    if mem_mb > 0 {
        items.push(tres("mem", mem_mb));
    }
    if nodes > 0 {
        items.push(tres("node", u64::from(nodes)));
    }
    items.push(tres("billing", u64::from(cpus)));
    v1::TresList { items }
}

/// What each share of an allocation gives, by node: its CPU ids (`ids`,
/// in the order of `shares`), memory, tasks and CPUs, with the node's
/// layout to place the ids on sockets and cores.
pub(crate) fn node_allocations(
    nodes: &[NodeRec],
    shares: &[NodeAlloc],
    ids: &[Box<[u32]>],
) -> Vec<v1::NodeAllocation> {
    shares
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            nodes.get(a.node_index).map(|n| v1::NodeAllocation {
                node: n.name.clone(),
                cpu_ids: ids.get(i).map_or_else(Vec::new, |ids| ids.to_vec()),
                memory_mb: a.mem_mb,
                gres: Vec::new(),
                tasks: a.tasks,
                cpus: a.cpus,
                cores_per_socket: n.cores_per_socket.into(),
                threads_per_core: n.threads_per_core.into(),
            })
        })
        .collect()
}

/// The fewest nodes a job not yet placed can run on, as Slurm counts its
/// nodes while it waits: its requested minimum, raised to its tasks spread
/// over the partition's largest node (each node holding as many tasks as
/// its CPUs fit), or with `--ntasks-per-node` to the nodes that many tasks
/// fill whole (`-n 3 --ntasks-per-node=2` shows 1). squeue shows it as is
/// (`-n 5 -N 1` on nodes of 2 CPUs: 3); `scontrol show job` no higher
/// than a requested maximum (`NumNodes=1-1`).
fn nodes_for_tasks(snap: &Snapshot, job: &Job) -> u32 {
    let shape = &job.shape;
    let min = shape.min_nodes;
    if let Some(per_node) = shape.ntasks_per_node.filter(|&n| n > 0) {
        return (shape.ntasks / per_node).max(min);
    }
    let cpus = job.task_cpus();
    if shape.overcommit || cpus <= 1 {
        return min;
    }
    let largest = job
        .partition
        .and_then(|p| snap.partitions.get(p))
        .and_then(|part| {
            part.view
                .nodes
                .iter()
                .filter_map(|&i| snap.nodes.get(i))
                .map(|n| n.cpus)
                .max()
        })
        .unwrap_or(0);
    let per_node = largest / shape.cpus_per_task.max(1);
    if per_node == 0 {
        return min;
    }
    shape.ntasks.div_ceil(per_node).max(min)
}

/// The memory of the largest node of partition `partition` (0 when it is
/// unknown or has no nodes).
fn whole_node_mem_mb(snap: &Snapshot, partition: Option<usize>) -> u64 {
    partition
        .and_then(|p| snap.partitions.get(p))
        .map_or(0, |part| {
            part.view
                .nodes
                .iter()
                .filter_map(|&i| snap.nodes.get(i))
                .map(|n| n.real_memory_mb)
                .max()
                .unwrap_or(0)
        })
}

/// A node's configured TRES (CfgTRES): cpu, mem, billing.
fn node_cfg_tres(node: &NodeRec) -> v1::TresList {
    let mut items = vec![tres("cpu", u64::from(node.cpus))];
    if node.real_memory_mb > 0 {
        items.push(tres("mem", node.real_memory_mb));
    }
    items.push(tres("billing", u64::from(node.cpus)));
    v1::TresList { items }
}

/// What is allocated on a node (AllocTRES): cpu and mem when in use.
fn node_alloc_tres(node: &NodeRec) -> v1::TresList {
    let mut items = Vec::new();
    if node.alloc_cpus > 0 {
        items.push(tres("cpu", u64::from(node.alloc_cpus)));
    }
    if node.alloc_mem_mb > 0 {
        items.push(tres("mem", node.alloc_mem_mb));
    }
    v1::TresList { items }
}

/// One node as sinfo and scontrol show it.
pub fn node_info(snap: &Snapshot, node: &NodeRec) -> v1::NodeInfo {
    v1::NodeInfo {
        name: node.name.clone(),
        node_addr: node.addr.clone(),
        node_hostname: node.hostname.clone(),
        port: u32::from(node.port),
        version: crate::VERSION.to_string(),
        state: v1::NodeState::from(node.state.base) as i32,
        state_flags: node_flags_to_wire(node.state.flags),
        reason: node.reason.clone().unwrap_or_default(),
        reason_uid: node.reason_uid,
        // Looked up only for nodes with a reason: few, and sinfo -R shows it.
        reason_user: if node.reason.is_some() {
            crate::server::user_name_of(node.reason_uid).unwrap_or_default()
        } else {
            String::new()
        },
        reason_time: node.reason_time,
        cpus: node.cpus,
        cpus_effective: node.cpus,
        boards: u32::from(node.boards),
        sockets: u32::from(node.sockets),
        cores_per_socket: u32::from(node.cores_per_socket),
        threads_per_core: u32::from(node.threads_per_core),
        real_memory_mb: node.real_memory_mb,
        tmp_disk_mb: node.tmp_disk_mb,
        weight: node.weight_now(),
        features: node.available_features().to_vec(),
        active_features: node.active_features().to_vec(),
        active_features_cleared: node.active_features_cleared(),
        comment: node.comment().unwrap_or_default().to_owned(),
        cpus_allocated: node.alloc_cpus,
        memory_allocated_mb: node.alloc_mem_mb,
        cpu_load_hundredths: node.load.map(|l| l.cpu_load_hundredths),
        free_memory_mb: node.load.map(|l| l.free_memory_mb),
        last_busy_time: node.last_busy,
        partitions: node
            .partitions
            .iter()
            .filter_map(|&p| snap.partitions.get(p))
            .map(|p| p.name().to_string())
            .collect(),
        slurmd_start_time: node.boot.slurmd_start_time,
        boot_time: node.boot.boot_time,
        gres: node.gres.iter().map(ToString::to_string).collect(),
        arch: node.arch.clone(),
        os: node.os.clone(),
        tres_configured: Some(node_cfg_tres(node)),
        tres_allocated: Some(node_alloc_tres(node)),
        ..v1::NodeInfo::default()
    }
}

fn limit_to_wire(l: TimeLimit) -> Option<v1::TimeLimit> {
    Some(l.into())
}

/// One partition as sinfo and scontrol show it.
pub fn partition_info(snap: &Snapshot, part: &PartRec) -> v1::PartitionInfo {
    let c = &part.conf;
    let members: Vec<&NodeRec> = part
        .view
        .nodes
        .iter()
        .filter_map(|&i| snap.nodes.get(i))
        .collect();
    let names: Vec<&str> = members.iter().map(|n| n.name.as_str()).collect();
    let total_cpus = members.iter().map(|n| n.cpus).sum();
    let state = match c.state {
        slurm_common::conf::PartitionState::Up => v1::PartitionState::Up,
        slurm_common::conf::PartitionState::Down => v1::PartitionState::Down,
        slurm_common::conf::PartitionState::Drain => v1::PartitionState::Drain,
        slurm_common::conf::PartitionState::Inactive => v1::PartitionState::Inactive,
    };
    let (mode, max_share) = match c.over_subscribe {
        slurm_common::conf::OverSubscribe::No => (v1::over_subscribe::Mode::No, 1),
        slurm_common::conf::OverSubscribe::Exclusive => (v1::over_subscribe::Mode::Exclusive, 0),
        slurm_common::conf::OverSubscribe::Yes(n) => (v1::over_subscribe::Mode::Yes, u32::from(n)),
        slurm_common::conf::OverSubscribe::Force(n) => {
            (v1::over_subscribe::Mode::Force, u32::from(n))
        }
    };
    v1::PartitionInfo {
        name: c.name.clone(),
        state: state as i32,
        is_default: c.default,
        hidden: c.hidden,
        nodes: slurm_common::hostlist::compress(names.iter().copied()),
        total_nodes: u32::try_from(names.len()).unwrap_or(u32::MAX),
        total_cpus,
        allow_groups: c.allow_groups.clone().unwrap_or_default(),
        allow_accounts: c.allow_accounts.clone().unwrap_or_default(),
        allow_qos: c.allow_qos.clone().unwrap_or_default(),
        allow_alloc_nodes: c.alloc_nodes.clone().unwrap_or_default(),
        deny_accounts: c.deny_accounts.clone(),
        deny_qos: c.deny_qos.clone(),
        qos: c.qos.clone().unwrap_or_default(),
        default_time: c.default_time.and_then(limit_to_wire),
        max_time: limit_to_wire(c.max_time),
        over_time_limit: c.over_time_limit.and_then(limit_to_wire),
        min_nodes: c.min_nodes,
        max_nodes: c.max_nodes,
        max_cpus_per_node: c.max_cpus_per_node,
        priority_job_factor: u32::from(c.priority_job_factor),
        priority_tier: u32::from(c.priority_tier),
        oversubscribe: Some(v1::OverSubscribe {
            mode: mode as i32,
            max_share,
        }),
        exclusive_user: c.exclusive_user,
        disable_root_jobs: c.disable_root_jobs,
        root_only: c.root_only,
        req_resv: c.req_resv,
        lln: c.lln,
        grace_time_secs: u32::try_from(c.grace_time.as_secs()).unwrap_or(u32::MAX),
        tres: Some(partition_tres(&members)),
        ..v1::PartitionInfo::default()
    }
}

/// A partition's TRES as Slurm totals them over its nodes' configured
/// sizes: `cpu=8,mem=16000M,node=4,billing=8` for four nodes of 2 CPUs and
/// 4000 MB. Billing is one per CPU, as for jobs: TRESBillingWeights are not
/// applied yet. A zero count is left out, as Slurm leaves it out (a
/// partition without nodes shows none; RealMemory is at least 1 MB).
fn partition_tres(members: &[&NodeRec]) -> v1::TresList {
    let cpus: u64 = members.iter().map(|n| u64::from(n.cpus)).sum();
    let mem_mb: u64 = members
        .iter()
        .fold(0u64, |sum, n| sum.saturating_add(n.real_memory_mb));
    let nodes = u64::try_from(members.len()).unwrap_or(u64::MAX);
    let items = [
        ("cpu", cpus),
        ("mem", mem_mb),
        ("node", nodes),
        ("billing", cpus),
    ]
    .into_iter()
    .filter(|&(_, count)| count > 0)
    .map(|(kind, count)| tres(kind, count))
    .collect();
    v1::TresList { items }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use prost::Message;
    use slurm_proto::v1;

    use super::*;
    use crate::core::tests::{script, Env};
    use crate::core::{Caller, Command, Reply};

    fn submit(env: &mut Env, f: impl FnOnce(&mut v1::JobDescription)) -> u32 {
        let mut d = script();
        f(&mut d);
        match env.submit_as(
            Caller {
                uid: 1000,
                gid: 1000,
            },
            d,
        ) {
            Reply::Submitted { job_id, .. } => job_id,
            other => panic!("submit refused: {other:?}"),
        }
    }

    fn minutes(m: u32) -> Option<v1::TimeLimit> {
        Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(m)),
        })
    }

    /// (StartTime, EndTime, EligibleTime) as scontrol and squeue get them,
    /// checked to be the same through the direct GetJobs encoding.
    fn times(env: &Env, id: u32, now: i64) -> (i64, i64, i64) {
        let snap = env.ctl.snapshot();
        let job = snap.jobs.get(&id).unwrap();
        let info = job_info(&snap, job, now);
        let want = JobFields::of(&[1, 44, 46, 47]);
        let direct_want = JobFields::of(&[1, 46, 47]);
        let prost = v1::GetJobsReply {
            jobs: vec![job_info_fields(&snap, job, now, direct_want)],
            last_update: 0,
            unchanged: false,
        }
        .encode_to_vec();
        let (mut direct, mut body) = (Vec::new(), Vec::new());
        super::super::jobs::encode_job(&mut direct, &mut body, &snap, job, now, direct_want);
        assert_eq!(direct, prost, "job {id}");
        let partial = job_info_fields(&snap, job, now, want);
        assert_eq!(
            (partial.start_time, partial.end_time, partial.eligible_time),
            (info.start_time, info.end_time, info.eligible_time)
        );
        (info.start_time, info.end_time, info.eligible_time)
    }

    /// As Slurm 22.05: a job refused at submission is recorded FAILED
    /// without ever accruing age (AccrueTime=Unknown), with its task count
    /// unset unless it asked for one (NumTasks=N/A), and evaluated once, at
    /// its submission (LastSchedEval).
    #[test]
    fn a_job_refused_at_submission_accrued_nothing_and_has_no_task_count() {
        let mut env = Env::new();
        env.register_all();
        let now = env.now;
        let caller = Caller {
            uid: 1000,
            gid: 1000,
        };
        for ntasks in [None, Some(2)] {
            let mut d = script();
            d.memory = Some(v1::job_description::Memory::MemPerNodeMb(999_999_999));
            d.ntasks = ntasks;
            assert!(matches!(env.submit_as(caller, d), Reply::Error { .. }));
        }
        let ok = submit(&mut env, |_| {});
        let snap = env.ctl.snapshot();
        let info = |id: u32| job_info(&snap, snap.jobs.get(&id).unwrap(), now);
        let (plain, counted) = (info(1), info(2));
        assert_eq!(plain.state, v1::JobState::Failed as i32);
        assert_eq!((plain.accrue_time, plain.num_tasks), (0, 0));
        assert_eq!((counted.accrue_time, counted.num_tasks), (0, 2));
        assert_eq!(plain.last_sched_eval, now);
        // A job that was accepted accrues from its submission.
        let ok = info(ok);
        assert_eq!((ok.accrue_time, ok.num_tasks), (now, 1));
    }

    /// A job waiting for its --begin time shows it as StartTime (and
    /// EligibleTime), ending a time limit later (Unknown without a limit),
    /// as Slurm does; other pending jobs, and any once the time has passed,
    /// show Unknown (0); a running job its real start.
    #[test]
    fn a_job_waiting_for_its_begin_time_shows_it_as_start_time() {
        let mut env = Env::new();
        let now = env.now;
        let begin = now + 3600;
        let limited = submit(&mut env, |d| {
            d.begin_time = begin;
            d.time_limit = minutes(30);
        });
        let unlimited = submit(&mut env, |d| d.begin_time = begin);
        let held = submit(&mut env, |d| {
            d.begin_time = begin;
            d.hold = true;
        });
        let plain = submit(&mut env, |_| {});
        let held_plain = submit(&mut env, |d| d.hold = true);
        let past = submit(&mut env, |d| d.begin_time = now - 10);
        assert_eq!(times(&env, limited, now), (begin, begin + 1800, begin));
        assert_eq!(times(&env, unlimited, now), (begin, 0, begin));
        assert_eq!(times(&env, held, now), (begin, 0, begin));
        assert_eq!(times(&env, plain, now), (0, 0, now));
        assert_eq!(times(&env, held_plain, now).0, 0);
        assert_eq!(times(&env, past, now), (0, 0, now));
        // Its time passed, still pending (no node is up): Unknown again.
        assert_eq!(times(&env, limited, begin), (0, 0, begin));
        // Started: its real start.
        env.register_all();
        env.now = begin + 5;
        env.run(Command::Tick);
        let job = env.job(limited);
        assert_eq!(job.state(), JobState::Running);
        assert_eq!(
            times(&env, limited, env.now),
            (begin + 5, begin + 5 + 1800, begin)
        );
    }

    /// A requeued job waits out the requeue delay: StartTime is its end.
    #[test]
    fn a_requeued_job_shows_the_end_of_its_delay_as_start_time() {
        let mut env = Env::new();
        env.register_all();
        let id = submit(&mut env, |d| d.time_limit = minutes(1));
        env.finish(id, 0, 0);
        env.now += 2;
        let r = env.run(Command::Requeue {
            caller: Caller::ROOT,
            filter: v1::JobFilter {
                job_ids: vec![id],
                ..Default::default()
            },
            hold: false,
        });
        assert!(matches!(r, Reply::JobResults(ref v) if v[0].error_code == 0));
        let eligible = env.now + 121;
        assert_eq!(
            times(&env, id, env.now),
            (eligible, eligible + 60, eligible)
        );
    }

    /// NumNodes of waiting jobs, as Slurm 22.05 shows them: a node range
    /// a pass could not place shows its top (`2-2`), held it shows as asked
    /// (`1-2`); a job requeued after a run shows that run's node count.
    #[test]
    fn waiting_node_ranges_show_as_in_slurm() {
        let mut env = Env::new();
        env.register_all();
        let nodes = |env: &Env, id: u32| {
            let snap = env.ctl.snapshot();
            let info = job_info(&snap, snap.jobs.get(&id).unwrap(), env.now);
            (info.num_nodes, info.max_nodes)
        };
        // Four idle nodes of 2 CPUs: the first job takes them all.
        let all = submit(&mut env, |d| {
            d.min_nodes = Some(4);
            d.sharing = v1::NodeSharing::Exclusive as i32;
        });
        let ranged = submit(&mut env, |d| {
            d.min_nodes = Some(1);
            d.max_nodes = Some(2);
        });
        let held = submit(&mut env, |d| {
            d.min_nodes = Some(1);
            d.max_nodes = Some(2);
            d.hold = true;
        });
        assert_eq!(env.job(ranged).reason, PendingReason::Resources);
        assert_eq!(nodes(&env, ranged), (2, 2));
        assert_eq!(nodes(&env, held), (1, 2));
        env.finish(all, 0, 0);
        env.epilogs(all);
        env.run(Command::Tick);
        assert_eq!(env.job(ranged).state(), JobState::Running);
        let ran_on = nodes(&env, ranged).0;
        assert_eq!(ran_on as usize, env.job(ranged).alloc.len());
        let r = env.run(Command::Requeue {
            caller: Caller::ROOT,
            filter: v1::JobFilter {
                job_ids: vec![ranged],
                ..Default::default()
            },
            hold: true,
        });
        assert!(matches!(r, Reply::JobResults(ref v) if v[0].error_code == 0));
        env.epilogs(ranged);
        assert_eq!(env.job(ranged).state(), JobState::Pending);
        assert_eq!(nodes(&env, ranged), (ran_on, 0));
    }

    fn tres_text(t: &v1::TresList) -> String {
        t.items
            .iter()
            .map(|t| format!("{}={}", t.r#type, t.count))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A placed `--exclusive` job holds whole nodes (its TRES) but asked
    /// for its tasks' CPUs, which `tres_req_str` keeps, as Slurm 22.05
    /// shows them (`-N2 --exclusive` on nodes of 2 CPUs: 2 asked, 4 held).
    #[test]
    fn a_placed_exclusive_job_keeps_what_it_asked_for() {
        let mut env = Env::new();
        env.register_all();
        let id = submit(&mut env, |d| {
            d.min_nodes = Some(2);
            d.sharing = v1::NodeSharing::Exclusive as i32;
        });
        let snap = env.ctl.snapshot();
        let info = job_info(&snap, snap.jobs.get(&id).unwrap(), env.now);
        assert_eq!(info.num_cpus, 4);
        let asked = tres_text(info.tres_requested.as_ref().unwrap());
        let held = tres_text(info.tres_allocated.as_ref().unwrap());
        assert!(asked.starts_with("cpu=2,mem=8000,node=2"), "{asked}");
        assert!(held.starts_with("cpu=4,"), "{held}");
    }

    /// Partition TRES are the totals of the members' configured sizes, in
    /// Slurm's order (golden scontrol_show_partition: four nodes of 2 CPUs
    /// and 4000 MB show `cpu=8,mem=16000M,node=4,billing=8`), whatever the
    /// nodes' state or allocation.
    #[test]
    fn partition_tres_total_the_configured_nodes() {
        let mut env = Env::new();
        let snap = env.ctl.snapshot();
        let tres = |snap: &Snapshot, name: &str| {
            let part = snap.partitions.iter().find(|p| p.name() == name).unwrap();
            tres_text(&partition_info(snap, part).tres.unwrap())
        };
        assert_eq!(tres(&snap, "debug"), "cpu=8,mem=16000,node=4,billing=8");
        assert_eq!(tres(&snap, "short"), "cpu=4,mem=8000,node=2,billing=4");
        env.register_all();
        submit(&mut env, |_| {});
        assert_eq!(
            tres(&env.ctl.snapshot(), "debug"),
            "cpu=8,mem=16000,node=4,billing=8"
        );
        // Nodes without RealMemory count 1 MB each, as in Slurm; a
        // partition without nodes has no TRES to show.
        let env = Env::with_conf(
            "ClusterName=c\nSlurmctldHost=h\nNodeName=a[1-3] CPUs=4\n\
             PartitionName=p Nodes=ALL Default=YES\nPartitionName=empty Nodes=\n",
        );
        let snap = env.ctl.snapshot();
        assert_eq!(tres(&snap, "p"), "cpu=12,mem=3,node=3,billing=12");
        assert_eq!(tres(&snap, "empty"), "");
    }

    /// The default output of an array task is `slurm-%A_%a.out` (expanded
    /// by scontrol), of any other job `slurm-%j.out`.
    #[test]
    fn array_jobs_default_to_the_array_output_pattern() {
        let mut env = Env::new();
        let array = submit(&mut env, |d| d.array_spec = "1-2".into());
        let plain = submit(&mut env, |_| {});
        let named = submit(&mut env, |d| {
            d.array_spec = "1-2".into();
            d.stdout_path = "/o/%A-%a".into();
        });
        let snap = env.ctl.snapshot();
        let out = |id: u32| {
            let info = job_info(&snap, snap.jobs.get(&id).unwrap(), env.now);
            (info.stdout_path, info.stderr_path)
        };
        let pattern = "/tmp/slurm-%A_%a.out".to_string();
        assert_eq!(out(array), (pattern.clone(), pattern));
        let plain_pattern = "/tmp/slurm-%j.out".to_string();
        assert_eq!(out(plain), (plain_pattern.clone(), plain_pattern));
        assert_eq!(out(named).0, "/o/%A-%a");
        // Whether each was given, for `--json`.
        let given = |id: u32| {
            let info = job_info(&snap, snap.jobs.get(&id).unwrap(), env.now);
            (info.stdout_default, info.stderr_default)
        };
        assert_eq!(given(plain), (true, true));
        assert_eq!(given(named), (false, true));
    }
}
