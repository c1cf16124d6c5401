//! The GetJobs answer: which jobs a request selects, and the reply encoded
//! straight from the snapshot.
//!
//! A `squeue` over 10,000 jobs used to cost the controller more than the
//! command itself: a `JobInfo` of ninety-odd fields built per job (most of
//! them left empty, but every one allocated, moved and dropped), then
//! walked twice more by prost to size and encode it. The fields a report
//! reads are few and simple, so for those ([`DIRECT`]) each record is
//! written as protobuf directly from the job, straight into the buffer the
//! transport sends; any other field falls back to building the `JobInfo`
//! ([`convert::job_info_fields`]) and encoding it with prost. The bytes are
//! the same either way (the tests compare them on every field selection),
//! so clients cannot tell which path answered.
//!
//! The generated service can only answer with a `GetJobsReply` value, so
//! the encoded reply is served by [`JobsRoute`], which wraps the generated
//! `SlurmControllerServer` and takes over the GetJobs and StreamJobs paths
//! (same authentication, same errors, same messages on the wire).
//!
//! StreamJobs sends the same answer in parts of [`PART_JOBS`] jobs. With one
//! message, the client could not read a job before the controller had
//! encoded the last one, so at 10,000 jobs the two worked one after the
//! other; in parts, the client decodes and renders the first jobs on one
//! core while the controller encodes the next on the other. Each part is
//! encoded only when the transport asks for it, and the task serving the
//! call gives way after every part ([`Parts`]), so the connection's task
//! writes each part to the socket as soon as it is ready.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use prost::bytes::{Buf, BufMut};
use prost::Message;
use slurm_common::auth::unix_now;
use slurm_proto::v1;
use slurm_proto::ErrorCode;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::tokio_stream::Stream;
use tonic::codegen::{http, Body as HttpBody, BoxFuture, Service as TowerService, StdError};
use tonic::server::NamedService;
use tonic::{Request, Response, Status};

use super::convert::{self, memory_of, Derived, JobFields};
use super::{trim_after_reply, Service};
use crate::core::{Job, Snapshot};

/// The gRPC paths this module answers.
pub const GET_JOBS_PATH: &str = "/slurm.v1.SlurmController/GetJobs";
pub const STREAM_JOBS_PATH: &str = "/slurm.v1.SlurmController/StreamJobs";

/// Jobs per StreamJobs message: about 25 kB with squeue's fields, so the
/// client has the first jobs once a fortieth of a 10,000-job answer is
/// encoded, while a message still carries enough to make its framing
/// negligible.
pub const PART_JOBS: usize = 256;

/// The fields [`encode_job`] writes itself: those `squeue` reads. Some are
/// never filled in by [`convert::job_info_fields`] (group name,
/// reservation, ...) and so are never written here either.
pub const DIRECT: JobFields = JobFields::of(&[
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, // ids, names
    20, 21, 22, 23, 24, 25, 26, 27, 28, // state, reason, priority, account
    40, 41, 43, 46, 47, // times
    60, 63, 64, 65, 66, 67, 68, 69, // partition, nodes, reservation, wckey
    80, 82, 86, 87, 88, 89, 93, 94, // sizes, memory, gres, licenses
    100, 101, 102, 110, 111, 115, // features, sharing, command, comment
]);

/// What a caller is not shown unless it asks (squeue and scontrol show
/// job without `-a`): jobs whose partitions are all hidden from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Hiding {
    /// Every job (root, SlurmUser, or asked for).
    #[default]
    Nothing,
    /// Jobs of `Hidden=YES` partitions, and of partitions whose
    /// AllowGroups has none of these groups (the caller's).
    Partitions { groups: Vec<String> },
}

impl Hiding {
    /// Whether partition `p` is hidden.
    fn hides(&self, p: &crate::core::PartRec) -> bool {
        match self {
            Hiding::Nothing => false,
            Hiding::Partitions { groups } => {
                p.conf.hidden
                    || p.conf
                        .allow_groups
                        .as_ref()
                        .is_some_and(|allowed| !slurm_common::users::allows_groups(allowed, groups))
            }
        }
    }
}

