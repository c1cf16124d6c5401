//! Events: every accepted change of controller state, as journaled.
//!
//! An event carries every value `apply` needs (ids, times, the scheduler's
//! allocation), so replaying the journal rebuilds exactly the same state
//! without reading a clock or re-running the scheduler.
//!
//! Encoding (format version [`EVENT_FORMAT_VERSION`]): one tag byte, then the
//! fields in declaration order. Integers are little endian and fixed width,
//! strings and byte blobs are a `u32` length and the bytes, an `Option` is a
//! presence byte and the value. The submitted job description is the one
//! message that is not hand-encoded: it is the `slurm.v1.JobDescription`
//! prost message, embedded as a blob, so every submission option survives a
//! restart without a second definition here. Its script and environment
//! are empty in the journal: they are in a script segment, written and synced
//! before the record (format 2); the record keeps where, their lengths and
//! checksum (`persist::scripts`). Nodes and partitions are named,
//! not numbered, so that a journal stays readable after slurm.conf reorders
//! them. New events get new tags; an existing layout never changes without a
//! new format version. So a requeue is written with tag 15 (tag 6 without
//! its begin time is still read), a node's share of a completing job
//! released on its own is tag 14, and a registration is written with tag
//! 16 (tag 8, from before registrations were checked against slurm.conf,
//! is still read as one that was not short). A dependency that changed is
//! tag 17; a `--signal` sent is tag 18; an array task split off is tag 19.
//! Partition updates and their reset are tags 20 and 21; node attribute
//! updates (features, weight, comment) and their reset, 22 and 23;
//! partitions created and deleted, and the partition table put back as
//! slurm.conf has it, 24, 25 and 26. Within a job update (tag 7), a
//! change of one of the spec's texts names the text by its [`SpecText`]
//! number; `Gres=` (11) and `WCKey=` (12) came after the first ten, so
//! older journals simply never hold them. A job suspended and resumed
//! (`scontrol suspend|resume`, `core::suspend`) is tags 27 and 28. A hold
//! or release is written with tag 30, which adds its time (tag 5, without
//! one, is still read). A pending array task cancelled out of its meta
//! record is tag 31. A job id (and priority number) used up without a
//! job, by `sbatch --test-only` or a late refusal, is tag 32. A node taken
//! out of a running job (`--no-kill`, `scontrol update NumNodes=`) is tag
//! 33.

use super::codec::{Reader, Writer};
use prost::Message;
use slurm_common::state::{JobState, NodeUpdateState};
use slurm_common::time::TimeLimit;
use slurm_proto::v1::JobDescription;
use slurm_sched::{Hold, MemReq};
use thiserror::Error;

use crate::persist::ScriptRef;

/// Version of the event layout described in the module docs.
pub const EVENT_FORMAT_VERSION: u32 = 2;

/// One node's share of a started job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocRecord {
    pub node: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub tasks: u32,
}

/// A change of one job field (scontrol update).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobChange {
    TimeLimit(TimeLimit),
    Partition(String),
    MinNodes(u32),
    MaxNodes(Option<u32>),
    Name(String),
    Comment(String),
    /// Explicit priority (operators).
    Priority(u32),
    Nice(i32),
    BeginTime(i64),
    /// One of the texts of the job's spec.
    Text(SpecText, String),
    Requeue(bool),
    /// A job array's `%N` (on the meta record).
    ArrayThrottle(u32),
    NumTasks(u32),
    CpusPerTask(u32),
    Memory(MemReq),
    /// `Deadline=`, Unix seconds; 0: none.
    Deadline(i64),
    /// `TimeMin=`, minutes; 0: none.
    TimeMin(u32),
    /// `Licenses=`, normalized; empty: none.
    Licenses(Vec<super::licenses::LicenseAsk>),
    /// `NumCPUs=MIN[-MAX]` of a pending job.
    Cpus {
        min: u32,
        max: Option<u32>,
    },
    /// `MinCPUsNode=`, which also sets the CPU count.
    MinCpusPerNode(u32),
    Contiguous(bool),
    /// `OverSubscribe=`/`Shared=`: a `v1::NodeSharing`.
    Sharing(i32),
    Reboot(bool),
    AdminComment(String),
    /// `Prefer=`, normalized (`a,b` is `a&b`); empty for none.
    Prefer(String),
    /// `Nice=` that sets the priority shown to `priority`, as Slurm 22.05
    /// moves a priority by the change of nice but not below 2: for a held
    /// job (its priority of 0 moved, which releases it; its reason stays
    /// until the next pass), or one brought that low.
    NicePriority {
        priority: u32,
        nice: i32,
    },
}

/// The texts of a job's spec that `scontrol update` may change; the
/// number is the journal's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecText {
    Account = 1,
    Qos = 2,
    RequiredNodes = 3,
    ExcludedNodes = 4,
    Features = 5,
    WorkDir = 6,
    StdOut = 7,
    StdErr = 8,
    MailType = 9,
    MailUser = 10,
    /// `Gres=`: the job's `--gres` (TresPerNode).
    Gres = 11,
    /// `WCKey=`.
    WcKey = 12,
}

impl SpecText {
    pub const ALL: [SpecText; 12] = [
        SpecText::Account,
        SpecText::Qos,
        SpecText::RequiredNodes,
        SpecText::ExcludedNodes,
        SpecText::Features,
        SpecText::WorkDir,
        SpecText::StdOut,
        SpecText::StdErr,
        SpecText::MailType,
        SpecText::MailUser,
        SpecText::Gres,
        SpecText::WcKey,
    ];

    fn from_u8(n: u8) -> Option<SpecText> {
        SpecText::ALL.into_iter().find(|t| *t as u8 == n)
    }
}

