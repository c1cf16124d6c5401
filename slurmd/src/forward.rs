//! Forward: delivering one message to many nodes through a relay tree.
//!
//! The receiver handles the message itself, cuts the remaining nodes into at
//! most `tree_width` contiguous subtrees, sends each subtree's first node a
//! Forward for the rest of that subtree, and answers with one result per node
//! of its whole subtree. The tree shape is a pure function
//! ([`split_subtrees`]); the transport around it is thin.
//!
//! ```text
//! controller -> n1 {n2..n8, width 2}
//!                n1 handles itself
//!                n1 -> n2 {n3..n4}      n1 -> n5 {n6..n8}
//! ```

use std::sync::Arc;
use std::time::Duration;

use slurm_proto::v1::{
    node_message, node_reply, ForwardRequest, NodeMessage, NodeReply, NodeResult,
    ReconfigureNodeReply,
};
use slurm_proto::{ErrorCode, SlurmNodeClient};
use tonic::Status;

use crate::daemon::Node;

/// Cuts `nodes` into at most `width` contiguous groups of near-equal size
/// (the larger groups first). `width` 0 means one group per node.
pub fn split_subtrees(nodes: &[String], width: u32) -> Vec<Vec<String>> {
    if nodes.is_empty() {
        return Vec::new();
    }
    let width = usize::try_from(width).unwrap_or(usize::MAX);
    let groups = if width == 0 {
        nodes.len()
    } else {
        width.min(nodes.len())
    };
    let base = nodes.len() / groups;
    let extra = nodes.len() % groups;
    let mut out = Vec::with_capacity(groups);
    let mut start = 0;
    for g in 0..groups {
        let len = base + usize::from(g < extra);
        out.push(nodes[start..start + len].to_vec());
        start += len;
    }
    out
}

/// Time a child relay gets out of `total_ms`: enough less that this relay
/// can still answer with the child's failure.
pub fn child_timeout_ms(total_ms: u32) -> u32 {
    (total_ms / 10 * 8).max(100)
}

fn error_result(node: &str, code: ErrorCode, detail: String) -> NodeResult {
    NodeResult {
        node: node.to_string(),
        error_code: code.number(),
        error_detail: detail,
        reply: None,
    }
}

/// Handles the message on this node.
async fn handle_locally(node: &Arc<Node>, message: &NodeMessage) -> NodeResult {
    let name = node.setup.node.name.clone();
    let reply = match message.body.clone() {
        Some(node_message::Body::Ping(_)) => Ok(node_reply::Body::Ping(node.ping())),
        Some(node_message::Body::SignalJob(r)) => {
            node.signal(r).await.map(node_reply::Body::SignalJob)
        }
        Some(node_message::Body::TerminateJob(r)) => Ok(node_reply::Body::TerminateJob(
            node.terminate_request(r).await,
        )),
        Some(node_message::Body::Reconfigure(_)) => {
            node.reregister.notify_one();
            Ok(node_reply::Body::Reconfigure(ReconfigureNodeReply {}))
        }
        None => Err(ErrorCode::UnexpectedMessage.to_status("empty forwarded message")),
    };
    match reply {
        Ok(body) => NodeResult {
            node: name,
            error_code: 0,
            error_detail: String::new(),
            reply: Some(NodeReply { body: Some(body) }),
        },
        Err(status) => {
            let (code, detail) = ErrorCode::from_status(&status);
            error_result(&name, code, detail)
        }
    }
}