/// The jobs `filter` selects, in id order (named jobs in the order named),
/// less those `hiding` hides.
pub fn select<'a>(snap: &'a Snapshot, f: &v1::JobFilter, hiding: &Hiding) -> Vec<&'a Arc<Job>> {
    let named = named_records(snap, f);
    let node_filter: Vec<usize> = if f.nodelist.is_empty() {
        Vec::new()
    } else {
        let names = slurm_common::hostlist::expand(&f.nodelist).unwrap_or_default();
        snap.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| names.contains(&n.name))
            .map(|(i, _)| i)
            .collect()
    };
    let hidden: Vec<&str> = snap
        .partitions
        .iter()
        .filter(|p| hiding.hides(p))
        .map(|p| p.name())
        .collect();
    let visible = |job: &Job| {
        hidden.is_empty()
            || !crate::core::job::partition_names(&job.partition_name)
                .all(|name| hidden.contains(&name))
    };
    let wanted = |job: &Job| visible(job) && crate::core::filter::selects(job, f, &node_filter);
    if names_jobs(f) {
        // Named ids that do not exist select nothing (an error for the
        // caller), never the whole table.
        named.into_iter().filter(|j| wanted(j)).collect()
    } else {
        snap.jobs.values().filter(|j| wanted(j)).collect()
    }
}

/// The records `-j` names, in the order named: a job id, and for an
/// array's id every record of the array after it; for `ID_TASKS` the
/// records of those tasks, and the meta record while one of them has not
/// started.
fn named_records<'a>(snap: &'a Snapshot, f: &v1::JobFilter) -> Vec<&'a Arc<Job>> {
    // An id with a record of its own names that record; an array's id
    // also names every record of the array, even once the one that bore
    // the id (the task that kept it) has ended and been purged. The
    // arrays' records are gathered in one pass over the table, however
    // many ids were named.
    let mut arrays: HashMap<u32, Vec<&'a Arc<Job>>> = HashMap::new();
    for id in &f.job_ids {
        let array = match snap.jobs.get(id) {
            Some(job) => job.array.as_ref().is_some_and(|a| a.array_job_id == *id),
            None => true,
        };
        if array {
            arrays.insert(*id, Vec::new());
        }
    }
    for sel in &f.array_tasks {
        arrays.insert(sel.array_job_id, Vec::new());
    }
    if !arrays.is_empty() {
        for j in snap.jobs.values() {
            if let Some(members) = j
                .array
                .as_deref()
                .and_then(|a| arrays.get_mut(&a.array_job_id))
            {
                members.push(j);
            }
        }
    }
    let mut seen: HashSet<u32> = HashSet::new();
    let mut out: Vec<&Arc<Job>> = Vec::new();
    let mut push = |j: &'a Arc<Job>| {
        if seen.insert(j.id.get()) {
            out.push(j);
        }
    };
    for id in &f.job_ids {
        if let Some(job) = snap.jobs.get(id) {
            push(job);
        }
        for j in arrays.get(id).into_iter().flatten() {
            push(j);
        }
    }
    for sel in &f.array_tasks {
        let tasks = if sel.task_spec.is_empty() {
            None
        } else {
            match crate::core::array::parse_ranges(&sel.task_spec) {
                Ok(ranges) => Some(ranges),
                Err(_) => continue,
            }
        };
        for j in arrays.get(&sel.array_job_id).into_iter().flatten() {
            let Some(a) = j.array.as_deref() else {
                continue;
            };
            let hit = match (&tasks, a.task) {
                (None, _) => true,
                (Some(ts), Some(t)) => ts.contains(t),
                (Some(ts), None) => a.pending.iter().any(|&t| ts.contains(t)),
            };
            if hit {
                push(j);
            }
        }
    }
    out
}

/// Whether the request named jobs (`-j`): then finding none is an error.
pub fn names_jobs(f: &v1::JobFilter) -> bool {
    !f.job_ids.is_empty() || !f.array_tasks.is_empty()
}

/// What GetJobs answers, checked but not yet encoded: the reply is written
/// straight into the transport's buffer ([`JobsAnswer::encode`]).
#[derive(Debug, Clone)]
pub enum JobsAnswer {
    /// Nothing changed since the time the caller gave.
    Unchanged { last_update: i64 },
    /// The jobs `filter` selects in `snap`, with the fields of `fields`.
    Jobs {
        snap: Arc<Snapshot>,
        filter: Box<v1::JobFilter>,
        /// Jobs left out.
        hiding: Hiding,
        fields: JobFields,
        now: i64,
    },
    /// Jobs `from..to` of a selection, one StreamJobs message.
    Part {
        snap: Arc<Snapshot>,
        jobs: Arc<[Arc<Job>]>,
        from: usize,
        to: usize,
        fields: JobFields,
        now: i64,
    },
}

