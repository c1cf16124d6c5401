//! What every command needs to talk to slurmctld: the configuration, a
//! credential on every call, and the controller list tried in order.
//!
//! Commands are short-lived processes that a script may run thousands of
//! times a minute, so setting up must be cheap: one read of slurm.conf, one
//! read of the key, a single-threaded tokio runtime ([`block_on`]) and one
//! connection, made on the first call and reused for the next ones (the
//! polling of `sbatch --wait`).
//!
//! Errors are [`RpcError`]s carrying Slurm's [`ErrorCode`], so a command
//! prints Slurm's wording with its own prefix, e.g. `slurm_load_jobs error:
//! Unable to contact slurm controller (connect failure)`. A controller that
//! cannot be reached (each try bounded by MessageTimeout, connect and call),
//! or a backup in standby, makes the client try the next `SlurmctldHost`;
//! any other answer is final. When no controller is in charge but one
//! answered that it is in standby, control is changing hands: as Slurm's
//! commands do, the client tries the list again for a while
//! ([`standby_wait`]) before giving up. The controller that answered is
//! kept for the next calls.

use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use prost::bytes::{Buf, Bytes};
use slurm_common::auth::{
    authenticator_for, sack, unix_now, AuthError, AuthInfo, AuthType, Authenticator, Claims,
};
use slurm_common::conf::{AccountingStorageType, AuthPlugin, ConfError, SlurmConf};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::{set_auth_credential, ErrorCode, SlurmControllerClient};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Channel, Endpoint};

use crate::output::Output;

/// Where slurm.conf is read from when `$SLURM_CONF` is not set.
pub const DEFAULT_CONF_PATH: &str = "/etc/slurm/slurm.conf";

/// Reads an environment variable; a parameter so tests need not touch the
/// process environment.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The process environment as an [`EnvLookup`].
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Why a command could not prepare to talk to the controller.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot load configuration file {}: {source}", path.display())]
    Config {
        path: PathBuf,
        #[source]
        source: ConfError,
    },
    #[error("invalid AuthInfo in {}: {source}", path.display())]
    AuthInfo {
        path: PathBuf,
        #[source]
        source: AuthError,
    },
    #[error("AuthType={plugin} in {} is not supported by the commands", path.display())]
    UnsupportedAuthType { path: PathBuf, plugin: String },
    #[error("cannot set up authentication: {source}")]
    Auth {
        #[source]
        source: AuthError,
    },
    #[error("cannot set up authentication: {key}; and {service}")]
    NoKeyNorService { key: AuthError, service: AuthError },
    #[error("no SlurmctldHost in {}", path.display())]
    NoController { path: PathBuf },
}

/// slurm.conf as the commands see it, with the path it came from (the
/// auth/slurm key lives beside it).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub path: PathBuf,
    pub conf: SlurmConf,
}

impl ClientConfig {
    /// The configuration path: `$SLURM_CONF`, else [`DEFAULT_CONF_PATH`].
    pub fn path_from(env: EnvLookup<'_>) -> PathBuf {
        env("SLURM_CONF")
            .filter(|p| !p.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_CONF_PATH), PathBuf::from)
    }

    /// Loads the configuration named by the process environment.
    pub fn load() -> Result<ClientConfig, ClientError> {
        Self::load_with(&process_env)
    }

    /// Loads the configuration named by `env`.
    pub fn load_with(env: EnvLookup<'_>) -> Result<ClientConfig, ClientError> {
        Self::load_path(&Self::path_from(env))
    }

    /// Loads the configuration at `path`. Warnings are dropped: the daemons
    /// report them, a command would only repeat them on every run.
    pub fn load_path(path: &Path) -> Result<ClientConfig, ClientError> {
        let text = path.to_string_lossy();
        let parsed = SlurmConf::load(&text).map_err(|source| ClientError::Config {
            path: path.to_owned(),
            source,
        })?;
        Ok(ClientConfig {
            path: path.to_owned(),
            conf: parsed.conf,
        })
    }

    /// The configuration given as a value (tests, tools that already have it).
    pub fn from_conf(path: impl Into<PathBuf>, conf: SlurmConf) -> ClientConfig {
        ClientConfig {
            path: path.into(),
            conf,
        }
    }

    /// The `AuthInfo` options as the auth module reads them.
    fn auth_info(&self) -> Result<AuthInfo, ClientError> {
        let text = self
            .conf
            .auth_info
            .0
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect::<Vec<_>>()
            .join(",");
        AuthInfo::parse(&text).map_err(|source| ClientError::AuthInfo {
            path: self.path.clone(),
            source,
        })
    }

    /// The authenticator `AuthType` asks for (auth/slurm reads the key
    /// beside slurm.conf unless `AuthInfo=key=` names another).
    pub fn authenticator(&self) -> Result<Arc<dyn Authenticator>, ClientError> {
        let info = self.auth_info()?;
        let auth_type = match self.conf.auth_type {
            AuthPlugin::Slurm => AuthType::Slurm,
            AuthPlugin::Munge => AuthType::Munge,
            other => {
                return Err(ClientError::UnsupportedAuthType {
                    path: self.path.clone(),
                    plugin: format!("{other:?}"),
                })
            }
        };
        let key = info.key_path(&self.path);
        match authenticator_for(auth_type, &key, &info) {
            Ok(auth) => Ok(Arc::from(auth)),
            // A user who may not read the key asks the local slurmd for
            // credentials (`slurm_common::auth::sack`).
            Err(key @ (AuthError::KeyUnreadable { .. } | AuthError::KeyMissing { .. }))
                if auth_type == AuthType::Slurm =>
            {
                let socket = sack::default_socket_path(&self.path);
                match sack::SackAuth::connect(&socket) {
                    Ok(auth) => Ok(Arc::new(auth)),
                    Err(service) => Err(ClientError::NoKeyNorService { key, service }),
                }
            }
            Err(source) => Err(ClientError::Auth { source }),
        }
    }

    /// Lifetime of the credentials this host creates (`AuthInfo=ttl=`).
    pub fn credential_ttl(&self) -> u32 {
        self.auth_info().map_or_else(
            |_| AuthInfo::default().credential_ttl(),
            |i| i.credential_ttl(),
        )
    }

    /// Every controller in `SlurmctldHost` order.
    pub fn controllers(&self) -> Vec<ControllerAddr> {
        let port = self.conf.slurmctld_port.first;
        self.conf
            .slurmctld_hosts
            .iter()
            .enumerate()
            .map(|(index, host)| ControllerAddr {
                index,
                name: host.name.clone(),
                contact: host.contact().to_owned(),
                port,
            })
            .collect()
    }
}

