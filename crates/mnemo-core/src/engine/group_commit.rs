//! Group commit: many turns remembered as one write. Under one hold of the write lock the
//! batch's turns are recorded in one store transaction (durable first, as one by one), each is
//! extracted and planned in arrival order, their changes are applied in one store transaction
//! per segment of independent turns (`group_segments`: what is applied together gives exactly
//! what applying the turns one after another gives), and the index is synced once. Each
//! caller gets its own result: a turn that fails (its extraction, its plan, its apply) fails
//! alone, the others are applied; a failure of the shared work (the lock, recording the
//! turns) is answered to every caller of the batch.
//!
//! Acknowledged ⇒ committed: a result is returned only after the transaction holding the
//! turn's changes has committed (and the index has been brought up to it, so a recall made
//! after the answer sees the write). A process killed before that has answered no caller of
//! the batch; one killed after it has committed everything it answered.
use std::collections::HashMap;

use tracing::Instrument as _;

use super::forget::ForgetOptions;
use super::group_segments::{segments, Footprint};
use super::shared_error::{for_each_caller, share};
use super::write::{check_turn_text, index_behind_note, source_name, PlannedTurn};
use super::Engine;
use mnemo_contract::error::{CoreError, Result, StoreErrorKind};
use mnemo_contract::model::*;
use mnemo_contract::time::Timestamp;
use mnemo_contract::{Extraction, NamespaceGuard};

use super::RememberReport;

/// One turn to remember, as [`Engine::remember_turn_at`] takes it.
#[derive(Clone, Debug)]
pub struct TurnRequest {
    /// Its namespace.
    pub namespace: Namespace,
    /// Who said it (empty: "user").
    pub source: String,
    /// The raw text.
    pub text: String,
    /// An external id kept on the turn (an idempotency key, a dialogue id).
    pub external_id: Option<String>,
    /// When it was said (None: the clock's time when the batch is written).
    pub at: Option<Timestamp>,
}

/// The write lock and the store's lock on every namespace of a batch, taken in name order (two
/// processes sharing a store never wait for each other's namespaces crosswise); the
/// namespaces' are released first.
struct BatchGuard<'a> {
    _namespaces: Vec<NamespaceGuard>,
    _process: tokio::sync::MutexGuard<'a, ()>,
}

/// A recorded turn of the batch and what became of it so far.
struct Recorded {
    /// The caller's position in the batch.
    caller: usize,
    turn: Turn,
}

