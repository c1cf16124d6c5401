//! Authentication credentials: who is calling, vouched for by a shared secret.
//!
//! Every RPC carries a credential in a gRPC metadata header. The receiver
//! verifies it and learns the caller's uid and gid, the host it came from and
//! when it was issued, without trusting anything the caller merely states.
//! Two schemes exist, chosen by `AuthType` in slurm.conf:
//!
//! * `auth/slurm` ([`SlurmKeyAuth`]): claims signed with HMAC-SHA256 under a
//!   key shared by every host of the cluster (`slurm.key`). Pure computation,
//!   no daemon needed. Whoever can read the key can mint a credential for any
//!   uid, so the key file must stay private to the Slurm user.
//! * `auth/munge` (`MungeAuth`, behind the `munge` cargo feature): claims
//!   carried inside a MUNGE credential. munged, not the caller, states the uid
//!   and gid, so an unprivileged client can authenticate without a secret.
//!
//! Verification takes `now` as an argument so that it is a pure function of
//! its inputs; [`Authenticator::verify_now`] and [`unix_now`] read the clock
//! at the edge.
//!
//! # Claims layout, version 1
//!
//! Claims are serialised into a compact binary layout, integers big-endian:
//!
//! ```text
//! offset   size  field
//! 0        1     version, 1
//! 1        4     uid (u32)
//! 5        4     gid (u32)
//! 9        8     issued_at, unix seconds (i64)
//! 17       8     expires_at, unix seconds (i64), greater than issued_at
//! 25       1     H, length of the host name in bytes (0..=255)
//! 26       H     host name, UTF-8
//! 26+H     4     P, payload length in bytes (u32, at most MAX_PAYLOAD_LEN)
//! 30+H     P     payload, opaque bytes bound into the credential
//! ```
//!
//! `auth/slurm` appends a 32-byte HMAC-SHA256 tag computed over every byte
//! above (the version byte included) and encodes the whole as base64url
//! without padding (RFC 4648 section 5), so the token is printable ASCII and a
//! valid metadata value. `auth/munge` places the same bytes (without a tag) in
//! the MUNGE payload; the token is the MUNGE credential string itself.
//!
//! A new layout gets a new version byte; readers reject versions they do not
//! know with [`AuthError::UnsupportedVersion`] rather than guessing. The
//! version is a property of the encoding, not of the claims, so [`Claims`]
//! does not carry it.

pub mod sack;
pub mod slurm;

#[cfg(feature = "munge")]
pub mod munge;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use thiserror::Error;

use crate::ids::{Gid, Uid};

#[cfg(feature = "munge")]
pub use munge::MungeAuth;
pub use slurm::{default_key_path, generate_key, SlurmKeyAuth};

/// Version byte written by this build and the only one it reads.
pub const CREDENTIAL_VERSION: u8 = 1;

/// Largest payload a credential may bind, in bytes. Keeps tokens well under
/// the usual 16 KiB limit on HTTP/2 header lists.
pub const MAX_PAYLOAD_LEN: usize = 8 * 1024;

/// Largest host name, in bytes (the length field is one byte).
pub const MAX_HOST_LEN: usize = u8::MAX as usize;

/// Default lifetime of a credential, in seconds (MUNGE's default TTL too).
pub const DEFAULT_TTL_SECS: u32 = 300;

/// How far in the future a credential's issue time may lie before it is
/// refused, in seconds. Covers ordinary clock drift between NTP-synchronised
/// hosts; anything larger points at a broken clock or a forged credential.
pub const DEFAULT_MAX_CLOCK_SKEW_SECS: i64 = 60;

/// Size of the fixed part of the layout: every field but host and payload.
pub(crate) const FIXED_LEN: usize = 1 + 4 + 4 + 8 + 8 + 1 + 4;

/// Errors from creating, verifying or configuring credentials.
#[derive(Debug, Error)]
pub enum AuthError {
    #[error("credential signature does not match (wrong key or tampered credential)")]
    BadSignature,

