//! The renderers behind `squeue`, `sinfo` and `scontrol show`, fed the
//! reference cluster's state (4 nodes n[1-4] of 2 CPUs and 4000 MB,
//! partition `debug`) and compared byte for byte with what Slurm 22.05.8
//! printed for that state.
//!
//! The busy scenario: jobs 2-4 running (2 and 3 on n1, 4 on n2), 5 pending
//! for Resources, 6 and 7 for Priority, 8 held, 9 waiting on a dependency.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use slurm_client_tools::format::{self, scontrol, sinfo, squeue, Ctx, Zone};
use slurm_common::time::FixedZone;
use slurm_proto::v1::{
    self, over_subscribe, time_limit, ConfigEntry, GetConfigReply, JobInfo, NodeInfo,
    OverSubscribe, PartitionInfo, TimeLimit, Tres, TresList,
};

/// 2026-11-21T07:01:01Z, when the reference jobs were submitted.
const T0: i64 = 1_795_244_461;

fn ctx(now: i64) -> Ctx {
    Ctx::new(now, Zone::Fixed(FixedZone::UTC))
}

fn golden_dir() -> PathBuf {
    match std::env::var_os("SLURM_GOLDEN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/reference/real-slurm/golden"),
    }
}

/// A golden's stdout without the `# exit=N` line the capture put first.
fn golden(name: &str) -> String {
    let path = golden_dir().join(format!("{name}.out"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (set SLURM_GOLDEN_DIR)", path.display()));
    match text.strip_prefix("# exit=") {
        Some(rest) => rest
            .split_once('\n')
            .map(|(_, body)| body.to_owned())
            .unwrap(),
        None => text,
    }
}

fn assert_text(name: &str, got: &str) {
    let want = golden(name);
    if got != want {
        panic!("{name} differs\n--- want\n{want}\n--- got\n{got}");
    }
}

fn tres(items: &[(&str, u64)]) -> Option<TresList> {
    Some(TresList {
        items: items
            .iter()
            .map(|(t, c)| Tres {
                r#type: (*t).to_owned(),
                name: String::new(),
                count: *c,
            })
            .collect(),
    })
}

fn unlimited() -> Option<TimeLimit> {
    Some(TimeLimit {
        limit: Some(time_limit::Limit::Unlimited(true)),
    })
}

fn base_job(id: u32, name: &str, priority: u32) -> JobInfo {
    JobInfo {
        job_id: id,
        name: name.to_owned(),
        user_id: 0,
        user_name: "root".into(),
        group_id: 0,
        group_name: "root".into(),
        state: v1::JobState::Pending as i32,
        state_reason: "None".into(),
        priority,
        account: "root".into(),
        qos: "normal".into(),
        requeue: true,
        batch: true,
        exit_code: Some(v1::ExitCode::default()),
        time_limit: unlimited(),
        submit_time: T0,
        last_sched_eval: T0,
        partition: "debug".into(),
        alloc_node: "localhost".into(),
        alloc_sid: 2151,
        num_nodes: 1,
        num_cpus: 1,
        num_tasks: 1,
        cpus_per_task: 1,
        min_cpus_per_node: 1,
        tres_requested: tres(&[("cpu", 1), ("mem", 4000), ("node", 1), ("billing", 1)]),
        work_dir: "/tmp/slurm-ref".into(),
        scheduled_by: "Main".into(),
        ..JobInfo::default()
    }
}

fn running(id: u32, node: &str, priority: u32) -> JobInfo {
    JobInfo {
        state: v1::JobState::Running as i32,
        nodes: node.into(),
        batch_host: node.into(),
        run_time_secs: 2,
        eligible_time: T0,
        accrue_time: T0,
        start_time: T0 + 3,
        last_sched_eval: T0 + 3,
        tres_allocated: tres(&[("cpu", 1), ("node", 1), ("billing", 1)]),
        ..base_job(id, "wrap", priority)
    }
}

fn pending(id: u32, name: &str, priority: u32, reason: &str) -> JobInfo {
    JobInfo {
        state_reason: reason.into(),
        ..base_job(id, name, priority)
    }
}

/// The busy reference queue, in job id order as the controller sends it.
fn busy_jobs() -> Vec<JobInfo> {
    let mut j5 = pending(5, "wrap", 4_294_901_755, "Resources");
    j5.num_nodes = 3;
    j5.eligible_time = T0;
    let mut j6 = pending(6, "bigjob", 4_294_901_754, "Priority");
    j6.num_nodes = 4;
    j6.max_nodes = 4;
    j6.num_cpus = 4;
    j6.num_tasks = 4;
    j6.sharing = v1::NodeSharing::Exclusive as i32;
    j6.eligible_time = T0;
    j6.accrue_time = T0;
    j6.last_sched_eval = T0 + 3;
    j6.tres_requested = tres(&[("cpu", 4), ("mem", 16000), ("node", 4), ("billing", 4)]);
    let mut j7 = pending(7, "waiter", 4_294_901_753, "Priority");
    j7.eligible_time = T0;
    let j8 = pending(8, "heldjob", 0, "JobHeldUser");
    let mut j9 = pending(9, "depjob", 4_294_901_752, "Dependency");
    j9.dependency = "afterok:2(unfulfilled)".into();
    vec![
        running(2, "n1", 4_294_901_758),
        running(3, "n1", 4_294_901_757),
        running(4, "n2", 4_294_901_756),
        j5,
        j6,
        j7,
        j8,
        j9,
    ]
}

fn squeue_text(jobs: &[JobInfo], fmt: &str, sort: &str, date: bool, now: i64) -> String {
    let mut refs: Vec<&JobInfo> = jobs.iter().collect();
    squeue::sort_jobs(&mut refs, &squeue::parse_sort(sort).unwrap());
    let items = squeue::parse_format(fmt).unwrap();
    squeue::render(&refs, &items, true, date, &ctx(now))
}

#[test]
fn format_squeue_default_view() {
    let jobs = busy_jobs();
    let out = squeue_text(
        &jobs,
        squeue::DEFAULT_FORMAT,
        squeue::DEFAULT_SORT,
        false,
        T0 + 5,
    );
    assert_text("squeue_jobs", &out);
}

#[test]
fn format_squeue_long_view_has_date_line() {
    let jobs = busy_jobs();
    let out = squeue_text(
        &jobs,
        squeue::LONG_FORMAT,
        squeue::DEFAULT_SORT,
        true,
        T0 + 5,
    );
    assert_text("squeue_l", &out);
}

#[test]
fn format_squeue_custom_format() {
    let jobs = busy_jobs();
    let fmt = "%.10i %.9P %.20j %.8u %.2t %.10M %.6D %R";
    assert_text(
        "squeue_fmt_jobs",
        &squeue_text(&jobs, fmt, squeue::DEFAULT_SORT, false, T0 + 5),
    );
    assert_text(
        "squeue_fmt_empty",
        &squeue_text(&[], fmt, squeue::DEFAULT_SORT, false, T0 + 5),
    );
}

#[test]
fn format_squeue_state_filter_pending() {
    let jobs = busy_jobs();
    let filter = squeue::parse_states("PD").unwrap();
    let kept: Vec<JobInfo> = jobs.into_iter().filter(|j| filter.admits(j)).collect();
    let out = squeue_text(
        &kept,
        squeue::DEFAULT_FORMAT,
        squeue::DEFAULT_SORT,
        false,
        T0 + 5,
    );
    assert_text("squeue_t_pd", &out);
}

#[test]
fn format_squeue_start_view() {
    let jobs: Vec<JobInfo> = busy_jobs()
        .into_iter()
        .filter(|j| j.state == v1::JobState::Pending as i32)
        .collect();
    let out = squeue_text(
        &jobs,
        squeue::START_FORMAT,
        squeue::START_SORT,
        false,
        T0 + 5,
    );
    assert_text("squeue_start", &out);
}

#[test]
fn format_squeue_completing_sorts_before_pending() {
    // squeue_after_cancel: job 2 cancelled and completing, 8 held by root.
    let mut jobs = busy_jobs();
    jobs[0].state = v1::JobState::Cancelled as i32;
    jobs[0].state_flags = vec![v1::JobStateFlag::Completing as i32];
    for j in &mut jobs[1..3] {
        j.run_time_secs = 3;
    }
    jobs[6].state_reason = "JobHeldAdmin".into();
    let out = squeue_text(
        &jobs,
        squeue::DEFAULT_FORMAT,
        squeue::DEFAULT_SORT,
        false,
        T0 + 6,
    );
    assert_text("squeue_after_cancel", &out);
}

#[test]
fn format_squeue_array_master_and_tasks() {
    let mut master = pending(15, "arrayjob", 4_294_901_745, "None");
    master.array_job_id = Some(15);
    master.array_task_spec = "0-3%2".into();
    master.array_task_throttle = 2;
    let out = squeue_text(
        std::slice::from_ref(&master),
        squeue::DEFAULT_FORMAT,
        squeue::DEFAULT_SORT,
        false,
        T0,
    );
    assert_text("squeue_array", &out);
    let tasks: Vec<JobInfo> = (0..4)
        .map(|t| {
            // What `-r` makes of one pending record: its tasks, one id.
            let mut j = pending(15, "arrayjob", 4_294_901_745, "None");
            j.array_job_id = Some(15);
            j.array_task_id = Some(t);
            j
        })
        .collect();
    let out = squeue_text(
        &tasks,
        squeue::DEFAULT_FORMAT,
        squeue::DEFAULT_SORT,
        false,
        T0,
    );
    assert_text("squeue_array_r", &out);
}

#[test]
fn format_squeue_priority_column() {
    let mut jobs = vec![
        running(30, "n[1-4]", 11_062),
        pending(31, "small", 11_018, "None"),
        pending(32, "wide", 11_075, "None"),
        pending(33, "nice100", 10_918, "Priority"),
    ];
    jobs[0].name = "filler".into();
    let out = squeue_text(
        &jobs,
        "%.8i %.10Q %.8j %.2t %R",
        squeue::DEFAULT_SORT,
        false,
        T0,
    );
    assert_text("mf_squeue_Q", &out);
}

#[test]
fn format_scontrol_show_job_goldens() {
    let jobs = busy_jobs();
    let c = ctx(T0 + 5);
    let by_id = |id: u32| jobs.iter().find(|j| j.job_id == id).unwrap().clone();
    assert_text(
        "scontrol_show_job_running",
        &scontrol::show_jobs(&[by_id(2)], false, &c),
    );
    assert_text(
        "scontrol_show_job_oneliner",
        &scontrol::show_jobs(&[by_id(2)], true, &c),
    );
    assert_text(
        "scontrol_show_job_held",
        &scontrol::show_jobs(&[by_id(8)], false, &c),
    );
    assert_text(
        "scontrol_show_job_dependency",
        &scontrol::show_jobs(&[by_id(9)], false, &c),
    );
    assert_text(
        "scontrol_show_job_resources",
        &scontrol::show_jobs(&[by_id(6)], false, &c),
    );
}

#[test]
fn format_scontrol_show_job_completed_and_array() {
    let mut done = running(14, "n1", 4_294_901_746);
    done.name = "envjob.sh".into();
    done.state = v1::JobState::Completed as i32;
    done.run_time_secs = 0;
    done.submit_time = T0 + 16;
    done.eligible_time = T0 + 16;
    done.accrue_time = T0 + 16;
    done.start_time = T0 + 18;
    done.end_time = T0 + 18;
    done.last_sched_eval = T0 + 18;
    done.command = "/tmp/slurm-ref/envjob.sh".into();
    assert_text(
        "scontrol_show_job_completed",
        &scontrol::show_jobs(&[done], false, &ctx(T0 + 30)),
    );

    let mut master = pending(15, "arrayjob.sh", 4_294_901_745, "None");
    master.array_job_id = Some(15);
    master.array_task_spec = "0-3%2".into();
    master.array_task_throttle = 2;
    master.submit_time = T0 + 22;
    master.last_sched_eval = T0 + 22;
    master.command = "/tmp/slurm-ref/arrayjob.sh".into();
    assert_text(
        "scontrol_show_job_array",
        &scontrol::show_jobs(&[master], false, &ctx(T0 + 30)),
    );
}

fn node(name: &str, port: u32, alloc: u32) -> NodeInfo {
    let state = match alloc {
        0 => v1::NodeState::Idle,
        2 => v1::NodeState::Allocated,
        _ => v1::NodeState::Mixed,
    };
    NodeInfo {
        name: name.into(),
        node_addr: "127.0.0.1".into(),
        node_hostname: "vm".into(),
        port,
        version: "22.05.8".into(),
        arch: "x86_64".into(),
        os: "Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0".into(),
        state: state as i32,
        cpus: 2,
        cpus_effective: 2,
        boards: 1,
        sockets: 1,
        cores_per_socket: 2,
        threads_per_core: 1,
        real_memory_mb: 4000,
        weight: 1,
        cpus_allocated: alloc,
        free_memory_mb: Some(22_719),
        cpu_load_hundredths: Some(226),
        tres_configured: tres(&[("cpu", 2), ("mem", 4000), ("billing", 2)]),
        tres_allocated: if alloc == 0 {
            tres(&[])
        } else {
            tres(&[("cpu", u64::from(alloc))])
        },
        partitions: vec!["debug".into()],
        boot_time: 1_795_242_561,
        slurmd_start_time: T0,
        last_busy_time: T0,
        ..NodeInfo::default()
    }
}

fn nodes(allocs: [u32; 4]) -> Vec<NodeInfo> {
    (0..4)
        .map(|i| node(&format!("n{}", i + 1), 17001 + i as u32, allocs[i]))
        .collect()
}

fn debug_partition() -> PartitionInfo {
    PartitionInfo {
        name: "debug".into(),
        state: v1::PartitionState::Up as i32,
        is_default: true,
        nodes: "n[1-4]".into(),
        total_nodes: 4,
        total_cpus: 8,
        max_time: unlimited(),
        priority_job_factor: 1,
        priority_tier: 1,
        oversubscribe: Some(OverSubscribe {
            mode: over_subscribe::Mode::No as i32,
            max_share: 0,
        }),
        preempt_mode: "OFF".into(),
        tres: tres(&[("cpu", 8), ("mem", 16000), ("node", 4), ("billing", 8)]),
        ..PartitionInfo::default()
    }
}

#[test]
fn format_scontrol_show_node_and_partition() {
    let c = ctx(T0 + 5);
    let idle = nodes([0, 0, 0, 0]);
    assert_text(
        "scontrol_show_node_n1",
        &scontrol::show_nodes(&idle[..1], false, &c),
    );
    assert_text(
        "scontrol_show_node",
        &scontrol::show_nodes(&idle, false, &c),
    );
    let busy = nodes([2, 1, 0, 0]);
    assert_text(
        "scontrol_show_node_n1_alloc",
        &scontrol::show_nodes(&busy[..1], false, &c),
    );
    assert_text(
        "scontrol_show_partition",
        &scontrol::show_partitions(&[debug_partition()], false),
    );
}

#[test]
fn format_scontrol_show_config_layout() {
    let reply = GetConfigReply {
        entries: vec![
            ConfigEntry {
                key: "AccountingStorageBackupHost".into(),
                value: "(null)".into(),
            },
            ConfigEntry {
                key: "TreeWidth".into(),
                value: "50".into(),
            },
            ConfigEntry {
                key: String::new(),
                value: "Cgroup Support Configuration:".into(),
            },
            ConfigEntry {
                key: "AllowedRAMSpace".into(),
                value: "100.0%".into(),
            },
        ],
        last_update: T0,
    };
    let out = scontrol::show_config(&reply, &ctx(T0));
    assert_eq!(
        out,
        "Configuration data as of 2026-11-21T07:01:01\n\
         AccountingStorageBackupHost = (null)\n\
         TreeWidth               = 50\n\
         \n\
         Cgroup Support Configuration:\n\
         AllowedRAMSpace         = 100.0%\n"
    );
    // Every "Key = Value" line of the real output has this shape.
    let full = golden("scontrol_show_config_full");
    for line in full.lines().skip(1).filter(|l| l.contains(" = ")) {
        let (key, value) = line.split_once(" = ").unwrap();
        let entry = GetConfigReply {
            entries: vec![ConfigEntry {
                key: key.trim_end().into(),
                value: value.into(),
            }],
            last_update: T0,
        };
        let text = scontrol::show_config(&entry, &ctx(T0));
        assert_eq!(text.lines().nth(1), Some(line), "{line}");
    }
}

fn sinfo_text(view: sinfo::View, fmt: &str, alloc: [u32; 4], now: i64) -> String {
    let items = sinfo::parse_format(fmt).unwrap();
    sinfo::render(&[debug_partition()], &nodes(alloc), &items, view, &ctx(now))
}

#[test]
fn format_sinfo_goldens() {
    let plain = sinfo::View {
        header: true,
        ..sinfo::View::default()
    };
    let node_long = sinfo::View {
        node_oriented: true,
        header: true,
        date_line: true,
        ..sinfo::View::default()
    };
    assert_text(
        "sinfo",
        &sinfo_text(plain, sinfo::DEFAULT_FORMAT, [0; 4], T0),
    );
    assert_text(
        "sinfo_busy",
        &sinfo_text(plain, sinfo::DEFAULT_FORMAT, [2, 1, 0, 0], T0 + 5),
    );
    assert_text(
        "sinfo_s",
        &sinfo_text(plain, sinfo::SUMMARY_FORMAT, [0; 4], T0),
    );
    assert_text(
        "sinfo_N_l",
        &sinfo_text(node_long, sinfo::NODE_LONG_FORMAT, [0; 4], T0),
    );
    assert_text(
        "sinfo_N_l_busy",
        &sinfo_text(node_long, sinfo::NODE_LONG_FORMAT, [2, 1, 0, 0], T0 + 5),
    );
}

#[test]
fn format_sinfo_reasons_lists_only_unavailable_nodes() {
    let mut all = nodes([0; 4]);
    all[2].state = v1::NodeState::Idle as i32;
    all[2].state_flags = vec![v1::NodeStateFlag::Drain as i32];
    all[2].reason = "maint".into();
    all[2].reason_user = "root".into();
    all[2].reason_time = T0;
    let items = sinfo::parse_format(sinfo::REASON_FORMAT).unwrap();
    let view = sinfo::View {
        reasons_only: true,
        header: true,
        ..sinfo::View::default()
    };
    let out = sinfo::render(&[debug_partition()], &all, &items, view, &ctx(T0));
    assert_eq!(
        out,
        "REASON               USER      TIMESTAMP           NODELIST\n\
         maint                root      2026-11-21T07:01:01 n3\n"
    );
}

#[test]
fn format_rendering_ten_thousand_jobs_is_fast() {
    let template = busy_jobs();
    let jobs: Vec<JobInfo> = (0..10_000u32)
        .map(|i| {
            let mut j = template[(i % 8) as usize].clone();
            j.job_id = 100 + i;
            j
        })
        .collect();
    let items = squeue::parse_format(squeue::DEFAULT_FORMAT).unwrap();
    let keys = squeue::parse_sort(squeue::DEFAULT_SORT).unwrap();
    let c = ctx(T0);
    let run = || {
        let mut refs: Vec<&JobInfo> = jobs.iter().collect();
        squeue::sort_jobs(&mut refs, &keys);
        squeue::render(&refs, &items, true, false, &c)
    };
    // Best of ten, so a busy machine does not fail the test; the previous
    // output is freed outside the timed part.
    let mut took = std::time::Duration::MAX;
    let mut text = String::new();
    for _ in 0..10 {
        drop(std::mem::take(&mut text));
        let start = std::time::Instant::now();
        text = run();
        took = took.min(start.elapsed());
    }
    assert_eq!(text.lines().count(), 10_001);
    // The 5 ms target is for optimised builds; debug builds get room.
    let limit = if cfg!(debug_assertions) { 250 } else { 5 };
    assert!(
        took.as_millis() < limit,
        "10,000 jobs took {took:?} (limit {limit} ms)"
    );
}

/// The objects of a JSON array member `key` at the given indentation, as
/// text blocks, from a document in Slurm's layout.
fn json_blocks(doc: &str, indent: usize) -> Vec<String> {
    let open = format!("{}{{", " ".repeat(indent));
    let close = format!("{}}}", " ".repeat(indent));
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if line == open {
            current = Some(String::new());
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line);
            block.push('\n');
        }
        if line.starts_with(&close) && line.trim_end_matches(',') == close {
            if let Some(block) = current.take() {
                blocks.push(block);
            }
        }
    }
    blocks
}

