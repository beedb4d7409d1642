//! One namespace's vectors as `AnnVectors` keeps them (int8 codes, see `code`): a single
//! contiguous block when it is searched exactly, or one contiguous block per IVF list (the rows
//! nearest to that list's centroid) once it has an IVF. Keeping each list contiguous matters:
//! scanning rows scattered over the whole matrix is latency-bound (measured 3–10× slower per
//! row than a sequential scan here), and it needs no second copy of the vectors. Each space
//! knows where its own rows are, so a space built elsewhere (a background training) is put in
//! place whole. Blocks are shared copy-on-write (`Arc`): a training's copy of the rows costs
//! nothing when it is taken, and a write then copies only the one list it changes.
use mnemo_contract::MemoryId;
use std::sync::Arc;

use super::code::{decode_into, Code};
use super::idmap::IdMap;
use super::kernels::dots_i8;
use super::kmeans::Quantizer;
use super::{best_first, split, threads, Scored, TopK, PARALLEL_ROWS};

/// Probed rows above which an IVF search is split over threads.
const PARALLEL_PROBED: usize = 32_000;
/// Rows decoded at a time when rows are filed under centroids.
const FILE_CHUNK: usize = 4_096;
/// Rows whose dots are computed together before their scores are offered.
const SCAN_CHUNK: usize = 256;

/// Rows of `d` codes: `codes[i*d..(i+1)*d]` × `scales[i]` is the vector of `ids[i]`.
#[derive(Clone, Default)]
pub(crate) struct Block {
    pub(crate) ids: Vec<MemoryId>,
    pub(crate) codes: Vec<i8>,
    pub(crate) scales: Vec<f32>,
}

impl Block {
    fn with_capacity(rows: usize, d: usize) -> Self {
        Block { ids: Vec::with_capacity(rows), codes: Vec::with_capacity(rows * d), scales: Vec::with_capacity(rows) }
    }

    fn push(&mut self, id: MemoryId, codes: &[i8], scale: f32) -> usize {
        self.ids.push(id);
        self.codes.extend_from_slice(codes);
        self.scales.push(scale);
        self.ids.len() - 1
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Row `r`'s codes and scale.
    pub(crate) fn row(&self, r: usize, d: usize) -> (&[i8], f32) {
        (&self.codes[r * d..(r + 1) * d], self.scales[r])
    }

    /// Every row as (id, codes, scale).
    pub(crate) fn rows(&self, d: usize) -> impl Iterator<Item = (MemoryId, &[i8], f32)> + '_ {
        self.ids.iter().zip(self.codes.chunks_exact(d)).zip(&self.scales).map(|((id, c), s)| (*id, c, *s))
    }

    /// Remove row `r`, moving the last row into it; returns the id now at `r`, if any.
    fn swap_remove(&mut self, r: usize, d: usize) -> Option<MemoryId> {
        let last = self.ids.len() - 1;
        if r != last {
            self.codes.copy_within(last * d..(last + 1) * d, r * d);
        }
        self.codes.truncate(last * d);
        self.scales.swap_remove(r);
        self.ids.swap_remove(r);
        self.ids.get(r).copied()
    }

    /// The best `k` of rows `lo..hi` for `q`, packed `list << 32 | row`.
    /// `dots` is scratch space of at least [`SCAN_CHUNK`] slots.
    fn top_k(&self, q: &Code, list: usize, lo: usize, hi: usize, top: &mut TopK, dots: &mut [i32]) {
        let l = (list as u64) << 32;
        let d = q.codes.len();
        let mut r = lo;
        while r < hi {
            let end = (r + SCAN_CHUNK).min(hi);
            let dots = &mut dots[..end - r];
            dots_i8(&self.codes[r * d..end * d], &q.codes, dots);
            for (i, (&dot, s)) in dots.iter().zip(&self.scales[r..end]).enumerate() {
                top.offer(Scored { score: dot as f32 * s * q.scale, row: l | (r + i) as u64 });
            }
            r = end;
        }
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
    /// Rows when `nprobe` was calibrated (0: never): as lists fill up, fewer of them hold a
    /// query's neighbours, so the count is calibrated again as the space grows
    /// (`recalibrate.rs`).
    pub(crate) calibrated_rows: usize,
}

/// A namespace's vectors (see the module docs).
pub(crate) struct Space {
    pub(crate) blocks: Vec<Arc<Block>>,
    pub(crate) coarse: Option<Coarse>,
    pub(crate) rows: usize,
    /// Where each row is: (list, row in that list).
    pos: IdMap<(u32, u32)>,
}

impl Space {
    /// An empty space searched exactly.
    pub(crate) fn exact() -> Self {
        Space { blocks: vec![Arc::new(Block::default())], coarse: None, rows: 0, pos: IdMap::default() }
    }

