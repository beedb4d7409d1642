//! One namespace's vectors as `AnnVectors` keeps them: a single contiguous block when it is
//! searched exactly, or one contiguous block per IVF list (the rows nearest to that list's
//! centroid) once it has an IVF. Keeping each list contiguous matters: scanning rows
//! scattered over the whole matrix is latency-bound (measured 3–10× slower per row than a
//! sequential scan here), and it needs no second copy of the vectors.
use mnemo_contract::MemoryId;

use super::kmeans::Quantizer;
use super::{best_first, dot, split, threads, top_k, Scored, TopK, PARALLEL_ROWS};

/// Probed rows above which an IVF search is split over threads.
const PARALLEL_PROBED: usize = 32_000;

/// Rows of `d` floats: `data[i*d..(i+1)*d]` is the vector of `ids[i]`.
#[derive(Default)]
pub(crate) struct Block {
    pub(crate) ids: Vec<MemoryId>,
    pub(crate) data: Vec<f32>,
}

impl Block {
    fn with_capacity(rows: usize, d: usize) -> Self {
        Block { ids: Vec::with_capacity(rows), data: Vec::with_capacity(rows * d) }
    }

    fn push(&mut self, id: MemoryId, v: &[f32]) -> usize {
        self.ids.push(id);
        self.data.extend_from_slice(v);
        self.ids.len() - 1
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Remove row `r`, moving the last row into it; returns the id now at `r`, if any.
    fn swap_remove(&mut self, r: usize, d: usize) -> Option<MemoryId> {
        let last = self.ids.len() - 1;
        if r != last {
            self.data.copy_within(last * d..(last + 1) * d, r * d);
        }
        self.data.truncate(last * d);
        self.ids.swap_remove(r);
        self.ids.get(r).copied()
    }
}

/// The IVF part: unit centroids, one per list.
pub(crate) struct Coarse {
    /// The `lists × d` centroids, with their lookup structure.
    pub(crate) quantizer: Quantizer,
    /// Rows when the centroids were trained (to judge when to retrain).
    pub(crate) trained_rows: usize,
    /// Lists a search scans, as calibrated on this namespace's own vectors (0: not yet
    /// calibrated; the configured `ivf_nprobe` applies). See `calibrate.rs`.
    pub(crate) nprobe: usize,
}

/// A namespace's vectors (see the module docs).
pub(crate) struct Space {
    pub(crate) blocks: Vec<Block>,
    pub(crate) coarse: Option<Coarse>,
    pub(crate) rows: usize,
}

impl Space {
    /// An empty space searched exactly.
    pub(crate) fn exact() -> Self {
        Space { blocks: vec![Block::default()], coarse: None, rows: 0 }
    }

    /// The list `v` belongs to: its nearest centroid, or 0 when searched exactly.
    pub(crate) fn nearest_list(&self, v: &[f32], d: usize) -> u32 {
        match &self.coarse {
            Some(c) => {
                debug_assert_eq!(v.len(), d);
                c.quantizer.nearest(v).0
            }
            None => 0,
        }
    }

    /// Append to `list` (< number of blocks); returns the row in that list.
    pub(crate) fn push(&mut self, list: u32, id: MemoryId, v: &[f32]) -> usize {
        self.rows += 1;
        self.blocks[list as usize].push(id, v)
    }

    /// Overwrite a row in place.
    pub(crate) fn set(&mut self, list: u32, r: usize, v: &[f32]) {
        let d = v.len();
        self.blocks[list as usize].data[r * d..(r + 1) * d].copy_from_slice(v);
    }

    /// Remove a row; returns the id moved into its place, if any.
    pub(crate) fn remove(&mut self, list: u32, r: usize, d: usize) -> Option<MemoryId> {
        self.rows -= 1;
        self.blocks[list as usize].swap_remove(r, d)
    }

