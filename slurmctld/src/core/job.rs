//! One job as the controller keeps it.
//!
//! The submitted [`JobDescription`] is not kept: its script and environment
//! live in StateSaveLocation (see `persist::scripts`), and the
//! rest is reduced to the few texts that queries and the launch show
//! ([`JobSpec`], behind an `Arc` so that copying a changed job record
//! does not copy them). What scheduling needs is resolved once, at
//! submission, into plain numbers ([`JobShape`]); the same pure functions
//! run again on replay, so the resolved values need no journal fields.
//! Keeping the record small is what lets 10,000 queued jobs fit in a few MB.
//!
//! Jobs submitted with the same options (a loop of `sbatch`, a parameter
//! sweep, many jobs of one workflow) have equal specs, and the controller
//! keeps one copy for all of them ([`SpecCache`]): a queue of 10,000 such
//! jobs then costs the job records alone. Only the location of each job's
//! files differs, so it sits beside the shared part ([`SharedSpec`]).
//!
//! Life of a job (base state; flags as in `slurm_common::state`):
//!
//! ```text
//!   submit ──> PENDING ──start──> RUNNING ──complete──> COMPLETED | FAILED
//!                │  ^                │  │                 (exit 0 | exit != 0)
//!       cancel   │  └──requeue───────┘  ├──time limit──> TIMEOUT (+COMPLETING)
//!                v                      └──cancel──────> CANCELLED (+COMPLETING)
//!            CANCELLED                      COMPLETING ends when every node has
//!                                           reported its cleanup (`core::epilog`)
//! ```
//!
//! An operator may suspend a running job and resume it (`core::suspend`).
//!
//! A requeue sends the job back to PENDING (through COMPLETING when it
//! ran, or when it ended and its nodes are still cleaning up), not eligible
//! before AuthInfo's cred_expire + 1 s has passed since its nodes were done
//! with it. Back in the queue it counts as submitted again (SubmitTime), as
//! in Slurm. Cancelled while its nodes still clean up, it is CANCELLED at
//! once and COMPLETING until they are done, and does not run again.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, LazyLock};

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason;
use slurm_common::state::{JobState, JobStatus};
use slurm_common::time::TimeLimit;
use slurm_proto::v1::{self, JobDescription};
use slurm_sched::{Hold, MemReq, NodeAlloc};

use crate::persist::ScriptRef;

/// Sizes and placement options resolved from a description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobShape {
    pub min_nodes: u32,
    pub max_nodes: Option<u32>,
    pub ntasks: u32,
    /// Whether the user asked for a task count (`-n` or
    /// `--ntasks-per-node`): only then does the batch step see SLURM_NTASKS.
    pub ntasks_given: bool,
    pub ntasks_per_node: Option<u32>,
    pub cpus_per_task: u32,
    pub mem: Option<MemReq>,
    pub exclusive: bool,
    pub overcommit: bool,
    /// `None` takes the partition's default.
    pub time_limit: Option<TimeLimit>,
    pub begin_time: Option<i64>,
}

/// The node sharing a job gets: as asked, except that `--reboot` without a
/// sharing of its own takes whole nodes, as Slurm 22.05 gives it
/// (OverSubscribe=NO, every CPU of the node once it runs).
fn sharing(desc: &JobDescription) -> i32 {
    if desc.reboot && desc.sharing == v1::NodeSharing::Unspecified as i32 {
        v1::NodeSharing::Exclusive as i32
    } else {
        desc.sharing
    }
}

