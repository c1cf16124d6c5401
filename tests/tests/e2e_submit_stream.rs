//! `SubmitJobs`, the streaming submission RPC, end to end: answers come in
//! the order of the requests; a refused job gets Slurm's error in its own
//! answer and the stream goes on; and a slurmctld killed with SIGKILL in
//! the middle of a stream loses no job it had acknowledged.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use slurm_client_tools::client::Controller;
use slurm_proto::v1::{JobDescription, SubmitJobRequest, SubmitJobsReply};
use slurm_proto::ErrorCode;
use slurm_testkit::local_cluster::job_states;
use slurm_testkit::{wait_until, LocalCluster};

fn cluster() -> LocalCluster {
    LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster did not start: {e:#}"))
}

fn held(c: &LocalCluster, name: &str) -> JobDescription {
    JobDescription {
        user_id: nix_uid(),
        group_id: nix_gid(),
        script: "#!/bin/sh\ntrue\n".into(),
        environment: vec!["PATH=/usr/bin:/bin".into()],
        work_dir: c.dir().root().display().to_string(),
        name: name.into(),
        hold: true,
        ..JobDescription::default()
    }
}

fn nix_uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

fn nix_gid() -> u32 {
    // SAFETY: getgid cannot fail and touches no memory.
    unsafe { libc::getgid() }
}

/// Sends `requests` over one stream to the controller `ctl` reaches;
/// each answer goes to `seen` as it comes. The stream's end: `Ok` after
/// the last answer, or the error that broke it.
fn stream(
    ctl: Controller,
    requests: impl Iterator<Item = SubmitJobRequest> + Send + 'static,
    seen: impl Fn(SubmitJobsReply) + Send + 'static,
) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let addr = ctl.controllers().first().cloned().expect("controller");
        let mut client = ctl
            .connect_to(&addr)
            .await
            .map_err(|e| format!("connect: {e:?}"))?;
        let mut answers = client
            .submit_jobs(tonic::codegen::tokio_stream::iter(requests))
            .await
            .map_err(|s| s.message().to_string())?
            .into_inner();
        while let Some(answer) = answers
            .message()
            .await
            .map_err(|s| s.message().to_string())?
        {
            seen(answer);
        }
        Ok(())
    })
}

#[test]
fn answers_keep_order_and_a_refused_job_does_not_end_the_stream() {
    let c = cluster();
    let mut requests: Vec<SubmitJobRequest> = (0..50)
        .map(|i| SubmitJobRequest {
            job: Some(held(&c, &format!("s{i}"))),
        })
        .collect();
    requests[10].job.as_mut().expect("job").partitions = vec!["nope".into()];
    requests[20].job = None;
    let answers = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&answers);
    stream(
        c.client().expect("client"),
        requests.into_iter(),
        move |a| {
            sink.lock().expect("answers").push(a);
        },
    )
    .expect("stream");
    let answers = answers.lock().expect("answers").clone();
    assert_eq!(answers.len(), 50);

    let bad = &answers[10];
    assert!(bad.submitted.is_none());
    assert_eq!(bad.error_code, ErrorCode::InvalidPartitionName.number());
    assert_eq!(bad.error_message, "invalid partition specified: nope");
    let malformed = &answers[20];
    assert_eq!(malformed.error_code, ErrorCode::MalformedRequest.number());

    // The others were accepted, with increasing ids, each job named as
    // its request.
    let ids: Vec<(usize, u32)> = answers
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 10 && *i != 20)
        .map(|(i, a)| {
            assert_eq!(a.error_code, 0, "answer {i}: {a:?}");
            (i, a.submitted.as_ref().expect("submitted").job_id)
        })
        .collect();
    assert_eq!(ids.len(), 48);
    assert!(ids.windows(2).all(|w| w[0].1 < w[1].1), "{ids:?}");
    for (i, id) in ids {
        let o = c
            .run("squeue", &["-h", "-j", &id.to_string(), "-o", "%j %T %r"])
            .expect("squeue");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            format!("s{i} PENDING JobHeldUser\n")
        );
    }
}

#[test]
fn sigkill_in_the_middle_of_a_stream_loses_no_acknowledged_job() {
    let mut c = cluster();
    let acked: Arc<Mutex<Vec<u32>>> = Arc::default();
    let job = held(&c, "k");
    let requests = (0..200_000).map(move |_| SubmitJobRequest {
        job: Some(job.clone()),
    });
    let sink = Arc::clone(&acked);
    let conf = c.conf_path();
    // The stream runs on a thread of its own; the cluster stays here to
    // kill the controller.
    let ctl = c.client().expect("client");
    let streamer = std::thread::spawn(move || {
        stream(ctl, requests, move |a| {
            if let (0, Some(s)) = (a.error_code, a.submitted) {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(s.job_id);
            }
        })
    });
    let count = || acked.lock().unwrap_or_else(|e| e.into_inner()).len();
    let under_load = wait_until("2000 acknowledged jobs", Duration::from_secs(60), || {
        (count() >= 2000).then_some(())
    });
    c.kill_controller().expect("kill");
    under_load.unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    // The stream breaks with the controller.
    let end = streamer.join().expect("streamer");
    assert!(end.is_err(), "the stream outlived its controller");
    let acked = acked.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(acked.len() < 200_000, "the whole stream was answered first");

    c.start_controller()
        .unwrap_or_else(|e| panic!("restart: {e:#}\n{}", c.logs()));
    let known: std::collections::HashSet<u32> = job_states(&conf, &[])
        .expect("GetJobs")
        .into_iter()
        .map(|j| j.id)
        .collect();
    let lost: Vec<u32> = acked
        .iter()
        .copied()
        .filter(|id| !known.contains(id))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged jobs lost: {:?}...",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(10)]
    );
}