#[test]
fn format_squeue_json_matches_slurm_layout() {
    let mut jobs = busy_jobs();
    for j in &mut jobs {
        j.cluster = "ref".into();
        // Group names are looked up (below), as squeue does.
        j.group_name.clear();
    }
    let refs: Vec<&JobInfo> = jobs.iter().collect();
    // A running job without a time limit ends a year after its start.
    let root = |gid: u32| (gid == 0).then(|| "root".to_owned());
    let got = format::json::jobs(&refs, &ctx(T0 + 5), root);
    let want = golden("squeue_json");
    // The document's head is identical.
    let head = |s: &str| s.lines().take(18).collect::<Vec<_>>().join("\n");
    assert_eq!(head(&got), head(&want));
    assert!(got.ends_with("\n  ]\n}\n"));
    let got_blocks = json_blocks(&got, 4);
    let want_blocks = json_blocks(&want, 4);
    assert_eq!(got_blocks.len(), 8);
    // Slurm's job 2 is running on n1: every line equal but the association
    // id, which the controller does not report.
    let want2 = want_blocks
        .iter()
        .find(|b| b.contains("\"job_id\": 2,"))
        .unwrap()
        .replace("\"association_id\": 2,", "\"association_id\": 0,");
    let got2 = got_blocks
        .iter()
        .find(|b| b.contains("\"job_id\": 2,"))
        .unwrap();
    assert_eq!(got2, &want2);
    // The other running one and the waiting ones the fixture has as Slurm
    // had them: flags, end time, group name, output paths, max_nodes.
    for id in [4, 6, 8, 9] {
        let key = format!("\"job_id\": {id},");
        let want = want_blocks
            .iter()
            .find(|b| b.contains(&key))
            .unwrap()
            .replace("\"association_id\": 2,", "\"association_id\": 0,");
        let got = got_blocks.iter().find(|b| b.contains(&key)).unwrap();
        assert_eq!(got, &want, "job {id}");
    }
}

