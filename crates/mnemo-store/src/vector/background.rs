//! IVF training off the write path: a namespace's rows are copied, and a thread of its own
//! trains the centroids on them, files every copied row under its list, calibrates the probe
//! count and then catches up with what was written meanwhile (each write to the namespace
//! is also journaled here). The owner puts the finished space in place whole at its next
//! write; until then searches use the structure they had (exact, or the previous IVF).
//!
//! Why: trained under the write lock, a training stalled every write for its whole duration
//! (5 s at 100k vectors, 24 s at 1M). Here a write only appends to the journal (a short
//! mutex hold, at most the application of [`CATCH_UP`] journaled changes when the trainer
//! is finishing).
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use mnemo_contract::MemoryId;

use super::calibrate;
use super::code::Code;
use super::kmeans::{train, Quantizer};
use super::space::{Block, Coarse, Space};

/// Journaled changes the trainer applies in its final step, under the journal's lock (each
/// costs one nearest-centroid lookup, ~25 µs at 1,024 lists × 256 dims).
pub(crate) const CATCH_UP: usize = 256;

/// A change made to the namespace after its rows were copied.
pub(crate) enum Change {
    /// Set `id`'s vector.
    Put(MemoryId, Code),
    /// Drop `id`'s vector.
    Remove(MemoryId),
}

/// What the trainer and the owner share.
#[derive(Default)]
struct State {
    /// Changes not yet applied by the trainer.
    journal: Vec<Change>,
    /// The finished space (trained, filed, calibrated, caught up), waiting to be put in place.
    ready: Option<Space>,
    /// Set by the trainer when it gave up (nothing to train on).
    failed: bool,
}

/// How a training is set up.
pub(crate) struct Plan {
    pub(crate) dims: usize,
    pub(crate) lists: usize,
    pub(crate) seed: u64,
    /// Probe floor and recall target of the calibration (target 0: off).
    pub(crate) nprobe_floor: usize,
    pub(crate) recall_target: f64,
    /// Held by tests to keep the trainer from starting (so writes meet a training in flight).
    pub(crate) gate: Option<Arc<Mutex<()>>>,
}

