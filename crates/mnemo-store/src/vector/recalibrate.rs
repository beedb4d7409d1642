//! The probe count calibrated again as an IVF fills up, on a thread of its own, on the live
//! lists handed over a few at a time (no copy of the namespace).
//!
//! Why again: a namespace's IVF is calibrated when it is trained and retrained only when it has
//! grown [`super::ann::RETRAIN_GROWTH`]× since. In between its lists fill up (at 100k vectors on
//! the IVF trained at 80k: 101 rows per list instead of 78), so each probe scans more rows —
//! and, the lists being denser, fewer probes hold a query's neighbours. Calibrating again once
//! the rows have grown by [`GROWTH_PERCENT`] % keeps the count what the recall target needs now
//! instead of what it needed at the training (measured by `bench scale`: rows
//! `dense_ivf_nprobe`, `dense_probed_rows`).
//!
//! Why in steps: the calibration once searched a copy of the whole space whose list blocks were
//! shared copy-on-write; a batch of writes touches nearly every list, so while it ran every
//! block was duplicated (~260 MB of codes at 1M vectors: peak RSS 1,654 MiB against 1,220 with
//! the calibration off). Here the owner hands the thread the lists [`STEP_ROWS`] rows at a
//! time, the next step only once the thread is done with the last (at a write, flush or
//! search), so at most one step's blocks are shared with the namespace.
//!
//! What it measures is what `calibrate` measures (the stored vectors it samples taken as
//! queries, their exact top [`calibrate::K`] against the IVF's, the same aim and steps),
//! computed without searching again for each count: the probed top K of a query holds exactly
//! those of its exact top K that lie in the lists it probes (each of them outranks every other
//! row of any subset holding it), so the thread only keeps, for each sampled query, the list
//! of each of its exact neighbours and the rank of each list's centroid for it. Rows written
//! while the lists are handed over are seen if their list comes later: a calibration is an
//! estimate of the recall, not a snapshot. The count is put in place at the next write, flush
//! or search after it is ready (only if the namespace still has the IVF it was measured on),
//! and a failure keeps the count it had. The new count is not logged: a reopened index starts
//! from the one calibrated at its training, and calibrates again as it grows.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use mnemo_contract::MemoryId;

use super::calibrate::{self, K, MARGIN_SHARE, QUERIES};
use super::code::{decode_into, Code};
use super::kernels::dots_i8;
use super::kmeans::Quantizer;
use super::space::{Block, Space};
use super::{Scored, TopK};

/// Growth of the rows since the last calibration (%) that calibrates again.
pub(crate) const GROWTH_PERCENT: usize = 20;

/// Rows handed to the thread at a time (at least one list): the most rows a calibration keeps
/// shared with the namespace (~16 MB of codes at 256 dimensions).
pub(crate) const STEP_ROWS: usize = 65_536;

/// Whether a space calibrated at `calibrated` rows and holding `rows` is due again.
pub(crate) fn due(calibrated: usize, rows: usize) -> bool {
    calibrated > 0 && rows.saturating_sub(calibrated) * 100 >= calibrated * GROWTH_PERCENT
}

/// Lists handed over in one step: (list, its block).
type Step = Vec<(usize, Arc<Block>)>;

/// A calibration in flight.
pub(crate) struct Recalibration {
    /// Rows when the IVF measured was trained (to check it is still the one in place).
    pub(crate) trained_rows: usize,
    /// Rows when the calibration started.
    pub(crate) rows: usize,
    /// The next list to hand over.
    next: usize,
    /// Steps handed over so far.
    sent: usize,
    /// Where the steps go (None once every list was handed over).
    steps: Option<Sender<Step>>,
    /// Steps the thread is done with.
    scanned: Arc<AtomicUsize>,
    /// Set when the calibration is dropped before it ended.
    cancelled: Arc<AtomicBool>,
    result: Arc<Mutex<Option<usize>>>,
    handle: Option<JoinHandle<()>>,
}

