//! Snapshots: the whole controller state in one file, so that a restart
//! reads one snapshot and a short journal tail instead of every event since
//! the cluster was created.
//!
//! What is in it: everything [`Controller::apply`] builds that slurm.conf
//! does not give back: every job with every field, each node's run-time
//! state (state and flags, reason, allocation counters, registration,
//! arch/OS; not the counts of completing shares, which the jobs give), the
//! next job id and priority, the script-space bookkeeping,
//! and the journal generation that continues it. Node sizes, partitions and
//! the configuration come from slurm.conf at load, as on replay; nodes and
//! jobs' partitions are matched by name, so a reordered slurm.conf is fine.
//!
//! ```text
//! file   : header | record* ; the first record is META, the last END
//! header : "SLURMSNP" | u32 format version | u32 0                  (16 bytes)
//! record : u32 payload length | u32 crc32(payload) | payload
//! payload: u8 tag | fields
//!   1 META  generation u64, next job id u32, next priority u32, last update i64,
//!           script segment u32, script end u64, node count u32, job count u32
//!   2 NODE  one per node (run-time state only), in slurm.conf order at write time;
//!           its last field, LastBusyTime (i64), may be absent (files written
//!           before it was kept), and is then taken as the last registration
//!   3 JOB   one per job, in id order; allocations name nodes by NODE ordinal;
//!           its last fields, the job's --gres then its --wckey (text
//!           each), may be absent (files written before they were kept),
//!           and are then taken as none
//!   4 END   number of records before it u32
//!   5 DEPEND the dependency of the job of the JOB record right before it
//!           (only for jobs that have one; `core::depend`): job id u32, the
//!           text as Slurm shows it, --kill-on-invalid-dep u8 (0 unset,
//!           1 no, 2 yes). Files written before dependencies have none.
//!   6 OPTIONS --licenses, --tmp, --deadline, --time-min, --signal (and
//!           when it was sent), --network, --gpus* of the job of the JOB
//!           record before it (after its DEPEND, if any), only for jobs
//!           that have any (`core::extras`). Files written before them
//!           have none.
//!   7 ARRAY the array part of the job of the JOB record before it (after
//!           its DEPEND and OPTIONS), only for array jobs (`core::array`):
//!           job id u32, ArrayJobId u32, task (optional u32), throttle,
//!           task count, min, max and step (u32 each), then the tasks not
//!           started yet (u32 count, u32 each). Files written before
//!           arrays have none.
//!   8 PARTITION what `scontrol update PartitionName=` changed of one
//!           slurm.conf partition (`core::partition`), only for those changed:
//!           name, u32 count, then key and value (text each). Files
//!           written before partition updates have none.
//!   9 NODE_ATTRS what `scontrol update NodeName=` laid over one node's
//!           slurm.conf line (`core::node_attrs`), only for nodes changed:
//!           name, then AvailableFeatures and ActiveFeatures (presence u8,
//!           u32 count, text each), Weight (optional u32) and Comment
//!           (optional text). Files written before such updates have none.
//!  10 PARTITION_CREATED a partition made by `scontrol create`, before
//!           the PARTITION records: name, u32 count, then key and value
//!           (text each) of its whole definition (`core::partition`).
//!  11 PARTITION_DELETED a slurm.conf partition deleted by `scontrol
//!           delete`, before the PARTITION_CREATED records: name. Files
//!           written before creation and deletion have neither.
//!  12 SUSPEND the suspension bookkeeping of the job of the JOB record
//!           before it (after its DEPEND, OPTIONS and ARRAY), only for
//!           jobs suspended in their current run (`core::suspend`): job
//!           id u32, SuspendTime i64, SecsPreSuspend i64, suspended u8,
//!           exclusive before the suspension u8. Files written before
//!           suspensions have none.
//!  13 RESIZE what taking failed nodes out of a running `--no-kill` job
//!           left (`core::liveness`), after the job's other records, only
//!           for jobs resized: job id u32, ResizeTime i64, then the batch
//!           host's name when it was taken out (text; empty while it is
//!           in the allocation). Files written before resizes have none.
//!  14 CPUS  the CPU ids each share of the job of the JOB record before it
//!           holds, after its other records, only for jobs with any: job
//!           id u32, u32 count, then for each share its node ordinal u32
//!           (as in the JOB record), u32 count and the ids (u32 each); then
//!           the same for its last allocation (what a finished job shows).
//!           Shares without one (files written before ids were kept) are
//!           given ids when the file is loaded.
//! ```
//!
//! Fields use the conventions of the event encoding (`core::event`): little
//! endian fixed-width integers, `u32` length + bytes for text, a presence
//! byte for an `Option`. Enums are written through explicit tables here, so
//! that reordering a type elsewhere cannot change the meaning of a file.
//! New record tags may be added within a format version (an older reader
//! refuses them); changing a layout needs a new [`SNAPSHOT_FORMAT_VERSION`].
//!
//! Records are checksummed one by one rather than the file as a whole, so
//! damage is reported with the offset of the record that holds it, and the
//! recovery mode (`slurmctld -i`) can keep every record before it.
//!
//! Encoding destructures each record type without `..`: a field added to
//! [`Job`], [`JobSpec`], [`JobShape`] or [`NodeRec`] does not compile until
//! it is given a place here (or explicitly declared configuration-derived).

use super::codec::{Reader, Writer};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;

use slurm_common::ids::JobId;
use slurm_common::reason::PendingReason;
use slurm_common::state::{
    JobFlag, JobFlags, JobState, JobStatus, NodeBaseState, NodeFlag, NodeFlags, NodeState,
};
use slurm_common::time::TimeLimit;
use slurm_sched::{MemReq, NodeAlloc};
use thiserror::Error;

use super::event::DecodeError;
use super::{Controller, Job, JobShape, JobSpec, JobTable, NodeRec, SharedSpec, SpecCache};
use crate::persist::crc::crc32;
use crate::persist::{ScriptRef, ScriptSpace};

pub const SNAPSHOT_MAGIC: &[u8; 8] = b"SLURMSNP";
/// Version of the layout described in the module docs.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 1;
pub const SNAPSHOT_HEADER_LEN: usize = 16;
const RECORD_HEAD: usize = 8;
/// A record larger than this is damage (a job record is well under 64 kB).
const MAX_RECORD: u32 = 64 * 1024 * 1024;

const TAG_META: u8 = 1;
const TAG_NODE: u8 = 2;
const TAG_JOB: u8 = 3;
const TAG_END: u8 = 4;
const TAG_DEPEND: u8 = 5;
const TAG_OPTIONS: u8 = 6;
const TAG_ARRAY: u8 = 7;
const TAG_PARTITION: u8 = 8;
const TAG_NODE_ATTRS: u8 = 9;
const TAG_PARTITION_CREATED: u8 = 10;
const TAG_PARTITION_DELETED: u8 = 11;
const TAG_SUSPEND: u8 = 12;
const TAG_RESIZE: u8 = 13;
const TAG_CPUS: u8 = 14;

/// A snapshot that cannot be read. Offsets are byte offsets in the file.
#[derive(Debug, Error)]
pub enum SnapshotError {
    #[error("not a snapshot (bad header)")]
    BadHeader,
    #[error("snapshot format version {found} is not supported (this build reads {SNAPSHOT_FORMAT_VERSION})")]
    UnsupportedVersion { found: u32 },
    #[error("corrupt record at byte offset {offset}: {detail}")]
    Corrupt { offset: u64, detail: String },
    #[error("record at byte offset {offset} does not decode: {source}")]
    Decode {
        offset: u64,
        #[source]
        source: DecodeError,
    },
}

impl SnapshotError {
    /// Damage (as opposed to a file of another version).
    pub fn is_damage(&self) -> bool {
        !matches!(self, SnapshotError::UnsupportedVersion { .. })
    }
}

/// A loaded snapshot.
#[derive(Debug)]
pub struct Loaded {
    pub controller: Controller,
    /// The journal generation that continues this state; `None` when the
    /// META record was lost (salvage only).
    pub generation: Option<u64>,
    pub jobs: usize,
    /// Job allocation slices on nodes slurm.conf no longer has (dropped).
    pub dropped_allocs: usize,
    /// Node records of nodes slurm.conf no longer has (ignored).
    pub unknown_nodes: usize,
    /// In salvage mode: the first damage; the records from there on were
    /// not loaded.
    pub damage: Option<SnapshotError>,
}