    #[error(
        "credential expired at unix time {expires_at}, {} s before now ({now})",
        now.saturating_sub(*expires_at)
    )]
    Expired { expires_at: i64, now: i64 },

    #[error(
        "credential not yet valid: issued at unix time {issued_at}, {} s after now ({now}), \
         beyond the allowed clock skew of {max_skew} s",
        issued_at.saturating_sub(*now)
    )]
    NotYetValid {
        issued_at: i64,
        now: i64,
        max_skew: i64,
    },

    #[error("malformed credential: {part}: {detail}")]
    Malformed { part: &'static str, detail: String },

    #[error("unsupported credential version {found} (this build reads version {supported})")]
    UnsupportedVersion { found: u8, supported: u8 },

    #[error("cannot create credential: {field} {detail}")]
    InvalidClaims { field: &'static str, detail: String },

    #[error("auth/slurm key file {} does not exist", path.display())]
    KeyMissing { path: PathBuf },

    #[error("cannot read auth/slurm key file {}: {source}", path.display())]
    KeyUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("auth/slurm key file {} is not a regular file", path.display())]
    KeyNotRegularFile { path: PathBuf },

    #[error(
        "auth/slurm key file {} holds {len} bytes, fewer than the required {min}",
        path.display()
    )]
    KeyTooShort {
        path: PathBuf,
        len: usize,
        min: usize,
    },

    #[error("auth/slurm key file {} is larger than the limit of {max} bytes", path.display())]
    KeyTooLong { path: PathBuf, max: usize },

    #[error("auth/slurm key holds {len} bytes, fewer than the required {min}")]
    KeyMaterialTooShort { len: usize, min: usize },

    #[error(
        "auth/slurm key file {} has mode {mode:04o} and is accessible by other users \
         (it must not be; use chmod 0600)",
        path.display()
    )]
    KeyTooOpen { path: PathBuf, mode: u32 },

    #[error("refusing to overwrite existing auth/slurm key file {}", path.display())]
    KeyExists { path: PathBuf },

    #[error("cannot write auth/slurm key file {}: {source}", path.display())]
    KeyWrite {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot read random bytes from /dev/urandom: {source}")]
    RandomSource { source: std::io::Error },

    #[error("unknown AuthType {value:?} (supported: auth/slurm, auth/munge)")]
    UnknownAuthType { value: String },

    #[error("invalid AuthInfo option {option:?}: {detail}")]
    InvalidAuthInfo { option: String, detail: String },

    #[error("AuthType=auth/munge needs a build with the `munge` feature")]
    MungeNotBuilt,

    #[error("munge credential expired: {message}")]
    MungeExpired { message: String },

    #[error("munge credential replayed (already decoded once): {message}")]
    MungeReplayed { message: String },

    #[error("munge credential rewound (encoded in the future; check clock sync): {message}")]
    MungeRewound { message: String },

    #[error("munge credential invalid (munge error {code}): {message}")]
    MungeInvalid { code: u32, message: String },

    #[error("cannot talk to munged at socket {socket}: {message}")]
    MungeSocket { socket: String, message: String },

    #[error("munge error {code}: {message}")]
    Munge { code: u32, message: String },

    #[error("no local credential service at {}: {source}", path.display())]
    SackUnavailable {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("the local credential service refused: {message}")]
    SackRefused { message: String },

    #[error("credentials cannot be verified without the auth/slurm key")]
    SackCannotVerify,
}

/// What a credential asserts about its bearer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub uid: Uid,
    pub gid: Gid,
    /// Host the credential was created on.
    pub host: String,
    /// Unix seconds.
    pub issued_at: i64,
    /// Unix seconds; the credential is refused from this second on.
    pub expires_at: i64,
    /// Opaque bytes bound into the credential (empty when there are none), so
    /// a job-launch credential can carry what it authorises.
    pub payload: Vec<u8>,
}

impl Claims {
    /// Claims valid for `ttl_secs` from `issued_at`, with no payload.
    pub fn new(uid: Uid, gid: Gid, host: impl Into<String>, issued_at: i64, ttl_secs: u32) -> Self {
        Self {
            uid,
            gid,
            host: host.into(),
            issued_at,
            expires_at: issued_at.saturating_add(i64::from(ttl_secs)),
            payload: Vec::new(),
        }
    }

    /// The same claims binding `payload`.
    pub fn with_payload(mut self, payload: Vec<u8>) -> Self {
        self.payload = payload;
        self
    }