impl Recalibration {
    /// Start measuring `space` (with an IVF) for `target` from `floor` probes: the queries are
    /// sampled now, the lists are handed over by `feed`. None when it has no IVF or no thread
    /// could be started.
    pub(crate) fn start(space: &Space, d: usize, floor: usize, target: f64) -> Option<Recalibration> {
        let c = space.coarse.as_ref()?;
        let trained_rows = c.trained_rows;
        let quantizer = c.quantizer.clone();
        let samples = sample(space, d);
        let lists = space.blocks.len();
        let (tx, rx) = channel();
        let result = Arc::new(Mutex::new(None));
        let scanned = Arc::new(AtomicUsize::new(0));
        let cancelled = Arc::new(AtomicBool::new(false));
        let job = Job { floor, target, lists, quantizer, samples };
        let (out, done, stop) = (result.clone(), scanned.clone(), cancelled.clone());
        let handle = std::thread::Builder::new()
            .name("mnemo-ivf-calibrate".into())
            .spawn(move || {
                let p = job.run(&rx, &done, &stop);
                if let (Some(p), Ok(mut g)) = (p, out.lock()) {
                    *g = Some(p);
                }
            })
            .ok()?;
        Some(Recalibration {
            trained_rows,
            rows: space.rows,
            next: 0,
            sent: 0,
            steps: Some(tx),
            scanned,
            cancelled,
            result,
            handle: Some(handle),
        })
    }

    /// Whether the thread waits for the next lists.
    pub(crate) fn hungry(&self) -> bool {
        self.steps.is_some() && self.scanned.load(Ordering::Acquire) >= self.sent
    }

    /// Hand the thread the next `step_rows` rows of `space`'s lists (at least one list) if it
    /// is done with the last step (`usize::MAX`: every list left, at once, for a caller that
    /// waits for the result). `space` should be the one it was started on (same IVF): the
    /// caller checks.
    pub(crate) fn feed(&mut self, space: &Space, step_rows: usize) {
        let all = step_rows == usize::MAX;
        if !self.hungry() && !all {
            return;
        }
        let Some(tx) = &self.steps else { return };
        let mut step = Vec::new();
        let mut rows = 0usize;
        while self.next < space.blocks.len() && (step.is_empty() || rows < step_rows) {
            rows += space.blocks[self.next].len();
            step.push((self.next, space.blocks[self.next].clone()));
            self.next += 1;
        }
        if !step.is_empty() {
            // A send fails only when the thread ended (a panic: a bug); `failed` then says so.
            let _ = tx.send(step);
            self.sent += 1;
        }
        if self.next >= space.blocks.len() {
            // The end of the lists: the thread computes the count.
            self.steps = None;
        }
    }

    /// The count measured, once ready.
    pub(crate) fn ready(&self) -> Option<usize> {
        self.result.lock().ok().and_then(|g| *g)
    }

    /// Wait for the count (None if the thread ended without one). Every list must have been
    /// handed over (`feed`), or the count is measured on those that were.
    pub(crate) fn wait(mut self) -> Option<usize> {
        self.steps = None;
        if let Some(h) = self.handle.take() {
            // A panicking calibration is a bug; the count in place is kept.
            let _ = h.join();
        }
        self.ready()
    }

    /// Whether it ended without a count (a panic: a bug; the count in place is kept).
    pub(crate) fn failed(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished) && self.ready().is_none()
    }
}

