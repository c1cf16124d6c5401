//! Fan-out trees (TreeWidth): how one message reaches many nodes.
//!
//! A controller that talks to every node itself opens one connection per
//! node and waits on the slowest of thousands. Instead it sends to at most
//! TreeWidth *relays*; each relay handles the message, passes it on to its
//! share of the remaining nodes in the same way, and answers with one result
//! per node of its subtree. The shape is a pure function of the ordered node
//! list and the width, so the controller, every relay, the tests and the
//! benchmarks all compute the same tree without exchanging it.
//!
//! ```text
//! targets n1..n8, width 2          sender
//!                                /        \
//!   split(8, 2) = [0..4, 4..8]  n1         n5        relays: first of each group
//!                               |          |
//!   split(3, 2) = [0..2, 2..3]  n2 n4      n6 n8     the rest of each group,
//!                               |          |         split again by the relay
//!                               n3         n7
//! ```
//!
//! Vocabulary: a *branch* is a contiguous range of the sender's targets; its
//! first node is the *relay*, the others its *rest*. The *depth* of a list is
//! the number of hops the deepest node is away from the sender; it grows as
//! `log_width(n)`.
//!
//! [`Fanout`] is the sans-IO driver of one sender: it says which branches to
//! send now (never more than `width` at once), how much time each gets, and
//! what follows when a relay does not answer (refused, or silent past its
//! wait): the relay is reported failed and its rest is split into new
//! branches and sent again, so one bad node never hides the others. The
//! daemons wrap it in a thin async loop; all the decisions are tested here
//! without sockets.
//!
//! Time: a sender with `total` milliseconds gives a branch of depth `d` one
//! *slot* of `remaining / (d + 1)` per level: the relay's own budget is
//! `d` slots, and the sender waits half a slot more for the answer to come
//! back. What is left (at least half a slot) is for rerouting around a
//! relay that failed. A relay passes its budget on the same way, so every
//! level answers before its sender stops waiting.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

/// How many branches one sender serves at most (slurm.conf `TreeWidth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TreeWidth(u32);

impl TreeWidth {
    /// The value when slurm.conf does not set TreeWidth (newer Slurm's
    /// default; 22.05 had 50).
    pub const DEFAULT: TreeWidth = TreeWidth(16);
    /// No relays: the sender reaches every node itself.
    pub const FLAT: TreeWidth = TreeWidth(0);

    /// A width of `width` branches; 0 means unbounded ([`TreeWidth::FLAT`]).
    pub const fn new(width: u32) -> TreeWidth {
        TreeWidth(width)
    }

    /// The configured number; 0 when unbounded.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// How many branches a list of `len` nodes is cut into.
    pub fn fan_out(self, len: usize) -> usize {
        match usize::try_from(self.0) {
            Ok(0) | Err(_) => len,
            Ok(w) => w.min(len),
        }
    }
}

impl Default for TreeWidth {
    fn default() -> Self {
        TreeWidth::DEFAULT
    }
}

/// Cuts `0..len` into at most `width` contiguous ranges of near-equal size,
/// the larger ones first; no range is empty.
pub fn split(len: usize, width: TreeWidth) -> Vec<Range<usize>> {
    let groups = width.fan_out(len);
    if groups == 0 {
        return Vec::new();
    }
    let base = len / groups;
    let extra = len % groups;
    let mut out = Vec::with_capacity(groups);
    let mut start = 0;
    for g in 0..groups {
        let end = start + base + usize::from(g < extra);
        out.push(start..end);
        start = end;
    }
    out
}

/// [`split`] over a slice: each group's first node is its relay.
pub fn subtrees<T>(nodes: &[T], width: TreeWidth) -> Vec<&[T]> {
    split(nodes.len(), width)
        .into_iter()
        .map(|r| &nodes[r])
        .collect()
}

/// Hops from the sender to the farthest of `len` nodes (0 for none).
pub fn depth(len: usize, width: TreeWidth) -> usize {
    let mut len = len;
    let mut d = 0;
    while len > 0 {
        d += 1;
        // The largest group comes first; its relay passes on the rest.
        len = split(len, width).first().map_or(0, |g| g.len() - 1);
    }
    d
}

/// The sender of each of `len` nodes: `None` for the sender's own branches
/// (relays of the first hop), else the index of the relay that forwards to it.
pub fn parents(len: usize, width: TreeWidth) -> Vec<Option<usize>> {
    let mut out = vec![None; len];
    let mut stack: Vec<(Option<usize>, Range<usize>)> = vec![(None, 0..len)];
    while let Some((parent, range)) = stack.pop() {
        for g in split(range.len(), width) {
            let relay = range.start + g.start;
            out[relay] = parent;
            if g.len() > 1 {
                stack.push((Some(relay), relay + 1..range.start + g.end));
            }
        }
    }
    out
}