/// Appends the snapshot of `ctl` to `out`.
pub fn encode(ctl: &Controller, generation: u64) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write(ctl, generation, &mut out);
    out
}

/// Writes the snapshot of `ctl` to `w`, record by record (no copy of the
/// whole file in memory). Returns the bytes written.
pub fn write<W: Write>(ctl: &Controller, generation: u64, w: &mut W) -> io::Result<u64> {
    let mut header = [0u8; SNAPSHOT_HEADER_LEN];
    header[..8].copy_from_slice(SNAPSHOT_MAGIC);
    header[8..12].copy_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
    w.write_all(&header)?;
    let mut sink = Sink {
        w,
        written: SNAPSHOT_HEADER_LEN as u64,
        records: 0,
    };
    let mut buf = Vec::with_capacity(4096);

    let Controller {
        // From slurm.conf at load: configuration, node and partition tables
        // (but for the partitions' updates).
        cfg: _,
        node_index: _,
        partitions,
        part_index: _,
        default_part: _,
        part_conf: _,
        // Derived: a pass runs after every restart; segments to remove are
        // taken by the shell after every batch.
        sched_dirty: _,
        // Memory only: the periodic pass counts from a restart's first.
        last_pass: _,
        second_look: _,
        freed_segments: _,
        // Derived from the job records: counted again at load.
        job_count: _,
        // Liveness bookkeeping: every node starts again at "not heard from"
        // after a restart (see `core::liveness`).
        last_response: _,
        // Memory only: which equal specs are shared (built again at load).
        spec_cache: _,
        // Derived: the first pass after a restart plans again
        // (`core::estimate`).
        planned: _,
        planned_at: _,
        nodes,
        jobs,
        next_job_id,
        next_priority,
        last_update,
        scripts,
    } = ctl;
    let ScriptSpace {
        current,
        end,
        // Recomputed from the jobs at load.
        live: _,
    } = scripts;

    let mut wr = Writer::new(&mut buf);
    wr.u8(TAG_META);
    wr.u64(generation);
    wr.u32(*next_job_id);
    wr.u32(*next_priority);
    wr.i64(*last_update);
    wr.u32(*current);
    wr.u64(*end);
    wr.len(nodes.len());
    wr.len(jobs.len());
    sink.emit(&mut buf)?;

    for node in nodes {
        let mut wr = Writer::new(&mut buf);
        wr.u8(TAG_NODE);
        node_record(&mut wr, node);
        sink.emit(&mut buf)?;
    }
    for node in nodes {
        let Some(attrs) = &node.attrs else { continue };
        let mut wr = Writer::new(&mut buf);
        wr.u8(TAG_NODE_ATTRS);
        wr.str(&node.name);
        attrs.write(&mut wr);
        sink.emit(&mut buf)?;
    }
    // The table's changes before any update: a deleted line must not
    // take an update, a created partition must exist to be found by name.
    for name in ctl.deleted_conf_partitions() {
        let mut wr = Writer::new(&mut buf);
        wr.u8(TAG_PARTITION_DELETED);
        wr.str(name);
        sink.emit(&mut buf)?;
    }
    for p in partitions.iter().filter(|p| p.created) {
        let mut wr = Writer::new(&mut buf);
        wr.u8(TAG_PARTITION_CREATED);
        wr.str(p.name());
        wr.attributes(p.update.as_ref().map_or(&[][..], |u| u.pairs()));
        sink.emit(&mut buf)?;
    }
    for p in partitions.iter().filter(|p| !p.created) {
        let Some(update) = &p.update else { continue };
        let mut wr = Writer::new(&mut buf);
        wr.u8(TAG_PARTITION);
        wr.str(p.name());
        wr.attributes(update.pairs());
        sink.emit(&mut buf)?;
    }
    for job in jobs.values() {
        let mut wr = Writer::new(&mut buf);
        wr.u8(TAG_JOB);
        job_record(&mut wr, job);
        sink.emit(&mut buf)?;
        if let Some(dep) = &job.dependency {
            let mut wr = Writer::new(&mut buf);
            wr.u8(TAG_DEPEND);
            super::depend::write_record(&mut wr, job.id.get(), dep);
            sink.emit(&mut buf)?;
        }
        if super::extras::has_record(job) {
            let mut wr = Writer::new(&mut buf);
            wr.u8(TAG_OPTIONS);
            super::extras::write_record(&mut wr, job);
            sink.emit(&mut buf)?;
        }
        if let Some(a) = &job.array {
            let mut wr = Writer::new(&mut buf);
            wr.u8(TAG_ARRAY);
            super::array::write_record(&mut wr, job.id.get(), a);
            sink.emit(&mut buf)?;
        }
        if let Some(s) = &job.suspend {
            let mut wr = Writer::new(&mut buf);
            wr.u8(TAG_SUSPEND);
            super::suspend::write_record(&mut wr, job.id.get(), s);
            sink.emit(&mut buf)?;
        }
        if let Some(rs) = &job.resize {
            let mut wr = Writer::new(&mut buf);
            wr.u8(TAG_RESIZE);
            wr.u32(job.id.get());
            wr.i64(rs.time);
            let host = rs.batch_host.and_then(|i| ctl.nodes.get(i));
            wr.str(host.map_or("", |n| n.name.as_str()));
            sink.emit(&mut buf)?;
        }
        if !job.cpu_ids.is_empty() || !job.last_cpu_ids.is_empty() {
            let mut wr = Writer::new(&mut buf);
            wr.u8(TAG_CPUS);
            wr.u32(job.id.get());
            for (alloc, cpu_ids) in [
                (&job.alloc, &job.cpu_ids),
                (&job.last_alloc, &job.last_cpu_ids),
            ] {
                let shares = alloc.len().min(cpu_ids.len());
                wr.len(shares);
                for (a, ids) in alloc.iter().zip(cpu_ids.iter()) {
                    wr.u32(u32::try_from(a.node_index).unwrap_or(u32::MAX));
                    wr.len(ids.len());
                    for &id in ids.iter() {
                        wr.u32(id);
                    }
                }
            }
            sink.emit(&mut buf)?;
        }
    }
    let mut wr = Writer::new(&mut buf);
    wr.u8(TAG_END);
    wr.u32(sink.records);
    sink.emit(&mut buf)?;
    Ok(sink.written)
}

/// One share of a CPUS record: the node's index here, and the ids.
type CpuShare = (usize, Box<[u32]>);

/// The shares of a CPUS record: node (mapped to this slurm.conf; one it
/// no longer has is left out) and ids.
fn read_cpu_shares(
    r: &mut Reader<'_>,
    node_map: &[Option<usize>],
) -> Result<Vec<CpuShare>, DecodeError> {
    let count = r.u32("share count")?;
    let mut held = Vec::new();
    for _ in 0..count {
        let ordinal = r.u32("share node")?;
        let n = r.u32("cpu id count")?;
        let mut ids = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(r.left() / 4));
        for _ in 0..n {
            ids.push(r.u32("cpu id")?);
        }
        let node = usize::try_from(ordinal)
            .ok()
            .and_then(|o| node_map.get(o).copied().flatten());
        if let Some(node) = node {
            held.push((node, ids.into_boxed_slice()));
        }
    }
    Ok(held)
}

/// `held`'s ids in the order of `alloc`'s shares; `None` unless every
/// share has some.
fn aligned_cpu_ids(alloc: &[NodeAlloc], held: &[CpuShare]) -> Option<Box<[Box<[u32]>]>> {
    alloc
        .iter()
        .map(|a| {
            held.iter()
                .find(|(n, _)| *n == a.node_index)
                .map(|(_, ids)| ids.clone())
        })
        .collect()
}

/// Frames records and counts them.
struct Sink<'w, W> {
    w: &'w mut W,
    written: u64,
    records: u32,
}

impl<W: Write> Sink<'_, W> {
    /// Writes the record in `buf` (made by [`Writer::new`] and filled).
    fn emit(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let payload = &buf[RECORD_HEAD..];
        let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        let crc = crc32(payload);
        buf[..4].copy_from_slice(&len.to_le_bytes());
        buf[4..8].copy_from_slice(&crc.to_le_bytes());
        self.w.write_all(buf)?;
        self.written += buf.len() as u64;
        self.records = self.records.saturating_add(1);
        Ok(())
    }
}