impl Drop for Recalibration {
    fn drop(&mut self) {
        // The thread stops at its next step; it is not waited for.
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// The thread's side: the sampled queries and what it learns of them.
struct Job {
    floor: usize,
    target: f64,
    lists: usize,
    quantizer: Quantizer,
    samples: Vec<(MemoryId, Code)>,
}

impl Job {
    /// Scan every step handed over; the count, or None when cancelled.
    fn run(self, steps: &Receiver<Step>, scanned: &AtomicUsize, cancelled: &AtomicBool) -> Option<usize> {
        // Each query's exact top K, as the list of each neighbour (`Scored::row`).
        let mut tops: Vec<TopK> = self.samples.iter().map(|_| TopK::new(K)).collect();
        while let Ok(step) = steps.recv() {
            if cancelled.load(Ordering::Relaxed) {
                return None;
            }
            for (list, block) in &step {
                for ((own, q), top) in self.samples.iter().zip(&mut tops) {
                    scan(block, *list, *own, q, top);
                }
            }
            drop(step);
            scanned.fetch_add(1, Ordering::Release);
        }
        if cancelled.load(Ordering::Relaxed) {
            return None;
        }
        let neighbours: Vec<Vec<usize>> =
            tops.into_iter().map(|t| t.into_vec().into_iter().map(|s| s.row as usize).collect()).collect();
        let ranks: Vec<Vec<usize>> = self.samples.iter().map(|(_, q)| self.list_ranks(q)).collect();
        Some(count_for(&neighbours, &ranks, self.lists, self.floor, self.target))
    }

    /// The rank of each list's centroid for the query whose codes are `q` (0: the first
    /// probed), as a search orders them.
    fn list_ranks(&self, q: &Code) -> Vec<usize> {
        let mut order: Vec<Scored> = self
            .quantizer
            .rank(&q.codes)
            .into_iter()
            .enumerate()
            .map(|(i, score)| Scored { score, row: i as u64 })
            .collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut ranks = vec![usize::MAX; self.lists];
        for (r, s) in order.iter().enumerate() {
            if let Some(slot) = ranks.get_mut(s.row as usize) {
                *slot = r;
            }
        }
        ranks
    }
}

/// Offer every row of `block` (list `list`) other than `own` to `top`, scored as a search
/// scores it.
fn scan(block: &Block, list: usize, own: MemoryId, q: &Code, top: &mut TopK) {
    let mut dots = vec![0i32; block.len()];
    dots_i8(&block.codes, &q.codes, &mut dots);
    for ((id, dot), s) in block.ids.iter().zip(&dots).zip(&block.scales) {
        if *id != own {
            top.offer(Scored { score: *dot as f32 * s * q.scale, row: list as u64 });
        }
    }
}

/// The least probe count, from `floor` up by a quarter each step (as `calibrate`), at which
/// the exact neighbours (`neighbours[q]`: the list of each) that lie in the probed lists
/// (`ranks[q][list]` below the count) reach the aim; `lists` when none short of it does.
fn count_for(neighbours: &[Vec<usize>], ranks: &[Vec<usize>], lists: usize, floor: usize, target: f64) -> usize {
    let wanted: usize = neighbours.iter().map(Vec::len).sum();
    if wanted == 0 || lists <= 1 {
        return lists.max(1);
    }
    let aim = target + (1.0 - target).max(0.0) * MARGIN_SHARE;
    let mut p = floor.max(1);
    while p < lists {
        let hits: usize = neighbours
            .iter()
            .zip(ranks)
            .map(|(ns, rank)| ns.iter().filter(|&&l| rank.get(l).is_some_and(|r| *r < p)).count())
            .sum();
        if hits as f64 >= aim * wanted as f64 {
            return p;
        }
        p = p.saturating_add(p.div_ceil(4));
    }
    lists
}

/// Up to [`QUERIES`] stored rows, evenly spaced over all rows as `calibrate` samples them:
/// (id, codes of the decoded vector).
fn sample(space: &Space, d: usize) -> Vec<(MemoryId, Code)> {
    let rows = space.rows;
    if rows <= calibrate::K {
        return vec![];
    }
    let step = (rows / QUERIES).max(1);
    let mut out = Vec::with_capacity(QUERIES);
    let mut start = 0usize;
    for b in &space.blocks {
        // The first wanted row at or after this block's start.
        let mut g = start.div_ceil(step) * step;
        while g < start + b.len() && out.len() < QUERIES {
            let (codes, scale) = b.row(g - start, d);
            let mut v = Vec::with_capacity(d);
            decode_into(codes, scale, &mut v);
            out.push((b.ids[g - start], Code::of(&v)));
            g += step;
        }
        start += b.len();
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn due_after_the_growth_and_never_when_not_calibrated() {
        assert!(!due(0, 1_000_000), "never calibrated: the training's calibration comes first");
        assert!(!due(80_000, 95_999));
        assert!(due(80_000, 96_000));
        assert!(!due(80_000, 70_000), "a shrinking space keeps its count");
    }

    #[test]
    fn the_count_is_the_least_step_whose_probed_lists_hold_the_neighbours() {
        // Two queries over 8 lists; each neighbour's list ranked as given.
        let ranks = vec![(0..8).collect::<Vec<_>>(), (0..8).rev().collect::<Vec<_>>()];
        // Query 0's neighbours in its nearest lists 0 and 1; query 1's in lists 7 and 6 (its
        // ranks 0 and 1) but one in list 0, its farthest.
        let neighbours = vec![vec![0, 0, 1], vec![7, 6, 0]];
        // Target 1: the aim is 1, every neighbour: only all 8 lists hold them.
        assert_eq!(count_for(&neighbours, &ranks, 8, 1, 1.0), 8);
        // Target .5 (aim .8): 2 probes hold 5 of 6 (.83).
        assert_eq!(count_for(&neighbours, &ranks, 8, 1, 0.5), 2);
        // The floor is kept when it already reaches the aim.
        assert_eq!(count_for(&neighbours, &ranks, 8, 3, 0.5), 3);
        assert_eq!(count_for(&[vec![], vec![]], &ranks, 8, 1, 0.95), 8, "nothing to measure: every list");
    }
}
