//! The write path: record the raw turn durably first, extract, embed once, reconcile each
//! candidate against its active neighbours, apply atomically, keep the index in step.
use serde::{Deserialize, Serialize};
use tracing::Instrument as _;

use super::evidence::{held_terms, names_entity};
use super::forget::ForgetOptions;
use super::plan::TurnPlan;
use super::reconcile_guard::{self, contradiction_refused, duplicate_refused, NEIGHBOUR_FLOOR};
use super::Engine;
use mnemo_contract::error::{CoreError, ModelErrorKind, ModelRole, Result};
use mnemo_contract::model::*;
use mnemo_contract::relevance::{content_terms, cosine, QueryTerms, RelevanceEvidence};
use mnemo_contract::text::norm_name;
use mnemo_contract::time::Timestamp;
use mnemo_contract::{Candidate, ExtractedItem, Extraction, ModelInfo, Reconciled, SearchMode, SearchQuery, Verdict};

/// Largest turn accepted, in bytes.
pub const MAX_TURN_BYTES: usize = 1 << 20;

/// Most memories + forget commands extracted from one turn (each reconciles separately).
pub const MAX_ITEMS_PER_TURN: usize = 256;

/// What happened to one candidate or command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// A new memory.
    Inserted,
    /// A duplicate: the existing memory was reinforced.
    Reinforced,
    /// A contradiction: the old memory was tombstoned and the new one inserted.
    Superseded,
    /// Tombstoned by a forget command.
    Forgotten,
    /// A forget command that designated nothing.
    NothingToForget,
    /// Not written: the turn's words do not support what the model extracted (an invention,
    /// or the prompt's example copied); the detail says how much of it the turn holds.
    Unsupported,
}

/// One outcome of a write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// What happened.
    pub kind: OutcomeKind,
    /// The memory written, reinforced or forgotten (None when nothing matched).
    pub memory: Option<MemoryId>,
    /// Memories tombstoned by this outcome.
    pub tombstoned: Vec<MemoryId>,
    /// Human-readable detail.
    pub detail: String,
}

/// What became of a turn, in a form a script (or an agent) can branch on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model extracted memories or commands from it (`outcomes` says what each did).
    Extracted,
    /// The turn is recorded and the model extracted nothing from it: no memory was written
    /// (a note says so).
    NothingExtracted,
    /// An idempotency key already used: the report is of the turn first recorded under it,
    /// and nothing was written again.
    AlreadyRecorded,
}

/// How the note of a replayed idempotency key begins ([`RememberReport::already_recorded`]).
const ALREADY_RECORDED_NOTE: &str = "idempotency key already used by turn ";

/// The report of `remember`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RememberReport {
    /// What became of the turn: first, as it is what a script or an agent reads first. Set by
    /// the two places a report is made: the engine's write and [`RememberReport::already_recorded`].
    pub status: TurnStatus,
    /// The recorded turn.
    pub turn: Turn,
    /// Outcomes in order.
    pub outcomes: Vec<Outcome>,
    /// Notes: clamps, ignored tag lines.
    pub notes: Vec<String>,
    /// Which model extracted.
    pub model: ModelInfo,
}

impl RememberReport {
    /// The report of a reused idempotency key: the turn first recorded under it, nothing
    /// written again.
    pub fn already_recorded(turn: Turn, model: ModelInfo) -> Self {
        let notes = vec![format!("{ALREADY_RECORDED_NOTE}{} at {}: nothing written again", turn.id, turn.at)];
        RememberReport { status: TurnStatus::AlreadyRecorded, turn, outcomes: vec![], notes, model }
    }

    /// What became of the turn.
    pub fn status(&self) -> TurnStatus {
        self.status
    }
}