fn node_record(w: &mut Writer<'_>, node: &NodeRec) {
    let NodeRec {
        name,
        // From slurm.conf.
        addr: _,
        hostname: _,
        port: _,
        cpus: _,
        boards: _,
        sockets: _,
        cores_per_socket: _,
        threads_per_core: _,
        real_memory_mb: _,
        tmp_disk_mb: _,
        weight: _,
        features: _,
        // A record of its own (TAG_NODE_ATTRS), for nodes with updates.
        attrs: _,
        gres: _,
        conf_state: _,
        partitions: _,
        state,
        reason,
        reason_uid,
        reason_time,
        alloc_cpus,
        alloc_mem_mb,
        // Derived from the jobs: counted again at load.
        completing_jobs: _,
        completing_cpus: _,
        // Derived from the jobs' CPUS records.
        cpu_use: _,
        exclusive_owner,
        last_registration,
        arch,
        os,
        last_busy,
        // Figures of the moment, never saved (see `core::node`).
        load: _,
        boot: _,
    } = node;
    w.str(name);
    w.u8(node_base_code(state.base));
    w.u32(node_flag_mask(state.flags));
    w.opt_str(reason.as_deref());
    w.u32(*reason_uid);
    w.i64(*reason_time);
    w.u32(*alloc_cpus);
    w.u64(*alloc_mem_mb);
    w.opt_u32(exclusive_owner.map(JobId::get));
    w.i64(*last_registration);
    w.str(arch);
    w.str(os);
    w.i64(*last_busy);
}

fn job_record(w: &mut Writer<'_>, job: &Job) {
    let Job {
        id,
        uid,
        gid,
        spec,
        name,
        // Index of `partition_name` in slurm.conf, found again at load.
        partition: _,
        partition_name,
        shape,
        status,
        reason,
        reason_detail,
        base_priority,
        nice,
        hold,
        requeue,
        restart_count,
        launch_failures,
        comment,
        submit_time,
        eligible_time,
        start_time,
        end_time,
        last_sched_eval,
        run_limit,
        exit_status,
        exit_signal,
        alloc,
        exclusive_alloc,
        last_alloc,
        // Its own record, right after this one (TAG_DEPEND).
        dependency: _,
        // In the OPTIONS record, with the spec's extras.
        signal_sent: _,
        // Its own record (TAG_ARRAY).
        array: _,
        // Its own record (TAG_SUSPEND).
        suspend: _,
        // Its own record (TAG_RESIZE).
        resize: _,
        // Its own record (TAG_CPUS).
        cpu_ids: _,
        last_cpu_ids: _,
    } = job;
    w.u32(id.get());
    w.u32(*uid);
    w.u32(*gid);
    w.str(name);
    w.str(partition_name);
    shape_fields(w, shape);
    w.u8(job_state_code(status.state));
    w.u32(job_flag_mask(status.flags));
    w.str(reason.as_str());
    w.str(reason_detail);
    w.u32(*base_priority);
    w.i32(*nice);
    w.hold(*hold);
    w.bool(*requeue);
    w.u32(*restart_count);
    w.u32(*launch_failures);
    w.str(comment);
    w.i64(*submit_time);
    w.i64(*eligible_time);
    w.i64(*start_time);
    w.i64(*end_time);
    w.i64(*last_sched_eval);
    w.opt_limit(*run_limit);
    w.u32(*exit_status);
    w.u32(*exit_signal);
    w.allocs(alloc);
    w.bool(*exclusive_alloc);
    w.allocs(last_alloc);
    spec_fields(w, spec);
}

fn shape_fields(w: &mut Writer<'_>, shape: &JobShape) {
    let JobShape {
        min_nodes,
        max_nodes,
        ntasks,
        ntasks_given,
        ntasks_per_node,
        cpus_per_task,
        mem,
        exclusive,
        overcommit,
        time_limit,
        begin_time,
    } = shape;
    w.u32(*min_nodes);
    w.opt_u32(*max_nodes);
    w.u32(*ntasks);
    w.bool(*ntasks_given);
    w.opt_u32(*ntasks_per_node);
    w.u32(*cpus_per_task);
    match mem {
        None => w.u8(0),
        Some(MemReq::PerNode(mb)) => {
            w.u8(1);
            w.u64(*mb);
        }
        Some(MemReq::PerCpu(mb)) => {
            w.u8(2);
            w.u64(*mb);
        }
    }
    w.bool(*exclusive);
    w.bool(*overcommit);
    w.opt_limit(*time_limit);
    match begin_time {
        Some(t) => {
            w.bool(true);
            w.i64(*t);
        }
        None => w.bool(false),
    }
}

fn spec_fields(w: &mut Writer<'_>, shared: &SharedSpec) {
    let files = &shared.files;
    let JobSpec {
        user_name,
        submit_host,
        submit_sid,
        submit_line,
        argv,
        work_dir,
        command_path,
        stdin_path,
        stdout_path,
        stderr_path,
        open_mode,
        account,
        qos,
        reservation,
        required_nodes,
        excluded_nodes,
        constraint,
        gres,
        wckey,
        sharing,
        contiguous,
        cpus_per_task,
        ntasks_per_node,
        min_cpus_per_node,
        mail_type,
        mail_user,
        // Written last, below.
        shown: _,
        // Their own record (TAG_OPTIONS).
        extras: _,
    } = &**shared;
    w.str(user_name);
    w.str(submit_host);
    w.u32(*submit_sid);
    w.str(submit_line);
    w.len(argv.len());
    for a in argv.iter() {
        w.str(a);
    }
    w.str(work_dir);
    w.str(command_path);
    w.str(stdin_path);
    w.str(stdout_path);
    w.str(stderr_path);
    w.i32(*open_mode);
    w.str(account);
    w.str(qos);
    w.str(reservation);
    w.str(required_nodes);
    w.str(excluded_nodes);
    w.str(constraint);
    w.i32(*sharing);
    w.bool(*contiguous);
    w.opt_u32(*cpus_per_task);
    w.opt_u32(*ntasks_per_node);
    w.opt_u32(*min_cpus_per_node);
    w.str(mail_type);
    w.str(mail_user);
    let ScriptRef {
        segment,
        offset,
        script_len,
        env_len,
        crc,
    } = files;
    w.u32(*segment);
    w.u64(*offset);
    w.u32(*script_len);
    w.u32(*env_len);
    w.u32(*crc);
    // Last, so that a record without them (an older file) still reads.
    w.str(gres);
    w.str(wckey);
    // Then the options kept to be shown: a byte of flags
    // (--kill-on-invalid-dep in the low two bits: 0 none, 1 yes, 2 no;
    // --reboot in bit 2; --spread-job in bit 3; --gres-flags in bits 4-5,
    // as --kill-on-invalid-dep; --no-kill in bit 6, a priority set outright
    // in bit 7), the socket, core and
    // thread requests,
    // --cpu-freq, --delay-boot, --power.
    let super::job::ShownOptions {
        sockets_per_node,
        cores_per_socket,
        threads_per_core,
        ntasks_per_socket,
        ntasks_per_core,
        kill_on_invalid_dep,
        reboot,
        cpu_freq,
        spread_job,
        gres_enforce_binding,
        delay_boot_minutes,
        power,
        switches,
        switch_wait_secs,
        container,
        cluster_features,
        prefer,
        mcs_label,
        burst_buffer,
        batch_features,
        tres_bind,
        profile,
        no_kill,
        priority_set,
        ntasks_set,
        admin_comment,
        num_cpus,
        max_cpus,
        min_cpus_per_node: kept_min_cpus_per_node,
    } = shared.shown();
    let tri = |v: &Option<bool>| -> u8 {
        match v {
            None => 0,
            Some(true) => 1,
            Some(false) => 2,
        }
    };
    w.u8(tri(kill_on_invalid_dep)
        | (u8::from(*reboot) << 2)
        | (u8::from(*spread_job) << 3)
        | (tri(gres_enforce_binding) << 4)
        | (u8::from(*no_kill) << 6)
        | (u8::from(*priority_set) << 7));
    for v in [
        sockets_per_node,
        cores_per_socket,
        threads_per_core,
        ntasks_per_socket,
        ntasks_per_core,
    ] {
        w.opt_u32(*v);
    }
    w.str(cpu_freq);
    // Added later: --delay-boot and --power.
    w.opt_u32(*delay_boot_minutes);
    w.str(power);
    // Then --switches (count and wait), --container, --cluster-constraint.
    w.opt_u32(*switches);
    w.u32(*switch_wait_secs);
    w.str(container);
    w.str(cluster_features);
    // Then what `scontrol update` sets: AdminComment= (after a byte saying
    // whether there is one), the CPU count and its upper end.
    match admin_comment {
        Some(text) => {
            w.bool(true);
            w.str(text);
        }
        None => w.bool(false),
    }
    w.opt_u32(*num_cpus);
    w.opt_u32(*max_cpus);
    w.opt_u32(*kept_min_cpus_per_node);
    // Then --prefer, --mcs-label, --bb and --batch.
    w.str(prefer);
    w.str(mcs_label);
    w.str(burst_buffer);
    w.str(batch_features);
    // Then TresBind= and --profile, and whether -n came with
    // --ntasks-per-node.
    w.str(tres_bind);
    w.str(profile);
    w.bool(*ntasks_set);
}