impl JobShape {
    /// Resolves what `desc` asks for. Pure; invalid values were refused at
    /// submission, so anything odd here falls back to the plain default.
    pub fn from_desc(desc: &JobDescription) -> JobShape {
        let min_nodes = desc.min_nodes.unwrap_or(1).max(1);
        // (`-B 2` asking for a task per socket is sbatch's count, sent as
        // the task count: `--sockets-per-node=2` alone asks for one task.)
        let per_node = desc.ntasks_per_node.map(|n| n.max(1));
        let ntasks = desc
            .ntasks
            .unwrap_or_else(|| per_node.map_or(min_nodes, |n| n.saturating_mul(min_nodes)));
        let mem = match desc.memory {
            Some(v1::job_description::Memory::MemPerNodeMb(mb)) => Some(MemReq::PerNode(mb)),
            // `--mem-per-cpu=0` is `--mem=0` (all of each node's memory),
            // as Slurm 22.05 takes and shows it (MinMemoryNode=0).
            Some(v1::job_description::Memory::MemPerCpuMb(0)) => Some(MemReq::PerNode(0)),
            Some(v1::job_description::Memory::MemPerCpuMb(mb)) => Some(MemReq::PerCpu(mb)),
            None => None,
        };
        let time_limit = slurm_proto::convert::time_limit("time_limit", desc.time_limit.as_ref())
            .ok()
            .flatten()
            .map(TimeLimit::for_job_request);
        JobShape {
            min_nodes,
            max_nodes: desc.max_nodes,
            ntasks: ntasks.max(1),
            ntasks_given: desc.ntasks.is_some() || desc.ntasks_per_node.is_some(),
            ntasks_per_node: desc.ntasks_per_node,
            cpus_per_task: desc.cpus_per_task.unwrap_or(1).max(1),
            mem,
            exclusive: sharing(desc) == v1::NodeSharing::Exclusive as i32,
            overcommit: desc.overcommit,
            time_limit,
            begin_time: (desc.begin_time > 0).then_some(desc.begin_time),
        }
    }
}

/// The parts of a description that are shown or sent at launch, without
/// the script and environment (those are in the job's files, see
/// [`SharedSpec::files`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobSpec {
    pub user_name: Box<str>,
    pub submit_host: Box<str>,
    pub submit_sid: u32,
    pub submit_line: Box<str>,
    pub argv: Box<[Box<str>]>,
    pub work_dir: Box<str>,
    pub command_path: Box<str>,
    pub stdin_path: Box<str>,
    pub stdout_path: Box<str>,
    pub stderr_path: Box<str>,
    pub open_mode: i32,
    pub account: Box<str>,
    pub qos: Box<str>,
    pub reservation: Box<str>,
    pub required_nodes: Box<str>,
    pub excluded_nodes: Box<str>,
    pub constraint: Box<str>,
    /// `--gres` as given (per node), empty for none.
    pub gres: Box<str>,
    /// `--wckey` as given (a leading `*` marks a default key), empty for
    /// none. Without accounting storage nothing checks it.
    pub wckey: Box<str>,
    pub sharing: i32,
    pub contiguous: bool,
    pub cpus_per_task: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    pub min_cpus_per_node: Option<u32>,
    pub mail_type: Box<str>,
    pub mail_user: Box<str>,
    /// `--kill-on-invalid-dep`, `--reboot`, `--cpu-freq` and the socket,
    /// core and thread requests; `None` for none of them (most jobs; read
    /// them through `shown()`). Boxed: JobSpec stays within its size.
    pub shown: Option<Box<ShownOptions>>,
    /// --licenses, --tmp, --deadline, --signal, --network, --gpus*
    /// (`core::extras`); `None` for none of them (read them through
    /// `extras()`).
    pub extras: Option<Box<super::extras::SubmitExtras>>,
}