/// The relays a message passes through, first hop first, to reach node
/// `index` of `len` (empty when the sender reaches it directly, or when
/// `index` is out of range).
pub fn path(len: usize, width: TreeWidth, index: usize) -> Vec<usize> {
    let mut via = Vec::new();
    let mut range = 0..len;
    while range.contains(&index) {
        let offset = range.start;
        let Some(g) = split(range.len(), width)
            .into_iter()
            .find(|g| g.contains(&(index - offset)))
        else {
            break;
        };
        let relay = offset + g.start;
        if relay == index {
            return via;
        }
        via.push(relay);
        range = relay + 1..offset + g.end;
    }
    Vec::new()
}

/// Time a whole delivery to `len` nodes gets when each level may take
/// `per_level_ms`: one slot per level plus one for rerouting.
pub fn total_budget_ms(len: usize, width: TreeWidth, per_level_ms: u64) -> u64 {
    let levels = u64::try_from(depth(len, width)).unwrap_or(u64::MAX);
    per_level_ms.saturating_mul(levels.saturating_add(1))
}

/// A slot shorter than this is not worth a try: the branch is given up.
pub const MIN_SLOT_MS: u64 = 20;

/// One branch to send now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    /// Names this send in [`Fanout::delivered`] and [`Fanout::failed`].
    pub id: usize,
    /// Index of the relay among the sender's targets.
    pub relay: usize,
    /// Indices the relay must pass the message on to (may be empty).
    pub rest: Range<usize>,
    /// Time the relay has for its whole subtree (its `timeout_ms`).
    pub budget_ms: u64,
    /// How long the sender waits for the relay's answer.
    pub wait_ms: u64,
}

/// What [`Fanout::poll`] asks of the sender.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ready {
    pub sends: Vec<Send>,
    /// Nodes that can no longer be reached in time: report them failed.
    pub given_up: Vec<usize>,
}

/// One sender's delivery to a list of targets, without I/O.
///
/// The caller loops: [`poll`](Fanout::poll) at the current time, perform the
/// sends, and report each as [`delivered`](Fanout::delivered) (the relay
/// answered for its subtree) or [`failed`](Fanout::failed) (the relay could
/// not be reached or did not answer in `wait_ms`), until
/// [`is_done`](Fanout::is_done). Every target then was covered by exactly
/// one delivered branch, was the relay of a failed send, or was given up.
#[derive(Debug, Clone)]
pub struct Fanout {
    width: TreeWidth,
    total_ms: u64,
    queue: VecDeque<Range<usize>>,
    in_flight: BTreeMap<usize, Range<usize>>,
    next_id: usize,
}

impl Fanout {
    /// A delivery to `len` targets that must be over `total_ms` after it
    /// starts (time 0).
    pub fn new(len: usize, width: TreeWidth, total_ms: u64) -> Fanout {
        Fanout {
            width,
            total_ms,
            queue: split(len, width).into(),
            in_flight: BTreeMap::new(),
            next_id: 0,
        }
    }

    fn room(&self) -> bool {
        match usize::try_from(self.width.get()) {
            Ok(0) | Err(_) => true,
            Ok(w) => self.in_flight.len() < w,
        }
    }

    /// The sends to start at `now_ms`, and the nodes it is too late for.
    pub fn poll(&mut self, now_ms: u64) -> Ready {
        let mut ready = Ready::default();
        let remaining = self.total_ms.saturating_sub(now_ms);
        while self.room() {
            let Some(branch) = self.queue.pop_front() else {
                break;
            };
            let levels = depth(branch.len() - 1, self.width) + 1;
            let levels = u64::try_from(levels).unwrap_or(u64::MAX);
            let slot = remaining / levels.saturating_add(1);
            if slot < MIN_SLOT_MS {
                ready.given_up.extend(branch);
                continue;
            }
            let id = self.next_id;
            self.next_id += 1;
            let budget_ms = slot.saturating_mul(levels);
            ready.sends.push(Send {
                id,
                relay: branch.start,
                rest: branch.start + 1..branch.end,
                budget_ms,
                wait_ms: budget_ms + slot / 2,
            });
            self.in_flight.insert(id, branch);
        }
        ready
    }

    /// Send `id`'s relay answered for its whole subtree.
    pub fn delivered(&mut self, id: usize) {
        self.in_flight.remove(&id);
    }

    /// Send `id`'s relay failed; its rest is queued as new branches for the
    /// next [`poll`](Fanout::poll). Returns the failed relay's index.
    pub fn failed(&mut self, id: usize) -> Option<usize> {
        let branch = self.in_flight.remove(&id)?;
        let rest = branch.start + 1..branch.end;
        for g in split(rest.len(), self.width) {
            self.queue
                .push_back(rest.start + g.start..rest.start + g.end);
        }
        Some(branch.start)
    }