impl Engine {
    /// Remember raw bytes: they must be UTF-8 (the error says where they are not).
    pub async fn remember_bytes(&self, ns: &Namespace, source: &str, bytes: &[u8]) -> Result<RememberReport> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| CoreError::InvalidUtf8 { valid_up_to: e.valid_up_to(), detail: e.to_string() })?;
        self.remember(ns, source, text).await
    }

    /// Remember a turn said by `source`.
    pub async fn remember(&self, ns: &Namespace, source: &str, text: &str) -> Result<RememberReport> {
        self.remember_turn(ns, source, text, None).await
    }

    /// Remember a turn with an external id (e.g. a benchmark's dialogue id), at the clock's
    /// time ([`Engine::remember_turn_at`] with no stated time).
    pub async fn remember_turn(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        external_id: Option<String>,
    ) -> Result<RememberReport> {
        self.remember_turn_at(ns, source, text, external_id, None).await
    }

    /// Remember a turn with an external id, said at `at` (None: the clock's time). A stated
    /// time keeps the rule that time only moves forward in a namespace: one before the
    /// namespace's last turn is refused. What is derived from the turn takes its time.
    ///
    /// The raw turn is recorded first (durable before anything is derived); then extraction,
    /// embedding and reconciliation plan every item in turn order, and the plan is applied as
    /// one atomic batch. A failure anywhere leaves the recorded turn and no derived change.
    pub async fn remember_turn_at(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        external_id: Option<String>,
        at: Option<Timestamp>,
    ) -> Result<RememberReport> {
        check_turn_text(text)?;
        let source = source_name(source);
        let _write = self.write_guard(ns).await?;
        let turn = self.record_at(ns, source, text, external_id, at).await?;
        self.extract_and_apply(ns, turn).await
    }

    /// Extract a recorded turn and apply what it says; a failure says the turn stays recorded
    /// and unextracted.
    async fn extract_and_apply(&self, ns: &Namespace, turn: Turn) -> Result<RememberReport> {
        let id = turn.id;
        let span = tracing::info_span!("turn", turn = id.0, namespace = %ns);
        async {
            let extraction = self.reasoner.extract(&turn).await?;
            self.apply_extraction(ns, turn, extraction).await
        }
        .instrument(span)
        .await
        .map_err(|e| match e {
            already @ CoreError::Unextracted { .. } => already,
            error => CoreError::Unextracted { turn: id, error: Box::new(error) },
        })
    }

    /// Extract again a recorded turn whose extraction failed (`mnemo reextract`). The caller
    /// says which turns those are; the turn must belong to `ns`.
    pub async fn reextract(&self, ns: &Namespace, turn: &Turn) -> Result<RememberReport> {
        if &turn.namespace != ns {
            return Err(CoreError::InvalidInput(format!("turn {} is not in namespace {ns}", turn.id)));
        }
        let _write = self.write_guard(ns).await?;
        self.extract_and_apply(ns, turn.clone()).await
    }

    /// Record a raw turn durably at the clock's time (the caller holds the write guard).
    pub(crate) async fn record(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        external_id: Option<String>,
    ) -> Result<Turn> {
        self.record_at(ns, source, text, external_id, None).await
    }

    /// Record a raw turn durably at `at` (None: the clock's time; the caller holds the write
    /// guard); time only moves forward.
    pub(crate) async fn record_at(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        external_id: Option<String>,
        at: Option<Timestamp>,
    ) -> Result<Turn> {
        let now = at.unwrap_or_else(|| self.clock.now());
        if let Some(last) = self.store.latest_turn_at(ns).await? {
            if now < last {
                return Err(CoreError::InvalidInput(format!(
                    "time only moves forward: this turn is at {now}, before the last turn of namespace {ns} at {last}"
                )));
            }
        }
        // Durable first: the raw turn is recorded before anything is derived from it.
        let turn = self
            .store
            .record_turn(NewTurn {
                namespace: ns.clone(),
                source: source.to_string(),
                at: now,
                text: text.to_string(),
                external_id,
            })
            .await?;
        Ok(turn)
    }

    /// Plan a recorded turn's extraction item by item, in turn order, and apply the plan as one
    /// atomic batch. The engine never reads the turn's text itself: what the turn says comes
    /// from the reasoner's extraction (or, for `forget`, from the command given).
    pub(crate) async fn apply_extraction(
        &self,
        ns: &Namespace,
        turn: Turn,
        extraction: Extraction,
    ) -> Result<RememberReport> {
        self.apply_extraction_with(ns, turn, extraction, ForgetOptions::default()).await
    }

    /// [`Engine::apply_extraction`], its forget commands applied with `forget`.
    pub(crate) async fn apply_extraction_with(
        &self,
        ns: &Namespace,
        turn: Turn,
        extraction: Extraction,
        forget: ForgetOptions,
    ) -> Result<RememberReport> {
        let mut planned = self.plan_extraction(ns, turn, extraction, forget).await?;
        // One atomic batch: the turn's memories land together or not at all.
        if !planned.ops.is_empty() {
            let ops = std::mem::take(&mut planned.ops);
            let span = tracing::info_span!("apply", ops = ops.len());
            let inserted = self.store.apply(ns, planned.turn.at, ops).instrument(span).await?;
            planned.resolve_ids(&inserted);
            // The write is committed and acknowledged from here on: an index failure (a full
            // disk, a damaged segment) must not make a client retry it; the index is a view
            // that catches up from the store at the next sync.
            if let Err(e) = self.sync().instrument(tracing::info_span!("index_sync")).await {
                planned.notes.push(index_behind_note(&e));
            }
        }
        Ok(planned.into_report())
    }

    /// Plan a recorded turn's extraction item by item, in turn order, against the store as it
    /// is (nothing is written): the write ops, and the outcomes and notes the report gives once
    /// the ops are applied ([`PlannedTurn`]).
    pub(crate) async fn plan_extraction(
        &self,
        ns: &Namespace,
        turn: Turn,
        extraction: Extraction,
        forget: ForgetOptions,
    ) -> Result<PlannedTurn> {
        let mut notes = extraction.notes.clone();
        if extraction.items.len() > MAX_ITEMS_PER_TURN {
            return Err(CoreError::InvalidInput(format!(
                "turn {} was recorded but holds {} memories/commands; at most {MAX_ITEMS_PER_TURN} per turn are extracted — split it",
                turn.id,
                extraction.items.len()
            )));
        }
        let extraction = world_time_of(extraction, &turn, &mut notes);
        let contents: Vec<String> = extraction.candidates().map(|c| c.content.clone()).collect();
        let vectors = if contents.is_empty() { Vec::new() } else { self.embedder.embed(&contents).await? };
        if vectors.len() != contents.len() {
            return Err(CoreError::model_message(
                ModelRole::Embedder,
                ModelErrorKind::BadAnswer,
                format!("asked for {} vectors, got {}", contents.len(), vectors.len()),
            ));
        }
        let mut vectors = vectors.into_iter();
        let words = reconcile_guard::TurnWords::of(&turn.text);
        let mut plan = TurnPlan::default();
        let mut outcomes = Vec::new();
        for item in &extraction.items {
            outcomes.push(match item {
                ExtractedItem::Forget(cmd) => self.plan_forget(ns, &turn, cmd, forget, &mut plan, &mut notes).await?,
                ExtractedItem::Memory(cand) => {
                    let vector = vectors.next().unwrap_or_default();
                    let importance = self.importance_of(cand, &mut notes);
                    let new = self.new_memory(ns, cand, importance, vector, &turn, &extraction.model);
                    self.plan_candidate(&turn, &words, cand, new, &mut plan, &mut notes)
                        .instrument(tracing::info_span!("reconcile"))
                        .await?
                }
            });
        }
        if extraction.items.is_empty() {
            // Said, not only implied by an empty list: the turn is kept, and nothing derived.
            notes.push(format!(
                "the model ({} / {}) extracted nothing from turn {}: it is recorded, and no memory was written",
                extraction.model.client.as_str(),
                extraction.model.model,
                turn.id
            ));
        }
        Ok(PlannedTurn { ops: std::mem::take(&mut plan.ops), turn, outcomes, notes, model: extraction.model })
    }

    /// The candidate's importance: stated (clamped into 0..=1, with a note) or the kind default.
    fn importance_of(&self, cand: &Candidate, notes: &mut Vec<String>) -> f32 {
        match cand.importance {
            Some(x) if (0.0..=1.0).contains(&x) => x as f32,
            Some(x) => {
                let c = if x.is_nan() { self.policy.kinds.of(cand.kind).default_importance } else { x.clamp(0.0, 1.0) };
                notes.push(format!("importance {x} is outside 0..=1; clamped to {c} for {:?}", cand.content));
                c as f32
            }
            None => self.policy.kinds.of(cand.kind).default_importance as f32,
        }
    }

    fn new_memory(
        &self,
        ns: &Namespace,
        cand: &Candidate,
        importance: f32,
        vector: Vec<f32>,
        turn: &Turn,
        model: &ModelInfo,
    ) -> NewMemory {
        let mut entities: Vec<String> = cand.entities.iter().map(|e| norm_name(e)).filter(|e| !e.is_empty()).collect();
        if let Some(c) = &cand.claim {
            entities.push(norm_name(&c.entity));
        }
        entities.sort();
        entities.dedup();
        NewMemory {
            validity: cand.validity,
            namespace: ns.clone(),
            kind: cand.kind,
            content: cand.content.clone(),
            claim: cand.claim.clone(),
            entities,
            importance,
            sources: vec![turn.source.clone()],
            provenance: Provenance { turns: vec![turn.id], client: model.client, model: model.model.clone() },
            created_at: turn.at,
            pinned: cand.pinned,
            embedding: Some(Embedding { model: self.embedder.model_id().to_string(), vector }),
        }
    }

    /// Active neighbours of a candidate under the plan: memories sharing an entity (stored or
    /// pending in this turn), plus for candidates without a claim the closest stored memories by
    /// content and the pending ones of the same kind, so paraphrases can be recognised.
    async fn neighbours(
        &self,
        ns: &Namespace,
        cand: &Candidate,
        new: &NewMemory,
        plan: &TurnPlan,
    ) -> Result<(Vec<Memory>, Vec<String>)> {
        let by_entity = if new.entities.is_empty() {
            Vec::new()
        } else {
            plan.live(self.store.active_by_entities(ns, &new.entities).await?)
        };
        let mut pending: Vec<Memory> = plan
            .pending()
            .filter(|p| {
                p.entities.iter().any(|e| new.entities.contains(e)) || (cand.claim.is_none() && p.kind == cand.kind)
            })
            .cloned()
            .collect();
        // The names memory already holds (stored or said earlier in this turn).
        let known: Vec<String> = new
            .entities
            .iter()
            .filter(|e| by_entity.iter().chain(&pending).any(|m| m.entities.contains(e)))
            .cloned()
            .collect();
        if cand.claim.is_some() {
            // Claims reconcile by rule against every memory on the same entity.
            let mut found = by_entity;
            found.append(&mut pending);
            return Ok((found, known));
        }
        let hits = self
            .index
            .search(&SearchQuery {
                namespace: ns.clone(),
                text: cand.content.clone(),
                embedding: new.embedding.as_ref().map(|e| e.vector.clone()),
                limit: 8,
                mode: SearchMode::Hybrid,
            })
            .await?;
        let ids: Vec<MemoryId> =
            hits.iter().map(|h| h.id).filter(|id| !by_entity.iter().any(|m| m.id == *id)).collect();
        let mut found = by_entity;
        if !ids.is_empty() {
            found.extend(plan.live(self.store.get_many(ns, &ids).await?));
        }
        found.append(&mut pending);
        // The most related first: a model shown a list tends to name its head. Each overlap is
        // computed once, not at every comparison of the sort.
        let mut close: Vec<(f64, Memory)> = self
            .relevant_to(cand, new, found)
            .await
            .into_iter()
            .map(|m| (reconcile_guard::topic_overlap(&cand.content, &new.entities, &m), m))
            .collect();
        close.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok((close.into_iter().map(|(_, m)| m).collect(), known))
    }

    /// The memories of `hits` relevant to the candidate in the absolute sense (an entity and a
    /// word besides the names in common, or evidence at or above [`NEIGHBOUR_FLOOR`]): a search
    /// always returns its best, and the best of nothing must not reach the model as something
    /// to supersede; nor must every memory about the same person.
    async fn relevant_to(&self, cand: &Candidate, new: &NewMemory, hits: Vec<Memory>) -> Vec<Memory> {
        let q = QueryTerms::of(&cand.content);
        let terms: Vec<u64> = hits.iter().map(|m| held_terms(&q, m)).collect();
        let weights = q.weights(&terms);
        let calibration = match &new.embedding {
            Some(_) => self.dense_calibration().await.ok(),
            None => None,
        };
        let model = self.embedder.model_id();
        hits.into_iter()
            .zip(terms)
            .filter(|(m, held)| {
                // About the same subject: related only if they share a word besides its name
                // (the names alone would make every memory about a patient relevant).
                if reconcile_guard::shares_subject(&new.entities, &m.entities) {
                    return reconcile_guard::topic_overlap(&cand.content, &new.entities, m) > 0.0;
                }
                let dense_z = match (&new.embedding, calibration, &m.embedding) {
                    (Some(e), Some(c), Some(v)) if v.model == model => cosine(&e.vector, &v.vector).map(|cos| c.z(cos)),
                    _ => None,
                };
                RelevanceEvidence::new(q.coverage(&weights, *held), dense_z, names_entity(&q, m)).absolute
                    >= NEIGHBOUR_FLOOR
            })
            .map(|(m, _)| m)
            .collect()
    }

    /// The model's verdict as far as the engine's rules allow (`reconcile_guard`): a refused
    /// id is said in `notes` and the candidate is kept as novel rather than lose a memory.
    fn guarded(
        &self,
        cand: &Candidate,
        new: &NewMemory,
        neighbours: &[Memory],
        r: &Reconciled,
        notes: &mut Vec<String>,
    ) -> Verdict {
        let who = format!("{} / {}", r.model.client.as_str(), r.model.model);
        let because = r.reason.as_ref().map(|x| format!("; its reason: {x:?}")).unwrap_or_default();
        let find = |id: &MemoryId| neighbours.iter().find(|m| m.id == *id);
        match &r.verdict {
            Verdict::Contradicts(ids) => {
                let mut kept = Vec::new();
                for id in ids {
                    match find(id).map(|old| (old, contradiction_refused(cand, new, old, &self.policy))) {
                        Some((old, Some(why))) => notes.push(format!(
                            "the model ({who}) said {:?} supersedes memory {id} ({:?}); not applied: {why}. Both are kept{because}",
                            cand.content, old.content
                        )),
                        _ => kept.push(*id),
                    }
                }
                if kept.is_empty() {
                    Verdict::Novel
                } else {
                    Verdict::Contradicts(kept)
                }
            }
            Verdict::Duplicate(id) => match find(id).and_then(|old| duplicate_refused(cand, old).map(|w| (old, w))) {
                Some((old, why)) => {
                    notes.push(format!(
                        "the model ({who}) said {:?} restates memory {id} ({:?}); not applied: {why}. Kept as a new memory{because}",
                        cand.content, old.content
                    ));
                    Verdict::Novel
                }
                None => r.verdict.clone(),
            },
            Verdict::Novel => Verdict::Novel,
        }
    }

    /// Plan one extracted memory of `turn` (in the turn's namespace).
    async fn plan_candidate(
        &self,
        turn: &Turn,
        words: &reconcile_guard::TurnWords,
        cand: &Candidate,
        new: NewMemory,
        plan: &mut TurnPlan,
        notes: &mut Vec<String>,
    ) -> Result<Outcome> {
        let (neighbours, known) = self.neighbours(&turn.namespace, cand, &new, plan).await?;
        // Model-independent: what the model extracted must be said by the turn (names memory
        // already holds count as said: "she" in the turn, the name in the memory).
        let known: Vec<String> = known.iter().flat_map(|e| content_terms(e)).collect();
        let support = reconcile_guard::support(words, cand, &known);
        if !support.enough() {
            return Ok(Outcome {
                kind: OutcomeKind::Unsupported,
                memory: None,
                tombstoned: vec![],
                detail: format!(
                    "not written: the turn does not support {:?} ({} of its {} content words are in the turn{})",
                    cand.content,
                    support.held,
                    support.of,
                    if support.value_held { "" } else { "; the claim's value is not" }
                ),
            });
        }
        let mut decided_by: Option<Reconciled> = None;
        let verdict = match &cand.claim {
            // Claims reconcile by rule: deterministic, free, and the same for every model.
            Some(claim) => {
                let cardinality = self.policy.claims.fixed(&claim.attribute).unwrap_or(cand.cardinality);
                reconcile_claim(claim, cardinality, &neighbours)
            }
            None if neighbours.is_empty() => Verdict::Novel,
            None => {
                let r = self.reasoner.reconcile_explained(cand, &neighbours).await?;
                let v = self.guarded(cand, &new, &neighbours, &r, notes);
                decided_by = Some(r);
                v
            }
        };
        let known = |id: &MemoryId| neighbours.iter().any(|m| m.id == *id);
        match verdict {
            Verdict::Duplicate(id) if known(&id) => {
                if let Some(old) = neighbours.iter().find(|m| m.id == id) {
                    if cand.pinned != old.pinned || cand.importance.is_some() {
                        notes.push(format!(
                            "{:?} restates memory {id}: a restatement reinforces it; its pin/importance are not changed",
                            cand.content
                        ));
                    }
                }
                plan.reinforce(id, &turn.source, Some(turn.id));
                Ok(Outcome {
                    kind: OutcomeKind::Reinforced,
                    memory: Some(id),
                    tombstoned: vec![],
                    detail: "duplicate of memory {id}: reinforced".into(),
                })
            }
            Verdict::Contradicts(ids) if !ids.is_empty() && ids.iter().all(known) => {
                let reasons: Vec<String> = ids
                    .iter()
                    .map(|id| {
                        supersede_reason(neighbours.iter().find(|m| m.id == *id), cand, turn, decided_by.as_ref())
                    })
                    .collect();
                let new_id = plan.insert(new, Some(turn.id));
                for (id, reason) in ids.iter().zip(reasons) {
                    plan.tombstone(*id, reason, Some(new_id), Some(turn.id));
                }
                let detail = match &decided_by {
                    Some(r) => format!(
                        "supersedes {{tombstoned}} (decided by model {} / {}{})",
                        r.model.client.as_str(),
                        r.model.model,
                        r.reason.as_ref().map(|x| format!(": {x}")).unwrap_or_default()
                    ),
                    None => "supersedes {tombstoned} (claim rule: same entity and attribute, another value)".into(),
                };
                Ok(Outcome { kind: OutcomeKind::Superseded, memory: Some(new_id), tombstoned: ids.clone(), detail })
            }
            Verdict::Novel => {
                let id = plan.insert(new, Some(turn.id));
                Ok(Outcome {
                    kind: OutcomeKind::Inserted,
                    memory: Some(id),
                    tombstoned: vec![],
                    detail: "novel".into(),
                })
            }
            other => Err(CoreError::model_message(
                ModelRole::Reasoner,
                ModelErrorKind::BadAnswer,
                format!(
                    "reconcile verdict {other:?} names memories that are not among the neighbours {}",
                    join_ids(&neighbours.iter().map(|m| m.id).collect::<Vec<_>>())
                ),
            )),
        }
    }
}

