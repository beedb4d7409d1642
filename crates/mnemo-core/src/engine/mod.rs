//! The engine: the write path, forgetting, decay, recall and `why`, over the traits.
//!
//! The engine keeps the derived Index in step with the Store by replaying every change above
//! the index's watermark after each write (`sync_index`), so a search sees a namespace's
//! newest writes at once and a tombstoned memory is removed before the write returns.
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio::sync::Mutex;
use tracing::Instrument as _;

use mnemo_contract::clock::Clock;
use mnemo_contract::error::Result;
use mnemo_contract::policy::EnginePolicy;
use mnemo_contract::tokens::TokenCounter;
use mnemo_contract::{Embedder, Index, IndexDoc, Reasoner, Store};
use mnemo_contract::{EmbedderIdentity, IndexState};

mod access;
mod as_of;
mod backup;
mod claim_history;
mod correct;
mod decay;
mod erase;
mod evidence;
mod forget;
mod group_commit;
mod group_queue;
mod group_segments;
mod ids;
mod ingest;
mod neighbours;
mod plan;
mod previous_values;
mod read;
mod recall;
mod recall_cache;
mod reconcile_guard;
mod restore;
mod shared_error;
mod valid_at;
mod why;
mod write;

pub use as_of::{held_at, RecallFilter};
pub use backup::{Reintroduced, RestoredErasures};
pub use decay::DecayReport;
pub use erase::{EraseOptions, EraseReport, ErasedMemory, SWEEP_MIN_CHARS};
pub use forget::{ForgetMatch, ForgetOptions, ForgetPreview};
pub use group_commit::TurnRequest;
pub use group_queue::{GroupCommit, MAX_BATCH_TURNS};
pub use previous_values::asks_about_change;
pub use recall::RecallOptions;
pub use restore::{restored_from, RestoreReport};
pub use valid_at::world_validity;
pub use why::WhyReport;
pub use write::{Outcome, OutcomeKind, RememberReport, TurnStatus};

/// Everything the engine is built from.
pub struct EngineParts {
    /// System of record.
    pub store: Arc<dyn Store>,
    /// Derived search index.
    pub index: Arc<dyn Index>,
    /// Embedder (vectors are computed once, at write time).
    pub embedder: Arc<dyn Embedder>,
    /// Extract / reconcile / resolve forgets.
    pub reasoner: Arc<dyn Reasoner>,
    /// Injected time.
    pub clock: Arc<dyn Clock>,
    /// Token counter for budgets.
    pub tokens: Arc<dyn TokenCounter>,
    /// Policy.
    pub policy: EnginePolicy,
}

/// The Mnemo engine.
pub struct Engine {
    store: Arc<dyn Store>,
    index: Arc<dyn Index>,
    embedder: Arc<dyn Embedder>,
    reasoner: Arc<dyn Reasoner>,
    clock: Arc<dyn Clock>,
    tokens: Arc<dyn TokenCounter>,
    policy: EnginePolicy,
    /// The store rev up to which the index has been brought; held while syncing so that two
    /// syncs never interleave (an older state must never overwrite a newer one).
    applied_rev: Mutex<Option<u64>>,
    /// Serialises writes in this process: reconcile reads neighbours, then writes; two writers
    /// interleaving there could both insert contradicting values. (Across processes the data
    /// directory lock of the runtime serialises them.)
    write_lock: Mutex<()>,
    /// What recall packs, kept beside the index and brought up to the store with it.
    recall_cache: recall_cache::RecallCache,
    /// Recall's access times not yet written to the store (see `access`).
    access: Arc<access::PendingAccess>,
    /// Held by each write of access times, in the background or not (see `access`).
    access_turn: Arc<Mutex<()>>,
    /// The embedder's cosine between unrelated texts, measured at the first recall that
    /// needs it (see `evidence`).
    dense_calibration: evidence::CalibrationCell,
    /// The embedder as the index stamp names it (model id and dims), every stamp recorded and
    /// compared on the first sync.
    embedder_identity: EmbedderIdentity,
}

/// Both write locks; the namespace's is released first.
pub(crate) struct WriteGuard<'a> {
    _namespace: mnemo_contract::NamespaceGuard,
    _process: tokio::sync::MutexGuard<'a, ()>,
}