/// One `SlurmctldHost` entry and where to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerAddr {
    /// Position in the `SlurmctldHost` list (0 is the primary).
    pub index: usize,
    /// The host name as written (what `scontrol ping` prints).
    pub name: String,
    /// The address in parentheses, else the name.
    pub contact: String,
    pub port: u16,
}

impl ControllerAddr {
    /// The gRPC endpoint URI.
    pub fn uri(&self) -> String {
        format!("http://{}", self.authority())
    }

    /// `host:port` as HTTP writes it: IPv6 addresses need brackets.
    pub fn authority(&self) -> String {
        if self.contact.contains(':') && !self.contact.starts_with('[') {
            format!("[{}]:{}", self.contact, self.port)
        } else {
            format!("{}:{}", self.contact, self.port)
        }
    }
}

/// The caller's identity as credentials assert it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uid: Uid,
    pub gid: Gid,
    pub host: String,
}

impl Identity {
    /// The real uid and gid of this process and the host name.
    pub fn current() -> Identity {
        Identity {
            uid: Uid::new(current_uid()),
            gid: Gid::new(current_gid()),
            host: short_hostname(),
        }
    }
}

/// The process's real uid.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The process's real gid.
pub fn current_gid() -> u32 {
    // SAFETY: getgid has no preconditions and cannot fail.
    unsafe { libc::getgid() }
}

pub use slurm_common::host::short_hostname;

/// The refusal of a `-M` list naming a cluster other than this one (`all`
/// names every cluster, this one included), worded as Slurm words it.
pub fn unknown_clusters(prog: &str, names: &str, ours: &str) -> Option<String> {
    let known = |n: &str| n.eq_ignore_ascii_case(ours) || n.eq_ignore_ascii_case("all");
    let items: Vec<&str> = names.split(',').filter(|n| !n.is_empty()).collect();
    (items.is_empty() || !items.iter().all(|n| known(n))).then(|| unreachable_line(prog, names))
}

fn unreachable_line(prog: &str, names: &str) -> String {
    format!(
        "{prog}: error: '{names}' can't be reached now, or it is an invalid entry for \
         --cluster.  Use 'sacctmgr list clusters' to see available clusters."
    )
}

/// The refusal of `-M names`, as lines to print (then exit 1), or None to
/// go on. Clusters are found through the accounting database: without
/// slurmdbd (`AccountingStorageType`), Slurm 22.05 refuses every `-M`, its
/// own cluster's name included; with it, this cluster (or `all`) is served.
pub fn clusters_refusal(prog: &str, names: &str, conf: &SlurmConf) -> Option<Vec<String>> {
    if conf.accounting_storage_type != AccountingStorageType::Slurmdbd {
        let all = names.split(',').any(|n| n.eq_ignore_ascii_case("all"));
        let second = if all {
            format!(
                "{prog}: error: No clusters can be reached now. Contact your admin to resolve \
                 the problem."
            )
        } else {
            unreachable_line(prog, names)
        };
        return Some(vec![
            format!("{prog}: error: Problem talking to database"),
            second,
        ]);
    }
    unknown_clusters(prog, names, &conf.cluster_name).map(|l| vec![l])
}

/// Prints the refusal of `-M names`, if any ([`clusters_refusal`]); true
/// when the command must stop (exit 1).
pub fn refused_clusters(
    out: &mut Output<'_>,
    prog: &str,
    names: Option<&str>,
    conf: &SlurmConf,
) -> bool {
    let Some(lines) = names.and_then(|n| clusters_refusal(prog, n, conf)) else {
        return false;
    };
    for line in lines {
        out.error_line(&line);
    }
    true
}

/// The session id of this process (Slurm's `AllocSid`); 0 if unknown.
pub fn session_id() -> u32 {
    // SAFETY: getsid(0) only reads the calling process's session.
    let sid = unsafe { libc::getsid(0) };
    u32::try_from(sid).unwrap_or(0)
}

/// The login name and primary group of `uid` from the local user
/// database.
fn passwd_entry(uid: u32) -> Option<(String, u32)> {
    slurm_common::users::login_of(uid)
}

