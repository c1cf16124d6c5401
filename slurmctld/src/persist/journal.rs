//! The event journal: `<StateSaveLocation>/journal.<generation>`.
//!
//! ```text
//! header  : "SLURMJNL" | u32 journal version | u32 event format version   (16 bytes)
//! record  : u32 payload length | u32 crc32(payload) | payload (one Event)
//! copy    : u32 payload length | COPY_FLAG, then as a record; the payload is
//!           u32 segment | u64 offset | a script record (persist::scripts)
//! ```
//!
//! Integers are little endian. A batch's script copies come before its
//! events: the segments are not synced with each batch, and recovery puts
//! back from these copies what a segment lost (see `persist::scripts`).
//! Version 1 (before copies existed) is read as well; a version 1
//! generation resumed for appending gets the current header first.
//!
//! Appends write a whole batch of records with
//! one `write` and one `fdatasync` (group commit). The file is written
//! ahead with zeros ([`ZERO_AHEAD`] past the last record), so that most
//! syncs flush data and not the file's size; a record head of zeros (no
//! event encodes to nothing) marks the end of the records. A crash can
//! leave the last record incomplete or with a bad checksum; replay drops
//! such a torn tail and truncates the file to the last whole record. A crash while a new
//! generation is created can leave its header incomplete; that file held no
//! event yet and is rewritten. A bad record followed by more data, or a torn
//! record in a generation that was already closed, is real corruption and
//! stops the controller with the file and offset, because silently skipping
//! it would lose acknowledged work.
//!
//! Generations: each snapshot starts a new journal file (see
//! `persist::store`), so that the events it covers can be removed once it
//! is durable. The number is in the file name; the framing is the same.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::crc::crc32;
use super::scripts::{JobFiles, ScriptCopy};
use super::{fill_zeros, ZERO_AHEAD};
use crate::core::event::{DecodeError, Event, EVENT_FORMAT_VERSION};

/// Name of the single journal of state directories written before
/// generations existed; it is renamed to generation 0 at startup.
pub const LEGACY_JOURNAL_FILE: &str = "journal";
/// File name prefix of a generation: `journal.<n>`.
pub const JOURNAL_PREFIX: &str = "journal.";
pub const JOURNAL_MAGIC: &[u8; 8] = b"SLURMJNL";
/// Version of the framing described in the module docs.
pub const JOURNAL_VERSION: u32 = 2;
/// The last version without script copies, still read.
const JOURNAL_VERSION_NO_COPIES: u32 = 1;
/// Set in a record's length word: the payload is a script copy.
const COPY_FLAG: u32 = 1 << 31;
pub const HEADER_LEN: usize = 16;
const RECORD_HEAD: usize = 8;
/// A record larger than this is treated as corruption (a job script is
/// limited to a few MB by Slurm; this leaves ample room).
const MAX_RECORD: u32 = 256 * 1024 * 1024;

#[derive(Debug, Error)]
pub enum JournalError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not a journal (bad header)")]
    BadHeader { path: PathBuf },
    #[error("{path}: journal version {found}/{events} is not supported (this build reads {JOURNAL_VERSION}/{EVENT_FORMAT_VERSION})")]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        events: u32,
    },
    #[error("{path}: corrupt record at byte offset {offset}: {detail}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{path}: record at byte offset {offset} does not decode: {source}")]
    Decode {
        path: PathBuf,
        offset: u64,
        #[source]
        source: DecodeError,
    },
    #[error(
        "{path}: state belongs to cluster {found}, not {expected}; remove it or fix ClusterName"
    )]
    ClusterMismatch {
        path: PathBuf,
        found: String,
        expected: String,
    },
}

