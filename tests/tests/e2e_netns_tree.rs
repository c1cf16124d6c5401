//! Issue "fan-out tree": messages to many nodes travel through a relay tree
//! of TreeWidth, on hosts that are separate network namespaces, so each hop
//! is a real connection between two addresses; a relay that dies mid-way
//! does not cut off its subtree; a node whose network is cut is marked
//! DOWN and its job ends.
//!
//! Also the self-test of the lab kit (`slurm_testkit::netns`): reachability,
//! cuts, host names, name resolution and teardown.
//!
//! Needs root and iproute2; set SLURM_TEST_SKIP_NETNS=1 to skip (the tests
//! then print "skipped" and pass). Needs the workspace binaries
//! (`cargo build --workspace --bins`).

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::time::{Duration, Instant};

use slurm_common::tree::{self, TreeWidth};
use slurm_testkit::netns::{self, NetCluster, NetClusterSpec, NetLab, Preflight};
use slurm_testkit::wait_until;

/// True when the test should go on; prints "skipped" otherwise, and fails
/// with the reason when the machine cannot run it and skipping was not
/// asked for.
fn run_here(test: &str) -> bool {
    match netns::preflight() {
        Ok(Preflight::Run) => true,
        Ok(Preflight::Skip(why)) => {
            println!("{test}: skipped ({why})");
            false
        }
        Err(e) => panic!("{test}: {e:#}"),
    }
}

fn listener_on(host: &netns::Host) -> (TcpListener, SocketAddr) {
    let l = host
        .run(|| TcpListener::bind((host.addr(), 0)))
        .expect("enter")
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    (l, addr)
}

const SHORT: Duration = Duration::from_millis(1500);

#[test]
fn lab_hosts_reach_each_other_until_cut() {
    if !run_here("lab_hosts_reach_each_other_until_cut") {
        return;
    }
    let mut lab = NetLab::new("kit").expect("lab");
    let a = lab.host("n1").expect("n1");
    let b = lab.host("n2").expect("n2");
    assert_ne!(a.addr(), b.addr());
    let (_la, addr_a) = listener_on(&a);
    let (_lb, addr_b) = listener_on(&b);
    assert!(a.can_connect(addr_b, SHORT).expect("probe"), "n1 -> n2");
    assert!(b.can_connect(addr_a, SHORT).expect("probe"), "n2 -> n1");

    b.cut().expect("cut");
    assert!(
        !a.can_connect(addr_b, SHORT).expect("probe"),
        "n1 reached the cut n2"
    );
    assert!(
        !b.can_connect(addr_a, SHORT).expect("probe"),
        "the cut n2 reached n1"
    );
    // A cut host still reaches itself: its processes run on.
    assert!(b.can_connect(addr_b, SHORT).expect("probe"));

    b.restore().expect("restore");
    let back = wait_until("n2 reachable again", Duration::from_secs(10), || {
        a.can_connect(addr_b, SHORT).ok()?.then_some(())
    });
    assert!(back.is_ok(), "{back:?}");
}

#[test]
fn lab_hosts_have_their_names_and_resolve_each_other() {
    if !run_here("lab_hosts_have_their_names_and_resolve_each_other") {
        return;
    }
    let machine_hosts = std::fs::read("/etc/hosts").ok();
    let machine_name = std::fs::read("/proc/sys/kernel/hostname").expect("hostname");
    let mut lab = NetLab::new("kit").expect("lab");
    let a = lab.host("ctl1").expect("ctl1");
    let b = lab.host("n7").expect("n7");

    let o = a.output(Command::new("uname").arg("-n")).expect("uname -n");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "ctl1");

    let o = a
        .output(Command::new("getent").args(["hosts", "n7"]))
        .expect("getent");
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text.split_whitespace().next(),
        Some(b.addr().to_string().as_str()),
        "{o:?}"
    );
    // The address is the host's own, on eth0.
    let o = b
        .output(Command::new("ip").args(["-4", "-o", "addr", "show", "dev", "eth0"]))
        .expect("ip addr");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("{}/16", b.addr())),
        "{o:?}"
    );

    // Nothing leaked to the machine.
    assert_eq!(std::fs::read("/etc/hosts").ok(), machine_hosts);
    let now = std::fs::read("/proc/sys/kernel/hostname").expect("hostname");
    assert_eq!(now, machine_name);
}

