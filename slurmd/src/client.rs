//! Calls from the node to the controller (SlurmNodeReports), signed with
//! this host's credential and tried on each SlurmctldHost in order.
//!
//! Reports of finished work must not be lost, so [`retry`] repeats a call
//! with a growing pause until the controller acknowledges it or answers
//! with an error that retrying cannot fix.
//!
//! Each try of one controller is bounded by MessageTimeout (connect and
//! call). The controller that answered last is tried first next time, so
//! after a failover the reports go straight to the backup in charge instead
//! of waiting on the dead primary each time.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use slurm_common::auth::{unix_now, Authenticator, Claims};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1::{
    EpilogCompleteReply, EpilogCompleteRequest, JobCompleteReply, JobCompleteRequest,
    PrologCompleteReply, PrologCompleteRequest, RegisterNodeReply, RegisterNodeRequest,
};
use slurm_proto::{ErrorCode, SlurmNodeReportsClient};
use thiserror::Error;
use tonic::transport::{Channel, Endpoint};

/// A call that reached no controller, or was refused.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("invalid controller address {endpoint}: {detail}")]
    BadEndpoint { endpoint: String, detail: String },
    #[error("cannot sign the request: {detail}")]
    Credential { detail: String },
    #[error("no controller answered {rpc}: {last}")]
    Unreachable { rpc: &'static str, last: String },
    #[error("controller refused {rpc}: {code}: {detail}")]
    Refused {
        rpc: &'static str,
        code: ErrorCode,
        detail: String,
    },
}

impl ClientError {
    /// Whether trying again later can help.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Unreachable { .. } | ClientError::Credential { .. } => true,
            ClientError::BadEndpoint { .. } => false,
            ClientError::Refused { code, .. } => matches!(
                code,
                ErrorCode::InStandbyMode
                    | ErrorCode::Unspecified
                    | ErrorCode::CommunicationConnection
                    | ErrorCode::CommunicationSend
                    | ErrorCode::CommunicationReceive
                    | ErrorCode::ControllerConnect
                    | ErrorCode::ControllerSend
                    | ErrorCode::ControllerReceive
                    | ErrorCode::SocketTimeout
                    | ErrorCode::ProtocolAuthentication
                    | ErrorCode::AuthCredentialInvalid
            ),
        }
    }
}

/// The controllers, reachable through lazily connected channels.
#[derive(Clone)]
pub struct ControllerClient {
    channels: Vec<(String, Channel)>,
    /// Index of the controller that answered last (shared by clones).
    preferred: Arc<AtomicUsize>,
    auth: Arc<dyn Authenticator>,
    host: String,
    ttl: u32,
}