/// Checks `req` against `snap` at `now`: the errors GetJobs answers with
/// are found here, before anything is sent.
pub fn prepare(
    snap: Arc<Snapshot>,
    req: &v1::GetJobsRequest,
    hiding: Hiding,
    now: i64,
) -> Result<JobsAnswer, Status> {
    if req.changed_since > 0 && snap.last_update <= req.changed_since {
        return Ok(JobsAnswer::Unchanged {
            last_update: snap.last_update,
        });
    }
    let filter = Box::new(req.filter.clone().unwrap_or_default());
    // Named jobs are few: finding them twice costs nothing.
    if names_jobs(&filter) && select(&snap, &filter, &hiding).is_empty() {
        return Err(ErrorCode::InvalidJobId.to_status(""));
    }
    Ok(JobsAnswer::Jobs {
        snap,
        filter,
        hiding,
        fields: JobFields::from_tags(&req.fields),
        now,
    })
}

/// Where a reply is written: a `Vec` (tests, [`answer`]) or tonic's
/// buffer.
pub trait ReplySink: BufMut {
    /// Makes room for at least `additional` more bytes.
    fn reserve_more(&mut self, additional: usize);
}

impl ReplySink for Vec<u8> {
    fn reserve_more(&mut self, additional: usize) {
        self.reserve(additional);
    }
}

impl ReplySink for EncodeBuf<'_> {
    fn reserve_more(&mut self, additional: usize) {
        self.reserve(additional);
    }
}

/// Bytes a record usually takes with squeue's fields; a first guess at the
/// reply's size, so the buffer seldom grows.
const RECORD_GUESS: usize = 96;

impl JobsAnswer {
    /// Writes the `GetJobsReply` message.
    pub fn encode(&self, out: &mut impl ReplySink) {
        match self {
            JobsAnswer::Unchanged { last_update } => {
                // last_update = 2, unchanged = 3.
                put_u64(out, 2, *last_update as u64);
                put_key(out, 3, VARINT);
                put_varint(out, 1);
            }
            JobsAnswer::Jobs {
                snap,
                filter,
                hiding,
                fields,
                now,
            } => {
                let jobs = select(snap, filter, hiding);
                trim_after_reply(jobs.len());
                encode_jobs(out, snap, &jobs, *now, *fields);
            }
            JobsAnswer::Part {
                snap,
                jobs,
                from,
                to,
                fields,
                now,
            } => {
                let part = jobs.get(*from..*to).unwrap_or_default();
                encode_jobs(out, snap, part, *now, *fields);
            }
        }
    }
}

/// A `GetJobsReply` holding `jobs`.
fn encode_jobs(
    out: &mut impl ReplySink,
    snap: &Snapshot,
    jobs: &[impl AsRef<Job>],
    now: i64,
    fields: JobFields,
) {
    out.reserve_more(jobs.len().saturating_mul(RECORD_GUESS));
    let mut body = Vec::with_capacity(256);
    for job in jobs {
        encode_job(out, &mut body, snap, job.as_ref(), now, fields);
    }
    // last_update = 2 (unchanged = 3 is false, hence absent).
    put_u64(out, 2, snap.last_update as u64);
}

/// The StreamJobs answer for `req`: what [`prepare`] checks, then the
/// selected jobs in parts of [`PART_JOBS`] (one part when there are none,
/// so the caller still learns `last_update`).
pub fn prepare_parts(
    snap: Arc<Snapshot>,
    req: &v1::GetJobsRequest,
    hiding: Hiding,
    now: i64,
) -> Result<Parts, Status> {
    let items = match prepare(snap, req, hiding, now)? {
        JobsAnswer::Jobs {
            snap,
            filter,
            hiding,
            fields,
            now,
        } => {
            let jobs: Arc<[Arc<Job>]> = select(&snap, &filter, &hiding)
                .into_iter()
                .cloned()
                .collect();
            trim_after_reply(jobs.len());
            PartItems::Jobs {
                snap,
                jobs,
                fields,
                now,
            }
        }
        other => PartItems::One(Some(other)),
    };
    Ok(Parts {
        items,
        next: 0,
        done: false,
        pauses: 0,
    })
}