impl Engine {
    /// Remember `requests` as one group commit; one result per request, in order, each what
    /// [`Engine::remember_turn_at`] would have answered had the turns been remembered one
    /// after another in this order.
    pub async fn remember_batch(&self, requests: Vec<TurnRequest>) -> Vec<Result<RememberReport>> {
        let mut results: Vec<Option<Result<RememberReport>>> = requests.iter().map(|_| None).collect();
        let mut accepted = Vec::with_capacity(requests.len());
        for (caller, mut r) in requests.into_iter().enumerate() {
            match check_turn_text(&r.text) {
                Ok(()) => {
                    r.source = source_name(&r.source).to_string();
                    accepted.push((caller, r));
                }
                Err(e) => results[caller] = Some(Err(e)),
            }
        }
        if !accepted.is_empty() {
            let span = tracing::info_span!("group_commit", turns = accepted.len());
            self.write_batch(accepted, &mut results).instrument(span).await;
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(CoreError::store_message(StoreErrorKind::Other, "the group commit gave this turn no result"))
                })
            })
            .collect()
    }

    async fn batch_guard(&self, namespaces: &[Namespace]) -> Result<BatchGuard<'_>> {
        let process = self.write_lock.lock().await;
        let mut held = Vec::with_capacity(namespaces.len());
        for ns in namespaces {
            held.push(self.store.lock_namespace(ns).await?);
        }
        self.write_accesses().await?;
        Ok(BatchGuard { _namespaces: held, _process: process })
    }

    /// The batch's write, under its guard: record, extract, plan and apply segment by segment,
    /// sync; every accepted caller's result is set.
    async fn write_batch(&self, accepted: Vec<(usize, TurnRequest)>, results: &mut [Option<Result<RememberReport>>]) {
        let mut namespaces: Vec<Namespace> = accepted.iter().map(|(_, r)| r.namespace.clone()).collect();
        namespaces.sort();
        namespaces.dedup();
        let _guard = match self.batch_guard(&namespaces).await {
            Ok(g) => g,
            Err(e) => return answer_all(results, accepted.iter().map(|(c, _)| *c), e),
        };
        let recorded = match self.record_batch(accepted, results).await {
            Some(r) => r,
            None => return,
        };
        // Extraction, turn by turn (a pure call for the fake model; a live model's calls are
        // what the batch waits for).
        let mut by_ns: HashMap<Namespace, Vec<(usize, Turn, Extraction)>> = HashMap::new();
        for Recorded { caller, turn } in recorded {
            let span = tracing::info_span!("turn", turn = turn.id.0, namespace = %turn.namespace);
            match self.reasoner.extract(&turn).instrument(span).await {
                Ok(x) => by_ns.entry(turn.namespace.clone()).or_default().push((caller, turn, x)),
                Err(e) => results[caller] = Some(Err(unextracted(turn.id, e))),
            }
        }
        let mut done: Vec<(usize, PlannedTurn)> = Vec::new();
        // Positions in `done` of turns applied and not yet brought into the index.
        let mut unsynced: Vec<usize> = Vec::new();
        for ns in &namespaces {
            let Some(turns) = by_ns.remove(ns) else { continue };
            let footprints: Vec<Footprint> = turns.iter().map(|(_, t, x)| Footprint::of(x, t.at)).collect();
            let mut turns: Vec<Option<(usize, Turn, Extraction)>> = turns.into_iter().map(Some).collect();
            for segment in segments(&footprints) {
                if footprints[segment[0]].needs_index() && !unsynced.is_empty() {
                    self.sync_batch(&mut done, &mut unsynced).await;
                }
                let members: Vec<(usize, Turn, Extraction)> = segment.iter().filter_map(|k| turns[*k].take()).collect();
                let planned = self.plan_segment(ns, members, results).await;
                let applied = self.apply_segment(ns, planned, results).await;
                for (caller, p, wrote) in applied {
                    if wrote {
                        unsynced.push(done.len());
                    }
                    done.push((caller, p));
                }
            }
        }
        if !unsynced.is_empty() {
            self.sync_batch(&mut done, &mut unsynced).await;
        }
        for (caller, p) in done {
            results[caller] = Some(Ok(p.into_report()));
        }
    }

    /// Check each turn's time (time only moves forward in a namespace: a turn before the
    /// namespace's last, or before an earlier turn of the batch, is refused alone) and record
    /// the others in one store call. None: recording failed, every caller answered.
    async fn record_batch(
        &self,
        accepted: Vec<(usize, TurnRequest)>,
        results: &mut [Option<Result<RememberReport>>],
    ) -> Option<Vec<Recorded>> {
        let now = self.clock.now();
        let mut latest: HashMap<Namespace, Option<Timestamp>> = HashMap::new();
        let mut callers = Vec::with_capacity(accepted.len());
        let mut turns = Vec::with_capacity(accepted.len());
        for (caller, r) in accepted {
            let last = match latest.get(&r.namespace) {
                Some(last) => *last,
                None => match self.store.latest_turn_at(&r.namespace).await {
                    Ok(last) => *latest.entry(r.namespace.clone()).or_insert(last),
                    Err(e) => {
                        results[caller] = Some(Err(e));
                        continue;
                    }
                },
            };
            let at = r.at.unwrap_or(now);
            if let Some(last) = last.filter(|last| at < *last) {
                results[caller] = Some(Err(CoreError::InvalidInput(format!(
                    "time only moves forward: this turn is at {at}, before the last turn of namespace {} at {last}",
                    r.namespace
                ))));
                continue;
            }
            latest.insert(r.namespace.clone(), Some(at));
            callers.push(caller);
            turns.push(NewTurn {
                namespace: r.namespace,
                source: r.source,
                at,
                text: r.text,
                external_id: r.external_id,
            });
        }
        if turns.is_empty() {
            return Some(Vec::new());
        }
        // Durable first: the raw turns are recorded before anything is derived from them.
        match self.store.record_turns(turns).instrument(tracing::info_span!("record_turns")).await {
            Ok(recorded) if recorded.len() == callers.len() => {
                Some(callers.into_iter().zip(recorded).map(|(caller, turn)| Recorded { caller, turn }).collect())
            }
            Ok(recorded) => {
                let e = CoreError::store_message(
                    StoreErrorKind::Other,
                    format!("the store recorded {} turns of a batch of {}", recorded.len(), callers.len()),
                );
                answer_all(results, callers, e);
                None
            }
            Err(e) => {
                answer_all(results, callers, e);
                None
            }
        }
    }

    /// Plan each turn of a segment, in order, against the store as it is; a turn whose plan
    /// fails is answered alone.
    async fn plan_segment(
        &self,
        ns: &Namespace,
        members: Vec<(usize, Turn, Extraction)>,
        results: &mut [Option<Result<RememberReport>>],
    ) -> Vec<(usize, PlannedTurn)> {
        let mut planned = Vec::with_capacity(members.len());
        for (caller, turn, extraction) in members {
            let id = turn.id;
            let span = tracing::info_span!("plan", turn = id.0, namespace = %ns);
            match self.plan_extraction(ns, turn, extraction, ForgetOptions::default()).instrument(span).await {
                Ok(p) => planned.push((caller, p)),
                Err(e) => results[caller] = Some(Err(unextracted(id, e))),
            }
        }
        planned
    }

    /// Apply a segment's plans in one transaction; if it fails, each turn's alone (so a turn
    /// the store refuses fails alone). Returns the turns applied (or with nothing to apply),
    /// with whether each wrote; a turn that failed is answered here.
    async fn apply_segment(
        &self,
        ns: &Namespace,
        mut planned: Vec<(usize, PlannedTurn)>,
        results: &mut [Option<Result<RememberReport>>],
    ) -> Vec<(usize, PlannedTurn, bool)> {
        let writing = planned.iter().filter(|(_, p)| !p.ops.is_empty()).count();
        if writing == 0 {
            return planned.into_iter().map(|(c, p)| (c, p, false)).collect();
        }
        let at = planned[0].1.turn.at;
        if writing > 1 {
            let mut ops = Vec::new();
            let mut counts = Vec::with_capacity(planned.len());
            for (_, p) in &planned {
                counts.push(p.inserts());
                shift_inserts(&p.ops, ops.iter().filter(|op| matches!(op, WriteOp::Insert { .. })).count(), &mut ops);
            }
            let span = tracing::info_span!("apply", ops = ops.len(), turns = writing);
            if let Ok(inserted) = self.store.apply(ns, at, ops).instrument(span).await {
                let mut from = 0;
                return planned
                    .into_iter()
                    .zip(counts)
                    .map(|((caller, mut p), n)| {
                        let wrote = !p.ops.is_empty();
                        p.resolve_ids(inserted.get(from..from + n).unwrap_or_default());
                        from += n;
                        (caller, p, wrote)
                    })
                    .collect();
            }
            // Whatever failed, nothing of the segment was applied: each turn is tried alone.
        }
        let mut applied = Vec::with_capacity(planned.len());
        for (caller, mut p) in planned.drain(..) {
            if p.ops.is_empty() {
                applied.push((caller, p, false));
                continue;
            }
            let ops = std::mem::take(&mut p.ops);
            let span = tracing::info_span!("apply", ops = ops.len(), turns = 1);
            match self.store.apply(ns, p.turn.at, ops).instrument(span).await {
                Ok(inserted) => {
                    p.resolve_ids(&inserted);
                    applied.push((caller, p, true));
                }
                Err(e) => results[caller] = Some(Err(unextracted(p.turn.id, e))),
            }
        }
        applied
    }

    /// Bring the index up to the store; on failure the turns applied since the last sync say
    /// so (they are committed: the index catches up at the next sync).
    async fn sync_batch(&self, done: &mut [(usize, PlannedTurn)], unsynced: &mut Vec<usize>) {
        if let Err(e) = self.sync().instrument(tracing::info_span!("index_sync")).await {
            let note = index_behind_note(&e);
            for k in unsynced.iter() {
                done[*k].1.notes.push(note.clone());
            }
        }
        unsynced.clear();
    }
}

