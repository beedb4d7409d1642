//! The six swappable traits: Store, Index, Embedder, Reasoner, Grounder, Assessor. Each has
//! implementations registered by name (see `registry`); the values they exchange live beside
//! them by concern (`store_types`, `search`, `reasoning`, `assessment`).
use async_trait::async_trait;

use crate::assessment::{Assessment, GroundedValue, Task};
use crate::error::Result;
use crate::model::*;
use crate::pack::Pack;
use crate::reasoning::{Candidate, Extraction, ModelInfo, Reconciled, Verdict};
use crate::search::{Hit, IndexDoc, IndexFigure, IndexState, SearchQuery};
use crate::store_types::{BackupInfo, Changes, IndexStamp, ListPage, NamespaceGuard, StoreIdentity};
use crate::time::Timestamp;

/// The durable system of record for turns, memories, tombstones and their history.
///
/// Contract (checked by the conformance suite): namespaces are a hard partition in every
/// query; `apply` is atomic (all ops or none); nothing is hard-deleted; a tombstone is never
/// reactivated; every change bumps the memory's `rev` to a new store-wide maximum.
#[async_trait]
pub trait Store: Send + Sync {
    /// Record a raw turn durably; returns it with its id.
    async fn record_turn(&self, turn: NewTurn) -> Result<Turn>;
    /// Record raw turns durably, in order (ids increase in that order); returns them with their
    /// ids. A backend that can should record them in one transaction (all or none: a group
    /// commit records a batch of turns at once); this default records them one by one, so a
    /// failure may leave the first ones recorded.
    async fn record_turns(&self, turns: Vec<NewTurn>) -> Result<Vec<Turn>> {
        let mut recorded = Vec::with_capacity(turns.len());
        for t in turns {
            recorded.push(self.record_turn(t).await?);
        }
        Ok(recorded)
    }
    /// Apply a batch atomically at time `at`; returns the ids of the inserted memories in order.
    async fn apply(&self, namespace: &Namespace, at: Timestamp, ops: Vec<WriteOp>) -> Result<Vec<MemoryId>>;
    /// Memories by id within a namespace (missing or other-namespace ids are left out).
    async fn get_many(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>>;
    /// Active memories that mention any of these normalised entity names.
    async fn active_by_entities(&self, namespace: &Namespace, entities: &[String]) -> Result<Vec<Memory>>;
    /// All active memories of a namespace (decay sweep, brute-force search).
    async fn active(&self, namespace: &Namespace) -> Result<Vec<Memory>>;
    /// Active pinned memories of a namespace.
    async fn pinned(&self, namespace: &Namespace) -> Result<Vec<Memory>>;
    /// Every memory of a namespace, tombstoned ones included, by id.
    async fn all_memories(&self, namespace: &Namespace) -> Result<Vec<Memory>>;
    /// Every memory of a namespace whose claim is on `entity | attribute` (as `Claim::is_on`
    /// compares names), tombstoned ones included, by id: a claim's history. Default: a scan of
    /// `all_memories`; a store with the claim's normalised names in a column answers from them.
    async fn claim_memories(&self, namespace: &Namespace, entity: &str, attribute: &str) -> Result<Vec<Memory>> {
        Ok(self
            .all_memories(namespace)
            .await?
            .into_iter()
            .filter(|m| m.claim.as_ref().is_some_and(|c| c.is_on(entity, attribute)))
            .collect())
    }
    /// Memories of any namespace whose `rev` is greater than `rev`, by rev, at most `limit`
    /// (how a derived Index catches up).
    async fn changed_since(&self, rev: u64, limit: usize) -> Result<Vec<Memory>>;
    /// The highest `rev` so far (0 for an empty store).
    async fn max_rev(&self) -> Result<u64>;
    /// What an index sync reads to replay the changes above `rev` (at most `limit`), in one
    /// call: the store's newest rev, the changed memories (`changed_since`), the store's
    /// `identity` and the `rev_fingerprint` of the last change returned (of `rev` itself when
    /// none is). A store that can should answer it in one round trip: the engine asks after
    /// every write, and four separate look-ups cost more than the one row they bring. Default:
    /// those four calls.
    async fn changes_since(&self, rev: u64, limit: usize) -> Result<Changes> {
        let newest = self.max_rev().await?;
        let memories = if rev < newest { self.changed_since(rev, limit).await? } else { Vec::new() };
        let fingerprint = match Changes::fingerprinted_rev(rev, &memories) {
            Some(at) => self.rev_fingerprint(at).await?,
            None => None,
        };
        Ok(Changes::new(newest, memories, self.identity().await?, fingerprint))
    }
    /// The history of one memory, oldest first.
    async fn history(&self, namespace: &Namespace, id: MemoryId) -> Result<Vec<MemoryEvent>>;
    /// The turns of a namespace, oldest first.
    async fn turns(&self, namespace: &Namespace) -> Result<Vec<Turn>>;
    /// The time of the namespace's most recent turn (by id), if any.
    async fn latest_turn_at(&self, namespace: &Namespace) -> Result<Option<Timestamp>>;
    /// Mark memories as recalled at `at` (does not change `rev`). An access time only moves
    /// forward: a memory last accessed after `at` keeps its time.
    async fn touch(&self, namespace: &Namespace, ids: &[MemoryId], at: Timestamp) -> Result<()>;
    /// Mark each memory as recalled at its own time (several recalls' accesses written at
    /// once; does not change `rev`). A store that can should do it in one transaction; the
    /// default makes one `touch` per distinct time.
    async fn touch_each(&self, namespace: &Namespace, accesses: &[(MemoryId, Timestamp)]) -> Result<()> {
        let mut by_time: std::collections::BTreeMap<Timestamp, Vec<MemoryId>> = std::collections::BTreeMap::new();
        for (id, at) in accesses {
            by_time.entry(*at).or_default().push(*id);
        }
        for (at, ids) in by_time {
            self.touch(namespace, &ids, at).await?;
        }
        Ok(())
    }
    /// The namespaces that hold anything.
    async fn namespaces(&self) -> Result<Vec<Namespace>>;
    /// Which store this is (identity and generation), recorded by a derived Index so that an
    /// index of another store, or of this one before it was replaced, is never served. None:
    /// this store cannot say (then only the watermark and `rev_fingerprint` are checked).
    async fn identity(&self) -> Result<Option<StoreIdentity>> {
        Ok(None)
    }
    /// A short fingerprint of the change recorded at `rev` (None when no change has that rev,
    /// or the store cannot say). A restored or forked store whose history at the index's
    /// watermark differs from the one the index was built from is told apart by it.
    async fn rev_fingerprint(&self, _rev: u64) -> Result<Option<String>> {
        Ok(None)
    }
    /// Serialise the writers of `namespace` across every process sharing this store until the
    /// returned guard is dropped. The engine holds it from reading a turn's neighbours to
    /// applying its batch, so two processes never both plan against the same state (two
    /// writers superseding one claim at once). Default: no lock, for stores that one process
    /// writes at a time (the runtime's data-directory lock serialises those).
    async fn lock_namespace(&self, _namespace: &Namespace) -> Result<NamespaceGuard> {
        Ok(Box::new(()))
    }
    /// Write a consistent copy of the whole store (every namespace) to `dest`, a new file that
    /// is never overwritten, while the store keeps serving. Default: this store makes no file
    /// backups (a server store is backed up with its server's tools).
    async fn backup_to(&self, _dest: &std::path::Path) -> Result<BackupInfo> {
        Err(crate::CoreError::InvalidInput(
            "this store makes no file backups: back it up with its own tools (e.g. pg_dump for PostgreSQL)".into(),
        ))
    }
    /// Replace the whole store's content with the backup at `src` (made by `backup_to`), after
    /// checking it is a sound store of this kind. The store's generation moves above both its
    /// own and the backup's, so an index built before the replacement is never served with the
    /// restored content (the engine rebuilds it). Default: no file backups.
    async fn replace_from_backup(&self, _src: &std::path::Path) -> Result<BackupInfo> {
        Err(crate::CoreError::InvalidInput(
            "this store makes no file backups: restore it with its own tools (e.g. pg_restore for PostgreSQL)".into(),
        ))
    }
    /// One page of a namespace's memories by id: those with an id above `page.after`, at most
    /// `page.limit`, tombstoned ones only when `page.include_tombstoned`. Default: filters
    /// `active`/`all_memories` (a store may answer it with one indexed query instead).
    async fn list_memories(&self, namespace: &Namespace, page: &ListPage) -> Result<Vec<Memory>> {
        let all =
            if page.include_tombstoned { self.all_memories(namespace).await? } else { self.active(namespace).await? };
        let mut out: Vec<Memory> = all.into_iter().filter(|m| page.after.is_none_or(|a| m.id > a)).collect();
        out.sort_by_key(|m| m.id);
        out.truncate(page.limit);
        Ok(out)
    }
    /// The turns of a namespace among `ids`, oldest first (missing or other-namespace ids are
    /// left out). Default: filters `turns` (a store should answer by primary key instead).
    async fn turns_by_ids(&self, namespace: &Namespace, ids: &[TurnId]) -> Result<Vec<Turn>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        Ok(self.turns(namespace).await?.into_iter().filter(|t| ids.contains(&t.id)).collect())
    }
    /// The id of `kind` in `namespace` whose local number is `local` (see [`crate::ids`]), if
    /// any: how a short id (`m42`, `t17`) is found. Default: reads the namespace's memories or
    /// turns whole (a store that knows its numbering answers with one indexed query instead).
    async fn id_of_local(&self, namespace: &Namespace, kind: crate::ids::IdKind, local: u32) -> Result<Option<i64>> {
        let ids: Vec<i64> = match kind {
            crate::ids::IdKind::Memory => self.all_memories(namespace).await?.iter().map(|m| m.id.0).collect(),
            crate::ids::IdKind::Turn => self.turns(namespace).await?.iter().map(|t| t.id.0).collect(),
        };
        Ok(ids.into_iter().filter(|i| crate::ids::local_number(*i) == local).max())
    }
    /// The oldest turn of a namespace with this external id (an idempotency key), if any.
    /// Default: searches `turns` (a store should answer with one indexed query instead).
    async fn turn_by_external_id(&self, namespace: &Namespace, external_id: &str) -> Result<Option<Turn>> {
        Ok(self.turns(namespace).await?.into_iter().find(|t| t.external_id.as_deref() == Some(external_id)))
    }
    /// Check the tamper-evident history (see [`crate::chain`]) of every namespace: each chain
    /// entry against the row it points at, its predecessor and the recorded head, and every
    /// event and turn against the chain, each namespace on one consistent snapshot (a check
    /// beside a writer sees whole writes) and streamed (not held in memory). One report per
    /// namespace, by namespace. None: this store keeps no history chain.
    async fn verify_history(&self) -> Result<Option<Vec<crate::chain::ChainReport>>> {
        Ok(None)
    }
    /// One page of the history chain of `namespace`: the entries with a seq above `after`, at
    /// most `limit`, in seq order, each with the row it points at as stored now (what `mnemo
    /// export --history` writes, a page at a time; entries are only ever appended, so pages
    /// read up to a head read first are consistent). None: this store keeps no history chain.
    async fn history_chain(
        &self,
        _namespace: &Namespace,
        _after: i64,
        _limit: usize,
    ) -> Result<Option<Vec<crate::chain::ChainRecord>>> {
        Ok(None)
    }
    /// Erase what `plan` names in `namespace` at `at`, in one transaction (all or none; see
    /// `crate::erase` and docs/erasure.md): every content column of its memories (content,
    /// claim, entities, embedding, every event's detail) and the text of its turns (whole, or
    /// with the values cut out: `plan.redact`) are overwritten, the memories become erased
    /// tombstones (a new rev each, so an index drops them), and a content-free
    /// [`crate::erase::ErasureRecord`] is kept as an entry of the namespace's history chain
    /// (which still verifies). The bytes must not survive in the store's files (free pages,
    /// write-ahead log, dead rows): a store compacts what it must before returning. An id not
    /// in the namespace is NotFound. Default: this store cannot erase.
    async fn erase(
        &self,
        namespace: &Namespace,
        _at: Timestamp,
        _plan: crate::erase::ErasePlan,
    ) -> Result<crate::erase::ErasureRecord> {
        Err(crate::CoreError::InvalidInput(format!(
            "this store cannot erase (namespace {namespace}): erasure needs the SQLite or PostgreSQL store"
        )))
    }
    /// The erasure records of `namespace`, oldest first (empty: none, or a store that cannot
    /// erase).
    async fn erasures(&self, _namespace: &Namespace) -> Result<Vec<crate::erase::ErasureRecord>> {
        Ok(vec![])
    }
    /// The recorded chain head of every namespace, by namespace (empty: no chain kept).
    async fn chain_heads(&self) -> Result<Vec<crate::chain::ChainHead>> {
        Ok(vec![])
    }
    /// The active memories of a namespace whose decay due time under `rule` is at or before
    /// `page.now`, in (due, id) order after `page.after`, at most `page.limit` (the decay sweep;
    /// see `decay_due`). A store that keeps the due time with each memory answers with one range
    /// query and recomputes its due times first when `rule` is not the one they were computed
    /// with. Default: computes every due time from `active` (cost grows with the namespace).
    async fn due_for_decay(
        &self,
        namespace: &Namespace,
        rule: &crate::decay_due::DecayRule,
        page: &crate::decay_due::DuePage,
    ) -> Result<Vec<crate::decay_due::DueMemory>> {
        Ok(crate::decay_due::due_by_scan(self.active(namespace).await?, rule, page))
    }
}