/// What `sync_index` did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncReport {
    /// Documents upserted.
    pub upserted: usize,
    /// Documents removed (tombstoned).
    pub removed: usize,
    /// The rev the index is at now.
    pub rev: u64,
    /// True when the index was cleared and rebuilt from the store.
    pub rebuilt: bool,
    /// Why it was rebuilt, when the sync found it unusable (not for an explicit reindex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilt_because: Option<String>,
}

/// Rows fetched per catch-up round.
const SYNC_BATCH: usize = 5_000;

impl Engine {
    /// Build an engine; the policy is validated.
    pub fn new(parts: EngineParts) -> Result<Self> {
        parts.policy.validate()?;
        let embedder_identity =
            EmbedderIdentity { model: parts.embedder.model_id().to_string(), dims: parts.embedder.dims() };
        Ok(Engine {
            store: parts.store,
            index: parts.index,
            embedder: parts.embedder,
            reasoner: parts.reasoner,
            clock: parts.clock,
            tokens: parts.tokens,
            policy: parts.policy,
            applied_rev: Mutex::new(None),
            write_lock: Mutex::new(()),
            recall_cache: recall_cache::RecallCache::default(),
            access: Arc::default(),
            access_turn: Arc::default(),
            dense_calibration: Default::default(),
            embedder_identity,
        })
    }

    /// The same engine with a recall cache of at most `memories` memories (0: none, every
    /// recall reads its candidates from the store; the default keeps 200,000).
    pub fn with_recall_cache(mut self, memories: usize) -> Self {
        self.recall_cache = recall_cache::RecallCache::with_capacity(memories);
        self
    }

    /// The policy.
    pub fn policy(&self) -> &EnginePolicy {
        &self.policy
    }

    /// Bring the index up to the store: replay every change above the index's watermark
    /// (upsert active memories, remove tombstoned ones). `progress(done, total)` is called
    /// after each batch. The index is cleared and rebuilt from the store (and the report says
    /// why) when it is `Stale` (missing, damaged, of another schema, a commit failed), or on
    /// the first sync when it does not belong to this store: another store identity or
    /// generation, a watermark above the store's newest revision (an emptied store, an older
    /// backup), or another history at its watermark (a different copy); or when its vectors
    /// are not this engine's embedder's (its stamp names another model or dimensions, or, for
    /// an index that holds anything, none: written before the stamp recorded the embedder).
    /// The rebuild re-embeds, for the index, every memory whose stored vector is of another
    /// model. Every stamp recorded names this engine's embedder.
    pub async fn sync_index(&self, progress: &(dyn Fn(u64, u64) + Send + Sync)) -> Result<SyncReport> {
        let mut applied = self.applied_rev.lock().await;
        let mut report = SyncReport::default();
        // Checked on every sync, not only the first: a failed commit makes the index stale.
        let stale = match (self.index.state().await?, *applied) {
            (IndexState::Stale(why), _) => Err(why),
            // An index shared by several processes may be ahead of this one: everything up
            // to its watermark is in it (each process replays from its own last revision).
            (IndexState::UpTo(w), Some(r)) => Ok(r.max(w)),
            (IndexState::UpTo(w), None) => match self.foreign_index(w).await? {
                Some(why) => Err(why),
                None => Ok(w),
            },
        };
        let from = match stale {
            Ok(r) => r,
            Err(why) => {
                tracing::info!(%why, "the index is rebuilt from the store");
                *applied = None;
                self.recall_cache.reset();
                self.index.clear().await?;
                report.rebuilt = true;
                report.rebuilt_because = Some(why);
                0
            }
        };
        // Each round is one `changes_since`: the rows above the watermark, with what the
        // stamp records after them (the store's identity, the last change's fingerprint). The
        // sync ends at the newest rev its first round saw (later writes are the next sync's:
        // writers faster than the replay must not keep one sync going).
        let mut at = from;
        let mut target = None;
        loop {
            let changes = self.store.changes_since(at, SYNC_BATCH).instrument(tracing::info_span!("sync_read")).await?;
            let Some(last) = changes.memories.last().map(|m| m.rev) else {
                if at == from {
                    // Nothing replayed: still record whose index this is (a fresh index, a new
                    // store).
                    self.index.set_stamp(changes.stamp(self.embedder_identity.clone())).await?;
                }
                break;
            };
            let target = *target.get_or_insert(changes.newest);
            let stamp = changes.stamp(self.embedder_identity.clone());
            self.recall_cache.apply(at, last, &changes.memories, &|text| self.tokens.count(text));
            at = last;
            let mut live = Vec::new();
            let mut gone: Vec<(mnemo_contract::model::Namespace, mnemo_contract::model::MemoryId)> = Vec::new();
            for m in changes.memories {
                if m.status.is_active() {
                    live.push(m);
                } else {
                    gone.push((m.namespace.clone(), m.id));
                }
            }
            let docs = self.index_docs(&live).instrument(tracing::info_span!("sync_docs")).await?;
            report.upserted += docs.len();
            report.removed += gone.len();
            if !docs.is_empty() {
                self.index.upsert(docs).instrument(tracing::info_span!("sync_upsert")).await?;
            }
            gone.sort();
            for chunk in gone.chunk_by(|a, b| a.0 == b.0) {
                let ids: Vec<_> = chunk.iter().map(|(_, id)| *id).collect();
                self.index.remove(&chunk[0].0, &ids).instrument(tracing::info_span!("sync_remove")).await?;
            }
            async {
                self.index.set_watermark(at).await?;
                self.index.set_stamp(stamp).await
            }
            .instrument(tracing::info_span!("sync_mark"))
            .await?;
            progress(at - from, target.max(at) - from);
            if at >= target {
                break;
            }
        }
        *applied = Some(at.max(from));
        report.rev = at.max(from);
        if report.rebuilt {
            // A rebuild ends durable, and an index that builds it beside the one readers of
            // other processes search puts it in place now.
            self.index.flush().await?;
        }
        Ok(report)
    }