/// A turn's text is refused when empty or above [`MAX_TURN_BYTES`].
pub(crate) fn check_turn_text(text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(CoreError::InvalidInput("turn text is empty".into()));
    }
    if text.len() > MAX_TURN_BYTES {
        return Err(CoreError::InvalidInput(format!(
            "turn text is {} bytes; at most {MAX_TURN_BYTES} are accepted",
            text.len()
        )));
    }
    Ok(())
}

/// Who said a turn: the source given, or "user" when none is.
pub(crate) fn source_name(source: &str) -> &str {
    if source.trim().is_empty() {
        "user"
    } else {
        source.trim()
    }
}

/// A turn planned and not yet applied: its write ops (insert positions counted within the
/// turn) and what its report says once they are.
pub(crate) struct PlannedTurn {
    /// The turn's write ops, in order; applied as one atomic batch (or as part of a group's).
    pub ops: Vec<WriteOp>,
    /// The recorded turn.
    pub turn: Turn,
    /// One per extracted item, ids of inserts still virtual until [`PlannedTurn::resolve_ids`].
    pub outcomes: Vec<Outcome>,
    /// Notes for the report.
    pub notes: Vec<String>,
    /// Which model extracted.
    pub model: ModelInfo,
}

impl PlannedTurn {
    /// How many memories the turn's ops insert (the store returns their ids in order).
    pub fn inserts(&self) -> usize {
        self.ops.iter().filter(|op| matches!(op, WriteOp::Insert { .. })).count()
    }

