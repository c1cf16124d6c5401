//! The dependency text (parse, show, hostile input) and the rules of each
//! type, against a hand-made world.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

fn part(kind: Kind, job_id: u32) -> Part {
    Part {
        kind,
        job_id,
        task: None,
        minutes: 0,
        state: PartState::Unfulfilled,
    }
}

fn parse(text: &str) -> Dependency {
    Dependency::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

#[test]
fn every_type_and_both_separators_parse() {
    let d = parse(
        "afterok:12:13,afterany:4,after:5+10,afternotok:6,aftercorr:7,afterburstbuffer:8,singleton",
    );
    assert!(!d.any);
    assert_eq!(
        d.parts,
        vec![
            part(Kind::AfterOk, 12),
            part(Kind::AfterOk, 13),
            part(Kind::AfterAny, 4),
            Part {
                minutes: 10,
                ..part(Kind::After, 5)
            },
            part(Kind::AfterNotOk, 6),
            part(Kind::AfterCorr, 7),
            part(Kind::AfterBurstBuffer, 8),
            part(Kind::Singleton, 0),
        ]
    );
    let d = parse("afterok:1?afternotok:1");
    assert!(d.any);
    assert_eq!(d.parts.len(), 2);
}

#[test]
fn type_names_ignore_case_and_show_in_lower_case() {
    let d = parse("AfterOK:3,SINGLETON");
    assert_eq!(
        d.to_string(),
        "afterok:3(unfulfilled),singleton(unfulfilled)"
    );
}

#[test]
fn empty_text_and_zero_mean_none() {
    for t in ["", "   ", "0", " 0 "] {
        let d = parse(t);
        assert!(!d.is_active(), "{t:?}");
        assert_eq!(d.to_string(), "");
        assert_eq!(d.verdict(), Verdict::Satisfied);
    }
}

#[test]
fn a_bare_job_id_is_the_old_form_of_afterany() {
    assert_eq!(
        parse("12,13").parts,
        vec![part(Kind::AfterAny, 12), part(Kind::AfterAny, 13)]
    );
}

#[test]
fn repeated_conditions_are_kept_once() {
    let d = parse("afterok:5:5,afterok:5,afterany:5");
    assert_eq!(
        d.parts,
        vec![part(Kind::AfterOk, 5), part(Kind::AfterAny, 5)]
    );
}

#[test]
fn states_shown_by_slurm_read_back() {
    let d =
        parse("afterok:2(failed),afterok:3(unfulfilled),after:4+2(Fulfilled),singleton(failed)");
    let states: Vec<PartState> = d.parts.iter().map(|p| p.state).collect();
    assert_eq!(
        states,
        vec![
            PartState::Failed,
            PartState::Unfulfilled,
            // Only the controller decides that a part holds.
            PartState::Unfulfilled,
            PartState::Failed,
        ]
    );
    assert_eq!(
        d.to_string(),
        "afterok:2(failed),afterok:3(unfulfilled),after:4+2(unfulfilled),singleton(failed)"
    );
}

#[test]
fn the_shown_form_matches_real_slurm() {
    // scontrol_show_job_dependency.out, ..._never.out
    assert_eq!(parse("afterok:2").to_string(), "afterok:2(unfulfilled)");
    assert_eq!(parse("afterok:2(failed)").to_string(), "afterok:2(failed)");
    assert_eq!(
        parse("afterok:2?afterany:3_*").to_string(),
        "afterok:2(unfulfilled)?afterany:3_*(unfulfilled)"
    );
}

#[test]
fn malformed_text_is_refused_with_the_reason() {
    use DependError as E;
    let cases: Vec<(&str, DependError)> = vec![
        ("foo", E::UnknownType { word: "foo".into() }),
        ("foo:1", E::UnknownType { word: "foo".into() }),
        (
            "afterok",
            E::MissingJob {
                item: "afterok".into(),
            },
        ),
        (
            "afterok:",
            E::BadJobId {
                text: String::new(),
            },
        ),
        ("afterok:0", E::BadJobId { text: "0".into() }),
        ("afterok:x", E::BadJobId { text: "x".into() }),
        ("afterok:-5", E::BadJobId { text: "-5".into() }),
        ("afterok: 5", E::BadJobId { text: " 5".into() }),
        (
            "afterok:1::2",
            E::BadJobId {
                text: String::new(),
            },
        ),
        ("afterok:1,", E::EmptyItem { offset: 10 }),
        (",afterok:1", E::EmptyItem { offset: 0 }),
        ("afterok:1,,afterok:2", E::EmptyItem { offset: 10 }),
        ("afterok:1,afterok:2?afterok:3", E::MixedSeparators),
        ("after:1+0", E::BadTime { text: "1+0".into() }),
        ("after:1+", E::BadTime { text: "1+".into() }),
        ("after:1+x", E::BadTime { text: "1+x".into() }),
        (
            "afterok:1_[1-3]",
            E::BadTask {
                text: "1_[1-3]".into(),
            },
        ),
        ("afterok:1_", E::BadTask { text: "1_".into() }),
        (
            "afterok:1(done)",
            E::BadState {
                text: "(done)".into(),
            },
        ),
        (
            "afterok:1(failed",
            E::BadState {
                text: "(failed".into(),
            },
        ),
        ("afterok:1x", E::BadState { text: "x".into() }),
        ("singletonx", E::BadState { text: "x".into() }),
        ("singleton:5", E::BadState { text: ":5".into() }),
        ("12x", E::BadJobId { text: "12x".into() }),
        (
            "12+5",
            E::BadJobId {
                text: "12+5".into(),
            },
        ),
        ("expand:4", E::Expand),
    ];
    for (text, want) in cases {
        assert_eq!(Dependency::parse(text), Err(want), "{text:?}");
    }
}

#[test]
fn hostile_numbers_and_text_are_refused_without_panic() {
    for text in [
        "afterok:4294967296",
        "afterok:99999999999999999999999999",
        "after:1+4294967296",
        "afterok:1_4294967296",
        "afterok:\u{661}",
        "\u{e9}",
        "afterok:1(\u{e9})",
        "singleto\u{e9}",
        "s\u{e9}",
        "after\u{0}ok:1",
        "((((",
        ")",
        "?",
        ",",
        ":",
    ] {
        let r = Dependency::parse(text);
        assert!(r.is_err(), "{text:?}: {r:?}");
        assert_eq!(r.unwrap_err().code(), ErrorCode::Dependency, "{text:?}");
    }
    // The largest values that fit are fine.
    let d = parse("after:4294967295+4294967295");
    assert_eq!(d.parts[0].job_id, u32::MAX);
    assert_eq!(d.parts[0].minutes, u32::MAX);
}

#[test]
fn error_codes_are_slurms() {
    assert_eq!(DependError::Expand.code(), ErrorCode::NotSupported);
    assert_eq!(
        DependError::Circular {
            job_id: 1,
            through: 2
        }
        .code(),
        ErrorCode::CircularDependency
    );
    assert_eq!(
        DependError::OnItself { job_id: 1 }.code(),
        ErrorCode::Dependency
    );
    assert_eq!(ErrorCode::Dependency.message(), "Job dependency problem");
}

// ------------------------------------------------------------ evaluation

/// Jobs by id, and which (uid, name) pairs block a singleton.
#[derive(Default)]
struct FakeWorld {
    jobs: HashMap<u32, Upstream>,
    /// (uid, name) -> (runs, lowest pending id)
    singles: HashMap<(u32, String), (bool, u32)>,
}

impl FakeWorld {
    fn with(mut self, id: u32, state: JobState, start_time: i64) -> FakeWorld {
        self.jobs.insert(
            id,
            Upstream {
                state,
                special_exit: false,
                start_time,
            },
        );
        self
    }
}

impl World for FakeWorld {
    fn upstream(&self, job_id: u32) -> Option<Upstream> {
        self.jobs.get(&job_id).copied()
    }
    fn singleton_blocked(&self, owner: &Owner<'_>) -> bool {
        self.singles
            .get(&(owner.uid, owner.name.to_string()))
            .is_some_and(|&(runs, lowest)| runs || lowest < owner.id)
    }
}

const ME: Owner<'static> = Owner {
    id: 50,
    uid: 1000,
    name: "wrap",
    corr: Corr::Whole,
};
const NOW: i64 = 10_000;

