//! Forward: delivering one message to many nodes through a relay tree.
//!
//! The receiver handles the message itself and, at the same time, passes it
//! on to the rest of its list: cut into at most `tree_width` branches
//! (`slurm_common::tree`), each sent to its first node with the remainder of
//! the branch. It answers with one result per node of its whole subtree.
//!
//! ```text
//! controller -> n1 {n2..n8, width 2}
//!                n1 handles itself
//!                n1 -> n2 {n3..n4}      n1 -> n5 {n6..n8}
//! ```
//!
//! A relay that cannot be reached, or that does not answer within its wait,
//! is reported failed and its branch is split again without it and sent on
//! (`tree::Fanout`), so one dead or hung node never hides the nodes behind
//! it. A relay that was only slow may then have passed the message on as
//! well: a node can receive it twice, which ping, terminate and reconfigure
//! tolerate, and a signal is sent twice only in that rare case.
//!
//! Every result carries `via`, the relays it came through. The hops are
//! logged at debug level, for tests and for people reading logs:
//!
//! ```text
//! forward: ping to n5 for n[6-8] via n1
//! forward: ping to n8 for - via n5        (a leaf: nothing to pass on)
//! forward: relay n5 failed (...); rerouting n[6-8] via n1
//! ```
//!
//! The topology and timing decisions are pure (`slurm_common::tree`); what
//! is here is the transport around them, behind two narrow traits so that
//! the whole relay can be tested in-process ([`Local`], [`Link`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use slurm_common::tree::{Fanout, TreeWidth};
use slurm_proto::v1::{
    node_message, node_reply, ForwardRequest, NodeMessage, NodeReply, NodeResult,
    ReconfigureNodeReply, ShutdownNodeReply,
};
use slurm_proto::{ErrorCode, SlurmNodeClient};
use tonic::Status;

use crate::daemon::Node;

/// A boxed future that can move between threads.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Why a relay gave no answer: the error number and a detail line.
pub type LinkError = (ErrorCode, String);

/// The node a relay runs on: its name and how it handles a message.
pub trait Local: Send + Sync + 'static {
    fn name(&self) -> String;
    /// Handles `message` here; the result names this node.
    fn handle(self: Arc<Self>, message: NodeMessage) -> BoxFuture<NodeResult>;
    /// Time one level of the tree may take when the sender gave no budget.
    fn message_timeout(&self) -> Duration;
}

/// How a relay reaches the next relay.
pub trait Link: Send + Sync + 'static {
    /// Sends `req` to node `to` and waits at most `wait` for its results.
    fn forward(
        &self,
        to: &str,
        req: ForwardRequest,
        wait: Duration,
    ) -> BoxFuture<Result<Vec<NodeResult>, LinkError>>;
}

/// The kind of message, as the logs name it.
/// How much longer a relay's gRPC deadline is than the wait for it.
const DEADLINE_SLACK: Duration = Duration::from_millis(100);

pub fn kind(message: &NodeMessage) -> &'static str {
    match message.body {
        Some(node_message::Body::Ping(_)) => "ping",
        Some(node_message::Body::SignalJob(_)) => "signal",
        Some(node_message::Body::TerminateJob(_)) => "terminate",
        Some(node_message::Body::Reconfigure(_)) => "reconfigure",
        Some(node_message::Body::LaunchProlog(_)) => "prolog",
        Some(node_message::Body::Shutdown(_)) => "shutdown",
        None => "empty message",
    }
}

