//! What sbatch options show in `scontrol show job`, and what sbatch
//! refuses before it submits, checked against the daemons with the values
//! Slurm 22.05 gave for the same command lines: the node range of `-N`,
//! `-B` and the socket/core/thread options, `--hint`,
//! `--kill-on-invalid-dep`, `--reboot`, `--cpu-freq`, `--spread-job`,
//! `--gres-flags`, `--delay-boot`, `--power`; a `--begin` after the
//! `--deadline`, and the GPU options on a cluster without GPUs.

use std::path::PathBuf;

use slurm_testkit::e2e::{cluster_with as cluster, scontrol_show, text};
use slurm_testkit::LocalCluster;

fn submit_dir(c: &LocalCluster) -> PathBuf {
    let d = c.dir().root().join("submit");
    std::fs::create_dir_all(&d).expect("submit dir");
    d
}

/// Runs sbatch: (status, stdout, stderr).
fn sbatch(c: &LocalCluster, args: &[&str]) -> (i32, String, String) {
    let mut cmd = c.command("sbatch").expect("sbatch");
    cmd.current_dir(submit_dir(c)).args(args);
    let o = cmd.output().expect("sbatch runs");
    (
        o.status.code().unwrap_or(-1),
        text(&o.stdout),
        text(&o.stderr),
    )
}

/// Submits a held job with `options` and gives its `scontrol show job`.
fn held_job_shown(c: &LocalCluster, options: &str) -> String {
    let mut args = vec!["--parsable", "--hold"];
    args.extend(options.split_whitespace());
    args.extend(["--wrap", "true"]);
    let (status, out, err) = sbatch(c, &args);
    assert_eq!(status, 0, "{options}: {err}\n{}", c.logs());
    scontrol_show(c, "job", out.trim())
}

#[test]
fn held_jobs_show_what_their_options_ask_for() {
    let c = cluster(&[]);
    let cases: &[(&str, &[&str])] = &[
        ("-N 1", &[" NumNodes=1-1 "]),
        ("-N 3", &[" NumNodes=3-3 "]),
        ("-N 1-2", &[" NumNodes=1-2 "]),
        (
            "-B 1:1",
            &[" ReqB:S:C:T=0:0:1:*\n", "\n   Socks/Node=1 NtasksPerN"],
        ),
        ("-B 1:1:1", &[" ReqB:S:C:T=0:0:1:1\n"]),
        (
            "--ntasks-per-core=2",
            &[" NtasksPerN:B:S:C=0:0:*:2 ", " ReqB:S:C:T=0:0:*:*\n"],
        ),
        ("--ntasks-per-socket=1", &[" NtasksPerN:B:S:C=0:0:1:* "]),
        ("--threads-per-core=1", &[" ReqB:S:C:T=0:0:*:1\n"]),
        ("--hint=memory_bound", &[" ReqB:S:C:T=0:0:1:1\n"]),
        (
            "--kill-on-invalid-dep=yes",
            &["\n   Power=\n   KillOInInvalidDependent=Yes\n"],
        ),
        (
            "--kill-on-invalid-dep=no",
            &["\n   Power=\n   KillOInInvalidDependent=No\n"],
        ),
        ("--reboot", &[" Reboot=1 "]),
        (
            "--cpu-freq=low-high:performance",
            &["\n   CPU_min_freq=Low CPU_max_freq=High Governor=Performance\n   Power=\n"],
        ),
        ("--cpu-freq=2000", &["\n   CPU_max_freq=2000 \n   Power=\n"]),
        (
            "--spread-job --gres-flags=enforce-binding --kill-on-invalid-dep=yes \
             --delay-boot=5 --power=level",
            &[
                " DelayBoot=00:05:00\n",
                "\n   Power=LEVEL\n   \
                 GresEnforceBind=YesKillOInInvalidDependent=YesSpreadJob=Yes\n",
            ],
        ),
    ];
    for (options, wants) in cases {
        let shown = held_job_shown(&c, options);
        for want in *wants {
            assert!(shown.contains(want), "{options}: {want:?} not in\n{shown}");
        }
    }
    // None of them given: nothing extra is shown.
    let plain = held_job_shown(&c, "");
    for want in [
        " NumNodes=1 ",
        " ReqB:S:C:T=0:0:*:*\n",
        "\n   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* ",
        " Reboot=0 ",
    ] {
        assert!(plain.contains(want), "{want:?} not in\n{plain}");
    }
    assert!(
        !plain.contains("KillOIn") && !plain.contains("_freq"),
        "{plain}"
    );
}

#[test]
fn sbatch_refuses_and_adjusts_as_slurm_does() {
    let c = cluster(&[]);
    let got = sbatch(
        &c,
        &[
            "--begin=now+2hours",
            "--deadline=now+1hour",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(
        got,
        (
            1,
            String::new(),
            "sbatch: error: Incompatible begin and deadline time specification\n".to_string()
        )
    );
    for ratio in [
        "--cpus-per-gpu=2",
        "--mem-per-gpu=100",
        "--gpus-per-socket=1",
    ] {
        let got = sbatch(&c, &[ratio, "--wrap", "true"]);
        assert_eq!(
            got,
            (
                1,
                String::new(),
                "sbatch: error: Invalid generic resource (gres) specification\n".to_string()
            ),
            "{ratio}"
        );
    }
    let got = sbatch(&c, &["--ntasks-per-gpu=1", "-n", "2", "--wrap", "true"]);
    assert_eq!(
        got,
        (
            1,
            String::new(),
            "sbatch: error: gres_job_state_validate: Failed to add generated GRES gres:gpu:2 \
             (via ntasks_per_tres) to gres_list\n\
             sbatch: error: Invalid generic resource (gres) specification\n"
                .to_string()
        )
    );
    // Fewer tasks than nodes: as many nodes as tasks, with Slurm's warning.
    let (status, out, err) = sbatch(
        &c,
        &[
            "--parsable",
            "--hold",
            "-N",
            "2-3",
            "-n",
            "1",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(
        (status, err.as_str()),
        (
            0,
            "sbatch: Warning: can't run 1 processes on 2 nodes, setting nnodes to 1\n"
        )
    );
    let shown = scontrol_show(&c, "job", out.trim());
    assert!(shown.contains(" NumNodes=1-1 "), "{shown}");
}