    /// Put the store's ids of the turn's inserts (in order) in place of the virtual ones.
    pub fn resolve_ids(&mut self, inserted: &[MemoryId]) {
        for o in &mut self.outcomes {
            o.memory = o.memory.map(|id| TurnPlan::resolve(id, inserted));
            for t in &mut o.tombstoned {
                *t = TurnPlan::resolve(*t, inserted);
            }
            o.detail = fill_ids(&o.detail, o.memory, &o.tombstoned);
        }
    }

    /// The report (ids resolved first when the turn wrote anything).
    pub fn into_report(self) -> RememberReport {
        // One outcome per extracted item: none means nothing was extracted.
        let status = if self.outcomes.is_empty() { TurnStatus::NothingExtracted } else { TurnStatus::Extracted };
        RememberReport { status, turn: self.turn, outcomes: self.outcomes, notes: self.notes, model: self.model }
    }
}

/// The note of a write stored while the index could not follow it.
pub(crate) fn index_behind_note(e: &CoreError) -> String {
    format!("stored, but the index could not be updated ({e}); it catches up from the store at the next command")
}

/// The claim rule: the same normalised (entity, attribute, value) is a duplicate; the same
/// (entity, attribute) with another value contradicts when the attribute holds one value, and
/// is novel (a value beside the others) when it holds many; otherwise novel.
pub fn reconcile_claim(claim: &Claim, cardinality: Cardinality, neighbours: &[Memory]) -> Verdict {
    let on_same: Vec<&Memory> = neighbours
        .iter()
        .filter(|m| m.status.is_active() && m.claim.as_ref().is_some_and(|c| c.key() == claim.key()))
        .collect();
    if let Some(dup) = on_same.iter().find(|m| m.claim.as_ref().is_some_and(|c| c.same_value(&claim.value))) {
        return Verdict::Duplicate(dup.id);
    }
    if on_same.is_empty() || cardinality == Cardinality::Many {
        Verdict::Novel
    } else {
        Verdict::Contradicts(on_same.iter().map(|m| m.id).collect())
    }
}

