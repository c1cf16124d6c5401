//! The local credential service of auth/slurm, for commands that cannot
//! read `slurm.key`.
//!
//! The key must stay private to root and SlurmUser, since whoever reads it
//! can mint a credential for any uid. An ordinary user's `sbatch` or
//! `squeue` therefore asks the local slurmd for a credential instead, over a
//! unix socket beside slurm.conf ([`default_socket_path`]), much as Slurm's
//! own auth/slurm clients ask slurmd or sackd. slurmd learns the caller's
//! uid and gid from the kernel (`SO_PEERCRED`), never from the request, and
//! signs a credential for exactly those: the service grants nothing the
//! caller could not prove by itself with MUNGE.
//!
//! # Protocol, version 1
//!
//! One request and one reply per connection, integers big-endian.
//!
//! ```text
//! request: "SACK" (4 bytes), version 1 (1), ttl seconds (u32),
//!          payload length P (u32, at most MAX_PAYLOAD_LEN), payload (P)
//! reply:   status (1: 0 ok, 1 refused), length L (u32, at most
//!          MAX_REPLY_LEN), then L bytes: the token, or why it was refused
//! ```
//!
//! The encoding and the service's answer are pure functions here
//! ([`encode_request`], [`decode_request`], [`answer`], [`decode_reply`]);
//! slurmd does the listening and [`SackAuth`] the blocking client side.

use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{AuthError, Authenticator, Claims, MAX_PAYLOAD_LEN};
use crate::ids::{Gid, Uid};

/// File name of the socket, in the directory of slurm.conf.
pub const SOCKET_NAME: &str = "sack.socket";

/// Magic bytes opening every request.
pub const MAGIC: &[u8; 4] = b"SACK";

/// Protocol version written and read by this build.
pub const VERSION: u8 = 1;

/// Bytes of a request before its payload.
pub const REQUEST_HEADER_LEN: usize = 4 + 1 + 4 + 4;

/// Largest reply body: a token for the largest payload, with room to spare.
pub const MAX_REPLY_LEN: usize = 4 * MAX_PAYLOAD_LEN;

/// How long the client waits on the service, each way.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the service of the cluster configured by `conf_path` listens.
pub fn default_socket_path(conf_path: &Path) -> PathBuf {
    conf_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
        .join(SOCKET_NAME)
}

/// A request for a credential living `ttl` seconds and binding `payload`.
pub fn encode_request(ttl: u32, payload: &[u8]) -> Result<Vec<u8>, AuthError> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|_| payload.len() <= MAX_PAYLOAD_LEN)
        .ok_or_else(|| AuthError::InvalidClaims {
            field: "payload",
            detail: format!("is longer than {MAX_PAYLOAD_LEN} bytes"),
        })?;
    let mut out = Vec::with_capacity(REQUEST_HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&ttl.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// What a request header says: the ttl and how many payload bytes follow.
pub fn decode_request_header(header: &[u8]) -> Result<(u32, usize), AuthError> {
    let malformed = |detail: String| AuthError::Malformed {
        part: "credential request",
        detail,
    };
    let [m0, m1, m2, m3, version, t0, t1, t2, t3, l0, l1, l2, l3] = header else {
        return Err(malformed(format!(
            "header is {} bytes, not {REQUEST_HEADER_LEN}",
            header.len()
        )));
    };
    if [*m0, *m1, *m2, *m3] != *MAGIC {
        return Err(malformed("does not start with SACK".into()));
    }
    if *version != VERSION {
        return Err(AuthError::UnsupportedVersion {
            found: *version,
            supported: VERSION,
        });
    }
    let ttl = u32::from_be_bytes([*t0, *t1, *t2, *t3]);
    let len = u32::from_be_bytes([*l0, *l1, *l2, *l3]);
    let len = usize::try_from(len)
        .ok()
        .filter(|n| *n <= MAX_PAYLOAD_LEN)
        .ok_or_else(|| malformed(format!("payload of {len} bytes is over {MAX_PAYLOAD_LEN}")))?;
    Ok((ttl, len))
}

/// A whole request read back: its ttl and payload.
pub fn decode_request(bytes: &[u8]) -> Result<(u32, Vec<u8>), AuthError> {
    let header = bytes.get(..REQUEST_HEADER_LEN).unwrap_or(bytes);
    let (ttl, len) = decode_request_header(header)?;
    let payload = &bytes[REQUEST_HEADER_LEN..];
    if payload.len() != len {
        return Err(AuthError::Malformed {
            part: "credential request",
            detail: format!("payload is {} bytes, the header says {len}", payload.len()),
        });
    }
    Ok((ttl, payload.to_vec()))
}

/// Who asks, as the kernel says (`SO_PEERCRED`), and the host the service
/// runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer<'a> {
    pub uid: u32,
    pub gid: u32,
    pub host: &'a str,
}