    /// Re-file every row: `lists` new blocks from `centroids` (None: one block, exact). Old
    /// blocks are freed one by one as they are emptied, so the peak is one extra block.
    pub(crate) fn regroup(&mut self, d: usize, coarse: Option<Coarse>) {
        let old = std::mem::take(&mut self.blocks);
        let Some(c) = &coarse else {
            let mut one = Block::with_capacity(self.rows, d);
            for b in old {
                one.ids.extend_from_slice(&b.ids);
                one.data.extend_from_slice(&b.data);
            }
            self.blocks = vec![one];
            self.coarse = None;
            return;
        };
        let lists = c.quantizer.centroids().len() / d;
        let assigned: Vec<Vec<(u32, f32)>> = old.iter().map(|b| c.quantizer.assign_all(&b.data)).collect();
        let mut counts = vec![0usize; lists];
        for a in assigned.iter().flatten() {
            counts[a.0 as usize] += 1;
        }
        let mut blocks: Vec<Block> = counts.iter().map(|&n| Block::with_capacity(n, d)).collect();
        for (b, a) in old.into_iter().zip(assigned) {
            for ((id, v), (l, _)) in b.ids.iter().zip(b.data.chunks_exact(d)).zip(a) {
                blocks[l as usize].push(*id, v);
            }
        }
        self.blocks = blocks;
        self.coarse = coarse;
    }

    /// The best `k` rows for `q` as (list, row, score): every row when exact (or `nprobe` is
    /// None), else the rows of the `nprobe` lists whose centroids are nearest to `q` (more
    /// when those hold fewer than `k` rows).
    pub(crate) fn search(&self, d: usize, q: &[f32], k: usize, nprobe: Option<usize>) -> Vec<(MemoryId, f32)> {
        let lists: Vec<usize> = match (&self.coarse, nprobe) {
            (Some(c), Some(p)) => self.probe_order(c, d, q, k, p),
            _ => (0..self.blocks.len()).collect(),
        };
        let best = if lists.len() == 1 {
            // One block (exact): split its rows over the cores when there are many.
            let b = &self.blocks[lists[0]];
            let l = (lists[0] as u64) << 32;
            split(b.len(), PARALLEL_ROWS, |lo, hi| {
                let mut v = top_k(&b.data[lo * d..hi * d], d, q, k, lo);
                v.iter_mut().for_each(|s| s.row |= l);
                v
            })
            .concat()
        } else {
            let rows: usize = lists.iter().map(|&l| self.blocks[l].len()).sum();
            let min_parallel = if rows >= PARALLEL_PROBED && threads() > 1 { 2 } else { usize::MAX };
            split(lists.len(), min_parallel, |lo, hi| {
                let mut top = TopK::new(k);
                for &l in &lists[lo..hi] {
                    for (r, v) in self.blocks[l].data.chunks_exact(d).enumerate() {
                        top.offer(Scored { score: dot(v, q), row: ((l as u64) << 32) | r as u64 });
                    }
                }
                top.into_vec()
            })
            .concat()
        };
        best_first(best, k)
            .into_iter()
            .map(|s| (self.blocks[(s.row >> 32) as usize].ids[(s.row & 0xFFFF_FFFF) as usize], s.score))
            .collect()
    }

    /// Lists to scan: the `nprobe` nearest centroids, then on down until `k` rows are covered.
    fn probe_order(&self, c: &Coarse, d: usize, q: &[f32], k: usize, nprobe: usize) -> Vec<usize> {
        let mut order: Vec<Scored> = c
            .quantizer
            .centroids()
            .chunks_exact(d)
            .enumerate()
            .map(|(i, c)| Scored { score: dot(c, q), row: i as u64 })
            .collect();
        let want = nprobe.clamp(1, order.len().max(1));
        if want < order.len() {
            order.select_nth_unstable_by(want - 1, |a, b| b.cmp(a));
        }
        let mut out: Vec<usize> = order[..want].iter().map(|s| s.row as usize).collect();
        let mut covered: usize = out.iter().map(|&l| self.blocks[l].len()).sum();
        if covered < k && want < order.len() {
            order[want..].sort_by(|a, b| b.cmp(a));
            for s in &order[want..] {
                if covered >= k {
                    break;
                }
                out.push(s.row as usize);
                covered += self.blocks[s.row as usize].len();
            }
        }
        out
    }
}