impl JobSpec {
    /// Keeps what is shown and launched from `desc` (script and environment
    /// are ignored: they travel separately).
    pub fn from_desc(desc: &JobDescription) -> JobSpec {
        let text = |s: &str| Box::<str>::from(s);
        JobSpec {
            user_name: text(&desc.user_name),
            submit_host: text(&desc.submit_host),
            submit_sid: desc.submit_sid,
            submit_line: text(&desc.submit_line),
            argv: desc.argv.iter().map(|a| text(a)).collect(),
            work_dir: text(&desc.work_dir),
            command_path: text(&desc.command_path),
            stdin_path: text(&desc.stdin_path),
            stdout_path: text(&desc.stdout_path),
            stderr_path: text(&desc.stderr_path),
            open_mode: desc.open_mode,
            account: text(&desc.account),
            qos: text(&desc.qos),
            reservation: text(&desc.reservation),
            required_nodes: text(&desc.required_nodes),
            excluded_nodes: text(&desc.excluded_nodes),
            constraint: text(&desc.constraint),
            gres: text(&desc.gres),
            wckey: text(&desc.wckey),
            sharing: sharing(desc),
            contiguous: desc.contiguous,
            cpus_per_task: desc.cpus_per_task,
            ntasks_per_node: desc.ntasks_per_node,
            min_cpus_per_node: desc.min_cpus_per_node,
            mail_type: text(&desc.mail_type),
            mail_user: text(&desc.mail_user),
            shown: ShownOptions::boxed_from_desc(desc),
            extras: super::extras::SubmitExtras::boxed_from_desc(desc),
        }
    }
}

/// Options a job keeps mostly to show them (`scontrol show job`): what it
/// asks of the sockets, cores and threads of its nodes (`Socks/Node=`,
/// `ReqB:S:C:T=`, `NtasksPerN:B:S:C=`; the scheduler keeps the job to
/// nodes that have that many, but counts CPUs and does not bind tasks to
/// sockets), `--kill-on-invalid-dep` (the dependency code reads
/// it from the submission), `--reboot` (nodes are not rebooted),
/// `--cpu-freq` (frequencies are not set), `--spread-job`, `--gres-flags`,
/// `--delay-boot`, `--power`, `--switches`, `--container` and
/// `--cluster-constraint` (none of them acted on); also `--no-kill`, which
/// is acted on when a node fails (`core::liveness`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct ShownOptions {
    pub sockets_per_node: Option<u32>,
    pub cores_per_socket: Option<u32>,
    pub threads_per_core: Option<u32>,
    pub ntasks_per_socket: Option<u32>,
    pub ntasks_per_core: Option<u32>,
    /// `None` when not given (nothing is shown then, whatever
    /// DependencyParameters says).
    pub kill_on_invalid_dep: Option<bool>,
    pub reboot: bool,
    /// As given, empty for none.
    pub cpu_freq: Box<str>,
    pub spread_job: bool,
    /// `--gres-flags`: enforce-binding (true) or disable-binding.
    pub gres_enforce_binding: Option<bool>,
    /// `--delay-boot`, minutes.
    pub delay_boot_minutes: Option<u32>,
    /// `--power` flags as shown (`LEVEL`), empty for none.
    pub power: Box<str>,
    /// `--switches`: the count (`None`: not asked) and the wait granted,
    /// seconds (bounded by MaxSwitchWait at submission).
    pub switches: Option<u32>,
    pub switch_wait_secs: u32,
    /// `--container` (an OCI bundle path), empty for none.
    pub container: Box<str>,
    /// `--cluster-constraint` as given, empty for none.
    pub cluster_features: Box<str>,
    /// `--prefer` (the scheduler tries these features first),
    /// `--mcs-label`, `--bb` and `--batch`, as given; empty for none.
    pub prefer: Box<str>,
    pub mcs_label: Box<str>,
    pub burst_buffer: Box<str>,
    pub batch_features: Box<str>,
    /// `TresBind=`: `gpu:` and the `--gpu-bind` value; empty for none.
    pub tres_bind: Box<str>,
    /// `--profile` as Slurm names it (`Energy,Task`); empty for not given.
    pub profile: Box<str>,
    /// `--no-kill`: a failed node is taken out of the running job, which
    /// goes on with the others (`core::liveness`); kept here as a rarely
    /// given option.
    pub no_kill: bool,
    /// The priority was set outright (`--priority`, `scontrol update
    /// Priority=`): as in Slurm, `Nice=` no longer moves it.
    pub priority_set: bool,
    /// `-n` given together with `--ntasks-per-node`: the batch step sees
    /// that count in SLURM_NTASKS, while a job given only the per-node
    /// count sees that many tasks on each node it got.
    pub ntasks_set: bool,
    /// `scontrol update AdminComment=`; `None` when never set (Slurm shows
    /// an empty one set, and not one never set).
    pub admin_comment: Option<Box<str>>,
    /// The CPU count of a pending job once it no longer follows its task
    /// count: set by `scontrol update NumCPUs=`/`MinCPUsNode=`, or kept as
    /// it was when its tasks or CPUs per task change (Slurm keeps the count
    /// it computed at submission). `None`: tasks × CPUs per task.
    pub num_cpus: Option<u32>,
    /// The upper end of `NumCPUs=MIN-MAX`, shown while pending.
    pub max_cpus: Option<u32>,
    /// MinCPUsNode once it no longer follows the job's tasks: set by
    /// `scontrol update MinCPUsNode=`, or kept as it was when the tasks or
    /// CPUs per task change.
    pub min_cpus_per_node: Option<u32>,
}