/// Every state change of the controller.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A submission used up `job_id` without making a job: an
    /// `sbatch --test-only` trial, which also uses up the priority number
    /// `priority` when a job submitted so would have taken one, or a
    /// refusal Slurm makes after numbering the job (an unknown feature or
    /// reservation), which uses up none.
    JobIdTaken { job_id: u32, priority: Option<u32> },
    /// A job was accepted with id `job_id` at `time`.
    JobSubmitted {
        job_id: u32,
        time: i64,
        uid: u32,
        gid: u32,
        partition: String,
        priority: u32,
        /// Without script and environment (see `files`).
        desc: Box<JobDescription>,
        /// The job's script and environment files.
        files: ScriptRef,
    },
    /// The scheduler started a job on these nodes.
    JobStarted {
        job_id: u32,
        time: i64,
        time_limit: TimeLimit,
        exclusive: bool,
        allocs: Vec<AllocRecord>,
        /// The partition it starts in, for a job listed in several
        /// (`-p a,b`); `None` for a job with one.
        partition: Option<String>,
    },
    /// A job reached a final state. With `release` its resources are freed
    /// at once; otherwise it stays COMPLETING until [`Event::JobReleased`].
    /// A requeued job still COMPLETING (scancel) keeps its shares and the
    /// end time of its last run.
    JobEnded {
        job_id: u32,
        time: i64,
        state: JobState,
        exit_status: u32,
        exit_signal: u32,
        /// Reason name (`slurm_common::reason::PendingReason`), e.g. "None".
        reason: String,
        detail: String,
        release: bool,
    },
    /// The nodes of a finished (or requeued) job have cleaned up, or are
    /// given up on: every share it still holds is freed and its COMPLETING
    /// ends.
    JobReleased { job_id: u32, time: i64 },
    /// Node `node` is done with a completing job (EpilogComplete, or the
    /// node went DOWN or stopped responding): its share is freed; the job's
    /// COMPLETING ends with its last share.
    JobNodeReleased {
        job_id: u32,
        node: String,
        time: i64,
    },
    /// Node `node` leaves running job `job_id`, which goes on with its
    /// other nodes: a failed node of a `--no-kill` job (`core::liveness`),
    /// or one given up by `scontrol update NumNodes=`. Its share is freed.
    JobNodeExcised {
        job_id: u32,
        node: String,
        time: i64,
    },
    /// Hold set (`Some`) or released (`None`) at `time`: a hold makes the
    /// job's EligibleTime Unknown, a release of a waiting job makes it
    /// eligible from then. `time` is `None` only in records from before
    /// it was journaled (tag 5), which leave the eligible time alone.
    JobHoldChanged {
        job_id: u32,
        hold: Option<Hold>,
        time: Option<i64>,
    },
    /// Back to PENDING; a running job stays COMPLETING until released.
    /// Once back in the queue (at once, or with the release of its last
    /// share) its SubmitTime is the time of that event.
    JobRequeued {
        job_id: u32,
        time: i64,
        hold: Option<Hold>,
        /// Set when the launch failed (counted for the retry rule).
        launch_failed: bool,
        detail: String,
        /// Not eligible before this time (Reason=BeginTime meanwhile).
        /// `None` in records written before requeues were delayed (tag 6):
        /// eligible at once.
        begin_time: Option<i64>,
    },
    JobUpdated {
        job_id: u32,
        changes: Vec<JobChange>,
    },
    /// slurmd registered the node.
    NodeRegistered {
        node: String,
        time: i64,
        /// Machine and OS the node reported (`uname`), shown as Arch= and OS=.
        arch: String,
        os: String,
        /// Why the node's report falls short of slurm.conf (Slurm's reason,
        /// e.g. "Low CPUs"), if it does: the node is marked INVALID_REG and
        /// does not come up (`NodeRec::short_of_config`). `None` in records
        /// written before registrations were checked (tag 8).
        invalid: Option<String>,
    },
    /// scontrol update NodeName=... State=...
    NodeUpdated {
        node: String,
        update: NodeUpdateState,
        reason: Option<String>,
        uid: u32,
        time: i64,
    },
    /// Finished jobs older than MinJobAge were forgotten.
    JobsPurged { job_ids: Vec<u32> },
    /// These nodes missed a message (sinfo `*`, NOT_RESPONDING).
    NodesNotResponding { nodes: Vec<String>, time: i64 },
    /// These nodes answered again: NOT_RESPONDING is cleared.
    NodesResponding { nodes: Vec<String>, time: i64 },
    /// ReturnToService brought a DOWN node that registered back to service.
    NodeReturned { node: String, time: i64 },
    /// The job's `--signal` was sent (once per run, `core::signal`).
    JobSignalSent { job_id: u32, time: i64 },
    /// What is left of a pending job's dependency, as Slurm shows it
    /// (`core::depend`), after a test or `scontrol update`; empty: none.
    JobDependencyChanged {
        job_id: u32,
        time: i64,
        dependency: String,
    },
    /// Task `task` of the array whose meta record is `array_job_id` is
    /// split off into a record of its own, `job_id`, still pending
    /// (`core::array`): it is about to start, or to be acted on alone.
    ArrayTaskSplit {
        array_job_id: u32,
        task: u32,
        job_id: u32,
        time: i64,
    },
    /// Task `task`, still pending in the meta record `array_job_id` with
    /// others, is cancelled: it leaves the array without a record of its
    /// own, as in Slurm (`core::array`).
    ArrayTaskDropped {
        array_job_id: u32,
        task: u32,
        time: i64,
    },
    /// scontrol update PartitionName=...: the attributes as a PartitionName
    /// line spells them, laid over the partition (`core::partition`).
    PartitionUpdated {
        partition: String,
        attributes: Vec<(String, String)>,
        uid: u32,
        time: i64,
    },
    /// `scontrol reconfigure` put the partitions back as slurm.conf has
    /// them, keeping only the updated attributes named in `keep`
    /// (ReconfigFlags=KeepPartState keeps State).
    PartitionUpdatesReset { keep: Vec<String> },
    /// scontrol create PartitionName=...: a partition built from slurm.conf's
    /// PartitionName=DEFAULT values with the attributes as a PartitionName
    /// line spells them laid over (`core::partition`).
    PartitionCreated {
        partition: String,
        attributes: Vec<(String, String)>,
        uid: u32,
        time: i64,
    },
    /// scontrol delete PartitionName=...
    PartitionDeleted {
        partition: String,
        uid: u32,
        time: i64,
    },
    /// `scontrol reconfigure` put the partition table back as slurm.conf
    /// has it: deleted slurm.conf partitions are back, created ones are
    /// gone unless `keep_created` (ReconfigFlags=KeepPartInfo).
    PartitionTableReset { keep_created: bool },
    /// scontrol update NodeName=... with AvailableFeatures, ActiveFeatures,
    /// Weight or Comment: laid over what the node had (`core::node_attrs`).
    NodeAttrsUpdated {
        node: String,
        attrs: super::node_attrs::NodeAttrs,
        uid: u32,
        time: i64,
    },
    /// `scontrol reconfigure` put node features and weights back as
    /// slurm.conf has them (comments stay).
    NodeAttrsReset,
    /// scontrol suspend: the running job stops, its CPUs are free
    /// (`core::suspend`).
    JobSuspended { job_id: u32, time: i64 },
    /// scontrol resume: the suspended job runs again on its CPUs.
    JobResumed { job_id: u32, time: i64 },
}

