//! Recall's access times (`last_accessed_at`), kept in the engine and written to the store in
//! batches instead of by a store write on every recall (that write was a third of a recall's
//! time, and its p99 tens of milliseconds on a busy disk).
//!
//! A recall records its accesses here (and in the recall cache, so the engine's own reads see
//! them at once); they are written, one transaction per namespace (`Store::touch_each`):
//! - at the engine's first recall (so that a store that cannot keep them, read-only or full,
//!   is found out there and the pack says so);
//! - when [`FLUSH_MEMORIES`] are pending, or the oldest has waited [`FLUSH_AFTER_MS`] by the
//!   engine's clock (checked at each recall; never the wall clock): by a task of its own, not
//!   by the recall that found them due (that write, ~100 ms for 4,096 memories, was the
//!   recall's p99); one such task at a time, and every write of access times, in the
//!   background or not, takes its turn (`Engine::write_accesses`), so an older time never
//!   overwrites a newer one;
//! - before every write the engine makes (its write guard: remember, ingest, forget, correct,
//!   restore, and the decay sweep — so a sweep sees every access recorded before it);
//! - when the owner flushes the engine (`Engine::flush_index`, which every command, the server
//!   and the MCP server call before they exit).
//!
//! What a crash can lose: the access times recorded since the last flush, nothing else (no
//! memory, no revision: a touch is not a change). Salience and decay are computed from
//! `last_confirmed_at`, not from the access time, so a lost access changes no decay; it only
//! shows an older `last_accessed_at` in `list`, `export` and `why`.
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use mnemo_contract::error::{CoreError, StoreErrorKind};
use mnemo_contract::model::{MemoryId, Namespace};
use mnemo_contract::time::Timestamp;

/// Whether `e`, from writing access times, means only that the store cannot keep them (a
/// read-only store such as a mounted backup, or a full disk): recall goes on, the times are
/// dropped and the caller says so.
pub(crate) fn only_times_lost(e: &CoreError) -> bool {
    matches!(e.store_kind(), Some(StoreErrorKind::ReadOnly | StoreErrorKind::Full))
}

/// Pending accesses (distinct memories) that make the next recall write them.
pub(crate) const FLUSH_MEMORIES: usize = 4_096;
/// Age of the oldest pending access, by the engine's clock, that makes the next recall write
/// them (ms).
pub(crate) const FLUSH_AFTER_MS: i64 = 60_000;

#[derive(Default)]
struct Inner {
    /// The newest access of each memory, by namespace.
    by_ns: HashMap<Namespace, HashMap<MemoryId, Timestamp>>,
    /// Memories pending, over all namespaces.
    count: usize,
    /// When the oldest pending access was recorded.
    since: Option<Timestamp>,
    /// Whether accesses were ever taken to be written: the first recall's are written at once,
    /// so that a store that cannot keep them (read-only, full) says so in that recall's pack.
    written_once: bool,
    /// Whether a write in the background was asked for and has not taken them yet.
    scheduled: bool,
}

/// What a recall does with the pending accesses after recording its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Nothing yet.
    No,
    /// Write them now, in the recall (the engine's first: its pack reports a store that
    /// cannot keep them).
    Now,
    /// Write them in the background (a write already asked for counts: `No` then).
    Background,
}

/// Accesses not yet written to the store (see the module).
#[derive(Default)]
pub(crate) struct PendingAccess {
    inner: Mutex<Inner>,
}

/// One namespace's accesses to write: (memory, time).
pub(crate) type NamespaceAccesses = (Namespace, Vec<(MemoryId, Timestamp)>);

