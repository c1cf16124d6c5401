//! The encoded GetJobs reply against prost's encoding of the `JobInfo`
//! values, on every field selection and filter; and the route in front of
//! the generated server against the generated answer.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, RwLock};

use proptest::prelude::*;
use slurm_common::auth::{Authenticator, Claims, SlurmKeyAuth};
use slurm_common::ids::{Gid, Uid};
use slurm_proto::v1;
use slurm_proto::SlurmController;
use tokio::sync::{mpsc, watch};

use super::*;
use crate::core::tests::{script, Env, CONF};
use crate::core::{Caller, Command, Reply};
use crate::rpc::Shared;

const NOW: i64 = 1_700_000_100;

/// A queue with a job in every situation a record can show: pending for
/// several reasons, held, running (one with a negative nice, some on two
/// nodes), completed, failed, cancelled; with and without memory, limits,
/// features, node lists and comments; in two partitions, for two users.
fn varied_snapshot() -> Snapshot {
    let conf =
        CONF.replace(
            "RealMemory=4000",
            "RealMemory=4000 TmpDisk=2000 Features=fast Gres=gpu:a100:2",
        )
        .replace(
            "PartitionName=short Nodes=n[1-2]",
            "PartitionName=short Hidden=YES Nodes=n[1-2]",
        ) + "GresTypes=gpu\nLicenses=lic:3,other\n\
           AccountingStorageType=accounting_storage/slurmdbd\n";
    let mut env = Env::with_conf(&conf);
    let alice = Caller {
        uid: 1000,
        gid: 1000,
    };
    let bob = Caller {
        uid: 1001,
        gid: 1001,
    };
    let submit = |env: &mut Env, caller: Caller, f: &dyn Fn(&mut v1::JobDescription)| {
        let mut d = script();
        d.user_id = caller.uid;
        d.group_id = caller.gid;
        d.user_name = format!("user{}", caller.uid);
        f(&mut d);
        match env.submit_as(caller, d) {
            Reply::Submitted { job_id, .. } => job_id,
            other => panic!("submit refused: {other:?}"),
        }
    };
    // Before any node registers: pending.
    let ran = submit(&mut env, alice, &|d| {
        d.name = "ran".into();
        d.comment = "a comment".into();
    });
    let failed = submit(&mut env, bob, &|d| d.name = "fails".into());
    let cancelled = submit(&mut env, alice, &|d| d.name = "gone".into());
    env.run(Command::Cancel {
        caller: alice,
        filter: v1::JobFilter {
            job_ids: vec![cancelled],
            ..Default::default()
        },
        signal: None,
    });
    env.register_all();
    // A negative nice is for operators.
    submit(&mut env, Caller::ROOT, &|d| {
        d.name = "wide".into();
        d.min_nodes = Some(2);
        d.ntasks = Some(4);
        d.memory = Some(v1::job_description::Memory::MemPerCpuMb(300));
        d.time_limit = Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(90)),
        });
        d.nice = Some(-5);
        d.account = "physics".into();
        d.constraint = "fast".into();
        d.contiguous = true;
        d.sharing = v1::NodeSharing::Exclusive as i32;
        d.command_path = "/home/a/run.sh".into();
    });
    submit(&mut env, bob, &|d| {
        d.name = "short".into();
        d.partitions = vec!["short".into()];
        d.memory = Some(v1::job_description::Memory::MemPerNodeMb(0));
        d.time_limit = Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Minutes(0)),
        });
        d.required_nodes = "n1".into();
    });
    // More than fits: these wait, for resources or priority.
    for i in 0..4 {
        submit(&mut env, if i % 2 == 0 { alice } else { bob }, &|d| {
            d.name = format!("big{i}");
            d.min_nodes = Some(4);
            d.excluded_nodes = String::new();
            d.nice = Some(i * 100);
            d.qos = "normal".into();
        });
    }
    submit(&mut env, alice, &|d| {
        d.name = "gpus".into();
        d.gres = "gpu:1,gpu:a100:1".into();
        d.hold = true;
    });
    submit(&mut env, bob, &|d| {
        d.name = "options".into();
        d.hold = true;
        d.wckey = "*proj".into();
        d.licenses = "lic:2,other".into();
        d.tmp_disk_mb = Some(1024);
        d.network = "sn_all".into();
        d.gpus = "2".into();
        d.gpus_per_task = "1".into();
        d.deadline = NOW + 86_400;
        d.time_min_minutes = Some(5);
    });
    submit(&mut env, bob, &|d| {
        d.name = "held".into();
        d.hold = true;
        d.excluded_nodes = "n4".into();
        d.time_limit = Some(v1::TimeLimit {
            limit: Some(v1::time_limit::Limit::Unlimited(true)),
        });
    });
    submit(&mut env, alice, &|d| {
        d.name = "ünïcode".into();
        d.hold = true;
        d.memory = Some(v1::job_description::Memory::MemPerNodeMb(3999));
    });
    // An array: its task 0 split off (and held), the rest pending in the
    // meta record with a throttle.
    let arr = submit(&mut env, alice, &|d| {
        d.name = "array".into();
        d.hold = true;
        d.array_spec = "0-3%2".into();
    });
    env.run(Command::Hold {
        caller: alice,
        filter: v1::JobFilter {
            array_tasks: vec![v1::ArrayTaskSelector {
                array_job_id: arr,
                task_spec: "0".into(),
            }],
            ..Default::default()
        },
        user_hold: true,
    });
    env.now += 30;
    env.complete(ran, 0, 0);
    env.complete(failed, 2, 0);
    env.now = NOW;
    env.ctl.snapshot()
}

