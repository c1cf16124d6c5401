//! Reading an encoded `GetJobsReply` one job at a time.
//!
//! Decoding a reply with prost builds every `JobInfo` before the first one
//! is looked at: for 10,000 jobs that is 10,000 structures of a few hundred
//! bytes each, a dozen strings in every one, all freed again when the
//! report is printed. squeue only needs one job at a time (it keeps the
//! rendered row and its sort keys), so [`JobRecords`] walks the reply's
//! `repeated JobInfo jobs = 1` field itself and decodes each record into
//! one reused `JobInfo`, whose strings keep their buffers from one record
//! to the next.
//!
//! Only the outer message is walked here; each record is decoded by prost,
//! so the records read exactly as prost reads them. The outer walk follows
//! the same wire rules as prost (varints of at most ten bytes, unknown
//! fields and groups skipped, the same wire-type checks), which the tests
//! check on arbitrary bytes.

use prost::Message;
use slurm_proto::v1::JobInfo;

/// Field numbers of `GetJobsReply`.
const JOBS: u32 = 1;
const LAST_UPDATE: u32 = 2;
const UNCHANGED: u32 = 3;

/// Wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

/// How deeply unknown groups may nest, as prost allows.
const RECURSION_LIMIT: u32 = 100;

/// Why a reply could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("malformed job list at byte {at}: {what}")]
    Malformed { at: usize, what: &'static str },
    #[error("malformed job record at byte {at}: {source}")]
    Record {
        at: usize,
        #[source]
        source: prost::DecodeError,
    },
}

/// The jobs of an encoded `GetJobsReply`, in the order they were sent.
#[derive(Debug, Clone)]
pub struct JobRecords<'a> {
    reply: &'a [u8],
    at: usize,
    last_update: i64,
    unchanged: bool,
}

impl<'a> JobRecords<'a> {
    pub fn new(reply: &'a [u8]) -> JobRecords<'a> {
        JobRecords {
            reply,
            at: 0,
            last_update: 0,
            unchanged: false,
        }
    }

    /// The records of `reply` from byte `at` on, where an earlier walk
    /// stopped ([`JobRecords::offset`]).
    pub fn resume(reply: &'a [u8], at: usize) -> JobRecords<'a> {
        JobRecords {
            at: at.min(reply.len()),
            ..JobRecords::new(reply)
        }
    }

    /// Where the walk stands: the byte after the last record read.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// `last_update` as read so far (all of it once the records are done).
    pub fn last_update(&self) -> i64 {
        self.last_update
    }

    /// `unchanged` as read so far.
    pub fn unchanged(&self) -> bool {
        self.unchanged
    }

    /// The bytes of the next job record; `None` at the end of the reply.
    pub fn next_record(&mut self) -> Result<Option<&'a [u8]>, ReplyError> {
        while self.at < self.reply.len() {
            let (tag, wire) = self.key()?;
            match (tag, wire) {
                (JOBS, LEN) => {
                    let len = self.len()?;
                    let record = &self.reply[self.at..self.at + len];
                    self.at += len;
                    return Ok(Some(record));
                }
                (LAST_UPDATE, VARINT) => self.last_update = self.varint()? as i64,
                (UNCHANGED, VARINT) => self.unchanged = self.varint()? != 0,
                (JOBS | LAST_UPDATE | UNCHANGED, _) => {
                    return Err(self.malformed("invalid wire type"))
                }
                _ => self.skip(tag, wire, RECURSION_LIMIT)?,
            }
        }
        Ok(None)
    }

    /// Decodes the next record into `job`, replacing what it held; `false`
    /// at the end of the reply.
    pub fn next_into(&mut self, job: &mut JobInfo) -> Result<bool, ReplyError> {
        let Some(record) = self.next_record()? else {
            return Ok(false);
        };
        let at = self.at - record.len();
        job.clear();
        job.merge(record)
            .map_err(|source| ReplyError::Record { at, source })?;
        Ok(true)
    }

    fn malformed(&self, what: &'static str) -> ReplyError {
        ReplyError::Malformed { at: self.at, what }
    }

    /// A LEB128 varint of at most ten bytes, the tenth holding only the
    /// top bit of the value.
    fn varint(&mut self) -> Result<u64, ReplyError> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.reply.get(self.at) else {
                return Err(self.malformed("truncated varint"));
            };
            if i == 9 && byte > 1 {
                return Err(self.malformed("varint overflows 64 bits"));
            }
            self.at += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(self.malformed("varint overflows 64 bits"))
    }

