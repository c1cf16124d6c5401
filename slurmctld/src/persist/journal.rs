//! The event journal: `<StateSaveLocation>/journal`.
//!
//! ```text
//! header  : "SLURMJNL" | u32 journal version | u32 event format version   (16 bytes)
//! record  : u32 payload length | u32 crc32(payload) | payload (one Event)
//! ```
//!
//! Integers are little endian. Appends write a whole batch of records with
//! one `write` and one `fdatasync` (group commit). A crash can leave the last
//! record incomplete or with a bad checksum; replay drops such a torn tail
//! and truncates the file to the last whole record. A bad record followed by
//! more data is real corruption and stops the controller with the file and
//! offset, because silently skipping it would lose acknowledged work.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::crc::crc32;
use crate::core::event::{DecodeError, Event, EVENT_FORMAT_VERSION};

pub const JOURNAL_FILE: &str = "journal";
pub const JOURNAL_MAGIC: &[u8; 8] = b"SLURMJNL";
/// Version of the framing described in the module docs.
pub const JOURNAL_VERSION: u32 = 1;
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

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> JournalError + '_ {
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
            std::fs::write(&path, format!("{cluster}\n")).map_err(io_err(&path))
        }
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// What replay found.
#[derive(Debug)]
pub struct Replay {
    pub events: Vec<Event>,
    /// Bytes of a torn final record that were dropped.
    pub dropped_tail: u64,
}

/// An open journal, positioned at its end.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    len: u64,
    buf: Vec<u8>,
}