impl std::fmt::Debug for ControllerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerClient")
            .field(
                "endpoints",
                &self.channels.iter().map(|c| &c.0).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ControllerClient {
    /// Channels connect on first use; must be called inside a tokio runtime.
    pub fn new(
        endpoints: &[String],
        auth: Arc<dyn Authenticator>,
        host: String,
        ttl: u32,
        timeout: Duration,
    ) -> Result<Self, ClientError> {
        let mut channels = Vec::new();
        for ep in endpoints {
            let e = Endpoint::from_shared(ep.clone()).map_err(|err| ClientError::BadEndpoint {
                endpoint: ep.clone(),
                detail: err.to_string(),
            })?;
            let ch = e
                .connect_timeout(timeout)
                .timeout(timeout)
                .tcp_nodelay(true)
                .connect_lazy();
            channels.push((ep.clone(), ch));
        }
        Ok(Self {
            channels,
            preferred: Arc::new(AtomicUsize::new(0)),
            auth,
            host,
            ttl,
        })
    }

    fn request<T>(&self, body: T) -> Result<tonic::Request<T>, ClientError> {
        // SAFETY: geteuid/getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let claims = Claims::new(
            Uid::new(uid),
            Gid::new(gid),
            self.host.clone(),
            unix_now(),
            self.ttl,
        );
        let token = self
            .auth
            .create(&claims)
            .map_err(|e| ClientError::Credential {
                detail: e.to_string(),
            })?;
        let mut req = tonic::Request::new(body);
        slurm_proto::set_auth_credential(req.metadata_mut(), &token).map_err(|e| {
            ClientError::Credential {
                detail: e.to_string(),
            }
        })?;
        Ok(req)
    }

    /// Tries the controller that answered last, then the others in
    /// SlurmctldHost order; the first answer (success or a refusal other
    /// than "in standby") wins. `f` makes the call on a controller's
    /// channel, through whichever of its services it needs.
    pub async fn call_channel<T, R, F, Fut>(
        &self,
        rpc: &'static str,
        body: T,
        f: F,
    ) -> Result<R, ClientError>
    where
        T: Clone,
        F: Fn(Channel, tonic::Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        let mut last = String::from("no controller configured");
        for i in try_order(self.channels.len(), self.preferred.load(Ordering::Relaxed)) {
            let (ep, ch) = &self.channels[i];
            let req = self.request(body.clone())?;
            match f(ch.clone(), req).await {
                Ok(resp) => {
                    self.preferred.store(i, Ordering::Relaxed);
                    return Ok(resp.into_inner());
                }
                Err(status) => {
                    let (code, detail) = ErrorCode::from_status(&status);
                    let unreachable = matches!(
                        status.code(),
                        tonic::Code::Unavailable
                            | tonic::Code::DeadlineExceeded
                            | tonic::Code::Cancelled
                    ) || code == ErrorCode::InStandbyMode;
                    if unreachable {
                        tracing::debug!(endpoint = %ep, rpc, %status, "controller not answering");
                        last = format!("{ep}: {}", status.message());
                        continue;
                    }
                    self.preferred.store(i, Ordering::Relaxed);
                    return Err(ClientError::Refused { rpc, code, detail });
                }
            }
        }
        Err(ClientError::Unreachable { rpc, last })
    }

    /// [`ControllerClient::call_channel`] through the SlurmNodeReports
    /// service.
    async fn call<T, R, F, Fut>(&self, rpc: &'static str, body: T, f: F) -> Result<R, ClientError>
    where
        T: Clone,
        F: Fn(SlurmNodeReportsClient<Channel>, tonic::Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        self.call_channel(rpc, body, |ch, r| f(SlurmNodeReportsClient::new(ch), r))
            .await
    }

    pub async fn register_node(
        &self,
        body: RegisterNodeRequest,
    ) -> Result<RegisterNodeReply, ClientError> {
        self.call("RegisterNode", body, |mut c, r| async move {
            c.register_node(r).await
        })
        .await
    }

    pub async fn job_complete(
        &self,
        body: JobCompleteRequest,
    ) -> Result<JobCompleteReply, ClientError> {
        self.call("JobComplete", body, |mut c, r| async move {
            c.job_complete(r).await
        })
        .await
    }

    pub async fn epilog_complete(
        &self,
        body: EpilogCompleteRequest,
    ) -> Result<EpilogCompleteReply, ClientError> {
        self.call("EpilogComplete", body, |mut c, r| async move {
            c.epilog_complete(r).await
        })
        .await
    }

    pub async fn prolog_complete(
        &self,
        body: PrologCompleteRequest,
    ) -> Result<PrologCompleteReply, ClientError> {
        self.call("PrologComplete", body, |mut c, r| async move {
            c.prolog_complete(r).await
        })
        .await
    }
}

/// Controller indexes to try: `preferred` first, then the others in order.
fn try_order(len: usize, preferred: usize) -> impl Iterator<Item = usize> {
    let first = (preferred < len).then_some(preferred);
    first
        .into_iter()
        .chain((0..len).filter(move |&i| Some(i) != first))
}

/// Pauses between attempts: 50 ms doubling to `max`.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(max: Duration) -> Self {
        Self {
            next: Duration::from_millis(50),
            max,
        }
    }

    /// The pause before the next attempt.
    pub fn next_pause(&mut self) -> Duration {
        let p = self.next.min(self.max);
        self.next = (self.next * 2).min(self.max);
        p
    }
}

/// Repeats `op` until it succeeds or fails with a permanent error.
pub async fn retry<R, F, Fut>(what: &str, max_pause: Duration, mut op: F) -> Result<R, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<R, ClientError>>,
{
    let mut backoff = Backoff::new(max_pause);
    let mut attempt: u32 = 0;
    loop {
        match op().await {
            Ok(r) => return Ok(r),
            Err(e) if e.is_transient() => {
                let pause = backoff.next_pause();
                attempt = attempt.saturating_add(1);
                // Say it once early and then now and again, not every time.
                if attempt == 3 || attempt % 50 == 0 {
                    tracing::warn!(what, attempt, error = %e, "still trying");
                } else {
                    tracing::debug!(what, error = %e, ?pause, "will retry");
                }
                tokio::time::sleep(pause).await;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_last_controller_that_answered_goes_first() {
        let order = |len, p| try_order(len, p).collect::<Vec<_>>();
        assert_eq!(order(3, 0), vec![0, 1, 2]);
        assert_eq!(order(3, 1), vec![1, 0, 2]);
        assert_eq!(order(3, 2), vec![2, 0, 1]);
        assert_eq!(order(2, 7), vec![0, 1]);
        assert_eq!(order(0, 0), Vec::<usize>::new());
    }

    #[test]
    fn backoff_doubles_to_the_cap() {
        let mut b = Backoff::new(Duration::from_millis(300));
        let pauses: Vec<u128> = (0..5).map(|_| b.next_pause().as_millis()).collect();
        assert_eq!(pauses, vec![50, 100, 200, 300, 300]);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_stops_on_success_and_on_permanent_errors() {
        let mut n = 0;
        let r = retry("x", Duration::from_secs(1), || {
            n += 1;
            let k = n;
            async move {
                if k < 3 {
                    Err(ClientError::Unreachable {
                        rpc: "X",
                        last: String::new(),
                    })
                } else {
                    Ok(k)
                }
            }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        let mut calls = 0;
        let r: Result<(), _> = retry("x", Duration::from_secs(1), || {
            calls += 1;
            async {
                Err(ClientError::Refused {
                    rpc: "X",
                    code: ErrorCode::InvalidJobId,
                    detail: String::new(),
                })
            }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