/// A failed node's result.
pub fn error_result(node: &str, code: ErrorCode, detail: String) -> NodeResult {
    NodeResult {
        node: node.to_string(),
        error_code: code.number(),
        error_detail: detail,
        reply: None,
        via: Vec::new(),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Delivers `message` to every node of `targets` (not to `me`) through
/// branches of at most `width`, all of it over within `total`. One result
/// per target, in any order.
pub async fn deliver(
    link: Arc<dyn Link>,
    me: &str,
    targets: Vec<String>,
    message: NodeMessage,
    width: TreeWidth,
    total: Duration,
) -> Vec<NodeResult> {
    let start = Instant::now();
    let what = kind(&message);
    let index: HashMap<&str, usize> = targets
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut results: Vec<Option<NodeResult>> = vec![None; targets.len()];
    let mut fan = Fanout::new(targets.len(), width, millis(total));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let ready = fan.poll(millis(start.elapsed()));
        for i in ready.given_up {
            results[i] = Some(error_result(
                &targets[i],
                ErrorCode::SocketTimeout,
                format!("not reached within {} ms", millis(total)),
            ));
        }
        for send in ready.sends {
            let relay = targets[send.relay].clone();
            let rest = slurm_common::hostlist::compress(&targets[send.rest.clone()]);
            let shown = if rest.is_empty() { "-" } else { rest.as_str() };
            tracing::debug!("forward: {what} to {relay} for {shown} via {me}");
            let req = ForwardRequest {
                message: Some(message.clone()),
                nodes: rest,
                tree_width: width.get(),
                timeout_ms: u32::try_from(send.budget_ms).unwrap_or(u32::MAX),
            };
            let link = link.clone();
            let wait = Duration::from_millis(send.wait_ms);
            tasks.spawn(async move {
                let outcome = link.forward(&relay, req, wait).await;
                (send, relay, outcome)
            });
        }
        let Some(done) = tasks.join_next().await else {
            break;
        };
        let (send, relay, outcome) = match done {
            Ok(d) => d,
            Err(e) => {
                // Its nodes are reported missing below.
                tracing::error!(error = %e, "forwarding task failed");
                continue;
            }
        };
        match outcome {
            Ok(got) => {
                fan.delivered(send.id);
                for mut r in got {
                    let Some(&i) = index.get(r.node.as_str()) else {
                        continue;
                    };
                    let in_branch = i == send.relay || send.rest.contains(&i);
                    if !in_branch || results[i].is_some() {
                        continue;
                    }
                    if i != send.relay {
                        r.via.insert(0, relay.clone());
                    }
                    results[i] = Some(r);
                }
                // A relay that lost nodes still answers for them.
                for i in std::iter::once(send.relay).chain(send.rest.clone()) {
                    if results[i].is_none() {
                        let mut r = error_result(
                            &targets[i],
                            ErrorCode::CommunicationReceive,
                            format!("no result from relay {relay}"),
                        );
                        if i != send.relay {
                            r.via.push(relay.clone());
                        }
                        results[i] = Some(r);
                    }
                }
            }
            Err((code, detail)) => {
                fan.failed(send.id);
                if send.rest.is_empty() {
                    tracing::debug!("forward: {relay} failed ({detail}) via {me}");
                } else {
                    let rest = slurm_common::hostlist::compress(&targets[send.rest.clone()]);
                    tracing::debug!(
                        "forward: relay {relay} failed ({detail}); rerouting {rest} via {me}"
                    );
                }
                results[send.relay] = Some(error_result(&relay, code, detail));
            }
        }
    }
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|| {
                error_result(
                    &targets[i],
                    ErrorCode::CommunicationReceive,
                    "no result".to_string(),
                )
            })
        })
        .collect()
}

/// Serves one Forward for `local`: its own result and every other node's.
pub async fn relay_with<L: Local>(
    local: Arc<L>,
    link: Arc<dyn Link>,
    req: ForwardRequest,
) -> Result<Vec<NodeResult>, Status> {
    let message = req
        .message
        .ok_or_else(|| ErrorCode::UnexpectedMessage.to_status("Forward without a message"))?;
    let names = if req.nodes.trim().is_empty() {
        Vec::new()
    } else {
        slurm_common::hostlist::expand(&req.nodes).map_err(|e| {
            ErrorCode::InvalidNodeName.to_status(format!("bad node list {:?}: {e}", req.nodes))
        })?
    };
    let me = local.name();
    let mut seen = std::collections::HashSet::new();
    let others: Vec<String> = names
        .into_iter()
        .filter(|n| *n != me && seen.insert(n.clone()))
        .collect();
    let width = TreeWidth::new(req.tree_width);
    let total = if req.timeout_ms == 0 {
        let per_level = millis(local.message_timeout());
        Duration::from_millis(slurm_common::tree::total_budget_ms(
            others.len(),
            width,
            per_level,
        ))
    } else {
        Duration::from_millis(u64::from(req.timeout_ms))
    };
    let what = kind(&message);
    if !others.is_empty() {
        tracing::debug!(
            "forward: {what} received by {me} for {} nodes, {} ms",
            others.len(),
            millis(total)
        );
    }
    let here = {
        let local = local.clone();
        let message = message.clone();
        let me = me.clone();
        async move {
            match tokio::time::timeout(total, local.handle(message)).await {
                Ok(r) => r,
                Err(_) => error_result(
                    &me,
                    ErrorCode::SocketTimeout,
                    format!("{what} not handled within {} ms", millis(total)),
                ),
            }
        }
    };
    let there = deliver(link, &me, others, message, width, total);
    let (mine, mut theirs) = tokio::join!(here, there);
    theirs.insert(0, mine);
    Ok(theirs)
}

