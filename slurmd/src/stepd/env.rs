//! The environment of a batch script: the job's own variables first, then
//! the `SLURM_*` variables describing the allocation, exactly as Slurm 22.05
//! sets them (checked against the `env_*` goldens captured from a real
//! cluster).
//!
//! Job scripts read these variables to find their nodes, task counts and
//! identity, so names, presence rules and value formats are part of the
//! interface: `SLURM_NTASKS` only when `--ntasks` was given,
//! `SLURM_TASKS_PER_NODE=2(x2)` in Slurm's run-length form, and so on.
//! `SLURM_TASK_PID` is the script's own pid, known only after fork; the exec
//! layer fills it in (see [`TASK_PID_VAR`]).

use slurm_common::counts::compress_counts;
use slurm_proto::v1::launch_batch_request::Memory;
use slurm_proto::v1::LaunchBatchRequest;

/// Name of the variable holding the script's pid, set by the exec layer.
pub const TASK_PID_VAR: &str = "SLURM_TASK_PID";

/// Slurm 22.05's RPC protocol version, part of SLURM_WORKING_CLUSTER.
pub const PROTOCOL_VERSION: u32 = 9728;

/// Facts about the node and cluster that the launch request does not carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeContext {
    /// This node's NodeName.
    pub node_name: String,
    /// The machine's short host name (gethostname): `%N` in file names, as
    /// Slurm's slurmstepd writes it, whatever NodeHostname says.
    pub host_name: String,
    /// Absolute path of the slurm.conf in use (SLURM_CONF).
    pub conf_path: String,
    /// TmpFS, the TMPDIR default.
    pub tmp_fs: String,
    /// Primary controller address and port, and the select plugin's id, for
    /// SLURM_WORKING_CLUSTER.
    pub controller_addr: String,
    pub controller_port: u16,
    pub select_plugin_id: u32,
}