/// `reply` cut into the messages StreamJobs sends it in: [`PART_JOBS`]
/// jobs each, every one with the reply's `last_update`.
pub fn split_reply(reply: v1::GetJobsReply) -> Vec<v1::GetJobsReply> {
    if reply.unchanged || reply.jobs.len() <= PART_JOBS {
        return vec![reply];
    }
    let last_update = reply.last_update;
    let mut jobs = reply.jobs.into_iter().peekable();
    let mut parts = Vec::new();
    while jobs.peek().is_some() {
        parts.push(v1::GetJobsReply {
            jobs: jobs.by_ref().take(PART_JOBS).collect(),
            last_update,
            unchanged: false,
        });
    }
    parts
}

/// The messages of a StreamJobs answer, each made when asked for.
///
/// After handing out a part it answers `Pending` twice, each time leaving
/// its waker with the scheduler (tokio's `yield_now`), which wakes it once
/// the other ready tasks have run: the first makes tonic pass the encoded
/// part on, the second makes the task serving the call give way, so the
/// connection's task can write the part to the socket before the next one
/// is encoded. Without that the whole answer would be encoded before its
/// first byte left.
#[derive(Debug)]
pub struct Parts {
    items: PartItems,
    /// The first job of the next part.
    next: usize,
    /// Every message has been handed out.
    done: bool,
    /// `Pending` answers still to give before the next part.
    pauses: u8,
}

#[derive(Debug)]
enum PartItems {
    /// A single message (unchanged), until taken.
    One(Option<JobsAnswer>),
    Jobs {
        snap: Arc<Snapshot>,
        jobs: Arc<[Arc<Job>]>,
        fields: JobFields,
        now: i64,
    },
}

impl Parts {
    /// Every message at once (tests; the generated service's value path).
    pub fn collect_all(mut self) -> Vec<JobsAnswer> {
        std::iter::from_fn(|| self.take()).collect()
    }

    fn take(&mut self) -> Option<JobsAnswer> {
        if self.done {
            return None;
        }
        match &mut self.items {
            PartItems::One(item) => {
                self.done = true;
                item.take()
            }
            PartItems::Jobs {
                snap,
                jobs,
                fields,
                now,
            } => {
                // An empty selection still gives one (empty) part.
                let from = self.next;
                let to = from.saturating_add(PART_JOBS).min(jobs.len());
                self.next = to;
                self.done = to >= jobs.len();
                Some(JobsAnswer::Part {
                    snap: Arc::clone(snap),
                    jobs: Arc::clone(jobs),
                    from,
                    to,
                    fields: *fields,
                    now: *now,
                })
            }
        }
    }
}

impl Stream for Parts {
    type Item = Result<JobsAnswer, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.pauses > 0 && !this.done {
            this.pauses -= 1;
            // Its first poll hands the waker to the scheduler, which wakes
            // this task only once the other ready tasks (the connection's)
            // have run.
            let mut pause = std::pin::pin!(tokio::task::yield_now());
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        let item = this.take();
        this.pauses = 2;
        Poll::Ready(item.map(Ok))
    }
}

/// The whole GetJobs answer for `req`, encoded, as of `snap` at `now`.
pub fn answer(
    snap: Arc<Snapshot>,
    req: &v1::GetJobsRequest,
    hiding: Hiding,
    now: i64,
) -> Result<Vec<u8>, Status> {
    let prepared = prepare(snap, req, hiding, now)?;
    let mut out = Vec::new();
    prepared.encode(&mut out);
    Ok(out)
}

/// Appends one `jobs` entry of the reply: the job's record with the
/// fields of `want`, as prost would encode [`convert::job_info_fields`].
/// `body` is scratch space, reused from one job to the next.
pub fn encode_job(
    out: &mut impl BufMut,
    body: &mut Vec<u8>,
    snap: &Snapshot,
    job: &Job,
    now: i64,
    want: JobFields,
) {
    body.clear();
    if want.is_subset_of(DIRECT) {
        encode_direct(body, snap, job, now, want);
    } else {
        // Cannot fail: a Vec grows as needed.
        let _ = convert::job_info_fields(snap, job, now, want).encode(body);
    }
    put_key(out, 1, LEN);
    put_varint(out, body.len() as u64);
    out.put_slice(body);
}