/// The tombstone's reason: the claim rule's change of value, or the model that decided and why.
fn supersede_reason(old: Option<&Memory>, cand: &Candidate, turn: &Turn, model: Option<&Reconciled>) -> String {
    match (old.and_then(|m| m.claim.as_ref()), &cand.claim, model) {
        (Some(o), Some(n), _) => format!(
            "superseded: {} | {} changed from {:?} to {:?} (turn {}; claim rule)",
            n.entity, n.attribute, o.value, n.value, turn.id
        ),
        (_, _, Some(r)) => format!(
            "superseded: contradicted by {:?} (turn {}); decided by model {} / {}{}",
            cand.content,
            turn.id,
            r.model.client.as_str(),
            r.model.model,
            r.reason.as_ref().map(|x| format!(": {x}")).unwrap_or_default()
        ),
        _ => format!("superseded: contradicted by {:?} (turn {})", cand.content, turn.id),
    }
}

/// Fill the `{id}` / `{tombstoned}` markers of an outcome's detail once ids are final.
pub(crate) fn fill_ids(detail: &str, id: Option<MemoryId>, tombstoned: &[MemoryId]) -> String {
    detail
        .replace("{id}", &id.map(|i| i.to_string()).unwrap_or_default())
        .replace("{tombstoned}", &join_ids(tombstoned))
}

