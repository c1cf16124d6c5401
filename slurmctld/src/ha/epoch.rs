//! The fencing epoch: `<StateSaveLocation>/epoch`.
//!
//! ```text
//! epoch=<u64> owner=<SlurmctldHost index> host=<name>\n
//! ```
//!
//! The controller in charge is the one named by this file. Taking control
//! writes `epoch + 1` with the new owner (a temporary file, fsync, rename
//! over the old one, fsync of the directory), so a reader sees the old
//! record or the new one, never a mix, and a crash never loses a written
//! epoch. A [`Fence`] is what the active controller holds: it re-reads the
//! file before writing state and after every fsync, and answers nothing
//! once the file names someone else (the proof is in [`crate::ha`]).
//!
//! Unknown `key=value` words are ignored, so a later version may add some.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use thiserror::Error;

/// File name under StateSaveLocation.
pub const EPOCH_FILE: &str = "epoch";

/// Who is in charge, and since which change of hands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochRecord {
    /// Increases by one each time control changes hands.
    pub epoch: u64,
    /// Index of the owner in the SlurmctldHost list.
    pub owner: u32,
    /// The owner's SlurmctldHost name, for people reading the file.
    pub host: String,
}

impl EpochRecord {
    /// Whether `other` names the same epoch and owner (the host name is
    /// informative only).
    pub fn same_claim(&self, other: &EpochRecord) -> bool {
        self.epoch == other.epoch && self.owner == other.owner
    }

    /// The file's text.
    pub fn render(&self) -> String {
        let host = if self.host.is_empty() || self.host.contains(char::is_whitespace) {
            "-"
        } else {
            self.host.as_str()
        };
        format!("epoch={} owner={} host={host}\n", self.epoch, self.owner)
    }

    /// Parses the file's text.
    pub fn parse(text: &str) -> Result<EpochRecord, ParseError> {
        let mut epoch = None;
        let mut owner = None;
        let mut host = String::new();
        for word in text.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                return Err(ParseError::Word {
                    word: word.to_string(),
                });
            };
            match key {
                "epoch" => epoch = Some(number(key, value)?),
                "owner" => {
                    let v = number(key, value)?;
                    owner = Some(u32::try_from(v).map_err(|_| ParseError::Value {
                        key: key.to_string(),
                        value: value.to_string(),
                    })?);
                }
                "host" => host = value.to_string(),
                _ => {}
            }
        }
        Ok(EpochRecord {
            epoch: epoch.ok_or(ParseError::Missing { key: "epoch" })?,
            owner: owner.ok_or(ParseError::Missing { key: "owner" })?,
            host,
        })
    }
}

fn number(key: &str, value: &str) -> Result<u64, ParseError> {
    value.parse::<u64>().map_err(|_| ParseError::Value {
        key: key.to_string(),
        value: value.to_string(),
    })
}

/// Why the text of an epoch or heartbeat file does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    #[error("expected key=value, found {word:?}")]
    Word { word: String },
    #[error("invalid {key} value {value:?}")]
    Value { key: String, value: String },
    #[error("missing {key}")]
    Missing { key: &'static str },
}

/// Reading or writing a coordination file failed.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: ParseError,
    },
}

/// Reads the epoch in `dir`; `None` when there is none yet (a new cluster).
pub fn read_epoch(dir: &Path) -> Result<Option<EpochRecord>, FileError> {
    let path = dir.join(EPOCH_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => EpochRecord::parse(&text)
            .map(Some)
            .map_err(|source| FileError::Parse { path, source }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FileError::Io { path, source }),
    }
}

/// Writes the epoch in `dir` durably and atomically.
pub fn write_epoch(dir: &Path, record: &EpochRecord) -> Result<(), FileError> {
    write_atomic(dir, EPOCH_FILE, record.render().as_bytes(), true)
}

/// Replaces `dir/name` with `bytes` through a temporary file and a rename.
/// With `durable`, the file and the directory are fsynced, so the new
/// content survives a crash once this returns.
pub(crate) fn write_atomic(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    durable: bool,
) -> Result<(), FileError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| FileError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let mut f = File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    if durable {
        f.sync_all().map_err(io(&tmp))?;
    }
    drop(f);
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    if durable {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
    }
    Ok(())
}

/// Why the holder of a [`Fence`] may not act any more.
#[derive(Debug, Error)]
pub enum FenceError {
    #[error("control was taken over: epoch file names {found}, this controller holds epoch {mine} (owner {owner})")]
    Superseded {
        found: String,
        mine: u64,
        owner: u32,
    },
    #[error("cannot read the epoch, so control cannot be proven: {source}")]
    Unreadable {
        #[source]
        source: FileError,
    },
    #[error("control of epoch {mine} was given up")]
    GivenUp { mine: u64 },
}

/// The active controller's claim, checked against the epoch file.
///
/// Once a check fails the fence stays lost: the controller must drop to
/// standby and recover from disk before it may act again.
#[derive(Debug)]
pub struct Fence {
    dir: PathBuf,
    mine: EpochRecord,
    /// Who held the epoch before (None for the first epoch).
    previous: Option<u32>,
    lost: AtomicBool,
}

impl Fence {
    pub fn new(dir: &Path, mine: EpochRecord) -> Fence {
        Fence {
            dir: dir.to_path_buf(),
            mine,
            previous: None,
            lost: AtomicBool::new(false),
        }
    }

    /// The owner of the epoch this one replaced.
    pub fn previous_owner(&self) -> Option<u32> {
        self.previous
    }

    pub fn record(&self) -> &EpochRecord {
        &self.mine
    }

    pub fn epoch(&self) -> u64 {
        self.mine.epoch
    }