    /// Why an index at `watermark` was not built from this store (None: it was, as far as the
    /// store and the index can tell).
    async fn foreign_index(&self, watermark: u64) -> Result<Option<String>> {
        let stamp = self.index.stamp().await?;
        let identity = self.store.identity().await?;
        if let Some(id) = &identity {
            match stamp.as_ref().map(|s| s.store.as_ref()) {
                Some(Some(theirs)) if theirs.id != id.id => {
                    return Ok(Some(format!("the index was built from store {}, this store is {}", theirs.id, id.id)))
                }
                Some(Some(theirs)) if theirs.generation != id.generation => {
                    return Ok(Some(format!(
                        "the index was built from generation {} of this store, which is now at generation {} \
                         (its content was replaced)",
                        theirs.generation, id.generation
                    )))
                }
                Some(Some(_)) => {}
                _ if watermark > 0 => {
                    return Ok(Some("the index does not record which store it was built from".to_string()))
                }
                _ => {}
            }
        }
        let max = self.store.max_rev().await?;
        if watermark > max {
            return Ok(Some(format!(
                "the index holds store revision {watermark} but the store's newest is {max}: the store \
                 was emptied, replaced or restored from an older backup"
            )));
        }
        if watermark > 0 {
            if let Some(recorded) = stamp.as_ref().and_then(|s| s.fingerprint.clone()) {
                let now = self.store.rev_fingerprint(watermark).await?;
                if now.as_deref() != Some(recorded.as_str()) {
                    return Ok(Some(format!(
                        "the store's change at revision {watermark} is not the one the index was built from \
                         (the store was restored from a backup or replaced by another copy)"
                    )));
                }
            }
        }
        // An index already up to date would keep another model's vectors: queries of this one
        // would be compared with them (an error when the dimensions differ, silently wrong
        // answers when they match). An empty index (watermark 0) is filled with this
        // embedder's vectors by the replay anyway.
        let want = &self.embedder_identity;
        match stamp.and_then(|s| s.embedder) {
            Some(theirs) if &theirs != want => {
                return Ok(Some(format!("the index holds vectors of embedder {theirs}, the configured one is {want}")))
            }
            Some(_) => {}
            None if watermark > 0 => {
                return Ok(Some("the index does not record which embedder its vectors came from".to_string()))
            }
            None => {}
        }
        Ok(None)
    }

    /// Clear the index and rebuild it from the store (vectors of another embedder are
    /// re-embedded with the current one for the index).
    pub async fn rebuild_index(&self, progress: &(dyn Fn(u64, u64) + Send + Sync)) -> Result<SyncReport> {
        {
            let mut applied = self.applied_rev.lock().await;
            self.recall_cache.reset();
            self.index.clear().await?;
            *applied = Some(0);
        }
        let mut r = self.sync_index(progress).await?;
        self.index.flush().await?;
        r.rebuilt = true;
        Ok(r)
    }