/// The login name of `uid` from the local user database.
pub fn user_name(uid: u32) -> Option<String> {
    passwd_entry(uid).map(|(name, _)| name)
}

/// The primary group of user `uid`, if the system knows the user.
pub fn primary_gid(uid: u32) -> Option<u32> {
    passwd_entry(uid).map(|(_, gid)| gid)
}

/// The name of group `gid`, if the system knows it.
pub fn group_name(gid: u32) -> Option<String> {
    slurm_common::users::group_name(gid)
}

/// Whether the calling user sees hidden partitions (and their jobs)
/// without `-a`: root and SlurmUser, as Slurm shows them to operators.
pub fn sees_hidden_partitions(conf: &slurm_common::conf::SlurmConf) -> bool {
    let uid = current_uid();
    uid == 0 || uid_for_name(&conf.slurm_user) == Some(uid)
}

/// The names of the groups the calling user is in (its passwd group and
/// the others the group database lists it in), which a partition's
/// AllowGroups is matched against.
pub fn my_group_names() -> Vec<String> {
    slurm_common::users::group_names_of(current_uid())
}

/// Whether a partition's AllowGroups (`allowed`, empty for ALL) keeps it
/// from a user in `groups`: Slurm neither shows such a partition nor its
/// jobs to that user, unless asked (`-a`).
pub fn groups_denied(allowed: &[String], groups: &[String]) -> bool {
    !allowed.is_empty()
        && !allowed.iter().any(|a| a.eq_ignore_ascii_case("ALL"))
        && !slurm_common::users::allows_groups(allowed, groups)
}

/// The uid of the user called `name`, or `name` itself when it is a number.
pub fn uid_for_name(name: &str) -> Option<u32> {
    if let Ok(uid) = name.parse::<u32>() {
        return Some(uid);
    }
    slurm_common::users::ids_of(name).map(|(uid, _)| uid)
}

/// The gid of the group called `name`, or `name` itself when it is a number.
pub fn gid_for_name(name: &str) -> Option<u32> {
    if let Ok(gid) = name.parse::<u32>() {
        return Some(gid);
    }
    slurm_common::users::gid_of(name)
}

/// Puts a fresh credential for the caller on every request.
#[derive(Clone)]
pub struct AuthInterceptor {
    auth: Arc<dyn Authenticator>,
    identity: Identity,
    ttl: u32,
}

impl fmt::Debug for AuthInterceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthInterceptor")
            .field("auth", &self.auth.name())
            .field("identity", &self.identity)
            .finish()
    }
}

impl AuthInterceptor {
    pub fn new(auth: Arc<dyn Authenticator>, identity: Identity, ttl: u32) -> Self {
        Self {
            auth,
            identity,
            ttl,
        }
    }
}

impl Interceptor for AuthInterceptor {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        let claims = Claims::new(
            self.identity.uid,
            self.identity.gid,
            self.identity.host.clone(),
            unix_now(),
            self.ttl,
        );
        let token = self
            .auth
            .create(&claims)
            .map_err(|e| ErrorCode::ProtocolAuthentication.to_status(e.to_string()))?;
        set_auth_credential(request.metadata_mut(), &token)
            .map_err(|e| ErrorCode::ProtocolAuthentication.to_status(e.to_string()))?;
        Ok(request)
    }
}

/// A connection with credentials attached.
pub type AuthedChannel = InterceptedService<Channel, AuthInterceptor>;

/// The generated client with credentials attached.
pub type ControllerClient = SlurmControllerClient<AuthedChannel>;

/// A codec that encodes the request with prost and hands the reply back
/// undecoded, for a command that reads a large reply its own way (squeue
/// walks the records of `GetJobsReply` one at a time instead of building
/// ten thousand structures first).
#[derive(Debug)]
pub struct RawReplyCodec<Req>(PhantomData<Req>);

impl<Req> Default for RawReplyCodec<Req> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

/// The request half of [`RawReplyCodec`].
#[derive(Debug)]
pub struct ProstRequestEncoder<Req>(PhantomData<Req>);

/// The reply half of [`RawReplyCodec`]: the message bytes as they came.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawReplyDecoder;

impl<Req: prost::Message + Send + 'static> Codec for RawReplyCodec<Req> {
    type Encode = Req;
    type Decode = Bytes;
    type Encoder = ProstRequestEncoder<Req>;
    type Decoder = RawReplyDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProstRequestEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawReplyDecoder
    }
}

impl<Req: prost::Message> Encoder for ProstRequestEncoder<Req> {
    type Item = Req;
    type Error = tonic::Status;

    fn encode(&mut self, item: Req, buf: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        // The buffer grows as needed, so encoding cannot run out of room.
        item.encode(buf)
            .map_err(|e| tonic::Status::internal(format!("cannot encode the request: {e}")))
    }
}

impl Decoder for RawReplyDecoder {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        // Splits the message off tonic's buffer without copying it.
        Ok(Some(buf.copy_to_bytes(buf.remaining())))
    }
}

/// A gRPC client on `channel`, once it is ready, that takes replies of any
/// size.
async fn ready_grpc(
    channel: AuthedChannel,
) -> Result<tonic::client::Grpc<AuthedChannel>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(usize::MAX);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unknown(format!("Service was not ready: {e}")))?;
    Ok(grpc)
}

