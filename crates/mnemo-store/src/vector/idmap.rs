//! A map keyed by memory id, split over [`SHARDS`] hash maps by the id's hash.
//!
//! Why: a single `HashMap` doubles its table in one step, moving every entry — at a million
//! ids that is tens of milliseconds inside the one write that crossed the size, a stall of
//! the kind the index must not have. Split in 64, each table grows on its own, moving 1/64 of
//! the entries.
use std::collections::HashMap;

use mnemo_contract::MemoryId;

/// Shards (a power of two).
const SHARDS: usize = 64;

/// Memory id → `V`, sharded (see the module docs).
pub(crate) struct IdMap<V> {
    shards: Vec<HashMap<MemoryId, V>>,
    len: usize,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap { shards: (0..SHARDS).map(|_| HashMap::new()).collect(), len: 0 }
    }
}

impl<V> IdMap<V> {
    #[inline]
    fn shard(id: MemoryId) -> usize {
        ((id.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % SHARDS
    }

    pub(crate) fn get(&self, id: &MemoryId) -> Option<&V> {
        self.shards[Self::shard(*id)].get(id)
    }

    pub(crate) fn get_mut(&mut self, id: &MemoryId) -> Option<&mut V> {
        self.shards[Self::shard(*id)].get_mut(id)
    }

    pub(crate) fn contains_key(&self, id: &MemoryId) -> bool {
        self.get(id).is_some()
    }

    pub(crate) fn insert(&mut self, id: MemoryId, v: V) -> Option<V> {
        let old = self.shards[Self::shard(id)].insert(id, v);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub(crate) fn remove(&mut self, id: &MemoryId) -> Option<V> {
        let old = self.shards[Self::shard(*id)].remove(id);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn clear(&mut self) {
        self.shards.iter_mut().for_each(HashMap::clear);
        self.len = 0;
    }
}

#[cfg(test)]
impl<V> std::ops::Index<&MemoryId> for IdMap<V> {
    type Output = V;
    /// Panics when `id` is absent (as `HashMap`'s index): for tests.
    fn index(&self, id: &MemoryId) -> &V {
        &self.shards[Self::shard(*id)][id]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_one_map() {
        let mut m = IdMap::default();
        for i in 0..1000 {
            assert_eq!(m.insert(MemoryId(i), i * 2), None);
        }
        assert_eq!(m.insert(MemoryId(5), 7), Some(10));
        assert_eq!(m.len(), 1000);
        assert_eq!(m.remove(&MemoryId(5)), Some(7));
        assert_eq!(m.remove(&MemoryId(5)), None);
        assert_eq!((m.len(), m.get(&MemoryId(9)), m.contains_key(&MemoryId(5))), (999, Some(&18), false));
        if let Some(v) = m.get_mut(&MemoryId(9)) {
            *v = 1;
        }
        assert_eq!(m[&MemoryId(9)], 1);
        m.clear();
        assert_eq!(m.len(), 0);
    }
}