impl ShownOptions {
    /// The options of `desc`; `None` when it gives none.
    pub fn boxed_from_desc(desc: &JobDescription) -> Option<Box<ShownOptions>> {
        let shown = ShownOptions {
            sockets_per_node: desc.sockets_per_node,
            cores_per_socket: desc.cores_per_socket,
            threads_per_core: desc.threads_per_core,
            ntasks_per_socket: desc.ntasks_per_socket,
            ntasks_per_core: desc.ntasks_per_core,
            kill_on_invalid_dep: desc.kill_on_invalid_dep,
            reboot: desc.reboot,
            cpu_freq: desc.cpu_freq.as_str().into(),
            spread_job: desc.spread_job,
            gres_enforce_binding: desc.gres_enforce_binding,
            delay_boot_minutes: desc.delay_boot_minutes,
            power: desc.power.as_str().into(),
            switches: desc.switches,
            switch_wait_secs: desc.switches.and(desc.switch_wait_seconds).unwrap_or(0),
            container: desc.container.as_str().into(),
            cluster_features: desc.cluster_constraint.as_str().into(),
            prefer: slurm_sched::constraint::as_kept(&desc.prefer).into(),
            mcs_label: desc.mcs_label.as_str().into(),
            burst_buffer: desc.burst_buffer.as_str().into(),
            batch_features: desc.batch_features.as_deref().unwrap_or_default().into(),
            tres_bind: desc.tres_bind.as_str().into(),
            profile: desc.profile.as_str().into(),
            no_kill: desc.no_kill,
            priority_set: desc.priority.is_some(),
            ntasks_set: desc.ntasks.is_some() && desc.ntasks_per_node.is_some(),
            // Only `scontrol update` sets these.
            admin_comment: None,
            num_cpus: None,
            max_cpus: None,
            min_cpus_per_node: None,
        };
        (shown != ShownOptions::default()).then(|| Box::new(shown))
    }
}

/// What a spec without any [`ShownOptions`] reads as.
static NO_SHOWN_OPTIONS: LazyLock<ShownOptions> = LazyLock::new(ShownOptions::default);

impl JobSpec {
    /// `--exclusive=user`: the job's nodes hold no other user's jobs.
    pub fn exclusive_user(&self) -> bool {
        self.sharing == v1::NodeSharing::ExclusiveUser as i32
    }

    /// The job's [`ShownOptions`] (all unset when it gave none).
    pub fn shown(&self) -> &ShownOptions {
        self.shown.as_deref().unwrap_or(&NO_SHOWN_OPTIONS)
    }

    /// The [`ShownOptions`] to change, made when there were none.
    pub fn shown_mut(&mut self) -> &mut ShownOptions {
        self.shown.get_or_insert_with(Box::default)
    }
}