/// Loads a snapshot on top of `base`, a controller freshly built from
/// slurm.conf ([`Controller::new`]).
///
/// With `salvage`, damage does not fail the load: the records before it
/// are kept, node allocation counters are recomputed from the jobs kept,
/// and [`Loaded::damage`] says where it was. A snapshot of another format
/// version is refused in either mode.
pub fn decode(bytes: &[u8], base: Controller, salvage: bool) -> Result<Loaded, SnapshotError> {
    if bytes.len() < SNAPSHOT_HEADER_LEN
        || &bytes[..8] != SNAPSHOT_MAGIC
        || bytes[12..16] != [0, 0, 0, 0]
    {
        if salvage {
            return Ok(Loaded::empty(base, SnapshotError::BadHeader));
        }
        return Err(SnapshotError::BadHeader);
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != SNAPSHOT_FORMAT_VERSION {
        return Err(SnapshotError::UnsupportedVersion { found: version });
    }
    let mut loader = Loader::new(base);
    let outcome = loader.run(bytes);
    match outcome {
        Ok(()) => Ok(loader.finish(None)),
        Err(e) if salvage => Ok(loader.finish(Some(e))),
        Err(e) => Err(e),
    }
}

/// The generation in the META record at the start of a snapshot file
/// (`prefix`: its first bytes, a few hundred are enough); `None` when the
/// header or META is not there or not intact.
pub fn peek_generation(prefix: &[u8]) -> Option<u64> {
    if prefix.len() < SNAPSHOT_HEADER_LEN + RECORD_HEAD || &prefix[..8] != SNAPSHOT_MAGIC {
        return None;
    }
    let at = SNAPSHOT_HEADER_LEN;
    let word =
        |i: usize| u32::from_le_bytes([prefix[i], prefix[i + 1], prefix[i + 2], prefix[i + 3]]);
    let len = usize::try_from(word(at)).ok()?;
    let payload = prefix.get(at + RECORD_HEAD..at + RECORD_HEAD + len)?;
    if crc32(payload) != word(at + 4) {
        return None;
    }
    let mut r = Reader::new(payload);
    if r.u8("record tag").ok()? != TAG_META {
        return None;
    }
    r.u64("generation").ok()
}

impl Loaded {
    fn empty(controller: Controller, damage: SnapshotError) -> Loaded {
        Loaded {
            controller,
            generation: None,
            jobs: 0,
            dropped_allocs: 0,
            unknown_nodes: 0,
            damage: Some(damage),
        }
    }
}

/// What META says.
struct Meta {
    generation: u64,
    next_job_id: u32,
    next_priority: u32,
    last_update: i64,
    script_segment: u32,
    script_end: u64,
    nodes: u32,
    jobs: u32,
}

struct Loader {
    ctl: Controller,
    meta: Option<Meta>,
    /// Snapshot node ordinal -> index in `ctl.nodes` (None: not configured).
    node_map: Vec<Option<usize>>,
    jobs: JobTable,
    /// Id of the last job record (they come in increasing id order).
    last_job: Option<u32>,
    records: u32,
    dropped_allocs: usize,
    unknown_nodes: usize,
    ended: bool,
}

impl Loader {
    fn new(ctl: Controller) -> Loader {
        Loader {
            ctl,
            meta: None,
            node_map: Vec::new(),
            jobs: JobTable::new(),
            last_job: None,
            records: 0,
            dropped_allocs: 0,
            unknown_nodes: 0,
            ended: false,
        }
    }

    /// Job `id`, for a record of its own (`what`: "array", ...) that must
    /// come right after its JOB record and that the job must not have yet
    /// (`fresh`); otherwise the damage, described.
    fn job_before(
        &mut self,
        id: u32,
        fresh: impl Fn(&Job) -> bool,
        what: &str,
    ) -> Result<&mut Job, String> {
        let follows = self.last_job == Some(id);
        match self.jobs.get_mut(&id).filter(|j| follows && fresh(j)) {
            Some(job) => Ok(Arc::make_mut(job)),
            None => Err(format!("{what} of job {id} does not follow its job record")),
        }
    }

    fn run(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        let mut pos = SNAPSHOT_HEADER_LEN;
        while pos < bytes.len() {
            let offset = pos as u64;
            let corrupt = |detail: String| SnapshotError::Corrupt { offset, detail };
            if self.ended {
                return Err(corrupt("data after the end record".into()));
            }
            if bytes.len() - pos < RECORD_HEAD {
                return Err(corrupt("record header cut short".into()));
            }
            let word = |at: usize| {
                u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
            };
            let (len, crc) = (word(pos), word(pos + 4));
            if len > MAX_RECORD {
                return Err(corrupt(format!("record length {len} is implausible")));
            }
            let end = pos + RECORD_HEAD + len as usize;
            if end > bytes.len() {
                return Err(corrupt(format!(
                    "record of {len} bytes runs past the end of the file"
                )));
            }
            let payload = &bytes[pos + RECORD_HEAD..end];
            if crc32(payload) != crc {
                return Err(corrupt("checksum mismatch".into()));
            }
            self.record(payload, offset)?;
            self.records = self.records.saturating_add(1);
            pos = end;
        }
        if !self.ended {
            return Err(SnapshotError::Corrupt {
                offset: bytes.len() as u64,
                detail: "the file ends without its end record".into(),
            });
        }
        Ok(())
    }

    fn record(&mut self, payload: &[u8], offset: u64) -> Result<(), SnapshotError> {
        let decode = |source: DecodeError| SnapshotError::Decode { offset, source };
        let corrupt = |detail: String| SnapshotError::Corrupt { offset, detail };
        let mut r = Reader::new(payload);
        let tag = r.u8("record tag").map_err(decode)?;
        if tag != TAG_META && self.meta.is_none() {
            return Err(corrupt(
                "the first record is not the snapshot's META".into(),
            ));
        }
        match tag {
            TAG_META => {
                if self.meta.is_some() {
                    return Err(corrupt("a second META record".into()));
                }
                let meta = read_meta(&mut r).map_err(decode)?;
                r.done().map_err(decode)?;
                self.meta = Some(meta);
            }
            TAG_NODE => {
                if !self.jobs.is_empty() {
                    return Err(corrupt("a node record after the job records".into()));
                }
                let (name, rec) = read_node(&mut r).map_err(decode)?;
                r.done().map_err(decode)?;
                match self.ctl.node_index.get(&name).copied() {
                    Some(i) => {
                        rec.apply_to(&mut self.ctl.nodes[i]);
                        self.node_map.push(Some(i));
                    }
                    None => {
                        self.unknown_nodes += 1;
                        self.node_map.push(None);
                    }
                }
            }
            TAG_JOB => {
                let (job, dropped) = read_job(
                    &mut r,
                    &self.node_map,
                    &self.ctl.part_index,
                    &mut self.ctl.spec_cache,
                )
                .map_err(decode)?;
                r.done().map_err(decode)?;
                let id = job.id.get();
                if self.last_job.is_some_and(|last| last >= id) {
                    return Err(corrupt(format!("job {id} is out of order")));
                }
                self.last_job = Some(id);
                self.dropped_allocs += dropped;
                self.jobs.insert(id, Arc::new(job));
            }
            TAG_DEPEND => {
                let rec = super::depend::read_record(&mut r).map_err(decode)?;
                r.done().map_err(decode)?;
                let id = rec.job_id;
                let dep = rec
                    .dependency()
                    .map_err(|e| corrupt(format!("dependency of job {id}: {e}")))?;
                let job = self.job_before(id, |j| j.dependency.is_none(), "dependency");
                job.map_err(corrupt)?.dependency = dep;
            }
            TAG_OPTIONS => {
                let rec = super::extras::read_record(&mut r).map_err(decode)?;
                r.done().map_err(decode)?;
                let id = rec.job_id;
                let follows = self.last_job == Some(id);
                let Some(job) = self.jobs.get_mut(&id).filter(|_| follows) else {
                    return Err(corrupt(format!(
                        "options of job {id} do not follow its job record"
                    )));
                };
                rec.apply_to(Arc::make_mut(job), &mut self.ctl.spec_cache);
            }
            TAG_ARRAY => {
                let (id, a) = super::array::read_record(&mut r).map_err(decode)?;
                r.done().map_err(decode)?;
                let job = self.job_before(id, |j| j.array.is_none(), "array");
                job.map_err(corrupt)?.array = Some(Box::new(a));
            }
            TAG_SUSPEND => {
                let (id, susp) = super::suspend::read_record(&mut r).map_err(decode)?;
                r.done().map_err(decode)?;
                let job = self.job_before(id, |j| j.suspend.is_none(), "suspension");
                job.map_err(corrupt)?.suspend = Some(Box::new(susp));
            }
            TAG_RESIZE => {
                let id = r.u32("job id").map_err(decode)?;
                let time = r.i64("resize time").map_err(decode)?;
                let host = r.string("batch host").map_err(decode)?;
                r.done().map_err(decode)?;
                // A batch host slurm.conf no longer has is not shown.
                let batch_host = self.ctl.node_index.get(&host).copied();
                let job = self.job_before(id, |j| j.resize.is_none(), "resize");
                job.map_err(corrupt)?.resize =
                    Some(Box::new(super::job::Resize { time, batch_host }));
            }
            TAG_CPUS => {
                let id = r.u32("job id").map_err(decode)?;
                let now = read_cpu_shares(&mut r, &self.node_map).map_err(decode)?;
                let last = if r.left() > 0 {
                    read_cpu_shares(&mut r, &self.node_map).map_err(decode)?
                } else {
                    Vec::new()
                };
                r.done().map_err(decode)?;
                let fresh = |j: &Job| j.cpu_ids.is_empty() && j.last_cpu_ids.is_empty();
                let job = self.job_before(id, fresh, "cpu ids");
                let job = job.map_err(corrupt)?;
                // Shares the record does not cover are given ids at the
                // end of the load; a last allocation without them shows
                // none.
                job.cpu_ids = aligned_cpu_ids(&job.alloc, &now).unwrap_or_default();
                job.last_cpu_ids = aligned_cpu_ids(&job.last_alloc, &last).unwrap_or_default();
            }
            TAG_NODE_ATTRS => {
                let name = r.string("node").map_err(decode)?;
                let attrs = super::node_attrs::NodeAttrs::read(&mut r).map_err(decode)?;
                r.done().map_err(decode)?;
                // A node slurm.conf no longer has was counted at its
                // NODE record.
                if let Some(i) = self.ctl.node_index.get(&name).copied() {
                    self.ctl.apply_node_attrs(i, &attrs);
                }
            }
            TAG_PARTITION | TAG_PARTITION_CREATED => {
                let name = r.string("partition").map_err(decode)?;
                let attributes = r.attributes().map_err(decode)?;
                r.done().map_err(decode)?;
                if tag == TAG_PARTITION {
                    self.ctl.apply_partition_update(&name, &attributes);
                } else {
                    self.ctl.apply_partition_create(&name, &attributes);
                }
            }
            TAG_PARTITION_DELETED => {
                let name = r.string("partition").map_err(decode)?;
                r.done().map_err(decode)?;
                self.ctl.apply_partition_delete(&name);
            }
            TAG_END => {
                let count = r.u32("record count").map_err(decode)?;
                r.done().map_err(decode)?;
                if count != self.records {
                    return Err(corrupt(format!(
                        "end record counts {count} records, the file has {}",
                        self.records
                    )));
                }
                if let Some(m) = &self.meta {
                    let nodes = self.node_map.len();
                    if usize::try_from(m.nodes).ok() != Some(nodes)
                        || usize::try_from(m.jobs).ok() != Some(self.jobs.len())
                    {
                        return Err(corrupt(format!(
                            "META announced {} nodes and {} jobs, the file has {nodes} and {}",
                            m.nodes,
                            m.jobs,
                            self.jobs.len()
                        )));
                    }
                }
                self.ended = true;
            }
            other => {
                return Err(decode(DecodeError::Unknown {
                    offset: 0,
                    what: "snapshot record tag",
                    value: u32::from(other),
                }))
            }
        }
        Ok(())
    }

    fn finish(self, damage: Option<SnapshotError>) -> Loaded {
        let Loader {
            mut ctl,
            meta,
            jobs,
            last_job,
            dropped_allocs,
            unknown_nodes,
            ..
        } = self;
        let generation = meta.as_ref().map(|m| m.generation);
        if let Some(m) = &meta {
            ctl.next_job_id = m.next_job_id;
            ctl.next_priority = m.next_priority;
            ctl.last_update = m.last_update;
            ctl.scripts.current = m.script_segment;
            ctl.scripts.end = m.script_end;
        }
        let mut live: BTreeMap<u32, u32> = BTreeMap::new();
        for job in jobs.values() {
            *live.entry(job.spec.files.segment).or_insert(0) += 1;
        }
        ctl.scripts.live = live;
        if damage.is_some() || dropped_allocs > 0 {
            // Allocations of jobs that were not loaded must not stay counted
            // on their nodes: count again from the jobs kept.
            recount_allocations(&mut ctl, &jobs);
        }
        if damage.is_some() {
            // Ids after the last job kept may have been handed out.
            if let Some(last) = last_job {
                if ctl.next_job_id <= last && last < ctl.cfg.max_job_id {
                    ctl.next_job_id = last + 1;
                }
            }
        }
        let count = jobs.len();
        ctl.jobs = jobs;
        ctl.job_count = ctl.count_jobs();
        // Partitions are found by name whatever the order of the records.
        ctl.relink_partitions();
        ctl.recount_completing();
        ctl.recount_cpu_use();
        ctl.sched_dirty = true;
        ctl.freed_segments.clear();
        Loaded {
            controller: ctl,
            generation,
            jobs: count,
            dropped_allocs,
            unknown_nodes,
            damage,
        }
    }
}

fn recount_allocations(ctl: &mut Controller, jobs: &JobTable) {
    for n in &mut ctl.nodes {
        n.alloc_cpus = 0;
        n.alloc_mem_mb = 0;
        n.exclusive_owner = None;
    }
    for job in jobs.values() {
        for a in &job.alloc {
            if let Some(n) = ctl.nodes.get_mut(a.node_index) {
                // Without its CPUs for a suspended job (`core::suspend`).
                // The CPUs are counted from the jobs' ids afterwards
                // (`Controller::recount_cpu_use`).
                n.take(&job.counted_share(a), &[], job.exclusive_alloc, job.id);
            }
        }
    }
}

fn read_meta(r: &mut Reader<'_>) -> Result<Meta, DecodeError> {
    Ok(Meta {
        generation: r.u64("generation")?,
        next_job_id: r.u32("next job id")?,
        next_priority: r.u32("next priority")?,
        last_update: r.i64("last update")?,
        script_segment: r.u32("script segment")?,
        script_end: r.u64("script end")?,
        nodes: r.u32("node count")?,
        jobs: r.u32("job count")?,
    })
}

/// The run-time part of a node record.
struct NodeRuntime {
    state: NodeState,
    reason: Option<String>,
    reason_uid: u32,
    reason_time: i64,
    alloc_cpus: u32,
    alloc_mem_mb: u64,
    exclusive_owner: Option<u32>,
    last_registration: i64,
    arch: String,
    os: String,
    last_busy: i64,
}

impl NodeRuntime {
    fn apply_to(self, n: &mut NodeRec) {
        n.state = self.state;
        n.reason = self.reason;
        n.reason_uid = self.reason_uid;
        n.reason_time = self.reason_time;
        n.alloc_cpus = self.alloc_cpus;
        n.alloc_mem_mb = self.alloc_mem_mb;
        n.exclusive_owner = self.exclusive_owner.map(JobId::new);
        n.last_registration = self.last_registration;
        n.arch = self.arch;
        n.os = self.os;
        n.last_busy = self.last_busy;
    }
}

fn read_node(r: &mut Reader<'_>) -> Result<(String, NodeRuntime), DecodeError> {
    let name = r.string("node name")?;
    let at = r.pos;
    let code = r.u8("node state")?;
    let base = node_base_from(code).ok_or(DecodeError::Unknown {
        offset: at,
        what: "node state",
        value: u32::from(code),
    })?;
    let at = r.pos;
    let mask = r.u32("node flags")?;
    let flags = node_flags_from(mask).ok_or(DecodeError::Unknown {
        offset: at,
        what: "node flags",
        value: mask,
    })?;
    let mut node = NodeRuntime {
        state: NodeState { base, flags },
        reason: r.opt_string("node reason")?,
        reason_uid: r.u32("reason uid")?,
        reason_time: r.i64("reason time")?,
        alloc_cpus: r.u32("allocated cpus")?,
        alloc_mem_mb: r.u64("allocated memory")?,
        exclusive_owner: r.opt_u32("exclusive owner")?,
        last_registration: r.i64("last registration")?,
        arch: r.string("arch")?,
        os: r.string("os")?,
        last_busy: 0,
    };
    // Absent from records written before it was kept.
    node.last_busy = if r.left() == 0 {
        node.last_registration
    } else {
        r.i64("last busy time")?
    };
    Ok((name, node))
}

/// One job, and how many allocation slices named unconfigured nodes. Its
/// spec is shared with an equal one `specs` remembers, as at submission.
fn read_job(
    r: &mut Reader<'_>,
    node_map: &[Option<usize>],
    part_index: &std::collections::HashMap<String, usize>,
    specs: &mut SpecCache,
) -> Result<(Job, usize), DecodeError> {
    let id = r.u32("job id")?;
    let uid = r.u32("uid")?;
    let gid = r.u32("gid")?;
    let name = r.string("job name")?;
    let partition_name = r.string("partition")?;
    let shape = read_shape(r)?;
    let at = r.pos;
    let code = r.u8("job state")?;
    let state = job_state_from(code).ok_or(DecodeError::Unknown {
        offset: at,
        what: "job state",
        value: u32::from(code),
    })?;
    let at = r.pos;
    let mask = r.u32("job flags")?;
    let flags = job_flags_from(mask).ok_or(DecodeError::Unknown {
        offset: at,
        what: "job flags",
        value: mask,
    })?;
    let at = r.pos;
    let reason_text = r.string("reason")?;
    let reason: PendingReason = reason_text.parse().map_err(|_| DecodeError::Unknown {
        offset: at,
        what: "job reason",
        value: 0,
    })?;
    let reason_detail = r.string("reason detail")?;
    let base_priority = r.u32("priority")?;
    let nice = r.i32("nice")?;
    let hold = r.hold()?;
    let requeue = r.bool("requeue")?;
    let restart_count = r.u32("restart count")?;
    let launch_failures = r.u32("launch failures")?;
    let comment = r.string("comment")?;
    let submit_time = r.i64("submit time")?;
    let eligible_time = r.i64("eligible time")?;
    let start_time = r.i64("start time")?;
    let end_time = r.i64("end time")?;
    let last_sched_eval = r.i64("last evaluation")?;
    let run_limit = r.opt_limit("run limit")?;
    let exit_status = r.u32("exit status")?;
    let exit_signal = r.u32("exit signal")?;
    let (alloc, dropped_a) = r.allocs(node_map)?;
    let exclusive_alloc = r.bool("exclusive allocation")?;
    let (last_alloc, dropped_b) = r.allocs(node_map)?;
    let (spec, files) = read_spec(r)?;
    let job = Job {
        id: JobId::new(id),
        uid,
        gid,
        spec: SharedSpec::new(specs.share(spec), files),
        name,
        partition: super::job::first_partition(&partition_name, part_index),
        partition_name,
        shape,
        status: JobStatus { state, flags },
        reason,
        reason_detail,
        base_priority,
        nice,
        hold,
        requeue,
        restart_count,
        launch_failures,
        comment,
        submit_time,
        eligible_time,
        start_time,
        end_time,
        last_sched_eval,
        run_limit,
        exit_status,
        exit_signal,
        alloc: alloc.into_boxed_slice(),
        exclusive_alloc,
        last_alloc: last_alloc.into_boxed_slice(),
        // From a CPUS record that may follow.
        cpu_ids: Box::default(),
        last_cpu_ids: Box::default(),
        // From a DEPEND record that may follow.
        dependency: None,
        // From an OPTIONS record that may follow.
        signal_sent: false,
        array: None,
        // From a SUSPEND record that may follow.
        suspend: None,
        // From a RESIZE record that may follow.
        resize: None,
    };
    Ok((job, dropped_a + dropped_b))
}

fn read_shape(r: &mut Reader<'_>) -> Result<JobShape, DecodeError> {
    let min_nodes = r.u32("min nodes")?;
    let max_nodes = r.opt_u32("max nodes")?;
    let ntasks = r.u32("ntasks")?;
    let ntasks_given = r.bool("ntasks given")?;
    let ntasks_per_node = r.opt_u32("ntasks per node")?;
    let cpus_per_task = r.u32("cpus per task")?;
    let at = r.pos;
    let mem = match r.u8("memory kind")? {
        0 => None,
        1 => Some(MemReq::PerNode(r.u64("memory")?)),
        2 => Some(MemReq::PerCpu(r.u64("memory")?)),
        v => {
            return Err(DecodeError::Unknown {
                offset: at,
                what: "memory kind",
                value: u32::from(v),
            })
        }
    };
    let exclusive = r.bool("exclusive")?;
    let overcommit = r.bool("overcommit")?;
    let time_limit = r.opt_limit("time limit")?;
    let begin_time = if r.bool("begin time present")? {
        Some(r.i64("begin time")?)
    } else {
        None
    };
    Ok(JobShape {
        min_nodes,
        max_nodes,
        ntasks,
        ntasks_given,
        ntasks_per_node,
        cpus_per_task,
        mem,
        exclusive,
        overcommit,
        time_limit,
        begin_time,
    })
}

fn read_spec(r: &mut Reader<'_>) -> Result<(JobSpec, ScriptRef), DecodeError> {
    let user_name = r.boxed("user name")?;
    let submit_host = r.boxed("submit host")?;
    let submit_sid = r.u32("submit sid")?;
    let submit_line = r.boxed("submit line")?;
    let n = r.u32("argv count")?;
    // Each entry takes at least its 4-byte length: never reserve more
    // than the record can hold.
    let mut argv = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(r.left() / 4));
    for _ in 0..n {
        argv.push(r.boxed("argv")?);
    }
    let mut spec = JobSpec {
        user_name,
        submit_host,
        submit_sid,
        submit_line,
        argv: argv.into_boxed_slice(),
        work_dir: r.boxed("work dir")?,
        command_path: r.boxed("command path")?,
        stdin_path: r.boxed("stdin path")?,
        stdout_path: r.boxed("stdout path")?,
        stderr_path: r.boxed("stderr path")?,
        open_mode: r.i32("open mode")?,
        account: r.boxed("account")?,
        qos: r.boxed("qos")?,
        reservation: r.boxed("reservation")?,
        required_nodes: r.boxed("required nodes")?,
        excluded_nodes: r.boxed("excluded nodes")?,
        constraint: r.boxed("constraint")?,
        sharing: r.i32("sharing")?,
        contiguous: r.bool("contiguous")?,
        cpus_per_task: r.opt_u32("cpus per task")?,
        ntasks_per_node: r.opt_u32("ntasks per node")?,
        min_cpus_per_node: r.opt_u32("min cpus per node")?,
        mail_type: r.boxed("mail type")?,
        mail_user: r.boxed("mail user")?,
        gres: Box::default(),
        wckey: Box::default(),
        shown: None,
        extras: None,
    };
    let files = ScriptRef {
        segment: r.u32("script segment")?,
        offset: r.u64("script offset")?,
        script_len: r.u32("script length")?,
        env_len: r.u32("environment length")?,
        crc: r.u32("script checksum")?,
    };
    // The record's last fields; absent from files written before jobs
    // kept their --gres (and then their --wckey).
    if r.left() > 0 {
        spec.gres = r.boxed("gres")?;
    }
    if r.left() > 0 {
        spec.wckey = r.boxed("wckey")?;
    }
    // Absent from files written before jobs kept them.
    if r.left() > 0 {
        let flags = r.u8("spec flags")?;
        let tri = |bits: u8| match bits & 3 {
            0 => None,
            1 => Some(true),
            _ => Some(false),
        };
        let mut shown = super::job::ShownOptions {
            kill_on_invalid_dep: tri(flags),
            reboot: flags & 4 != 0,
            spread_job: flags & 8 != 0,
            gres_enforce_binding: tri(flags >> 4),
            no_kill: flags & 64 != 0,
            priority_set: flags & 128 != 0,
            sockets_per_node: r.opt_u32("sockets per node")?,
            cores_per_socket: r.opt_u32("cores per socket")?,
            threads_per_core: r.opt_u32("threads per core")?,
            ntasks_per_socket: r.opt_u32("ntasks per socket")?,
            ntasks_per_core: r.opt_u32("ntasks per core")?,
            cpu_freq: r.boxed("cpu freq")?,
            ..super::job::ShownOptions::default()
        };
        // Absent from records written before they were kept.
        if r.left() > 0 {
            shown.delay_boot_minutes = r.opt_u32("delay boot")?;
            shown.power = r.boxed("power")?;
        }
        if r.left() > 0 {
            shown.switches = r.opt_u32("switches")?;
            shown.switch_wait_secs = r.u32("switch wait")?;
            shown.container = r.boxed("container")?;
            shown.cluster_features = r.boxed("cluster features")?;
        }
        if r.left() > 0 {
            shown.admin_comment = if r.bool("admin comment present")? {
                Some(r.boxed("admin comment")?)
            } else {
                None
            };
            shown.num_cpus = r.opt_u32("cpu count")?;
            shown.max_cpus = r.opt_u32("max cpu count")?;
            shown.min_cpus_per_node = r.opt_u32("kept min cpus per node")?;
        }
        if r.left() > 0 {
            shown.prefer = r.boxed("prefer")?;
            shown.mcs_label = r.boxed("mcs label")?;
            shown.burst_buffer = r.boxed("burst buffer")?;
            shown.batch_features = r.boxed("batch features")?;
        }
        if r.left() > 0 {
            shown.tres_bind = r.boxed("tres bind")?;
            shown.profile = r.boxed("profile")?;
        }
        if r.left() > 0 {
            shown.ntasks_set = r.bool("ntasks set")?;
        }
        spec.shown = (shown != super::job::ShownOptions::default()).then(|| Box::new(shown));
    }
    Ok((spec, files))
}

