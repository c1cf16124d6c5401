//! Submission options beyond the job's size and placement: `--licenses`,
//! `--tmp`, `--deadline` (with `--time-min`), `--signal`, `--network`,
//! `--gpus`, `--gpus-per-node`, `--gpus-per-task` and `--reservation`.
//!
//! Each was once accepted and silently dropped; now each is checked at
//! submission the way Slurm 22.05 checks it ([`Controller::check_submit_options`]),
//! kept with the job ([`SubmitExtras`], part of its shared [`JobSpec`]),
//! shown by `scontrol show job` and `squeue`, and acted on: licenses are
//! counted (`core::licenses`), `--tmp` restricts the nodes
//! (`slurm_sched`), a deadline removes a job that can no longer make it
//! (`core::deadline`), a signal is sent before the time limit
//! (`core::signal`).
//!
//! Like the rest of the spec, [`SubmitExtras`] is resolved from the job
//! description by a pure function, so replaying a submission rebuilds it.
//! Snapshots keep it in a record of its own after the job's, written only
//! for jobs that have any of these options or got their `--signal`
//! (`core::snapshot`, tag OPTIONS): files written before it read as jobs
//! with none.
//!
//! No reservation exists yet, so any `--reservation` names an unknown one
//! and is refused ("Requested reservation is invalid"). GPUs are not
//! counted per node yet: `--gpus-per-node=N` is `--gres=gpu:N`, and
//! `--gpus`/`--gpus-per-task` keep the job on nodes that have GPUs.

use slurm_proto::v1;
use slurm_proto::ErrorCode;

use std::sync::LazyLock;

use super::codec::{Reader, Writer};
use super::event::DecodeError;
use super::gres::{self, GresRequestError};
use super::licenses::{self, LicenseAsk};
use super::signal::{self, JobSignal};
use super::{Controller, Job, JobSpec, Reply, SharedSpec, SpecCache};

/// The options of this module, as a job keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct SubmitExtras {
    /// `--licenses`, normalized (each name once).
    pub licenses: Box<[LicenseAsk]>,
    /// `--tmp`, MB per node; 0 for none.
    pub tmp_disk_mb: u64,
    /// `--deadline`, Unix seconds; 0 for none.
    pub deadline: i64,
    /// `--time-min`, minutes.
    pub time_min_minutes: Option<u32>,
    pub signal: Option<JobSignal>,
    /// `--network` as given.
    pub network: Box<str>,
    /// `--gpus` as Slurm shows it (`gres:gpu:2`); empty for none.
    pub tres_per_job: Box<str>,
    /// `--gpus-per-task` as Slurm shows it; empty for none.
    pub tres_per_task: Box<str>,
    /// What `--gpus`/`--gpus-per-task` ask of each node, as a `--gres`
    /// value (`gpu:1`): nodes without it are not used.
    pub node_gres: Box<str>,
}

impl SubmitExtras {
    /// Resolves the options of `desc`. Pure; values refused at submission
    /// never get here, so anything that does not parse reads as not given.
    pub fn from_desc(desc: &v1::JobDescription) -> SubmitExtras {
        let gpus = GpuAsk::parse(&desc.gpus).ok().flatten();
        let per_task = GpuAsk::parse(&desc.gpus_per_task).ok().flatten();
        let node_gres: Vec<String> = [
            gpus.as_ref().filter(|g| g.count > 0).map(|g| g.per_node(1)),
            per_task
                .as_ref()
                .filter(|g| g.count > 0)
                .map(|g| g.per_node(g.count)),
        ]
        .into_iter()
        .flatten()
        .collect();
        SubmitExtras {
            licenses: licenses::parse_request(&desc.licenses)
                .unwrap_or_default()
                .into_boxed_slice(),
            tmp_disk_mb: desc.tmp_disk_mb.unwrap_or(0),
            deadline: desc.deadline.max(0),
            time_min_minutes: desc.time_min_minutes.filter(|m| *m > 0),
            signal: signal::parse(&desc.signal_spec).ok().flatten(),
            network: desc.network.as_str().into(),
            tres_per_job: gpus.as_ref().map_or_else(Box::default, GpuAsk::tres),
            tres_per_task: per_task.as_ref().map_or_else(Box::default, GpuAsk::tres),
            node_gres: node_gres.join(",").into(),
        }
    }