    /// Documents for the index; a memory without a vector of the current embedder's model is
    /// embedded again for the index (the store keeps what it has). A memory over
    /// `[recall] dense_max_tokens` is filed without its vector (`RecallPolicy::dense_max_tokens`).
    async fn index_docs(&self, memories: &[mnemo_contract::model::Memory]) -> Result<Vec<IndexDoc>> {
        let model = self.embedder.model_id();
        let mut docs: Vec<IndexDoc> = memories.iter().map(IndexDoc::of).collect();
        let lexical_only: Vec<bool> = match self.policy.recall.dense_max_tokens {
            Some(max) => memories.iter().map(|m| self.tokens.count(&m.content) > max).collect(),
            None => vec![false; memories.len()],
        };
        for (d, lexical_only) in docs.iter_mut().zip(&lexical_only) {
            if *lexical_only {
                d.embedding = None;
            }
        }
        let stale: Vec<usize> = memories
            .iter()
            .enumerate()
            .filter(|(i, m)| !lexical_only[*i] && m.embedding.as_ref().is_none_or(|e| e.model != model))
            .map(|(i, _)| i)
            .collect();
        if !stale.is_empty() {
            let texts: Vec<String> = stale.iter().map(|i| memories[*i].content.clone()).collect();
            let vectors = self.embedder.embed(&texts).await?;
            for (i, v) in stale.into_iter().zip(vectors) {
                docs[i].embedding = Some(v);
            }
        }
        Ok(docs)
    }

    /// Hold the write lock (one writer at a time in this engine) and the store's lock on
    /// `ns` (one writer of the namespace across processes sharing the store).
    /// Recall's pending access times are written first (with the write, not a recall, paying
    /// for them; and so a decay sweep sees every access recorded before it).
    pub(crate) async fn write_guard(&self, ns: &mnemo_contract::model::Namespace) -> Result<WriteGuard<'_>> {
        let process = self.write_lock.lock().await;
        let namespace = self.store.lock_namespace(ns).await?;
        self.write_accesses().await?;
        Ok(WriteGuard { _namespace: namespace, _process: process })
    }

    /// Write recall's pending access times to the store, one batch per namespace (see
    /// `access`: if this fails, those access times are lost, nothing else).
    pub(crate) async fn write_accesses(&self) -> Result<()> {
        // After any write of them in the background: in order, and all written on return.
        let _turn = self.access_turn.lock().await;
        if self.access.is_empty() {
            return Ok(());
        }
        for (ns, accesses) in self.access.take() {
            self.store.touch_each(&ns, &accesses).await?;
        }
        Ok(())
    }

    /// Write recall's pending access times on a task of their own (see `access`), so the
    /// recall that found them due does not wait for the store; outside a tokio runtime, now.
    /// A failure there loses those access times only, and is logged.
    pub(crate) async fn write_accesses_in_background(&self) -> Result<()> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.write_accesses().await;
        };
        // The turn is taken here, so whoever waits for it after this returns waits for the task.
        let Ok(turn) = self.access_turn.clone().try_lock_owned() else {
            // A write of them is under way: the next recall asks again.
            self.access.unschedule();
            return Ok(());
        };
        let (store, access) = (self.store.clone(), self.access.clone());
        // No span of the recall's goes with the task: the task runs on another thread, maybe
        // under another subscriber than the recall's (a span closed there is an error).
        runtime.spawn(async move {
            let _turn = turn;
            for (ns, accesses) in access.take() {
                if let Err(e) = store.touch_each(&ns, &accesses).await {
                    tracing::warn!(namespace = %ns, "recall times not recorded: {e}");
                }
            }
        });
        Ok(())
    }

    /// Wait until recall's access times handed to the background are written (for tests and
    /// benchmarks; every write and `flush_index` waits for them anyway).
    pub async fn settle_access_writes(&self) {
        drop(self.access_turn.lock().await);
    }

    /// `sync_index` without progress reporting.
    pub(crate) async fn sync(&self) -> Result<SyncReport> {
        self.sync_index(&|_, _| {}).await
    }
}