fn state_of(kind: Kind, up: JobState) -> PartState {
    let world = FakeWorld::default().with(7, up, 100);
    test_part(&part(kind, 7), &ME, &world, NOW)
}

#[test]
fn each_type_follows_slurms_rules() {
    use JobState as S;
    use PartState::{Failed as X, Fulfilled as F, Unfulfilled as U};
    let ended_other = [
        S::Cancelled,
        S::Failed,
        S::Timeout,
        S::NodeFail,
        S::Preempted,
        S::BootFail,
        S::Deadline,
        S::OutOfMemory,
    ];
    for (kind, pending, running, completed, other) in [
        (Kind::After, U, F, F, F),
        (Kind::AfterAny, U, U, F, F),
        (Kind::AfterBurstBuffer, U, U, F, F),
        (Kind::AfterOk, U, U, F, X),
        (Kind::AfterCorr, U, U, F, X),
        (Kind::AfterNotOk, U, U, X, F),
    ] {
        assert_eq!(state_of(kind, S::Pending), pending, "{kind:?} pending");
        assert_eq!(state_of(kind, S::Running), running, "{kind:?} running");
        assert_eq!(state_of(kind, S::Suspended), running, "{kind:?} suspended");
        assert_eq!(
            state_of(kind, S::Completed),
            completed,
            "{kind:?} completed"
        );
        for s in ended_other {
            assert_eq!(state_of(kind, s), other, "{kind:?} {s:?}");
        }
    }
}