impl Journal {
    /// Opens (or creates) the journal in `dir` and reads every event.
    pub fn open(dir: &Path) -> Result<(Journal, Replay), JournalError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let path = dir.join(JOURNAL_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io_err(&path))?;
        let bytes = std::fs::read(&path).map_err(io_err(&path))?;
        if bytes.is_empty() {
            let mut header = Vec::with_capacity(HEADER_LEN);
            header.extend_from_slice(JOURNAL_MAGIC);
            header.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
            header.extend_from_slice(&EVENT_FORMAT_VERSION.to_le_bytes());
            file.write_all(&header).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
            sync_dir(dir);
            let journal = Journal {
                path,
                file,
                len: HEADER_LEN as u64,
                buf: Vec::new(),
            };
            return Ok((
                journal,
                Replay {
                    events: Vec::new(),
                    dropped_tail: 0,
                },
            ));
        }
        let (events, good_len) = parse(&path, &bytes)?;
        let dropped_tail = bytes.len() as u64 - good_len;
        if dropped_tail > 0 {
            file.set_len(good_len).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
        }
        Ok((
            Journal {
                path,
                file,
                len: good_len,
                buf: Vec::new(),
            },
            Replay {
                events,
                dropped_tail,
            },
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size in bytes, header included.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len <= HEADER_LEN as u64
    }

    /// Appends `events` and makes them durable with one fdatasync.
    pub fn append(&mut self, events: &[Event]) -> Result<(), JournalError> {
        if events.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        for e in events {
            let at = self.buf.len();
            self.buf.extend_from_slice(&[0u8; RECORD_HEAD]);
            e.encode(&mut self.buf);
            let payload = &self.buf[at + RECORD_HEAD..];
            let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
            let crc = crc32(payload);
            self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
            self.buf[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
        }
        self.file.write_all(&self.buf).map_err(io_err(&self.path))?;
        self.file.sync_data().map_err(io_err(&self.path))?;
        self.len += self.buf.len() as u64;
        Ok(())
    }
}

fn sync_dir(dir: &Path) {
    // Make the new file's directory entry durable too; failure here only
    // weakens durability of an empty journal, so it is not fatal.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Parses a whole journal; returns the events and the length of the valid
/// prefix (shorter than `bytes` when the tail was torn).
fn parse(path: &Path, bytes: &[u8]) -> Result<(Vec<Event>, u64), JournalError> {
    if bytes.len() < HEADER_LEN {
        // A crash while writing the header of a new journal.
        if JOURNAL_MAGIC.starts_with(&bytes[..bytes.len().min(8)]) {
            return Err(JournalError::Corrupt {
                path: path.to_path_buf(),
                offset: 0,
                detail: format!("header is only {} bytes", bytes.len()),
            });
        }
        return Err(JournalError::BadHeader {
            path: path.to_path_buf(),
        });
    }
    if &bytes[..8] != JOURNAL_MAGIC {
        return Err(JournalError::BadHeader {
            path: path.to_path_buf(),
        });
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (version, events_version) = (word(8), word(12));
    if version != JOURNAL_VERSION || events_version != EVENT_FORMAT_VERSION {
        return Err(JournalError::UnsupportedVersion {
            path: path.to_path_buf(),
            found: version,
            events: events_version,
        });
    }
    let mut events = Vec::new();
    let mut pos = HEADER_LEN;
    while pos < bytes.len() {
        let rest = bytes.len() - pos;
        if rest < RECORD_HEAD {
            break; // torn record head
        }
        let len = word(pos);
        let crc = word(pos + 4);
        if len > MAX_RECORD {
            return Err(JournalError::Corrupt {
                path: path.to_path_buf(),
                offset: pos as u64,
                detail: format!("record length {len} is implausible"),
            });
        }
        let end = pos + RECORD_HEAD + len as usize;
        if end > bytes.len() {
            break; // torn payload
        }
        let payload = &bytes[pos + RECORD_HEAD..end];
        if crc32(payload) != crc {
            if end == bytes.len() {
                break; // the last record was torn mid-write
            }
            return Err(JournalError::Corrupt {
                path: path.to_path_buf(),
                offset: pos as u64,
                detail: "checksum mismatch".to_string(),
            });
        }
        let event = Event::decode(payload).map_err(|source| JournalError::Decode {
            path: path.to_path_buf(),
            offset: pos as u64,
            source,
        })?;
        events.push(event);
        pos = end;
    }
    Ok((events, pos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurm_proto::v1::JobDescription;

    fn submitted(id: u32) -> Event {
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

    #[test]
    fn appends_and_replays() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut j, replay) = Journal::open(dir.path()).unwrap();
            assert!(replay.events.is_empty());
            assert!(j.is_empty());
            j.append(&[submitted(1), submitted(2)]).unwrap();
            j.append(&[submitted(3)]).unwrap();
        }
        let (j, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(
            replay.events,
            vec![submitted(1), submitted(2), submitted(3)]
        );
        assert_eq!(replay.dropped_tail, 0);
        assert_eq!(j.len(), std::fs::metadata(j.path()).unwrap().len());
    }

    #[test]
    fn torn_tail_is_dropped_at_every_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        {
            let (mut j, _) = Journal::open(dir.path()).unwrap();
            j.append(&[submitted(1)]).unwrap();
        }
        let one = std::fs::read(&path).unwrap();
        {
            let (mut j, _) = Journal::open(dir.path()).unwrap();
            j.append(&[submitted(2)]).unwrap();
        }
        let two = std::fs::read(&path).unwrap();
        for cut in one.len()..two.len() {
            std::fs::write(&path, &two[..cut]).unwrap();
            let (mut j, replay) = Journal::open(dir.path()).unwrap();
            assert_eq!(replay.events, vec![submitted(1)], "cut at {cut}");
            assert_eq!(replay.dropped_tail, (cut - one.len()) as u64);
            // Appending after the repair gives a clean journal.
            j.append(&[submitted(3)]).unwrap();
            drop(j);
            let (_, replay) = Journal::open(dir.path()).unwrap();
            assert_eq!(replay.events, vec![submitted(1), submitted(3)]);
        }
        // A garbled last record is a torn write too.
        let mut bad = two.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xFF;
        std::fs::write(&path, &bad).unwrap();
        let (_, replay) = Journal::open(dir.path()).unwrap();
        assert_eq!(replay.events, vec![submitted(1)]);
    }

    #[test]
    fn corruption_in_the_middle_names_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        {
            let (mut j, _) = Journal::open(dir.path()).unwrap();
            j.append(&[submitted(1), submitted(2)]).unwrap();
        }
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_LEN + RECORD_HEAD + 3] ^= 0x55;
        std::fs::write(&path, &bytes).unwrap();
        let err = Journal::open(dir.path()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, JournalError::Corrupt { offset, .. } if offset == HEADER_LEN as u64));
        assert!(
            text.contains("journal") && text.contains("offset 16"),
            "{text}"
        );
    }

    #[test]
    fn foreign_files_and_versions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        std::fs::write(&path, b"hello world, not a journal").unwrap();
        assert!(matches!(
            Journal::open(dir.path()),
            Err(JournalError::BadHeader { .. })
        ));
        let mut header = JOURNAL_MAGIC.to_vec();
        header.extend_from_slice(&99u32.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes());
        std::fs::write(&path, &header).unwrap();
        assert!(matches!(
            Journal::open(dir.path()),
            Err(JournalError::UnsupportedVersion { found: 99, .. })
        ));
    }

    #[test]
    fn cluster_name_guard() {
        let dir = tempfile::tempdir().unwrap();
        check_cluster_name(dir.path(), "ref").unwrap();
        check_cluster_name(dir.path(), "ref").unwrap();
        let err = check_cluster_name(dir.path(), "other").unwrap_err();
        assert!(matches!(err, JournalError::ClusterMismatch { .. }));
        assert!(err.to_string().contains("ref"));
    }

    #[test]
    fn ten_thousand_jobs_replay_quickly() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut j, _) = Journal::open(dir.path()).unwrap();
            let batch: Vec<Event> = (1..=10_000).map(submitted).collect();
            for chunk in batch.chunks(500) {
                j.append(chunk).unwrap();
            }
        }
        let conf = slurm_common::conf::SlurmConf::parse(crate::core::tests::CONF, "slurm.conf")
            .unwrap()
            .conf;
        let start = std::time::Instant::now();
        let (_, replay) = Journal::open(dir.path()).unwrap();
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