/// A training in flight.
pub(crate) struct Training {
    dims: usize,
    state: Arc<Mutex<State>>,
    cancelled: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Training {
    /// Start training on `rows` (a copy of the namespace's rows).
    pub(crate) fn start(rows: Vec<Arc<Block>>, plan: Plan) -> Training {
        let state = Arc::new(Mutex::new(State::default()));
        let cancelled = Arc::new(AtomicBool::new(false));
        let (s, c, dims) = (state.clone(), cancelled.clone(), plan.dims);
        let handle =
            std::thread::Builder::new().name("mnemo-ivf-train".into()).spawn(move || run(rows, plan, &s, &c)).ok();
        let t = Training { dims, state, cancelled, handle };
        if t.handle.is_none() {
            // No thread: nothing will ever be ready; the owner drops this training.
            if let Ok(mut g) = t.state.lock() {
                g.failed = true;
            }
        }
        t
    }

    /// Record a change made to the namespace: journaled, or applied at once to the finished
    /// space when the trainer is done.
    pub(crate) fn record(&self, change: Change) {
        let Ok(mut g) = self.state.lock() else { return };
        match g.ready.as_mut() {
            Some(space) => apply(space, self.dims, change),
            None => g.journal.push(change),
        }
    }

    /// The finished space, if the trainer is done (the thread is then over or ending).
    pub(crate) fn take_ready(&self) -> Option<Space> {
        self.state.lock().ok().and_then(|mut g| g.ready.take())
    }

    /// Whether the trainer is done: its space is ready, or it gave up.
    pub(crate) fn is_done(&self) -> bool {
        self.state.lock().map(|g| g.ready.is_some() || g.failed).unwrap_or(true)
    }

    /// Whether the trainer gave up (the training should be dropped).
    pub(crate) fn failed(&self) -> bool {
        self.state.lock().map(|g| g.failed).unwrap_or(true)
    }

    /// Wait for the trainer to end; the finished space, if any.
    pub(crate) fn wait(mut self) -> Option<Space> {
        if let Some(h) = self.handle.take() {
            // A panicking trainer is a bug; the namespace keeps its current structure.
            let _ = h.join();
        }
        self.take_ready()
    }
}

impl Drop for Training {
    fn drop(&mut self) {
        // The trainer stops at its next check; it is not waited for.
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// Apply a journaled change to a space with an IVF.
fn apply(space: &mut Space, d: usize, change: Change) {
    match change {
        Change::Put(id, code) => {
            let l = space.nearest_list_of_code(&code.codes, code.scale);
            space.put(l, id, &code.codes, code.scale);
        }
        Change::Remove(id) => {
            space.remove(id, d);
        }
    }
}

/// Apply journaled changes in order, the lists of all their vectors looked up together
/// (the centroids do not change meanwhile, so each list is what `apply` would find).
fn apply_all(space: &mut Space, d: usize, changes: Vec<Change>) {
    let puts: Vec<&Code> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Put(_, code) => Some(code),
            Change::Remove(_) => None,
        })
        .collect();
    let mut lists = space.nearest_lists_of_codes(&puts).into_iter();
    drop(puts);
    for change in changes {
        match change {
            Change::Put(id, code) => {
                let l = lists.next().unwrap_or_else(|| space.nearest_list_of_code(&code.codes, code.scale));
                space.put(l, id, &code.codes, code.scale);
            }
            Change::Remove(id) => {
                space.remove(id, d);
            }
        }
    }
}

fn run(rows: Vec<Arc<Block>>, plan: Plan, state: &Mutex<State>, cancelled: &AtomicBool) {
    if let Some(gate) = &plan.gate {
        // Wait until the test holding it lets go.
        drop(gate.lock());
    }
    let fail = || {
        if let Ok(mut g) = state.lock() {
            g.failed = true;
        }
    };
    let d = plan.dims;
    let n: usize = rows.iter().map(|b| b.len()).sum();
    // The centroids, from a sample of the decoded codes (the k-means only needs the lists
    // roughly right). Row g of the namespace: the block holding it, then its row there.
    let mut starts = Vec::with_capacity(rows.len());
    let mut total = 0usize;
    for b in &rows {
        starts.push(total);
        total += b.len();
    }
    let gather = |g: usize, out: &mut Vec<f32>| {
        // The last block starting at or before g holds it (empty blocks share their start).
        let b = starts.partition_point(|&st| st <= g) - 1;
        let (c, s) = rows[b].row(g - starts[b], d);
        super::code::decode_into(c, s, out);
    };
    let centroids = train(n, d, plan.lists, plan.seed, gather);
    if centroids.is_empty() || cancelled.load(Ordering::Relaxed) {
        return fail();
    }
    let coarse = Coarse { quantizer: Quantizer::new(centroids, d), trained_rows: n, nprobe: 0, calibrated_rows: 0 };
    let mut space = Space::file(d, Some(coarse), rows);
    if cancelled.load(Ordering::Relaxed) {
        return fail();
    }
    if plan.recall_target > 0.0 {
        let p = calibrate::probes_for_recall(&space, d, plan.nprobe_floor, plan.recall_target);
        if let Some(c) = space.coarse.as_mut() {
            c.nprobe = p;
            c.calibrated_rows = n;
        }
    }
    // Catch up: apply the journal outside the lock until what is left is short, then the
    // rest under it, and hand the space over in the same hold (so no change is missed).
    loop {
        if cancelled.load(Ordering::Relaxed) {
            return fail();
        }
        let Ok(mut g) = state.lock() else { return };
        if g.journal.len() <= CATCH_UP {
            apply_all(&mut space, d, std::mem::take(&mut g.journal));
            g.ready = Some(space);
            return;
        }
        let batch = std::mem::take(&mut g.journal);
        drop(g);
        apply_all(&mut space, d, batch);
    }
}