/// A derived search structure, rebuildable from the Store. A tombstoned memory is removed and
/// must never come back from a search.
#[async_trait]
pub trait Index: Send + Sync {
    /// Add or replace documents; they are searchable at once.
    async fn upsert(&self, docs: Vec<IndexDoc>) -> Result<()>;
    /// Remove documents (tombstoned memories).
    async fn remove(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()>;
    /// Search within one namespace.
    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>>;
    /// Where the index stands: up to which Store `rev` it has durably applied changes, or
    /// stale (missing, corrupt, another schema version) and to be rebuilt from the Store.
    async fn state(&self) -> Result<IndexState>;
    /// Record that every change up to `rev` has been applied (made durable with the next
    /// flush/commit, never before the documents it covers).
    async fn set_watermark(&self, rev: u64) -> Result<()>;
    /// Make applied changes durable.
    async fn flush(&self) -> Result<()>;
    /// Drop everything (before a rebuild). Must not need the old index to be readable: a
    /// damaged index is wiped, not opened.
    async fn clear(&self) -> Result<()>;
    /// The stamp recorded with the watermark (None: this index records none, or it is empty).
    async fn stamp(&self) -> Result<Option<IndexStamp>> {
        Ok(None)
    }
    /// Record the stamp that goes with the watermark (durable with it, at the next flush).
    async fn set_stamp(&self, _stamp: IndexStamp) -> Result<()> {
        Ok(())
    }
    /// Figures on how `namespace` is searched (the dense structure's state: lists, probes,
    /// rows at its last training...), for benchmark reports; empty when the index has none.
    async fn figures(&self, _namespace: &Namespace) -> Result<Vec<IndexFigure>> {
        Ok(vec![])
    }
    /// A bulk load begins (`true`) or ends (`false`). Meanwhile an index that batches its
    /// commits may commit less often (each commit has a fixed cost); what it acknowledges is
    /// still searchable at once, and what it has not committed is replayed from the Store after
    /// a crash, as always. The engine flushes the index when the load ends.
    async fn bulk_load(&self, _on: bool) -> Result<()> {
        Ok(())
    }
}

/// Text to unit vectors, with a model id persisted beside each vector.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model id stored with every vector.
    fn model_id(&self) -> &str;
    /// Vector dimensions.
    fn dims(&self) -> usize;
    /// Embed texts (one unit vector each, in order).
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
}

