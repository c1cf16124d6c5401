//! Nodes end to end: HealthCheckProgram draining and resuming nodes, and one
//! slurmd emulating many nodes. Real slurmctld, slurmd, slurmstepd and
//! commands on loopback; needs the workspace binaries
//! (`cargo build --workspace --bins`, or `cargo test --workspace`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use slurm_client_tools::client::{block_on, ClientConfig, Controller};
use slurm_proto::v1::{GetNodesRequest, JobState, NodeInfo, NodeState, NodeStateFlag};
use slurm_testkit::cluster_dir::{ClusterDir, ClusterSpec};
use slurm_testkit::local_cluster::{
    clean_slurm_env, controller_up, idle_nodes, job_states, kill_cluster_processes, log_tails,
    require_bin, Daemon,
};
use slurm_testkit::{bin_dir, wait_until, ChildGuard, LocalCluster};

const WAIT: Duration = Duration::from_secs(30);

fn nodes(conf: &Path) -> Option<Vec<NodeInfo>> {
    let config = ClientConfig::load_path(conf).ok()?;
    let mut ctl = Controller::new(&config).ok()?;
    block_on(ctl.call(|mut c| async move { c.get_nodes(GetNodesRequest::default()).await }))
        .ok()
        .map(|r| r.nodes)
}

fn drained(n: &NodeInfo) -> bool {
    n.state_flags.contains(&(NodeStateFlag::Drain as i32))
}