#[test]
fn a_job_that_is_gone_or_an_array_task_counts_as_fulfilled() {
    let world = FakeWorld::default().with(7, JobState::Pending, 0);
    for kind in [Kind::After, Kind::AfterOk, Kind::AfterNotOk, Kind::AfterAny] {
        assert_eq!(
            test_part(&part(kind, 8), &ME, &world, NOW),
            PartState::Fulfilled
        );
        let task = Part {
            task: Some(Task::Id(2)),
            ..part(kind, 7)
        };
        assert_eq!(test_part(&task, &ME, &world, NOW), PartState::Fulfilled);
        let whole = Part {
            task: Some(Task::All),
            ..part(kind, 7)
        };
        assert_eq!(test_part(&whole, &ME, &world, NOW), PartState::Unfulfilled);
    }
}

#[test]
fn afternotok_holds_for_a_special_exit() {
    let mut world = FakeWorld::default();
    world.jobs.insert(
        7,
        Upstream {
            state: JobState::Pending,
            special_exit: true,
            start_time: 0,
        },
    );
    assert_eq!(
        test_part(&part(Kind::AfterNotOk, 7), &ME, &world, NOW),
        PartState::Fulfilled
    );
}

#[test]
fn after_with_minutes_waits_from_the_start() {
    let p = Part {
        minutes: 2,
        ..part(Kind::After, 7)
    };
    let world = FakeWorld::default().with(7, JobState::Running, NOW - 119);
    assert_eq!(test_part(&p, &ME, &world, NOW), PartState::Unfulfilled);
    assert_eq!(test_part(&p, &ME, &world, NOW + 1), PartState::Fulfilled);
    let dep = Dependency {
        parts: vec![p.clone()],
        ..Dependency::default()
    };
    assert_eq!(dep.next_check(&world, NOW), Some(NOW + 1));
    assert_eq!(dep.next_check(&world, NOW + 1), None);
    // Not started yet: nothing to wait for on the clock.
    let pending = FakeWorld::default().with(7, JobState::Pending, 0);
    assert_eq!(test_part(&p, &ME, &pending, NOW), PartState::Unfulfilled);
    assert_eq!(dep.next_check(&pending, NOW), None);
    // Cancelled while pending: it "started" when it ended.
    let cancelled = FakeWorld::default().with(7, JobState::Cancelled, NOW - 120);
    assert_eq!(test_part(&p, &ME, &cancelled, NOW), PartState::Fulfilled);
}

