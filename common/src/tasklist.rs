//! How a job array's task ids are written for people: `squeue`'s `%K` and
//! `%i` (`15_[0-98:2]`), `scontrol show job`'s `ArrayTaskId=`.
//!
//! Slurm writes the set, not the text the user submitted: `--array=1,3,5,7`
//! shows as `1,3,5,7` and `--array=1,3,...,33` as `1-33:2`. A set that is
//! one evenly spaced run is written with its step once it is long enough
//! (measured on Slurm 22.05: six ids spaced three or more apart, or seven
//! and more spaced two or more); anything else is ascending ranges,
//! `1-3,5,8-10`. Long lists are cut to `SLURM_BITSTR_LEN` with a `...`
//! mark, as [`cut`] describes.

use std::fmt::Write as _;

/// `ids` (ascending, no duplicates) as Slurm shows them.
pub fn format(ids: &[u32]) -> String {
    let mut out = String::new();
    if let Some((first, last, step)) = even_run(ids) {
        let _ = write!(out, "{first}-{last}:{step}");
        return out;
    }
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && end.checked_add(1) == Some(ids[i + 1]) {
            i += 1;
            end = ids[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

/// `(first, last, step)` when `ids` are one run with a step of 2 or more
/// that Slurm writes as `first-last:step`.
fn even_run(ids: &[u32]) -> Option<(u32, u32, u32)> {
    let (&first, &second) = (ids.first()?, ids.get(1)?);
    let step = second.checked_sub(first)?;
    if step < 2 || ids.len() < 6 {
        return None;
    }
    if ids.windows(2).any(|w| w[1].checked_sub(w[0]) != Some(step)) {
        return None;
    }
    let last = *ids.last()?;
    // Six ids two apart (`0,2,4,6,8,10`) stay a list; a longer run or a
    // wider step takes the short form.
    (u64::from(last - first) > 10).then_some((first, last, step))
}

/// Cuts a task list the way Slurm's fixed buffer of `limit` bytes does
/// (`SLURM_BITSTR_LEN`, 64 when unset; 0 means no limit): a list that does
/// not fit in `limit - 1` characters keeps its first `limit - 4` and ends
/// in `...`, all of it within `limit - 1` (`limit` 3 gives `..`).
pub fn cut(list: &mut String, limit: u32) {
    let Some(room) = usize::try_from(limit).ok().and_then(|l| l.checked_sub(1)) else {
        return;
    };
    if list.len() <= room {
        return;
    }
    let keep = floor_boundary(list, room.saturating_sub(3));
    list.truncate(keep);
    list.push_str("...");
    let end = floor_boundary(list, room);
    list.truncate(end);
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn run(first: u32, last: u32, step: u32) -> Vec<u32> {
        (first..=last).step_by(step as usize).collect()
    }

    #[test]
    fn runs_take_the_step_form_as_slurm_22_05_writes_them() {
        // Each pair was read from a Slurm 22.05 squeue %K.
        let cases = [
            (run(0, 98, 2), "0-98:2"),
            (run(1, 33, 2), "1-33:2"),
            (run(0, 12, 2), "0-12:2"),
            (run(0, 15, 3), "0-15:3"),
            (run(0, 25, 5), "0-25:5"),
            (run(0, 20, 4), "0-20:4"),
            (run(0, 50, 10), "0-50:10"),
            (run(10, 100, 10), "10-100:10"),
            (run(0, 10, 2), "0,2,4,6,8,10"),
            (run(100, 110, 2), "100,102,104,106,108,110"),
            (run(5, 15, 2), "5,7,9,11,13,15"),
            (run(0, 8, 2), "0,2,4,6,8"),
            (run(10, 50, 10), "10,20,30,40,50"),
            (run(0, 1000, 500), "0,500,1000"),
            (run(0, 16, 4), "0,4,8,12,16"),
            (vec![1, 3], "1,3"),
            (vec![3], "3"),
            (vec![0, 1, 2, 3, 4, 5], "0-5"),
            (vec![1, 2, 3, 5, 7, 9], "1-3,5,7,9"),
            (vec![0, 3, 6, 9, 20], "0,3,6,9,20"),
            (vec![1, 3, 5, 8, 9, 10], "1,3,5,8-10"),
            (vec![2, 4, 6, 7, 8, 9, 11, 13], "2,4,6-9,11,13"),
            (vec![5, 10, 15, 17, 19, 21, 23], "5,10,15,17,19,21,23"),
            (vec![], ""),
        ];
        for (ids, want) in cases {
            assert_eq!(format(&ids), want, "{ids:?}");
        }
        let mut tail = run(0, 40, 2);
        tail.push(41);
        assert!(format(&tail).ends_with(",38,40-41"));
        assert_eq!(format(&[u32::MAX - 1, u32::MAX]), "4294967294-4294967295");
    }

    #[test]
    fn long_lists_are_cut_with_a_mark_within_the_buffer() {
        let full = "1-2,5,9,12,15,20,22,25,31,37,40,44,50,57,61,70,73,79,84,90,95,99";
        let cut_to = |limit| {
            let mut s = full.to_owned();
            cut(&mut s, limit);
            s
        };
        // As Slurm 22.05 printed them with SLURM_BITSTR_LEN set so.
        assert_eq!(
            cut_to(64),
            "1-2,5,9,12,15,20,22,25,31,37,40,44,50,57,61,70,73,79,84,90,9..."
        );
        assert_eq!(cut_to(20), "1-2,5,9,12,15,20...");
        assert_eq!(cut_to(10), "1-2,5,...");
        assert_eq!(cut_to(5), "1...");
        assert_eq!(cut_to(3), "..");
        assert_eq!(cut_to(1), "");
        assert_eq!(cut_to(0), full);
        assert_eq!(cut_to(full.len() as u32 + 1), full);
    }

    proptest! {
        #[test]
        fn a_cut_list_fits_and_keeps_its_start(
            list in "[0-9,:-]{0,120}", limit in 0u32..140
        ) {
            let mut s = list.clone();
            cut(&mut s, limit);
            if limit == 0 || list.len() < limit as usize {
                prop_assert_eq!(&s, &list);
            } else {
                prop_assert_eq!(s.len(), limit as usize - 1);
                let kept = s.trim_end_matches('.');
                prop_assert!(list.starts_with(kept));
            }
        }

        #[test]
        fn the_written_list_names_exactly_the_ids(
            mut ids in proptest::collection::vec(0u32..300, 0..40)
        ) {
            ids.sort_unstable();
            ids.dedup();
            let text = format(&ids);
            let mut back = Vec::new();
            for part in text.split(',').filter(|p| !p.is_empty()) {
                let (range, step) = match part.split_once(':') {
                    Some((r, s)) => (r, s.parse::<u32>().unwrap()),
                    None => (part, 1),
                };
                let (lo, hi) = match range.split_once('-') {
                    Some((a, b)) => (a.parse::<u32>().unwrap(), b.parse::<u32>().unwrap()),
                    None => (range.parse().unwrap(), range.parse().unwrap()),
                };
                back.extend((lo..=hi).step_by(step as usize));
            }
            prop_assert_eq!(back, ids);
        }
    }
}
