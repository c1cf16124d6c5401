//! `AuthType=auth/munge`: claims carried inside a MUNGE credential.
//!
//! munged, running on every host with a shared key, encodes the caller's uid
//! and gid into the credential from the socket's peer credentials, so the
//! caller cannot lie about them and needs no secret of its own. The claims
//! layout from the parent module travels as the MUNGE payload (host, times,
//! bound payload); on decode, the uid and gid that munged vouches for replace
//! whatever the claims say.
//!
//! Two MUNGE rules matter to callers:
//! * munged refuses to decode the same credential twice
//!   ([`AuthError::MungeReplayed`]): create a fresh token for every request.
//! * The credential's MUNGE time-to-live is the claims' lifetime, capped by
//!   munged's own maximum; both that and the claims' window are checked.
//!
//! libmunge is a small C library; every call goes through a context created
//! and destroyed per operation (contexts must not be shared between threads),
//! and every buffer it allocates is released with `libc::free`.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::ptr::{self, NonNull};

use munge_sys as ffi;

use super::{
    decode_claims, encode_claims, AuthError, Authenticator, Claims, DEFAULT_MAX_CLOCK_SKEW_SECS,
};
use crate::ids::{Gid, Uid};

/// Longest token accepted before handing it to libmunge. A credential for the
/// largest claims is about 12 KiB of text.
pub const MAX_MUNGE_TOKEN_LEN: usize = 64 * 1024;

const SUCCESS: ffi::munge_err_t = ffi::munge_err_EMUNGE_SUCCESS;

/// The auth/munge authenticator.
#[derive(Debug, Clone)]
pub struct MungeAuth {
    /// munged's socket; `None` uses libmunge's compiled-in default.
    socket: Option<CString>,
    max_clock_skew: i64,
}

impl MungeAuth {
    /// Talks to munged at `socket` (from `AuthInfo=socket=`), or at libmunge's
    /// default socket when `None`. Nothing is contacted until first use.
    pub fn new(socket: Option<PathBuf>) -> Result<Self, AuthError> {
        let socket = socket
            .map(|p| {
                CString::new(p.as_os_str().as_bytes()).map_err(|_| AuthError::InvalidAuthInfo {
                    option: format!("socket={}", p.display()),
                    detail: "the path contains a NUL byte".to_string(),
                })
            })
            .transpose()?;
        Ok(Self {
            socket,
            max_clock_skew: DEFAULT_MAX_CLOCK_SKEW_SECS,
        })
    }

    /// Sets how many seconds in the future a claimed issue time may lie
    /// (negative values count as 0).
    pub fn with_max_clock_skew(mut self, secs: i64) -> Self {
        self.max_clock_skew = secs.max(0);
        self
    }

    fn context(&self) -> Result<Ctx, AuthError> {
        let ctx = Ctx::new()?;
        if let Some(socket) = &self.socket {
            ctx.set_socket(socket)?;
        }
        Ok(ctx)
    }

    /// The socket path for error messages: the configured one, or the one
    /// libmunge uses by default.
    fn socket_description(&self) -> String {
        match &self.socket {
            Some(s) => s.to_string_lossy().into_owned(),
            None => Ctx::new()
                .ok()
                .and_then(|ctx| ctx.socket())
                .unwrap_or_else(|| "(libmunge default)".to_string()),
        }
    }

    fn error(&self, code: ffi::munge_err_t, ctx: &Ctx) -> AuthError {
        classify(code, ctx.error_message(code), || self.socket_description())
    }
}