/// What prost makes of the values [`convert::job_info_fields`] builds.
fn prost_record(snap: &Snapshot, job: &Job, want: JobFields) -> Vec<u8> {
    v1::GetJobsReply {
        jobs: vec![convert::job_info_fields(snap, job, NOW, want)],
        last_update: 0,
        unchanged: false,
    }
    .encode_to_vec()
}

fn direct_record(snap: &Snapshot, job: &Job, want: JobFields) -> Vec<u8> {
    let (mut out, mut body) = (Vec::new(), Vec::new());
    encode_job(&mut out, &mut body, snap, job, NOW, want);
    out
}

fn direct_tags() -> Vec<u32> {
    (0..128).filter(|t| DIRECT.has(*t)).collect()
}

#[test]
fn rpc_snapshot_covers_the_cases() {
    let snap = varied_snapshot();
    let states: Vec<_> = snap.jobs.values().map(|j| j.status.state).collect();
    use slurm_common::state::JobState as S;
    for s in [
        S::Pending,
        S::Running,
        S::Completed,
        S::Failed,
        S::Cancelled,
    ] {
        assert!(states.contains(&s), "no {s:?} job in {states:?}");
    }
    assert!(snap.jobs.values().any(|j| j.alloc.len() > 1));
    assert!(snap.jobs.values().any(|j| j.hold.is_some()));
    assert!(snap.jobs.values().any(|j| !j.spec.gres.is_empty()));
    assert!(snap.jobs.values().any(|j| !j.spec.wckey.is_empty()));
    // Array task 0 is a record of its own (with task id 0, which must be
    // sent although it is zero); the meta record keeps tasks 1-3.
    let arrays: Vec<_> = snap
        .jobs
        .values()
        .filter_map(|j| j.array.as_ref().map(|a| (a.task, a.pending.clone())))
        .collect();
    assert_eq!(arrays, vec![(None, vec![1, 2, 3]), (Some(0), vec![])]);
}