    fn key(&mut self) -> Result<(u32, u8), ReplyError> {
        let key = self.varint()?;
        let key = u32::try_from(key).map_err(|_| self.malformed("invalid key"))?;
        let wire = (key & 7) as u8;
        if wire > FIXED32 {
            return Err(self.malformed("invalid wire type"));
        }
        let tag = key >> 3;
        if tag == 0 {
            return Err(self.malformed("invalid tag 0"));
        }
        Ok((tag, wire))
    }

    /// A length prefix that fits in what is left of the reply.
    fn len(&mut self) -> Result<usize, ReplyError> {
        let len = self.varint()?;
        usize::try_from(len)
            .ok()
            .filter(|len| *len <= self.reply.len() - self.at)
            .ok_or_else(|| self.malformed("length past the end"))
    }

    /// Skips an unknown field, groups included.
    fn skip(&mut self, tag: u32, wire: u8, depth_left: u32) -> Result<(), ReplyError> {
        if depth_left == 0 {
            return Err(self.malformed("groups nested too deeply"));
        }
        let len = match wire {
            VARINT => {
                self.varint()?;
                0
            }
            FIXED64 => 8,
            FIXED32 => 4,
            LEN => self.len()?,
            START_GROUP => loop {
                let (inner, inner_wire) = self.key()?;
                if inner_wire == END_GROUP {
                    if inner != tag {
                        return Err(self.malformed("unexpected end group tag"));
                    }
                    break 0;
                }
                self.skip(inner, inner_wire, depth_left - 1)?;
            },
            _ => return Err(self.malformed("unexpected end group tag")),
        };
        if len > self.reply.len() - self.at {
            return Err(self.malformed("field past the end"));
        }
        self.at += len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use slurm_proto::v1::{self, GetJobsReply};

    /// Every record and the trailing fields, or the first error.
    fn walk(bytes: &[u8]) -> Result<GetJobsReply, ReplyError> {
        let mut records = JobRecords::new(bytes);
        let mut jobs = Vec::new();
        // One reused record, as squeue uses it.
        let mut job = JobInfo::default();
        while records.next_into(&mut job)? {
            jobs.push(job.clone());
        }
        Ok(GetJobsReply {
            jobs,
            last_update: records.last_update(),
            unchanged: records.unchanged(),
        })
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), "[a-z0-9_]{1,12}", "\\PC{0,6}"]
    }

    prop_compose! {
        fn job()(
            job_id in any::<u32>(),
            array in proptest::option::of(any::<u32>()),
            task in proptest::option::of(any::<u32>()),
            spec in text(),
            name in text(),
            user_id in any::<u32>(),
            user_name in text(),
            state in 0i32..13,
            flags in proptest::collection::vec(0i32..14, 0..3),
            reason in text(),
            description in text(),
            priority in any::<u32>(),
            nice in any::<i32>(),
            account in text(),
            partition in text(),
            run_time in any::<u64>(),
            minutes in proptest::option::of(any::<u32>()),
            submit in any::<i64>(),
            nodes in text(),
            num_nodes in any::<u32>(),
            per_cpu in proptest::option::of(any::<u64>()),
            contiguous in any::<bool>(),
        ) -> JobInfo {
            JobInfo {
                job_id,
                array_job_id: array,
                array_task_id: task,
                array_task_spec: spec,
                name,
                user_id,
                user_name,
                state,
                state_flags: flags,
                state_reason: reason,
                state_description: description,
                priority,
                nice,
                account,
                partition,
                run_time_secs: run_time,
                time_limit: minutes.map(|m| v1::TimeLimit {
                    limit: Some(v1::time_limit::Limit::Minutes(m)),
                }),
                submit_time: submit,
                nodes,
                num_nodes,
                memory: per_cpu.map(v1::job_info::Memory::MemPerCpuMb),
                contiguous,
                ..JobInfo::default()
            }
        }
    }

    proptest! {
        /// Records read one at a time into a reused struct are the jobs
        /// prost decodes from the whole reply.
        #[test]
        fn records_match_prost(
            jobs in proptest::collection::vec(job(), 0..8),
            last_update in any::<i64>(),
            unchanged in any::<bool>(),
        ) {
            let reply = GetJobsReply { jobs, last_update, unchanged };
            let bytes = reply.encode_to_vec();
            prop_assert_eq!(walk(&bytes).unwrap(), reply);
        }

        /// On any bytes the walk fails exactly when prost fails, and
        /// otherwise reads what prost reads; it never panics.
        #[test]
        fn arbitrary_bytes_read_as_prost_reads_them(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let ours = walk(&bytes);
            match GetJobsReply::decode(&bytes[..]) {
                Ok(theirs) => prop_assert_eq!(ours.unwrap(), theirs),
                Err(_) => prop_assert!(ours.is_err()),
            }
        }

        /// Valid replies with unknown fields, groups and repeated scalars
        /// spliced in between the records.
        #[test]
        fn unknown_fields_are_skipped_as_prost_skips_them(
            jobs in proptest::collection::vec(job(), 1..4),
            junk in proptest::collection::vec(
                prop_oneof![
                    (4u32..100, any::<u64>()).prop_map(|(t, v)| field_varint(t, v)),
                    (4u32..100, proptest::collection::vec(any::<u8>(), 0..5))
                        .prop_map(|(t, b)| field_len(t, &b)),
                    (4u32..100, any::<u64>()).prop_map(|(t, v)| {
                        let mut out = key(t, 1);
                        out.extend_from_slice(&v.to_le_bytes());
                        out
                    }),
                    (4u32..100, any::<u32>()).prop_map(|(t, v)| {
                        let mut out = key(t, 5);
                        out.extend_from_slice(&v.to_le_bytes());
                        out
                    }),
                    (4u32..100, 4u32..100, any::<u64>()).prop_map(|(g, t, v)| {
                        let mut out = key(g, 3);
                        out.extend(field_varint(t, v));
                        out.extend(key(g, 4));
                        out
                    }),
                    any::<i64>().prop_map(|v| field_varint(2, v as u64)),
                    any::<bool>().prop_map(|v| field_varint(3, u64::from(v))),
                ],
                0..6,
            ),
        ) {
            let mut bytes = Vec::new();
            for (i, job) in jobs.iter().enumerate() {
                bytes.extend(field_len(1, &job.encode_to_vec()));
                if let Some(j) = junk.get(i) {
                    bytes.extend_from_slice(j);
                }
            }
            for j in junk.iter().skip(jobs.len()) {
                bytes.extend_from_slice(j);
            }
            let theirs = GetJobsReply::decode(&bytes[..]).unwrap();
            prop_assert_eq!(walk(&bytes).unwrap(), theirs);
        }
    }

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(tag: u32, wire: u8) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(tag << 3 | u32::from(wire)), &mut out);
        out
    }

    fn field_varint(tag: u32, v: u64) -> Vec<u8> {
        let mut out = key(tag, 0);
        varint(v, &mut out);
        out
    }

    fn field_len(tag: u32, body: &[u8]) -> Vec<u8> {
        let mut out = key(tag, 2);
        varint(body.len() as u64, &mut out);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn wire_errors_are_reported_not_panicked() {
        // A record longer than the reply.
        let err = walk(&[0x0a, 0x05, 0x08]).unwrap_err();
        assert!(
            matches!(err, ReplyError::Malformed { at: 2, .. }),
            "{err:?}"
        );
        // job_id as a string inside a record: prost's error, with where.
        let err = walk(&[0x0a, 0x02, 0x0a, 0x00]).unwrap_err();
        assert!(matches!(err, ReplyError::Record { at: 2, .. }), "{err:?}");
        // Field 1 sent as a varint.
        assert!(walk(&[0x08, 0x01]).is_err());
        // Eleven-byte varint, end group without start, tag 0.
        assert!(walk(&[0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).is_err());
        assert!(walk(&[0x2c]).is_err());
        assert!(walk(&[0x00]).is_err());
        assert_eq!(walk(&[]).unwrap(), GetJobsReply::default());
    }

    #[test]
    fn deeply_nested_groups_are_refused() {
        let mut bytes = Vec::new();
        for _ in 0..(RECURSION_LIMIT + 1) {
            bytes.extend(key(9, 3));
        }
        for _ in 0..(RECURSION_LIMIT + 1) {
            bytes.extend(key(9, 4));
        }
        assert!(walk(&bytes).is_err());
        assert!(GetJobsReply::decode(&bytes[..]).is_err());
    }
}