/// A record that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("record ends early at byte {offset} while reading {what}")]
    Truncated { offset: usize, what: &'static str },
    #[error("unknown {what} {value} at byte {offset}")]
    Unknown {
        offset: usize,
        what: &'static str,
        value: u32,
    },
    #[error("invalid text in {what} at byte {offset}")]
    Utf8 { offset: usize, what: &'static str },
    #[error("embedded job description does not decode: {detail}")]
    Description { detail: String },
    #[error("{extra} trailing bytes after the event")]
    Trailing { extra: usize },
}

const JOB_STATES: [JobState; 12] = JobState::ALL;
const NODE_UPDATES: [NodeUpdateState; 11] = NodeUpdateState::ALL;

impl Event {
    /// The one job this event changes, if it is about one job.
    pub fn job_id(&self) -> Option<u32> {
        match self {
            Event::JobSubmitted { job_id, .. }
            | Event::JobStarted { job_id, .. }
            | Event::JobEnded { job_id, .. }
            | Event::JobReleased { job_id, .. }
            | Event::JobNodeReleased { job_id, .. }
            | Event::JobNodeExcised { job_id, .. }
            | Event::JobHoldChanged { job_id, .. }
            | Event::JobRequeued { job_id, .. }
            | Event::JobUpdated { job_id, .. }
            | Event::JobDependencyChanged { job_id, .. }
            | Event::JobSignalSent { job_id, .. }
            | Event::JobSuspended { job_id, .. }
            | Event::JobResumed { job_id, .. }
            | Event::ArrayTaskSplit { job_id, .. } => Some(*job_id),
            Event::ArrayTaskDropped { array_job_id, .. } => Some(*array_job_id),
            Event::NodeRegistered { .. }
            | Event::NodeUpdated { .. }
            | Event::JobsPurged { .. }
            | Event::NodesNotResponding { .. }
            | Event::NodesResponding { .. }
            | Event::NodeReturned { .. }
            | Event::PartitionUpdated { .. }
            | Event::PartitionUpdatesReset { .. }
            | Event::PartitionCreated { .. }
            | Event::PartitionDeleted { .. }
            | Event::PartitionTableReset { .. }
            | Event::NodeAttrsUpdated { .. }
            | Event::NodeAttrsReset
            | Event::JobIdTaken { .. } => None,
        }
    }

    /// Appends the encoding of this event to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer(out);
        match self {
            Event::JobSubmitted {
                job_id,
                time,
                uid,
                gid,
                partition,
                priority,
                desc,
                files,
            } => {
                w.u8(1);
                w.u32(*job_id);
                w.i64(*time);
                w.u32(*uid);
                w.u32(*gid);
                w.str(partition);
                w.u32(*priority);
                w.bytes(&desc.encode_to_vec());
                w.u32(files.segment);
                w.u64(files.offset);
                w.u32(files.script_len);
                w.u32(files.env_len);
                w.u32(files.crc);
            }
            Event::JobStarted {
                job_id,
                time,
                time_limit,
                exclusive,
                allocs,
                partition,
            } => {
                // Tag 29 is tag 2 followed by the partition chosen, so that
                // journals written before it still read.
                w.u8(if partition.is_some() { 29 } else { 2 });
                w.u32(*job_id);
                w.i64(*time);
                w.limit(*time_limit);
                w.bool(*exclusive);
                w.len(allocs.len());
                for a in allocs {
                    w.str(&a.node);
                    w.u32(a.cpus);
                    w.u64(a.mem_mb);
                    w.u32(a.tasks);
                }
                if let Some(p) = partition {
                    w.str(p);
                }
            }
            Event::JobEnded {
                job_id,
                time,
                state,
                exit_status,
                exit_signal,
                reason,
                detail,
                release,
            } => {
                w.u8(3);
                w.u32(*job_id);
                w.i64(*time);
                w.u8(index_of(&JOB_STATES, state));
                w.u32(*exit_status);
                w.u32(*exit_signal);
                w.str(reason);
                w.str(detail);
                w.bool(*release);
            }
            Event::JobReleased { job_id, time } => {
                w.u8(4);
                w.u32(*job_id);
                w.i64(*time);
            }
            Event::JobNodeReleased { job_id, node, time } => {
                w.u8(14);
                w.u32(*job_id);
                w.str(node);
                w.i64(*time);
            }
            Event::JobNodeExcised { job_id, node, time } => {
                w.u8(33);
                w.u32(*job_id);
                w.str(node);
                w.i64(*time);
            }
            Event::JobHoldChanged { job_id, hold, time } => {
                w.u8(if time.is_some() { 30 } else { 5 });
                w.u32(*job_id);
                w.hold(*hold);
                if let Some(t) = time {
                    w.i64(*t);
                }
            }
            Event::JobRequeued {
                job_id,
                time,
                hold,
                launch_failed,
                detail,
                begin_time,
            } => {
                w.u8(15);
                w.u32(*job_id);
                w.i64(*time);
                w.hold(*hold);
                w.bool(*launch_failed);
                w.str(detail);
                match begin_time {
                    Some(t) => {
                        w.bool(true);
                        w.i64(*t);
                    }
                    None => w.bool(false),
                }
            }
            Event::JobUpdated { job_id, changes } => {
                w.u8(7);
                w.u32(*job_id);
                w.len(changes.len());
                for c in changes {
                    match c {
                        JobChange::TimeLimit(l) => {
                            w.u8(1);
                            w.limit(*l);
                        }
                        JobChange::Partition(p) => {
                            w.u8(2);
                            w.str(p);
                        }
                        JobChange::MinNodes(n) => {
                            w.u8(3);
                            w.u32(*n);
                        }
                        JobChange::MaxNodes(n) => {
                            w.u8(4);
                            w.opt_u32(*n);
                        }
                        JobChange::Name(s) => {
                            w.u8(5);
                            w.str(s);
                        }
                        JobChange::Comment(s) => {
                            w.u8(6);
                            w.str(s);
                        }
                        JobChange::Priority(p) => {
                            w.u8(7);
                            w.u32(*p);
                        }
                        JobChange::Nice(n) => {
                            w.u8(8);
                            w.i64(i64::from(*n));
                        }
                        JobChange::BeginTime(t) => {
                            w.u8(9);
                            w.i64(*t);
                        }
                        JobChange::Text(field, text) => {
                            w.u8(10);
                            w.u8(*field as u8);
                            w.str(text);
                        }
                        JobChange::Requeue(on) => {
                            w.u8(11);
                            w.bool(*on);
                        }
                        JobChange::ArrayThrottle(n) => {
                            w.u8(12);
                            w.u32(*n);
                        }
                        JobChange::NumTasks(n) => {
                            w.u8(13);
                            w.u32(*n);
                        }
                        JobChange::CpusPerTask(n) => {
                            w.u8(14);
                            w.u32(*n);
                        }
                        JobChange::Memory(m) => {
                            w.u8(15);
                            match m {
                                MemReq::PerNode(mb) => {
                                    w.u8(0);
                                    w.u64(*mb);
                                }
                                MemReq::PerCpu(mb) => {
                                    w.u8(1);
                                    w.u64(*mb);
                                }
                            }
                        }
                        JobChange::Deadline(t) => {
                            w.u8(16);
                            w.i64(*t);
                        }
                        JobChange::TimeMin(m) => {
                            w.u8(17);
                            w.u32(*m);
                        }
                        JobChange::Licenses(asks) => {
                            w.u8(18);
                            w.len(asks.len());
                            for a in asks {
                                w.str(&a.name);
                                w.u32(a.count);
                            }
                        }
                        JobChange::Cpus { min, max } => {
                            w.u8(19);
                            w.u32(*min);
                            w.opt_u32(*max);
                        }
                        JobChange::MinCpusPerNode(n) => {
                            w.u8(20);
                            w.u32(*n);
                        }
                        JobChange::Contiguous(on) => {
                            w.u8(21);
                            w.bool(*on);
                        }
                        JobChange::Sharing(s) => {
                            w.u8(22);
                            w.i32(*s);
                        }
                        JobChange::Reboot(on) => {
                            w.u8(23);
                            w.bool(*on);
                        }
                        JobChange::AdminComment(text) => {
                            w.u8(24);
                            w.str(text);
                        }
                        JobChange::Prefer(text) => {
                            w.u8(25);
                            w.str(text);
                        }
                        JobChange::NicePriority { priority, nice } => {
                            w.u8(26);
                            w.u32(*priority);
                            w.i64(i64::from(*nice));
                        }
                    }
                }
            }
            Event::NodeRegistered {
                node,
                time,
                arch,
                os,
                invalid,
            } => {
                w.u8(16);
                w.str(node);
                w.i64(*time);
                w.str(arch);
                w.str(os);
                match invalid {
                    Some(r) => {
                        w.bool(true);
                        w.str(r);
                    }
                    None => w.bool(false),
                }
            }
            Event::NodeUpdated {
                node,
                update,
                reason,
                uid,
                time,
            } => {
                w.u8(9);
                w.str(node);
                w.u8(index_of(&NODE_UPDATES, update));
                match reason {
                    Some(r) => {
                        w.bool(true);
                        w.str(r);
                    }
                    None => w.bool(false),
                }
                w.u32(*uid);
                w.i64(*time);
            }
            Event::JobsPurged { job_ids } => {
                w.u8(10);
                w.len(job_ids.len());
                for id in job_ids {
                    w.u32(*id);
                }
            }
            Event::NodesNotResponding { nodes, time } => {
                w.u8(11);
                w.names(nodes);
                w.i64(*time);
            }
            Event::NodesResponding { nodes, time } => {
                w.u8(12);
                w.names(nodes);
                w.i64(*time);
            }
            Event::NodeReturned { node, time } => {
                w.u8(13);
                w.str(node);
                w.i64(*time);
            }
            Event::JobDependencyChanged {
                job_id,
                time,
                dependency,
            } => {
                w.u8(17);
                w.u32(*job_id);
                w.i64(*time);
                w.str(dependency);
            }
            Event::JobSignalSent { job_id, time } => {
                w.u8(18);
                w.u32(*job_id);
                w.i64(*time);
            }
            Event::ArrayTaskSplit {
                array_job_id,
                task,
                job_id,
                time,
            } => {
                w.u8(19);
                w.u32(*array_job_id);
                w.u32(*task);
                w.u32(*job_id);
                w.i64(*time);
            }
            Event::ArrayTaskDropped {
                array_job_id,
                task,
                time,
            } => {
                w.u8(31);
                w.u32(*array_job_id);
                w.u32(*task);
                w.i64(*time);
            }
            Event::PartitionUpdated {
                partition,
                attributes,
                uid,
                time,
            } => {
                w.u8(20);
                w.str(partition);
                w.attributes(attributes);
                w.u32(*uid);
                w.i64(*time);
            }
            Event::PartitionUpdatesReset { keep } => {
                w.u8(21);
                w.len(keep.len());
                for k in keep {
                    w.str(k);
                }
            }
            Event::NodeAttrsUpdated {
                node,
                attrs,
                uid,
                time,
            } => {
                w.u8(22);
                w.str(node);
                attrs.write(&mut w);
                w.u32(*uid);
                w.i64(*time);
            }
            Event::NodeAttrsReset => w.u8(23),
            Event::PartitionCreated {
                partition,
                attributes,
                uid,
                time,
            } => {
                w.u8(24);
                w.str(partition);
                w.attributes(attributes);
                w.u32(*uid);
                w.i64(*time);
            }
            Event::PartitionDeleted {
                partition,
                uid,
                time,
            } => {
                w.u8(25);
                w.str(partition);
                w.u32(*uid);
                w.i64(*time);
            }
            Event::PartitionTableReset { keep_created } => {
                w.u8(26);
                w.bool(*keep_created);
            }
            Event::JobSuspended { job_id, time } => {
                w.u8(27);
                w.u32(*job_id);
                w.i64(*time);
            }
            Event::JobResumed { job_id, time } => {
                w.u8(28);
                w.u32(*job_id);
                w.i64(*time);
            }
            Event::JobIdTaken { job_id, priority } => {
                w.u8(32);
                w.u32(*job_id);
                w.opt_u32(*priority);
            }
        }
    }

    /// Decodes one whole record.
    pub fn decode(bytes: &[u8]) -> Result<Event, DecodeError> {
        let mut r = Reader::new(bytes);
        let tag = r.u8("event tag")?;
        let event = match tag {
            1 => Event::JobSubmitted {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
                uid: r.u32("uid")?,
                gid: r.u32("gid")?,
                partition: r.string("partition")?,
                priority: r.u32("priority")?,
                desc: {
                    let blob = r.bytes("job description")?;
                    Box::new(JobDescription::decode(blob).map_err(|e| {
                        DecodeError::Description {
                            detail: e.to_string(),
                        }
                    })?)
                },
                files: ScriptRef {
                    segment: r.u32("script segment")?,
                    offset: r.u64("script offset")?,
                    script_len: r.u32("script length")?,
                    env_len: r.u32("environment length")?,
                    crc: r.u32("script checksum")?,
                },
            },
            tag @ (2 | 29) => {
                let job_id = r.u32("job id")?;
                let time = r.i64("time")?;
                let time_limit = r.limit()?;
                let exclusive = r.bool("exclusive")?;
                let n = r.u32("alloc count")?;
                let mut allocs = Vec::with_capacity(usize::try_from(n.min(4096)).unwrap_or(0));
                for _ in 0..n {
                    allocs.push(AllocRecord {
                        node: r.string("node")?,
                        cpus: r.u32("cpus")?,
                        mem_mb: r.u64("memory")?,
                        tasks: r.u32("tasks")?,
                    });
                }
                let partition = if tag == 29 {
                    Some(r.string("partition")?)
                } else {
                    None
                };
                Event::JobStarted {
                    job_id,
                    time,
                    time_limit,
                    exclusive,
                    allocs,
                    partition,
                }
            }
            3 => Event::JobEnded {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
                state: r.pick(&JOB_STATES, "job state")?,
                exit_status: r.u32("exit status")?,
                exit_signal: r.u32("exit signal")?,
                reason: r.string("reason")?,
                detail: r.string("detail")?,
                release: r.bool("release")?,
            },
            4 => Event::JobReleased {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
            },
            tag @ (5 | 30) => Event::JobHoldChanged {
                job_id: r.u32("job id")?,
                hold: r.hold()?,
                time: if tag == 30 {
                    Some(r.i64("time")?)
                } else {
                    None
                },
            },
            6 | 15 => Event::JobRequeued {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
                hold: r.hold()?,
                launch_failed: r.bool("launch failed")?,
                detail: r.string("detail")?,
                begin_time: if tag == 15 && r.bool("begin time present")? {
                    Some(r.i64("begin time")?)
                } else {
                    None
                },
            },
            7 => {
                let job_id = r.u32("job id")?;
                let n = r.u32("change count")?;
                let mut changes = Vec::new();
                for _ in 0..n {
                    let at = r.pos;
                    let change = match r.u8("change tag")? {
                        1 => JobChange::TimeLimit(r.limit()?),
                        2 => JobChange::Partition(r.string("partition")?),
                        3 => JobChange::MinNodes(r.u32("min nodes")?),
                        4 => JobChange::MaxNodes(r.opt_u32("max nodes")?),
                        5 => JobChange::Name(r.string("name")?),
                        6 => JobChange::Comment(r.string("comment")?),
                        7 => JobChange::Priority(r.u32("priority")?),
                        8 => {
                            let v = r.i64("nice")?;
                            JobChange::Nice(i32::try_from(v).unwrap_or(0))
                        }
                        9 => JobChange::BeginTime(r.i64("begin time")?),
                        10 => {
                            let at = r.pos;
                            let n = r.u8("spec text field")?;
                            let field = SpecText::from_u8(n).ok_or(DecodeError::Unknown {
                                offset: at,
                                what: "spec text field",
                                value: u32::from(n),
                            })?;
                            JobChange::Text(field, r.string("spec text")?)
                        }
                        11 => JobChange::Requeue(r.bool("requeue")?),
                        12 => JobChange::ArrayThrottle(r.u32("array throttle")?),
                        13 => JobChange::NumTasks(r.u32("task count")?),
                        14 => JobChange::CpusPerTask(r.u32("cpus per task")?),
                        15 => {
                            let at = r.pos;
                            match r.u8("memory kind")? {
                                0 => JobChange::Memory(MemReq::PerNode(r.u64("memory")?)),
                                1 => JobChange::Memory(MemReq::PerCpu(r.u64("memory")?)),
                                other => {
                                    return Err(DecodeError::Unknown {
                                        offset: at,
                                        what: "memory kind",
                                        value: u32::from(other),
                                    })
                                }
                            }
                        }
                        16 => JobChange::Deadline(r.i64("deadline")?),
                        17 => JobChange::TimeMin(r.u32("time min")?),
                        18 => {
                            let n = r.u32("license count")?;
                            let mut asks = Vec::new();
                            for _ in 0..n {
                                asks.push(super::licenses::LicenseAsk {
                                    name: r.text("license name")?.into(),
                                    count: r.u32("license count")?,
                                });
                            }
                            JobChange::Licenses(asks)
                        }
                        19 => JobChange::Cpus {
                            min: r.u32("cpu count")?,
                            max: r.opt_u32("max cpu count")?,
                        },
                        20 => JobChange::MinCpusPerNode(r.u32("min cpus per node")?),
                        21 => JobChange::Contiguous(r.bool("contiguous")?),
                        22 => JobChange::Sharing(r.i32("sharing")?),
                        23 => JobChange::Reboot(r.bool("reboot")?),
                        24 => JobChange::AdminComment(r.string("admin comment")?),
                        25 => JobChange::Prefer(r.string("prefer")?),
                        26 => JobChange::NicePriority {
                            priority: r.u32("priority")?,
                            nice: i32::try_from(r.i64("nice")?).unwrap_or(0),
                        },
                        other => {
                            return Err(DecodeError::Unknown {
                                offset: at,
                                what: "job change tag",
                                value: u32::from(other),
                            })
                        }
                    };
                    changes.push(change);
                }
                Event::JobUpdated { job_id, changes }
            }
            8 | 16 => Event::NodeRegistered {
                node: r.string("node")?,
                time: r.i64("time")?,
                arch: r.string("arch")?,
                os: r.string("os")?,
                invalid: if tag == 16 && r.bool("invalid reason present")? {
                    Some(r.string("invalid reason")?)
                } else {
                    None
                },
            },
            9 => Event::NodeUpdated {
                node: r.string("node")?,
                update: r.pick(&NODE_UPDATES, "node update")?,
                reason: if r.bool("reason present")? {
                    Some(r.string("reason")?)
                } else {
                    None
                },
                uid: r.u32("uid")?,
                time: r.i64("time")?,
            },
            10 => {
                let n = r.u32("job count")?;
                let mut job_ids = Vec::new();
                for _ in 0..n {
                    job_ids.push(r.u32("job id")?);
                }
                Event::JobsPurged { job_ids }
            }
            11 => Event::NodesNotResponding {
                nodes: r.names()?,
                time: r.i64("time")?,
            },
            12 => Event::NodesResponding {
                nodes: r.names()?,
                time: r.i64("time")?,
            },
            13 => Event::NodeReturned {
                node: r.string("node")?,
                time: r.i64("time")?,
            },
            14 => Event::JobNodeReleased {
                job_id: r.u32("job id")?,
                node: r.string("node")?,
                time: r.i64("time")?,
            },
            33 => Event::JobNodeExcised {
                job_id: r.u32("job id")?,
                node: r.string("node")?,
                time: r.i64("time")?,
            },
            17 => Event::JobDependencyChanged {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
                dependency: r.string("dependency")?,
            },
            18 => Event::JobSignalSent {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
            },
            19 => Event::ArrayTaskSplit {
                array_job_id: r.u32("array job id")?,
                task: r.u32("array task id")?,
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
            },
            31 => Event::ArrayTaskDropped {
                array_job_id: r.u32("array job id")?,
                task: r.u32("array task id")?,
                time: r.i64("time")?,
            },
            20 => {
                let partition = r.string("partition")?;
                let attributes = r.attributes()?;
                Event::PartitionUpdated {
                    partition,
                    attributes,
                    uid: r.u32("uid")?,
                    time: r.i64("time")?,
                }
            }
            21 => {
                let n = r.u32("key count")?;
                let mut keep = Vec::new();
                for _ in 0..n {
                    keep.push(r.string("key")?);
                }
                Event::PartitionUpdatesReset { keep }
            }
            22 => Event::NodeAttrsUpdated {
                node: r.string("node")?,
                attrs: super::node_attrs::NodeAttrs::read(&mut r)?,
                uid: r.u32("uid")?,
                time: r.i64("time")?,
            },
            23 => Event::NodeAttrsReset,
            24 => {
                let partition = r.string("partition")?;
                let attributes = r.attributes()?;
                Event::PartitionCreated {
                    partition,
                    attributes,
                    uid: r.u32("uid")?,
                    time: r.i64("time")?,
                }
            }
            25 => Event::PartitionDeleted {
                partition: r.string("partition")?,
                uid: r.u32("uid")?,
                time: r.i64("time")?,
            },
            26 => Event::PartitionTableReset {
                keep_created: r.bool("keep created")?,
            },
            27 => Event::JobSuspended {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
            },
            28 => Event::JobResumed {
                job_id: r.u32("job id")?,
                time: r.i64("time")?,
            },
            32 => Event::JobIdTaken {
                job_id: r.u32("job id")?,
                priority: r.opt_u32("priority")?,
            },
            other => {
                return Err(DecodeError::Unknown {
                    offset: 0,
                    what: "event tag",
                    value: u32::from(other),
                })
            }
        };
        if r.pos != bytes.len() {
            return Err(DecodeError::Trailing {
                extra: bytes.len() - r.pos,
            });
        }
        Ok(event)
    }
}