/// Calls the unary method at `path` (`/slurm.v1.SlurmController/GetJobs`)
/// on `channel` and returns the reply message undecoded. For use inside
/// [`Controller::call_channel`].
pub async fn unary_raw<Req>(
    channel: AuthedChannel,
    path: &'static str,
    request: Req,
) -> Result<tonic::Response<Bytes>, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
{
    let mut grpc = ready_grpc(channel).await?;
    let path = PathAndQuery::from_static(path);
    grpc.unary(
        tonic::Request::new(request),
        path,
        RawReplyCodec::<Req>::default(),
    )
    .await
}

/// Calls the server-streaming method at `path`
/// (`/slurm.v1.SlurmController/StreamJobs`) on `channel`; each message of
/// the reply comes undecoded. For use inside [`Controller::call_channel`]:
/// an error before the first message is the call's, a later one comes from
/// the stream.
pub async fn stream_raw<Req>(
    channel: AuthedChannel,
    path: &'static str,
    request: Req,
) -> Result<tonic::Response<tonic::Streaming<Bytes>>, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
{
    let mut grpc = ready_grpc(channel).await?;
    let path = PathAndQuery::from_static(path);
    grpc.server_streaming(
        tonic::Request::new(request),
        path,
        RawReplyCodec::<Req>::default(),
    )
    .await
}

/// A failed call: Slurm's code, and the server's detail text (empty or equal
/// to the code's text when there is nothing more to say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: ErrorCode,
    pub detail: String,
}

impl RpcError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
        }
    }

    /// Reads a status from the controller. Transport failures become
    /// Slurm's "Unable to contact slurm controller" codes.
    pub fn from_status(status: &tonic::Status) -> Self {
        let has_errno = status
            .metadata()
            .get(slurm_proto::ERRNO_METADATA_KEY)
            .is_some();
        let (code, detail) = ErrorCode::from_status(status);
        let code = match code {
            ErrorCode::CommunicationConnection if !has_errno => ErrorCode::ControllerConnect,
            ErrorCode::SocketTimeout if !has_errno => ErrorCode::SocketTimeout,
            c => c,
        };
        Self { code, detail }
    }

    /// The server's detail when it says more than the code's own text (a
    /// message meant for the user, as Slurm's `err_msg`).
    pub fn extra_detail(&self) -> Option<&str> {
        let d = self.detail.trim();
        (!d.is_empty() && d != self.code.message()).then_some(d)
    }

    /// Whether the next controller should be tried.
    fn try_next(&self) -> bool {
        matches!(
            self.code,
            ErrorCode::ControllerConnect
                | ErrorCode::ControllerSend
                | ErrorCode::ControllerReceive
                | ErrorCode::CommunicationConnection
                | ErrorCode::SocketTimeout
                | ErrorCode::InStandbyMode
        )
    }
}

impl fmt::Display for RpcError {
    /// Slurm's text for the code, as commands print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code.message())
    }
}

impl std::error::Error for RpcError {}

/// How long a command keeps trying while controllers answer that they are
/// in standby: a backup takes control after SlurmctldTimeout of silence,
/// noticed within a third of it, plus a MessageTimeout to ask the old
/// controller to stand down and the time to recover the state; twice
/// SlurmctldTimeout plus MessageTimeout covers that.
pub fn standby_wait(conf: &SlurmConf) -> Duration {
    conf.slurmctld_timeout
        .saturating_mul(2)
        .saturating_add(conf.message_timeout)
}

/// The failover policy of [`Controller::call`] and
/// [`Controller::call_blocking`]: each controller in turn, moving on only
/// for an error that says another may answer, and round again while one
/// says it is in standby (control changing hands), for up to the standby
/// wait, pausing 0.1 s at first and twice as long each round up to 1 s.
struct Rounds {
    deadline: std::time::Instant,
    pause: Duration,
    /// A controller of this round said it is in standby.
    standby: bool,
    /// The error of the last try, returned when the rounds end.
    last: RpcError,
}

impl Rounds {
    fn new(standby_wait: Duration) -> Rounds {
        Rounds {
            deadline: std::time::Instant::now() + standby_wait,
            pause: Duration::from_millis(100),
            standby: false,
            last: RpcError::new(ErrorCode::ControllerConnect, ""),
        }
    }

    /// A try failed with `err`: kept when the next controller is to be
    /// tried, else given back to be returned at once.
    fn failed(&mut self, err: RpcError) -> Result<(), RpcError> {
        if !err.try_next() {
            return Err(err);
        }
        self.standby |= err.code == ErrorCode::InStandbyMode;
        self.last = err;
        Ok(())
    }

    /// A round ended without an answer: the pause before the next one, or
    /// the error to return.
    fn end_round(&mut self) -> Result<Duration, RpcError> {
        let now = std::time::Instant::now();
        let fresh = RpcError::new(ErrorCode::ControllerConnect, "");
        let last = std::mem::replace(&mut self.last, fresh);
        if !std::mem::take(&mut self.standby) || now >= self.deadline {
            return Err(last);
        }
        let pause = self.pause.min(self.deadline - now);
        self.pause = (self.pause * 2).min(Duration::from_secs(1));
        Ok(pause)
    }
}

/// A connection to whichever controller answers.
#[derive(Debug)]
pub struct Controller {
    controllers: Vec<ControllerAddr>,
    timeout: Duration,
    interceptor: AuthInterceptor,
    /// The controller that answered last and the connection to it.
    current: Option<(usize, Channel)>,
    /// How long to keep trying while controllers answer that they are in
    /// standby (control changing hands); zero: one round only.
    standby_wait: Duration,
}