#[test]
fn lab_teardown_kills_what_runs_inside_and_removes_namespaces() {
    if !run_here("lab_teardown_kills_what_runs_inside_and_removes_namespaces") {
        return;
    }
    let mut lab = NetLab::new("kit").expect("lab");
    let h = lab.host("n1").expect("n1");
    // A process that escapes its parent, as slurmstepd does.
    let o = h
        .output(Command::new("sh").args(["-c", "setsid sleep 600 >/dev/null 2>&1 & echo $!"]))
        .expect("sh");
    let pid: u32 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .expect("pid");
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains("(sleep)") && !s.contains(") Z "))
            .unwrap_or(false)
    };
    // `$!` is known before the child has exec'd sleep.
    let started = wait_until("sleep to start", Duration::from_secs(5), || {
        alive(pid).then_some(())
    });
    assert!(started.is_ok(), "{started:?}");
    let names: Vec<String> = vec![h.netns().to_string(), format!("{}.hub", lab.id())];
    for n in &names {
        assert!(std::path::Path::new("/run/netns").join(n).exists(), "{n}");
    }
    drop(lab);
    assert!(!alive(pid), "sleep {pid} outlived the lab");
    for n in &names {
        assert!(
            !std::path::Path::new("/run/netns").join(n).exists(),
            "{n} left behind"
        );
    }
}

#[test]
fn a_crashed_runs_namespaces_are_swept_by_the_next_lab() {
    if !run_here("a_crashed_runs_namespaces_are_swept_by_the_next_lab") {
        return;
    }
    // A pid that no process has: the run that made the namespace is gone.
    let dead = (1_000_000u32..u32::MAX)
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .expect("a free pid");
    let stale = format!("sweep-{dead}-0-n1");
    let ok = Command::new("ip")
        .args(["netns", "add", &stale])
        .status()
        .expect("ip");
    assert!(ok.success());
    let lab = NetLab::new("sweep").expect("lab");
    assert!(
        !std::path::Path::new("/run/netns").join(&stale).exists(),
        "{stale} survived"
    );
    // The new lab's own namespace is not mistaken for a stale one.
    assert!(std::path::Path::new("/run/netns")
        .join(format!("{}.hub", lab.id()))
        .exists());
}