/// Append `ops` to `into`, their references to the turn's own inserts moved past the `offset`
/// inserts already in `into` (a turn counts its inserts from 0; a batch counts them over all
/// its turns).
fn shift_inserts(ops: &[WriteOp], offset: usize, into: &mut Vec<WriteOp>) {
    let shift = |r: Option<MemoryRef>| match r {
        Some(MemoryRef::New(i)) => Some(MemoryRef::New(i + offset)),
        other => other,
    };
    for op in ops {
        into.push(match op {
            WriteOp::TombstoneNew { index, reason, superseded_by, turn } => WriteOp::TombstoneNew {
                index: index + offset,
                reason: reason.clone(),
                superseded_by: shift(*superseded_by),
                turn: *turn,
            },
            WriteOp::Tombstone { id, reason, superseded_by, turn } => WriteOp::Tombstone {
                id: *id,
                reason: reason.clone(),
                superseded_by: shift(*superseded_by),
                turn: *turn,
            },
            WriteOp::Insert { .. } | WriteOp::Reinforce { .. } | WriteOp::Confirm { .. } => op.clone(),
        });
    }
}

/// A recorded turn from which nothing was derived, because of `e`.
fn unextracted(turn: TurnId, e: CoreError) -> CoreError {
    match e {
        already @ CoreError::Unextracted { .. } => already,
        error => CoreError::Unextracted { turn, error: Box::new(error) },
    }
}

/// Answer every one of `callers` with (a copy of) `e`, its cause shared with its whole chain.
fn answer_all(results: &mut [Option<Result<RememberReport>>], callers: impl IntoIterator<Item = usize>, e: CoreError) {
    let e = share(e);
    for c in callers {
        results[c] = Some(Err(for_each_caller(&e)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turns_references_to_its_inserts_move_past_the_batchs_earlier_inserts() {
        let ops = vec![WriteOp::TombstoneNew {
            index: 0,
            reason: "r".into(),
            superseded_by: Some(MemoryRef::New(1)),
            turn: None,
        }];
        let mut into = Vec::new();
        shift_inserts(&ops, 3, &mut into);
        match &into[0] {
            WriteOp::TombstoneNew { index, superseded_by, .. } => {
                assert_eq!((*index, *superseded_by), (3, Some(MemoryRef::New(4))));
            }
            other => panic!("{other:?}"),
        }
    }
}