/// The fields of [`DIRECT`] in `want`, in field-number order, leaving out
/// zero values as protobuf does.
fn encode_direct(out: &mut Vec<u8>, snap: &Snapshot, job: &Job, now: i64, want: JobFields) {
    let d = &job.spec;
    put_u64(out, 1, job.id.get().into());
    if let Some(a) = job.array.as_deref() {
        if want.has(2) {
            put_present_u32(out, 2, a.array_job_id);
        }
        if let (true, Some(task)) = (want.has(3), a.task) {
            put_present_u32(out, 3, task);
        }
        if want.has(4) && a.is_meta() {
            put_str(out, 4, &a.pending_text());
        }
        if want.has(5) && a.is_meta() {
            put_u64(out, 5, a.throttle.into());
        }
    }
    if want.has(6) {
        put_str(out, 6, &job.name);
    }
    if want.has(7) {
        put_u64(out, 7, job.uid.into());
    }
    if want.has(8) {
        put_str(out, 8, &d.user_name);
    }
    if want.has(9) {
        put_u64(out, 9, job.gid.into());
    }
    if want.has(20) {
        put_i32(out, 20, v1::JobState::from(job.status.state) as i32);
    }
    if want.has(21) {
        // Packed, as proto3 repeated enums are.
        let flags = || {
            job.status
                .flags
                .iter()
                .map(|f| i64::from(v1::JobStateFlag::from(f) as i32) as u64)
        };
        let len: usize = flags().map(varint_len).sum();
        if len > 0 {
            put_key(out, 21, LEN);
            put_varint(out, len as u64);
            for v in flags() {
                put_varint(out, v);
            }
        }
    }
    if want.has(22) {
        put_str(out, 22, job.reason.as_str());
    }
    if want.has(23) {
        put_str(out, 23, &job.reason_detail);
    }
    if want.has(24) {
        if let Some(dep) = &job.dependency {
            put_str(out, 24, &dep.to_string());
        }
    }
    if want.has(25) {
        put_u64(out, 25, job.priority().into());
    }
    if want.has(26) {
        put_i32(out, 26, job.nice);
    }
    if want.has(27) {
        put_str(out, 27, &d.account);
    }
    if want.has(28) {
        put_str(out, 28, &d.qos);
    }
    let derived = Derived::of(snap, job, now);
    if want.has(40) {
        put_u64(out, 40, derived.run_time_secs);
    }
    if want.has(41) {
        // A TimeLimit message, always present; its oneof is always set,
        // so its one field is written even when zero.
        let limit = v1::TimeLimit::from(derived.limit);
        let (tag, value) = match limit.limit {
            Some(v1::time_limit::Limit::Minutes(m)) => (1, u64::from(m)),
            Some(v1::time_limit::Limit::Unlimited(u)) => (2, u64::from(u)),
            None => (0, 0),
        };
        put_key(out, 41, LEN);
        if tag == 0 {
            put_varint(out, 0);
        } else {
            put_varint(
                out,
                (varint_len(u64::from(tag << 3)) + varint_len(value)) as u64,
            );
            put_key(out, tag, VARINT);
            put_varint(out, value);
        }
    }
    if want.has(43) {
        put_i64(out, 43, job.submit_time);
    }
    if want.has(46) {
        put_i64(out, 46, derived.start_time);
    }
    if want.has(47) {
        put_i64(out, 47, derived.end_time);
    }
    if want.has(60) {
        put_str(out, 60, &job.partition_name);
    }
    if want.has(63) {
        put_str(out, 63, &d.required_nodes);
    }
    if want.has(64) {
        put_str(out, 64, &d.excluded_nodes);
    }
    if (want.has(65) || want.has(66)) && !derived.alloc.is_empty() {
        let names = derived.node_names(snap);
        if want.has(65) {
            put_str(
                out,
                65,
                &slurm_common::hostlist::compress(names.iter().copied()),
            );
        }
        if want.has(66) {
            put_str(out, 66, super::convert::batch_host_of(snap, job, &names));
        }
    }
    if want.has(67) {
        put_str(out, 67, super::convert::scheduled_nodes_of(snap, job));
    }
    if want.has(69) {
        put_str(out, 69, &d.wckey);
    }
    if want.has(80) {
        put_u64(out, 80, derived.shown_nodes.into());
    }
    if want.has(82) {
        put_u64(out, 82, derived.num_cpus.into());
    }
    if want.has(86) {
        put_u64(out, 86, job.min_cpus_per_node().into());
    }
    if want.has(87) {
        // A oneof: written when set, zero or not.
        match memory_of(job) {
            Some(v1::job_info::Memory::MemPerNodeMb(mb)) => {
                put_key(out, 87, VARINT);
                put_varint(out, mb);
            }
            Some(v1::job_info::Memory::MemPerCpuMb(mb)) => {
                put_key(out, 88, VARINT);
                put_varint(out, mb);
            }
            None => {}
        }
    }
    if want.has(89) {
        put_u64(out, 89, d.extras().tmp_disk_mb);
    }
    if want.has(93) && !d.gres.is_empty() {
        put_str(out, 93, &crate::core::gres::tres_per_node(&d.gres));
    }
    if want.has(94) && !d.extras().licenses.is_empty() {
        put_str(out, 94, &d.extras().licenses_shown());
    }
    if want.has(100) {
        put_str(out, 100, &d.constraint);
    }
    if want.has(101) {
        put_i32(out, 101, d.sharing);
    }
    if want.has(102) && d.contiguous {
        put_key(out, 102, VARINT);
        put_varint(out, 1);
    }
    if want.has(110) {
        put_str(out, 110, &d.command_path);
    }
    if want.has(111) {
        put_str(out, 111, &d.work_dir);
    }
    if want.has(115) {
        put_str(out, 115, &job.comment);
    }
}