impl Authenticator for MungeAuth {
    fn name(&self) -> &'static str {
        "auth/munge"
    }

    fn create(&self, claims: &Claims) -> Result<String, AuthError> {
        let body = encode_claims(claims)?;
        let len = c_int::try_from(body.len()).map_err(|_| AuthError::InvalidClaims {
            field: "payload",
            detail: "is too long for munge".to_string(),
        })?;
        let lifetime = claims.expires_at.saturating_sub(claims.issued_at);
        let ttl = c_int::try_from(lifetime).unwrap_or(c_int::MAX).max(1);
        let ctx = self.context()?;
        ctx.set_int(ffi::munge_opt_MUNGE_OPT_TTL, ttl)?;

        let mut cred: *mut c_char = ptr::null_mut();
        // SAFETY: `cred` is a valid out-pointer; `body` is a live buffer of
        // exactly `len` bytes that libmunge only reads during the call; `ctx`
        // is a live context owned by this thread.
        let rc = unsafe { ffi::munge_encode(&mut cred, ctx.as_ptr(), body.as_ptr().cast(), len) };
        let cred = MungeBuf(cred.cast());
        if rc != SUCCESS {
            return Err(self.error(rc, &ctx));
        }
        if cred.0.is_null() {
            return Err(AuthError::Munge {
                code: rc,
                message: "munge_encode reported success but returned no credential".to_string(),
            });
        }
        // SAFETY: on success libmunge sets `cred` to a NUL-terminated string it
        // allocated; it stays valid until `cred` is dropped at the end of this
        // function, after the text has been copied.
        let text = unsafe { CStr::from_ptr(cred.0.cast::<c_char>()) };
        text.to_str()
            .map(str::to_string)
            .map_err(|_| AuthError::Munge {
                code: rc,
                message: "munge_encode returned a credential that is not UTF-8".to_string(),
            })
    }

    fn verify(&self, token: &str, now: i64) -> Result<Claims, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Malformed {
                part: "token",
                detail: "empty".to_string(),
            });
        }
        if token.len() > MAX_MUNGE_TOKEN_LEN {
            return Err(AuthError::Malformed {
                part: "token",
                detail: format!(
                    "{} bytes long, more than the limit of {MAX_MUNGE_TOKEN_LEN}",
                    token.len()
                ),
            });
        }
        let cred = CString::new(token).map_err(|_| AuthError::Malformed {
            part: "token",
            detail: "contains a NUL byte".to_string(),
        })?;
        let ctx = self.context()?;
        let mut buf: *mut c_void = ptr::null_mut();
        let mut len: c_int = 0;
        let mut uid: ffi::uid_t = 0;
        let mut gid: ffi::gid_t = 0;
        // SAFETY: `cred` is a NUL-terminated string that outlives the call;
        // `buf`, `len`, `uid` and `gid` are valid out-pointers to locals of
        // the types libmunge writes; `ctx` is a live context owned by this
        // thread.
        let rc = unsafe {
            ffi::munge_decode(
                cred.as_ptr(),
                ctx.as_ptr(),
                &mut buf,
                &mut len,
                &mut uid,
                &mut gid,
            )
        };
        // Owns the payload even on error: libmunge still allocates it for
        // expired, rewound and replayed credentials.
        let buf = MungeBuf(buf);
        if rc != SUCCESS {
            return Err(self.error(rc, &ctx));
        }
        let body: &[u8] = match (NonNull::new(buf.0), usize::try_from(len)) {
            (Some(p), Ok(n)) if n > 0 => {
                // SAFETY: libmunge allocated `buf` with `len` bytes of payload
                // (plus a NUL it does not count); `buf` owns that memory and
                // outlives `body`, whose last use is `decode_claims` below.
                unsafe { std::slice::from_raw_parts(p.as_ptr().cast::<u8>(), n) }
            }
            _ => &[],
        };
        let mut claims = decode_claims(body)?;
        if claims.uid.get() != uid || claims.gid.get() != gid {
            tracing::debug!(
                claimed_uid = claims.uid.get(),
                claimed_gid = claims.gid.get(),
                munge_uid = uid,
                munge_gid = gid,
                "munge identity replaces the claimed one"
            );
        }
        claims.uid = Uid::new(uid);
        claims.gid = Gid::new(gid);
        claims.check_time(now, self.max_clock_skew)?;
        Ok(claims)
    }
}