/// Extract, reconcile, resolve a forget command.
#[async_trait]
pub trait Reasoner: Send + Sync {
    /// Candidates and forget commands in a turn.
    async fn extract(&self, turn: &Turn) -> Result<Extraction>;
    /// How `candidate` relates to `neighbours` (active memories sharing an entity). Every id
    /// in the verdict must be one of the neighbours.
    async fn reconcile(&self, candidate: &Candidate, neighbours: &[Memory]) -> Result<Verdict>;
    /// [`Reasoner::reconcile`] with the reason and who answered. The default has no reason and
    /// names [`Reasoner::model_info`]; a model-backed reasoner returns what its answer said.
    async fn reconcile_explained(&self, candidate: &Candidate, neighbours: &[Memory]) -> Result<Reconciled> {
        let verdict = self.reconcile(candidate, neighbours).await?;
        Ok(Reconciled { verdict, reason: None, model: self.model_info() })
    }
    /// Which of `candidates` a free-text forget command designates (a subset; may be empty).
    async fn resolve_forget(&self, command: &str, candidates: &[Memory]) -> Result<Vec<MemoryId>>;
    /// A plan for `task` from the assessed pack's `lines` (see [`crate::plan`]): every memory it
    /// uses must be one of the lines. The default is [`crate::plan::deterministic`], by
    /// [`Reasoner::model_info`]; a model-backed reasoner asks its model.
    async fn plan(&self, task: &Task, lines: &[crate::plan::PlanLine]) -> Result<crate::plan::Plan> {
        Ok(crate::plan::deterministic(task, lines).by(self.model_info()))
    }
    /// Who answers this reasoner's calls.
    fn model_info(&self) -> ModelInfo;
}

/// A READ-ONLY lookup of a verifiable claim in a system of record.
#[async_trait]
pub trait Grounder: Send + Sync {
    /// The source name recorded as corroboration.
    fn source(&self) -> &str;
    /// The current value of `(entity, attribute)`, or None when this source does not hold it
    /// (the claim is then not verifiable here).
    async fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<GroundedValue>>;
    /// How long a lookup may take before the assessor gives up on it for this recall
    /// (None: the assessor's default).
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }
}

/// Grades a recall pack and decides act or escalate. An assessor only reads: what it wants
/// written back (a stale value superseded by a system of record's, a confirmation) it returns
/// as `Assessment::corrections`, and the caller applies them.
#[async_trait]
pub trait Assessor: Send + Sync {
    /// Assess `pack` for `task` at `now`.
    async fn assess(&self, task: &Task, pack: Pack, now: Timestamp) -> Result<Assessment>;
}