impl Controller {
    /// Prepares to talk to the configured controllers as the current user.
    /// Nothing is connected until the first call.
    pub fn new(config: &ClientConfig) -> Result<Controller, ClientError> {
        let auth = config.authenticator()?;
        let controllers = config.controllers();
        if controllers.is_empty() {
            return Err(ClientError::NoController {
                path: config.path.clone(),
            });
        }
        let interceptor = AuthInterceptor::new(auth, Identity::current(), config.credential_ttl());
        Ok(
            Self::with_parts(controllers, config.conf.message_timeout, interceptor)
                .with_standby_wait(standby_wait(&config.conf)),
        )
    }

    /// A controller list, timeout and credential source given directly.
    pub fn with_parts(
        controllers: Vec<ControllerAddr>,
        timeout: Duration,
        interceptor: AuthInterceptor,
    ) -> Controller {
        Controller {
            controllers,
            timeout,
            interceptor,
            current: None,
            standby_wait: Duration::ZERO,
        }
    }

    /// Keeps trying for up to `wait` while no controller is in charge but
    /// one says it is in standby ([`Controller::new`] sets
    /// [`standby_wait`]).
    pub fn with_standby_wait(mut self, wait: Duration) -> Controller {
        self.standby_wait = wait;
        self
    }

    pub fn controllers(&self) -> &[ControllerAddr] {
        &self.controllers
    }

    /// Opens a connection to one controller.
    pub async fn connect_to(&self, addr: &ControllerAddr) -> Result<ControllerClient, RpcError> {
        let channel = self.connect_channel(addr).await?;
        Ok(self.client_on(channel))
    }

    /// Opens the bare connection to one controller: each call is bounded
    /// by MessageTimeout, and no credential is attached yet.
    pub async fn connect_channel(&self, addr: &ControllerAddr) -> Result<Channel, RpcError> {
        let endpoint = Endpoint::from_shared(addr.uri())
            .map_err(|e| RpcError::new(ErrorCode::ControllerConnect, e.to_string()))?
            .connect_timeout(self.timeout)
            .timeout(self.timeout)
            .tcp_nodelay(true);
        endpoint
            .connect()
            .await
            .map_err(|e| RpcError::new(ErrorCode::ControllerConnect, e.to_string()))
    }

    /// The generated client over `channel`, with credentials attached.
    fn client_on(&self, channel: Channel) -> ControllerClient {
        // Replies grow with the queue (a 100,000-job squeue is tens of
        // megabytes): no cap beyond what the controller chose to send.
        SlurmControllerClient::with_interceptor(channel, self.interceptor.clone())
            .max_decoding_message_size(usize::MAX)
    }

    /// `channel` with credentials attached: what [`Controller::call_channel`]
    /// hands to its closure.
    fn authed_on(&self, channel: Channel) -> AuthedChannel {
        InterceptedService::new(channel, self.interceptor.clone())
    }

    /// Runs `call` against the controller that answered last, else each
    /// controller in order until one answers. Only connection failures,
    /// timeouts and standby backups move on to the next controller; while
    /// one is in standby and none in charge, the list is tried again (see
    /// [`Controller::with_standby_wait`]).
    pub async fn call<T, F, Fut>(&mut self, mut call: F) -> Result<T, RpcError>
    where
        F: FnMut(ControllerClient) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        self.call_with(Self::client_on, &mut call).await
    }

    /// [`Controller::call`] for a call the generated client does not make:
    /// `call` gets the connection with credentials attached and picks its
    /// own codec (see [`unary_raw`]). Failover is the same.
    pub async fn call_channel<T, F, Fut>(&mut self, mut call: F) -> Result<T, RpcError>
    where
        F: FnMut(AuthedChannel) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        self.call_with(Self::authed_on, &mut call).await
    }

    /// The failover loop of [`Controller::call`], over whatever `wrap`
    /// makes of a connection.
    async fn call_with<C, T, F, Fut>(
        &mut self,
        wrap: fn(&Self, Channel) -> C,
        call: &mut F,
    ) -> Result<T, RpcError>
    where
        F: FnMut(C) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        if let Some((_, channel)) = &self.current {
            match call(wrap(self, channel.clone())).await {
                Ok(reply) => return Ok(reply.into_inner()),
                Err(status) => {
                    let err = RpcError::from_status(&status);
                    if !err.try_next() {
                        return Err(err);
                    }
                    self.current = None;
                }
            }
        }
        let mut rounds = Rounds::new(self.standby_wait);
        loop {
            for i in 0..self.controllers.len() {
                let addr = self.controllers[i].clone();
                let channel = match self.connect_channel(&addr).await {
                    Ok(c) => c,
                    Err(e) => {
                        rounds.last = e;
                        continue;
                    }
                };
                match call(wrap(self, channel.clone())).await {
                    Ok(reply) => {
                        self.current = Some((i, channel));
                        return Ok(reply.into_inner());
                    }
                    Err(status) => {
                        if let Err(err) = rounds.failed(RpcError::from_status(&status)) {
                            self.current = Some((i, channel));
                            return Err(err);
                        }
                    }
                }
            }
            tokio::time::sleep(rounds.end_round()?).await;
        }
    }

    /// One unary call made on a blocking socket (see [`crate::h2call`]),
    /// without the async runtime: for a command whose one call is most of
    /// its work (sbatch's submission). `path` is the method's
    /// `/package.Service/Method`. Failover as [`Controller::call`]; the
    /// connection is not kept.
    pub fn call_blocking<Req, Resp>(&mut self, path: &str, request: &Req) -> Result<Resp, RpcError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let message = request.encode_to_vec();
        let mut rounds = Rounds::new(self.standby_wait);
        loop {
            for i in 0..self.controllers.len() {
                let addr = &self.controllers[i];
                let authority = addr.authority();
                // A fresh credential for each try, as the interceptor
                // attaches one to each call.
                let metadata = self
                    .interceptor
                    .call(tonic::Request::new(()))
                    .map_err(|s| RpcError::from_status(&s))?
                    .into_parts()
                    .0
                    .into_headers();
                let req = crate::h2call::Request {
                    authority: &authority,
                    path,
                    metadata: &metadata,
                    message: &message,
                };
                // An IPv6 address may be written in brackets.
                let host = addr.contact.trim_start_matches('[').trim_end_matches(']');
                let status = match crate::h2call::call(host, addr.port, self.timeout, &req) {
                    Ok(bytes) => {
                        return Resp::decode(bytes.as_slice()).map_err(|e| {
                            RpcError::from_status(&tonic::Status::internal(format!(
                                "failed to decode Protobuf message: {e}"
                            )))
                        })
                    }
                    Err(status) => status,
                };
                rounds.failed(RpcError::from_status(&status))?;
            }
            std::thread::sleep(rounds.end_round()?);
        }
    }

    /// Runs `call` against one controller only (`scontrol ping` asks each).
    pub async fn call_one<T, F, Fut>(&self, addr: &ControllerAddr, call: F) -> Result<T, RpcError>
    where
        F: FnOnce(ControllerClient) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let client = self.connect_to(addr).await?;
        call(client)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| RpcError::from_status(&s))
    }
}