#[test]
fn singleton_waits_for_running_jobs_and_earlier_pending_ones() {
    let mut world = FakeWorld::default();
    let single = part(Kind::Singleton, 0);
    assert_eq!(test_part(&single, &ME, &world, NOW), PartState::Fulfilled);
    world
        .singles
        .insert((1000, "wrap".into()), (true, u32::MAX));
    assert_eq!(test_part(&single, &ME, &world, NOW), PartState::Unfulfilled);
    world.singles.insert((1000, "wrap".into()), (false, 49));
    assert_eq!(test_part(&single, &ME, &world, NOW), PartState::Unfulfilled);
    // Itself (the lowest pending) or later ones do not count.
    world.singles.insert((1000, "wrap".into()), (false, 50));
    assert_eq!(test_part(&single, &ME, &world, NOW), PartState::Fulfilled);
    // Another user's or another name's jobs do not count.
    world.singles.clear();
    world.singles.insert((1001, "wrap".into()), (true, 1));
    world.singles.insert((1000, "other".into()), (true, 1));
    assert_eq!(test_part(&single, &ME, &world, NOW), PartState::Fulfilled);
    // A job without a name matches nothing.
    world.singles.insert((1000, String::new()), (true, 1));
    let nameless = Owner { name: "", ..ME };
    assert_eq!(
        test_part(&single, &nameless, &world, NOW),
        PartState::Fulfilled
    );
}

#[test]
fn fulfilled_and_failed_parts_stay_so() {
    let world = FakeWorld::default().with(7, JobState::Pending, 0);
    for s in [PartState::Fulfilled, PartState::Failed] {
        let p = Part {
            state: s,
            ..part(Kind::AfterOk, 7)
        };
        assert_eq!(test_part(&p, &ME, &world, NOW), s);
    }
}

#[test]
fn all_must_hold_with_commas_and_one_with_question_marks() {
    let world = FakeWorld::default()
        .with(1, JobState::Completed, 5)
        .with(2, JobState::Running, 5)
        .with(3, JobState::Failed, 5);
    // ,: the fulfilled part is dropped, the rest waits.
    let d = parse("afterok:1,afterok:2")
        .refreshed(&ME, &world, NOW)
        .unwrap();
    assert_eq!(d.to_string(), "afterok:2(unfulfilled)");
    assert_eq!(d.verdict(), Verdict::Waiting);
    // ,: one failure is enough to never hold; it is shown.
    let d = parse("afterok:3,afterok:2")
        .refreshed(&ME, &world, NOW)
        .unwrap();
    assert_eq!(d.to_string(), "afterok:3(failed),afterok:2(unfulfilled)");
    assert_eq!(d.verdict(), Verdict::Never);
    // ?: one fulfilled part satisfies the whole.
    let d = parse("afterok:2?afterok:1")
        .refreshed(&ME, &world, NOW)
        .unwrap();
    assert_eq!(
        (d.to_string(), d.verdict()),
        (String::new(), Verdict::Satisfied)
    );
    // ?: a failure leaves the others to wait...
    let d = parse("afterok:3?afterok:2")
        .refreshed(&ME, &world, NOW)
        .unwrap();
    assert_eq!(d.to_string(), "afterok:3(failed)?afterok:2(unfulfilled)");
    assert_eq!(d.verdict(), Verdict::Waiting);
    // ... and only when all failed does it never hold.
    let d = parse("afterok:3?afternotok:1")
        .refreshed(&ME, &world, NOW)
        .unwrap();
    assert_eq!(d.to_string(), "afterok:3(failed)?afternotok:1(failed)");
    assert_eq!(d.verdict(), Verdict::Never);
    // A job that is gone satisfies a ? dependency at once.
    let d = parse("afterok:99?afterok:2")
        .refreshed(&ME, &world, NOW)
        .unwrap();
    assert!(!d.is_active());
    // Nothing changed: nothing to record.
    assert_eq!(parse("afterok:2").refreshed(&ME, &world, NOW), None);
}