const VARINT: u32 = 0;
const LEN: u32 = 2;

fn varint_len(v: u64) -> usize {
    // 7 bits per byte, at least one byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_varint(out: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

fn put_key(out: &mut impl BufMut, tag: u32, wire: u32) {
    put_varint(out, u64::from((tag << 3) | wire));
}

/// An unsigned integer field; zero is not sent.
fn put_u64(out: &mut impl BufMut, tag: u32, v: u64) {
    if v != 0 {
        put_key(out, tag, VARINT);
        put_varint(out, v);
    }
}

/// An `optional` unsigned field that is set: sent even when zero.
fn put_present_u32(out: &mut impl BufMut, tag: u32, v: u32) {
    put_key(out, tag, VARINT);
    put_varint(out, v.into());
}

/// An int64 field: negative values take ten bytes.
fn put_i64(out: &mut impl BufMut, tag: u32, v: i64) {
    put_u64(out, tag, v as u64);
}

/// An int32 or enum field: sign-extended to 64 bits, as protobuf does.
fn put_i32(out: &mut impl BufMut, tag: u32, v: i32) {
    put_u64(out, tag, i64::from(v) as u64);
}

/// A string field; empty is not sent.
fn put_str(out: &mut impl BufMut, tag: u32, s: &str) {
    if !s.is_empty() {
        put_key(out, tag, LEN);
        put_varint(out, s.len() as u64);
        out.put_slice(s.as_bytes());
    }
}

/// The generated `SlurmControllerServer` with GetJobs answered from
/// [`answer`]: every other path goes to `inner` unchanged.
#[derive(Debug, Clone)]
pub struct JobsRoute<S> {
    inner: S,
    service: Service,
    /// The largest GetJobs request taken (tonic's default when `None`).
    max_request: Option<usize>,
}

impl<S> JobsRoute<S> {
    /// `inner` is the generated server over `service`.
    pub fn new(inner: S, service: Service) -> JobsRoute<S> {
        JobsRoute {
            inner,
            service,
            max_request: None,
        }
    }

    /// The largest GetJobs request accepted, as the generated server's
    /// setting of the same name (give both the same value).
    pub fn max_decoding_message_size(mut self, limit: usize) -> JobsRoute<S> {
        self.max_request = Some(limit);
        self
    }
}

impl<S: NamedService> NamedService for JobsRoute<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> TowerService<http::Request<B>> for JobsRoute<S>
where
    S: TowerService<
        http::Request<B>,
        Response = http::Response<tonic::body::Body>,
        Error = Infallible,
    >,
    S::Future: Send + 'static,
    B: HttpBody + Send + 'static,
    B::Error: Into<StdError> + Send,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let max_request = self.max_request;
        let grpc = move || {
            tonic::server::Grpc::new(EncodedReplyCodec)
                .apply_max_message_size_config(max_request, None)
        };
        match req.uri().path() {
            GET_JOBS_PATH => {
                let method = EncodedGetJobs(self.service.clone());
                Box::pin(async move { Ok(grpc().unary(method, req).await) })
            }
            STREAM_JOBS_PATH => {
                let method = EncodedStreamJobs(self.service.clone());
                Box::pin(async move { Ok(grpc().server_streaming(method, req).await) })
            }
            _ => Box::pin(self.inner.call(req)),
        }
    }
}