#[test]
fn format_sinfo_json_matches_slurm_layout() {
    let all = nodes([2, 0, 0, 0]);
    let got = format::json::nodes(&all, &ctx(T0 + 5));
    let want = golden("sinfo_json");
    let got_blocks = json_blocks(&got, 4);
    let want_blocks = json_blocks(&want, 4);
    assert_eq!(got_blocks.len(), want_blocks.len());
    assert_eq!(got_blocks[0], want_blocks[0]);
    let head = |s: &str| s.lines().take(18).collect::<Vec<_>>().join("\n");
    assert_eq!(head(&got), head(&want));
}

#[test]
fn format_squeue_long_names_and_odd_widths() {
    let jobs = busy_jobs();
    let refs: Vec<&JobInfo> = jobs.iter().filter(|j| j.job_id == 2).collect();
    let items = squeue::parse_long_format("JobID:.6,Name:5|,State,ReasonList:.4").unwrap();
    let out = squeue::render(&refs, &items, true, false, &ctx(T0));
    assert_eq!(
        out,
        " JOBIDNAME |STATE               NODE\n     2wrap |RUNNING               n1\n"
    );
    // Every field code renders without panicking, with and without width.
    let all: String = "AaBbCcDdEeFfGgHhIiJjKkLlMmNnOoPpQqRrSsTtUuVvWwXxYyZz"
        .chars()
        .map(|c| format!("%{c}|%.3{c}|%3{c}|"))
        .collect();
    let items = squeue::parse_format(&all).unwrap();
    let every: Vec<&JobInfo> = jobs.iter().collect();
    let out = squeue::render(&every, &items, true, false, &ctx(T0));
    assert_eq!(out.lines().count(), 9);
    assert!(out.contains("|afterok:2(unfulfilled)|"));
    assert!(out.contains("|JobHeldUser|"));
}

