//! `scontrol reconfigure` end to end: the controller re-reads slurm.conf,
//! takes new partition settings without losing jobs or node states, tells
//! the slurmd daemons, and refuses a broken file or a changed node list
//! with an error while keeping the old configuration.

use std::time::Duration;

use slurm_proto::v1::JobState;
use slurm_testkit::LocalCluster;

const WAIT: Duration = Duration::from_secs(30);

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn show_partition(c: &LocalCluster) -> String {
    let o = c
        .run("scontrol", &["show", "partition", "debug"])
        .expect("scontrol show partition");
    assert!(o.status.success(), "{}", text(&o));
    text(&o)
}

#[test]
fn reconfigure_takes_new_partition_limits_and_keeps_jobs_and_drains() {
    let mut c = LocalCluster::start_default().unwrap_or_else(|e| panic!("cluster: {e:#}"));
    let held = c.sbatch(&["--hold", "--wrap", "true"]).expect("sbatch");
    let o = c
        .run(
            "scontrol",
            &["update", "NodeName=n2", "State=DRAIN", "Reason=maintenance"],
        )
        .expect("drain");
    assert!(o.status.success(), "{}", text(&o));
    assert!(show_partition(&c).contains(" MaxTime=UNLIMITED "));

    let conf_path = c.conf_path();
    let conf = std::fs::read_to_string(&conf_path).expect("read slurm.conf");
    assert!(conf.contains("MaxTime=INFINITE"), "{conf}");
    std::fs::write(&conf_path, conf.replace("MaxTime=INFINITE", "MaxTime=30")).expect("write");
    let o = c.run("scontrol", &["reconfigure"]).expect("reconfigure");
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", text(&o));
    let p = show_partition(&c);
    assert!(p.contains(" MaxTime=00:30:00 "), "{p}");

    // What happened before stays: the held job, the drained node.
    assert_eq!(c.job_state(held), Some(JobState::Pending));
    let o = c
        .run("sinfo", &["-h", "-n", "n2", "-o", "%t %E"])
        .expect("sinfo");
    assert_eq!(text(&o), "drain maintenance\n");
    // The new limit applies to new jobs.
    let o = c
        .run("sbatch", &["-t", "45", "--wrap", "true"])
        .expect("sbatch");
    let id: u32 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .rsplit(' ')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{}", text(&o)));
    let o = c
        .run("squeue", &["-h", "-j", &id.to_string(), "-o", "%r"])
        .expect("squeue");
    assert_eq!(text(&o), "PartitionTimeLimit\n");

    // A broken line: scontrol itself reads slurm.conf first and names it.
    let good = std::fs::read_to_string(&conf_path).expect("read");
    std::fs::write(&conf_path, format!("{good}MaxJobCount=lots\n")).expect("write");
    let o = c.run("scontrol", &["reconfigure"]).expect("reconfigure");
    assert!(!o.status.success(), "{}", text(&o));
    let err = text(&o);
    assert!(err.contains("MaxJobCount") && err.contains("lots"), "{err}");
    std::fs::write(&conf_path, &good).expect("write");
    assert!(show_partition(&c).contains(" MaxTime=00:30:00 "));

    // A changed node list: the controller refuses it with the reason and
    // keeps running as it was.
    let n4 = good
        .lines()
        .find(|l| l.starts_with("NodeName=n4 "))
        .expect("n4 line")
        .to_string();
    let more = format!("{good}{}\n", n4.replace("NodeName=n4 ", "NodeName=n5 "));
    std::fs::write(&conf_path, more).expect("write");
    let o = c.run("scontrol", &["reconfigure"]).expect("reconfigure");
    assert!(!o.status.success(), "{}", text(&o));
    let err = text(&o);
    assert!(err.starts_with("slurm_reconfigure error: "), "{err}");
    assert!(err.contains("node list changed"), "{err}");
    std::fs::write(&conf_path, good).expect("write");
    assert!(show_partition(&c).contains(" MaxTime=00:30:00 "));

    // Jobs still run after all this.
    let id = c.sbatch(&["-t", "5", "--wrap", "true"]).expect("sbatch");
    assert_eq!(
        c.wait_job_finished(id, WAIT)
            .unwrap_or_else(|e| panic!("{e:#}\n{}", c.logs())),
        JobState::Completed
    );
}