    /// [`SubmitExtras::from_desc`], boxed; `None` when there are none (most
    /// jobs), so that a spec without them costs one pointer.
    pub fn boxed_from_desc(desc: &v1::JobDescription) -> Option<Box<SubmitExtras>> {
        Some(Box::new(SubmitExtras::from_desc(desc))).filter(|x| **x != SubmitExtras::default())
    }

    /// `Licenses=` as shown; empty for none.
    pub fn licenses_shown(&self) -> String {
        licenses::display(&self.licenses)
    }
}

/// What a spec without any of these options reads as.
static NO_EXTRAS: LazyLock<SubmitExtras> = LazyLock::new(SubmitExtras::default);

impl JobSpec {
    /// The job's options of this module (all unset when it gave none).
    pub fn extras(&self) -> &SubmitExtras {
        self.extras.as_deref().unwrap_or(&NO_EXTRAS)
    }
}

/// A `--gpus`/`--gpus-per-node`/`--gpus-per-task` value: `[type:]count`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GpuAsk {
    gpu_type: Option<String>,
    count: u64,
}

impl GpuAsk {
    /// `None` for an empty value. A count of 0 asks for no GPU, and is
    /// shown as asked (`TresPerJob=gres:gpu:0`), as Slurm 22.05 does.
    fn parse(value: &str) -> Result<Option<GpuAsk>, GresRequestError> {
        let value = value.trim();
        if value.is_empty() {
            return Ok(None);
        }
        let item = format!("gpu:{value}");
        let reqs = gres::parse_request(&item)?;
        match reqs.as_slice() {
            [] => {
                let zero = slurm_common::conf::GresSpec::parse(&item)
                    .filter(|g| g.name == "gpu" && g.count == 0)
                    .ok_or(GresRequestError::Malformed { item })?;
                Ok(Some(GpuAsk {
                    gpu_type: zero.gres_type,
                    count: 0,
                }))
            }
            [one] if one.name == "gpu" => Ok(Some(GpuAsk {
                gpu_type: one.gres_type.clone(),
                count: one.count,
            })),
            _ => Err(GresRequestError::Malformed {
                item: value.to_string(),
            }),
        }
    }

    /// As a `--gres` item asking `count` of these GPUs on a node.
    fn per_node(&self, count: u64) -> String {
        match &self.gpu_type {
            Some(t) => format!("gpu:{t}:{count}"),
            None => format!("gpu:{count}"),
        }
    }

    /// As Slurm shows it in TresPerJob=/TresPerTask=.
    fn tres(&self) -> Box<str> {
        format!("gres:{}", self.per_node(self.count)).into()
    }
}

impl Controller {
    /// The submission checks of these options, in Slurm's order, on a
    /// description whose partition is `partition`. `--gpus-per-node` is
    /// folded into `desc.gres` here (Slurm keeps both as one per-node GPU
    /// request), so that the `--gres` checks and placement apply to it.
    pub(super) fn check_submit_options(
        &self,
        desc: &mut v1::JobDescription,
        partition: usize,
        now: i64,
    ) -> Result<(), Reply> {
        if !desc.reservation.trim().is_empty() {
            tracing::info!(reservation = %desc.reservation, "no such reservation");
            return Err(Reply::error(ErrorCode::ReservationInvalid, ""));
        }
        if let Err(e) = self.license_request(&desc.licenses) {
            tracing::info!(licenses = %desc.licenses, error = %e, "invalid license request");
            return Err(Reply::error(ErrorCode::InvalidLicenses, ""));
        }
        if let Err(e) = signal::parse(&desc.signal_spec) {
            return Err(Reply::error(ErrorCode::MalformedRequest, e.to_string()));
        }
        self.check_deadline(desc, partition, now)?;
        // A deadline job that gives neither a time limit nor a time-min,
        // in a partition without DefaultTime, may run for a minute at
        // least (TimeMin=00:01:00), as Slurm sets it.
        let no_limit = slurm_proto::convert::time_limit("time_limit", desc.time_limit.as_ref())
            .ok()
            .flatten()
            .is_none();
        if desc.deadline > 0
            && no_limit
            && desc.time_min_minutes.is_none()
            && self.partitions[partition].view.default_time.is_none()
        {
            desc.time_min_minutes = Some(1);
        }
        self.check_gpus(desc, partition)
    }

