//! `scontrol show slurmd`: the slurmd of this host describes itself.
//!
//! Unlike the other `show` entities this one never goes through the
//! controller: scontrol asks the compute daemon on its own host, so an
//! administrator can see what a node's slurmd found and when it last heard
//! from the controller even while the controller is away. The word after
//! `slurmd` is ignored, as Slurm ignores it.
//!
//! Which slurmd answers follows Slurm 22.05 as built by distributions (one
//! slurmd per host): the node whose NodeHostname is this host's short
//! name, else the node named `localhost`. Slurm then connects to that
//! host at the global SlurmdPort, whatever the node's NodeAddr and Port=
//! say, so with several slurmd on one host it reaches whichever listens
//! there. Slurm built for several slurmd per host instead takes the node
//! from `SLURMD_NODENAME`. Here a node's own NodeAddr and Port= are used
//! (they equal Slurm's choice when a host runs one slurmd on SlurmdPort),
//! and `SLURMD_NODENAME`, when it names a node, chooses among several:
//! inside a job it is the job's node, and a local test cluster runs every
//! slurmd on one address with a port each.

use std::time::Duration;

use slurm_common::conf::SlurmConf;
use slurm_common::os_error_text;
use slurm_proto::v1::{DaemonStatusReply, DaemonStatusRequest};
use slurm_proto::{ErrorCode, SlurmdInfoClient};
use tonic::transport::Endpoint;

use super::local::local_nodes;
use super::steps::{step_name, BATCH_STEP};
use super::{EnvLookup, Options};
use crate::client::{block_on, short_hostname, AuthInterceptor, ClientConfig, Identity};
use crate::output::Output;

/// Where the slurmd to ask listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmdAddr {
    pub host: String,
    pub port: u16,
}

impl SlurmdAddr {
    fn uri(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("http://[{}]:{}", self.host, self.port)
        } else {
            format!("http://{}:{}", self.host, self.port)
        }
    }
}

/// The slurmd of this host (see the module docs): the node `env_node`
/// names when it is one of `conf`'s, else the first node of this host
/// `host`, else `localhost` at SlurmdPort.
pub fn choose_slurmd(conf: &SlurmConf, host: &str, env_node: Option<&str>) -> SlurmdAddr {
    let node = env_node
        .filter(|n| !n.is_empty())
        .and_then(|n| conf.node(n))
        .or_else(|| {
            local_nodes(conf, host)
                .first()
                .and_then(|name| conf.node(name))
        });
    match node {
        Some(n) => SlurmdAddr {
            host: n.addr.clone(),
            port: n.port,
        },
        None => SlurmdAddr {
            host: "localhost".to_owned(),
            port: conf.slurmd_port,
        },
    }
}