/// A job's [`JobSpec`], possibly shared with other jobs, and where its own
/// script and environment are. Reads of the spec go through `Deref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSpec {
    /// Where the job's script and environment are.
    pub files: ScriptRef,
    spec: Arc<JobSpec>,
}

impl SharedSpec {
    pub fn new(spec: Arc<JobSpec>, files: ScriptRef) -> SharedSpec {
        SharedSpec { files, spec }
    }

    /// Whether both hold the same copy (not merely equal ones).
    pub fn is_shared_with(&self, other: &SharedSpec) -> bool {
        Arc::ptr_eq(&self.spec, &other.spec)
    }

    /// The spec to change, copied first if other jobs share it.
    pub fn make_mut(&mut self) -> &mut JobSpec {
        Arc::make_mut(&mut self.spec)
    }
}

impl Deref for SharedSpec {
    type Target = JobSpec;

    fn deref(&self) -> &JobSpec {
        &self.spec
    }
}

/// How many recent specs [`SpecCache`] remembers.
const SPEC_CACHE_LEN: usize = 8;

/// The specs of the last few submissions, most recent first, so that a new
/// job equal to one of them shares its copy. A short list rather than a map
/// of every spec: bursts of equal submissions (even interleaved from a few
/// users) hit it, a miss costs a few comparisons that stop at the first
/// differing text, and nothing needs removing when jobs go away (it holds
/// at most [`SPEC_CACHE_LEN`] specs beyond those of live jobs).
///
/// Sharing is invisible: specs are never changed in place, and equal
/// values behave alike, so replay and snapshots need not know about it.
#[derive(Debug, Clone, Default)]
pub struct SpecCache {
    recent: Vec<Arc<JobSpec>>,
}

impl SpecCache {
    /// A copy of `spec` to keep: a remembered equal one, or `spec` itself,
    /// then remembered.
    pub fn share(&mut self, spec: JobSpec) -> Arc<JobSpec> {
        if let Some(i) = self.recent.iter().position(|s| **s == spec) {
            self.recent[..=i].rotate_right(1);
            return Arc::clone(&self.recent[0]);
        }
        let kept = Arc::new(spec);
        if self.recent.len() >= SPEC_CACHE_LEN {
            self.recent.pop();
        }
        self.recent.insert(0, Arc::clone(&kept));
        kept
    }
}

/// One allocation slice, by node index.
pub type Alloc = NodeAlloc;

/// A job record. Mutated only by `Controller::apply`.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: JobId,
    pub uid: u32,
    pub gid: u32,
    pub spec: SharedSpec,
    pub name: String,
    /// Index into the controller's partitions: the one it runs (or ran)
    /// in, or while it waits the first of its partitions that exists;
    /// `None` when none does any more (a replayed job whose partition was
    /// removed).
    pub partition: Option<usize>,
    /// What Slurm shows as the job's partition: the list it asked for
    /// (`-p a,b`) while it waits, the one it started in once it has.
    pub partition_name: String,
    pub shape: JobShape,
    pub status: JobStatus,
    /// Why it waits (or why it ended); derived by the scheduler for pending
    /// jobs, recorded by events for ended ones.
    pub reason: PendingReason,
    /// Extra text shown after the reason, e.g. "launch failed".
    pub reason_detail: String,
    /// Priority before holds and nice.
    pub base_priority: u32,
    pub nice: i32,
    pub hold: Option<Hold>,
    pub requeue: bool,
    pub restart_count: u32,
    pub launch_failures: u32,
    pub comment: String,
    pub submit_time: i64,
    pub eligible_time: i64,
    pub start_time: i64,
    pub end_time: i64,
    pub last_sched_eval: i64,
    /// Limit fixed at start (job's or partition default).
    pub run_limit: Option<TimeLimit>,
    pub exit_status: u32,
    pub exit_signal: u32,
    /// Nodes and CPUs held; non-empty while RUNNING or COMPLETING.
    pub alloc: Box<[Alloc]>,
    pub exclusive_alloc: bool,
    /// The allocation it last held, kept after release so a finished job
    /// still shows its NodeList, BatchHost and TRES, as Slurm does.
    pub last_alloc: Box<[Alloc]>,
    /// The CPU ids (`0..cpus` of the node) each share of `alloc` holds, in
    /// the same order; empty when the job holds none.
    pub cpu_ids: Box<[Box<[u32]>]>,
    /// The CPU ids of `last_alloc`'s shares, as they were when it was set:
    /// what `scontrol show job -d` shows of a finished job.
    pub last_cpu_ids: Box<[Box<[u32]>]>,
    /// Its `--signal` went out during the current run (`core::signal`);
    /// cleared when it starts again.
    pub signal_sent: bool,
    /// `--dependency` (what is left of it); `None` for none (`core::depend`).
    pub dependency: Option<Box<super::depend::Dependency>>,
    /// `--array`: the meta record or one task of an array; `None` for an
    /// ordinary job (`core::array`).
    pub array: Option<Box<super::array::ArrayState>>,
    /// Suspensions of the current run (`core::suspend`); `None` for a run
    /// never suspended.
    pub suspend: Option<Box<super::suspend::Suspension>>,
    /// Nodes taken out of the running job (a `--no-kill` job's failed
    /// nodes, `scontrol update NumNodes=`); `None` for a run never resized.
    pub resize: Option<Box<Resize>>,
}