#[test]
fn the_last_condition_shows_without_a_separator_and_reads_back_the_same() {
    let world = FakeWorld::default()
        .with(1, JobState::Failed, 5)
        .with(2, JobState::Completed, 5);
    let d = parse("afterok:1,afterok:2")
        .refreshed(&ME, &world, NOW)
        .unwrap();
    assert_eq!(d.to_string(), "afterok:1(failed)");
    assert_eq!(parse(&d.to_string()), d);
}

// ------------------------------------------------------------ properties

fn arb_part() -> impl Strategy<Value = Part> {
    let kind = prop_oneof![
        Just(Kind::After),
        Just(Kind::AfterAny),
        Just(Kind::AfterOk),
        Just(Kind::AfterNotOk),
        Just(Kind::AfterCorr),
        Just(Kind::AfterBurstBuffer),
        Just(Kind::Singleton),
    ];
    let task = prop_oneof![
        Just(None),
        Just(Some(Task::All)),
        any::<u32>().prop_map(|t| Some(Task::Id(t)))
    ];
    let state = prop_oneof![Just(PartState::Unfulfilled), Just(PartState::Failed)];
    (kind, 1..=u32::MAX, task, any::<u32>(), state).prop_map(
        |(kind, job_id, task, minutes, state)| {
            if kind == Kind::Singleton {
                Part {
                    kind,
                    job_id: 0,
                    task: None,
                    minutes: 0,
                    state,
                }
            } else {
                Part {
                    kind,
                    job_id,
                    task,
                    minutes,
                    state,
                }
            }
        },
    )
}

proptest! {
    /// What is shown reads back as the same dependency: the text is the
    /// persistent form.
    #[test]
    fn shown_text_reads_back_the_same(parts in proptest::collection::vec(arb_part(), 0..6), any_sep: bool) {
        let mut d = Dependency { any: any_sep, parts: Vec::new(), kill_invalid: None };
        for p in parts {
            d.push(p);
        }
        d.normalize();
        let text = d.to_string();
        prop_assert_eq!(Dependency::parse(&text).unwrap(), d);
    }

    /// Any text at all: an answer, never a panic; what parses shows as
    /// text that parses to the same.
    #[test]
    fn any_text_parses_or_is_refused(text in "\\PC{0,40}") {
        if let Ok(d) = Dependency::parse(&text) {
            prop_assert_eq!(Dependency::parse(&d.to_string()).unwrap(), d);
        }
    }

    /// Text built from the grammar's pieces, with noise.
    #[test]
    fn near_miss_text_never_panics(
        pieces in proptest::collection::vec(
            prop_oneof![
                Just("after"), Just("afterok"), Just("singleton"), Just(":"),
                Just(","), Just("?"), Just("+"), Just("_"), Just("*"), Just("("),
                Just(")"), Just("failed"), Just("1"), Just("4294967296"), Just("0"),
                Just("\u{e9}"), Just(" "),
            ],
            0..12,
        )
    ) {
        let text: String = pieces.concat();
        let _ = Dependency::parse(&text).map(|d| d.to_string());
    }
}
