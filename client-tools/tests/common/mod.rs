//! The part every fake-controller test shares: a key, a slurm.conf that
//! points the commands at the fake, and the fake served on loopback from a
//! thread of its own until the value is dropped.

use std::path::{Path, PathBuf};

use slurm_common::auth::{generate_key, Authenticator, Claims, SlurmKeyAuth};
use slurm_proto::{auth_credential, ErrorCode, SlurmController, SlurmControllerServer};
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Status};

/// A fake controller serving on 127.0.0.1, with its work directory,
/// slurm.conf and key.
pub struct FakeServer {
    dir: tempfile::TempDir,
    conf: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Serves what `service` builds (given the key's authenticator); the
    /// slurm.conf is `conf_text` of the port the fake listens on.
    pub fn start<S: SlurmController>(
        conf_text: impl FnOnce(u16) -> String,
        service: impl FnOnce(SlurmKeyAuth) -> S,
    ) -> FakeServer {
        let dir = tempfile::tempdir().expect("dir");
        let key = dir.path().join("slurm.key");
        generate_key(&key).expect("key");
        let auth = SlurmKeyAuth::load(&key).expect("load key");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let incoming = rt
            .block_on(async { TcpIncoming::bind("127.0.0.1:0".parse().expect("addr")) })
            .expect("bind");
        let port = incoming.local_addr().expect("addr").port();
        let conf = dir.path().join("slurm.conf");
        std::fs::write(&conf, conf_text(port)).expect("conf");
        let fake = service(auth);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            rt.block_on(async move {
                let _ = tonic::transport::Server::builder()
                    .add_service(SlurmControllerServer::new(fake))
                    .serve_with_incoming_shutdown(incoming, async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        FakeServer {
            dir,
            conf,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The work directory (the commands run there).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn conf(&self) -> &Path {
        &self.conf
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The claims of a request's credential; a request without a valid one
/// is refused, as the controller refuses it.
pub fn check_credential<T>(auth: &SlurmKeyAuth, request: &Request<T>) -> Result<Claims, Status> {
    let token = auth_credential(request.metadata())
        .ok_or_else(|| ErrorCode::ProtocolAuthentication.to_status("no credential"))?;
    auth.verify_now(token)
        .map_err(|e| ErrorCode::ProtocolAuthentication.to_status(e.to_string()))
}

/// Makes `impl SlurmController for $fake`: the methods written out, then
/// each listed unary one answering "unimplemented", and `SubmitJobs`
/// (which no command these tests run calls) answering the same. One macro
/// makes the whole impl so that `async_trait` sees every method.
#[macro_export]
macro_rules! controller_impl {
    ($fake:ident { $($own:tt)* } $($name:ident($req:ty) -> $reply:ty;)*) => {
        #[tonic::async_trait]
        impl SlurmController for $fake {
            $($own)*

            type SubmitJobsStream = slurm_proto::SubmitJobsReplyStream;

            async fn submit_jobs(
                &self,
                _: Request<tonic::Streaming<v1::SubmitJobRequest>>,
            ) -> Result<Response<Self::SubmitJobsStream>, Status> {
                Err(Status::unimplemented("submit_jobs"))
            }

            $(
                async fn $name(&self, _: Request<$req>) -> Result<Response<$reply>, Status> {
                    Err(Status::unimplemented(stringify!($name)))
                }
            )*
        }
    };
}