    /// Checks what `create` needs before encoding: sizes that fit the layout
    /// and an expiry after the issue time.
    pub fn validate(&self) -> Result<(), AuthError> {
        if self.host.len() > MAX_HOST_LEN {
            return Err(AuthError::InvalidClaims {
                field: "host",
                detail: format!(
                    "is {} bytes long, more than the limit of {MAX_HOST_LEN}",
                    self.host.len()
                ),
            });
        }
        if self.payload.len() > MAX_PAYLOAD_LEN {
            return Err(AuthError::InvalidClaims {
                field: "payload",
                detail: format!(
                    "is {} bytes long, more than the limit of {MAX_PAYLOAD_LEN}",
                    self.payload.len()
                ),
            });
        }
        if self.expires_at <= self.issued_at {
            return Err(AuthError::InvalidClaims {
                field: "expires_at",
                detail: format!(
                    "({}) is not after issued_at ({})",
                    self.expires_at, self.issued_at
                ),
            });
        }
        Ok(())
    }

    /// Checks the validity window at `now`: not issued more than `max_skew`
    /// seconds in the future, and not expired.
    pub fn check_time(&self, now: i64, max_skew: i64) -> Result<(), AuthError> {
        if self.issued_at > now.saturating_add(max_skew) {
            return Err(AuthError::NotYetValid {
                issued_at: self.issued_at,
                now,
                max_skew,
            });
        }
        if now >= self.expires_at {
            return Err(AuthError::Expired {
                expires_at: self.expires_at,
                now,
            });
        }
        Ok(())
    }
}

/// Serialises claims into the versioned layout described in the module docs
/// (without any signature).
pub(crate) fn encode_claims(claims: &Claims) -> Result<Vec<u8>, AuthError> {
    claims.validate()?;
    let host = claims.host.as_bytes();
    let mut out = Vec::with_capacity(FIXED_LEN + host.len() + claims.payload.len() + 32);
    out.push(CREDENTIAL_VERSION);
    out.extend_from_slice(&claims.uid.get().to_be_bytes());
    out.extend_from_slice(&claims.gid.get().to_be_bytes());
    out.extend_from_slice(&claims.issued_at.to_be_bytes());
    out.extend_from_slice(&claims.expires_at.to_be_bytes());
    // Both lengths were bounded by validate().
    out.push(
        u8::try_from(host.len()).map_err(|_| AuthError::InvalidClaims {
            field: "host",
            detail: "is too long".to_string(),
        })?,
    );
    out.extend_from_slice(host);
    let payload_len =
        u32::try_from(claims.payload.len()).map_err(|_| AuthError::InvalidClaims {
            field: "payload",
            detail: "is too long".to_string(),
        })?;
    out.extend_from_slice(&payload_len.to_be_bytes());
    out.extend_from_slice(&claims.payload);
    Ok(out)
}

/// Reads the layout back. Accepts exactly one complete encoding: trailing
/// bytes are an error.
pub(crate) fn decode_claims(bytes: &[u8]) -> Result<Claims, AuthError> {
    let mut r = Reader { bytes, pos: 0 };
    let version = r.take::<1>("version")?[0];
    if version != CREDENTIAL_VERSION {
        return Err(AuthError::UnsupportedVersion {
            found: version,
            supported: CREDENTIAL_VERSION,
        });
    }
    let uid = u32::from_be_bytes(r.take("uid")?);
    let gid = u32::from_be_bytes(r.take("gid")?);
    let issued_at = i64::from_be_bytes(r.take("issue time")?);
    let expires_at = i64::from_be_bytes(r.take("expiry time")?);
    let host_len = usize::from(r.take::<1>("host length")?[0]);
    let host = std::str::from_utf8(r.slice(host_len, "host")?)
        .map_err(|e| AuthError::Malformed {
            part: "host",
            detail: format!("not UTF-8: {e}"),
        })?
        .to_string();
    let payload_len = u32::from_be_bytes(r.take("payload length")?);
    let payload_len = usize::try_from(payload_len)
        .ok()
        .filter(|n| *n <= MAX_PAYLOAD_LEN)
        .ok_or_else(|| AuthError::Malformed {
            part: "payload length",
            detail: format!("{payload_len} is more than the limit of {MAX_PAYLOAD_LEN}"),
        })?;
    let payload = r.slice(payload_len, "payload")?.to_vec();
    if r.pos != bytes.len() {
        return Err(AuthError::Malformed {
            part: "layout",
            detail: format!("{} unexpected trailing bytes", bytes.len() - r.pos),
        });
    }
    if expires_at <= issued_at {
        return Err(AuthError::Malformed {
            part: "validity window",
            detail: format!("expiry time {expires_at} is not after issue time {issued_at}"),
        });
    }
    Ok(Claims {
        uid: Uid::new(uid),
        gid: Gid::new(gid),
        host,
        issued_at,
        expires_at,
        payload,
    })
}