    /// An empty space with the lists of `coarse`.
    pub(crate) fn with_lists(coarse: Coarse, d: usize) -> Self {
        let lists = coarse.quantizer.centroids().len() / d.max(1);
        let blocks = (0..lists.max(1)).map(|_| Arc::new(Block::default())).collect();
        Space { blocks, coarse: Some(coarse), rows: 0, pos: IdMap::default() }
    }

    /// Rows of `old` filed anew: under their nearest centroid of `coarse` (by their decoded
    /// codes), or in one exact block (None). Old blocks are freed one by one as they are
    /// filed, so the peak is about one extra copy.
    pub(crate) fn file(d: usize, coarse: Option<Coarse>, old: Vec<Arc<Block>>) -> Space {
        let Some(c) = coarse else {
            let rows = old.iter().map(|b| b.len()).sum();
            let mut s = Space::exact();
            s.blocks[0] = Arc::new(Block::with_capacity(rows, d));
            for b in old {
                for (id, codes, scale) in b.rows(d) {
                    s.insert(0, id, codes, scale);
                }
            }
            return s;
        };
        let mut s = Space::with_lists(c, d);
        let mut buf = Vec::with_capacity(FILE_CHUNK * d);
        for b in old {
            let mut lo = 0;
            while lo < b.len() {
                let hi = (lo + FILE_CHUNK).min(b.len());
                buf.clear();
                for r in lo..hi {
                    let (codes, scale) = b.row(r, d);
                    decode_into(codes, scale, &mut buf);
                }
                let lists = match &s.coarse {
                    Some(c) => c.quantizer.assign_all(&buf),
                    None => vec![],
                };
                for (r, (l, _)) in (lo..hi).zip(lists) {
                    let (codes, scale) = b.row(r, d);
                    s.insert(l, b.ids[r], codes, scale);
                }
                lo = hi;
            }
        }
        s
    }

    /// The list of `id`'s row, if it has one.
    pub(crate) fn list_of(&self, id: MemoryId) -> Option<u32> {
        self.pos.get(&id).map(|p| p.0)
    }

    /// The list a new vector is filed under: its nearest centroid (`Quantizer::file`), or 0
    /// when searched exactly.
    pub(crate) fn nearest_list(&self, v: &[f32]) -> u32 {
        match &self.coarse {
            Some(c) => c.quantizer.file(v).first().copied().unwrap_or(0),
            None => 0,
        }
    }

    /// The list a code belongs to (by its decoded vector).
    pub(crate) fn nearest_list_of_code(&self, codes: &[i8], scale: f32) -> u32 {
        if self.coarse.is_none() {
            return 0;
        }
        let mut v = Vec::with_capacity(codes.len());
        decode_into(codes, scale, &mut v);
        self.nearest_list(&v)
    }

    /// The lists of many codes: `nearest_list_of_code` of each, computed together,
    /// [`FILE_CHUNK`] at a time. Decoded all at once, the journal a training catches up on at
    /// 1M vectors (~300k puts) took ~300 MB of `f32` for a moment: the peak RSS of the load.
    pub(crate) fn nearest_lists_of_codes(&self, codes: &[&Code]) -> Vec<u32> {
        let Some(c) = &self.coarse else { return vec![0; codes.len()] };
        let mut lists = Vec::with_capacity(codes.len());
        let mut data = Vec::new();
        for chunk in codes.chunks(FILE_CHUNK) {
            data.clear();
            for k in chunk {
                decode_into(&k.codes, k.scale, &mut data);
            }
            lists.extend(c.quantizer.file(&data));
        }
        lists
    }

    /// Add a row for `id` (not held yet) to `list` (< number of blocks).
    pub(crate) fn insert(&mut self, list: u32, id: MemoryId, codes: &[i8], scale: f32) {
        let r = Arc::make_mut(&mut self.blocks[list as usize]).push(id, codes, scale);
        self.pos.insert(id, (list, r as u32));
        self.rows += 1;
    }

    /// Add or replace `id`'s row, filed under `list`.
    pub(crate) fn put(&mut self, list: u32, id: MemoryId, codes: &[i8], scale: f32) {
        let d = codes.len();
        if let Some(&(l, r)) = self.pos.get(&id) {
            if l == list {
                let b = Arc::make_mut(&mut self.blocks[l as usize]);
                b.codes[r as usize * d..(r as usize + 1) * d].copy_from_slice(codes);
                b.scales[r as usize] = scale;
                return;
            }
            self.remove(id, d);
        }
        self.insert(list, id, codes, scale);
    }