#[test]
fn format_squeue_widths_count_characters_not_bytes() {
    let mut job = pending(40, "größe-job", 1, "None");
    job.user_name = "jürgen".into();
    let items = squeue::parse_format("%.6j|%8u|").unwrap();
    let out = squeue::render(&[&job], &items, false, false, &ctx(T0));
    assert_eq!(out, "größe-|jürgen  |\n");
}

#[test]
fn format_sinfo_custom_fields() {
    let items = sinfo::parse_format("%P %C %F %c %m %z %O %e %t %N").unwrap();
    let view = sinfo::View {
        header: true,
        ..sinfo::View::default()
    };
    let out = sinfo::render(
        &[debug_partition()],
        &nodes([2, 1, 0, 0]),
        &items,
        view,
        &ctx(T0),
    );
    assert_eq!(
        out,
        "PARTITION CPUS(A/I/O/T) NODES(A/I/O/T) CPUS MEMORY S:C:T CPU_LOAD FREE_MEM STATE NODELIST\n\
         debug* 1/1/0/2 1/0/0/1 2 4000 1:2:1 2.26 22719 mix n2\n\
         debug* 2/0/0/2 1/0/0/1 2 4000 1:2:1 2.26 22719 alloc n1\n\
         debug* 0/4/0/4 0/2/0/2 2 4000 1:2:1 2.26 22719 idle n[3-4]\n"
    );
    assert_eq!(
        sinfo::parse_format("%P %!").unwrap_err().to_string(),
        "invalid node format specification: !"
    );
}

/// A job that lost a failed node (`--no-kill`) shows ResizeTime on a line
/// of its own after AccrueTime, as Slurm 22.05 does; other jobs do not.
#[test]
fn format_scontrol_show_job_resize_time() {
    let mut job = running(3, "n1", 4_294_901_759);
    let plain = scontrol::show_jobs(&[job.clone()], false, &ctx(T0 + 5));
    assert!(!plain.contains("ResizeTime"), "{plain}");
    job.resize_time = T0 + 3;
    let c = ctx(T0 + 5);
    let shown = scontrol::show_jobs(&[job.clone()], false, &c);
    let lines: Vec<&str> = shown.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("ResizeTime="))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        lines[at - 1].trim_start().starts_with("AccrueTime="),
        "{shown}"
    );
    assert!(
        lines[at + 1].trim_start().starts_with("StartTime="),
        "{shown}"
    );
    assert_eq!(lines[at].split_whitespace().count(), 1, "{shown}");
    let one = scontrol::show_jobs(&[job], true, &c);
    assert!(one.contains(" ResizeTime=20"), "{one}");
}
