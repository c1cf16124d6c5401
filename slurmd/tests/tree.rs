//! The relay tree on real sockets: one slurmd emulating several nodes, a
//! node that accepts connections and never answers, and a Forward sent to
//! the first node as the controller sends it. The hung relay must be
//! reported, the nodes behind it reached another way, and the hops logged.
//!
//! No controller runs: slurmd serves Forward before it has registered.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_common::auth::{generate_key, unix_now, Authenticator, Claims, SlurmKeyAuth};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1::{node_message, ForwardRequest, NodeMessage, PingNodeRequest};
use slurm_proto::{ErrorCode, SlurmNodeClient};

const DEADLINE: Duration = Duration::from_secs(30);

struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    slurm_testkit::free_loopback_port().expect("free port")
}

fn read(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_relay_is_routed_around_and_the_hops_are_logged() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    // n2 is a socket that takes connections and never answers; it relays
    // for n3..n5 in a width-2 tree from n1 over n[1-8].
    let hung = TcpListener::bind("127.0.0.1:0").expect("bind");
    let hung_port = hung.local_addr().expect("addr").port();
    let mut lines = String::new();
    let mut ports = Vec::new();
    for i in 1..=8 {
        let port = if i == 2 { hung_port } else { free_port() };
        ports.push(port);
        lines.push_str(&format!(
            "NodeName=n{i} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=100\n"
        ));
    }
    let r = root.display();
    let conf = root.join("slurm.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=tree\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={}\n\
             AuthType=auth/slurm\nSlurmdSpoolDir={r}/spool/%n\nSlurmdPidFile={r}/slurmd.%n.pid\n\
             {lines}PartitionName=all Nodes=ALL Default=YES State=UP\n",
            free_port()
        ),
    )
    .expect("conf");
    let key = root.join("slurm.key");
    generate_key(&key).expect("key");
    let auth = Arc::new(SlurmKeyAuth::load(&key).expect("key"));

    let log = root.join("slurmd.log");
    let out = std::fs::File::create(&log).expect("log");
    let err = out.try_clone().expect("log");
    let _slurmd = Guard(
        Command::new(env!("CARGO_BIN_EXE_slurmd"))
            .args(["-D", "--emulate", "n1,n[3-8]", "-f"])
            .arg(&conf)
            .env("SLURMD_LOG", "debug")
            .env_remove("SLURM_CONF")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("start slurmd"),
    );

    // Wait for n1 to listen.
    let url = format!("http://127.0.0.1:{}", ports[0]);
    let start = Instant::now();
    let mut client = loop {
        match SlurmNodeClient::connect(url.clone()).await {
            Ok(c) => break c,
            Err(e) => {
                assert!(
                    start.elapsed() < DEADLINE,
                    "n1 never listened: {e}\n{}",
                    read(&log)
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    // The other nodes of the process listen once n1 does (they are bound
    // before any is served); a refused connection would show as such below.
    // SAFETY: geteuid/getegid cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let token = auth
        .create(&Claims::new(
            Uid::new(uid),
            Gid::new(gid),
            "localhost",
            unix_now(),
            300,
        ))
        .expect("token");
    let mut req = tonic::Request::new(ForwardRequest {
        message: Some(NodeMessage {
            body: Some(node_message::Body::Ping(PingNodeRequest {})),
        }),
        nodes: "n[1-8]".into(),
        tree_width: 2,
        timeout_ms: 3000,
    });
    slurm_proto::set_auth_credential(req.metadata_mut(), &token).expect("metadata");
    let asked = Instant::now();
    let reply = client.forward(req).await.expect("forward").into_inner();
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(4), "took {took:?}");

    let mut got: Vec<(String, i32, Vec<String>)> = reply
        .results
        .iter()
        .map(|r| (r.node.clone(), r.error_code, r.via.clone()))
        .collect();
    got.sort();
    let names: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        names,
        vec!["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"],
        "{got:?}"
    );
    for (node, code, via) in &got {
        if node == "n2" {
            assert_eq!(*code, ErrorCode::SocketTimeout.number(), "{got:?}");
            assert!(via.is_empty(), "{got:?}");
        } else {
            assert_eq!(*code, 0, "{node}: {got:?}\n{}", read(&log));
            assert!(!via.contains(&"n2".to_string()), "{got:?}");
        }
    }
    // n7 sits behind n6 in the tree of n[6-8].
    let n7 = got.iter().find(|g| g.0 == "n7").expect("n7");
    assert_eq!(n7.2, vec!["n6".to_string()]);

    let text = read(&log);
    assert!(
        text.contains("forward: ping to n2 for n[3-5] via n1"),
        "{text}"
    );
    assert!(
        text.contains("forward: relay n2 failed") && text.contains("rerouting n[3-5] via n1"),
        "{text}"
    );
    assert!(
        text.contains("forward: ping to n6 for n[7-8] via n1"),
        "{text}"
    );
    assert!(text.contains("forward: ping to n7 for - via n6"), "{text}");
    drop(hung);
}