/// Jobs whose partitions are all hidden are left out when the request
/// asks it, except for root (and SlurmUser); a job also listed in a
/// partition that is not hidden stays.
#[tokio::test]
async fn rpc_hidden_partitions_jobs_are_left_out_when_asked() {
    let snap = varied_snapshot();
    let in_short = |snap: &Snapshot| {
        snap.jobs
            .values()
            .filter(|j| j.partition_name == "short")
            .count()
    };
    assert!(in_short(&snap) > 0);
    let all = select(&snap, &v1::JobFilter::default(), &Hiding::Nothing).len();
    let hiding = Hiding::Partitions { groups: Vec::new() };
    let shown = select(&snap, &v1::JobFilter::default(), &hiding);
    assert_eq!(shown.len(), all - in_short(&snap));
    assert!(shown.iter().all(|j| j.partition_name != "short"));

    let auth = key_auth();
    let svc = service(snap.clone(), auth.clone());
    let hiding = v1::GetJobsRequest {
        hide_hidden: true,
        ..Default::default()
    };
    let user = svc
        .get_jobs(signed(&auth, hiding.clone()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(user.jobs.len(), all - in_short(&snap));
    let root = svc
        .get_jobs(signed_as(&auth, 0, hiding))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(root.jobs.len(), all);
}

/// `-j` with ids that do not exist selects nothing (the caller then gets
/// "Invalid job id specified"), not the whole queue; a missing id among
/// existing ones is skipped.
#[tokio::test]
async fn rpc_unknown_job_ids_select_nothing() {
    let snap = varied_snapshot();
    let first = snap.jobs.keys().next().copied().unwrap();
    let only = |ids: Vec<u32>| v1::JobFilter {
        job_ids: ids,
        ..Default::default()
    };
    assert!(select(&snap, &only(vec![999_999]), &Hiding::Nothing).is_empty());
    let ids: Vec<u32> = select(&snap, &only(vec![999_999, first]), &Hiding::Nothing)
        .iter()
        .map(|j| j.id.get())
        .collect();
    assert_eq!(ids, vec![first]);
    let missing_task = v1::JobFilter {
        array_tasks: vec![v1::ArrayTaskSelector {
            array_job_id: 999_999,
            task_spec: "1".into(),
        }],
        ..Default::default()
    };
    assert!(select(&snap, &missing_task, &Hiding::Nothing).is_empty());

    let auth = key_auth();
    let svc = service(snap, auth.clone());
    let req = v1::GetJobsRequest {
        filter: Some(only(vec![999_999])),
        ..Default::default()
    };
    let err = svc.get_jobs(signed(&auth, req)).await.unwrap_err();
    assert_eq!(ErrorCode::from_status(&err).0, ErrorCode::InvalidJobId);
}

/// An array's id still names the array's records once the record that
/// bore the id has ended and been purged (MinJobAge); ids named twice, or
/// both as an id and by their array, are listed once.
#[test]
fn rpc_an_array_id_names_its_tasks_after_its_own_record_is_purged() {
    let mut env = Env::new();
    env.register_all();
    let mut d = script();
    d.array_spec = "0-3".into();
    let arr = env.submit(d);
    let members = |snap: &Snapshot, f: &v1::JobFilter| -> Vec<(u32, Option<u32>)> {
        select(snap, f, &Hiding::Nothing)
            .iter()
            .map(|j| (j.id.get(), j.array.as_ref().and_then(|a| a.task)))
            .collect()
    };
    let by_id = |ids: Vec<u32>| v1::JobFilter {
        job_ids: ids,
        ..Default::default()
    };
    let all = members(&env.ctl.snapshot(), &by_id(vec![arr]));
    assert_eq!(all.len(), 4, "every task runs on the 4 nodes: {all:?}");
    assert!(all.iter().all(|(_, t)| t.is_some()));
    assert_eq!(all[0].0, arr, "the record bearing the id comes first");
    env.finish(arr, 0, 0);
    env.now += 301;
    env.run(Command::Tick);
    assert!(env.ctl.job(arr).is_none(), "purged after MinJobAge");

    let snap = env.ctl.snapshot();
    let rest = members(&snap, &by_id(vec![arr]));
    assert_eq!(rest, all[1..].to_vec());
    let twice = members(&snap, &by_id(vec![arr, all[2].0, arr]));
    assert_eq!(twice, rest);
    let task = v1::JobFilter {
        array_tasks: vec![v1::ArrayTaskSelector {
            array_job_id: arr,
            task_spec: format!("{}", all[2].1.unwrap()),
        }],
        ..Default::default()
    };
    assert_eq!(members(&snap, &task), vec![all[2]]);
    // An id that was never an array's still names nothing.
    assert!(members(&snap, &by_id(vec![arr + 100])).is_empty());
}

/// The submission options of `core::extras` as the JobInfo fields
/// scontrol and squeue read, written alike on both paths.
#[test]
fn rpc_submission_options_show_in_job_info() {
    let snap = varied_snapshot();
    let job = snap
        .jobs
        .values()
        .find(|j| j.name == "options")
        .expect("the options job");
    let info = convert::job_info(&snap, job, NOW);
    assert_eq!(info.licenses, "lic:2,other:1");
    assert_eq!(info.min_tmp_disk_mb, 1024);
    assert_eq!(info.network, "sn_all");
    assert_eq!(info.tres_per_job, "gres:gpu:2");
    assert_eq!(info.tres_per_task, "gres:gpu:1");
    assert_eq!(info.deadline, NOW + 86_400);
    assert_eq!(info.time_min_minutes, Some(5));
    let want = JobFields::from_tags(&[89, 94]);
    assert_eq!(
        direct_record(&snap, job, want),
        prost_record(&snap, job, want)
    );
}

#[test]
fn rpc_gres_shows_as_tres_per_node() {
    let snap = varied_snapshot();
    let job = snap
        .jobs
        .values()
        .find(|j| j.name == "gpus")
        .expect("the gres job");
    let info = convert::job_info(&snap, job, NOW);
    assert_eq!(info.gres, "gres:gpu:1,gres:gpu:a100:1");
    let want = JobFields::from_tags(&[93]);
    assert_eq!(
        direct_record(&snap, job, want),
        prost_record(&snap, job, want)
    );
    let plain = snap.jobs.values().find(|j| j.name == "held").expect("held");
    assert_eq!(convert::job_info(&snap, plain, NOW).gres, "");
}

#[test]
fn rpc_every_direct_field_alone_encodes_as_prost() {
    let snap = varied_snapshot();
    for tag in direct_tags() {
        let want = JobFields::of(&[tag]);
        for job in snap.jobs.values() {
            assert_eq!(
                direct_record(&snap, job, want),
                prost_record(&snap, job, want),
                "field {tag} of job {}",
                job.id.get()
            );
        }
    }
    // And all of them at once.
    let all = JobFields::of(&direct_tags());
    for job in snap.jobs.values() {
        assert_eq!(
            direct_record(&snap, job, all),
            prost_record(&snap, job, all)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any selection, in or beyond [`DIRECT`], encodes as prost encodes
    /// the built record.
    #[test]
    fn rpc_any_field_selection_encodes_as_prost(
        tags in proptest::collection::vec(0u32..130, 0..20),
        only_direct in any::<bool>(),
    ) {
        let snap = varied_snapshot();
        let tags: Vec<u32> = if only_direct {
            tags.into_iter().filter(|t| DIRECT.has(*t)).collect()
        } else {
            tags
        };
        let want = JobFields::from_tags(&tags);
        for job in snap.jobs.values() {
            prop_assert_eq!(
                direct_record(&snap, job, want),
                prost_record(&snap, job, want)
            );
        }
    }
}

/// A service over `snap`, in control, that accepts credentials of `auth`.
fn service(snap: Snapshot, auth: Arc<dyn Authenticator>) -> Service {
    let (commands, _) = mpsc::channel(1);
    let (link, _) = crate::ha::Link::new(0);
    link.set_in_control(true);
    let (shutdown, _) = watch::channel(false);
    Service::new(Arc::new(Shared {
        snapshot: RwLock::new(Arc::new(snap)),
        commands,
        auth,
        config: RwLock::new(Vec::new()),
        start_time: 0,
        ping: v1::PingReply::default(),
        ha: link,
        shutdown,
        operators: Vec::new(),
        conf_path: "/nonexistent/slurm.conf".into(),
        state_dir: "/nonexistent".into(),
        controllers: 1,
    }))
}

fn key_auth() -> Arc<SlurmKeyAuth> {
    Arc::new(SlurmKeyAuth::from_key(&[3u8; 32]).unwrap())
}

fn signed<T>(auth: &SlurmKeyAuth, body: T) -> Request<T> {
    signed_as(auth, 1000, body)
}

fn signed_as<T>(auth: &SlurmKeyAuth, uid: u32, body: T) -> Request<T> {
    let claims = Claims::new(Uid::new(uid), Gid::new(uid), "login", unix_now(), 600);
    let mut req = Request::new(body);
    slurm_proto::set_auth_credential(req.metadata_mut(), &auth.create(&claims).unwrap()).unwrap();
    req
}

/// Filters as squeue sends them, and some it never sends.
fn requests(snap: &Snapshot) -> Vec<v1::GetJobsRequest> {
    let first = snap.jobs.keys().next().copied().unwrap();
    let filters = vec![
        v1::JobFilter::default(),
        v1::JobFilter {
            user_ids: vec![1001],
            ..Default::default()
        },
        v1::JobFilter {
            names: vec!["short".into(), "held".into()],
            ..Default::default()
        },
        v1::JobFilter {
            partitions: vec!["short".into()],
            ..Default::default()
        },
        v1::JobFilter {
            accounts: vec!["physics".into()],
            ..Default::default()
        },
        v1::JobFilter {
            states: vec![v1::JobState::Pending as i32],
            ..Default::default()
        },
        v1::JobFilter {
            nodelist: "n[1-2]".into(),
            ..Default::default()
        },
        v1::JobFilter {
            job_ids: vec![first + 3, first, 999_999],
            ..Default::default()
        },
        v1::JobFilter {
            array_tasks: vec![v1::ArrayTaskSelector {
                array_job_id: first,
                task_spec: "1".into(),
            }],
            ..Default::default()
        },
        // Selects nothing.
        v1::JobFilter {
            job_ids: vec![999_999],
            ..Default::default()
        },
        v1::JobFilter {
            user_ids: vec![4242],
            ..Default::default()
        },
    ];
    let field_sets: Vec<Vec<u32>> = vec![
        Vec::new(),
        vec![1, 6, 7, 8, 20, 21, 22, 23, 27, 28, 60, 40, 80, 65, 25],
        direct_tags(),
        vec![41, 113],
    ];
    let mut out = Vec::new();
    for filter in &filters {
        for (k, fields) in field_sets.iter().enumerate() {
            out.push(v1::GetJobsRequest {
                filter: Some(filter.clone()),
                changed_since: 0,
                detail: false,
                fields: fields.clone(),
                hide_hidden: k % 2 == 1,
            });
        }
    }
    out.push(v1::GetJobsRequest {
        changed_since: snap.last_update,
        ..Default::default()
    });
    out.push(v1::GetJobsRequest {
        changed_since: snap.last_update - 1,
        ..Default::default()
    });
    out
}

/// Reply bytes or the error's Slurm code and text.
type Outcome = Result<Vec<u8>, (i32, String)>;

fn outcome(r: Result<Vec<u8>, Status>) -> Outcome {
    r.map_err(|s| {
        (
            ErrorCode::from_status(&s).0.number(),
            s.message().to_owned(),
        )
    })
}

#[tokio::test]
async fn rpc_encoded_answer_matches_the_generated_one() {
    let auth = key_auth();
    let svc = service(varied_snapshot(), auth.clone());
    let snap = svc.shared.snapshot();
    for req in requests(&snap) {
        // The clock is read per call: run both within the same second.
        let (direct, generated) = loop {
            let before = unix_now();
            let generated = svc
                .get_jobs(signed(&auth, req.clone()))
                .await
                .map(|r| r.into_inner().encode_to_vec());
            let hiding = if req.hide_hidden {
                Hiding::Partitions { groups: Vec::new() }
            } else {
                Hiding::Nothing
            };
            let direct = answer(Arc::clone(&snap), &req, hiding, unix_now());
            if unix_now() == before {
                break (direct, generated);
            }
        };
        assert_eq!(outcome(direct), outcome(generated), "{req:?}");
    }
}

/// `svc` behind a [`JobsRoute`] on a loopback port: the server's task and
/// a client of it. The generated server behind the route knows no jobs,
/// so only answers that come from the route have any.
async fn serve_route(
    svc: &Service,
    auth: &Arc<SlurmKeyAuth>,
) -> (
    tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    slurm_proto::SlurmControllerClient<tonic::transport::Channel>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let empty = service(Env::new().ctl.snapshot(), auth.clone());
    let route = JobsRoute::new(slurm_proto::SlurmControllerServer::new(empty), svc.clone());
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(route)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let client = slurm_proto::SlurmControllerClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
        .max_decoding_message_size(usize::MAX);
    (server, client)
}

#[tokio::test]
async fn rpc_route_serves_get_jobs_encoded_and_passes_the_rest() {
    let auth = key_auth();
    let svc = service(varied_snapshot(), auth.clone());
    let (server, mut client) = serve_route(&svc, &auth).await;
    let snap = svc.shared.snapshot();
    for req in requests(&snap) {
        let (over_wire, generated) = loop {
            let before = unix_now();
            let over_wire = client
                .get_jobs(signed(&auth, req.clone()))
                .await
                .map(|r| r.into_inner().encode_to_vec());
            let generated = svc
                .get_jobs(signed(&auth, req.clone()))
                .await
                .map(|r| r.into_inner().encode_to_vec());
            if unix_now() == before {
                break (over_wire, generated);
            }
        };
        assert_eq!(outcome(over_wire), outcome(generated), "{req:?}");
    }
    let all = client
        .get_jobs(signed(&auth, v1::GetJobsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.jobs.len(), snap.jobs.len());
    // No credential: refused as the generated service refuses it.
    let err = client
        .get_jobs(Request::new(v1::GetJobsRequest::default()))
        .await
        .unwrap_err();
    assert_eq!(
        ErrorCode::from_status(&err).0,
        ErrorCode::ProtocolAuthentication
    );
    // Other methods reach the generated server.
    let ping = client
        .ping(signed(&auth, v1::PingRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert!(ping.in_control);
    server.abort();
}

#[tokio::test]
async fn rpc_route_keeps_the_request_size_limit() {
    let auth = key_auth();
    let svc = service(varied_snapshot(), auth.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let route = JobsRoute::new(slurm_proto::SlurmControllerServer::new(svc.clone()), svc)
        .max_decoding_message_size(64);
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(route)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let mut client = slurm_proto::SlurmControllerClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let small = v1::GetJobsRequest::default();
    assert!(client.get_jobs(signed(&auth, small)).await.is_ok());
    let big = v1::GetJobsRequest {
        filter: Some(v1::JobFilter {
            job_ids: (1..100).collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = client.get_jobs(signed(&auth, big)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::OutOfRange, "{err:?}");
    server.abort();
}

/// `n` held jobs of two users, so that a StreamJobs answer has several
/// parts.
fn many_jobs_snapshot(n: usize) -> Snapshot {
    let mut env = Env::new();
    for i in 0..n {
        let mut d = script();
        d.hold = true;
        d.name = format!("job{i}");
        if i % 3 == 0 {
            d.user_id = 1001;
            d.group_id = 1001;
            d.user_name = "user1001".into();
            env.submit_as(Caller::ROOT, d);
        } else {
            env.submit(d);
        }
    }
    env.ctl.snapshot()
}

#[test]
fn rpc_parts_cut_the_selection_in_order() {
    let snap = Arc::new(many_jobs_snapshot(PART_JOBS * 2 + 7));
    let all = v1::GetJobsRequest::default();
    let parts = prepare_parts(Arc::clone(&snap), &all, Hiding::Nothing, NOW)
        .unwrap()
        .collect_all();
    let ranges: Vec<(usize, usize)> = parts
        .iter()
        .map(|p| match p {
            JobsAnswer::Part { from, to, .. } => (*from, *to),
            other => panic!("not a part: {other:?}"),
        })
        .collect();
    assert_eq!(
        ranges,
        vec![
            (0, PART_JOBS),
            (PART_JOBS, PART_JOBS * 2),
            (PART_JOBS * 2, PART_JOBS * 2 + 7)
        ]
    );
    // Nothing selected: still one (empty) part, which carries last_update.
    let none = v1::GetJobsRequest {
        filter: Some(v1::JobFilter {
            user_ids: vec![4242],
            ..Default::default()
        }),
        ..Default::default()
    };
    let parts = prepare_parts(Arc::clone(&snap), &none, Hiding::Nothing, NOW)
        .unwrap()
        .collect_all();
    assert_eq!(parts.len(), 1);
    let mut bytes = Vec::new();
    parts[0].encode(&mut bytes);
    let reply = v1::GetJobsReply::decode(&bytes[..]).unwrap();
    assert!(reply.jobs.is_empty());
    assert_eq!(reply.last_update, snap.last_update);
    // Unchanged: one message saying so.
    let unchanged = v1::GetJobsRequest {
        changed_since: snap.last_update,
        ..Default::default()
    };
    let parts = prepare_parts(Arc::clone(&snap), &unchanged, Hiding::Nothing, NOW)
        .unwrap()
        .collect_all();
    assert!(matches!(parts[..], [JobsAnswer::Unchanged { .. }]));
    // Named ids that do not exist: the error, before any part.
    let missing = v1::GetJobsRequest {
        filter: Some(v1::JobFilter {
            job_ids: vec![999_999],
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = prepare_parts(snap, &missing, Hiding::Nothing, NOW).unwrap_err();
    assert_eq!(ErrorCode::from_status(&err).0, ErrorCode::InvalidJobId);
}

/// Every message of a StreamJobs call, encoded, or the error.
async fn streamed(
    client: &mut slurm_proto::SlurmControllerClient<tonic::transport::Channel>,
    req: Request<v1::GetJobsRequest>,
) -> Result<Vec<Vec<u8>>, Status> {
    let mut stream = client.stream_jobs(req).await?.into_inner();
    let mut parts = Vec::new();
    while let Some(part) = stream.message().await? {
        parts.push(part.encode_to_vec());
    }
    Ok(parts)
}

#[tokio::test]
async fn rpc_route_streams_the_generated_parts() {
    use tonic::codegen::tokio_stream::StreamExt;
    let auth = key_auth();
    for snap in [varied_snapshot(), many_jobs_snapshot(PART_JOBS * 3 + 1)] {
        let svc = service(snap, auth.clone());
        let (server, mut client) = serve_route(&svc, &auth).await;
        let snap = svc.shared.snapshot();
        for req in requests(&snap) {
            let (over_wire, generated, whole) = loop {
                let before = unix_now();
                let over_wire = streamed(&mut client, signed(&auth, req.clone())).await;
                let generated = match svc.stream_jobs(signed(&auth, req.clone())).await {
                    Ok(r) => {
                        let parts: Vec<_> = r.into_inner().collect().await;
                        parts
                            .into_iter()
                            .map(|p| p.map(|p| p.encode_to_vec()))
                            .collect::<Result<Vec<_>, Status>>()
                    }
                    Err(e) => Err(e),
                };
                let whole = svc.get_jobs(signed(&auth, req.clone())).await;
                if unix_now() == before {
                    break (over_wire, generated, whole);
                }
            };
            let show = |r: &Result<Vec<Vec<u8>>, Status>| {
                r.clone()
                    .map_err(|s| (ErrorCode::from_status(&s).0, s.message().to_owned()))
            };
            assert_eq!(show(&over_wire), show(&generated), "{req:?}");
            // The parts together are GetJobs' answer.
            match (over_wire, whole) {
                (Ok(parts), Ok(whole)) => {
                    let whole = whole.into_inner();
                    let want_parts = if whole.unchanged {
                        1
                    } else {
                        whole.jobs.len().div_ceil(PART_JOBS).max(1)
                    };
                    assert_eq!(parts.len(), want_parts, "{req:?}");
                    let mut jobs = Vec::new();
                    for p in &parts {
                        let p = v1::GetJobsReply::decode(&p[..]).unwrap();
                        assert_eq!(p.last_update, whole.last_update);
                        assert_eq!(p.unchanged, whole.unchanged);
                        jobs.extend(p.jobs);
                    }
                    assert_eq!(jobs, whole.jobs, "{req:?}");
                }
                (Err(a), Err(b)) => assert_eq!(a.message(), b.message()),
                (a, b) => panic!("{req:?}: streamed {a:?}, whole {b:?}"),
            }
        }
        // No credential: refused as the generated service refuses it.
        let err = streamed(&mut client, Request::new(v1::GetJobsRequest::default()))
            .await
            .unwrap_err();
        assert_eq!(
            ErrorCode::from_status(&err).0,
            ErrorCode::ProtocolAuthentication
        );
        server.abort();
    }
}

#[test]
fn rpc_qos_reservation_and_wckey_filters_select_only_matching_jobs() {
    let snap = varied_snapshot();
    let names = |f: v1::JobFilter| -> Vec<String> {
        let mut v: Vec<String> = select(&snap, &f, &Hiding::Nothing)
            .iter()
            .map(|j| j.name.to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(v1::JobFilter {
            qos: vec!["normal".into()],
            ..Default::default()
        }),
        ["big0", "big1", "big2", "big3"]
    );
    // Filters on what no job has select nothing, never everything.
    for f in [
        v1::JobFilter {
            qos: vec!["high".into()],
            ..Default::default()
        },
        v1::JobFilter {
            reservations: vec!["maint".into()],
            ..Default::default()
        },
        v1::JobFilter {
            wckeys: vec!["other".into()],
            ..Default::default()
        },
    ] {
        assert_eq!(names(f.clone()), Vec::<String>::new(), "{f:?}");
    }
    // A default key (stored as `*proj`) matches `proj` and `*proj`.
    for key in ["proj", "*proj"] {
        assert_eq!(
            names(v1::JobFilter {
                wckeys: vec![key.into()],
                ..Default::default()
            }),
            ["options"],
            "{key}"
        );
    }
}

/// A waiting job shows the nodes its tasks need on the partition's largest
/// node (2 CPUs here), never more than a requested maximum, as Slurm 22.05
/// does; its TRES still counts the nodes it asked for.
#[test]
fn rpc_a_pending_job_shows_the_nodes_its_tasks_need() {
    let mut env = Env::with_conf(CONF);
    /// name, ntasks, min, max, cpus/task, ntasks/node, overcommit, shown
    type Case = (
        &'static str,
        Option<u32>,
        Option<u32>,
        Option<u32>,
        u32,
        Option<u32>,
        bool,
        u32,
    );
    let cases: [Case; 8] = [
        ("n1", Some(1), None, None, 1, None, false, 1),
        ("n3", Some(3), None, None, 1, None, false, 2),
        ("n5", Some(5), None, None, 1, None, false, 3),
        ("c2n3", Some(3), None, None, 2, None, false, 3),
        // squeue counts what the tasks need past -N's maximum; scontrol
        // shows the maximum (`NumNodes=2-2`).
        ("n9max2", Some(9), Some(2), Some(2), 1, None, false, 5),
        ("n5range", Some(5), Some(1), Some(4), 1, None, false, 3),
        ("ntpn1", Some(2), None, None, 1, Some(1), false, 2),
        ("over", Some(4), None, None, 1, None, true, 1),
    ];
    for (name, ntasks, min, max, cpt, ntpn, over, _) in cases {
        let mut d = script();
        d.name = name.into();
        d.hold = true;
        d.ntasks = ntasks;
        d.min_nodes = min;
        d.max_nodes = max;
        d.cpus_per_task = Some(cpt);
        d.ntasks_per_node = ntpn;
        d.overcommit = over;
        env.submit(d);
    }
    let snap = env.ctl.snapshot();
    for (name, .., shown) in cases {
        let job = snap.jobs.values().find(|j| &*j.name == name).unwrap();
        let info = convert::job_info(&snap, job, NOW);
        assert_eq!(info.num_nodes, shown, "{name}");
        let want = JobFields::from_tags(&[80]);
        assert_eq!(
            direct_record(&snap, job, want),
            prost_record(&snap, job, want)
        );
    }
    let n5 = snap.jobs.values().find(|j| &*j.name == "n5").unwrap();
    let tres = convert::job_info(&snap, n5, NOW)
        .tres_requested
        .unwrap_or_default();
    assert!(
        tres.items
            .iter()
            .any(|t| t.r#type == "node" && t.count == 1),
        "{tres:?}"
    );
}

/// A job waiting for its `--begin` shows that time as EligibleTime and no
/// AccrueTime until it has come, as Slurm 22.05 shows it.
#[test]
fn rpc_a_job_waiting_for_its_begin_time_accrues_nothing_yet() {
    let mut env = Env::with_conf(CONF);
    let begin = env.now + 600;
    let id = env.submit(v1::JobDescription {
        begin_time: begin,
        ..script()
    });
    let snap = env.ctl.snapshot();
    let job = snap.jobs.get(&id).unwrap();
    let before = convert::job_info(&snap, job, begin - 1);
    assert_eq!((before.eligible_time, before.accrue_time), (begin, 0));
    let after = convert::job_info(&snap, job, begin);
    assert_eq!((after.eligible_time, after.accrue_time), (begin, begin));
}

/// A waiting job's counts as Slurm 22.05 shows them on nodes of 2 CPUs:
/// with `--ntasks-per-node`, the nodes its tasks fill whole (`-n 3` on 2
/// a node: 1 node, `-n 5`: 2), whatever the CPUs per task; without it,
/// the nodes its tasks' CPUs need, even past `-N`'s maximum (which
/// `scontrol` applies); an overcommitting job counts a CPU a node; a job
/// of one task a single task's CPUs per node.
#[test]
fn rpc_waiting_counts_show_as_in_slurm() {
    let mut env = Env::with_conf(CONF);
    let mut submit =
        |ntasks: u32, per_node: Option<u32>, cpt: u32, max: Option<u32>, over: bool| {
            env.submit(v1::JobDescription {
                hold: true,
                ntasks: Some(ntasks),
                ntasks_per_node: per_node,
                cpus_per_task: Some(cpt),
                max_nodes: max,
                min_nodes: max.map(|_| 1),
                overcommit: over,
                ..script()
            })
        };
    // Nodes, CPUs, MinCPUsNode.
    let cases = [
        (submit(3, Some(2), 1, None, false), (1, 3, 2)),
        (submit(5, Some(2), 1, None, false), (2, 5, 2)),
        (submit(3, Some(2), 2, None, false), (1, 6, 4)),
        (submit(1, Some(2), 1, None, false), (1, 1, 1)),
        (submit(4, Some(2), 1, None, true), (2, 1, 1)),
        (submit(3, Some(2), 2, None, true), (1, 1, 2)),
        (submit(5, None, 1, Some(1), false), (3, 5, 1)),
    ];
    let snap = env.ctl.snapshot();
    for (id, (nodes, cpus, per_node)) in cases {
        let info = convert::job_info(&snap, snap.jobs.get(&id).unwrap(), NOW);
        assert_eq!(
            (info.num_nodes, info.num_cpus, info.min_cpus_per_node),
            (nodes, cpus, per_node),
            "job {id}"
        );
    }
}

/// MinCPUsNode is the larger of `--mincpus` and the CPUs of
/// `--ntasks-per-node` tasks; `--mem=0` counts whole nodes' memory in the
/// TRES of a job not yet placed. Both as Slurm 22.05 shows them.
#[test]
fn rpc_min_cpus_per_node_and_whole_node_memory_show_as_in_slurm() {
    let mut env = Env::with_conf(CONF);
    let mut submit = |ntpn: Option<u32>, cpt: u32, mincpus: Option<u32>, mem: Option<u64>| {
        env.submit(v1::JobDescription {
            hold: true,
            ntasks_per_node: ntpn,
            cpus_per_task: Some(cpt),
            min_cpus_per_node: mincpus,
            memory: mem.map(v1::job_description::Memory::MemPerNodeMb),
            ..script()
        })
    };
    let cases = [
        (submit(None, 2, None, None), 2),
        (submit(Some(2), 1, None, None), 2),
        (submit(Some(2), 2, None, None), 4),
        (submit(None, 1, Some(3), None), 3),
        (submit(None, 2, Some(1), None), 2),
        (submit(None, 1, None, Some(0)), 1),
    ];
    let snap = env.ctl.snapshot();
    for (id, min_cpus) in cases {
        let info = convert::job_info(&snap, snap.jobs.get(&id).unwrap(), NOW);
        assert_eq!(info.min_cpus_per_node, min_cpus, "job {id}");
    }
    let whole = convert::job_info(&snap, snap.jobs.get(&cases[5].0).unwrap(), NOW);
    let tres = whole.tres_requested.unwrap_or_default();
    assert!(
        tres.items
            .iter()
            .any(|t| t.r#type == "mem" && t.count == 4000),
        "{tres:?}"
    );
}
