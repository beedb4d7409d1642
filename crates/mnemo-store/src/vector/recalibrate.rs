//! The probe count calibrated again as an IVF fills up, on a thread of its own.
//!
//! Why: a namespace's IVF is calibrated when it is trained and retrained only when it has grown
//! [`super::ann::RETRAIN_GROWTH`]× since. In between its lists fill up (at 100k vectors on the
//! IVF trained at 80k: 101 rows per list instead of 78), so each probe scans more rows — and,
//! the lists being denser, fewer probes hold a query's neighbours. Calibrating again once the
//! rows have grown by [`GROWTH_PERCENT`] % keeps the count what the recall target needs now
//! instead of what it needed at the training (measured by `bench scale`: rows `dense_ivf_nprobe`,
//! `dense_probed_rows`). The search is never blocked: the copy searched is shared with the
//! namespace (`Space::search_copy`), the count is put in place at the next write, flush or
//! search after it is ready (only if the namespace still has the IVF it was measured on), and
//! a failure keeps the count it had. The new count is not logged: a reopened index starts from
//! the one calibrated at its training, and calibrates again as it grows.
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::calibrate;
use super::space::Space;

/// Growth of the rows since the last calibration (%) that calibrates again.
pub(crate) const GROWTH_PERCENT: usize = 20;

/// Whether a space calibrated at `calibrated` rows and holding `rows` is due again.
pub(crate) fn due(calibrated: usize, rows: usize) -> bool {
    calibrated > 0 && rows.saturating_sub(calibrated) * 100 >= calibrated * GROWTH_PERCENT
}

/// A calibration in flight.
pub(crate) struct Recalibration {
    /// Rows when the IVF measured was trained (to check it is still the one in place).
    pub(crate) trained_rows: usize,
    /// Rows of the copy measured.
    pub(crate) rows: usize,
    result: Arc<Mutex<Option<usize>>>,
    handle: JoinHandle<()>,
}

impl Recalibration {
    /// Start measuring `space` (a search copy with an IVF) for `target` from `floor` probes.
    /// None when no thread could be started.
    pub(crate) fn start(space: Space, d: usize, floor: usize, target: f64) -> Option<Recalibration> {
        let trained_rows = space.coarse.as_ref().map_or(0, |c| c.trained_rows);
        let rows = space.rows;
        let result = Arc::new(Mutex::new(None));
        let out = result.clone();
        let handle = std::thread::Builder::new()
            .name("mnemo-ivf-calibrate".into())
            .spawn(move || {
                let p = calibrate::probes_for_recall(&space, d, floor, target);
                if let Ok(mut g) = out.lock() {
                    *g = Some(p);
                }
            })
            .ok()?;
        Some(Recalibration { trained_rows, rows, result, handle })
    }

    /// The count measured, once ready.
    pub(crate) fn ready(&self) -> Option<usize> {
        self.result.lock().ok().and_then(|g| *g)
    }

    /// Wait for the count (None if the thread ended without one).
    pub(crate) fn wait(self) -> Option<usize> {
        // A panicking calibration is a bug; the count in place is kept.
        let _ = self.handle.join();
        self.result.lock().ok().and_then(|g| *g)
    }

    /// Whether it ended without a count (a panic: a bug; the count in place is kept).
    pub(crate) fn failed(&self) -> bool {
        self.handle.is_finished() && self.ready().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_after_the_growth_and_never_when_not_calibrated() {
        assert!(!due(0, 1_000_000), "never calibrated: the training's calibration comes first");
        assert!(!due(80_000, 95_999));
        assert!(due(80_000, 96_000));
        assert!(!due(80_000, 70_000), "a shrinking space keeps its count");
    }
}