#[test]
fn a_batch_job_runs_on_another_host() {
    if !run_here("a_batch_job_runs_on_another_host") {
        return;
    }
    let c = NetCluster::start(
        "kitc",
        NetClusterSpec {
            nodes: 2,
            ..NetClusterSpec::default()
        },
    )
    .unwrap_or_else(|e| panic!("cluster: {e:#}"));
    let script = c.submit_dir().join("where.sh");
    std::fs::write(&script, "#!/bin/sh\nuname -n\n").expect("script");
    let id = c
        .sbatch(&["-w", "n2", "-o", "where-%j.out", "where.sh"])
        .unwrap_or_else(|e| panic!("sbatch: {e:#}\n{}", c.logs()));
    let out = c.submit_dir().join(format!("where-{id}.out"));
    let text = c
        .wait_for("the job's output", Duration::from_secs(30), |_| {
            std::fs::read_to_string(&out).ok().filter(|t| !t.is_empty())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(text, "n2\n");
    // The controller runs as ctl1 and the node as n2, each in its own place.
    assert!(
        c.local_dir("n2").join("log/slurmd.log").is_file(),
        "{}",
        c.logs()
    );
}

// ---------------------------------------------------------------------------
// The fan-out tree.

const NODES: usize = 8;
const WIDTH: u16 = 2;
const SLURMD_PORT: u16 = 6818;
const SLURMD_TIMEOUT: u32 = 5;
const WAIT: Duration = Duration::from_secs(60);

type Edges = BTreeSet<(String, String)>;

fn edges(v: &[(&str, &str)]) -> Edges {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// ctl1 and n1..n8 with TreeWidth=2 and SlurmdTimeout=5; the controller
/// logs at debug, slurmd at -vv with the RPC stack kept at info.
fn tree_cluster(test: &str, prefix: &str) -> Option<NetCluster> {
    if !run_here(test) {
        return None;
    }
    let c = NetCluster::start(
        prefix,
        NetClusterSpec {
            nodes: NODES,
            tree_width: Some(WIDTH),
            slurmd_timeout: Some(SLURMD_TIMEOUT),
            slurmctld_verbosity: 1,
            slurmd_verbosity: 2,
            slurmd_log_filter: Some("info,slurmd=trace".to_string()),
            ..NetClusterSpec::default()
        },
    )
    .unwrap_or_else(|e| panic!("{test}: cluster did not start: {e:#}"));
    Some(c)
}

/// The tree Slurm's TreeWidth gives `nodes` (in order) from the controller
/// `root`: `(sender, receiver)` for every node.
fn expected_tree(root: &str, nodes: &[String], width: u16) -> Edges {
    tree::parents(nodes.len(), TreeWidth::new(u32::from(width)))
        .into_iter()
        .zip(nodes)
        .map(|(p, n)| {
            let from = p.map_or(root.to_string(), |i| nodes[i].clone());
            (from, n.clone())
        })
        .collect()
}

/// Hops recorded in daemon logs: `forward: <kind> to <relay> for <rest> via
/// <sender>` lines (slurmd's forward.rs and the controller's agent write
/// them at debug); the controller calls itself `slurmctld`, read as
/// `ctl1`.
fn logged_hops(logs: &[(String, String)], kind: &str) -> Edges {
    let marker = format!("forward: {kind} to ");
    let mut out = Edges::new();
    for (_, text) in logs {
        for line in text.lines() {
            let Some(at) = line.find(&marker) else {
                continue;
            };
            let rest = &line[at + marker.len()..];
            let Some((relay, rest)) = rest.split_once(" for ") else {
                continue;
            };
            let Some(via) = rest.rsplit_once(" via ").map(|(_, v)| v) else {
                continue;
            };
            let sender = via.split_whitespace().next().unwrap_or("");
            let sender = if sender == "slurmctld" {
                "ctl1"
            } else {
                sender
            };
            out.insert((sender.to_string(), relay.to_string()));
        }
    }
    out
}

/// What every daemon logged after `marks` (byte offsets taken earlier).
fn logs_since(c: &NetCluster, marks: &[(String, String, usize)]) -> Vec<(String, String)> {
    marks
        .iter()
        .map(|(host, file, from)| {
            let text = c.log(host, file);
            let tail = text.get(*from..).unwrap_or("").to_string();
            (host.clone(), tail)
        })
        .collect()
}

/// Every `forward:` line logged after `marks`, headed by host, for
/// failure messages (the log tails are mostly RPC noise at debug).
fn forward_lines(c: &NetCluster, marks: &[(String, String, usize)]) -> String {
    let mut out = String::new();
    for (host, text) in logs_since(c, marks) {
        for line in text.lines().filter(|l| l.contains("forward:")) {
            out.push_str(&format!("{host}: {line}\n"));
        }
    }
    out
}

fn log_marks(c: &NetCluster) -> Vec<(String, String, usize)> {
    let mut marks = vec![(
        "ctl1".to_string(),
        "slurmctld.out".to_string(),
        c.log("ctl1", "slurmctld.out").len(),
    )];
    for n in c.spec().node_names() {
        let len = c.log(&n, "slurmd.log").len();
        marks.push((n, "slurmd.log".to_string(), len));
    }
    marks
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `scontrol show job <id>` field `key` (e.g. JobState), if shown.
fn job_field(c: &NetCluster, id: u32, key: &str) -> Option<String> {
    let o = c.run("scontrol", &["show", "job", &id.to_string()]).ok()?;
    let text = stdout(&o);
    let want = format!("{key}=");
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(want.as_str()).map(str::to_string))
}

/// sinfo's compact state of `node` (`idle`, `alloc`, `down*`, ...).
fn node_state(c: &NetCluster, node: &str) -> Option<String> {
    let o = c.run("sinfo", &["-h", "-N", "-n", node, "-o", "%t"]).ok()?;
    o.status
        .success()
        .then(|| stdout(&o).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn wait_job_state(c: &NetCluster, id: u32, states: &[&str]) -> String {
    c.wait_for(&format!("job {id} to be one of {states:?}"), WAIT, |c| {
        job_field(c, id, "JobState").filter(|s| states.contains(&s.as_str()))
    })
    .unwrap_or_else(|e| panic!("{e:#}"))
}

fn submit_all_nodes(c: &NetCluster) -> u32 {
    let script = c.submit_dir().join("wide.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 300\n").expect("script");
    let n = NODES.to_string();
    let id = c
        .sbatch(&["-N", &n, "-o", "/dev/null", "wide.sh"])
        .unwrap_or_else(|e| panic!("sbatch: {e:#}\n{}", c.logs()));
    wait_job_state(c, id, &["RUNNING"]);
    let nodes = job_field(c, id, "NodeList").unwrap_or_default();
    assert_eq!(
        nodes,
        format!("n[1-{NODES}]"),
        "the job must hold every node"
    );
    id
}

#[test]
fn fan_out_follows_the_tree() {
    let Some(c) = tree_cluster("fan_out_follows_the_tree", "tree") else {
        return;
    };
    let nodes = c.spec().node_names();
    let want = expected_tree("ctl1", &nodes, WIDTH);
    // TreeWidth=2 over 8 nodes: ctl1 -> n1, n5; n1 -> n2, n4; n2 -> n3;
    // n5 -> n6, n8; n6 -> n7.
    assert_eq!(
        want,
        edges(&[
            ("ctl1", "n1"),
            ("ctl1", "n5"),
            ("n1", "n2"),
            ("n1", "n4"),
            ("n2", "n3"),
            ("n5", "n6"),
            ("n5", "n8"),
            ("n6", "n7"),
        ])
    );
    let id = submit_all_nodes(&c);

    let marks = log_marks(&c);
    let before = c.lab().connections().expect("connections");
    let started = Instant::now();
    let o = c.run("scancel", &[&id.to_string()]).expect("scancel");
    assert!(o.status.success(), "scancel: {o:?}");
    wait_job_state(&c, id, &["CANCELLED"]);
    c.wait_nodes_idle(WAIT).unwrap_or_else(|e| panic!("{e:#}"));
    let took = started.elapsed();

    // Every hop written down by the sender that made it.
    let logged = c
        .wait_for(
            "every terminate hop to be logged",
            Duration::from_secs(10),
            |c| {
                let got = logged_hops(&logs_since(c, &marks), "terminate");
                want.is_subset(&got).then_some(got)
            },
        )
        .unwrap_or_else(|e| {
            panic!(
                "{e:#}\nlogged so far: {:?}\n{}",
                logged_hops(&logs_since(&c, &marks), "terminate"),
                forward_lines(&c, &marks)
            )
        });
    assert_eq!(logged, want, "terminate went another way than the tree");

    // The same hops as the kernel saw them. slurmd relays open a
    // connection per message, so node-to-node hops are all new; the
    // controller keeps a channel per node, so a hop it reused is open. A
    // relay's connection may already be closed when the table is read, so
    // the kernel's view must be a non-empty part of the tree, never a hop
    // outside it (the logs above showed every hop).
    let after = c.lab().connections().expect("connections");
    let new = netns::new_hops(&before, &after, SLURMD_PORT);
    let node_hops: Edges = new.iter().filter(|(f, _)| f != "ctl1").cloned().collect();
    let want_node_hops: Edges = want.iter().filter(|(f, _)| f != "ctl1").cloned().collect();
    assert!(
        !node_hops.is_empty() && node_hops.is_subset(&want_node_hops),
        "relay connections {node_hops:?} are not part of the tree {want_node_hops:?} (new: {new:?})"
    );
    let ctl_new: Edges = new.iter().filter(|(f, _)| f == "ctl1").cloned().collect();
    let ctl_children: Edges = want.iter().filter(|(f, _)| f == "ctl1").cloned().collect();
    assert!(
        ctl_new.is_subset(&ctl_children),
        "the controller connected to nodes that are not its relays: {ctl_new:?}"
    );
    let open = netns::open_hops(&after, SLURMD_PORT);
    let mut reached: BTreeSet<String> = new.iter().map(|(_, t)| t.clone()).collect();
    reached.extend(
        open.iter()
            .filter(|(f, _)| f == "ctl1")
            .map(|(_, t)| t.clone()),
    );
    let all: BTreeSet<String> = nodes.iter().cloned().collect();
    // Connections the relays opened may be closed by now (the logs above
    // showed every delivery); what the kernel shows must be tree nodes.
    assert!(
        !reached.is_empty() && reached.is_subset(&all),
        "nodes with a connection from their sender: {reached:?}"
    );
    println!(
        "fan_out_follows_the_tree: scancel to all {NODES} nodes idle in {} ms; hops {:?}",
        took.as_millis(),
        logged
    );
}

#[test]
fn a_relay_killed_mid_broadcast_does_not_cut_off_its_subtree() {
    let test = "a_relay_killed_mid_broadcast_does_not_cut_off_its_subtree";
    let Some(c) = tree_cluster(test, "relay") else {
        return;
    };
    let nodes = c.spec().node_names();
    // n5 relays for n6..n8 (see fan_out_follows_the_tree).
    let relay = "n5";
    let subtree = ["n6", "n7", "n8"];
    let want = expected_tree("ctl1", &nodes, WIDTH);
    assert!(want.contains(&("ctl1".to_string(), relay.to_string())));
    let id = submit_all_nodes(&c);

    // Frozen, n5 accepts the connection but never answers: the broadcast
    // is held at n5 until n5 is killed, in the middle of it.
    c.signal(relay, libc::SIGSTOP).expect("SIGSTOP");
    let marks = log_marks(&c);
    let before = c.lab().connections().expect("connections");
    let o = c.run("scancel", &[&id.to_string()]).expect("scancel");
    assert!(o.status.success(), "scancel: {o:?}");
    c.wait_for("the terminate to be sent to the relay", WAIT, |c| {
        logged_hops(&logs_since(c, &marks), "terminate")
            .contains(&("ctl1".to_string(), relay.to_string()))
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    let killed = Instant::now();
    c.kill(relay).expect("kill the relay");

    // Everyone else is still reached, n5's subtree by another way.
    let logged = c
        .wait_for("the relay's subtree to be reached another way", WAIT, |c| {
            let got = logged_hops(&logs_since(c, &marks), "terminate");
            let ok = subtree
                .iter()
                .all(|n| got.iter().any(|(f, t)| t == n && f != relay));
            ok.then_some(got)
        })
        .unwrap_or_else(|e| {
            panic!(
                "{e:#}\nlogged: {:?}\n{}",
                logged_hops(&logs_since(&c, &marks), "terminate"),
                forward_lines(&c, &marks)
            )
        });
    let rerouted = killed.elapsed();
    let ctl_log = logs_since(&c, &marks)
        .into_iter()
        .find(|(h, _)| h == "ctl1")
        .map(|(_, t)| t)
        .unwrap_or_default();
    assert!(
        ctl_log.contains(&format!("relay {relay} failed")),
        "the controller did not notice the relay fail:\n{ctl_log}"
    );
    for n in &nodes {
        if n == relay {
            continue;
        }
        assert!(
            logged.iter().any(|(_, t)| t == n),
            "{n} was not sent the terminate: {logged:?}"
        );
    }
    // The same hops as the kernel sees them. A sender logs the hop before
    // it connects, so the table is polled until each subtree node shows a
    // connection from a live host: a new one, or one opened earlier and
    // reused (the launch went the same way).
    let reached_by_kernel = |c: &NetCluster| -> BTreeSet<String> {
        let after = c.lab().connections().expect("connections");
        let mut reached: BTreeSet<String> = netns::new_hops(&before, &after, SLURMD_PORT)
            .into_iter()
            .filter(|(f, _)| f != relay)
            .map(|(_, t)| t)
            .collect();
        reached.extend(
            netns::open_hops(&after, SLURMD_PORT)
                .into_iter()
                .filter(|(f, _)| f != relay)
                .map(|(_, t)| t),
        );
        reached
    };
    c.wait_for("a connection to each node of the subtree", WAIT, |c| {
        let reached = reached_by_kernel(c);
        subtree.iter().all(|n| reached.contains(*n)).then_some(())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e:#}\nreached: {:?}\nconnections: {:?}",
            reached_by_kernel(&c),
            c.lab().connections()
        )
    });

    // The job ends; the dead node goes DOWN*, every other node is idle.
    wait_job_state(&c, id, &["CANCELLED"]);
    c.wait_for("n5 to be down* and the others idle", WAIT, |c| {
        let states: Vec<(String, String)> = nodes
            .iter()
            .map(|n| Some((n.clone(), node_state(c, n)?)))
            .collect::<Option<_>>()?;
        states
            .iter()
            .all(|(n, s)| {
                if n == relay {
                    s == "down*"
                } else {
                    s == "idle"
                }
            })
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    println!(
        "{test}: subtree of the killed relay reached {} ms after the kill",
        rerouted.as_millis()
    );
}

#[test]
fn a_cut_node_goes_down_and_its_job_ends() {
    let test = "a_cut_node_goes_down_and_its_job_ends";
    let Some(c) = tree_cluster(test, "cut") else {
        return;
    };
    let victim = "n3";
    let script = c.submit_dir().join("long.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 300\n").expect("script");
    let id = c
        .sbatch(&["-w", victim, "-o", "/dev/null", "long.sh"])
        .unwrap_or_else(|e| panic!("sbatch: {e:#}"));
    wait_job_state(&c, id, &["RUNNING"]);

    c.host(victim).expect("host").cut().expect("cut");
    let cut = Instant::now();
    c.wait_for(&format!("{victim} to be down*"), WAIT, |c| {
        (node_state(c, victim)? == "down*").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    let down_after = cut.elapsed();
    // Slurm pings every SlurmdTimeout/3 and declares a node dead after
    // SlurmdTimeout of silence: its last answer came at most one ping
    // interval before the cut. A few seconds more cover a ping in flight.
    let timeout = Duration::from_secs(u64::from(SLURMD_TIMEOUT));
    assert!(
        down_after <= timeout * 3 && down_after >= timeout / 3,
        "{victim} went down* {down_after:?} after the cut (SlurmdTimeout={SLURMD_TIMEOUT})"
    );
    // The job ends NODE_FAIL, or (JobRequeue) is requeued and leaves n3.
    let state = c
        .wait_for(&format!("job {id} to leave {victim}"), WAIT, |c| {
            let state = job_field(c, id, "JobState")?;
            match state.as_str() {
                "NODE_FAIL" => Some(state),
                "PENDING" | "RUNNING" | "REQUEUED" | "CONFIGURING" => {
                    let restarts: u32 = job_field(c, id, "Restarts")?.parse().ok()?;
                    let on = job_field(c, id, "NodeList").unwrap_or_default();
                    (restarts >= 1 && on != victim).then_some(state)
                }
                _ => None,
            }
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
    // The other nodes are untouched.
    for n in c.spec().node_names() {
        if n != victim {
            let s = node_state(&c, &n).unwrap_or_default();
            assert!(s == "idle" || s == "alloc" || s == "mix", "{n} is {s}");
        }
    }
    // Back on the network, the node registers and (ReturnToService=2)
    // returns to service.
    c.host(victim).expect("host").restore().expect("restore");
    let restored = Instant::now();
    c.wait_for(&format!("{victim} back in service"), WAIT, |c| {
        let s = node_state(c, victim)?;
        (s == "idle" || s == "alloc" || s == "mix").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    println!(
        "{test}: down* {} ms after the cut, job {id} {state}, back {} ms after restore",
        down_after.as_millis(),
        restored.elapsed().as_millis()
    );
}
