//! Which jobs a [`v1::JobFilter`] selects, shared by the controller's own
//! operations (cancel, hold, ... by filter) and the queries that feed
//! `squeue` and `scancel`, so that both read every field the same way. A
//! filter field that is set and that no job matches selects nothing: a
//! field left out here would turn `scancel --qos=x` into "every job".

use slurm_proto::v1;

use super::Job;

/// Whether `f`'s fields other than the ids select `job`. `nodes`: the node
/// indices `f.nodelist` names (ignored when the filter has no node list).
pub fn selects(job: &Job, f: &v1::JobFilter, nodes: &[usize]) -> bool {
    let any = |list: &[String], value: &str| list.is_empty() || list.iter().any(|x| x == value);
    (f.user_ids.is_empty() || f.user_ids.contains(&job.uid))
        && any(&f.names, &job.name)
        && (f.partitions.is_empty() || f.partitions.iter().any(|p| job.in_partition(p)))
        && any(&f.accounts, &job.spec.account)
        && any(&f.qos, &job.spec.qos)
        && any(&f.reservations, &job.spec.reservation)
        && (f.wckeys.is_empty() || f.wckeys.iter().any(|k| wckey_matches(k, &job.spec.wckey)))
        && (f.states.is_empty()
            || f.states
                .contains(&(v1::JobState::from(job.status.state) as i32)))
        && (f.nodelist.is_empty() || job.alloc.iter().any(|a| nodes.contains(&a.node_index)))
}

/// Whether the filter has a field besides the ids: without one, and
/// without ids, it names no job at all.
pub fn has_criteria(f: &v1::JobFilter) -> bool {
    !(f.user_ids.is_empty()
        && f.names.is_empty()
        && f.partitions.is_empty()
        && f.accounts.is_empty()
        && f.qos.is_empty()
        && f.reservations.is_empty()
        && f.wckeys.is_empty()
        && f.states.is_empty()
        && f.nodelist.is_empty())
}

/// Whether `wanted` (scancel --wckey) selects a job whose key is `key`: a
/// key given by default is stored with a leading `*`, and a wanted name
/// without one matches it too.
fn wckey_matches(wanted: &str, key: &str) -> bool {
    let key = if wanted.starts_with('*') {
        key
    } else {
        key.strip_prefix('*').unwrap_or(key)
    };
    wanted == key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_wckeys_match_with_or_without_the_star() {
        assert!(wckey_matches("proj", "*proj"));
        assert!(wckey_matches("proj", "proj"));
        assert!(wckey_matches("*proj", "*proj"));
        assert!(!wckey_matches("*proj", "proj"));
        assert!(!wckey_matches("proj", "other"));
        assert!(!wckey_matches("proj", ""));
    }

    #[test]
    fn a_filter_with_only_ids_has_no_criteria() {
        assert!(!has_criteria(&v1::JobFilter {
            job_ids: vec![1],
            ..Default::default()
        }));
        for f in [
            v1::JobFilter {
                qos: vec!["q".into()],
                ..Default::default()
            },
            v1::JobFilter {
                wckeys: vec!["k".into()],
                ..Default::default()
            },
            v1::JobFilter {
                nodelist: "n1".into(),
                ..Default::default()
            },
        ] {
            assert!(has_criteria(&f), "{f:?}");
        }
    }
}
