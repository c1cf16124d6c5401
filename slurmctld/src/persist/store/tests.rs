//! The state directory end to end: commits, snapshots, recovery, and a
//! crash at every point of a snapshot (the directory is copied as it is at
//! that point and recovered; the result must equal replaying every event).

use std::path::Path;

use slurm_common::conf::SlurmConf;
use slurm_proto::v1;

use super::*;
use crate::core::snapshot::tests::fingerprint;
use crate::core::tests::{script, CONF};
use crate::core::{Caller, Command};
use crate::persist::scripts::{self, segment_path};
use crate::persist::{JOURNAL_MAGIC, SNAPSHOT_FILE};
use slurm_common::reason::PendingReason;

use crate::core::tests::ALICE;

fn conf() -> SlurmConf {
    SlurmConf::parse(CONF, "slurm.conf").unwrap().conf
}

fn cfg(conf: &SlurmConf) -> CtlConfig {
    CtlConfig::from_conf(conf, vec![])
}

fn options(every: u64) -> RecoverOptions {
    RecoverOptions {
        ignore_damage: false,
        policy: SnapshotPolicy {
            every_events: every,
            ..SnapshotPolicy::default()
        },
    }
}

fn recover(dir: &Path) -> Result<Recovered, StoreError> {
    let conf = conf();
    StateStore::recover(dir, &conf, cfg(&conf), &options(1_000_000))
}

fn recover_i(dir: &Path) -> Recovered {
    let conf = conf();
    let opts = RecoverOptions {
        ignore_damage: true,
        ..options(1_000_000)
    };
    StateStore::recover(dir, &conf, cfg(&conf), &opts).unwrap()
}

/// [`fingerprint`] without what the scheduler derives for pending jobs
/// (their reason and last evaluation): not journaled, recomputed by the
/// first pass after a restart, and different between a controller that
/// scheduled and a replay that did not.
fn durable(ctl: &Controller) -> String {
    let mut c = ctl.clone();
    let ids: Vec<u32> = c.jobs.keys().copied().collect();
    for id in ids {
        if let Some(j) = c.jobs.get_mut(&id) {
            if j.state() == slurm_common::state::JobState::Pending && j.hold.is_none() {
                let j = Arc::make_mut(j);
                j.reason = PendingReason::None;
                // The pass's description of that reason is derived too.
                j.reason_detail.clear();
                j.last_sched_eval = 0;
            }
        }
    }
    fingerprint(&c)
}

/// A controller and its store, driven as the owner task drives them.
struct Rig {
    dir: tempfile::TempDir,
    ctl: Controller,
    store: StateStore,
    now: i64,
    events: Vec<Event>,
}