pub(crate) fn join_ids(ids: &[MemoryId]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// World time, at write time and for every reasoner alike: each candidate's relative dates
/// ("yesterday", "next Friday", "in two weeks") get the date they mean written beside them,
/// resolved against the turn's time, so the memory still names the right day when recalled
/// later; a candidate whose reasoner stated no validity interval gets the one its content
/// states ("from 2019 to 2021", "starting next Monday"); an interval that ends before it
/// starts is dropped with a note. See `mnemo_contract::world_time` and docs/time.md.
fn world_time_of(mut extraction: Extraction, turn: &Turn, notes: &mut Vec<String>) -> Extraction {
    use mnemo_contract::world_time::{stated_validity, with_dates_resolved};
    for item in &mut extraction.items {
        let ExtractedItem::Memory(cand) = item else { continue };
        if cand.validity.is_unstated() {
            cand.validity = stated_validity(&cand.content, turn.at);
        }
        if let Err(why) = cand.validity.check() {
            notes.push(format!("{why}: the interval is dropped for {:?}", cand.content));
            cand.validity = Default::default();
        }
        cand.content = with_dates_resolved(&cand.content, turn.at);
        if let Some(c) = &mut cand.claim {
            c.value = with_dates_resolved(&c.value, turn.at);
        }
    }
    extraction
}