// ------------------------------------------------------------ enum tables

/// Job base states by code (Slurm's numeric order, as in the journal).
const JOB_STATES: [JobState; 12] = JobState::ALL;

fn job_state_code(s: JobState) -> u8 {
    JOB_STATES
        .iter()
        .position(|x| *x == s)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(u8::MAX)
}

fn job_state_from(code: u8) -> Option<JobState> {
    JOB_STATES.get(usize::from(code)).copied()
}

/// Job flags by bit number. Append only.
const JOB_FLAGS: [JobFlag; 12] = [
    JobFlag::Completing,
    JobFlag::Configuring,
    JobFlag::Requeued,
    JobFlag::RequeueHold,
    JobFlag::SpecialExit,
    JobFlag::Resizing,
    JobFlag::StageOut,
    JobFlag::Stopped,
    JobFlag::Signaling,
    JobFlag::Revoked,
    JobFlag::ResvDelHold,
    JobFlag::LaunchFailed,
];

/// The bit of `f`; exhaustive, so a new flag must be given a bit.
fn job_flag_bit(f: JobFlag) -> u32 {
    let n = match f {
        JobFlag::Completing => 0,
        JobFlag::Configuring => 1,
        JobFlag::Requeued => 2,
        JobFlag::RequeueHold => 3,
        JobFlag::SpecialExit => 4,
        JobFlag::Resizing => 5,
        JobFlag::StageOut => 6,
        JobFlag::Stopped => 7,
        JobFlag::Signaling => 8,
        JobFlag::Revoked => 9,
        JobFlag::ResvDelHold => 10,
        JobFlag::LaunchFailed => 11,
    };
    1 << n
}