    /// A `--licenses` (or `scontrol update Licenses=`) value, parsed and
    /// checked against slurm.conf's Licenses=.
    pub(super) fn license_request(
        &self,
        text: &str,
    ) -> Result<Vec<LicenseAsk>, licenses::LicenseRequestError> {
        let asks = licenses::parse_request(text)?;
        licenses::validate(&asks, &self.cfg.licenses)?;
        Ok(asks)
    }

    /// `--deadline` and `--time-min` against the job's time limit
    /// (`core::deadline::submission_refusal`).
    fn check_deadline(
        &self,
        desc: &v1::JobDescription,
        partition: usize,
        now: i64,
    ) -> Result<(), Reply> {
        // Slurm 22.05 refuses `--time-min=0` (which sbatch sends as
        // infinite, as it does `-t 0`) and `--time-min=UNLIMITED`, with or
        // without `-t`, as an invalid time-min; 0 clears it in an update.
        if desc
            .time_min_minutes
            .is_some_and(|m| m == 0 || m >= slurm_common::time::MAX_LIMIT_MINUTES)
        {
            return Err(Reply::error(ErrorCode::InvalidTimeMin, ""));
        }
        if desc.deadline <= 0 && desc.time_min_minutes.is_none() {
            return Ok(());
        }
        let limit = slurm_proto::convert::time_limit("time_limit", desc.time_limit.as_ref())
            .ok()
            .flatten()
            .map(slurm_common::time::TimeLimit::for_job_request);
        let part = &self.partitions[partition].view;
        let limit = limit.unwrap_or_else(|| {
            part.default_time
                .unwrap_or(part.max_time)
                .min(part.max_time)
        });
        let earliest = now.max(desc.begin_time);
        if let Some(code) = super::deadline::submission_refusal(
            desc.deadline,
            earliest,
            desc.time_min_minutes,
            limit,
        ) {
            tracing::info!(
                deadline = desc.deadline,
                time_min = desc.time_min_minutes,
                "job cannot end by its deadline or within its time limit"
            );
            return Err(Reply::error(code, ""));
        }
        Ok(())
    }