/// The step ids of `Active Steps`: a batch step by its job id alone, as
/// Slurm prints it, others as `JOB.STEP`; `NONE` when nothing runs.
fn active_steps(reply: &DaemonStatusReply) -> String {
    if reply.active_steps.is_empty() {
        return "NONE".to_owned();
    }
    reply
        .active_steps
        .iter()
        .map(|s| match s.step_id {
            BATCH_STEP => s.job_id.to_string(),
            step => format!("{}.{}", s.job_id, step_name(step)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A time as Slurm prints these: ISO local time, `Unknown` for none.
fn time_text(unix: i64, format: &dyn Fn(i64) -> String) -> String {
    if unix == 0 {
        "Unknown".to_owned()
    } else {
        format(unix)
    }
}

/// What `show slurmd` prints for `reply`, times formatted by `format`
/// (one line per figure, the same with `-o`, as in Slurm).
pub fn status_text(reply: &DaemonStatusReply, format: &dyn Fn(i64) -> String) -> String {
    let log_file = if reply.log_file.is_empty() {
        "(null)"
    } else {
        reply.log_file.as_str()
    };
    let lines = [
        ("Active Steps", active_steps(reply)),
        ("Actual CPUs", reply.cpus.to_string()),
        ("Actual Boards", reply.boards.to_string()),
        ("Actual sockets", reply.sockets.to_string()),
        ("Actual cores", reply.cores_per_socket.to_string()),
        (
            "Actual threads per core",
            reply.threads_per_core.to_string(),
        ),
        ("Actual real memory", format!("{} MB", reply.real_memory_mb)),
        (
            "Actual temp disk space",
            format!("{} MB", reply.tmp_disk_mb),
        ),
        ("Boot time", time_text(reply.slurmd_start_time, format)),
        ("Hostname", reply.node_name.clone()),
        (
            "Last slurmctld msg time",
            time_text(reply.last_controller_message, format),
        ),
        ("Slurmd PID", reply.pid.to_string()),
        ("Slurmd Debug", reply.debug_level.to_string()),
        ("Slurmd Logfile", log_file.to_owned()),
        ("Version", reply.version.clone()),
    ];
    lines
        .iter()
        .map(|(key, value)| format!("{key:<24} = {value}\n"))
        .collect()
}

/// Why the slurmd did not answer, in the words Slurm uses (the system's
/// text for a refused or failed connection).
fn failure_text(status: &tonic::Status) -> String {
    if let Some(io) = io_error_in(status) {
        return match io.kind() {
            std::io::ErrorKind::TimedOut => ErrorCode::SocketTimeout.message().to_owned(),
            _ => os_error_text(io),
        };
    }
    match status.code() {
        tonic::Code::DeadlineExceeded => ErrorCode::SocketTimeout.message().to_owned(),
        tonic::Code::Unavailable => ErrorCode::CommunicationConnection.message().to_owned(),
        _ => {
            let (code, _) = ErrorCode::from_status(status);
            code.message().to_owned()
        }
    }
}

/// The I/O error at the root of a transport failure, if any.
fn io_error_in(status: &tonic::Status) -> Option<&std::io::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = e.source();
    }
    None
}

async fn ask(
    addr: &SlurmdAddr,
    timeout: Duration,
    interceptor: AuthInterceptor,
) -> Result<DaemonStatusReply, tonic::Status> {
    let endpoint = Endpoint::from_shared(addr.uri())
        .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?
        .connect_timeout(timeout)
        .timeout(timeout)
        .tcp_nodelay(true);
    let channel = endpoint.connect().await.map_err(|e| {
        let mut status = tonic::Status::unavailable(e.to_string());
        status.set_source(std::sync::Arc::new(e));
        status
    })?;
    SlurmdInfoClient::with_interceptor(channel, interceptor)
        .get_daemon_status(DaemonStatusRequest {})
        .await
        .map(tonic::Response::into_inner)
}

/// Runs `show slurmd`.
pub fn execute(options: &Options, env: EnvLookup<'_>, out: &mut Output<'_>) -> i32 {
    let config = match ClientConfig::load_with(env) {
        Ok(config) => config,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            return 1;
        }
    };
    let auth = match config.authenticator() {
        Ok(auth) => auth,
        Err(e) => {
            out.error_line(&format!("scontrol: error: {e}"));
            return 1;
        }
    };
    let env_node = env("SLURMD_NODENAME").and_then(|v| v.into_string().ok());
    let addr = choose_slurmd(&config.conf, &short_hostname(), env_node.as_deref());
    let interceptor = AuthInterceptor::new(auth, Identity::current(), config.credential_ttl());
    match block_on(ask(&addr, config.conf.message_timeout, interceptor)) {
        Ok(reply) => out.block(
            "scontrol",
            &status_text(&reply, &slurm_common::time::format_timestamp),
        ),
        Err(status) => {
            let why = failure_text(&status);
            out.error_line(&format!("scontrol: error: slurm_slurmd_info: {why}"));
            if !options.quiet {
                out.error_line(&format!("slurm_load_slurmd_status: {why}"));
            }
            1
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use slurm_proto::v1::ActiveStep;

    fn conf(nodes: &str) -> SlurmConf {
        SlurmConf::parse(
            &format!("ClusterName=c\nSlurmctldHost=h\nSlurmdPort=7000\n{nodes}"),
            "t",
        )
        .unwrap()
        .conf
    }

    #[test]
    fn the_slurmd_of_this_host_as_slurm_finds_it() {
        let c = conf(
            "NodeName=a NodeHostname=vm NodeAddr=10.0.0.1 Port=7001\n\
             NodeName=b NodeHostname=vm NodeAddr=10.0.0.2\n\
             NodeName=l NodeHostname=localhost NodeAddr=127.0.0.1 Port=7003\n",
        );
        let at = |host: &str, port| SlurmdAddr {
            host: host.to_owned(),
            port,
        };
        assert_eq!(choose_slurmd(&c, "vm", None), at("10.0.0.1", 7001));
        assert_eq!(choose_slurmd(&c, "vm", Some("b")), at("10.0.0.2", 7000));
        // A name that is no node, or empty, is passed over.
        assert_eq!(choose_slurmd(&c, "vm", Some("zz")), at("10.0.0.1", 7001));
        assert_eq!(choose_slurmd(&c, "vm", Some("")), at("10.0.0.1", 7001));
        assert_eq!(choose_slurmd(&c, "other", None), at("127.0.0.1", 7003));
        let c = conf("NodeName=a NodeHostname=elsewhere\n");
        assert_eq!(choose_slurmd(&c, "vm", None), at("localhost", 7000));
        assert_eq!(at("::1", 1).uri(), "http://[::1]:1");
        assert_eq!(at("h", 1).uri(), "http://h:1");
    }

    fn reply() -> DaemonStatusReply {
        DaemonStatusReply {
            node_name: "vm2".into(),
            active_steps: Vec::new(),
            cpus: 2,
            boards: 1,
            sockets: 1,
            cores_per_socket: 2,
            threads_per_core: 1,
            real_memory_mb: 24105,
            tmp_disk_mb: 258_019,
            slurmd_start_time: 100,
            last_controller_message: 200,
            pid: 10873,
            debug_level: 3,
            log_file: "/tmp/realslurm2/log/slurmd-vm2.log".into(),
            version: "22.05.8".into(),
        }
    }

    #[test]
    fn status_prints_as_slurm_22_05() {
        let at = |t: i64| format!("T{t}");
        assert_eq!(
            status_text(&reply(), &at),
            "Active Steps             = NONE\n\
             Actual CPUs              = 2\n\
             Actual Boards            = 1\n\
             Actual sockets           = 1\n\
             Actual cores             = 2\n\
             Actual threads per core  = 1\n\
             Actual real memory       = 24105 MB\n\
             Actual temp disk space   = 258019 MB\n\
             Boot time                = T100\n\
             Hostname                 = vm2\n\
             Last slurmctld msg time  = T200\n\
             Slurmd PID               = 10873\n\
             Slurmd Debug             = 3\n\
             Slurmd Logfile           = /tmp/realslurm2/log/slurmd-vm2.log\n\
             Version                  = 22.05.8\n"
        );
    }

    #[test]
    fn batch_steps_show_as_their_job() {
        let mut r = reply();
        r.active_steps = vec![
            ActiveStep {
                job_id: 12,
                step_id: BATCH_STEP,
            },
            ActiveStep {
                job_id: 13,
                step_id: BATCH_STEP,
            },
            ActiveStep {
                job_id: 13,
                step_id: 0,
            },
        ];
        r.log_file.clear();
        r.last_controller_message = 0;
        let text = status_text(&r, &|t| t.to_string());
        assert!(
            text.starts_with("Active Steps             = 12, 13, 13.0\n"),
            "{text}"
        );
        assert!(
            text.contains("\nSlurmd Logfile           = (null)\n"),
            "{text}"
        );
        assert!(
            text.contains("\nLast slurmctld msg time  = Unknown\n"),
            "{text}"
        );
    }

    #[test]
    fn a_refused_connection_is_named_as_the_system_names_it() {
        let io = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
        let mut status = tonic::Status::unavailable("x");
        status.set_source(std::sync::Arc::new(io));
        assert_eq!(failure_text(&status), "Connection refused");
        assert_eq!(
            failure_text(&tonic::Status::deadline_exceeded("x")),
            ErrorCode::SocketTimeout.message()
        );
    }
}