/// Serves one Forward on this slurmd (`token` is passed on to relays).
pub async fn relay(
    node: &Arc<Node>,
    req: ForwardRequest,
    token: &str,
) -> Result<Vec<NodeResult>, Status> {
    let link = Arc::new(GrpcLink {
        conf: node.live().setup.conf.clone(),
        token: token.to_string(),
    });
    relay_with(node.clone(), link, req).await
}

impl Local for Node {
    fn name(&self) -> String {
        Node::name(self).to_string()
    }

    fn handle(self: Arc<Self>, message: NodeMessage) -> BoxFuture<NodeResult> {
        Box::pin(async move { handle_locally(&self, message).await })
    }

    fn message_timeout(&self) -> Duration {
        self.live().setup.conf.message_timeout
    }
}

/// Handles the message on this node.
async fn handle_locally(node: &Arc<Node>, message: NodeMessage) -> NodeResult {
    let name = node.name().to_string();
    let reply = match message.body {
        Some(node_message::Body::Ping(_)) => Ok(node_reply::Body::Ping(node.ping())),
        Some(node_message::Body::SignalJob(r)) => {
            node.signal(r).await.map(node_reply::Body::SignalJob)
        }
        Some(node_message::Body::TerminateJob(r)) => Ok(node_reply::Body::TerminateJob(
            node.terminate_request(r).await,
        )),
        Some(node_message::Body::Reconfigure(_)) => {
            // Answered whatever the file holds (see Node::reconfigure).
            node.reconfigure(Instant::now()).await;
            Ok(node_reply::Body::Reconfigure(ReconfigureNodeReply {}))
        }
        Some(node_message::Body::LaunchProlog(r)) => {
            Ok(node_reply::Body::LaunchProlog(node.launch_prolog(r)))
        }
        // Answered here; the daemon stops once the whole delivery is over
        // (see `NodeService::forward`), so the message still reaches the
        // rest of this node's subtree.
        Some(node_message::Body::Shutdown(_)) => {
            Ok(node_reply::Body::Shutdown(ShutdownNodeReply {}))
        }
        None => Err(ErrorCode::UnexpectedMessage.to_status("empty forwarded message")),
    };
    match reply {
        Ok(body) => NodeResult {
            node: name,
            error_code: 0,
            error_detail: String::new(),
            reply: Some(NodeReply { body: Some(body) }),
            via: Vec::new(),
        },
        Err(status) => {
            let (code, detail) = ErrorCode::from_status(&status);
            error_result(&name, code, detail)
        }
    }
}

/// Reaches other slurmds over gRPC: one connection per branch and message,
/// made to the node's NodeAddr:Port from slurm.conf, carrying the
/// controller's credential unchanged.
#[derive(Debug, Clone)]
pub struct GrpcLink {
    pub conf: Arc<slurm_common::conf::SlurmConf>,
    pub token: String,
}

