//! `SubmitJobs`: submissions by the thousand over one stream.
//!
//! A unary `SubmitJob` costs an HTTP/2 stream with its headers, a
//! credential check and a task on each side. Here the credential is checked
//! once per stream and each job costs one message each way, so a tool that
//! submits many jobs (a workflow engine, the REST API under load) pays for
//! the jobs, not for the calls. Each job is still a [`Command::Submit`] of
//! its own and is answered only once it is durable, exactly as `SubmitJob`.
//!
//! Answers keep the order of the requests. At most [`WINDOW`] of one
//! stream's jobs wait for the owner task at a time, so that one client
//! cannot fill the command queue; whatever the client sends beyond that
//! waits in the transport's flow control.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use slurm_proto::v1;
use slurm_proto::ErrorCode;
use tokio::sync::{mpsc, oneshot};
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use super::{submit_command, Shared};
use crate::core::{Caller, Reply};

/// The most jobs of one stream in the owner's hands at once.
pub const WINDOW: usize = 512;

/// The answer stream for `inbound`, fed by a task of its own.
pub fn serve(
    shared: Arc<Shared>,
    caller: Caller,
    inbound: Streaming<v1::SubmitJobRequest>,
) -> slurm_proto::SubmitJobsReplyStream {
    let (tx, rx) = mpsc::channel(WINDOW);
    tokio::spawn(pump(shared, caller, inbound, tx));
    Box::pin(ReceiverStream::new(rx))
}

type Answers = mpsc::Sender<Result<v1::SubmitJobsReply, Status>>;

/// Reads requests, hands each to the owner task, and sends the answers in
/// order, until the client has sent everything and had every answer, or
/// goes away. A request the transport cannot decode ends the stream with
/// that error after the answers before it.
async fn pump(
    shared: Arc<Shared>,
    caller: Caller,
    mut inbound: Streaming<v1::SubmitJobRequest>,
    tx: Answers,
) {
    let mut waiting: VecDeque<oneshot::Receiver<Reply>> = VecDeque::new();
    // One passwd lookup per user and stream, not one per job.
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut reading = true;
    let mut broken: Option<Status> = None;
    loop {
        tokio::select! {
            // Answers first: they free room in the window.
            biased;
            reply = next_reply(&mut waiting), if !waiting.is_empty() => {
                waiting.pop_front();
                if tx.send(Ok(answer(reply))).await.is_err() {
                    return; // The client went away.
                }
            }
            request = inbound.message(), if reading && waiting.len() < WINDOW => {
                match request {
                    Ok(Some(request)) => {
                        let (reply_tx, reply_rx) = oneshot::channel();
                        let name_of = |uid: u32| {
                            names
                                .entry(uid)
                                .or_insert_with(|| {
                                    crate::server::user_name_of(uid)
                                        .unwrap_or_else(|| uid.to_string())
                                })
                                .clone()
                        };
                        match submit_command(caller, request, name_of) {
                            Ok(mut cmd) => {
                                super::add_user_groups(&shared, &mut cmd);
                                if shared.commands.send((cmd, reply_tx)).await.is_err() {
                                    // The owner task has ended: so has the
                                    // controller.
                                    broken = Some(ErrorCode::ShuttingDown.to_status(""));
                                    reading = false;
                                    continue;
                                }
                            }
                            Err(status) => {
                                let (code, detail) = ErrorCode::from_status(&status);
                                // The receiver is in `waiting` below.
                                let _ = reply_tx.send(Reply::error(code, detail));
                            }
                        }
                        waiting.push_back(reply_rx);
                    }
                    Ok(None) => reading = false,
                    Err(status) => {
                        broken = Some(status);
                        reading = false;
                    }
                }
            }
            else => break,
        }
    }
    if let Some(status) = broken {
        let _ = tx.send(Err(status)).await;
    }
}

/// The reply for the oldest job still waiting (the caller checks there is
/// one).
async fn next_reply(
    waiting: &mut VecDeque<oneshot::Receiver<Reply>>,
) -> Result<Reply, oneshot::error::RecvError> {
    match waiting.front_mut() {
        Some(rx) => rx.await,
        None => std::future::pending().await,
    }
}

/// A job's answer on the stream.
fn answer(reply: Result<Reply, oneshot::error::RecvError>) -> v1::SubmitJobsReply {
    let refused = |code: ErrorCode, detail: String| v1::SubmitJobsReply {
        submitted: None,
        error_code: code.number(),
        error_message: if detail.is_empty() {
            code.message().to_owned()
        } else {
            detail
        },
    };
    match reply {
        Ok(Reply::Submitted { job_id, estimate }) => v1::SubmitJobsReply {
            submitted: Some(v1::SubmitJobReply {
                job_id,
                user_messages: Vec::new(),
                estimate,
            }),
            error_code: 0,
            error_message: String::new(),
        },
        Ok(Reply::Error { code, detail }) => refused(code, detail),
        Ok(other) => refused(ErrorCode::Internal, format!("unexpected reply {other:?}")),
        // The owner dropped the job's reply: it is shutting down.
        Err(_) => refused(ErrorCode::ShuttingDown, String::new()),
    }
}