fn job_flag_mask(flags: JobFlags) -> u32 {
    flags.iter().fold(0, |m, f| m | job_flag_bit(f))
}

fn job_flags_from(mask: u32) -> Option<JobFlags> {
    flags_from(
        mask,
        &JOB_FLAGS,
        job_flag_bit,
        JobFlags::EMPTY,
        JobFlags::with,
    )
}

/// The set of `all`'s flags whose bits are in `mask`; `None` when `mask`
/// has a bit that no flag uses.
fn flags_from<F: Copy, S>(
    mask: u32,
    all: &[F],
    bit: fn(F) -> u32,
    empty: S,
    with: fn(S, F) -> S,
) -> Option<S> {
    let mut flags = empty;
    let mut seen = 0u32;
    for &f in all {
        if mask & bit(f) != 0 {
            flags = with(flags, f);
            seen |= bit(f);
        }
    }
    (seen == mask).then_some(flags)
}

fn node_base_code(b: NodeBaseState) -> u8 {
    match b {
        NodeBaseState::Unknown => 0,
        NodeBaseState::Down => 1,
        NodeBaseState::Idle => 2,
        NodeBaseState::Allocated => 3,
        NodeBaseState::Mixed => 4,
        NodeBaseState::Future => 5,
        NodeBaseState::Error => 6,
    }
}