impl JournalError {
    /// Damage in the file (what `slurmctld -i` may set aside), as opposed
    /// to an I/O failure, a foreign version or another cluster's state.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            JournalError::BadHeader { .. }
                | JournalError::Corrupt { .. }
                | JournalError::Decode { .. }
        )
    }
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Refuses a state directory written for another cluster; records the
/// name in a new one.
pub fn check_cluster_name(dir: &Path, cluster: &str) -> Result<(), JournalError> {
    let path = dir.join("clustername");
    match std::fs::read_to_string(&path) {
        Ok(found) => {
            let found = found.trim();
            if found != cluster {
                return Err(JournalError::ClusterMismatch {
                    path,
                    found: found.to_string(),
                    expected: cluster.to_string(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(io_err(dir))?;
            std::fs::write(&path, format!("{cluster}\n")).map_err(io_err(&path))?;
            sync_dir(dir).map_err(io_err(dir))
        }
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// Path of journal generation `generation` in `dir`.
pub fn journal_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{JOURNAL_PREFIX}{generation}"))
}

/// The generation a file name stands for (`journal.<n>`, nothing else).
pub fn parse_generation(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(JOURNAL_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Generations present in `dir`, in increasing order.
pub fn list_generations(dir: &Path) -> Result<Vec<u64>, JournalError> {
    let mut gens = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(io_err(dir))?;
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        if let Some(g) = entry.file_name().to_str().and_then(parse_generation) {
            gens.push(g);
        }
    }
    gens.sort_unstable();
    Ok(gens)
}

/// What reading one journal file found.
#[derive(Debug)]
pub struct Replay {
    /// The events of the valid prefix.
    pub events: Vec<Event>,
    /// The script copies of the valid prefix.
    pub copies: Vec<ScriptCopy>,
    /// Length of the valid prefix (0 when the header itself was torn).
    pub valid_len: u64,
    /// Bytes of a torn final record (or header) that are to be dropped.
    pub dropped_tail: u64,
    /// Zeros written ahead past the valid prefix (kept, see the module
    /// docs); 0 when a tail is dropped.
    pub zeros_after: u64,
    /// The first damage; the events before it are in `events`.
    pub damage: Option<JournalError>,
}

/// Reads and checks journal file `path`. `last`: the newest generation,
/// where a torn tail (or header) is the trace of a crash and not damage.
/// Only I/O errors and a foreign version are `Err`.
pub fn read_journal(path: &Path, last: bool) -> Result<Replay, JournalError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let replay = parse(path, &bytes, last);
    if let Some(e @ JournalError::UnsupportedVersion { .. }) = replay.damage {
        return Err(e);
    }
    Ok(replay)
}

/// An open journal generation, positioned at its end.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    generation: u64,
    file: File,
    len: u64,
    /// Bytes from the start that are written (records or zeros): an append
    /// that ends inside them rewrites in place.
    written: u64,
    buf: Vec<u8>,
}

impl Journal {
    /// Creates generation `generation` in `dir` holding only its header, and
    /// makes it and its directory entry durable. A file of that name left
    /// by a rotation that failed (a header at most) is replaced; one that
    /// holds events is never overwritten.
    pub fn create(dir: &Path, generation: u64) -> Result<Journal, JournalError> {
        let path = journal_path(dir, generation);
        // Never truncate: with a backup controller, another process may
        // own this generation and be appending to it. A new file is created
        // exclusively; a header-only leftover is reused as it is.
        let file = match std::fs::metadata(&path) {
            Ok(m) if m.len() > HEADER_LEN as u64 => {
                return Err(io_err(&path)(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "journal generation already holds events",
                )))
            }
            Ok(_) => OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(io_err(&path))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(io_err(&path))?,
            Err(e) => return Err(io_err(&path)(e)),
        };
        {
            use std::os::unix::fs::FileExt;
            file.write_all_at(&header(), 0).map_err(io_err(&path))?;
        }
        file.sync_all().map_err(io_err(&path))?;
        sync_dir(dir).map_err(io_err(dir))?;
        Ok(Journal {
            path,
            generation,
            file,
            len: HEADER_LEN as u64,
            written: HEADER_LEN as u64,
            buf: Vec::new(),
        })
    }

    /// Opens generation `generation` for appending after its first
    /// `valid_len` bytes, followed by `zeros_after` zeros written ahead
    /// (both from [`read_journal`]'s [`Replay`]): a torn tail is cut off,
    /// a torn header written again.
    pub fn resume(
        dir: &Path,
        generation: u64,
        valid_len: u64,
        zeros_after: u64,
    ) -> Result<Journal, JournalError> {
        let path = journal_path(dir, generation);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        let on_disk = file.metadata().map_err(io_err(&path))?.len();
        if valid_len >= HEADER_LEN as u64 {
            // A generation of an older version gets this version's header
            // before records of this version follow.
            use std::os::unix::fs::FileExt;
            let mut head = [0u8; HEADER_LEN];
            file.read_exact_at(&mut head, 0).map_err(io_err(&path))?;
            if head != header() {
                file.write_all_at(&header(), 0).map_err(io_err(&path))?;
                file.sync_data().map_err(io_err(&path))?;
            }
        }
        let mut len = valid_len;
        let mut written = valid_len.saturating_add(zeros_after);
        if valid_len < HEADER_LEN as u64 {
            file.set_len(0).map_err(io_err(&path))?;
            file.write_all(&header()).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
            len = HEADER_LEN as u64;
            written = len;
        } else if on_disk != written {
            file.set_len(valid_len).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
            written = valid_len;
        }
        Ok(Journal {
            path,
            generation,
            file,
            len,
            written,
            buf: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Size in bytes, header included.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len <= HEADER_LEN as u64
    }

    /// Appends the script copies of `files`, then `events`, and makes
    /// them durable with one fdatasync. An append that passes the zeros
    /// written ahead writes the next [`ZERO_AHEAD`] bytes of zeros before
    /// that sync.
    pub fn append(&mut self, files: &[JobFiles], events: &[Event]) -> Result<(), JournalError> {
        if events.is_empty() && files.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        for f in files {
            let at = self.begin_record();
            ScriptCopy::encode(f, &mut self.buf);
            self.end_record(at, COPY_FLAG);
        }
        for e in events {
            let at = self.begin_record();
            e.encode(&mut self.buf);
            self.end_record(at, 0);
        }
        // Positioned writes at the known end: a failed or partial write
        // leaves nothing behind that a later append would follow.
        use std::os::unix::fs::FileExt;
        self.file
            .write_all_at(&self.buf, self.len)
            .map_err(io_err(&self.path))?;
        let end = self.len + self.buf.len() as u64;
        if end > self.written {
            self.written = fill_zeros(&self.file, end, end.saturating_add(ZERO_AHEAD))
                .map_err(io_err(&self.path))?;
        }
        self.file.sync_data().map_err(io_err(&self.path))?;
        self.len = end;
        Ok(())
    }

    /// Starts a record in `buf`; returns where its head is.
    fn begin_record(&mut self) -> usize {
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0u8; RECORD_HEAD]);
        at
    }

    /// Fills in the head of the record begun at `at` (length with `flag`,
    /// checksum).
    fn end_record(&mut self, at: usize, flag: u32) {
        let payload = &self.buf[at + RECORD_HEAD..];
        let len = u32::try_from(payload.len()).unwrap_or(MAX_RECORD + 1) | flag;
        let crc = crc32(payload);
        self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
        self.buf[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
    }
}

fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(JOURNAL_MAGIC);
    h[8..12].copy_from_slice(&JOURNAL_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&EVENT_FORMAT_VERSION.to_le_bytes());
    h
}

/// Makes the entries of `dir` (a file created, renamed or removed) durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Parses a whole journal: the events of the valid prefix, its length, and
/// the first damage if any.
fn parse(path: &Path, bytes: &[u8], last: bool) -> Replay {
    let total = bytes.len() as u64;
    let mut out = Replay {
        events: Vec::new(),
        copies: Vec::new(),
        valid_len: 0,
        dropped_tail: 0,
        zeros_after: 0,
        damage: None,
    };
    let damage = |offset: u64, detail: String| JournalError::Corrupt {
        path: path.to_path_buf(),
        offset,
        detail,
    };
    if bytes.len() < HEADER_LEN {
        // A crash while the header of a new generation was written.
        if last && header().starts_with(bytes) {
            out.dropped_tail = total;
            return out;
        }
        out.damage = Some(if JOURNAL_MAGIC.starts_with(&bytes[..bytes.len().min(8)]) {
            damage(0, format!("header is only {} bytes", bytes.len()))
        } else {
            JournalError::BadHeader {
                path: path.to_path_buf(),
            }
        });
        return out;
    }
    if &bytes[..8] != JOURNAL_MAGIC {
        out.damage = Some(JournalError::BadHeader {
            path: path.to_path_buf(),
        });
        return out;
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (version, events_version) = (word(8), word(12));
    let copies_allowed = version == JOURNAL_VERSION;
    if !(copies_allowed || version == JOURNAL_VERSION_NO_COPIES)
        || events_version != EVENT_FORMAT_VERSION
    {
        out.damage = Some(JournalError::UnsupportedVersion {
            path: path.to_path_buf(),
            found: version,
            events: events_version,
        });
        return out;
    }
    let mut pos = HEADER_LEN;
    // Where the records stop being whole: a torn tail when `last`.
    let mut torn: Option<(usize, &'static str)> = None;
    let zeros_from = |at: usize| bytes[at.min(bytes.len())..].iter().all(|&b| b == 0);
    while pos < bytes.len() {
        let rest = bytes.len() - pos;
        if bytes[pos..pos + rest.min(RECORD_HEAD)]
            .iter()
            .all(|&b| b == 0)
        {
            // The end of the records: zeros written ahead follow, unless
            // a crash kept later bytes of a batch and lost these.
            if zeros_from(pos) {
                out.zeros_after = rest as u64;
            } else {
                torn = Some((pos, "a record head of zeros followed by data"));
            }
            break;
        }
        if rest < RECORD_HEAD {
            torn = Some((pos, "incomplete record header"));
            break;
        }
        let len_word = word(pos);
        let copy = copies_allowed && len_word & COPY_FLAG != 0;
        let len = if copy {
            len_word & !COPY_FLAG
        } else {
            len_word
        };
        let crc = word(pos + 4);
        if len > MAX_RECORD {
            out.damage = Some(damage(
                pos as u64,
                format!("record length {len} is implausible"),
            ));
            break;
        }
        let end = pos + RECORD_HEAD + len as usize;
        if end > bytes.len() {
            torn = Some((pos, "incomplete record"));
            break;
        }
        let payload = &bytes[pos + RECORD_HEAD..end];
        if crc32(payload) != crc {
            if zeros_from(end) {
                torn = Some((pos, "checksum mismatch in the last record"));
                break;
            }
            out.damage = Some(damage(pos as u64, "checksum mismatch".to_string()));
            break;
        }
        if copy {
            match ScriptCopy::decode(payload) {
                Some(c) => out.copies.push(c),
                None => {
                    out.damage = Some(damage(
                        pos as u64,
                        "script copy does not decode".to_string(),
                    ));
                    break;
                }
            }
            pos = end;
            continue;
        }
        match Event::decode(payload) {
            Ok(event) => out.events.push(event),
            Err(source) => {
                out.damage = Some(JournalError::Decode {
                    path: path.to_path_buf(),
                    offset: pos as u64,
                    source,
                });
                break;
            }
        }
        pos = end;
    }
    out.valid_len = pos as u64;
    if let Some((at, what)) = torn {
        if last {
            out.dropped_tail = total - at as u64;
        } else {
            // A closed generation was complete and synced before the next
            // one was created: a torn record there is damage.
            out.damage = Some(damage(at as u64, format!("{what} in a closed generation")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurm_proto::v1::JobDescription;

    pub(crate) fn submitted(id: u32) -> Event {
        Event::JobSubmitted {
            job_id: id,
            time: 1_700_000_000 + i64::from(id),
            uid: 1000,
            gid: 1000,
            partition: "debug".into(),
            priority: 4_294_901_760 - id,
            desc: Box::new(JobDescription {
                script: "#!/bin/sh\nsleep 1\n".repeat(4),
                name: format!("job{id}"),
                environment: vec!["PATH=/usr/bin:/bin".into(), "HOME=/home/u".into()],
                work_dir: "/home/u".into(),
                ..JobDescription::default()
            }),
            files: crate::persist::ScriptRef {
                segment: 0,
                offset: u64::from(id) * 67,
                script_len: 20,
                env_len: 31,
                crc: id,
            },
        }
    }

    /// Reads generation 0 of `dir` as the newest and resumes it.
    fn reopen(dir: &Path) -> (Journal, Replay) {
        let replay = read_journal(&journal_path(dir, 0), true).unwrap();
        assert!(replay.damage.is_none(), "{:?}", replay.damage);
        let j = Journal::resume(dir, 0, replay.valid_len, replay.zeros_after).unwrap();
        (j, replay)
    }

    #[test]
    fn appends_and_replays() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut j = Journal::create(dir.path(), 0).unwrap();
            assert!(j.is_empty());
            j.append(&[], &[submitted(1), submitted(2)]).unwrap();
            j.append(&[], &[submitted(3)]).unwrap();
        }
        let (j, replay) = reopen(dir.path());
        assert_eq!(
            replay.events,
            vec![submitted(1), submitted(2), submitted(3)]
        );
        assert_eq!(replay.dropped_tail, 0);
        // The zeros written ahead are kept, and the next append goes over
        // them without changing the file's size.
        let size = std::fs::metadata(j.path()).unwrap().len();
        assert!(replay.zeros_after > 0);
        assert_eq!(j.len() + replay.zeros_after, size);
        assert_eq!(j.generation(), 0);
        let mut j = j;
        j.append(&[], &[submitted(4)]).unwrap();
        assert_eq!(std::fs::metadata(j.path()).unwrap().len(), size);
        let (_, replay) = reopen(dir.path());
        assert_eq!(replay.events.len(), 4);
    }

    #[test]
    fn an_append_past_the_zeros_writes_more_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::create(dir.path(), 0).unwrap();
        j.append(&[], &[submitted(1)]).unwrap();
        let first = std::fs::metadata(j.path()).unwrap().len();
        assert_eq!(first, j.len() + ZERO_AHEAD);
        let mut big = submitted(2);
        if let Event::JobSubmitted { desc, .. } = &mut big {
            desc.comment = "x".repeat(usize::try_from(ZERO_AHEAD).unwrap());
        }
        j.append(&[], &[big.clone()]).unwrap();
        assert_eq!(
            std::fs::metadata(j.path()).unwrap().len(),
            j.len() + ZERO_AHEAD
        );
        let (_, replay) = reopen(dir.path());
        assert_eq!(replay.events, vec![submitted(1), big]);
    }

    #[test]
    fn torn_tail_is_dropped_at_every_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), 0);
        let one = {
            let mut j = Journal::create(dir.path(), 0).unwrap();
            j.append(&[], &[submitted(1)]).unwrap();
            usize::try_from(j.len()).unwrap()
        };
        let (two, end) = {
            let (mut j, _) = reopen(dir.path());
            j.append(&[], &[submitted(2)]).unwrap();
            (
                std::fs::read(&path).unwrap(),
                usize::try_from(j.len()).unwrap(),
            )
        };
        // Cut with nothing after it (a file that was never written
        // ahead), and with the zeros written ahead after it.
        for zeros in [0, 4096] {
            for cut in one..end {
                if zeros > 0 && two[cut..end].iter().all(|&b| b == 0) {
                    // The bytes lost were zeros: the record is whole.
                    continue;
                }
                let mut torn = two[..cut].to_vec();
                torn.resize(cut + zeros, 0);
                std::fs::write(&path, &torn).unwrap();
                let (mut j, replay) = reopen(dir.path());
                assert_eq!(replay.events, vec![submitted(1)], "cut at {cut}");
                let dropped = if cut == one { 0 } else { cut - one + zeros };
                assert_eq!(replay.dropped_tail, dropped as u64, "cut at {cut}");
                // Appending after the repair gives a clean journal.
                j.append(&[], &[submitted(3)]).unwrap();
                drop(j);
                let (_, replay) = reopen(dir.path());
                assert_eq!(replay.events, vec![submitted(1), submitted(3)]);
            }
        }
        // A garbled last record is a torn write too, zeros after it or not.
        let mut bad = two[..end].to_vec();
        bad[end - 1] ^= 0xFF;
        std::fs::write(&path, &bad).unwrap();
        let (_, replay) = reopen(dir.path());
        assert_eq!(replay.events, vec![submitted(1)]);
        let mut bad = two.clone();
        bad[end - 1] ^= 0xFF;
        std::fs::write(&path, &bad).unwrap();
        let (_, replay) = reopen(dir.path());
        assert_eq!(replay.events, vec![submitted(1)]);
    }

    #[test]
    fn a_torn_header_of_the_newest_generation_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), 0);
        for cut in 0..HEADER_LEN {
            std::fs::write(&path, &header()[..cut]).unwrap();
            let (mut j, replay) = reopen(dir.path());
            assert!(replay.events.is_empty());
            assert_eq!(j.len(), HEADER_LEN as u64);
            j.append(&[], &[submitted(1)]).unwrap();
            let (_, replay) = reopen(dir.path());
            assert_eq!(replay.events, vec![submitted(1)], "cut at {cut}");
        }
        // In a closed generation the same bytes are damage.
        std::fs::write(&path, &header()[..5]).unwrap();
        let replay = read_journal(&path, false).unwrap();
        assert!(matches!(
            replay.damage,
            Some(JournalError::Corrupt { offset: 0, .. })
        ));
    }

    #[test]
    fn a_torn_record_in_a_closed_generation_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), 0);
        let mut j = Journal::create(dir.path(), 0).unwrap();
        j.append(&[], &[submitted(1), submitted(2)]).unwrap();
        let end = usize::try_from(j.len()).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        for b in &mut bytes[end - 3..end] {
            *b ^= 0xFF;
        }
        std::fs::write(&path, &bytes).unwrap();
        let replay = read_journal(&path, false).unwrap();
        assert_eq!(replay.events, vec![submitted(1)]);
        let Some(e @ JournalError::Corrupt { offset, .. }) = replay.damage else {
            panic!("{:?}", replay.damage)
        };
        assert_eq!(offset, replay.valid_len);
        assert!(e.to_string().contains("closed generation"), "{e}");
    }

    #[test]
    fn corruption_in_the_middle_names_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), 0);
        let end = {
            let mut j = Journal::create(dir.path(), 0).unwrap();
            j.append(&[], &[submitted(1), submitted(2)]).unwrap();
            usize::try_from(j.len()).unwrap()
        };
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_LEN + RECORD_HEAD + 3] ^= 0x55;
        std::fs::write(&path, &bytes).unwrap();
        let replay = read_journal(&path, true).unwrap();
        assert!(replay.events.is_empty());
        assert_eq!(replay.valid_len, HEADER_LEN as u64);
        let err = replay.damage.unwrap();
        let text = err.to_string();
        assert!(matches!(err, JournalError::Corrupt { offset, .. } if offset == HEADER_LEN as u64));
        assert!(err.is_damage());
        assert!(
            text.contains("journal.0") && text.contains("offset 16"),
            "{text}"
        );

        // Damage after a good record: the good record is the valid prefix.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(end);
        bytes[HEADER_LEN + RECORD_HEAD + 3] ^= 0x55;
        let second = bytes.len() - 10;
        bytes[second] ^= 0x55;
        bytes.extend_from_within(HEADER_LEN..HEADER_LEN + 40);
        std::fs::write(&path, &bytes).unwrap();
        let replay = read_journal(&path, true).unwrap();
        assert_eq!(replay.events, vec![submitted(1)]);
        assert!(replay.damage.is_some());
    }

    #[test]
    fn foreign_files_and_versions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), 0);
        std::fs::write(&path, b"hello world, not a journal").unwrap();
        let replay = read_journal(&path, true).unwrap();
        assert!(matches!(
            replay.damage,
            Some(JournalError::BadHeader { .. })
        ));
        let mut header = JOURNAL_MAGIC.to_vec();
        header.extend_from_slice(&99u32.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes());
        std::fs::write(&path, &header).unwrap();
        let err = read_journal(&path, true).unwrap_err();
        assert!(matches!(
            err,
            JournalError::UnsupportedVersion { found: 99, .. }
        ));
        assert!(!err.is_damage());
    }

    #[test]
    fn creating_a_generation_never_overwrites_events() {
        let dir = tempfile::tempdir().unwrap();
        Journal::create(dir.path(), 4).unwrap();
        // A header only (a rotation that failed after it): replaced.
        let mut j = Journal::create(dir.path(), 4).unwrap();
        j.append(&[], &[submitted(1)]).unwrap();
        let err = Journal::create(dir.path(), 4).unwrap_err();
        assert!(err.to_string().contains("already holds events"), "{err}");
        let replay = read_journal(&journal_path(dir.path(), 4), true).unwrap();
        assert_eq!(replay.events, vec![submitted(1)]);
    }

    #[test]
    fn script_copies_travel_with_their_batch() {
        let dir = tempfile::tempdir().unwrap();
        let f = JobFiles::new(7, "#!/bin/sh\necho hi\n", &["A=1".into()], |_| (3, 4096));
        {
            let mut j = Journal::create(dir.path(), 0).unwrap();
            j.append(std::slice::from_ref(&f), &[submitted(7)]).unwrap();
            j.append(&[], &[submitted(8)]).unwrap();
        }
        let (_, replay) = reopen(dir.path());
        assert_eq!(replay.events, vec![submitted(7), submitted(8)]);
        assert_eq!(
            replay.copies,
            vec![ScriptCopy {
                segment: 3,
                offset: 4096,
                record: f.record.clone()
            }]
        );
        // A copy whose lengths disagree with its size is damage, named.
        let path = journal_path(dir.path(), 0);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = HEADER_LEN + RECORD_HEAD;
        bytes[at + ScriptCopy::PREFIX + 4] ^= 1;
        let crc = crc32(&bytes[at..at + ScriptCopy::PREFIX + f.record.len()]);
        bytes[HEADER_LEN + 4..HEADER_LEN + 8].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let replay = read_journal(&path, true).unwrap();
        let err = replay.damage.unwrap();
        assert!(err.to_string().contains("script copy"), "{err}");
    }

    #[test]
    fn a_version_1_generation_is_read_and_resumed_as_version_2() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), 0);
        {
            let mut j = Journal::create(dir.path(), 0).unwrap();
            j.append(&[], &[submitted(1)]).unwrap();
        }
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let (mut j, replay) = reopen(dir.path());
        assert_eq!(replay.events, vec![submitted(1)]);
        assert_eq!(std::fs::read(&path).unwrap()[..HEADER_LEN], header());
        let f = JobFiles::new(2, "#!/bin/sh\n", &[], |_| (0, 0));
        j.append(std::slice::from_ref(&f), &[submitted(2)]).unwrap();
        let (_, replay) = reopen(dir.path());
        assert_eq!(replay.events, vec![submitted(1), submitted(2)]);
        assert_eq!(replay.copies.len(), 1);
        // In version 1 the copy flag means nothing: an implausible length.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let replay = read_journal(&path, true).unwrap();
        assert_eq!(replay.events, vec![submitted(1)]);
        assert!(replay.damage.is_some());
    }

    #[test]
    fn generation_names() {
        assert_eq!(parse_generation("journal.0"), Some(0));
        assert_eq!(parse_generation("journal.17"), Some(17));
        for bad in [
            "journal",
            "journal.",
            "journal.-1",
            "journal.+1",
            "journal.1.damaged.5",
            "journal.99999999999999999999999",
            "journal.١",
            "snapshot",
        ] {
            assert_eq!(parse_generation(bad), None, "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        for g in [3u64, 1, 10] {
            Journal::create(dir.path(), g).unwrap();
        }
        std::fs::write(dir.path().join("journal.2.damaged.1"), b"x").unwrap();
        assert_eq!(list_generations(dir.path()).unwrap(), vec![1, 3, 10]);
    }

    #[test]
    fn cluster_name_guard() {
        let dir = tempfile::tempdir().unwrap();
        check_cluster_name(dir.path(), "ref").unwrap();
        check_cluster_name(dir.path(), "ref").unwrap();
        let err = check_cluster_name(dir.path(), "other").unwrap_err();
        assert!(matches!(err, JournalError::ClusterMismatch { .. }));
        assert!(err.to_string().contains("ref"));
        assert!(!err.is_damage());
    }

    #[test]
    fn ten_thousand_jobs_replay_quickly() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut j = Journal::create(dir.path(), 0).unwrap();
            let batch: Vec<Event> = (1..=10_000).map(submitted).collect();
            for chunk in batch.chunks(500) {
                j.append(&[], chunk).unwrap();
            }
        }
        let conf = slurm_common::conf::SlurmConf::parse(crate::core::tests::CONF, "slurm.conf")
            .unwrap()
            .conf;
        let start = std::time::Instant::now();
        let (_, replay) = reopen(dir.path());
        let mut ctl =
            crate::core::Controller::new(&conf, crate::core::CtlConfig::from_conf(&conf, vec![]));
        for e in &replay.events {
            ctl.apply(e).unwrap();
        }
        let elapsed = start.elapsed();
        assert_eq!(ctl.jobs().count(), 10_000);
        assert_eq!(ctl.next_job_id(), 10_001);
        eprintln!("replayed 10000 submissions in {elapsed:?}");
    }
}
