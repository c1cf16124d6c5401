//! `AuthType=auth/slurm`: credentials signed with HMAC-SHA256 under a key
//! shared by every host of the cluster.
//!
//! The token is base64url (no padding) of the claims layout from the parent
//! module followed by a 32-byte tag over all of it. The key lives in
//! `slurm.key` beside slurm.conf (as in Slurm 23.11 and later) unless
//! `AuthInfo=key=PATH` names another file. Because anyone holding the key can
//! sign for any uid, loading refuses a key file that other users can access,
//! and a key shorter than 32 bytes (the HMAC-SHA256 output size, below which
//! the key becomes the weakest link).
//!
//! Verification checks, in order: token size, base64url, version byte, tag
//! (constant-time, through `hmac`), layout, validity window. Nothing from the
//! body is interpreted before the tag matches.

use std::fmt;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{
    decode_claims, encode_claims, AuthError, Authenticator, Claims, CREDENTIAL_VERSION,
    DEFAULT_MAX_CLOCK_SKEW_SECS, FIXED_LEN, MAX_HOST_LEN, MAX_PAYLOAD_LEN,
};

type HmacSha256 = Hmac<Sha256>;

/// File name of the key, looked up beside slurm.conf.
pub const KEY_FILE_NAME: &str = "slurm.key";

/// Shortest key accepted, in bytes.
pub const MIN_KEY_LEN: usize = 32;

/// Largest key file accepted, in bytes; guards against pointing the key path
/// at something huge by mistake.
pub const MAX_KEY_LEN: usize = 1024 * 1024;

/// Size of a key made by [`generate_key`], in bytes.
pub const GENERATED_KEY_LEN: usize = 64;

/// Size of the HMAC-SHA256 tag, in bytes.
const TAG_LEN: usize = 32;

/// Longest token a valid credential can produce: base64 of the largest
/// layout plus the tag. Longer input is refused before decoding.
pub const MAX_TOKEN_LEN: usize = (FIXED_LEN + MAX_HOST_LEN + MAX_PAYLOAD_LEN + TAG_LEN) * 4 / 3 + 1;

/// The key file for the configuration file at `conf_path`: `slurm.key` in the
/// same directory.
pub fn default_key_path(conf_path: &Path) -> PathBuf {
    conf_path
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join(KEY_FILE_NAME)
}