/// Sends the rest of one subtree to its first node.
async fn send_subtree(
    node: Arc<Node>,
    group: Vec<String>,
    message: NodeMessage,
    tree_width: u32,
    timeout_ms: u32,
    token: String,
) -> Vec<NodeResult> {
    let fail_all = |code: ErrorCode, detail: String| -> Vec<NodeResult> {
        group
            .iter()
            .map(|n| error_result(n, code, detail.clone()))
            .collect()
    };
    let Some(first) = group.first() else {
        return Vec::new();
    };
    let Some(conf) = node.setup.conf.node(first) else {
        return fail_all(
            ErrorCode::InvalidNodeName,
            format!("node {first} is not in slurm.conf"),
        );
    };
    let host = if conf.addr.contains(':') {
        format!("[{}]", conf.addr)
    } else {
        conf.addr.clone()
    };
    let url = format!("http://{host}:{}", conf.port);
    let timeout = Duration::from_millis(u64::from(timeout_ms));
    let channel = match tonic::transport::Endpoint::from_shared(url.clone()) {
        Ok(ep) => ep.connect_timeout(timeout).timeout(timeout).connect().await,
        Err(e) => {
            return fail_all(ErrorCode::CommunicationConnection, format!("{url}: {e}"));
        }
    };
    let channel = match channel {
        Ok(c) => c,
        Err(e) => return fail_all(ErrorCode::CommunicationConnection, format!("{url}: {e}")),
    };
    let rest = slurm_common::hostlist::compress(&group[1..]);
    let mut req = tonic::Request::new(ForwardRequest {
        message: Some(message),
        nodes: rest,
        tree_width,
        timeout_ms: child_timeout_ms(timeout_ms),
    });
    if slurm_proto::set_auth_credential(req.metadata_mut(), &token).is_err() {
        return fail_all(
            ErrorCode::ProtocolAuthentication,
            "credential cannot be passed on".to_string(),
        );
    }
    match SlurmNodeClient::new(channel).forward(req).await {
        Ok(resp) => {
            let mut results = resp.into_inner().results;
            // A relay that lost nodes still answers for them.
            for n in &group {
                if !results.iter().any(|r| &r.node == n) {
                    results.push(error_result(
                        n,
                        ErrorCode::CommunicationReceive,
                        format!("no result from relay {first}"),
                    ));
                }
            }
            results
        }
        Err(status) => {
            let (code, detail) = ErrorCode::from_status(&status);
            let code = if status.code() == tonic::Code::Unavailable {
                ErrorCode::CommunicationConnection
            } else {
                code
            };
            fail_all(code, format!("via {first}: {detail}"))
        }
    }
}

/// Serves one Forward: this node's result, then every subtree's.
pub async fn relay(
    node: &Arc<Node>,
    req: ForwardRequest,
    token: &str,
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
    let me = node.setup.node.name.clone();
    let others: Vec<String> = names.into_iter().filter(|n| *n != me).collect();
    let timeout_ms = if req.timeout_ms == 0 {
        u32::try_from(node.setup.conf.message_timeout.as_millis()).unwrap_or(u32::MAX)
    } else {
        req.timeout_ms
    };
    let mut tasks = tokio::task::JoinSet::new();
    for group in split_subtrees(&others, req.tree_width) {
        tasks.spawn(send_subtree(
            node.clone(),
            group,
            message.clone(),
            req.tree_width,
            child_timeout_ms(timeout_ms),
            token.to_string(),
        ));
    }
    let mut results = vec![handle_locally(node, &message).await];
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(r) => results.extend(r),
            Err(e) => tracing::error!(error = %e, "forwarding task failed"),
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn shapes() {
        let s = split_subtrees(&names(7), 2);
        assert_eq!(s, vec![names(4), names(7)[4..].to_vec()]);
        assert_eq!(split_subtrees(&names(3), 0).len(), 3);
        assert_eq!(split_subtrees(&names(2), 50).len(), 2);
        assert!(split_subtrees(&[], 3).is_empty());
        assert_eq!(child_timeout_ms(10_000), 8_000);
        assert_eq!(child_timeout_ms(0), 100);
    }

    proptest! {
        #[test]
        fn every_node_once_in_order(n in 0usize..200, width in 0u32..70) {
            let all = names(n);
            let groups = split_subtrees(&all, width);
            let flat: Vec<String> = groups.iter().flatten().cloned().collect();
            prop_assert_eq!(flat, all);
            if width > 0 {
                prop_assert!(groups.len() <= width as usize);
            }
            let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
            if let (Some(max), Some(min)) = (sizes.iter().max(), sizes.iter().min()) {
                prop_assert!(max - min <= 1 && *min > 0);
            }
        }
    }
}