/// What taking nodes out of a running job leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resize {
    /// ResizeTime: when the last node was taken out.
    pub time: i64,
    /// The batch host (node index) when it is one of the nodes taken out:
    /// Slurm still shows it as BatchHost; `None` while it is in the
    /// allocation (its first node).
    pub batch_host: Option<usize>,
}

/// The partitions a job's partition list names, in order (`a,b`).
pub fn partition_names(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|n| !n.is_empty())
}

/// The first partition of `list` that `index` knows: the one a waiting job
/// is shown and checked against.
pub fn first_partition(list: &str, index: &HashMap<String, usize>) -> Option<usize> {
    partition_names(list).find_map(|n| index.get(n).copied())
}

impl Job {
    /// The CPU count of the job while it waits (NumCPUs, its TRES): what
    /// `scontrol update` set or kept, else its tasks' CPUs, one per node at
    /// least; one per node for a job that overcommits, as Slurm 22.05
    /// shows `-n 4 -O` (NumCPUs=1).
    pub fn pending_cpus(&self) -> u32 {
        self.spec.shown().num_cpus.unwrap_or_else(|| {
            if self.shape.overcommit {
                self.shape.min_nodes
            } else {
                self.task_cpus().max(self.shape.min_nodes)
            }
        })
    }

    /// Keeps the allocation, with its CPU ids, as the one shown once the
    /// job no longer holds it.
    pub fn keep_last_alloc(&mut self) {
        self.last_alloc.clone_from(&self.alloc);
        self.last_cpu_ids.clone_from(&self.cpu_ids);
    }

    /// The tasks on each node it holds, as Slurm 22.05 counts them for
    /// SLURM_TASKS_PER_NODE: `--ntasks-per-node` on every node (`-n 1
    /// --ntasks-per-node=2` shows 2), else what the placement gave.
    pub fn tasks_on_nodes(&self) -> Vec<u32> {
        match self.shape.ntasks_per_node.filter(|&n| n > 0) {
            Some(per_node) => vec![per_node; self.alloc.len()],
            None => self.alloc.iter().map(|a| a.tasks).collect(),
        }
    }

    /// NumTasks once placed on `nodes` nodes: with `--ntasks-per-node`,
    /// that many on every node, if more than it asked (Slurm 22.05 shows
    /// `-N 1-2 --ntasks-per-node=2` on two nodes as NumTasks=4, and `-n 3`
    /// with it as well).
    pub fn placed_ntasks(&self, nodes: usize) -> u32 {
        match self.shape.ntasks_per_node.filter(|&n| n > 0) {
            Some(per_node) => {
                let nodes = u32::try_from(nodes).unwrap_or(u32::MAX);
                self.shape.ntasks.max(per_node.saturating_mul(nodes))
            }
            None => self.shape.ntasks,
        }
    }

