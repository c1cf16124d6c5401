//! Which `JobInfo` fields a `squeue` report reads.
//!
//! `GetJobsRequest.fields` lets a client name the fields it will read; the
//! controller leaves the others empty, and protobuf does not send empty
//! fields. The default `squeue` report reads a dozen of the record's
//! ninety-odd fields, so asking for just those makes the reply, and the
//! time to build, send and decode it, several times smaller. The map below
//! must cover every field a renderer, filter or sort key touches; the test at
//! the bottom renders every code from a full record and from one stripped to
//! the listed fields and requires the same text.

use super::spec::{Item, SortKey};

/// Fields every report needs: the id and array parts (ids, `-r`), the
/// state (state filter, reason), and the names the client filters on.
const BASE: &[u32] = &[
    1, 2, 3, 4, 5, // job_id, array_job_id, array_task_id, array_task_spec, throttle
    6, 7, 8, // name, user_id, user_name
    20, 21, 22, 23, // state, state_flags, state_reason, state_description
    27, 28, 60, 68, // account, qos, partition, reservation
];

/// The fields code letter `code` reads (beyond `BASE`); `None` for a code
/// this map does not know, which means "ask for everything".
pub fn for_code(code: char) -> Option<&'static [u32]> {
    Some(match code {
        'A' | 'F' | 'i' | 'j' | 'K' | 'u' | 'U' | 'P' | 'a' | 'q' | 'v' | 'r' | 't' | 'T' => &[],
        'H' | 'I' | 'J' | 's' | 'X' | 'z' => &[],
        'B' => &[66],
        'b' => &[93],
        'C' => &[82],
        'c' => &[86],
        'D' => &[80],
        'd' => &[89],
        'E' => &[24],
        'e' => &[47],
        'f' => &[100],
        'G' => &[9],
        'g' => &[9, 10],
        'h' => &[101],
        'k' => &[115],
        'L' => &[40, 41],
        'l' => &[41],
        'M' => &[40],
        'm' => &[87, 88],
        'N' => &[65],
        'n' => &[63],
        'O' => &[102],
        'o' => &[110],
        'p' | 'Q' => &[25],
        'R' => &[65],
        'S' => &[46],
        'V' => &[43],
        'W' => &[94],
        'w' => &[69],
        'x' => &[64],
        'Y' => &[67],
        'y' => &[26],
        'Z' => &[111],
        _ => return None,
    })
}

/// The field numbers to ask for: empty (everything) when `everything` is
/// set (`--json`) or a code is not in the map.
pub fn for_report(items: &[Item], sort: &[SortKey], everything: bool) -> Vec<u32> {
    if everything {
        return Vec::new();
    }
    let mut out: Vec<u32> = BASE.to_vec();
    let codes = items
        .iter()
        .filter_map(|i| match i {
            Item::Field { code, .. } => Some(*code),
            Item::Literal(_) => None,
        })
        .chain(sort.iter().map(|k| k.code));
    for code in codes {
        match for_code(code) {
            Some(tags) => out.extend_from_slice(tags),
            None => return Vec::new(),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::squeue::write_value;
    use crate::format::Ctx;
    use prost::Message;
    use slurm_proto::v1::{self, JobInfo};

    /// Drops the top-level fields of an encoded message whose numbers are
    /// not in `keep`: what the controller's field selection amounts to.
    fn strip(job: &JobInfo, keep: &[u32]) -> JobInfo {
        let bytes = job.encode_to_vec();
        let mut out = Vec::new();
        let mut at = 0usize;
        let varint = |b: &[u8], at: &mut usize| -> u64 {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let byte = b[*at];
                *at += 1;
                v |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    return v;
                }
                shift += 7;
            }
        };
        while at < bytes.len() {
            let start = at;
            let key = varint(&bytes, &mut at);
            let tag = (key >> 3) as u32;
            match key & 7 {
                0 => {
                    varint(&bytes, &mut at);
                }
                1 => at += 8,
                2 => {
                    let len = varint(&bytes, &mut at) as usize;
                    at += len;
                }
                5 => at += 4,
                other => panic!("wire type {other}"),
            }
            if tag == 1 || keep.contains(&tag) {
                out.extend_from_slice(&bytes[start..at]);
            }
        }
        JobInfo::decode(&out[..]).expect("decodes")
    }

    fn full_job(state: v1::JobState) -> JobInfo {
        JobInfo {
            job_id: 42,
            array_job_id: Some(40),
            array_task_id: Some(2),
            array_task_spec: String::new(),
            name: "train".into(),
            user_id: 1000,
            user_name: "alice".into(),
            group_id: 100,
            group_name: "users".into(),
            state: state as i32,
            state_reason: "Resources".into(),
            dependency: "afterok:7".into(),
            priority: 4_294_000,
            nice: 5,
            account: "proj".into(),
            qos: "normal".into(),
            run_time_secs: 3_725,
            time_limit: Some(v1::TimeLimit {
                limit: Some(v1::time_limit::Limit::Minutes(90)),
            }),
            submit_time: 1_700_000_000,
            start_time: 1_700_000_100,
            end_time: 1_700_005_500,
            partition: "debug".into(),
            required_nodes: "n1".into(),
            excluded_nodes: "n4".into(),
            nodes: "n[1-2]".into(),
            batch_host: "n1".into(),
            scheduled_nodes: "n3".into(),
            reservation: "maint".into(),
            wckey: "wk".into(),
            num_nodes: 2,
            num_cpus: 4,
            min_cpus_per_node: 2,
            memory: Some(v1::job_info::Memory::MemPerCpuMb(500)),
            min_tmp_disk_mb: 10,
            gres: "gpu:1".into(),
            licenses: "lic:2".into(),
            features: "fast".into(),
            sharing: v1::NodeSharing::Exclusive as i32,
            contiguous: true,
            command: "/home/alice/run.sh".into(),
            work_dir: "/home/alice".into(),
            comment: "note".into(),
            ..Default::default()
        }
    }

    #[test]
    fn every_known_code_renders_the_same_from_the_selected_fields() {
        let ctx = Ctx::utc(1_700_003_725);
        for state in [v1::JobState::Pending, v1::JobState::Running] {
            let job = full_job(state);
            for code in ('A'..='Z').chain('a'..='z') {
                if for_code(code).is_none() {
                    continue;
                }
                let items = [Item::Field {
                    code,
                    width: None,
                    right: false,
                }];
                let stripped = strip(&job, &for_report(&items, &[], false));
                let (mut want, mut got) = (String::new(), String::new());
                write_value(&mut want, code, &job, &ctx);
                write_value(&mut got, code, &stripped, &ctx);
                assert_eq!(got, want, "code %{code} in state {state:?}");
            }
        }
    }

    #[test]
    fn unknown_codes_and_json_ask_for_everything() {
        let items = [Item::Field {
            code: '~',
            width: None,
            right: false,
        }];
        assert!(for_report(&items, &[], false).is_empty());
        assert!(for_report(&[], &[], true).is_empty());
        let sort = [SortKey {
            code: 'M',
            descending: false,
        }];
        let tags = for_report(&[], &sort, false);
        assert!(tags.contains(&40) && tags.contains(&1) && !tags.contains(&110));
    }
}