/// Writes a new key of [`GENERATED_KEY_LEN`] bytes from /dev/urandom to
/// `path`, mode 0600. Refuses to replace an existing file: rotating the key
/// of a running cluster is a deliberate act, never a side effect.
pub fn generate_key(path: &Path) -> Result<(), AuthError> {
    let mut key = [0u8; GENERATED_KEY_LEN];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(|source| AuthError::RandomSource { source })?;

    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| {
            if source.kind() == ErrorKind::AlreadyExists {
                AuthError::KeyExists {
                    path: path.to_path_buf(),
                }
            } else {
                AuthError::KeyWrite {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
    // The umask may have removed bits from 0600; set the mode exactly.
    let written = file
        .set_permissions(Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(&key))
        .and_then(|()| file.sync_all());
    if let Err(source) = written {
        // Do not leave a truncated key behind for the next start to load.
        let _ = std::fs::remove_file(path);
        return Err(AuthError::KeyWrite {
            path: path.to_path_buf(),
            source,
        });
    }
    Ok(())
}

/// Reads and checks a key file: present, a regular file, not accessible by
/// other users, between [`MIN_KEY_LEN`] and [`MAX_KEY_LEN`] bytes.
pub fn read_key_file(path: &Path) -> Result<Vec<u8>, AuthError> {
    let unreadable = |source| AuthError::KeyUnreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(|source| {
        if source.kind() == ErrorKind::NotFound {
            AuthError::KeyMissing {
                path: path.to_path_buf(),
            }
        } else {
            unreadable(source)
        }
    })?;
    // Checked on the open descriptor, so the file cannot be swapped between
    // the check and the read.
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(AuthError::KeyNotRegularFile {
            path: path.to_path_buf(),
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o007 != 0 {
        return Err(AuthError::KeyTooOpen {
            path: path.to_path_buf(),
            mode,
        });
    }
    let mut key = Vec::new();
    file.take(MAX_KEY_LEN as u64 + 1)
        .read_to_end(&mut key)
        .map_err(unreadable)?;
    if key.len() > MAX_KEY_LEN {
        return Err(AuthError::KeyTooLong {
            path: path.to_path_buf(),
            max: MAX_KEY_LEN,
        });
    }
    if key.len() < MIN_KEY_LEN {
        return Err(AuthError::KeyTooShort {
            path: path.to_path_buf(),
            len: key.len(),
            min: MIN_KEY_LEN,
        });
    }
    Ok(key)
}

/// The auth/slurm authenticator: holds the keyed HMAC, never the key in a
/// printable form.
#[derive(Clone)]
pub struct SlurmKeyAuth {
    mac: HmacSha256,
    max_clock_skew: i64,
}

impl fmt::Debug for SlurmKeyAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlurmKeyAuth")
            .field("key", &"<redacted>")
            .field("max_clock_skew", &self.max_clock_skew)
            .finish()
    }
}

impl SlurmKeyAuth {
    /// Loads the key file at `path` (see [`read_key_file`]).
    pub fn load(path: &Path) -> Result<Self, AuthError> {
        Self::from_key(&read_key_file(path)?)
    }

    /// Uses `key` directly, e.g. a key held in memory by a test cluster.
    pub fn from_key(key: &[u8]) -> Result<Self, AuthError> {
        let too_short = AuthError::KeyMaterialTooShort {
            len: key.len(),
            min: MIN_KEY_LEN,
        };
        if key.len() < MIN_KEY_LEN {
            return Err(too_short);
        }
        // HMAC accepts keys of any length, so this cannot fail in practice.
        let mac = HmacSha256::new_from_slice(key).map_err(|_| too_short)?;
        Ok(Self {
            mac,
            max_clock_skew: DEFAULT_MAX_CLOCK_SKEW_SECS,
        })
    }

    /// Sets how many seconds in the future an issue time may lie (negative
    /// values count as 0).
    pub fn with_max_clock_skew(mut self, secs: i64) -> Self {
        self.max_clock_skew = secs.max(0);
        self
    }

    /// Signs `body` and encodes body and tag as the token text.
    fn seal(&self, mut body: Vec<u8>) -> String {
        let mut mac = self.mac.clone();
        mac.update(&body);
        body.extend_from_slice(&mac.finalize().into_bytes());
        URL_SAFE_NO_PAD.encode(body)
    }
}

impl Authenticator for SlurmKeyAuth {
    fn name(&self) -> &'static str {
        "auth/slurm"
    }

    fn create(&self, claims: &Claims) -> Result<String, AuthError> {
        Ok(self.seal(encode_claims(claims)?))
    }

    fn verify(&self, token: &str, now: i64) -> Result<Claims, AuthError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(AuthError::Malformed {
                part: "token",
                detail: format!(
                    "{} bytes long, more than the limit of {MAX_TOKEN_LEN}",
                    token.len()
                ),
            });
        }
        let raw = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|e| AuthError::Malformed {
                part: "encoding",
                detail: format!("not unpadded base64url: {e}"),
            })?;
        let Some(&version) = raw.first() else {
            return Err(AuthError::Malformed {
                part: "token",
                detail: "empty".to_string(),
            });
        };
        if version != CREDENTIAL_VERSION {
            return Err(AuthError::UnsupportedVersion {
                found: version,
                supported: CREDENTIAL_VERSION,
            });
        }
        if raw.len() < FIXED_LEN + TAG_LEN {
            return Err(AuthError::Malformed {
                part: "layout",
                detail: format!(
                    "{} bytes, fewer than the minimum of {}",
                    raw.len(),
                    FIXED_LEN + TAG_LEN
                ),
            });
        }
        let (body, tag) = raw.split_at(raw.len() - TAG_LEN);
        let mut mac = self.mac.clone();
        mac.update(body);
        mac.verify_slice(tag).map_err(|_| AuthError::BadSignature)?;
        let claims = decode_claims(body)?;
        claims.check_time(now, self.max_clock_skew)?;
        Ok(claims)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ids::{Gid, Uid};
    use proptest::prelude::*;

    const NOW: i64 = 1_700_000_000;

    fn auth() -> SlurmKeyAuth {
        SlurmKeyAuth::from_key(&[7u8; 64]).unwrap()
    }

    fn claims() -> Claims {
        Claims::new(Uid::new(1000), Gid::new(100), "node01", NOW, 300)
    }

    fn write_key(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn round_trip() {
        let a = auth();
        assert_eq!(a.name(), "auth/slurm");
        let c = claims().with_payload(vec![0, 1, 2, 255]);
        let token = a.create(&c).unwrap();
        assert!(token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(a.verify(&token, NOW + 10).unwrap(), c);
    }

    #[test]
    fn verify_now_reads_the_clock() {
        let a = auth();
        let now = super::super::unix_now();
        let token = a
            .create(&Claims::new(Uid::new(1), Gid::new(1), "h", now, 300))
            .unwrap();
        assert_eq!(a.verify_now(&token).unwrap().uid, Uid::new(1));
        let old = a
            .create(&Claims::new(Uid::new(1), Gid::new(1), "h", now - 1000, 300))
            .unwrap();
        assert!(matches!(a.verify_now(&old), Err(AuthError::Expired { .. })));
    }

    #[test]
    fn wrong_key_is_bad_signature() {
        let token = auth().create(&claims()).unwrap();
        let other = SlurmKeyAuth::from_key(&[8u8; 64]).unwrap();
        let err = other.verify(&token, NOW).unwrap_err();
        assert!(matches!(err, AuthError::BadSignature));
        assert_eq!(
            err.to_string(),
            "credential signature does not match (wrong key or tampered credential)"
        );
    }

    #[test]
    fn expired_and_not_yet_valid() {
        let a = auth();
        let token = a.create(&claims()).unwrap();
        assert!(matches!(
            a.verify(&token, NOW + 300),
            Err(AuthError::Expired {
                expires_at: 1_700_000_300,
                now: 1_700_000_300
            })
        ));
        assert!(a.verify(&token, NOW - 60).is_ok());
        assert!(matches!(
            a.verify(&token, NOW - 61),
            Err(AuthError::NotYetValid { max_skew: 60, .. })
        ));
        let strict = auth().with_max_clock_skew(0);
        assert!(matches!(
            strict.verify(&token, NOW - 1),
            Err(AuthError::NotYetValid { max_skew: 0, .. })
        ));
        assert!(auth().with_max_clock_skew(-5).verify(&token, NOW).is_ok());
    }

    #[test]
    fn create_rejects_invalid_claims() {
        let bad = Claims::new(Uid::new(0), Gid::new(0), "h".repeat(300), NOW, 10);
        assert!(matches!(
            auth().create(&bad),
            Err(AuthError::InvalidClaims { field: "host", .. })
        ));
    }

    fn malformed_part(token: &str) -> &'static str {
        match auth().verify(token, NOW) {
            Err(AuthError::Malformed { part, .. }) => part,
            other => panic!("{token:?}: {other:?}"),
        }
    }

    #[test]
    fn malformed_tokens_name_the_part() {
        assert_eq!(malformed_part(""), "token");
        assert_eq!(malformed_part("not base64!"), "encoding");
        assert_eq!(malformed_part("AQ=="), "encoding"); // padding is not allowed
        assert_eq!(malformed_part("AQ"), "layout"); // version 1, nothing else
        assert_eq!(malformed_part(&"A".repeat(MAX_TOKEN_LEN + 1)), "token");
        let valid = auth().create(&claims()).unwrap();
        assert_eq!(malformed_part(&format!("{valid} ")), "encoding");
        assert_eq!(malformed_part(&format!("{valid}\n")), "encoding");
        assert_eq!(malformed_part("é"), "encoding");
    }

    #[test]
    fn unsupported_version() {
        let a = auth();
        let mut body = encode_claims(&claims()).unwrap();
        body[0] = 9;
        let token = a.seal(body);
        assert!(matches!(
            a.verify(&token, NOW),
            Err(AuthError::UnsupportedVersion {
                found: 9,
                supported: 1
            })
        ));
    }

    #[test]
    fn signed_but_malformed_body() {
        let a = auth();
        let mut body = encode_claims(&claims()).unwrap();
        body.push(0);
        let token = a.seal(body);
        let err = a.verify(&token, NOW).unwrap_err();
        assert!(
            matches!(err, AuthError::Malformed { part: "layout", .. }),
            "{err}"
        );
    }

    #[test]
    fn largest_claims_fit_the_token_limit() {
        let a = auth();
        let c = Claims::new(Uid::new(0), Gid::new(0), "h".repeat(MAX_HOST_LEN), NOW, 10)
            .with_payload(vec![0xab; MAX_PAYLOAD_LEN]);
        let token = a.create(&c).unwrap();
        assert!(token.len() <= MAX_TOKEN_LEN);
        assert_eq!(a.verify(&token, NOW).unwrap(), c);
    }

    #[test]
    fn from_key_rejects_short_key() {
        let err = SlurmKeyAuth::from_key(&[1u8; 31]).unwrap_err();
        assert!(matches!(
            err,
            AuthError::KeyMaterialTooShort { len: 31, min: 32 }
        ));
        assert!(SlurmKeyAuth::from_key(&[1u8; 32]).is_ok());
    }

    #[test]
    fn debug_does_not_print_the_key() {
        let shown = format!(
            "{:?}",
            SlurmKeyAuth::from_key(b"0123456789abcdef0123456789abcdef").unwrap()
        );
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(!shown.contains("0123456789"), "{shown}");
    }

    #[test]
    fn default_key_path_is_beside_slurm_conf() {
        assert_eq!(
            default_key_path(Path::new("/etc/slurm/slurm.conf")),
            PathBuf::from("/etc/slurm/slurm.key")
        );
        assert_eq!(
            default_key_path(Path::new("slurm.conf")),
            PathBuf::from("slurm.key")
        );
        assert_eq!(default_key_path(Path::new("/")), PathBuf::from("slurm.key"));
    }

    #[test]
    fn key_file_checks() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();

        let missing = d.join("absent.key");
        let err = SlurmKeyAuth::load(&missing).unwrap_err();
        assert!(matches!(err, AuthError::KeyMissing { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!("auth/slurm key file {} does not exist", missing.display())
        );

        let short = write_key(d, "short.key", &[1; 31], 0o600);
        let err = SlurmKeyAuth::load(&short).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "auth/slurm key file {} holds 31 bytes, fewer than the required 32",
                short.display()
            )
        );

        let open = write_key(d, "open.key", &[1; 64], 0o644);
        let err = SlurmKeyAuth::load(&open).unwrap_err();
        assert!(
            matches!(err, AuthError::KeyTooOpen { mode: 0o644, .. }),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "auth/slurm key file {} has mode 0644 and is accessible by other users \
                 (it must not be; use chmod 0600)",
                open.display()
            )
        );
        let other_exec = write_key(d, "x.key", &[1; 64], 0o601);
        assert!(matches!(
            SlurmKeyAuth::load(&other_exec),
            Err(AuthError::KeyTooOpen { mode: 0o601, .. })
        ));

        let huge = write_key(d, "huge.key", &vec![1; MAX_KEY_LEN + 1], 0o600);
        assert!(matches!(
            SlurmKeyAuth::load(&huge),
            Err(AuthError::KeyTooLong { .. })
        ));

        let not_file = d.join("dir.key");
        std::fs::create_dir(&not_file).unwrap();
        std::fs::set_permissions(&not_file, Permissions::from_mode(0o700)).unwrap();
        assert!(matches!(
            SlurmKeyAuth::load(&not_file),
            Err(AuthError::KeyNotRegularFile { .. })
        ));

        // A path through a regular file fails with ENOTDIR, not "missing".
        let through_file = short.join("k");
        let err = SlurmKeyAuth::load(&through_file).unwrap_err();
        assert!(matches!(err, AuthError::KeyUnreadable { .. }), "{err}");

        // Group access is allowed (SlurmUser's group); exactly 32 bytes is enough.
        let ok = write_key(d, "ok.key", &[5; 32], 0o640);
        let a = SlurmKeyAuth::load(&ok).unwrap();
        let b = SlurmKeyAuth::from_key(&[5; 32]).unwrap();
        let token = a.create(&claims()).unwrap();
        assert_eq!(b.verify(&token, NOW).unwrap(), claims());
    }

    #[test]
    fn generate_key_writes_private_random_key() {
        let dir = tempfile::tempdir().unwrap();
        let p1 = dir.path().join("a.key");
        let p2 = dir.path().join("b.key");
        generate_key(&p1).unwrap();
        generate_key(&p2).unwrap();
        let meta = std::fs::metadata(&p1).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
        let k1 = std::fs::read(&p1).unwrap();
        let k2 = std::fs::read(&p2).unwrap();
        assert_eq!(k1.len(), GENERATED_KEY_LEN);
        assert_ne!(k1, k2);

        let a = SlurmKeyAuth::load(&p1).unwrap();
        let token = a.create(&claims()).unwrap();
        assert!(a.verify(&token, NOW).is_ok());
        assert!(matches!(
            SlurmKeyAuth::load(&p2).unwrap().verify(&token, NOW),
            Err(AuthError::BadSignature)
        ));

        let err = generate_key(&p1).unwrap_err();
        assert!(matches!(err, AuthError::KeyExists { .. }), "{err}");
        assert_eq!(std::fs::read(&p1).unwrap(), k1, "existing key was modified");

        let err = generate_key(&dir.path().join("no/such/dir/k")).unwrap_err();
        assert!(matches!(err, AuthError::KeyWrite { .. }), "{err}");
    }

    fn arb_claims() -> impl Strategy<Value = Claims> {
        (
            any::<u32>(),
            any::<u32>(),
            "[a-z0-9.-]{0,40}",
            -1_000i64..1_000,
            1u32..100_000,
            proptest::collection::vec(any::<u8>(), 0..64),
        )
            .prop_map(|(uid, gid, host, offset, ttl, payload)| {
                Claims::new(Uid::new(uid), Gid::new(gid), host, NOW + offset, ttl)
                    .with_payload(payload)
            })
    }

    proptest! {
        #[test]
        fn verify_never_panics_and_rejects_garbage(s in "\\PC{0,300}") {
            prop_assert!(auth().verify(&s, NOW).is_err());
        }

        #[test]
        fn verify_rejects_base64url_garbage(s in "[A-Za-z0-9_-]{0,400}") {
            prop_assert!(auth().verify(&s, NOW).is_err());
        }

        #[test]
        fn round_trips(c in arb_claims()) {
            let a = auth();
            let token = a.create(&c).unwrap();
            prop_assert_eq!(a.verify(&token, c.issued_at).unwrap(), c);
        }

        #[test]
        fn any_changed_character_is_rejected(
            c in arb_claims(),
            index in any::<proptest::sample::Index>(),
            replacement in prop_oneof![
                proptest::char::range('A', 'Z'),
                proptest::char::range('a', 'z'),
                proptest::char::range('0', '9'),
                Just('-'), Just('_'), Just('='), Just('+'), Just('/'),
                any::<char>(),
            ],
        ) {
            let a = auth();
            let token = a.create(&c).unwrap();
            let i = index.index(token.len());
            let original = char::from(token.as_bytes()[i]);
            prop_assume!(replacement != original);
            let mut tampered = token[..i].to_string();
            tampered.push(replacement);
            tampered.push_str(&token[i + 1..]);
            prop_assert!(a.verify(&tampered, c.issued_at).is_err(), "accepted {}", tampered);
        }

        #[test]
        fn truncated_or_extended_tokens_are_rejected(c in arb_claims(), cut in 1usize..8, extra in "[A-Za-z0-9_-]{1,4}") {
            let a = auth();
            let token = a.create(&c).unwrap();
            let cut = cut.min(token.len());
            let truncated = &token[..token.len() - cut];
            let extended = token.clone() + &extra;
            prop_assert!(a.verify(truncated, c.issued_at).is_err());
            prop_assert!(a.verify(&extended, c.issued_at).is_err());
        }
    }
}