impl Rig {
    fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let r = recover(dir.path()).unwrap();
        Rig {
            dir,
            ctl: r.controller,
            store: r.store,
            now: 1_700_000_000,
            events: Vec::new(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// handle + schedule + commit, as one batch.
    fn run(&mut self, cmd: Command) {
        let mut out = self.ctl.handle(cmd, self.now);
        let sched = self.ctl.schedule(self.now);
        out.events.extend(sched.events);
        self.store.commit(&out.job_files, &out.events).unwrap();
        self.events.extend(out.events);
        for seg in self.ctl.take_freed_segments() {
            scripts::remove_segment(self.path(), seg);
        }
    }

    fn submit(&mut self, held: bool) {
        let mut d = script();
        d.hold = held;
        d.environment = vec![format!("N={}", self.events.len())];
        self.run(Command::Submit {
            caller: ALICE,
            desc: Box::new(d),
        });
    }

    fn register_all(&mut self) {
        for n in ["n1", "n2", "n3", "n4"] {
            self.run(Command::RegisterNode {
                caller: Caller::ROOT,
                request: Box::new(v1::RegisterNodeRequest {
                    node_name: n.into(),
                    ..Default::default()
                }),
            });
        }
    }

    fn complete(&mut self, job_id: u32) {
        self.run(Command::JobComplete {
            caller: Caller::ROOT,
            request: v1::JobCompleteRequest {
                job_id,
                exit_code: Some(v1::ExitCode::default()),
                ..Default::default()
            },
        });
    }

    /// Some of everything.
    fn workload(&mut self, rounds: u32) {
        for _ in 0..rounds {
            self.submit(false);
            self.submit(true);
            self.submit(false);
            let running: Vec<u32> = self
                .ctl
                .jobs()
                .filter(|j| j.state() == slurm_common::state::JobState::Running)
                .map(|j| j.id.get())
                .collect();
            if let Some(&id) = running.first() {
                self.complete(id);
            }
            self.now += 100;
            self.run(Command::Tick);
        }
    }

    /// What replaying every event gives.
    fn expected(&self) -> String {
        let conf = conf();
        let mut ctl = Controller::new(&conf, cfg(&conf));
        for e in &self.events {
            ctl.apply(e).unwrap();
        }
        durable(&ctl)
    }
}

/// A copy of `from` as it is now: what a crash at this moment leaves.
fn crash_copy(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    copy_tree(from, to.path());
    to
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Recovers a crash copy and checks it against `want`, twice (recovery
/// itself must leave a recoverable directory).
fn assert_recovers(dir: &Path, want: &str, what: &str) {
    for round in 0..2 {
        let r = recover(dir).unwrap_or_else(|e| panic!("{what} (round {round}): {e}"));
        r.controller.sanity_check().unwrap();
        assert_eq!(durable(&r.controller), want, "{what} (round {round})");
    }
}

#[test]
fn a_new_directory_starts_generation_zero() {
    let rig = Rig::new();
    assert_eq!(rig.store.generation(), 0);
    assert_eq!(names(rig.path()), ["clustername", "journal.0"]);
    assert_eq!(rig.ctl.jobs().count(), 0);
}

#[test]
fn commits_survive_a_restart() {
    let mut rig = Rig::new();
    rig.register_all();
    rig.workload(5);
    let want = rig.expected();
    assert_eq!(durable(&rig.ctl), want);
    let r = recover(rig.path()).unwrap();
    assert_eq!(durable(&r.controller), want);
    assert_eq!(r.report.snapshot, None);
    assert_eq!(r.report.generations, vec![0]);
    assert_eq!(r.report.events, rig.events.len());
}

#[test]
fn a_snapshot_replaces_the_journal_it_covers() {
    let mut rig = Rig::new();
    rig.register_all();
    rig.workload(4);
    let pending = rig.store.begin_snapshot(rig.ctl.clone()).unwrap();
    assert!(matches!(
        rig.store.begin_snapshot(rig.ctl.clone()),
        Err(StoreError::SnapshotBusy)
    ));
    assert!(!rig.store.snapshot_due(1_000_000_000));
    // Commits go on beside the write.
    rig.workload(2);
    let written = pending.write().unwrap();
    assert_eq!(written.generation, 1);
    assert_eq!(written.removed_journals, 1);
    assert!(rig.store.snapshot_due(1_000_000_000));
    assert_eq!(
        names(rig.path()),
        ["clustername", "journal.1", "scripts", SNAPSHOT_FILE]
    );
    rig.workload(2);
    let r = recover(rig.path()).unwrap();
    assert_eq!(durable(&r.controller), rig.expected());
    assert_eq!(r.report.snapshot.map(|s| s.0), Some(1), "{:?}", r.report);
    assert_eq!(r.report.generations, vec![1]);
    assert!(r.report.events < rig.events.len());
}

#[test]
fn snapshots_are_due_by_events_and_by_size() {
    let dir = tempfile::tempdir().unwrap();
    let conf = conf();
    let mut r = StateStore::recover(dir.path(), &conf, cfg(&conf), &options(3)).unwrap();
    assert!(!r.store.snapshot_due(2));
    assert!(r.store.snapshot_due(3));
    let mut ctl = r.controller;
    let out = ctl.handle(
        Command::Submit {
            caller: ALICE,
            desc: Box::new(script()),
        },
        1,
    );
    r.store.commit(&out.job_files, &out.events).unwrap();
    assert_eq!(r.store.events_since_snapshot(), 1);
    assert!(r.store.snapshot_due(2));
    let mut small = options(1_000_000);
    small.policy.journal_bytes = 100;
    let mut r = StateStore::recover(dir.path(), &conf, cfg(&conf), &small).unwrap();
    assert!(r.store.snapshot_due(0), "the journal is over 100 bytes");
    r.store.snapshot_now(&ctl).unwrap();
    assert!(!r.store.snapshot_due(0));
}

/// Every crash point of a snapshot, with commits before and after the
/// rotation: the copy taken there recovers to "replay everything".
#[test]
fn a_crash_at_any_point_of_a_snapshot_recovers_the_same_state() {
    let mut rig = Rig::new();
    rig.register_all();
    rig.workload(3);
    // Journal rotation, then more commits before the snapshot is written.
    let state = rig.ctl.clone();
    let before_rotation = crash_copy(rig.path());
    assert_recovers(before_rotation.path(), &rig.expected(), "before rotation");
    let pending = rig.store.begin_snapshot(state.clone()).unwrap();
    let generation = pending.generation();
    drop(pending);
    rig.workload(2);
    let want = rig.expected();
    let after_rotation = crash_copy(rig.path());
    assert_recovers(after_rotation.path(), &want, "after rotation");

    // The rotation itself cut short: the new generation's header torn.
    {
        let copy = crash_copy(before_rotation.path());
        let conf = conf();
        let r = StateStore::recover(copy.path(), &conf, cfg(&conf), &options(1_000_000)).unwrap();
        let mut store = r.store;
        let p = store.begin_snapshot(r.controller.clone()).unwrap();
        drop(p);
        let new = journal_path(copy.path(), store.generation());
        let full = std::fs::read(&new).unwrap();
        let want_before = durable(&r.controller);
        for cut in 0..full.len() {
            std::fs::write(&new, &full[..cut]).unwrap();
            let again = crash_copy(copy.path());
            assert_recovers(again.path(), &want_before, &format!("header cut at {cut}"));
        }
    }

    // The snapshot file written partially (never renamed), at every length.
    let dir = crash_copy(rig.path());
    write_until(
        dir.path(),
        &state,
        generation,
        Step::TempSynced,
        &mut || Ok(()),
    )
    .unwrap();
    let tmp = dir.path().join(SNAPSHOT_TMP);
    let full = std::fs::read(&tmp).unwrap();
    let step = (full.len() / 40).max(1);
    for cut in (0..full.len()).step_by(step).chain([full.len()]) {
        let copy = crash_copy(dir.path());
        std::fs::write(copy.path().join(SNAPSHOT_TMP), &full[..cut]).unwrap();
        assert_recovers(copy.path(), &want, &format!("tmp cut at {cut}"));
        assert!(!copy.path().join(SNAPSHOT_TMP).exists());
    }

    // Renamed, directory not synced yet (the rename may or may not have
    // reached the disk: both outcomes are covered).
    let dir = crash_copy(rig.path());
    write_until(
        dir.path(),
        &state,
        generation,
        Step::Renamed,
        &mut || Ok(()),
    )
    .unwrap();
    assert_recovers(dir.path(), &want, "after rename");

    // Durable, old generations not removed yet.
    let dir = crash_copy(rig.path());
    write_until(dir.path(), &state, generation, Step::DirSynced, &mut || {
        Ok(())
    })
    .unwrap();
    assert!(journal_path(dir.path(), generation - 1).exists());
    let r = recover(dir.path()).unwrap();
    assert_eq!(r.report.stale_removed, 1);
    assert!(!journal_path(dir.path(), generation - 1).exists());
    assert_recovers(dir.path(), &want, "after dir sync");

    // Complete.
    let dir = crash_copy(rig.path());
    write_until(
        dir.path(),
        &state,
        generation,
        Step::Cleaned,
        &mut || Ok(()),
    )
    .unwrap();
    assert_recovers(dir.path(), &want, "complete");

    // And the rig's own directory, after a proper write.
    let pending = PendingSnapshot {
        dir: rig.path().to_path_buf(),
        generation,
        state,
        busy: Arc::default(),
    };
    pending.write().unwrap();
    assert_recovers(rig.path(), &want, "rig");
}

#[test]
fn script_segments_of_live_jobs_are_kept_and_unused_ones_removed() {
    let mut rig = Rig::new();
    rig.submit(true);
    // A segment that nothing refers to, older than the current one (left
    // by a crash between a purge and the removal).
    rig.ctl.scripts.current = 3;
    std::fs::write(segment_path(rig.path(), 1), b"stale").unwrap();
    rig.store.snapshot_now(&rig.ctl).unwrap();
    assert!(segment_path(rig.path(), 0).exists(), "job 1 lives there");
    assert!(!segment_path(rig.path(), 1).exists());
    let (script, _) = scripts::read(rig.path(), 1, rig.ctl.job(1).unwrap().spec.files).unwrap();
    assert!(script.contains("true"));
}

#[test]
fn a_corrupt_snapshot_stops_startup_naming_file_and_offset() {
    let mut rig = Rig::new();
    rig.register_all();
    rig.workload(3);
    rig.store.snapshot_now(&rig.ctl).unwrap();
    rig.workload(1);
    let want = rig.expected();
    let path = rig.path().join(SNAPSHOT_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let err = recover(rig.path()).unwrap_err();
    let text = err.to_string();
    assert!(err.is_damage());
    assert!(
        text.contains(&path.display().to_string()) && text.contains("byte offset"),
        "{text}"
    );
    // -i: the records before the damage are kept, the file is set aside,
    // and the directory is consistent again at once.
    let r = recover_i(rig.path());
    assert_eq!(r.report.set_aside.len(), 1, "{:?}", r.report);
    assert!(r.report.set_aside[0].0.exists());
    assert!(r.controller.jobs().count() < rig.ctl.jobs().count());
    r.controller.sanity_check().unwrap();
    let kept = durable(&r.controller);
    assert_ne!(kept, want);
    assert_recovers(rig.path(), &kept, "after -i");
}

#[test]
fn a_corrupt_journal_record_stops_startup_and_i_keeps_the_prefix() {
    let mut rig = Rig::new();
    rig.register_all();
    rig.workload(2);
    let prefix_events = rig.events.len();
    let prefix_len = read_journal(&journal_path(rig.path(), 0), true)
        .unwrap()
        .valid_len;
    rig.workload(2);
    let path = journal_path(rig.path(), 0);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[prefix_len as usize + 12] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let err = recover(rig.path()).unwrap_err();
    assert!(err.is_damage());
    assert!(
        err.to_string().contains(&format!(
            "journal.0: corrupt record at byte offset {prefix_len}"
        )),
        "{err}"
    );
    let r = recover_i(rig.path());
    let conf = conf();
    let mut want = Controller::new(&conf, cfg(&conf));
    for e in &rig.events[..prefix_events] {
        want.apply(e).unwrap();
    }
    assert_eq!(durable(&r.controller), durable(&want));
    assert_eq!(r.report.set_aside.len(), 1);
    assert_recovers(rig.path(), &durable(&want), "after -i");
}

#[test]
fn a_missing_generation_is_damage() {
    let mut rig = Rig::new();
    rig.workload(1);
    drop(rig.store.begin_snapshot(rig.ctl.clone()).unwrap());
    rig.workload(1);
    drop(rig.store.begin_snapshot(rig.ctl.clone()).unwrap());
    rig.workload(1);
    std::fs::remove_file(journal_path(rig.path(), 1)).unwrap();
    let err = recover(rig.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::MissingGeneration { missing: 1, .. }),
        "{err}"
    );
    let r = recover_i(rig.path());
    r.controller.sanity_check().unwrap();
    assert!(recover(rig.path()).is_ok());
}

#[test]
fn another_clusters_directory_is_refused() {
    let mut rig = Rig::new();
    rig.workload(1);
    let text = CONF.replace("ClusterName=ref", "ClusterName=other");
    let conf = SlurmConf::parse(&text, "slurm.conf").unwrap().conf;
    let err = StateStore::recover(rig.path(), &conf, cfg(&conf), &options(10)).unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Journal(JournalError::ClusterMismatch { found, expected, .. })
                if found == "ref" && expected == "other"
        ),
        "{err}"
    );
    assert!(!err.is_damage());
    // Nothing was touched.
    assert!(recover(rig.path()).is_ok());
}

#[test]
fn a_directory_of_the_single_journal_layout_is_adopted() {
    let mut rig = Rig::new();
    rig.workload(2);
    let want = rig.expected();
    let dir = rig.path().to_path_buf();
    drop(rig.store);
    std::fs::rename(journal_path(&dir, 0), dir.join(LEGACY_JOURNAL_FILE)).unwrap();
    let head = std::fs::read(dir.join(LEGACY_JOURNAL_FILE)).unwrap();
    assert_eq!(&head[..8], JOURNAL_MAGIC);
    let r = recover(&dir).unwrap();
    assert_eq!(durable(&r.controller), want);
    assert!(!dir.join(LEGACY_JOURNAL_FILE).exists());
    assert!(journal_path(&dir, 0).exists());
}

#[derive(Debug, thiserror::Error)]
#[error("control lost")]
struct Lost;

#[test]
fn a_refused_check_or_a_newer_snapshot_leaves_the_directory_as_it_was() {
    let mut rig = Rig::new();
    rig.workload(2);
    let late = rig.store.begin_snapshot(rig.ctl.clone()).unwrap();
    // The check fails at the commit point: nothing replaced, nothing removed.
    let before = names(rig.path());
    let err = late.write_checked(|| Err(Lost)).unwrap_err();
    assert!(matches!(err, StoreError::Refused(_)), "{err}");
    assert!(err.to_string().contains("control lost"), "{err}");
    assert_eq!(names(rig.path()), before);
    assert_recovers(rig.path(), &rig.expected(), "after a refused snapshot");

    // A snapshot of an older generation finishing after a newer one (a
    // deposed controller's late write) does not replace it.
    rig.workload(1);
    let first = rig.store.begin_snapshot(rig.ctl.clone()).unwrap();
    let old_generation = first.generation();
    let old = PendingSnapshot {
        dir: first.dir.clone(),
        generation: first.generation,
        state: first.state.clone(),
        busy: Arc::default(),
    };
    drop(first);
    rig.workload(1);
    let newer = rig.store.snapshot_now(&rig.ctl).unwrap();
    assert!(newer.generation > old_generation);
    let err = old.write_checked(|| Ok::<(), Lost>(())).unwrap_err();
    assert!(
        matches!(err, StoreError::Superseded { found, ours, .. } if found == newer.generation && ours == old_generation),
        "{err}"
    );
    assert_recovers(rig.path(), &rig.expected(), "after a late snapshot");
    assert!(!rig.path().join(SNAPSHOT_TMP).exists());
}

/// Power lost after a batch's journal sync: the unsynced segment lost the
/// records (zeros, a torn one, or the whole file), and recovery puts them
/// back from the journal's copies before anything reads them.
#[test]
fn scripts_a_segment_lost_are_put_back_from_the_journal() {
    let mut rig = Rig::new();
    for _ in 0..3 {
        rig.submit(true);
    }
    let files: Vec<_> = (1..=3)
        .map(|id| rig.ctl.job(id).unwrap().spec.files)
        .collect();
    let seg = segment_path(rig.path(), 0);
    let intact = std::fs::read(&seg).unwrap();
    let read_all = |dir: &Path| -> Vec<String> {
        (1..=3)
            .map(|id| scripts::read(dir, id, files[id as usize - 1]).unwrap().1[0].clone())
            .collect()
    };
    let want = read_all(rig.path());

    // Nothing lost: nothing written.
    let copy = crash_copy(rig.path());
    assert_eq!(recover(copy.path()).unwrap().report.scripts_repaired, 0);

    type Damage = fn(&mut Vec<u8>, usize, usize);
    let damages: [(&str, Damage); 3] = [
        ("zeros", |b, from, to| b[from..to].fill(0)),
        ("torn", |b, _, to| b[to - 3] ^= 0x5a),
        ("truncated", |b, from, _| b.truncate(from)),
    ];
    for (what, damage) in damages {
        let copy = crash_copy(rig.path());
        let mut bytes = intact.clone();
        let (from, to) = (files[1].offset as usize, files[2].end() as usize);
        damage(&mut bytes, from, to);
        std::fs::write(segment_path(copy.path(), 0), &bytes).unwrap();
        let r = recover(copy.path()).unwrap();
        assert!(r.report.scripts_repaired >= 1, "{what}");
        assert_eq!(read_all(copy.path()), want, "{what}");
        // A second recovery finds nothing more to do.
        drop(r);
        assert_eq!(
            recover(copy.path()).unwrap().report.scripts_repaired,
            0,
            "{what}"
        );
    }

    // The segment file, even the scripts directory, gone.
    let copy = crash_copy(rig.path());
    std::fs::remove_dir_all(copy.path().join(scripts::SCRIPTS_DIR)).unwrap();
    assert_eq!(recover(copy.path()).unwrap().report.scripts_repaired, 3);
    assert_eq!(read_all(copy.path()), want);
}

/// A generation is retired only once the segments its copies stand for
/// are synced; a segment whose jobs were all purged is not brought back.
#[test]
fn copies_outlive_their_generation_only_as_synced_segments() {
    let mut rig = Rig::new();
    rig.submit(true);
    rig.store.snapshot_now(&rig.ctl).unwrap();
    // Generation 0, with the copy, is gone; the segment holds the record.
    assert!(!journal_path(rig.path(), 0).exists());
    let at = rig.ctl.job(1).unwrap().spec.files;
    assert!(scripts::read(rig.path(), 1, at).is_ok());

    // A copy for a segment no live job uses is skipped.
    let space = crate::persist::ScriptSpace {
        current: 5,
        ..Default::default()
    };
    let f = JobFiles::new(9, "#!/bin/sh\n", &[], |_| (2, 0));
    let copy = scripts::ScriptCopy {
        segment: 2,
        offset: 0,
        record: f.record.clone(),
    };
    assert_eq!(scripts::repair(rig.path(), &[copy], &space).unwrap(), 0);
    assert!(!segment_path(rig.path(), 2).exists());
}