/// An ordered environment where setting a name that exists replaces it in
/// place (what `setenv` over an inherited environment does).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    /// From `NAME=value` strings; entries without `=` or with an empty name
    /// are dropped, and a repeated name keeps its last value.
    pub fn from_entries<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> Self {
        let mut env = Env::default();
        for e in entries {
            if let Some((k, v)) = e.as_ref().split_once('=') {
                if !k.is_empty() {
                    env.set(k, v);
                }
            }
        }
        env
    }

    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        let value = value.into();
        match self.vars.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((name.to_string(), value)),
        }
    }

    /// Sets `name` only when it is not present yet.
    pub fn set_default(&mut self, name: &str, value: impl Into<String>) {
        if self.get(name).is_none() {
            self.vars.push((name.to_string(), value.into()));
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn remove(&mut self, name: &str) {
        self.vars.retain(|(k, _)| k != name);
    }

    /// Takes out every variable `pick` accepts and returns what it made
    /// of them, in order.
    pub fn take<T>(&mut self, mut pick: impl FnMut(&str, &str) -> Option<T>) -> Vec<T> {
        let mut taken = Vec::new();
        self.vars.retain(|(k, v)| match pick(k, v) {
            Some(t) => {
                taken.push(t);
                false
            }
            None => true,
        });
        taken
    }

    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// `NAME=value` strings, in order.
    pub fn to_entries(&self) -> Vec<String> {
        self.vars.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }
}

/// Tasks on each node for SLURM_TASKS_PER_NODE. Without `--ntasks`, Slurm
/// counts one task per `cpus_per_task` CPUs allocated on each node (so an
/// `--exclusive` job on 2 CPUs shows `2`, whatever the scheduler counted);
/// with it, the controller's figures when sent, else a block distribution
/// of the tasks over the CPUs of each node, as Slurm lays out a batch job.
pub fn tasks_per_node(req: &LaunchBatchRequest) -> Vec<u32> {
    let cpt = req.cpus_per_task.unwrap_or(1).max(1);
    let capacity: Vec<u32> = req.cpus_per_node.iter().map(|c| (c / cpt).max(1)).collect();
    let Some(mut left) = req.ntasks else {
        return capacity;
    };
    if !req.tasks_per_node.is_empty() {
        return req.tasks_per_node.clone();
    }
    let n = capacity.len();
    if n == 0 {
        return Vec::new();
    }
    // Every node gets at least one task, then the rest fill nodes in order.
    let mut out = vec![0u32; n];
    for slot in out.iter_mut() {
        if left == 0 {
            break;
        }
        *slot = 1;
        left -= 1;
    }
    for (slot, cap) in out.iter_mut().zip(&capacity) {
        let more = cap.saturating_sub(*slot).min(left);
        *slot += more;
        left -= more;
    }
    // More tasks than CPUs (oversubscription): spread the rest round-robin.
    let mut idx = 0;
    while left > 0 {
        out[idx % n] += 1;
        left -= 1;
        idx += 1;
    }
    out
}

/// The batch step's environment. `node_index` is this node's position in
/// the job's node list (0 on the batch host). `user_env` is the user's
/// login environment when the job asked for it (see
/// [`super::user_env`]); the job's own variables go on top of it.
pub fn batch_env(
    req: &LaunchBatchRequest,
    ctx: &NodeContext,
    node_index: usize,
    user_env: Option<&Env>,
) -> Env {
    let mut env = user_env.cloned().unwrap_or_default();
    for (k, v) in Env::from_entries(&req.environment).vars() {
        env.set(k, v.as_str());
    }
    let job_id = req.job_id.to_string();
    let node_count = req.cpus_per_node.len().max(1);
    let cpus_here = req.cpus_per_node.get(node_index).copied().unwrap_or(1);
    let tasks = tasks_per_node(req);

    env.set("ENVIRONMENT", "BATCH");
    // Whatever the submitter's shell had: the NodeName, as Slurm sets it
    // (not the NodeHostname, nor the machine's name).
    env.set("HOSTNAME", &ctx.node_name);
    env.set("SLURMD_NODENAME", &ctx.node_name);
    if let Some(a) = &req.array {
        env.set("SLURM_ARRAY_JOB_ID", a.array_job_id.to_string());
        env.set("SLURM_ARRAY_TASK_COUNT", a.task_count.to_string());
        env.set("SLURM_ARRAY_TASK_ID", a.array_task_id.to_string());
        env.set("SLURM_ARRAY_TASK_MAX", a.task_max.to_string());
        env.set("SLURM_ARRAY_TASK_MIN", a.task_min.to_string());
        env.set("SLURM_ARRAY_TASK_STEP", a.task_step.to_string());
    }
    env.set("SLURM_CLUSTER_NAME", &req.cluster_name);
    env.set("SLURM_CONF", &ctx.conf_path);
    env.set("SLURM_CPUS_ON_NODE", cpus_here.to_string());
    if let Some(cpt) = req.cpus_per_task {
        env.set("SLURM_CPUS_PER_TASK", cpt.to_string());
    }
    // --gpu-bind, kept as `gpu:<value>`.
    if let Some(bind) = req.tres_bind.strip_prefix("gpu:") {
        env.set("SLURM_GPU_BIND", bind);
    }
    env.set("SLURM_GTIDS", "0");
    env.set("SLURM_JOBID", &job_id);
    // Without accounting a job has no account or QOS, and Slurm then
    // leaves both variables out rather than setting them empty.
    if !req.account.is_empty() {
        env.set("SLURM_JOB_ACCOUNT", &req.account);
    }
    // No SLURM_JOB_CONSTRAINTS: Slurm 22.05 gives it to the Prolog and
    // Epilog only (`crate::prolog`), not to the job.
    env.set(
        "SLURM_JOB_CPUS_PER_NODE",
        compress_counts(&req.cpus_per_node),
    );
    env.set("SLURM_JOB_GID", req.group_id.to_string());
    env.set("SLURM_JOB_ID", &job_id);
    // No SLURM_JOB_NAME: sbatch puts it in the job's environment at
    // submission, so a later `scontrol update JobName=` does not reach it
    // and an --export-file job has none, as in Slurm.
    env.set("SLURM_JOB_NODELIST", &req.nodes);
    env.set("SLURM_JOB_NUM_NODES", node_count.to_string());
    env.set("SLURM_JOB_PARTITION", &req.partition);
    if !req.qos.is_empty() {
        env.set("SLURM_JOB_QOS", &req.qos);
    }
    if !req.reservation.is_empty() {
        env.set("SLURM_JOB_RESERVATION", &req.reservation);
    }
    env.set("SLURM_JOB_UID", req.user_id.to_string());
    env.set("SLURM_JOB_USER", &req.user_name);
    env.set("SLURM_LOCALID", "0");
    // `--mem=0` (all of the node's memory) and `--mem-per-cpu=0` set
    // neither variable in Slurm.
    match req.memory {
        Some(Memory::MemPerNodeMb(mb)) if mb > 0 => env.set("SLURM_MEM_PER_NODE", mb.to_string()),
        Some(Memory::MemPerCpuMb(mb)) if mb > 0 => env.set("SLURM_MEM_PER_CPU", mb.to_string()),
        _ => {}
    }
    env.set("SLURM_NNODES", node_count.to_string());
    env.set("SLURM_NODEID", node_index.to_string());
    env.set("SLURM_NODELIST", &req.nodes);
    env.set("SLURM_NODE_ALIASES", "(null)");
    if let Some(n) = req.ntasks {
        env.set("SLURM_NPROCS", n.to_string());
        env.set("SLURM_NTASKS", n.to_string());
    }
    if let Some(n) = req.ntasks_per_core {
        env.set("SLURM_NTASKS_PER_CORE", n.to_string());
    }
    if let Some(n) = req.ntasks_per_node {
        env.set("SLURM_NTASKS_PER_NODE", n.to_string());
    }
    if let Some(n) = req.ntasks_per_socket {
        env.set("SLURM_NTASKS_PER_SOCKET", n.to_string());
    }
    // sbatch records the submitting process's nice value; keep it if sent.
    env.set_default("SLURM_PRIO_PROCESS", "0");
    env.set("SLURM_PROCID", "0");
    if req.restart_count > 0 {
        env.set("SLURM_RESTART_COUNT", req.restart_count.to_string());
    }
    env.set("SLURM_SUBMIT_DIR", &req.submit_dir);
    env.set("SLURM_SUBMIT_HOST", &req.submit_host);
    env.set("SLURM_TASKS_PER_NODE", compress_counts(&tasks));
    // Placeholder until the exec layer knows the pid; keeps the position.
    env.set(TASK_PID_VAR, "");
    env.set("SLURM_TOPOLOGY_ADDR", &ctx.node_name);
    env.set("SLURM_TOPOLOGY_ADDR_PATTERN", "node");
    env.set(
        "SLURM_WORKING_CLUSTER",
        format!(
            "{}:{}:{}:{}:{}",
            req.cluster_name,
            ctx.controller_addr,
            ctx.controller_port,
            PROTOCOL_VERSION,
            ctx.select_plugin_id
        ),
    );
    env.set_default("TMPDIR", &ctx.tmp_fs);
    env
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use slurm_proto::v1::ArrayInfo;
    use std::collections::BTreeMap;

    const GOLDEN: &str = "/work/shared/reference/real-slurm/golden";

    fn ctx() -> NodeContext {
        NodeContext {
            node_name: "n1".into(),
            host_name: "vm".into(),
            conf_path: "/etc/slurm/slurm.conf".into(),
            tmp_fs: "/tmp".into(),
            controller_addr: "127.0.0.1".into(),
            controller_port: 6817,
            select_plugin_id: 109,
        }
    }

    fn req(job_id: u32) -> LaunchBatchRequest {
        LaunchBatchRequest {
            job_id,
            name: "envjob.sh".into(),
            user_id: 0,
            group_id: 0,
            user_name: "root".into(),
            nodes: "n1".into(),
            cpus_per_node: vec![1],
            partition: "debug".into(),
            account: "root".into(),
            qos: "normal".into(),
            cluster_name: "ref".into(),
            submit_host: "vm".into(),
            submit_dir: "/tmp/slurm-ref".into(),
            environment: vec!["PATH=/usr/bin".into(), "HOME=/root".into()],
            ..Default::default()
        }
    }

    /// The batch-step block of a golden env file (lines that look like
    /// variables up to the first `=== srun` marker), as a map.
    fn golden_batch_vars(name: &str) -> Option<BTreeMap<String, String>> {
        let text = std::fs::read_to_string(format!("{GOLDEN}/{name}.out")).ok()?;
        let mut out = BTreeMap::new();
        for line in text.lines() {
            if line.starts_with("=== srun") {
                break;
            }
            if line.starts_with("===") {
                continue;
            }
            if let Some((k, v)) = line.split_once('=') {
                out.insert(k.to_string(), v.to_string());
            }
        }
        Some(out)
    }

    /// Our variables filtered like the golden's `grep -E`, with the pid
    /// normalised (it differs on every run).
    fn ours(env: &Env) -> BTreeMap<String, String> {
        let keep = [
            "SLURM",
            "SBATCH",
            "SRUN",
            "CUDA",
            "TMP",
            "ENVIRONMENT",
            "GPU_DEVICE",
            "ROCR",
            "ZE_AFFINITY",
            "OMPI_MCA",
        ];
        env.vars()
            .iter()
            .filter(|(k, _)| keep.iter().any(|p| k.starts_with(p)))
            .map(|(k, v)| {
                let v = if k == TASK_PID_VAR {
                    "PID".to_string()
                } else {
                    v.clone()
                };
                (k.clone(), v)
            })
            .collect()
    }

    fn check(golden: &str, r: &LaunchBatchRequest) {
        let Some(mut want) = golden_batch_vars(golden) else {
            eprintln!("golden {golden} not available; skipped");
            return;
        };
        want.insert(TASK_PID_VAR.into(), "PID".into());
        // sbatch sends SLURM_JOB_NAME in the job's environment.
        let mut r = r.clone();
        r.environment.push(format!("SLURM_JOB_NAME={}", r.name));
        let got = ours(&batch_env(&r, &ctx(), 0, None));
        assert_eq!(got, want, "golden {golden}");
    }

    /// The job name comes with the environment sbatch sent, never from
    /// the job record: Slurm 22.05 ran `-J foo` renamed to `bar` while
    /// held with SLURM_JOB_NAME=foo.
    #[test]
    fn job_name_only_from_the_submitted_environment() {
        let env = batch_env(&req(14), &ctx(), 0, None);
        assert!(!env.vars().iter().any(|(k, _)| k == "SLURM_JOB_NAME"));
        let mut r = req(14);
        r.environment.push("SLURM_JOB_NAME=foo".into());
        r.name = "bar".into();
        let env = batch_env(&r, &ctx(), 0, None);
        let got: Vec<_> = env
            .vars()
            .iter()
            .filter(|(k, _)| k == "SLURM_JOB_NAME")
            .collect();
        assert_eq!(got, vec![&("SLURM_JOB_NAME".to_owned(), "foo".to_owned())]);
    }

    #[test]
    fn plain_job_matches_golden() {
        check("env_plain_job", &req(14));
    }

    #[test]
    fn one_node_two_tasks_matches_golden() {
        let r = LaunchBatchRequest {
            name: "taskjob.sh".into(),
            cpus_per_node: vec![2],
            ntasks: Some(2),
            ..req(19)
        };
        check("env_nodes1_ntasks2", &r);
    }

    #[test]
    fn two_nodes_four_tasks_matches_golden() {
        let r = LaunchBatchRequest {
            name: "taskjob.sh".into(),
            nodes: "n[1-2]".into(),
            cpus_per_node: vec![2, 2],
            ntasks: Some(4),
            ..req(20)
        };
        check("env_nodes2_ntasks4", &r);
        // With the controller's own figures the result is the same.
        let r = LaunchBatchRequest {
            tasks_per_node: vec![2, 2],
            ..r
        };
        check("env_nodes2_ntasks4", &r);
    }

    #[test]
    fn array_task_matches_golden() {
        let r = LaunchBatchRequest {
            name: "arrayjob.sh".into(),
            array: Some(ArrayInfo {
                array_job_id: 15,
                array_task_id: 1,
                task_count: 4,
                task_min: 0,
                task_max: 3,
                task_step: 1,
            }),
            ..req(17)
        };
        check("env_array_task1", &r);
    }

    #[test]
    fn job_env_comes_first_and_slurm_vars_override() {
        let r = LaunchBatchRequest {
            environment: vec![
                "SLURM_JOB_ID=999".into(),
                "TMPDIR=/scratch".into(),
                "SLURM_PRIO_PROCESS=5".into(),
                "bogus".into(),
                "=x".into(),
            ],
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.vars()[0], ("SLURM_JOB_ID".into(), "14".into()));
        assert_eq!(env.get("TMPDIR"), Some("/scratch"));
        assert_eq!(env.get("SLURM_PRIO_PROCESS"), Some("5"));
        assert_eq!(env.get("bogus"), None);
        assert!(env.get("SLURM_NTASKS").is_none());
        assert!(env.get("SLURM_CPUS_PER_TASK").is_none());
    }

    #[test]
    fn optional_variables() {
        let r = LaunchBatchRequest {
            cpus_per_task: Some(2),
            cpus_per_node: vec![2],
            memory: Some(Memory::MemPerNodeMb(100)),
            reservation: "maint".into(),
            restart_count: 1,
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("SLURM_CPUS_PER_TASK"), Some("2"));
        assert_eq!(env.get("SLURM_MEM_PER_NODE"), Some("100"));
        assert_eq!(env.get("SLURM_JOB_RESERVATION"), Some("maint"));
        assert_eq!(env.get("SLURM_RESTART_COUNT"), Some("1"));
        assert_eq!(env.get("SLURM_TASKS_PER_NODE"), Some("1"));
        assert_eq!(env.get("SLURM_GPU_BIND"), None);
        assert_eq!(env.get("SLURM_NTASKS_PER_CORE"), None);
    }

    /// --gpu-bind (kept as `gpu:<value>`), --ntasks-per-core and
    /// --ntasks-per-socket reach the job from the controller, whatever
    /// --export said.
    #[test]
    fn binding_variables_come_from_the_job() {
        let r = LaunchBatchRequest {
            tres_bind: "gpu:verbose,closest".into(),
            ntasks_per_core: Some(1),
            ntasks_per_socket: Some(2),
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("SLURM_GPU_BIND"), Some("verbose,closest"));
        assert_eq!(env.get("SLURM_NTASKS_PER_CORE"), Some("1"));
        assert_eq!(env.get("SLURM_NTASKS_PER_SOCKET"), Some("2"));
    }

    /// Slurm 22.05 sets HOSTNAME to the NodeName, over the submitter's
    /// (with NodeName=vm3 NodeHostname=localhost on host vm: vm3).
    #[test]
    fn hostname_is_the_node_name() {
        let r = LaunchBatchRequest {
            environment: vec!["HOSTNAME=submitter".into()],
            ..req(14)
        };
        assert_eq!(batch_env(&r, &ctx(), 0, None).get("HOSTNAME"), Some("n1"));
    }

    /// Without accounting there is no account or QOS; Slurm leaves the
    /// variables out instead of setting them empty.
    #[test]
    fn no_account_or_qos_variables_when_empty() {
        let r = LaunchBatchRequest {
            account: String::new(),
            qos: String::new(),
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("SLURM_JOB_ACCOUNT"), None);
        assert_eq!(env.get("SLURM_JOB_QOS"), None);
        let env = batch_env(&req(14), &ctx(), 0, None);
        assert_eq!(env.get("SLURM_JOB_ACCOUNT"), Some("root"));
        assert_eq!(env.get("SLURM_JOB_QOS"), Some("normal"));
    }

    /// The login environment comes first; the job's variables and then
    /// Slurm's go on top of it.
    #[test]
    fn job_variables_override_the_login_environment() {
        let login = Env::from_entries([
            "HOME=/root",
            "PATH=/login/bin",
            "SHLVL=1",
            "SLURM_JOB_ID=1",
            "HOSTNAME=login",
        ]);
        let r = LaunchBatchRequest {
            environment: vec!["PATH=/job/bin".into(), "SLURM_GET_USER_ENV=1".into()],
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, Some(&login));
        assert_eq!(env.vars()[0], ("HOME".into(), "/root".into()));
        assert_eq!(env.get("PATH"), Some("/job/bin"));
        assert_eq!(env.get("SHLVL"), Some("1"));
        assert_eq!(env.get("SLURM_JOB_ID"), Some("14"));
        assert_eq!(env.get("HOSTNAME"), Some("n1"));
        assert_eq!(env.get("SLURM_GET_USER_ENV"), Some("1"));
        // Without a login environment only the job's variables are there.
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("HOME"), None);
    }

    /// Without `--ntasks`, SLURM_TASKS_PER_NODE counts the CPUs (over
    /// `--cpus-per-task`), not the one task the scheduler placed: Slurm
    /// shows `2` for an `--exclusive` job on a 2-CPU node.
    #[test]
    fn tasks_per_node_without_ntasks_follows_the_cpus() {
        let r = LaunchBatchRequest {
            cpus_per_node: vec![2],
            tasks_per_node: vec![1],
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("SLURM_TASKS_PER_NODE"), Some("2"));
        let r = LaunchBatchRequest {
            cpus_per_task: Some(2),
            ..r
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("SLURM_TASKS_PER_NODE"), Some("1"));
        // With --ntasks the controller's figures stand.
        let r = LaunchBatchRequest {
            cpus_per_node: vec![1],
            tasks_per_node: vec![4],
            ntasks: Some(4),
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("SLURM_TASKS_PER_NODE"), Some("4"));
    }

    /// `--mem=0` and `--mem-per-cpu=0` leave the memory variables out.
    #[test]
    fn zero_memory_sets_no_variable() {
        for memory in [Memory::MemPerNodeMb(0), Memory::MemPerCpuMb(0)] {
            let r = LaunchBatchRequest {
                memory: Some(memory),
                ..req(14)
            };
            let env = batch_env(&r, &ctx(), 0, None);
            assert_eq!(env.get("SLURM_MEM_PER_NODE"), None);
            assert_eq!(env.get("SLURM_MEM_PER_CPU"), None);
        }
        let r = LaunchBatchRequest {
            memory: Some(Memory::MemPerCpuMb(50)),
            ..req(14)
        };
        let env = batch_env(&r, &ctx(), 0, None);
        assert_eq!(env.get("SLURM_MEM_PER_CPU"), Some("50"));
    }

    #[test]
    fn derived_task_layout() {
        let r = |cpus: Vec<u32>, ntasks: Option<u32>, cpt: Option<u32>| LaunchBatchRequest {
            cpus_per_node: cpus,
            ntasks,
            cpus_per_task: cpt,
            ..Default::default()
        };
        assert_eq!(tasks_per_node(&r(vec![2, 2], Some(4), None)), vec![2, 2]);
        assert_eq!(tasks_per_node(&r(vec![2, 2], Some(3), None)), vec![2, 1]);
        assert_eq!(tasks_per_node(&r(vec![2, 2], Some(2), None)), vec![1, 1]);
        assert_eq!(tasks_per_node(&r(vec![1, 1], Some(5), None)), vec![3, 2]);
        assert_eq!(tasks_per_node(&r(vec![4], None, Some(2))), vec![2]);
        assert_eq!(tasks_per_node(&r(vec![], Some(3), None)), Vec::<u32>::new());
    }

    proptest::proptest! {
        #[test]
        fn derived_layout_places_every_task(
            cpus in proptest::collection::vec(1u32..64, 1..16),
            ntasks in proptest::option::of(1u32..500),
            cpt in proptest::option::of(1u32..8),
        ) {
            let r = LaunchBatchRequest {
                cpus_per_node: cpus.clone(),
                ntasks,
                cpus_per_task: cpt,
                ..Default::default()
            };
            let t = tasks_per_node(&r);
            proptest::prop_assert_eq!(t.len(), cpus.len());
            if let Some(n) = ntasks {
                proptest::prop_assert_eq!(t.iter().sum::<u32>(), n);
            } else {
                proptest::prop_assert!(t.iter().all(|x| *x >= 1));
            }
            let text = compress_counts(&t);
            proptest::prop_assert!(!text.is_empty());
        }
    }
}