/// Bounds-checked cursor over the layout.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn slice(&mut self, len: usize, part: &'static str) -> Result<&'a [u8], AuthError> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| AuthError::Malformed {
                part,
                detail: format!(
                    "needs {len} bytes at offset {}, only {} left",
                    self.pos,
                    self.bytes.len().saturating_sub(self.pos)
                ),
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn take<const N: usize>(&mut self, part: &'static str) -> Result<[u8; N], AuthError> {
        let s = self.slice(N, part)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
}

/// Creates and verifies credentials. One implementation per `AuthType`.
pub trait Authenticator: Send + Sync + fmt::Debug {
    /// The plugin name as written in slurm.conf, e.g. `auth/slurm`.
    fn name(&self) -> &'static str;

    /// Makes a printable token asserting `claims`.
    fn create(&self, claims: &Claims) -> Result<String, AuthError>;

    /// Checks `token` at unix time `now` and returns the claims it proves.
    /// Never panics, whatever the input.
    fn verify(&self, token: &str, now: i64) -> Result<Claims, AuthError>;

    /// [`verify`](Self::verify) at the current wall-clock time.
    fn verify_now(&self, token: &str) -> Result<Claims, AuthError> {
        self.verify(token, unix_now())
    }
}

/// Current wall-clock time in unix seconds (negative before 1970).
pub fn unix_now() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// The value of `AuthType` in slurm.conf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AuthType {
    /// `auth/slurm`: HMAC-SHA256 under the shared `slurm.key`. Our default
    /// when `AuthType` is absent: it needs no extra daemon.
    #[default]
    Slurm,
    /// `auth/munge`: MUNGE credentials (Slurm's own default).
    Munge,
}

impl AuthType {
    /// Parses a configuration value; surrounding whitespace is ignored, the
    /// name itself is case-sensitive as in Slurm.
    pub fn parse(value: &str) -> Result<Self, AuthError> {
        match value.trim() {
            "auth/slurm" => Ok(Self::Slurm),
            "auth/munge" => Ok(Self::Munge),
            _ => Err(AuthError::UnknownAuthType {
                value: value.to_string(),
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Slurm => "auth/slurm",
            Self::Munge => "auth/munge",
        }
    }
}

impl FromStr for AuthType {
    type Err = AuthError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for AuthType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The value of `AuthInfo` in slurm.conf: comma-separated options.
///
/// Understood options:
/// * `socket=PATH`: munged's socket (auth/munge).
/// * `ttl=SECS`: lifetime of the credentials this host creates.
/// * `cred_expire=SECS`: how long a job-launch credential stays valid.
/// * `key=PATH`: the auth/slurm key file. This option is our own: Slurm
///   always reads `slurm.key` beside slurm.conf, which stays the default.
///
/// Other options (Slurm has more, e.g. `disable_sack`) are kept in `other`
/// so that a caller can warn about them; they do not make the value invalid,
/// so that existing configuration files keep loading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthInfo {
    pub socket: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub ttl: Option<u32>,
    pub cred_expire: Option<u32>,
    /// Unrecognised options, verbatim.
    pub other: Vec<String>,
}

impl AuthInfo {
    /// Parses the option list. Empty items (`a,,b`, a trailing comma) are
    /// ignored; a repeated option is an error.
    pub fn parse(value: &str) -> Result<Self, AuthError> {
        let mut info = Self::default();
        for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, val) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            match name {
                "socket" => set_once(&mut info.socket, item, path_value(item, val)?)?,
                "key" => set_once(&mut info.key, item, path_value(item, val)?)?,
                "ttl" => set_once(&mut info.ttl, item, secs_value(item, val)?)?,
                "cred_expire" => set_once(&mut info.cred_expire, item, secs_value(item, val)?)?,
                _ => info.other.push(item.to_string()),
            }
        }
        Ok(info)
    }

    /// The auth/slurm key file: `key=` if given, else `slurm.key` beside the
    /// configuration file at `conf_path`.
    pub fn key_path(&self, conf_path: &Path) -> PathBuf {
        self.key
            .clone()
            .unwrap_or_else(|| default_key_path(conf_path))
    }

    /// Lifetime for credentials created on this host.
    pub fn credential_ttl(&self) -> u32 {
        self.ttl.unwrap_or(DEFAULT_TTL_SECS)
    }
}