    /// The task count the batch step sees (SLURM_NTASKS): the one asked
    /// with `-n`, or, for a job given only `--ntasks-per-node`, that many
    /// on each node it got.
    pub fn launch_ntasks(&self) -> Option<u32> {
        if !self.shape.ntasks_given {
            return None;
        }
        Some(if self.spec.shown().ntasks_set {
            self.shape.ntasks
        } else {
            self.placed_ntasks(self.alloc.len())
        })
    }

    /// The CPUs its tasks take: tasks × CPUs per task.
    pub fn task_cpus(&self) -> u32 {
        self.shape.ntasks.saturating_mul(self.shape.cpus_per_task)
    }

    /// `MinCPUsNode`: what one node must give, as Slurm shows it: the
    /// larger of `--mincpus` and the CPUs of `--ntasks-per-node` tasks (one
    /// task when not given, when the job runs one task, or when it
    /// overcommits), unless `scontrol update` set or kept it.
    pub fn min_cpus_per_node(&self) -> u32 {
        if let Some(kept) = self.spec.shown().min_cpus_per_node {
            return kept;
        }
        slurm_sched::min_cpus_per_node(
            self.shape.ntasks,
            self.shape.ntasks_per_node,
            self.shape.cpus_per_task,
            self.shape.overcommit,
            self.spec.min_cpus_per_node.unwrap_or(0),
        )
    }

    /// Whether `name` is one of the job's partitions.
    pub fn in_partition(&self, name: &str) -> bool {
        partition_names(&self.partition_name).any(|n| n == name)
    }

    /// Scheduling priority as shown: 0 while held or suspended (as Slurm
    /// shows a job an operator suspended), and while it waits with
    /// BadConstraints, which Slurm 22.05 shows as Priority=0 (a release
    /// numbers it anew).
    pub fn priority(&self) -> u32 {
        let bad =
            self.status.state == JobState::Pending && self.reason == PendingReason::BadConstraints;
        if self.hold.is_some() || self.status.state == JobState::Suspended || bad {
            return 0;
        }
        let p = i64::from(self.base_priority) - i64::from(self.nice);
        u32::try_from(p.clamp(1, i64::from(u32::MAX))).unwrap_or(1)
    }

    pub fn state(&self) -> JobState {
        self.status.state
    }

    /// Pending and not still releasing a previous allocation.
    pub fn is_schedulable(&self) -> bool {
        self.status.state == JobState::Pending && !self.status.is_completing()
    }