/// The service's reply to `request` from `peer`: a credential for it
/// signed by `auth` (the ttl brought into 1..=`max_ttl`), or the reason it
/// was refused.
pub fn answer(
    auth: &dyn Authenticator,
    request: &[u8],
    peer: &Peer<'_>,
    now: i64,
    max_ttl: u32,
) -> Vec<u8> {
    let token = decode_request(request).and_then(|(ttl, payload)| {
        let ttl = ttl.clamp(1, max_ttl.max(1));
        let claims = Claims::new(Uid::new(peer.uid), Gid::new(peer.gid), peer.host, now, ttl)
            .with_payload(payload);
        auth.create(&claims)
    });
    let (status, body) = match token {
        Ok(t) => (0u8, t.into_bytes()),
        Err(e) => (1u8, e.to_string().into_bytes()),
    };
    let mut out = Vec::with_capacity(5 + body.len());
    out.push(status);
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The token in a reply, or the service's refusal as an error.
pub fn decode_reply(bytes: &[u8]) -> Result<String, AuthError> {
    let malformed = |detail: String| AuthError::Malformed {
        part: "credential service reply",
        detail,
    };
    let [status, l0, l1, l2, l3, body @ ..] = bytes else {
        return Err(malformed(format!("{} bytes is too short", bytes.len())));
    };
    let len = u32::from_be_bytes([*l0, *l1, *l2, *l3]);
    if usize::try_from(len).ok() != Some(body.len()) {
        return Err(malformed(format!(
            "body is {} bytes, the header says {len}",
            body.len()
        )));
    }
    let text = String::from_utf8_lossy(body).into_owned();
    match status {
        0 => Ok(text),
        1 => Err(AuthError::SackRefused { message: text }),
        other => Err(malformed(format!("unknown status {other}"))),
    }
}

/// auth/slurm without the key: each credential is asked of the local
/// service at `path`. It cannot verify credentials.
#[derive(Debug, Clone)]
pub struct SackAuth {
    path: PathBuf,
}

impl SackAuth {
    /// A client of the service at `path`, when a socket is there (each
    /// credential then connects to it; nothing is sent before).
    pub fn connect(path: &Path) -> Result<SackAuth, AuthError> {
        let unavailable = |source| AuthError::SackUnavailable {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(unavailable)?;
        if !meta.file_type().is_socket() {
            return Err(unavailable(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a socket",
            )));
        }
        Ok(SackAuth {
            path: path.to_path_buf(),
        })
    }

    fn ask(&self, request: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut stream = UnixStream::connect(&self.path)?;
        stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
        stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
        stream.write_all(request)?;
        let mut reply = Vec::new();
        stream
            .take(u64::try_from(5 + MAX_REPLY_LEN).unwrap_or(u64::MAX))
            .read_to_end(&mut reply)?;
        Ok(reply)
    }
}

impl Authenticator for SackAuth {
    fn name(&self) -> &'static str {
        "auth/slurm"
    }

    /// Asks the service; the uid, gid and host of `claims` are replaced by
    /// what the service sees of the caller.
    fn create(&self, claims: &Claims) -> Result<String, AuthError> {
        let ttl =
            u32::try_from(claims.expires_at.saturating_sub(claims.issued_at)).unwrap_or(u32::MAX);
        let request = encode_request(ttl, &claims.payload)?;
        let reply = self
            .ask(&request)
            .map_err(|source| AuthError::SackUnavailable {
                path: self.path.clone(),
                source,
            })?;
        decode_reply(&reply)
    }

    fn verify(&self, _token: &str, _now: i64) -> Result<Claims, AuthError> {
        Err(AuthError::SackCannotVerify)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::auth::SlurmKeyAuth;

    fn key() -> SlurmKeyAuth {
        SlurmKeyAuth::from_key(&[9u8; 32]).unwrap()
    }

    #[test]
    fn a_request_round_trips_and_bad_ones_say_why() {
        let r = encode_request(60, b"job=7").unwrap();
        assert_eq!(&r[..4], b"SACK");
        assert_eq!(decode_request(&r).unwrap(), (60, b"job=7".to_vec()));
        for cut in 0..r.len() {
            assert!(decode_request(&r[..cut]).is_err(), "cut at {cut}");
        }
        let mut wrong = r.clone();
        wrong[4] = 2;
        assert!(matches!(
            decode_request(&wrong),
            Err(AuthError::UnsupportedVersion { found: 2, .. })
        ));
        let mut huge = r[..REQUEST_HEADER_LEN].to_vec();
        huge[9..13].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_request_header(&huge).is_err());
        assert!(encode_request(1, &vec![0; MAX_PAYLOAD_LEN + 1]).is_err());
    }

    /// The credential is the caller's as the kernel says, whatever the
    /// request, and verifies under the key.
    #[test]
    fn the_answer_vouches_for_the_peer_only() {
        let auth = key();
        let request = encode_request(100_000, b"x").unwrap();
        let peer = Peer {
            uid: 1234,
            gid: 567,
            host: "node1",
        };
        let reply = answer(&auth, &request, &peer, 1_700_000_000, 300);
        let token = decode_reply(&reply).unwrap();
        let claims = auth.verify(&token, 1_700_000_001).unwrap();
        assert_eq!((claims.uid.get(), claims.gid.get()), (1234, 567));
        assert_eq!(claims.host, "node1");
        assert_eq!(claims.payload, b"x");
        assert_eq!(claims.expires_at - claims.issued_at, 300, "ttl capped");
        // A garbage request is refused with the reason.
        let reply = answer(&auth, b"hello", &peer, 1_700_000_000, 300);
        let err = decode_reply(&reply).unwrap_err();
        assert!(matches!(err, AuthError::SackRefused { .. }), "{err}");
        assert!(err.to_string().contains("credential request"), "{err}");
    }

    #[test]
    fn replies_are_checked() {
        assert!(decode_reply(&[]).is_err());
        assert!(decode_reply(&[0, 0, 0, 0, 5, b'a']).is_err());
        assert!(decode_reply(&[7, 0, 0, 0, 0]).is_err());
        assert_eq!(decode_reply(&[0, 0, 0, 0, 2, b'o', b'k']).unwrap(), "ok");
    }

    #[test]
    fn the_socket_sits_beside_slurm_conf() {
        assert_eq!(
            default_socket_path(Path::new("/etc/slurm/slurm.conf")),
            PathBuf::from("/etc/slurm/sack.socket")
        );
        assert_eq!(
            default_socket_path(Path::new("slurm.conf")),
            PathBuf::from("./sack.socket")
        );
    }

    #[test]
    fn the_client_talks_to_a_service() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SOCKET_NAME);
        assert!(matches!(
            SackAuth::connect(&path),
            Err(AuthError::SackUnavailable { .. })
        ));
        std::fs::write(&path, b"").unwrap();
        let err = SackAuth::connect(&path).unwrap_err();
        assert!(err.to_string().contains("not a socket"), "{err}");
        std::fs::remove_file(&path).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut header = [0u8; REQUEST_HEADER_LEN];
            s.read_exact(&mut header).unwrap();
            let (_, len) = decode_request_header(&header).unwrap();
            let mut payload = vec![0u8; len];
            s.read_exact(&mut payload).unwrap();
            let request = [header.as_slice(), &payload].concat();
            let peer = Peer {
                uid: 42,
                gid: 43,
                host: "here",
            };
            s.write_all(&answer(&key(), &request, &peer, 1_700_000_000, 60))
                .unwrap();
        });
        let client = SackAuth::connect(&path).unwrap();
        let claims = Claims::new(Uid::new(1), Gid::new(1), "elsewhere", 1_700_000_000, 60);
        let token = client.create(&claims).unwrap();
        server.join().unwrap();
        let back = key().verify(&token, 1_700_000_001).unwrap();
        assert_eq!(
            (back.uid.get(), back.gid.get(), back.host.as_str()),
            (42, 43, "here")
        );
        assert!(matches!(
            client.verify(&token, 0),
            Err(AuthError::SackCannotVerify)
        ));
    }
}