fn node_base_from(code: u8) -> Option<NodeBaseState> {
    Some(match code {
        0 => NodeBaseState::Unknown,
        1 => NodeBaseState::Down,
        2 => NodeBaseState::Idle,
        3 => NodeBaseState::Allocated,
        4 => NodeBaseState::Mixed,
        5 => NodeBaseState::Future,
        6 => NodeBaseState::Error,
        _ => return None,
    })
}

/// Node flags by bit number. Append only.
const NODE_FLAGS: [NodeFlag; 17] = [
    NodeFlag::Cloud,
    NodeFlag::Completing,
    NodeFlag::Drain,
    NodeFlag::DynamicFuture,
    NodeFlag::DynamicNorm,
    NodeFlag::InvalidReg,
    NodeFlag::Fail,
    NodeFlag::Maint,
    NodeFlag::PowerDown,
    NodeFlag::PoweredDown,
    NodeFlag::RebootRequested,
    NodeFlag::RebootIssued,
    NodeFlag::Reserved,
    NodeFlag::NotResponding,
    NodeFlag::Planned,
    NodeFlag::PoweringUp,
    NodeFlag::PoweringDown,
];

/// The bit of `f`; exhaustive, so a new flag must be given a bit.
fn node_flag_bit(f: NodeFlag) -> u32 {
    let n = match f {
        NodeFlag::Cloud => 0,
        NodeFlag::Completing => 1,
        NodeFlag::Drain => 2,
        NodeFlag::DynamicFuture => 3,
        NodeFlag::DynamicNorm => 4,
        NodeFlag::InvalidReg => 5,
        NodeFlag::Fail => 6,
        NodeFlag::Maint => 7,
        NodeFlag::PowerDown => 8,
        NodeFlag::PoweredDown => 9,
        NodeFlag::RebootRequested => 10,
        NodeFlag::RebootIssued => 11,
        NodeFlag::Reserved => 12,
        NodeFlag::NotResponding => 13,
        NodeFlag::Planned => 14,
        NodeFlag::PoweringUp => 15,
        NodeFlag::PoweringDown => 16,
    };
    1 << n
}