    /// Reads the epoch file (blocking: call from a blocking thread) and
    /// fails when it no longer names this claim. An unreadable file fails
    /// too: acting without proof of ownership could contradict a new owner.
    pub fn check(&self) -> Result<(), FenceError> {
        if self.is_lost() {
            return Err(FenceError::GivenUp {
                mine: self.mine.epoch,
            });
        }
        match read_epoch(&self.dir) {
            Ok(Some(found)) if found.same_claim(&self.mine) => Ok(()),
            Ok(found) => {
                self.mark_lost();
                Err(FenceError::Superseded {
                    found: found.map_or_else(
                        || "nothing".to_string(),
                        |f| format!("epoch {} (owner {})", f.epoch, f.owner),
                    ),
                    mine: self.mine.epoch,
                    owner: self.mine.owner,
                })
            }
            Err(source) => {
                self.mark_lost();
                Err(FenceError::Unreadable { source })
            }
        }
    }

    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Gives the claim up: every later check fails.
    pub fn mark_lost(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }
}

/// Takes control: reads the current epoch, writes the next one owned by
/// `owner`, and reads it back. Blocking.
pub fn take_epoch(dir: &Path, owner: u32, host: &str) -> Result<Fence, TakeError> {
    let current = read_epoch(dir).map_err(|source| TakeError::File { source })?;
    let next = EpochRecord {
        epoch: current.as_ref().map_or(1, |c| c.epoch.saturating_add(1)),
        owner,
        host: host.to_string(),
    };
    write_epoch(dir, &next).map_err(|source| TakeError::File { source })?;
    let mut fence = Fence::new(dir, next);
    fence.previous = current.map(|c| c.owner);
    // Another controller writing at the same moment: one rename wins, and
    // the loser sees it here (or at its first check after a write).
    fence
        .check()
        .map_err(|source| TakeError::Raced { source })?;
    Ok(fence)
}

/// Taking control failed.
#[derive(Debug, Error)]
pub enum TakeError {
    #[error("cannot update the epoch: {source}")]
    File {
        #[source]
        source: FileError,
    },
    #[error("another controller took control at the same time: {source}")]
    Raced {
        #[source]
        source: FenceError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rec(epoch: u64, owner: u32) -> EpochRecord {
        EpochRecord {
            epoch,
            owner,
            host: "b".into(),
        }
    }

    #[test]
    fn text_round_trips() {
        let r = rec(7, 1);
        assert_eq!(r.render(), "epoch=7 owner=1 host=b\n");
        assert_eq!(EpochRecord::parse(&r.render()), Ok(r));
        // Extra keys from a later version are ignored.
        assert_eq!(
            EpochRecord::parse("owner=0 epoch=2 since=5").map(|r| (r.epoch, r.owner)),
            Ok((2, 0))
        );
    }

    #[test]
    fn bad_text_is_refused() {
        assert_eq!(
            EpochRecord::parse(""),
            Err(ParseError::Missing { key: "epoch" })
        );
        assert!(EpochRecord::parse("epoch=1").is_err());
        assert!(EpochRecord::parse("epoch=x owner=0").is_err());
        assert!(EpochRecord::parse("epoch=99999999999999999999999 owner=0").is_err());
        assert!(EpochRecord::parse("epoch=1 owner=4294967296").is_err());
        assert!(EpochRecord::parse("epoch=1 owner=0 garbage").is_err());
        assert!(EpochRecord::parse("épоch=1 owner=0").is_err());
        // A host with spaces would not read back: it is written as "-".
        let odd = EpochRecord {
            epoch: 1,
            owner: 0,
            host: "a b".into(),
        };
        assert_eq!(EpochRecord::parse(&odd.render()).unwrap().host, "-");
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,80}") {
            let _ = EpochRecord::parse(&s);
        }

        #[test]
        fn render_parse_round_trip(epoch in any::<u64>(), owner in any::<u32>(), host in "[a-z0-9.-]{1,20}") {
            let r = EpochRecord { epoch, owner, host };
            prop_assert_eq!(EpochRecord::parse(&r.render()), Ok(r));
        }
    }

    #[test]
    fn taking_control_bumps_and_fences_the_old_owner() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_epoch(dir.path()).unwrap(), None);
        let first = take_epoch(dir.path(), 0, "a").unwrap();
        assert_eq!(first.epoch(), 1);
        first.check().unwrap();
        assert_eq!(first.previous_owner(), None);
        let second = take_epoch(dir.path(), 1, "b").unwrap();
        assert_eq!(second.epoch(), 2);
        assert_eq!(second.previous_owner(), Some(0));
        second.check().unwrap();
        // The first owner finds out at its next check, and stays out.
        assert!(matches!(
            first.check(),
            Err(FenceError::Superseded { mine: 1, .. })
        ));
        assert!(first.is_lost());
        write_epoch(dir.path(), first.record()).unwrap();
        assert!(matches!(first.check(), Err(FenceError::GivenUp { .. })));
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![EPOCH_FILE.to_string()]);
    }

    #[test]
    fn an_unreadable_epoch_fences() {
        let dir = tempfile::tempdir().unwrap();
        let f = take_epoch(dir.path(), 0, "a").unwrap();
        std::fs::write(dir.path().join(EPOCH_FILE), "torn").unwrap();
        assert!(matches!(f.check(), Err(FenceError::Unreadable { .. })));
        let g = Fence::new(dir.path(), rec(1, 0));
        std::fs::remove_file(dir.path().join(EPOCH_FILE)).unwrap();
        assert!(matches!(g.check(), Err(FenceError::Superseded { .. })));
    }
}