    /// Remove `id`'s row; true if there was one.
    pub(crate) fn remove(&mut self, id: MemoryId, d: usize) -> bool {
        let Some((l, r)) = self.pos.remove(&id) else { return false };
        self.rows -= 1;
        if let Some(moved) = Arc::make_mut(&mut self.blocks[l as usize]).swap_remove(r as usize, d) {
            if let Some(p) = self.pos.get_mut(&moved) {
                p.1 = r;
            }
        }
        true
    }

    /// A copy of the rows (what a background training files anew): shared, not copied, until
    /// a write changes a list.
    pub(crate) fn copy_rows(&self) -> Vec<Arc<Block>> {
        self.blocks.clone()
    }

    /// Take the rows out (the space is left empty, exact).
    pub(crate) fn take_rows(&mut self) -> Vec<Arc<Block>> {
        self.pos.clear();
        self.rows = 0;
        self.coarse = None;
        std::mem::replace(&mut self.blocks, vec![Arc::new(Block::default())])
    }

    /// The best `k` rows for the query whose codes are `qc`: every row when exact (or
    /// `nprobe` is None), else the rows of the `nprobe` lists whose centroids rank first for
    /// it (more when those hold fewer than `k` rows).
    pub(crate) fn search(&self, qc: &Code, k: usize, nprobe: Option<usize>) -> Vec<(MemoryId, f32)> {
        let lists: Vec<usize> = match (&self.coarse, nprobe) {
            (Some(c), Some(p)) => self.probe_order(c, qc, k, p),
            _ => (0..self.blocks.len()).collect(),
        };
        let best = if lists.len() == 1 {
            // One block (exact): split its rows over the cores when there are many.
            let l = lists[0];
            let b = &self.blocks[l];
            split(b.len(), PARALLEL_ROWS, |lo, hi| {
                let mut top = TopK::new(k);
                b.top_k(qc, l, lo, hi, &mut top, &mut [0; SCAN_CHUNK]);
                top.into_vec()
            })
            .concat()
        } else {
            let rows: usize = lists.iter().map(|&l| self.blocks[l].len()).sum();
            let min_parallel = if rows >= PARALLEL_PROBED && threads() > 1 { 2 } else { usize::MAX };
            split(lists.len(), min_parallel, |lo, hi| {
                let mut top = TopK::new(k);
                let mut dots = [0; SCAN_CHUNK];
                for &l in &lists[lo..hi] {
                    let b = &self.blocks[l];
                    b.top_k(qc, l, 0, b.len(), &mut top, &mut dots);
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
    fn probe_order(&self, c: &Coarse, qc: &Code, k: usize, nprobe: usize) -> Vec<usize> {
        let scores = c.quantizer.rank(&qc.codes);
        let mut order: Vec<Scored> =
            scores.into_iter().enumerate().map(|(i, score)| Scored { score, row: i as u64 }).collect();
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

    /// Assert that the positions match the rows.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        assert_eq!(self.rows, self.blocks.iter().map(|b| b.len()).sum::<usize>());
        assert_eq!(self.rows, self.pos.len());
        for (l, b) in self.blocks.iter().enumerate() {
            for (r, id) in b.ids.iter().enumerate() {
                assert_eq!(self.pos[id], (l as u32, r as u32), "{id}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::pseudo;

    #[test]
    fn lists_looked_up_in_chunks_are_those_looked_up_one_by_one() {
        let d = 8;
        let centroids: Vec<f32> = (0..16u64).flat_map(|c| pseudo(1_000 + c, d)).collect();
        let coarse =
            Coarse { quantizer: Quantizer::new(centroids, d), trained_rows: 16, nprobe: 0, calibrated_rows: 0 };
        let space = Space::with_lists(coarse, d);
        // More than one chunk, and a part-filled last one.
        let codes: Vec<Code> = (0..(2 * FILE_CHUNK + 7) as u64).map(|i| Code::of(&pseudo(i, d))).collect();
        let refs: Vec<&Code> = codes.iter().collect();
        let together = space.nearest_lists_of_codes(&refs);
        let one_by_one: Vec<u32> = codes.iter().map(|c| space.nearest_list_of_code(&c.codes, c.scale)).collect();
        assert_eq!(together.len(), codes.len());
        assert_eq!(together, one_by_one);
        assert!(together.iter().any(|&l| l != together[0]), "the rows fall in more than one list");
    }
}