fn set_once<T>(slot: &mut Option<T>, item: &str, value: T) -> Result<(), AuthError> {
    if slot.is_some() {
        return Err(AuthError::InvalidAuthInfo {
            option: item.to_string(),
            detail: "given more than once".to_string(),
        });
    }
    *slot = Some(value);
    Ok(())
}

fn path_value(item: &str, val: Option<&str>) -> Result<PathBuf, AuthError> {
    match val {
        Some(v) if !v.is_empty() => Ok(PathBuf::from(v)),
        _ => Err(AuthError::InvalidAuthInfo {
            option: item.to_string(),
            detail: "expects a path after '='".to_string(),
        }),
    }
}

fn secs_value(item: &str, val: Option<&str>) -> Result<u32, AuthError> {
    let invalid = |detail: &str| AuthError::InvalidAuthInfo {
        option: item.to_string(),
        detail: detail.to_string(),
    };
    let v = val.ok_or_else(|| invalid("expects a number of seconds after '='"))?;
    let secs: u32 = v
        .parse()
        .map_err(|_| invalid("expects a whole number of seconds from 1 to 4294967295"))?;
    if secs == 0 {
        return Err(invalid("must be at least 1 second"));
    }
    Ok(secs)
}

/// The authenticator for `auth_type`. `key_path` is the auth/slurm key file
/// (see [`AuthInfo::key_path`]); `info` supplies the munge socket.
pub fn authenticator_for(
    auth_type: AuthType,
    key_path: &Path,
    info: &AuthInfo,
) -> Result<Box<dyn Authenticator>, AuthError> {
    match auth_type {
        AuthType::Slurm => Ok(Box::new(SlurmKeyAuth::load(key_path)?)),
        AuthType::Munge => munge_authenticator(info),
    }
}

#[cfg(feature = "munge")]
fn munge_authenticator(info: &AuthInfo) -> Result<Box<dyn Authenticator>, AuthError> {
    Ok(Box::new(MungeAuth::new(info.socket.clone())?))
}