fn index_of<T: PartialEq>(all: &[T], v: &T) -> u8 {
    all.iter()
        .position(|x| x == v)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(u8::MAX)
}

impl Writer<'_> {
    fn names(&mut self, names: &[String]) {
        self.len(names.len());
        for n in names {
            self.str(n);
        }
    }
    fn limit(&mut self, l: TimeLimit) {
        match l {
            TimeLimit::Minutes(m) => self.opt_u32(Some(m)),
            TimeLimit::Infinite => self.opt_u32(None),
        }
    }
}

impl Reader<'_> {
    fn names(&mut self) -> Result<Vec<String>, DecodeError> {
        let n = self.u32("node count")?;
        // Every name takes at least its 4-byte length: a count larger than
        // the record allows is damage, not a reason to reserve memory.
        let cap = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len() / 4);
        let mut names = Vec::with_capacity(cap);
        for _ in 0..n {
            names.push(self.string("node")?);
        }
        Ok(names)
    }
    fn limit(&mut self) -> Result<TimeLimit, DecodeError> {
        Ok(match self.opt_u32("time limit")? {
            Some(m) => TimeLimit::Minutes(m),
            None => TimeLimit::Infinite,
        })
    }
    fn pick<T: Copy>(&mut self, all: &[T], what: &'static str) -> Result<T, DecodeError> {
        let at = self.pos;
        let i = self.u8(what)?;
        all.get(usize::from(i))
            .copied()
            .ok_or(DecodeError::Unknown {
                offset: at,
                what,
                value: u32::from(i),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn samples() -> Vec<Event> {
        vec![
            Event::JobSubmitted {
                job_id: 7,
                time: 1_700_000_000,
                uid: 1000,
                gid: 100,
                partition: "debug".into(),
                priority: 4_294_901_753,
                desc: Box::new(JobDescription {
                    script: "#!/bin/sh\ntrue\n".into(),
                    name: "caf\u{e9}".into(),
                    min_nodes: Some(2),
                    ..JobDescription::default()
                }),
                files: ScriptRef {
                    segment: 3,
                    offset: 1 << 40,
                    script_len: 15,
                    env_len: 0,
                    crc: 0xDEAD_BEEF,
                },
            },
            Event::JobStarted {
                job_id: 7,
                time: 5,
                time_limit: TimeLimit::Minutes(10),
                exclusive: true,
                allocs: vec![AllocRecord {
                    node: "n1".into(),
                    cpus: 2,
                    mem_mb: 4000,
                    tasks: 1,
                }],
                partition: None,
            },
            Event::JobStarted {
                job_id: 8,
                time: 6,
                time_limit: TimeLimit::Minutes(10),
                exclusive: false,
                allocs: vec![AllocRecord {
                    node: "n2".into(),
                    cpus: 1,
                    mem_mb: 0,
                    tasks: 1,
                }],
                partition: Some("long".into()),
            },
            Event::JobEnded {
                job_id: 7,
                time: 9,
                state: JobState::Timeout,
                exit_status: 0,
                exit_signal: 15,
                reason: "TimeLimit".into(),
                detail: String::new(),
                release: false,
            },
            Event::JobReleased {
                job_id: 7,
                time: 10,
            },
            Event::JobHoldChanged {
                job_id: 8,
                hold: Some(Hold::Admin),
                time: Some(10),
            },
            Event::JobHoldChanged {
                job_id: 8,
                hold: None,
                time: Some(11),
            },
            Event::JobRequeued {
                job_id: 8,
                time: 11,
                hold: None,
                launch_failed: true,
                detail: "launch failed".into(),
                begin_time: Some(132),
            },
            Event::JobRequeued {
                job_id: 8,
                time: 12,
                hold: Some(Hold::User),
                launch_failed: false,
                detail: String::new(),
                begin_time: None,
            },
            Event::JobNodeReleased {
                job_id: 8,
                node: "n\u{e9}2".into(),
                time: 13,
            },
            Event::JobNodeExcised {
                job_id: 8,
                node: "n3".into(),
                time: 14,
            },
            Event::JobUpdated {
                job_id: 8,
                changes: vec![
                    JobChange::TimeLimit(TimeLimit::Infinite),
                    JobChange::Partition("p".into()),
                    JobChange::MinNodes(3),
                    JobChange::MaxNodes(None),
                    JobChange::Name("n".into()),
                    JobChange::Comment("c".into()),
                    JobChange::Priority(5),
                    JobChange::Nice(-3),
                    JobChange::BeginTime(99),
                    JobChange::Text(SpecText::ExcludedNodes, "n[1-2]".into()),
                    JobChange::Text(SpecText::MailUser, "\u{e9}@x".into()),
                    JobChange::Text(SpecText::Gres, "gpu:a100:1".into()),
                    JobChange::Text(SpecText::Gres, String::new()),
                    JobChange::Text(SpecText::WcKey, "*default".into()),
                    JobChange::Requeue(false),
                    JobChange::ArrayThrottle(4),
                    JobChange::NumTasks(6),
                    JobChange::CpusPerTask(2),
                    JobChange::Memory(MemReq::PerNode(100)),
                    JobChange::Memory(MemReq::PerCpu(u64::MAX)),
                    JobChange::Deadline(1_800_000_000),
                    JobChange::TimeMin(0),
                    JobChange::TimeMin(30),
                    JobChange::Licenses(vec![]),
                    JobChange::Licenses(vec![crate::core::licenses::LicenseAsk {
                        name: "matlab".into(),
                        count: 2,
                    }]),
                    JobChange::Cpus { min: 2, max: None },
                    JobChange::Cpus {
                        min: 1,
                        max: Some(i32::MAX as u32),
                    },
                    JobChange::MinCpusPerNode(3),
                    JobChange::Contiguous(true),
                    JobChange::Sharing(slurm_proto::v1::NodeSharing::Oversubscribe as i32),
                    JobChange::Reboot(true),
                    JobChange::AdminComment(String::new()),
                    JobChange::AdminComment("checked by ops".into()),
                    JobChange::Prefer("fa&fb".into()),
                    JobChange::Prefer(String::new()),
                    JobChange::NicePriority {
                        priority: 2,
                        nice: -7,
                    },
                ],
            },
            Event::NodeRegistered {
                node: "n2".into(),
                time: 3,
                arch: "x86_64".into(),
                os: "Linux 6.1.0 #1 SMP".into(),
                invalid: None,
            },
            Event::NodeRegistered {
                node: "n3".into(),
                time: 4,
                arch: String::new(),
                os: String::new(),
                invalid: Some("Low CPUs, Low TmpDisk".into()),
            },
            Event::NodeUpdated {
                node: "n2".into(),
                update: NodeUpdateState::Drain,
                reason: Some("disk".into()),
                uid: 0,
                time: 4,
            },
            Event::JobsPurged {
                job_ids: vec![1, 2, 3],
            },
            Event::NodesNotResponding {
                nodes: vec!["n1".into(), "n\u{e9}3".into()],
                time: 12,
            },
            Event::NodesResponding {
                nodes: vec![],
                time: 13,
            },
            Event::NodeReturned {
                node: "n4".into(),
                time: 14,
            },
            Event::JobDependencyChanged {
                job_id: 9,
                time: 15,
                dependency: "afterok:7(failed),singleton(unfulfilled)".into(),
            },
            Event::JobDependencyChanged {
                job_id: 9,
                time: 16,
                dependency: String::new(),
            },
            Event::JobSignalSent {
                job_id: 10,
                time: 17,
            },
            Event::ArrayTaskSplit {
                array_job_id: 15,
                task: 2,
                job_id: 18,
                time: 19,
            },
            Event::ArrayTaskDropped {
                array_job_id: 15,
                task: 3,
                time: 31,
            },
            Event::PartitionUpdated {
                partition: "debug".into(),
                attributes: vec![
                    ("State".into(), "DOWN".into()),
                    ("MaxTime".into(), "1:00:00".into()),
                ],
                uid: 0,
                time: 20,
            },
            Event::PartitionUpdatesReset {
                keep: vec!["State".into()],
            },
            Event::PartitionUpdatesReset { keep: vec![] },
            Event::PartitionCreated {
                partition: "new".into(),
                attributes: vec![("Nodes".into(), "n[1-2]".into())],
                uid: 0,
                time: 22,
            },
            Event::PartitionCreated {
                partition: "bare".into(),
                attributes: vec![],
                uid: 5,
                time: 23,
            },
            Event::PartitionDeleted {
                partition: "new".into(),
                uid: 0,
                time: 24,
            },
            Event::PartitionTableReset { keep_created: true },
            Event::PartitionTableReset {
                keep_created: false,
            },
            Event::NodeAttrsUpdated {
                node: "n2".into(),
                attrs: super::super::node_attrs::NodeAttrs {
                    features: Some(vec!["fast".into(), "ib".into()]),
                    active_features: Some(vec![]),
                    weight: Some(7),
                    comment: Some("new disk".into()),
                },
                uid: 0,
                time: 21,
            },
            Event::NodeAttrsUpdated {
                node: "n1".into(),
                attrs: super::super::node_attrs::NodeAttrs::default(),
                uid: 5,
                time: 22,
            },
            Event::NodeAttrsReset,
            Event::JobSuspended {
                job_id: 9,
                time: 25,
            },
            Event::JobResumed {
                job_id: 9,
                time: -1,
            },
            Event::JobIdTaken {
                job_id: 12,
                priority: Some(4_294_901_757),
            },
            Event::JobIdTaken {
                job_id: 13,
                priority: None,
            },
        ]
    }

    #[test]
    fn every_event_round_trips() {
        for e in samples() {
            let mut buf = Vec::new();
            e.encode(&mut buf);
            assert_eq!(Event::decode(&buf).unwrap(), e);
        }
    }

    /// Holds and releases journaled before they carried their time (tag 5)
    /// still decode, without one.
    #[test]
    fn hold_records_without_a_time_still_decode() {
        let mut buf = Vec::new();
        let mut w = Writer(&mut buf);
        w.u8(5);
        w.u32(8);
        w.hold(Some(Hold::User));
        assert_eq!(
            Event::decode(&buf).unwrap(),
            Event::JobHoldChanged {
                job_id: 8,
                hold: Some(Hold::User),
                time: None,
            }
        );
        buf.push(1);
        assert!(Event::decode(&buf).is_err());
    }

    /// Journals written before requeues carried a begin time hold tag 6
    /// records: they still decode, as a requeue eligible at once.
    #[test]
    fn requeue_records_of_the_first_layout_still_decode() {
        let mut buf = Vec::new();
        let mut w = Writer(&mut buf);
        w.u8(6);
        w.u32(8);
        w.i64(11);
        w.hold(Some(Hold::Admin));
        w.bool(false);
        w.str("node failed");
        assert_eq!(
            Event::decode(&buf).unwrap(),
            Event::JobRequeued {
                job_id: 8,
                time: 11,
                hold: Some(Hold::Admin),
                launch_failed: false,
                detail: "node failed".into(),
                begin_time: None,
            }
        );
        // A tag 6 record has no begin time field: one more byte is damage.
        buf.push(1);
        assert!(Event::decode(&buf).is_err());
    }

    /// Journals written before registrations were checked against
    /// slurm.conf hold tag 8 records: they still decode, as registrations
    /// that were not short.
    #[test]
    fn registration_records_of_the_first_layout_still_decode() {
        let mut buf = Vec::new();
        let mut w = Writer(&mut buf);
        w.u8(8);
        w.str("n1");
        w.i64(42);
        w.str("x86_64");
        w.str("Linux");
        assert_eq!(
            Event::decode(&buf).unwrap(),
            Event::NodeRegistered {
                node: "n1".into(),
                time: 42,
                arch: "x86_64".into(),
                os: "Linux".into(),
                invalid: None,
            }
        );
        // A tag 8 record has no reason field: one more byte is damage.
        buf.push(0);
        assert!(Event::decode(&buf).is_err());
    }

    /// The journal names spec texts by number: each keeps its number, and
    /// a number no build knows is damage, not some other text.
    #[test]
    fn spec_text_numbers_are_fixed() {
        let numbers: Vec<u8> = SpecText::ALL.iter().map(|t| *t as u8).collect();
        assert_eq!(numbers, (1..=12).collect::<Vec<u8>>());
        for t in SpecText::ALL {
            assert_eq!(SpecText::from_u8(t as u8), Some(t));
        }
        let record = |field: u8| {
            let mut buf = Vec::new();
            let mut w = Writer(&mut buf);
            w.u8(7);
            w.u32(8);
            w.u32(1);
            w.u8(10);
            w.u8(field);
            w.str("*w");
            buf
        };
        let text = |field, text: &str| Event::JobUpdated {
            job_id: 8,
            changes: vec![JobChange::Text(field, text.into())],
        };
        assert_eq!(
            Event::decode(&record(11)).unwrap(),
            text(SpecText::Gres, "*w")
        );
        assert_eq!(
            Event::decode(&record(12)).unwrap(),
            text(SpecText::WcKey, "*w")
        );
        for unknown in [0, 13, 255] {
            assert!(
                matches!(
                    Event::decode(&record(unknown)),
                    Err(DecodeError::Unknown {
                        what: "spec text field",
                        ..
                    })
                ),
                "{unknown}"
            );
        }
    }

    #[test]
    fn truncated_and_padded_records_are_errors() {
        for e in samples() {
            let mut buf = Vec::new();
            e.encode(&mut buf);
            for cut in 0..buf.len() {
                assert!(Event::decode(&buf[..cut]).is_err(), "{e:?} cut at {cut}");
            }
            buf.push(0);
            assert!(matches!(
                Event::decode(&buf),
                Err(DecodeError::Trailing { extra: 1 })
            ));
        }
        assert!(matches!(
            Event::decode(&[200]),
            Err(DecodeError::Unknown { .. })
        ));
    }
}
