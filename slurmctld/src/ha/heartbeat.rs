//! The heartbeat: `<StateSaveLocation>/heartbeat`, rewritten by the
//! controller in charge every SlurmctldTimeout/50, each time right after a
//! fence check.
//!
//! ```text
//! epoch=<u64> owner=<index> seq=<u64> time=<unix seconds>\n
//! ```
//!
//! A standby controller reads it every SlurmctldTimeout/20 and only asks
//! whether it *changed*, measured on its own monotonic clock: that way
//! clock skew between the hosts plays no part in deciding that the writer
//! is gone. It complements the Ping RPC: a controller that cannot be
//! reached over the network but still writes to the shared directory may
//! well be alive and acting, and the standby may be the one cut off; so it
//! is taken over from only when the standby also shows that it reaches the
//! cluster (a witness, see [`super`]). The writer, for its part, stops
//! acting when it cannot renew the file for SlurmctldTimeout/2.
//!
//! The file is replaced with a rename (readers never see half a record) but
//! not fsynced: it says something about now, not about the past.

use std::io;
use std::path::Path;

use super::epoch::{write_atomic, FileError, ParseError};

/// File name under StateSaveLocation.
pub const HEARTBEAT_FILE: &str = "heartbeat";

/// One beat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    pub epoch: u64,
    pub owner: u32,
    /// Counts the writer's beats, so two beats in one second still differ.
    pub seq: u64,
    /// The writer's wall clock, for people reading the file.
    pub time: i64,
}

impl Heartbeat {
    pub fn render(&self) -> String {
        format!(
            "epoch={} owner={} seq={} time={}\n",
            self.epoch, self.owner, self.seq, self.time
        )
    }

    pub fn parse(text: &str) -> Result<Heartbeat, ParseError> {
        let mut hb = Heartbeat {
            epoch: 0,
            owner: 0,
            seq: 0,
            time: 0,
        };
        let mut seen = [false; 4];
        for word in text.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                return Err(ParseError::Word {
                    word: word.to_string(),
                });
            };
            let bad = || ParseError::Value {
                key: key.to_string(),
                value: value.to_string(),
            };
            match key {
                "epoch" => {
                    hb.epoch = value.parse().map_err(|_| bad())?;
                    seen[0] = true;
                }
                "owner" => {
                    hb.owner = value.parse().map_err(|_| bad())?;
                    seen[1] = true;
                }
                "seq" => {
                    hb.seq = value.parse().map_err(|_| bad())?;
                    seen[2] = true;
                }
                "time" => {
                    hb.time = value.parse().map_err(|_| bad())?;
                    seen[3] = true;
                }
                _ => {}
            }
        }
        for (i, key) in ["epoch", "owner", "seq", "time"].into_iter().enumerate() {
            if !seen[i] {
                return Err(ParseError::Missing { key });
            }
        }
        Ok(hb)
    }
}

/// Reads the heartbeat in `dir`; `None` when there is none.
pub fn read_heartbeat(dir: &Path) -> Result<Option<Heartbeat>, FileError> {
    let path = dir.join(HEARTBEAT_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Heartbeat::parse(&text)
            .map(Some)
            .map_err(|source| FileError::Parse { path, source }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FileError::Io { path, source }),
    }
}

/// Replaces the heartbeat in `dir`.
pub fn write_heartbeat(dir: &Path, hb: &Heartbeat) -> Result<(), FileError> {
    write_atomic(dir, HEARTBEAT_FILE, hb.render().as_bytes(), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_heartbeat(dir.path()).unwrap(), None);
        let hb = Heartbeat {
            epoch: 3,
            owner: 1,
            seq: 9,
            time: -5,
        };
        write_heartbeat(dir.path(), &hb).unwrap();
        assert_eq!(read_heartbeat(dir.path()).unwrap(), Some(hb));
        std::fs::write(dir.path().join(HEARTBEAT_FILE), "epoch=1").unwrap();
        assert!(read_heartbeat(dir.path()).is_err());
    }

    #[test]
    fn bad_text_is_refused() {
        assert!(Heartbeat::parse("").is_err());
        assert!(Heartbeat::parse("epoch=1 owner=0 seq=1").is_err());
        assert!(Heartbeat::parse("epoch=1 owner=0 seq=1 time=x").is_err());
        assert!(Heartbeat::parse("epoch=1 owner=-1 seq=1 time=1").is_err());
        assert!(Heartbeat::parse("epoch=1 owner=0 seq=1 time=1 (").is_err());
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,80}") {
            let _ = Heartbeat::parse(&s);
        }

        #[test]
        fn render_parse_round_trip(epoch in any::<u64>(), owner in any::<u32>(), seq in any::<u64>(), time in any::<i64>()) {
            let hb = Heartbeat { epoch, owner, seq, time };
            prop_assert_eq!(Heartbeat::parse(&hb.render()), Ok(hb));
        }
    }
}
