//! auth/munge against a real munged.
//!
//! Needs munged running on the default socket (see .ci/run). When it is not,
//! these tests fail rather than pass silently; set SLURM_SKIP_MUNGE_TESTS=1 to
//! skip them on a machine without munge.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use slurm_common::auth::{
    authenticator_for, unix_now, AuthError, AuthInfo, AuthType, Authenticator, Claims, MungeAuth,
};
use slurm_common::ids::{Gid, Uid};

fn skip() -> bool {
    if std::env::var("SLURM_SKIP_MUNGE_TESTS").as_deref() == Ok("1") {
        eprintln!("SLURM_SKIP_MUNGE_TESTS=1: skipping the munged test");
        return true;
    }
    false
}

fn munge() -> MungeAuth {
    MungeAuth::new(None).unwrap()
}

/// Creates a token, failing with a hint when munged is not reachable.
fn create(auth: &MungeAuth, claims: &Claims) -> String {
    match auth.create(claims) {
        Ok(t) => t,
        Err(e @ AuthError::MungeSocket { .. }) => panic!(
            "{e}\nmunged is not running: start it (see .ci/run) or set \
             SLURM_SKIP_MUNGE_TESTS=1 to skip these tests"
        ),
        Err(e) => panic!("munge encode failed: {e}"),
    }
}

/// Claims for a uid and gid nobody in this test runs as, to show that munged's
/// identity wins.
fn claims(now: i64) -> Claims {
    Claims::new(Uid::new(54_321), Gid::new(54_322), "node07", now, 300)
        .with_payload(b"bound job data".to_vec())
}

fn own_ids() -> (Uid, Gid) {
    // SAFETY: geteuid and getegid have no preconditions and cannot fail.
    unsafe { (Uid::new(libc::geteuid()), Gid::new(libc::getegid())) }
}

#[test]
fn round_trip_takes_uid_and_gid_from_munged() {
    if skip() {
        return;
    }
    let auth = munge();
    let now = unix_now();
    let c = claims(now);
    let token = create(&auth, &c);
    assert!(token.starts_with("MUNGE:"), "{token}");
    assert!(
        token.bytes().all(|b| (0x20..0x7f).contains(&b)),
        "not printable: {token}"
    );

    let got = auth.verify(&token, now).unwrap();
    let (uid, gid) = own_ids();
    assert_eq!(got.uid, uid);
    assert_eq!(got.gid, gid);
    assert_ne!(got.uid, c.uid, "claimed uid must not survive");
    assert_eq!(got.host, c.host);
    assert_eq!(got.issued_at, c.issued_at);
    assert_eq!(got.expires_at, c.expires_at);
    assert_eq!(got.payload, c.payload);
}

#[test]
fn second_decode_is_a_replay() {
    if skip() {
        return;
    }
    let auth = munge();
    let now = unix_now();
    let token = create(&auth, &claims(now));
    auth.verify(&token, now).unwrap();
    let err = auth.verify(&token, now).unwrap_err();
    assert!(matches!(err, AuthError::MungeReplayed { .. }), "{err}");
}

#[test]
fn claims_window_is_checked_after_munge() {
    if skip() {
        return;
    }
    let auth = munge();
    let now = unix_now();
    let token = create(&auth, &claims(now));
    let err = auth.verify(&token, now + 300).unwrap_err();
    assert!(
        matches!(err, AuthError::Expired { expires_at, .. } if expires_at == now + 300),
        "{err}"
    );

    let token = create(&auth, &claims(now));
    let err = auth.verify(&token, now - 3600).unwrap_err();
    assert!(matches!(err, AuthError::NotYetValid { .. }), "{err}");
}

#[test]
fn garbage_and_tampered_credentials_are_invalid() {
    if skip() {
        return;
    }
    let auth = munge();
    let now = unix_now();
    // Make sure munged is up, so the errors below are about the credentials.
    let token = create(&auth, &claims(now));

    let err = auth.verify("", now).unwrap_err();
    assert!(matches!(err, AuthError::Malformed { .. }), "{err}");
    for bad in ["MUNGE:", "MUNGE:garbage:", "not a credential", "MUNGE:é:"] {
        let err = auth.verify(bad, now).unwrap_err();
        assert!(
            matches!(err, AuthError::MungeInvalid { .. }),
            "{bad:?}: {err}"
        );
    }

    // Change one character in the middle of the encoded part.
    let mut bytes = token.into_bytes();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let err = auth.verify(&tampered, now).unwrap_err();
    assert!(matches!(err, AuthError::MungeInvalid { .. }), "{err}");
}

#[test]
fn foreign_payload_is_malformed() {
    if skip() {
        return;
    }
    let auth = munge();
    let now = unix_now();
    // Valid MUNGE credentials that do not carry our claims, made by the
    // `munge` command shipped with munged: no payload, then plain text.
    for args in [&["-n"][..], &["-s", "hello"][..]] {
        let out = std::process::Command::new("munge")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run `munge {}`: {e}", args.join(" ")));
        assert!(out.status.success(), "munge {args:?}: {out:?}");
        let token = String::from_utf8(out.stdout).unwrap();
        let err = auth.verify(token.trim_end(), now).unwrap_err();
        assert!(
            matches!(
                err,
                AuthError::Malformed { .. } | AuthError::UnsupportedVersion { .. }
            ),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn unreachable_socket_names_the_path() {
    // Needs no munged: the socket does not exist.
    let sock = PathBuf::from("/nonexistent/munge.socket.2");
    let auth = MungeAuth::new(Some(sock)).unwrap();
    let err = auth
        .create(&claims(unix_now()))
        .expect_err("encode through a missing socket must fail");
    match &err {
        AuthError::MungeSocket { socket, .. } => assert_eq!(socket, "/nonexistent/munge.socket.2"),
        other => panic!("expected a socket error, got {other:?}"),
    }
    assert!(err
        .to_string()
        .starts_with("cannot talk to munged at socket /nonexistent/munge.socket.2: "));
}

#[test]
fn authenticator_for_munge_uses_auth_info_socket() {
    let info = AuthInfo::parse("socket=/nonexistent/other.socket").unwrap();
    let auth = authenticator_for(AuthType::Munge, Path::new("unused.key"), &info).unwrap();
    assert_eq!(auth.name(), "auth/munge");
    let err = auth.create(&claims(unix_now())).unwrap_err();
    assert!(
        matches!(&err, AuthError::MungeSocket { socket, .. } if socket == "/nonexistent/other.socket"),
        "{err}"
    );
}