fn executable(path: &Path, body: &str) {
    std::fs::write(path, body).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Issue "node health": a failing HealthCheckProgram drains the node with its
/// output as the reason, running jobs go on, RESUME brings the node back.
#[test]
fn failing_health_check_drains_with_its_output_and_resume_brings_nodes_back() {
    let hc = tempfile::tempdir().expect("tmp");
    let sick = hc.path().join("sick");
    let program = hc.path().join("health.sh");
    executable(
        &program,
        &format!(
            "#!/bin/sh\n\
             if [ -e {sick} ]; then echo \"  disk /scratch full on $SLURMD_NODENAME  \"; echo more; exit 1; fi\n\
             touch {dir}/passed.$SLURMD_NODENAME\n\
             exit 0\n",
            sick = sick.display(),
            dir = hc.path().display()
        ),
    );
    let spec = ClusterSpec {
        nodes: 2,
        extra_lines: vec![
            format!("HealthCheckProgram={}", program.display()),
            "HealthCheckInterval=1".to_string(),
        ],
        ..ClusterSpec::default()
    };
    let mut c = LocalCluster::start(spec).unwrap_or_else(|e| panic!("cluster: {e:#}"));
    let conf = c.conf_path();
    let submit = c.dir().root().join("submit");
    std::fs::create_dir_all(&submit).expect("submit dir");
    let go = submit.join("go");
    executable(
        &submit.join("wait.sh"),
        &format!(
            "#!/bin/sh\nwhile [ ! -e {} ]; do sleep 0.1; done\necho finished\n",
            go.display()
        ),
    );
    let id = c.sbatch_in(&submit, &["wait.sh"]).expect("sbatch");
    c.wait_job_state(id, JobState::Running, WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));

    std::fs::write(&sick, "").expect("make the node sick");
    let all = c
        .wait_for("both nodes drained by the health check", WAIT, |_| {
            let all = nodes(&conf)?;
            all.iter().all(drained).then_some(all)
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
    for n in &all {
        assert_eq!(
            n.reason,
            format!("disk /scratch full on {}", n.name),
            "{n:?}"
        );
    }
    assert_eq!(
        c.job_state(id),
        Some(JobState::Running),
        "a drain must not stop running jobs"
    );

    let o = c.run("sinfo", &["-R"]).expect("sinfo -R");
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    // As Slurm's: the reason in a column of 20 (cut), then the user, the
    // time and the nodes; nodes with different reasons on lines of their own.
    assert!(out.starts_with("REASON               USER      TIMESTAMP           NODELIST\n"));
    // slurmd drains as the user it runs as (the test's); Slurm 22.05's
    // `sinfo -R` shows the name alone (`%9u`).
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let me = slurm_client_tools::client::user_name(uid).expect("own user name");
    for name in ["n1", "n2"] {
        assert!(
            out.lines().any(|l| l.starts_with("disk /scratch full o ")
                && l.ends_with(name)
                && l[21..].starts_with(&format!("{me:<9} "))),
            "no reason line for {name}:\n{out}"
        );
    }
    let o = c
        .run("scontrol", &["show", "node", "n1"])
        .expect("scontrol");
    assert!(
        text(&o).contains("Reason=disk /scratch full on n1 "),
        "{}",
        text(&o)
    );

    std::fs::write(&go, "").expect("let the job finish");
    let state = c
        .wait_job_finished(id, WAIT)
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(state, JobState::Completed);

    // Healthy again; once each node has passed a check (so no failing run
    // is still reporting), RESUME returns both to service.
    std::fs::remove_file(&sick).expect("heal");
    for name in ["n1", "n2"] {
        let _ = std::fs::remove_file(hc.path().join(format!("passed.{name}")));
    }
    let dir = hc.path().to_path_buf();
    c.wait_for("a passing check on every node", WAIT, |_| {
        ["n1", "n2"]
            .iter()
            .all(|n| dir.join(format!("passed.{n}")).exists())
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    let o = c
        .run("scontrol", &["update", "NodeName=n[1-2]", "State=RESUME"])
        .expect("scontrol update");
    assert!(o.status.success(), "{}", text(&o));
    c.wait_nodes_idle(WAIT).unwrap_or_else(|e| panic!("{e:#}"));
    let all = nodes(&conf).expect("nodes");
    assert!(
        all.iter().all(|n| n.reason.is_empty() && !drained(n)),
        "{all:?}"
    );
}

/// Daemons started by hand, killed with the guard.
struct Daemons {
    conf: PathBuf,
    log_dir: PathBuf,
    guards: Vec<ChildGuard>,
}

impl Daemons {
    fn start_controller(dir: &ClusterDir) -> Self {
        let bins = bin_dir().expect("bins");
        let d = Daemon::Controller;
        let mut cmd = d
            .command(&bins, &dir.conf_path(), &dir.log_dir())
            .expect("slurmctld command");
        let guard = ChildGuard::spawn(&d.name(), &mut cmd).expect("slurmctld");
        let daemons = Self {
            conf: dir.conf_path(),
            log_dir: dir.log_dir(),
            guards: vec![guard],
        };
        daemons.wait("slurmctld to answer", || {
            controller_up(&daemons.conf).then_some(())
        });
        daemons
    }

    fn spawn(&mut self, name: &str, cmd: &mut Command) {
        self.guards
            .push(ChildGuard::spawn(name, cmd).expect("start daemon"));
    }

    fn wait<T>(&self, what: &str, probe: impl FnMut() -> Option<T>) -> T {
        wait_until(what, WAIT, probe)
            .unwrap_or_else(|e| panic!("{e}\n{}", log_tails(&self.log_dir)))
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for g in &mut self.guards {
            let _ = g.kill();
        }
        kill_cluster_processes(&self.conf);
    }
}

/// The start-up check runs before registration: a node that fails it
/// registers drained, with the program's output as the reason.
#[test]
fn failing_start_up_check_registers_the_node_drained() {
    let hc = tempfile::tempdir().expect("tmp");
    let program = hc.path().join("health.sh");
    executable(&program, "#!/bin/sh\necho ib0 link down >&2\nexit 3\n");
    let dir = ClusterDir::create(ClusterSpec {
        nodes: 1,
        extra_lines: vec![format!("HealthCheckProgram={}", program.display())],
        ..ClusterSpec::default()
    })
    .expect("cluster dir");
    let mut d = Daemons::start_controller(&dir);
    let bins = bin_dir().expect("bins");
    let node = Daemon::Node("n1".into());
    let mut cmd = node
        .command(&bins, &dir.conf_path(), &dir.log_dir())
        .expect("slurmd command");
    d.spawn(&node.name(), &mut cmd);
    let conf = dir.conf_path();
    let n1 = d.wait("n1 registered and drained", || {
        let n = nodes(&conf)?.into_iter().find(|n| n.name == "n1")?;
        (n.state == NodeState::Idle as i32 && drained(&n)).then_some(n)
    });
    assert_eq!(n1.reason, "ib0 link down");
}

/// Issue "Scale": one slurmd serves many nodes, each on its own port, and
/// jobs over many of them start, run and end as on real nodes.
#[test]
fn one_slurmd_emulates_many_nodes_that_run_and_end_jobs() {
    const NODES: usize = 40;
    let dir = ClusterDir::create(ClusterSpec {
        nodes: NODES,
        cpus_per_node: 1,
        ..ClusterSpec::default()
    })
    .expect("cluster dir");
    let mut d = Daemons::start_controller(&dir);
    let bins = bin_dir().expect("bins");
    let mut cmd = Command::new(require_bin(&bins, "slurmd").expect("slurmd"));
    clean_slurm_env(&mut cmd);
    let log = std::fs::File::create(dir.log_dir().join("slurmd.emulate.out")).expect("log");
    cmd.args(["-D", "--emulate", &format!("n[1-{NODES}]"), "-f"])
        .arg(dir.conf_path())
        .env("SLURM_CONF", dir.conf_path())
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log);
    let start = Instant::now();
    d.spawn("slurmd.emulate", &mut cmd);
    let conf = dir.conf_path();
    d.wait("every emulated node idle", || {
        (idle_nodes(&conf)? == NODES).then_some(())
    });
    eprintln!("{NODES} emulated nodes registered in {:?}", start.elapsed());
    for i in [1, NODES] {
        assert!(
            dir.root().join(format!("spool/n{i}")).is_dir(),
            "each node has its own spool"
        );
    }

    let submit = dir.root().join("submit");
    std::fs::create_dir_all(&submit).expect("submit dir");
    executable(
        &submit.join("many.sh"),
        "#!/bin/sh\necho \"$SLURM_JOB_NODELIST $SLURM_JOB_NUM_NODES $SLURMD_NODENAME\"\n",
    );
    let sbatch = |args: &[&str]| -> u32 {
        let mut cmd = Command::new(require_bin(&bins, "sbatch").expect("sbatch"));
        clean_slurm_env(&mut cmd);
        let o = cmd
            .args(args)
            .env("SLURM_CONF", &conf)
            .current_dir(&submit)
            .output()
            .expect("sbatch");
        assert!(o.status.success(), "{}", text(&o));
        slurm_testkit::local_cluster::parse_submitted(&String::from_utf8_lossy(&o.stdout))
            .expect("job id")
    };
    let finished = |id: u32| -> JobState {
        d.wait(&format!("job {id} to end"), || {
            let j = job_states(&conf, &[id])?.into_iter().find(|j| j.id == id)?;
            j.done().then_some(j.state)
        })
    };
    let id = sbatch(&["-N", &NODES.to_string(), "many.sh"]);
    assert_eq!(
        finished(id),
        JobState::Completed,
        "{}",
        log_tails(&dir.log_dir())
    );
    let out = std::fs::read_to_string(submit.join(format!("slurm-{id}.out"))).expect("output");
    assert_eq!(out, format!("n[1-{NODES}] {NODES} n1\n"));

    // A job on half the nodes, cancelled while it runs: every node of it
    // must hear the terminate and report back, or they stay allocated.
    executable(&submit.join("long.sh"), "#!/bin/sh\nsleep 300\n");
    let id = sbatch(&["-N", &(NODES / 2).to_string(), "long.sh"]);
    d.wait("the long job to run", || {
        job_states(&conf, &[id])?
            .into_iter()
            .any(|j| j.id == id && j.state == JobState::Running)
            .then_some(())
    });
    let mut cmd = Command::new(require_bin(&bins, "scancel").expect("scancel"));
    clean_slurm_env(&mut cmd);
    let o = cmd
        .arg(id.to_string())
        .env("SLURM_CONF", &conf)
        .output()
        .expect("scancel");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(finished(id), JobState::Cancelled);
    d.wait("every emulated node idle again", || {
        (idle_nodes(&conf)? == NODES).then_some(())
    });
}