#[cfg(not(feature = "munge"))]
fn munge_authenticator(_info: &AuthInfo) -> Result<Box<dyn Authenticator>, AuthError> {
    Err(AuthError::MungeNotBuilt)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn claims() -> Claims {
        Claims::new(Uid::new(1000), Gid::new(100), "node01", 1_700_000_000, 300)
            .with_payload(b"job=42".to_vec())
    }

    #[test]
    fn layout_round_trips_and_matches_documented_offsets() {
        let c = claims();
        let bytes = encode_claims(&c).unwrap();
        assert_eq!(bytes[0], CREDENTIAL_VERSION);
        assert_eq!(&bytes[1..5], &1000u32.to_be_bytes());
        assert_eq!(&bytes[5..9], &100u32.to_be_bytes());
        assert_eq!(&bytes[9..17], &1_700_000_000i64.to_be_bytes());
        assert_eq!(&bytes[17..25], &1_700_000_300i64.to_be_bytes());
        assert_eq!(bytes[25], 6);
        assert_eq!(&bytes[26..32], b"node01");
        assert_eq!(&bytes[32..36], &6u32.to_be_bytes());
        assert_eq!(&bytes[36..], b"job=42");
        assert_eq!(decode_claims(&bytes).unwrap(), c);
    }

    #[test]
    fn decode_rejects_every_truncation() {
        let bytes = encode_claims(&claims()).unwrap();
        for len in 0..bytes.len() {
            let err = decode_claims(&bytes[..len]).unwrap_err();
            assert!(matches!(err, AuthError::Malformed { .. }), "{len}: {err}");
        }
    }

    #[test]
    fn decode_rejects_trailing_bytes() {
        let mut bytes = encode_claims(&claims()).unwrap();
        bytes.push(0);
        let err = decode_claims(&bytes).unwrap_err();
        assert!(
            matches!(err, AuthError::Malformed { part: "layout", .. }),
            "{err}"
        );
    }

    #[test]
    fn decode_rejects_unknown_version() {
        let mut bytes = encode_claims(&claims()).unwrap();
        bytes[0] = 2;
        let err = decode_claims(&bytes).unwrap_err();
        assert!(matches!(
            err,
            AuthError::UnsupportedVersion {
                found: 2,
                supported: 1
            }
        ));
        assert_eq!(
            err.to_string(),
            "unsupported credential version 2 (this build reads version 1)"
        );
    }

    #[test]
    fn decode_rejects_non_utf8_host() {
        let mut bytes = encode_claims(&claims()).unwrap();
        bytes[26] = 0xff;
        let err = decode_claims(&bytes).unwrap_err();
        assert!(
            matches!(err, AuthError::Malformed { part: "host", .. }),
            "{err}"
        );
    }

    #[test]
    fn decode_rejects_oversized_payload_length() {
        let mut bytes = encode_claims(&claims()).unwrap();
        bytes[32..36].copy_from_slice(&u32::MAX.to_be_bytes());
        let err = decode_claims(&bytes).unwrap_err();
        assert!(
            matches!(
                err,
                AuthError::Malformed {
                    part: "payload length",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn decode_rejects_expiry_not_after_issue() {
        let mut bytes = encode_claims(&claims()).unwrap();
        bytes[17..25].copy_from_slice(&1_700_000_000i64.to_be_bytes());
        let err = decode_claims(&bytes).unwrap_err();
        assert!(
            matches!(
                err,
                AuthError::Malformed {
                    part: "validity window",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn validate_limits() {
        let long_host = Claims::new(Uid::new(0), Gid::new(0), "h".repeat(256), 0, 1);
        assert!(matches!(
            long_host.validate(),
            Err(AuthError::InvalidClaims { field: "host", .. })
        ));
        let max_host = Claims::new(Uid::new(0), Gid::new(0), "h".repeat(255), 0, 1);
        assert!(max_host.validate().is_ok());
        let big = claims().with_payload(vec![0; MAX_PAYLOAD_LEN + 1]);
        assert!(matches!(
            big.validate(),
            Err(AuthError::InvalidClaims {
                field: "payload",
                ..
            })
        ));
        assert!(claims()
            .with_payload(vec![0; MAX_PAYLOAD_LEN])
            .validate()
            .is_ok());
        let zero_ttl = Claims::new(Uid::new(0), Gid::new(0), "h", 10, 0);
        let err = zero_ttl.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot create credential: expires_at (10) is not after issued_at (10)"
        );
    }

    #[test]
    fn ttl_saturates_instead_of_overflowing() {
        let c = Claims::new(Uid::new(0), Gid::new(0), "h", i64::MAX - 5, 300);
        assert_eq!(c.expires_at, i64::MAX);
    }

    #[test]
    fn check_time_window() {
        let c = claims(); // issued 1_700_000_000, expires 1_700_000_300
        assert!(c.check_time(1_700_000_000, 60).is_ok());
        assert!(c.check_time(1_700_000_299, 60).is_ok());
        // Issued up to max_skew in the future is tolerated.
        assert!(c.check_time(1_699_999_940, 60).is_ok());

        let err = c.check_time(1_700_000_300, 60).unwrap_err();
        assert!(matches!(
            err,
            AuthError::Expired {
                expires_at: 1_700_000_300,
                now: 1_700_000_300
            }
        ));
        let err = c.check_time(1_700_000_310, 60).unwrap_err();
        assert_eq!(
            err.to_string(),
            "credential expired at unix time 1700000300, 10 s before now (1700000310)"
        );

        let err = c.check_time(1_699_999_939, 60).unwrap_err();
        assert_eq!(
            err.to_string(),
            "credential not yet valid: issued at unix time 1700000000, 61 s after now \
             (1699999939), beyond the allowed clock skew of 60 s"
        );
        // Extreme values neither overflow nor panic.
        assert!(c.check_time(i64::MAX, i64::MAX).is_err());
        assert!(c.check_time(i64::MIN, 0).is_err());
    }

    #[test]
    fn auth_type_parse() {
        assert_eq!(AuthType::parse("auth/slurm").unwrap(), AuthType::Slurm);
        assert_eq!(AuthType::parse(" auth/munge ").unwrap(), AuthType::Munge);
        assert_eq!("auth/munge".parse::<AuthType>().unwrap(), AuthType::Munge);
        assert_eq!(AuthType::default(), AuthType::Slurm);
        for t in [AuthType::Slurm, AuthType::Munge] {
            assert_eq!(AuthType::parse(&t.to_string()).unwrap(), t);
        }
        for bad in [
            "",
            "auth/none",
            "auth/jwt",
            "AUTH/SLURM",
            "slurm",
            "auth/slurmé",
        ] {
            let err = AuthType::parse(bad).unwrap_err();
            assert!(matches!(err, AuthError::UnknownAuthType { .. }), "{bad}");
        }
        assert_eq!(
            AuthType::parse("auth/none").unwrap_err().to_string(),
            "unknown AuthType \"auth/none\" (supported: auth/slurm, auth/munge)"
        );
    }

    #[test]
    fn auth_info_parse() {
        assert_eq!(AuthInfo::parse("").unwrap(), AuthInfo::default());
        let info = AuthInfo::parse(
            "socket=/run/munge/munge.socket.2, ttl=60,cred_expire=120,key=/etc/k,disable_sack,",
        )
        .unwrap();
        assert_eq!(
            info,
            AuthInfo {
                socket: Some(PathBuf::from("/run/munge/munge.socket.2")),
                key: Some(PathBuf::from("/etc/k")),
                ttl: Some(60),
                cred_expire: Some(120),
                other: vec!["disable_sack".to_string()],
            }
        );
        assert_eq!(info.credential_ttl(), 60);
        assert_eq!(AuthInfo::default().credential_ttl(), DEFAULT_TTL_SECS);
    }

    #[test]
    fn auth_info_errors() {
        for (bad, detail) in [
            ("ttl=0", "must be at least 1 second"),
            (
                "ttl=99999999999",
                "expects a whole number of seconds from 1 to 4294967295",
            ),
            (
                "ttl=-1",
                "expects a whole number of seconds from 1 to 4294967295",
            ),
            ("ttl", "expects a number of seconds after '='"),
            (
                "cred_expire=abc",
                "expects a whole number of seconds from 1 to 4294967295",
            ),
            ("socket=", "expects a path after '='"),
            ("key", "expects a path after '='"),
            ("ttl=5,ttl=6", "given more than once"),
        ] {
            match AuthInfo::parse(bad) {
                Err(AuthError::InvalidAuthInfo { detail: d, .. }) => assert_eq!(d, detail, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert_eq!(
            AuthInfo::parse("ttl=x").unwrap_err().to_string(),
            "invalid AuthInfo option \"ttl=x\": expects a whole number of seconds from 1 to 4294967295"
        );
    }

    #[test]
    fn key_path_defaults_beside_slurm_conf() {
        let info = AuthInfo::default();
        assert_eq!(
            info.key_path(Path::new("/etc/slurm/slurm.conf")),
            PathBuf::from("/etc/slurm/slurm.key")
        );
        let info = AuthInfo::parse("key=/secret/k").unwrap();
        assert_eq!(
            info.key_path(Path::new("/etc/slurm/slurm.conf")),
            PathBuf::from("/secret/k")
        );
    }

    #[test]
    fn authenticator_for_slurm_reports_missing_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slurm.key");
        let err = authenticator_for(AuthType::Slurm, &path, &AuthInfo::default()).unwrap_err();
        assert!(matches!(err, AuthError::KeyMissing { .. }), "{err}");
        generate_key(&path).unwrap();
        let auth = authenticator_for(AuthType::Slurm, &path, &AuthInfo::default()).unwrap();
        assert_eq!(auth.name(), "auth/slurm");
    }

    #[cfg(not(feature = "munge"))]
    #[test]
    fn authenticator_for_munge_without_feature() {
        let err = authenticator_for(AuthType::Munge, Path::new("unused"), &AuthInfo::default())
            .unwrap_err();
        assert!(matches!(err, AuthError::MungeNotBuilt));
    }

    #[test]
    fn unix_now_is_after_2020() {
        assert!(unix_now() > 1_577_836_800);
    }

    proptest! {
        #[test]
        fn layout_round_trips(
            uid in any::<u32>(), gid in any::<u32>(),
            host in "\\PC{0,60}",
            issued_at in any::<i64>(), ttl in 1u32..,
            payload in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            prop_assume!(host.len() <= MAX_HOST_LEN && issued_at < i64::MAX);
            let c = Claims::new(Uid::new(uid), Gid::new(gid), host, issued_at, ttl)
                .with_payload(payload);
            let bytes = encode_claims(&c).unwrap();
            prop_assert_eq!(decode_claims(&bytes).unwrap(), c);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_claims(&bytes);
        }

        #[test]
        fn auth_info_never_panics(s in "\\PC{0,80}") {
            let _ = AuthInfo::parse(&s);
            let _ = AuthType::parse(&s);
        }
    }
}