    /// When a running job reaches its time limit: the time suspended does
    /// not count (`core::suspend`).
    pub fn deadline(&self) -> Option<i64> {
        if self.status.state != JobState::Running {
            return None;
        }
        let secs = self.run_limit?.as_secs()?;
        Some(
            self.clock_start()
                .saturating_add(i64::try_from(secs).unwrap_or(i64::MAX)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(user: &str, dir: &str) -> JobSpec {
        JobSpec::from_desc(&JobDescription {
            user_name: user.into(),
            work_dir: dir.into(),
            ..JobDescription::default()
        })
    }

    #[test]
    fn equal_specs_share_one_copy_and_different_ones_do_not() {
        let mut cache = SpecCache::default();
        let a = cache.share(spec("alice", "/home/alice"));
        let b = cache.share(spec("bob", "/home/bob"));
        let a2 = cache.share(spec("alice", "/home/alice"));
        let b2 = cache.share(spec("bob", "/home/bob"));
        assert!(Arc::ptr_eq(&a, &a2));
        assert!(Arc::ptr_eq(&b, &b2));
        assert!(!Arc::ptr_eq(&a, &b));
        // Differing in one text only is a different spec.
        let c = cache.share(spec("alice", "/home/alice/run"));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(*c, spec("alice", "/home/alice/run"));
    }

    #[test]
    fn the_cache_keeps_the_most_recent_specs() {
        let mut cache = SpecCache::default();
        let first = cache.share(spec("u0", ""));
        for i in 1..SPEC_CACHE_LEN {
            cache.share(spec(&format!("u{i}"), ""));
        }
        // Still remembered (and now the most recent).
        assert!(Arc::ptr_eq(&first, &cache.share(spec("u0", ""))));
        // SPEC_CACHE_LEN newer specs push it out.
        for i in 0..SPEC_CACHE_LEN {
            cache.share(spec(&format!("v{i}"), ""));
        }
        assert_eq!(cache.recent.len(), SPEC_CACHE_LEN);
        let again = cache.share(spec("u0", ""));
        assert!(!Arc::ptr_eq(&first, &again));
        assert_eq!(*first, *again);
    }

    #[test]
    fn memory_per_cpu_of_zero_is_all_of_each_nodes_memory() {
        let shape = |memory| {
            JobShape::from_desc(&JobDescription {
                memory: Some(memory),
                ..JobDescription::default()
            })
            .mem
        };
        use v1::job_description::Memory;
        assert_eq!(shape(Memory::MemPerCpuMb(0)), Some(MemReq::PerNode(0)));
        assert_eq!(shape(Memory::MemPerCpuMb(10)), Some(MemReq::PerCpu(10)));
        assert_eq!(shape(Memory::MemPerNodeMb(0)), Some(MemReq::PerNode(0)));
    }

    #[test]
    fn shown_options_are_kept_only_when_given() {
        let plain = spec("alice", "/w");
        assert!(plain.shown.is_none());
        assert_eq!(*plain.shown(), ShownOptions::default());
        let asked = JobSpec::from_desc(&JobDescription {
            sockets_per_node: Some(1),
            threads_per_core: Some(2),
            ntasks_per_core: Some(2),
            kill_on_invalid_dep: Some(false),
            reboot: true,
            cpu_freq: "high".into(),
            ..JobDescription::default()
        });
        assert_eq!(
            *asked.shown(),
            ShownOptions {
                sockets_per_node: Some(1),
                threads_per_core: Some(2),
                ntasks_per_core: Some(2),
                kill_on_invalid_dep: Some(false),
                reboot: true,
                cpu_freq: "high".into(),
                ..ShownOptions::default()
            }
        );
        assert_ne!(asked, plain);
        // Any one of them is kept.
        let reboot = JobSpec::from_desc(&JobDescription {
            reboot: true,
            ..JobDescription::default()
        });
        assert!(reboot.shown().reboot);
        let more = JobSpec::from_desc(&JobDescription {
            spread_job: true,
            gres_enforce_binding: Some(false),
            delay_boot_minutes: Some(5),
            power: "LEVEL".into(),
            ..JobDescription::default()
        });
        let shown = more.shown();
        assert!(shown.spread_job);
        assert_eq!(shown.gres_enforce_binding, Some(false));
        assert_eq!(shown.delay_boot_minutes, Some(5));
        assert_eq!(&*shown.power, "LEVEL");
    }

    #[test]
    fn a_shared_spec_reads_through_and_keeps_its_own_files() {
        let mut cache = SpecCache::default();
        let files = |segment| ScriptRef {
            segment,
            ..ScriptRef::default()
        };
        let x = SharedSpec::new(cache.share(spec("alice", "/w")), files(1));
        let y = SharedSpec::new(cache.share(spec("alice", "/w")), files(2));
        assert!(x.is_shared_with(&y));
        assert_eq!(&*x.user_name, "alice");
        assert_eq!(&*y.work_dir, "/w");
        assert_eq!((x.files.segment, y.files.segment), (1, 2));
        assert_ne!(x, y);
    }
}