    /// Sends started and not reported yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Nothing queued and nothing in flight.
    pub fn is_done(&self) -> bool {
        self.queue.is_empty() && self.in_flight.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(n: u32) -> TreeWidth {
        TreeWidth::new(n)
    }

    #[test]
    fn shapes() {
        assert_eq!(split(7, w(2)), vec![0..4, 4..7]);
        assert_eq!(split(3, TreeWidth::FLAT), vec![0..1, 1..2, 2..3]);
        assert_eq!(split(2, w(50)), vec![0..1, 1..2]);
        assert!(split(0, w(3)).is_empty());
        let names = ["a", "b", "c", "d", "e"];
        assert_eq!(subtrees(&names, w(2)), vec![&names[..3], &names[3..]]);
        assert_eq!(TreeWidth::default().get(), 16);
    }

    #[test]
    fn the_diagram_in_the_module_docs() {
        // n1..n8 as indices 0..8.
        let p = parents(8, w(2));
        assert_eq!(
            p,
            vec![
                None,
                Some(0),
                Some(1),
                Some(0),
                None,
                Some(4),
                Some(5),
                Some(4)
            ]
        );
        assert_eq!(path(8, w(2), 6), vec![4, 5]);
        assert_eq!(path(8, w(2), 4), Vec::<usize>::new());
        assert_eq!(path(8, w(2), 99), Vec::<usize>::new());
        assert_eq!(depth(8, w(2)), 3);
    }

    #[test]
    fn depth_table() {
        assert_eq!(depth(0, w(16)), 0);
        assert_eq!(depth(1, w(16)), 1);
        assert_eq!(depth(16, w(16)), 1);
        assert_eq!(depth(17, w(16)), 2);
        assert_eq!(depth(256, w(16)), 2);
        assert_eq!(depth(1000, w(16)), 3);
        assert_eq!(depth(1000, w(32)), 2);
        assert_eq!(depth(1000, TreeWidth::FLAT), 1);
        assert_eq!(depth(5, w(1)), 5);
        assert_eq!(total_budget_ms(1000, w(16), 10_000), 40_000);
        assert_eq!(total_budget_ms(0, w(16), 10_000), 10_000);
    }

    #[test]
    fn a_dead_relay_is_routed_around() {
        // 8 targets, width 2, 10 s: [0..4] and [4..8] go out.
        let mut f = Fanout::new(8, w(2), 10_000);
        let r = f.poll(0);
        assert!(r.given_up.is_empty());
        let ids: Vec<(usize, Range<usize>)> =
            r.sends.iter().map(|s| (s.relay, s.rest.clone())).collect();
        assert_eq!(ids, vec![(0, 1..4), (4, 5..8)]);
        // Depth 3 for each: slot 2.5 s, budget 7.5 s, wait 8.75 s.
        assert_eq!((r.sends[0].budget_ms, r.sends[0].wait_ms), (7_500, 8_750));
        assert!(f.poll(0).sends.is_empty(), "no room beyond the width");
        // Relay 0 refuses at once: 1..4 is split again and sent.
        assert_eq!(f.failed(r.sends[0].id), Some(0));
        let again = f.poll(5);
        let ids: Vec<(usize, Range<usize>)> = again
            .sends
            .iter()
            .map(|s| (s.relay, s.rest.clone()))
            .collect();
        // One slot left (the other send is still in flight).
        assert_eq!(ids, vec![(1, 2..3)]);
        f.delivered(r.sends[1].id);
        let last = f.poll(6);
        assert_eq!(last.sends.len(), 1);
        assert_eq!(last.sends[0].relay, 3);
        f.delivered(again.sends[0].id);
        f.delivered(last.sends[0].id);
        assert!(f.is_done());
        assert_eq!(f.failed(99), None);
    }

    #[test]
    fn too_late_is_given_up() {
        let mut f = Fanout::new(3, w(1), 1_000);
        let s = f.poll(0).sends;
        assert_eq!(s.len(), 1);
        f.failed(s[0].id);
        let r = f.poll(990);
        assert!(r.sends.is_empty());
        assert_eq!(r.given_up, vec![1, 2]);
        assert!(f.is_done());
    }

    proptest! {
        #[test]
        fn split_covers_every_node_once_in_order(len in 0usize..400, width in 0u32..70) {
            let groups = split(len, w(width));
            let flat: Vec<usize> = groups.iter().cloned().flatten().collect();
            prop_assert_eq!(flat, (0..len).collect::<Vec<_>>());
            if width > 0 {
                prop_assert!(groups.len() <= width as usize);
            }
            let sizes: Vec<usize> = groups.iter().map(|g| g.len()).collect();
            if let (Some(max), Some(min)) = (sizes.iter().max(), sizes.iter().min()) {
                prop_assert!(max - min <= 1 && *min > 0);
            }
        }

        #[test]
        fn the_tree_reaches_every_node_once_within_width_and_log_depth(
            len in 0usize..3000,
            width in 0u32..40,
        ) {
            let tw = w(width);
            let p = parents(len, tw);
            prop_assert_eq!(p.len(), len);
            // Fan-out at every hop (the sender is key None).
            let mut children: BTreeMap<Option<usize>, usize> = BTreeMap::new();
            for parent in &p {
                *children.entry(*parent).or_default() += 1;
            }
            if width > 0 {
                prop_assert!(children.values().all(|&c| c <= width as usize));
            }
            // Every node's chain of parents is its path, and ends at the sender.
            let mut deepest = 0;
            for i in 0..len {
                let via = path(len, tw, i);
                prop_assert_eq!(via.last().copied(), p[i]);
                for pair in via.windows(2) {
                    prop_assert_eq!(p[pair[1]], Some(pair[0]));
                    prop_assert!(pair[0] < pair[1]);
                }
                if let Some(first) = via.first() {
                    prop_assert_eq!(p[*first], None);
                }
                deepest = deepest.max(via.len() + 1);
            }
            prop_assert_eq!(depth(len, tw), deepest);
            // Depth ~ log_width(len): at most ceil(log_w(len)) for w >= 2.
            if width >= 2 && len > 0 {
                let mut bound = 1usize;
                let mut reach = width as usize;
                while reach < len {
                    reach = reach.saturating_mul(width as usize);
                    bound += 1;
                }
                prop_assert!(deepest <= bound, "depth {} > {}", deepest, bound);
            }
        }

        /// A sender's deliveries with random dead relays and random answer
        /// times: never more than `width` in flight, no wait past the end,
        /// and every node accounted for exactly once.
        #[test]
        fn fanout_accounts_for_every_node(
            len in 1usize..300,
            width in 0u32..20,
            total in 0u64..20_000,
            dead in proptest::collection::vec(any::<bool>(), 300),
            refuse in proptest::collection::vec(any::<bool>(), 300),
            latency in proptest::collection::vec(0u64..100, 300),
        ) {
            let mut f = Fanout::new(len, w(width), total);
            // Pending completions: (time, id, delivered).
            let mut events: Vec<(u64, usize, bool)> = Vec::new();
            let mut sends: BTreeMap<usize, Send> = BTreeMap::new();
            let mut outcome = vec![0u8; len]; // 1 delivered, 2 failed relay, 3 given up
            let mut now = 0u64;
            let mut rounds = 0;
            loop {
                rounds += 1;
                prop_assert!(rounds < 10_000, "does not terminate");
                let r = f.poll(now);
                for n in r.given_up {
                    prop_assert_eq!(outcome[n], 0);
                    outcome[n] = 3;
                }
                for s in r.sends {
                    prop_assert!(now + s.wait_ms <= total.max(now), "waits past the end");
                    prop_assert!(s.budget_ms < s.wait_ms);
                    let at = if dead[s.relay] {
                        if refuse[s.relay] { now } else { now + s.wait_ms }
                    } else {
                        now + latency[s.relay].min(s.wait_ms)
                    };
                    events.push((at, s.id, !dead[s.relay]));
                    sends.insert(s.id, s);
                }
                if width > 0 {
                    prop_assert!(f.in_flight() <= width as usize);
                }
                if events.is_empty() {
                    break;
                }
                events.sort_by_key(|e| std::cmp::Reverse(e.0));
                let (at, id, ok) = events.pop().unwrap();
                now = now.max(at);
                let s = sends.remove(&id).unwrap();
                if ok {
                    f.delivered(id);
                    for n in std::iter::once(s.relay).chain(s.rest.clone()) {
                        prop_assert_eq!(outcome[n], 0);
                        outcome[n] = 1;
                    }
                } else {
                    prop_assert_eq!(f.failed(id), Some(s.relay));
                    prop_assert_eq!(outcome[s.relay], 0);
                    outcome[s.relay] = 2;
                }
            }
            prop_assert!(f.is_done());
            prop_assert!(outcome.iter().all(|&o| o != 0), "{:?}", outcome);
            // A live node is never reported failed; a dead one never delivered
            // as a relay (it may be covered by nobody else: given up).
            for (n, &o) in outcome.iter().enumerate() {
                if o == 2 {
                    prop_assert!(dead[n]);
                }
            }
        }
    }
}