/// Runs `future` to completion on a single-threaded runtime: commands make
/// a handful of sequential calls, and starting worker threads would cost
/// more than the calls themselves.
pub fn block_on<F: Future>(future: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(future),
        // Building a runtime only fails when the OS refuses an epoll or
        // timer descriptor; nothing sensible can run then.
        Err(e) => {
            eprintln!("error: cannot start the I/O runtime: {e}");
            std::process::exit(1)
        }
    }
}

/// What Slurm's commands say with `-v` as they load the node selection
/// plugins: each of them, the linear one with the configured
/// SelectTypeParameters as a number, and only when they are set.
pub fn select_plugin_lines(prog: &str, conf: &SlurmConf) -> Vec<String> {
    let mut lines = vec![
        format!("{prog}: select/cons_tres: common_init: select/cons_tres loaded"),
        format!("{prog}: select/cray_aries: init: Cray/Aries node selection plugin loaded"),
    ];
    if conf.raw_entry("SelectTypeParameters").is_some() {
        lines.push(format!(
            "{prog}: select/linear: init: Linear node selection plugin loaded with argument {}",
            conf.select_type_parameters.bits()
        ));
    }
    lines.push(format!(
        "{prog}: select/cons_res: common_init: select/cons_res loaded"
    ));
    lines
}

/// Writes `<prog>: error: <message>` to standard error, as Slurm's
/// commands report errors.
pub fn print_error(out: &mut Output<'_>, prog: &str, message: impl fmt::Display) {
    out.error_line(&format!("{prog}: error: {message}"));
}

