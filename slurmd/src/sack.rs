//! The local credential service of auth/slurm (`slurm_common::auth::sack`):
//! users who may not read slurm.key get their credentials here.
//!
//! One slurmd per host serves, whichever takes the lock file beside the
//! socket first (several slurmd of one cluster may share a host); the others
//! try again now and then, so one of them takes over when it stops. The
//! socket is open to every local user, and grants each exactly the uid and
//! gid the kernel reports for the connecting process. A connection gets
//! [`REQUEST_TIMEOUT`] to send its request; requests are bounded in size.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use slurm_common::auth::sack::{self, Peer};
use slurm_common::auth::unix_now;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use crate::host::SackSetup;

/// How long a client has to send its request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a slurmd that does not serve tries the lock again.
pub const RETRY_EVERY: Duration = Duration::from_secs(10);

/// Serves for the daemon's lifetime (to be spawned and aborted with it).
pub async fn serve(setup: SackSetup) {
    let lock_path = lock_path(&setup.socket);
    let _lock = loop {
        match take_lock(&lock_path) {
            Ok(Some(file)) => break file,
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(path = %lock_path.display(), error = %e,
                    "cannot open the credential service's lock file; not serving credentials");
                return;
            }
        }
        tokio::time::sleep(RETRY_EVERY).await;
    };
    let listener = match bind(&setup.socket) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(path = %setup.socket.display(), error = %e,
                "cannot listen for credential requests");
            return;
        }
    };
    tracing::info!(path = %setup.socket.display(), "serving credentials to local users");
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let setup = setup.clone();
                tokio::spawn(async move {
                    if let Err(e) = handle(stream, &setup).await {
                        tracing::debug!(error = %e, "credential request dropped");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot accept a credential request");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

fn lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The lock file, held, or `None` when another process holds it.
fn take_lock(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    // SAFETY: flock on a descriptor we own; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(Some(file));
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(err)
    }
}

/// Listens at `path` (a socket left there by a stopped slurmd is
/// replaced: the lock says none serves), open to every local user.
fn bind(path: &Path) -> std::io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(listener)
}

async fn handle(mut stream: UnixStream, setup: &SackSetup) -> std::io::Result<()> {
    let cred = stream.peer_cred()?;
    let request = tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut stream))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "request too slow"))??;
    let peer = Peer {
        uid: cred.uid(),
        gid: cred.gid(),
        host: &setup.host_name,
    };
    let reply = sack::answer(
        setup.auth.as_ref(),
        &request,
        &peer,
        unix_now(),
        setup.max_ttl,
    );
    tokio::time::timeout(REQUEST_TIMEOUT, stream.write_all(&reply))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "reply too slow"))??;
    stream.shutdown().await
}

/// The request's bytes: its header, and the payload the header announces
/// (a header that does not read is returned alone, to be refused).
async fn read_request(stream: &mut UnixStream) -> std::io::Result<Vec<u8>> {
    let mut header = [0u8; sack::REQUEST_HEADER_LEN];
    stream.read_exact(&mut header).await?;
    let Ok((_, len)) = sack::decode_request_header(&header) else {
        return Ok(header.to_vec());
    };
    let mut request = vec![0u8; sack::REQUEST_HEADER_LEN + len];
    request[..sack::REQUEST_HEADER_LEN].copy_from_slice(&header);
    stream
        .read_exact(&mut request[sack::REQUEST_HEADER_LEN..])
        .await?;
    Ok(request)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use slurm_common::auth::sack::SackAuth;
    use slurm_common::auth::{Authenticator, Claims, SlurmKeyAuth};
    use slurm_common::ids::{Gid, Uid};
    use std::sync::Arc;

    fn setup(dir: &Path) -> SackSetup {
        SackSetup {
            socket: dir.join(sack::SOCKET_NAME),
            auth: Arc::new(SlurmKeyAuth::from_key(&[5u8; 32]).unwrap()),
            host_name: "here".into(),
            max_ttl: 120,
        }
    }

    /// The credential names the calling process's own uid and gid, whatever
    /// the client claims; a second service on the same socket stays idle.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_the_callers_own_identity() {
        let dir = tempfile::tempdir().unwrap();
        let s = setup(dir.path());
        let server = tokio::spawn(serve(s.clone()));
        let second = tokio::spawn(serve(s.clone()));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let client = loop {
            if let Ok(c) = SackAuth::connect(&s.socket) {
                break c;
            }
            assert!(std::time::Instant::now() < deadline, "no service");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let mode = std::fs::metadata(&s.socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666);
        let token = tokio::task::spawn_blocking(move || {
            let claims = Claims::new(Uid::new(0), Gid::new(0), "x", unix_now(), 9999);
            client.create(&claims).unwrap()
        })
        .await
        .unwrap();
        let claims = s.auth.verify_now(&token).unwrap();
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        assert_eq!((claims.uid.get(), claims.gid.get()), (uid, gid));
        assert_eq!(claims.host, "here");
        assert_eq!(claims.expires_at - claims.issued_at, 120);
        // A garbage header gets a refusal, not a hang or a crash.
        let mut raw = UnixStream::connect(&s.socket).await.unwrap();
        raw.write_all(b"GET / HTTP/1.").await.unwrap();
        let mut reply = Vec::new();
        raw.read_to_end(&mut reply).await.unwrap();
        assert!(sack::decode_reply(&reply).is_err());
        assert!(!second.is_finished(), "the second one waits for the lock");
        server.abort();
        second.abort();
    }
}
