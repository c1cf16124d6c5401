//! Small builders shared by the unit tests.

use slurm_common::ids::JobId;

use crate::request::JobRequest;
use crate::view::{ClusterView, NodeView, PartitionView};

/// `n` idle nodes `n1..` with `cpus` CPUs and `mem` MB each, in one UP
/// partition `debug` (like the reference cluster: `cluster(4, 2, 4000)`).
pub fn cluster(n: usize, cpus: u32, mem: u64) -> ClusterView {
    ClusterView {
        nodes: (1..=n)
            .map(|i| NodeView::new(format!("n{i}"), cpus, mem))
            .collect(),
        partitions: vec![PartitionView::new("debug", (0..n).collect())],
        config: Default::default(),
        licenses: Vec::new(),
    }
}

/// A one-task job `id` in partition 0, submitted at time `id`.
pub fn job(id: u32) -> JobRequest {
    let mut j = JobRequest::new(JobId(id), 0);
    j.submit_time = i64::from(id);
    j
}