fn node_flag_mask(flags: NodeFlags) -> u32 {
    flags.iter().fold(0, |m, f| m | node_flag_bit(f))
}

fn node_flags_from(mask: u32) -> Option<NodeFlags> {
    flags_from(
        mask,
        &NODE_FLAGS,
        node_flag_bit,
        NodeFlags::EMPTY,
        NodeFlags::with,
    )
}

// ---------------------------------------------------------- field coding

impl<'a> Writer<'a> {
    /// Starts a record in `buf`: room for its length and checksum.
    fn new(buf: &'a mut Vec<u8>) -> Writer<'a> {
        buf.clear();
        buf.extend_from_slice(&[0u8; RECORD_HEAD]);
        Writer(buf)
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.bool(true);
                self.str(s);
            }
            None => self.bool(false),
        }
    }
    /// 0: none, 1: minutes, 2: infinite.
    fn opt_limit(&mut self, l: Option<TimeLimit>) {
        match l {
            None => self.u8(0),
            Some(TimeLimit::Minutes(m)) => {
                self.u8(1);
                self.u32(m);
            }
            Some(TimeLimit::Infinite) => self.u8(2),
        }
    }
    /// Slices name the node by its ordinal among the NODE records, which
    /// is its index in the controller that wrote them.
    fn allocs(&mut self, allocs: &[NodeAlloc]) {
        self.len(allocs.len());
        for a in allocs {
            let NodeAlloc {
                node_index,
                cpus,
                mem_mb,
                tasks,
            } = a;
            self.u32(u32::try_from(*node_index).unwrap_or(u32::MAX));
            self.u32(*cpus);
            self.u64(*mem_mb);
            self.u32(*tasks);
        }
    }
}

impl Reader<'_> {
    fn boxed(&mut self, what: &'static str) -> Result<Box<str>, DecodeError> {
        self.text(what).map(Box::from)
    }
    fn opt_string(&mut self, what: &'static str) -> Result<Option<String>, DecodeError> {
        if self.bool(what)? {
            Ok(Some(self.string(what)?))
        } else {
            Ok(None)
        }
    }
    fn opt_limit(&mut self, what: &'static str) -> Result<Option<TimeLimit>, DecodeError> {
        let at = self.pos;
        match self.u8(what)? {
            0 => Ok(None),
            1 => Ok(Some(TimeLimit::Minutes(self.u32(what)?))),
            2 => Ok(Some(TimeLimit::Infinite)),
            v => Err(DecodeError::Unknown {
                offset: at,
                what,
                value: u32::from(v),
            }),
        }
    }
    /// Slices, with node ordinals mapped through `node_map`; slices on
    /// nodes no longer configured are dropped and counted.
    fn allocs(
        &mut self,
        node_map: &[Option<usize>],
    ) -> Result<(Vec<NodeAlloc>, usize), DecodeError> {
        let n = self.u32("allocation count")?;
        let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(self.left() / 20));
        let mut dropped = 0;
        for _ in 0..n {
            let at = self.pos;
            let ordinal = self.u32("allocation node")?;
            let cpus = self.u32("allocation cpus")?;
            let mem_mb = self.u64("allocation memory")?;
            let tasks = self.u32("allocation tasks")?;
            match node_map.get(usize::try_from(ordinal).unwrap_or(usize::MAX)) {
                Some(Some(node_index)) => out.push(NodeAlloc {
                    node_index: *node_index,
                    cpus,
                    mem_mb,
                    tasks,
                }),
                Some(None) => dropped += 1,
                None => {
                    return Err(DecodeError::Unknown {
                        offset: at,
                        what: "allocation node ordinal",
                        value: ordinal,
                    })
                }
            }
        }
        Ok((out, dropped))
    }
}

#[cfg(test)]
pub(crate) mod tests;

/// The trailing texts of a JOB record (--gres, --wckey), which files
/// written before them lack.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod spec_layout {
    use super::*;

    fn spec() -> SharedSpec {
        let spec = JobSpec {
            user_name: "alice".into(),
            gres: "gpu:1".into(),
            wckey: "*ops".into(),
            ..JobSpec::default()
        };
        SharedSpec::new(Arc::new(spec), ScriptRef::default())
    }

    fn read(bytes: &[u8]) -> JobSpec {
        let mut r = Reader::new(bytes);
        let (spec, _) = read_spec(&mut r).unwrap();
        r.done().unwrap();
        spec
    }

    #[test]
    fn gres_and_wckey_round_trip_and_may_be_absent() {
        let mut buf = Vec::new();
        spec_fields(&mut Writer(&mut buf), &spec());
        assert_eq!(read(&buf), *spec());
        // Without whether -n came with --ntasks-per-node (a byte).
        buf.truncate(buf.len() - 1);
        assert_eq!(read(&buf), *spec());
        // Without TresBind= and --profile (two empty texts).
        buf.truncate(buf.len() - 8);
        assert_eq!(read(&buf), *spec());
        // Without --prefer, --mcs-label, --bb and --batch (four empty texts).
        buf.truncate(buf.len() - 16);
        assert_eq!(read(&buf), *spec());
        // Without what scontrol update sets (four presence bytes).
        buf.truncate(buf.len() - 4);
        assert_eq!(read(&buf), *spec());
        // Without --switches (a presence byte, a count, two empty texts),
        // --delay-boot and --power (a presence byte, an empty text), then
        // without the flags (one byte), the five counts (a presence byte
        // each) and --cpu-freq (an empty text).
        buf.truncate(buf.len() - 13);
        assert_eq!(read(&buf), *spec());
        buf.truncate(buf.len() - 5);
        assert_eq!(read(&buf), *spec());
        buf.truncate(buf.len() - 10);
        assert_eq!(read(&buf), *spec());
        // Without --wckey (files from before it was kept).
        let text_len = |s: &str| 4 + s.len();
        let no_wckey = buf.len() - text_len("*ops");
        let old = read(&buf[..no_wckey]);
        assert_eq!((&*old.gres, &*old.wckey), ("gpu:1", ""));
        // Without either.
        let neither = read(&buf[..no_wckey - text_len("gpu:1")]);
        assert_eq!((&*neither.gres, &*neither.wckey), ("", ""));
        assert_eq!(&*neither.user_name, "alice");
    }

    #[test]
    fn shown_options_round_trip() {
        for (kill, reboot) in [(None, true), (Some(true), false), (Some(false), true)] {
            let spec = JobSpec {
                shown: Some(Box::new(super::super::job::ShownOptions {
                    sockets_per_node: Some(1),
                    cores_per_socket: Some(2),
                    threads_per_core: None,
                    ntasks_per_socket: Some(3),
                    ntasks_per_core: Some(4),
                    kill_on_invalid_dep: kill,
                    reboot,
                    cpu_freq: "low-high:performance".into(),
                    spread_job: reboot,
                    gres_enforce_binding: kill.map(|k| !k),
                    delay_boot_minutes: Some(90),
                    power: "LEVEL".into(),
                    switches: reboot.then_some(2),
                    switch_wait_secs: 120,
                    container: "/srv/bundle".into(),
                    cluster_features: "fast".into(),
                    admin_comment: kill.map(|k| if k { "checked" } else { "" }.into()),
                    num_cpus: reboot.then_some(3),
                    max_cpus: kill.and(Some(8)),
                    min_cpus_per_node: kill.and(Some(2)),
                    prefer: if reboot { "fa&fb" } else { "" }.into(),
                    mcs_label: "lab".into(),
                    burst_buffer: if reboot { "" } else { "bb" }.into(),
                    batch_features: "fa".into(),
                    tres_bind: if reboot { "gpu:closest" } else { "" }.into(),
                    profile: if reboot { "" } else { "Energy,Task" }.into(),
                    no_kill: !reboot,
                    priority_set: reboot,
                    ntasks_set: !reboot,
                })),
                ..JobSpec::default()
            };
            let mut buf = Vec::new();
            spec_fields(
                &mut Writer(&mut buf),
                &SharedSpec::new(Arc::new(spec.clone()), ScriptRef::default()),
            );
            assert_eq!(read(&buf), spec);
        }
    }
}
