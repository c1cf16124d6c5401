//! `aftercorr` on a meta record: which of its tasks part ways.
//!
//! A meta record holds the tasks of an array that have not started, under
//! one dependency. With `aftercorr` each task has its own answer, so the
//! pass asks task by task and decides what to record (see the parent
//! module's doc for why tasks are split off rather than tracked inside the
//! meta record). Pure: the world is read, nothing is changed.

use super::{Corr, Dependency, Owner, World};

/// What to record for a meta record after testing its tasks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// The meta record's new dependency; `None` when it stays.
    pub meta: Option<Dependency>,
    /// Tasks to split off, ascending, each with the dependency its record
    /// gets.
    pub split: Vec<(u32, Dependency)>,
}

/// Tests `dep`, the dependency of the meta record `owner` holding `tasks`
/// (ascending), once per task.
///
/// * Every task gets the same answer: nothing is split, the meta record
///   takes that answer (`meta` is `None` when nothing changed).
/// * Otherwise the tasks whose answer is "nothing changed" stay in the
///   meta record, which keeps its text, and every other task is split
///   off with its answer. When every task's answer changed, the last task
///   stays, and the meta record takes its answer.
///
/// So the meta record always keeps at least one task, and the tasks it
/// keeps share its dependency.
pub fn plan(
    dep: &Dependency,
    owner: &Owner<'_>,
    tasks: &[u32],
    world: &impl World,
    now: i64,
) -> Plan {
    let answers: Vec<(u32, Option<Dependency>)> = tasks
        .iter()
        .map(|&t| {
            let me = Owner {
                corr: Corr::Task(t),
                ..*owner
            };
            (t, dep.refreshed(&me, world, now))
        })
        .collect();
    let Some((_, last)) = answers.last() else {
        return Plan::default();
    };
    if answers.iter().all(|(_, a)| a == last) {
        return Plan {
            meta: last.clone(),
            split: Vec::new(),
        };
    }
    let keep = if answers.iter().any(|(_, a)| a.is_none()) {
        None
    } else {
        last.clone()
    };
    let split = answers
        .iter()
        .filter(|(_, a)| *a != keep)
        .map(|(t, a)| (*t, a.clone().unwrap_or_else(|| dep.clone())))
        .collect();
    Plan { meta: keep, split }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use slurm_common::state::JobState;

    use super::super::{Upstream, Verdict};
    use super::*;

    /// Plain jobs and the tasks of arrays, by id.
    #[derive(Default)]
    struct Tasks {
        jobs: HashMap<u32, JobState>,
        tasks: HashMap<(u32, u32), JobState>,
    }

    fn up(state: JobState) -> Upstream {
        Upstream {
            state,
            special_exit: false,
            start_time: 1,
        }
    }

    impl World for Tasks {
        fn upstream(&self, job_id: u32) -> Option<Upstream> {
            self.jobs.get(&job_id).copied().map(up)
        }
        fn upstream_task(&self, job_id: u32, task: u32) -> Option<Upstream> {
            self.tasks.get(&(job_id, task)).copied().map(up)
        }
        fn singleton_blocked(&self, _: &Owner<'_>) -> bool {
            false
        }
    }

    /// Array 7 with tasks 0-3 in the given states, running as a whole.
    fn array7(states: [JobState; 4]) -> Tasks {
        let mut w = Tasks::default();
        w.jobs.insert(7, JobState::Running);
        for (t, s) in (0..).zip(states) {
            w.tasks.insert((7, t), s);
        }
        w
    }

    const META: Owner<'static> = Owner {
        id: 50,
        uid: 1000,
        name: "wrap",
        corr: Corr::Meta,
    };

    fn dep(text: &str) -> Dependency {
        Dependency::parse(text).unwrap()
    }

    fn texts(p: &Plan) -> (Option<String>, Vec<(u32, String)>) {
        (
            p.meta.as_ref().map(|d| d.to_string()),
            p.split.iter().map(|(t, d)| (*t, d.to_string())).collect(),
        )
    }

    use JobState::{Completed as C, Failed as F, Pending as P, Running as R};

    #[test]
    fn nothing_happens_while_every_task_waits() {
        let w = array7([R, R, P, P]);
        let p = plan(&dep("aftercorr:7"), &META, &[0, 1, 2, 3], &w, 0);
        assert_eq!(p, Plan::default());
    }

    #[test]
    fn tasks_whose_counterpart_ended_are_split_off_with_their_answer() {
        let w = array7([C, R, F, P]);
        let p = plan(&dep("aftercorr:7"), &META, &[0, 1, 2, 3], &w, 0);
        assert_eq!(
            texts(&p),
            (
                None,
                vec![(0, String::new()), (2, "aftercorr:7(failed)".into())]
            )
        );
        assert_eq!(p.split[1].1.verdict(), Verdict::Never);
    }

    #[test]
    fn one_answer_for_all_is_recorded_on_the_meta_record_alone() {
        let w = array7([C, C, C, C]);
        let p = plan(&dep("aftercorr:7"), &META, &[1, 3], &w, 0);
        assert_eq!(texts(&p), (Some(String::new()), vec![]));
        let w = array7([F, F, C, C]);
        let p = plan(&dep("aftercorr:7"), &META, &[0, 1], &w, 0);
        assert_eq!(texts(&p), (Some("aftercorr:7(failed)".into()), vec![]));
    }

    #[test]
    fn when_every_answer_changed_the_last_task_stays() {
        let w = array7([C, F, C, F]);
        let p = plan(&dep("aftercorr:7"), &META, &[0, 1, 2, 3], &w, 0);
        assert_eq!(
            texts(&p),
            (
                Some("aftercorr:7(failed)".into()),
                vec![(0, String::new()), (2, String::new())]
            )
        );
    }

    #[test]
    fn a_task_without_a_counterpart_waits_for_the_whole_job() {
        // Array 7 has tasks 0-3; task 5 of this one follows all of 7.
        let mut w = array7([C, C, C, C]);
        let p = plan(&dep("aftercorr:7"), &META, &[0, 5], &w, 0);
        assert_eq!(texts(&p), (None, vec![(0, String::new())]));
        w.jobs.insert(7, C);
        let p = plan(&dep("aftercorr:7"), &META, &[5], &w, 0);
        assert_eq!(texts(&p), (Some(String::new()), vec![]));
        // A plain job: every task follows it alike.
        w.jobs.insert(8, F);
        let p = plan(&dep("aftercorr:8"), &META, &[0, 1, 2], &w, 0);
        assert_eq!(texts(&p), (Some("aftercorr:8(failed)".into()), vec![]));
    }

    #[test]
    fn other_parts_are_kept_in_each_answer() {
        let mut w = array7([C, R, R, R]);
        w.jobs.insert(9, R);
        let p = plan(&dep("aftercorr:7,afterany:9"), &META, &[0, 1], &w, 0);
        assert_eq!(
            texts(&p),
            (None, vec![(0, "afterany:9(unfulfilled)".into())])
        );
        // With `?`, a counterpart that completed is enough.
        let p = plan(&dep("aftercorr:7?afterany:9"), &META, &[0, 1], &w, 0);
        assert_eq!(texts(&p), (None, vec![(0, String::new())]));
    }

    #[test]
    fn the_meta_record_as_a_whole_waits_unless_the_job_is_gone() {
        use super::super::{test_part, PartState};
        let w = array7([C, C, C, C]);
        let part = &dep("aftercorr:7").parts[0];
        assert_eq!(test_part(part, &META, &w, 0), PartState::Unfulfilled);
        let gone = &dep("aftercorr:99").parts[0];
        assert_eq!(test_part(gone, &META, &w, 0), PartState::Fulfilled);
        // Not an array: afterok on the job as a whole.
        let plain = Owner {
            corr: Corr::Whole,
            ..META
        };
        assert_eq!(test_part(part, &plain, &w, 0), PartState::Unfulfilled);
        let mut done = array7([C, C, C, C]);
        done.jobs.insert(7, C);
        assert_eq!(test_part(part, &plain, &done, 0), PartState::Fulfilled);
        // A task record: its counterpart.
        let task = Owner {
            corr: Corr::Task(1),
            ..META
        };
        let w = array7([R, F, R, R]);
        assert_eq!(test_part(part, &task, &w, 0), PartState::Failed);
    }

    #[test]
    fn the_plan_never_empties_the_meta_record() {
        let states = [C, F, R, P];
        for a in states {
            for b in states {
                for c in states {
                    let w = array7([a, b, c, R]);
                    let p = plan(&dep("aftercorr:7"), &META, &[0, 1, 2], &w, 0);
                    assert!(p.split.len() < 3, "{a:?} {b:?} {c:?}: {p:?}");
                    // Split tasks come in order, each one once.
                    assert!(p.split.windows(2).all(|s| s[0].0 < s[1].0));
                }
            }
        }
    }
}