/// Maps a libmunge error code to the matching [`AuthError`]. `socket` is only
/// evaluated for errors reaching munged.
fn classify(code: ffi::munge_err_t, message: String, socket: impl FnOnce() -> String) -> AuthError {
    match code {
        ffi::munge_err_EMUNGE_SOCKET | ffi::munge_err_EMUNGE_TIMEOUT => AuthError::MungeSocket {
            socket: socket(),
            message,
        },
        ffi::munge_err_EMUNGE_CRED_EXPIRED => AuthError::MungeExpired { message },
        ffi::munge_err_EMUNGE_CRED_REPLAYED => AuthError::MungeReplayed { message },
        ffi::munge_err_EMUNGE_CRED_REWOUND => AuthError::MungeRewound { message },
        ffi::munge_err_EMUNGE_BAD_CRED
        | ffi::munge_err_EMUNGE_BAD_LENGTH
        | ffi::munge_err_EMUNGE_BAD_VERSION
        | ffi::munge_err_EMUNGE_BAD_CIPHER
        | ffi::munge_err_EMUNGE_BAD_MAC
        | ffi::munge_err_EMUNGE_BAD_ZIP
        | ffi::munge_err_EMUNGE_BAD_REALM
        | ffi::munge_err_EMUNGE_CRED_INVALID
        | ffi::munge_err_EMUNGE_CRED_UNAUTHORIZED => AuthError::MungeInvalid { code, message },
        _ => AuthError::Munge { code, message },
    }
}

