//! Exact nearest neighbours over one contiguous `f32` matrix per namespace (the brute-force
//! index's dense side; `AnnVectors` keeps the same layout for its small namespaces).
use std::collections::HashMap;

use mnemo_contract::{CoreError, MemoryId, Namespace, Result};

use super::{best_first, split, top_k, VectorIndex, PARALLEL_ROWS};

/// One namespace's rows: `data[i*dims..(i+1)*dims]` is the vector of `ids[i]`.
#[derive(Default)]
struct Partition {
    ids: Vec<MemoryId>,
    data: Vec<f32>,
}

impl Partition {
    fn push(&mut self, id: MemoryId, v: &[f32]) {
        self.ids.push(id);
        self.data.extend_from_slice(v);
    }
    fn set(&mut self, row: usize, v: &[f32]) {
        let d = v.len();
        self.data[row * d..(row + 1) * d].copy_from_slice(v);
    }
}

/// Exact search over contiguous rows, partitioned by namespace.
#[derive(Default)]
pub struct FlatVectors {
    /// Dimensions, fixed by the first vector (0: none yet).
    dims: usize,
    parts: HashMap<Namespace, Partition>,
    /// Where each id lives: its namespace and row.
    pos: HashMap<MemoryId, (Namespace, usize)>,
}

impl FlatVectors {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Dimensions of the stored vectors (0 when empty and never set).
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The namespace of `id`'s vector, if it has one.
    pub fn namespace_of(&self, id: MemoryId) -> Option<&Namespace> {
        self.pos.get(&id).map(|p| &p.0)
    }

    /// Every (namespace, id, vector), for persistence.
    pub fn iter(&self) -> impl Iterator<Item = (&Namespace, MemoryId, &[f32])> + '_ {
        let d = self.dims.max(1);
        self.parts
            .iter()
            .flat_map(move |(ns, p)| p.ids.iter().zip(p.data.chunks_exact(d)).map(move |(id, v)| (ns, *id, v)))
    }

    fn check_dims(&self, what: &str, n: usize) -> Result<()> {
        if self.dims != 0 && n != self.dims {
            return Err(CoreError::InvalidInput(format!(
                "{what} has {n} dimensions but the index holds {}-dimensional vectors (after changing the embedder, rebuild the index: `mnemo reindex`)",
                self.dims
            )));
        }
        Ok(())
    }
}

impl VectorIndex for FlatVectors {
    fn upsert(&mut self, ns: &Namespace, id: MemoryId, v: &[f32]) -> Result<()> {
        if v.is_empty() {
            return Err(CoreError::InvalidInput(format!("memory {id}: embedding is empty")));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(CoreError::InvalidInput(format!("memory {id}: embedding has a non-finite value")));
        }
        self.check_dims(&format!("memory {id}'s embedding"), v.len())?;
        self.dims = v.len();
        let same_ns_row = self.pos.get(&id).map(|(old_ns, row)| (old_ns == ns, *row));
        match same_ns_row {
            Some((true, row)) => {
                if let Some(p) = self.parts.get_mut(ns) {
                    p.set(row, v);
                    return Ok(());
                }
            }
            Some((false, _)) => {
                self.remove(id);
            }
            None => {}
        }
        let p = self.parts.entry(ns.clone()).or_default();
        p.push(id, v);
        self.pos.insert(id, (ns.clone(), p.ids.len() - 1));
        Ok(())
    }

    fn remove(&mut self, id: MemoryId) -> bool {
        let Some((ns, row)) = self.pos.remove(&id) else { return false };
        let d = self.dims;
        let mut empty = false;
        if let Some(p) = self.parts.get_mut(&ns) {
            let last = p.ids.len() - 1;
            if row != last {
                // Move the last row into the hole: rows stay contiguous.
                p.data.copy_within(last * d..(last + 1) * d, row * d);
                let moved = p.ids[last];
                p.ids[row] = moved;
                if let Some(e) = self.pos.get_mut(&moved) {
                    e.1 = row;
                }
            }
            p.ids.pop();
            p.data.truncate(last * d);
            empty = p.ids.is_empty();
        }
        if empty {
            self.parts.remove(&ns);
        }
        true
    }

    fn search(&self, ns: &Namespace, q: &[f32], k: usize) -> Result<Vec<(MemoryId, f32)>> {
        let Some(p) = self.parts.get(ns) else { return Ok(vec![]) };
        if k == 0 {
            return Ok(vec![]);
        }
        self.check_dims("the query embedding", q.len())?;
        let d = self.dims;
        let best: Vec<_> =
            split(p.ids.len(), PARALLEL_ROWS, |lo, hi| top_k(&p.data[lo * d..hi * d], d, q, k, lo)).concat();
        Ok(best_first(best, k).into_iter().map(|s| (p.ids[s.row as usize], s.score)).collect())
    }

    fn contains(&self, id: MemoryId) -> bool {
        self.pos.contains_key(&id)
    }

    fn len(&self) -> usize {
        self.pos.len()
    }

    fn clear(&mut self) {
        self.parts.clear();
        self.pos.clear();
        self.dims = 0;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::{pseudo, test_ns as ns};
    use super::*;

    #[test]
    fn nearest_first_partitioned_and_removal_keeps_rows_contiguous() {
        let mut v = FlatVectors::new();
        v.upsert(&ns("a"), MemoryId(1), &[1.0, 0.0]).unwrap();
        v.upsert(&ns("a"), MemoryId(2), &[0.0, 1.0]).unwrap();
        v.upsert(&ns("a"), MemoryId(3), &[0.6, 0.8]).unwrap();
        v.upsert(&ns("b"), MemoryId(4), &[1.0, 0.0]).unwrap();
        let hits = v.search(&ns("a"), &[1.0, 0.0], 2).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![MemoryId(1), MemoryId(3)]);
        assert!(v.remove(MemoryId(1)));
        let hits = v.search(&ns("a"), &[1.0, 0.0], 5).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![MemoryId(3), MemoryId(2)]);
        v.upsert(&ns("a"), MemoryId(2), &[1.0, 0.0]).unwrap();
        assert_eq!(v.search(&ns("a"), &[1.0, 0.0], 1).unwrap()[0].0, MemoryId(2));
        assert!(v.upsert(&ns("a"), MemoryId(9), &[1.0, 0.0, 0.0]).is_err());
        assert_eq!(v.len(), 3);
    }

    #[test]
    fn parallel_scan_agrees_with_serial_after_removals() {
        let mut v = FlatVectors::new();
        let n = PARALLEL_ROWS + 10;
        for i in 0..n {
            v.upsert(&ns("a"), MemoryId(i as i64), &pseudo(i as u64, 32)).unwrap();
        }
        for i in (0..n).step_by(7) {
            v.remove(MemoryId(i as i64));
        }
        v.upsert(&ns("a"), MemoryId(3), &pseudo(99, 32)).unwrap();
        for qi in 0..5 {
            let q = pseudo(1_000_000 + qi, 32);
            let hits = v.search(&ns("a"), &q, 10).unwrap();
            let p = &v.parts[&ns("a")];
            let serial = best_first(top_k(&p.data, 32, &q, 10, 0), 10);
            let ids: Vec<_> = serial.iter().map(|s| p.ids[s.row as usize]).collect();
            assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), ids, "query {qi}");
        }
        // Removed rows are gone from the matrix: every hit is a live id.
        let hits = v.search(&ns("a"), &pseudo(7, 32), 50).unwrap();
        assert!(hits.iter().all(|h| h.0 .0 % 7 != 0), "a removed row came back");
    }
}