    /// `--gpus*`: each must parse and be satisfiable by some node of the
    /// partition, with the refusals of `--gres` (`core::gres`).
    fn check_gpus(&self, desc: &mut v1::JobDescription, partition: usize) -> Result<(), Reply> {
        let invalid = |e: &dyn std::fmt::Display| {
            tracing::info!(error = %e, "invalid gpu request");
            Reply::error(ErrorCode::InvalidGres, "")
        };
        let members = &self.partitions[partition].view.nodes;
        let mut needs: Vec<String> = Vec::new();
        if let Some(per_node) = GpuAsk::parse(&desc.gpus_per_node).map_err(|e| invalid(&e))? {
            let gres_has_gpu = gres::parse_request(&desc.gres)
                .map_err(|e| invalid(&e))?
                .iter()
                .any(|g| g.name == "gpu");
            if gres_has_gpu {
                return Err(invalid(&"both --gres=gpu and --gpus-per-node given"));
            }
            let item = per_node.per_node(per_node.count);
            desc.gres = if desc.gres.trim().is_empty() {
                item
            } else {
                format!("{},{item}", desc.gres.trim())
            };
        }
        // A count of 0 needs no node to have GPUs.
        let asks = |v: &str| GpuAsk::parse(v).map(|g| g.filter(|g| g.count > 0));
        if let Some(g) = asks(&desc.gpus).map_err(|e| invalid(&e))? {
            needs.push(g.per_node(1));
        }
        if let Some(g) = asks(&desc.gpus_per_task).map_err(|e| invalid(&e))? {
            needs.push(g.per_node(g.count));
        }
        for need in needs {
            match self.check_gres(&need, members) {
                Ok(None) => {}
                Ok(Some(_)) => {
                    tracing::info!(gpus = %need, "no node of the partition has the gpus asked for");
                    return Err(Reply::error(ErrorCode::RequestedNodeConfigUnavailable, ""));
                }
                Err(e) => return Err(invalid(&e)),
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------ snapshot

/// Changes the options of `spec` (`scontrol update`); a spec left with
/// none keeps none.
pub(super) fn update(spec: &mut JobSpec, change: impl FnOnce(&mut SubmitExtras)) {
    let mut x = spec.extras.take().unwrap_or_default();
    change(&mut x);
    spec.extras = Some(x).filter(|x| **x != SubmitExtras::default());
}

/// Whether `job` needs an OPTIONS record in a snapshot.
pub(super) fn has_record(job: &Job) -> bool {
    job.signal_sent || job.spec.extras.is_some()
}

/// Writes the OPTIONS record body of `job` (after its tag).
pub(super) fn write_record(w: &mut Writer<'_>, job: &Job) {
    let SubmitExtras {
        licenses,
        tmp_disk_mb,
        deadline,
        time_min_minutes,
        signal,
        network,
        tres_per_job,
        tres_per_task,
        node_gres,
    } = job.spec.extras();
    w.u32(job.id.get());
    w.len(licenses.len());
    for l in licenses.iter() {
        w.str(&l.name);
        w.u32(l.count);
    }
    w.u64(*tmp_disk_mb);
    w.i64(*deadline);
    w.opt_u32(*time_min_minutes);
    match signal {
        None => w.u8(0),
        Some(s) => {
            w.u8(1 | (u8::from(s.batch_only) << 1) | (u8::from(s.reservation) << 2));
            w.u32(s.signal);
            w.u32(u32::from(s.secs_before));
        }
    }
    w.str(network);
    w.str(tres_per_job);
    w.str(tres_per_task);
    w.str(node_gres);
    w.bool(job.signal_sent);
}

/// What an OPTIONS record holds.
#[derive(Debug)]
pub(super) struct OptionsRecord {
    pub job_id: u32,
    extras: SubmitExtras,
    signal_sent: bool,
}

/// Reads an OPTIONS record body (after its tag).
pub(super) fn read_record(r: &mut Reader<'_>) -> Result<OptionsRecord, DecodeError> {
    let job_id = r.u32("job id")?;
    let n = r.u32("license count")?;
    // Each takes at least 8 bytes: never reserve more than the record has.
    let mut licenses = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(r.left() / 8));
    for _ in 0..n {
        licenses.push(LicenseAsk {
            name: r.text("license name")?.into(),
            count: r.u32("license count")?,
        });
    }
    let tmp_disk_mb = r.u64("tmp disk")?;
    let deadline = r.i64("deadline")?;
    let time_min_minutes = r.opt_u32("time min")?;
    let at = r.pos;
    let flags = r.u8("signal flags")?;
    let signal = match flags {
        0 => None,
        f if f & 1 == 1 && f < 8 => {
            let number = r.u32("signal")?;
            let at_secs = r.pos;
            let secs = r.u32("signal time")?;
            Some(JobSignal {
                signal: number,
                secs_before: u16::try_from(secs).map_err(|_| DecodeError::Unknown {
                    offset: at_secs,
                    what: "signal time",
                    value: secs,
                })?,
                batch_only: f & 2 != 0,
                reservation: f & 4 != 0,
            })
        }
        f => {
            return Err(DecodeError::Unknown {
                offset: at,
                what: "signal flags",
                value: u32::from(f),
            })
        }
    };
    let extras = SubmitExtras {
        licenses: licenses.into_boxed_slice(),
        tmp_disk_mb,
        deadline,
        time_min_minutes,
        signal,
        network: r.text("network")?.into(),
        tres_per_job: r.text("tres per job")?.into(),
        tres_per_task: r.text("tres per task")?.into(),
        node_gres: r.text("node gres")?.into(),
    };
    Ok(OptionsRecord {
        job_id,
        extras,
        signal_sent: r.bool("signal sent")?,
    })
}

impl OptionsRecord {
    /// Gives `job` (read from the JOB record before this one) its options;
    /// its spec is shared through `specs` as at submission.
    pub(super) fn apply_to(self, job: &mut Job, specs: &mut SpecCache) {
        let mut spec: JobSpec = (*job.spec).clone();
        spec.extras = Some(Box::new(self.extras)).filter(|x| **x != SubmitExtras::default());
        job.spec = SharedSpec::new(specs.share(spec), job.spec.files);
        job.signal_sent = self.signal_sent;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn desc() -> v1::JobDescription {
        v1::JobDescription::default()
    }

    #[test]
    fn nothing_given_is_nothing_kept() {
        assert_eq!(SubmitExtras::from_desc(&desc()), SubmitExtras::default());
    }

    #[test]
    fn options_are_resolved_from_the_description() {
        let d = v1::JobDescription {
            licenses: "foo:2,bar".into(),
            tmp_disk_mb: Some(100),
            deadline: 1_700_000_000,
            time_min_minutes: Some(5),
            signal_spec: "B:USR1@50".into(),
            network: "sn_all".into(),
            gpus: "a100:2".into(),
            gpus_per_task: "1".into(),
            ..desc()
        };
        let x = SubmitExtras::from_desc(&d);
        assert_eq!(x.licenses_shown(), "foo:2,bar:1");
        assert_eq!(x.tmp_disk_mb, 100);
        assert_eq!(x.deadline, 1_700_000_000);
        assert_eq!(x.time_min_minutes, Some(5));
        assert_eq!(
            x.signal.map(|s| (s.signal, s.secs_before, s.batch_only)),
            Some((10, 50, true))
        );
        assert_eq!(&*x.network, "sn_all");
        assert_eq!(&*x.tres_per_job, "gres:gpu:a100:2");
        assert_eq!(&*x.tres_per_task, "gres:gpu:1");
        assert_eq!(&*x.node_gres, "gpu:a100:1,gpu:1");
    }

    /// `--gpus=0`, `--gpus-per-task=a100:0`: shown as asked, as Slurm
    /// 22.05 shows them, and asking no node for GPUs.
    #[test]
    fn zero_gpus_are_shown_and_need_nothing() {
        let d = v1::JobDescription {
            gpus: "0".into(),
            gpus_per_task: "a100:0".into(),
            ..desc()
        };
        let x = SubmitExtras::from_desc(&d);
        assert_eq!(&*x.tres_per_job, "gres:gpu:0");
        assert_eq!(&*x.tres_per_task, "gres:gpu:a100:0");
        assert_eq!(&*x.node_gres, "");
        assert!(GpuAsk::parse("x:y:0:z").is_err());
    }

    #[test]
    fn values_that_do_not_parse_read_as_not_given() {
        let d = v1::JobDescription {
            licenses: "a|b".into(),
            signal_spec: "X:USR9".into(),
            gpus: "a:b:c:d".into(),
            deadline: -7,
            time_min_minutes: Some(0),
            ..desc()
        };
        assert_eq!(SubmitExtras::from_desc(&d), SubmitExtras::default());
    }

    #[test]
    fn gpu_values() {
        assert_eq!(GpuAsk::parse("").unwrap(), None);
        assert_eq!(GpuAsk::parse("0").unwrap().map(|g| g.count), Some(0));
        let g = GpuAsk::parse("4").unwrap().unwrap();
        assert_eq!(
            (g.per_node(1), &*g.tres()),
            ("gpu:1".to_string(), "gres:gpu:4")
        );
        assert!(GpuAsk::parse("1,2").is_err());
        let typed = GpuAsk::parse("v100:3").unwrap().unwrap();
        assert_eq!((typed.gpu_type.as_deref(), typed.count), (Some("v100"), 3));
        assert!(GpuAsk::parse("x:y:z:w").is_err());
    }
}