/// Checks the caller of `request` as the generated service does, then
/// answers it from the current snapshot with `answer`.
fn answered<T: Send + 'static>(
    service: &Service,
    request: Request<v1::GetJobsRequest>,
    answer: fn(Arc<Snapshot>, &v1::GetJobsRequest, Hiding, i64) -> Result<T, Status>,
) -> BoxFuture<Response<T>, Status> {
    let service = service.clone();
    Box::pin(async move {
        let caller = service.caller(&request)?;
        let snap = service.shared.snapshot();
        let hiding = hiding_for(&service.shared, &snap, caller, request.get_ref());
        answer(snap, request.get_ref(), hiding, unix_now()).map(Response::new)
    })
}

/// What `caller` is not shown of `snap` by `req`: nothing to root and
/// SlurmUser or when the request does not ask it; otherwise hidden
/// partitions, and those whose AllowGroups the caller is in none of (its
/// groups are looked up only when a partition has AllowGroups).
pub(super) fn hiding_for(
    shared: &super::Shared,
    snap: &Snapshot,
    caller: crate::core::Caller,
    req: &v1::GetJobsRequest,
) -> Hiding {
    if !req.hide_hidden || shared.is_operator(caller.uid) {
        return Hiding::Nothing;
    }
    let groups = if snap
        .partitions
        .iter()
        .any(|p| p.conf.allow_groups.is_some())
    {
        crate::server::group_names_of(caller.uid)
    } else {
        Vec::new()
    };
    Hiding::Partitions { groups }
}

/// GetJobs as a unary method whose reply is already encoded.
#[derive(Debug, Clone)]
struct EncodedGetJobs(Service);

impl tonic::server::UnaryService<v1::GetJobsRequest> for EncodedGetJobs {
    type Response = JobsAnswer;
    type Future = BoxFuture<Response<JobsAnswer>, Status>;

    fn call(&mut self, request: Request<v1::GetJobsRequest>) -> Self::Future {
        answered(&self.0, request, prepare)
    }
}

/// StreamJobs as a streaming method whose parts are encoded as they are
/// sent.
#[derive(Debug, Clone)]
struct EncodedStreamJobs(Service);

impl tonic::server::ServerStreamingService<v1::GetJobsRequest> for EncodedStreamJobs {
    type Response = JobsAnswer;
    type ResponseStream = Parts;
    type Future = BoxFuture<Response<Parts>, Status>;

    fn call(&mut self, request: Request<v1::GetJobsRequest>) -> Self::Future {
        answered(&self.0, request, prepare_parts)
    }
}

/// Decodes the request with prost; encodes the answer straight into
/// tonic's buffer.
#[derive(Debug, Default)]
struct EncodedReplyCodec;

impl Codec for EncodedReplyCodec {
    type Encode = JobsAnswer;
    type Decode = v1::GetJobsRequest;
    type Encoder = AnswerEncoder;
    type Decoder = RequestDecoder<v1::GetJobsRequest>;

    fn encoder(&mut self) -> AnswerEncoder {
        AnswerEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        RequestDecoder(PhantomData)
    }
}

#[derive(Debug)]
struct AnswerEncoder;

impl Encoder for AnswerEncoder {
    type Item = JobsAnswer;
    type Error = Status;

    fn encode(&mut self, item: JobsAnswer, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(buf);
        Ok(())
    }
}

#[derive(Debug)]
struct RequestDecoder<M>(PhantomData<M>);

impl<M: Message + Default> Decoder for RequestDecoder<M> {
    type Item = M;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<M>, Status> {
        // As tonic's prost codec words a request it cannot read.
        M::decode(buf.copy_to_bytes(buf.remaining()))
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

#[cfg(test)]
mod tests;
