//! The job table: job records by id, cheap to snapshot.
//!
//! The owner publishes a snapshot after every batch. With a plain
//! `BTreeMap<u32, Arc<Job>>` that copies every entry (10,000 jobs: about a
//! tenth of a millisecond, plus freeing the previous copy) even when a batch
//! touched one job. Here ids are grouped in chunks of [`CHUNK`] consecutive
//! ids, each behind its own `Arc`: a snapshot copies one pointer per chunk,
//! and a change copies only the chunk it touches (copy on write), then the
//! job record itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Job;

/// Ids per chunk.
const CHUNK: u32 = 64;

type Chunk = BTreeMap<u32, Arc<Job>>;

/// Job records by id, iterated in id order.
#[derive(Debug, Clone, Default)]
pub struct JobTable {
    chunks: BTreeMap<u32, Arc<Chunk>>,
    len: usize,
}

impl JobTable {
    pub fn new() -> JobTable {
        JobTable::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, id: &u32) -> Option<&Arc<Job>> {
        self.chunks.get(&(id / CHUNK))?.get(id)
    }

    pub fn contains_key(&self, id: &u32) -> bool {
        self.get(id).is_some()
    }

    /// The record of `id`, its chunk unshared first (the record itself is
    /// still shared: `Arc::make_mut` it to change it).
    pub fn get_mut(&mut self, id: &u32) -> Option<&mut Arc<Job>> {
        let chunk = self.chunks.get_mut(&(id / CHUNK))?;
        if !chunk.contains_key(id) {
            return None;
        }
        Arc::make_mut(chunk).get_mut(id)
    }

    pub fn insert(&mut self, id: u32, job: Arc<Job>) -> Option<Arc<Job>> {
        let chunk = Arc::make_mut(self.chunks.entry(id / CHUNK).or_default());
        let old = chunk.insert(id, job);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove(&mut self, id: &u32) -> Option<Arc<Job>> {
        let key = id / CHUNK;
        let chunk = self.chunks.get_mut(&key)?;
        if !chunk.contains_key(id) {
            return None;
        }
        let c = Arc::make_mut(chunk);
        let old = c.remove(id);
        if c.is_empty() {
            self.chunks.remove(&key);
        }
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    pub fn iter(&self) -> impl Iterator<Item = (&u32, &Arc<Job>)> {
        self.chunks.values().flat_map(|c| c.iter())
    }

    pub fn values(&self) -> impl Iterator<Item = &Arc<Job>> {
        self.chunks.values().flat_map(|c| c.values())
    }

    pub fn keys(&self) -> impl Iterator<Item = &u32> {
        self.chunks.values().flat_map(|c| c.keys())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::tests::Env;

    #[test]
    fn behaves_like_a_map_and_snapshots_do_not_see_later_changes() {
        let mut env = Env::new();
        let id = env.submit(crate::core::tests::script());
        let job = Arc::new(env.job(id).clone());
        let mut t = JobTable::new();
        let mut model: BTreeMap<u32, u32> = BTreeMap::new();
        // Ids across chunk borders, out of order, with removals.
        let ids = [5u32, 63, 64, 1, 200, 127, 128, 4_000_000_000, 65];
        for (n, &i) in ids.iter().enumerate() {
            let mut j = (*job).clone();
            j.restart_count = u32::try_from(n).unwrap();
            assert!(t.insert(i, Arc::new(j)).is_none());
            model.insert(i, u32::try_from(n).unwrap());
        }
        let snap = t.clone();
        assert!(t.remove(&64).is_some());
        assert!(t.remove(&64).is_none());
        assert!(t.remove(&9).is_none());
        model.remove(&64);
        Arc::make_mut(t.get_mut(&1).unwrap()).restart_count = 99;
        model.insert(1, 99);
        assert!(t.get_mut(&2).is_none());
        let got: Vec<(u32, u32)> = t.iter().map(|(k, v)| (*k, v.restart_count)).collect();
        let want: Vec<(u32, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(got, want);
        assert_eq!(t.len(), model.len());
        assert_eq!(t.keys().count(), t.values().count());
        // The snapshot still has job 64 and the old job 1.
        assert_eq!(snap.len(), ids.len());
        assert!(snap.contains_key(&64));
        assert_eq!(snap.get(&1).unwrap().restart_count, 3);
    }
}