/// libmunge's generic text for `code`.
fn strerror(code: ffi::munge_err_t) -> String {
    // SAFETY: munge_strerror accepts any code and returns a pointer to a
    // static string (or NULL, checked below) that must not be freed.
    let p = unsafe { ffi::munge_strerror(code) };
    if p.is_null() {
        return format!("munge error {code}");
    }
    // SAFETY: `p` is a non-NULL pointer to a static NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A libmunge context, destroyed on drop. Not `Send`: one per operation.
struct Ctx(NonNull<ffi::munge_ctx>);

impl Ctx {
    fn new() -> Result<Self, AuthError> {
        // SAFETY: munge_ctx_create has no preconditions; it returns a new
        // context or NULL when out of memory.
        let raw = unsafe { ffi::munge_ctx_create() };
        NonNull::new(raw).map(Self).ok_or_else(|| AuthError::Munge {
            code: ffi::munge_err_EMUNGE_NO_MEMORY,
            message: "cannot create a munge context".to_string(),
        })
    }

    fn as_ptr(&self) -> ffi::munge_ctx_t {
        self.0.as_ptr()
    }

    fn set_socket(&self, socket: &CStr) -> Result<(), AuthError> {
        // SAFETY: the context is live; MUNGE_OPT_SOCKET takes one
        // NUL-terminated string argument, which libmunge copies, so `socket`
        // need only outlive the call.
        let rc = unsafe {
            ffi::munge_ctx_set(
                self.as_ptr(),
                ffi::munge_opt_MUNGE_OPT_SOCKET as c_int,
                socket.as_ptr(),
            )
        };
        self.check(rc)
    }

    fn set_int(&self, opt: ffi::munge_opt, value: c_int) -> Result<(), AuthError> {
        // SAFETY: the context is live; the options passed here (TTL) take one
        // `int` argument, which is what is passed.
        let rc = unsafe { ffi::munge_ctx_set(self.as_ptr(), opt as c_int, value) };
        self.check(rc)
    }

    fn check(&self, rc: ffi::munge_err_t) -> Result<(), AuthError> {
        if rc == SUCCESS {
            Ok(())
        } else {
            Err(AuthError::Munge {
                code: rc,
                message: self.error_message(rc),
            })
        }
    }

    /// The socket path this context will use.
    fn socket(&self) -> Option<String> {
        let mut p: *const c_char = ptr::null();
        // SAFETY: the context is live; MUNGE_OPT_SOCKET stores a
        // `const char *` through the one pointer argument, which points to a
        // local of that type.
        let rc = unsafe {
            ffi::munge_ctx_get(
                self.as_ptr(),
                ffi::munge_opt_MUNGE_OPT_SOCKET as c_int,
                &mut p as *mut *const c_char,
            )
        };
        if rc != SUCCESS || p.is_null() {
            return None;
        }
        // SAFETY: on success `p` points to a NUL-terminated string owned by
        // the context, which is alive for this borrow; it is copied at once.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// The context's detailed message for the last error, or the generic
    /// text for `code`.
    fn error_message(&self, code: ffi::munge_err_t) -> String {
        // SAFETY: the context is live; the result is NULL or a string owned by
        // the context, copied before the context can change.
        let p = unsafe { ffi::munge_ctx_strerror(self.as_ptr()) };
        if p.is_null() {
            return strerror(code);
        }
        // SAFETY: `p` is a non-NULL NUL-terminated string owned by the live
        // context.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the context came from munge_ctx_create, is owned solely by
        // this value and is destroyed exactly once, here.
        unsafe { ffi::munge_ctx_destroy(self.as_ptr()) }
    }
}

/// Memory allocated by libmunge with malloc (credential text or payload),
/// released with `free` on drop. May be NULL.
struct MungeBuf(*mut c_void);

impl Drop for MungeBuf {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer was returned by libmunge, which documents
            // that the caller frees it; it is owned solely by this value and
            // freed exactly once. free(NULL) is avoided anyway.
            unsafe { libc::free(self.0) }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sock() -> String {
        "/run/munge/munge.socket.2".to_string()
    }

    #[test]
    fn classify_maps_each_family() {
        let m = || "msg".to_string();
        assert!(matches!(
            classify(ffi::munge_err_EMUNGE_SOCKET, m(), sock),
            AuthError::MungeSocket { ref socket, .. } if socket == "/run/munge/munge.socket.2"
        ));
        assert!(matches!(
            classify(ffi::munge_err_EMUNGE_TIMEOUT, m(), sock),
            AuthError::MungeSocket { .. }
        ));
        assert!(matches!(
            classify(ffi::munge_err_EMUNGE_CRED_EXPIRED, m(), sock),
            AuthError::MungeExpired { .. }
        ));
        assert!(matches!(
            classify(ffi::munge_err_EMUNGE_CRED_REPLAYED, m(), sock),
            AuthError::MungeReplayed { .. }
        ));
        assert!(matches!(
            classify(ffi::munge_err_EMUNGE_CRED_REWOUND, m(), sock),
            AuthError::MungeRewound { .. }
        ));
        for code in [
            ffi::munge_err_EMUNGE_BAD_CRED,
            ffi::munge_err_EMUNGE_BAD_MAC,
            ffi::munge_err_EMUNGE_CRED_INVALID,
            ffi::munge_err_EMUNGE_CRED_UNAUTHORIZED,
        ] {
            assert!(matches!(
                classify(code, m(), sock),
                AuthError::MungeInvalid { code: c, .. } if c == code
            ));
        }
        assert!(matches!(
            classify(ffi::munge_err_EMUNGE_NO_MEMORY, m(), sock),
            AuthError::Munge { code: 5, .. }
        ));
        // The socket is looked up only when it is part of the error.
        let err = classify(ffi::munge_err_EMUNGE_BAD_CRED, m(), || {
            panic!("socket looked up for a credential error")
        });
        assert_eq!(
            err.to_string(),
            "munge credential invalid (munge error 8): msg"
        );
    }

    #[test]
    fn strerror_handles_any_code() {
        assert!(!strerror(ffi::munge_err_EMUNGE_SOCKET).is_empty());
        let _ = strerror(9999);
    }

    #[test]
    fn default_socket_is_known() {
        let auth = MungeAuth::new(None).unwrap();
        assert!(auth.socket_description().contains("munge"));
        let auth = MungeAuth::new(Some(PathBuf::from("/x/y.sock"))).unwrap();
        assert_eq!(auth.socket_description(), "/x/y.sock");
    }

    #[test]
    fn nul_in_socket_path_is_rejected() {
        let err = MungeAuth::new(Some(PathBuf::from("/a\0b"))).unwrap_err();
        assert!(matches!(err, AuthError::InvalidAuthInfo { .. }), "{err}");
    }

    #[test]
    fn verify_rejects_nul_and_huge_tokens_before_calling_munged() {
        let auth = MungeAuth::new(Some(PathBuf::from("/nonexistent/socket"))).unwrap();
        assert!(matches!(
            auth.verify("", 0),
            Err(AuthError::Malformed { part: "token", .. })
        ));
        assert!(matches!(
            auth.verify("MUNGE:\0:", 0),
            Err(AuthError::Malformed { part: "token", .. })
        ));
        assert!(matches!(
            auth.verify(&"A".repeat(MAX_MUNGE_TOKEN_LEN + 1), 0),
            Err(AuthError::Malformed { part: "token", .. })
        ));
    }
}