impl PendingAccess {
    /// The lock; a poisoned one (a panic while held) is taken as it is: at worst an access
    /// time is written twice or not at all.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record that `ids` of `ns` were recalled at `at`; whether and how the pending accesses
    /// are to be written (see the module).
    pub(crate) fn record(&self, ns: &Namespace, ids: &[MemoryId], at: Timestamp) -> Due {
        let mut g = self.lock();
        let g = &mut *g;
        let held = g.by_ns.entry(ns.clone()).or_default();
        for id in ids {
            match held.entry(*id) {
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    if at > *e.get() {
                        e.insert(at);
                    }
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(at);
                    g.count += 1;
                }
            }
        }
        let since = *g.since.get_or_insert(at);
        if !g.written_once {
            return Due::Now;
        }
        let due = g.count >= FLUSH_MEMORIES || at.millis().saturating_sub(since.millis()) >= FLUSH_AFTER_MS;
        if !due || g.scheduled {
            return Due::No;
        }
        g.scheduled = true;
        Due::Background
    }

    /// Forget that a write in the background was asked for (it could not start): the next
    /// recall that finds them due asks again.
    pub(crate) fn unschedule(&self) {
        self.lock().scheduled = false;
    }

    /// Whether nothing is pending.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().count == 0
    }

    /// Take every pending access, by namespace (sorted by id within each).
    pub(crate) fn take(&self) -> Vec<NamespaceAccesses> {
        let mut g = self.lock();
        g.count = 0;
        g.since = None;
        g.written_once = true;
        g.scheduled = false;
        let mut out: Vec<NamespaceAccesses> = std::mem::take(&mut g.by_ns)
            .into_iter()
            .map(|(ns, m)| {
                let mut v: Vec<(MemoryId, Timestamp)> = m.into_iter().collect();
                v.sort_unstable();
                (ns, v)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ns(s: &str) -> Namespace {
        Namespace::new(s).unwrap()
    }

    #[test]
    fn keeps_the_newest_access_of_each_memory_and_takes_them_all() {
        let p = PendingAccess::default();
        assert!(p.is_empty());
        assert_eq!(p.record(&ns("a"), &[MemoryId(9)], Timestamp(1)), Due::Now, "the first recall's accesses at once");
        assert_eq!(p.take(), vec![(ns("a"), vec![(MemoryId(9), Timestamp(1))])]);
        assert_eq!(p.record(&ns("a"), &[MemoryId(1), MemoryId(2)], Timestamp(10)), Due::No);
        assert_eq!(p.record(&ns("a"), &[MemoryId(1)], Timestamp(20)), Due::No);
        assert_eq!(p.record(&ns("a"), &[MemoryId(2)], Timestamp(5)), Due::No, "an older time does not win");
        assert_eq!(p.record(&ns("b"), &[MemoryId(3)], Timestamp(30)), Due::No);
        assert!(!p.is_empty());
        let taken = p.take();
        assert_eq!(
            taken,
            vec![
                (ns("a"), vec![(MemoryId(1), Timestamp(20)), (MemoryId(2), Timestamp(10))]),
                (ns("b"), vec![(MemoryId(3), Timestamp(30))]),
            ]
        );
        assert!(p.is_empty() && p.take().is_empty(), "taken once");
    }

    #[test]
    fn is_due_by_count_or_by_the_age_of_the_oldest() {
        let p = PendingAccess::default();
        p.take();
        let many: Vec<MemoryId> = (0..FLUSH_MEMORIES as i64 - 1).map(MemoryId).collect();
        assert_eq!(p.record(&ns("a"), &many, Timestamp(0)), Due::No);
        assert_eq!(p.record(&ns("a"), &[MemoryId(-1)], Timestamp(1)), Due::Background, "the count reached");
        assert_eq!(p.record(&ns("a"), &[MemoryId(-2)], Timestamp(2)), Due::No, "one write asked for at a time");
        p.unschedule();
        assert_eq!(p.record(&ns("a"), &[MemoryId(-3)], Timestamp(3)), Due::Background, "asked again");
        p.take();
        assert_eq!(p.record(&ns("a"), &[MemoryId(1)], Timestamp(1_000)), Due::No);
        assert_eq!(p.record(&ns("a"), &[MemoryId(2)], Timestamp(1_000 + FLUSH_AFTER_MS - 1)), Due::No);
        let aged = p.record(&ns("a"), &[MemoryId(3)], Timestamp(1_000 + FLUSH_AFTER_MS));
        assert_eq!(aged, Due::Background, "the oldest waited long enough");
    }
}