impl Link for GrpcLink {
    fn forward(
        &self,
        to: &str,
        req: ForwardRequest,
        wait: Duration,
    ) -> BoxFuture<Result<Vec<NodeResult>, LinkError>> {
        let target = self.conf.node(to).map(|c| {
            let host = if c.addr.contains(':') {
                format!("[{}]", c.addr)
            } else {
                c.addr.clone()
            };
            let port = if c.port == 0 {
                self.conf.slurmd_port
            } else {
                c.port
            };
            format!("http://{host}:{port}")
        });
        let to = to.to_string();
        let token = self.token.clone();
        Box::pin(async move {
            let url = target.ok_or_else(|| {
                (
                    ErrorCode::InvalidNodeName,
                    format!("node {to} is not in slurm.conf"),
                )
            })?;
            let call = async {
                let channel = tonic::transport::Endpoint::from_shared(url.clone())
                    .map_err(|e| (ErrorCode::CommunicationConnection, format!("{url}: {e}")))?
                    .connect_timeout(wait)
                    .tcp_nodelay(true)
                    .connect()
                    .await
                    .map_err(|e| {
                        (
                            ErrorCode::CommunicationConnection,
                            format!("{to} ({url}): {e}"),
                        )
                    })?;
                let mut req = tonic::Request::new(req);
                // The peer's deadline runs a little past ours, so that a
                // silent relay always ends in the timeout below (reported
                // as SocketTimeout), never in a race with a cancelled call.
                req.set_timeout(wait + DEADLINE_SLACK);
                slurm_proto::set_auth_credential(req.metadata_mut(), &token).map_err(|_| {
                    (
                        ErrorCode::ProtocolAuthentication,
                        "credential cannot be passed on".to_string(),
                    )
                })?;
                match SlurmNodeClient::new(channel).forward(req).await {
                    Ok(resp) => Ok(resp.into_inner().results),
                    Err(status) => {
                        let (code, detail) = ErrorCode::from_status(&status);
                        Err((code, format!("{to}: {detail}")))
                    }
                }
            };
            match tokio::time::timeout(wait, call).await {
                Ok(r) => r,
                Err(_) => Err((
                    ErrorCode::SocketTimeout,
                    format!("{to} did not answer within {} ms", millis(wait)),
                )),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Mutex;

    use slurm_proto::v1::{PingNodeReply, PingNodeRequest};

    /// A node of the in-memory network: answers pings with its name.
    struct FakeNode {
        name: String,
        net: Arc<FakeNet>,
    }

    impl Local for FakeNode {
        fn name(&self) -> String {
            self.name.clone()
        }
        fn handle(self: Arc<Self>, _message: NodeMessage) -> BoxFuture<NodeResult> {
            let name = self.name.clone();
            self.net.handled.lock().unwrap().push(name.clone());
            Box::pin(async move {
                NodeResult {
                    node: name.clone(),
                    reply: Some(NodeReply {
                        body: Some(node_reply::Body::Ping(PingNodeReply {
                            node_name: name,
                            ..Default::default()
                        })),
                    }),
                    ..Default::default()
                }
            })
        }
        fn message_timeout(&self) -> Duration {
            Duration::from_secs(10)
        }
    }

    /// Nodes that refuse connections or never answer, and a record of
    /// who handled a message.
    #[derive(Default)]
    struct FakeNet {
        refused: HashSet<String>,
        hung: HashSet<String>,
        handled: Mutex<Vec<String>>,
    }

    struct FakeLink(Arc<FakeNet>);

    impl Link for FakeLink {
        fn forward(
            &self,
            to: &str,
            req: ForwardRequest,
            wait: Duration,
        ) -> BoxFuture<Result<Vec<NodeResult>, LinkError>> {
            let net = self.0.clone();
            let to = to.to_string();
            Box::pin(async move {
                if net.refused.contains(&to) {
                    Err((ErrorCode::CommunicationConnection, format!("{to}: refused")))
                } else if net.hung.contains(&to) {
                    tokio::time::sleep(wait).await;
                    Err((ErrorCode::SocketTimeout, format!("{to}: no answer")))
                } else {
                    let node = Arc::new(FakeNode {
                        name: to.clone(),
                        net: net.clone(),
                    });
                    let link: Arc<dyn Link> = Arc::new(FakeLink(net.clone()));
                    relay_with(node, link, req)
                        .await
                        .map_err(|s| (ErrorCode::Internal, s.message().to_string()))
                }
            })
        }
    }

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn ping() -> NodeMessage {
        NodeMessage {
            body: Some(node_message::Body::Ping(PingNodeRequest {})),
        }
    }

    async fn run(net: FakeNet, n: usize, width: u32) -> (Arc<FakeNet>, Vec<NodeResult>) {
        let net = Arc::new(net);
        let link: Arc<dyn Link> = Arc::new(FakeLink(net.clone()));
        let got = deliver(
            link,
            "ctl",
            names(n),
            ping(),
            TreeWidth::new(width),
            Duration::from_secs(40),
        )
        .await;
        (net, got)
    }

    fn by_node(results: &[NodeResult]) -> HashMap<String, (i32, Vec<String>)> {
        let mut m = HashMap::new();
        for r in results {
            let old = m.insert(r.node.clone(), (r.error_code, r.via.clone()));
            assert!(old.is_none(), "two results for {}", r.node);
        }
        m
    }

    #[tokio::test(start_paused = true)]
    async fn every_node_answers_once_with_its_path() {
        let (net, got) = run(FakeNet::default(), 8, 2).await;
        let m = by_node(&got);
        assert_eq!(m.len(), 8);
        assert!(m.values().all(|(code, _)| *code == 0));
        // The tree of the module docs: n7 comes through n5 and n6.
        assert_eq!(m["n7"].1, vec!["n5", "n6"]);
        assert_eq!(m["n1"].1, Vec::<String>::new());
        assert_eq!(m["n4"].1, vec!["n1"]);
        let mut handled = net.handled.lock().unwrap().clone();
        handled.sort();
        assert_eq!(handled, {
            let mut n = names(8);
            n.sort();
            n
        });
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusing_relay_is_routed_around() {
        // n5 relays for n6..n8; it refuses connections.
        let net = FakeNet {
            refused: HashSet::from(["n5".to_string()]),
            ..FakeNet::default()
        };
        let (net, got) = run(net, 8, 2).await;
        let m = by_node(&got);
        assert_eq!(m.len(), 8);
        let conn = ErrorCode::CommunicationConnection.number();
        assert_eq!(m["n5"], (conn, vec![]));
        for n in ["n6", "n7", "n8"] {
            assert_eq!(m[n].0, 0, "{n}");
        }
        // n6..n8 were split again by the controller: n6 and n8 direct,
        // n7 behind n6.
        assert_eq!(m["n6"].1, Vec::<String>::new());
        assert_eq!(m["n7"].1, vec!["n6"]);
        assert!(!net.handled.lock().unwrap().contains(&"n5".to_string()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_relay_deep_in_the_tree_is_reported_and_its_nodes_reached() {
        // 40 nodes, width 3: n2 relays inside n1's branch.
        let net = FakeNet {
            hung: HashSet::from(["n2".to_string()]),
            ..FakeNet::default()
        };
        let (net, got) = run(net, 40, 3).await;
        let m = by_node(&got);
        assert_eq!(m.len(), 40);
        let bad: Vec<&String> = m.keys().filter(|n| m[*n].0 != 0).collect();
        assert_eq!(bad, vec!["n2"]);
        assert_eq!(
            m["n2"],
            (ErrorCode::SocketTimeout.number(), vec!["n1".to_string()])
        );
        // Nodes behind n2 came another way, still through n1.
        assert_eq!(m["n3"].1.first().map(String::as_str), Some("n1"));
        assert!(!m["n3"].1.contains(&"n2".to_string()));
        // Every other node handled the message exactly once.
        let handled = net.handled.lock().unwrap().clone();
        let unique: HashSet<&String> = handled.iter().collect();
        assert_eq!((handled.len(), unique.len()), (39, 39));
        assert!(!unique.contains(&"n2".to_string()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_controller_side_never_has_more_than_width_open() {
        let net = FakeNet {
            refused: (1..=10).map(|i| format!("n{}", i * 7)).collect(),
            ..FakeNet::default()
        };
        let net = Arc::new(net);
        // Count only the first hop: a link that records and then answers.
        struct Counting(Arc<FakeNet>, Arc<Mutex<(usize, usize)>>);
        impl Link for Counting {
            fn forward(
                &self,
                to: &str,
                req: ForwardRequest,
                wait: Duration,
            ) -> BoxFuture<Result<Vec<NodeResult>, LinkError>> {
                let count = self.1.clone();
                let inner = FakeLink(self.0.clone()).forward(to, req, wait);
                Box::pin(async move {
                    {
                        let mut c = count.lock().unwrap();
                        c.0 += 1;
                        c.1 = c.1.max(c.0);
                    }
                    tokio::task::yield_now().await;
                    let r = inner.await;
                    count.lock().unwrap().0 -= 1;
                    r
                })
            }
        }
        let count = Arc::new(Mutex::new((0, 0)));
        let link: Arc<dyn Link> = Arc::new(Counting(net.clone(), count.clone()));
        let got = deliver(
            link,
            "ctl",
            names(100),
            ping(),
            TreeWidth::new(4),
            Duration::from_secs(40),
        )
        .await;
        let m = by_node(&got);
        assert_eq!(m.len(), 100);
        assert_eq!(m.values().filter(|(c, _)| *c != 0).count(), 10);
        let peak = count.lock().unwrap().1;
        assert!(peak <= 4, "peak {peak}");
        assert!(peak >= 2, "peak {peak}");
    }

    #[tokio::test(start_paused = true)]
    async fn relay_answers_for_itself_first_and_dedups() {
        let net = Arc::new(FakeNet::default());
        let node = Arc::new(FakeNode {
            name: "n1".into(),
            net: net.clone(),
        });
        let link: Arc<dyn Link> = Arc::new(FakeLink(net.clone()));
        let got = relay_with(
            node,
            link,
            ForwardRequest {
                message: Some(ping()),
                nodes: "n[1-3],n2".into(),
                tree_width: 0,
                timeout_ms: 0,
            },
        )
        .await
        .unwrap();
        let nodes: Vec<&str> = got.iter().map(|r| r.node.as_str()).collect();
        assert_eq!(nodes, vec!["n1", "n2", "n3"]);
        let bad = relay_with(
            Arc::new(FakeNode {
                name: "n1".into(),
                net: net.clone(),
            }),
            Arc::new(FakeLink(net)),
            ForwardRequest {
                message: Some(ping()),
                nodes: "n[1-".into(),
                ..Default::default()
            },
        )
        .await;
        assert!(bad.is_err());
    }
}