/// Writes a line to standard output; a closed pipe is not an error, any
/// other failure is reported and gives exit status 1.
pub fn print_line(out: &mut Output<'_>, prog: &str, text: &str) -> Result<(), i32> {
    out.line(text).map_err(|e| {
        print_error(out, prog, e);
        1
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use slurm_common::auth::SlurmKeyAuth;

    const CONF: &str = "ClusterName=c\nSlurmctldHost=a(10.0.0.1)\nSlurmctldHost=b\n\
        SlurmctldPort=7000\nAuthType=auth/slurm\nMessageTimeout=3\n\
        NodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n";

    fn config(text: &str) -> ClientConfig {
        let parsed = SlurmConf::parse(text, "slurm.conf").unwrap();
        ClientConfig::from_conf("/etc/x/slurm.conf", parsed.conf)
    }

    #[test]
    fn conf_path_from_environment() {
        let env = |n: &str| (n == "SLURM_CONF").then(|| OsString::from("/tmp/s.conf"));
        assert_eq!(ClientConfig::path_from(&env), PathBuf::from("/tmp/s.conf"));
        assert_eq!(
            ClientConfig::path_from(&|_| None),
            PathBuf::from(DEFAULT_CONF_PATH)
        );
        let empty = |_: &str| Some(OsString::new());
        assert_eq!(
            ClientConfig::path_from(&empty),
            PathBuf::from(DEFAULT_CONF_PATH)
        );
    }

    #[test]
    fn missing_conf_names_the_path() {
        let err = ClientConfig::load_path(Path::new("/nonexistent/slurm.conf")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/slurm.conf"), "{err}");
    }

    #[test]
    fn controllers_in_order_with_addresses() {
        let c = config(CONF);
        let list = c.controllers();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].name, "a");
        assert_eq!(list[0].uri(), "http://10.0.0.1:7000");
        assert_eq!(list[1].uri(), "http://b:7000");
        assert_eq!(list[1].index, 1);
        let v6 = ControllerAddr {
            index: 0,
            name: "x".into(),
            contact: "::1".into(),
            port: 1,
        };
        assert_eq!(v6.uri(), "http://[::1]:1");
    }

    #[test]
    fn missing_key_and_no_local_service_is_an_auth_error_naming_both() {
        let err = config(CONF).authenticator().unwrap_err();
        assert!(
            matches!(err, ClientError::NoKeyNorService { .. }),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("/etc/x/slurm.key"), "{text}");
        assert!(text.contains("/etc/x/sack.socket"), "{text}");
    }

    #[test]
    fn interceptor_attaches_a_verifiable_credential() {
        let auth: Arc<dyn Authenticator> = Arc::new(SlurmKeyAuth::from_key(&[7u8; 32]).unwrap());
        let identity = Identity {
            uid: Uid::new(1234),
            gid: Gid::new(99),
            host: "login".into(),
        };
        let mut i = AuthInterceptor::new(auth.clone(), identity, 60);
        let req = i.call(tonic::Request::new(())).unwrap();
        let token = slurm_proto::auth_credential(req.metadata()).unwrap();
        let claims = auth.verify_now(token).unwrap();
        assert_eq!(claims.uid, Uid::new(1234));
        assert_eq!(claims.gid, Gid::new(99));
    }

    #[test]
    fn passwd_lookups() {
        assert_eq!(user_name(0).as_deref(), Some("root"));
        assert_eq!(uid_for_name("root"), Some(0));
        assert_eq!(uid_for_name("1234"), Some(1234));
        assert_eq!(uid_for_name("no-such-user-here"), None);
        assert_eq!(uid_for_name("a\0b"), None);
    }

    #[test]
    fn standby_wait_covers_a_takeover() {
        let c = config(CONF);
        // SlurmctldTimeout defaults to 120 s; MessageTimeout=3.
        assert_eq!(standby_wait(&c.conf), Duration::from_secs(243));
    }

    #[test]
    fn status_mapping() {
        let s = ErrorCode::InvalidJobId.to_status("job 5");
        let e = RpcError::from_status(&s);
        assert_eq!(e.code, ErrorCode::InvalidJobId);
        assert_eq!(e.to_string(), "Invalid job id specified");
        assert_eq!(e.extra_detail(), Some("job 5"));
        let plain = RpcError::from_status(&ErrorCode::InvalidJobId.to_status(""));
        assert_eq!(plain.extra_detail(), None);
        let transport = RpcError::from_status(&tonic::Status::unavailable("tcp connect error"));
        assert_eq!(transport.code, ErrorCode::ControllerConnect);
        assert!(transport.try_next());
        assert!(!e.try_next());
    }

    #[test]
    fn unreachable_controllers_give_connect_failure() {
        let auth: Arc<dyn Authenticator> = Arc::new(SlurmKeyAuth::from_key(&[7u8; 32]).unwrap());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let addr = ControllerAddr {
            index: 0,
            name: "vm".into(),
            contact: "127.0.0.1".into(),
            port,
        };
        let mut c = Controller::with_parts(
            vec![addr.clone(), addr],
            Duration::from_secs(2),
            AuthInterceptor::new(auth, Identity::current(), 60),
        );
        let err = block_on(
            c.call(|mut cl| async move { cl.ping(slurm_proto::v1::PingRequest {}).await }),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::ControllerConnect);
        assert_eq!(
            format!("slurm_load_jobs error: {err}"),
            "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
        );
    }

    /// A controller that answers GetJobs with `reply` (already encoded)
    /// when the call carries a credential, on a loopback port.
    #[derive(Clone)]
    struct RawJobs {
        reply: Bytes,
        asked: Arc<std::sync::Mutex<Vec<slurm_proto::v1::GetJobsRequest>>>,
    }

    impl tonic::server::NamedService for RawJobs {
        const NAME: &'static str = "slurm.v1.SlurmController";
    }

    struct ServerCodec;

    struct ReplyEncoder;

    struct RequestDecoder;

    impl Codec for ServerCodec {
        type Encode = Bytes;
        type Decode = slurm_proto::v1::GetJobsRequest;
        type Encoder = ReplyEncoder;
        type Decoder = RequestDecoder;

        fn encoder(&mut self) -> ReplyEncoder {
            ReplyEncoder
        }

        fn decoder(&mut self) -> RequestDecoder {
            RequestDecoder
        }
    }

    impl Encoder for ReplyEncoder {
        type Item = Bytes;
        type Error = tonic::Status;

        fn encode(&mut self, item: Bytes, buf: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
            prost::bytes::BufMut::put_slice(buf, &item);
            Ok(())
        }
    }

    impl Decoder for RequestDecoder {
        type Item = slurm_proto::v1::GetJobsRequest;
        type Error = tonic::Status;

        fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, tonic::Status> {
            use prost::Message;
            Ok(Some(Self::Item::decode(buf).unwrap()))
        }
    }

    impl tower_like::Service<tonic::codegen::http::Request<tonic::body::Body>> for RawJobs {
        type Response = tonic::codegen::http::Response<tonic::body::Body>;
        type Error = std::convert::Infallible;
        type Future = tonic::codegen::BoxFuture<Self::Response, Self::Error>;

        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: tonic::codegen::http::Request<tonic::body::Body>) -> Self::Future {
            assert_eq!(req.uri().path(), "/slurm.v1.SlurmController/GetJobs");
            let this = self.clone();
            Box::pin(async move {
                let svc = tower_like::service_fn(
                    move |r: tonic::Request<slurm_proto::v1::GetJobsRequest>| {
                        let this = this.clone();
                        async move {
                            if slurm_proto::auth_credential(r.metadata()).is_none() {
                                return Err(tonic::Status::unauthenticated("no credential"));
                            }
                            this.asked.lock().unwrap().push(r.into_inner());
                            Ok(tonic::Response::new(this.reply.clone()))
                        }
                    },
                );
                Ok(tonic::server::Grpc::new(ServerCodec).unary(svc, req).await)
            })
        }
    }

    /// The bits of tower the fake needs, through tonic's re-exports.
    mod tower_like {
        pub use tonic::codegen::Service;

        pub fn service_fn<F>(f: F) -> ServiceFn<F> {
            ServiceFn(f)
        }

        pub struct ServiceFn<F>(F);

        impl<F, Fut, R, T> Service<R> for ServiceFn<F>
        where
            F: FnMut(R) -> Fut,
            Fut: std::future::Future<Output = Result<T, tonic::Status>>,
        {
            type Response = T;
            type Error = tonic::Status;
            type Future = Fut;

            fn poll_ready(
                &mut self,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), tonic::Status>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn call(&mut self, req: R) -> Fut {
                (self.0)(req)
            }
        }
    }

    #[test]
    fn raw_calls_fail_over_and_return_the_reply_undecoded() {
        use prost::Message;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let reply = slurm_proto::v1::GetJobsReply {
            jobs: vec![slurm_proto::v1::JobInfo {
                job_id: 7,
                name: "x".into(),
                ..Default::default()
            }],
            last_update: 5,
            unchanged: false,
        };
        let fake = RawJobs {
            reply: Bytes::from(reply.encode_to_vec()),
            asked: Arc::default(),
        };
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        rt.spawn(
            tonic::transport::Server::builder()
                .add_service(fake.clone())
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        // The first controller is not there; the second answers.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = closed.local_addr().unwrap().port();
        drop(closed);
        let addr = |index, port| ControllerAddr {
            index,
            name: format!("c{index}"),
            contact: "127.0.0.1".into(),
            port,
        };
        let auth: Arc<dyn Authenticator> = Arc::new(SlurmKeyAuth::from_key(&[7u8; 32]).unwrap());
        let mut c = Controller::with_parts(
            vec![addr(0, dead), addr(1, port)],
            Duration::from_secs(5),
            AuthInterceptor::new(auth, Identity::current(), 60),
        );
        let request = slurm_proto::v1::GetJobsRequest {
            hide_hidden: false,
            fields: vec![1, 6],
            ..Default::default()
        };
        for _ in 0..2 {
            let got = rt
                .block_on(c.call_channel(|ch| {
                    unary_raw(ch, "/slurm.v1.SlurmController/GetJobs", request.clone())
                }))
                .unwrap();
            assert_eq!(got, reply.encode_to_vec());
        }
        // The second call went straight to the controller that answered.
        assert_eq!(fake.asked.lock().unwrap().clone(), vec![request.clone(); 2]);
        assert_eq!(c.current.as_ref().map(|(i, _)| *i), Some(1));
    }

    #[test]
    fn clusters_other_than_ours_are_refused() {
        let line = |names: &str| {
            format!(
                "squeue: error: '{names}' can't be reached now, or it is an invalid entry \
                 for --cluster.  Use 'sacctmgr list clusters' to see available clusters."
            )
        };
        assert_eq!(
            unknown_clusters("squeue", "foo", "local"),
            Some(line("foo"))
        );
        assert_eq!(unknown_clusters("squeue", "", "local"), Some(line("")));
        assert_eq!(
            unknown_clusters("squeue", "local,foo", "local"),
            Some(line("local,foo"))
        );
        assert_eq!(unknown_clusters("squeue", "LOCAL", "local"), None);
        assert_eq!(unknown_clusters("squeue", "all", "local"), None);
    }

    /// Slurm 22.05 finds clusters in the accounting database: without
    /// slurmdbd every `-M` is refused, this cluster's name included.
    #[test]
    fn clusters_need_the_accounting_database() {
        let conf = |storage: &str| {
            let text = format!(
                "ClusterName=local\nSlurmctldHost=h\n{storage}\
                 NodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n"
            );
            SlurmConf::parse(&text, "slurm.conf").unwrap().conf
        };
        let none = conf("");
        let db = "Problem talking to database".to_owned();
        let refused = clusters_refusal("sinfo", "local", &none).unwrap();
        assert_eq!(refused.len(), 2);
        assert!(refused[0].ends_with(&db));
        assert!(refused[1].starts_with("sinfo: error: 'local' can't be reached now"));
        let all = clusters_refusal("sinfo", "all", &none).unwrap();
        assert_eq!(
            all[1],
            "sinfo: error: No clusters can be reached now. Contact your admin to resolve the \
             problem."
        );
        let dbd = conf("AccountingStorageType=accounting_storage/slurmdbd\n");
        assert_eq!(clusters_refusal("sinfo", "local", &dbd), None);
        assert_eq!(clusters_refusal("sinfo", "all", &dbd), None);
        assert_eq!(clusters_refusal("sinfo", "other", &dbd).unwrap().len(), 1);
    }
}
